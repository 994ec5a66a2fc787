// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* What the datapath does with a flow's packet, and why (see lookup.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "addr.h"
#include "ct_entry.h"
#include "fib_cache.h"
#include "flow_hash.h"
#include "gue.h"
#include "history.h"
#include "instance.h"
#include "lookup.h"
#include "lookup_result.h"
#include "lookup.skel.h"
#include "packets.h"
#include "report.h"
#include "sandbox.h"
#include "table_map.h"

/* A VIP's table as read at its first lookup. */
struct vip_table {
	__u32 vip_id;
	__u32 m;
	__u32 *slots;
	struct xlb_history hist;	/* empty for a tracked VIP */
	struct vip_table *next;
};

struct xlb_lookup {
	struct lookup *skel;
	/* The instance's maps it reads, its own descriptors: the instance
	 * may be closed (and its lock released) once it is open. */
	int config_fd, vips_fd, tables_fd, backends_fd, ct_fd;
	int src_fd;			/* -1: an instance without ranges */
	int ifindex;
	int ncpu;
	__u32 ct_slots;			/* xlb_conntrack's size */
	struct xlb_counter *percpu;	/* scratch: one counter of every CPU */
	struct xlb_fib_cache_entry *nh_percpu;	/* scratch likewise */
	__u64 before[XLB_STAT__MAX];	/* the run's counters so far */
	struct vip_table *tables;
	struct xlb_nexthops nx;
	__u8 in[PKT_MAX], out[PKT_MAX];
};

XLB_STATIC_ASSERT(XLB_STAT__MAX <= 32, "a counter a bit of xlb_lookup_answer.counted");

#define STAT_NAME(name, str) str,
static const char *const stat_names[XLB_STAT__MAX] = {
	XLB_STAT_LIST(STAT_NAME)
};
#undef STAT_NAME

const char *xlb_lookup_stat_str(__u32 stat)
{
	return stat < XLB_STAT__MAX ? stat_names[stat] : "?";
}

const char *xlb_lookup_verdict_str(__u32 verdict)
{
	switch (verdict) {
	case XDP_DROP:		return "drop";
	case XDP_PASS:		return "pass";
	case XDP_TX:		return "tx";
	case XDP_REDIRECT:	return "redirect";
	case XDP_ABORTED:	return "aborted";
	}
	return "?";
}

const char *xlb_lookup_ct_why_str(enum xlb_lookup_ct_why why)
{
	switch (why) {
	case XLB_LOOKUP_CT_HONOURED:
		return "honoured";
	case XLB_LOOKUP_CT_SYN:
		return "not honoured: a SYN opens a new connection, which goes by the table";
	case XLB_LOOKUP_CT_EXPIRED:
		return "not honoured: idle past its timeout";
	case XLB_LOOKUP_CT_BACKEND_GONE:
		return "not honoured: its backend was removed (or its record reused)";
	case XLB_LOOKUP_CT_BACKEND_EVICT:
		return "not honoured: its backend is down and its VIP resets its connections";
	}
	return "?";
}

/* The counters of the program's own xlb_stats, summed over CPUs, into
 * sums[XLB_STAT__MAX]. */
static int stats_read(struct xlb_lookup *lk, __u64 *sums)
{
	int fd = bpf_map__fd(lk->skel->maps.xlb_stats), i;
	__u32 k;

	for (k = 0; k < XLB_STAT__MAX; k++) {
		if (bpf_map_lookup_elem(fd, &k, lk->percpu))
			return -errno;
		sums[k] = 0;
		for (i = 0; i < lk->ncpu; i++)
			sums[k] += lk->percpu[i].packets;
	}
	return 0;
}

/* Every map the datapath reads the instance's, the rest the program's
 * own; nothing pinned. */
