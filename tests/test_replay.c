// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Replay on a generated trace of 100,000 flows (IPv4 and IPv6, TCP and
 * UDP, Zipf sizes), 10 and 100 backends, M = 65537:
 *   - Maglev spreads flows as evenly as a uniformly random assignment of
 *     the same flows would (inside its computed 1st-99th percentile band);
 *   - the ring with one point per backend is measurably worse than with
 *     100;
 *   - when one backend leaves, modulo moves about 1 - 1/N of the flows,
 *     the ring exactly the leaving backend's flows, Maglev those plus at
 *     most 1% of all flows;
 *   - when one joins, the ring moves flows only to it, Maglev at most 1%
 *     more than that.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include "replay_fixtures.h"
#include "testlib.h"

#define FLOWS	100000
#define M	65537
#define REPS	1000

static struct trace trace;
static struct replay_flows flows;

static bool load_trace(void)
{
	const char *path = fx_path("trace.pcap");
	static int loaded;

	if (loaded)
		return loaded > 0;
	loaded = -1;
	if (!ASSERT_OK(fx_gentrace("-n %d -s 7 -o %s", FLOWS, path), "gentrace"))
		return false;
	if (!ASSERT_OK(fx_load(&trace, &flows, 1, &path), "read the trace"))
		return false;
	if (!ASSERT_EQ(flows.n, FLOWS, "every generated flow is one flow"))
		return false;
	loaded = 1;
	return true;
}

static const size_t sizes[] = { 10, 100 };

static void maglev_flows_within_the_random_band(void)
{
	size_t s;

	if (!load_trace())
		return;
	for (s = 0; s < 2; s++) {
		struct lb_backend *set = fx_set(sizes[s]);
		int *a = fx_assign(LB_MAGLEV, M, 100, set, sizes[s], &flows);
		struct replay_random rnd;
		struct replay_spread sp;

		if (!ASSERT_TRUE(a != NULL, "maglev"))
			return;
		sp = fx_spread(&flows, a, set, sizes[s]);
		ASSERT_OK(replay_random_band(&flows, set, sizes[s], REPS, 1, &rnd),
			  "random band");
		printf("  N=%zu: maglev max/mean %.4f, random 1st-99th pct "
		       "%.4f-%.4f (median %.4f)\n", sizes[s], sp.max_mean,
		       rnd.max_mean[RM_FLOWS].p01, rnd.max_mean[RM_FLOWS].p99,
		       rnd.max_mean[RM_FLOWS].p50);
		ASSERT_DBL(sp.max_mean, <=, rnd.max_mean[RM_FLOWS].p99,
			   "maglev max/mean below the band's top");
		ASSERT_DBL(sp.max_mean, >=, rnd.max_mean[RM_FLOWS].p01,
			   "maglev max/mean above the band's bottom");
		replay_random_free(&rnd);
		free(a);
		free(set);
	}
}

static void ring_one_point_worse_than_a_hundred(void)
{
	size_t s;

	if (!load_trace())
		return;
	for (s = 0; s < 2; s++) {
		struct lb_backend *set = fx_set(sizes[s]);
		int *v1 = fx_assign(LB_RING, M, 1, set, sizes[s], &flows);
		int *v100 = fx_assign(LB_RING, M, 100, set, sizes[s], &flows);
		struct replay_spread s1, s100;
		struct replay_random rnd;

		if (!ASSERT_TRUE(v1 && v100, "ring"))
			return;
		s1 = fx_spread(&flows, v1, set, sizes[s]);
		s100 = fx_spread(&flows, v100, set, sizes[s]);
		ASSERT_OK(replay_random_band(&flows, set, sizes[s], 200, 1, &rnd),
			  "random band");
		printf("  N=%zu: ring V=1 max/mean %.3f cv %.3f; V=100 max/mean "
		       "%.3f cv %.3f; random 99th pct %.3f\n", sizes[s],
		       s1.max_mean, s1.cv, s100.max_mean, s100.cv,
		       rnd.max_mean[RM_FLOWS].p99);
		/* 1/sqrt(V): about ten times the spread; ask for three. */
		ASSERT_DBL(s1.cv, >, 3 * s100.cv, "V=1 spreads 3x worse or more");
		ASSERT_DBL(s1.max_mean, >, s100.max_mean, "busiest backend");
		ASSERT_DBL(s1.max_mean, >, rnd.max_mean[RM_FLOWS].p99,
			   "V=1 outside the random band");
		replay_random_free(&rnd);
		free(v1);
		free(v100);
		free(set);
	}
}

struct change {
	int *before, *after;
	struct replay_disruption d;
};

