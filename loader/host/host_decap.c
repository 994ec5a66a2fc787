// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The backends' XDP program, loaded, pinned, attached (host_decap.h). */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "host_decap.h"
#include "instance.h"
#include "decap.skel.h"

/* The maps: pinned under their names, checked against the layouts of
 * include/decap.h when opened. */
static const struct map_spec {
	const char *name;
	size_t fd_offset;
	__u32 type, key_size, value_size;
} maps[] = {
	{ XLB_MAP_DECAP_CONFIG, offsetof(struct xlb_decap_fds, cfg),
	  BPF_MAP_TYPE_ARRAY, 4, sizeof(struct xlb_decap_config) },
	{ XLB_MAP_DECAP_STATS, offsetof(struct xlb_decap_fds, stats),
	  BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(struct xlb_counter) },
	{ XLB_MAP_DECAP_ADDRS, offsetof(struct xlb_decap_fds, addrs),
	  BPF_MAP_TYPE_HASH, sizeof(struct xlb_decap_addr), 4 },
	{ XLB_MAP_DECAP_FLEET, offsetof(struct xlb_decap_fds, fleet),
	  BPF_MAP_TYPE_LPM_TRIE, sizeof(struct xlb_decap_prefix), 4 },
	{ XLB_MAP_DECAP_BALANCERS, offsetof(struct xlb_decap_fds, lbs),
	  BPF_MAP_TYPE_LPM_TRIE, sizeof(struct xlb_decap_prefix), 4 },
	{ XLB_MAP_DECAP_EGRESS, offsetof(struct xlb_decap_fds, out),
	  BPF_MAP_TYPE_HASH, 4, 4 },
};
#define N_MAPS	(sizeof(maps) / sizeof(maps[0]))

static int *fd_of(struct xlb_decap_fds *fds, const struct map_spec *m)
{
	return (int *)((char *)fds + m->fd_offset);
}

static int cfd_of(const struct xlb_decap_fds *fds, const struct map_spec *m)
{
	return *(const int *)((const char *)fds + m->fd_offset);
}

static int pin_path(char *buf, const char *dir, const char *name)
{
	return snprintf(buf, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX ?
	       -ENAMETOOLONG : 0;
}

static void fds_init(struct xlb_decap_fds *fds)
{
	memset(fds, 0xff, sizeof(*fds));
}

void xlb_decap_close(struct xlb_decap_fds *fds)
{
	size_t i;

	if (fds->prog >= 0)
		close(fds->prog);
	for (i = 0; i < N_MAPS; i++)
		if (*fd_of(fds, &maps[i]) >= 0)
			close(*fd_of(fds, &maps[i]));
	fds_init(fds);
}

int xlb_decap_open(const char *dir, struct xlb_decap_fds *fds)
{
	struct bpf_map_info info;
	char path[PATH_MAX];
	__u32 len;
	size_t i;
	int err, fd;

	fds_init(fds);
	err = pin_path(path, dir, XLB_HOST_PROG_PIN);
	if (err)
		return err;
	fds->prog = bpf_obj_get(path);
	if (fds->prog < 0)
		return -errno;
	for (i = 0; i < N_MAPS; i++) {
		err = pin_path(path, dir, maps[i].name);
		if (err)
			goto fail;
		fd = bpf_obj_get(path);
		if (fd < 0) {
			err = -errno;
			goto fail;
		}
		*fd_of(fds, &maps[i]) = fd;
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
			err = -errno;
			goto fail;
		}
		if (info.type != maps[i].type ||
		    info.key_size != maps[i].key_size ||
		    info.value_size != maps[i].value_size) {
			err = -EPROTO;
			goto fail;
		}
	}
	return 0;
fail:
	xlb_decap_close(fds);
	return err;
}

/* Every key of a hash or trie into keys (max of them), and for a hash
 * their values. */
