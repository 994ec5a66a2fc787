// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The Maglev table: pinned by golden vectors (every balancer must build the
 * same table from the same backends), shares within one slot of the
 * weights, independent of input order, and small disruption when a
 * backend leaves or comes back.
 */
#include <errno.h>
#include <math.h>
#include "lb_fixtures.h"
#include "testlib.h"

#define M 65537

static const __u32 counts[] = { 1, 2, 3, 10, 100, 1000 };

/* Golden values from an independent SipHash-1-3 (checked against the
 * reference SipHash-2-4 vectors) over the identity bytes, under the two
 * fixed keys; empty, short, one-block, multi-block and longest names. */
static void offset_skip_golden_vectors(void)
{
	static const struct {
		const char *id;
		__u64 offset, skip;
	} v[] = {
		{ "192.0.2.1", 0x34dd00238bb54f4eULL, 0xd47a190cfd800b1bULL },
		{ "2001:db8::1", 0x214c6e65721b8216ULL, 0x6d0796fa89333686ULL },
		{ "backend-0", 0xaed3bc0a11d4c055ULL, 0x385f2f02a28a9dbcULL },
		{ "abcdefgh", 0x8037f265a621a84fULL, 0x44be3f8c594536e9ULL },
		{ "web-server-17.example", 0xb3b35092ac7ddb82ULL, 0x6d63e8af05ad4900ULL },
		{ "", 0x573cbc537fa87fc7ULL, 0x5552fc843ebb7fdcULL },
		{ "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
		  0xd7d9a114a10fe8c1ULL, 0x6543ba567f0daf04ULL },
	};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		ASSERT_EQ(maglev_offset_hash(v[i].id), v[i].offset, v[i].id);
		ASSERT_EQ(maglev_skip_hash(v[i].id), v[i].skip, v[i].id);
	}
}

static void table_string(const struct lb_backend *b, size_t n, __u32 m,
			 char *out)
{
	__u32 table[16], k;

	ASSERT_OK(maglev_build(b, n, m, table), "maglev_build");
	for (k = 0; k < m; k++)
		out[k] = b[table[k]].id[0];
	out[m] = '\0';
}

/* Whole small tables, from an independent implementation of the paper's
 * walk with the same quotas. */
static void small_tables_golden(void)
{
	struct lb_backend b[3] = { { "a", 1 }, { "b", 1 }, { "c", 1 } };
	char s[16];

	table_string(b, 3, 13, s);
	ASSERT_TRUE(!strcmp(s, "acbacbacbbaac"), "equal weights, M=13");
	b[1].weight = 2;
	b[2].weight = 3;
	table_string(b, 3, 13, s);
	ASSERT_TRUE(!strcmp(s, "ccbacbacbbccc"), "weights 1:2:3, M=13");
	b[1].weight = 0;
	table_string(b, 3, 7, s);
	ASSERT_TRUE(!strcmp(s, "ccaccac"), "weights 1:0:3, M=7");
}

/* FNV-1a over the table as identity ranks (u32, little-endian). */
static __u64 table_digest(const struct lb_backend *b, size_t n,
			  const __u32 *table, __u32 m)
{
	__u64 h = 0xcbf29ce484222325ULL;
	__u32 k, rank;
	size_t i;
	int byte;

	for (k = 0; k < m; k++) {
		for (rank = 0, i = 0; i < n; i++)
			rank += strcmp(b[i].id, b[table[k]].id) < 0;
		for (byte = 0; byte < 4; byte++) {
			h ^= (rank >> (8 * byte)) & 0xff;
			h *= 0x100000001b3ULL;
		}
	}
	return h;
}

/* Full-size tables against the same independent implementation, which
 * only walks: pins the endgame shortcut to the paper's result. */
static void full_tables_golden_digest(void)
{
	struct lb_backend *b = fx_backends(100, 1);
	__u32 *table = malloc(M * sizeof(*table));
	size_t i;

	for (i = 0; i < 10; i++)
		snprintf(b[i].id, sizeof(b[i].id), "198.51.100.%zu", i + 1);
	ASSERT_OK(maglev_build(b, 10, M, table), "10 addresses");
	ASSERT_EQ(table_digest(b, 10, table, M), 0x94e3699f25674b33ULL,
		  "10 addresses, equal weights");

	free(b);
	b = fx_backends(100, 1);
	for (i = 0; i < 100; i++)
		b[i].weight = i % 7 + 1;
	ASSERT_OK(maglev_build(b, 100, M, table), "100 names");
	ASSERT_EQ(table_digest(b, 100, table, M), 0xc406116ae7e7bba1ULL,
		  "100 names, weights 1..7");
	free(table);
	free(b);
}