static bool run_change(enum lb_algo_kind kind, __u32 vnodes,
		       const struct lb_backend *b, size_t nb,
		       const struct lb_backend *a, size_t na, struct change *c)
{
	c->before = fx_assign(kind, M, vnodes, b, nb, &flows);
	c->after = fx_assign(kind, M, vnodes, a, na, &flows);
	if (!ASSERT_TRUE(c->before && c->after, lb_algo_name(kind)))
		return false;
	return ASSERT_OK(replay_disruption(&flows, b, nb, c->before, a, na,
					   c->after, &c->d), "disruption");
}

static void change_free(struct change *c)
{
	free(c->before);
	free(c->after);
}

static void one_backend_leaves(void)
{
	size_t s, i;

	if (!load_trace())
		return;
	for (s = 0; s < 2; s++) {
		size_t n = sizes[s];
		struct lb_backend *set = fx_set(n);
		struct change mod = {}, ring = {}, mag = {};
		__u64 wrong = 0;

		/* The last backend leaves: the set after is the first n-1. */
		if (!run_change(LB_MODULO, 100, set, n, set, n - 1, &mod) ||
		    !run_change(LB_RING, 100, set, n, set, n - 1, &ring) ||
		    !run_change(LB_MAGLEV, 100, set, n, set, n - 1, &mag))
			return;
		printf("  N=%zu: modulo moves %.4f (1-1/N %.4f); ring %llu of "
		       "%llu leaving flows, %llu others; maglev %llu leaving + "
		       "%llu others (%.3f%%)\n", n, mod.d.fraction, 1 - 1.0 / n,
		       (unsigned long long)ring.d.moved,
		       (unsigned long long)ring.d.on_leaving,
		       (unsigned long long)ring.d.moved_kept,
		       (unsigned long long)mag.d.on_leaving,
		       (unsigned long long)mag.d.moved_kept,
		       100.0 * mag.d.moved_kept / flows.n);
		ASSERT_DBL(fabs(mod.d.fraction - (1 - 1.0 / n)), <, 0.02,
			   "modulo moves about 1 - 1/N");
		/* The ring: a flow moves if and only if its backend left. */
		for (i = 0; i < flows.n; i++) {
			bool left = ring.before[i] == (int)n - 1;
			bool moved = left || ring.after[i] != ring.before[i];

			wrong += moved != left;
		}
		ASSERT_EQ(wrong, 0, "ring: moved flows are the leaving ones");
		ASSERT_EQ(ring.d.moved, ring.d.on_leaving, "ring: moved");
		ASSERT_EQ(ring.d.moved_kept, 0, "ring: nothing else moves");
		/* Maglev: every leaving flow moves (it must), few others. */
		ASSERT_EQ(mag.d.moved, mag.d.on_leaving + mag.d.moved_kept,
			  "maglev: moved = leaving + others");
		ASSERT_LE(mag.d.moved_kept * 100, flows.n,
			  "maglev: at most 1% of all flows move needlessly");
		ASSERT_DBL(fabs(mag.d.optimum - 1.0 / n), <, 1e-12, "optimum 1/N");
		change_free(&mod);
		change_free(&ring);
		change_free(&mag);
		free(set);
	}
}

static void one_backend_joins(void)
{
	size_t s, i;

	if (!load_trace())
		return;
	for (s = 0; s < 2; s++) {
		size_t n = sizes[s];
		struct lb_backend *set = fx_set(n + 1);
		struct change ring = {}, mag = {};
		__u64 not_to_new = 0;

		if (!run_change(LB_RING, 100, set, n, set, n + 1, &ring) ||
		    !run_change(LB_MAGLEV, 100, set, n, set, n + 1, &mag))
			return;
		for (i = 0; i < flows.n; i++)
			not_to_new += ring.after[i] != ring.before[i] &&
				      ring.after[i] != (int)n;
		printf("  N=%zu+1: ring moves %.4f, maglev %.4f (%.3f%% between "
		       "old backends), optimum %.4f\n", n, ring.d.fraction,
		       mag.d.fraction, 100.0 * mag.d.moved_kept / flows.n,
		       mag.d.optimum);
		ASSERT_EQ(not_to_new, 0, "ring: flows move only to the new backend");
		ASSERT_EQ(ring.d.moved_kept, 0, "ring: none between old backends");
		ASSERT_LE(mag.d.moved_kept * 100, flows.n,
			  "maglev: at most 1% more than the new backend's");
		ASSERT_DBL(fabs(mag.d.optimum - 1.0 / (n + 1)), <, 1e-12,
			   "optimum K/(N+K)");
		change_free(&ring);
		change_free(&mag);
		free(set);
	}
}

