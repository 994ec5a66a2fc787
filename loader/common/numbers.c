// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Numbers as users type them (see numbers.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "numbers.h"
#include "xlb.h"

/* For the reasons that quote a number back. */
static __thread char why_buf[96];

int xlb_u64_parse(const char *s, __u64 min, __u64 max, __u64 *out,
		  const char **why)
{
	const char *p;
	__u64 v = 0;

	if (*s == '-' && isdigit((unsigned char)s[1])) {
		*why = "negative";
		return -EINVAL;
	}
	if (!*s) {
		*why = "not a number";
		return -EINVAL;
	}
	for (p = s; *p; p++) {
		if (!isdigit((unsigned char)*p)) {
			*why = "not a number";
			return -EINVAL;
		}
	}
	for (p = s; *p; p++) {
		if (v > (UINT64_MAX - (__u64)(*p - '0')) / 10) {
			v = UINT64_MAX;
			goto range;
		}
		v = v * 10 + (*p - '0');
	}
	if (v >= min && v <= max) {
		*out = v;
		return 0;
	}
range:
	snprintf(why_buf, sizeof(why_buf), "out of range %" PRIu64 "..%" PRIu64,
		 (uint64_t)min, (uint64_t)max);
	*why = why_buf;
	return -EINVAL;
}

int xlb_u32_parse(const char *s, __u32 min, __u32 max, __u32 *out,
		  const char **why)
{
	__u64 v;
	int err;

	err = xlb_u64_parse(s, min, max, &v, why);
	if (!err)
		*out = v;
	return err;
}

int xlb_weight_parse(const char *s, __u32 *weight, const char **why)
{
	int err = xlb_u32_parse(s, 0, XLB_MAX_WEIGHT, weight, why);

	if (err && *why == why_buf) {
		snprintf(why_buf, sizeof(why_buf), "above the maximum %u",
			 XLB_MAX_WEIGHT);
	}
	return err;
}

int is_prime(__u32 m)
{
	__u32 d;

	if (m < 2)
		return 0;
	if (m % 2 == 0)
		return m == 2;
	for (d = 3; d <= m / d; d += 2)
		if (m % d == 0)
			return 0;
	return 1;
}

/* The smallest prime above m, to suggest in an error. */
static __u32 next_prime(__u32 m)
{
	while (m < XLB_MAX_TABLE_SIZE && !is_prime(++m))
		;
	return m;
}

int xlb_table_size_check(__u32 m, const char **why)
{
	if (m < XLB_MIN_TABLE_SIZE || m > XLB_MAX_TABLE_SIZE) {
		snprintf(why_buf, sizeof(why_buf), "out of range %u..%u",
			 XLB_MIN_TABLE_SIZE, XLB_MAX_TABLE_SIZE);
		*why = why_buf;
		return -EINVAL;
	}
	if (!is_prime(m)) {
		snprintf(why_buf, sizeof(why_buf),
			 "not prime (the next prime is %u)", next_prime(m));
		*why = why_buf;
		return -EINVAL;
	}
	return 0;
}

int xlb_table_size_parse(const char *s, __u32 *m, const char **why)
{
	int err = xlb_u32_parse(s, XLB_MIN_TABLE_SIZE, XLB_MAX_TABLE_SIZE, m,
				why);

	return err ?: xlb_table_size_check(*m, why);
}
int xlb_seed_parse(const char *s, __u64 key[2], const char **why)
{
	char half[17];
	size_t i;

	if (!strncasecmp(s, "0x", 2))
		s += 2;
	if (strlen(s) != 32) {
		*why = "seed must be 32 hex digits (128 bits)";
		return -EINVAL;
	}
	for (i = 0; i < 32; i++) {
		if (!isxdigit((unsigned char)s[i])) {
			*why = "seed must be 32 hex digits (128 bits)";
			return -EINVAL;
		}
	}
	for (i = 0; i < 2; i++) {
		memcpy(half, s + 16 * i, 16);
		half[16] = '\0';
		key[i] = strtoull(half, NULL, 16);
	}
	return 0;
}

const char *xlb_seed_str(const __u64 key[2], char *buf, size_t len)
{
	snprintf(buf, len, "%016" PRIx64 "%016" PRIx64,
		 (uint64_t)key[0], (uint64_t)key[1]);
	return buf;
}

int xlb_duration_parse(const char *s, __u32 min_ms, __u32 max_ms, __u32 *ms,
		       const char **why)
{
	char digits[24], min[24], max[24];
	size_t n = strspn(s, "0123456789");
	__u64 v, scale;

	if (*s == '-') {
		*why = "negative";
		return -EINVAL;
	}
	if (!n || n >= sizeof(digits)) {
		*why = "not a duration (500ms, 2s)";
		return -EINVAL;
	}
	if (!strcmp(s + n, "ms")) {
		scale = 1;
	} else if (!strcmp(s + n, "s")) {
		scale = 1000;
	} else {
		*why = s[n] ? "unknown unit (ms or s)" : "needs a unit (ms or s)";
		return -EINVAL;
	}
	memcpy(digits, s, n);
	digits[n] = '\0';
	if (xlb_u64_parse(digits, 0, UINT64_MAX / 1000, &v, why) ||
	    v * scale < min_ms || v * scale > max_ms) {
		snprintf(why_buf, sizeof(why_buf), "out of range %s..%s",
			 xlb_duration_str(min_ms, min, sizeof(min)),
			 xlb_duration_str(max_ms, max, sizeof(max)));
		*why = why_buf;
		return -EINVAL;
	}
	*ms = v * scale;
	return 0;
}

const char *xlb_duration_str(__u32 ms, char *buf, size_t len)
{
	if (ms && ms % 1000 == 0)
		snprintf(buf, len, "%us", ms / 1000);
	else
		snprintf(buf, len, "%ums", ms);
	return buf;
}