static int reuse_maps(struct xlb_lookup *lk, const struct xlb_instance *inst)
{
	const struct { struct bpf_map *map; int fd; } shared[] = {
		{ lk->skel->maps.xlb_config, inst->config_fd },
		{ lk->skel->maps.xlb_vips, inst->vips_fd },
		{ lk->skel->maps.xlb_tables, inst->tables_fd },
		{ lk->skel->maps.xlb_backends, inst->backends_fd },
		{ lk->skel->maps.xlb_conntrack, inst->conntrack_fd },
		{ lk->skel->maps.xlb_vip_filter, inst->vip_filter_fd },
		{ lk->skel->maps.xlb_vip_addrs, inst->vip_addrs_fd },
		{ lk->skel->maps.xlb_vip_slots, inst->vip_slots_fd },
		{ lk->skel->maps.xlb_src_ranges, inst->src_ranges_fd },
		{ lk->skel->maps.xlb_vip_ranged, inst->vip_ranged_fd },
	};
	struct bpf_map *map;
	size_t i;
	int err;

	bpf_object__for_each_map(map, lk->skel->obj) {
		err = bpf_map__set_pin_path(map, NULL);
		if (err)
			return err;
	}
	for (i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
		/* An instance of an older xlb without the map: the
		 * program's own, empty, which it reads as absent. */
		if (shared[i].fd < 0)
			continue;
		err = bpf_map__reuse_fd(shared[i].map, shared[i].fd);
		if (err)
			return err;
	}
	return 0;
}

int xlb_lookup_open(struct xlb_instance *inst, int ifindex,
		    struct xlb_lookup **out)
{
	struct bpf_map_info info = {};
	__u32 info_len = sizeof(info);
	struct xlb_lookup *lk;
	int err;

	lk = calloc(1, sizeof(*lk));
	if (!lk)
		return -ENOMEM;
	lk->ifindex = ifindex;
	lk->config_fd = dup(inst->config_fd);
	lk->vips_fd = dup(inst->vips_fd);
	lk->tables_fd = dup(inst->tables_fd);
	lk->backends_fd = dup(inst->backends_fd);
	lk->ct_fd = dup(inst->conntrack_fd);
	lk->src_fd = inst->src_ranges_fd >= 0 ? dup(inst->src_ranges_fd) :
						-1;
	if (lk->config_fd < 0 || lk->vips_fd < 0 || lk->tables_fd < 0 ||
	    lk->backends_fd < 0 || lk->ct_fd < 0) {
		err = -errno;
		p_err("cannot hold the instance's maps: %s", strerror(-err));
		goto fail;
	}
	lk->nx = (struct xlb_nexthops)XLB_NEXTHOPS_INIT;
	lk->ncpu = libbpf_num_possible_cpus();
	if (lk->ncpu < 0) {
		err = lk->ncpu;
		p_err("cannot count the CPUs: %s", strerror(-err));
		goto fail;
	}
	lk->percpu = calloc(lk->ncpu, sizeof(*lk->percpu));
	lk->nh_percpu = calloc(lk->ncpu, sizeof(*lk->nh_percpu));
	if (!lk->percpu || !lk->nh_percpu) {
		err = -ENOMEM;
		goto fail;
	}
	if (bpf_obj_get_info_by_fd(inst->conntrack_fd, &info, &info_len)) {
		err = -errno;
		p_err("cannot read the connection table's size: %s", strerror(-err));
		goto fail;
	}
	lk->ct_slots = info.max_entries;
	lk->skel = lookup__open();
	if (!lk->skel) {
		err = -errno ?: -EINVAL;
		p_err("cannot open the lookup program: %s", strerror(-err));
		goto fail;
	}
	/* The datapath's own entry point would be one more program of the
	 * instance's maps, which `xlb attach` and others look for. */
	bpf_program__set_autoload(lk->skel->progs.xlb_xdp, false);
	lk->skel->rodata->xlb_ct_mask = lk->ct_slots - 1;
	err = reuse_maps(lk, inst);
	if (!err)
		err = lookup__load(lk->skel);
	if (err) {
		p_err("cannot load the lookup program over the instance's maps: %s%s",
		      strerror(-err), err == -EPERM ? " (not root?)" : "");
		goto fail;
	}
	err = stats_read(lk, lk->before);
	if (err) {
		p_err("cannot read the lookup program's counters: %s", strerror(-err));
		goto fail;
	}
	*out = lk;
	return 0;
fail:
	xlb_lookup_close(lk);
	return err;
}

