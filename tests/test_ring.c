// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The consistent-hash ring: lookups take the first token at or after the
 * hash, removing a backend moves only its own arcs, weights are token
 * counts, and balance improves with more virtual nodes.
 */
#include <errno.h>
#include <stdint.h>
#include "lb_fixtures.h"
#include "lb_impl.h"
#include "testlib.h"

#define M 65537

static struct lb *ring(const struct lb_backend *b, size_t n, __u32 vnodes)
{
	struct lb_params p = { .table_size = M, .vnodes = vnodes };
	struct lb *lb = NULL;

	ASSERT_OK(lb_build(LB_RING, b, n, &p, &lb), "lb_build ring");
	return lb;
}

/* Each backend's exact share of the 2^64 ring: the arcs that end at its
 * tokens. */
static void arc_shares(const struct lb *lb, double *share, size_t n)
{
	__u32 k;

	memset(share, 0, n * sizeof(*share));
	for (k = 0; k < lb->n_tokens; k++) {
		__u64 arc = lb->tokens[k] - lb->tokens[k ? k - 1 : lb->n_tokens - 1];

		share[lb->owners[k]] += arc * 0x1p-64;
	}
}

static void lookup_takes_next_token_and_wraps(void)
{
	struct lb_backend *b = fx_backends(5, 1);
	struct lb *lb = ring(b, 5, 4);
	__u32 k, last;

	if (!lb)
		return;
	last = lb->n_tokens - 1;
	ASSERT_EQ(lb->n_tokens, 20, "tokens");
	for (k = 1; k <= last; k++)
		ASSERT_TRUE(lb->tokens[k - 1] < lb->tokens[k], "tokens sorted");
	for (k = 0; k < lb->n_tokens; k++) {
		ASSERT_EQ(lb_lookup(lb, lb->tokens[k]), lb->owners[k], "on a token");
		if (k < last)
			ASSERT_EQ(lb_lookup(lb, lb->tokens[k] + 1), lb->owners[k + 1],
				  "just past a token");
	}
	ASSERT_EQ(lb_lookup(lb, 0), lb->owners[0], "hash 0");
	ASSERT_EQ(lb_lookup(lb, lb->tokens[last] + 1), lb->owners[0],
		  "past the last token wraps to the first");
	ASSERT_EQ(lb_lookup(lb, UINT64_MAX), lb->owners[0], "largest hash wraps");
	lb_free(lb);
	free(b);
}

/* A flow changes backend only if it was on the removed one. */
static void removal_moves_only_its_arcs(void)
{
	static const size_t ns[] = { 10, 100 };
	size_t c, i, n;

	for (c = 0; c < 2; c++) {
		struct lb_backend *b = fx_backends(ns[c], 1), *less = fx_copy(b, ns[c]);
		struct lb *before = ring(b, ns[c], 100), *after;
		__u32 moved = 0, own = 0, old, now;
		__u64 seed = 5, h;
		char what[64];

		n = ns[c];
		fx_remove(less, &n, ns[c] / 3);
		after = ring(less, n, 100);
		snprintf(what, sizeof(what), "N=%zu", ns[c]);
		for (i = 0; i < 200000 && before && after; i++) {
			h = fx_next(&seed);
			old = lb_lookup(before, h);
			now = lb_lookup(after, h);
			if (old == ns[c] / 3) {
				own++;
				ASSERT_NE(strcmp(less[now].id, b[old].id), 0, what);
			} else {
				moved += strcmp(less[now].id, b[old].id) != 0;
			}
		}
		printf("  %s: %u of 200000 flows were on the removed backend; %u others moved\n",
		       what, own, moved);
		ASSERT_EQ(moved, 0, what);
		ASSERT_GT(own, 0, what);
		lb_free(after);
		lb_free(before);
		free(less);
		free(b);
	}
}

/* max/mean of the exact arc shares for 100 backends: the ring's balance
 * depends on the number of tokens and improves as it grows. */
static void balance_improves_with_vnodes(void)
{
	static const __u32 vnodes[] = { 1, 16, 100, 256 };
	struct lb_backend *b = fx_backends(100, 1);
	double share[100], max, prev = 1e9;
	size_t v, i;

	for (v = 0; v < 4; v++) {
		struct lb *lb = ring(b, 100, vnodes[v]);

		if (!lb)
			break;
		arc_shares(lb, share, 100);
		for (max = 0, i = 0; i < 100; i++)
			max = share[i] > max ? share[i] : max;
		printf("  ring N=100 V=%u: max/mean %.3f\n", vnodes[v], max * 100);
		ASSERT_DBL(max * 100, <, prev, "max/mean falls as V grows");
		prev = max * 100;
		lb_free(lb);
	}
	ASSERT_DBL(prev, <, 1.5, "max/mean at V=256");
	free(b);
}

/* Weights are token counts per unit of weight (their common divisor). */
static void weights_are_token_counts(void)
{
	struct lb_backend *b = fx_backends(4, 1);
	__u32 tokens[4] = {}, k, i;
	double share[4];
	struct lb *lb;

	for (i = 0; i < 4; i++)
		b[i].weight = 100 * (i + 1);	/* 1:2:3:4 in units of 100 */
	lb = ring(b, 4, 100);
	if (!lb)
		goto out;
	ASSERT_EQ(lb->n_tokens, 1000, "tokens in all");
	for (k = 0; k < lb->n_tokens; k++)
		tokens[lb->owners[k]]++;
	arc_shares(lb, share, 4);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(tokens[i], 100 * (i + 1), "tokens of a backend");
		printf("  weight %u: share %.4f, fair %.4f\n", b[i].weight,
		       share[i], (i + 1) / 10.0);
		ASSERT_DBL(share[i] / ((i + 1) / 10.0), >, 0.8, "share against fair");
		ASSERT_DBL(share[i] / ((i + 1) / 10.0), <, 1.2, "share against fair");
	}
	lb_free(lb);
out:
	free(b);
}

static void order_does_not_matter(void)
{
	struct lb_backend *b = fx_backends(50, 1), *s;
	struct lb_params p = { .table_size = M, .vnodes = 16 };
	__u32 *t1, *t2;
	size_t i;

	for (i = 0; i < 50; i++)
		b[i].weight = i % 3;
	s = fx_copy(b, 50);
	fx_shuffle(s, 50, 9);
	t1 = fx_table(LB_RING, b, 50, &p);
	t2 = fx_table(LB_RING, s, 50, &p);
	if (ASSERT_TRUE(t1 && t2, "tables"))
		ASSERT_EQ(fx_diff(b, t1, s, t2, M), 0, "slots naming another backend");
	free(t2);
	free(t1);
	free(s);
	free(b);
}

static void rejects_bad_parameters(void)
{
	struct lb_backend *b = fx_backends(4, 1);
	struct lb_params p = { .table_size = M, .vnodes = 0 };
	struct lb *lb;

	ASSERT_EQ(lb_build(LB_RING, b, 4, &p, &lb), -EINVAL, "no vnodes");
	p.vnodes = LB_RING_MAX_TOKENS / 4 + 1;
	ASSERT_EQ(lb_build(LB_RING, b, 4, &p, &lb), -E2BIG, "too many tokens");
	ASSERT_TRUE(lb == NULL, "nothing built");
	free(b);
}

TEST_MAIN(TEST(lookup_takes_next_token_and_wraps),
	  TEST(removal_moves_only_its_arcs), TEST(balance_improves_with_vnodes),
	  TEST(weights_are_token_counts), TEST(order_does_not_matter),
	  TEST(rejects_bad_parameters))
