// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The connection table from userspace (see conntrack_map.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "conntrack_map.h"
#include "ct_entry.h"

/* The table's size in slots, once it is known to be xlb's table. */
static int ct_slots(int fd, __u32 *n)
{
	struct bpf_map_info info = {};
	__u32 info_len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &info_len))
		return -errno;
	if (info.type != BPF_MAP_TYPE_ARRAY ||
	    info.value_size != sizeof(struct xlb_ct_slot) ||
	    !(info.map_flags & BPF_F_MMAPABLE))
		return -EINVAL;
	*n = info.max_entries;
	return 0;
}

/* len bytes of the table from byte off (a page boundary), mapped (prot:
 * PROT_READ, or with PROT_WRITE). */
static int ct_map(int fd, int prot, size_t off, size_t len, void **p)
{
	*p = mmap(NULL, len, prot, MAP_SHARED, fd, off);
	return *p == MAP_FAILED ? -errno : 0;
}

/* The whole table, mapped (prot as above): *n slots, *len bytes. */
static int ct_map_all(int fd, int prot, struct xlb_ct_slot **slots, __u32 *n,
		      size_t *len)
{
	int err = ct_slots(fd, n);

	if (err)
		return err;
	*len = (size_t)*n * sizeof(**slots);
	return ct_map(fd, prot, 0, *len, (void **)slots);
}

/* The flow's set: the page of the table that holds its XLB_CT_WAYS slots
 * (sets are aligned and the values start at a page), mapped. */
struct ct_set {
	void *page;
	size_t len;
	struct xlb_ct_slot *slot;	/* the set's first */
};

static int ct_set_map(int fd, int prot, __u32 seed,
		      const struct xlb_flow *flow, struct ct_set *set)
{
	size_t off, page = sysconf(_SC_PAGESIZE);
	__u32 n;
	int err;

	err = ct_slots(fd, &n);
	if (err)
		return err;
	off = (size_t)xlb_ct_set_of(flow, seed, n - 1) * sizeof(struct xlb_ct_slot);
	set->len = page;
	err = ct_map(fd, prot, off & ~(page - 1), page, &set->page);
	if (err)
		return err;
	set->slot = (void *)((char *)set->page + (off & (page - 1)));
	return 0;
}

/* A slot's entry as the datapath would read it: false while a CPU is
 * writing the slot. */
static bool ct_read(const struct xlb_ct_slot *s, struct xlb_flow *flow,
		    struct xlb_ct_entry *e)
{
	__u32 seq = __atomic_load_n(&s->e.seq, __ATOMIC_ACQUIRE);

	if (seq & 1)
		return false;
	*flow = s->flow;
	*e = s->e;
	return __atomic_load_n(&s->e.seq, __ATOMIC_ACQUIRE) == seq;
}

bool xlb_ct_live(const struct xlb_flow *flow, const struct xlb_ct_entry *e,
		 const struct xlb_config *cfg, const struct xlb_backend *backends,
		 __u64 now)
{
	return e->backend_id != XLB_BACKEND_NONE && e->backend_id < XLB_MAX_BACKENDS &&
	       xlb_ct_backend_usable(e, &backends[e->backend_id]) &&
	       !xlb_ct_expired(e, now, xlb_ct_timeout_ns(cfg, flow->proto, e->flags));
}

struct census_walk {
	const struct xlb_config *cfg;
	const struct xlb_backend *backends;
	struct xlb_ct_census *out;
	__u64 now;
};

static int census_one(__u32 index, const struct xlb_flow *flow,
		      const struct xlb_ct_entry *e, void *ctx)
{
	struct census_walk *c = ctx;

	(void)index;
	c->out->entries++;
	if (!xlb_ct_live(flow, e, c->cfg, c->backends, c->now))
		return 0;
	c->out->live++;
	c->out->flows[e->backend_id]++;
	return 0;
}

int xlb_ct_census(int ct_fd, const struct xlb_config *cfg,
		  const struct xlb_backend *backends, struct xlb_ct_census *out)
{
	struct census_walk c = { .cfg = cfg, .backends = backends, .out = out };
	struct timespec ts;
	int err;

	memset(out, 0, sizeof(*out));
	err = ct_slots(ct_fd, &out->size);
	if (err)
		return err;
	/* The datapath's bpf_ktime_get_coarse_ns() is this clock. */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	c.now = ts.tv_sec * XLB_NS_PER_S + ts.tv_nsec;
	return xlb_ct_walk(ct_fd, census_one, &c);
}

int xlb_ct_flush(int ct_fd)
{
	struct xlb_ct_slot *slots;
	size_t len;
	__u32 n;
	int err;

	err = ct_map_all(ct_fd, PROT_READ | PROT_WRITE, &slots, &n, &len);
	if (err)
		return err;
	memset(slots, 0, len);
	munmap(slots, len);
	return 0;
}

