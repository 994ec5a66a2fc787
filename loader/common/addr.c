// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Parsing and printing addresses, VIPs, weights, table sizes and seeds. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "addr.h"
#include "lb_algo.h"

#define XLB_STR_(x) #x
#define XLB_STR(x) XLB_STR_(x)

/* For the few reasons that quote a number back. */
static char why_buf[96];

int xlb_addr_parse(const char *s, __be32 addr[4], __u8 *family,
		   const char **why)
{
	char buf[INET6_ADDRSTRLEN + 2];
	size_t len = strlen(s);
	const __u8 *b;

	memset(addr, 0, 16);
	if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
		if (len - 2 >= sizeof(buf)) {
			*why = "not an IPv6 address";
			return -EINVAL;
		}
		memcpy(buf, s + 1, len - 2);
		buf[len - 2] = '\0';
		if (inet_pton(AF_INET6, buf, addr) != 1) {
			*why = "not an IPv6 address";
			return -EINVAL;
		}
		*family = XLB_AF_INET6;
	} else if (inet_pton(AF_INET, s, addr) == 1) {
		*family = XLB_AF_INET;
	} else if (inet_pton(AF_INET6, s, addr) == 1) {
		*family = XLB_AF_INET6;
	} else {
		*why = "not an IPv4 or IPv6 address";
		return -EINVAL;
	}

	b = (const __u8 *)addr;
	if (*family == XLB_AF_INET) {
		if (!addr[0]) {
			*why = "unspecified address";
			return -EINVAL;
		}
		if (b[0] >= 224) {
			*why = "multicast or reserved address";
			return -EINVAL;
		}
		if (b[0] == 127) {
			*why = "loopback address";
			return -EINVAL;
		}
		return 0;
	}
	if (IN6_IS_ADDR_UNSPECIFIED((struct in6_addr *)addr)) {
		*why = "unspecified address";
		return -EINVAL;
	}
	if (IN6_IS_ADDR_MULTICAST((struct in6_addr *)addr)) {
		*why = "multicast address";
		return -EINVAL;
	}
	if (IN6_IS_ADDR_LOOPBACK((struct in6_addr *)addr)) {
		*why = "loopback address";
		return -EINVAL;
	}
	/* One address, one identity: the table hashes the canonical text. */
	if (IN6_IS_ADDR_V4MAPPED((struct in6_addr *)addr)) {
		*why = "IPv4-mapped IPv6 address: write the IPv4 address";
		return -EINVAL;
	}
	return 0;
}

const char *xlb_addr_str(const __be32 addr[4], __u8 family, char *buf,
			 size_t len)
{
	int af = family == XLB_AF_INET ? AF_INET : AF_INET6;

	if (!inet_ntop(af, addr, buf, len))
		snprintf(buf, len, "?");
	return buf;
}

