/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The datapath fixture shared by tests/test_dp_*.c and
 * bench/bench_datapath.c: the XDP program loaded in a private network
 * namespace (loader/sim/sandbox.h), a fixed set of VIPs and backends in its
 * maps, and a model of what the program must output, built with
 * loader/packets.h from the flow hash and the tables the fixture installed.
 */
#ifndef XLB_TEST_DP_FIXTURE_H
#define XLB_TEST_DP_FIXTURE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xlb.h"
#include "flow_hash.h"
#include "vip_filter.h"
#include "table_map.h"
#include "sandbox.h"
#include "packets.h"

/* VIP ids of the fixture. */
enum {
	VIP_TCP4 = 1,		/* 192.0.2.10:80/tcp */
	VIP_UDP4,		/* 192.0.2.10:53/udp */
	VIP_FRAG4,		/* 192.0.2.10:0/udp: its fragments */
	VIP_TCP6,		/* [2001:db8:f::10]:443/tcp */
	VIP_UDP6,		/* [2001:db8:f::10]:53/udp */
	VIP_FRAG6,		/* [2001:db8:f::10]:0/udp */
	VIP_REDIR4,		/* backend out of the other interface */
	VIP_REDIR6,
	VIP_UNRES4,		/* backend behind an unresolved neighbour */
	VIP_UNRES6,
	VIP_UNREACH4,		/* backend behind an unreachable route */
	VIP_UNREACH6,
	VIP_NO_TABLE,		/* no table installed */
	VIP_NO_BACKEND,		/* a table of empty slots */
	VIP_MTU4,		/* one IPv4 backend */
	VIP_MTU6,		/* one IPv6 backend */
	VIP_RANDOM4,		/* 64 backends, M = 65537, random table */
	VIP_RANDOM6,
	VIP_ALL4,		/* 192.0.2.60, every TCP port ... */
	VIP_ALL4_80,		/* ... but 80, 192.0.2.60:80/tcp's */
	VIP_ALL6,		/* 2001:db8:f::60, every UDP port */
	VIP__COUNT,
};

#define DP_MAX_VIP_BACKENDS	64
#define DP_RANDOM_M		65537

struct dp_vip_def {
	__u32 id;
	int family;
	const char *addr;
	__u16 port;
	__u8 proto;
	__u32 m;
	const char *backends[4];	/* unused entries NULL */
	bool no_table;
	bool all_ports;			/* every port of the address (port 0) */
};

static const struct dp_vip_def dp_vip_defs[] = {
	{ .id = VIP_TCP4, .family = 4, .addr = "192.0.2.10", .port = 80, .proto = IPPROTO_TCP, .m = 31,
	  .backends = { "203.0.113.1", "203.0.113.2", "2001:db8:b0::3" } },
	{ .id = VIP_UDP4, .family = 4, .addr = "192.0.2.10", .port = 53, .proto = IPPROTO_UDP, .m = 13,
	  .backends = { "203.0.113.11", "2001:db8:b0::12" } },
	{ .id = VIP_FRAG4, .family = 4, .addr = "192.0.2.10", .port = 0, .proto = IPPROTO_UDP, .m = 7,
	  .backends = { "203.0.113.21", "203.0.113.22", "203.0.113.23" } },
	{ .id = VIP_TCP6, .family = 6, .addr = "2001:db8:f::10", .port = 443, .proto = IPPROTO_TCP, .m = 31,
	  .backends = { "2001:db8:b0::31", "2001:db8:b0::32", "203.0.113.33" } },
	{ .id = VIP_UDP6, .family = 6, .addr = "2001:db8:f::10", .port = 53, .proto = IPPROTO_UDP, .m = 13,
	  .backends = { "2001:db8:b0::41", "203.0.113.42" } },
	{ .id = VIP_FRAG6, .family = 6, .addr = "2001:db8:f::10", .port = 0, .proto = IPPROTO_UDP, .m = 7,
	  .backends = { "2001:db8:b0::51", "2001:db8:b0::52" } },
	{ .id = VIP_REDIR4, .family = 4, .addr = "192.0.2.20", .port = 80, .proto = IPPROTO_TCP, .m = 3,
	  .backends = { "203.0.113.70" } },
	{ .id = VIP_REDIR6, .family = 6, .addr = "2001:db8:f::20", .port = 80, .proto = IPPROTO_TCP, .m = 3,
	  .backends = { "2001:db8:b1::70" } },
	{ .id = VIP_UNRES4, .family = 4, .addr = "192.0.2.21", .port = 80, .proto = IPPROTO_TCP, .m = 3,
	  .backends = { "203.0.113.130" } },
	{ .id = VIP_UNRES6, .family = 6, .addr = "2001:db8:f::21", .port = 80, .proto = IPPROTO_TCP, .m = 3,
	  .backends = { "2001:db8:b2::1" } },
	{ .id = VIP_UNREACH4, .family = 4, .addr = "192.0.2.22", .port = 80, .proto = IPPROTO_TCP, .m = 3,
	  .backends = { "203.0.113.200" } },
	{ .id = VIP_UNREACH6, .family = 6, .addr = "2001:db8:f::22", .port = 80, .proto = IPPROTO_TCP, .m = 3,
	  .backends = { "2001:db8:b3::1" } },
	{ .id = VIP_NO_TABLE, .family = 4, .addr = "192.0.2.30", .port = 80, .proto = IPPROTO_TCP, .m = 3,
	  .backends = { "203.0.113.3" }, .no_table = true },
	{ .id = VIP_NO_BACKEND, .family = 4, .addr = "192.0.2.31", .port = 80, .proto = IPPROTO_TCP, .m = 3,
	  .backends = { NULL } },
	{ .id = VIP_MTU4, .family = 4, .addr = "192.0.2.50", .port = 80, .proto = IPPROTO_TCP, .m = 3,
	  .backends = { "203.0.113.50" } },
	{ .id = VIP_MTU6, .family = 4, .addr = "192.0.2.51", .port = 80, .proto = IPPROTO_TCP, .m = 3,
	  .backends = { "2001:db8:b0::50" } },
	{ .id = VIP_RANDOM4, .family = 4, .addr = "192.0.2.40", .port = 80, .proto = IPPROTO_TCP, .m = DP_RANDOM_M,
	  .backends = { NULL } },
	{ .id = VIP_RANDOM6, .family = 6, .addr = "2001:db8:f::40", .port = 443, .proto = IPPROTO_TCP, .m = DP_RANDOM_M,
	  .backends = { NULL } },
	{ .id = VIP_ALL4, .family = 4, .addr = "192.0.2.60", .proto = IPPROTO_TCP, .m = 7, .all_ports = true,
	  .backends = { "203.0.113.61", "203.0.113.62" } },
	{ .id = VIP_ALL4_80, .family = 4, .addr = "192.0.2.60", .port = 80, .proto = IPPROTO_TCP, .m = 3,
	  .backends = { "203.0.113.63" } },
	{ .id = VIP_ALL6, .family = 6, .addr = "2001:db8:f::60", .proto = IPPROTO_UDP, .m = 7, .all_ports = true,
	  .backends = { "2001:db8:b0::61", "2001:db8:b0::62" } },
};

struct dp_backend {
	int family;
	char addr[INET6_ADDRSTRLEN];
	__u8 bin[16];
};

struct dp_vip {
	const struct dp_vip_def *def;
	__u32 *table;		/* what the fixture installed; NULL: none */
	__u32 m;
	__u32 ids[DP_MAX_VIP_BACKENDS];	/* its backends' record ids */
	__u32 n_ids;
};

struct dp_fixture {
	struct xlb_sandbox env;
	struct bpf_object *obj;
	int prog_fd;
	struct xlb_obj_maps maps;
	struct xlb_config cfg;
	struct dp_vip vips[VIP__COUNT];
	struct dp_backend backends[XLB_MAX_BACKENDS];
	__u32 n_backends;	/* ids 1..n_backends are in use */
};

static const __u8 dp_mac_in[6] = XLB_SANDBOX_MAC_IN;
static const __u8 dp_mac_gw[6] = XLB_SANDBOX_MAC_GW;
static const __u8 dp_mac_other[6] = XLB_SANDBOX_MAC_OTHER;
static const __u8 dp_mac_other_gw[6] = XLB_SANDBOX_MAC_OTHER_GW;

