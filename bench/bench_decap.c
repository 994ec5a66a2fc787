// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * ns per packet of the backends' program (bpf/decap.bpf.c), run by
 * BPF_PROG_TEST_RUN with repeat in the packet sandbox holding a backend
 * with real sockets (tests/lib/decap_fixture.h), against a pass-through
 * baseline: what the program adds to every packet a backend receives.
 *
 *   bench_decap [--quick]    --quick: 50,000 repeats, one round
 *
 * Every program measured first restores the benchmark frame, the
 * baseline too (bench/bpf/decap_bench.bpf.c); after each measurement the
 * verdict and bytes of the last run are checked against frames built
 * independently of the program, so a figure belongs to the path it names.
 * Prints a markdown section; progress on stderr.
 */
#include <unistd.h>
#include "bench_testrun.h"
#include "decap_fixture.h"
#include "decap_bench.skel.h"

enum frame_kind {
	F_PLAIN4,		/* not tunnelled: passes unchanged */
	F_IPIP4,		/* IPIP: passed up decapsulated */
	F_GUE_NONE4,		/* GUE naming no previous backend */
	F_GUE_SYN4,		/* a SYN naming one: no lookup */
	F_GUE_EST4,		/* an ACK of an established connection */
	F_GUE_EST6,
	F_GUE_FWD4,		/* an ACK of a connection the host lacks */
	F_GUE_FWD6,
	F__COUNT
};

enum variant_kind { V_PASS, V_SHRINK, V_DECAP };

struct frame {
	const char *what;
	__u8 bytes[PKT_MAX];
	size_t len;
	__u32 verdict;		/* expected */
	__u8 want[PKT_MAX];	/* expected output */
	size_t want_len;
};

struct variant {
	enum variant_kind kind;
	enum frame_kind frame;
	struct decap_bench *skel;
	int prog_fd;
	double ns[BENCH_MAX_ROUNDS];
};

static struct frame frames[F__COUNT];
static struct xlb_sandbox env;

/* A GUE frame from the balancer to this backend. */
static struct gue_frame gue_to_backend(int family, const char *prev)
{
	return (struct gue_frame){
		.outer = family,
		.src = family == 4 ? BALANCER4 : BALANCER6,
		.dst = family == 4 ? BACKEND4 : BACKEND6,
		.prev_family = prev ? family : 0, .prev = prev,
	};
}

/* Frame f: inner packet in, in GUE g, passed up decapsulated. */
static int frame_pass(enum frame_kind f, const char *what, struct gue_frame g,
		      struct inner in)
{
	struct frame *fr = &frames[f];

	fr->what = what;
	fr->len = gue_frame(&g, &in, fr->bytes);
	fr->want_len = inner_frame(&in, fr->want);
	fr->verdict = XDP_PASS;
	return fr->len && fr->want_len ? 0 : -EINVAL;
}

/* Frame f: forwarded to prev, as bpf/decap.bpf.c documents it. */
static int frame_forward(enum frame_kind f, const char *what, int family,
			 const char *prev, struct inner in)
{
	struct gue_frame g = gue_to_backend(family, prev), fwd = g;
	struct frame *fr = &frames[f];

	fwd.src = g.dst;
	fwd.dst = prev;
	fwd.hops = 1;
	fwd.ttl = 64;
	fwd.dmac = mac_gw;
	fwd.smac = mac_in;
	fwd.udp_csum_zero = family == 4;
	fr->what = what;
	fr->len = gue_frame(&g, &in, fr->bytes);
	fr->want_len = gue_frame(&fwd, &in, fr->want);
	fr->verdict = XDP_TX;
	return fr->len && fr->want_len ? 0 : -EINVAL;
}

#define TCP_TO_VIP(fam, port, flags) { .family = (fam), .proto = IPPROTO_TCP, \
				     .sport = (port), .dport = PORT_TCP, .tcp_flags = (flags) }

