// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Fuzz target: the parsers of what users type (loader/common/addr.h,
 * loader/common/numbers.h, lb_backend_parse()).
 *
 * The first byte picks the parser (and, for the bare number parsers, the
 * bounds); the rest is the text, cut at its first NUL. Beyond memory
 * errors and undefined behaviour, each parser must keep its contract:
 *  - a failure sets a reason (*why, or exactly one p_err() line);
 *  - a success is in range, and what it parsed prints back to text that
 *    parses to the same value (the canonical form is a fixed point).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "addr.h"
#include "lb_algo.h"
#include "numbers.h"
#include "report.h"

#define MAX_TEXT 4096

static unsigned int errors;
static char last_error[1024];

static void count_error(const char *msg)
{
	errors++;
	snprintf(last_error, sizeof(last_error), "%s", msg);
}

#define CHECK(cond, ...) FUZZ_CHECK(stderr, cond, __VA_ARGS__)

/* A failed parse names the problem. */
static void check_why(int err, const char *why, const char *s)
{
	CHECK(err == -EINVAL, "'%s': returned %d", s, err);
	CHECK(why && *why, "'%s': no reason given", s);
}

static void fuzz_addr(const char *s)
{
	__be32 addr[4], again[4];
	__u8 family = 0, family2 = 0;
	char text[XLB_ADDR_STRLEN];
	const char *why = NULL;
	int err;

	err = xlb_addr_parse(s, addr, &family, &why);
	if (err) {
		check_why(err, why, s);
		return;
	}
	CHECK(family == XLB_AF_INET || family == XLB_AF_INET6, "'%s': family %u", s, family);
	xlb_addr_str(addr, family, text, sizeof(text));
	why = NULL;
	err = xlb_addr_parse(text, again, &family2, &why);
	CHECK(!err, "'%s' printed as '%s', which fails: %s", s, text, why);
	CHECK(family2 == family && !memcmp(addr, again, sizeof(addr)),
	      "'%s' printed as '%s', which parses to another address", s, text);
}

static void fuzz_vip(const char *s)
{
	struct xlb_vip_key key, again;
	char text[XLB_VIP_STRLEN];
	const char *why = NULL;
	int err;

	err = xlb_vip_parse(s, &key, &why);
	if (err) {
		check_why(err, why, s);
		return;
	}
	xlb_vip_str(&key, text, sizeof(text));
	CHECK(strlen(text) < sizeof(text) - 1, "'%s': '%s' may be cut", s, text);
	why = NULL;
	err = xlb_vip_parse(text, &again, &why);
	CHECK(!err, "'%s' printed as '%s', which fails: %s", s, text, why);
	CHECK(!memcmp(&key, &again, sizeof(key)),
	      "'%s' printed as '%s', which parses to another VIP", s, text);
}

static void fuzz_weight(const char *s)
{
	const char *why = NULL;
	char text[16];
	__u32 w, again;
	int err;

	err = xlb_weight_parse(s, &w, &why);
	if (err) {
		check_why(err, why, s);
		return;
	}
	CHECK(w <= XLB_MAX_WEIGHT, "'%s': weight %u", s, w);
	snprintf(text, sizeof(text), "%u", w);
	CHECK(!xlb_weight_parse(text, &again, &why) && again == w, "'%s'", s);
}

/* Bounds for the bare number parsers, picked by the selector byte. */
static const __u64 bounds[][2] = {
	{ 0, UINT32_MAX }, { 1, 65535 }, { XLB_MIN_TABLE_SIZE, XLB_MAX_TABLE_SIZE },
	{ 0, 0 }, { 1000, 1000 }, { 0, UINT64_MAX }, { UINT32_MAX, UINT64_MAX },
	{ 5, 3 },	/* empty: nothing may succeed */
};
#define N_BOUNDS (sizeof(bounds) / sizeof(bounds[0]))

static void fuzz_u32(const char *s, unsigned int pick)
{
	__u64 min = bounds[pick % N_BOUNDS][0], max = bounds[pick % N_BOUNDS][1];
	const char *why = NULL;
	__u32 v;
	int err;

	if (min > UINT32_MAX)
		min = UINT32_MAX;
	if (max > UINT32_MAX)
		max = UINT32_MAX;
	err = xlb_u32_parse(s, min, max, &v, &why);
	if (err) {
		check_why(err, why, s);
		return;
	}
	CHECK(v >= min && v <= max, "'%s': %u outside %" PRIu64 "..%" PRIu64,
	      s, v, (uint64_t)min, (uint64_t)max);
	CHECK(strtoull(s, NULL, 10) == v, "'%s' read as %u", s, v);
}