static int read_keys(int fd, void *keys, size_t key_size, __u32 *values,
		     __u32 max, __u32 *n)
{
	char prev[sizeof(struct xlb_decap_prefix)];
	bool first = true;
	int err;

	*n = 0;
	for (;;) {
		err = bpf_map_get_next_key(fd, first ? NULL : prev,
					   (char *)keys + *n * key_size) ? -errno : 0;
		if (err == -ENOENT)
			return 0;
		if (err)
			return err;
		memcpy(prev, (char *)keys + *n * key_size, key_size);
		first = false;
		if (values && bpf_map_lookup_elem(fd, prev, &values[*n]))
			return -errno;
		if (++*n == max)
			return 0;
	}
}

int xlb_decap_read(const struct xlb_decap_fds *fds, struct xlb_decap_content *c)
{
	__u32 zero = 0;

	memset(c, 0, sizeof(*c));
	if (bpf_map_lookup_elem(fds->cfg, &zero, &c->cfg))
		return -errno;
	return read_keys(fds->addrs, c->addrs, sizeof(c->addrs[0]), c->addr_flags,
			 XLB_DECAP_ADDRS_MAX, &c->n_addrs) ?:
	       read_keys(fds->fleet, c->fleet, sizeof(c->fleet[0]), NULL,
			 XLB_DECAP_PREFIXES_MAX, &c->n_fleet) ?:
	       read_keys(fds->lbs, c->lbs, sizeof(c->lbs[0]), NULL,
			 XLB_DECAP_PREFIXES_MAX, &c->n_lbs) ?:
	       read_keys(fds->out, c->out, sizeof(c->out[0]), NULL,
			 XLB_DECAP_EGRESS_MAX, &c->n_out);
}

/* Index of key among n keys of key_size, or -1. */
static int find_key(const void *keys, size_t key_size, __u32 n, const void *key)
{
	__u32 i;

	for (i = 0; i < n; i++)
		if (!memcmp((const char *)keys + i * key_size, key, key_size))
			return i;
	return -1;
}

/*
 * One map from have to want: the entries to add or change first, then
 * those to delete, so that while it is written an address or prefix that
 * stays is never missing. values NULL: every value is 1 (the tries, the
 * egress set).
 */
static int write_set(int fd, size_t key_size,
		     const void *have, const __u32 *have_v, __u32 n_have,
		     const void *want, const __u32 *want_v, __u32 n_want)
{
	const char *k;
	__u32 i, one = 1;
	int j, err;

	for (i = 0; i < n_want; i++) {
		k = (const char *)want + i * key_size;
		j = find_key(have, key_size, n_have, k);
		if (j >= 0 && (!want_v || have_v[j] == want_v[i]))
			continue;
		err = xlb_map_update(fd, k, want_v ? &want_v[i] : &one, BPF_ANY);
		if (err)
			return err;
	}
	for (i = 0; i < n_have; i++) {
		k = (const char *)have + i * key_size;
		if (find_key(want, key_size, n_want, k) >= 0)
			continue;
		err = xlb_map_delete(fd, k);
		if (err && err != -ENOENT)
			return err;
	}
	return 0;
}

int xlb_decap_write(const struct xlb_decap_fds *fds,
		    const struct xlb_decap_content *have,
		    const struct xlb_decap_content *want)
{
	__u32 zero = 0;
	int err;

	err = write_set(fds->addrs, sizeof(want->addrs[0]), have->addrs,
			have->addr_flags, have->n_addrs, want->addrs,
			want->addr_flags, want->n_addrs) ?:
	      write_set(fds->fleet, sizeof(want->fleet[0]), have->fleet, NULL,
			have->n_fleet, want->fleet, NULL, want->n_fleet) ?:
	      write_set(fds->lbs, sizeof(want->lbs[0]), have->lbs, NULL,
			have->n_lbs, want->lbs, NULL, want->n_lbs) ?:
	      write_set(fds->out, sizeof(want->out[0]), have->out, NULL,
			have->n_out, want->out, NULL, want->n_out);
	if (err || !memcmp(&have->cfg, &want->cfg, sizeof(want->cfg)))
		return err;
	return xlb_map_update(fds->cfg, &zero, &want->cfg, BPF_ANY);
}

