// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The connection table keeps established flows on their backend.
 *
 * A trace (generated: 12,000 flows of both families, TCP and UDP, some TCP
 * flows starting mid-stream; and the real captures when present) is
 * replayed through the XDP program with BPF_PROG_TEST_RUN, the client's
 * packets addressed to four VIPs (192.0.2.10 and 2001:db8::10, 80/tcp and
 * 53/udp) of ten backends. The program runs with its maps pinned in a pin
 * dir of the test's own and is configured by build/xlb, as an operator
 * would. Between the two halves of the trace the backend set changes:
 *
 *  - a backend is added: no established flow moves, new flows follow the
 *    new table (beside: how many the table alone would have moved);
 *  - a backend is drained: its established flows stay on it, it gets no
 *    new flow, and `xlb show` counts the flows it holds;
 *  - a backend is removed: exactly its flows move, each to the backend the
 *    new table names;
 *  - a SYN flood of 1,000,000 new flows, then five backends added: at
 *    least 99% of the established flows keep their backend, because the
 *    rate cap kept the flood from filling the table (and without the cap
 *    the flood evicts them);
 * and, with short timeouts, UDP entries and TCP entries after a FIN expire
 * while other TCP entries do not; ICMP errors reach a draining backend and
 * create no entry; a backend that reuses a removed backend's id (of the
 * same family) gets none of its flows; a backend found down by the
 * health checker keeps its tracked flows while its VIP keeps them, and
 * loses them to the table's choice once it is evicted (on-down reset);
 * and a new flow whose set of the table is full takes the slot of a flow
 * seen once before one of an established flow.
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <arpa/inet.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>

#include "replay_fixtures.h"
#include "addr.h"
#include "ct_entry.h"
#include "conntrack_map.h"
#include "ct_bench.skel.h"
#include "flow_hash.h"
#include "packets.h"
#include "pinned_instance.h"
#include "table_map.h"
#include "testlib.h"
#include "sandbox.h"
#include "update.h"

#define N_VIPS		4
#define N_BACKENDS	10
#define MAX_BACKENDS	16
#define FLOOD		1000000
#define BE_PREFIX	"2001:db8:ee::"

/* The VIPs, in the order of vip_of(). */
static const char *const vip_names[N_VIPS] = {
	REPLAY_VIP4 ":80/tcp", REPLAY_VIP4 ":53/udp",
	"[" REPLAY_VIP6 "]:80/tcp", "[" REPLAY_VIP6 "]:53/udp",
};

struct tflow {
	struct xlb_flow tuple;		/* client -> VIP */
	char src[INET6_ADDRSTRLEN];
	int vip;
};

struct tpkt {
	__u32 flow;
	__u8 tcp_flags;
};

/*
 * A trace as the balancer sees it: the clients' packets, in trace order
 * within each of two parts. The set changes between them while every flow
 * that began in the first half of the trace is open: such a flow has the
 * first half of its packets (rounded up) in the first part, the rest in the
 * second; flows that began later are wholly in the second part.
 */
struct ttrace {
	struct tflow *flows;
	size_t n_flows;
	struct tpkt *pkts;
	size_t n_pkts;
	size_t mid;		/* packets of the first part */
};

/* What the instance holds, read back from its maps. */
struct model {
	__u64 key[2];
	__u32 vip_id[N_VIPS];
	__u32 *slots[N_VIPS];
	__u32 m[N_VIPS];
	struct xlb_backend be[XLB_MAX_BACKENDS];
};

static struct {
	bool tried, ready;
	struct xlb_sandbox env;
	struct bpf_object *obj;
	int prog_fd;
	struct xlb_obj_maps maps;
	char xlb[PATH_MAX];
} inst;

static int vip_of(__u8 family, __u8 proto)
{
	return (family == XLB_AF_INET6 ? 2 : 0) + (proto == IPPROTO_UDP);
}

/* Backend index (1..) of a backend address, 0 for any other. */
static int backend_index(const __be32 addr[4], __u8 family)
{
	__u8 prefix[16];
	const __u8 *a = (const __u8 *)addr;

	inet_pton(AF_INET6, BE_PREFIX, prefix);
	if (family != XLB_AF_INET6 || memcmp(a, prefix, 14))
		return 0;
	return a[14] << 8 | a[15];
}

/* ------------------------------------------------------------------ */
/* The instance: the program with pinned maps, configured by build/xlb  */

static bool setup(void)
{
	struct bpf_program *prog;

	if (inst.tried)
		return inst.ready;
	inst.tried = true;
	if (!test_have_root()) {
		test_skip_env("needs root (network namespace, BPF)");
		return false;
	}
	if (xlb_sandbox_setup(&inst.env)) {
		test_skip_env("cannot build the test network namespace");
		return false;
	}
	snprintf(inst.xlb, sizeof(inst.xlb), "%s/xlb", pinned_build_dir());
	inst.obj = pinned_instance("conntrack");
	prog = inst.obj ? bpf_object__find_program_by_name(inst.obj, "xlb_xdp") : NULL;
	if (!prog || xlb_obj_maps(inst.obj, &inst.maps)) {
		printf("  cannot load the program with its maps pinned\n");
		test_failed = true;
		return false;
	}
	inst.prog_fd = bpf_program__fd(prog);
	inst.ready = true;
	return true;
}

/* Run build/xlb on the instance; its output is discarded. */
static int xlb(const char *fmt, ...)
{
	char args[2048], cmd[2 * PATH_MAX + 2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s --pin-dir %s %s >/dev/null", inst.xlb,
		 pinned_dir, args);
	return system(cmd) == 0 ? 0 : -1;
}

/* Each VIP with backends 1..n, all of weight 1, and the settings given;
 * the connection table emptied: as if the balancer had just started. */
static bool configure(int n, __u32 rate_limit)
{
	const char *path = fx_path("state.json");
	FILE *f = fopen(path, "w");
	int v, i;

	if (!ASSERT_TRUE(f != NULL, "state file"))
		return false;
	fprintf(f, "{\"config\": {\"seed\": \"00112233445566778899aabbccddeeff\", "
		"\"src4\": \"%s\", \"src6\": \"%s\", \"udp_timeout\": 0, "
		"\"tcp_timeout\": 0, \"tcp_closing_timeout\": 0, "
		"\"ct_rate_limit\": %u}, \"vips\": [", XLB_SANDBOX_SRC4,
		XLB_SANDBOX_SRC6, rate_limit);
	for (v = 0; v < N_VIPS; v++) {
		fprintf(f, "%s{\"vip\": \"%s\", \"backends\": [", v ? ", " : "",
			vip_names[v]);
		for (i = 1; i <= n; i++)
			fprintf(f, "%s{\"addr\": \"" BE_PREFIX "%x\"}",
				i > 1 ? ", " : "", i);
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
	fclose(f);
	return ASSERT_OK(xlb("apply %s", path), "xlb apply") &&
	       ASSERT_OK(xlb_ct_flush(inst.maps.conntrack), "empty the connection table");
}

/* `xlb backend CMD` of backend i on every VIP. */
static bool backend_cmd(const char *cmd, int i, const char *opts)
{
	bool ok = true;
	int v;

	for (v = 0; v < N_VIPS; v++)
		ok &= ASSERT_OK(xlb("backend %s %s " BE_PREFIX "%x %s", cmd,
				    vip_names[v], i, opts), cmd);
	return ok;
}

static void model_free(struct model *m)
{
	int v;

	for (v = 0; v < N_VIPS; v++)
		free(m->slots[v]);
	memset(m, 0, sizeof(*m));
}

/* The live tables, records and seed. */
static bool model_read(struct model *m)
{
	struct xlb_config cfg;
	struct xlb_vip_key key;
	struct xlb_vip vip;
	__u32 zero = 0, id;
	const char *why;
	int v;

	model_free(m);
	if (!ASSERT_OK(bpf_map_lookup_elem(inst.maps.config, &zero, &cfg), "config"))
		return false;
	memcpy(m->key, cfg.hash_key, sizeof(m->key));
	for (v = 0; v < N_VIPS; v++) {
		if (!ASSERT_OK(xlb_vip_parse(vip_names[v], &key, &why), vip_names[v]) ||
		    !ASSERT_OK(bpf_map_lookup_elem(inst.maps.vips, &key, &vip), "vip") ||
		    !ASSERT_OK(xlb_table_read(inst.maps.tables, vip.id, &m->slots[v],
					      &m->m[v]), "table"))
			return false;
		m->vip_id[v] = vip.id;
	}
	for (id = 0; id < XLB_MAX_BACKENDS; id++)
		if (bpf_map_lookup_elem(inst.maps.backends, &id, &m->be[id]))
			return false;
	return true;
}

/* The backend index the live table names for a flow. */
static int model_pick(const struct model *m, const struct tflow *f)
{
	__u64 hash = xlb_flow_hash(&f->tuple, m->key);
	__u32 id = m->slots[f->vip][(__u32)hash % m->m[f->vip]];

	return backend_index(m->be[id].addr, m->be[id].family);
}

static __u64 stat_packets(__u32 reason)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	struct xlb_counter *c = calloc(ncpu, sizeof(*c));
	__u64 sum = 0;

	if (c && !bpf_map_lookup_elem(inst.maps.stats, &reason, c))
		for (i = 0; i < ncpu; i++)
			sum += c[i].packets;
	free(c);
	return sum;
}

