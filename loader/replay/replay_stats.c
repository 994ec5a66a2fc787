// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Balance and disruption of an assignment of flows to backends, and the
 * yardsticks they are read against: a uniformly random assignment of the
 * same flows (balance) and the least movement a change allows (disruption).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

void replay_loads(const struct replay_flows *rf, const int *assign,
		  size_t n_backends, struct replay_load *loads)
{
	size_t i;

	memset(loads, 0, n_backends * sizeof(*loads));
	for (i = 0; i < rf->n; i++) {
		struct replay_load *l;

		if (assign[i] < 0 || (size_t)assign[i] >= n_backends)
			continue;
		l = &loads[assign[i]];
		l->v[RM_FLOWS]++;
		l->v[RM_PACKETS] += rf->flows[i].packets;
		l->v[RM_BYTES] += rf->flows[i].bytes;
	}
}

static __u64 weight_sum(const struct lb_backend *backends, size_t n)
{
	__u64 w = 0;
	size_t i;

	for (i = 0; i < n; i++)
		w += backends[i].weight;
	return w;
}

/* Spread of per-backend values against shares proportional to weight. */
static void spread_of(const double *v, const struct lb_backend *backends,
		      size_t n, struct replay_spread *out)
{
	double total = 0, sum = 0, sq = 0, max = 0, min = INFINITY;
	__u64 w = weight_sum(backends, n);
	size_t i, k = 0;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < n; i++)
		total += v[i];
	if (!w || total <= 0)
		return;
	for (i = 0; i < n; i++) {
		double r;

		if (!backends[i].weight)
			continue;
		r = v[i] / (total * backends[i].weight / w);
		max = r > max ? r : max;
		min = r < min ? r : min;
		sum += r;
		sq += r * r;
		k++;
	}
	out->max_mean = max;
	out->min_mean = min;
	/* The ratios average to 1 only for equal weights; divide by their
	 * own mean so the coefficient means the same either way. */
	sum /= k;
	out->cv = sum > 0 ? sqrt(fmax(sq / k - sum * sum, 0)) / sum : 0;
}

void replay_spread(const struct replay_load *loads,
		   const struct lb_backend *backends, size_t n,
		   enum replay_metric m, struct replay_spread *out)
{
	double *v = calloc(n ? n : 1, sizeof(*v));
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!v)
		return;
	for (i = 0; i < n; i++)
		v[i] = loads[i].v[m];
	spread_of(v, backends, n, out);
	free(v);
}

