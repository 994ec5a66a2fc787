// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * ns per packet of the XDP datapath, run by BPF_PROG_TEST_RUN with repeat
 * in a private network namespace (tests/dp_fixture.h), against the MAC-swap
 * reflector as the baseline; and where the time goes, from variants of the
 * program that stop after each stage (bench/bpf/xlb_bench.bpf.c).
 *
 *   bench_datapath [--quick]    --quick: 100,000 repeats, one round
 *
 * With repeat, every run sees the previous run's output. Every program
 * measured here first restores the benchmark frame (the baseline too, so
 * the restore is in both figures); after each measurement the verdict and
 * the output bytes of the last run are checked against the model, so a
 * figure always belongs to the path it names. Figures are printed, never
 * asserted. Prints a markdown section; progress on stderr.
 *
 * Two kinds of TCP packet are timed: an ACK of an established flow, whose
 * entry is in the connection table (most packets a balancer forwards), and
 * a SYN, which opens a connection and goes by the VIP's table. And a SYN
 * flood from a prefix a VIP's source ranges deny, beside a SYN they let in
 * and one to the VIP without them.
 */
#include <pthread.h>
#include <unistd.h>
#include "bench_testrun.h"
#include "conntrack_map.h"
#include "history.h"
#include "ct_entry.h"
#include "xlb_bench.skel.h"
#include "stages.h"
#include "capture_rec.h"

#define TARGET_NS	25.0

enum frame_kind {
	FRAME_ACK4, FRAME_ACK6,		/* established flows: entry hits */
	FRAME_SYN4, FRAME_SYN6,		/* new connections */
	FRAME_OTHER,			/* for no VIP */
	FRAME_STL4,			/* FRAME_ACK4's, its VIP made stateless */
	/* To the SYN frames' VIPs given source ranges (src_lists): */
	FRAME_DENY4, FRAME_DENY6,	/* from the denied prefix */
	FRAME_ALLOW4, FRAME_ALLOW6,	/* FRAME_SYN4's and FRAME_SYN6's */
	FRAME__COUNT
};

struct frame {
	__u8 bytes[PKT_MAX];
	size_t len;
	__u32 vip;
	struct xlb_flow flow;
};

enum variant_kind { V_PLAIN, V_REFLECT, V_GROW, V_XLB, V_FIB };

struct variant {
	const char *name;
	enum variant_kind kind;
	enum frame_kind frame;
	__u32 stage;
	bool nocap;		/* built without the capture's check */
	bool cap_on;		/* a capture of every packet running */
	struct ring_buffer *ring;	/* cap_on: its reader's */
	struct dp_fixture *fx;
	struct xlb_bench *skel;
	double ns[BENCH_MAX_ROUNDS];
};

static struct frame frames[FRAME__COUNT];
static struct dp_fixture base_fx;	/* the namespace, and the model */
static char build_dir[256];

/* A TCP segment of a flow of vip whose backend has the given family. */
static int pick_frame(struct frame *f, __u32 vip, int family, int backend_family,
		      __u8 tcp_flags)
{
	f->vip = vip;
	f->len = bench_flow_frame(&base_fx, vip, family, backend_family, tcp_flags,
				  f->bytes, &f->flow);
	return f->len ? 0 : -EINVAL;
}

static bool frame_is_ack(enum frame_kind k)
{
	return k == FRAME_ACK4 || k == FRAME_ACK6;
}

/*
 * The connection-table entry an earlier packet of the flow would have
 * left, so that every run of an ACK variant, those that stop before the
 * entry would be made included, finds it.
 */
static int prime_entry(const struct variant *v)
{
	const struct frame *f = &frames[v->frame];
	struct xlb_ct_entry e = { 0 };
	struct xlb_config cfg;
	struct xlb_backend be;
	__u32 id, zero = 0;
	struct timespec ts;
	__u64 hash;

	id = dp_model_backend(&base_fx, f->vip, &f->flow, &hash);
	e.backend_id = id;
	e.hash = (__u32)hash;
	if (bpf_map__lookup_elem(v->skel->maps.xlb_backends, &id, sizeof(id),
				 &be, sizeof(be), 0) ||
	    bpf_map__lookup_elem(v->skel->maps.xlb_config, &zero, sizeof(zero),
				 &cfg, sizeof(cfg), 0))
		return -errno;
	e.gen = be.gen;
	/* The datapath's clock: bpf_ktime_get_coarse_ns(). */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	e.last_seen_ns = (__u64)ts.tv_sec * XLB_NS_PER_S + ts.tv_nsec;
	return xlb_ct_insert(bpf_map__fd(v->skel->maps.xlb_conntrack),
			     cfg.ct_seed, &f->flow, &e);
}

/* The previous owner every slot of the stateless variant names. */
#define STL_PREV	"203.0.113.250"

/*
 * The variant's VIP_RANDOM4 made stateless, as `xlb vip add --mode
 * stateless` makes a VIP: its backends GUE, its table with a history in
 * which every slot names a previous owner (so each packet reads one, the
 * dearer case), its bit in the VIP filter's stateless set.
 */