int xlb_ct_insert(int ct_fd, __u32 seed, const struct xlb_flow *flow,
		  const struct xlb_ct_entry *e)
{
	struct xlb_ct_slot *s;
	struct ct_set set;
	int err;
	__u32 w;

	err = ct_set_map(ct_fd, PROT_READ | PROT_WRITE, seed, flow, &set);
	if (err)
		return err;
	err = -ENOSPC;
	for (w = 0; w < XLB_CT_WAYS; w++) {
		s = &set.slot[w];
		if (s->flow.family && memcmp(&s->flow, flow, sizeof(*flow)))
			continue;
		s->flow = *flow;
		s->e = *e;
		s->e.seq = 0;
		err = 0;
		break;
	}
	munmap(set.page, set.len);
	return err;
}

int xlb_ct_find(int ct_fd, __u32 seed, const struct xlb_flow *flow,
		struct xlb_ct_entry *e)
{
	struct ct_set set;
	struct xlb_flow f;
	int err;
	__u32 w;

	err = ct_set_map(ct_fd, PROT_READ, seed, flow, &set);
	if (err)
		return err;
	err = -ENOENT;
	for (w = 0; w < XLB_CT_WAYS; w++) {
		if (ct_read(&set.slot[w], &f, e) && !memcmp(&f, flow, sizeof(f))) {
			err = (int)w;
			break;
		}
	}
	munmap(set.page, set.len);
	return err;
}

int xlb_ct_walk(int ct_fd, xlb_ct_walk_fn fn, void *ctx)
{
	struct xlb_ct_slot *slots;
	struct xlb_ct_entry e;
	struct xlb_flow flow;
	__u32 i, n;
	size_t len;
	int err;

	err = ct_map_all(ct_fd, PROT_READ, &slots, &n, &len);
	if (err)
		return err;
	for (i = 0; i < n && !err; i++)
		if (ct_read(&slots[i], &flow, &e) && flow.family)
			err = fn(i, &flow, &e, ctx);
	munmap(slots, len);
	return err;
}

/* Mark slot s's entry timed out if it still holds flow (read at seq):
 * true when it did. A slot another CPU is writing is left alone. */
static bool ct_end_slot(struct xlb_ct_slot *s, __u32 seq,
			const struct xlb_flow *flow)
{
	__u32 want = seq;

	if ((seq & 1) || !__atomic_compare_exchange_n(&s->e.seq, &want, seq + 1,
						      false, __ATOMIC_ACQ_REL,
						      __ATOMIC_RELAXED))
		return false;
	if (memcmp(&s->flow, flow, sizeof(*flow))) {
		__atomic_store_n(&s->e.seq, seq + 2, __ATOMIC_RELEASE);
		return false;
	}
	/* No backend: the datapath honours no entry whose backend record
	 * is not in use (XLB_BACKEND_NONE never is), whatever its age or
	 * a refresh stored meanwhile outside the lock, and records the
	 * flow's next choice in place. Idle since 0: a new flow of the set
	 * takes the slot before a live entry's. */
	s->e.backend_id = XLB_BACKEND_NONE;
	s->e.last_seen_ns = 0;
	__atomic_store_n(&s->e.seq, seq + 2, __ATOMIC_RELEASE);
	return true;
}

int xlb_ct_end(int ct_fd, xlb_ct_match_fn match, void *ctx, __u64 *ended)
{
	struct xlb_ct_slot *slots;
	struct xlb_ct_entry e;
	struct xlb_flow flow;
	__u64 n_ended = 0;
	__u32 i, n;
	size_t len;
	int err;

	err = ct_map_all(ct_fd, PROT_READ | PROT_WRITE, &slots, &n, &len);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		if (!ct_read(&slots[i], &flow, &e) || !flow.family ||
		    e.backend_id == XLB_BACKEND_NONE || !match(&flow, &e, ctx))
			continue;
		n_ended += ct_end_slot(&slots[i], e.seq, &flow);
	}
	munmap(slots, len);
	if (ended)
		*ended = n_ended;
	return 0;
}

int xlb_ct_end_flow(int ct_fd, __u32 seed, const struct xlb_flow *flow)
{
	struct xlb_ct_entry e;
	struct ct_set set;
	struct xlb_flow f;
	int err;
	__u32 w;

	err = ct_set_map(ct_fd, PROT_READ | PROT_WRITE, seed, flow, &set);
	if (err)
		return err;
	err = -ENOENT;
	for (w = 0; w < XLB_CT_WAYS; w++) {
		if (ct_read(&set.slot[w], &f, &e) && !memcmp(&f, flow, sizeof(f)) &&
		    e.backend_id != XLB_BACKEND_NONE &&
		    ct_end_slot(&set.slot[w], e.seq, flow)) {
			err = 0;
			break;
		}
	}
	munmap(set.page, set.len);
	return err;
}