int xlb_vip_parse(const char *s, struct xlb_vip_key *key, const char **why)
{
	char addr[INET6_ADDRSTRLEN + 3], num[8];
	const char *colon, *slash, *proto;
	size_t n;
	__u32 port;
	int err;

	memset(key, 0, sizeof(*key));
	slash = strrchr(s, '/');
	if (!slash) {
		*why = "expected ADDR:PORT/PROTO, e.g. 192.0.2.10:80/tcp or [2001:db8::10]:443/udp";
		return -EINVAL;
	}
	proto = slash + 1;
	if (!strcasecmp(proto, "tcp")) {
		key->proto = IPPROTO_TCP;
	} else if (!strcasecmp(proto, "udp")) {
		key->proto = IPPROTO_UDP;
	} else {
		*why = "unknown protocol (tcp or udp)";
		return -EINVAL;
	}

	/* The last ':' before the '/' ends the address; an IPv6 address
	 * must be bracketed so its own colons cannot be mistaken for it. */
	colon = memrchr(s, ':', slash - s);
	if (!colon) {
		*why = "missing :PORT (ADDR:PORT/PROTO)";
		return -EINVAL;
	}
	if ((size_t)(colon - s) >= sizeof(addr)) {
		*why = "not an IPv4 or IPv6 address";
		return -EINVAL;
	}
	memcpy(addr, s, colon - s);
	addr[colon - s] = '\0';
	if (strchr(addr, ':') && addr[0] != '[') {
		*why = "IPv6 VIP address must be in brackets, e.g. [2001:db8::10]:443/tcp";
		return -EINVAL;
	}
	err = xlb_addr_parse(addr, key->addr, &key->family, why);
	if (err)
		return err;

	/* Port 0 is a real VIP: the one that receives the fragments sent to
	 * its address and protocol (they carry no ports). */
	n = slash - colon - 1;
	if (n == 0) {
		*why = "missing port";
		return -EINVAL;
	}
	memcpy(num, colon + 1, n < sizeof(num) ? n : sizeof(num) - 1);
	num[n < sizeof(num) ? n : sizeof(num) - 1] = '\0';
	if (n >= sizeof(num) || xlb_u32_parse(num, 0, 65535, &port, why)) {
		*why = "port out of range (0-65535)";
		return -EINVAL;
	}
	key->port = htons(port);
	return 0;
}

const char *xlb_vip_str(const struct xlb_vip_key *key, char *buf, size_t len)
{
	char a[XLB_ADDR_STRLEN];
	const char *proto = key->proto == IPPROTO_TCP ? "tcp" :
			    key->proto == IPPROTO_UDP ? "udp" : "?";

	xlb_addr_str(key->addr, key->family, a, sizeof(a));
	if (key->family == XLB_AF_INET6)
		snprintf(buf, len, "[%s]:%u/%s", a, ntohs(key->port), proto);
	else
		snprintf(buf, len, "%s:%u/%s", a, ntohs(key->port), proto);
	return buf;
}

int xlb_u32_parse(const char *s, __u32 min, __u32 max, __u32 *out,
		  const char **why)
{
	unsigned long long v;
	const char *p;
	char *end;

	for (p = s; *p; p++) {
		if (!isdigit((unsigned char)*p)) {
			*why = *s == '-' ? "negative number" : "not a number";
			return -EINVAL;
		}
	}
	if (!*s) {
		*why = "not a number";
		return -EINVAL;
	}
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || v > max || v < min) {
		snprintf(why_buf, sizeof(why_buf), "out of range (%u-%u)",
			 min, max);
		*why = why_buf;
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int xlb_weight_parse(const char *s, __u32 *weight, const char **why)
{
	if (*s == '-') {
		*why = "negative weight";
		return -EINVAL;
	}
	if (xlb_u32_parse(s, 0, XLB_MAX_WEIGHT, weight, why)) {
		if (*why == why_buf)
			*why = "weight too large (0-" XLB_STR(XLB_MAX_WEIGHT) ")";
		return -EINVAL;
	}
	return 0;
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
		*why = "table size out of range (" XLB_STR(XLB_MIN_TABLE_SIZE)
		       "-" XLB_STR(XLB_MAX_TABLE_SIZE) ")";
		return -EINVAL;
	}
	if (!is_prime(m)) {
		snprintf(why_buf, sizeof(why_buf),
			 "table size %u is not prime (next prime: %u)",
			 m, next_prime(m));
		*why = why_buf;
		return -EINVAL;
	}
	return 0;
}

int xlb_table_size_parse(const char *s, __u32 *m, const char **why)
{
	if (*s == '-') {
		*why = "negative table size";
		return -EINVAL;
	}
	if (xlb_u32_parse(s, 0, UINT32_MAX, m, why)) {
		*why = "table size out of range (" XLB_STR(XLB_MIN_TABLE_SIZE)
		       "-" XLB_STR(XLB_MAX_TABLE_SIZE) ")";
		return -EINVAL;
	}
	return xlb_table_size_check(*m, why);
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