/* Whether two sets of n keys hold the same keys (and values). */
static bool same_set(const void *a, const __u32 *av, __u32 na, const void *b,
		     const __u32 *bv, __u32 nb, size_t key_size)
{
	__u32 i;
	int j;

	if (na != nb)
		return false;
	for (i = 0; i < na; i++) {
		j = find_key(b, key_size, nb, (const char *)a + i * key_size);
		if (j < 0 || (av && av[i] != bv[j]))
			return false;
	}
	return true;
}

bool xlb_decap_equal(const struct xlb_decap_content *a,
		     const struct xlb_decap_content *b)
{
	return !memcmp(&a->cfg, &b->cfg, sizeof(a->cfg)) &&
	       same_set(a->addrs, a->addr_flags, a->n_addrs, b->addrs,
			b->addr_flags, b->n_addrs, sizeof(a->addrs[0])) &&
	       same_set(a->fleet, NULL, a->n_fleet, b->fleet, NULL, b->n_fleet,
			sizeof(a->fleet[0])) &&
	       same_set(a->lbs, NULL, a->n_lbs, b->lbs, NULL, b->n_lbs,
			sizeof(a->lbs[0])) &&
	       same_set(a->out, NULL, a->n_out, b->out, NULL, b->n_out,
			sizeof(a->out[0]));
}

int xlb_decap_attach(int prog_fd, int ifindex, int *native_err)
{
	int err;

	/* Native where the driver has it; generic also where native is
	 * refused for another reason (a veth whose peer's MTU is too
	 * large for it, ERANGE). Never in place of another program. */
	err = bpf_xdp_attach(ifindex, prog_fd,
			     XDP_FLAGS_UPDATE_IF_NOEXIST | XDP_FLAGS_DRV_MODE, NULL);
	*native_err = err;
	if (err && err != -EEXIST && err != -EBUSY)
		err = bpf_xdp_attach(ifindex, prog_fd,
				     XDP_FLAGS_UPDATE_IF_NOEXIST | XDP_FLAGS_SKB_MODE,
				     NULL);
	return err;
}

__u32 xlb_decap_prog_id(int prog_fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(prog_fd, &info, &len) ? 0 : info.id;
}

int xlb_decap_attached(int ifindex, __u32 *prog_id, const char **mode)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	int err;

	*prog_id = 0;
	*mode = "none";
	err = bpf_xdp_query(ifindex, 0, &q);
	if (err)
		return err;
	if (q.drv_prog_id) {
		*prog_id = q.drv_prog_id;
		*mode = "native";
	} else if (q.skb_prog_id) {
		*prog_id = q.skb_prog_id;
		*mode = "generic";
	} else if (q.hw_prog_id) {
		*prog_id = q.hw_prog_id;
		*mode = "offload";
	}
	return 0;
}

/* Detach prog_fd from ifindex if it is attached there. */
static int detach(int prog_fd, int ifindex)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = prog_fd);
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	__u32 id = xlb_decap_prog_id(prog_fd), flags;
	int err;

	err = bpf_xdp_query(ifindex, 0, &q);
	if (err == -ENODEV)
		return 0;
	if (err)
		return err;
	if (id && q.drv_prog_id == id)
		flags = XDP_FLAGS_DRV_MODE;
	else if (id && q.skb_prog_id == id)
		flags = XDP_FLAGS_SKB_MODE;
	else
		return 0;
	/* REPLACE: only while it is still ours. */
	return bpf_xdp_detach(ifindex, flags | XDP_FLAGS_REPLACE, &opts);
}

static void unpin_all(const char *dir)
{
	char path[PATH_MAX];
	size_t i;

	if (!pin_path(path, dir, XLB_HOST_PROG_PIN))
		unlink(path);
	for (i = 0; i < N_MAPS; i++)
		if (!pin_path(path, dir, maps[i].name))
			unlink(path);
	rmdir(dir);
}

