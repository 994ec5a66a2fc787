// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Maglev hashing (Eisenbud et al., NSDI 2016, section 3.4). Each backend
 * walks its own permutation of the M slots, (offset + j * skip) mod M, and
 * the backends take turns claiming the next free slot of theirs until the
 * table is full. Weights set how many turns a backend gets: its quota is
 * its exact share of M rounded by largest remainder, so it ends within one
 * slot of w / sum(w) of the table.
 *
 * Memory is O(M + N): a bitmap of taken slots and a small cursor per
 * backend, never the N x M permutation matrix.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "lb_impl.h"

/* The fixed keys of the two permutation hashes. No instance seed: every
 * balancer builds the same table from the same backends. */
static const __u64 offset_key[2] = { 0x74657366666f2e6dULL, 0x31762e76656c6761ULL };
static const __u64 skip_key[2] = { 0x70696b732e76656cULL, 0x31762e6d61676c65ULL };

__u64 maglev_offset_hash(const char *id)
{
	return lb_id_hash(id, offset_key[0], offset_key[1]);
}

__u64 maglev_skip_hash(const char *id)
{
	return lb_id_hash(id, skip_key[0], skip_key[1]);
}

/* A backend's place in its permutation. */
struct maglev_cursor {
	__u32 next;	/* the next slot of its permutation to try */
	__u32 skip;
	__u32 quota;	/* slots it may still take */
	__u32 index;	/* into the caller's array */
	__u32 inverse;	/* skip^-1 mod M once needed, else 0 */
};

struct remainder {
	__u64 rem;
	__u32 rank;
};

