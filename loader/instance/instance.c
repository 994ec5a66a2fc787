// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Opening an instance's pinned maps, its lock, and counted map writes. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/bpf.h>

#include "report.h"
#include "instance.h"
#include "health.h"
#include "table_map.h"
#include "xlb.h"

#define BPFFS_ROOT "/sys/fs/bpf"

static double start_us;

double xlb_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* "From command start" means from process start, before main(). */
__attribute__((constructor)) static void xlb_start_clock(void)
{
	start_us = xlb_now_us();
}

double xlb_elapsed_us(void)
{
	return xlb_now_us() - start_us;
}

/* What a pinned map must look like to be the one xlb.bpf.o declares; a
 * mismatch means the maps come from another build of the program. */
struct map_spec {
	const char *name;
	size_t fd_offset;
	__u32 type;
	__u32 key_size;
	__u32 value_size;
	__u32 max_entries;	/* 0: any */
	bool optional;		/* older programs lack it: fd -1 */
};

#define SPEC(field, name, type, k, v, max) \
	{ name, offsetof(struct xlb_instance, field), type, k, v, max, false }

static const struct map_spec specs[] = {
	SPEC(config_fd, XLB_MAP_CONFIG, BPF_MAP_TYPE_ARRAY, 4,
	     sizeof(struct xlb_config), 1),
	SPEC(vips_fd, XLB_MAP_VIPS, BPF_MAP_TYPE_HASH,
	     sizeof(struct xlb_vip_key), sizeof(struct xlb_vip), XLB_MAX_VIPS),
	SPEC(tables_fd, XLB_MAP_TABLES, BPF_MAP_TYPE_ARRAY_OF_MAPS, 4, 4,
	     XLB_MAX_VIPS),
	SPEC(backends_fd, XLB_MAP_BACKENDS, BPF_MAP_TYPE_ARRAY, 4,
	     sizeof(struct xlb_backend), XLB_MAX_BACKENDS),
	SPEC(vip_stats_fd, XLB_MAP_VIP_STATS, BPF_MAP_TYPE_PERCPU_ARRAY, 4,
	     sizeof(struct xlb_counter), XLB_MAX_VIPS),
	SPEC(backend_stats_fd, XLB_MAP_BACKEND_STATS,
	     BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(struct xlb_counter),
	     XLB_MAX_BACKENDS),
	SPEC(stats_fd, XLB_MAP_STATS, BPF_MAP_TYPE_PERCPU_ARRAY, 4,
	     sizeof(struct xlb_counter), 0),
	SPEC(conntrack_fd, XLB_MAP_CONNTRACK, BPF_MAP_TYPE_ARRAY, 4,
	     sizeof(struct xlb_ct_slot), 0),
	{ XLB_MAP_VIP_FILTER, offsetof(struct xlb_instance, vip_filter_fd),
	  BPF_MAP_TYPE_ARRAY, 4, sizeof(struct xlb_vip_filter), 1, true },
	{ XLB_MAP_VIP_ADDRS, offsetof(struct xlb_instance, vip_addrs_fd),
	  BPF_MAP_TYPE_HASH, sizeof(struct xlb_vip_key),
	  sizeof(struct xlb_vip_addr), XLB_MAX_VIPS, true },
	{ XLB_MAP_VIP_SLOTS, offsetof(struct xlb_instance, vip_slots_fd),
	  BPF_MAP_TYPE_ARRAY, 4, sizeof(struct xlb_vip_slot),
	  XLB_VIP_FILTER_BITS, true },
	{ XLB_MAP_HC_CONFIG, offsetof(struct xlb_instance, hc_config_fd),
	  BPF_MAP_TYPE_ARRAY, 4, sizeof(struct xlb_hc_config),
	  XLB_HC_CONFIG_ENTRIES, true },
	{ XLB_MAP_HC_STATE, offsetof(struct xlb_instance, hc_state_fd),
	  BPF_MAP_TYPE_ARRAY, 4, sizeof(struct xlb_hc_state),
	  XLB_MAX_BACKENDS, true },
	{ XLB_MAP_SRC_RANGES, offsetof(struct xlb_instance, src_ranges_fd),
	  BPF_MAP_TYPE_LPM_TRIE, sizeof(struct xlb_src_key),
	  sizeof(struct xlb_src_value), XLB_SRC_MAP_ENTRIES, true },
	{ XLB_MAP_VIP_RANGED, offsetof(struct xlb_instance, vip_ranged_fd),
	  BPF_MAP_TYPE_ARRAY, 4, sizeof(struct xlb_vip_ranged), 1, true },
	{ XLB_MAP_VIP_DENIED, offsetof(struct xlb_instance, vip_denied_fd),
	  BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(struct xlb_counter),
	  XLB_MAX_VIPS, true },
};

static int *spec_fd(struct xlb_instance *inst, const struct map_spec *s)
{
	return (int *)((char *)inst + s->fd_offset);
}

