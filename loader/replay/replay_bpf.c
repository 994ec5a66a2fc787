// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Replay through the XDP program (see replay_bpf.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "report.h"
#include "conntrack_map.h"
#include "replay_bpf.h"
#include "table_map.h"
#include "sandbox.h"
#include "xlb.skel.h"
/* The test packet builder: the frames are the tests' own kind, built from
 * the RFCs independently of the datapath's parser. */
#include "packets.h"

int replay_packets_add(void *ctx, const struct trace_packet *pkt)
{
	struct replay_packets *pk = ctx;

	if (pk->n == pk->cap) {
		size_t cap = pk->cap ? pk->cap * 2 : 4096;
		struct replay_packet *p = realloc(pk->p, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		pk->p = p;
		pk->cap = cap;
	}
	pk->p[pk->n++] = (struct replay_packet){
		.trace_flow = pkt->flow,
		.l4_len = pkt->l4_len > 0xffff ? 0xffff : pkt->l4_len,
		.tcp_flags = pkt->tcp_flags,
		.from_client = pkt->from_client,
	};
	return 0;
}

void replay_packets_resolve(struct replay_packets *pk,
			    const struct replay_flows *rf)
{
	size_t i;

	for (i = 0; i < pk->n; i++)
		pk->p[i].flow = rf->of_trace[pk->p[i].trace_flow];
}

void replay_packets_free(struct replay_packets *pk)
{
	free(pk->p);
	memset(pk, 0, sizeof(*pk));
}

/*
 * Each backend's record gets an address of its own for the run, so the
 * outer header names it whatever its identity is: 2001:db8:ee::ID, routed
 * back out of the ingress interface by the namespace (XDP_TX).
 */
#define RECORD_PREFIX	"2001:db8:ee::"
#define VIP_ID		1
/* Without a path MTU, inner packets are cut to this size: the outer
 * header must still fit the namespace's MTU. The backend does not depend
 * on the length. */
#define INNER_MAX	1400
/* With one, the largest inner packet the input buffer holds: longer ones
 * are cut to it, still longer than any path MTU takes. */
#define INNER_MAX_MTU	(PKT_MAX - PKT_ETH_LEN)
_Static_assert(REPLAY_BPF_MTU_MAX == PKT_MAX - PKT_ETH_LEN,
	       "a forwarded packet's frame fits PKT_MAX");
_Static_assert(INNER_MAX_MTU > REPLAY_BPF_MTU_MAX - REPLAY_BPF_ENCAP_LEN,
	       "a packet too big stays too big once cut");

struct replay_bpf {
	struct xlb *skel;
	int prog_fd;
	struct xlb_obj_maps maps;
	struct xlb_sandbox env;
	__u8 prefix[16];
	__u32 records;		/* backend ids 1..records written */
	__u32 mtu;		/* of the route to the backends; 0: none set */
	int bucket_fd;		/* the ICMP answers' token buckets */
	void *bucket_full;	/* a value of every CPU's that refills them */
	/* A packet's frame in and out of the program: the object's own, so
	 * two replays never share a buffer. */
	__u8 in[PKT_MAX], frame[PKT_MAX];
};

int replay_bpf_open(const __u64 key[2], __u32 mtu, struct replay_bpf **out)
{
	struct xlb_config cfg = { .flags = XLB_CFG_F_INITIALIZED };
	struct replay_bpf *dp = calloc(1, sizeof(*dp));
	struct bpf_map *map;
	__u32 zero = 0;
	int err;

	if (!dp)
		return -ENOMEM;
	inet_pton(AF_INET6, RECORD_PREFIX, dp->prefix);
	dp->mtu = mtu;
	err = xlb_sandbox_setup(&dp->env);
	if (err) {
		p_err("--via bpf: cannot set up a network namespace to run the "
		      "XDP program in: %s", strerror(-err));
		goto fail;
	}
	if (mtu && xlb_sandbox_route_mtu(RECORD_PREFIX "/64", mtu)) {
		err = -EIO;
		p_err("--via bpf --mtu %u: cannot set the MTU of the route to "
		      "the backends", mtu);
		goto fail;
	}
	dp->skel = xlb__open();
	if (!dp->skel) {
		err = -errno;
		p_err("--via bpf: cannot open the XDP program: %s", strerror(-err));
		goto fail;
	}
	/* The maps are the run's own, not an instance's pinned ones. */
	bpf_object__for_each_map(map, dp->skel->obj)
		bpf_map__set_pin_path(map, NULL);
	err = xlb__load(dp->skel);
	if (!err)
		err = xlb_obj_maps(dp->skel->obj, &dp->maps);
	if (err) {
		p_err("--via bpf: cannot load the XDP program: %s", strerror(-err));
		goto fail;
	}
	if (mtu) {
		int cpus = libbpf_num_possible_cpus();

		if (cpus < 0) {
			err = cpus;
			p_err("--via bpf: cannot count the CPUs: %s",
			      strerror(-err));
			goto fail;
		}
		/* Zeroed: the next answer finds its bucket a second old,
		 * full (bpf/icmp.h). */
		dp->bucket_full = calloc(cpus, sizeof(struct xlb_icmp_bucket));
		if (!dp->bucket_full) {
			err = -ENOMEM;
			goto fail;
		}
		dp->bucket_fd = bpf_map__fd(dp->skel->maps.xlb_icmp_bucket);
	}
	dp->prog_fd = bpf_program__fd(dp->skel->progs.xlb_xdp);
	memcpy(cfg.hash_key, key, sizeof(cfg.hash_key));
	inet_pton(AF_INET, XLB_SANDBOX_SRC4, &cfg.src4);
	inet_pton(AF_INET6, XLB_SANDBOX_SRC6, cfg.src6);
	if (bpf_map_update_elem(dp->maps.config, &zero, &cfg, BPF_ANY)) {
		err = -errno;
		p_err("--via bpf: cannot set the flow hash key: %s", strerror(-err));
		goto fail;
	}
	*out = dp;
	return 0;
fail:
	replay_bpf_close(dp);
	return err;
}

void replay_bpf_close(struct replay_bpf *dp)
{
	if (!dp)
		return;
	xlb__destroy(dp->skel);
	free(dp->bucket_full);
	free(dp);
}

/* Backend records 1..n for the set, the Maglev table of the set. */
static int install_set(struct replay_bpf *dp, const struct lb_backend *be,
		       size_t n, __u32 m)
{
	__u32 *slots = calloc(m, sizeof(*slots)), id, k;
	int err;

	if (!slots)
		return -ENOMEM;
	for (id = 1; id <= n || id <= dp->records; id++) {
		struct xlb_backend rec = {
			.vip_id = VIP_ID,
			.gen = 1,
			.family = XLB_AF_INET6,
		};

		if (id <= n) {
			memcpy(rec.addr, dp->prefix, 16);
			rec.addr[3] = htonl(id);
			rec.weight = be[id - 1].weight;
			rec.flags = XLB_BE_F_IN_USE;
		}
		if (bpf_map_update_elem(dp->maps.backends, &id, &rec, BPF_ANY)) {
			err = -errno;
			goto cleanup;
		}
	}
	dp->records = n;
	/* The replay measures the lookup table: no flow of the run before
	 * may keep its backend through the connection table. */
	err = xlb_ct_flush(dp->maps.conntrack);
	if (err)
		goto cleanup;
	err = maglev_build(be, n, m, slots);
	if (err)
		goto cleanup;
	for (k = 0; k < m; k++)
		slots[k]++;	/* index -> backend id; id 0 names none */
	err = xlb_table_install(dp->maps.tables, VIP_ID, slots, m);
cleanup:
	free(slots);
	return err;
}

static int cmp_vip_key(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct xlb_vip_key));
}