/* ------------------------------------------------------------------ */
/* Packets                                                              */

/* Run one frame; the backend index it was sent to, or -1 (not forwarded
 * to a backend). */
static int run_frame(const struct pkt_desc *d)
{
	__u8 in[PKT_MAX], out[PKT_MAX];
	__u32 len = pkt_build(d, in), out_len = sizeof(out), retval;
	const __u8 *ip6 = out + PKT_ETH_LEN;

	if (xlb_sandbox_run(inst.prog_fd, inst.env.ifindex, in, len, out, &out_len,
			&retval) || retval != XDP_TX || out_len < PKT_ETH_LEN + 40 ||
	    pkt_get16(out + 12) != PKT_ETH_P_IPV6)
		return -1;
	return backend_index((const __be32 *)(ip6 + 24), XLB_AF_INET6);
}

static int run_flow(const struct tflow *f, __u8 tcp_flags)
{
	struct pkt_desc d = {
		.family = f->tuple.family == XLB_AF_INET6 ? 6 : 4,
		.src = f->src,
		.dst = f->tuple.family == XLB_AF_INET6 ? REPLAY_VIP6 : REPLAY_VIP4,
		.proto = f->tuple.proto,
		.sport = ntohs(f->tuple.sport),
		.dport = ntohs(f->tuple.dport),
		.tcp_flags = tcp_flags,
	};

	return run_frame(&d);
}

/*
 * Run packets [lo, hi) of the trace. seen[flow] receives the backend the
 * flow's packets went to (-1 before the first). Returns how many packets
 * were not forwarded or went elsewhere than their flow's earlier packets
 * in the range (0 is right).
 */
static size_t run_range(const struct ttrace *t, size_t lo, size_t hi, int *seen)
{
	size_t i, bad = 0;
	int b;

	for (i = 0; i < t->n_flows; i++)
		seen[i] = -1;
	for (i = lo; i < hi; i++) {
		const struct tpkt *p = &t->pkts[i];

		b = run_flow(&t->flows[p->flow], p->tcp_flags);
		if (b <= 0 || (seen[p->flow] >= 0 && seen[p->flow] != b))
			bad++;
		else
			seen[p->flow] = b;
	}
	return bad;
}

/* ------------------------------------------------------------------ */
/* Traces                                                               */

struct reading {
	struct ttrace *t;
	size_t cap;
};

/* Keep the client's packets: the balancer never sees the others (the
 * backends answer directly). */