/* The same tables as the paper's plain walk (tests/lb_fixtures.h), from
 * the smallest table up, with weights equal, random with zeros, or
 * lopsided: the shortcuts of maglev.c change nothing. */
static void same_as_plain_walk(void)
{
	static const __u32 sizes[] = { 3, 13, 251, 4099, 65537 };
	static const size_t ns[] = { 1, 2, 3, 7, 50, 300 };
	__u32 *t1 = malloc(M * 4), *t2 = malloc(M * 4);
	__u64 seed = 17;
	size_t s, c, i;
	int w;
	char what[64];

	for (s = 0; s < 5; s++) {
		for (c = 0; c < 6 && ns[c] <= sizes[s]; c++) {
			struct lb_backend *b = fx_backends(ns[c], 1);

			for (w = 0; w < 3; w++) {
				for (i = 0; i < ns[c]; i++)
					b[i].weight = w == 0 ? 1 : w == 1 ?
						      fx_next(&seed) % 20 : 1 + (i == 0) * 999;
				b[0].weight += !b[0].weight;	/* one positive */
				snprintf(what, sizeof(what), "M=%u N=%zu weights %d",
					 sizes[s], ns[c], w);
				ASSERT_OK(maglev_build(b, ns[c], sizes[s], t1), what);
				ASSERT_OK(fx_maglev_plain(b, ns[c], sizes[s], t2), what);
				ASSERT_MEM_EQ(t1, t2, sizes[s] * 4, what);
			}
			free(b);
		}
	}
	free(t2);
	free(t1);
}

static void equal_weights_floor_or_ceil(void)
{
	__u32 *table = malloc(M * sizeof(*table)), *slots;
	struct lb_backend *b;
	char what[64];
	size_t c, i;

	for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		__u32 n = counts[c];

		b = fx_backends(n, 1);
		slots = calloc(n, sizeof(*slots));
		snprintf(what, sizeof(what), "N=%u", n);
		ASSERT_OK(maglev_build(b, n, M, table), what);
		fx_count(table, M, slots, n);
		for (i = 0; i < n; i++) {
			ASSERT_GE(slots[i], M / n, what);
			ASSERT_LE(slots[i], (M + n - 1) / n, what);
		}
		free(slots);
		free(b);
	}
	free(table);
}

/* Every backend within one slot of m * w / sum(w); weight 0, no slot. */
static void check_shares(const struct lb_backend *b, size_t n, __u32 m,
			 const char *what)
{
	__u32 *table = malloc(m * sizeof(*table)), *slots = calloc(n, 4);
	double total = 0, exact;
	size_t i;

	for (i = 0; i < n; i++)
		total += b[i].weight;
	ASSERT_OK(maglev_build(b, n, m, table), what);
	fx_count(table, m, slots, n);
	for (i = 0; i < n; i++) {
		exact = (double)m * b[i].weight / total;
		ASSERT_DBL(fabs(slots[i] - exact), <, 1.0, what);
		if (!b[i].weight)
			ASSERT_EQ(slots[i], 0, what);
	}
	free(slots);
	free(table);
}

static void weights_1_2_3_4_within_one_slot(void)
{
	struct lb_backend *b = fx_backends(4, 1);
	size_t i;

	for (i = 0; i < 4; i++)
		b[i].weight = i + 1;
	check_shares(b, 4, M, "1:2:3:4, M=65537");
	check_shares(b, 4, 655373, "1:2:3:4, M=655373");
	free(b);
}

static void random_weights_within_one_slot(void)
{
	struct lb_backend *b = fx_backends(300, 1);
	__u64 seed = 1;
	size_t i;

	for (i = 0; i < 300; i++)
		b[i].weight = fx_next(&seed) % 1001;	/* some are 0 */
	check_shares(b, 300, M, "300 weights 0..1000");
	for (i = 0; i < 300; i++)
		b[i].weight = 1 + (i == 7) * (XLB_MAX_WEIGHT - 1);
	check_shares(b, 300, M, "one backend of the largest weight");
	free(b);
}

