/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A VIP's lookup table in the kernel: the inner array of M backend ids held
 * at the VIP's id in the xlb_tables map-of-maps (bpf/maps.h).
 */
#ifndef XLB_TABLE_MAP_H
#define XLB_TABLE_MAP_H

#include <linux/types.h>

struct xlb_history;

/*
 * xlb_table_install - make slots[0..m) the live table of vip_id, atomically.
 * A new inner array is created and filled completely, then swapped in by a
 * single update of the outer map: a packet sees the whole old table or the
 * whole new one, never a mix. The old array is freed by the kernel when the
 * last program run holding it has finished.
 * m must be within XLB_MIN_TABLE_SIZE..XLB_MAX_TABLE_SIZE and every slot a
 * backend id below XLB_MAX_BACKENDS. Returns 0 or -errno.
 */
int xlb_table_install(int tables_fd, __u32 vip_id, const __u32 *slots, __u32 m);

/*
 * xlb_table_create - the inner array of slots[0..m), filled and frozen but
 * not installed: its fd (the caller closes it) or -errno. A change of
 * many VIPs makes every table this way before its first swap, so that
 * running out of memory stops it before it has changed anything.
 */
int xlb_table_create(const __u32 *slots, __u32 m);
/* The same with a stateless VIP's history h (h->m == m), in the layout
 * XLB_TABLE_F_HISTORY; h NULL: xlb_table_create(). */
int xlb_table_create_hist(const __u32 *slots, const struct xlb_history *h,
			  __u32 m);

/*
 * xlb_table_install_fd - swap in fd, a table from xlb_table_create() made
 * in advance, as vip_id's; fd stays the caller's to close. A change
 * installs it through xlb_map_install_table() (instance.h), which counts
 * the write and times it. Returns 0 or -errno.
 */
int xlb_table_install_fd(int tables_fd, __u32 vip_id, int fd);

/*
 * xlb_table_read - the live table of vip_id: *slots (malloc'd, the caller
 * frees it) receives its m backend ids and *m its size. Returns 0, -ENOENT
 * when the VIP has no table, or another -errno.
 */
int xlb_table_read(int tables_fd, __u32 vip_id, __u32 **slots, __u32 *m);
/* The same, and into *h (h may be NULL) the table's history: empty when
 * it has none; the caller frees it with xlb_history_free(). */
int xlb_table_read_hist(int tables_fd, __u32 vip_id, __u32 **slots,
			__u32 *m, struct xlb_history *h);
/* The same of the inner map fd (one xlb_table_create*() made). */
int xlb_table_read_fd(int fd, __u32 **slots, __u32 *m, struct xlb_history *h);

/* xlb_table_remove - drop vip_id's table (no-op when it has none).
 * Returns 0 or -errno. */
int xlb_table_remove(int tables_fd, __u32 vip_id);

#endif /* XLB_TABLE_MAP_H */
