// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Which device carries the instance's program, and in which network
 * namespace (see xlb_instance_here() in instance.h). The instance keeps
 * no record of its device: the XDP programs that use its xlb_config are
 * found among the kernel's, and the devices of this namespace are asked
 * over rtnetlink which program each runs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <linux/if_link.h>

#include "report.h"
#include "rtnl.h"
#include "instance.h"
#include "prog_users.h"

#define NETNS_RUN_DIR	"/run/netns"
#define MAX_PROGS	16

struct progs {
	__u32 id[MAX_PROGS];
	size_t n;
	bool ext;	/* one runs behind libxdp's dispatcher (freplace) */
};

/* An XDP program named xlb_xdp (the skeleton's entry point), or one behind
 * libxdp's dispatcher, into p. */
static int add_xlb(__u32 prog_id, const struct bpf_prog_info *info, void *ctx)
{
	struct progs *p = ctx;

	if (strcmp(info->name, "xlb_xdp") ||
	    (info->type != BPF_PROG_TYPE_XDP && info->type != BPF_PROG_TYPE_EXT))
		return 0;
	p->ext |= info->type == BPF_PROG_TYPE_EXT;
	if (p->n < MAX_PROGS)
		p->id[p->n++] = prog_id;
	return 0;
}

/* The xlb programs whose maps include the one of map_fd. */
static int programs_using(int map_fd, struct progs *p)
{
	return xlb_map_users(map_fd, add_xlb, p);
}

struct link_find {
	const struct progs *p;
	char dev[IF_NAMESIZE];
};

static bool is_ours(const struct progs *p, __u32 id)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->id[i] == id)
			return true;
	return false;
}

/* One RTM_NEWLINK of the dump: its name when one of its XDP programs
 * (any mode) is ours. */
static int link_one(const struct nlmsghdr *msg, void *ctx)
{
	struct link_find *f = ctx;
	const struct ifinfomsg *ifi = NLMSG_DATA(msg);
	const char *name = NULL;
	struct rtattr *rta, *x;
	bool ours = false;
	int len, xlen;

	if (msg->nlmsg_type != RTM_NEWLINK)
		return 0;
	len = msg->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi));
	for (rta = IFLA_RTA(ifi); RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		if (rta->rta_type == IFLA_IFNAME)
			name = RTA_DATA(rta);
		if (rta->rta_type != IFLA_XDP)
			continue;
		xlen = RTA_PAYLOAD(rta);
		for (x = RTA_DATA(rta); RTA_OK(x, xlen); x = RTA_NEXT(x, xlen))
			if ((x->rta_type == IFLA_XDP_PROG_ID ||
			     x->rta_type == IFLA_XDP_DRV_PROG_ID ||
			     x->rta_type == IFLA_XDP_SKB_PROG_ID ||
			     x->rta_type == IFLA_XDP_HW_PROG_ID) &&
			    is_ours(f->p, *(__u32 *)RTA_DATA(x)))
				ours = true;
	}
	if (!ours)
		return 0;
	snprintf(f->dev, sizeof(f->dev), "%s", name ? name : "?");
	return 1;
}

/* 1 with f->dev when a device of the current network namespace runs one
 * of f->p's programs, 0 when none does, or -errno. */
static int find_link(struct link_find *f)
{
	struct xlb_rtnl nl = XLB_RTNL_INIT;
	struct xlb_rtnl_req req;
	int err;

	xlb_rtnl_req_init(&req, RTM_GETLINK, 0, sizeof(struct ifinfomsg));
	err = xlb_rtnl_dump(&nl, &req.n, link_one, f);
	xlb_rtnl_close(&nl);
	return err;
}

/*
 * The namespace under /run/netns (ip netns's) whose device runs the
 * program, into ns; entered only for the dump, then left. Returns 1 when
 * found, 0 when not, -errno when this namespace could not be entered
 * again (nothing may go on then).
 */
static int find_elsewhere(struct link_find *f, char *ns, size_t ns_len)
{
	struct dirent *e;
	int self, fd, found = 0;
	DIR *d;

	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return 0;
	d = opendir(NETNS_RUN_DIR);
	while (d && !found && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!setns(fd, CLONE_NEWNET)) {
			found = find_link(f) == 1;
			if (setns(self, CLONE_NEWNET)) {
				found = -errno;
				p_err("cannot return to this network namespace: %s",
				      strerror(-found));
			}
		}
		close(fd);
		if (found == 1)
			snprintf(ns, ns_len, "%s", e->d_name);
	}
	if (d)
		closedir(d);
	close(self);
	return found;
}

/*
 * Behind libxdp's dispatcher the device runs the dispatcher, and the
 * program is an extension (freplace) linked to it: the programs their
 * links target added to p, so that the device is found by the
 * dispatcher's id.
 */
static void dispatchers_of(struct progs *p)
{
	struct progs ext = *p;
	__u32 id = 0, len;
	int fd;

	/* The programs attached directly stay among those looked for. */
	while (p->n < MAX_PROGS && !bpf_link_get_next_id(id, &id)) {
		struct bpf_link_info info = {};

		fd = bpf_link_get_fd_by_id(id);
		if (fd < 0)
			continue;
		len = sizeof(info);
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) &&
		    info.type == BPF_LINK_TYPE_TRACING &&
		    info.tracing.target_obj_id && is_ours(&ext, info.prog_id))
			p->id[p->n++] = info.tracing.target_obj_id;
		close(fd);
	}
}

int xlb_instance_dev(const struct xlb_instance *inst, char *dev, size_t len)
{
	struct progs p = {};
	struct link_find f = { .p = &p };
	int err;

	err = programs_using(inst->config_fd, &p);
	if (err)
		return err;
	if (p.ext)
		dispatchers_of(&p);
	if (!p.n)
		return 0;
	err = find_link(&f);
	if (err == 1)
		snprintf(dev, len, "%s", f.dev);
	return err;
}

int xlb_instance_here(const struct xlb_instance *inst, bool refuse)
{
	struct progs p = {};
	struct link_find f = { .p = &p };
	char ns[NAME_MAX + 1] = "", where[NAME_MAX + 64];
	int err;

	/* No program: a detached instance, which commands may change. */
	if (programs_using(inst->config_fd, &p) || !p.n)
		return 0;
	if (p.ext)
		dispatchers_of(&p);
	if (!p.n)
		return 0;
	if (find_link(&f) != 0)
		return 0;
	/* Refused only where the device is found: a program no device of
	 * ip netns's namespaces runs is loaded but attached nowhere (a test
	 * run through BPF_PROG_TEST_RUN), or going (just detached, freed
	 * once its last reference closes), or in a namespace xlb cannot
	 * name; the instance is taken as detached then. */
	err = find_elsewhere(&f, ns, sizeof(ns));
	if (err <= 0)
		return err;
	snprintf(where, sizeof(where), "%s in another network namespace: run xlb there (nsenter --net=%s/%s xlb ...)",
		 f.dev, NETNS_RUN_DIR, ns);
	if (refuse) {
		p_err("instance %s is attached to %s", inst->dir, where);
		return -EXDEV;
	}
	p_info("xlb: note: instance %s is attached to %s; next hops and devices shown are this namespace's",
	       inst->dir, where);
	return 0;
}
