/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Writing Ethernet frames to a pcapng file, each with a comment (what
 * `xlb capture` says of a packet: its verdict, counter, VIP and backend),
 * which tshark and Wireshark show as frame.comment. One section, one
 * interface, nanosecond timestamps; written by hand, as libpcap writes
 * no comments.
 */
#ifndef XLB_PCAPNG_WRITE_H
#define XLB_PCAPNG_WRITE_H

#include <stdio.h>
#include <linux/types.h>

/* The section and interface headers, to f (its snaplen: the most bytes a
 * frame keeps). 0 or -EIO. */
int xlb_pcapng_start(FILE *f, __u32 snaplen);

/* One frame: caplen bytes of data kept of len, at ts_ns (ns since the
 * epoch), with comment (NULL: none). 0 or -EIO. */
int xlb_pcapng_frame(FILE *f, __u64 ts_ns, const void *data, __u32 caplen,
		     __u32 len, const char *comment);

#endif /* XLB_PCAPNG_WRITE_H */
