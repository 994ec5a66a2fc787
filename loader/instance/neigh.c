// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Next hops of backends kept resolved, over rtnetlink (see neigh.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/socket.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <bpf/bpf.h>

#include "addr.h"
#include "neigh.h"
#include "report.h"
#include "rtnl.h"

/* States with a link-layer address, which bpf_fib_lookup answers with
 * (the kernel's NUD_VALID, not part of its UAPI). */
#define NUD_WITH_LLADDR	(NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE | \
			 NUD_PROBE | NUD_STALE | NUD_DELAY)

/* What xlb_neigh records of an entry it made. */
struct neigh_rec {
	__be32 addr[4];
	__u32 ifindex;
	__u8 family;
	__u8 pad[3];
};

/* The kernel asked for every next hop: one socket for the process. */
static struct xlb_rtnl nl = XLB_RTNL_INIT;

static size_t addr_len(__u8 family)
{
	return family == XLB_AF_INET ? 4 : 16;
}

static int sys_family(__u8 family)
{
	return family == XLB_AF_INET ? AF_INET : AF_INET6;
}

static bool addr_set(const __be32 a[4])
{
	return a[0] || a[1] || a[2] || a[3];
}

/* RTM_GETROUTE for dst, from src when given. */
static int route_get(const __be32 dst[4], __u8 family, const __be32 *src,
		     struct xlb_nexthop_state *nh)
{
	struct xlb_rtnl_req req;
	struct nlmsghdr *h;
	struct rtattr *rta;
	struct rtmsg *r;
	struct rtvia *via;
	int len, err;

	xlb_rtnl_req_init(&req, RTM_GETROUTE, 0, sizeof(*r));
	r = xlb_rtnl_hdr(&req);
	r->rtm_family = sys_family(family);
	r->rtm_dst_len = addr_len(family) * 8;
	xlb_rtnl_attr(&req.n, RTA_DST, dst, addr_len(family));
	if (src) {
		r->rtm_src_len = addr_len(family) * 8;
		xlb_rtnl_attr(&req.n, RTA_SRC, src, addr_len(family));
	}
	err = xlb_rtnl_talk(&nl, &req.n, &h);
	if (err)
		return err;
	r = NLMSG_DATA(h);
	if (h->nlmsg_type != RTM_NEWROUTE || r->rtm_type != RTN_UNICAST)
		return -ENETUNREACH;
	memset(nh, 0, sizeof(*nh));
	memcpy(nh->addr, dst, addr_len(family));
	nh->family = family;
	len = RTM_PAYLOAD(h);
	for (rta = RTM_RTA(r); RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		switch (rta->rta_type) {
		case RTA_OIF:
			nh->ifindex = *(int *)RTA_DATA(rta);
			break;
		case RTA_GATEWAY:
			memset(nh->addr, 0, sizeof(nh->addr));
			memcpy(nh->addr, RTA_DATA(rta), addr_len(family));
			break;
		case RTA_VIA:
			/* An IPv4 route via an IPv6 gateway. */
			via = RTA_DATA(rta);
			if (via->rtvia_family != AF_INET6)
				return -ENETUNREACH;
			nh->family = XLB_AF_INET6;
			memcpy(nh->addr, via->rtvia_addr, 16);
			break;
		}
	}
	return nh->ifindex ? 0 : -ENETUNREACH;
}