static int keep_packet(void *ctx, const struct trace_packet *p)
{
	struct reading *r = ctx;

	if (!p->from_client)
		return 0;
	if (r->t->n_pkts == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 65536;
		struct tpkt *n = realloc(r->t->pkts, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->t->pkts = n;
		r->cap = cap;
	}
	r->t->pkts[r->t->n_pkts++] = (struct tpkt){ .flow = p->flow,
						    .tcp_flags = p->tcp_flags };
	return 0;
}

static int cmp_tflow(const void *a, const void *b)
{
	return memcmp(&((const struct tflow *)a)->tuple,
		      &((const struct tflow *)b)->tuple, sizeof(struct xlb_flow));
}

/* Order the packets into the two parts (see struct ttrace). */
static bool split_at_change(struct ttrace *t)
{
	size_t *count = calloc(t->n_flows, sizeof(size_t));
	size_t *seen = calloc(t->n_flows, sizeof(size_t));
	bool *old = calloc(t->n_flows, sizeof(bool));
	struct tpkt *parts = calloc(t->n_pkts, sizeof(*parts));
	size_t i, a = 0, b = 0;
	bool ok = ASSERT_TRUE(count && seen && old && parts, "memory");

	for (i = 0; ok && i < t->n_pkts; i++) {
		count[t->pkts[i].flow]++;
		if (i < t->n_pkts / 2)
			old[t->pkts[i].flow] = true;
	}
	for (i = 0; ok && i < t->n_pkts; i++) {
		__u32 f = t->pkts[i].flow;

		if (old[f] && seen[f]++ < (count[f] + 1) / 2)
			a++;
	}
	t->mid = a;
	memset(seen, 0, t->n_flows * sizeof(size_t));
	for (i = 0, b = a, a = 0; ok && i < t->n_pkts; i++) {
		__u32 f = t->pkts[i].flow;

		if (old[f] && seen[f]++ < (count[f] + 1) / 2)
			parts[a++] = t->pkts[i];
		else
			parts[b++] = t->pkts[i];
	}
	if (ok) {
		free(t->pkts);
		t->pkts = parts;
		parts = NULL;
	}
	free(count);
	free(seen);
	free(old);
	free(parts);
	return ok;
}

/*
 * Read captures into a trace. Every flow keeps its client address and
 * port and goes to the VIP of its family and protocol; trace flows that
 * become the same 5-tuple so are one flow.
 */
static bool trace_load(int n, const char *const *paths, struct ttrace *t)
{
	struct reading r = { .t = t };
	struct trace tr = {};
	struct tflow *sorted, *hit;
	size_t i, u = 0;
	int k, af;

	memset(t, 0, sizeof(*t));
	for (k = 0; k < n; k++)
		if (!ASSERT_OK(trace_read(&tr, paths[k], keep_packet, &r), paths[k]))
			return false;
	sorted = calloc(tr.n, sizeof(*sorted));
	t->flows = calloc(tr.n, sizeof(*t->flows));
	if (!ASSERT_TRUE(sorted && t->flows, "memory"))
		return false;
	for (i = 0; i < tr.n; i++) {
		struct tflow *f = &t->flows[i];

		replay_vip_tuple(&tr.flows[i].tuple, &f->tuple);
		f->tuple.dport = htons(f->tuple.proto == IPPROTO_UDP ? 53 : 80);
		f->vip = vip_of(f->tuple.family, f->tuple.proto);
		af = f->tuple.family == XLB_AF_INET6 ? AF_INET6 : AF_INET;
		inet_ntop(af, f->tuple.src, f->src, sizeof(f->src));
	}
	memcpy(sorted, t->flows, tr.n * sizeof(*sorted));
	qsort(sorted, tr.n, sizeof(*sorted), cmp_tflow);
	for (i = 0; i < tr.n; i++)
		if (!u || cmp_tflow(&sorted[i], &sorted[u - 1]))
			sorted[u++] = sorted[i];
	/* Packets name the merged flow. */
	for (i = 0; i < t->n_pkts; i++) {
		hit = bsearch(&t->flows[t->pkts[i].flow], sorted, u, sizeof(*sorted),
			      cmp_tflow);
		t->pkts[i].flow = hit - sorted;
	}
	free(t->flows);
	t->flows = sorted;
	t->n_flows = u;
	trace_free(&tr);
	return split_at_change(t);
}

static void trace_unload(struct ttrace *t)
{
	free(t->flows);
	free(t->pkts);
	memset(t, 0, sizeof(*t));
}

static bool generated_trace(struct ttrace *t)
{
	static char path[PATH_MAX];
	const char *p = path;

	if (!path[0]) {
		snprintf(path, sizeof(path), "%s", fx_path("trace.pcap"));
		if (!ASSERT_OK(fx_gentrace("-n 12000 -s 11 -o %s", path), "gentrace"))
			return false;
	}
	if (!trace_load(1, &p, t))
		return false;
	printf("  generated trace: %zu flows, %zu client packets\n", t->n_flows, t->n_pkts);
	ASSERT_GE(t->n_flows, 10000, "flows in the generated trace");
	return !test_failed;
}

/* The real captures, or false after a SKIP when there are none. */
static bool real_trace(struct ttrace *t)
{
	const char *dir = getenv("XLB_PCAP_DIR") ?: "../shared/pcaps";
	static char paths[1024][PATH_MAX];
	const char *p[1024];
	struct dirent *e;
	int n = 0;
	bool ok;
	DIR *d;

	d = opendir(dir);
	while (d && (e = readdir(d)) && n < 1024) {
		if (!strstr(e->d_name, ".pcap"))
			continue;
		snprintf(paths[n], PATH_MAX, "%s/%s", dir, e->d_name);
		p[n] = paths[n];
		n++;
	}
	if (d)
		closedir(d);
	if (!n) {
		test_skip("no captures in ../shared/pcaps (set XLB_PCAP_DIR)");
		return false;
	}
	ok = trace_load(n, p, t);
	if (ok)
		printf("  %d captures: %zu flows, %zu client packets\n", n,
		       t->n_flows, t->n_pkts);
	return ok;
}

/* ------------------------------------------------------------------ */
/* A change between the two halves of a trace                           */

struct halves {
	int *first, *second;	/* backend of each flow in each half, -1: none */
	size_t mid;
	size_t established;	/* flows in both halves, not reopened by a SYN */
	bool *est;
};

static bool is_syn(__u8 tcp_flags)
{
	return (tcp_flags & (PKT_TCP_SYN | PKT_TCP_ACK)) == PKT_TCP_SYN;
}

static void halves_free(struct halves *h)
{
	free(h->first);
	free(h->second);
	free(h->est);
}

/* New flows of the second half went where the new table sends them. */
static size_t new_flows_off_table(const struct ttrace *t, const struct halves *h,
				  const struct model *after, size_t *n_new)
{
	size_t i, off = 0;

	*n_new = 0;
	for (i = 0; i < t->n_flows; i++) {
		if (h->first[i] > 0 || h->second[i] <= 0)
			continue;
		(*n_new)++;
		off += h->second[i] != model_pick(after, &t->flows[i]);
	}
	return off;
}

/* The replays are far faster than real traffic: tens of thousands of new
 * flows within a second. The rate cap is lifted for them, so that every
 * flow of a trace is recorded; the flood case sets it. */
#define NO_CAP	100000000

/*
 * Configure n backends, run the first half, let change() alter the set
 * (m_before and m_after: the live tables around it), run the second half.
 * A flow is established when it has packets in both halves and its second
 * half holds no SYN (a SYN opens a new connection, which follows the
 * table). Flows new in the second half must follow the new table.
 */
static bool run_halves(const struct ttrace *t, int n, bool (*change)(void *),
		       void *arg, struct model *m_before, struct model *m_after,
		       struct halves *h)
{
	__u64 bypassed = 0;
	size_t i, n_new;

	memset(h, 0, sizeof(*h));
	h->first = calloc(t->n_flows, sizeof(int));
	h->second = calloc(t->n_flows, sizeof(int));
	h->est = calloc(t->n_flows, sizeof(bool));
	if (!ASSERT_TRUE(h->first && h->second && h->est, "memory") ||
	    !configure(n, NO_CAP) || !model_read(m_before))
		return false;
	h->mid = t->mid;
	bypassed -= stat_packets(XLB_STAT_CT_BYPASS);
	ASSERT_EQ(run_range(t, 0, h->mid, h->first), 0, "first half: packets astray");
	bypassed += stat_packets(XLB_STAT_CT_BYPASS);
	if (!change(arg) || !model_read(m_after))
		return false;
	bypassed -= stat_packets(XLB_STAT_CT_BYPASS);
	ASSERT_EQ(run_range(t, h->mid, t->n_pkts, h->second), 0,
		  "second half: packets astray");
	bypassed += stat_packets(XLB_STAT_CT_BYPASS);
	/* Every flow of the trace has its entry. */
	ASSERT_EQ(bypassed, 0, "trace packets that bypassed the connection table");
	for (i = 0; i < t->n_flows; i++)
		h->est[i] = h->first[i] > 0 && h->second[i] > 0;
	for (i = h->mid; i < t->n_pkts; i++)
		if (is_syn(t->pkts[i].tcp_flags))
			h->est[t->pkts[i].flow] = false;
	for (i = 0; i < t->n_flows; i++)
		h->established += h->est[i];
	ASSERT_EQ(new_flows_off_table(t, h, m_after, &n_new), 0,
		  "new flows not where the new table sends them");
	ASSERT_GT(n_new, 0, "new flows in the second half");
	return !test_failed;
}

/* The change of the set, for run_halves(). */
static bool add_backends(void *arg)
{
	int from = ((int *)arg)[0], to = ((int *)arg)[1], i;
	bool ok = true;

	for (i = from; i <= to; i++)
		ok &= backend_cmd("add", i, "");
	return ok;
}

static bool drain_backend(void *arg)
{
	return backend_cmd("set", *(int *)arg, "--weight 0");
}

static bool remove_backend(void *arg)
{
	return backend_cmd("del", *(int *)arg, "");
}

static void adding_a_backend_moves_no_established_flow(const struct ttrace *t)
{
	int range[2] = { N_BACKENDS + 1, N_BACKENDS + 1 };
	struct model before = {}, after = {};
	size_t i, moved = 0, table_moved = 0, midstream = 0;
	__u8 *first_seen = calloc(t->n_flows, 1);
	struct halves h = {};

	if (ASSERT_TRUE(first_seen != NULL, "memory") &&
	    run_halves(t, N_BACKENDS, add_backends, range, &before, &after, &h)) {
		for (i = 0; i < t->n_flows; i++) {
			if (!h.est[i])
				continue;
			moved += h.second[i] != h.first[i];
			table_moved += model_pick(&before, &t->flows[i]) !=
				       model_pick(&after, &t->flows[i]);
		}
		/* Established TCP flows whose first packet was no SYN: the
		 * balancer met them mid-stream, as after a restart. */
		for (i = 0; i < h.mid; i++) {
			const struct tpkt *p = &t->pkts[i];

			if (h.est[p->flow] && !first_seen[p->flow]++)
				midstream += t->flows[p->flow].tuple.proto == IPPROTO_TCP &&
					     !(p->tcp_flags & PKT_TCP_SYN);
		}
		printf("  %zu established flows (%zu met mid-stream): %zu moved with the "
		       "connection table; the table alone would move %zu (%.2f%%)\n",
		       h.established, midstream, moved, table_moved,
		       100.0 * table_moved / h.established);
		ASSERT_GT(h.established, 1000, "established flows");
		ASSERT_EQ(moved, 0, "established flows moved");
		ASSERT_GT(table_moved, 0, "flows the table alone moves (the contrast)");
		ASSERT_GT(midstream, 0, "established TCP flows met mid-stream");
	}
	free(first_seen);
	halves_free(&h);
	model_free(&before);
	model_free(&after);
}

/* `xlb -j show`: the flows of each backend index, summed over the VIPs. */
static bool show_flows(__u64 *flows)
{
	char cmd[PATH_MAX + 128], buf[1 << 16];
	struct json_object *o, *vips, *bes, *b, *addr, *fl;
	__be32 a[4];
	size_t len, v, k;
	__u8 family;
	const char *why;
	FILE *p;
	int i;

	snprintf(cmd, sizeof(cmd), "%s --pin-dir %s -j show", inst.xlb, pinned_dir);
	p = popen(cmd, "r");
	if (!ASSERT_TRUE(p != NULL, "xlb -j show"))
		return false;
	len = fread(buf, 1, sizeof(buf) - 1, p);
	buf[len] = '\0';
	if (!ASSERT_OK(pclose(p), "xlb -j show"))
		return false;
	o = json_tokener_parse(buf);
	if (!ASSERT_TRUE(o && json_object_object_get_ex(o, "vips", &vips), "show's JSON"))
		return false;
	memset(flows, 0, MAX_BACKENDS * sizeof(*flows));
	for (v = 0; v < json_object_array_length(vips); v++) {
		json_object_object_get_ex(json_object_array_get_idx(vips, v), "backends", &bes);
		for (k = 0; k < json_object_array_length(bes); k++) {
			b = json_object_array_get_idx(bes, k);
			if (!json_object_object_get_ex(b, "addr", &addr) ||
			    !json_object_object_get_ex(b, "flows", &fl) ||
			    xlb_addr_parse(json_object_get_string(addr), a, &family, &why))
				continue;
			i = backend_index(a, family);
			if (i > 0 && i < MAX_BACKENDS)
				flows[i] += json_object_get_int64(fl);
		}
	}
	json_object_put(o);
	return true;
}

static void draining_keeps_established_flows_and_takes_no_new_one(const struct ttrace *t,
								   bool check_show)
{
	struct model before = {}, after = {};
	__u64 shown[MAX_BACKENDS], held[MAX_BACKENDS] = {};
	size_t i, moved = 0, on_drained = 0, new_on_drained = 0;
	int drained = 1;
	struct halves h = {};

	if (run_halves(t, N_BACKENDS, drain_backend, &drained, &before, &after, &h)) {
		for (i = 0; i < t->n_flows; i++) {
			if (h.est[i]) {
				moved += h.second[i] != h.first[i];
				on_drained += h.first[i] == drained;
			}
			new_on_drained += h.first[i] <= 0 && h.second[i] == drained;
			held[h.first[i] > 0 ? h.first[i] : h.second[i]]++;
		}
		printf("  %zu established flows, %zu of them on the drained backend\n",
		       h.established, on_drained);
		ASSERT_GT(on_drained, 0, "established flows on the drained backend");
		ASSERT_EQ(moved, 0, "established flows moved");
		ASSERT_EQ(new_on_drained, 0, "new flows sent to the drained backend");
		/* Every flow has its entry (none timed out, none bypassed):
		 * show counts exactly the flows each backend got. */
		if (check_show && show_flows(shown)) {
			printf("  xlb show: the drained backend holds %llu flows\n",
			       (unsigned long long)shown[drained]);
			for (i = 1; i <= N_BACKENDS; i++)
				ASSERT_EQ(shown[i], held[i], "flows xlb show counts");
		}
	}
	halves_free(&h);
	model_free(&before);
	model_free(&after);
}

static void removing_a_backend_moves_exactly_its_flows(const struct ttrace *t)
{
	struct model before = {}, after = {};
	size_t i, others_moved = 0, on_removed = 0, astray = 0;
	int removed = 2;
	struct halves h = {};

	if (run_halves(t, N_BACKENDS, remove_backend, &removed, &before, &after, &h)) {
		for (i = 0; i < t->n_flows; i++) {
			if (!h.est[i])
				continue;
			if (h.first[i] == removed) {
				on_removed++;
				astray += h.second[i] != model_pick(&after, &t->flows[i]);
			} else {
				others_moved += h.second[i] != h.first[i];
			}
		}
		printf("  %zu established flows, %zu on the removed backend: all moved "
		       "to the new table's backend, no other flow moved\n",
		       h.established, on_removed);
		ASSERT_GT(on_removed, 0, "established flows on the removed backend");
		ASSERT_EQ(astray, 0, "its flows not where the new table sends them");
		ASSERT_EQ(others_moved, 0, "other established flows moved");
	}
	halves_free(&h);
	model_free(&before);
	model_free(&after);
}

/* The three changes, each from a fresh start, on one trace. */
static void through_backend_changes(struct ttrace *t, bool check_show)
{
	adding_a_backend_moves_no_established_flow(t);
	draining_keeps_established_flows_and_takes_no_new_one(t, check_show);
	removing_a_backend_moves_exactly_its_flows(t);
	trace_unload(t);
}

static void generated_trace_through_backend_changes(void)
{
	struct ttrace t;

	if (setup() && generated_trace(&t))
		through_backend_changes(&t, true);
}

/* Flows closed by FIN or RST time out within seconds: `xlb show`'s count
 * is checked on the generated trace, which has none. */
static void real_captures_through_backend_changes(void)
{
	struct ttrace t;

	if (setup() && real_trace(&t))
		through_backend_changes(&t, false);
}

/* ------------------------------------------------------------------ */
/* Flood                                                                */

/*
 * The flood runs through xlb_new_flow (bench/bpf/ct_bench.bpf.c): the datapath
 * on the instance's own pinned maps, every run of one BPF_PROG_TEST_RUN
 * call with repeat made a new flow. A million single runs would take
 * seconds; this takes a fraction of one.
 */
#define FLOOD_CAP	2000	/* new entries per second per CPU */

struct flood {
	__u32 rate_limit;
	__u64 inserted, bypassed;
	double seconds;
	bool forwarded;		/* the last SYN of each family */
	/* Each of the two programs (IPv4 flood, IPv6 flood): the entries it
	 * made, and how long its runs lasted by the coarse clock that the
	 * cap's windows follow (see flood_cap_bound()). */
	__u64 prog_inserted[2];
	__u64 prog_span_ns[2];
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* bpf_ktime_get_coarse_ns(): the clock the cap's windows are timed by. */
static __u64 coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * XLB_NS_PER_S + ts.tv_nsec;
}

/*
 * The most entries one program may make on one CPU whose runs all fell
 * within span_ns of the coarse clock, at cap entries per window.
 *
 * The windows (xlb_ct_may_insert()): the program's own per-CPU counter
 * starts empty when it is loaded, so its first packet opens a window, and
 * each later window opens at the first packet at least a second after the
 * one before. k windows thus need packets (k - 1) seconds apart or more:
 * within span_ns there are at most span_ns / 1 s + 1 (rounded down), each
 * of at most cap entries. The span is read from the same coarse clock
 * right before and after the runs, so it holds every packet's time; no
 * margin for clock granularity is needed. The flood runs on one CPU (the
 * test pins itself; BPF_PROG_TEST_RUN keeps a run on its CPU anyway).
 *
 * The bound is what the real code can reach, not a loose multiple of it:
 * a flood shorter than a second (as it is here, some 0.1 s a program)
 * makes exactly cap entries, and a cap enforced at twice or three times
 * its setting makes two or three times as many, over the bound. Over
 * longer floods (an emulated VM) each extra second allows one more
 * window; a cap enforced at 3x still fills its windows three times over
 * and exceeds the bound, and one at 2x does unless the flood ends just
 * after a window opens.
 */
static __u64 flood_cap_bound(__u32 cap, __u64 span_ns)
{
	return (__u64)cap * (span_ns / XLB_NS_PER_S + 1);
}

/* Keep the calling thread on the CPU it is on; the old mask in *old. */
static bool pin_cpu(cpu_set_t *old)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	return ASSERT_OK(sched_getaffinity(0, sizeof(*old), old), "CPU mask") &&
	       ASSERT_OK(sched_setaffinity(0, sizeof(one), &one), "pin to one CPU");
}

