// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The replay checks on real captures ($XLB_PCAP_DIR, else ../shared/pcaps,
 * read in place), per capture and over all of them together, with 10 and
 * 100 backends, M = 65537, the last backend leaving:
 *   - the ring moves exactly the leaving backend's flows, in every capture;
 *   - Maglev moves those plus few others: per capture no more than chance
 *     allows given the share of table slots that changed hands among the
 *     staying backends (binomial, false alarm 1e-6), over all captures at
 *     most 1% of the flows;
 *   - modulo moves about 1 - 1/N: per capture within the binomial band of
 *     the hash space's moved share, over all within 2 points of 1 - 1/N;
 *   - Maglev's flow max/mean: over all captures inside the band of uniform
 *     random assignments; per capture above that band's 99th percentile
 *     no more often than a 1% event can be, by chance;
 *   - the ring with one point per backend is worse than with 100 on every
 *     capture of 1000 flows or more, and over all.
 * Most captures hold few flows, so per capture the random band is wide: it
 * is computed for each, never assumed.
 */
#include <dirent.h>
#include <math.h>
#include <sys/stat.h>
#include "replay_fixtures.h"
#include "testlib.h"

#define M		65537
#define ALPHA		1e-6
#define MAX_CAPTURES	1024

static const size_t sizes[] = { 10, 100 };

/* Tables built once per set, shared by every capture. */
enum { MAGLEV, RING1, RING100, MODULO, N_ALGOS };
static const struct {
	enum lb_algo_kind kind;
	__u32 vnodes;
} algos[N_ALGOS] = {
	[MAGLEV] = { LB_MAGLEV, 100 }, [RING1] = { LB_RING, 1 },
	[RING100] = { LB_RING, 100 }, [MODULO] = { LB_MODULO, 100 },
};

struct tables {
	size_t n;
	struct lb_backend *set;
	struct lb *lb[N_ALGOS][2];	/* before, after (last one gone) */
	double p_maglev_extra;		/* of the staying backends' slots, the
					 * share that changed hands */
	double p_modulo;		/* hash space moved by modulo */
};

/*
 * The central band of Binomial(n, p) holding all but alpha: *lo, *hi with
 * P(X < lo) <= alpha/2 and P(X > hi) <= alpha/2. The probabilities come
 * from the ratio of successive terms, scaled at the mode so none
 * underflows where it matters.
 */
static void binomial_band(__u64 n, double p, double alpha, __u64 *lo, __u64 *hi)
{
	double *w = calloc(n + 1, sizeof(*w)), total = 0, acc;
	__u64 mode = (__u64)((n + 1) * p), k;

	*lo = 0;
	*hi = n;
	if (!w || p <= 0 || p >= 1) {
		if (p <= 0)
			*hi = 0;
		if (p >= 1)
			*lo = n;
		free(w);
		return;
	}
	if (mode > n)
		mode = n;
	w[mode] = 1;
	for (k = mode; k < n; k++)
		w[k + 1] = w[k] * (n - k) / (k + 1) * p / (1 - p);
	for (k = mode; k > 0; k--)
		w[k - 1] = w[k] * k / (n - k + 1) * (1 - p) / p;
	for (k = 0; k <= n; k++)
		total += w[k];
	for (acc = 0, k = 0; k <= n && (acc += w[k]) / total <= alpha / 2; k++)
		*lo = k + 1;
	for (acc = 0, k = n; k > 0 && (acc += w[k]) / total <= alpha / 2; k--)
		*hi = k - 1;
	free(w);
}

static bool build_tables(struct tables *t, size_t n)
{
	struct lb_params p = { .table_size = M };
	__u32 k, extra = 0, staying = 0, moved = 0;
	int a, ph;

	t->n = n;
	t->set = fx_set(n);
	for (a = 0; a < N_ALGOS; a++) {
		p.vnodes = algos[a].vnodes;
		for (ph = 0; ph < 2; ph++)
			if (!ASSERT_OK(lb_build(algos[a].kind, t->set, n - ph, &p,
						&t->lb[a][ph]), "build"))
				return false;
	}
	/* The set after is the first n-1 of the same array: an index means
	 * the same backend before and after. */
	for (k = 0; k < M; k++) {
		int b = lb_slot(t->lb[MAGLEV][0], k);

		staying += b != (int)n - 1;
		extra += b != (int)n - 1 && lb_slot(t->lb[MAGLEV][1], k) != b;
		moved += lb_slot(t->lb[MODULO][0], k) != lb_slot(t->lb[MODULO][1], k);
	}
	t->p_maglev_extra = (double)extra / staying;
	t->p_modulo = (double)moved / M;
	return true;
}

static void free_tables(struct tables *t)
{
	int a, ph;

	for (a = 0; a < N_ALGOS; a++)
		for (ph = 0; ph < 2; ph++)
			lb_free(t->lb[a][ph]);
	free(t->set);
}