static bool on_bpffs(const char *path)
{
	struct statfs st;

	return statfs(path, &st) == 0 && st.f_type == BPF_FS_MAGIC;
}

/*
 * Whether this process runs in a mount namespace of its own, not init's:
 * `ip netns exec` unshares one and mounts a fresh /sys, where a bpffs
 * mounted by xlb would vanish with the command and the pins with it.
 * Where init's cannot be read (a PID 1 this process may not inspect), the
 * parent's stands in: `ip netns exec` made the namespace for this command
 * alone. Unknown (no /proc) counts as not.
 */
static bool private_mount_ns(void)
{
	struct stat self, other;
	char parent[64];

	if (stat("/proc/self/ns/mnt", &self))
		return false;
	if (stat("/proc/1/ns/mnt", &other)) {
		snprintf(parent, sizeof(parent), "/proc/%d/ns/mnt", (int)getppid());
		if (stat(parent, &other))
			return false;
	}
	return self.st_ino != other.st_ino || self.st_dev != other.st_dev;
}

int xlb_pin_dir_prepare(const char *dir)
{
	char path[PATH_MAX];
	size_t i;

	if (!on_bpffs(BPFFS_ROOT) && private_mount_ns()) {
		p_err("%s is not bpffs in this mount namespace (not the host's: `ip netns exec` makes one), and a bpffs mounted here would vanish with the command: run xlb with only the network namespace entered (nsenter --net=/run/netns/NS xlb ...), or mount bpffs here yourself (mount -t bpf bpf %s)",
		      BPFFS_ROOT, BPFFS_ROOT);
		return -ENOTSUP;
	}
	if (!on_bpffs(BPFFS_ROOT)) {
		mkdir(BPFFS_ROOT, 0700);
		if (mount("bpf", BPFFS_ROOT, "bpf", 0, "mode=0700")) {
			int err = -errno;

			p_err("bpffs is not mounted on %s and mounting it failed: %s",
			      BPFFS_ROOT, strerror(-err));
			return err;
		}
		p_info("xlb: mounted bpffs on %s", BPFFS_ROOT);
	}
	if (strlen(dir) >= sizeof(path) || dir[0] != '/') {
		p_err("pin dir must be an absolute path on bpffs: %s", dir);
		return -EINVAL;
	}
	/* Create nothing outside bpffs: the deepest existing ancestor must
	 * be on it already. */
	strcpy(path, dir);
	while (access(path, F_OK)) {
		*strrchr(path, '/') = '\0';
		if (!path[0])
			strcpy(path, "/");
	}
	if (!on_bpffs(path)) {
		p_err("%s is not on a bpf filesystem: pin dirs live under %s",
		      dir, BPFFS_ROOT);
		return -EINVAL;
	}
	strcpy(path, dir);
	for (i = 1; path[i]; i++) {
		if (path[i] != '/')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0700) && errno != EEXIST) {
			p_err("cannot create %s: %s", path, strerror(errno));
			return -errno;
		}
		path[i] = '/';
	}
	if (mkdir(path, 0700) && errno != EEXIST) {
		p_err("cannot create %s: %s", path, strerror(errno));
		return -errno;
	}
	return 0;
}

static int lock_dir(struct xlb_instance *inst, enum xlb_lock lock)
{
	int op = lock == XLB_LOCK_WRITE ? LOCK_EX : LOCK_SH;
	double deadline = xlb_now_us() + XLB_LOCK_WAIT_S * 1e6;
	bool said = false;

	/* bpffs holds no regular files, so the lock is on the directory. */
	while (flock(inst->dir_fd, op | LOCK_NB)) {
		if (errno != EWOULDBLOCK) {
			p_err("cannot lock %s: %s", inst->dir, strerror(errno));
			return -errno;
		}
		if (xlb_now_us() > deadline) {
			p_err("%s is locked by another xlb command (waited %d s)",
			      inst->dir, XLB_LOCK_WAIT_S);
			return -EBUSY;
		}
		if (!said && inst->verbose) {
			p_info("xlb: waiting for another xlb command on %s",
			       inst->dir);
			said = true;
		}
		usleep(10000);
	}
	return 0;
}

static int open_map(struct xlb_instance *inst, const struct map_spec *s)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	char path[PATH_MAX + 32];
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", inst->dir, s->name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	err = bpf_obj_get_info_by_fd(fd, &info, &len);
	if (err) {
		err = -errno;
		close(fd);
		return err;
	}
	if (info.type != s->type || info.key_size != s->key_size ||
	    info.value_size != s->value_size ||
	    (s->max_entries && info.max_entries != s->max_entries)) {
		p_err("%s is not the map this xlb expects (type %u, key %u, value %u, %u entries): the instance comes from another build of xlb.bpf.o",
		      path, info.type, info.key_size, info.value_size,
		      info.max_entries);
		close(fd);
		return -EPROTO;
	}
	*spec_fd(inst, s) = fd;
	return 0;
}