static int make_stateless(struct dp_fixture *fx)
{
	const struct dp_vip *v = &fx->vips[VIP_RANDOM4];
	struct xlb_vip_key key = { .port = htons(v->def->port),
				   .proto = v->def->proto, .family = XLB_AF_INET };
	struct xlb_vip vip = { .id = VIP_RANDOM4, .table_size = v->m,
			       .flags = XLB_VIP_F_GUE | XLB_VIP_F_STATELESS };
	struct xlb_hist_entry prev = { .family = XLB_AF_INET, .since = 1 };
	struct xlb_history h = { 0 };
	struct xlb_vip_filter *f;
	struct xlb_backend be;
	__u32 i, zero = 0, bit;
	int fd, err, filter_fd;

	pkt_addr(4, v->def->addr, (__u8 *)key.addr);
	for (i = 0; i < v->n_ids; i++) {
		if (bpf_map_lookup_elem(fx->maps.backends, &v->ids[i], &be))
			return -errno;
		be.flags |= XLB_BE_F_GUE;
		if (bpf_map_update_elem(fx->maps.backends, &v->ids[i], &be, BPF_ANY))
			return -errno;
	}
	err = xlb_history_init(&h, v->m);
	if (err)
		return err;
	pkt_addr(4, STL_PREV, (__u8 *)prev.addr);
	/* One entry, on the stack: handed back before the history is freed. */
	h.e = &prev;
	h.n = 1;
	for (i = 0; i < v->m; i++)
		h.slot[i] = 1;
	fd = xlb_table_create_hist(v->table, &h, v->m);
	h.e = NULL;
	h.n = 0;
	xlb_history_free(&h);
	if (fd < 0)
		return fd;
	err = xlb_table_install_fd(fx->maps.tables, VIP_RANDOM4, fd);
	close(fd);
	if (err)
		return err;
	err = xlb_obj_vip_write(&fx->maps, &key, &vip);
	if (err)
		return err;
	filter_fd = bpf_object__find_map_fd_by_name(fx->obj, XLB_MAP_VIP_FILTER);
	f = calloc(1, sizeof(*f));
	if (!f || filter_fd < 0 || bpf_map_lookup_elem(filter_fd, &zero, f)) {
		free(f);
		return -ENOENT;
	}
	bit = xlb_vip_key_bit(&key);
	f->stateless[bit / 64] |= 1ULL << (bit % 64);
	f->ready |= XLB_VIP_FILTER_STATELESS;
	err = bpf_map_update_elem(filter_fd, &zero, f, BPF_ANY) ? -errno : 0;
	free(f);
	return err;
}

/*
 * Source ranges, as `xlb vip set --allow ... --deny ...` writes them: an
 * allow list of a few prefixes, the accepted client's (bench_flow_frame())
 * among them, and the flood's prefix denied. A client of neither would be
 * turned away too (the allow list); the flood's matches a prefix of its own.
 */
