// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A private network namespace for BPF_PROG_TEST_RUN (see sandbox.h).
 * The topology is built with one `ip -batch` run: simpler than netlink
 * code and as readable as the shell it replaces.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "vip_filter.h"
#include "xlb.h"
#include "report.h"
#include "sandbox.h"

#define MAC_STR "02:58:4c:42:"

static const char topology[] =
	"link set lo up\n"
	"link add " XLB_SANDBOX_IF_IN " address " MAC_STR "00:01 type veth peer name "
		XLB_SANDBOX_IF_IN "p\n"
	"link add " XLB_SANDBOX_IF_OTHER " address " MAC_STR "01:01 type veth peer name "
		XLB_SANDBOX_IF_OTHER "p\n"
	"link set " XLB_SANDBOX_IF_IN "p up\n"
	"link set " XLB_SANDBOX_IF_OTHER "p up\n"
	"link set " XLB_SANDBOX_IF_IN " up\n"
	"link set " XLB_SANDBOX_IF_OTHER " up\n"
	"addr add " XLB_SANDBOX_SRC4 "/25 dev " XLB_SANDBOX_IF_IN "\n"
	"addr add " XLB_SANDBOX_SRC6 "/64 dev " XLB_SANDBOX_IF_IN " nodad\n"
	"addr add 198.51.100.129/25 dev " XLB_SANDBOX_IF_OTHER "\n"
	"addr add 2001:db8:101::1/64 dev " XLB_SANDBOX_IF_OTHER " nodad\n"
	"neigh add " XLB_SANDBOX_GW4 " lladdr " MAC_STR "00:02 dev " XLB_SANDBOX_IF_IN
		" nud permanent\n"
	"neigh add " XLB_SANDBOX_GW6 " lladdr " MAC_STR "00:02 dev " XLB_SANDBOX_IF_IN
		" nud permanent\n"
	"neigh add 198.51.100.130 lladdr " MAC_STR "01:02 dev " XLB_SANDBOX_IF_OTHER
		" nud permanent\n"
	"neigh add 2001:db8:101::2 lladdr " MAC_STR "01:02 dev " XLB_SANDBOX_IF_OTHER
		" nud permanent\n"
	"route add 0.0.0.0/0 via " XLB_SANDBOX_GW4 " dev " XLB_SANDBOX_IF_IN "\n"
	"route add ::/0 via " XLB_SANDBOX_GW6 " dev " XLB_SANDBOX_IF_IN "\n"
	"route add " XLB_SANDBOX_NET_REDIRECT4 " via 198.51.100.130\n"
	"route add " XLB_SANDBOX_NET_REDIRECT6 " via 2001:db8:101::2\n"
	"route add " XLB_SANDBOX_NET_UNRESOLVED4 " via 198.51.100.3\n"
	"route add " XLB_SANDBOX_NET_UNRESOLVED6 " via 2001:db8:100::3\n"
	"route add unreachable " XLB_SANDBOX_NET_UNREACHABLE4 "\n"
	"route add unreachable " XLB_SANDBOX_NET_UNREACHABLE6 "\n";

int xlb_sandbox_ip(const char *batch)
{
	FILE *ip;
	int status;

	ip = popen("ip -batch - >/dev/null 2>&1", "w");
	if (!ip)
		return -errno;
	fputs(batch, ip);
	status = pclose(ip);
	return status == 0 ? 0 : -EIO;
}

int xlb_sandbox_route_mtu(const char *prefix6, __u32 mtu)
{
	char batch[256];

	snprintf(batch, sizeof(batch), "route add %s via " XLB_SANDBOX_GW6
		 " dev " XLB_SANDBOX_IF_IN " mtu lock %u\n", prefix6, mtu);
	return xlb_sandbox_ip(batch);
}

static int write_sysctl(const char *path, const char *value)
{
	int fd, ok;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ok = write(fd, value, strlen(value)) == (ssize_t)strlen(value);
	close(fd);
	return ok ? 0 : -EIO;
}

int xlb_sandbox_setup(struct xlb_sandbox *env)
{
	int err;

	if (unshare(CLONE_NEWNET)) {
		err = -errno;
		p_err("cannot create a network namespace: %s",
			strerror(-err));
		return err;
	}
	/* /proc/sys/net follows the opener's namespace: these are ours. */
	err = write_sysctl("/proc/sys/net/ipv4/ip_forward", "1");
	if (!err)
		err = write_sysctl("/proc/sys/net/ipv6/conf/all/forwarding", "1");
	if (err) {
		p_err("cannot enable forwarding: %s", strerror(-err));
		return err;
	}
	err = xlb_sandbox_ip(topology);
	if (err) {
		p_err("ip -batch failed building the sandbox topology");
		return err;
	}
	env->ifindex = if_nametoindex(XLB_SANDBOX_IF_IN);
	env->ifindex_other = if_nametoindex(XLB_SANDBOX_IF_OTHER);
	if (!env->ifindex || !env->ifindex_other) {
		p_err("sandbox interfaces missing after setup");
		return -ENODEV;
	}
	return 0;
}

