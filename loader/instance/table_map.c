// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Installing and reading a VIP's table.
 *
 * The scheme: xlb_tables is an ARRAY_OF_MAPS indexed by VIP id; each entry
 * is an inner ARRAY of M backend ids (BPF_F_INNER_MAP, so M may differ per
 * VIP; BPF_F_MMAPABLE, so userspace fills it through one mapping rather than
 * a syscall per slot). A table is never edited in place: a change builds a
 * complete new inner array and replaces the outer entry with one
 * BPF_MAP_UPDATE_ELEM, which the kernel performs as a single pointer
 * exchange. The datapath reads the outer entry once per packet, so every
 * packet uses exactly one whole table, old or new. The outer map holds the
 * only long-lived reference to an inner array: the old one is freed after
 * the swap, once no running program can hold it. Installed arrays are
 * frozen, so nothing can alter a live table.
 *
 * The layout is include/xlb.h's struct xlb_table_elem: a header holding
 * M, then four 16-bit backend ids to an 8-byte element (an array map
 * rounds every value up to 8 bytes, as mmap() shows it); a stateless
 * VIP's table has two slots to an element, each with its history entry,
 * and the entries after them.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include "xlb.h"
#include "history.h"
#include "table_map.h"

static size_t table_bytes(__u32 elems)
{
	size_t page = sysconf(_SC_PAGESIZE);

	return ((size_t)elems * sizeof(struct xlb_table_elem) + page - 1) /
	       page * page;
}