static void table_size_limits(void)
{
	struct lb_backend *b = fx_backends(7, 1);
	__u32 *table = malloc(XLB_MAX_TABLE_SIZE * sizeof(*table));
	__u32 slots[7], i;

	ASSERT_OK(maglev_build(b, 3, XLB_MIN_TABLE_SIZE, table), "M=3, N=3");
	fx_count(table, XLB_MIN_TABLE_SIZE, slots, 3);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(slots[i], 1, "M=3, N=3: one slot each");
	ASSERT_OK(maglev_build(b, 7, XLB_MAX_TABLE_SIZE, table), "largest M");
	fx_count(table, XLB_MAX_TABLE_SIZE, slots, 7);
	for (i = 0; i < 7; i++) {
		ASSERT_GE(slots[i], XLB_MAX_TABLE_SIZE / 7, "largest M");
		ASSERT_LE(slots[i], XLB_MAX_TABLE_SIZE / 7 + 1, "largest M");
	}
	free(table);
	free(b);
}

static void shuffled_order_same_table(void)
{
	struct lb_backend *b = fx_backends(100, 1), *s;
	__u32 *t1 = malloc(M * 4), *t2 = malloc(M * 4);
	size_t i;

	for (i = 0; i < 100; i++)
		b[i].weight = i % 5;	/* zero weights too */
	s = fx_copy(b, 100);
	fx_shuffle(s, 100, 42);
	ASSERT_OK(maglev_build(b, 100, M, t1), "in order");
	ASSERT_OK(maglev_build(s, 100, M, t2), "shuffled");
	ASSERT_EQ(fx_diff(b, t1, s, t2, M), 0, "slots naming another backend");
	/* Byte for byte, once indexes are mapped back to the first order. */
	for (i = 0; i < M; i++)
		t2[i] = atoi(s[t2[i]].id + strlen("backend-"));
	ASSERT_MEM_EQ(t1, t2, M * sizeof(*t1), "tables");
	free(s);
	free(t2);
	free(t1);
	free(b);
}

/*
 * Remove one of n backends: the removed backend's slots all go to others,
 * and the slots that move from one surviving backend to another (the
 * disruption beyond the minimum) stay within 1% of M. Then add it back:
 * the original table returns exactly.
 */
static void remove_and_restore(size_t n, size_t at, __u32 *worst)
{
	struct lb_backend *b = fx_backends(n, 1), *less = fx_copy(b, n);
	__u32 *before = malloc(M * 4), *after = malloc(M * 4), *again = malloc(M * 4);
	__u32 k, rehomed = 0, moved = 0;
	size_t n_less = n;
	char what[96];

	snprintf(what, sizeof(what), "N=%zu, without %s", n, b[at].id);
	fx_remove(less, &n_less, at);
	ASSERT_OK(maglev_build(b, n, M, before), what);
	ASSERT_OK(maglev_build(less, n_less, M, after), what);
	for (k = 0; k < M; k++) {
		bool was_removed = before[k] == at;

		ASSERT_TRUE(strcmp(less[after[k]].id, b[at].id), what);
		if (was_removed)
			rehomed++;
		else
			moved += strcmp(b[before[k]].id, less[after[k]].id) != 0;
	}
	printf("  %s: %u slots re-homed, %u (%.3f%% of M) moved between survivors\n",
	       what, rehomed, moved, 100.0 * moved / M);
	ASSERT_LE(moved, M / 100, what);
	if (moved > *worst)
		*worst = moved;

	/* Back again, at the end of the list this time. */
	less[n_less] = b[at];
	ASSERT_OK(maglev_build(less, n, M, again), "added back");
	ASSERT_EQ(fx_diff(b, before, less, again, M), 0, "slots changed after add back");
	free(again);
	free(after);
	free(before);
	free(less);
	free(b);
}

static void removing_one_backend_small_disruption(void)
{
	static const size_t ns[] = { 10, 100, 1000 };
	size_t i;

	for (i = 0; i < 3; i++) {
		__u32 worst = 0;

		remove_and_restore(ns[i], 0, &worst);
		remove_and_restore(ns[i], ns[i] / 2, &worst);
		remove_and_restore(ns[i], ns[i] - 1, &worst);
		printf("  N=%zu: worst %.3f%% of M moved between survivors\n",
		       ns[i], 100.0 * worst / M);
	}
}

/* remove_and_restore checks the restore of equal weights; here a weighted
 * set, given back in another order. */
