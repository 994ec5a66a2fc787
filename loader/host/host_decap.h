/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The backends' XDP program (bpf/decap.bpf.c, embedded through its
 * skeleton) as `xlb host` runs it: loaded with its maps filled, pinned in
 * a directory of the network namespace, attached; the maps rewritten in
 * place; their counters read; and removed again. The maps are
 * include/decap.h's. Functions return 0 or -errno and print nothing.
 */
#ifndef XLB_HOST_DECAP_H
#define XLB_HOST_DECAP_H

#include <stdbool.h>
#include <linux/types.h>
#include "decap.h"

/* Pinned in the directory under these names (the maps under theirs). */
#define XLB_HOST_PROG_PIN	"xdp_decap"

/* What the maps hold, as one value: built, compared and written whole.
 * Entries in any order; each key once. */
struct xlb_decap_content {
	__u32 n_addrs, n_fleet, n_lbs, n_out;
	struct xlb_decap_addr addrs[XLB_DECAP_ADDRS_MAX];
	__u32 addr_flags[XLB_DECAP_ADDRS_MAX];	/* XLB_DECAP_ADDR_* */
	struct xlb_decap_prefix fleet[XLB_DECAP_PREFIXES_MAX];
	struct xlb_decap_prefix lbs[XLB_DECAP_PREFIXES_MAX];
	__u32 out[XLB_DECAP_EGRESS_MAX];	/* ifindexes */
	struct xlb_decap_config cfg;
};

/* The program and its maps; -1 where not open. */
struct xlb_decap_fds {
	int prog, cfg, stats, addrs, fleet, lbs, out;
};

/* The program and maps pinned in dir (-ENOENT: none there; -EPROTO: not
 * those of this build's program, whose map layouts differ). */
int xlb_decap_open(const char *dir, struct xlb_decap_fds *fds);
void xlb_decap_close(struct xlb_decap_fds *fds);

int xlb_decap_read(const struct xlb_decap_fds *fds, struct xlb_decap_content *c);
/* Make the maps hold want, where they hold have: only the entries that
 * differ are written, the new ones before the old ones go. */
int xlb_decap_write(const struct xlb_decap_fds *fds,
		    const struct xlb_decap_content *have,
		    const struct xlb_decap_content *want);
bool xlb_decap_equal(const struct xlb_decap_content *a,
		     const struct xlb_decap_content *b);

/*
 * Load the program with its maps holding c, multi-buffer when frags (the
 * kernel must have it: xlb_xdp_frags_supported()), pin it and them in dir
 * (which must exist, empty), attach it to ifindex: native mode where the
 * driver has it, generic otherwise (as `ip link set dev DEV xdp obj`
 * does). *native_err is native mode's refusal (0 when it took the
 * program), which a device's MTU may explain. On failure nothing is left:
 * no pin, no program on ifindex. *what names the step that failed.
 */
int xlb_decap_install(const char *dir, int ifindex,
		      const struct xlb_decap_content *c, bool frags,
		      int *native_err, const char **what);

/* Attach the pinned program (fds->prog) to ifindex, as above. */
int xlb_decap_attach(int prog_fd, int ifindex, int *native_err);

/* Detach the program pinned in dir from ifindex if it is the one
 * attached there, and remove the pins and dir. What is already gone is no
 * error. */
int xlb_decap_remove(const char *dir, int ifindex);

/* The XDP program attached to ifindex: its id (0: none) and mode
 * ("native", "generic", "offload"). */
int xlb_decap_attached(int ifindex, __u32 *prog_id, const char **mode);
__u32 xlb_decap_prog_id(int prog_fd);

/* The counters summed over CPUs, by enum xlb_decap_stat. */
int xlb_decap_stats(const struct xlb_decap_fds *fds,
		    struct xlb_counter out[XLB_DECAP__MAX]);

#endif /* XLB_HOST_DECAP_H */