static struct xlb_vip_key vip_key_of(const struct replay_flow *f)
{
	struct xlb_vip_key k = {
		.port = f->tuple.dport,
		.proto = f->tuple.proto,
		.family = f->tuple.family,
	};

	memcpy(k.addr, f->tuple.dst, sizeof(k.addr));
	return k;
}

/* The VIP keys of the flows (every server port, protocol and family),
 * sorted, and each flow's index among them. */
static int vip_keys(const struct replay_flows *rf, struct xlb_vip_key **keys,
		    size_t *n, __u32 *key_of)
{
	struct xlb_vip_key *k = calloc(rf->n, sizeof(*k)), *hit;
	size_t i, u = 0;

	if (!k)
		return -ENOMEM;
	for (i = 0; i < rf->n; i++)
		k[i] = vip_key_of(&rf->flows[i]);
	qsort(k, rf->n, sizeof(*k), cmp_vip_key);
	for (i = 0; i < rf->n; i++)
		if (!u || cmp_vip_key(&k[i], &k[u - 1]))
			k[u++] = k[i];
	for (i = 0; i < rf->n; i++) {
		struct xlb_vip_key want = vip_key_of(&rf->flows[i]);

		hit = bsearch(&want, k, u, sizeof(*k), cmp_vip_key);
		key_of[i] = hit - k;
	}
	*keys = k;
	*n = u;
	return 0;
}