static void adding_back_restores_table(void)
{
	struct lb_backend *b = fx_backends(50, 1), *less;
	__u32 *t1 = malloc(M * 4), *t2 = malloc(M * 4);
	size_t i, n = 50;

	for (i = 0; i < 50; i++)
		b[i].weight = 1 + i % 4;
	less = fx_copy(b, 50);
	fx_remove(less, &n, 17);
	ASSERT_OK(maglev_build(b, 50, M, t1), "weighted");
	ASSERT_OK(maglev_build(less, n, M, t2), "weighted, one removed");
	ASSERT_GT(fx_diff(b, t1, less, t2, M), 0, "removal changes the table");
	less[n++] = b[17];
	fx_shuffle(less, n, 7);
	ASSERT_OK(maglev_build(less, n, M, t2), "weighted, added back");
	ASSERT_EQ(fx_diff(b, t1, less, t2, M), 0, "slots changed after add back");
	free(t2);
	free(t1);
	free(less);
	free(b);
}

static void rejects_bad_input(void)
{
	struct lb_backend b[3] = { { "a", 1 }, { "b", 1 }, { "c", 1 } };
	__u32 table[16];

	ASSERT_EQ(maglev_build(b, 3, 15, table), -EINVAL, "M not prime");
	ASSERT_EQ(maglev_build(b, 3, 2, table), -EINVAL, "M below 3");
	ASSERT_EQ(maglev_build(b, 0, 13, table), -EINVAL, "no backends");
	b[0].weight = b[1].weight = b[2].weight = 0;
	ASSERT_EQ(maglev_build(b, 3, 13, table), -EINVAL, "no positive weight");
	b[0].weight = b[1].weight = 1;
	strcpy(b[1].id, "a");
	ASSERT_EQ(maglev_build(b, 3, 13, table), -EINVAL, "duplicate identity");
}

/* lb_build(LB_MAGLEV) is the same table, looked up as the datapath does:
 * the low 32 bits of the flow hash modulo M. */
static void lookup_as_datapath(void)
{
	struct lb_backend *b = fx_backends(20, 1);
	struct lb_params p = { .table_size = M };
	__u32 *table = malloc(M * 4);
	__u64 seed = 3, h;
	struct lb *lb;
	int i;

	ASSERT_OK(maglev_build(b, 20, M, table), "maglev_build");
	ASSERT_OK(lb_build(LB_MAGLEV, b, 20, &p, &lb), "lb_build");
	for (i = 0; i < 100000; i++) {
		h = fx_next(&seed);
		if (!ASSERT_EQ(lb_lookup(lb, h), table[(__u32)h % M], "lookup"))
			break;
	}
	for (i = 0; i < M; i++)
		if (!ASSERT_EQ(lb_slot(lb, i), table[i], "slot"))
			break;
	lb_free(lb);
	free(table);
	free(b);
}

/* The seed gives another, equally balanced table; seed 0 is the
 * datapath's. */
static void seed_gives_other_table(void)
{
	struct lb_backend *b = fx_backends(10, 1);
	struct lb_params p = { .table_size = M, .seed = 12345 };
	__u32 *table = malloc(M * 4), *seeded, slots[10];
	int i;

	ASSERT_OK(maglev_build(b, 10, M, table), "maglev_build");
	seeded = fx_table(LB_MAGLEV, b, 10, &p);
	ASSERT_TRUE(seeded != NULL, "seeded table");
	ASSERT_GT(fx_diff(b, table, b, seeded, M), M / 2, "slots differ");
	fx_count(seeded, M, slots, 10);
	for (i = 0; i < 10; i++) {
		ASSERT_GE(slots[i], M / 10, "seeded balance");
		ASSERT_LE(slots[i], M / 10 + 1, "seeded balance");
	}
	free(seeded);
	p.seed = 0;
	seeded = fx_table(LB_MAGLEV, b, 10, &p);
	ASSERT_EQ(fx_diff(b, table, b, seeded, M), 0, "seed 0 is maglev_build");
	free(seeded);
	free(table);
	free(b);
}

TEST_MAIN(TEST(offset_skip_golden_vectors), TEST(small_tables_golden),
	  TEST(full_tables_golden_digest), TEST(same_as_plain_walk),
	  TEST(equal_weights_floor_or_ceil),
	  TEST(weights_1_2_3_4_within_one_slot),
	  TEST(random_weights_within_one_slot), TEST(table_size_limits),
	  TEST(shuffled_order_same_table),
	  TEST(removing_one_backend_small_disruption),
	  TEST(adding_back_restores_table), TEST(rejects_bad_input),
	  TEST(lookup_as_datapath), TEST(seed_gives_other_table))