/* splitmix64: small, fast and good enough to draw backends. */
static __u64 rng_next(__u64 *s)
{
	__u64 z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Walker's alias method: one draw picks a backend with probability
 * proportional to its weight in constant time. */
struct alias {
	double *prob;
	__u32 *other;
	size_t n;
};

static int alias_build(struct alias *a, const struct lb_backend *backends,
		       size_t n)
{
	__u32 *small = calloc(n, sizeof(*small)), *large = calloc(n, sizeof(*large));
	double w = (double)weight_sum(backends, n);
	size_t ns = 0, nl = 0, i;
	int err = -ENOMEM;

	a->n = n;
	a->prob = calloc(n, sizeof(*a->prob));
	a->other = calloc(n, sizeof(*a->other));
	if (!small || !large || !a->prob || !a->other)
		goto cleanup;
	for (i = 0; i < n; i++) {
		a->prob[i] = backends[i].weight * n / w;
		a->other[i] = i;
		if (a->prob[i] < 1)
			small[ns++] = i;
		else
			large[nl++] = i;
	}
	while (ns && nl) {
		__u32 s = small[--ns], l = large[nl - 1];

		a->other[s] = l;
		a->prob[l] -= 1 - a->prob[s];
		if (a->prob[l] < 1) {
			nl--;
			small[ns++] = l;
		}
	}
	/* What is left is 1 up to rounding. */
	while (nl)
		a->prob[large[--nl]] = 1;
	while (ns)
		a->prob[small[--ns]] = 1;
	err = 0;
cleanup:
	free(small);
	free(large);
	return err;
}

static size_t alias_draw(const struct alias *a, __u64 *rng)
{
	__u64 r = rng_next(rng);
	size_t i = (size_t)(((unsigned __int128)r * a->n) >> 64);
	/* The low bits chose nothing above (a->n is far below 2^32), so they
	 * are fresh for the coin. */
	double coin = (double)(r & 0xffffffffULL) / 4294967296.0;

	return coin < a->prob[i] ? i : a->other[i];
}

static void alias_free(struct alias *a)
{
	free(a->prob);
	free(a->other);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Percentiles of a sorted sample, interpolating between order statistics. */
static double percentile(const double *sorted, size_t n, double p)
{
	double pos = p * (n - 1);
	size_t lo = (size_t)pos;

	if (lo + 1 >= n)
		return sorted[n - 1];
	return sorted[lo] + (pos - lo) * (sorted[lo + 1] - sorted[lo]);
}

static void band_of(double *sample, size_t n, struct replay_band *b)
{
	qsort(sample, n, sizeof(*sample), cmp_double);
	b->p01 = percentile(sample, n, 0.01);
	b->p50 = percentile(sample, n, 0.50);
	b->p99 = percentile(sample, n, 0.99);
}

unsigned int replay_random_reps(size_t flows)
{
	size_t reps = flows ? 20000000 / flows : 1000;

	return reps > 1000 ? 1000 : reps < 200 ? 200 : (unsigned int)reps;
}

static bool equal_weights(const struct lb_backend *backends, size_t n)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (backends[i].weight != backends[0].weight)
			return false;
	return n > 0;
}

static int cmp_double_desc(const void *a, const void *b)
{
	return cmp_double(b, a);
}

/* The k-th busiest backend's band over the runs: rows[r * n + k]. */
static int rank_bands(double *rows, unsigned int reps, size_t n,
		      struct replay_random *out)
{
	double *col = calloc(reps, sizeof(*col));
	unsigned int r;
	size_t k;

	out->by_rank = calloc(n, sizeof(*out->by_rank));
	if (!col || !out->by_rank) {
		free(col);
		return -ENOMEM;
	}
	for (k = 0; k < n; k++) {
		for (r = 0; r < reps; r++)
			col[r] = rows[(size_t)r * n + k];
		band_of(col, reps, &out->by_rank[k]);
	}
	out->n_rank = n;
	free(col);
	return 0;
}

int replay_random_band(const struct replay_flows *rf,
		       const struct lb_backend *backends, size_t n,
		       unsigned int reps, __u64 seed,
		       struct replay_random *out)
{
	double *sample[3][RM__MAX] = {}, *v = NULL, *rows = NULL;
	struct replay_load *loads = NULL;
	struct alias a = {};
	unsigned int r;
	int m, s, err;
	size_t i;

	memset(out, 0, sizeof(*out));
	out->reps = reps;
	err = alias_build(&a, backends, n);
	if (err)
		goto cleanup;
	err = -ENOMEM;
	loads = calloc(n, sizeof(*loads));
	v = calloc(n, sizeof(*v));
	if (!loads || !v)
		goto cleanup;
	/* Per-rank bands need every run's sorted loads: bounded memory. */
	if (equal_weights(backends, n) && (size_t)reps * n <= (8U << 20) &&
	    !(rows = calloc((size_t)reps * n, sizeof(*rows))))
		goto cleanup;
	for (s = 0; s < 3; s++)
		for (m = 0; m < RM__MAX; m++)
			if (!(sample[s][m] = calloc(reps, sizeof(double))))
				goto cleanup;
	for (r = 0; r < reps; r++) {
		memset(loads, 0, n * sizeof(*loads));
		for (i = 0; i < rf->n; i++) {
			struct replay_load *l = &loads[alias_draw(&a, &seed)];

			l->v[RM_FLOWS]++;
			l->v[RM_PACKETS] += rf->flows[i].packets;
			l->v[RM_BYTES] += rf->flows[i].bytes;
		}
		for (m = 0; m < RM__MAX; m++) {
			struct replay_spread sp;

			for (i = 0; i < n; i++)
				v[i] = loads[i].v[m];
			spread_of(v, backends, n, &sp);
			sample[0][m][r] = sp.max_mean;
			sample[1][m][r] = sp.min_mean;
			sample[2][m][r] = sp.cv;
		}
		if (!rows)
			continue;
		for (i = 0; i < n; i++)
			rows[(size_t)r * n + i] = (double)loads[i].v[RM_FLOWS] *
						  n / (rf->n ? rf->n : 1);
		qsort(rows + (size_t)r * n, n, sizeof(*rows), cmp_double_desc);
	}
	for (m = 0; m < RM__MAX; m++) {
		band_of(sample[0][m], reps, &out->max_mean[m]);
		band_of(sample[1][m], reps, &out->min_mean[m]);
		band_of(sample[2][m], reps, &out->cv[m]);
	}
	err = rows ? rank_bands(rows, reps, n, out) : 0;
cleanup:
	for (s = 0; s < 3; s++)
		for (m = 0; m < RM__MAX; m++)
			free(sample[s][m]);
	free(rows);
	free(v);
	free(loads);
	alias_free(&a);
	if (err)
		replay_random_free(out);
	return err;
}

void replay_random_free(struct replay_random *rnd)
{
	free(rnd->by_rank);
	rnd->by_rank = NULL;
	rnd->n_rank = 0;
}

/* Index of the backend named id in set, or -1. */
static long find_id(const struct lb_backend *set, size_t n, const char *id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(set[i].id, id))
			return i;
	return -1;
}

