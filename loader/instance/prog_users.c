// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The programs that use a map (see prog_users.h). */
#include <errno.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "prog_users.h"

#define MAP_IDS_READ	64

int xlb_map_users(int map_fd, xlb_map_user_fn fn, void *ctx)
{
	struct bpf_map_info minfo = {};
	__u32 len = sizeof(minfo), id = 0, map_ids[MAP_IDS_READ], i;
	int fd, ret;

	if (bpf_obj_get_info_by_fd(map_fd, &minfo, &len))
		return -errno;
	while (!bpf_prog_get_next_id(id, &id)) {
		struct bpf_prog_info info = {};

		fd = bpf_prog_get_fd_by_id(id);
		if (fd < 0)
			continue;
		len = sizeof(info);
		info.nr_map_ids = MAP_IDS_READ;
		info.map_ids = (__u64)(unsigned long)map_ids;
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			info.nr_map_ids = 0;
		close(fd);
		for (i = 0; i < info.nr_map_ids && i < MAP_IDS_READ; i++) {
			if (map_ids[i] != minfo.id)
				continue;
			ret = fn(id, &info, ctx);
			if (ret)
				return ret;
			break;
		}
	}
	return 0;
}
