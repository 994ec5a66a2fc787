// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Packets from the running datapath (see capture.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "capture.h"
#include "instance.h"
#include "prog_users.h"
#include "report.h"

#define LOCK_DIR	"/run/xlb"
#define MAX_PROGS	16
#define UNTIL_VAR	"xlb_capture_until"

/* A program's switch: its .bss, mapped, and where the deadline is. */
struct prog_switch {
	__u32 prog_id;
	int bss_fd;
	void *mem;		/* mapped .bss; NULL: written by update */
	size_t mem_len;
	__u32 value_size;
	__u32 off;		/* of xlb_capture_until in the .bss */
};

struct xlb_capture {
	int lock_fd;
	int ring_fd, cfg_fd, stats_fd;
	struct ring_buffer *rb;
	struct prog_switch progs[MAX_PROGS];
	unsigned int n_progs;
	bool stale;		/* a program without the switch */
	__u64 renewed_ms;
	struct xlb_capture_stats before;
	int ncpu;
	/* the poll's callback, for the ring's */
	xlb_capture_fn fn;
	void *ctx;
};

static __u64 coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The offset of the variable in the .bss map's datasec, or -ENOENT. */
static int until_offset(const struct bpf_map_info *info)
{
	const struct btf_var_secinfo *v;
	const struct btf_type *sec;
	struct btf *btf;
	int off = -ENOENT, i;

	if (!info->btf_id || !info->btf_value_type_id)
		return -ENOENT;
	btf = btf__load_from_kernel_by_id(info->btf_id);
	if (!btf)
		return -ENOENT;
	sec = btf__type_by_id(btf, info->btf_value_type_id);
	if (sec && btf_is_datasec(sec)) {
		v = btf_var_secinfos(sec);
		for (i = 0; i < btf_vlen(sec); i++, v++) {
			const struct btf_type *var = btf__type_by_id(btf, v->type);

			if (var && !strcmp(btf__name_by_offset(btf, var->name_off), UNTIL_VAR)) {
				off = v->offset;
				break;
			}
		}
	}
	btf__free(btf);
	return off;
}

/* Each XDP program named xlb_xdp on the instance's maps: its .bss. */
static int add_prog(__u32 prog_id, const struct bpf_prog_info *info, void *ctx)
{
	const __u32 *ids = (const __u32 *)(unsigned long)info->map_ids;
	struct xlb_capture *c = ctx;
	struct prog_switch *p;
	__u32 i;

	/* XDP attached directly, or an extension behind libxdp's
	 * dispatcher: each has a .bss of its own. */
	if (strcmp(info->name, "xlb_xdp") ||
	    (info->type != BPF_PROG_TYPE_XDP && info->type != BPF_PROG_TYPE_EXT) ||
	    c->n_progs == MAX_PROGS)
		return 0;
	p = &c->progs[c->n_progs];
	p->prog_id = prog_id;
	p->bss_fd = -1;
	for (i = 0; i < info->nr_map_ids && i < 64; i++) {
		struct bpf_map_info m = {};
		__u32 len = sizeof(m);
		size_t nl;
		int fd, off;

		fd = bpf_map_get_fd_by_id(ids[i]);
		if (fd < 0)
			continue;
		if (bpf_obj_get_info_by_fd(fd, &m, &len) ||
		    (nl = strlen(m.name)) < 4 || strcmp(m.name + nl - 4, ".bss") ||
		    (off = until_offset(&m)) < 0) {
			close(fd);
			continue;
		}
		p->bss_fd = fd;
		p->off = off;
		p->value_size = m.value_size;
		if (m.map_flags & BPF_F_MMAPABLE) {
			size_t page = sysconf(_SC_PAGESIZE);

			p->mem_len = (m.value_size + page - 1) & ~(page - 1);
			p->mem = mmap(NULL, p->mem_len, PROT_READ | PROT_WRITE,
				      MAP_SHARED, fd, 0);
			if (p->mem == MAP_FAILED)
				p->mem = NULL;
		}
		break;
	}
	if (p->bss_fd < 0)
		c->stale = true;
	else
		c->n_progs++;
	return 0;
}

