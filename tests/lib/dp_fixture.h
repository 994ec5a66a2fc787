/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The datapath fixture shared by tests/test_datapath.c and
 * bench/bench_datapath.c: the XDP program loaded in a private network
 * namespace (loader/sandbox.h), a fixed set of VIPs and backends in its
 * maps, and a model of what the program must output, built with
 * loader/packets.h from the flow hash and the tables the fixture installed.
 */
#ifndef XLB_TEST_DP_FIXTURE_H
#define XLB_TEST_DP_FIXTURE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xlb.h"
#include "flow_hash.h"
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

static inline int dp_add_vip(struct dp_fixture *fx, const struct dp_vip_def *d)
{
	struct xlb_vip_key key = { .port = htons(d->port), .proto = d->proto,
				   .family = d->family == 4 ? XLB_AF_INET : XLB_AF_INET6 };
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
	return bpf_map_update_elem(fx->maps.vips, &key, &vip, BPF_ANY) ? -errno : 0;
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
 * The frame the program must send for the IP packet inner (inner_len bytes;
 * trailer: bytes after it in the frame, kept) of a flow of vip_id, and the
 * verdict. Returns the frame length.
 */
static inline size_t dp_model_forward(const struct dp_fixture *fx, __u32 vip_id,
				      const struct xlb_flow *flow,
				      const __u8 *inner, size_t inner_len,
				      size_t trailer, __u8 *out, int *verdict,
				      __u32 *backend_id)
{
	const struct dp_backend *b;
	const __u8 *dmac, *smac;
	__u64 hash;
	size_t len;

	*backend_id = dp_model_backend(fx, vip_id, flow, &hash);
	b = &fx->backends[*backend_id];
	*verdict = dp_nexthop(b, &dmac, &smac);
	len = pkt_encap(out, dmac, smac, b->family,
			b->family == 4 ? XLB_SANDBOX_SRC4 : XLB_SANDBOX_SRC6, b->addr,
			(__u32)hash, inner, inner_len,
			flow->family == XLB_AF_INET ? 4 : 6);
	memcpy(out + len, inner + inner_len, trailer);
	return len + trailer;
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

#endif /* XLB_TEST_DP_FIXTURE_H */
