/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Internet checksum arithmetic for IPv4 headers. */
#ifndef XLB_BPF_CSUM_H
#define XLB_BPF_CSUM_H

#include <stdbool.h>
#include <linux/types.h>

#include "compiler.h"

/* Fold a sum of 32-bit words into the 16-bit one's complement checksum.
 * Summing 32-bit words gives the same folded result as summing 16-bit
 * words in either byte order, so no byte swapping is needed. */
XLB_INLINE __u16 xlb_csum_fold(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/*
 * Is sum, of at most 15 32-bit words (an IPv4 header with its options), that
 * of a header whose checksum is right: a ones' complement sum of 0xffff?
 * That is xlb_csum_fold(sum) == 0, in fewer steps: as 2^16 = 1 modulo
 * 0xffff, the ones' complement sum is 0xffff exactly when sum is a nonzero
 * multiple of 0xffff, and so is the sum t of its three 16-bit parts, which
 * is below 3 * 0xffff (tests/test_csum.c checks both ways agree).
 */
XLB_INLINE bool xlb_csum_ok(__u64 sum)
{
	__u64 t = (sum >> 32) + (sum >> 16 & 0xffff) + (sum & 0xffff);

	return t == 0xffff || t == 2 * 0xffff;
}

/* Sum of the five 32-bit words of a 20-byte header (unaligned reads are
 * fine: XDP on x86 and arm64 allows them). */
XLB_INLINE __u64 xlb_csum_words5(const void *p)
{
	const __u32 *w = (const __u32 *)p;

	return (__u64)w[0] + w[1] + w[2] + w[3] + w[4];
}

#endif /* XLB_BPF_CSUM_H */
