// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Every algorithm behind the one interface: names, valid answers, weight 0
 * honoured, order independence, and what each promises when a backend
 * leaves (rendezvous and jump exactly, modulo not at all).
 */
#include <errno.h>
#include <math.h>
#include "lb_fixtures.h"
#include "testlib.h"

#define M 65537

static void names_round_trip(void)
{
	int k;

	for (k = 0; k < LB__MAX; k++)
		ASSERT_EQ(lb_algo_parse(lb_algo_name(k)), k, lb_algo_name(k));
	ASSERT_EQ(lb_algo_parse("consistent"), -EINVAL, "unknown name");
	ASSERT_EQ(lb_algo_parse(""), -EINVAL, "empty name");
	ASSERT_EQ(lb_algo_parse("Maglev"), -EINVAL, "names are lower case");
}

static void primes(void)
{
	static const __u32 yes[] = { 2, 3, 13, 251, 65537, 655373, 1048573 };
	static const __u32 no[] = { 0, 1, 4, 9, 65535, 65536, 1048575, 4294967295U };
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		ASSERT_TRUE(is_prime(yes[i]), "prime");
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		ASSERT_TRUE(!is_prime(no[i]), "not prime");
}

/* Lookups name a backend of positive weight, and slots agree with them. */
static void every_algorithm_answers_validly(void)
{
	struct lb_backend *b = fx_backends(10, 1);
	struct lb_params p = { .table_size = 1009, .vnodes = 10 };
	__u64 seed = 11, h;
	struct lb *lb;
	int k, i, got;

	b[4].weight = 0;
	for (k = 0; k < LB__MAX; k++) {
		if (!ASSERT_OK(lb_build(k, b, 10, &p, &lb), lb_algo_name(k)))
			continue;
		for (i = 0; i < 20000; i++) {
			h = fx_next(&seed);
			got = lb_lookup(lb, h);
			if (!ASSERT_TRUE(got >= 0 && got < 10 && got != 4, lb_algo_name(k)))
				break;
		}
		for (i = 0; i < 1009; i++) {
			got = lb_slot(lb, i);
			if (!ASSERT_TRUE(got >= 0 && got < 10 && got != 4, lb_algo_name(k)))
				break;
		}
		ASSERT_EQ(lb_slot(lb, 1009), -1, "slot past the table");
		lb_free(lb);
	}
	free(b);
}

static void no_positive_weight_means_no_backend(void)
{
	struct lb_backend *b = fx_backends(3, 0);
	struct lb_params p = { .table_size = 13, .vnodes = 10 };
	struct lb *lb;
	int k;

	for (k = 0; k < LB__MAX; k++) {
		if (!ASSERT_OK(lb_build(k, b, 3, &p, &lb), lb_algo_name(k)))
			continue;
		ASSERT_EQ(lb_lookup(lb, 12345), -1, lb_algo_name(k));
		ASSERT_EQ(lb_slot(lb, 0), -1, lb_algo_name(k));
		lb_free(lb);
	}
	free(b);
}

static void rejects_bad_parameters(void)
{
	struct lb_backend *b = fx_backends(3, 1);
	struct lb_params p = { .table_size = 15, .vnodes = 10 };
	struct lb *lb;
	int k;

	for (k = 0; k < LB__MAX; k++)
		ASSERT_EQ(lb_build(k, b, 3, &p, &lb), -EINVAL, "table size not prime");
	p.table_size = XLB_MAX_TABLE_SIZE + 10;	/* 1048583, prime */
	ASSERT_EQ(lb_build(LB_JUMP, b, 3, &p, &lb), -EINVAL, "table size too large");
	p.table_size = 13;
	ASSERT_EQ(lb_build(LB__MAX, b, 3, &p, &lb), -EINVAL, "unknown algorithm");
	strcpy(b[2].id, b[0].id);
	for (k = 0; k < LB__MAX; k++)
		ASSERT_EQ(lb_build(k, b, 3, &p, &lb), -EINVAL, "duplicate identity");
	free(b);
}

static void order_does_not_matter(void)
{
	struct lb_backend *b = fx_backends(40, 1), *s;
	struct lb_params p = { .table_size = 4099, .vnodes = 10 };
	__u32 *t1, *t2;
	size_t i;
	int k;

	for (i = 0; i < 40; i++)
		b[i].weight = i % 4;
	s = fx_copy(b, 40);
	fx_shuffle(s, 40, 3);
	for (k = 0; k < LB__MAX; k++) {
		t1 = fx_table(k, b, 40, &p);
		t2 = fx_table(k, s, 40, &p);
		if (ASSERT_TRUE(t1 && t2, lb_algo_name(k)))
			ASSERT_EQ(fx_diff(b, t1, s, t2, p.table_size), 0, lb_algo_name(k));
		free(t2);
		free(t1);
	}
	free(s);
	free(b);
}

/* The sample points are spread so that modulo, balanced by design, shows
 * as balanced: every backend gets floor or ceil of M / N of them. */
static void sampled_modulo_is_exact(void)
{
	static const size_t ns[] = { 2, 3, 5, 17, 100, 257 };
	struct lb_params p = { .table_size = M };
	__u32 slots[257], *t;
	size_t c, i;

	for (c = 0; c < sizeof(ns) / sizeof(ns[0]); c++) {
		struct lb_backend *b = fx_backends(ns[c], 1);

		t = fx_table(LB_MODULO, b, ns[c], &p);
		if (ASSERT_TRUE(t != NULL, "modulo table")) {
			fx_count(t, M, slots, ns[c]);
			for (i = 0; i < ns[c]; i++) {
				ASSERT_GE(slots[i], M / ns[c], "floor");
				ASSERT_LE(slots[i], (M + ns[c] - 1) / ns[c], "ceil");
			}
		}
		free(t);
		free(b);
	}
}

