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
 * accepts no other), into *slots, for the program's xlb_ct_mask.
 *
 * A pinned table of the size and layout is reused by the load (*new_fd is
 * -1). One of another size or layout is left in place, and a new table
 * made for the load (*new_fd): xlb_ct_pin() replaces the pinned one once
 * the program is attached, and until then a failure changes nothing. A
 * pinned table that an attached program uses is not replaced (-EBUSY):
 * the devices would no longer share one table.
 * Returns 0 or -errno after p_err().
 */
int xlb_ct_size_for_load(struct bpf_map *map, const char *pin_dir,
			 __u32 entries, __u32 *slots, int *new_fd);

/* Pin new_fd (from xlb_ct_size_for_load; -1: nothing to do) in place of
 * the table pinned in pin_dir: its flows follow the lookup table again
 * (p_info() says so). Returns 0 or -errno after p_err(). */
int xlb_ct_pin(const char *pin_dir, int new_fd);

#endif /* XLB_CONNTRACK_SIZE_H */
