/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The programs loaded in the kernel that use a map: how xlb finds the
 * datapath attached to an instance's maps, which the pin dir alone does
 * not say (an attach through `ip link` pins nothing of the program).
 */
#ifndef XLB_PROG_USERS_H
#define XLB_PROG_USERS_H

#include <linux/types.h>
#include <linux/bpf.h>

/* Called for each program using the map, with its info; a non-zero
 * return stops the walk and is xlb_map_users()'s. */
typedef int (*xlb_map_user_fn)(__u32 prog_id, const struct bpf_prog_info *info,
			       void *ctx);

/* fn for every loaded program among whose maps (the first 64) is
 * map_fd's: 0, fn's non-zero return, or -errno when the map's own info
 * cannot be read. Programs that go meanwhile are skipped. */
int xlb_map_users(int map_fd, xlb_map_user_fn fn, void *ctx);

#endif /* XLB_PROG_USERS_H */