static const struct src_lists {
	const char *allow[4];
	const char *deny;
	const char *flood;	/* the denied SYN's client */
} src_lists[2] = {
	{ { "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "203.0.113.0/24" },
	  "198.18.0.0/15", "198.18.0.7" },
	{ { "fd00::/8", "2001:db8:a::/48", "2001:db8:b::/48", "2001:db8:c::/48" },
	  "2001:db8:dead::/48", "2001:db8:dead::7" },
};

static bool frame_denied(enum frame_kind k)
{
	return k == FRAME_DENY4 || k == FRAME_DENY6;
}

static bool frame_ranged(enum frame_kind k)
{
	return frame_denied(k) || k == FRAME_ALLOW4 || k == FRAME_ALLOW6;
}

/* A SYN of the flood: from its client to vip's address and port. */
static int pick_flood_frame(struct frame *f, __u32 vip, int family)
{
	const struct dp_vip_def *d = base_fx.vips[vip].def;
	const char *client = src_lists[family == 6].flood;

	f->vip = vip;
	f->flow = dp_xlb_flow(&(struct dp_flow){ family, client, d->addr, 40000,
						 d->port, IPPROTO_TCP });
	f->len = pkt_build(&(struct pkt_desc){
		.family = family, .src = client, .dst = d->addr,
		.proto = IPPROTO_TCP, .sport = 40000, .dport = d->port,
		.tcp_flags = PKT_TCP_SYN }, f->bytes);
	return f->len ? 0 : -EINVAL;
}

/* One prefix "addr/len" of vip's lists, generation 0, into the trie. */
static int src_write(int fd, const struct xlb_vip_key *vip, int family,
		     const char *prefix, __u32 deny)
{
	struct xlb_src_value val = { .deny = deny };
	struct xlb_src_key k = { .vip = *vip };
	char net[INET6_ADDRSTRLEN];
	const char *slash = strchr(prefix, '/');
	__u8 *a = (__u8 *)k.addr;
	int len, i;

	snprintf(net, sizeof(net), "%.*s", (int)(slash - prefix), prefix);
	len = atoi(slash + 1);
	if (!pkt_addr(family, net, a))
		return -EINVAL;
	for (i = len; i < 128; i++)	/* no bit set past the length */
		a[i / 8] &= ~(0x80 >> (i % 8));
	k.prefixlen = XLB_SRC_KEY_BITS + len;
	return bpf_map_update_elem(fd, &k, &val, BPF_NOEXIST) ? -errno : 0;
}

/*
 * The frame's VIP given src_lists, as xlb_vip_src_set() leaves a VIP: the
 * entries under generation 0, the VIP's bit in xlb_vip_ranged and its
 * switch on, and the record's flags (lists, default deny: an allow list;
 * generation 0).
 */
static int make_ranged(struct variant *v)
{
	const struct frame *fr = &frames[v->frame];
	const struct dp_vip_def *d = base_fx.vips[fr->vip].def;
	const struct src_lists *l = &src_lists[d->family == 6];
	struct xlb_vip_key key = { .port = htons(d->port), .proto = d->proto,
				   .family = d->family == 4 ? XLB_AF_INET : XLB_AF_INET6 };
	int trie = bpf_map__fd(v->skel->maps.xlb_src_ranges);
	int ranged_fd = bpf_map__fd(v->skel->maps.xlb_vip_ranged);
	struct xlb_vip_ranged ranged;
	struct xlb_vip vip;
	__u32 zero = 0, bit, i;
	int err = 0;

	pkt_addr(d->family, d->addr, (__u8 *)key.addr);
	for (i = 0; i < 4 && !err; i++)
		err = src_write(trie, &key, d->family, l->allow[i], 0);
	err = err ?: src_write(trie, &key, d->family, l->deny, 1);
	if (err)
		return err;
	bit = xlb_vip_key_bit(&key);
	if (bpf_map_lookup_elem(ranged_fd, &zero, &ranged))
		return -errno;
	ranged.on = 1;
	ranged.bits[bit / 64] |= 1ULL << (bit % 64);
	if (bpf_map_update_elem(ranged_fd, &zero, &ranged, BPF_ANY))
		return -errno;
	if (bpf_map_lookup_elem(v->fx->maps.vips, &key, &vip))
		return -errno;
	vip.flags = (vip.flags & ~XLB_VIP_F_SRC) | XLB_VIP_F_SRC_LIST | XLB_VIP_F_SRC_DENY;
	return xlb_obj_vip_write(&v->fx->maps, &key, &vip);
}

/*
 * What the datapath counted of a variant of a ranged VIP after runs
 * packets: every one drop_src_denied, for its VIP too (a denied client's),
 * or every one forwarded and none denied.
 */
static int check_src_counted(const struct variant *v, __u64 runs)
{
	const struct frame *f = &frames[v->frame];
	int stats = bpf_map__fd(v->skel->maps.xlb_stats);
	__u64 denied = dp_counter(stats, XLB_STAT_DROP_SRC_DENIED).packets;
	__u64 fwd = dp_counter(stats, XLB_STAT_FORWARD).packets;
	__u64 vip = dp_counter(bpf_map__fd(v->skel->maps.xlb_vip_denied), f->vip).packets;
	bool ok = frame_denied(v->frame) ? denied == runs && vip == runs && !fwd :
					   !denied && !vip && fwd == runs;

	if (!ok)
		fprintf(stderr, "bench_datapath: %s: of %llu packets, %llu counted "
			"drop_src_denied (%llu for the VIP), %llu forwarded\n", v->name,
			(unsigned long long)runs, (unsigned long long)denied,
			(unsigned long long)vip, (unsigned long long)fwd);
	return ok ? 0 : -EINVAL;
}

/* bench/bpf/reflector.bpf.c as it is: the reference without the restore. */
static int load_plain(struct variant *v)
{
	char path[512];
	int err;

	snprintf(path, sizeof(path), "%s/reflector.bpf.o", build_dir);
	err = xlb_sandbox_load(path, &v->fx->obj);
	if (err)
		return err;
	v->fx->prog_fd = bpf_program__fd(bpf_object__find_program_by_name(v->fx->obj,
									   "xdp_reflect"));
	return v->fx->prog_fd < 0 ? -ENOENT : 0;
}

static int drain(void *ctx, void *data, size_t size)
{
	(void)ctx;
	(void)data;
	(void)size;
	return 0;
}

/* A capture of every packet, as `xlb capture` with no filter runs it: the
 * switch on for good, and a reader (capture_reader()) draining the ring. */
static int capture_on(struct variant *v)
{
	struct xlb_capture_cfg cfg = { .backend_id = XLB_CAPTURE_ANY };
	__u32 zero = 0;

	if (bpf_map__update_elem(v->skel->maps.xlb_capture_cfg, &zero, sizeof(zero),
				 &cfg, sizeof(cfg), BPF_ANY))
		return -errno;
	v->skel->bss->xlb_capture_until = ~0ULL;
	v->ring = ring_buffer__new(bpf_map__fd(v->skel->maps.xlb_capture_ring), drain,
				   NULL, NULL);
	return v->ring ? 0 : -errno;
}

static struct variant vs[64];
static int n_vs, rounds;
static volatile bool readers_stop;

/* The capture's reader, on its own thread as `xlb capture` would be. */
static void *capture_reader(void *arg)
{
	int i;

	(void)arg;
	while (!readers_stop)
		for (i = 0; i < n_vs; i++)
			if (vs[i].ring)
				ring_buffer__poll(vs[i].ring, 1);
	return NULL;
}

/* What the datapath counted of a capturing variant: captured, lost. */
static void capture_counted(const struct variant *v, __u64 *captured, __u64 *lost)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	struct xlb_capture_stats per[ncpu];
	__u32 zero = 0;

	*captured = *lost = 0;
	if (bpf_map__lookup_elem(v->skel->maps.xlb_capture_stats, &zero, sizeof(zero),
				 per, sizeof(per[0]) * ncpu, 0))
		return;
	for (i = 0; i < ncpu; i++) {
		*captured += per[i].captured;
		*lost += per[i].lost;
	}
}