/* The least a change must move: total variation between the shares. */
static void optimum_of_a_change(void)
{
	struct lb_backend *set = fx_set(12), *re = fx_set(4);

	ASSERT_DBL(fabs(replay_optimum(set, 10, set, 9) - 0.1), <, 1e-12,
		   "remove 1 of 10");
	ASSERT_DBL(fabs(replay_optimum(set, 10, set, 12) - 2.0 / 12), <, 1e-12,
		   "add 2 to 10");
	re[0].weight = 3;	/* 1/4 each -> 1/2, 1/6, 1/6, 1/6 */
	ASSERT_DBL(fabs(replay_optimum(set, 4, re, 4) - 0.25), <, 1e-12,
		   "reweight one of 4 to 3");
	re[0].weight = 0;	/* draining one of 4 is removing it */
	ASSERT_DBL(fabs(replay_optimum(set, 4, re, 4) - 0.25), <, 1e-12,
		   "drain one of 4");
	free(set);
	free(re);
}

/* Flows that differ only in the server's address are one flow at the VIP;
 * the server port stays, and the client is the side that opened. */
static void flows_at_the_vip(void)
{
	struct trace t = {};
	struct trace_flow tf[3] = {};
	struct replay_flows rf;
	char vip[INET_ADDRSTRLEN];
	int i;

	for (i = 0; i < 3; i++) {
		tf[i].tuple.family = XLB_AF_INET;
		tf[i].tuple.proto = 6;
		inet_pton(AF_INET, "198.51.100.1", tf[i].tuple.src);
		inet_pton(AF_INET, i ? "192.0.2.2" : "192.0.2.1", tf[i].tuple.dst);
		tf[i].tuple.sport = htons(40000);
		tf[i].tuple.dport = htons(i == 2 ? 80 : 443);
		tf[i].packets = i + 1;
		tf[i].bytes = 100 * (i + 1);
	}
	t.flows = tf;
	t.n = 3;
	if (!ASSERT_OK(replay_flows_build(&t, fx_key, &rf), "build"))
		return;
	ASSERT_EQ(rf.n, 2, "two flows at the VIP");
	ASSERT_EQ(rf.n_trace, 3, "three in the trace");
	ASSERT_EQ(rf.of_trace[0], rf.of_trace[1], "same port: one flow");
	ASSERT_NE(rf.of_trace[0], rf.of_trace[2], "other port: another flow");
	ASSERT_EQ(rf.flows[rf.of_trace[0]].packets, 3, "packets summed");
	ASSERT_EQ(rf.flows[rf.of_trace[0]].trace_flows, 2, "trace flows");
	inet_ntop(AF_INET, rf.flows[0].tuple.dst, vip, sizeof(vip));
	ASSERT_TRUE(!strcmp(vip, REPLAY_VIP4), "destination is the VIP");
	ASSERT_EQ(rf.flows[0].tuple.sport, htons(40000), "client port kept");
	replay_flows_free(&rf);
	ASSERT_EQ(replay_flows_build(&(struct trace){}, fx_key, &rf), -ENODATA,
		  "no flow");
}

static void random_band_is_ordered_and_reproducible(void)
{
	struct lb_backend *set = fx_set(10);
	struct replay_random a, b;

	if (!load_trace())
		return;
	ASSERT_OK(replay_random_band(&flows, set, 10, 200, 5, &a), "band");
	ASSERT_OK(replay_random_band(&flows, set, 10, 200, 5, &b), "again");
	ASSERT_DBL(a.max_mean[RM_FLOWS].p99, ==, b.max_mean[RM_FLOWS].p99,
		   "same seed, same band");
	ASSERT_DBL(a.max_mean[RM_FLOWS].p01, >=, 1, "max/mean >= 1");
	ASSERT_DBL(a.max_mean[RM_FLOWS].p01, <, a.max_mean[RM_FLOWS].p50, "p01 < p50");
	ASSERT_DBL(a.max_mean[RM_FLOWS].p50, <, a.max_mean[RM_FLOWS].p99, "p50 < p99");
	ASSERT_DBL(a.min_mean[RM_FLOWS].p99, <=, 1, "min/mean <= 1");
	/* Zipf-sized flows: packets spread far less evenly than flows. */
	ASSERT_DBL(a.max_mean[RM_PACKETS].p50, >, a.max_mean[RM_FLOWS].p50,
		   "packets vary more than flows");
	ASSERT_EQ(a.n_rank, 10, "a band per rank");
	ASSERT_DBL(a.by_rank[0].p50, >, a.by_rank[9].p50, "busiest above idlest");
	replay_random_free(&a);
	replay_random_free(&b);
	free(set);
}

TEST_MAIN(
	TEST(flows_at_the_vip),
	TEST(optimum_of_a_change),
	TEST(random_band_is_ordered_and_reproducible),
	TEST(maglev_flows_within_the_random_band),
	TEST(ring_one_point_worse_than_a_hundred),
	TEST(one_backend_leaves),
	TEST(one_backend_joins),
)