double replay_optimum(const struct lb_backend *before, size_t n_before,
		      const struct lb_backend *after, size_t n_after)
{
	double wb = (double)weight_sum(before, n_before);
	double wa = (double)weight_sum(after, n_after);
	double tv = 0;
	size_t i;

	if (wb <= 0 || wa <= 0)
		return 0;
	for (i = 0; i < n_before; i++) {
		long j = find_id(after, n_after, before[i].id);
		double sa = j < 0 ? 0 : after[j].weight / wa;

		tv += fabs(before[i].weight / wb - sa);
	}
	for (i = 0; i < n_after; i++)
		if (find_id(before, n_before, after[i].id) < 0)
			tv += after[i].weight / wa;
	return tv / 2;
}

/* For each backend of set x: its index in set y (-1 when absent), and
 * whether it is in use in both (present with a positive weight in each). */
static int match_sets(const struct lb_backend *x, size_t nx,
		      const struct lb_backend *y, size_t ny, long **map,
		      bool **kept)
{
	size_t i;

	*map = calloc(nx ? nx : 1, sizeof(**map));
	*kept = calloc(nx ? nx : 1, sizeof(**kept));
	if (!*map || !*kept)
		return -ENOMEM;
	for (i = 0; i < nx; i++) {
		(*map)[i] = find_id(y, ny, x[i].id);
		(*kept)[i] = (*map)[i] >= 0 && x[i].weight &&
			     y[(*map)[i]].weight;
	}
	return 0;
}

int replay_disruption(const struct replay_flows *rf,
		      const struct lb_backend *b, size_t nb, const int *before,
		      const struct lb_backend *a, size_t na, const int *after,
		      struct replay_disruption *out)
{
	bool *kept_b = NULL, *kept_a = NULL;
	long *map_b = NULL, *map_a = NULL;
	size_t i;
	int err;

	memset(out, 0, sizeof(*out));
	err = match_sets(b, nb, a, na, &map_b, &kept_b);
	if (!err)
		err = match_sets(a, na, b, nb, &map_a, &kept_a);
	if (err)
		goto cleanup;
	out->flows = rf->n;
	for (i = 0; i < rf->n; i++) {
		const struct replay_flow *f = &rf->flows[i];

		if (!kept_b[before[i]])
			out->on_leaving++;
		if (map_b[before[i]] == after[i])
			continue;
		out->moved++;
		out->moved_v[RM_FLOWS]++;
		out->moved_v[RM_PACKETS] += f->packets;
		out->moved_v[RM_BYTES] += f->bytes;
		if (kept_b[before[i]] && kept_a[after[i]])
			out->moved_kept++;
	}
	out->fraction = rf->n ? (double)out->moved / rf->n : 0;
	out->optimum = replay_optimum(b, nb, a, na);
	out->ratio = out->optimum > 0 ? out->fraction / out->optimum : 0;
cleanup:
	free(map_b);
	free(map_a);
	free(kept_b);
	free(kept_a);
	return err;
}