static int load_variant(struct variant *v)
{
	const struct frame *f = &frames[v->frame];
	static const char *const progs[] = {
		[V_REFLECT] = "reflect_bench", [V_GROW] = "grow_bench",
		[V_XLB] = "xlb_bench", [V_FIB] = "fib_bench",
	};
	struct bpf_map *map;
	__u64 hash;
	int err;

	v->fx = calloc(1, sizeof(*v->fx));
	if (!v->fx)
		return -ENOMEM;
	v->fx->env = base_fx.env;
	if (v->kind == V_PLAIN)
		return load_plain(v);
	v->skel = xlb_bench__open();
	if (!v->skel)
		return -ENOMEM;
	v->skel->rodata->bench_stage = v->stage;
	v->skel->rodata->bench_capture = !v->nocap;
	v->skel->rodata->bench_len = f->len;
	memcpy((void *)v->skel->rodata->bench_l2, f->bytes, PKT_ETH_LEN);
	v->skel->rodata->bench_backend = dp_model_backend(&base_fx, f->vip, &f->flow, &hash);
	bpf_object__for_each_map(map, v->skel->obj)
		bpf_map__set_pin_path(map, NULL);
	err = xlb_bench__load(v->skel);
	if (err) {
		fprintf(stderr, "bench_datapath: loading %s: %s\n", v->name, strerror(-err));
		return err;
	}
	err = dp_fixture_use(v->fx, v->skel->obj, progs[v->kind]);
	if (!err && v->kind == V_XLB && frame_is_ack(v->frame))
		err = prime_entry(v);
	if (!err && v->frame == FRAME_STL4)
		err = make_stateless(v->fx);
	if (!err && frame_ranged(v->frame))
		err = make_ranged(v);
	if (!err && v->cap_on)
		err = capture_on(v);
	return err;
}

/* One measurement: CPU time of `repeat` runs, per run. */
static int measure(struct variant *v, __u32 repeat, double *ns, __u8 *out,
		   __u32 *out_len, __u32 *retval)
{
	const struct frame *f = &frames[v->frame];

	return bench_measure(v->fx->prog_fd, v->fx->env.ifindex, f->bytes, f->len,
			     repeat, ns, out, out_len, retval);
}

/*
 * A stateless VIP's packet: sent back out, in IPv4, UDP and GUE, to the
 * backend the model's table names, with the history's previous owner in
 * the GUE header and the frame whole behind them.
 */
static int check_stateless(const struct frame *f, const __u8 *out,
			   __u32 out_len, __u32 retval)
{
	const size_t outer = PKT_ETH_LEN + 20 + PKT_GUE_OVERHEAD;
	const struct dp_backend *b;
	__u8 prev[4];
	__u64 hash;

	b = &base_fx.backends[dp_model_backend(&base_fx, f->vip, &f->flow, &hash)];
	pkt_addr(4, STL_PREV, prev);
	if (retval != XDP_TX || out_len != f->len + outer - PKT_ETH_LEN ||
	    out[PKT_ETH_LEN + 9] != IPPROTO_UDP ||
	    memcmp(out + PKT_ETH_LEN + 16, b->bin, 4) ||
	    !memmem(out + PKT_ETH_LEN + 28, PKT_GUE_OVERHEAD - 8, prev, 4) ||
	    memcmp(out + outer, f->bytes + PKT_ETH_LEN, f->len - PKT_ETH_LEN)) {
		fprintf(stderr, "bench_datapath: stateless VIP: verdict %u, %u bytes: "
			"not GUE to backend %s naming the previous owner\n",
			retval, out_len, b->addr);
		return -EINVAL;
	}
	return 0;
}

/* The last run's verdict and bytes are those of the path the variant names. */
static int check_output(const struct variant *v, const __u8 *out, __u32 out_len,
			__u32 retval)
{
	const struct frame *f = &frames[v->frame];
	__u8 want[PKT_MAX];
	size_t want_len = f->len;
	int want_verdict = XDP_TX;
	__u32 be;

	memcpy(want, f->bytes, f->len);
	if (v->kind == V_PLAIN) {
		/* Swapped an even number of times: as it came. */
		return retval == XDP_TX && out_len == f->len ? 0 : -EINVAL;
	} else if (v->kind == V_REFLECT) {
		memcpy(want, f->bytes + 6, 6);
		memcpy(want + 6, f->bytes, 6);
	} else if (v->kind == V_GROW) {
		/* The swapped frame behind an outer header's worth of bytes. */
		memcpy(want + XLB_BENCH_GROW_LEN, f->bytes + 6, 6);
		memcpy(want + XLB_BENCH_GROW_LEN + 6, f->bytes, 6);
		memcpy(want + XLB_BENCH_GROW_LEN + 12, f->bytes + 12, f->len - 12);
		memcpy(want, out, XLB_BENCH_GROW_LEN);
		want_len = f->len + XLB_BENCH_GROW_LEN;
	} else if (v->kind == V_XLB && v->stage == XLB_STAGE_ENCAP &&
		   v->frame == FRAME_STL4) {
		return check_stateless(f, out, out_len, retval);
	} else if (v->kind == V_XLB && v->stage == XLB_STAGE_ENCAP) {
		if (v->frame == FRAME_OTHER)
			want_verdict = XDP_PASS;
		else if (frame_denied(v->frame))
			/* Dropped as it came. */
			want_verdict = XDP_DROP;
		else
			want_len = dp_model_forward(&base_fx, f->vip, &f->flow,
						    f->bytes + PKT_ETH_LEN,
						    f->len - PKT_ETH_LEN, want,
						    &want_verdict, &be);
	}
	if ((int)retval != want_verdict || out_len != want_len ||
	    memcmp(out, want, want_len)) {
		fprintf(stderr, "bench_datapath: %s: verdict %u, %u bytes: not the "
			"path measured (expected verdict %d, %zu bytes)\n",
			v->name, retval, out_len, want_verdict, want_len);
		return -EINVAL;
	}
	return 0;
}

