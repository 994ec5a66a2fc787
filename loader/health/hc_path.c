// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The path of a probe packet (hc_path.h): bpf/hc.bpf.c loaded against the
 * instance's pinned maps, and per family a rule and a route of xlb's own
 * table that hand every marked packet to it, installed over rtnetlink.
 *
 * The routes go over the device that holds the instance's outer source
 * address, with that address as their preferred source: a probe leaves
 * from the address the backends already reach the balancer at, and its
 * socket sees that device's MTU less the outer header. The kernel hands
 * a packet to an LWT xmit program before it looks for a neighbour, so the
 * VIP needs none, and the balancer needs no route to the VIP of its own.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/fib_rules.h>
#include <linux/lwtunnel.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xlb.h"
#include "hc.h"
#include "report.h"
#include "hc_path.h"
#include "hc.skel.h"

#define HC_PROG_NAME	"xlb_hc"

struct xlb_hc_path {
	struct bpf_object *obj;
	int prog_fd;
	int nl;			/* rtnetlink socket */
};

/* ------------------------------------------------------------------ */
/* rtnetlink                                                            */

struct nl_msg {
	struct nlmsghdr h;
	union {
		struct rtmsg rt;
		struct fib_rule_hdr rule;
	};
	char attrs[512];
};

static void nl_init(struct nl_msg *m, __u16 type, __u16 flags, size_t body)
{
	memset(m, 0, sizeof(*m));
	m->h.nlmsg_len = NLMSG_LENGTH(body);
	m->h.nlmsg_type = type;
	m->h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
}

static struct nlattr *nl_put(struct nl_msg *m, __u16 type, const void *data,
			     size_t len)
{
	struct nlattr *a = (void *)((char *)m + NLMSG_ALIGN(m->h.nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	if (len)
		memcpy((char *)a + NLA_HDRLEN, data, len);
	m->h.nlmsg_len = NLMSG_ALIGN(m->h.nlmsg_len) + NLA_ALIGN(a->nla_len);
	return a;
}

static void nl_put32(struct nl_msg *m, __u16 type, __u32 v)
{
	nl_put(m, type, &v, sizeof(v));
}

static struct nlattr *nl_nest(struct nl_msg *m, __u16 type)
{
	return nl_put(m, type | NLA_F_NESTED, NULL, 0);
}

static void nl_nest_end(struct nl_msg *m, struct nlattr *nest)
{
	nest->nla_len = (char *)m + m->h.nlmsg_len - (char *)nest;
}

/* Send one request and read its acknowledgement: 0 or -errno, with the
 * kernel's own words (extended ack) in why when it gave some. */
static int nl_talk(int fd, struct nl_msg *m, char *why, size_t why_len)
{
	char buf[4096];
	struct nlmsghdr *h = (void *)buf;
	struct nlmsgerr *e;
	struct nlattr *a;
	ssize_t n;
	int len;

	why[0] = 0;
	if (send(fd, m, m->h.nlmsg_len, 0) < 0)
		return -errno;
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < 0)
		return -errno;
	if (!NLMSG_OK(h, (size_t)n) || h->nlmsg_type != NLMSG_ERROR)
		return -EPROTO;
	e = NLMSG_DATA(h);
	if (e->error && (h->nlmsg_flags & NLM_F_ACK_TLVS)) {
		/* The attributes follow the request, which the kernel
		 * echoes back whole unless NLM_F_CAPPED says it did not. */
		a = (void *)((char *)e + sizeof(*e) +
			     (h->nlmsg_flags & NLM_F_CAPPED ? 0 :
			      e->msg.nlmsg_len - NLMSG_HDRLEN));
		len = (char *)h + h->nlmsg_len - (char *)a;
		for (; len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
		       a->nla_len <= len;
		     len -= NLA_ALIGN(a->nla_len),
		     a = (void *)((char *)a + NLA_ALIGN(a->nla_len)))
			if ((a->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG)
				snprintf(why, why_len, " (%.*s)",
					 (int)(a->nla_len - NLA_HDRLEN),
					 (char *)a + NLA_HDRLEN);
	}
	return e->error;
}

static int nl_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int one = 1, fd;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	/* Without it the kernel's reason for a refusal is lost. */
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -errno;
	}
	return fd;
}

static const char *family_name(int family)
{
	return family == AF_INET ? "IPv4" : "IPv6";
}