void xlb_lookup_close(struct xlb_lookup *lk)
{
	struct vip_table *t, *next;

	if (!lk)
		return;
	for (t = lk->tables; t; t = next) {
		next = t->next;
		free(t->slots);
		xlb_history_free(&t->hist);
		free(t);
	}
	xlb_nexthops_close(&lk->nx);
	lookup__destroy(lk->skel);
	if (lk->config_fd >= 0)
		close(lk->config_fd);
	if (lk->vips_fd >= 0)
		close(lk->vips_fd);
	if (lk->tables_fd >= 0)
		close(lk->tables_fd);
	if (lk->backends_fd >= 0)
		close(lk->backends_fd);
	if (lk->ct_fd >= 0)
		close(lk->ct_fd);
	if (lk->src_fd >= 0)
		close(lk->src_fd);
	free(lk->percpu);
	free(lk->nh_percpu);
	free(lk);
}

/* The VIP's table, read at its first lookup; NULL when it has none. */
static struct vip_table *table_of(struct xlb_lookup *lk, __u32 vip_id)
{
	struct vip_table *t;

	for (t = lk->tables; t; t = t->next)
		if (t->vip_id == vip_id)
			return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->vip_id = vip_id;
	if (xlb_table_read_hist(lk->tables_fd, vip_id, &t->slots, &t->m,
				&t->hist) || !t->m) {
		free(t->slots);
		free(t);
		return NULL;
	}
	t->next = lk->tables;
	lk->tables = t;
	return t;
}

/* CLOCK_MONOTONIC_COARSE, the datapath's clock (bpf/clock.h). */
static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * XLB_NS_PER_S + ts.tv_nsec;
}

/* The flow's entry in the connection table, as bpf/conntrack.h finds it,
 * and whether the datapath honours it. */
static int ct_explain(struct xlb_lookup *lk, const struct xlb_lookup_query *q,
		      const struct xlb_config *cfg, struct xlb_lookup_answer *a)
{
	__u32 set = xlb_ct_set_of(&q->flow, cfg->ct_seed, lk->ct_slots - 1), w, i;
	struct xlb_backend be;
	struct xlb_ct_slot s;
	__u64 now = now_ns();

	for (w = 0; w < XLB_CT_WAYS; w++) {
		i = set + w;
		if (bpf_map_lookup_elem(lk->ct_fd, &i, &s))
			return -errno;
		if (!(s.e.seq & 1) && !memcmp(&s.flow, &q->flow, sizeof(s.flow)))
			break;
		if (!s.flow.family)
			return 0;
	}
	if (w == XLB_CT_WAYS)
		return 0;
	a->ct_found = true;
	a->ct_index = i;
	a->ct = s.e;
	a->ct_idle_ns = now > s.e.last_seen_ns ? now - s.e.last_seen_ns : 0;
	a->ct_timeout_ns = xlb_ct_timeout_ns(cfg, q->flow.proto, s.e.flags);
	bpf_map_lookup_elem(lk->backends_fd, &(__u32){ s.e.backend_id },
			    &a->ct_backend);
	if (q->syn && q->flow.proto == IPPROTO_TCP)
		a->ct_why = XLB_LOOKUP_CT_SYN;
	else if (xlb_ct_expired(&s.e, now, a->ct_timeout_ns))
		a->ct_why = XLB_LOOKUP_CT_EXPIRED;
	else if (bpf_map_lookup_elem(lk->backends_fd, &(__u32){ s.e.backend_id }, &be) ||
		 !xlb_ct_backend_usable(&s.e, &be))
		a->ct_why = XLB_LOOKUP_CT_BACKEND_GONE;
	else if (be.flags & XLB_BE_F_EVICT)
		a->ct_why = XLB_LOOKUP_CT_BACKEND_EVICT;
	else
		a->ct_why = XLB_LOOKUP_CT_HONOURED;
	return 0;
}