/* FLOOD / 2 SYNs of new flows from src (a source no trace uses). */
static bool flood_family(int family, const char *src, struct flood *fl)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts, .pin_root_path = pinned_dir);
	struct pkt_desc d = { .family = family, .src = src, .proto = IPPROTO_TCP,
			      .dst = family == 4 ? REPLAY_VIP4 : REPLAY_VIP6,
			      .sport = 1, .dport = 80, .tcp_flags = PKT_TCP_SYN };
	__u8 frame[PKT_MAX], out[PKT_MAX];
	struct xdp_md ctx = { .ingress_ifindex = inst.env.ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_out = out,
		    .data_size_out = sizeof(out), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = FLOOD / 2);
	struct ct_bench *skel = ct_bench__open_opts(&open_opts);
	bool ok = false;

	opts.data_size_in = ctx.data_end = pkt_build(&d, frame);
	if (!ASSERT_TRUE(skel != NULL, "open bpf/ct_bench.bpf.o"))
		return false;
	skel->rodata->bench_len = opts.data_size_in;
	memcpy((void *)skel->rodata->bench_l2, frame, PKT_ETH_LEN);
	if (ASSERT_OK(ct_bench__load(skel), "load it on the instance's maps")) {
		int p = family == 4 ? 0 : 1, err;
		__u64 ins = stat_packets(XLB_STAT_CT_INSERT), start = coarse_ns();

		err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.xlb_new_flow),
					     &opts);
		fl->prog_span_ns[p] = coarse_ns() - start;
		fl->prog_inserted[p] = stat_packets(XLB_STAT_CT_INSERT) - ins;
		if (ASSERT_OK(err, "flood")) {
			fl->forwarded &= opts.retval == XDP_TX;
			ok = ASSERT_EQ(skel->bss->new_flow_seq, FLOOD / 2, "flood runs");
		}
	}
	ct_bench__destroy(skel);
	return ok;
}