static int build_frames(void)
{
	struct inner syn4 = TCP_TO_VIP(4, PORT_UNKNOWN, PKT_TCP_SYN);
	struct inner est4 = TCP_TO_VIP(4, PORT_ESTAB, PKT_TCP_ACK);
	struct inner est6 = TCP_TO_VIP(6, PORT_ESTAB, PKT_TCP_ACK);
	struct inner unk4 = TCP_TO_VIP(4, PORT_UNKNOWN, PKT_TCP_ACK);
	struct inner unk6 = TCP_TO_VIP(6, PORT_UNKNOWN, PKT_TCP_ACK);
	struct frame *plain = &frames[F_PLAIN4], *ipip = &frames[F_IPIP4];
	__u8 ip[PKT_MAX];
	size_t ilen;

	plain->what = "not tunnelled (IPv4 TCP), passed unchanged";
	plain->len = inner_frame(&est4, plain->bytes);
	memcpy(plain->want, plain->bytes, plain->len);
	plain->want_len = plain->len;
	plain->verdict = XDP_PASS;

	ipip->what = "IPIP, passed up";
	ilen = inner_frame(&est4, ipip->want) - PKT_ETH_LEN;
	ipip->want_len = PKT_ETH_LEN + ilen;
	memcpy(ip, ipip->want + PKT_ETH_LEN, ilen);
	ipip->len = pkt_encap(ipip->bytes, mac_in, mac_gw, 4, BALANCER4, BACKEND4, 0,
			      ip, ilen, 4);
	ipip->verdict = XDP_PASS;

	if (!plain->len || !ipip->len ||
	    frame_pass(F_GUE_NONE4, "GUE, no previous backend, passed up",
		       gue_to_backend(4, NULL), est4) ||
	    frame_pass(F_GUE_SYN4, "GUE, a SYN (no lookup), passed up",
		       gue_to_backend(4, PREV4_TX), syn4) ||
	    frame_pass(F_GUE_EST4, "GUE, established (socket found), passed up, IPv4",
		       gue_to_backend(4, PREV4_TX), est4) ||
	    frame_pass(F_GUE_EST6, "GUE, established (socket found), passed up, IPv6",
		       gue_to_backend(6, PREV6_TX), est6) ||
	    frame_forward(F_GUE_FWD4, "GUE, unknown connection, forwarded, IPv4", 4,
			  PREV4_TX, unk4) ||
	    frame_forward(F_GUE_FWD6, "GUE, unknown connection, forwarded, IPv6", 6,
			  PREV6_TX, unk6))
		return -EINVAL;
	return 0;
}

static int load_variant(struct variant *v)
{
	const struct frame *f = &frames[v->frame];
	struct bpf_program *prog;
	struct decap_maps maps;
	int err;

	v->skel = decap_bench__open();
	if (!v->skel)
		return -errno;
	v->skel->rodata->bench_len = f->len;
	memcpy((void *)v->skel->rodata->bench_head, f->bytes,
	       sizeof(v->skel->rodata->bench_head));
	/* As much as the IPv4 GUE frames' decapsulation takes off. */
	v->skel->rodata->bench_shrink = frames[F_GUE_EST4].len - frames[F_GUE_EST4].want_len;
	err = decap_bench__load(v->skel);
	if (err) {
		fprintf(stderr, "bench_decap: loading: %s\n", strerror(-err));
		return err;
	}
	/* Trusting what `xlb host setup` would: every check is paid for. */
	maps = (struct decap_maps){
		.cfg = bpf_map__fd(v->skel->maps.xlb_decap_cfg),
		.addrs = bpf_map__fd(v->skel->maps.xlb_decap_addrs),
		.fleet = bpf_map__fd(v->skel->maps.xlb_decap_fleet),
		.lbs = bpf_map__fd(v->skel->maps.xlb_decap_lbs),
		.out = bpf_map__fd(v->skel->maps.xlb_decap_out),
	};
	err = decap_trust_backend(&maps, env.ifindex_other);
	if (err) {
		fprintf(stderr, "bench_decap: filling the maps: %s\n", strerror(-err));
		return err;
	}
	prog = v->kind == V_PASS ? v->skel->progs.pass_bench :
	       v->kind == V_SHRINK ? v->skel->progs.shrink_bench :
	       v->skel->progs.decap_bench;
	v->prog_fd = bpf_program__fd(prog);
	return 0;
}

/* The last run's verdict and bytes are those of the path measured. */
static int check_output(const struct variant *v, const __u8 *out, __u32 out_len,
			__u32 retval)
{
	const struct frame *f = &frames[v->frame];
	size_t shrink = frames[F_GUE_EST4].len - frames[F_GUE_EST4].want_len;

	if (v->kind == V_PASS && retval == XDP_PASS && out_len == f->len &&
	    !memcmp(out, f->bytes, f->len))
		return 0;
	if (v->kind == V_SHRINK && retval == XDP_PASS && out_len == f->len - shrink &&
	    !memcmp(out, f->bytes + shrink, out_len))
		return 0;
	if (v->kind == V_DECAP && retval == f->verdict && out_len == f->want_len &&
	    !memcmp(out, f->want, f->want_len))
		return 0;
	fprintf(stderr, "bench_decap: %s: verdict %u, %u bytes: not the path measured\n",
		f->what, retval, out_len);
	return -EINVAL;
}

static struct variant vs[F__COUNT + 2];
static int n_vs, rounds;

static double median_of(enum variant_kind kind, enum frame_kind frame)
{
	int i;

	for (i = 0; i < n_vs; i++)
		if (vs[i].kind == kind && vs[i].frame == frame)
			return bench_median(vs[i].ns, rounds);
	return 0;
}

