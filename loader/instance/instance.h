/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * An xlb instance: the maps pinned by name in one directory on bpffs
 * (--pin-dir, or wherever `ip link ... xdp obj` pinned them:
 * /sys/fs/bpf/tc/globals, or /sys/fs/bpf/xdp/globals when /sys/fs/bpf/xdp
 * is a directory; loader/cli/main.c finds it), and the lock that
 * serialises xlb commands working on it. xlb keeps no daemon:
 * every command opens the instance, reads and changes the maps, and exits.
 *
 * loader/instance, layer 4 of loader/ (may include common/, algo/, sim/):
 *   instance.h     opening, locking, every map write (kill-safe points)
 *   state.h        the configuration read back from the maps
 *   update.h       changes as transactions, in the order of a change:
 *     wants.c        what is asked for, checked against the state (pure)
 *     update.c       begin (finish what a kill left), the VIPs' steps, close
 *     records.c      backend records and VIP keys, in batches
 *     tables.c       a VIP's table: computed, made ahead, its swap
 *     vip_sets.c     VIP filter, address set, settings: the first write
 *     writes.c       each write of a step, recorded in the plan
 *     plan.c         the plan (the steps run once, on a copy), its commit
 *                    (the recorded writes performed, in order)
 *     change.h       what these share: struct xlb_change, struct xlb_plan
 *   neigh.h        the backends' next hops, after a change (its close)
 *   history.h      a stateless VIP's previous owners
 *   table_map.h    a VIP's table as an inner map, swapped atomically
 *   conntrack_map.h conntrack_size.h  the connection table's map
 *   settings.h     instance settings (timeouts, seed, sources)
 *   hc_store.h     health settings and state
 * What the command line decides (the pin dir, -v) comes in as parameters
 * (struct xlb_instance_opts); what one change holds lives in its state
 * (struct xlb_state's change, from xlb_update_begin() to
 * xlb_update_close()): nothing of an instance or a change is global.
 */
#ifndef XLB_INSTANCE_H
#define XLB_INSTANCE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* Timings of a table installed (-v; a benchmark). */
struct xlb_table_timing {
	double build_us;	/* computing the table */
	double live_us;		/* computed to live: written and swapped in */
	double return_us;	/* computed to the update's return, after the
				 * kernel's wait for packets on the old table */
	double since_start_us;	/* process start to live */
};

/* Where the instance is (the command line's --pin-dir), whether to say
 * what a command waits for and how long each table took (-v), and where
 * to keep the last table's timings without a word (NULL: nowhere). */
struct xlb_instance_opts {
	const char *pin_dir;
	bool verbose;
	struct xlb_table_timing *timing;
};

struct xlb_instance {
	char dir[PATH_MAX];
	bool verbose;
	struct xlb_table_timing *timing;	/* opts' */
	int dir_fd;		/* holds the flock */
	int config_fd;
	int vips_fd;
	int tables_fd;
	int backends_fd;
	int vip_stats_fd;
	int backend_stats_fd;
	int stats_fd;
	int conntrack_fd;
	int vip_filter_fd;	/* -1: a program of an older xlb, without one */
	int vip_addrs_fd;	/* -1: likewise */
	int vip_slots_fd;	/* -1: likewise */
	int hc_config_fd;	/* -1: likewise (hc_store.h) */
	int hc_state_fd;
	int src_ranges_fd;	/* -1: likewise (src_ranges.h) */
	int vip_ranged_fd;
	int vip_denied_fd;
};

enum xlb_lock {
	XLB_LOCK_READ,		/* shared: readers see no half-done change */
	XLB_LOCK_WRITE,		/* exclusive */
};

/* Open the instance in dir and take its lock, waiting up to
 * XLB_LOCK_WAIT_S for another xlb command to finish. Returns 0 or -errno
 * after p_err() (-ENOENT: no instance there). */
#define XLB_LOCK_WAIT_S	10
int xlb_instance_open(struct xlb_instance *inst,
		      const struct xlb_instance_opts *opts, enum xlb_lock lock);
void xlb_instance_close(struct xlb_instance *inst);

/*
 * Whether the instance's XDP program runs on a device of this network
 * namespace, where xlb resolves its backends' next hops and makes their
 * neighbour entries (instance_dev.c); behind libxdp's dispatcher, whether
 * the dispatcher its link targets does. A detached instance (maps pinned,
 * no program) passes, and so does one whose program no device runs here
 * or in a namespace of ip netns's (loaded for BPF_PROG_TEST_RUN, just
 * detached, or somewhere xlb cannot name). Otherwise, with
 * refuse, -EXDEV after p_err() naming the device and how to get there;
 * without, a note and 0.
 */
int xlb_instance_here(const struct xlb_instance *inst, bool refuse);

/* The device of this network namespace that runs the instance's program,
 * into dev: 1, or 0 when none does, or -errno. */
int xlb_instance_dev(const struct xlb_instance *inst, char *dev, size_t len);

/* Mount bpffs on /sys/fs/bpf when it is not mounted, create dir (and its
 * parents), and check that dir is on bpffs. Returns 0 or -errno after
 * p_err(). */
int xlb_pin_dir_prepare(const char *dir);

/*
 * Every map write of xlb goes through these, so that the test build of
 * xlb (tests/lib/fault.c) can stop right after any of them and prove that
 * a kill at any point leaves a working instance.
 */
int xlb_map_update(int fd, const void *key, const void *value, __u64 flags);
int xlb_map_delete(int fd, const void *key);
/* n elements in one BPF_MAP_UPDATE_BATCH: one write. */
int xlb_map_update_batch(int fd, const void *keys, const void *values,
			 __u32 n);
/*
 * Install a VIP's table (see table_map.h), counted as one write: made_fd,
 * made in advance (xlb_table_create()); it stays the caller's. The swap
 * is live for packets the moment the kernel exchanges the outer entry, but
 * the update returns only after an RCU grace period (the kernel waits for
 * programs still running on the old table), milliseconds later. With
 * live_us, a thread watches the outer entry and *live_us receives the time
 * (xlb_now_us()) at which the new table was first seen there.
 */
int xlb_map_install_table(int tables_fd, __u32 vip_id, int made_fd,
			  double *live_us);

/* Microseconds since the process started (for -v timings). */
double xlb_elapsed_us(void);
double xlb_now_us(void);

#endif /* XLB_INSTANCE_H */