/* Between the halves: the flood, then five backends added, so that
 * flows without an entry would move. */
static bool flood(void *arg)
{
	struct flood *fl = arg;
	__u64 ins = stat_packets(XLB_STAT_CT_INSERT);
	__u64 byp = stat_packets(XLB_STAT_CT_BYPASS);
	double start = now_s();

	cpu_set_t cpus;
	bool ok;

	fl->forwarded = true;
	if (!ASSERT_OK(xlb("config set ct-rate-limit %u", fl->rate_limit), "rate limit") ||
	    !pin_cpu(&cpus))
		return false;
	ok = flood_family(4, "192.0.2.1", fl) && flood_family(6, "2001:db8:f1::", fl);
	ASSERT_OK(sched_setaffinity(0, sizeof(cpus), &cpus), "unpin");
	if (!ok)
		return false;
	fl->seconds = now_s() - start;
	fl->inserted = stat_packets(XLB_STAT_CT_INSERT) - ins;
	fl->bypassed = stat_packets(XLB_STAT_CT_BYPASS) - byp;
	return ASSERT_OK(xlb("config set ct-rate-limit %u", NO_CAP), "rate limit") &&
	       add_backends((int[]){ N_BACKENDS + 1, N_BACKENDS + 5 });
}

/* Share of the established flows that kept their backend. */
static double flood_survival(const struct ttrace *t, struct flood *fl)
{
	struct model before = {}, after = {};
	size_t i, kept = 0;
	double share = -1;
	struct halves h = {};

	if (run_halves(t, N_BACKENDS, flood, fl, &before, &after, &h) &&
	    ASSERT_GT(h.established, 1000, "established flows")) {
		for (i = 0; i < t->n_flows; i++)
			kept += h.est[i] && h.second[i] == h.first[i];
		share = (double)kept / h.established;
	}
	halves_free(&h);
	model_free(&before);
	model_free(&after);
	return share;
}

/*
 * The cap is set low for this test: it must hold the flood far below the
 * table's size for as long as the flood lasts, a fraction of a second here
 * but seconds in an emulated VM. (The default, XLB_CT_RATE_LIMIT, suits
 * real traffic: docs/conntrack.md.)
 */
static void syn_flood_leaves_established_flows_in_place(void)
{
	struct flood capped = { .rate_limit = FLOOD_CAP };
	struct flood uncapped = { .rate_limit = NO_CAP };
	double with_cap, without_cap;
	int p;
	struct ttrace t;

	if (!setup() || !generated_trace(&t))
		return;
	with_cap = flood_survival(&t, &capped);
	printf("  %u-entry table, cap %u new entries per second per CPU: %llu of %u "
	       "flood SYNs recorded, %llu bypassed, in %.2f s; %.2f%% of the "
	       "established flows kept their backend\n", XLB_CT_DEFAULT_SIZE,
	       FLOOD_CAP, (unsigned long long)capped.inserted, FLOOD,
	       (unsigned long long)capped.bypassed, capped.seconds, 100 * with_cap);
	ASSERT_TRUE(capped.forwarded, "flood SYNs forwarded");
	ASSERT_EQ(capped.inserted + capped.bypassed, FLOOD, "flood SYNs recorded or bypassed");
	/* Two programs (one per family), each with windows of its own, on
	 * one CPU: each makes at least the cap (its first window fills, at
	 * tens of thousands of SYNs a second or more) and at most what its
	 * windows allow, flood_cap_bound(). */
	for (p = 0; p < 2; p++) {
		__u64 bound = flood_cap_bound(FLOOD_CAP, capped.prog_span_ns[p]);

		printf("  %s flood: %llu entries in %.3f s (bound %llu)\n", p ? "ipv6" : "ipv4",
		       (unsigned long long)capped.prog_inserted[p],
		       capped.prog_span_ns[p] / 1e9, (unsigned long long)bound);
		ASSERT_GE(capped.prog_inserted[p], FLOOD_CAP, "flood entries: a window full");
		ASSERT_LE(capped.prog_inserted[p], bound, "flood entries within the cap");
	}
	ASSERT_EQ(capped.prog_inserted[0] + capped.prog_inserted[1], capped.inserted,
		  "flood entries: all made by the two programs");
	ASSERT_DBL(with_cap, >=, 0.99, "established flows kept through the flood");

	/* Without the cap the flood fills the table and evicts them. */
	without_cap = flood_survival(&t, &uncapped);
	printf("  without the cap: %llu flood SYNs recorded; %.2f%% of the established "
	       "flows kept their backend\n", (unsigned long long)uncapped.inserted,
	       100 * without_cap);
	ASSERT_EQ(uncapped.inserted, FLOOD, "flood SYNs recorded without the cap");
	ASSERT_DBL(without_cap, <, 0.99, "established flows kept without the cap");
	ASSERT_OK(xlb_ct_flush(inst.maps.conntrack), "empty the connection table");
	trace_unload(&t);
}

/* ------------------------------------------------------------------ */
/* Timeouts, ICMP errors                                                */

/* A flow of proto (to the IPv4 VIP) that the table gives to backend b. */
static bool flow_on(const struct model *m, __u8 proto, int b, __u16 from,
		    struct tflow *f)
{
	__u16 port;