/* What one capture (or all) showed for one set. */
struct result {
	double maglev_max, band_p01, band_p99, ring1_max, ring100_max;
	double modulo_moved;
	__u64 flows, ring_moved, ring_leaving, ring_kept, maglev_kept;
	__u64 maglev_kept_hi, modulo_lo, modulo_hi, modulo_n;
};

static void lookup_all(const struct lb *lb, const struct replay_flows *rf,
		       int *out)
{
	size_t i;

	for (i = 0; i < rf->n; i++)
		out[i] = lb_lookup(lb, rf->flows[i].hash);
}

static bool measure(const struct tables *t, const struct replay_flows *rf,
		    struct result *r)
{
	int *as[N_ALGOS][2] = {}, a, ph;
	struct replay_disruption d;
	struct replay_random rnd;
	bool ok = false;
	__u64 lo;

	memset(r, 0, sizeof(*r));
	r->flows = rf->n;
	for (a = 0; a < N_ALGOS; a++) {
		for (ph = 0; ph < 2; ph++) {
			as[a][ph] = calloc(rf->n, sizeof(int));
			if (!ASSERT_TRUE(as[a][ph] != NULL, "memory"))
				goto cleanup;
			lookup_all(t->lb[a][ph], rf, as[a][ph]);
		}
	}
	r->maglev_max = fx_spread(rf, as[MAGLEV][0], t->set, t->n).max_mean;
	r->ring1_max = fx_spread(rf, as[RING1][0], t->set, t->n).max_mean;
	r->ring100_max = fx_spread(rf, as[RING100][0], t->set, t->n).max_mean;
	if (!ASSERT_OK(replay_random_band(rf, t->set, t->n,
					  replay_random_reps(rf->n), 1, &rnd),
		       "random band"))
		goto cleanup;
	r->band_p01 = rnd.max_mean[RM_FLOWS].p01;
	r->band_p99 = rnd.max_mean[RM_FLOWS].p99;
	replay_random_free(&rnd);

	replay_disruption(rf, t->set, t->n, as[RING100][0], t->set, t->n - 1,
			  as[RING100][1], &d);
	r->ring_moved = d.moved;
	r->ring_leaving = d.on_leaving;
	r->ring_kept = d.moved_kept;
	replay_disruption(rf, t->set, t->n, as[MAGLEV][0], t->set, t->n - 1,
			  as[MAGLEV][1], &d);
	r->maglev_kept = d.moved_kept;
	binomial_band(rf->n - d.on_leaving, t->p_maglev_extra, ALPHA, &lo,
		      &r->maglev_kept_hi);
	replay_disruption(rf, t->set, t->n, as[MODULO][0], t->set, t->n - 1,
			  as[MODULO][1], &d);
	r->modulo_moved = d.fraction;
	r->modulo_n = d.moved;
	binomial_band(rf->n, t->p_modulo, ALPHA, &r->modulo_lo, &r->modulo_hi);
	ok = true;
cleanup:
	for (a = 0; a < N_ALGOS; a++)
		for (ph = 0; ph < 2; ph++)
			free(as[a][ph]);
	return ok;
}

