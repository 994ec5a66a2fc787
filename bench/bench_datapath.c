// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * ns per packet of the XDP datapath, run by BPF_PROG_TEST_RUN with repeat
 * in a private network namespace (tests/dp_fixture.h), against the MAC-swap
 * reflector as the baseline; and where the time goes, from variants of the
 * program that stop after each stage (bpf/xlb_bench.bpf.c).
 *
 *   bench_datapath [--quick]    --quick: 100,000 repeats, one round
 *
 * With repeat, every run sees the previous run's output. Every program
 * measured here first restores the benchmark frame (the baseline too, so
 * the restore is in both figures); after each measurement the verdict and
 * the output bytes of the last run are checked against the model, so a
 * figure always belongs to the path it names. Figures are printed, never
 * asserted. Prints a markdown section; progress on stderr.
 */
#include <unistd.h>
#include "bench_testrun.h"
#include "xlb_bench.skel.h"
#include "../bpf/stages.h"

#define TARGET_NS	25.0

enum frame_kind { FRAME_TCP4, FRAME_TCP6, FRAME_OTHER, FRAME__COUNT };

struct frame {
	__u8 bytes[PKT_MAX];
	size_t len;
	__u32 vip;
	struct xlb_flow flow;
};

enum variant_kind { V_PLAIN, V_REFLECT, V_XLB, V_FIB };

struct variant {
	const char *name;
	enum variant_kind kind;
	enum frame_kind frame;
	__u32 stage;
	struct dp_fixture *fx;
	struct xlb_bench *skel;
	double ns[BENCH_MAX_ROUNDS];
};

static struct frame frames[FRAME__COUNT];
static struct dp_fixture base_fx;	/* the namespace, and the model */
static char build_dir[256];

/* A SYN of a flow of vip whose backend has the given family. */
static int pick_frame(struct frame *f, __u32 vip, int family, int backend_family)
{
	f->vip = vip;
	f->len = bench_flow_frame(&base_fx, vip, family, backend_family, PKT_TCP_SYN,
				  f->bytes, &f->flow);
	return f->len ? 0 : -EINVAL;
}

/* bpf/reflector.bpf.c as it is: the reference without the restore. */
static int load_plain(struct variant *v)
{
	char path[512];
	int err;

	snprintf(path, sizeof(path), "%s/reflector.bpf.o", build_dir);
	err = xlb_testrun_load(path, &v->fx->obj);
	if (err)
		return err;
	v->fx->prog_fd = bpf_program__fd(bpf_object__find_program_by_name(v->fx->obj,
									   "xdp_reflect"));
	return v->fx->prog_fd < 0 ? -ENOENT : 0;
}

