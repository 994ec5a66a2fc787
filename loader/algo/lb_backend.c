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

static int parse_weight(const char *arg, const char *s, __u32 *weight)
{
	const char *why;

	if (!*s) {
		p_err("backend '%s': missing weight after ':'", arg);
		return -EINVAL;
	}
	if (xlb_weight_parse(s, weight, &why)) {
		p_err("backend '%s': bad weight '%s': %s", arg, s, why);
		return -EINVAL;
	}
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

int lb_backends_check(const struct lb_backend *backends, size_t n, __u32 m)
{
	__u32 *order, count, i;
	const char *why;
	int err;

	if (!n) {
		p_err("no backends given");
		return -EINVAL;
	}
	if (xlb_table_size_check(m, &why)) {
		p_err("table size %u: %s", m, why);
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