int xlb_instance_open(struct xlb_instance *inst,
		      const struct xlb_instance_opts *opts, enum xlb_lock lock)
{
	const char *dir = opts->pin_dir;
	size_t i;
	int err;

	memset(inst, 0, sizeof(*inst));
	inst->verbose = opts->verbose;
	inst->timing = opts->timing;
	inst->dir_fd = -1;
	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		*spec_fd(inst, &specs[i]) = -1;
	if (strlen(dir) >= sizeof(inst->dir)) {
		p_err("pin dir too long: %s", dir);
		return -ENAMETOOLONG;
	}
	strcpy(inst->dir, dir);

	if (!on_bpffs(BPFFS_ROOT)) {
		err = xlb_pin_dir_prepare(BPFFS_ROOT);
		if (err)
			return err;
	}
	inst->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (inst->dir_fd < 0 && (errno == EACCES || errno == EPERM)) {
		err = -errno;
		goto denied;
	}
	if (inst->dir_fd < 0) {
		err = -errno;
		goto no_instance;
	}
	err = lock_dir(inst, lock);
	if (err)
		goto cleanup;
	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		err = open_map(inst, &specs[i]);
		if (err == -EACCES || err == -EPERM)
			goto denied;
		if (err == -ENOENT && specs[i].optional)
			continue;
		if (err == -ENOENT)
			goto no_instance;
		if (err == -EPROTO)
			goto cleanup;
		if (err) {
			p_err("cannot open %s/%s: %s", dir, specs[i].name,
			      strerror(-err));
			goto cleanup;
		}
	}
	/* A change made from another namespace would resolve next hops in
	 * this one: refused; a read is told so. */
	err = xlb_instance_here(inst, lock == XLB_LOCK_WRITE);
	if (err)
		goto cleanup;
	return 0;

no_instance:
	p_err("no xlb instance in %s: attach first (xlb attach DEV or ip link ... xdp obj ...)",
	      dir);
	err = -ENOENT;
	goto cleanup;
denied:
	p_err("cannot open the instance in %s: permission denied (xlb needs root, or CAP_BPF and CAP_NET_ADMIN)",
	      dir);
cleanup:
	xlb_instance_close(inst);
	return err;
}

void xlb_instance_close(struct xlb_instance *inst)
{
	size_t i;
	int *fd;

	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		fd = spec_fd(inst, &specs[i]);
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
	}
	/* Closing the directory releases the lock. */
	if (inst->dir_fd >= 0)
		close(inst->dir_fd);
	inst->dir_fd = -1;
}

/* Test builds stop here between two writes (tests/lib/fault.c); the
 * shipped xlb has nothing of it. */
#ifdef XLB_TEST_BUILD
void xlb_test_write_done(void);
#define write_done() xlb_test_write_done()
#else
#define write_done() do { } while (0)
#endif

int xlb_map_update(int fd, const void *key, const void *value, __u64 flags)
{
	if (bpf_map_update_elem(fd, key, value, flags))
		return -errno;
	write_done();
	return 0;
}

int xlb_map_update_batch(int fd, const void *keys, const void *values,
			 __u32 n)
{
	__u32 count = n;

	if (bpf_map_update_batch(fd, keys, values, &count, NULL))
		return -errno;
	write_done();
	return 0;
}

int xlb_map_delete(int fd, const void *key)
{
	if (bpf_map_delete_elem(fd, key))
		return -errno;
	write_done();
	return 0;
}

struct swap_watch {
	int tables_fd;
	__u32 vip_id;
	__u32 old_inner;	/* 0: the VIP had no table */
	volatile bool stop;
	double seen_us;
};

/* Poll the outer entry until it names another inner map than before. */
static void *watch_swap(void *arg)
{
	struct swap_watch *w = arg;
	__u32 inner;

	while (!w->stop) {
		if (!bpf_map_lookup_elem(w->tables_fd, &w->vip_id, &inner) &&
		    inner != w->old_inner) {
			w->seen_us = xlb_now_us();
			break;
		}
	}
	return NULL;
}

int xlb_map_install_table(int tables_fd, __u32 vip_id, int made_fd,
			  double *live_us)
{
	struct swap_watch w = { .tables_fd = tables_fd, .vip_id = vip_id };
	pthread_t thread;
	bool watching;
	int err;

	if (live_us) {
		if (bpf_map_lookup_elem(tables_fd, &vip_id, &w.old_inner))
			w.old_inner = 0;
		watching = !pthread_create(&thread, NULL, watch_swap, &w);
	} else {
		watching = false;
	}
	err = xlb_table_install_fd(tables_fd, vip_id, made_fd);
	if (watching) {
		w.stop = true;
		pthread_join(thread, NULL);
		/* Not seen before the update returned: it returned first. */
		*live_us = w.seen_us ? w.seen_us : xlb_now_us();
	}
	if (err)
		return err;
	write_done();
	return 0;
}