static void add(struct variant *vs, int *n, const char *name, enum variant_kind kind,
		enum frame_kind frame, __u32 stage)
{
	vs[*n] = (struct variant){ .name = name, .kind = kind, .frame = frame,
				   .stage = stage };
	(*n)++;
}

static const char *const stage_names[] = {
	[XLB_STAGE_PARSE] = "parse, count (the exit's counters)",
	[XLB_STAGE_CONNTRACK] = "config, clock, connection table lookup",
	[XLB_STAGE_VIP] = "VIP lookup",
	[XLB_STAGE_HASH] = "flow hash (SipHash-1-3)",
	[XLB_STAGE_TABLE] = "table index, backend record, new entry",
	[XLB_STAGE_NEXTHOP] = "next hop (per-CPU FIB cache hit)",
	[XLB_STAGE_ENCAP] = "encapsulation, verdict",
};

/* The stages an ACK of an established flow goes through: a hit skips the
 * VIP lookup, the hash and the table. */
static bool ack_stage(__u32 stage)
{
	return stage != XLB_STAGE_VIP && stage != XLB_STAGE_HASH &&
	       stage != XLB_STAGE_TABLE;
}

/* The stages of a stateless VIP's packet: no connection table. */
static bool stateless_stage(__u32 stage)
{
	return stage != XLB_STAGE_CONNTRACK;
}

/* The median of the variant of this kind, frame and stage (with the
 * capture's check). */
static double median_of(enum variant_kind kind, enum frame_kind frame, __u32 stage)
{
	int i;

	for (i = 0; i < n_vs; i++)
		if (vs[i].kind == kind && vs[i].frame == frame && vs[i].stage == stage &&
		    !vs[i].nocap && !vs[i].cap_on)
			return bench_median(vs[i].ns, rounds);
	return 0;
}

/* The breakdown table of a pair of frames (IPv4, IPv6): a row per stage. */
static void print_stages(enum frame_kind f4, enum frame_kind f6, double base4,
			 double base6, bool ack)
{
	double prev4 = base4, prev6 = base6;
	__u32 i;

	printf("| after stage | IPv4 ns | IPv4 stage | IPv6 ns | IPv6 stage |\n");
	printf("| --- | ---: | ---: | ---: | ---: |\n");
	printf("| baseline | %.1f | | %.1f | |\n", base4, base6);
	for (i = 0; i < XLB_STAGE__COUNT; i++) {
		double c4, c6;

		if (ack && !ack_stage(i))
			continue;
		c4 = median_of(V_XLB, f4, i);
		c6 = median_of(V_XLB, f6, i);
		printf("| %s | %.1f | %+.1f | %.1f | %+.1f |\n", stage_names[i],
		       c4, c4 - prev4, c6, c6 - prev6);
		prev4 = c4;
		prev6 = c6;
	}
	printf("\n");
}

/* The stages of a stateless VIP's packet, IPv4. */
static void print_stateless_stages(double base4)
{
	static const char *const names[] = {
		[XLB_STAGE_PARSE] = "parse, count (the exit's counters)",
		[XLB_STAGE_VIP] = "config, clock, VIP lookup",
		[XLB_STAGE_HASH] = "flow hash (SipHash-1-3)",
		[XLB_STAGE_TABLE] = "table index and previous owner, backend record",
		[XLB_STAGE_NEXTHOP] = "next hop (per-CPU FIB cache hit)",
		[XLB_STAGE_ENCAP] = "GUE encapsulation, verdict",
	};
	double prev = base4, c;
	__u32 i;

	printf("| after stage | IPv4 ns | IPv4 stage |\n");
	printf("| --- | ---: | ---: |\n");
	printf("| baseline | %.1f | |\n", base4);
	for (i = 0; i < XLB_STAGE__COUNT; i++) {
		if (!stateless_stage(i))
			continue;
		c = median_of(V_XLB, FRAME_STL4, i);
		printf("| %s | %.1f | %+.1f |\n", names[i], c, c - prev);
		prev = c;
	}
	printf("\n");
}

/* The variant built without the capture's check (nocap), or with a
 * capture running (!nocap), of the frame; NULL if none. */
static const struct variant *cap_variant(enum frame_kind frame, bool nocap)
{
	int i;

	for (i = 0; i < n_vs; i++)
		if ((nocap ? vs[i].nocap : vs[i].cap_on) && vs[i].frame == frame)
			return &vs[i];
	return NULL;
}

/* What `xlb capture` costs the datapath while none runs: the same
 * program with and without its check. */