static const char *pcap_dir(void)
{
	const char *d = getenv("XLB_PCAP_DIR");

	return d && *d ? d : "../shared/pcaps";
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The capture files of the folder, sorted; NULL-terminated. */
static char **list_captures(const char *dir, size_t *n)
{
	char **names = calloc(MAX_CAPTURES + 1, sizeof(*names));
	DIR *d = opendir(dir);
	struct dirent *e;

	*n = 0;
	if (!d || !names) {
		if (d)
			closedir(d);
		free(names);
		return NULL;
	}
	while ((e = readdir(d)) && *n < MAX_CAPTURES) {
		const char *dot = strrchr(e->d_name, '.');
		char path[PATH_MAX];

		if (!dot || (strcmp(dot, ".pcap") && strcmp(dot, ".pcapng") &&
			     strcmp(dot, ".cap")))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		names[(*n)++] = strdup(path);
	}
	closedir(d);
	qsort(names, *n, sizeof(*names), cmp_str);
	return names;
}

static void print_result(const char *name, size_t n, const struct result *r)
{
	printf("  %-44.44s N=%-3zu %6llu %6.3f [%5.3f-%5.3f] %6.3f %6.3f "
	       "%5.3f %4llu/%-4llu %3llu/%-3llu\n", name, n,
	       (unsigned long long)r->flows, r->maglev_max, r->band_p01,
	       r->band_p99, r->ring1_max, r->ring100_max, r->modulo_moved,
	       (unsigned long long)r->ring_moved,
	       (unsigned long long)r->ring_leaving,
	       (unsigned long long)r->maglev_kept,
	       (unsigned long long)r->maglev_kept_hi);
}

static void real_captures(void)
{
	struct tables tables[2] = {};
	struct trace all = {};
	struct replay_flows rf;
	const char *dir = pcap_dir();
	__u64 checks = 0, above = 0, above_hi, lo;
	size_t n_files = 0, f, s;
	char **files;
	struct result r;

	files = list_captures(dir, &n_files);
	if (!files || !n_files) {
		char msg[PATH_MAX + 64];

		snprintf(msg, sizeof(msg), "no captures in %s (set XLB_PCAP_DIR)",
			 dir);
		test_skip(strdup(msg));
		free(files);
		return;
	}
	for (s = 0; s < 2; s++)
		if (!build_tables(&tables[s], sizes[s]))
			return;
	printf("  %-44s %-5s %6s %6s %-13s %6s %6s %5s %9s %7s\n", "capture", "N",
	       "flows", "maglev", "random 1-99%", "ring1", "ring100", "mod",
	       "ring mv/lv", "mag x/hi");
	for (f = 0; f < n_files; f++) {
		struct trace t = {};

		if (!ASSERT_OK(trace_read(&t, files[f], NULL, NULL), files[f]) ||
		    !ASSERT_OK(trace_read(&all, files[f], NULL, NULL), "all"))
			return;
		if (replay_flows_build(&t, fx_key, &rf)) {
			printf("  %s: no TCP or UDP flow\n", files[f]);
			trace_free(&t);
			continue;
		}
		for (s = 0; s < 2; s++) {
			if (!measure(&tables[s], &rf, &r))
				return;
			print_result(strrchr(files[f], '/') + 1, sizes[s], &r);
			ASSERT_EQ(r.ring_moved, r.ring_leaving, files[f]);
			ASSERT_EQ(r.ring_kept, 0, "ring: only the leaving flows");
			ASSERT_LE(r.maglev_kept, r.maglev_kept_hi,
				  "maglev: extra moves within chance");
			ASSERT_GE(r.modulo_n, r.modulo_lo, "modulo: band");
			ASSERT_LE(r.modulo_n, r.modulo_hi, "modulo: band");
			if (r.flows >= 1000)
				ASSERT_DBL(r.ring1_max, >, r.ring100_max,
					   "ring: V=1 worse than V=100");
			checks++;
			above += r.maglev_max > r.band_p99;
		}
		replay_flows_free(&rf);
		trace_free(&t);
	}
	binomial_band(checks, 0.01, ALPHA, &lo, &above_hi);
	printf("  maglev above the random band's 99th percentile in %llu of "
	       "%llu capture checks (chance allows %llu)\n",
	       (unsigned long long)above, (unsigned long long)checks,
	       (unsigned long long)above_hi);
	ASSERT_LE(above, above_hi, "maglev per capture: as random");

	if (!ASSERT_OK(replay_flows_build(&all, fx_key, &rf), "all captures"))
		return;
	for (s = 0; s < 2; s++) {
		if (!measure(&tables[s], &rf, &r))
			return;
		print_result("all captures", sizes[s], &r);
		printf("  all captures, N=%zu: modulo moves %.4f (1-1/N %.4f), "
		       "maglev %.3f%% besides the leaving flows\n", sizes[s],
		       r.modulo_moved, 1 - 1.0 / sizes[s],
		       100.0 * r.maglev_kept / r.flows);
		ASSERT_DBL(r.maglev_max, <=, r.band_p99, "all: maglev in band");
		ASSERT_DBL(r.maglev_max, >=, r.band_p01, "all: maglev in band");
		ASSERT_EQ(r.ring_moved, r.ring_leaving, "all: ring");
		ASSERT_EQ(r.ring_kept, 0, "all: ring");
		ASSERT_LE(r.maglev_kept * 100, r.flows, "all: maglev <= 1% extra");
		ASSERT_DBL(fabs(r.modulo_moved - (1 - 1.0 / sizes[s])), <, 0.02,
			   "all: modulo about 1 - 1/N");
		ASSERT_DBL(r.ring1_max, >, r.ring100_max, "all: ring V=1 worse");
		ASSERT_DBL(r.ring1_max, >, r.band_p99, "all: ring V=1 off band");
	}
	replay_flows_free(&rf);
	trace_free(&all);
	for (s = 0; s < 2; s++)
		free_tables(&tables[s]);
	for (f = 0; f < n_files; f++)
		free(files[f]);
	free(files);
}

/* The band itself, on cases worked by hand. */
static void binomial_band_cases(void)
{
	__u64 lo, hi;

	binomial_band(10, 0.5, 0.05, &lo, &hi);
	/* P(X <= 1) = 11/1024 <= 0.025 < P(X <= 2) = 56/1024 */
	ASSERT_EQ(lo, 2, "B(10, 1/2) 95%: low");
	ASSERT_EQ(hi, 8, "B(10, 1/2) 95%: high");
	binomial_band(1000, 0.001, 1e-6, &lo, &hi);
	ASSERT_EQ(lo, 0, "rare: low");
	ASSERT_GE(hi, 5, "rare: high above the mean");
	ASSERT_LE(hi, 12, "rare: high not absurd");
}

TEST_MAIN(
	TEST(binomial_band_cases),
	TEST(real_captures),
)
