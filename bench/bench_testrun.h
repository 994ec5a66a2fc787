/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Timing XDP programs with BPF_PROG_TEST_RUN and repeat, for
 * bench_datapath.c and bench_conntrack.c: the benchmark frames, one
 * measurement, and the median of interleaved rounds. The programs timed
 * restore their frame before each run (bench/bpf/xlb_bench.bpf.c), since every
 * run with repeat sees the previous run's output.
 */
#ifndef XLB_BENCH_TESTRUN_H
#define XLB_BENCH_TESTRUN_H

#include <time.h>
#include "dp_fixture.h"

#define BENCH_MAX_ROUNDS	16

/* CPU time of this thread: on a shared machine, time other tasks take
 * while the measuring loop waits in cond_resched() is not counted. */
static inline double bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static inline double bench_median(const double *v, int n)
{
	double s[BENCH_MAX_ROUNDS];

	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), bench_cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* One measurement: CPU time of `repeat` runs of prog on frame (received
 * on ifindex), per run; the last run's output, length and verdict. */
static inline int bench_measure(int prog_fd, int ifindex, const __u8 *frame,
				__u32 len, __u32 repeat, double *ns, __u8 *out,
				__u32 *out_len, __u32 *retval)
{
	struct xdp_md ctx = { .data_end = len, .ingress_ifindex = ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		    .data_in = frame,
		    .data_size_in = len,
		    .data_out = out,
		    .data_size_out = PKT_MAX,
		    .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx),
		    .repeat = repeat);
	double start = bench_now_ns();

	if (bpf_prog_test_run_opts(prog_fd, &opts))
		return -errno;
	*ns = (bench_now_ns() - start) / repeat;
	*out_len = opts.data_size_out;
	*retval = opts.retval;
	return 0;
}

/*
 * A TCP packet with tcp_flags, from a client of the given family to the
 * fixture's vip (VIP_RANDOM4 or VIP_RANDOM6), of a flow the table gives to
 * a backend of backend_family. Returns the frame's length (0: none found).
 */
static inline size_t bench_flow_frame(const struct dp_fixture *fx, __u32 vip,
				      int family, int backend_family,
				      __u8 tcp_flags, __u8 *frame,
				      struct xlb_flow *flow)
{
	const char *vip_addr = family == 4 ? "192.0.2.40" : "2001:db8:f::40";
	const char *client = family == 4 ? "203.0.113.5" : "2001:db8:c::5";
	__u16 dport = family == 4 ? 80 : 443, port;
	struct dp_flow df;
	__u64 hash;

	for (port = 40000; port < 50000; port++) {
		df = (struct dp_flow){ family, client, vip_addr, port, dport, IPPROTO_TCP };
		*flow = dp_xlb_flow(&df);
		if (fx->backends[dp_model_backend(fx, vip, flow, &hash)].family ==
		    backend_family)
			return pkt_build(&(struct pkt_desc){
				.family = family, .src = client, .dst = vip_addr,
				.proto = IPPROTO_TCP, .sport = port, .dport = dport,
				.tcp_flags = tcp_flags }, frame);
	}
	return 0;
}

#endif /* XLB_BENCH_TESTRUN_H */
