/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The record of a host's setup as a JSON file (host.h), and the parts of
 * it `xlb host show -j` prints:
 *
 *   { "netns_cookie": 8193, "device": "eth0", "ifindex": 2, "decap": "xdp",
 *     "settings": { "vips": ["192.0.2.10"], "locals": [],
 *                   "balancers": ["198.51.100.0/24"], "fleet": [...],
 *                   "egress": [], "gue_port": 0 },
 *     "pin_dir": "/sys/fs/bpf/xlb-host/ns4026531840", "tunnels": false,
 *     "changed": { "sysctls": [ { "key": "net.ipv4.conf.eth0.arp_ignore",
 *                                 "old": "0" } ],
 *                  "vips_added": ["192.0.2.10"],
 *                  "neighbours": [ { "addr": "198.51.100.12",
 *                                    "dev": "eth0", "ifindex": 2 } ] } }
 */
#ifndef XLB_HOST_RECORD_H
#define XLB_HOST_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include "host.h"

/* 0; -ENOENT when there is none; -EINVAL when it is not a record, why
 * (len bytes) saying where; or -errno of reading it. */
int xlb_host_record_read(const char *path, struct xlb_host_record *rec,
			 char *why, size_t len);
/* Replaced whole (a new file renamed over it): a kill leaves the old
 * record or the new one. */
int xlb_host_record_write(const char *path, const struct xlb_host_record *rec);
/* Whether two records say the same (as their JSON reads). */
bool xlb_host_record_equal(const struct xlb_host_record *a,
			   const struct xlb_host_record *b);

struct json_object;
const char *xlb_host_decap_name(enum xlb_host_decap decap);
struct json_object *xlb_host_addrs_json(const struct xlb_host_addr *a, __u32 n);
struct json_object *xlb_host_prefixes_json(const struct xlb_host_prefix *p,
					   __u32 n);
/* The record's "changed" object. */
struct json_object *xlb_host_changes_json(const struct xlb_host_record *rec);

#endif /* XLB_HOST_RECORD_H */