/* The rule `fwmark XLB_HC_MARK_BASE/XLB_HC_MARK_MASK lookup XLB_HC_TABLE
 * pref XLB_HC_RULE_PRIO`, added or deleted. */
static void rule_msg(struct nl_msg *m, int family, bool add)
{
	nl_init(m, add ? RTM_NEWRULE : RTM_DELRULE,
		add ? NLM_F_CREATE | NLM_F_EXCL : 0, sizeof(m->rule));
	m->rule.family = family;
	m->rule.table = RT_TABLE_UNSPEC;	/* above 255: FRA_TABLE */
	m->rule.action = FR_ACT_TO_TBL;
	nl_put32(m, FRA_PRIORITY, XLB_HC_RULE_PRIO);
	nl_put32(m, FRA_FWMARK, XLB_HC_MARK_BASE);
	nl_put32(m, FRA_FWMASK, XLB_HC_MARK_MASK);
	nl_put32(m, FRA_TABLE, XLB_HC_TABLE);
}

/* Delete every copy of the rule (rules have no replace): returns 0 once
 * none is left. */
static int rules_del(int nl, int family, char *why, size_t why_len)
{
	struct nl_msg m;
	int err, i;

	/* Each delete takes one copy; a few runs killed at the wrong moment
	 * leave a few. */
	for (i = 0; i < 64; i++) {
		rule_msg(&m, family, false);
		err = nl_talk(nl, &m, why, why_len);
		if (err == -ENOENT)
			return 0;
		if (err)
			return err;
	}
	return -EEXIST;
}

/* The table's default route through prog (add), or away (delete). */
static void route_msg(struct nl_msg *m, int family, bool add, int ifindex,
		      const void *src, int prog_fd)
{
	struct nlattr *encap, *xmit;

	nl_init(m, add ? RTM_NEWROUTE : RTM_DELROUTE,
		add ? NLM_F_CREATE | NLM_F_REPLACE : 0, sizeof(m->rt));
	m->rt.rtm_family = family;
	m->rt.rtm_table = RT_TABLE_UNSPEC;	/* above 255: RTA_TABLE */
	m->rt.rtm_protocol = RTPROT_STATIC;
	nl_put32(m, RTA_TABLE, XLB_HC_TABLE);
	if (!add) {
		/* Any scope and type: the unreachable route goes too. */
		m->rt.rtm_scope = RT_SCOPE_NOWHERE;
		return;
	}
	/* As `ip route add default dev D` makes it: no gateway, on link. */
	m->rt.rtm_scope = family == AF_INET ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
	m->rt.rtm_type = RTN_UNICAST;
	nl_put32(m, RTA_OIF, ifindex);
	if (src)
		nl_put(m, RTA_PREFSRC, src, family == AF_INET ? 4 : 16);
	nl_put(m, RTA_ENCAP_TYPE, &(__u16){ LWTUNNEL_ENCAP_BPF }, sizeof(__u16));
	encap = nl_nest(m, RTA_ENCAP);
	xmit = nl_nest(m, LWT_BPF_XMIT);
	nl_put32(m, LWT_BPF_PROG_FD, prog_fd);
	nl_put(m, LWT_BPF_PROG_NAME, HC_PROG_NAME, sizeof(HC_PROG_NAME));
	nl_nest_end(m, xmit);
	nl_put32(m, LWT_BPF_XMIT_HEADROOM, XLB_HC_HEADROOM);
	nl_nest_end(m, encap);
}

/* The table's default route of a family whose probes cannot be sent:
 * `unreachable default`, so that they fail at once rather than leave
 * unencapsulated by the main table's routes (to a router that would hand
 * them back to the balancer, and to another backend than the one probed). */
static void route_unreachable_msg(struct nl_msg *m, int family)
{
	nl_init(m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, sizeof(m->rt));
	m->rt.rtm_family = family;
	m->rt.rtm_table = RT_TABLE_UNSPEC;
	m->rt.rtm_protocol = RTPROT_STATIC;
	m->rt.rtm_scope = RT_SCOPE_UNIVERSE;
	m->rt.rtm_type = RTN_UNREACHABLE;
	nl_put32(m, RTA_TABLE, XLB_HC_TABLE);
}

/* ------------------------------------------------------------------ */
/* The device                                                           */

struct hc_dev {
	int ifindex;
	char name[IF_NAMESIZE];
	bool has4, has6;	/* the outer source of the family is on it */
};