int xlb_sandbox_load(const char *path, struct bpf_object **objp)
{
	struct bpf_object *obj;
	struct bpf_map *map;
	int err;

	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		err = -errno;
		p_err("cannot open %s: %s", path, strerror(-err));
		return err;
	}
	bpf_object__for_each_map(map, obj)
		bpf_map__set_pin_path(map, NULL);
	err = bpf_object__load(obj);
	if (err) {
		p_err("cannot load %s: %s", path, strerror(-err));
		bpf_object__close(obj);
		return err;
	}
	*objp = obj;
	return 0;
}

int xlb_obj_maps(struct bpf_object *obj, struct xlb_obj_maps *m)
{
	m->config = bpf_object__find_map_fd_by_name(obj, XLB_MAP_CONFIG);
	m->vips = bpf_object__find_map_fd_by_name(obj, XLB_MAP_VIPS);
	m->tables = bpf_object__find_map_fd_by_name(obj, XLB_MAP_TABLES);
	m->backends = bpf_object__find_map_fd_by_name(obj, XLB_MAP_BACKENDS);
	m->vip_stats = bpf_object__find_map_fd_by_name(obj, XLB_MAP_VIP_STATS);
	m->backend_stats = bpf_object__find_map_fd_by_name(obj,
							   XLB_MAP_BACKEND_STATS);
	m->stats = bpf_object__find_map_fd_by_name(obj, XLB_MAP_STATS);
	m->conntrack = bpf_object__find_map_fd_by_name(obj, XLB_MAP_CONNTRACK);
	m->vip_slots = bpf_object__find_map_fd_by_name(obj, XLB_MAP_VIP_SLOTS);
	if (m->vip_slots < 0)
		m->vip_slots = -1;
	if (m->config < 0 || m->vips < 0 || m->tables < 0 || m->backends < 0 ||
	    m->vip_stats < 0 || m->backend_stats < 0 || m->stats < 0 ||
	    m->conntrack < 0)
		return -ENOENT;
	return 0;
}

int xlb_obj_vip_write(const struct xlb_obj_maps *m,
		      const struct xlb_vip_key *key, const struct xlb_vip *vip)
{
	struct xlb_vip_slot slot = { .key = *key, .vip = *vip };
	__u32 bit = xlb_vip_key_bit(key);

	if (bpf_map_update_elem(m->vips, key, vip, BPF_ANY))
		return -errno;
	if (m->vip_slots >= 0 &&
	    bpf_map_update_elem(m->vip_slots, &bit, &slot, BPF_ANY))
		return -errno;
	return 0;
}

int xlb_obj_vip_delete(const struct xlb_obj_maps *m,
		       const struct xlb_vip_key *key)
{
	struct xlb_vip_slot slot, empty = { 0 };
	__u32 bit = xlb_vip_key_bit(key);

	/* The slot first, as the loader does (loader/instance/vip_sets.c). */
	if (m->vip_slots >= 0 &&
	    !bpf_map_lookup_elem(m->vip_slots, &bit, &slot) &&
	    !memcmp(&slot.key, key, sizeof(*key)) &&
	    bpf_map_update_elem(m->vip_slots, &bit, &empty, BPF_ANY))
		return -errno;
	if (bpf_map_delete_elem(m->vips, key) && errno != ENOENT)
		return -errno;
	return 0;
}

int xlb_sandbox_run(int prog_fd, int ifindex, const void *in, __u32 len,
		void *out, __u32 *out_len, __u32 *retval)
{
	struct xdp_md ctx = {
		.data_end = len < XLB_SANDBOX_FIRST_BUFFER ? len :
							    XLB_SANDBOX_FIRST_BUFFER,
		.ingress_ifindex = ifindex,
	};
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		    .data_in = in,
		    .data_size_in = len,
		    .data_out = out,
		    .data_size_out = *out_len,
		    .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx),
		    .repeat = 1);

	if (bpf_prog_test_run_opts(prog_fd, &opts))
		return -errno;
	*out_len = opts.data_size_out;
	*retval = opts.retval;
	return 0;
}