static int load_variant(struct variant *v)
{
	const struct frame *f = &frames[v->frame];
	static const char *const progs[] = {
		[V_REFLECT] = "reflect_bench", [V_XLB] = "xlb_bench", [V_FIB] = "fib_bench",
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
	return dp_fixture_use(v->fx, v->skel->obj, progs[v->kind]);
}

/* One measurement: CPU time of `repeat` runs, per run. */
static int measure(struct variant *v, __u32 repeat, double *ns, __u8 *out,
		   __u32 *out_len, __u32 *retval)
{
	const struct frame *f = &frames[v->frame];

	return bench_measure(v->fx->prog_fd, v->fx->env.ifindex, f->bytes, f->len,
			     repeat, ns, out, out_len, retval);
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
	} else if (v->kind == V_XLB && v->stage == XLB_STAGE_ENCAP) {
		if (v->frame == FRAME_OTHER)
			want_verdict = XDP_PASS;
		else
			want_len = dp_model_forward(&base_fx, f->vip, &f->flow,
						    f->bytes + PKT_ETH_LEN,
						    f->len - PKT_ETH_LEN, 0, want,
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
	[XLB_STAGE_VIP] = "VIP and config lookup",
	[XLB_STAGE_CONNTRACK] = "connection table lookup",
	[XLB_STAGE_HASH] = "flow hash (SipHash-1-3)",
	[XLB_STAGE_TABLE] = "table index, backend record",
	[XLB_STAGE_NEXTHOP] = "next hop (per-CPU FIB cache hit)",
	[XLB_STAGE_ENCAP] = "encapsulation, verdict",
};

int main(int argc, char **argv)
{
	static struct variant vs[32];
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	__u32 repeat = quick ? 100000 : 10000000, out_len = 0, retval = 0;
	int rounds = quick ? 1 : 5, n = 0, r, i, err;
	double plain, base4, base6, x4, x6, pass, fib, prev4, prev6;
	__u8 out[PKT_MAX];
	char path[512];
	const char *build = getenv("BUILD");

	if (geteuid() != 0) {
		fprintf(stderr, "bench_datapath: needs root (network namespace, BPF)\n");
		return 1;
	}
	snprintf(build_dir, sizeof(build_dir), "%s", build && *build ? build : "build");
	snprintf(path, sizeof(path), "%s/xlb.bpf.o", build_dir);
	if (dp_fixture_setup(&base_fx, path, "xlb_xdp"))
		return 1;
	if (pick_frame(&frames[FRAME_TCP4], VIP_RANDOM4, 4, 4) ||
	    pick_frame(&frames[FRAME_TCP6], VIP_RANDOM6, 6, 6))
		return 1;
	frames[FRAME_OTHER].len = pkt_build(&(struct pkt_desc){
		.family = 4, .src = "203.0.113.5", .dst = "192.0.2.99",
		.proto = IPPROTO_TCP, .sport = 40000, .dport = 80,
		.tcp_flags = PKT_TCP_SYN }, frames[FRAME_OTHER].bytes);

	add(vs, &n, "reflector alone", V_PLAIN, FRAME_TCP4, 0);
	add(vs, &n, "baseline, IPv4 frame", V_REFLECT, FRAME_TCP4, 0);
	add(vs, &n, "baseline, IPv6 frame", V_REFLECT, FRAME_TCP6, 0);
	for (i = 0; i < XLB_STAGE__COUNT; i++) {
		add(vs, &n, stage_names[i], V_XLB, FRAME_TCP4, i);
		add(vs, &n, stage_names[i], V_XLB, FRAME_TCP6, i);
	}
	add(vs, &n, "non-VIP pass", V_XLB, FRAME_OTHER, XLB_STAGE_ENCAP);
	add(vs, &n, "FIB lookup, uncached", V_FIB, FRAME_TCP4, 0);
	for (i = 0; i < n; i++)
		if (load_variant(&vs[i]))
			return 1;

	/* Rounds interleave the variants, so a busy moment on the machine
	 * spreads over all of them instead of skewing one. */
	for (r = 0; r < rounds; r++) {
		fprintf(stderr, "bench_datapath: round %d of %d\n", r + 1, rounds);
		for (i = 0; i < n; i++) {
			err = measure(&vs[i], repeat, &vs[i].ns[r], out, &out_len, &retval);
			if (err) {
				fprintf(stderr, "bench_datapath: BPF_PROG_TEST_RUN: %s\n",
					strerror(-err));
				return 1;
			}
			if (check_output(&vs[i], out, out_len, retval))
				return 1;
		}
	}

	plain = bench_median(vs[0].ns, rounds);
	base4 = bench_median(vs[1].ns, rounds);
	base6 = bench_median(vs[2].ns, rounds);
	x4 = bench_median(vs[3 + 2 * XLB_STAGE_ENCAP].ns, rounds);
	x6 = bench_median(vs[4 + 2 * XLB_STAGE_ENCAP].ns, rounds);
	pass = bench_median(vs[n - 2].ns, rounds);
	fib = bench_median(vs[n - 1].ns, rounds);

	printf("## Datapath: ns per packet (BPF_PROG_TEST_RUN)\n\n");
	printf("Each figure is the CPU time of one BPF_PROG_TEST_RUN call with repeat = %u,\n"
	       "divided by the repeat count; the median of %d interleaved round%s. Every\n"
	       "program, the baseline included, first restores the benchmark frame (the\n"
	       "repeat mode feeds each run the previous output), and the verdict and bytes\n"
	       "of the last run are checked against the model. The baseline is the MAC-swap\n"
	       "reflector (bpf/reflector.bpf.c) behind the same restore; xlb uses a VIP with\n"
	       "M = 65537 and 64 backends, a TCP SYN of 54 (IPv4) or 74 (IPv6) bytes.\n\n",
	       repeat, rounds, rounds > 1 ? "s" : "");
	printf("| path | ns/packet | × baseline | added over baseline |\n");
	printf("| --- | ---: | ---: | ---: |\n");
	printf("| reflector alone, no restore (for reference) | %.1f | %.2f | |\n",
	       plain, plain / base4);
	printf("| baseline (reflector + restore), IPv4 frame | %.1f | 1.00 | |\n", base4);
	printf("| baseline (reflector + restore), IPv6 frame | %.1f | 1.00 | |\n", base6);
	printf("| xlb, IPv4 TCP forward (IPIP to an IPv4 backend) | %.1f | %.2f | %+.1f ns |\n",
	       x4, x4 / base4, x4 - base4);
	printf("| xlb, IPv6 TCP forward (IP6IP6 to an IPv6 backend) | %.1f | %.2f | %+.1f ns |\n",
	       x6, x6 / base6, x6 - base6);
	printf("| xlb, non-VIP IPv4 packet passed | %.1f | %.2f | %+.1f ns |\n",
	       pass, pass / base4, pass - base4);
	printf("\nTarget: xlb adds at most %.0f ns per packet over the baseline: "
	       "IPv4 %+.1f ns, IPv6 %+.1f ns (%s).\n\n", TARGET_NS, x4 - base4, x6 - base6,
	       x4 - base4 <= TARGET_NS && x6 - base6 <= TARGET_NS ? "met" : "not met");

	printf("### Where the time goes\n\n");
	printf("Variants of the program that stop after each stage (a read-only knob the\n"
	       "verifier folds away); a stage's cost is the difference to the variant before.\n\n");
	printf("| after stage | IPv4 ns | IPv4 stage | IPv6 ns | IPv6 stage |\n");
	printf("| --- | ---: | ---: | ---: | ---: |\n");
	printf("| baseline | %.1f | | %.1f | |\n", base4, base6);
	prev4 = base4;
	prev6 = base6;
	for (i = 0; i < XLB_STAGE__COUNT; i++) {
		double c4 = bench_median(vs[3 + 2 * i].ns, rounds);
		double c6 = bench_median(vs[4 + 2 * i].ns, rounds);

		printf("| %s | %.1f | %+.1f | %.1f | %+.1f |\n", stage_names[i],
		       c4, c4 - prev4, c6, c6 - prev6);
		prev4 = c4;
		prev6 = c6;
	}
	printf("\nA FIB lookup without the cache (bpf_fib_lookup alone, IPv4 backend) costs\n"
	       "%.1f ns over the baseline; the cache replaces it by the next-hop row above.\n",
	       fib - base4);
	return 0;
}