/* Whether the source ranges of the VIP found by key let q's client in,
 * and the prefix that decides. */
static void src_explain(struct xlb_lookup *lk, const struct xlb_lookup_query *q,
			const struct xlb_vip_key *key,
			struct xlb_lookup_answer *a)
{
	struct xlb_state_vip v = { .key = *key, .vip = a->vip };
	const struct xlb_src_prefix *m;
	struct xlb_src_list *l;
	struct xlb_src_all all;

	if (!(a->vip.flags & XLB_VIP_F_SRC_LIST) || lk->src_fd < 0)
		return;
	l = malloc(sizeof(*l));
	if (!l || xlb_src_read_fd(lk->src_fd, &all)) {
		free(l);
		return;
	}
	xlb_src_of(&all, &v, l);
	m = xlb_src_match(l, q->flow.src);
	a->src_lists = true;
	a->src_matched = m;
	if (m)
		a->src_match = *m;
	a->src_denied = xlb_src_denies(a->vip.flags, m);
	xlb_src_all_free(&all);
	free(l);
}

/* The VIP of q, its flow hash, slot and owner, and a stateless VIP's
 * previous owner of the slot. */
static void table_explain(struct xlb_lookup *lk, const struct xlb_lookup_query *q,
			  const struct xlb_config *cfg, struct xlb_lookup_answer *a)
{
	struct xlb_vip_key key = {
		.port = q->flow.dport,
		.proto = q->flow.proto,
		.family = q->flow.family,
	};
	struct vip_table *t;
	__u16 e;

	memcpy(key.addr, q->flow.dst, sizeof(key.addr));
	/* As the datapath: the VIP of the port, else the all-port one. */
	if (bpf_map_lookup_elem(lk->vips_fd, &key, &a->vip)) {
		key.port = 0;
		key.proto |= XLB_VIP_PROTO_ALL_PORTS;
		if (bpf_map_lookup_elem(lk->vips_fd, &key, &a->vip))
			return;
	}
	a->is_vip = true;
	src_explain(lk, q, &key, a);
	a->hash = xlb_vip_flow_hash(&q->flow, a->vip.flags, cfg->hash_key);
	t = table_of(lk, a->vip.id);
	if (!t)
		return;
	a->slot = (__u32)a->hash % t->m;
	a->slot_owner = t->slots[a->slot];
	bpf_map_lookup_elem(lk->backends_fd, &a->slot_owner, &a->owner);
	if (t->hist.slot && (e = t->hist.slot[a->slot]) && e <= t->hist.n) {
		a->hist = true;
		a->hist_entry = t->hist.e[e - 1];
	}
}

/* The GUE field of the frame the run sent (out, len bytes), if any. */
static void gue_read(const __u8 *out, __u32 len, const struct xlb_config *cfg,
		     struct xlb_lookup_answer *a)
{
	const __u8 *ip = out + PKT_ETH_LEN, *udp;
	struct xlb_gue g;
	__u16 port = cfg->gue_port ? ntohs(cfg->gue_port) : XLB_GUE_DEFAULT_PORT;