/* The flow a packet belongs to, as text: what the model hashes. */
struct dp_flow {
	int family;
	const char *src, *dst;
	__u16 sport, dport;
	__u8 proto;
};

static inline struct xlb_flow dp_xlb_flow(const struct dp_flow *f)
{
	struct xlb_flow x = {
		.family = f->family == 4 ? XLB_AF_INET : XLB_AF_INET6,
		.proto = f->proto,
		.sport = htons(f->sport),
		.dport = htons(f->dport),
	};

	pkt_addr(f->family, f->src, (__u8 *)x.src);
	pkt_addr(f->family, f->dst, (__u8 *)x.dst);
	return x;
}

static inline __u64 dp_seed_rng(__u64 *s)
{
	/* xorshift64*: fast, reproducible */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static inline int dp_add_backend(struct dp_fixture *fx, __u32 vip_id,
				 const char *addr, __u32 *id_out)
{
	struct xlb_backend be = { .vip_id = vip_id, .weight = 1, .gen = 1,
				  .flags = XLB_BE_F_IN_USE };
	struct dp_backend *b;
	__u32 id = ++fx->n_backends;

	b = &fx->backends[id];
	b->family = strchr(addr, ':') ? 6 : 4;
	snprintf(b->addr, sizeof(b->addr), "%s", addr);
	if (!pkt_addr(b->family, addr, b->bin))
		return -EINVAL;
	be.family = b->family == 4 ? XLB_AF_INET : XLB_AF_INET6;
	memcpy(be.addr, b->bin, b->family == 4 ? 4 : 16);
	*id_out = id;
	return bpf_map_update_elem(fx->maps.backends, &id, &be, BPF_ANY) ? -errno : 0;
}

/*
 * Give backend record id to another backend, at addr, of generation gen,
 * as the loader does when it reuses the id of a deleted backend (same VIP,
 * weight and flags); the model follows.
 */
static inline int dp_reuse_backend(struct dp_fixture *fx, __u32 id,
				   const char *addr, __u32 gen)
{
	struct dp_backend *b = &fx->backends[id];
	struct xlb_backend be;

	if (bpf_map_lookup_elem(fx->maps.backends, &id, &be))
		return -errno;
	b->family = strchr(addr, ':') ? 6 : 4;
	snprintf(b->addr, sizeof(b->addr), "%s", addr);
	memset(b->bin, 0, sizeof(b->bin));
	if (!pkt_addr(b->family, addr, b->bin))
		return -EINVAL;
	memset(be.addr, 0, sizeof(be.addr));
	memcpy(be.addr, b->bin, b->family == 4 ? 4 : 16);
	be.family = b->family == 4 ? XLB_AF_INET : XLB_AF_INET6;
	be.gen = gen;
	return bpf_map_update_elem(fx->maps.backends, &id, &be, BPF_ANY) ? -errno : 0;
}

/* A VIP more in the VIP filter (its bit and its address's) and in
 * xlb_vip_addrs, as the loader keeps them: the datapath's path for other
 * traffic is the one a real instance takes. */
static inline int dp_add_vip_filter(struct dp_fixture *fx,
				    const struct xlb_vip_key *vip)
{
	static struct xlb_vip_filter f;
	struct xlb_vip_key key = { .family = vip->family };
	struct xlb_vip_addr a = { 0 };
	int filter_fd, addrs_fd;
	__u32 zero = 0, bit;

	filter_fd = bpf_object__find_map_fd_by_name(fx->obj, XLB_MAP_VIP_FILTER);
	addrs_fd = bpf_object__find_map_fd_by_name(fx->obj, XLB_MAP_VIP_ADDRS);
	if (filter_fd < 0 || addrs_fd < 0)
		return -ENOENT;
	memcpy(key.addr, vip->addr, sizeof(key.addr));
	if (bpf_map_lookup_elem(filter_fd, &zero, &f))
		return -errno;
	f.ready |= XLB_VIP_FILTER_READY;
	if (vip->proto & XLB_VIP_PROTO_ALL_PORTS)
		f.ready |= XLB_VIP_FILTER_ALL_PORTS;
	bit = xlb_vip_key_bit(vip);
	f.bits[bit / 64] |= 1ULL << (bit % 64);
	bit = xlb_vip_filter_bit(key.addr, 0, 0, key.family);
	f.bits[bit / 64] |= 1ULL << (bit % 64);
	if (bpf_map_update_elem(filter_fd, &zero, &f, BPF_ANY))
		return -errno;
	bpf_map_lookup_elem(addrs_fd, &key, &a);
	a.vips++;
	return bpf_map_update_elem(addrs_fd, &key, &a, BPF_ANY) ? -errno : 0;
}

static inline int dp_add_vip(struct dp_fixture *fx, const struct dp_vip_def *d)
{
	struct xlb_vip_key key = { .port = htons(d->port), .proto = d->proto,
				   .family = d->family == 4 ? XLB_AF_INET : XLB_AF_INET6 };

	if (d->all_ports)
		key.proto |= XLB_VIP_PROTO_ALL_PORTS;
	struct xlb_vip vip = { .id = d->id, .table_size = d->m };
	struct dp_vip *v = &fx->vips[d->id];
	__u32 ids[DP_MAX_VIP_BACKENDS], n = 0, i;
	__u64 rng = 0x9e3779b97f4a7c15ULL ^ d->id;
	char addr[INET6_ADDRSTRLEN];
	int err;

	v->def = d;
	v->m = d->m;
	pkt_addr(d->family, d->addr, (__u8 *)key.addr);
	if (d->m == DP_RANDOM_M) {
		/* Half IPv4, half IPv6 backends, slots drawn at random. */
		for (n = 0; n < DP_MAX_VIP_BACKENDS; n++) {
			if (n % 2)
				snprintf(addr, sizeof(addr), "2001:db8:b0::%x:%u", d->id, n);
			else
				snprintf(addr, sizeof(addr), "203.0.113.%u", n + 1);
			err = dp_add_backend(fx, d->id, addr, &ids[n]);
			if (err)
				return err;
		}
	} else {
		for (n = 0; n < 4 && d->backends[n]; n++) {
			err = dp_add_backend(fx, d->id, d->backends[n], &ids[n]);
			if (err)
				return err;
		}
	}
	memcpy(v->ids, ids, n * sizeof(ids[0]));
	v->n_ids = n;
	if (!d->no_table) {
		v->table = calloc(d->m, sizeof(__u32));
		if (!v->table)
			return -ENOMEM;
		for (i = 0; i < d->m && n; i++)
			v->table[i] = d->m == DP_RANDOM_M ?
				      ids[dp_seed_rng(&rng) % n] : ids[i % n];
		err = xlb_table_install(fx->maps.tables, d->id, v->table, d->m);
		if (err)
			return err;
	}
	err = dp_add_vip_filter(fx, &key);
	if (err)
		return err;
	return xlb_obj_vip_write(&fx->maps, &key, &vip);
}

static inline int dp_write_config(struct dp_fixture *fx)
{
	__u32 zero = 0;

	return bpf_map_update_elem(fx->maps.config, &zero, &fx->cfg, BPF_ANY) ?
	       -errno : 0;
}

/*
 * Run prog of the loaded obj (its maps not pinned) and configure the
 * fixture's VIPs in its maps; fx->env must be set up. Returns 0 or -errno
 * after a message.
 */
static inline int dp_fixture_use(struct dp_fixture *fx, struct bpf_object *obj,
				 const char *prog)
{
	struct bpf_program *p;
	size_t i;
	int err;

	fx->obj = obj;
	p = bpf_object__find_program_by_name(fx->obj, prog);
	if (!p || xlb_obj_maps(fx->obj, &fx->maps)) {
		fprintf(stderr, "xlb: no program %s or maps missing\n", prog);
		return -ENOENT;
	}
	fx->prog_fd = bpf_program__fd(p);

	fx->cfg.hash_key[0] = 0x0123456789abcdefULL;
	fx->cfg.hash_key[1] = 0xfedcba9876543210ULL;
	fx->cfg.flags = XLB_CFG_F_INITIALIZED;
	pkt_addr(4, XLB_SANDBOX_SRC4, (__u8 *)&fx->cfg.src4);
	pkt_addr(6, XLB_SANDBOX_SRC6, (__u8 *)fx->cfg.src6);
	err = dp_write_config(fx);
	for (i = 0; !err && i < sizeof(dp_vip_defs) / sizeof(dp_vip_defs[0]); i++)
		err = dp_add_vip(fx, &dp_vip_defs[i]);
	if (err)
		fprintf(stderr, "xlb: configuring the fixture: %s\n", strerror(-err));
	return err;
}

/* dp_fixture_use() of the object file at path. */
static inline int dp_fixture_load(struct dp_fixture *fx, const char *path,
				  const char *prog)
{
	struct bpf_object *obj;
	int err = xlb_sandbox_load(path, &obj);

	return err ? err : dp_fixture_use(fx, obj, prog);
}

/* Enter the private namespace, then dp_fixture_load(). */
static inline int dp_fixture_setup(struct dp_fixture *fx, const char *path,
				   const char *prog)
{
	int err;

	memset(fx, 0, sizeof(*fx));
	err = xlb_sandbox_setup(&fx->env);
	return err ? err : dp_fixture_load(fx, path, prog);
}

/* Forget the object (not closed), VIPs and backends; env stays. */
static inline void dp_fixture_release(struct dp_fixture *fx)
{
	int i;

	fx->obj = NULL;
	for (i = 0; i < VIP__COUNT; i++) {
		free(fx->vips[i].table);
		fx->vips[i].table = NULL;
		fx->vips[i].n_ids = 0;
	}
	fx->n_backends = 0;
}

static inline void dp_fixture_unload(struct dp_fixture *fx)
{
	bpf_object__close(fx->obj);
	dp_fixture_release(fx);
}

/* Empty the per-CPU FIB cache (bpf/fib.h) of every backend. */
static inline int dp_fib_cache_clear(struct dp_fixture *fx)
{
	struct bpf_map *map = bpf_object__find_map_by_name(fx->obj, "xlb_fib_cache");
	int ncpu = libbpf_num_possible_cpus(), err = 0;
	size_t vsize;
	void *zero;
	__u32 id;

	if (!map || ncpu <= 0)
		return -ENOENT;
	vsize = (bpf_map__value_size(map) + 7) / 8 * 8;
	zero = calloc(ncpu, vsize);
	if (!zero)
		return -ENOMEM;
	for (id = 0; id <= fx->n_backends && !err; id++)
		if (bpf_map_update_elem(bpf_map__fd(map), &id, zero, BPF_ANY))
			err = -errno;
	free(zero);
	return err;
}

/* Is addr (binary) within the text prefix "a/len"? */
static inline bool dp_in_prefix(int family, const __u8 *addr, const char *prefix)
{
	char net[INET6_ADDRSTRLEN];
	__u8 bin[16];
	int bits, i;
	const char *slash = strchr(prefix, '/');

	snprintf(net, sizeof(net), "%.*s", (int)(slash - prefix), prefix);
	if (pkt_addr(family, net, bin) == 0)
		return false;
	bits = atoi(slash + 1);
	for (i = 0; i < bits; i++)
		if ((addr[i / 8] ^ bin[i / 8]) & (0x80 >> (i % 8)))
			return false;
	return true;
}

/* The verdict and MACs the environment's routes give a backend. */
static inline int dp_nexthop(const struct dp_backend *b, const __u8 **dmac,
			     const __u8 **smac)
{
	bool other = dp_in_prefix(b->family, b->bin, b->family == 4 ?
				  XLB_SANDBOX_NET_REDIRECT4 : XLB_SANDBOX_NET_REDIRECT6);

	*dmac = other ? dp_mac_other_gw : dp_mac_gw;
	*smac = other ? dp_mac_other : dp_mac_in;
	return other ? XDP_REDIRECT : XDP_TX;
}

/* The backend id the model picks for a flow of a VIP (0: none). */
static inline __u32 dp_model_backend(const struct dp_fixture *fx, __u32 vip_id,
				     const struct xlb_flow *flow, __u64 *hash)
{
	const struct dp_vip *v = &fx->vips[vip_id];

	*hash = xlb_flow_hash(flow, fx->cfg.hash_key);
	if (!v->table)
		return 0;
	return v->table[(__u32)*hash % v->m];
}

/*
 * The frame the program must send for the IP packet inner (inner_len bytes,
 * as its header says: whatever followed it in the frame, Ethernet padding
 * or trailing bytes, is cut) of a flow of vip_id, and the verdict. Returns
 * the frame length.
 */
static inline size_t dp_model_forward(const struct dp_fixture *fx, __u32 vip_id,
				      const struct xlb_flow *flow,
				      const __u8 *inner, size_t inner_len,
				      __u8 *out, int *verdict, __u32 *backend_id)
{
	const struct dp_backend *b;
	const __u8 *dmac, *smac;
	__u64 hash;

	*backend_id = dp_model_backend(fx, vip_id, flow, &hash);
	b = &fx->backends[*backend_id];
	*verdict = dp_nexthop(b, &dmac, &smac);
	return pkt_encap(out, dmac, smac, b->family,
			 b->family == 4 ? XLB_SANDBOX_SRC4 : XLB_SANDBOX_SRC6, b->addr,
			 (__u32)hash, inner, inner_len,
			 flow->family == XLB_AF_INET ? 4 : 6);
}

/* Is an echo request from src to dst (addresses as in the packet, family
 * 4 or 6) one to answer: to a VIP address, from a source that is not
 * multicast, broadcast, unspecified or loopback? */
static inline bool dp_echo_may_answer(int family, const __u8 *src)
{
	static const __u8 zero[16], one6[16] = { [15] = 1 };
	const __u8 *dst = src + (family == 4 ? 4 : 16);
	__u8 bin[16];
	size_t i, alen = family == 4 ? 4 : 16;
	bool vip = false;

	for (i = 0; i < sizeof(dp_vip_defs) / sizeof(dp_vip_defs[0]); i++)
		vip |= dp_vip_defs[i].family == family &&
		       pkt_addr(family, dp_vip_defs[i].addr, bin) &&
		       !memcmp(bin, dst, alen);
	if (!vip || !memcmp(src, zero, alen))
		return false;
	if (family == 4)
		return src[0] != 127 && src[0] >> 4 != 0xe &&
		       memcmp(src, "\xff\xff\xff\xff", 4);
	return src[0] != 0xff && memcmp(src, one6, 16);
}

/*
 * Is out the echo reply the datapath owes for the echo request in (one
 * to a VIP address, from a source that may be answered)? The request
 * with MACs and addresses swapped, TTL (hop limit) 64, the reply's type,
 * and every other byte as it was but the checksums, each of which must
 * leave the sum of what it covers as it was in the request: right where
 * it was right (a request whose checksum is wrong gets a reply whose
 * checksum is as wrong, which its sender discards).
 */
static inline bool dp_is_echo_reply(const __u8 *in, size_t len,
				    const __u8 *out, size_t out_len)
{
	__u8 want[PKT_MAX];
	size_t l3 = PKT_ETH_LEN, hl, ic, i;
	__u16 type;

	if (out_len != len || len > PKT_MAX || len < PKT_ETH_LEN + 4 ||
	    in[0] & 1)
		return false;
	type = pkt_get16(in + 12);
	for (i = 0; i < 2 && (type == 0x8100 || type == 0x88a8); i++) {
		type = pkt_get16(in + l3 + 2);
		l3 += 4;
	}
	memcpy(want, in, len);
	memcpy(want, in + 6, 6);
	memcpy(want + 6, in, 6);
	if (type == 0x0800 && len >= l3 + 20 && (in[l3] >> 4) == 4) {
		hl = (in[l3] & 0xf) * 4;
		ic = l3 + hl;
		/* No options, not a fragment. */
		if (hl != 20 || len < ic + 8 || in[l3 + 9] != IPPROTO_ICMP ||
		    in[ic] != 8 || (pkt_get16(in + l3 + 6) & 0x3fff))
			return false;
		memcpy(want + l3 + 12, in + l3 + 16, 4);
		memcpy(want + l3 + 16, in + l3 + 12, 4);
		want[l3 + 8] = 64;
		want[ic] = 0;
	} else if (type == 0x86dd && len >= l3 + 48 && in[l3 + 6] == IPPROTO_ICMPV6 &&
		   in[l3 + 40] == 128) {
		hl = 40;
		ic = l3 + hl;
		memcpy(want + l3 + 8, in + l3 + 24, 16);
		memcpy(want + l3 + 24, in + l3 + 8, 16);
		want[l3 + 7] = 64;
		want[ic] = 129;
	} else {
		return false;
	}
	if (!dp_echo_may_answer(type == 0x0800 ? 4 : 6, in + l3 + (type == 0x0800 ? 12 : 8)))
		return false;
	/* The checksums are the reply's own; the rest must be as wanted. */
	memcpy(want + ic + 2, out + ic + 2, 2);
	if (type == 0x0800)
		memcpy(want + l3 + 10, out + l3 + 10, 2);
	if (memcmp(want, out, len))
		return false;
	if (type == 0x0800 &&
	    pkt_sum(in + l3, hl, 0) % 0xffff != pkt_sum(out + l3, hl, 0) % 0xffff)
		return false;
	return pkt_sum(in + ic, len - ic, 0) % 0xffff ==
	       pkt_sum(out + ic, len - ic, 0) % 0xffff;
}

static inline int dp_run(const struct dp_fixture *fx, const void *in, __u32 len,
			 void *out, __u32 *out_len, __u32 *retval)
{
	*out_len = PKT_MAX;
	return xlb_sandbox_run(fx->prog_fd, fx->env.ifindex, in, len, out, out_len,
			   retval);
}

/* Sum of a per-CPU counter over all CPUs. */
static inline struct xlb_counter dp_counter(int map_fd, __u32 key)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	struct xlb_counter sum = {}, *vals;

	vals = calloc(ncpu > 0 ? ncpu : 1, sizeof(*vals));
	if (vals && ncpu > 0 && !bpf_map_lookup_elem(map_fd, &key, vals)) {
		for (i = 0; i < ncpu; i++) {
			sum.packets += vals[i].packets;
			sum.bytes += vals[i].bytes;
		}
	}
	free(vals);
	return sum;
}

