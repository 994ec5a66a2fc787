// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Parsing and printing addresses and VIPs. */
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
		if (b[0] == 0) {
			*why = "address in 0.0.0.0/8, which names no host";
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
	if (IN6_IS_ADDR_V4COMPAT((struct in6_addr *)addr)) {
		*why = "IPv4-compatible IPv6 address (deprecated, RFC 4291): write the IPv4 address";
		return -EINVAL;
	}
	/* Without a scope it names no one interface: a balancer routes. */
	if (IN6_IS_ADDR_LINKLOCAL((struct in6_addr *)addr)) {
		*why = "link-local address: give a routable one";
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

/* The LEN after slash (NULL: the host prefix) of addr, with no bit set
 * past it, into *len. */
static int prefix_len(const char *slash, const __be32 addr[4], __u8 family,
		      __u8 *len, const char **why)
{
	const __u8 *b = (const __u8 *)addr;
	__u32 max = family == XLB_AF_INET ? 32 : 128, bits = max, i;

	if (slash && xlb_u32_parse(slash + 1, 0, max, &bits, why)) {
		*why = max == 32 ? "prefix length must be 0..32" :
				   "prefix length must be 0..128";
		return -EINVAL;
	}
	for (i = bits; i < max; i++) {
		if (b[i / 8] & (0x80 >> (i % 8))) {
			*why = "host bits set (write the network address)";
			return -EINVAL;
		}
	}
	*len = bits;
	return 0;
}

int xlb_source_prefix_parse(const char *s, __be32 addr[4], __u8 *family,
			    __u8 *len, const char **why)
{
	const char *slash = strrchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	char buf[INET6_ADDRSTRLEN + 2];

	memset(addr, 0, 16);
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		s++;
		n -= 2;
	}
	if (n >= sizeof(buf)) {
		*why = "not an IPv4 or IPv6 prefix";
		return -EINVAL;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET, buf, addr) == 1)
		*family = XLB_AF_INET;
	else if (inet_pton(AF_INET6, buf, addr) == 1)
		*family = XLB_AF_INET6;
	else {
		*why = "not an IPv4 or IPv6 prefix";
		return -EINVAL;
	}
	return prefix_len(slash, addr, *family, len, why);
}

int xlb_prefix_parse(const char *s, __be32 addr[4], __u8 *family,
		     __u8 *len, const char **why)
{
	const char *slash = strrchr(s, '/');
	char buf[INET6_ADDRSTRLEN + 3];
	int err;

	if (!slash) {
		err = xlb_addr_parse(s, addr, family, why);
		*len = *family == XLB_AF_INET ? 32 : 128;
		return err;
	}
	if ((size_t)(slash - s) >= sizeof(buf)) {
		*why = "not an IPv4 or IPv6 address";
		return -EINVAL;
	}
	memcpy(buf, s, slash - s);
	buf[slash - s] = '\0';
	err = xlb_addr_parse(buf, addr, family, why);
	return err ?: prefix_len(slash, addr, *family, len, why);
}

const char *xlb_prefix_str(const __be32 addr[4], __u8 family, __u8 len,
			   char *buf, size_t size)
{
	char a[XLB_ADDR_STRLEN];

	xlb_addr_str(addr, family, a, sizeof(a));
	if (len == (family == XLB_AF_INET ? 32 : 128))
		snprintf(buf, size, "%s", a);
	else
		snprintf(buf, size, "%s/%u", a, len);
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
	if (addr[0] == '[' && addr[strlen(addr) - 1] != ']') {
		*why = "missing :PORT after the bracketed IPv6 address";
		return -EINVAL;
	}
	if (strchr(addr, ':') && addr[0] != '[') {
		*why = "IPv6 VIP address must be in brackets, e.g. [2001:db8::10]:443/tcp";
		return -EINVAL;
	}
	err = xlb_addr_parse(addr, key->addr, &key->family, why);
	if (err)
		return err;

	/* Port 0 is a real VIP: the one that receives the fragments sent to
	 * its address and protocol (they carry no ports). Port * takes
	 * every port that no VIP of its own takes. */
	n = slash - colon - 1;
	if (n == 1 && colon[1] == '*') {
		key->proto |= XLB_VIP_PROTO_ALL_PORTS;
		return 0;
	}
	if (n == 0) {
		*why = "missing port";
		return -EINVAL;
	}
	memcpy(num, colon + 1, n < sizeof(num) ? n : sizeof(num) - 1);
	num[n < sizeof(num) ? n : sizeof(num) - 1] = '\0';
	if (n >= sizeof(num) || xlb_u32_parse(num, 0, 65535, &port, why)) {
		*why = "port must be a number 0..65535 or *";
		return -EINVAL;
	}
	key->port = htons(port);
	return 0;
}

const char *xlb_vip_str(const struct xlb_vip_key *key, char *buf, size_t len)
{
	__u8 p = key->proto & ~XLB_VIP_PROTO_ALL_PORTS;
	const char *proto = p == IPPROTO_TCP ? "tcp" :
			    p == IPPROTO_UDP ? "udp" : "?";
	char a[XLB_ADDR_STRLEN], port[8];

	xlb_addr_str(key->addr, key->family, a, sizeof(a));
	if (key->proto & XLB_VIP_PROTO_ALL_PORTS)
		snprintf(port, sizeof(port), "*");
	else
		snprintf(port, sizeof(port), "%u", ntohs(key->port));
	if (key->family == XLB_AF_INET6)
		snprintf(buf, len, "[%s]:%s/%s", a, port, proto);
	else
		snprintf(buf, len, "%s:%s/%s", a, port, proto);
	return buf;
}


int xlb_client_parse(const char *s, __be32 addr[4], __u8 *family,
		     __be16 *port, const char **why)
{
	char buf[XLB_ADDR_STRLEN + 8];
	const char *colon = strrchr(s, ':');
	__u32 p;

	*why = "expected ADDR:PORT ([IPV6]:PORT)";
	if (!colon || (size_t)(colon - s) >= sizeof(buf) ||
	    (strchr(s, ':') != colon && (s[0] != '[' || colon[-1] != ']')))
		return -EINVAL;
	memcpy(buf, s, colon - s);
	buf[colon - s] = '\0';
	if (xlb_addr_parse(buf, addr, family, why) ||
	    xlb_u32_parse(colon + 1, 1, 65535, &p, why))
		return -EINVAL;
	*port = htons(p);
	return 0;
}