	if (len < PKT_ETH_LEN + 20)
		return;
	if (pkt_get16(out + 12) == PKT_ETH_P_IP && ip[9] == IPPROTO_UDP)
		udp = ip + (ip[0] & 0xf) * 4;
	else if (pkt_get16(out + 12) == PKT_ETH_P_IPV6 && ip[6] == IPPROTO_UDP)
		udp = ip + 40;
	else
		return;
	if (udp + 8 + sizeof(g) > out + len || pkt_get16(udp + 2) != port)
		return;
	memcpy(&g, udp + 8, sizeof(g));
	if (g.priv.magic != XLB_GUE_PRIV_MAGIC)
		return;
	a->gue = true;
	a->prev_named = g.priv.family != XLB_AF_NONE;
	a->prev_family = g.priv.family;
	memcpy(a->prev, g.priv.prev, sizeof(a->prev));
}

/* The next hop the run took: its own cache's entry for the backend, on
 * the CPU that ran it (the one written last). */
static void nexthop_read(struct xlb_lookup *lk, struct xlb_lookup_answer *a)
{
	int fd = bpf_map__fd(lk->skel->maps.xlb_fib_cache), i, best = -1;

	if (bpf_map_lookup_elem(fd, &a->backend_id, lk->nh_percpu))
		return;
	for (i = 0; i < lk->ncpu; i++)
		if (lk->nh_percpu[i].expires_ns &&
		    (best < 0 || lk->nh_percpu[i].expires_ns > lk->nh_percpu[best].expires_ns))
			best = i;
	if (best < 0)
		return;
	a->ifindex = lk->nh_percpu[best].nh.ifindex;
	a->mtu = lk->nh_percpu[best].nh.mtu;
	memcpy(a->dmac, &lk->nh_percpu[best].nh.eth[0], 6);
	memcpy(a->smac, (__u8 *)&lk->nh_percpu[best].nh.eth[0] + 6, 6);
}

/* Do the reasons read from the maps give the run's backend? */
static const char *check(const struct xlb_lookup_answer *a)
{
	bool hit = a->counted & 1U << XLB_STAT_CT_HIT;

	if (a->src_denied != (a->reason == XLB_STAT_DROP_SRC_DENIED))
		return "the datapath's source-range verdict is not the lists'";

	if (hit && (!a->ct_found || a->ct_why != XLB_LOOKUP_CT_HONOURED))
		return "the datapath found a connection-table entry the table read does not show";
	if (!hit && a->ct_found && a->ct_why == XLB_LOOKUP_CT_HONOURED &&
	    !(a->vip.flags & XLB_VIP_F_STATELESS))
		return "the datapath did not honour the entry the table read shows";
	if (!a->backend_id)
		return NULL;
	if (hit ? a->ct.backend_id != a->backend_id :
		  a->slot_owner != a->backend_id)
		return hit ? "the entry names another backend than the datapath's" :
			     "the slot names another backend than the datapath's";
	return NULL;
}

/* The MTU an ICMP too-big answer (out, len bytes) names, 0 if none. */
static __u32 answer_mtu(const __u8 *out, __u32 len)
{
	const __u8 *ip = out + PKT_ETH_LEN;

	if (len >= PKT_ETH_LEN + 20 + 8 && pkt_get16(out + 12) == PKT_ETH_P_IP &&
	    ip[9] == IPPROTO_ICMP && ip[20] == 3 && ip[21] == 4)
		return pkt_get16(ip + 26);
	if (len >= PKT_ETH_LEN + 40 + 8 && pkt_get16(out + 12) == PKT_ETH_P_IPV6 &&
	    ip[6] == IPPROTO_ICMPV6 && ip[40] == 2)
		return (__u32)pkt_get16(ip + 44) << 16 | pkt_get16(ip + 46);
	return 0;
}