	for (port = from; port < from + 5000; port++) {
		*f = (struct tflow){ .tuple = { .family = XLB_AF_INET, .proto = proto,
						.sport = htons(port),
						.dport = htons(proto == IPPROTO_UDP ? 53 : 80) } };
		inet_pton(AF_INET, "198.51.100.77", f->tuple.src);
		inet_pton(AF_INET, REPLAY_VIP4, f->tuple.dst);
		strcpy(f->src, "198.51.100.77");
		f->vip = vip_of(XLB_AF_INET, proto);
		if (model_pick(m, f) == b)
			return true;
	}
	return ASSERT_TRUE(false, "a flow on the backend");
}

static void udp_and_closed_tcp_entries_expire(void)
{
	struct tflow udp, fin, rst, tcp;
	struct model m = {}, drained = {};
	/* Short timeouts; under emulation (the vmtest VM) an xlb command
	 * alone can take a second, so there they are longer. */
	int b = 3, timeout = getenv("VMTEST") ? 8 : 1;
	__u64 held[MAX_BACKENDS];

	if (!setup() || !configure(N_BACKENDS, NO_CAP) || !model_read(&m) ||
	    !ASSERT_OK(xlb("config set udp-timeout %d tcp-closing-timeout %d",
			   timeout, timeout), "short timeouts"))
		return;
	if (!flow_on(&m, IPPROTO_UDP, b, 20000, &udp) ||
	    !flow_on(&m, IPPROTO_TCP, b, 30000, &fin) ||
	    !flow_on(&m, IPPROTO_TCP, b, ntohs(fin.tuple.sport) + 1, &rst) ||
	    !flow_on(&m, IPPROTO_TCP, b, ntohs(rst.tuple.sport) + 1, &tcp))
		goto out;
	ASSERT_EQ(run_flow(&udp, 0), b, "udp");
	ASSERT_EQ(run_flow(&fin, PKT_TCP_SYN), b, "syn");
	ASSERT_EQ(run_flow(&fin, PKT_TCP_ACK | 0x01), b, "fin");
	ASSERT_EQ(run_flow(&rst, PKT_TCP_ACK), b, "ack");
	ASSERT_EQ(run_flow(&rst, 0x04), b, "rst");
	ASSERT_EQ(run_flow(&tcp, PKT_TCP_ACK), b, "tcp mid-stream");
	if (!drain_backend(&b) || !model_read(&drained))
		goto out;
	/* Within the timeouts, all four still reach the draining backend;
	 * the FIN's last ACK does not make the entry long-lived again. */
	ASSERT_EQ(run_flow(&udp, 0), b, "udp after the drain");
	ASSERT_EQ(run_flow(&fin, PKT_TCP_ACK), b, "last ack after the drain");
	ASSERT_EQ(run_flow(&rst, PKT_TCP_ACK), b, "ack after rst, after the drain");
	ASSERT_EQ(run_flow(&tcp, PKT_TCP_ACK), b, "tcp after the drain");
	if (!show_flows(held) || !ASSERT_EQ(held[b], 4, "flows held before the timeout"))
		goto out;

	/* The coarse clock moves in jiffies: half a second more is past. */
	usleep((timeout * 1000 + 500) * 1000);
	ASSERT_TRUE(show_flows(held) && held[b] == 1, "flows held after the timeout: the open TCP one");
	ASSERT_EQ(run_flow(&udp, 0), model_pick(&drained, &udp), "udp after its timeout: the table's");
	ASSERT_EQ(run_flow(&fin, PKT_TCP_ACK), model_pick(&drained, &fin),
		  "tcp after fin and its timeout: the table's");
	ASSERT_EQ(run_flow(&rst, PKT_TCP_ACK), model_pick(&drained, &rst),
		  "tcp after rst and its timeout: the table's");
	ASSERT_EQ(run_flow(&tcp, PKT_TCP_ACK), b, "open tcp after the same time: still its backend");
	ASSERT_NE(model_pick(&drained, &udp), b, "the table no longer names the drained backend");
out:
	model_free(&m);
	model_free(&drained);
}

/* An ICMP error quoting the VIP's reply to flow f. */
static int run_icmp_error(const struct tflow *f)
{
	__u8 quote[PKT_MAX];
	struct pkt_desc q = { .family = 4, .src = REPLAY_VIP4, .dst = f->src,
			      .proto = f->tuple.proto, .sport = ntohs(f->tuple.dport),
			      .dport = ntohs(f->tuple.sport) };
	struct pkt_desc d = { .family = 4, .src = "198.51.100.254", .dst = REPLAY_VIP4,
			      .proto = IPPROTO_ICMP, .icmp_type = 3, .icmp_code = 4,
			      .icmp_rest = 1400, .quote = quote };

	d.quote_len = pkt_build_ip(&q, quote);
	return run_frame(&d);
}

static void icmp_errors_reach_a_draining_backend_and_record_nothing(void)
{
	struct model m = {}, drained = {};
	struct tflow est, other;
	__u64 inserts;
	int b = 4;

	if (!setup() || !configure(N_BACKENDS, NO_CAP) || !model_read(&m))
		goto out;
	if (!flow_on(&m, IPPROTO_TCP, b, 40000, &est) ||
	    !flow_on(&m, IPPROTO_TCP, b, ntohs(est.tuple.sport) + 1, &other))
		goto out;
	ASSERT_EQ(run_flow(&est, PKT_TCP_SYN), b, "syn");
	if (!drain_backend(&b) || !model_read(&drained))
		goto out;
	inserts = stat_packets(XLB_STAT_CT_INSERT);
	ASSERT_EQ(run_icmp_error(&est), b, "fragmentation needed: to the flow's draining backend");
	ASSERT_EQ(run_icmp_error(&other), model_pick(&drained, &other),
		  "about a flow without an entry: the table's backend");
	ASSERT_EQ(stat_packets(XLB_STAT_CT_INSERT), inserts, "entries made for ICMP errors");
	/* other has no entry: its first own packet follows the table. */
	ASSERT_EQ(run_flow(&other, PKT_TCP_ACK), model_pick(&drained, &other),
		  "the flow an ICMP error was about");
out:
	model_free(&m);
	model_free(&drained);
}

/* ------------------------------------------------------------------ */
/* A backend id reused                                                  */

/* The id of backend index b's record under VIP v (0: none). */
static __u32 record_id(const struct model *m, int v, int b)
{
	__u32 id;

	for (id = 1; id < XLB_MAX_BACKENDS; id++)
		if ((m->be[id].flags & XLB_BE_F_IN_USE) && m->be[id].vip_id == m->vip_id[v] &&
		    backend_index(m->be[id].addr, m->be[id].family) == b)
			return id;
	return 0;
}

#define REUSE_FLOWS	16

/*
 * Entries name a backend by its id, which the loader hands to the next
 * backend once the old one is deleted (the lowest free id). The entry
 * also keeps the backend's generation, and a record of another
 * generation does not take the entry's flow (include/ct_entry.h,
 * docs/conntrack.md): flows established on a removed backend go where the
 * new table sends them, never to the backend that reuses the id just
 * because the id matches; and `xlb show` counts none of them for it.
 */
/* REUSE_FLOWS TCP flows of the IPv4 VIP that m's table sends to backend
 * b, from source port from up, established there (SYN, then ACK). */
static bool establish_on(const struct model *m, int b, __u16 from,
			 struct tflow *f)
{
	int i;

	for (i = 0; i < REUSE_FLOWS; i++) {
		if (!flow_on(m, IPPROTO_TCP, b, from, &f[i]))
			return false;
		from = ntohs(f[i].tuple.sport) + 1;
		ASSERT_EQ(run_flow(&f[i], PKT_TCP_SYN), b, "syn");
		ASSERT_EQ(run_flow(&f[i], PKT_TCP_ACK), b, "ack");
	}
	return true;
}

