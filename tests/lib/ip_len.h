/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * An IP packet's length field rewritten, as a sender may write it whatever
 * the bytes that follow: for the backend program's tests of inner packets
 * whose length is not what the frame holds (tests/test_decap.c,
 * tests/test_decap_gue.c).
 */
#ifndef XLB_TEST_IP_LEN_H
#define XLB_TEST_IP_LEN_H

#include "packets.h"

/* The packet at ip (IPv4 or IPv6, by its version) says it is len bytes
 * long, its own header included; an IPv4 header's checksum stays valid,
 * so that the length is the only thing wrong. */
static inline void ip_len_set(__u8 *ip, __u16 len)
{
	if (ip[0] >> 4 == 6) {
		pkt_put16(ip + 4, (__u16)(len - 40));
		return;
	}
	pkt_put16(ip + 2, len);
	pkt_put16(ip + 10, 0);
	pkt_put16(ip + 10, pkt_fold(pkt_sum(ip, (ip[0] & 0x0f) * 4U, 0)));
}

/* The length the packet at ip says it has. */
static inline size_t ip_len_of(const __u8 *ip)
{
	return ip[0] >> 4 == 6 ? 40U + pkt_get16(ip + 4) : pkt_get16(ip + 2);
}

#endif /* XLB_TEST_IP_LEN_H */