static void fuzz_u64(const char *s, unsigned int pick)
{
	__u64 min = bounds[pick % N_BOUNDS][0], max = bounds[pick % N_BOUNDS][1];
	const char *why = NULL;
	__u64 v;
	int err;

	err = xlb_u64_parse(s, min, max, &v, &why);
	if (err) {
		check_why(err, why, s);
		return;
	}
	CHECK(v >= min && v <= max, "'%s': %" PRIu64 " out of range", s, (uint64_t)v);
	CHECK(strtoull(s, NULL, 10) == v, "'%s' read as %" PRIu64, s, (uint64_t)v);
}

static void fuzz_table_size(const char *s)
{
	const char *why = NULL;
	__u32 m;
	int err;

	err = xlb_table_size_parse(s, &m, &why);
	if (err) {
		check_why(err, why, s);
		return;
	}
	CHECK(m >= XLB_MIN_TABLE_SIZE && m <= XLB_MAX_TABLE_SIZE, "'%s': %u", s, m);
	CHECK(is_prime(m), "'%s': %u is not prime", s, m);
	CHECK(!xlb_table_size_check(m, &why), "'%s': %u: %s", s, m, why);
}

static void fuzz_seed(const char *s)
{
	char text[XLB_SEED_STRLEN];
	__u64 key[2], again[2];
	const char *why = NULL;
	int err;

	err = xlb_seed_parse(s, key, &why);
	if (err) {
		check_why(err, why, s);
		return;
	}
	xlb_seed_str(key, text, sizeof(text));
	CHECK(strlen(text) == 32, "'%s' printed as '%s'", s, text);
	CHECK(!strcasecmp(text, s) || !strcasecmp(text, s + 2),
	      "'%s' printed as '%s'", s, text);
	CHECK(!xlb_seed_parse(text, again, &why) && !memcmp(key, again, sizeof(key)),
	      "'%s' printed as '%s', which parses to another seed", s, text);
}

static void fuzz_backend(const char *s)
{
	struct lb_backend b, again;
	char text[XLB_NAME_MAX + 16];
	size_t len;
	int err;

	errors = 0;
	err = lb_backend_parse(s, &b);
	if (err) {
		CHECK(err == -EINVAL, "'%s': returned %d", s, err);
		CHECK(errors == 1, "'%s': %u errors reported", s, errors);
		CHECK(!strchr(last_error, '\n') || strchr(s, '\n'),
		      "'%s': error of more than one line", s);
		return;
	}
	CHECK(errors == 0, "'%s' parsed but reported '%s'", s, last_error);
	len = strnlen(b.id, sizeof(b.id));
	CHECK(len > 0 && len < sizeof(b.id), "'%s': identity of %zu characters", s, len);
	CHECK(b.weight <= XLB_MAX_WEIGHT, "'%s': weight %u", s, b.weight);
	/* The identity with its weight, as lb_backend_parse() documents. */
	snprintf(text, sizeof(text), strchr(b.id, ':') ? "[%s]:%u" : "%s:%u",
		 b.id, b.weight);
	err = lb_backend_parse(text, &again);
	CHECK(!err, "'%s' gives '%s', which fails: %s", s, text, last_error);
	CHECK(!strcmp(again.id, b.id) && again.weight == b.weight,
	      "'%s' gives '%s', which parses to '%s' weight %u", s, text,
	      again.id, again.weight);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	p_err_hook = count_error;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;
	unsigned int pick;

	if (size < 1 || size > MAX_TEXT)
		return -1;
	pick = data[0];
	/* The text on the heap, just its size: ASan sees any overread. */
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';

	switch (pick % 8) {
	case 0: fuzz_addr(s); break;
	case 1: fuzz_vip(s); break;
	case 2: fuzz_weight(s); break;
	case 3: fuzz_u32(s, pick / 8); break;
	case 4: fuzz_table_size(s); break;
	case 5: fuzz_seed(s); break;
	case 6: fuzz_backend(s); break;
	case 7: fuzz_u64(s, pick / 8); break;
	}
	free(s);
	return 0;
}
