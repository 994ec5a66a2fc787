/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The flow hash, compiled both into the XDP program and into userspace, so
 * the backend the datapath picks can be predicted (and tested) exactly.
 *
 * It is SipHash-1-3 keyed with the instance's 128-bit seed: without the seed
 * an outsider cannot choose tuples that land on one backend, and every
 * balancer given the same seed computes the same hash. The tuple is packed
 * into 64-bit little-endian words, 2 for IPv4 and 5 for IPv6, so the hash is
 * exactly SipHash of that 16- or 40-byte message (tests check the reference
 * SipHash-2-4 vector through the same code).
 */
#ifndef XLB_FLOW_HASH_H
#define XLB_FLOW_HASH_H

#include <linux/types.h>
#include "xlb.h"

#include "compiler.h"

#define XLB_ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

struct xlb_sip {
	__u64 v0, v1, v2, v3;
};

XLB_INLINE void xlb_sip_round(struct xlb_sip *s)
{
	s->v0 += s->v1; s->v1 = XLB_ROTL64(s->v1, 13); s->v1 ^= s->v0;
	s->v0 = XLB_ROTL64(s->v0, 32);
	s->v2 += s->v3; s->v3 = XLB_ROTL64(s->v3, 16); s->v3 ^= s->v2;
	s->v0 += s->v3; s->v3 = XLB_ROTL64(s->v3, 21); s->v3 ^= s->v0;
	s->v2 += s->v1; s->v1 = XLB_ROTL64(s->v1, 17); s->v1 ^= s->v2;
	s->v2 = XLB_ROTL64(s->v2, 32);
}

XLB_INLINE void xlb_sip_init(struct xlb_sip *s, __u64 k0, __u64 k1)
{
	s->v0 = k0 ^ 0x736f6d6570736575ULL;
	s->v1 = k1 ^ 0x646f72616e646f6dULL;
	s->v2 = k0 ^ 0x6c7967656e657261ULL;
	s->v3 = k1 ^ 0x7465646279746573ULL;
}

/* One message word with c compression rounds. */
XLB_INLINE void xlb_sip_word(struct xlb_sip *s, __u64 m, int c)
{
	int i;

	s->v3 ^= m;
	for (i = 0; i < c; i++)
		xlb_sip_round(s);
	s->v0 ^= m;
}

/* The closing block of a message of len bytes (a multiple of 8) and the
 * d finalisation rounds. */
XLB_INLINE __u64 xlb_sip_final(struct xlb_sip *s, __u64 len, int c, int d)
{
	int i;

	xlb_sip_word(s, len << 56, c);
	s->v2 ^= 0xff;
	for (i = 0; i < d; i++)
		xlb_sip_round(s);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/* Bytes 0..3 / 0..7 at p as a little-endian word, whatever the host order. */
XLB_INLINE __u64 xlb_le32(const void *p)
{
	const __u8 *b = (const __u8 *)p;

	return (__u64)b[0] | (__u64)b[1] << 8 | (__u64)b[2] << 16 |
	       (__u64)b[3] << 24;
}

XLB_INLINE __u64 xlb_le64(const void *p)
{
	const __u8 *b = (const __u8 *)p;

	return xlb_le32(b) | xlb_le32(b + 4) << 32;
}

/*
 * xlb_flow_hash - SipHash-1-3 under key[2] of the packed flow:
 *   IPv4: src(4) dst(4) sport(2) dport(2) proto(1) family(1) 0 0  = 16 bytes
 *   IPv6: src(16) dst(16) sport(2) dport(2) proto(1) family(1) 0 0 = 40 bytes
 */
XLB_INLINE __u64 xlb_flow_hash(const struct xlb_flow *f, const __u64 key[2])
{
	__u64 tail = xlb_le64(&f->sport);	/* sport dport proto family pad */
	struct xlb_sip s;

	xlb_sip_init(&s, key[0], key[1]);
	if (f->family == XLB_AF_INET6) {
		xlb_sip_word(&s, xlb_le64(&f->src[0]), 1);
		xlb_sip_word(&s, xlb_le64(&f->src[2]), 1);
		xlb_sip_word(&s, xlb_le64(&f->dst[0]), 1);
		xlb_sip_word(&s, xlb_le64(&f->dst[2]), 1);
		xlb_sip_word(&s, tail, 1);
		return xlb_sip_final(&s, 40, 1, 3);
	}
	xlb_sip_word(&s, xlb_le32(&f->src[0]) | xlb_le32(&f->dst[0]) << 32, 1);
	xlb_sip_word(&s, tail, 1);
	return xlb_sip_final(&s, 16, 1, 3);
}

/* The first bits (0..32) of a 32-bit word as it lies in memory. */
XLB_INLINE __u32 xlb_prefix_mask32(__s64 bits)
{
	__u32 m;

	/* Clamped to 0..32 without a branch: the datapath's verifier would
	 * walk the rest of the program once for each side of one. */
	bits &= ~(bits >> 63);
	bits = 32 - bits;
	bits &= ~(bits >> 63);
	m = (__u32)(0xffffffffULL << bits);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	m = __builtin_bswap32(m);
#endif
	return m;
}

/*
 * The flow a client-affinity VIP hashes (XLB_VIP_F_HASH_SRC): the
 * client's address cut to its first prefix bits, no ports.
 */
XLB_INLINE void xlb_affinity_flow(struct xlb_flow *f, __u32 prefix)
{
	int i;

	f->sport = 0;
	f->dport = 0;
	for (i = 0; i < 4; i++)
		f->src[i] &= xlb_prefix_mask32((__s64)prefix - 32 * i);
}

/*
 * xlb_vip_flow_hash - the hash a VIP with these flags takes of a flow:
 * the whole flow's (the default: a client's connections spread), or the
 * affinity flow's. One hash either way, so the program holds one copy of
 * SipHash; the default pays one test for the choice.
 */
XLB_INLINE __u64 xlb_vip_flow_hash(const struct xlb_flow *f, __u32 vip_flags,
				   const __u64 key[2])
{
	struct xlb_flow a;

	if (__builtin_expect(vip_flags & XLB_VIP_F_HASH_SRC, 0)) {
		a = *f;
		xlb_affinity_flow(&a, XLB_VIP_AFFINITY(vip_flags));
		f = &a;
	}
	return xlb_flow_hash(f, key);
}

#endif /* XLB_FLOW_HASH_H */