/* Set the deadline of every program's switch (0: off). */
static int set_until(struct xlb_capture *c, __u64 until)
{
	unsigned int i;
	__u32 zero = 0;
	int err = 0;

	for (i = 0; i < c->n_progs; i++) {
		struct prog_switch *p = &c->progs[i];
		__u8 *val;

		if (p->mem) {
			__atomic_store_n((__u64 *)((__u8 *)p->mem + p->off), until,
					 __ATOMIC_RELEASE);
			continue;
		}
		/* Not mappable: the whole .bss written back, the program's
		 * clock with it, which it reads again at the next tick. */
		val = calloc(1, p->value_size);
		if (!val)
			return -ENOMEM;
		if (bpf_map_lookup_elem(p->bss_fd, &zero, val) == 0) {
			memcpy(val + p->off, &until, sizeof(until));
			if (bpf_map_update_elem(p->bss_fd, &zero, val, BPF_ANY))
				err = -errno;
		} else {
			err = -errno;
		}
		free(val);
	}
	return err;
}

static int stats_sum(struct xlb_capture *c, struct xlb_capture_stats *sum)
{
	struct xlb_capture_stats *per = calloc(c->ncpu, sizeof(*per));
	__u32 zero = 0;
	int i, err = 0;

	memset(sum, 0, sizeof(*sum));
	if (!per)
		return -ENOMEM;
	if (bpf_map_lookup_elem(c->stats_fd, &zero, per))
		err = -errno;
	for (i = 0; !err && i < c->ncpu; i++) {
		sum->seen += per[i].seen;
		sum->captured += per[i].captured;
		sum->lost += per[i].lost;
	}
	free(per);
	return err;
}

static int stats_zero(struct xlb_capture *c)
{
	struct xlb_capture_stats *zeros = calloc(c->ncpu, sizeof(*zeros));
	__u32 zero = 0;
	int err = 0;

	if (!zeros)
		return -ENOMEM;
	if (bpf_map_update_elem(c->stats_fd, &zero, zeros, BPF_ANY))
		err = -errno;
	free(zeros);
	return err;
}

static int discard(const struct xlb_capture_rec *rec, void *ctx)
{
	(void)rec;
	(void)ctx;
	return 0;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct xlb_capture *c = ctx;

	if (size < sizeof(struct xlb_capture_rec))
		return 0;
	return c->fn(data, c->ctx);
}

/* The capture lock of the instance in dir: one file per pin dir. */
static int lock_take(const char *dir, int *fd)
{
	char path[128];
	struct stat st;

	if (stat(dir, &st))
		return -errno;
	mkdir(LOCK_DIR, 0755);
	snprintf(path, sizeof(path), LOCK_DIR "/capture-%llx-%llx.lock",
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (*fd < 0)
		return -errno;
	if (flock(*fd, LOCK_EX | LOCK_NB))
		return errno == EWOULDBLOCK ? -EBUSY : -errno;
	return 0;
}

static int pinned(const char *dir, const char *name)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return bpf_obj_get(path);
}

int xlb_capture_start(struct xlb_instance *inst, const struct xlb_capture_cfg *cfg,
		      struct xlb_capture **out)
{
	struct xlb_capture *c = calloc(1, sizeof(*c));
	__u32 zero = 0;
	int err;