/* ================================================================== */
/*
 * The test programs' part, for tests/test_dp_*.c, which include testlib.h
 * before this file: it asserts (the benchmarks, which do not, see none of
 * it). Every expected output is built from the packet description by
 * loader/packets.h and the flow hash over the tables the fixture
 * installed; the program's own parser is never the judge.
 */
#ifdef XLB_TESTLIB_H

/* The fixture of the test program: each sets up its own, in a network
 * namespace of its own, on the first case that needs it. */
static struct dp_fixture fx;
static int fx_state;		/* 0: not tried, 1: ready, -1: unusable */
static const char *fx_reason;

static inline const char *build_dir(void)
{
	const char *b = getenv("BUILD");

	return b && *b ? b : "build";
}

/* Set the fixture up once; false (and the case skipped or failed) when it
 * cannot be. */
static inline bool fixture(void)
{
	char path[512];

	if (fx_state == 0) {
		fx_state = -1;
		if (!test_have_root()) {
			fx_reason = "needs root (network namespace, BPF)";
		} else {
			snprintf(path, sizeof(path), "%s/xlb.bpf.o", build_dir());
			if (dp_fixture_setup(&fx, path, "xlb_xdp") == 0)
				fx_state = 1;
			else
				fx_reason = "datapath fixture setup failed (see above)";
		}
	}
	if (fx_state < 0) {
		if (test_have_root())
			ASSERT_TRUE(false, fx_reason);
		else
			test_skip_env(fx_reason);
	}
	return fx_state > 0;
}