static void print_capture_check(const double *x, double pass)
{
	static const char *const what[] = {
		[FRAME_ACK4] = "IPv4 TCP established", [FRAME_ACK6] = "IPv6 TCP established",
		[FRAME_SYN4] = "IPv4 TCP SYN", [FRAME_SYN6] = "IPv6 TCP SYN",
		[FRAME_OTHER] = "non-VIP IPv4 packet passed",
	};
	double worst = -1e9, sum = 0, with, without;
	int f;

	printf("### The capture's check, while no capture runs\n\n");
	printf("`xlb capture` switches the datapath's capture on through a word of the\n"
	       "program's own; while it is 0 a packet pays one load and a branch. The same\n"
	       "build with the check taken out (a read-only knob the verifier folds away):\n\n");
	printf("| path | with the check, ns | without, ns | difference |\n");
	printf("| --- | ---: | ---: | ---: |\n");
	for (f = FRAME_ACK4; f <= FRAME_OTHER; f++) {
		with = f == FRAME_OTHER ? pass : x[f];
		without = bench_median(cap_variant(f, true)->ns, rounds);
		printf("| %s | %.1f | %.1f | %+.2f ns |\n", what[f], with, without,
		       with - without);
		if (with - without > worst)
			worst = with - without;
		sum += with - without;
	}
	/* One line: the report's summary repeats it. */
	/* Two instructions against run-to-run noise of several ns a path:
	 * the mean over the paths is the figure, the largest is shown. */
	printf("\nTarget: the capture's check costs at most 1 ns a packet while no capture runs: "
	       "%+.2f ns over the five paths on average, at most %+.2f ns on one (%s).\n\n",
	       sum / (FRAME_OTHER - FRAME_ACK4 + 1), worst,
	       sum / (FRAME_OTHER - FRAME_ACK4 + 1) <= 1.0 ? "met" : "not met");
	printf("While a capture of every packet runs (no filter, a reader on another thread\n"
	       "draining the ring; a packet the full ring cannot take is counted lost, which\n"
	       "costs less than one handed over):\n\n");
	printf("| path | capture off, ns | capture on, ns | difference | handed over | lost |\n");
	printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
	for (f = FRAME_ACK4; f <= FRAME_SYN4; f += FRAME_SYN4 - FRAME_ACK4) {
		const struct variant *on = cap_variant(f, false);
		__u64 captured, lost;

		capture_counted(on, &captured, &lost);
		with = bench_median(on->ns, rounds);
		printf("| %s | %.1f | %.1f | %+.1f ns | %llu | %llu |\n", what[f], x[f], with,
		       with - x[f], (unsigned long long)captured, (unsigned long long)lost);
	}
	printf("\n");
}

/* The SYN flood from a denied prefix beside an accepted SYN. */
static void print_src_ranges(const double *x)
{
	double deny4 = median_of(V_XLB, FRAME_DENY4, XLB_STAGE_ENCAP);
	double deny6 = median_of(V_XLB, FRAME_DENY6, XLB_STAGE_ENCAP);
	double ok4 = median_of(V_XLB, FRAME_ALLOW4, XLB_STAGE_ENCAP);
	double ok6 = median_of(V_XLB, FRAME_ALLOW6, XLB_STAGE_ENCAP);
	bool less = deny4 < ok4 && deny6 < ok6;

	printf("### A SYN flood from a denied prefix\n\n");
	printf("A VIP with source ranges (`xlb vip add|set --allow|--deny`) has them asked\n"
	       "before the connection table: the VIP lookup, then the client's in an LPM\n"
	       "trie. Here the SYNs' VIPs above are given an allow list of four prefixes,\n"
	       "the accepted client's among them, and the flood's prefix denied:\n"
	       "%s and %s. The flood's SYN is dropped as it came, each\n"
	       "run counted drop_src_denied, for its VIP too. The accepted SYN then goes\n"
	       "by the connection table and the VIP's table as any SYN, so it pays for both\n"
	       "lookups on top of that path (its VIP is looked up again after the\n"
	       "connection table). The SYN to the VIP without source ranges is the one of\n"
	       "the first table.\n\n", src_lists[0].deny, src_lists[1].deny);
	printf("| path | IPv4 ns | IPv6 ns |\n");
	printf("| --- | ---: | ---: |\n");
	printf("| SYN from a denied prefix: dropped (drop_src_denied) | %.1f | %.1f |\n",
	       deny4, deny6);
	printf("| SYN from an allowed prefix: forwarded (by the table, new entry) | %.1f | %.1f |\n",
	       ok4, ok6);
	printf("| SYN to the VIP without source ranges: forwarded (for reference) | %.1f | %.1f |\n",
	       x[FRAME_SYN4], x[FRAME_SYN6]);
	printf("| denied / accepted | %.2f | %.2f |\n", deny4 / ok4, deny6 / ok6);
	printf("| accepted, over the VIP without source ranges | %+.1f ns | %+.1f ns |\n\n",
	       ok4 - x[FRAME_SYN4], ok6 - x[FRAME_SYN6]);
	/* One line: the report's summary repeats it. */
	printf("Target: a SYN flood from a denied prefix costs the balancer less per packet "
	       "than an accepted SYN: IPv4 %.1f ns against %.1f ns (%.2f), IPv6 %.1f ns "
	       "against %.1f ns (%.2f) (%s).\n\n", deny4, ok4, deny4 / ok4, deny6, ok6,
	       deny6 / ok6, less ? "met" : "not met");
}

