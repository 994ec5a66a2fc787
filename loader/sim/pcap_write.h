/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Writing Ethernet frames to a pcap file (libpcap's pcap_dump). Kept behind
 * this small interface because <pcap/pcap.h> and <linux/bpf.h> both define
 * struct bpf_insn and cannot be included together.
 */
#ifndef XLB_PCAP_WRITE_H
#define XLB_PCAP_WRITE_H

#include <stddef.h>

struct xlb_pcap_writer;

/* Create path (truncated if it exists). Returns 0 or -errno. */
int xlb_pcap_create(const char *path, struct xlb_pcap_writer **w);
/* Append one frame with a timestamp of usec microseconds. */
int xlb_pcap_add(struct xlb_pcap_writer *w, const void *frame, size_t len,
		 unsigned long long usec);
/* Flush and close; returns 0 or -EIO when the data did not reach the file. */
int xlb_pcap_close(struct xlb_pcap_writer *w);

#endif /* XLB_PCAP_WRITE_H */