/*
 * The frame of a packet of flow f, as the client would send it. With a
 * path MTU, a packet of the client's is as long as it was captured (cut
 * to what the buffer holds), with DF: the client does path-MTU
 * discovery. The server's packets, which reach the client directly and
 * never the balancer, and any packet when whole is false, carry no
 * payload.
 */
static size_t frame_of(const struct replay_bpf *dp, const struct replay_flow *f,
		       const struct replay_packet *p, bool whole, __u8 *frame)
{
	static const __u8 mac_in[6] = XLB_SANDBOX_MAC_IN, mac_gw[6] = XLB_SANDBOX_MAC_GW;
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	int af = f->tuple.family == XLB_AF_INET6 ? AF_INET6 : AF_INET;
	struct pkt_desc d = {
		.family = af == AF_INET6 ? 6 : 4,
		.src = src,
		.dst = dst,
		.proto = f->tuple.proto,
		.sport = ntohs(f->tuple.sport),
		.dport = ntohs(f->tuple.dport),
		.tcp_flags = p->tcp_flags,
		.df = dp->mtu != 0,
	};
	size_t max = dp->mtu ? INNER_MAX_MTU : INNER_MAX, hdr = (af == AF_INET6 ? 40 : 20) +
		     (f->tuple.proto == IPPROTO_TCP ? 20 : 8);
	size_t l4hdr = f->tuple.proto == IPPROTO_TCP ? 20 : 8;

	memcpy(d.dmac, mac_in, 6);
	memcpy(d.smac, mac_gw, 6);
	inet_ntop(af, f->tuple.src, src, sizeof(src));
	inet_ntop(af, f->tuple.dst, dst, sizeof(dst));
	d.payload_len = p->l4_len > l4hdr ? p->l4_len - l4hdr : 0;
	if (dp->mtu && (!whole || !p->from_client))
		d.payload_len = 0;
	if (hdr + d.payload_len > max)
		d.payload_len = max - hdr;
	return pkt_build(&d, frame);
}

/* The backend index the program sent a frame to, or -1. */
static int backend_of(const struct replay_bpf *dp, const __u8 *frame,
		      __u32 len, size_t n)
{
	const __u8 *daddr = frame + PKT_ETH_LEN + 24;
	__u32 id;

	if (len < PKT_ETH_LEN + 40 || pkt_get16(frame + 12) != PKT_ETH_P_IPV6 ||
	    memcmp(daddr, dp->prefix, 12))
		return -1;
	id = (__u32)daddr[12] << 24 | daddr[13] << 16 | daddr[14] << 8 | daddr[15];
	return id >= 1 && id <= n ? (int)id - 1 : -1;
}