int main(int argc, char **argv)
{
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	__u32 repeat = quick ? 100000 : 10000000, out_len = 0, retval = 0;
	double plain, base4, base6, grow, restore, pass, fib, x[FRAME__COUNT];
	const char *build = getenv("BUILD");
	int r, i, f, err;
	__u8 out[PKT_MAX];
	char path[512];
	pthread_t reader;
	__u32 st;

	rounds = quick ? 1 : 5;
	if (geteuid() != 0) {
		fprintf(stderr, "bench_datapath: needs root (network namespace, BPF)\n");
		return 1;
	}
	snprintf(build_dir, sizeof(build_dir), "%s", build && *build ? build : "build");
	snprintf(path, sizeof(path), "%s/xlb.bpf.o", build_dir);
	if (dp_fixture_setup(&base_fx, path, "xlb_xdp"))
		return 1;
	if (pick_frame(&frames[FRAME_ACK4], VIP_RANDOM4, 4, 4, PKT_TCP_ACK) ||
	    pick_frame(&frames[FRAME_ACK6], VIP_RANDOM6, 6, 6, PKT_TCP_ACK) ||
	    pick_frame(&frames[FRAME_SYN4], VIP_RANDOM4, 4, 4, PKT_TCP_SYN) ||
	    pick_frame(&frames[FRAME_SYN6], VIP_RANDOM6, 6, 6, PKT_TCP_SYN))
		return 1;
	frames[FRAME_STL4] = frames[FRAME_ACK4];
	frames[FRAME_ALLOW4] = frames[FRAME_SYN4];
	frames[FRAME_ALLOW6] = frames[FRAME_SYN6];
	if (pick_flood_frame(&frames[FRAME_DENY4], VIP_RANDOM4, 4) ||
	    pick_flood_frame(&frames[FRAME_DENY6], VIP_RANDOM6, 6))
		return 1;
	frames[FRAME_OTHER].len = pkt_build(&(struct pkt_desc){
		.family = 4, .src = "203.0.113.5", .dst = "192.0.2.99",
		.proto = IPPROTO_TCP, .sport = 40000, .dport = 80,
		.tcp_flags = PKT_TCP_ACK }, frames[FRAME_OTHER].bytes);

	add(vs, &n_vs, "reflector alone", V_PLAIN, FRAME_SYN4, 0);
	add(vs, &n_vs, "baseline, IPv4 frame", V_REFLECT, FRAME_SYN4, 0);
	add(vs, &n_vs, "baseline, IPv6 frame", V_REFLECT, FRAME_SYN6, 0);
	add(vs, &n_vs, "baseline, grown", V_GROW, FRAME_SYN4, 0);
	for (f = FRAME_ACK4; f <= FRAME_SYN6; f++)
		for (st = 0; st < XLB_STAGE__COUNT; st++)
			if (!frame_is_ack(f) || ack_stage(st))
				add(vs, &n_vs, stage_names[st], V_XLB, f, st);
	add(vs, &n_vs, "non-VIP pass", V_XLB, FRAME_OTHER, XLB_STAGE_ENCAP);
	for (st = 0; st < XLB_STAGE__COUNT; st++)
		if (stateless_stage(st))
			add(vs, &n_vs, stage_names[st], V_XLB, FRAME_STL4, st);
	for (f = FRAME_ACK4; f <= FRAME_OTHER; f++) {
		add(vs, &n_vs, "without the capture's check", V_XLB, f, XLB_STAGE_ENCAP);
		vs[n_vs - 1].nocap = true;
	}
	add(vs, &n_vs, "capture on", V_XLB, FRAME_ACK4, XLB_STAGE_ENCAP);
	vs[n_vs - 1].cap_on = true;
	add(vs, &n_vs, "capture on", V_XLB, FRAME_SYN4, XLB_STAGE_ENCAP);
	vs[n_vs - 1].cap_on = true;
	add(vs, &n_vs, "FIB lookup, uncached", V_FIB, FRAME_SYN4, 0);
	add(vs, &n_vs, "IPv4 SYN from a denied prefix", V_XLB, FRAME_DENY4, XLB_STAGE_ENCAP);
	add(vs, &n_vs, "IPv6 SYN from a denied prefix", V_XLB, FRAME_DENY6, XLB_STAGE_ENCAP);
	add(vs, &n_vs, "IPv4 SYN from an allowed prefix", V_XLB, FRAME_ALLOW4, XLB_STAGE_ENCAP);
	add(vs, &n_vs, "IPv6 SYN from an allowed prefix", V_XLB, FRAME_ALLOW6, XLB_STAGE_ENCAP);
	for (i = 0; i < n_vs; i++)
		if (load_variant(&vs[i]))
			return 1;

	if (pthread_create(&reader, NULL, capture_reader, NULL)) {
		fprintf(stderr, "bench_datapath: cannot start the capture's reader\n");
		return 1;
	}
	/* Rounds interleave the variants, so a busy moment on the machine
	 * spreads over all of them instead of skewing one. */
	for (r = 0; r < rounds; r++) {
		fprintf(stderr, "bench_datapath: round %d of %d\n", r + 1, rounds);
		for (i = 0; i < n_vs; i++) {
			err = measure(&vs[i], repeat, &vs[i].ns[r], out, &out_len, &retval);
			if (err) {
				fprintf(stderr, "bench_datapath: BPF_PROG_TEST_RUN: %s\n",
					strerror(-err));
				return 1;
			}
			if (check_output(&vs[i], out, out_len, retval))
				return 1;
			if (frame_ranged(vs[i].frame) &&
			    check_src_counted(&vs[i], (__u64)repeat * (r + 1)))
				return 1;
		}
	}

	readers_stop = true;
	pthread_join(reader, NULL);
	plain = median_of(V_PLAIN, FRAME_SYN4, 0);
	base4 = median_of(V_REFLECT, FRAME_SYN4, 0);
	base6 = median_of(V_REFLECT, FRAME_SYN6, 0);
	grow = median_of(V_GROW, FRAME_SYN4, 0);
	/* Two bpf_xdp_adjust_head() calls over the baseline: one is the
	 * restore xlb's output needs and the baseline's never does. */
	restore = (grow - base4) / 2;
	if (restore < 0)	/* only noise makes it so: a call never saves time */
		restore = 0;
	for (f = FRAME_ACK4; f <= FRAME_SYN6; f++)
		x[f] = median_of(V_XLB, f, XLB_STAGE_ENCAP);
	pass = median_of(V_XLB, FRAME_OTHER, XLB_STAGE_ENCAP);
	fib = median_of(V_FIB, FRAME_SYN4, 0);

	printf("## Datapath: ns per packet (BPF_PROG_TEST_RUN)\n\n");
	printf("Each figure is the CPU time of one BPF_PROG_TEST_RUN call with repeat = %u,\n"
	       "divided by the repeat count; the median of %d interleaved round%s. Every\n"
	       "program, the baseline included, first restores the benchmark frame (the\n"
	       "repeat mode feeds each run the previous output), and the verdict and bytes\n"
	       "of the last run are checked against the model. The baseline is the MAC-swap\n"
	       "reflector (bench/bpf/reflector.bpf.c) behind the same restore; xlb uses a VIP with\n"
	       "M = 65537 and 64 backends and TCP segments of 54 (IPv4) or 74 (IPv6) bytes:\n"
	       "ACKs of an established flow, which find their connection-table entry (most\n"
	       "packets a balancer forwards), and SYNs, which open a connection and go by\n"
	       "the VIP's table.\n\n",
	       repeat, rounds, rounds > 1 ? "s" : "");
	printf("After an encapsulation the restore has to take the outer header off again\n"
	       "with bpf_xdp_adjust_head(), which the baseline's restore never calls. That\n"
	       "call belongs to the measurement, not to xlb: a baseline that pushes 20\n"
	       "bytes, so that its next restore takes them off, costs %.1f ns, two such\n"
	       "calls over the baseline, so one costs %.1f ns. The last column takes it off.\n\n",
	       grow, restore);
	printf("| path | ns/packet | × baseline | added over baseline | added, less the restore's call |\n");
	printf("| --- | ---: | ---: | ---: | ---: |\n");
	printf("| reflector alone, no restore (for reference) | %.1f | %.2f | | |\n",
	       plain, plain / base4);
	printf("| baseline (reflector + restore), IPv4 frame | %.1f | 1.00 | | |\n", base4);
	printf("| baseline (reflector + restore), IPv6 frame | %.1f | 1.00 | | |\n", base6);
	for (f = FRAME_ACK4; f <= FRAME_SYN6; f++) {
		static const char *const what[] = {
			[FRAME_ACK4] = "xlb, IPv4 TCP established (entry hit; IPIP to an IPv4 backend)",
			[FRAME_ACK6] = "xlb, IPv6 TCP established (entry hit; IP6IP6 to an IPv6 backend)",
			[FRAME_SYN4] = "xlb, IPv4 TCP SYN (by the table, new entry; IPIP)",
			[FRAME_SYN6] = "xlb, IPv6 TCP SYN (by the table, new entry; IP6IP6)",
		};
		double b = f == FRAME_ACK4 || f == FRAME_SYN4 ? base4 : base6;

		printf("| %s | %.1f | %.2f | %+.1f ns | %+.1f ns |\n", what[f], x[f],
		       x[f] / b, x[f] - b, x[f] - b - restore);
	}
	x[FRAME_STL4] = median_of(V_XLB, FRAME_STL4, XLB_STAGE_ENCAP);
	printf("| xlb, IPv4 TCP, a stateless VIP's packet (GUE, naming the slot's previous owner) | %.1f | %.2f | %+.1f ns | %+.1f ns |\n",
	       x[FRAME_STL4], x[FRAME_STL4] / base4, x[FRAME_STL4] - base4,
	       x[FRAME_STL4] - base4 - restore);
	printf("| xlb, non-VIP IPv4 packet passed | %.1f | %.2f | %+.1f ns | |\n\n",
	       pass, pass / base4, pass - base4);
	/* One line: the report's summary repeats it. */
	printf("Target: xlb adds at most %.0f ns per packet over the baseline when it forwards "
	       "TCP of established flows: IPv4 %+.1f ns, IPv6 %+.1f ns, less the restore's call "
	       "(%s); a SYN adds IPv4 %+.1f ns, IPv6 %+.1f ns.\n\n", TARGET_NS,
	       x[FRAME_ACK4] - base4 - restore, x[FRAME_ACK6] - base6 - restore,
	       x[FRAME_ACK4] - base4 - restore <= TARGET_NS &&
	       x[FRAME_ACK6] - base6 - restore <= TARGET_NS ? "met" : "not met",
	       x[FRAME_SYN4] - base4 - restore, x[FRAME_SYN6] - base6 - restore);

	printf("### Where the time goes\n\n");
	printf("Variants of the program that stop after each stage (a read-only knob the\n"
	       "verifier folds away); a stage's cost is the difference to the variant before.\n"
	       "The encapsulation row includes the restore's bpf_xdp_adjust_head() call.\n\n");
	printf("An ACK of an established flow:\n\n");
	print_stages(FRAME_ACK4, FRAME_ACK6, base4, base6, true);
	printf("A SYN:\n\n");
	print_stages(FRAME_SYN4, FRAME_SYN6, base4, base6, false);
	printf("A stateless VIP's packet (every slot naming a previous owner, the dearer case):\n\n");
	print_stateless_stages(base4);
	printf("A FIB lookup without the cache (bpf_fib_lookup alone, IPv4 backend) costs\n"
	       "%.1f ns over the baseline; the cache replaces it by the next-hop row above.\n\n",
	       fib - base4);
	print_src_ranges(x);
	print_capture_check(x, pass);
	return 0;
}
