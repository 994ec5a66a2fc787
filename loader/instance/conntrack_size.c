// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Sizing the connection table before a load (see conntrack_size.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "report.h"
#include "conntrack_size.h"
#include "prog_users.h"
#include "xlb.h"

/* The conntrack-size setting of the instance in pin_dir; 0 when none. */
static __u32 setting_of(const char *pin_dir)
{
	struct xlb_config cfg = {};
	char path[PATH_MAX];
	__u32 zero = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", pin_dir, XLB_MAP_CONFIG);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	if (bpf_map_lookup_elem(fd, &zero, &cfg))
		cfg.ct_size = 0;
	close(fd);
	return cfg.ct_size;
}

/*
 * The id of a program other than the one being loaded that uses the map
 * (an attached xlb), or 0. Its packets keep going to that table whatever
 * the pin dir says, so a new table would split the instance in two.
 */
/* The datapath's program, not one that reads the table for a moment
 * (`xlb lookup`'s). */
static int first_user(__u32 prog_id, const struct bpf_prog_info *info,
		      void *ctx)
{
	if (strcmp(info->name, "xlb_xdp"))
		return 0;
	*(__u32 *)ctx = prog_id;
	return 1;
}

static __u32 program_using(int map_fd)
{
	__u32 id = 0;

	return xlb_map_users(map_fd, first_user, &id) == 1 ? id : 0;
}

int xlb_ct_size_for_load(struct bpf_map *map, const char *pin_dir,
			 __u32 entries, __u32 *slots, int *new_fd)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts,
		    .map_flags = bpf_map__map_flags(map));
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), user;
	char path[PATH_MAX];
	int fd, err;

	*new_fd = -1;
	if (!entries)
		entries = setting_of(pin_dir);
	if (!entries)
		entries = XLB_CT_DEFAULT_SIZE;
	if (entries & (entries - 1)) {
		/* A setting made before sizes had to be powers of two. */
		while (entries & (entries - 1))
			entries &= entries - 1;
		entries = entries < XLB_CT_MAX_SIZE ? entries << 1 : XLB_CT_MAX_SIZE;
		p_info("xlb: the connection table takes %u entries: its size is a power of two",
		       entries);
	}
	err = bpf_map__set_max_entries(map, entries);
	if (err) {
		p_err("cannot size the connection table: %s", strerror(-err));
		return err;
	}
	*slots = entries;
	snprintf(path, sizeof(path), "%s/%s", pin_dir, XLB_MAP_CONNTRACK);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	err = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
	if (err) {
		p_err("cannot read %s: %s", path, strerror(-err));
		goto out;
	}
	if (info.max_entries == entries && info.type == bpf_map__type(map) &&
	    info.value_size == bpf_map__value_size(map) &&
	    info.map_flags == bpf_map__map_flags(map))
		goto out;
	user = program_using(fd);
	if (user) {
		p_err("the connection table in %s (%u entries) is in use by program %u: a new one of %u entries would give its devices a table of their own; detach xlb everywhere first, or attach without --conntrack-size",
		      pin_dir, info.max_entries, user, entries);
		err = -EBUSY;
		goto out;
	}
	/*
	 * Make the new table before the old one is touched: should the
	 * kernel refuse it (memory), the instance stays as it was. The load
	 * uses it unpinned; xlb_ct_pin() puts it in place once attached.
	 */
	*new_fd = bpf_map_create(bpf_map__type(map), XLB_MAP_CONNTRACK,
				 bpf_map__key_size(map), bpf_map__value_size(map),
				 entries, &opts);
	if (*new_fd < 0) {
		err = -errno;
		p_err("cannot make a connection table of %u entries (%llu MiB of kernel memory): %s",
		      entries, (unsigned long long)entries *
		      bpf_map__value_size(map) >> 20, strerror(-err));
		goto out;
	}
	err = bpf_map__reuse_fd(map, *new_fd) ?: bpf_map__set_pin_path(map, NULL);
	if (err) {
		p_err("cannot use the new connection table: %s", strerror(-err));
		close(*new_fd);
		*new_fd = -1;
	}
out:
	close(fd);
	return err;
}

int xlb_ct_pin(const char *pin_dir, int new_fd)
{
	struct bpf_map_info old = {}, now = {};
	__u32 len = sizeof(old);
	char path[PATH_MAX];
	int fd, err;

	if (new_fd < 0)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", pin_dir, XLB_MAP_CONNTRACK);
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		bpf_obj_get_info_by_fd(fd, &old, &len);
		close(fd);
		if (unlink(path)) {
			err = -errno;
			p_err("cannot replace %s: %s", path, strerror(-err));
			return err;
		}
	}
	if (bpf_obj_pin(new_fd, path)) {
		err = -errno;
		p_err("cannot pin the new connection table at %s: %s", path,
		      strerror(-err));
		return err;
	}
	len = sizeof(now);
	bpf_obj_get_info_by_fd(new_fd, &now, &len);
	if (old.max_entries == now.max_entries)
		p_info("xlb: connection table made anew in this version's layout: the flows it held follow the lookup table again");
	else
		p_info("xlb: connection table resized from %u to %u entries: the flows it held follow the lookup table again",
		       old.max_entries, now.max_entries);
	return 0;
}
