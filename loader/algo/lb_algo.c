// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The table algorithms behind one interface: what they all share (ranking
 * the backends by identity, the sample points that turn any algorithm into
 * a table) and the dispatch to each.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flow_hash.h"
#include "lb_impl.h"

static const struct {
	const char *name;
	const struct lb_ops *ops;
} algos[LB__MAX] = {
	[LB_MAGLEV]	= { "maglev", &lb_maglev_ops },
	[LB_RING]	= { "ring", &lb_ring_ops },
	[LB_RENDEZVOUS]	= { "rendezvous", &lb_rendezvous_ops },
	[LB_JUMP]	= { "jump", &lb_jump_ops },
	[LB_MODULO]	= { "modulo", &lb_modulo_ops },
};

const char *lb_algo_name(enum lb_algo_kind kind)
{
	return (unsigned int)kind < LB__MAX ? algos[kind].name : "unknown";
}

int lb_algo_parse(const char *name)
{
	int k;

	for (k = 0; k < LB__MAX; k++)
		if (!strcmp(name, algos[k].name))
			return k;
	return -EINVAL;
}

/* SipHash-1-3 of a byte string: the flow hash's rounds, with the tail
 * bytes in the closing word as SipHash specifies. */
__u64 lb_id_hash(const char *id, __u64 k0, __u64 k1)
{
	size_t len = strlen(id), i, j;
	__u64 last = (__u64)len << 56;
	struct xlb_sip s;

	xlb_sip_init(&s, k0, k1);
	for (i = 0; i + 8 <= len; i += 8)
		xlb_sip_word(&s, xlb_le64(id + i), 1);
	for (j = 0; i + j < len; j++)
		last |= (__u64)(__u8)id[i + j] << (8 * j);
	xlb_sip_word(&s, last, 1);
	s.v2 ^= 0xff;
	for (j = 0; j < 3; j++)
		xlb_sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

static int cmp_identity(const void *a, const void *b, void *backends)
{
	const struct lb_backend *be = backends;

	return strcmp(be[*(const __u32 *)a].id, be[*(const __u32 *)b].id);
}

int lb_rank(const struct lb_backend *backends, size_t n, bool with_zero,
	    __u32 *order, __u32 *count)
{
	__u32 c = 0, i;

	for (i = 0; i < n; i++)
		if (with_zero || backends[i].weight)
			order[c++] = i;
	qsort_r(order, c, sizeof(*order), cmp_identity, (void *)backends);
	*count = c;
	for (i = 1; i < c; i++)
		if (!strcmp(backends[order[i - 1]].id, backends[order[i]].id))
			return -EINVAL;
	return 0;
}

static __u64 mulmod64(__u64 a, __u64 b, __u64 n)
{
	return (unsigned __int128)a * b % n;
}

static __u64 powmod64(__u64 a, __u64 e, __u64 n)
{
	__u64 r = 1;

	for (; e; e >>= 1, a = mulmod64(a, a, n))
		if (e & 1)
			r = mulmod64(r, a, n);
	return r;
}

/* Miller-Rabin with the bases that decide every 64-bit number. */
static bool is_prime64(__u64 n)
{
	static const __u64 bases[] = { 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37 };
	__u64 d = n - 1, x;
	int s = 0, i, r;

	for (i = 0; i < 12; i++) {
		if (n == bases[i])
			return true;
		if (n % bases[i] == 0)
			return false;
	}
	for (; d % 2 == 0; d /= 2)
		s++;
	for (i = 0; i < 12; i++) {
		x = powmod64(bases[i], d, n);
		if (x == 1 || x == n - 1)
			continue;
		for (r = 1; r < s && x != n - 1; r++)
			x = mulmod64(x, x, n);
		if (x != n - 1)
			return false;
	}
	return true;
}

/*
 * The distance between sample points: about 2^64 / m, so m points cover the
 * hash space evenly, and prime, so that k * step (k < m) meets every residue
 * modulo any backend count alike and modulo is not measured on an aliased
 * subset of its buckets.
 */
static __u64 sample_step(__u32 m)
{
	__u64 step = UINT64_MAX / m;

	while (!is_prime64(step))
		step--;
	return step;
}

void lb_free(struct lb *lb)
{
	if (!lb)
		return;
	free(lb->index);
	free(lb->weight);
	free(lb->table);
	free(lb->tokens);
	free(lb->owners);
	free(lb->keys);
	free(lb);
}

int lb_build(enum lb_algo_kind kind, const struct lb_backend *backends,
	     size_t n, const struct lb_params *params, struct lb **out)
{
	struct lb *lb;
	__u32 r;
	int err;

	*out = NULL;
	if ((unsigned int)kind >= LB__MAX || (n && !backends) ||
	    n > UINT32_MAX || params->table_size < XLB_MIN_TABLE_SIZE ||
	    params->table_size > XLB_MAX_TABLE_SIZE ||
	    !is_prime(params->table_size))
		return -EINVAL;
	lb = calloc(1, sizeof(*lb));
	if (!lb)
		return -ENOMEM;
	lb->kind = kind;
	lb->m = params->table_size;
	lb->index = calloc(n ? n : 1, sizeof(*lb->index));
	lb->weight = calloc(n ? n : 1, sizeof(*lb->weight));
	if (!lb->index || !lb->weight) {
		err = -ENOMEM;
		goto err_free;
	}
	err = lb_rank(backends, n, false, lb->index, &lb->n);
	if (err)
		goto err_free;
	for (r = 0; r < lb->n; r++)
		lb->weight[r] = backends[lb->index[r]].weight;
	/* Maglev's slots are its table; the others are sampled. */
	if (kind != LB_MAGLEV)
		lb->step = sample_step(lb->m);
	if (lb->n && algos[kind].ops->build) {
		err = algos[kind].ops->build(lb, backends, params);
		if (err)
			goto err_free;
	}
	*out = lb;
	return 0;

err_free:
	lb_free(lb);
	return err;
}

int lb_lookup(const struct lb *lb, __u64 flow_hash)
{
	if (!lb || !lb->n)
		return -1;
	return algos[lb->kind].ops->lookup(lb, flow_hash);
}

int lb_slot(const struct lb *lb, __u32 k)
{
	if (!lb || !lb->n || k >= lb->m)
		return -1;
	if (lb->kind == LB_MAGLEV)
		return lb->table[k];
	return lb_lookup(lb, k * lb->step);
}