/* The next hop's neighbour entry into nh (nud 0: none). */
static int neigh_get(struct xlb_nexthop_state *nh)
{
	struct xlb_rtnl_req req;
	struct nlmsghdr *h;
	struct rtattr *rta;
	struct ndmsg *nd;
	int len, err;

	nh->nud = 0;
	nh->flags = 0;
	nh->ext_flags = 0;
	nh->lladdr_len = 0;
	xlb_rtnl_req_init(&req, RTM_GETNEIGH, 0, sizeof(*nd));
	nd = xlb_rtnl_hdr(&req);
	nd->ndm_family = sys_family(nh->family);
	nd->ndm_ifindex = nh->ifindex;
	xlb_rtnl_attr(&req.n, NDA_DST, nh->addr, addr_len(nh->family));
	err = xlb_rtnl_talk(&nl, &req.n, &h);
	if (err == -ENOENT)
		return 0;
	if (err)
		return err;
	nd = NLMSG_DATA(h);
	nh->nud = nd->ndm_state;
	nh->flags = nd->ndm_flags;
	len = h->nlmsg_len - NLMSG_LENGTH(sizeof(*nd));
	for (rta = (void *)((char *)nd + NLMSG_ALIGN(sizeof(*nd)));
	     RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		if (rta->rta_type == NDA_FLAGS_EXT)
			nh->ext_flags = *(__u32 *)RTA_DATA(rta);
		if (rta->rta_type == NDA_LLADDR &&
		    RTA_PAYLOAD(rta) <= sizeof(nh->lladdr)) {
			nh->lladdr_len = RTA_PAYLOAD(rta);
			memcpy(nh->lladdr, RTA_DATA(rta), nh->lladdr_len);
		}
	}
	return 0;
}

/* RTM_NEWNEIGH (managed) or RTM_DELNEIGH for the next hop. */
static int neigh_write(const struct xlb_nexthop_state *nh, __u16 type,
		       bool managed)
{
	struct xlb_rtnl_req req;
	__u32 ext = NTF_EXT_MANAGED;
	struct ndmsg *nd;

	xlb_rtnl_req_init(&req, type, NLM_F_ACK, sizeof(*nd));
	nd = xlb_rtnl_hdr(&req);
	nd->ndm_family = sys_family(nh->family);
	nd->ndm_ifindex = nh->ifindex;
	xlb_rtnl_attr(&req.n, NDA_DST, nh->addr, addr_len(nh->family));
	if (type == RTM_NEWNEIGH) {
		req.n.nlmsg_flags |= NLM_F_CREATE | NLM_F_REPLACE;
		/* An entry learned by traffic keeps its address meanwhile. */
		if (nh->nud & NUD_WITH_LLADDR && nh->lladdr_len) {
			nd->ndm_state = NUD_STALE;
			xlb_rtnl_attr(&req.n, NDA_LLADDR, nh->lladdr, nh->lladdr_len);
		}
		if (managed)
			xlb_rtnl_attr(&req.n, NDA_FLAGS_EXT, &ext, sizeof(ext));
		else
			nd->ndm_flags = NTF_USE;
	}
	return xlb_rtnl_talk(&nl, &req.n, NULL);
}

bool xlb_nexthop_resolved(const struct xlb_nexthop_state *nh)
{
	return nh->nud & NUD_WITH_LLADDR;
}

