// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The theory the replay comparison rests on, reproduced from the share of
 * the hash space each backend owns (no flows needed):
 *   - a ring with one point per backend: the busiest backend's share,
 *     averaged over 200 sets of N = 16 names, is H(16)/16, 3.38 times the
 *     fair share (the largest of N spacings of random points on a circle);
 *   - with V points per backend the spread of the shares shrinks like
 *     1/sqrt(V);
 *   - Maglev's busiest backend holds exactly ceil(M/N) slots;
 *   - modulo moves 1 - 1/(N+1) of the keys when growing from N to N+1.
 * The shares of the ring and of modulo are measured on evenly spaced
 * points of the hash space (lb_slot()), Maglev's on its table.
 */
#include <math.h>
#include "lb_algo.h"
#include "testlib.h"

#define SAMPLES	65537	/* points of the hash space */
#define N	16

static __u64 rng = 0x7468656f7279ULL;

static __u64 next_random(void)
{
	__u64 z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* n backend names never seen before: addresses in 2001:db8::/32. */
static void random_names(struct lb_backend *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		__u64 r = next_random();

		snprintf(b[i].id, sizeof(b[i].id), "2001:db8:%x:%x::%x",
			 (unsigned int)(r & 0xffff), (unsigned int)(r >> 16 & 0xffff),
			 (unsigned int)(r >> 32 & 0xffff));
		b[i].weight = 1;
	}
}

/* Each backend's share of the hash space under one algorithm. */
static bool shares(enum lb_algo_kind kind, __u32 vnodes,
		   const struct lb_backend *b, size_t n, double *share)
{
	struct lb_params p = { .table_size = SAMPLES, .vnodes = vnodes };
	struct lb *lb;
	__u32 k;

	if (!ASSERT_OK(lb_build(kind, b, n, &p, &lb), lb_algo_name(kind)))
		return false;
	memset(share, 0, n * sizeof(*share));
	for (k = 0; k < SAMPLES; k++)
		share[lb_slot(lb, k)] += 1.0 / SAMPLES;
	lb_free(lb);
	return true;
}

static double max_of(const double *v, size_t n)
{
	double m = v[0];
	size_t i;

	for (i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

static double cv_of(const double *v, size_t n)
{
	double sum = 0, sq = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		sum += v[i];
		sq += v[i] * v[i];
	}
	sum /= n;
	return sqrt(fmax(sq / n - sum * sum, 0)) / sum;
}

static void ring_one_point_busiest_is_harmonic(void)
{
	struct lb_backend b[N];
	double share[N], total = 0, h = 0;
	int set, i;

	for (i = 1; i <= N; i++)
		h += 1.0 / i;
	for (set = 0; set < 200; set++) {
		random_names(b, N);
		if (!shares(LB_RING, 1, b, N, share))
			return;
		total += max_of(share, N);
	}
	total /= 200;
	printf("  busiest share %.4f (%.2fx fair), H16/16 = %.4f (%.2fx)\n",
	       total, total * N, h / N, h);
	ASSERT_DBL(fabs(total / (h / N) - 1), <, 0.10,
		   "within 10% of H16/16");
}

static void ring_spread_shrinks_like_one_over_sqrt_v(void)
{
	static const __u32 vs[] = { 1, 16, 100, 256 };
	struct lb_backend b[N];
	double share[N], prev = INFINITY;
	size_t v;
	int set;

	for (v = 0; v < 4; v++) {
		/* Shares of N backends of V points each are Dirichlet(V):
		 * cv^2 = (N - 1) / (N V + 1). */
		double expect = sqrt((N - 1.0) / (N * vs[v] + 1.0));
		double cv = 0, busiest = 0;

		for (set = 0; set < 20; set++) {
			random_names(b, N);
			if (!shares(LB_RING, vs[v], b, N, share))
				return;
			cv += cv_of(share, N) / 20;
			busiest += max_of(share, N) * N / 20;
		}
		printf("  V=%3u: cv %.4f (theory %.4f), cv*sqrt(V) %.3f, "
		       "busiest %.3fx fair\n", vs[v], cv, expect,
		       cv * sqrt(vs[v]), busiest);
		ASSERT_DBL(fabs(cv / expect - 1), <, 0.15, "cv as 1/sqrt(V)");
		ASSERT_DBL(cv, <, prev, "more points, less spread");
		prev = cv;
	}
}

static void maglev_busiest_holds_ceil_m_over_n(void)
{
	static const size_t ns[] = { 3, 10, 16, 100, 1000 };
	static __u32 table[SAMPLES];
	struct lb_backend *b;
	size_t i, k;

	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		__u32 *count = calloc(ns[i], sizeof(*count)), max = 0, min = SAMPLES;

		b = calloc(ns[i], sizeof(*b));
		if (!ASSERT_TRUE(b && count, "memory"))
			return;
		random_names(b, ns[i]);
		if (!ASSERT_OK(maglev_build(b, ns[i], SAMPLES, table), "maglev"))
			return;
		for (k = 0; k < SAMPLES; k++)
			count[table[k]]++;
		for (k = 0; k < ns[i]; k++) {
			max = count[k] > max ? count[k] : max;
			min = count[k] < min ? count[k] : min;
		}
		printf("  N=%4zu: busiest %u slots, idlest %u, ceil(M/N) %zu\n",
		       ns[i], max, min, (SAMPLES + ns[i] - 1) / ns[i]);
		ASSERT_EQ(max, (SAMPLES + ns[i] - 1) / ns[i], "busiest = ceil(M/N)");
		ASSERT_EQ(min, SAMPLES / ns[i], "idlest = floor(M/N)");
		free(count);
		free(b);
	}
}

static void modulo_growing_moves_all_but_one_in_n_plus_one(void)
{
	struct lb_params p = { .table_size = SAMPLES };
	struct lb_backend b[N + 1];
	struct lb *before, *after;
	__u32 k, moved = 0;
	int i;

	/* Names that rank in order, so the newcomer is the last bucket and
	 * only the arithmetic of the modulus moves keys. */
	for (i = 0; i <= N; i++) {
		snprintf(b[i].id, sizeof(b[i].id), "backend-%02d", i);
		b[i].weight = 1;
	}
	if (!ASSERT_OK(lb_build(LB_MODULO, b, N, &p, &before), "N") ||
	    !ASSERT_OK(lb_build(LB_MODULO, b, N + 1, &p, &after), "N+1"))
		return;
	for (k = 0; k < SAMPLES; k++)
		moved += lb_slot(before, k) != lb_slot(after, k);
	printf("  N=%d -> %d: %.4f of the hash space moves, 1 - 1/(N+1) = %.4f\n",
	       N, N + 1, (double)moved / SAMPLES, 1 - 1.0 / (N + 1));
	ASSERT_DBL(fabs((double)moved / SAMPLES - (1 - 1.0 / (N + 1))), <, 0.005,
		   "1 - 1/(N+1)");
	lb_free(before);
	lb_free(after);
}

TEST_MAIN(
	TEST(ring_one_point_busiest_is_harmonic),
	TEST(ring_spread_shrinks_like_one_over_sqrt_v),
	TEST(maglev_busiest_holds_ceil_m_over_n),
	TEST(modulo_growing_moves_all_but_one_in_n_plus_one),
)