int main(int argc, char **argv)
{
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	__u32 repeat = quick ? 50000 : 2000000, out_len = 0, retval = 0;
	double base, shrink, restore, x, fwd4, fwd6, est4, pass_gue;
	__u8 out[PKT_MAX];
	int r, i, f, err;

	rounds = quick ? 1 : 5;
	if (geteuid() != 0) {
		fprintf(stderr, "bench_decap: needs root (network namespace, BPF)\n");
		return 1;
	}
	libbpf_set_print(NULL);
	if (xlb_sandbox_setup(&env) || decap_backend_setup() || build_frames()) {
		fprintf(stderr, "bench_decap: cannot set up the backend\n");
		return 1;
	}
	vs[n_vs++] = (struct variant){ .kind = V_PASS, .frame = F_GUE_EST4 };
	vs[n_vs++] = (struct variant){ .kind = V_SHRINK, .frame = F_GUE_EST4 };
	for (f = 0; f < F__COUNT; f++)
		vs[n_vs++] = (struct variant){ .kind = V_DECAP, .frame = f };
	for (i = 0; i < n_vs; i++)
		if (load_variant(&vs[i]))
			return 1;

	/* Rounds interleave the variants, so a busy moment on the machine
	 * spreads over all of them instead of skewing one. */
	for (r = 0; r < rounds; r++) {
		fprintf(stderr, "bench_decap: round %d of %d\n", r + 1, rounds);
		for (i = 0; i < n_vs; i++) {
			const struct frame *fr = &frames[vs[i].frame];

			err = bench_measure(vs[i].prog_fd, env.ifindex, fr->bytes, fr->len,
					    repeat, &vs[i].ns[r], out, &out_len, &retval);
			if (err) {
				fprintf(stderr, "bench_decap: BPF_PROG_TEST_RUN: %s\n",
					strerror(-err));
				return 1;
			}
			if (check_output(&vs[i], out, out_len, retval))
				return 1;
		}
	}

	base = median_of(V_PASS, F_GUE_EST4);
	shrink = median_of(V_SHRINK, F_GUE_EST4);
	/* Two bpf_xdp_adjust_head() calls over the baseline: one is the
	 * restore a decapsulated output needs and the baseline's never does. */
	restore = (shrink - base) / 2;
	if (restore < 0)	/* only noise makes it so */
		restore = 0;

	printf("## Backend program: ns per packet (BPF_PROG_TEST_RUN)\n\n");
	printf("The backends' XDP program (bpf/decap.bpf.c: decapsulation and the second\n"
	       "chance, docs/second-chance.md) on a backend in a network namespace with a\n"
	       "TCP listener and connections on the VIP. Each figure is the CPU time of one\n"
	       "BPF_PROG_TEST_RUN call with repeat = %u, divided by the repeat count; the\n"
	       "median of %d interleaved round%s. Every program, the baseline included,\n"
	       "first restores the benchmark frame (the repeat mode feeds each run the\n"
	       "previous output), and the verdict and bytes of the last run are checked\n"
	       "against frames built independently of the program. The baseline passes\n"
	       "every frame (the cost of any XDP program at all, plus the restore).\n\n",
	       repeat, rounds, rounds > 1 ? "s" : "");
	printf("A decapsulated output is shorter, so the next restore calls\n"
	       "bpf_xdp_adjust_head(), which the baseline's never does: a baseline that\n"
	       "takes as many bytes off costs %.1f ns, two calls over the baseline, so one\n"
	       "costs %.1f ns. The last column takes it off the paths that decapsulate.\n\n",
	       shrink, restore);
	printf("| path | ns/packet | × baseline | added over baseline | added, less the restore's call |\n");
	printf("| --- | ---: | ---: | ---: | ---: |\n");
	printf("| baseline (pass + restore) | %.1f | 1.00 | | |\n", base);
	for (f = 0; f < F__COUNT; f++) {
		bool decapsulates = frames[f].verdict == XDP_PASS && f != F_PLAIN4;

		x = median_of(V_DECAP, f);
		printf("| %s | %.1f | %.2f | %+.1f ns | ", frames[f].what, x, x / base,
		       x - base);
		if (decapsulates)
			printf("%+.1f ns |\n", x - base - restore);
		else
			printf("%+.1f ns (no restore call) |\n", x - base);
	}
	printf("\n");
	est4 = median_of(V_DECAP, F_GUE_EST4) - base - restore;
	pass_gue = median_of(V_DECAP, F_GUE_SYN4) - base - restore;
	fwd4 = median_of(V_DECAP, F_GUE_FWD4) - base;
	fwd6 = median_of(V_DECAP, F_GUE_FWD6) - base;
	/* One line: the report's summary repeats it. */
	printf("Target (issue 21, measured): the backend program adds, per packet, IPIP "
	       "%+.1f ns, GUE passed up %+.1f ns, %+.1f ns with the socket lookup of an "
	       "established connection, and GUE forwarded to the previous backend "
	       "%+.1f ns (IPv4) / %+.1f ns (IPv6); a packet not tunnelled %+.1f ns.\n",
	       median_of(V_DECAP, F_IPIP4) - base - restore, pass_gue, est4, fwd4, fwd6,
	       median_of(V_DECAP, F_PLAIN4) - base);
	return 0;
}