	if (!c)
		return -ENOMEM;
	c->lock_fd = c->ring_fd = c->cfg_fd = c->stats_fd = -1;
	c->ncpu = libbpf_num_possible_cpus();
	if (c->ncpu < 0) {
		err = c->ncpu;
		p_err("cannot count the CPUs: %s", strerror(-err));
		goto fail;
	}
	err = lock_take(inst->dir, &c->lock_fd);
	if (err) {
		p_err(err == -EBUSY ? "another capture runs on the instance in %s: one at a time" :
				      "cannot take the capture lock of %s: %s",
		      inst->dir, strerror(-err));
		goto fail;
	}
	c->ring_fd = pinned(inst->dir, XLB_MAP_CAPTURE_RING);
	c->cfg_fd = pinned(inst->dir, XLB_MAP_CAPTURE_CFG);
	c->stats_fd = pinned(inst->dir, XLB_MAP_CAPTURE_STATS);
	if (c->ring_fd < 0 || c->cfg_fd < 0 || c->stats_fd < 0) {
		err = -ENOENT;
		p_err("the instance in %s has no capture maps: its program is of an older xlb; attach this one (xlb attach, or ip link ... xdp obj) to capture",
		      inst->dir);
		goto fail;
	}
	err = xlb_map_users(inst->config_fd, add_prog, c);
	if (!err && !c->n_progs) {
		err = -ENOENT;
		p_err(c->stale ? "the program on the instance in %s is of an older xlb, without capture: attach this one to capture" :
				 "no program runs on the instance in %s: nothing to capture",
		      inst->dir);
		goto fail;
	}
	if (!err && bpf_map_update_elem(c->cfg_fd, &zero, cfg, BPF_ANY))
		err = -errno;
	/* Counted from zero: --sample N keeps a capture's first packet and
	 * every Nth after it, on each CPU. */
	if (!err)
		err = stats_zero(c);
	if (!err)
		err = stats_sum(c, &c->before);
	if (err) {
		p_err("cannot set the capture up: %s", strerror(-err));
		goto fail;
	}
	c->rb = ring_buffer__new(c->ring_fd, on_record, c, NULL);
	if (!c->rb) {
		err = -errno ?: -EINVAL;
		p_err("cannot read the capture ring: %s", strerror(-err));
		goto fail;
	}
	/* What an earlier capture left in the ring is not this one's. */
	c->fn = discard;
	ring_buffer__consume(c->rb);
	err = set_until(c, coarse_ns() + XLB_CAPTURE_LEASE_MS * 1000000ULL);
	if (err) {
		p_err("cannot switch capturing on: %s", strerror(-err));
		goto fail;
	}
	c->renewed_ms = coarse_ns() / 1000000;
	*out = c;
	return 0;
fail:
	xlb_capture_stop(c, NULL);
	return err;
}

int xlb_capture_poll(struct xlb_capture *c, int timeout_ms, xlb_capture_fn fn,
		     void *ctx)
{
	__u64 now = coarse_ns();
	int n;

	if (now / 1000000 >= c->renewed_ms + XLB_CAPTURE_RENEW_MS) {
		if (set_until(c, now + XLB_CAPTURE_LEASE_MS * 1000000ULL)) {
			p_err("cannot keep capturing on");
			return -EIO;
		}
		c->renewed_ms = now / 1000000;
	}
	if (timeout_ms > XLB_CAPTURE_RENEW_MS)
		timeout_ms = XLB_CAPTURE_RENEW_MS;
	c->fn = fn;
	c->ctx = ctx;
	n = ring_buffer__poll(c->rb, timeout_ms);
	/* A signal ends the wait, not the capture; fn's stop (a negative
	 * value) comes back as it is. */
	return n < 0 && n != -EINTR ? n : 0;
}

void xlb_capture_stop(struct xlb_capture *c, struct xlb_capture_stats *totals)
{
	struct xlb_capture_stats after;
	unsigned int i;

	if (!c)
		return;
	set_until(c, 0);
	if (totals) {
		memset(totals, 0, sizeof(*totals));
		if (c->stats_fd >= 0 && !stats_sum(c, &after)) {
			totals->seen = after.seen - c->before.seen;
			totals->captured = after.captured - c->before.captured;
			totals->lost = after.lost - c->before.lost;
		}
	}
	if (c->rb) {
		c->fn = discard;
		ring_buffer__free(c->rb);
	}
	for (i = 0; i < c->n_progs; i++) {
		if (c->progs[i].mem)
			munmap(c->progs[i].mem, c->progs[i].mem_len);
		close(c->progs[i].bss_fd);
	}
	if (c->ring_fd >= 0)
		close(c->ring_fd);
	if (c->cfg_fd >= 0)
		close(c->cfg_fd);
	if (c->stats_fd >= 0)
		close(c->stats_fd);
	if (c->lock_fd >= 0)
		close(c->lock_fd);
	free(c);
}

unsigned int xlb_capture_programs(const struct xlb_capture *c)
{
	return c->n_progs;
}