static void flow_name(const struct replay_flow *f, char *buf, size_t len)
{
	int af = f->tuple.family == XLB_AF_INET6 ? AF_INET6 : AF_INET;
	char a[INET6_ADDRSTRLEN];

	inet_ntop(af, f->tuple.src, a, sizeof(a));
	snprintf(buf, len, "%s port %u to VIP port %u/%s", a,
		 ntohs(f->tuple.sport), ntohs(f->tuple.dport),
		 f->tuple.proto == IPPROTO_TCP ? "tcp" : "udp");
}

/*
 * What is wrong with frame fr (len bytes, verdict) as the answer to a
 * packet of f too big for the path, NULL when nothing: XDP_TX back to the
 * sender's MAC, from the VIP to the client, "fragmentation needed" with
 * the path's MTU less the encapsulation (IPv4) or "packet too big" with
 * that MTU, at least 1280 (IPv6), checksums right. *mtu is the MTU named.
 */
static const char *answer_fault(const struct replay_bpf *dp,
				const struct replay_flow *f, const __u8 *fr,
				__u32 len, __u32 verdict, __u32 *mtu)
{
	static const __u8 mac_in[6] = XLB_SANDBOX_MAC_IN, mac_gw[6] = XLB_SANDBOX_MAC_GW;
	bool v6 = f->tuple.family == XLB_AF_INET6;
	__u32 want = dp->mtu - REPLAY_BPF_ENCAP_LEN, ip_len, alen = v6 ? 16 : 4;
	const __u8 *ip = fr + PKT_ETH_LEN, *ic, *src, *dst;
	__u32 sum;

	if (verdict != XDP_TX)
		return "not sent back (XDP_TX)";
	if (len < PKT_ETH_LEN + (v6 ? 40u : 20u) + 8 ||
	    pkt_get16(fr + 12) != (v6 ? PKT_ETH_P_IPV6 : PKT_ETH_P_IP))
		return "not an IP packet of the flow's family";
	if (memcmp(fr, mac_gw, 6) || memcmp(fr + 6, mac_in, 6))
		return "not addressed back to the MAC it came from";
	if (v6) {
		if (want < REPLAY_BPF_MTU_MIN)
			want = REPLAY_BPF_MTU_MIN;
		ip_len = 40 + pkt_get16(ip + 4);
		src = ip + 8;
		dst = ip + 24;
		ic = ip + 40;
		if (ip[0] >> 4 != 6 || ip[6] != IPPROTO_ICMPV6)
			return "not ICMPv6";
	} else {
		ip_len = pkt_get16(ip + 2);
		src = ip + 12;
		dst = ip + 16;
		ic = ip + 20;
		if (ip[0] != 0x45 || ip[9] != IPPROTO_ICMP)
			return "not ICMP";
		if (pkt_fold(pkt_sum(ip, 20, 0)))
			return "IP header checksum wrong";
	}
	if (ip_len > len - PKT_ETH_LEN || ic + 8 > ip + ip_len)
		return "IP length beyond the frame";
	if (memcmp(src, f->tuple.dst, alen) || memcmp(dst, f->tuple.src, alen))
		return "not from the VIP to the client";
	sum = v6 ? pkt_pseudo_sum(6, src, dst, IPPROTO_ICMPV6, ip + ip_len - ic) : 0;
	if (pkt_fold(pkt_sum(ic, ip + ip_len - ic, sum)))
		return "ICMP checksum wrong";
	if (v6 ? ic[0] != 2 || ic[1] != 0 : ic[0] != 3 || ic[1] != 4)
		return v6 ? "not packet too big (type 2)" :
			    "not fragmentation needed (type 3, code 4)";
	/* IPv4's MTU is the field's low 16 bits, the high ones unused (0). */
	*mtu = (__u32)pkt_get16(ic + 4) << 16 | pkt_get16(ic + 6);
	if (*mtu != want)
		return "next-hop MTU wrong";
	return NULL;
}

/* May the client be answered? Not from an address no one may answer
 * (RFC 1122 3.2.2, RFC 4443 2.4): unspecified, loopback, multicast,
 * broadcast. The datapath drops such a packet, too big, unanswered. */
