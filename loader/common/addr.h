/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Parsing and printing what users type: addresses and VIPs
 * (ADDR:PORT/PROTO); numbers are numbers.h's. Parsers return 0 or -EINVAL and
 * set *why to a short reason; the caller prints it next to the input and
 * where it came from (a command argument, a key in an apply file).
 */
#ifndef XLB_ADDR_H
#define XLB_ADDR_H

#include <stddef.h>
#include <linux/types.h>
#include "numbers.h"
#include "xlb.h"

/* Long enough for "[ffff:...:ffff]:65535/udp". */
#define XLB_ADDR_STRLEN	46
#define XLB_VIP_STRLEN	64

/* ADDR: an IPv4 or IPv6 unicast address ("[...]" around IPv6 accepted). */
int xlb_addr_parse(const char *s, __be32 addr[4], __u8 *family,
		   const char **why);
/* Canonical text (inet_ntop): the backend's identity in the table. */
const char *xlb_addr_str(const __be32 addr[4], __u8 family, char *buf,
			 size_t len);

/* PREFIX: ADDR/LEN, the network address of a unicast ADDR with no bit
 * set past LEN; a bare ADDR is its host prefix (/32, /128), and printed
 * so. */
#define XLB_PREFIX_STRLEN	(XLB_ADDR_STRLEN + 4)
int xlb_prefix_parse(const char *s, __be32 addr[4], __u8 *family,
		     __u8 *len, const char **why);
/* A source PREFIX (source ranges): the same of any address, 0.0.0.0/0,
 * bogons, loopback and the like too, IPv6 in brackets or not. */
int xlb_source_prefix_parse(const char *s, __be32 addr[4], __u8 *family,
			    __u8 *len, const char **why);
const char *xlb_prefix_str(const __be32 addr[4], __u8 family, __u8 len,
			   char *buf, size_t size);

/* CLIENT: ADDR:PORT, IPv6 in brackets; port 1..65535, into *port in
 * network order. */
int xlb_client_parse(const char *s, __be32 addr[4], __u8 *family,
		     __be16 *port, const char **why);

/* VIP: ADDR:PORT/PROTO, IPv6 in brackets, PROTO tcp or udp; port 0 is
 * the VIP of the fragments to ADDR/PROTO. */
int xlb_vip_parse(const char *s, struct xlb_vip_key *key, const char **why);
const char *xlb_vip_str(const struct xlb_vip_key *key, char *buf, size_t len);

#endif /* XLB_ADDR_H */
