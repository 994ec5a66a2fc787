// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The connection table from userspace (see conntrack_map.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "conntrack_map.h"
#include "ct_entry.h"

/* The table's slots, mapped (prot: PROT_READ, or with PROT_WRITE). */
static int ct_map(int fd, int prot, struct xlb_ct_slot **slots, __u32 *n,
		  size_t *len)
{
	struct bpf_map_info info = {};
	__u32 info_len = sizeof(info);
	void *p;

	if (bpf_obj_get_info_by_fd(fd, &info, &info_len))
		return -errno;
	if (info.type != BPF_MAP_TYPE_ARRAY ||
	    info.value_size != sizeof(struct xlb_ct_slot) ||
	    !(info.map_flags & BPF_F_MMAPABLE))
		return -EINVAL;
	*n = info.max_entries;
	*len = (size_t)info.max_entries * sizeof(struct xlb_ct_slot);
	p = mmap(NULL, *len, prot, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	*slots = p;
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

int xlb_ct_census(int ct_fd, const struct xlb_config *cfg,
		  const struct xlb_backend *backends, struct xlb_ct_census *out)
{
	struct xlb_ct_slot *slots;
	struct xlb_ct_entry e;
	struct xlb_flow flow;
	struct timespec ts;
	__u32 i, n;
	size_t len;
	__u64 now;
	int err;

	memset(out, 0, sizeof(*out));
	err = ct_map(ct_fd, PROT_READ, &slots, &n, &len);
	if (err)
		return err;
	out->size = n;
	/* The datapath's bpf_ktime_get_coarse_ns() is this clock. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec * XLB_NS_PER_S + ts.tv_nsec;
	for (i = 0; i < n; i++) {
		if (!ct_read(&slots[i], &flow, &e) || !flow.family)
			continue;
		out->entries++;
		if (e.backend_id == XLB_BACKEND_NONE ||
		    e.backend_id >= XLB_MAX_BACKENDS ||
		    !xlb_ct_backend_usable(&e, &backends[e.backend_id]) ||
		    xlb_ct_expired(&e, now, xlb_ct_timeout_ns(cfg, flow.proto,
							      e.flags)))
			continue;
		out->live++;
		out->flows[e.backend_id]++;
	}
	munmap(slots, len);
	return 0;
}

int xlb_ct_flush(int ct_fd)
{
	struct xlb_ct_slot *slots;
	size_t len;
	__u32 n;
	int err;

	err = ct_map(ct_fd, PROT_READ | PROT_WRITE, &slots, &n, &len);
	if (err)
		return err;
	memset(slots, 0, len);
	munmap(slots, len);
	return 0;
}

int xlb_ct_insert(int ct_fd, __u32 seed, const struct xlb_flow *flow,
		  const struct xlb_ct_entry *e)
{
	struct xlb_ct_slot *slots, *s;
	__u32 set, w, n;
	size_t len;
	int err;

	err = ct_map(ct_fd, PROT_READ | PROT_WRITE, &slots, &n, &len);
	if (err)
		return err;
	err = -ENOSPC;
	set = xlb_ct_set_of(flow, seed, n - 1);
	for (w = 0; w < XLB_CT_WAYS && set + w < n; w++) {
		s = &slots[set + w];
		if (s->flow.family && memcmp(&s->flow, flow, sizeof(*flow)))
			continue;
		s->flow = *flow;
		s->e = *e;
		s->e.seq = 0;
		err = 0;
		break;
	}
	munmap(slots, len);
	return err;
}

int xlb_ct_find(int ct_fd, __u32 seed, const struct xlb_flow *flow,
		struct xlb_ct_entry *e)
{
	struct xlb_ct_slot *slots;
	struct xlb_flow f;
	__u32 set, w, n;
	size_t len;
	int err;

	err = ct_map(ct_fd, PROT_READ, &slots, &n, &len);
	if (err)
		return err;
	err = -ENOENT;
	set = xlb_ct_set_of(flow, seed, n - 1);
	for (w = 0; w < XLB_CT_WAYS && set + w < n; w++) {
		if (ct_read(&slots[set + w], &f, e) &&
		    !memcmp(&f, flow, sizeof(f))) {
			err = 0;
			break;
		}
	}
	munmap(slots, len);
	return err;
}