static void a_reused_backend_id_does_not_inherit_the_flows_of_its_last_user(void)
{
	struct model m = {}, after = {};
	struct tflow f[REUSE_FLOWS];
	int b = 2, fresh = N_BACKENDS + 1, i, other = 0, astray = 0, got;
	__u64 held[MAX_BACKENDS];
	__u32 id, id2;

	if (!setup())
		return;
	if (!configure(N_BACKENDS, NO_CAP) || !model_read(&m))
		goto out;
	id = record_id(&m, 0, b);
	if (!ASSERT_NE(id, 0, "the backend's record"))
		goto out;
	if (!establish_on(&m, b, 50000, f) || !show_flows(held) || !ASSERT_EQ(held[b], REUSE_FLOWS, "flows held by the backend"))
		goto out;

	/* b leaves the VIP; a backend of another address, of the same
	 * family and VIP, takes its id. */
	if (!ASSERT_OK(xlb("backend del %s " BE_PREFIX "%x", vip_names[0], b), "backend del") ||
	    !ASSERT_OK(xlb("backend add %s " BE_PREFIX "%x", vip_names[0], fresh), "backend add") ||
	    !model_read(&after))
		goto out;
	id2 = record_id(&after, 0, fresh);
	if (!ASSERT_EQ(id2, id, "the new backend reuses the removed one's id") ||
	    !ASSERT_EQ(after.be[id].family, m.be[id].family, "of the same family") ||
	    !ASSERT_NE(after.be[id].gen, m.be[id].gen, "of another generation"))
		goto out;
	ASSERT_EQ(record_id(&after, 0, b), 0, "the removed backend has no record");

	/* Before any packet: the entries are not the new backend's. */
	if (show_flows(held))
		ASSERT_EQ(held[fresh], 0, "flows xlb show counts for the reusing backend");

	/* Each flow goes where the new table sends it: to the new backend
	 * only if the table says so. */
	for (i = 0; i < REUSE_FLOWS; i++) {
		int want = model_pick(&after, &f[i]);

		got = run_flow(&f[i], PKT_TCP_ACK);
		other += want != fresh;
		if (got != want && astray++ < 3)
			printf("  flow from port %u: sent to backend %d, the table names %d\n",
			       ntohs(f[i].tuple.sport), got, want);
		ASSERT_EQ(run_flow(&f[i], PKT_TCP_ACK), want, "and stays there");
	}
	ASSERT_EQ(astray, 0, "flows of the removed backend not where the new table sends them");
	/* Else the case proves nothing: pick other flows or backends. */
	ASSERT_GT(other, 0, "flows the new table sends elsewhere than the reusing backend");
	printf("  %d flows on the removed backend, %d of them sent elsewhere than the "
	       "backend that reuses its id\n", REUSE_FLOWS, other);
out:
	ASSERT_OK(xlb_ct_flush(inst.maps.conntrack), "empty the connection table");
	model_free(&m);
	model_free(&after);
}

/* ------------------------------------------------------------------ */
/* Health                                                               */

/* Flag backend record id down (evict: and evicted) or up, as the health
 * checker does. */
static bool set_health(__u32 id, bool down, bool evict)
{
	struct xlb_instance_opts o = { .pin_dir = pinned_dir };
	struct xlb_instance in;
	struct xlb_state *st;
	int err;

	if (!ASSERT_OK(xlb_update_open(&in, &o, &st, false), "instance opened"))
		return false;
	err = xlb_backend_set_health(&in, st, id, down, evict);
	xlb_update_close(&in, st);
	return ASSERT_OK(err, "health set");
}

/*
 * A backend found down leaves the table; its tracked connections stay
 * with it (on-down keep, as a drain) until it is evicted (on-down reset):
 * then each goes where the table says now, and stays there.
 */
static void a_down_backend_keeps_its_flows_until_evicted(void)
{
	struct model m = {}, after = {};
	struct tflow f[REUSE_FLOWS];
	int b = 3, i, astray = 0, want, got;
	__u32 id = 0;

	if (!setup())
		return;
	if (!configure(N_BACKENDS, NO_CAP) || !model_read(&m))
		goto out;
	id = record_id(&m, 0, b);
	if (!ASSERT_NE(id, 0, "the backend's record"))
		goto out;
	if (!establish_on(&m, b, 40000, f) || !set_health(id, true, false) ||
	    !model_read(&after))
		goto out;
	for (i = 0; i < REUSE_FLOWS; i++) {
		ASSERT_NE(model_pick(&after, &f[i]), b, "the table names it no more");
		got = run_flow(&f[i], PKT_TCP_ACK);
		if (got != b && astray++ < 3)
			printf("  flow from port %u: sent to backend %d, not its own %d\n",
			       ntohs(f[i].tuple.sport), got, b);
	}
	ASSERT_EQ(astray, 0, "tracked flows of a down backend (keep) sent elsewhere");

	if (!set_health(id, true, true))
		goto out;
	for (i = 0; i < REUSE_FLOWS; i++) {
		want = model_pick(&after, &f[i]);
		got = run_flow(&f[i], PKT_TCP_ACK);
		if (got != want && astray++ < 3)
			printf("  flow from port %u: sent to backend %d, the table names %d\n",
			       ntohs(f[i].tuple.sport), got, want);
		ASSERT_EQ(run_flow(&f[i], PKT_TCP_ACK), want, "and stays there");
	}
	ASSERT_EQ(astray, 0, "flows of an evicted backend not where the table sends them");
out:
	/* configure() keeps what the checker found: undo it. */
	if (id)
		set_health(id, false, false);
	ASSERT_OK(xlb_ct_flush(inst.maps.conntrack), "empty the connection table");
	model_free(&m);
	model_free(&after);
}

/* ------------------------------------------------------------------ */
/* A full set                                                           */

/* The flow's way in its set (xlb_ct_find()), or a negative errno. */
static int way_of(__u32 seed, const struct tflow *f)
{
	struct xlb_ct_entry e;

	return xlb_ct_find(inst.maps.conntrack, seed, &f->tuple, &e);
}

/* Has the flow an entry in the connection table? */
static bool has_entry(__u32 seed, const struct tflow *f)
{
	return way_of(seed, f) >= 0;
}

/*
 * n TCP flows to the IPv4 VIP whose entries all belong in one set: sources
 * in 198.51.100.0/24 and ports searched, with the table's own set hash.
 */
static bool flows_of_one_set(__u32 seed, __u32 mask, struct tflow *f, int n)
{
	__u32 set = 0, a, port;
	int found = 0;

	for (a = 1; a < 255 && found < n; a++)
		for (port = 1024; port < 65536 && found < n; port++) {
			struct tflow *t = &f[found];

			*t = (struct tflow){ .tuple = { .family = XLB_AF_INET,
							.proto = IPPROTO_TCP,
							.sport = htons(port),
							.dport = htons(80) } };
			snprintf(t->src, sizeof(t->src), "198.51.100.%u", a);
			inet_pton(AF_INET, t->src, t->tuple.src);
			inet_pton(AF_INET, REPLAY_VIP4, t->tuple.dst);
			t->vip = vip_of(XLB_AF_INET, IPPROTO_TCP);
			if (!found)
				set = xlb_ct_set_of(&t->tuple, seed, mask);
			if (xlb_ct_set_of(&t->tuple, seed, mask) == set)
				found++;
		}
	return ASSERT_EQ(found, n, "flows of one set");
}

/*
 * A set holds XLB_CT_WAYS entries. A new flow whose set is full takes the
 * slot of a flow seen once rather than one of an established flow (a later
 * packet hit its entry), and the eviction is counted; established entries
 * give way only when a set holds nothing else.
 */
