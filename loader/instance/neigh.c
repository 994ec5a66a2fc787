// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Next hops of backends kept resolved, over rtnetlink (see neigh.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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
#include "update.h"

/* States with a link-layer address, which bpf_fib_lookup answers with
 * (the kernel's NUD_VALID, not part of its UAPI). */
#define NUD_WITH_LLADDR	(NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE | \
			 NUD_PROBE | NUD_STALE | NUD_DELAY)

/* At most this many backends named one by one when their next hops got no
 * entry; the others are counted. */
#define NAMED_MAX	8

/* What xlb_neigh records of an entry it made (the key; the value is its
 * XLB_NEIGH_MARK_*). */
struct neigh_rec {
	__be32 addr[4];
	__u32 ifindex;
	__u8 family;
	__u8 pad[3];
};

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
static int route_get(struct xlb_nexthops *nx, const __be32 dst[4],
		     __u8 family, const __be32 *src,
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
	err = xlb_rtnl_talk(&nx->nl, &req.n, &h);
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

/* An ndmsg's attributes into nh. */
static void neigh_parse(const struct nlmsghdr *h, struct xlb_nexthop_state *nh)
{
	const struct ndmsg *nd = NLMSG_DATA(h);
	const struct rtattr *rta;
	int len;

	nh->nud = nd->ndm_state;
	nh->flags = nd->ndm_flags;
	nh->protocol = 0;
	nh->ext_flags = 0;
	nh->lladdr_len = 0;
	len = h->nlmsg_len - NLMSG_LENGTH(sizeof(*nd));
	for (rta = (void *)((char *)nd + NLMSG_ALIGN(sizeof(*nd)));
	     RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		if (rta->rta_type == NDA_FLAGS_EXT)
			nh->ext_flags = *(__u32 *)RTA_DATA(rta);
		if (rta->rta_type == NDA_PROTOCOL)
			nh->protocol = *(__u8 *)RTA_DATA(rta);
		if (rta->rta_type == NDA_LLADDR &&
		    RTA_PAYLOAD(rta) <= sizeof(nh->lladdr)) {
			nh->lladdr_len = RTA_PAYLOAD(rta);
			memcpy(nh->lladdr, RTA_DATA(rta), nh->lladdr_len);
		}
	}
}

/* The next hop's neighbour entry into nh (nud 0: none). */
static int neigh_get(struct xlb_nexthops *nx, struct xlb_nexthop_state *nh)
{
	struct xlb_rtnl_req req;
	struct nlmsghdr *h;
	struct ndmsg *nd;
	int err;

	nh->nud = 0;
	nh->flags = 0;
	nh->protocol = 0;
	nh->ext_flags = 0;
	nh->lladdr_len = 0;
	xlb_rtnl_req_init(&req, RTM_GETNEIGH, 0, sizeof(*nd));
	nd = xlb_rtnl_hdr(&req);
	nd->ndm_family = sys_family(nh->family);
	nd->ndm_ifindex = nh->ifindex;
	xlb_rtnl_attr(&req.n, NDA_DST, nh->addr, addr_len(nh->family));
	err = xlb_rtnl_talk(&nx->nl, &req.n, &h);
	if (err == -ENOENT)
		return 0;
	if (!err)
		neigh_parse(h, nh);
	return err;
}

/*
 * A new entry of xlb's for the next hop, marked (neigh.h): managed, or
 * resolved at once (NTF_USE) where managed is not to be had; replace only
 * to turn one xlb has just made into the latter. RTM_DELNEIGH with del.
 */
static int neigh_write(struct xlb_nexthops *nx,
		       const struct xlb_nexthop_state *nh, bool del,
		       bool managed, bool replace)
{
	struct xlb_rtnl_req req;
	__u32 ext = NTF_EXT_MANAGED;
	__u8 proto = XLB_NEIGH_PROTO;
	struct ndmsg *nd;

	xlb_rtnl_req_init(&req, del ? RTM_DELNEIGH : RTM_NEWNEIGH, NLM_F_ACK,
			  sizeof(*nd));
	nd = xlb_rtnl_hdr(&req);
	nd->ndm_family = sys_family(nh->family);
	nd->ndm_ifindex = nh->ifindex;
	xlb_rtnl_attr(&req.n, NDA_DST, nh->addr, addr_len(nh->family));
	if (del)
		return xlb_rtnl_talk(&nx->nl, &req.n, NULL);
	/* Never over an entry someone else made meanwhile. */
	req.n.nlmsg_flags |= NLM_F_CREATE |
			     (replace ? NLM_F_REPLACE : NLM_F_EXCL);
	/* Out of gc_thresh's count, and cleared by any write of the
	 * operator's (neigh.h). */
	nd->ndm_flags = NTF_EXT_LEARNED;
	xlb_rtnl_attr(&req.n, NDA_PROTOCOL, &proto, sizeof(proto));
	if (managed)
		xlb_rtnl_attr(&req.n, NDA_FLAGS_EXT, &ext, sizeof(ext));
	else
		nd->ndm_flags |= NTF_USE;
	return xlb_rtnl_talk(&nx->nl, &req.n, NULL);
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

__u32 xlb_nexthop_marks(const struct xlb_nexthop_state *nh)
{
	if (!nh->nud)
		return 0;
	return (nh->ext_flags & NTF_EXT_MANAGED ? XLB_NEIGH_MARK_MANAGED : 0) |
	       (nh->flags & NTF_EXT_LEARNED ? XLB_NEIGH_MARK_LEARNED : 0) |
	       (nh->protocol == XLB_NEIGH_PROTO ? XLB_NEIGH_MARK_PROTO : 0);
}

/* Whether nh's entry is still one xlb made with these marks: the
 * operator's writes clear NTF_EXT_LEARNED, and a permanent entry is his
 * whatever it carries. */
static bool entry_is_xlbs(const struct xlb_nexthop_state *nh, __u32 marks)
{
	marks &= XLB_NEIGH_MARKS;
	return nh->nud && !(nh->nud & (NUD_PERMANENT | NUD_NOARP)) &&
	       (xlb_nexthop_marks(nh) & marks) == marks;
}

int xlb_nexthop_get(struct xlb_nexthops *nx, const struct xlb_config *cfg,
		    const __be32 addr[4], __u8 family,
		    struct xlb_nexthop_state *nh)
{
	const __be32 *src = family == XLB_AF_INET ?
			    (cfg->src4 ? &cfg->src4 : NULL) :
			    (addr_set(cfg->src6) ? cfg->src6 : NULL);
	int err;

	/* A source the balancer does not hold is refused by the kernel's
	 * route lookup, not by the datapath's: then asked without. */
	err = route_get(nx, addr, family, src, nh);
	if (err && err != -ENETUNREACH && src)
		err = route_get(nx, addr, family, NULL, nh);
	/* The kernel answers a blackhole route with EINVAL, a prohibit
	 * one with EACCES: no next hop either. */
	if (err == -ENETUNREACH || err == -EHOSTUNREACH || err == -ENETDOWN ||
	    err == -EINVAL || err == -EACCES)
		return -ENETUNREACH;
	return err ?: neigh_get(nx, nh);
}

int xlb_nexthop_manage(struct xlb_nexthops *nx, struct xlb_nexthop_state *nh)
{
	bool made;
	int err;

	err = neigh_write(nx, nh, false, true, false);
	made = !err;
	if (!err)
		err = neigh_get(nx, nh);
	/* Before 5.16 the flag is refused, or dropped unread. */
	if (err == -EINVAL || err == -EOPNOTSUPP ||
	    (!err && !(nh->ext_flags & NTF_EXT_MANAGED))) {
		if (!nx->said_unmanaged)
			p_info("xlb: this kernel keeps no managed neighbour entries (Linux 5.16 and later): next hops are resolved now, and again by the next xlb command that needs them after their entries aged out");
		nx->said_unmanaged = true;
		err = neigh_write(nx, nh, false, false, made);
		if (!err)
			err = neigh_get(nx, nh);
	}
	return err;
}

int xlb_nexthop_forget(struct xlb_nexthops *nx,
		       const struct xlb_nexthop_state *entry)
{
	struct xlb_nexthop_state nh = *entry;
	int err;

	err = neigh_get(nx, &nh);
	if (!err && entry_is_xlbs(&nh, XLB_NEIGH_MARK_LEARNED |
				       XLB_NEIGH_MARK_PROTO))
		err = neigh_write(nx, &nh, true, false, false);
	return err == -ENOENT || err == -ENODEV ? 0 : err;
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

static void nh_of(const struct neigh_rec *r, struct xlb_nexthop_state *nh)
{
	memset(nh, 0, sizeof(*nh));
	memcpy(nh->addr, r->addr, sizeof(nh->addr));
	nh->family = r->family;
	nh->ifindex = r->ifindex;
}

static const char *dev_name(int ifindex, char *buf)
{
	if (!if_indextoname(ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "if%d", ifindex);
	return buf;
}

/* A next hop the backends need. */
struct want {
	struct xlb_nexthop_state nh;
	bool asked;		/* xlb had to create its entry now */
	int why;		/* -errno: it needed an entry and got none */
};

/* One family's host-wide neighbour table (see neigh.h, the host's room). */
struct room {
	bool known;		/* the table was read */
	__u32 thresh3;		/* gc_thresh3 */
	__u32 entries;		/* every entry, of every namespace */
	__u32 exempt;		/* this namespace's, out of gc's count or
				 * reclaimed at once (NOARP) */
	bool counted;		/* the entries xlb makes count too */
	__u32 made;		/* entries made now that count */
};

/* One sync or check: what it wants, and the tables' room. */
struct neigh_sync {
	struct xlb_instance *inst;
	struct xlb_nexthops own, *nx;	/* nx: own, or the caller's */
	int rec_fd;		/* -1: none */
	struct want want[XLB_MAX_BACKENDS];
	__u32 n_want;
	/* Each backend's next hop: 1 + its index in want[]; 0: no route. */
	__u16 nexthop_of[XLB_MAX_BACKENDS];
	struct neigh_rec stale[XLB_MAX_BACKENDS];
	struct room room[2];	/* IPv4, IPv6 */
};

static struct room *room_of(struct neigh_sync *s, __u8 family)
{
	return &s->room[family == XLB_AF_INET6];
}

static const char *family_sysctl(__u8 family)
{
	return family == XLB_AF_INET6 ? "net.ipv6.neigh.default.gc_thresh3" :
					"net.ipv4.neigh.default.gc_thresh3";
}

/* Entries of the table counted against gc_thresh3, at most. */
static __u32 room_used(const struct room *r)
{
	__u32 used = r->entries > r->exempt ? r->entries - r->exempt : 0;

	return used + r->made;
}

static __u32 room_share(const struct room *r)
{
	return (__u64)r->thresh3 * XLB_NEIGH_SHARE_NUM / XLB_NEIGH_SHARE_DEN;
}

/* Whether n more entries that count stay within the share. */
static bool room_for(const struct room *r, __u32 n)
{
	return !r->known || !r->counted || !n ||
	       room_used(r) + n <= room_share(r);
}

static int tbl_msg(const struct nlmsghdr *h, void *ctx)
{
	struct neigh_sync *s = ctx;
	const struct ndtmsg *t = NLMSG_DATA(h);
	const struct ndt_config *c = NULL;
	const struct rtattr *rta;
	__u32 thresh3 = 0;
	struct room *r;
	int len;

	if (h->nlmsg_type != RTM_NEWNEIGHTBL ||
	    (t->ndtm_family != AF_INET && t->ndtm_family != AF_INET6))
		return 0;
	len = h->nlmsg_len - NLMSG_LENGTH(sizeof(*t));
	for (rta = (void *)((char *)t + NLMSG_ALIGN(sizeof(*t)));
	     RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		if (rta->rta_type == NDTA_THRESH3)
			thresh3 = *(__u32 *)RTA_DATA(rta);
		if (rta->rta_type == NDTA_CONFIG &&
		    RTA_PAYLOAD(rta) >= sizeof(*c))
			c = RTA_DATA(rta);
	}
	/* The table's own message; a device's parameters come without. */
	if (!thresh3 || !c)
		return 0;
	r = &s->room[t->ndtm_family == AF_INET6];
	r->known = true;
	r->thresh3 = thresh3;
	r->entries = c->ndtc_entries;
	return 0;
}

static int neigh_msg(const struct nlmsghdr *h, void *ctx)
{
	struct room *r = ctx;
	const struct ndmsg *nd = NLMSG_DATA(h);

	/* What the kernel keeps out of gc's count (permanent entries too),
	 * and what it takes back whenever it needs the room: the NOARP
	 * entries of multicast destinations, such as the solicited-node
	 * groups that the probes of xlb's own entries are sent to, one per
	 * backend on-link (`ip neigh` does not show them). */
	if (h->nlmsg_type == RTM_NEWNEIGH &&
	    (nd->ndm_flags & NTF_EXT_LEARNED ||
	     nd->ndm_state & (NUD_PERMANENT | NUD_NOARP)))
		r->exempt++;
	return 0;
}

/*
 * The room of both tables; and whether xlb's entries count, as the
 * records of those it made say (the marks the kernel kept). A table the
 * kernel does not show is taken as unlimited (nothing refused).
 */
static int room_read(struct neigh_sync *s)
{
	struct xlb_rtnl_req req;
	struct neigh_rec key, prev;
	bool first = true;
	struct ndtmsg *t;
	struct ndmsg *nd;
	__u32 marks, i;
	int err;

	memset(s->room, 0, sizeof(s->room));
	xlb_rtnl_req_init(&req, RTM_GETNEIGHTBL, 0, sizeof(*t));
	t = xlb_rtnl_hdr(&req);
	t->ndtm_family = AF_UNSPEC;
	err = xlb_rtnl_dump(&s->nx->nl, &req.n, tbl_msg, s);
	for (i = 0; i < 2 && !err; i++) {
		xlb_rtnl_req_init(&req, RTM_GETNEIGH, 0, sizeof(*nd));
		nd = xlb_rtnl_hdr(&req);
		nd->ndm_family = i ? AF_INET6 : AF_INET;
		err = xlb_rtnl_dump(&s->nx->nl, &req.n, neigh_msg, &s->room[i]);
	}
	if (err)
		return err;
	while (s->rec_fd >= 0 &&
	       !bpf_map_get_next_key(s->rec_fd, first ? NULL : &prev, &key)) {
		first = false;
		prev = key;
		if (!bpf_map_lookup_elem(s->rec_fd, &key, &marks) &&
		    marks & XLB_NEIGH_MARK_READ &&
		    !(marks & XLB_NEIGH_MARK_LEARNED))
			room_of(s, key.family)->counted = true;
	}
	return 0;
}

static void want_add(struct neigh_sync *s, const struct xlb_nexthop_state *nh,
		     __u32 id)
{
	__u32 i;

	for (i = 0; i < s->n_want; i++)
		if (s->want[i].nh.family == nh->family &&
		    s->want[i].nh.ifindex == nh->ifindex &&
		    !memcmp(s->want[i].nh.addr, nh->addr, sizeof(nh->addr)))
			break;
	if (i == s->n_want)
		s->want[s->n_want++] = (struct want){ .nh = *nh };
	if (id)
		s->nexthop_of[id] = i + 1;
}

/* The next hop of a backend into s->want (id 0: one the change adds).
 * No route is no error: there is nothing to resolve. */
static int want_backend(struct neigh_sync *s, const struct xlb_config *cfg,
			const __be32 addr[4], __u8 family, __u32 id)
{
	struct xlb_nexthop_state nh;
	int err;

	err = xlb_nexthop_get(s->nx, cfg, addr, family, &nh);
	if (!err)
		want_add(s, &nh, id);
	return err == -ENETUNREACH ? 0 : err;
}

static int wants_of(struct neigh_sync *s, const struct xlb_state *st)
{
	const struct xlb_backend *b;
	int err = 0;
	__u32 i;

	for (i = 1; i < XLB_MAX_BACKENDS && !err; i++) {
		b = &st->backends[i];
		if (xlb_backend_live(b))
			err = want_backend(s, &st->config, b->addr, b->family, i);
	}
	return err;
}

static struct neigh_sync *sync_new(struct xlb_instance *inst)
{
	struct neigh_sync *s = calloc(1, sizeof(*s));

	if (s) {
		s->inst = inst;
		s->own = (struct xlb_nexthops)XLB_NEXTHOPS_INIT;
		s->nx = &s->own;
		s->rec_fd = -1;
	}
	return s;
}

static void sync_free(struct neigh_sync *s)
{
	if (s->rec_fd >= 0)
		close(s->rec_fd);
	xlb_nexthops_close(&s->own);
	free(s);
}

/* Whether st has a live backend at addr (in any VIP): its next hop has
 * been seen to already. */
static bool live_in(const struct xlb_state *st, const __be32 addr[4],
		    __u8 family)
{
	const struct xlb_backend *b;
	__u32 i;

	for (i = 1; i < XLB_MAX_BACKENDS; i++) {
		b = &st->backends[i];
		if (xlb_backend_live(b) && b->family == family &&
		    !memcmp(b->addr, addr, sizeof(b->addr)))
			return true;
	}
	return false;
}

int xlb_neigh_check(struct xlb_instance *inst, const struct xlb_state *st,
		    const struct xlb_state *after, const struct xlb_want *want,
		    size_t n)
{
	const struct xlb_backend *b;
	__u32 add[2] = { 0, 0 }, i;
	struct neigh_sync *s;
	struct room *r;
	int err = 0;

	s = sync_new(inst);
	if (!s) {
		p_err("out of memory");
		return -ENOMEM;
	}
	for (i = 1; after && i < XLB_MAX_BACKENDS && !err; i++) {
		b = &after->backends[i];
		if (xlb_backend_live(b) && !live_in(st, b->addr, b->family))
			err = want_backend(s, &st->config, b->addr, b->family, 0);
	}
	for (i = 0; i < n && !err; i++)
		if (!live_in(st, want[i].addr, want[i].family))
			err = want_backend(s, &st->config, want[i].addr,
					   want[i].family, 0);
	if (err) {
		p_err("cannot look up the next hops of the backends: %s",
		      strerror(-err));
		goto out;
	}
	/* Only entries to be made count: xlb makes none where one is. */
	for (i = 0; i < s->n_want; i++)
		add[s->want[i].nh.family == XLB_AF_INET6] += !s->want[i].nh.nud;
	if (!add[0] && !add[1])
		goto out;
	/* No records: none made yet, nothing known of the marks. */
	err = records_open(inst, false);
	if (err >= 0) {
		s->rec_fd = err;
		err = 0;
	}
	if (!err || err == -ENOENT)
		err = room_read(s);
	if (err) {
		p_err("cannot read the host's neighbour tables (%s/%s): %s",
		      inst->dir, XLB_NEIGH_MAP, strerror(-err));
		goto out;
	}
	for (i = 0; i < 2; i++) {
		r = &s->room[i];
		if (room_for(r, add[i]))
			continue;
		p_err("the backends need %u new IPv%d neighbour entries, and the host's table, shared by every network namespace, has %u of its gc_thresh3 %u counted in use: past %u of them other namespaces could not resolve neighbours; raise %s (in the initial namespace)",
		      add[i], i ? 6 : 4, room_used(r), r->thresh3, room_share(r),
		      family_sysctl(i ? XLB_AF_INET6 : XLB_AF_INET));
		err = -ENOBUFS;
		break;
	}
out:
	sync_free(s);
	return err;
}

/*
 * Give w's next hop an entry of xlb's where it has none; an entry recorded
 * as xlb's that lost a mark is the operator's now: its record goes, the
 * entry stays. After a refusal (s_err), no entry is asked for again.
 */
static int want_keep(struct neigh_sync *s, struct want *w, int *s_err)
{
	struct neigh_rec r = rec_of(&w->nh);
	struct xlb_nexthop_state *nh = &w->nh;
	struct room *room = room_of(s, nh->family);
	__u32 marks = XLB_NEIGH_MARKS, v;
	bool recorded;
	int err;

	recorded = !bpf_map_lookup_elem(s->rec_fd, &r, &v);
	if (nh->nud) {
		if (!recorded || entry_is_xlbs(nh, v))
			return 0;
		err = xlb_map_delete(s->rec_fd, &r);
		return err == -ENOENT ? 0 : err;
	}
	if (*s_err || !room_for(room, 1)) {
		w->why = *s_err ?: -ENOBUFS;
		return 0;
	}
	/* Recorded before it is made: a kill in between leaves a record
	 * of nothing, which the next sync drops. */
	err = xlb_map_update(s->rec_fd, &r, &marks, BPF_ANY);
	if (err)
		return err;
	w->asked = true;
	err = xlb_nexthop_manage(s->nx, nh);
	if (err) {
		/* -EEXIST: made by another meanwhile, and so his. */
		xlb_map_delete(s->rec_fd, &r);
		if (err == -EEXIST)
			return neigh_get(s->nx, nh);
		w->why = err;
		*s_err = err;
		return 0;
	}
	marks = xlb_nexthop_marks(nh) | XLB_NEIGH_MARK_READ;
	if (!(marks & XLB_NEIGH_MARK_LEARNED)) {
		room->counted = true;
		room->made++;
	}
	return xlb_map_update(s->rec_fd, &r, &marks, BPF_ANY);
}

/* Remove the entries xlb made that no wanted next hop has, those still
 * xlb's; their records go either way. */
static int drop_unwanted(struct neigh_sync *s)
{
	struct neigh_rec key, *prev = NULL;
	struct xlb_nexthop_state nh;
	__u32 i, n = 0, marks;
	int err;

	while (n < XLB_MAX_BACKENDS &&
	       !bpf_map_get_next_key(s->rec_fd, prev, &s->stale[n])) {
		key = s->stale[n];
		prev = &key;
		for (i = 0; i < s->n_want; i++) {
			struct neigh_rec r = rec_of(&s->want[i].nh);

			if (!memcmp(&r, &s->stale[n], sizeof(r)))
				break;
		}
		if (i == s->n_want)
			n++;
	}
	for (i = 0; i < n; i++) {
		nh_of(&s->stale[i], &nh);
		err = bpf_map_lookup_elem(s->rec_fd, &s->stale[i], &marks) ?
		      -errno : neigh_get(s->nx, &nh);
		if (!err && entry_is_xlbs(&nh, marks))
			err = neigh_write(s->nx, &nh, true, false, false);
		if (!err || err == -ENOENT || err == -ENODEV)
			err = xlb_map_delete(s->rec_fd, &s->stale[i]);
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

/* Why w's next hop got no entry, in words that say what to do. */
static const char *why_str(const struct neigh_sync *s, const struct want *w,
			   char *buf, size_t len)
{
	const struct room *r = &s->room[w->nh.family == XLB_AF_INET6];

	if (w->why != -ENOBUFS)
		snprintf(buf, len, "the kernel refused its neighbour entry: %s",
			 strerror(-w->why));
	else if (r->known && r->counted)
		snprintf(buf, len, "the host's neighbour table has %u of its gc_thresh3 %u counted in use, past xlb's share of %u: raise %s",
			 room_used(r), r->thresh3, room_share(r),
			 family_sysctl(w->nh.family));
	else
		snprintf(buf, len, "the host's neighbour table is full: raise %s",
			 family_sysctl(w->nh.family));
	return buf;
}

/* Wait for the entries asked for now, then name the backends whose next
 * hop is still unresolved (see xlb_neigh_sync()). */
static void wait_and_report(struct neigh_sync *s, const struct xlb_state *st,
			    const bool *named)
{
	double deadline = now_ms() + XLB_NEIGH_WAIT_MS;
	char a[XLB_ADDR_STRLEN], g[XLB_ADDR_STRLEN], dev[IF_NAMESIZE];
	char why[256];
	const struct xlb_backend *b;
	const struct want *w;
	__u32 i, left_out = 0;
	bool pending;

	do {
		pending = false;
		for (i = 0; i < s->n_want; i++) {
			struct want *x = &s->want[i];

			if (!x->asked || x->why || xlb_nexthop_resolved(&x->nh))
				continue;
			if (neigh_get(s->nx, &x->nh) || !xlb_nexthop_resolved(&x->nh))
				pending = true;
		}
		if (pending)
			usleep(10000);
	} while (pending && now_ms() < deadline);
	for (i = 1; i < XLB_MAX_BACKENDS; i++) {
		if (!s->nexthop_of[i])
			continue;
		w = &s->want[s->nexthop_of[i] - 1];
		b = &st->backends[i];
		xlb_addr_str(b->addr, b->family, a, sizeof(a));
		xlb_addr_str(w->nh.addr, w->nh.family, g, sizeof(g));
		if (w->why) {
			/* Unreachable until an entry is made: always said. */
			if (left_out++ < NAMED_MAX)
				p_info("xlb: warning: backend %s: next hop %s dev %s has no neighbour entry, so its packets are dropped (drop_neigh_unresolved): %s; the checker (xlb health run) tries again within 10 s, and so do the next change of backends and `xlb attach`",
				       a, g, dev_name(w->nh.ifindex, dev),
				       why_str(s, w, why, sizeof(why)));
			continue;
		}
		if (xlb_nexthop_resolved(&w->nh) ||
		    !(w->asked || !named || named[i]))
			continue;
		p_info("xlb: backend %s: next hop %s dev %s is %s: its packets are dropped (drop_neigh_unresolved) until it resolves",
		       a, g, dev_name(w->nh.ifindex, dev),
		       xlb_nexthop_nud_str(w->nh.nud));
	}
	if (left_out > NAMED_MAX)
		p_info("xlb: warning: %u more backends have no neighbour entry for their next hop, for the same reasons",
		       left_out - NAMED_MAX);
}

static int sync_run(struct xlb_instance *inst, const struct xlb_state *st,
		    struct xlb_nexthops *nx, const bool *named, bool report);

int xlb_neigh_sync(struct xlb_instance *inst, const struct xlb_state *st,
		   const bool *named)
{
	return sync_run(inst, st, NULL, named, true);
}

int xlb_neigh_refresh(struct xlb_instance *inst, const struct xlb_state *st,
		      struct xlb_nexthops *nx)
{
	return sync_run(inst, st, nx, NULL, false);
}

static int sync_run(struct xlb_instance *inst, const struct xlb_state *st,
		    struct xlb_nexthops *nx, const bool *named, bool report)
{
	struct neigh_sync *s;
	int err, s_err = 0;
	__u32 i;

	s = sync_new(inst);
	if (!s) {
		err = -ENOMEM;
		goto out;
	}
	if (nx)
		s->nx = nx;
	err = wants_of(s, st);
	if (err)
		goto out;
	err = records_open(inst, s->n_want > 0);
	if (err == -ENOENT) {
		err = 0;
		goto out;
	}
	if (err < 0)
		goto out;
	s->rec_fd = err;
	err = room_read(s);
	for (i = 0; i < s->n_want && !err; i++)
		err = want_keep(s, &s->want[i], &s_err);
	if (!err)
		err = drop_unwanted(s);
out:
	/* The change itself is made: said, but not undone. */
	if (err && report)
		p_info("xlb: warning: cannot keep the next hops of backends resolved (%s/%s, neighbour table): %s; the change is made, and backends whose next hops have no entry have their packets dropped (drop_neigh_unresolved) until the next change of backends or `xlb attach`",
		       inst->dir, XLB_NEIGH_MAP, strerror(-err));
	else if (!err && report)
		wait_and_report(s, st, named);
	if (s)
		sync_free(s);
	return err ?: s_err;
}

void xlb_nexthops_close(struct xlb_nexthops *nx)
{
	xlb_rtnl_close(&nx->nl);
}
