// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Backends as users write them ("ADDR[:WEIGHT]", "[IPV6]:WEIGHT",
 * "NAME[:WEIGHT]") and the checks a backend set must pass before a table is
 * built from it. Each problem is reported once, naming what is wrong.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "lb_impl.h"

int lb_parse_u64(const char *s, __u64 max, __u64 *out)
{
	__u64 v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (max - (*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	return 0;
}

static int parse_weight(const char *arg, const char *s, __u32 *weight)
{
	__u64 v;
	int err;

	if (!*s) {
		p_err("backend '%s': missing weight after ':'", arg);
		return -EINVAL;
	}
	if (*s == '-') {
		p_err("backend '%s': weight %s is negative", arg, s);
		return -EINVAL;
	}
	err = lb_parse_u64(s, XLB_MAX_WEIGHT, &v);
	if (err == -ERANGE) {
		p_err("backend '%s': weight %s is above the maximum %u",
		      arg, s, XLB_MAX_WEIGHT);
		return -EINVAL;
	}
	if (err) {
		p_err("backend '%s': weight '%s' is not a number", arg, s);
		return -EINVAL;
	}
	*weight = v;
	return 0;
}

/* Names for offline use: letters, digits, '.', '_' and '-', not only
 * digits and dots (that would be a mistyped IPv4 address). */
static bool valid_name(const char *s)
{
	bool letter = false;

	if (!*s)
		return false;
	for (; *s; s++) {
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    *s == '_' || *s == '-')
			letter = true;
		else if (!((*s >= '0' && *s <= '9') || *s == '.'))
			return false;
	}
	return letter;
}

int lb_backend_parse(const char *arg, struct lb_backend *out)
{
	char host[XLB_NAME_MAX];
	unsigned char addr[16];
	const char *weight = NULL, *end;
	bool bracketed = arg[0] == '[';
	const char *start = arg + bracketed;
	size_t len;

	memset(out, 0, sizeof(*out));
	out->weight = 1;
	if (bracketed) {
		end = strchr(arg, ']');
		if (!end) {
			p_err("backend '%s': missing ']'", arg);
			return -EINVAL;
		}
		if (end[1] && end[1] != ':') {
			p_err("backend '%s': expected ':WEIGHT' after ']'", arg);
			return -EINVAL;
		}
		weight = end[1] ? end + 2 : NULL;
	} else if (inet_pton(AF_INET6, arg, addr) == 1) {
		end = arg + strlen(arg);	/* a bare IPv6 address */
	} else {
		end = strrchr(arg, ':');
		weight = end ? end + 1 : NULL;
		end = end ? end : arg + strlen(arg);
	}
	len = end - start;
	if (!len) {
		p_err("backend '%s': missing address or name", arg);
		return -EINVAL;
	}
	if (len >= XLB_NAME_MAX) {
		p_err("backend '%s': longer than %d characters", arg,
		      XLB_NAME_MAX - 1);
		return -EINVAL;
	}
	memcpy(host, start, len);
	host[len] = '\0';

	if (inet_pton(AF_INET6, host, addr) == 1) {
		inet_ntop(AF_INET6, addr, out->id, sizeof(out->id));
	} else if (bracketed) {
		p_err("backend '%s': '%s' is not an IPv6 address", arg, host);
		return -EINVAL;
	} else if (inet_pton(AF_INET, host, addr) == 1) {
		inet_ntop(AF_INET, addr, out->id, sizeof(out->id));
	} else if (!valid_name(host)) {
		p_err("backend '%s': '%s' is neither an address nor a name "
		      "(letters, digits, '.', '_', '-')", arg, host);
		return -EINVAL;
	} else {
		memcpy(out->id, host, len + 1);
	}
	if (weight)
		return parse_weight(arg, weight, &out->weight);
	return 0;
}

static __u32 next_prime(__u32 m)
{
	while (!is_prime(m))
		m++;
	return m;
}

int lb_backends_check(const struct lb_backend *backends, size_t n, __u32 m)
{
	__u32 *order, count, i;
	int err;

	if (!n) {
		p_err("no backends given");
		return -EINVAL;
	}
	if (m < XLB_MIN_TABLE_SIZE || m > XLB_MAX_TABLE_SIZE) {
		p_err("table size %u is out of range %u..%u", m,
		      XLB_MIN_TABLE_SIZE, XLB_MAX_TABLE_SIZE);
		return -EINVAL;
	}
	if (!is_prime(m)) {
		p_err("table size %u is not prime (the next prime is %u)", m,
		      next_prime(m));
		return -EINVAL;
	}
	if (n > m) {
		p_err("table size %u is smaller than the number of backends (%zu)",
		      m, n);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		if (backends[i].weight > XLB_MAX_WEIGHT) {
			p_err("backend '%s': weight %u is above the maximum %u",
			      backends[i].id, backends[i].weight, XLB_MAX_WEIGHT);
			return -EINVAL;
		}
	}
	order = malloc(n * sizeof(*order));
	if (!order) {
		p_err("out of memory checking %zu backends", n);
		return -ENOMEM;
	}
	err = lb_rank(backends, n, true, order, &count);
	/* On a duplicate the ranking is complete: find and name it. */
	for (i = 1; err && i < count; i++) {
		if (!strcmp(backends[order[i - 1]].id, backends[order[i]].id)) {
			p_err("backend '%s' is given twice", backends[order[i]].id);
			break;
		}
	}
	free(order);
	return err;
}
