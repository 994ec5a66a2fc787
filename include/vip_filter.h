/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Where a destination lies in the VIP filter (struct xlb_vip_filter): one
 * definition for the datapath, which tests the bit, and the loader, which
 * sets it for every VIP. A multiplicative hash of the destination folded
 * to 32 bits: a few instructions, where a hash map lookup costs tens of
 * nanoseconds.
 */
#ifndef XLB_VIP_FILTER_H
#define XLB_VIP_FILTER_H

#include <stdbool.h>
#include <linux/types.h>
#include "compiler.h"
#include "xlb.h"

XLB_STATIC_ASSERT(XLB_VIP_FILTER_BITS == 1 << 16, "the hash gives 16 bits");

XLB_INLINE __u32 xlb_vip_filter_bit(const __be32 addr[4], __be16 port,
				    __u8 proto, __u8 family)
{
	__u32 x = addr[0] ^ addr[1] ^ addr[2] ^ addr[3];

	x ^= (__u32)port << 16 | (__u32)proto << 8 | family;
	/* The top bits of the product depend on every bit of x. */
	return (__u32)(x * 0x9e3779b1U) >> (32 - 16);
}

/* A VIP key's bit: its filter bit, and the index of its slot in
 * xlb_vip_slots (include/xlb.h). */
XLB_INLINE __u32 xlb_vip_key_bit(const struct xlb_vip_key *key)
{
	return xlb_vip_filter_bit(key->addr, key->port, key->proto, key->family);
}

XLB_INLINE bool xlb_vip_filter_has(const struct xlb_vip_filter *f, __u32 bit)
{
	return f->bits[bit / 64] >> (bit % 64) & 1;
}

#endif /* XLB_VIP_FILTER_H */