int xlb_table_create_hist(const __u32 *slots, const struct xlb_history *h,
			  __u32 m)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts,
		    .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	__u32 i, elems;
	struct xlb_table_elem *mem;
	int fd, err;

	if (m < XLB_MIN_TABLE_SIZE || m > XLB_MAX_TABLE_SIZE ||
	    (h && (h->m != m || h->n > XLB_HIST_MAX)))
		return -EINVAL;
	for (i = 0; i < m; i++)
		if (slots[i] >= XLB_MAX_BACKENDS || (h && h->slot[i] > h->n))
			return -EINVAL;
	elems = h ? XLB_HIST_TABLE_ELEMS(m, h->n) : XLB_TABLE_ELEMS(m);

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "xlb_table", sizeof(__u32),
			    sizeof(*mem), elems, &opts);
	if (fd < 0)
		return -errno;
	mem = mmap(NULL, table_bytes(elems), PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	if (mem == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	/* The array comes zeroed: the tail of the last element stays
	 * XLB_BACKEND_NONE, and no slot reaches it. */
	mem[0].id[0] = m & 0xffff;
	mem[0].id[1] = m >> 16;
	if (h) {
		mem[0].id[2] = XLB_TABLE_F_HISTORY;
		mem[0].id[3] = h->n;
		for (i = 0; i < m; i++) {
			mem[1 + i / XLB_HIST_SLOTS].id[i % XLB_HIST_SLOTS * 2] = slots[i];
			mem[1 + i / XLB_HIST_SLOTS].id[i % XLB_HIST_SLOTS * 2 + 1] = h->slot[i];
		}
		if (h->n)
			memcpy(&mem[XLB_HIST_BASE(m)], h->e, h->n * sizeof(*h->e));
	} else {
		for (i = 0; i < m; i++)
			mem[1 + i / XLB_TABLE_IDS].id[i % XLB_TABLE_IDS] = slots[i];
	}
	munmap(mem, table_bytes(elems));
	/* Read-only from now on; needs the writable mapping gone. */
	if (bpf_map_freeze(fd)) {
		err = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return err;
}

int xlb_table_create(const __u32 *slots, __u32 m)
{
	return xlb_table_create_hist(slots, NULL, m);
}

int xlb_table_install_fd(int tables_fd, __u32 vip_id, int fd)
{
	if (vip_id >= XLB_MAX_VIPS || fd < 0)
		return -EINVAL;
	/* The swap. */
	return bpf_map_update_elem(tables_fd, &vip_id, &fd, BPF_ANY) ? -errno : 0;
}

int xlb_table_install(int tables_fd, __u32 vip_id, const __u32 *slots, __u32 m)
{
	int fd, err;

	if (vip_id >= XLB_MAX_VIPS)
		return -EINVAL;
	fd = xlb_table_create(slots, m);
	if (fd < 0)
		return fd;
	err = xlb_table_install_fd(tables_fd, vip_id, fd);
	close(fd);
	return err;
}

int xlb_table_read_hist(int tables_fd, __u32 vip_id, __u32 **slots,
			__u32 *m, struct xlb_history *h)
{
	__u32 inner_id;
	int fd, err;

	if (h)
		memset(h, 0, sizeof(*h));
	if (bpf_map_lookup_elem(tables_fd, &vip_id, &inner_id))
		return -errno;
	fd = bpf_map_get_fd_by_id(inner_id);
	if (fd < 0)
		return -errno;	/* -ENOENT: swapped out and freed meanwhile */
	err = xlb_table_read_fd(fd, slots, m, h);
	close(fd);
	return err;
}

int xlb_table_read_fd(int fd, __u32 **slots, __u32 *m, struct xlb_history *h)
{
	struct bpf_map_info info = {};
	__u32 info_len = sizeof(info);
	__u32 *copy, i, n, entries;
	struct xlb_table_elem *mem;
	bool hist;
	int err;

	if (h)
		memset(h, 0, sizeof(*h));
	if (bpf_obj_get_info_by_fd(fd, &info, &info_len))
		return -errno;
	if (info.type != BPF_MAP_TYPE_ARRAY ||
	    info.value_size != sizeof(struct xlb_table_elem) ||
	    !(info.map_flags & BPF_F_MMAPABLE) || info.max_entries < 2)
		return -EINVAL;
	mem = mmap(NULL, table_bytes(info.max_entries), PROT_READ, MAP_SHARED,
		   fd, 0);
	if (mem == MAP_FAILED)
		return -errno;
	/* M from the header, which must agree with the array's size. */
	n = mem[0].id[0] | (__u32)mem[0].id[1] << 16;
	hist = mem[0].id[2] == XLB_TABLE_F_HISTORY;
	entries = hist ? mem[0].id[3] : 0;
	copy = NULL;
	err = -EINVAL;
	if (n && n <= XLB_MAX_TABLE_SIZE &&
	    (hist ? XLB_HIST_TABLE_ELEMS(n, entries) :
		    XLB_TABLE_ELEMS(n)) == info.max_entries) {
		copy = malloc((size_t)n * sizeof(__u32));
		err = copy ? 0 : -ENOMEM;
	}
	if (!err && h)
		err = xlb_history_init(h, n);
	if (!err && h && entries) {
		h->e = malloc(entries * sizeof(*h->e));
		err = h->e ? 0 : -ENOMEM;
		if (h->e) {
			memcpy(h->e, &mem[XLB_HIST_BASE(n)], entries * sizeof(*h->e));
			h->n = entries;
		}
	}
	for (i = 0; !err && i < n; i++) {
		if (!hist) {
			copy[i] = mem[1 + i / XLB_TABLE_IDS].id[i % XLB_TABLE_IDS];
			continue;
		}
		copy[i] = mem[1 + i / XLB_HIST_SLOTS].id[i % XLB_HIST_SLOTS * 2];
		if (h)
			h->slot[i] = mem[1 + i / XLB_HIST_SLOTS].id[i % XLB_HIST_SLOTS * 2 + 1];
	}
	if (!err) {
		*slots = copy;
		*m = n;
	} else {
		free(copy);
		if (h)
			xlb_history_free(h);
	}
	munmap(mem, table_bytes(info.max_entries));
	return err;
}

int xlb_table_read(int tables_fd, __u32 vip_id, __u32 **slots, __u32 *m)
{
	return xlb_table_read_hist(tables_fd, vip_id, slots, m, NULL);
}

int xlb_table_remove(int tables_fd, __u32 vip_id)
{
	if (bpf_map_delete_elem(tables_fd, &vip_id) && errno != ENOENT)
		return -errno;
	return 0;
}
