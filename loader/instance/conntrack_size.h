/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The size of the connection table (xlb_conntrack): fixed when the map is
 * made, so `xlb attach` sets it on the object before loading it.
 */
#ifndef XLB_CONNTRACK_SIZE_H
#define XLB_CONNTRACK_SIZE_H

#include <linux/types.h>

struct bpf_map;

/*
 * Size the connection table of an object about to be loaded with its maps
 * pinned in pin_dir: entries, else (0) the conntrack-size setting of the
 * instance there, else XLB_CT_DEFAULT_SIZE (a power of two: settings.c
 * accepts no other), into *slots, for the program's xlb_ct_mask. A pinned
 * table of another size or layout is unpinned, so that the load makes a
 * new one: its flows follow the lookup table again (p_info() says so).
 * Returns 0 or -errno after p_err().
 */
int xlb_ct_size_for_load(struct bpf_map *map, const char *pin_dir,
			 __u32 entries, __u32 *slots);

#endif /* XLB_CONNTRACK_SIZE_H */
