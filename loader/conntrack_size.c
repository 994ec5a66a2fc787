// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Sizing the connection table before a load (see conntrack_size.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli.h"
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
			 __u32 entries)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	char path[PATH_MAX];
	int fd, err;

	if (!entries)
		entries = setting_of(pin_dir);
	if (!entries)
		entries = XLB_CT_DEFAULT_SIZE;
	err = bpf_map__set_max_entries(map, entries);
	if (err) {
		p_err("cannot size the connection table: %s", strerror(-err));
		return err;
	}
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
	if (info.max_entries == entries)
		return 0;
	if (unlink(path)) {
		err = -errno;
		p_err("cannot replace %s to resize it: %s", path, strerror(-err));
		return err;
	}
	p_info("xlb: connection table resized from %u to %u entries: the flows it held follow the lookup table again",
	       info.max_entries, entries);
	return 0;
}
