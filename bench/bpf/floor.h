/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The throughput benchmark's floor (floor.bpf.c), as its program and its
 * loader (bench/floor_attach.c) both see it.
 */
#ifndef XLB_BENCH_FLOOR_H
#define XLB_BENCH_FLOOR_H

#define FLOOR_M			65537	/* slots: xlb's default table size */
#define FLOOR_MAX_BACKENDS	256
#define FLOOR_HDR_LEN		34	/* Ethernet and outer IPv4 */

/* A backend's frame header, Ethernet and outer IPv4, whole but for the
 * outer length (0), which the checksum leaves out. */
struct floor_backend {
	unsigned char hdr[FLOOR_HDR_LEN];
	unsigned char pad[6];
};

enum floor_stat {
	FLOOR_STAT_FORWARDED,	/* encapsulated and sent back out */
	FLOOR_STAT_PASS,	/* anything else */
	FLOOR_STAT__COUNT,
};

#endif /* XLB_BENCH_FLOOR_H */