/* The frame of q's packet, as a client would send it to the device. */
static __u32 frame_of(struct xlb_lookup *lk, const struct xlb_lookup_query *q)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	int af = q->flow.family == XLB_AF_INET6 ? AF_INET6 : AF_INET;
	struct pkt_desc d = {
		.family = af == AF_INET6 ? 6 : 4,
		.src = src,
		.dst = dst,
		.proto = q->flow.proto,
		.sport = ntohs(q->flow.sport),
		.dport = ntohs(q->flow.dport),
		.tcp_flags = q->syn ? PKT_TCP_SYN : PKT_TCP_ACK,
	};

	size_t hdr = (af == AF_INET6 ? 40 : 20) + (q->flow.proto == IPPROTO_TCP ? 20 : 8);

	/* A client that does path-MTU discovery, as the datapath's ICMP
	 * answers expect. */
	if (q->size) {
		d.payload_len = q->size - hdr;
		d.df = true;
	}
	inet_ntop(af, q->flow.src, src, sizeof(src));
	inet_ntop(af, q->flow.dst, dst, sizeof(dst));
	return pkt_build(&d, lk->in);
}

int xlb_lookup_flow(struct xlb_lookup *lk, const struct xlb_lookup_query *q,
		    struct xlb_lookup_answer *a)
{
	struct xlb_lookup_result r;
	struct xlb_config cfg;
	__u64 after[XLB_STAT__MAX];
	__u32 len, out_len = sizeof(lk->out), retval, zero = 0, k;
	int err;

	memset(a, 0, sizeof(*a));
	if ((q->flow.family != XLB_AF_INET && q->flow.family != XLB_AF_INET6) ||
	    (q->flow.proto != IPPROTO_TCP && q->flow.proto != IPPROTO_UDP) ||
	    q->size > XLB_LOOKUP_SIZE_MAX ||
	    (q->size && q->size < (q->flow.family == XLB_AF_INET6 ? 40U : 20U) +
				  (q->flow.proto == IPPROTO_TCP ? 20 : 8)))
		return -EINVAL;
	if (bpf_map_lookup_elem(lk->config_fd, &zero, &cfg)) {
		err = -errno;
		p_err("cannot read the instance's settings: %s", strerror(-err));
		return err;
	}
	/* The entry first: the run reads it too, and changes nothing. */
	err = ct_explain(lk, q, &cfg, a);
	if (err) {
		p_err("cannot read the connection table: %s", strerror(-err));
		return err;
	}
	table_explain(lk, q, &cfg, a);

	len = frame_of(lk, q);
	err = xlb_sandbox_run(bpf_program__fd(lk->skel->progs.xlb_lookup),
			      lk->ifindex, lk->in, len, lk->out, &out_len, &retval);
	if (!err && bpf_map_lookup_elem(bpf_map__fd(lk->skel->maps.xlb_lookup_result),
					&zero, &r))
		err = -errno;
	if (!err)
		err = stats_read(lk, after);
	if (err) {
		p_err("cannot run the lookup program: %s", strerror(-err));
		return err;
	}
	a->verdict = retval;
	for (k = 0; k < XLB_STAT__MAX; k++) {
		if (after[k] == lk->before[k])
			continue;
		a->counted |= 1U << k;
		if (k < XLB_STAT_REASONS)
			a->reason = k;
	}
	memcpy(lk->before, after, sizeof(after));
	a->vip_id = r.vip_id;
	/* A backend named by a packet not sent (its next hop unresolved, an
	 * ICMP answer) is the one it was for. */
	a->backend_id = r.backend_id;
	if (a->backend_id)
		bpf_map_lookup_elem(lk->backends_fd, &a->backend_id, &a->backend);
	if (r.ret == -XLB_STAT_ICMP_TOO_BIG)
		a->answer_mtu = answer_mtu(lk->out, out_len);
	if (r.ret >= 0 && a->backend_id) {
		a->sent = true;
		nexthop_read(lk, a);
		gue_read(lk->out, out_len, &cfg, a);
	}
	a->nh_err = -ENOENT;
	if (a->backend_id)
		a->nh_err = xlb_nexthop_get(&lk->nx, &cfg, a->backend.addr,
					    a->backend.family, &a->nh);
	a->mismatch = check(a);
	return 0;
}