static inline void hexdump(const char *what, const __u8 *p, size_t len)
{
	size_t i;

	printf("  %s (%zu bytes):", what, len);
	for (i = 0; i < len; i++)
		printf("%s%02x", i % 16 ? " " : "\n    ", p[i]);
	printf("\n");
}

/* ------------------------------------------------------------------ */
/*
 * The table of cases: one packet of each kind the datapath must tell
 * apart, with its verdict and the one reason it counts. test_dp_verdicts.c
 * runs them; test_dp_fuzz.c cuts and mutates them, test_dp_encap.c has
 * their outputs decoded.
 */

struct dp_case {
	const char *name;
	struct pkt_desc in;
	struct pkt_desc quoted;		/* ICMP errors: the packet quoted */
	size_t quote_max;		/* bytes of it quoted (0: all) */
	size_t pad;			/* zero bytes after the IP packet */
	/* Bytes overwritten after building: at > 0 is byte at - 1 of the IP
	 * packet, at < 0 counts back from its start (-1: the EtherType's
	 * low byte), 0 is unused. */
	struct { int at; __u8 val; } corrupt[2];
	bool fix_csum;			/* IPv4 header checksum redone after corrupt */
	int verdict;
	enum xlb_stat reason;
	__u32 vip;			/* forwards: the VIP counted */
	struct dp_flow flow;		/* forwards: the flow it belongs to */
};

#define V4(s, d, p, sp, dp) .family = 4, .src = s, .dst = d, .proto = p, .sport = sp, .dport = dp
#define V6(s, d, p, sp, dp) .family = 6, .src = s, .dst = d, .proto = p, .sport = sp, .dport = dp
#define CLIENT4 "203.0.113.5"
#define CLIENT6 "2001:db8:c::5"
#define VIP4 "192.0.2.10"
#define VIP6 "2001:db8:f::10"
#define ROUTER4 "198.51.100.99"
#define ROUTER6 "2001:db8:100::99"
#define TCP IPPROTO_TCP
#define UDP IPPROTO_UDP
#define FORWARD(v, ...) .verdict = XDP_TX, .reason = XLB_STAT_FORWARD, .vip = v, \
	.flow = { __VA_ARGS__ }
#define PASSED(r) .verdict = XDP_PASS, .reason = XLB_STAT_##r
#define DROPPED(r) .verdict = XDP_DROP, .reason = XLB_STAT_##r
#define ANSWERED(r) .verdict = XDP_TX, .reason = XLB_STAT_##r

static const __u8 opt_router_alert[] = { 0x94, 0x04, 0x00, 0x00, 0x01, 0x01, 0x01, 0x00 };
static const __u8 opt_40_nops[40] = {
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0,
};