static bool answerable(const struct replay_flow *f)
{
	const __be32 *a = f->tuple.src;
	__u32 h = ntohl(a[0]);

	if (f->tuple.family == XLB_AF_INET)
		return h && h != 0xffffffff && h >> 28 != 0xe && h >> 24 != 127;
	if (h >> 24 == 0xff)
		return false;
	return a[0] || a[1] || a[2] || (a[3] && a[3] != htonl(1));
}

/* One assignment's run: the flows, their packets, and what they got. */
struct run {
	const struct replay_flows *rf;
	const struct replay_packets *pk;
	const __u32 *key_of;	/* flow -> its VIP key's index */
	size_t n;		/* backends */
	int *out;		/* flow -> backend index, -1 none yet */
	bool *too_big;		/* flow -> a packet was answered (path MTU) */
	struct replay_too_big tb;
	size_t done;		/* packets run */
};

static int run_frame(struct replay_bpf *dp, __u32 len, __u32 *out_len,
		     __u32 *verdict)
{
	int err;

	*out_len = sizeof(dp->frame);
	err = xlb_sandbox_run(dp->prog_fd, dp->env.ifindex, dp->in, len,
			      dp->frame, out_len, verdict);
	if (err)
		p_err("--via bpf: BPF_PROG_TEST_RUN failed: %s", strerror(-err));
	return err;
}

/*
 * A packet of f built too big for the path (len bytes): check and count
 * the answer (from a client never answered, the drop); when f has no backend yet, run the packet again without
 * its payload (*verdict and *out_len are then that run's). Returns 1
 * when the frame is an answer only, 0 when it is to be read for the
 * backend, or -errno after p_err().
 */
static int too_big(struct replay_bpf *dp, struct run *r,
		   const struct replay_packet *p, const struct replay_flow *f,
		   const char *name, __u32 len, __u32 *out_len, __u32 *verdict)
{
	const char *fault;
	__u32 mtu = 0;
	int err;

	/* The answers are counted, not the rate limit, which only says how
	 * fast the replay runs: every one finds its bucket full. */
	if (bpf_map_update_elem(dp->bucket_fd, &(__u32){ 0 }, dp->bucket_full,
				BPF_ANY)) {
		err = -errno;
		p_err("--via bpf: cannot refill the ICMP answers' bucket: %s",
		      strerror(-err));
		return err;
	}
	err = run_frame(dp, len, out_len, verdict);
	if (err)
		return err;
	if (!answerable(f)) {
		if (*verdict != XDP_DROP) {
			p_err("--via bpf --mtu %u: the XDP program did not drop a "
			      "packet of %u bytes of %s, too big, from an address "
			      "never answered (verdict %u)", dp->mtu,
			      len - PKT_ETH_LEN, name, *verdict);
			return -EIO;
		}
		r->tb.dropped++;
	} else {
		fault = answer_fault(dp, f, dp->frame, *out_len, *verdict, &mtu);
		if (fault) {
			p_err("--via bpf --mtu %u: the XDP program did not answer "
			      "a packet of %u bytes of %s with ICMP too big: %s "
			      "(verdict %u, MTU %u)", dp->mtu, len - PKT_ETH_LEN,
			      name, fault, *verdict, mtu);
			return -EIO;
		}
		*(f->tuple.family == XLB_AF_INET6 ? &r->tb.mtu6 : &r->tb.mtu4) = mtu;
		r->tb.packets++;
		if (!r->too_big[p->flow]) {
			r->too_big[p->flow] = true;
			r->tb.flows++;
		}
	}
	if (r->out[p->flow] >= 0)
		return 1;
	len = frame_of(dp, f, p, false, dp->in);
	return run_frame(dp, len, out_len, verdict);
}