static bool addr_is(const struct sockaddr *sa, int family, const void *addr)
{
	if (!sa || sa->sa_family != family)
		return false;
	if (family == AF_INET)
		return !memcmp(&((const struct sockaddr_in *)sa)->sin_addr, addr, 4);
	return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, addr, 16);
}

static bool on_dev(const struct ifaddrs *all, const char *dev, int family,
		   const void *addr)
{
	const struct ifaddrs *i;

	for (i = all; i; i = i->ifa_next)
		if (!strcmp(i->ifa_name, dev) && addr_is(i->ifa_addr, family, addr))
			return true;
	return false;
}

static bool has_src6(const struct xlb_config *cfg)
{
	static const __be32 none6[4];

	return memcmp(cfg->src6, none6, sizeof(none6)) != 0;
}

/* The device holding the outer IPv4 source, or else the IPv6 one. */
static int find_dev(const struct xlb_config *cfg, struct hc_dev *dev)
{
	bool want6 = has_src6(cfg);
	struct ifaddrs *all, *i;
	const char *name = NULL;

	if (!cfg->src4 && !want6) {
		p_err("the instance has no outer source address: set src4 or src6 first (xlb config set)");
		return -ENOENT;
	}
	if (getifaddrs(&all)) {
		p_err("cannot list the addresses of this host: %s", strerror(errno));
		return -errno;
	}
	for (i = all; i && !name; i = i->ifa_next)
		if (cfg->src4 && addr_is(i->ifa_addr, AF_INET, &cfg->src4))
			name = i->ifa_name;
	for (i = all; i && !name; i = i->ifa_next)
		if (want6 && addr_is(i->ifa_addr, AF_INET6, cfg->src6))
			name = i->ifa_name;
	if (name) {
		snprintf(dev->name, sizeof(dev->name), "%s", name);
		dev->ifindex = if_nametoindex(name);
		dev->has4 = cfg->src4 && on_dev(all, name, AF_INET, &cfg->src4);
		dev->has6 = want6 && on_dev(all, name, AF_INET6, cfg->src6);
	}
	freeifaddrs(all);
	if (!name || !dev->ifindex) {
		p_err("no device of this host holds the instance's outer source address: probes leave from it");
		return -EADDRNOTAVAIL;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The program                                                          */

static int reuse_pinned(struct bpf_object *obj, const char *pin_dir,
			const char *name)
{
	char path[PATH_MAX];
	struct bpf_map *map;
	int fd, err;

	map = bpf_object__find_map_by_name(obj, name);
	if (!map)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s", pin_dir, name);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		err = -errno;
		p_err("cannot open %s: %s (no xlb instance in %s?)", path,
		      strerror(-err), pin_dir);
		return err;
	}
	err = bpf_map__reuse_fd(map, fd);
	close(fd);
	if (err)
		p_err("cannot use %s: %s", path, strerror(-err));
	return err;
}

static int load(struct xlb_hc_path *path, const char *pin_dir,
		const char *obj_path)
{
	DECLARE_LIBBPF_OPTS(bpf_object_open_opts, opts,
			    .object_name = "hc", .pin_root_path = pin_dir);
	struct bpf_program *prog;
	const void *bytes;
	size_t size;
	int err;

	if (obj_path) {
		path->obj = bpf_object__open_file(obj_path, &opts);
	} else {
		/* Embedded in the binary, as xlb.bpf.o is: nothing to find
		 * on disk. */
		bytes = hc__elf_bytes(&size);
		path->obj = bpf_object__open_mem(bytes, size, &opts);
	}
	err = libbpf_get_error(path->obj);
	if (err) {
		path->obj = NULL;
		p_err("cannot open the probe program %s: %s",
		      obj_path ? obj_path : "(built in)", strerror(-err));
		return err;
	}
	err = reuse_pinned(path->obj, pin_dir, XLB_MAP_CONFIG) ?:
	      reuse_pinned(path->obj, pin_dir, XLB_MAP_BACKENDS);
	if (err)
		return err;
	err = bpf_object__load(path->obj);
	if (err) {
		p_err("cannot load the probe program: %s", strerror(-err));
		return err;
	}
	prog = bpf_object__find_program_by_name(path->obj, HC_PROG_NAME);
	if (!prog) {
		p_err("the probe program has no %s", HC_PROG_NAME);
		return -ENOENT;
	}
	path->prog_fd = bpf_program__fd(prog);
	return 0;
}

static int read_config(const struct xlb_hc_path *path, struct xlb_config *cfg)
{
	struct bpf_map *map = bpf_object__find_map_by_name(path->obj,
							    XLB_MAP_CONFIG);
	__u32 zero = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(map), &zero, cfg)) {
		p_err("cannot read the instance's %s: %s", XLB_MAP_CONFIG,
		      strerror(errno));
		return -errno;
	}
	return 0;
}