int xlb_decap_remove(const char *dir, int ifindex)
{
	struct xlb_decap_fds fds;
	char path[PATH_MAX];
	int err = 0;

	fds_init(&fds);
	err = pin_path(path, dir, XLB_HOST_PROG_PIN);
	if (err)
		return err;
	fds.prog = bpf_obj_get(path);
	if (fds.prog >= 0 && ifindex)
		err = detach(fds.prog, ifindex);
	xlb_decap_close(&fds);
	if (err)
		return err;
	unpin_all(dir);
	return 0;
}

int xlb_decap_install(const char *dir, int ifindex,
		      const struct xlb_decap_content *c, bool frags,
		      int *native_err, const char **what)
{
	struct xlb_decap_content empty;
	struct xlb_decap_fds fds;
	char path[PATH_MAX];
	struct decap *skel;
	size_t i;
	int err;

	fds_init(&fds);
	*native_err = 0;
	*what = "load the program";
	skel = decap__open();
	if (!skel)
		return -errno ?: -EINVAL;
	/* Multi-buffer: jumbo frames (bpf/decap.bpf.c). */
	if (frags)
		bpf_program__set_flags(skel->progs.xdp_decap,
				       bpf_program__flags(skel->progs.xdp_decap) |
				       BPF_F_XDP_HAS_FRAGS);
	err = decap__load(skel);
	if (err)
		goto out_skel;
	fds.prog = bpf_program__fd(skel->progs.xdp_decap);
	fds.cfg = bpf_map__fd(skel->maps.xlb_decap_cfg);
	fds.stats = bpf_map__fd(skel->maps.xlb_decap_stats);
	fds.addrs = bpf_map__fd(skel->maps.xlb_decap_addrs);
	fds.fleet = bpf_map__fd(skel->maps.xlb_decap_fleet);
	fds.lbs = bpf_map__fd(skel->maps.xlb_decap_lbs);
	fds.out = bpf_map__fd(skel->maps.xlb_decap_out);

	/* Filled before it sees a packet: a program that starts with empty
	 * maps decapsulates nothing meanwhile. */
	*what = "fill its maps";
	memset(&empty, 0, sizeof(empty));
	err = xlb_decap_write(&fds, &empty, c);
	if (err)
		goto out;
	*what = "pin it";
	err = pin_path(path, dir, XLB_HOST_PROG_PIN);
	if (!err && bpf_obj_pin(fds.prog, path))
		err = -errno;
	for (i = 0; i < N_MAPS && !err; i++) {
		err = pin_path(path, dir, maps[i].name);
		if (!err && bpf_obj_pin(cfd_of(&fds, &maps[i]), path))
			err = -errno;
	}
	if (err)
		goto out;
	*what = "attach it";
	err = xlb_decap_attach(fds.prog, ifindex, native_err);
out:
	if (err)
		unpin_all(dir);
out_skel:
	/* The skeleton's fds are its own: the pins and the attachment hold
	 * the program now. */
	decap__destroy(skel);
	return err;
}

int xlb_decap_stats(const struct xlb_decap_fds *fds,
		    struct xlb_counter out[XLB_DECAP__MAX])
{
	int ncpu = libbpf_num_possible_cpus(), i, err = 0;
	struct xlb_counter *percpu;
	__u32 id;

	if (ncpu < 0)
		return ncpu;
	percpu = calloc(ncpu, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	memset(out, 0, sizeof(*out) * XLB_DECAP__MAX);
	for (id = 0; id < XLB_DECAP__MAX && !err; id++) {
		if (bpf_map_lookup_elem(fds->stats, &id, percpu)) {
			err = -errno;
			break;
		}
		for (i = 0; i < ncpu; i++) {
			out[id].packets += percpu[i].packets;
			out[id].bytes += percpu[i].bytes;
		}
	}
	free(percpu);
	return err;
}