const char *xlb_nexthop_nud_str(__u16 nud)
{
	static const struct {
		__u16 nud;
		const char *name;
	} names[] = {
		{ NUD_INCOMPLETE, "INCOMPLETE" }, { NUD_REACHABLE, "REACHABLE" },
		{ NUD_STALE, "STALE" }, { NUD_DELAY, "DELAY" },
		{ NUD_PROBE, "PROBE" }, { NUD_FAILED, "FAILED" },
		{ NUD_NOARP, "NOARP" }, { NUD_PERMANENT, "PERMANENT" },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (nud & names[i].nud)
			return names[i].name;
	return "none";
}

int xlb_nexthop_get(const struct xlb_config *cfg, const __be32 addr[4],
		    __u8 family, struct xlb_nexthop_state *nh)
{
	const __be32 *src = family == XLB_AF_INET ?
			    (cfg->src4 ? &cfg->src4 : NULL) :
			    (addr_set(cfg->src6) ? cfg->src6 : NULL);
	int err;

	/* A source the balancer does not hold is refused by the kernel's
	 * route lookup, not by the datapath's: then asked without. */
	err = route_get(addr, family, src, nh);
	if (err && err != -ENETUNREACH && src)
		err = route_get(addr, family, NULL, nh);
	if (err == -ENETUNREACH || err == -EHOSTUNREACH || err == -ENETDOWN)
		return -ENETUNREACH;
	return err ?: neigh_get(nh);
}

/* The map of the entries xlb made, created when there is one to record
 * (-ENOENT when there is none and nothing to record). */
static int records_open(struct xlb_instance *inst, bool create)
{
	char path[PATH_MAX + 16];
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", inst->dir, XLB_NEIGH_MAP);
	fd = bpf_obj_get(path);
	if (fd >= 0 || errno != ENOENT || !create)
		goto out;
	fd = bpf_map_create(BPF_MAP_TYPE_HASH, XLB_NEIGH_MAP,
			    sizeof(struct neigh_rec), sizeof(__u32),
			    XLB_MAX_BACKENDS, NULL);
	if (fd >= 0 && bpf_obj_pin(fd, path)) {
		err = -errno;
		close(fd);
		errno = -err;
		fd = -1;
	}
out:
	return fd < 0 ? -errno : fd;
}

static struct neigh_rec rec_of(const struct xlb_nexthop_state *nh)
{
	struct neigh_rec r = { .ifindex = nh->ifindex, .family = nh->family };

	memcpy(r.addr, nh->addr, sizeof(r.addr));
	return r;
}

static const char *dev_name(int ifindex, char *buf)
{
	if (!if_indextoname(ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "if%d", ifindex);
	return buf;
}

/* The next hops the backends need, and each backend's (1 + its index in
 * want[]; 0: no route). */
struct want {
	struct xlb_nexthop_state nh;
	bool asked;		/* xlb had to create its entry now */
};
static struct want want[XLB_MAX_BACKENDS];
static __u32 n_want;
static __u16 nexthop_of[XLB_MAX_BACKENDS];

static void want_add(const struct xlb_nexthop_state *nh, __u32 id)
{
	__u32 i;

	for (i = 0; i < n_want; i++)
		if (want[i].nh.family == nh->family &&
		    want[i].nh.ifindex == nh->ifindex &&
		    !memcmp(want[i].nh.addr, nh->addr, sizeof(nh->addr)))
			break;
	if (i == n_want)
		want[n_want++] = (struct want){ .nh = *nh };
	nexthop_of[id] = i + 1;
}

int xlb_nexthop_manage(struct xlb_nexthop_state *nh)
{
	static bool said;
	int err;

	err = neigh_write(nh, RTM_NEWNEIGH, true);
	if (!err)
		err = neigh_get(nh);
	/* Before 5.16 the flag is refused, or dropped unread. */
	if (err == -EINVAL || err == -EOPNOTSUPP ||
	    (!err && !(nh->ext_flags & NTF_EXT_MANAGED))) {
		if (!said)
			p_info("xlb: this kernel keeps no managed neighbour entries (Linux 5.16 and later): next hops are resolved now, and again by the next xlb command that needs them after their entries aged out");
		said = true;
		err = neigh_write(nh, RTM_NEWNEIGH, false);
		if (!err)
			err = neigh_get(nh);
	}
	return err;
}

int xlb_nexthop_forget(const struct xlb_nexthop_state *entry)
{
	struct xlb_nexthop_state nh = *entry;
	int err;

	err = neigh_get(&nh);
	/* One the operator pinned since is his. */
	if (!err && nh.nud && !(nh.nud & (NUD_PERMANENT | NUD_NOARP)))
		err = neigh_write(&nh, RTM_DELNEIGH, false);
	return err == -ENOENT || err == -ENODEV ? 0 : err;
}

/* Give w's next hop an entry the kernel keeps resolved, unless it has
 * one, or one the operator made his own. */
static int want_keep(int rec_fd, struct want *w)
{
	struct neigh_rec r = rec_of(&w->nh);
	struct xlb_nexthop_state *nh = &w->nh;
	__u32 one = 1, v;
	int err;

	if (nh->nud & (NUD_PERMANENT | NUD_NOARP)) {
		/* The operator's now, if it ever was xlb's. */
		err = xlb_map_delete(rec_fd, &r);
		return err == -ENOENT ? 0 : err;
	}
	if (nh->ext_flags & NTF_EXT_MANAGED)
		return 0;
	/* Recorded before it is made: a kill in between leaves a record
	 * of nothing, which the next command drops. */
	if (bpf_map_lookup_elem(rec_fd, &r, &v)) {
		err = xlb_map_update(rec_fd, &r, &one, BPF_ANY);
		if (err)
			return err;
	}
	w->asked = true;
	return xlb_nexthop_manage(nh);
}

/* Remove the entries xlb made that no wanted next hop has. */
static int drop_unwanted(int rec_fd)
{
	static struct neigh_rec stale[XLB_MAX_BACKENDS];
	struct neigh_rec key, *prev = NULL;
	struct xlb_nexthop_state nh;
	__u32 i, n = 0;
	int err;

	while (n < XLB_MAX_BACKENDS &&
	       !bpf_map_get_next_key(rec_fd, prev, &stale[n])) {
		key = stale[n];
		prev = &key;
		for (i = 0; i < n_want; i++) {
			struct neigh_rec r = rec_of(&want[i].nh);

			if (!memcmp(&r, &stale[n], sizeof(r)))
				break;
		}
		if (i == n_want)
			n++;
	}
	for (i = 0; i < n; i++) {
		memset(&nh, 0, sizeof(nh));
		memcpy(nh.addr, stale[i].addr, sizeof(nh.addr));
		nh.family = stale[i].family;
		nh.ifindex = stale[i].ifindex;
		err = xlb_nexthop_forget(&nh);
		if (!err)
			err = xlb_map_delete(rec_fd, &stale[i]);
		if (err && err != -ENOENT)
			return err;
	}
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Wait for the entries asked for now, then name the backends whose next
 * hop is still unresolved (see xlb_neigh_sync()). */
static void wait_and_report(const struct xlb_state *st, const bool *named)
{
	double deadline = now_ms() + XLB_NEIGH_WAIT_MS;
	char a[XLB_ADDR_STRLEN], g[XLB_ADDR_STRLEN], dev[IF_NAMESIZE];
	const struct xlb_backend *b;
	const struct want *w;
	bool pending;
	__u32 i;

	do {
		pending = false;
		for (i = 0; i < n_want; i++) {
			if (!want[i].asked || xlb_nexthop_resolved(&want[i].nh))
				continue;
			if (neigh_get(&want[i].nh) ||
			    !xlb_nexthop_resolved(&want[i].nh))
				pending = true;
		}
		if (pending)
			usleep(10000);
	} while (pending && now_ms() < deadline);
	for (i = 1; i < XLB_MAX_BACKENDS; i++) {
		if (!nexthop_of[i])
			continue;
		w = &want[nexthop_of[i] - 1];
		if (xlb_nexthop_resolved(&w->nh) ||
		    !(w->asked || !named || named[i]))
			continue;
		b = &st->backends[i];
		p_info("xlb: backend %s: next hop %s dev %s is %s: its packets are dropped (drop_neigh_unresolved) until it resolves",
		       xlb_addr_str(b->addr, b->family, a, sizeof(a)),
		       xlb_addr_str(w->nh.addr, w->nh.family, g, sizeof(g)),
		       dev_name(w->nh.ifindex, dev),
		       xlb_nexthop_nud_str(w->nh.nud));
	}
}

int xlb_neigh_sync(struct xlb_instance *inst, const struct xlb_state *st,
		   const bool *named)
{
	struct xlb_nexthop_state nh;
	const struct xlb_backend *b;
	int rec_fd, err = 0;
	__u32 i;

	n_want = 0;
	memset(nexthop_of, 0, sizeof(nexthop_of));
	for (i = 1; i < XLB_MAX_BACKENDS && !err; i++) {
		b = &st->backends[i];
		if (!xlb_backend_live(b))
			continue;
		err = xlb_nexthop_get(&st->config, b->addr, b->family, &nh);
		if (!err)
			want_add(&nh, i);
		if (err == -ENETUNREACH)
			err = 0;
	}
	if (err)
		goto out;
	rec_fd = records_open(inst, n_want > 0);
	if (rec_fd == -ENOENT)
		return 0;
	if (rec_fd < 0) {
		err = rec_fd;
		goto out;
	}
	for (i = 0; i < n_want && !err; i++)
		err = want_keep(rec_fd, &want[i]);
	if (!err)
		err = drop_unwanted(rec_fd);
	close(rec_fd);
out:
	/* The change itself is made: a note, not an error. */
	if (err)
		p_info("xlb: note: cannot keep the next hops of backends resolved (%s/%s, neighbour table): %s",
		       inst->dir, XLB_NEIGH_MAP, strerror(-err));
	else
		wait_and_report(st, named);
	return err;
}