/* ------------------------------------------------------------------ */

/* The rule to the table, replacing any copy a killed run left. */
static int install_rule(int nl, int family, char *why, size_t why_len)
{
	struct nl_msg m;
	int err;

	err = rules_del(nl, family, why, why_len);
	if (err)
		return err;
	rule_msg(&m, family, true);
	return nl_talk(nl, &m, why, why_len);
}

/*
 * The probe path of one family (the family of the VIPs probed): the route
 * through the program, then the rule. A family the kernel refuses (IPv6
 * disabled on the device, say) is skipped with a note: its probes are
 * then sent nowhere (an unreachable route, where the kernel takes one),
 * and each reports its failure as a result. Returns 0 when the family's
 * probes can be sent, or the kernel's -errno.
 */
static int install_family(struct xlb_hc_path *path, int family,
			  const struct hc_dev *dev, const void *src)
{
	const char *what = "route";
	char why[256];
	struct nl_msg m;
	int err;

	route_msg(&m, family, true, dev->ifindex, src, path->prog_fd);
	err = nl_talk(path->nl, &m, why, sizeof(why));
	if (!err) {
		what = "rule";
		err = install_rule(path->nl, family, why, sizeof(why));
		if (!err)
			return 0;
	}
	p_info("xlb: no probe path for %s VIPs: cannot add its %s (table %u over %s): %s%s; their backends cannot be probed, each probe fails (no route to host)",
	       family_name(family), what, XLB_HC_TABLE, dev->name,
	       strerror(-err), why);
	route_unreachable_msg(&m, family);
	if (!nl_talk(path->nl, &m, why, sizeof(why)))
		install_rule(path->nl, family, why, sizeof(why));
	return err;
}

static void remove_family(int nl, int family)
{
	char why[256];
	struct nl_msg m;

	rules_del(nl, family, why, sizeof(why));
	route_msg(&m, family, false, 0, NULL, -1);
	nl_talk(nl, &m, why, sizeof(why));
}

int xlb_hc_path_install(const char *pin_dir, const char *obj_path,
			struct xlb_hc_path **out)
{
	struct xlb_hc_path *path;
	struct xlb_config cfg;
	struct hc_dev dev = {};
	int err, err4;

	path = calloc(1, sizeof(*path));
	if (!path)
		return -ENOMEM;
	path->nl = -1;
	err = load(path, pin_dir, obj_path) ?: read_config(path, &cfg) ?:
	      find_dev(&cfg, &dev);
	if (err)
		goto fail;
	/* The program drops a probe to a backend of a family without an
	 * outer source (drop_no_source): say so once here. */
	if (!cfg.src4)
		p_info("xlb: the instance has no outer IPv4 source: probes of IPv4 backends fail until `xlb config set src4`");
	if (!has_src6(&cfg))
		p_info("xlb: the instance has no outer IPv6 source: probes of IPv6 backends fail until `xlb config set src6`");
	path->nl = nl_open();
	if (path->nl < 0) {
		err = path->nl;
		p_err("cannot open rtnetlink: %s", strerror(-err));
		goto fail;
	}
	err4 = install_family(path, AF_INET, &dev, dev.has4 ? &cfg.src4 : NULL);
	err = install_family(path, AF_INET6, &dev, dev.has6 ? cfg.src6 : NULL);
	if (err4 && err) {
		p_err("cannot install the probe path over %s for either family (the notes above say why)",
		      dev.name);
		goto fail;
	}
	*out = path;
	return 0;
fail:
	xlb_hc_path_remove(path);
	return err;
}

void xlb_hc_path_remove(struct xlb_hc_path *path)
{
	if (!path)
		return;
	if (path->nl >= 0) {
		remove_family(path->nl, AF_INET);
		remove_family(path->nl, AF_INET6);
		close(path->nl);
	}
	bpf_object__close(path->obj);
	free(path);
}