/* Share of sample points moving to another backend when b[at] leaves;
 * *others counts those that were not on b[at]. */
static double moved_share(enum lb_algo_kind kind, size_t n, size_t at,
			  __u32 *others)
{
	struct lb_backend *b = fx_backends(n, 1), *less = fx_copy(b, n);
	struct lb_params p = { .table_size = M, .vnodes = 100 };
	__u32 *t1, *t2, k, moved = 0;
	size_t n_less = n;

	fx_remove(less, &n_less, at);
	t1 = fx_table(kind, b, n, &p);
	t2 = fx_table(kind, less, n_less, &p);
	*others = 0;
	for (k = 0; t1 && t2 && k < M; k++) {
		if (strcmp(b[t1[k]].id, less[t2[k]].id)) {
			moved++;
			*others += t1[k] != at;
		}
	}
	free(t2);
	free(t1);
	free(less);
	free(b);
	return (double)moved / M;
}

static void modulo_moves_most_flows(void)
{
	__u32 others;
	double share = moved_share(LB_MODULO, 10, 4, &others);

	printf("  modulo, 1 of 10 removed: %.1f%% of flows move\n", 100 * share);
	ASSERT_DBL(share, >, 0.8, "share moved");
}

static void rendezvous_moves_only_the_removed(void)
{
	__u32 others;
	double share = moved_share(LB_RENDEZVOUS, 10, 4, &others);

	printf("  rendezvous, 1 of 10 removed: %.1f%% of flows move\n", 100 * share);
	ASSERT_EQ(others, 0, "flows moved off surviving backends");
	ASSERT_DBL(share, >, 0.08, "the removed backend's flows");
	ASSERT_DBL(share, <, 0.12, "the removed backend's flows");
}

static void rendezvous_weighted_shares(void)
{
	struct lb_backend *b = fx_backends(4, 1);
	struct lb_params p = { .table_size = M };
	__u32 slots[4], *t;
	int i;

	for (i = 0; i < 4; i++)
		b[i].weight = i + 1;
	t = fx_table(LB_RENDEZVOUS, b, 4, &p);
	if (ASSERT_TRUE(t != NULL, "rendezvous table")) {
		fx_count(t, M, slots, 4);
		for (i = 0; i < 4; i++) {
			printf("  weight %d: share %.4f\n", i + 1, (double)slots[i] / M);
			ASSERT_DBL(fabs((double)slots[i] / M - (i + 1) / 10.0), <, 0.01,
				   "share against weight");
		}
	}
	free(t);
	free(b);
}

/* Golden values from an independent implementation of Lamping & Veach's
 * function; backends named so that identity rank equals bucket number. */
static void jump_golden_vectors(void)
{
	static const struct {
		__u64 key;
		__u32 buckets, bucket;
	} v[] = {
		{ 0x0000000000000000ULL, 1, 0 },
		{ 0x0000000000000001ULL, 10, 6 },
		{ 0x00000000deadbeefULL, 10, 5 },
		{ 0x123456789abcdef0ULL, 100, 33 },
		{ 0xffffffffffffffffULL, 1000, 313 },
		{ 0x000000000000002aULL, 7, 2 },
	};
	struct lb_backend *b = calloc(1000, sizeof(*b));
	struct lb_params p = { .table_size = M };
	struct lb *lb;
	size_t i, j;

	for (j = 0; j < 1000; j++) {
		snprintf(b[j].id, sizeof(b[j].id), "b%04zu", j);
		b[j].weight = 1;
	}
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (!ASSERT_OK(lb_build(LB_JUMP, b, v[i].buckets, &p, &lb), "jump"))
			continue;
		ASSERT_EQ(lb_lookup(lb, v[i].key), v[i].bucket, "bucket");
		lb_free(lb);
	}
	free(b);
}

/* Jump's promise: a new last bucket takes about 1/(n+1) of the keys and
 * every key that moves, moves to it. */
static void jump_adding_last_bucket(void)
{
	struct lb_backend *b = calloc(11, sizeof(*b));
	struct lb_params p = { .table_size = M };
	__u32 *t10, *t11, k, moved = 0, elsewhere = 0;
	size_t j;

	for (j = 0; j < 11; j++) {
		snprintf(b[j].id, sizeof(b[j].id), "b%02zu", j);
		b[j].weight = 1;
	}
	t10 = fx_table(LB_JUMP, b, 10, &p);
	t11 = fx_table(LB_JUMP, b, 11, &p);
	for (k = 0; t10 && t11 && k < M; k++) {
		if (t10[k] != t11[k]) {
			moved++;
			elsewhere += t11[k] != 10;
		}
	}
	printf("  jump, 11th backend added last: %.2f%% of flows move\n",
	       100.0 * moved / M);
	ASSERT_EQ(elsewhere, 0, "flows moving other than to the new bucket");
	ASSERT_DBL((double)moved / M, >, 0.08, "share moved");
	ASSERT_DBL((double)moved / M, <, 0.10, "share moved");
	free(t11);
	free(t10);
	free(b);
}

TEST_MAIN(TEST(names_round_trip), TEST(primes),
	  TEST(every_algorithm_answers_validly),
	  TEST(no_positive_weight_means_no_backend),
	  TEST(rejects_bad_parameters), TEST(order_does_not_matter),
	  TEST(sampled_modulo_is_exact), TEST(modulo_moves_most_flows),
	  TEST(rendezvous_moves_only_the_removed),
	  TEST(rendezvous_weighted_shares), TEST(jump_golden_vectors),
	  TEST(jump_adding_last_bucket))