static void a_full_set_gives_up_one_packet_entries_first(void)
{
	struct tflow f[XLB_CT_WAYS + 3];
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), zero = 0;
	struct xlb_config cfg;
	__u64 evicted;
	int i, kept;

	if (!setup() || !configure(N_BACKENDS, NO_CAP) ||
	    !ASSERT_OK(bpf_map_lookup_elem(inst.maps.config, &zero, &cfg), "config") ||
	    !ASSERT_OK(bpf_obj_get_info_by_fd(inst.maps.conntrack, &info, &len), "table") ||
	    !ASSERT_NE(cfg.ct_seed, 0, "the table's seed is set") ||
	    !flows_of_one_set(cfg.ct_seed, info.max_entries - 1, f, XLB_CT_WAYS + 3))
		return;
	evicted = stat_packets(XLB_STAT_CT_EVICT);

	/* Two established flows (two packets each), the rest of the set
	 * flows seen once. */
	for (i = 0; i < XLB_CT_WAYS; i++)
		ASSERT_GE(run_flow(&f[i], PKT_TCP_ACK), 0, "a flow of the full set");
	for (i = 0; i < 2; i++)
		ASSERT_GE(run_flow(&f[i], PKT_TCP_ACK), 0, "an established flow's packet");
	for (i = 0; i < XLB_CT_WAYS; i++)
		ASSERT_TRUE(has_entry(cfg.ct_seed, &f[i]), "each flow of the set has an entry");
	ASSERT_EQ(stat_packets(XLB_STAT_CT_EVICT), evicted, "nothing evicted while the set had room");

	/* Each new flow takes a one-packet flow's slot. */
	for (i = XLB_CT_WAYS; i < XLB_CT_WAYS + 2; i++) {
		ASSERT_GE(run_flow(&f[i], PKT_TCP_ACK), 0, "a new flow of the full set");
		ASSERT_TRUE(has_entry(cfg.ct_seed, &f[i]), "the new flow has an entry");
		ASSERT_TRUE(has_entry(cfg.ct_seed, &f[0]) && has_entry(cfg.ct_seed, &f[1]),
			    "the established flows keep theirs");
	}
	ASSERT_EQ(stat_packets(XLB_STAT_CT_EVICT) - evicted, 2, "evictions counted");
	for (kept = 0, i = 2; i < XLB_CT_WAYS + 2; i++)
		kept += has_entry(cfg.ct_seed, &f[i]);
	ASSERT_EQ(kept, XLB_CT_WAYS - 2, "one-packet entries left in the set");

	/* With only established entries left, the longest idle gives way. */
	for (i = 2; i < XLB_CT_WAYS + 2; i++)
		if (has_entry(cfg.ct_seed, &f[i]))
			ASSERT_GE(run_flow(&f[i], PKT_TCP_ACK), 0, "establish the rest");
	ASSERT_GE(run_flow(&f[XLB_CT_WAYS + 2], PKT_TCP_ACK), 0, "one more new flow");
	ASSERT_TRUE(has_entry(cfg.ct_seed, &f[XLB_CT_WAYS + 2]), "it has an entry");
	for (kept = 0, i = 0; i < XLB_CT_WAYS + 2; i++)
		kept += has_entry(cfg.ct_seed, &f[i]);
	ASSERT_EQ(kept, XLB_CT_WAYS - 1, "one established entry gave way");
	ASSERT_EQ(stat_packets(XLB_STAT_CT_EVICT) - evicted, 3, "evictions counted");
	ASSERT_OK(xlb_ct_flush(inst.maps.conntrack), "empty the connection table");
}

/*
 * A lookup reads the slots of its set in order, a cache line each. A flow
 * that comes while its set is full of entries seen once lands behind some
 * of them; the packet that establishes it swaps it with the first of them,
 * so that its later packets read fewer slots. Each flow of the set keeps
 * its entry and its backend, nothing is recorded or evicted for it, and a
 * flow established earlier stays ahead.
 */
static void an_established_flow_moves_ahead_of_one_packet_entries(void)
{
	struct tflow f[XLB_CT_WAYS];
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), zero = 0;
	__u64 inserted, evicted;
	struct xlb_config cfg;
	int be[XLB_CT_WAYS], i, last = XLB_CT_WAYS - 1;
	bool ways[XLB_CT_WAYS] = {};

	if (!setup() || !configure(N_BACKENDS, NO_CAP) ||
	    !ASSERT_OK(bpf_map_lookup_elem(inst.maps.config, &zero, &cfg), "config") ||
	    !ASSERT_OK(bpf_obj_get_info_by_fd(inst.maps.conntrack, &info, &len), "table") ||
	    !flows_of_one_set(cfg.ct_seed, info.max_entries - 1, f, XLB_CT_WAYS))
		return;

	/* f[0] established, then the others seen once each, in order. */
	for (i = 0; i < XLB_CT_WAYS; i++) {
		be[i] = run_flow(&f[i], PKT_TCP_ACK);
		ASSERT_GE(be[i], 0, "a flow of the set is forwarded");
		if (!i)
			ASSERT_EQ(run_flow(&f[0], PKT_TCP_ACK), be[0], "f[0] established");
	}
	for (i = 0; i < XLB_CT_WAYS; i++)
		ASSERT_EQ(way_of(cfg.ct_seed, &f[i]), i, "entries in the order they came");
	inserted = stat_packets(XLB_STAT_CT_INSERT);
	evicted = stat_packets(XLB_STAT_CT_EVICT);

	/* The last one's second packet: it takes f[1]'s slot, f[1] its. */
	ASSERT_EQ(run_flow(&f[last], PKT_TCP_ACK), be[last], "same backend on the second packet");
	ASSERT_EQ(way_of(cfg.ct_seed, &f[last]), 1, "the established flow moved ahead");
	ASSERT_EQ(way_of(cfg.ct_seed, &f[1]), last, "the one it passed took its slot");
	ASSERT_EQ(way_of(cfg.ct_seed, &f[0]), 0, "the flow established earlier stayed first");

	/* Its later packets move nothing. */
	ASSERT_EQ(run_flow(&f[last], PKT_TCP_ACK), be[last], "same backend on a third packet");
	ASSERT_EQ(way_of(cfg.ct_seed, &f[last]), 1, "an established flow stays where it is");
	ASSERT_EQ(way_of(cfg.ct_seed, &f[1]), last, "and so does the rest of the set");

	/* Every flow, established now in turn, keeps its backend and its
	 * entry, each in a slot of its own. */
	for (i = 0; i < XLB_CT_WAYS; i++)
		ASSERT_EQ(run_flow(&f[i], PKT_TCP_ACK), be[i], "each flow keeps its backend");
	for (i = 0; i < XLB_CT_WAYS; i++) {
		int w = way_of(cfg.ct_seed, &f[i]);

		if (ASSERT_TRUE(w >= 0 && w < XLB_CT_WAYS && !ways[w], "an entry in a slot of its own"))
			ways[w] = true;
	}
	ASSERT_EQ(stat_packets(XLB_STAT_CT_INSERT), inserted, "no entry recorded anew");
	ASSERT_EQ(stat_packets(XLB_STAT_CT_EVICT), evicted, "none evicted");
	ASSERT_OK(xlb_ct_flush(inst.maps.conntrack), "empty the connection table");
}

TEST_MAIN(
	TEST(generated_trace_through_backend_changes),
	TEST(real_captures_through_backend_changes),
	TEST(syn_flood_leaves_established_flows_in_place),
	TEST(udp_and_closed_tcp_entries_expire),
	TEST(icmp_errors_reach_a_draining_backend_and_record_nothing),
	TEST(a_reused_backend_id_does_not_inherit_the_flows_of_its_last_user),
	TEST(a_down_backend_keeps_its_flows_until_evicted),
	TEST(a_full_set_gives_up_one_packet_entries_first),
	TEST(an_established_flow_moves_ahead_of_one_packet_entries),
)