/* Run the packets of the flows whose VIP key is in [lo, hi). */
static int run_packets(struct replay_bpf *dp, struct run *r, size_t lo,
		       size_t hi)
{
	const struct replay_packets *pk = r->pk;
	char name[128];
	size_t i;
	int err;

	for (i = 0; i < pk->n; i++) {
		const struct replay_packet *p = &pk->p[i];
		const struct replay_flow *f = &r->rf->flows[p->flow];
		__u32 len, out_len, verdict;
		int b;

		if (r->key_of[p->flow] < lo || r->key_of[p->flow] >= hi)
			continue;
		flow_name(f, name, sizeof(name));
		len = frame_of(dp, f, p, true, dp->in);
		if (dp->mtu &&
		    len - PKT_ETH_LEN + REPLAY_BPF_ENCAP_LEN > dp->mtu)
			err = too_big(dp, r, p, f, name, len, &out_len, &verdict);
		else
			err = run_frame(dp, len, &out_len, &verdict);
		if (err < 0)
			return err;
		if (!(++r->done & 0x3fff) && isatty(STDERR_FILENO))
			fprintf(stderr, "\r\033[KXDP program: %zu of %zu packets",
				r->done, pk->n);
		if (err)
			continue;
		b = verdict == XDP_TX || verdict == XDP_REDIRECT ?
		    backend_of(dp, dp->frame, out_len, r->n) : -1;
		if (b < 0) {
			p_err("--via bpf: the XDP program did not forward a packet "
			      "of %s (verdict %u)", name, verdict);
			return -EIO;
		}
		if (r->out[p->flow] >= 0 && r->out[p->flow] != b) {
			p_err("--via bpf: the XDP program sent packets of %s to "
			      "two backends", name);
			return -EIO;
		}
		r->out[p->flow] = b;
	}
	return 0;
}

int replay_assign_bpf(struct replay_bpf *dp, const struct lb_params *params,
		      const struct lb_backend *backends, size_t n,
		      const struct replay_flows *rf,
		      const struct replay_packets *pk, int *out,
		      struct replay_too_big *tb)
{
	struct xlb_vip vip = { .id = VIP_ID, .table_size = params->table_size };
	struct run r = { .rf = rf, .pk = pk, .n = n, .out = out };
	__u32 *key_of = calloc(rf->n ? rf->n : 1, sizeof(*key_of));
	bool *flow_too_big = calloc(rf->n ? rf->n : 1, sizeof(*flow_too_big));
	struct xlb_vip_key *keys = NULL;
	size_t n_keys = 0, lo, hi, i;
	int err;

	if (!key_of || !flow_too_big) {
		err = -ENOMEM;
		goto cleanup;
	}
	r.key_of = key_of;
	r.too_big = flow_too_big;
	err = install_set(dp, backends, n, params->table_size);
	if (err) {
		p_err("--via bpf: cannot install the table: %s", strerror(-err));
		goto cleanup;
	}
	err = vip_keys(rf, &keys, &n_keys, key_of);
	if (err)
		goto cleanup;
	for (i = 0; i < rf->n; i++)
		out[i] = -1;
	/* The VIP map holds XLB_MAX_VIPS keys: ports in batches. */
	for (lo = 0; lo < n_keys && !err; lo = hi) {
		hi = lo + XLB_MAX_VIPS < n_keys ? lo + XLB_MAX_VIPS : n_keys;
		for (i = lo; i < hi && !err; i++) {
			vip.flags = rf->vip_flags[keys[i].family ==
						  XLB_AF_INET6];
			err = xlb_obj_vip_write(&dp->maps, &keys[i], &vip);
		}
		if (err) {
			p_err("--via bpf: cannot add the VIP: %s", strerror(-err));
			break;
		}
		err = run_packets(dp, &r, lo, hi);
		for (i = lo; i < hi; i++)
			xlb_obj_vip_delete(&dp->maps, &keys[i]);
	}
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "\r\033[K");
	for (i = 0; i < rf->n && !err; i++) {
		if (out[i] < 0) {
			p_err("--via bpf: a flow had no packet to run");
			err = -EINVAL;
		}
	}
	if (!err && tb)
		*tb = r.tb;
cleanup:
	free(keys);
	free(flow_too_big);
	free(key_of);
	return err;
}