static int cmp_remainder(const void *a, const void *b)
{
	const struct remainder *x = a, *y = b;

	if (x->rem != y->rem)
		return x->rem < y->rem ? 1 : -1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Quotas summing to m, each floor or ceil of m * w / sum(w): the slots
 * left over after the floors go to the largest remainders, ties to the
 * lower rank. */
static int set_quotas(const struct lb_backend *backends, const __u32 *order,
		      __u32 count, __u32 m, struct maglev_cursor *c)
{
	struct remainder *rem;
	__u64 total = 0, given = 0, share;
	bool equal = true;
	__u32 i;

	for (i = 0; i < count; i++) {
		total += backends[order[i]].weight;
		equal &= backends[order[i]].weight == backends[order[0]].weight;
	}
	rem = malloc(count * sizeof(*rem));
	if (!rem)
		return -ENOMEM;
	for (i = 0; i < count; i++) {
		share = (__u64)backends[order[i]].weight * m;
		c[i].quota = share / total;
		given += c[i].quota;
		rem[i].rem = share % total;
		rem[i].rank = i;
	}
	/* Equal weights leave equal remainders, already in rank order. */
	if (!equal)
		qsort(rem, count, sizeof(*rem), cmp_remainder);
	for (i = 0; i < m - given; i++)
		c[rem[i].rank].quota++;
	free(rem);
	return 0;
}

/* x mod m through a precomputed reciprocal (Barrett), without a divide
 * instruction: the endgame below reduces thousands of products per slot. */
struct reducer {
	__u64 recip;	/* floor((2^64 - 1) / m) */
	__u32 m;
};

static struct reducer reducer(__u32 m)
{
	return (struct reducer){ .recip = UINT64_MAX / m, .m = m };
}

static __u32 reduce(const struct reducer *r, __u64 x)
{
	/* recip > 2^64 / m - 1, so q falls short of x / m by less than 1 +
	 * x / 2^64, that is by at most one. */
	__u64 q = (unsigned __int128)x * r->recip >> 64;
	__u64 rem = x - q * r->m;

	return rem >= r->m ? rem - r->m : rem;
}

static __u32 inverse_mod(__u32 a, __u32 m)
{
	__s64 t = 0, nt = 1, tmp;
	__u32 r = m, nr = a, q, rtmp;

	while (nr) {
		q = r / nr;
		tmp = t - (__s64)q * nt;
		t = nt;
		nt = tmp;
		rtmp = r - q * nr;
		r = nr;
		nr = rtmp;
	}
	return t < 0 ? t + m : t;
}

static __u32 add_mod(__u32 a, __u32 b, __u32 m)
{
	a += b;
	return a >= m ? a - m : a;
}

static void advance(struct maglev_cursor *c, __u32 slot, __u32 m)
{
	c->next = add_mod(slot, c->skip, m);
}

static bool is_taken(const __u64 *taken, __u32 slot)
{
	return taken[slot / 64] >> (slot % 64) & 1;
}

static __u32 claim(struct maglev_cursor *c, __u64 *taken, __u32 slot,
		   __u32 m)
{
	taken[slot / 64] |= 1ULL << (slot % 64);
	advance(c, slot, m);
	return slot;
}

/* While most slots are free: try the permutation's slots in turn. */
static __u32 walk(struct maglev_cursor *c, __u64 *taken, __u32 m)
{
	__u32 slot = c->next;

	while (is_taken(taken, slot))
		slot = add_mod(slot, c->skip, m);
	return claim(c, taken, slot, m);
}

/*
 * Once half the slots are taken: try the next eight at a time. They are
 * computed and tested independently of each other, and "one of eight is
 * free" is a branch the CPU predicts where "this one is free" is a coin
 * toss. Same result as walk().
 */
static __u32 walk8(struct maglev_cursor *c, __u64 *taken, __u32 m)
{
	__u32 skip2 = add_mod(c->skip, c->skip, m), skip4 = add_mod(skip2, skip2, m);
	__u32 skip8 = add_mod(skip4, skip4, m), s[8], busy, k;

	s[0] = c->next;
	for (;;) {
		s[1] = add_mod(s[0], c->skip, m);
		s[2] = add_mod(s[0], skip2, m);
		s[3] = add_mod(s[1], skip2, m);
		s[4] = add_mod(s[0], skip4, m);
		s[5] = add_mod(s[1], skip4, m);
		s[6] = add_mod(s[2], skip4, m);
		s[7] = add_mod(s[3], skip4, m);
		busy = is_taken(taken, s[0]) | is_taken(taken, s[1]) << 1 |
		       is_taken(taken, s[2]) << 2 | is_taken(taken, s[3]) << 3 |
		       is_taken(taken, s[4]) << 4 | is_taken(taken, s[5]) << 5 |
		       is_taken(taken, s[6]) << 6 | is_taken(taken, s[7]) << 7;
		if (busy != 0xff)
			break;
		s[0] = add_mod(s[0], skip8, m);
	}
	k = __builtin_ctz(~busy);
	return claim(c, taken, s[k], m);
}

/*
 * The endgame: with few slots free, walking costs about M / free tries
 * per slot. Free slot f lies (f - next) / skip steps ahead on the
 * permutation (mod M), so the nearest one is found by computing that for
 * each free slot instead, with the same result as the walk.
 */
static __u32 nearest_free(struct maglev_cursor *c, __u32 *free_slots,
			  __u32 *n_free, const struct reducer *r)
{
	__u32 m = r->m, best = UINT32_MAX, at = 0, k, d, steps, slot;

	if (!c->inverse)
		c->inverse = inverse_mod(c->skip, m);
	for (k = 0; k < *n_free; k++) {
		d = free_slots[k] >= c->next ? free_slots[k] - c->next :
					       free_slots[k] + m - c->next;
		steps = reduce(r, (__u64)d * c->inverse);
		if (steps < best) {
			best = steps;
			at = k;
		}
	}
	slot = free_slots[at];
	free_slots[at] = free_slots[--*n_free];
	advance(c, slot, m);
	return slot;
}

static __u32 list_free(const __u64 *taken, __u32 m, __u32 *free_slots)
{
	__u32 w, n = 0;
	__u64 bits;

	for (w = 0; w < (m + 63) / 64; w++) {
		bits = ~taken[w];
		if (w == m / 64)	/* the bits past slot m - 1 */
			bits &= (1ULL << (m % 64)) - 1;
		for (; bits; bits &= bits - 1)
			free_slots[n++] = w * 64 + __builtin_ctzll(bits);
	}
	return n;
}

/* Drop the cursors whose quota is spent, keeping the turn order. */
static __u32 keep_active(struct maglev_cursor *c, __u32 count)
{
	__u32 i, n = 0;

	for (i = 0; i < count; i++)
		if (c[i].quota)
			c[n++] = c[i];
	return n;
}

/* Where walking and the endgame cost about the same: ~M/k tries per slot
 * against ~k products per slot. Always below m. */
static __u32 endgame_size(__u32 m)
{
	__u32 k = 1;

	while (k * k < m / 2)
		k++;
	return k;
}

int maglev_fill(const struct lb_backend *backends, const __u32 *order,
		__u32 count, __u32 m, __u64 seed, __u32 *table)
{
	struct reducer r = reducer(m), r_skip = reducer(m - 1);
	struct maglev_cursor *c = NULL;
	__u32 *free_slots = NULL;
	__u32 endgame = endgame_size(m), left = m, n_free, active, slot, i;
	__u64 *taken = NULL;
	const char *id;
	int err;

	if (m < XLB_MIN_TABLE_SIZE || !is_prime(m) || !count)
		return -EINVAL;
	for (i = 0; i < count; i++)
		if (!backends[order[i]].weight)
			return -EINVAL;
	c = calloc(count, sizeof(*c));
	taken = calloc((m + 63) / 64, sizeof(*taken));
	free_slots = calloc(endgame, sizeof(*free_slots));
	if (!c || !taken || !free_slots) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < count; i++) {
		id = backends[order[i]].id;
		c[i].next = reduce(&r, lb_id_hash(id, offset_key[0] ^ seed,
						  offset_key[1]));
		c[i].skip = reduce(&r_skip, lb_id_hash(id, skip_key[0] ^ seed,
						       skip_key[1])) + 1;
		c[i].index = order[i];
	}
	err = set_quotas(backends, order, count, m, c);
	if (err)
		goto cleanup;

	/* Turns in rank order; the quotas add up to m, so the table is
	 * full exactly when every quota is spent. The endgame (endgame < m)
	 * takes over mid-round, at turn i. */
	active = keep_active(c, count);
	while (left > endgame) {
		for (i = 0; i < active && left > endgame; i++) {
			slot = left > m / 2 ? walk(&c[i], taken, m) :
					      walk8(&c[i], taken, m);
			table[slot] = c[i].index;
			c[i].quota--;
			left--;
		}
		if (i == active)
			active = keep_active(c, active);
	}
	n_free = list_free(taken, m, free_slots);
	while (left) {
		for (; i < active; i++) {
			table[nearest_free(&c[i], free_slots, &n_free, &r)] = c[i].index;
			c[i].quota--;
			left--;
		}
		active = keep_active(c, active);
		i = 0;
	}
cleanup:
	free(free_slots);
	free(taken);
	free(c);
	return err;
}

int maglev_build(const struct lb_backend *backends, size_t n, __u32 m,
		 __u32 *table)
{
	__u32 *order, count;
	int err;

	if (!n || n > UINT32_MAX)
		return -EINVAL;
	order = malloc(n * sizeof(*order));
	if (!order)
		return -ENOMEM;
	err = lb_rank(backends, n, false, order, &count);
	if (!err)
		err = maglev_fill(backends, order, count, m, 0, table);
	free(order);
	return err;
}

static int maglev_lb_build(struct lb *lb, const struct lb_backend *backends,
			   const struct lb_params *params)
{
	lb->table = malloc(lb->m * sizeof(*lb->table));
	if (!lb->table)
		return -ENOMEM;
	return maglev_fill(backends, lb->index, lb->n, lb->m, params->seed,
			   lb->table);
}

/* As the datapath: the low 32 bits of the flow hash modulo M. */
static int maglev_lookup(const struct lb *lb, __u64 flow_hash)
{
	return lb->table[(__u32)flow_hash % lb->m];
}

const struct lb_ops lb_maglev_ops = {
	.build = maglev_lb_build,
	.lookup = maglev_lookup,
};
