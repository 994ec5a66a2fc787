/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the backends' program (bpf/decap.bpf.c) is told to trust, written
 * into its maps as include/decap.h lays them out: the host's addresses by
 * kind, the fleet's and the balancers' prefixes, the extra interfaces a
 * forwarded packet may leave by, and the setting. Shared by the tests and
 * bench/bench_decap.c, which load the program themselves.
 */
#ifndef XLB_TEST_DECAP_TRUST_H
#define XLB_TEST_DECAP_TRUST_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include "decap.h"

/* "ADDR" or "ADDR/LEN" of either family: 0 and the parts, or -EINVAL. */
static inline int decap_parse(const char *text, __u8 *family, __be32 addr[4], int *plen)
{
	char buf[64], *slash;

	if (snprintf(buf, sizeof(buf), "%s", text) >= (int)sizeof(buf))
		return -EINVAL;
	slash = strchr(buf, '/');
	if (slash)
		*slash++ = '\0';
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, buf, addr) == 1)
		*family = XLB_AF_INET;
	else if (inet_pton(AF_INET6, buf, addr) == 1)
		*family = XLB_AF_INET6;
	else
		return -EINVAL;
	*plen = slash ? atoi(slash) : (*family == XLB_AF_INET ? 32 : 128);
	return 0;
}

/* The address gets kind (XLB_DECAP_ADDR_*) added to what it was. */
static inline int decap_trust_addr(int fd, const char *text, __u32 kind)
{
	struct xlb_decap_addr key = {};
	__u32 was = 0;
	int plen;

	if (decap_parse(text, &key.family, key.addr, &plen))
		return -EINVAL;
	bpf_map_lookup_elem(fd, &key, &was);
	kind |= was;
	return bpf_map_update_elem(fd, &key, &kind, BPF_ANY) ? -errno : 0;
}

/* The address is no longer one of the host's. */
static inline int decap_untrust_addr(int fd, const char *text)
{
	struct xlb_decap_addr key = {};
	int plen;

	if (decap_parse(text, &key.family, key.addr, &plen))
		return -EINVAL;
	return bpf_map_delete_elem(fd, &key) ? -errno : 0;
}

static inline int decap_prefix_key(const char *text, struct xlb_decap_prefix *key)
{
	int plen;

	memset(key, 0, sizeof(*key));
	if (decap_parse(text, &key->family, key->addr, &plen))
		return -EINVAL;
	key->prefixlen = XLB_DECAP_PREFIX_BASE + (__u32)plen;
	return 0;
}

/* The prefix "ADDR/LEN" joins (or leaves) the trie fd. */
static inline int decap_trust_prefix(int fd, const char *text)
{
	struct xlb_decap_prefix key;
	__u32 one = 1;

	if (decap_prefix_key(text, &key))
		return -EINVAL;
	return bpf_map_update_elem(fd, &key, &one, BPF_ANY) ? -errno : 0;
}

static inline int decap_untrust_prefix(int fd, const char *text)
{
	struct xlb_decap_prefix key;

	if (decap_prefix_key(text, &key))
		return -EINVAL;
	return bpf_map_delete_elem(fd, &key) ? -errno : 0;
}

/* The setting: GUE port (host order; 0: the default) and XLB_DECAP_F_*. */
static inline int decap_set_config(int fd, __u16 port, __u16 flags)
{
	struct xlb_decap_config cfg = { .gue_port = htons(port), .flags = flags };
	__u32 zero = 0;

	return bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY) ? -errno : 0;
}

/* Packets may (or may no longer) leave by ifindex when forwarded. */
static inline int decap_allow_egress(int fd, __u32 ifindex, int allow)
{
	__u32 one = 1;

	if (allow)
		return bpf_map_update_elem(fd, &ifindex, &one, BPF_ANY) ? -errno : 0;
	return bpf_map_delete_elem(fd, &ifindex) ? -errno : 0;
}

#endif /* XLB_TEST_DECAP_TRUST_H */
