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

int xlb_ct_size_for_load(struct bpf_map *map, const char *pin_dir,
			 __u32 entries, __u32 *slots)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	char path[PATH_MAX];
	int fd, err;

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
	close(fd);
	if (err) {
		p_err("cannot read %s: %s", path, strerror(-err));
		return err;
	}
	if (info.max_entries == entries && info.type == bpf_map__type(map) &&
	    info.value_size == bpf_map__value_size(map) &&
	    info.map_flags == bpf_map__map_flags(map))
		return 0;
	if (unlink(path)) {
		err = -errno;
		p_err("cannot replace %s to resize it: %s", path, strerror(-err));
		return err;
	}
	if (info.max_entries == entries)
		p_info("xlb: connection table made anew in this version's layout: the flows it held follow the lookup table again");
	else
		p_info("xlb: connection table resized from %u to %u entries: the flows it held follow the lookup table again",
		       info.max_entries, entries);
	return 0;
}
