// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * stage_load: loads bench/bpf/xlb_stage_end.bpf.c (its skeleton), the
 * datapath ended after one stage, on the maps of a running xlb instance,
 * and pins the program for bench/throughput.sh, which puts each stage in
 * xlb's place in turn (`ip link set ... xdpdrv pinned`) to time it end to
 * end.
 *
 *   stage_load PIN_DIR STAGE PROG_PIN
 *
 * STAGE is a number of enum xlb_stage (include/stages.h). Every map the
 * instance pinned in PIN_DIR is taken as it is (its size included), and
 * the connection table's mask follows its size, as `xlb attach` sets it;
 * the program's private maps (its clock, its rate window) start afresh.
 * Prints the program's id.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "stages.h"
#include "xlb.h"
#include "xlb_stage_end.skel.h"

/* Reuses every map of obj pinned under dir; *ct_slots: the connection
 * table's size. Returns 0 or -errno. */
static int reuse_pinned(struct bpf_object *obj, const char *dir, __u32 *ct_slots)
{
	char path[PATH_MAX];
	struct bpf_map *map;
	int fd, err;

	*ct_slots = 0;
	bpf_object__for_each_map(map, obj) {
		if (bpf_map__is_internal(map))
			continue;
		/* The maps are pinned by name: without this, libbpf would
		 * take (or leave) a pin of that name at bpffs' root
		 * instead of the instance's. */
		err = bpf_map__set_pin_path(map, NULL);
		if (err)
			return err;
		snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(map));
		if (access(path, F_OK))
			continue;
		fd = bpf_obj_get(path);
		if (fd < 0)
			return -errno;
		err = bpf_map__reuse_fd(map, fd);
		close(fd);
		if (err)
			return err;
		if (!strcmp(bpf_map__name(map), XLB_MAP_CONNTRACK))
			*ct_slots = bpf_map__max_entries(map);
	}
	return *ct_slots ? 0 : -ENOENT;
}

int main(int argc, char **argv)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info), slots;
	struct xlb_stage_end *skel;
	unsigned long stage;
	int fd, err;
	char *end;

	if (argc != 4) {
		fprintf(stderr, "usage: stage_load PIN_DIR STAGE (0-%d) PROG_PIN\n",
			XLB_STAGE__COUNT - 1);
		return 2;
	}
	errno = 0;
	stage = strtoul(argv[2], &end, 10);
	if (errno || *end || end == argv[2] || stage >= XLB_STAGE__COUNT) {
		fprintf(stderr, "stage_load: no stage %s (0-%d)\n", argv[2],
			XLB_STAGE__COUNT - 1);
		return 2;
	}
	skel = xlb_stage_end__open();
	if (!skel) {
		err = errno ? -errno : -EINVAL;
		goto out;
	}
	skel->rodata->stage_end = stage;
	err = reuse_pinned(skel->obj, argv[1], &slots);
	if (err)
		goto out;
	skel->rodata->xlb_ct_mask = slots - 1;
	err = xlb_stage_end__load(skel);
	if (err)
		goto out;
	/* The program keeps the datapath's name, xlb_xdp, which xlb's own
	 * commands take for an instance's program: it is only pinned here,
	 * and put on a device by the benchmark while no xlb command runs. */
	fd = bpf_program__fd(skel->progs.xlb_xdp);
	err = bpf_obj_pin(fd, argv[3]) ? -errno : 0;
	if (err)
		goto out;
	err = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
	if (err) {
		unlink(argv[3]);
		goto out;
	}
	printf("%u\n", info.id);
out:
	if (err)
		fprintf(stderr, "stage_load: cannot load stage %lu on the maps of %s at %s: %s\n",
			stage, argv[1], argv[3], strerror(-err));
	xlb_stage_end__destroy(skel);
	return err ? 1 : 0;
}