static const struct dp_case cases[] = {
	/* To a VIP: encapsulated to the backend the table names. */
	{ "ipv4 tcp syn to a vip",
	  .in = { V4(CLIENT4, VIP4, TCP, 40000, 80), .tcp_flags = PKT_TCP_SYN },
	  FORWARD(VIP_TCP4, 4, CLIENT4, VIP4, 40000, 80, TCP) },
	{ "ipv4 tcp with payload to a vip",
	  .in = { V4("203.0.113.6", VIP4, TCP, 41000, 80), .payload_len = 300, .tos = 0x28 },
	  FORWARD(VIP_TCP4, 4, "203.0.113.6", VIP4, 41000, 80, TCP) },
	{ "ipv4 udp to a vip",
	  .in = { V4(CLIENT4, VIP4, UDP, 5353, 53), .payload_len = 40 },
	  FORWARD(VIP_UDP4, 4, CLIENT4, VIP4, 5353, 53, UDP) },
	{ "ipv6 tcp to a vip",
	  .in = { V6(CLIENT6, VIP6, TCP, 40000, 443), .tcp_flags = PKT_TCP_SYN },
	  FORWARD(VIP_TCP6, 6, CLIENT6, VIP6, 40000, 443, TCP) },
	{ "ipv6 tcp with traffic class and payload to a vip",
	  .in = { V6("2001:db8:c::6", VIP6, TCP, 40001, 443), .tos = 0xb8, .payload_len = 500 },
	  FORWARD(VIP_TCP6, 6, "2001:db8:c::6", VIP6, 40001, 443, TCP) },
	{ "ipv6 udp to a vip",
	  .in = { V6(CLIENT6, VIP6, UDP, 5353, 53), .payload_len = 33 },
	  FORWARD(VIP_UDP6, 6, CLIENT6, VIP6, 5353, 53, UDP) },
	{ "ipv4 tcp under one 802.1Q tag",
	  .in = { V4(CLIENT4, VIP4, TCP, 40002, 80), .vlans = 1, .vlan_id = { 100 } },
	  FORWARD(VIP_TCP4, 4, CLIENT4, VIP4, 40002, 80, TCP) },
	{ "ipv4 udp under 802.1ad and 802.1Q tags",
	  .in = { V4(CLIENT4, VIP4, UDP, 40003, 53), .vlans = 2,
		  .vlan_tpid = { PKT_ETH_P_8021AD, PKT_ETH_P_8021Q }, .vlan_id = { 10, 20 } },
	  FORWARD(VIP_UDP4, 4, CLIENT4, VIP4, 40003, 53, UDP) },
	{ "ipv6 tcp under two 802.1Q tags",
	  .in = { V6(CLIENT6, VIP6, TCP, 40004, 443), .vlans = 2, .vlan_id = { 1, 4094 } },
	  FORWARD(VIP_TCP6, 6, CLIENT6, VIP6, 40004, 443, TCP) },
	{ "ipv4 tcp with router-alert option",
	  .in = { V4(CLIENT4, VIP4, TCP, 40005, 80), .ip_opt = opt_router_alert,
		  .ip_opt_len = sizeof(opt_router_alert) },
	  FORWARD(VIP_TCP4, 4, CLIENT4, VIP4, 40005, 80, TCP) },
	{ "ipv4 udp with 40 bytes of options",
	  .in = { V4(CLIENT4, VIP4, UDP, 40006, 53), .ip_opt = opt_40_nops,
		  .ip_opt_len = sizeof(opt_40_nops), .payload_len = 8 },
	  FORWARD(VIP_UDP4, 4, CLIENT4, VIP4, 40006, 53, UDP) },
	{ "ipv6 tcp after hop-by-hop, routing and destination options",
	  .in = { V6(CLIENT6, VIP6, TCP, 40007, 443), .n_ext = 3,
		  .ext = { { IPPROTO_HOPOPTS, 0 }, { IPPROTO_ROUTING, 0 }, { IPPROTO_DSTOPTS, 1 } } },
	  FORWARD(VIP_TCP6, 6, CLIENT6, VIP6, 40007, 443, TCP) },
	{ "ipv6 udp after four destination options headers",
	  .in = { V6(CLIENT6, VIP6, UDP, 40008, 53), .n_ext = 4,
		  .ext = { { IPPROTO_DSTOPTS, 0 }, { IPPROTO_DSTOPTS, 0 },
			   { IPPROTO_DSTOPTS, 0 }, { IPPROTO_DSTOPTS, 0 } } },
	  FORWARD(VIP_UDP6, 6, CLIENT6, VIP6, 40008, 53, UDP) },
	{ "ipv6 atomic fragment is an unfragmented packet",
	  .in = { V6(CLIENT6, VIP6, UDP, 40009, 53), .frag = true, .frag_id = 7 },
	  FORWARD(VIP_UDP6, 6, CLIENT6, VIP6, 40009, 53, UDP) },
	{ "ethernet padding after a short ipv4 packet",
	  .in = { V4(CLIENT4, VIP4, TCP, 40010, 80), .tcp_flags = PKT_TCP_SYN }, .pad = 6,
	  FORWARD(VIP_TCP4, 4, CLIENT4, VIP4, 40010, 80, TCP) },
	/* The padding is cut: the outer packet holds the IP packet alone. */
	{ "minimum-size frame: ipv4 udp padded to 60 bytes",
	  .in = { V4(CLIENT4, VIP4, UDP, 40011, 53) }, .pad = 18,
	  FORWARD(VIP_UDP4, 4, CLIENT4, VIP4, 40011, 53, UDP) },
	{ "ipv6 tcp followed by trailing bytes",
	  .in = { V6(CLIENT6, VIP6, TCP, 40012, 443) }, .pad = 10,
	  FORWARD(VIP_TCP6, 6, CLIENT6, VIP6, 40012, 443, TCP) },

	/* Fragments: the VIP with port 0, hashed without ports. */
	{ "ipv4 udp first fragment",
	  .in = { V4(CLIENT4, VIP4, UDP, 5000, 53), .frag = true, .mf = true,
		  .frag_id = 0x4242, .payload_len = 64 },
	  FORWARD(VIP_FRAG4, 4, CLIENT4, VIP4, 0, 0, UDP) },
	{ "ipv4 udp later fragment",
	  .in = { V4(CLIENT4, VIP4, UDP, 0, 0), .frag = true, .frag_off8 = 9,
		  .frag_id = 0x4242, .payload_len = 20 },
	  FORWARD(VIP_FRAG4, 4, CLIENT4, VIP4, 0, 0, UDP) },
	{ "ipv6 udp first fragment",
	  .in = { V6(CLIENT6, VIP6, UDP, 5000, 53), .frag = true, .mf = true,
		  .frag_id = 0x4243, .payload_len = 64 },
	  FORWARD(VIP_FRAG6, 6, CLIENT6, VIP6, 0, 0, UDP) },
	{ "ipv6 udp later fragment after a destination options header",
	  .in = { V6(CLIENT6, VIP6, UDP, 0, 0), .frag = true, .frag_off8 = 9,
		  .frag_id = 0x4243, .payload_len = 20, .n_ext = 1,
		  .ext = { { IPPROTO_DSTOPTS, 0 } } },
	  FORWARD(VIP_FRAG6, 6, CLIENT6, VIP6, 0, 0, UDP) },
	{ "ipv4 tcp fragment without a port-0 vip: a vip address, dropped",
	  .in = { V4(CLIENT4, VIP4, TCP, 40011, 80), .frag = true, .mf = true, .payload_len = 16 },
	  DROPPED(DROP_VIP_PORT) },

	/* All-port VIPs: every port no VIP of its own takes, fragments too. */
	{ "ipv4 tcp to port 42 of an all-port vip",
	  .in = { V4(CLIENT4, "192.0.2.60", TCP, 40300, 42), .tcp_flags = PKT_TCP_SYN },
	  FORWARD(VIP_ALL4, 4, CLIENT4, "192.0.2.60", 40300, 42, TCP) },
	{ "ipv4 tcp to port 8080 of an all-port vip",
	  .in = { V4(CLIENT4, "192.0.2.60", TCP, 40301, 8080) },
	  FORWARD(VIP_ALL4, 4, CLIENT4, "192.0.2.60", 40301, 8080, TCP) },
	{ "ipv4 tcp to port 80 of an all-port vip's address: port 80's vip",
	  .in = { V4(CLIENT4, "192.0.2.60", TCP, 40302, 80) },
	  FORWARD(VIP_ALL4_80, 4, CLIENT4, "192.0.2.60", 40302, 80, TCP) },
	{ "ipv4 tcp fragment to an all-port vip, hashed without ports",
	  .in = { V4(CLIENT4, "192.0.2.60", TCP, 40303, 80), .frag = true, .mf = true, .payload_len = 16 },
	  FORWARD(VIP_ALL4, 4, CLIENT4, "192.0.2.60", 0, 0, TCP) },
	{ "ipv4 fragment of protocol 134 (0x86) to an all-port tcp vip's address: dropped",
	  .in = { V4(CLIENT4, "192.0.2.60", 134, 0, 0), .frag = true, .mf = true, .payload_len = 16 },
	  DROPPED(DROP_VIP_PORT) },
	{ "ipv6 fragment of protocol 145 (0x91) to an all-port udp vip's address: dropped",
	  .in = { V6(CLIENT6, "2001:db8:f::60", 145, 0, 0), .frag = true, .mf = true, .payload_len = 16 },
	  DROPPED(DROP_VIP_PORT) },
	{ "ipv4 udp to an all-port tcp vip's address: dropped",
	  .in = { V4(CLIENT4, "192.0.2.60", UDP, 5000, 42), .payload_len = 8 },
	  DROPPED(DROP_VIP_PORT) },
	{ "ipv6 udp to port 9999 of an all-port vip",
	  .in = { V6(CLIENT6, "2001:db8:f::60", UDP, 5000, 9999), .payload_len = 8 },
	  FORWARD(VIP_ALL6, 6, CLIENT6, "2001:db8:f::60", 5000, 9999, UDP) },

	/* ICMP errors about a VIP's reply go to the flow's backend. */
	{ "icmp fragmentation needed quoting a vip reply",
	  .in = { V4(ROUTER4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 3, .icmp_code = 4,
		  .icmp_rest = 1400 },
	  .quoted = { V4(VIP4, CLIENT4, TCP, 80, 40000), .payload_len = 1372 }, .quote_max = 28,
	  FORWARD(VIP_TCP4, 4, CLIENT4, VIP4, 40000, 80, TCP) },
	{ "icmp time exceeded quoting a vip udp reply with ip options",
	  .in = { V4(ROUTER4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 11 },
	  .quoted = { V4(VIP4, CLIENT4, UDP, 53, 5353), .payload_len = 12,
		      .ip_opt = opt_router_alert, .ip_opt_len = sizeof(opt_router_alert) },
	  FORWARD(VIP_UDP4, 4, CLIENT4, VIP4, 5353, 53, UDP) },
	{ "icmpv6 packet too big quoting a vip reply",
	  .in = { V6(ROUTER6, VIP6, IPPROTO_ICMPV6, 0, 0), .icmp_type = 2, .icmp_rest = 1280 },
	  .quoted = { V6(VIP6, CLIENT6, TCP, 443, 40000), .payload_len = 200 },
	  FORWARD(VIP_TCP6, 6, CLIENT6, VIP6, 40000, 443, TCP) },
	{ "icmpv6 time exceeded quoting a reply with a routing header",
	  .in = { V6(ROUTER6, VIP6, IPPROTO_ICMPV6, 0, 0), .icmp_type = 3 },
	  .quoted = { V6(VIP6, CLIENT6, UDP, 53, 5353), .payload_len = 10, .n_ext = 1,
		      .ext = { { IPPROTO_ROUTING, 0 } } },
	  FORWARD(VIP_UDP6, 6, CLIENT6, VIP6, 5353, 53, UDP) },
	{ "icmp error quoting a non-vip flow of a vip address",
	  .in = { V4(ROUTER4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 3, .icmp_code = 1 },
	  .quoted = { V4(VIP4, CLIENT4, TCP, 8080, 40000) }, .quote_max = 28,
	  DROPPED(DROP_VIP_PORT) },
	{ "icmp error quoting a flow of another address",
	  .in = { V4(ROUTER4, "192.0.2.99", IPPROTO_ICMP, 0, 0), .icmp_type = 3, .icmp_code = 1 },
	  .quoted = { V4("192.0.2.99", CLIENT4, TCP, 80, 40000) }, .quote_max = 28,
	  PASSED(PASS_NOT_VIP) },
	{ "icmp error quoting too little for ports",
	  .in = { V4(ROUTER4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 3, .icmp_code = 4 },
	  .quoted = { V4(VIP4, CLIENT4, TCP, 80, 40000) }, .quote_max = 22,
	  DROPPED(DROP_MALFORMED) },
	{ "icmp error to a vip address quoting an icmp packet",
	  .in = { V4(ROUTER4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 11 },
	  .quoted = { V4(VIP4, CLIENT4, IPPROTO_ICMP, 0, 0), .icmp_type = 0 },
	  DROPPED(DROP_VIP_PORT) },
	/* The balancer does not hold the VIP (the kernel would route a ping
	 * of it back to the router): the datapath answers it. */
	{ "icmp echo request to a vip address: answered",
	  .in = { V4(CLIENT4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 8, .ttl = 57,
		  .icmp_rest = 0x12340001, .payload_len = 56 },
	  ANSWERED(ICMP_ECHO_REPLY) },
	{ "icmp echo request behind a vlan tag: answered",
	  .in = { V4(CLIENT4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 8, .vlans = 1,
		  .vlan_id = { 7 }, .payload_len = 9 },
	  ANSWERED(ICMP_ECHO_REPLY) },
	{ "icmp echo request with ip options: dropped",
	  .in = { V4(CLIENT4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 8,
		  .ip_opt = opt_router_alert, .ip_opt_len = sizeof(opt_router_alert),
		  .payload_len = 9 },
	  DROPPED(DROP_VIP_PORT) },
	{ "icmp echo request to the broadcast mac: dropped",
	  .in = { V4(CLIENT4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 8,
		  .dmac = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, .payload_len = 9 },
	  DROPPED(DROP_VIP_PORT) },
	{ "icmpv6 echo request to a vip address: answered",
	  .in = { V6(CLIENT6, VIP6, IPPROTO_ICMPV6, 0, 0), .icmp_type = 128, .ttl = 3,
		  .icmp_rest = 0xbeef0002, .payload_len = 56 },
	  ANSWERED(ICMP_ECHO_REPLY) },
	{ "icmp echo reply to a vip address: dropped",
	  .in = { V4(CLIENT4, VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 0, .payload_len = 56 },
	  DROPPED(DROP_VIP_PORT) },
	{ "icmpv6 echo reply to a vip address: dropped",
	  .in = { V6(CLIENT6, VIP6, IPPROTO_ICMPV6, 0, 0), .icmp_type = 129, .payload_len = 56 },
	  DROPPED(DROP_VIP_PORT) },
	{ "icmp echo request from a broadcast address: dropped",
	  .in = { V4("255.255.255.255", VIP4, IPPROTO_ICMP, 0, 0), .icmp_type = 8, .payload_len = 8 },
	  DROPPED(DROP_VIP_PORT) },
	{ "icmpv6 echo request from a multicast address: dropped",
	  .in = { V6("ff02::1", VIP6, IPPROTO_ICMPV6, 0, 0), .icmp_type = 128, .payload_len = 8 },
	  DROPPED(DROP_VIP_PORT) },
	{ "icmpv6 echo request behind an extension header: dropped",
	  .in = { V6(CLIENT6, VIP6, IPPROTO_ICMPV6, 0, 0), .icmp_type = 128, .payload_len = 8,
		  .ext = { { .type = 0, .len8 = 0 } }, .n_ext = 1 },
	  DROPPED(DROP_VIP_PORT) },
	{ "icmp echo request to another address goes to the kernel",
	  .in = { V4(CLIENT4, "192.0.2.99", IPPROTO_ICMP, 0, 0), .icmp_type = 8, .payload_len = 56 },
	  PASSED(PASS_ICMP_ECHO) },
	{ "icmpv6 echo request to another address goes to the kernel",
	  .in = { V6(CLIENT6, "2001:db8:f::99", IPPROTO_ICMPV6, 0, 0), .icmp_type = 128, .payload_len = 56 },
	  PASSED(PASS_ICMP_ECHO) },
	{ "icmpv6 neighbour solicitation",
	  .in = { V6(CLIENT6, "2001:db8:f::99", IPPROTO_ICMPV6, 0, 0), .icmp_type = 135, .payload_len = 16 },
	  PASSED(PASS_NOT_VIP) },

	/* Next hop. */
	{ "backend routed out of the other interface: redirect",
	  .in = { V4(CLIENT4, "192.0.2.20", TCP, 40012, 80) },
	  .verdict = XDP_REDIRECT, .reason = XLB_STAT_FORWARD, .vip = VIP_REDIR4,
	  .flow = { 4, CLIENT4, "192.0.2.20", 40012, 80, TCP } },
	{ "ipv6 backend routed out of the other interface: redirect",
	  .in = { V6(CLIENT6, "2001:db8:f::20", TCP, 40013, 80) },
	  .verdict = XDP_REDIRECT, .reason = XLB_STAT_FORWARD, .vip = VIP_REDIR6,
	  .flow = { 6, CLIENT6, "2001:db8:f::20", 40013, 80, TCP } },
	/* Not passed: the kernel would route it back to the router. */
	{ "backend behind an unresolved neighbour: dropped",
	  .in = { V4(CLIENT4, "192.0.2.21", TCP, 40014, 80) }, DROPPED(DROP_NEIGH_UNRESOLVED) },
	{ "ipv6 backend behind an unresolved neighbour: dropped",
	  .in = { V6(CLIENT6, "2001:db8:f::21", TCP, 40015, 80) }, DROPPED(DROP_NEIGH_UNRESOLVED) },
	{ "backend behind an unreachable route",
	  .in = { V4(CLIENT4, "192.0.2.22", TCP, 40016, 80) }, DROPPED(DROP_FIB_FAILED) },
	{ "ipv6 backend behind an unreachable route",
	  .in = { V6(CLIENT6, "2001:db8:f::22", TCP, 40017, 80) }, DROPPED(DROP_FIB_FAILED) },
	{ "1480-byte ipv4 packet fits the MTU in ipv4",
	  .in = { V4(CLIENT4, "192.0.2.50", TCP, 40018, 80), .payload_len = 1440 },
	  FORWARD(VIP_MTU4, 4, CLIENT4, "192.0.2.50", 40018, 80, TCP) },
	{ "1481-byte ipv4 packet does not fit in ipv4",
	  .in = { V4(CLIENT4, "192.0.2.50", TCP, 40019, 80), .payload_len = 1441 },
	  DROPPED(DROP_TOO_BIG) },
	{ "1460-byte ipv4 packet fits the MTU in ipv6",
	  .in = { V4(CLIENT4, "192.0.2.51", TCP, 40020, 80), .payload_len = 1420 },
	  FORWARD(VIP_MTU6, 4, CLIENT4, "192.0.2.51", 40020, 80, TCP) },
	{ "1461-byte ipv4 packet does not fit in ipv6",
	  .in = { V4(CLIENT4, "192.0.2.51", TCP, 40021, 80), .payload_len = 1421 },
	  DROPPED(DROP_TOO_BIG) },
	/* The MTU is checked for the packet that leaves, without the bytes
	 * that followed the IP packet in the frame. */
	{ "40-byte ipv4 packet in a 1514-byte frame fits the MTU",
	  .in = { V4(CLIENT4, "192.0.2.50", TCP, 40022, 80) }, .pad = 1460,
	  FORWARD(VIP_MTU4, 4, CLIENT4, "192.0.2.50", 40022, 80, TCP) },

	/* Configuration gaps. */
	{ "vip without a table",
	  .in = { V4(CLIENT4, "192.0.2.30", TCP, 40022, 80) }, DROPPED(DROP_NO_TABLE) },
	{ "vip whose table names no backend",
	  .in = { V4(CLIENT4, "192.0.2.31", TCP, 40023, 80) }, DROPPED(DROP_NO_BACKEND) },

	/* Not for a VIP: to the kernel, untouched... */
	{ "ipv4 udp to another address",
	  .in = { V4(CLIENT4, "192.0.2.99", UDP, 40025, 53) }, PASSED(PASS_NOT_VIP) },
	{ "ipv6 tcp to another address",
	  .in = { V6(CLIENT6, "2001:db8:f::99", TCP, 40026, 443) }, PASSED(PASS_NOT_VIP) },
	{ "ipv4 gre to another address",
	  .in = { V4(CLIENT4, "192.0.2.99", 47, 0, 0), .payload_len = 24 }, PASSED(PASS_NOT_VIP) },
	{ "ipv6 five extension headers to another address: left to the kernel",
	  .in = { V6(CLIENT6, "2001:db8:f::99", TCP, 40027, 443), .n_ext = 5,
		  .ext = { { IPPROTO_HOPOPTS, 0 }, { IPPROTO_DSTOPTS, 0 }, { IPPROTO_ROUTING, 0 },
			   { IPPROTO_DSTOPTS, 0 }, { IPPROTO_DSTOPTS, 0 } } },
	  PASSED(PASS_NOT_VIP) },
	/* ...but for a VIP address, which the balancer does not hold: the
	 * kernel would route it back to the router, until its TTL ran out. */
	{ "ipv4 tcp to a vip address on another port",
	  .in = { V4(CLIENT4, VIP4, TCP, 40024, 8080) }, DROPPED(DROP_VIP_PORT) },
	{ "ipv4 tcp to a vip address on a udp vip's port",
	  .in = { V4(CLIENT4, VIP4, TCP, 40024, 53) }, DROPPED(DROP_VIP_PORT) },
	{ "ipv6 tcp to a vip address on another port",
	  .in = { V6(CLIENT6, VIP6, TCP, 40026, 80) }, DROPPED(DROP_VIP_PORT) },
	{ "ipv6 udp to another vip address on another port",
	  .in = { V6(CLIENT6, "2001:db8:f::20", UDP, 40026, 80) }, DROPPED(DROP_VIP_PORT) },
	{ "ipv4 gre to a vip address",
	  .in = { V4(CLIENT4, VIP4, 47, 0, 0), .payload_len = 24 }, DROPPED(DROP_VIP_PORT) },
	{ "ipv6 no-next-header to a vip address",
	  .in = { V6(CLIENT6, VIP6, 59, 0, 0) }, DROPPED(DROP_VIP_PORT) },
	{ "ipv6 five extension headers to a vip",
	  .in = { V6(CLIENT6, VIP6, TCP, 40027, 443), .n_ext = 5,
		  .ext = { { IPPROTO_HOPOPTS, 0 }, { IPPROTO_DSTOPTS, 0 }, { IPPROTO_ROUTING, 0 },
			   { IPPROTO_DSTOPTS, 0 }, { IPPROTO_DSTOPTS, 0 } } },
	  DROPPED(DROP_VIP_PORT) },
	{ "three vlan tags",
	  .in = { V4(CLIENT4, VIP4, TCP, 40028, 80), .vlans = 2,
		  .vlan_tpid = { PKT_ETH_P_8021Q, PKT_ETH_P_8021Q } },
	  .corrupt = { { -2, 0x81 }, { -1, 0x00 } },	/* EtherType after the tags */
	  PASSED(PASS_NOT_IP) },

	/* Broken: dropped. */
	{ "ipv4 header checksum wrong",
	  .in = { V4(CLIENT4, VIP4, TCP, 40029, 80) }, .corrupt = { { 11, 0x00 }, { 12, 0x00 } },
	  DROPPED(DROP_MALFORMED) },
	{ "ipv4 ihl 4",
	  .in = { V4(CLIENT4, VIP4, TCP, 40030, 80) }, .corrupt = { { 1, 0x44 } }, .fix_csum = true,
	  DROPPED(DROP_MALFORMED) },
	{ "ipv6 packet under the ipv4 ethertype",
	  .in = { V4(CLIENT4, VIP4, TCP, 40031, 80) }, .corrupt = { { 1, 0x65 } }, .fix_csum = true,
	  DROPPED(DROP_MALFORMED) },
	{ "ipv4 total length beyond the frame",
	  .in = { V4(CLIENT4, VIP4, TCP, 40032, 80) }, .corrupt = { { 4, 0x29 } }, .fix_csum = true,
	  DROPPED(DROP_MALFORMED) },
	{ "ipv4 total length shorter than the header",
	  .in = { V4(CLIENT4, VIP4, TCP, 40033, 80) }, .corrupt = { { 4, 0x13 } }, .fix_csum = true,
	  DROPPED(DROP_MALFORMED) },
	{ "tcp data offset 4",
	  .in = { V4(CLIENT4, VIP4, TCP, 40034, 80) }, .corrupt = { { 33, 0x40 } },
	  DROPPED(DROP_MALFORMED) },
	{ "tcp data offset past the packet",
	  .in = { V4(CLIENT4, VIP4, TCP, 40035, 80) }, .corrupt = { { 33, 0x60 } },
	  DROPPED(DROP_MALFORMED) },
	{ "udp length beyond the ip payload",
	  .in = { V4(CLIENT4, VIP4, UDP, 40036, 53), .payload_len = 4 }, .corrupt = { { 26, 0x0d } },
	  DROPPED(DROP_MALFORMED) },
	{ "udp length under 8",
	  .in = { V4(CLIENT4, VIP4, UDP, 40037, 53), .payload_len = 4 }, .corrupt = { { 26, 0x07 } },
	  DROPPED(DROP_MALFORMED) },
	{ "ipv6 payload length beyond the frame",
	  .in = { V6(CLIENT6, VIP6, TCP, 40038, 443) }, .corrupt = { { 6, 0x15 } },
	  DROPPED(DROP_MALFORMED) },
	{ "ipv6 version 4 under the ipv6 ethertype",
	  .in = { V6(CLIENT6, VIP6, TCP, 40039, 443) }, .corrupt = { { 1, 0x40 } },
	  DROPPED(DROP_MALFORMED) },
	{ "ipv6 hop-by-hop after a routing header",
	  .in = { V6(CLIENT6, VIP6, TCP, 40040, 443), .n_ext = 2,
		  .ext = { { IPPROTO_ROUTING, 0 }, { IPPROTO_HOPOPTS, 0 } } },
	  DROPPED(DROP_MALFORMED) },
	{ "ipv6 extension header running past the payload",
	  .in = { V6(CLIENT6, VIP6, TCP, 40041, 443), .n_ext = 1,
		  .ext = { { IPPROTO_DSTOPTS, 0 } } }, .corrupt = { { 42, 0x04 } },
	  DROPPED(DROP_MALFORMED) },
	{ "ipv6 tcp header cut by the payload length",
	  .in = { V6(CLIENT6, VIP6, TCP, 40042, 443) }, .corrupt = { { 6, 0x13 } }, .pad = 1,
	  DROPPED(DROP_MALFORMED) },
};

/* Build a case's frame; returns its length and the IP packet's offset and
 * length. */
static inline size_t build_case(const struct dp_case *c, __u8 *frame,
				size_t *l3_off, size_t *l3_len)
{
	struct pkt_desc d = c->in;
	__u8 quote[PKT_MAX];
	size_t len, i;

	if (c->quoted.family) {
		d.quote = quote;
		d.quote_len = pkt_build_ip(&c->quoted, quote);
		if (c->quote_max && c->quote_max < d.quote_len)
			d.quote_len = c->quote_max;
	}
	len = pkt_build(&d, frame);
	*l3_off = PKT_ETH_LEN + 4 * d.vlans;
	*l3_len = len - *l3_off;
	for (i = 0; i < 2; i++) {
		int at = c->corrupt[i].at;

		if (at)
			frame[*l3_off + (at > 0 ? at - 1 : at)] = c->corrupt[i].val;
	}
	if (c->fix_csum) {
		__u8 *ip = frame + *l3_off;
		size_t hlen = (ip[0] & 0x0f) * 4;

		pkt_put16(ip + 10, 0);
		pkt_put16(ip + 10, pkt_fold(pkt_sum(ip, hlen < 20 ? 20 : hlen, 0)));
	}
	memset(frame + len, 0, c->pad);
	return len + c->pad;
}

/* ------------------------------------------------------------------ */
/* Running packets                                                     */

#define STAT_NAME(name, str) str,
static const char *const stat_names[] = { XLB_STAT_LIST(STAT_NAME) };
#undef STAT_NAME

static inline void read_stats(struct xlb_counter *s)
{
	__u32 r;

	for (r = 0; r < XLB_STAT__MAX; r++)
		s[r] = dp_counter(fx.maps.stats, r);
}

/* Exactly one reason counted, once, with the frame's bytes. */
static inline void check_counted(const struct xlb_counter *before,
				 const struct xlb_counter *after,
				 enum xlb_stat reason, size_t bytes,
				 const char *name)
{
	__u32 r;

	for (r = 0; r < XLB_STAT_REASONS; r++) {
		__u64 dp = after[r].packets - before[r].packets;
		__u64 db = after[r].bytes - before[r].bytes;

		if (r == reason) {
			ASSERT_EQ(dp, 1, name);
			ASSERT_EQ(db, bytes, name);
		} else if (!ASSERT_EQ(dp, 0, name)) {
			printf("  counted instead: %s\n", stat_names[r]);
		}
	}
}

/* Run the packet of d; assert the verdict, the one reason counted and, for
 * passes and drops, an untouched frame. The output lands in out. */
static inline bool expect_run(const struct pkt_desc *d, int verdict,
			      enum xlb_stat reason, __u8 *out, __u32 *out_len,
			      const char *what)
{
	struct xlb_counter before[XLB_STAT__MAX], after[XLB_STAT__MAX];
	__u8 in[PKT_MAX];
	size_t len = pkt_build(d, in);
	__u32 retval;
	bool ok;

	read_stats(before);
	if (!ASSERT_OK(dp_run(&fx, in, len, out, out_len, &retval), what))
		return false;
	read_stats(after);
	ok = ASSERT_EQ(retval, verdict, what);
	check_counted(before, after, reason, len, what);
	if (verdict == XDP_PASS || verdict == XDP_DROP)
		ok &= ASSERT_EQ(*out_len, len, what) && ASSERT_MEM_EQ(out, in, len, what);
	return ok && !test_failed;
}

/*
 * n runs of the packet of d under icmp-rate 20 (a bucket of 3 on each
 * CPU, refilled at 20 a second), from full buckets: at least the 3
 * answered (counter answer), at most what the rate gives over the time
 * taken on every CPU, the rest counted as dropped. The rate stays: the
 * caller puts it back with dp_rate_default().
 */
static inline void dp_expect_rate_held(const struct pkt_desc *d, __u32 n,
				       enum xlb_stat answer, enum xlb_stat drop)
{
	__u8 in[PKT_MAX], out[PKT_MAX];
	size_t len = pkt_build(d, in);
	struct xlb_counter a0, a1, d0, d1;
	__u32 out_len, retval, i, answered;
	struct timespec ts;
	double t0, t1;

	fx.cfg.icmp_rate = 20;
	if (!ASSERT_OK(dp_write_config(&fx), "icmp-rate 20"))
		return;
	/* A second's rest fills the bucket, whatever came before. */
	sleep(1);
	a0 = dp_counter(fx.maps.stats, answer);
	d0 = dp_counter(fx.maps.stats, drop);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec + ts.tv_nsec / 1e9;
	for (i = 0; i < n; i++)
		if (!ASSERT_OK(dp_run(&fx, in, len, out, &out_len, &retval),
			       "run"))
			break;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t1 = ts.tv_sec + ts.tv_nsec / 1e9;
	a1 = dp_counter(fx.maps.stats, answer);
	d1 = dp_counter(fx.maps.stats, drop);
	answered = a1.packets - a0.packets;
	ASSERT_TRUE(answered >= 3, "the bucket's 3 answered");
	/* Each CPU has its bucket: runs may move between CPUs. */
	ASSERT_TRUE(answered <= (3 + 20 * (t1 - t0) + 1) *
				libbpf_num_possible_cpus(),
		    "no more than the rate gives");
	ASSERT_EQ(answered + (d1.packets - d0.packets), n,
		  "the rest dropped, counted");
}

static inline void dp_rate_default(void)
{
	fx.cfg.icmp_rate = 0;
	ASSERT_OK(dp_write_config(&fx), "icmp-rate back to the default");
}

/* To the one-backend VIPs: VIP_MTU4's is IPv4, VIP_MTU6's IPv6. */
static const struct pkt_desc to_mtu4 = { V4(CLIENT4, "192.0.2.50", TCP, 40100, 80) };
static const struct pkt_desc to_mtu6 = { V4(CLIENT4, "192.0.2.51", TCP, 40101, 80) };

/* A SYN of a random flow to VIP_RANDOM4 or VIP_RANDOM6 (family 4 or 6). */
static inline size_t random_flow_frame(int family, __u64 *rng, __u8 *frame,
				       struct xlb_flow *flow)
{
	char src[INET6_ADDRSTRLEN];
	struct pkt_desc d = { .family = family, .proto = IPPROTO_TCP,
			      .tcp_flags = PKT_TCP_SYN };
	struct dp_flow f;
	__u64 r = dp_seed_rng(rng);
	static const char *const nets4[] = { "192.0.2", "198.51.100", "203.0.113" };

	if (family == 4) {
		snprintf(src, sizeof(src), "%s.%u", nets4[r % 3], (unsigned)(r >> 8) & 0xff);
		d.dst = "192.0.2.40";
		d.dport = 80;
	} else {
		snprintf(src, sizeof(src), "2001:db8:c%03x:%x:%x:%x::%x",
			 (unsigned)(r & 0xfff), (unsigned)(r >> 12) & 0xffff,
			 (unsigned)(r >> 28) & 0xffff, (unsigned)(r >> 44) & 0xffff,
			 (unsigned)dp_seed_rng(rng) & 0xffff);
		d.dst = "2001:db8:f::40";
		d.dport = 443;
	}
	d.src = src;
	d.sport = 1024 + (__u16)(dp_seed_rng(rng) % 64512);
	f = (struct dp_flow){ family, src, d.dst, d.sport, d.dport, IPPROTO_TCP };
	*flow = dp_xlb_flow(&f);
	return pkt_build(&d, frame);
}

static inline void text_addr(int family, const __u8 *bin, char *out)
{
	inet_ntop(family == 4 ? AF_INET : AF_INET6, bin, out, INET6_ADDRSTRLEN);
}

#endif /* XLB_TESTLIB_H */

#endif /* XLB_TEST_DP_FIXTURE_H */
