/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Backend sets and table helpers shared by the table-algorithm tests. */
#ifndef XLB_LB_FIXTURES_H
#define XLB_LB_FIXTURES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lb_algo.h"

/* splitmix64: a fixed pseudo-random sequence, so every run tests the
 * same shuffles, weights and flow hashes. */
static inline __u64 fx_next(__u64 *state)
{
	__u64 x = (*state += 0x9e3779b97f4a7c15ULL);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* n backends "backend-0", "backend-1", ... all of the given weight. */
static inline struct lb_backend *fx_backends(size_t n, __u32 weight)
{
	struct lb_backend *b = calloc(n ? n : 1, sizeof(*b));
	size_t i;

	for (i = 0; b && i < n; i++) {
		snprintf(b[i].id, sizeof(b[i].id), "backend-%zu", i);
		b[i].weight = weight;
	}
	return b;
}

static inline struct lb_backend *fx_copy(const struct lb_backend *b, size_t n)
{
	struct lb_backend *c = malloc((n ? n : 1) * sizeof(*c));

	if (c)
		memcpy(c, b, n * sizeof(*c));
	return c;
}

static inline void fx_shuffle(struct lb_backend *b, size_t n, __u64 seed)
{
	struct lb_backend t;
	size_t i, j;

	for (i = n; i > 1; i--) {
		j = fx_next(&seed) % i;
		t = b[i - 1];
		b[i - 1] = b[j];
		b[j] = t;
	}
}

/* Remove b[at], keeping the others in order. */
static inline void fx_remove(struct lb_backend *b, size_t *n, size_t at)
{
	memmove(&b[at], &b[at + 1], (*n - at - 1) * sizeof(*b));
	(*n)--;
}

/* The table of any algorithm as backend indexes per slot (lb_slot), or
 * NULL when it cannot be built. */
static inline __u32 *fx_table(enum lb_algo_kind kind,
			      const struct lb_backend *b, size_t n,
			      const struct lb_params *params)
{
	__u32 *t = malloc(params->table_size * sizeof(*t)), k;
	struct lb *lb;

	if (!t || lb_build(kind, b, n, params, &lb)) {
		free(t);
		return NULL;
	}
	for (k = 0; k < params->table_size; k++)
		t[k] = lb_slot(lb, k);
	lb_free(lb);
	return t;
}

/* Slots per backend. */
static inline void fx_count(const __u32 *table, __u32 m, __u32 *slots,
			    size_t n)
{
	__u32 k;

	memset(slots, 0, n * sizeof(*slots));
	for (k = 0; k < m; k++)
		slots[table[k]]++;
}

/* How many slots name different identities in two tables (each table
 * indexes its own backend array). */
static inline __u32 fx_diff(const struct lb_backend *a, const __u32 *ta,
			    const struct lb_backend *b, const __u32 *tb,
			    __u32 m)
{
	__u32 k, d = 0;

	for (k = 0; k < m; k++)
		d += strcmp(a[ta[k]].id, b[tb[k]].id) != 0;
	return d;
}

static const struct lb_backend *fx_sort_by;

static inline int fx_cmp_id(const void *a, const void *b)
{
	return strcmp(fx_sort_by[*(const __u32 *)a].id,
		      fx_sort_by[*(const __u32 *)b].id);
}

/*
 * Maglev as the paper writes it, for comparison: backends of positive
 * weight in identity order, quotas by largest remainder (ties to the lower
 * rank), then round-robin turns, each walking its permutation one slot at
 * a time until a free one. No shortcut; returns 0 or -1.
 */
static inline int fx_maglev_plain(const struct lb_backend *b, size_t n,
				  __u32 m, __u32 *table)
{
	__u32 *order = calloc(n, 4), *next = calloc(n, 4), *skip = calloc(n, 4);
	__u32 *quota = calloc(n, 4), filled = 0, k, c = 0, i, j, best;
	__u64 total = 0, *rem = calloc(n, 8);

	for (i = 0; i < n; i++)
		if (b[i].weight)
			order[c++] = i;
	fx_sort_by = b;
	qsort(order, c, sizeof(*order), fx_cmp_id);
	for (i = 0; i < c; i++)
		total += b[order[i]].weight;
	for (i = 0; i < c; i++) {
		quota[i] = (__u64)b[order[i]].weight * m / total;
		rem[i] = (__u64)b[order[i]].weight * m % total;
		filled += quota[i];
		next[i] = maglev_offset_hash(b[order[i]].id) % m;
		skip[i] = maglev_skip_hash(b[order[i]].id) % (m - 1) + 1;
	}
	for (; filled < m; filled++) {	/* the largest remainders get one more */
		for (best = 0, j = 1; j < c; j++)
			if (rem[j] > rem[best])
				best = j;
		quota[best]++;
		rem[best] = 0;
	}
	for (k = 0; k < m; k++)
		table[k] = UINT32_MAX;
	for (filled = 0; c && filled < m;) {
		for (i = 0; i < c && filled < m; i++) {
			if (!quota[i])
				continue;
			while (table[next[i]] != UINT32_MAX)
				if ((next[i] += skip[i]) >= m)
					next[i] -= m;
			table[next[i]] = order[i];
			if ((next[i] += skip[i]) >= m)
				next[i] -= m;
			quota[i]--;
			filled++;
		}
	}
	free(rem);
	free(quota);
	free(skip);
	free(next);
	free(order);
	return c ? 0 : -1;
}

#endif /* XLB_LB_FIXTURES_H */
