// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A backend host's setup, as a plan of steps and its commit (host.h).
 *
 * The plan compares what is wanted with what the namespace has and what
 * the record says an earlier setup changed, and lists the steps that make
 * the difference, each with its inverse; everything that can be refused is
 * refused there, before anything is written. A teardown is the plan of
 * wanting nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <linux/neighbour.h>

#include "addr.h"
#include "host.h"
#include "host_decap.h"
#include "host_record.h"
#include "neigh.h"
#include "report.h"
#include "xdp_frags.h"

enum step_kind {
	STEP_TUNNELS_ADD,	/* the two devices, up, their sysctls */
	STEP_SYSCTL,		/* key: from -> to */
	STEP_VIP_ADD,		/* a VIP on lo */
	STEP_NEIGH_ADD,		/* a managed entry for a fleet member */
	STEP_DECAP_DROP,	/* pins of a program no longer attached */
	STEP_DECAP_INSTALL,	/* the program, filled, pinned, attached */
	STEP_DECAP_MAPS,	/* the pinned program's maps rewritten */
	STEP_DECAP_REMOVE,	/* the program detached, its pins removed */
	STEP_TUNNELS_DEL,
	STEP_NEIGH_DEL,
	STEP_VIP_DEL,
};

struct step {
	enum step_kind kind;
	union {
		struct {
			char key[XLB_SYSCTL_KEY_LEN];
			char from[XLB_SYSCTL_VALUE_LEN];
			char to[XLB_SYSCTL_VALUE_LEN];
		} sysctl;
		struct xlb_host_addr vip;
		struct xlb_nexthop_state nh;
	};
};

/* At most: the sysctls, each VIP added or removed, each neighbour made or
 * removed, and the decapsulation's few. */
#define MAX_STEPS	(XLB_HOST_MAX_SYSCTLS + 2 * XLB_DECAP_ADDRS_MAX + \
			 2 * XLB_DECAP_PREFIXES_MAX + 8)

struct plan {
	const struct xlb_host_record *old;	/* NULL: no setup yet */
	struct xlb_host_record next;		/* the record once done */
	struct xlb_host_record undo;		/* the old one's, to undo */
	struct xlb_host_record during;		/* next and undo: meanwhile */
	int ifindex, lo_ifindex;
	struct xlb_host_addr tunnel[XLB_DECAP_ADDRS_MAX];	/* dev's + locals */
	__u32 n_tunnel;
	struct xlb_host_addr lo[XLB_DECAP_ADDRS_MAX];	/* lo's addresses */
	__u32 n_lo;
	struct xlb_decap_fds fds;		/* the pinned program in use */
	char decap_dir[PATH_MAX];		/* ... pinned there */
	struct xlb_decap_content have, want;
	struct xlb_nexthops nx;			/* next hops asked, made */
	struct step steps[MAX_STEPS];
	__u32 n_steps;
};

/* The sysctls a setup wants, by the part that needs them. */
struct want_sysctl {
	char key[XLB_SYSCTL_KEY_LEN];
	const char *value;
	bool optional;		/* IPv6's, absent where IPv6 is off */
};

static struct step *add_step(struct plan *p, enum step_kind kind)
{
	struct step *s = &p->steps[p->n_steps++];

	memset(s, 0, sizeof(*s));
	s->kind = kind;
	return s;
}

static const char *addr_s(const struct xlb_host_addr *a, char *buf)
{
	return xlb_addr_str(a->addr, a->family, buf, XLB_ADDR_STRLEN);
}

static bool addr_in(const struct xlb_host_addr *set, __u32 n,
		    const struct xlb_host_addr *a)
{
	__u32 i;

	for (i = 0; i < n; i++)
		if (xlb_host_addr_eq(&set[i], a))
			return true;
	return false;
}

/* ---- opening ---- */

static int lock(int fd, bool write)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	int i, tries = XLB_HOST_LOCK_WAIT_S * 20;

	for (i = 0; i < tries; i++) {
		if (!flock(fd, (write ? LOCK_EX : LOCK_SH) | LOCK_NB))
			return 0;
		if (errno != EWOULDBLOCK)
			return -errno;
		nanosleep(&ts, NULL);
	}
	return -EWOULDBLOCK;
}

/* A record that is not this namespace's: its pins go with it. */
static void drop_stale(struct xlb_host *h)
{
	if (h->rec.spec.decap == XLB_HOST_DECAP_XDP && h->rec.pin_dir[0])
		xlb_decap_remove(h->rec.pin_dir, 0);
	unlink(h->record_path);
	p_info("xlb: note: removed the record of a network namespace that is gone (%s); its inode is this one's now",
	       h->record_path);
	h->have_record = false;
	h->stale = false;
}

int xlb_host_open(struct xlb_host **host, bool write, bool verbose)
{
	struct xlb_host *h;
	char why[256];
	int err;

	h = calloc(1, sizeof(*h));
	if (!h) {
		p_err("out of memory");
		return -ENOMEM;
	}
	h->lock_fd = -1;
	h->nl = (struct xlb_rtnl)XLB_RTNL_INIT;
	h->verbose = verbose;
	err = xlb_host_netns(&h->netns_inode, &h->netns_cookie);
	if (err) {
		p_err("cannot tell which network namespace this is (/proc/self/ns/net): %s",
		      strerror(-err));
		goto fail;
	}
	snprintf(h->record_path, sizeof(h->record_path), "%s/host-ns%llu.json",
		 XLB_HOST_RUN_DIR, (unsigned long long)h->netns_inode);
	snprintf(h->pin_dir, sizeof(h->pin_dir), "%s/ns%llu", XLB_HOST_PIN_ROOT,
		 (unsigned long long)h->netns_inode);
	if (write && mkdir(XLB_HOST_RUN_DIR, 0755) && errno != EEXIST) {
		err = -errno;
		p_err("cannot create %s: %s", XLB_HOST_RUN_DIR, strerror(-err));
		goto fail;
	}
	/* One lock for the directory: xlb host commands of every namespace
	 * take turns, each one short. */
	h->lock_fd = open(XLB_HOST_RUN_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (h->lock_fd < 0 && (write || errno != ENOENT)) {
		err = -errno;
		p_err("cannot open %s: %s", XLB_HOST_RUN_DIR, strerror(-err));
		goto fail;
	}
	if (h->lock_fd < 0) {
		*host = h;
		return 0;
	}
	err = lock(h->lock_fd, write);
	if (err == -EWOULDBLOCK)
		p_err("another xlb host command has held %s for more than %d s",
		      XLB_HOST_RUN_DIR, XLB_HOST_LOCK_WAIT_S);
	else if (err)
		p_err("cannot lock %s: %s", XLB_HOST_RUN_DIR, strerror(-err));
	if (err)
		goto fail;
	err = xlb_host_record_read(h->record_path, &h->rec, why, sizeof(why));
	if (err == -ENOENT) {
		*host = h;
		return 0;
	}
	if (err == -EINVAL) {
		p_err("%s is not a record of xlb host setup (%s): remove it, and undo by hand what it recorded",
		      h->record_path, why);
		goto fail;
	}
	if (err) {
		p_err("cannot read %s: %s", h->record_path, strerror(-err));
		goto fail;
	}
	h->have_record = true;
	h->stale = h->rec.netns_cookie && h->netns_cookie &&
		   h->rec.netns_cookie != h->netns_cookie;
	if (h->stale && write)
		drop_stale(h);
	*host = h;
	return 0;
fail:
	xlb_host_close(h);
	return err;
}

void xlb_host_close(struct xlb_host *h)
{
	if (!h)
		return;
	if (h->lock_fd >= 0)
		close(h->lock_fd);
	xlb_rtnl_close(&h->nl);
	free(h);
}

int xlb_host_decap_open(const struct xlb_host *h, struct xlb_decap_fds *fds)
{
	int err;

	if (!h->have_record || h->stale) {
		p_err("this network namespace has no xlb host setup (`xlb host setup DEV ...`)");
		return -ENOENT;
	}
	if (h->rec.spec.decap != XLB_HOST_DECAP_XDP) {
		p_err("the host decapsulates with the kernel's tunnel devices (--decap kernel): no program, no counters (`ip -s link show %s`)",
		      XLB_HOST_IPIP_DEV);
		return -ENOENT;
	}
	err = xlb_decap_open(h->rec.pin_dir, fds);
	if (err)
		p_err("cannot open the program pinned in %s: %s", h->rec.pin_dir,
		      err == -EPROTO ? "its maps are another build's" : strerror(-err));
	return err;
}

/* ---- the plan ---- */

static int sysctl_find(const struct xlb_host_record *r, const char *key)
{
	__u32 i;

	for (i = 0; r && i < r->n_sysctls; i++)
		if (!strcmp(r->sysctls[i].key, key))
			return i;
	return -1;
}

static void want_set(struct want_sysctl *w, __u32 *n, const char *family,
		     const char *dev, const char *name, const char *value)
{
	char d[IF_NAMESIZE];
	size_t i;

	/* A device name's dots are slashes in the sysctl's path. */
	for (i = 0; dev[i] && i + 1 < sizeof(d); i++)
		d[i] = dev[i] == '.' ? '/' : dev[i];
	d[i] = '\0';
	snprintf(w[*n].key, sizeof(w[*n].key), "net/%s/conf/%s/%s", family, d, name);
	w[*n].value = value;
	w[*n].optional = !strcmp(family, "ipv6");
	(*n)++;
}

/* The sysctls spec wants, recorded (the device's own: not recorded). */
static __u32 wanted_sysctls(const struct xlb_host_spec *s, struct want_sysctl *w)
{
	__u32 n = 0;

	if (!s)
		return 0;
	/* Answer ARP on DEV only for DEV's own addresses, and never take a
	 * VIP as an ARP request's source: the VIPs are the balancers'. */
	want_set(w, &n, "ipv4", s->dev, "arp_ignore", "1");
	want_set(w, &n, "ipv4", s->dev, "arp_announce", "2");
	/* The second chance's FIB lookup is made as from lo, so that the
	 * receiving device itself never forwards (docs/second-chance.md). */
	if (s->decap == XLB_HOST_DECAP_XDP && s->n_fleet) {
		want_set(w, &n, "ipv4", "lo", "forwarding", "1");
		want_set(w, &n, "ipv6", "lo", "forwarding", "1");
	}
	/* The kernel applies the larger of all's and the device's. */
	if (s->decap == XLB_HOST_DECAP_KERNEL)
		want_set(w, &n, "ipv4", "all", "rp_filter", "0");
	return n;
}

/* The tunnel devices' own: they go with the devices, unrecorded. The
 * decapsulated packet arrives on xlb-ipip, which has no address, while its
 * client is routed via DEV: reverse-path filtering would drop it. Neither
 * device forwards. */
static __u32 tunnel_sysctls(struct want_sysctl *w)
{
	__u32 n = 0;

	want_set(w, &n, "ipv4", XLB_HOST_IPIP_DEV, "rp_filter", "0");
	want_set(w, &n, "ipv4", XLB_HOST_IPIP_DEV, "forwarding", "0");
	want_set(w, &n, "ipv4", XLB_HOST_IP6TNL_DEV, "forwarding", "0");
	want_set(w, &n, "ipv6", XLB_HOST_IP6TNL_DEV, "forwarding", "0");
	return n;
}

static int plan_sysctl(struct plan *p, const struct want_sysctl *w,
		       bool record)
{
	char cur[XLB_SYSCTL_VALUE_LEN], name[XLB_SYSCTL_KEY_LEN];
	struct xlb_host_sysctl *r;
	struct step *s;
	int err, i;

	err = xlb_sysctl_read(w->key, cur, sizeof(cur));
	if (err == -ENOENT && w->optional)
		return 0;
	if (err) {
		p_err("cannot read sysctl %s: %s",
		      xlb_sysctl_name(w->key, name, sizeof(name)), strerror(-err));
		return err;
	}
	i = sysctl_find(p->old, w->key);
	if (record && i >= 0) {
		p->next.sysctls[p->next.n_sysctls++] = p->old->sysctls[i];
	} else if (record && strcmp(cur, w->value)) {
		r = &p->next.sysctls[p->next.n_sysctls++];
		snprintf(r->key, sizeof(r->key), "%s", w->key);
		snprintf(r->old, sizeof(r->old), "%s", cur);
	}
	if (!strcmp(cur, w->value))
		return 0;
	s = add_step(p, STEP_SYSCTL);
	snprintf(s->sysctl.key, sizeof(s->sysctl.key), "%s", w->key);
	snprintf(s->sysctl.from, sizeof(s->sysctl.from), "%s", cur);
	snprintf(s->sysctl.to, sizeof(s->sysctl.to), "%s", w->value);
	return 0;
}

/* Recorded sysctls no longer wanted go back to their old values. */
static int plan_sysctl_restores(struct plan *p)
{
	char cur[XLB_SYSCTL_VALUE_LEN];
	const struct xlb_host_sysctl *r;
	struct step *s;
	__u32 i;
	int err;

	for (i = 0; p->old && i < p->old->n_sysctls; i++) {
		r = &p->old->sysctls[i];
		if (sysctl_find(&p->next, r->key) >= 0)
			continue;
		p->undo.sysctls[p->undo.n_sysctls++] = *r;
		err = xlb_sysctl_read(r->key, cur, sizeof(cur));
		/* Gone with its device: nothing to restore. */
		if (err == -ENOENT || (!err && !strcmp(cur, r->old)))
			continue;
		if (err)
			return err;
		s = add_step(p, STEP_SYSCTL);
		snprintf(s->sysctl.key, sizeof(s->sysctl.key), "%s", r->key);
		snprintf(s->sysctl.from, sizeof(s->sysctl.from), "%s", cur);
		snprintf(s->sysctl.to, sizeof(s->sysctl.to), "%s", r->old);
	}
	return 0;
}

static void plan_vips(struct plan *p, const struct xlb_host_spec *spec)
{
	const struct xlb_host_addr *a;
	__u32 i;

	for (i = 0; spec && i < spec->n_vips; i++) {
		a = &spec->vips[i];
		if (!addr_in(p->lo, p->n_lo, a))
			add_step(p, STEP_VIP_ADD)->vip = *a;
		/* One the operator had on lo stays his. */
		if (!addr_in(p->lo, p->n_lo, a) ||
		    (p->old && addr_in(p->old->vips_added, p->old->n_vips_added, a)))
			p->next.vips_added[p->next.n_vips_added++] = *a;
	}
}

static void plan_vip_removals(struct plan *p)
{
	const struct xlb_host_addr *a;
	__u32 i;

	for (i = 0; p->old && i < p->old->n_vips_added; i++) {
		a = &p->old->vips_added[i];
		if (addr_in(p->next.vips_added, p->next.n_vips_added, a))
			continue;
		p->undo.vips_added[p->undo.n_vips_added++] = *a;
		if (addr_in(p->lo, p->n_lo, a))
			add_step(p, STEP_VIP_DEL)->vip = *a;
	}
}

static int neigh_find(const struct xlb_host_neigh *set, __u32 n,
		      const struct xlb_nexthop_state *nh)
{
	struct xlb_host_addr a = { .family = nh->family };
	__u32 i;

	memcpy(a.addr, nh->addr, sizeof(a.addr));
	for (i = 0; i < n; i++)
		if (set[i].ifindex == nh->ifindex && xlb_host_addr_eq(&set[i].addr, &a))
			return i;
	return -1;
}

static void neigh_record(struct xlb_host_record *r,
			 const struct xlb_nexthop_state *nh)
{
	struct xlb_host_neigh *n = &r->neigh[r->n_neigh++];

	memset(n, 0, sizeof(*n));
	memcpy(n->addr.addr, nh->addr, sizeof(n->addr.addr));
	n->addr.family = nh->family;
	n->ifindex = nh->ifindex;
	if (!if_indextoname(nh->ifindex, n->dev))
		snprintf(n->dev, sizeof(n->dev), "if%d", nh->ifindex);
}

/*
 * The next hop of each fleet member named by its own address (not this
 * host): a managed entry, so that the forward finds its MAC address
 * (XDP cannot resolve one, and entries learned from traffic age out while
 * XDP's frames do not count as use). An entry the operator made
 * permanent, or managed himself, is his and left alone.
 */
static int plan_neighbours(struct plan *p, const struct xlb_host_spec *spec)
{
	char a[XLB_ADDR_STRLEN];
	struct xlb_nexthop_state nh;
	struct xlb_config none = {};
	const struct xlb_host_prefix *f;
	struct xlb_host_addr self;
	bool recorded;
	__u32 i;
	int err;

	for (i = 0; spec && spec->decap == XLB_HOST_DECAP_XDP && i < spec->n_fleet; i++) {
		f = &spec->fleet[i];
		memset(&self, 0, sizeof(self));
		memcpy(self.addr, f->addr, sizeof(self.addr));
		self.family = f->family;
		if (!xlb_host_prefix_single(f) || addr_in(p->tunnel, p->n_tunnel, &self))
			continue;
		err = xlb_nexthop_get(&p->nx, &none, f->addr, f->family, &nh);
		if (err == -ENETUNREACH) {
			p_info("xlb: note: fleet member %s has no route from here: packets for it are dropped (drop_no_route)",
			       addr_s(&self, a));
			continue;
		}
		if (err) {
			p_err("cannot look up the route to %s: %s", addr_s(&self, a),
			      strerror(-err));
			return err;
		}
		if (neigh_find(p->next.neigh, p->next.n_neigh, &nh) >= 0)
			continue;
		recorded = p->old && neigh_find(p->old->neigh, p->old->n_neigh, &nh) >= 0;
		if (!recorded && nh.nud & (NUD_PERMANENT | NUD_NOARP))
			continue;
		if (!recorded && nh.ext_flags & NTF_EXT_MANAGED)
			continue;
		neigh_record(&p->next, &nh);
		if (!(nh.ext_flags & NTF_EXT_MANAGED) || !nh.nud)
			add_step(p, STEP_NEIGH_ADD)->nh = nh;
	}
	return 0;
}

static void plan_neighbour_removals(struct plan *p)
{
	const struct xlb_host_neigh *n;
	struct xlb_nexthop_state nh;
	__u32 i;

	for (i = 0; p->old && i < p->old->n_neigh; i++) {
		n = &p->old->neigh[i];
		memset(&nh, 0, sizeof(nh));
		memcpy(nh.addr, n->addr.addr, sizeof(nh.addr));
		nh.family = n->addr.family;
		nh.ifindex = n->ifindex;
		if (neigh_find(p->next.neigh, p->next.n_neigh, &nh) >= 0)
			continue;
		p->undo.neigh[p->undo.n_neigh++] = *n;
		add_step(p, STEP_NEIGH_DEL)->nh = nh;
	}
}

static void prefix_key(const struct xlb_host_prefix *p, struct xlb_decap_prefix *k)
{
	memset(k, 0, sizeof(*k));
	k->prefixlen = XLB_DECAP_PREFIX_BASE + p->len;
	k->family = p->family;
	memcpy(k->addr, p->addr, sizeof(k->addr));
}

static void content_addr(struct xlb_decap_content *c,
			 const struct xlb_host_addr *a, __u32 flag)
{
	struct xlb_decap_addr k = { .family = a->family };
	__u32 i;

	memcpy(k.addr, a->addr, sizeof(k.addr));
	for (i = 0; i < c->n_addrs; i++) {
		if (!memcmp(&c->addrs[i], &k, sizeof(k))) {
			c->addr_flags[i] |= flag;
			return;
		}
	}
	c->addrs[c->n_addrs] = k;
	c->addr_flags[c->n_addrs++] = flag;
}

/* What the program's maps hold for spec (the capacities are checked). */
static int content_build(struct plan *p, const struct xlb_host_spec *s,
			 struct xlb_decap_content *c)
{
	int ifindex;
	__u32 i;

	memset(c, 0, sizeof(*c));
	if (p->n_tunnel + s->n_vips > XLB_DECAP_ADDRS_MAX) {
		p_err("%u tunnel addresses and VIPs: the program holds %u",
		      p->n_tunnel + s->n_vips, XLB_DECAP_ADDRS_MAX);
		return -E2BIG;
	}
	for (i = 0; i < p->n_tunnel; i++)
		content_addr(c, &p->tunnel[i], XLB_DECAP_ADDR_TUNNEL);
	for (i = 0; i < s->n_vips; i++)
		content_addr(c, &s->vips[i], XLB_DECAP_ADDR_VIP);
	for (i = 0; i < s->n_fleet; i++)
		prefix_key(&s->fleet[i], &c->fleet[c->n_fleet++]);
	for (i = 0; i < s->n_balancers; i++)
		prefix_key(&s->balancers[i], &c->lbs[c->n_lbs++]);
	for (i = 0; i < s->n_egress; i++) {
		ifindex = if_nametoindex(s->egress[i]);
		if (!ifindex) {
			p_err("bad --egress '%s': no such device", s->egress[i]);
			return -ENODEV;
		}
		c->out[c->n_out++] = ifindex;
	}
	c->cfg.gue_port = htons(s->gue_port);
	c->cfg.flags = s->n_balancers ? XLB_DECAP_F_CHECK_SOURCE : 0;
	return 0;
}

static int refuse_other_program(const char *dev, __u32 id)
{
	p_err("%s already runs an XDP program (id %u): remove it first (ip link set dev %s xdp off)",
	      dev, id, dev);
	return -EEXIST;
}

static int plan_xdp(struct plan *p, const struct xlb_host_spec *s)
{
	const char *mode;
	__u32 attached, pinned;
	int err;

	err = content_build(p, s, &p->want) ?:
	      xlb_decap_attached(p->ifindex, &attached, &mode);
	if (err)
		return err;
	/* The program of the setup before, or left pinned without a
	 * record (a record removed by hand). */
	snprintf(p->decap_dir, sizeof(p->decap_dir), "%s",
		 p->old ? p->old->pin_dir : p->next.pin_dir);
	err = xlb_decap_open(p->decap_dir, &p->fds);
	if (err == -EPROTO) {
		p_err("the program pinned in %s is another build's: `xlb host teardown %s` first",
		      p->decap_dir, s->dev);
		return err;
	}
	if (err && err != -ENOENT) {
		p_err("cannot open the program pinned in %s: %s", p->decap_dir,
		      strerror(-err));
		return err;
	}
	pinned = p->fds.prog >= 0 ? xlb_decap_prog_id(p->fds.prog) : 0;
	if (pinned && attached == pinned) {
		err = xlb_decap_read(&p->fds, &p->have);
		if (err) {
			p_err("cannot read the maps pinned in %s: %s",
			      p->decap_dir, strerror(-err));
			return err;
		}
		if (!xlb_decap_equal(&p->have, &p->want))
			add_step(p, STEP_DECAP_MAPS);
		return 0;
	}
	if (attached)
		return refuse_other_program(s->dev, attached);
	/* Pinned, but detached meanwhile (or its device made anew): the
	 * pins are a program no device runs. */
	if (pinned)
		add_step(p, STEP_DECAP_DROP);
	add_step(p, STEP_DECAP_INSTALL);
	return 0;
}

static int plan_kernel(struct plan *p)
{
	struct want_sysctl w[8];
	bool ipip = if_nametoindex(XLB_HOST_IPIP_DEV),
	     ip6tnl = if_nametoindex(XLB_HOST_IP6TNL_DEV);
	__u32 i, n;
	int err;

	p->next.tunnels = true;
	if (p->old && p->old->tunnels && ipip && ip6tnl) {
		n = tunnel_sysctls(w);
		for (i = 0; i < n; i++) {
			err = plan_sysctl(p, &w[i], false);
			if (err)
				return err;
		}
		return 0;
	}
	if ((ipip || ip6tnl) && !(p->old && p->old->tunnels)) {
		p_err("%s exists already, made by hand or by another tool: remove it first",
		      ipip ? XLB_HOST_IPIP_DEV : XLB_HOST_IP6TNL_DEV);
		return -EEXIST;
	}
	/* Both made (again: one of ours was gone, the other goes first). */
	add_step(p, STEP_TUNNELS_ADD);
	return 0;
}

/* The checks of spec against the namespace, and its tunnel addresses. */
static int plan_check(struct xlb_host *h, struct plan *p,
		      const struct xlb_host_spec *s)
{
	char a[XLB_ADDR_STRLEN];
	__u32 n, i;
	int err;

	if (p->old && strcmp(p->old->spec.dev, s->dev)) {
		p_err("already set up on %s: `xlb host teardown %s` first",
		      p->old->spec.dev, p->old->spec.dev);
		return -EEXIST;
	}
	if (p->old && p->old->spec.decap != s->decap) {
		p_err("already set up on %s with --decap %s: `xlb host teardown %s` first",
		      s->dev, xlb_host_decap_name(p->old->spec.decap), s->dev);
		return -EEXIST;
	}
	p->ifindex = if_nametoindex(s->dev);
	if (!p->ifindex) {
		p_err("no device %s", s->dev);
		return -ENODEV;
	}
	if (!strcmp(s->dev, "lo")) {
		p_err("the device must be the one the balancers send to, not lo");
		return -EINVAL;
	}
	err = xlb_host_addrs(&h->nl, p->ifindex, true, p->tunnel,
			     XLB_DECAP_ADDRS_MAX, &n);
	if (err) {
		p_err("cannot list the addresses of %s: %s", s->dev, strerror(-err));
		return err;
	}
	for (i = 0; i < s->n_locals; i++) {
		bool local;

		/* Only the host's own: the program takes what arrives for a
		 * tunnel address as this host's. */
		err = xlb_host_addr_local(&h->nl, &s->locals[i], &local);
		if (err) {
			p_err("cannot look up --local %s: %s", addr_s(&s->locals[i], a),
			      strerror(-err));
			return err;
		}
		if (!local) {
			p_err("--local %s is not an address of this host", addr_s(&s->locals[i], a));
			return -EINVAL;
		}
		if (addr_in(p->tunnel, n, &s->locals[i]))
			continue;
		if (n == XLB_DECAP_ADDRS_MAX) {
			p_err("more than %u tunnel addresses (%s's and --local)",
			      XLB_DECAP_ADDRS_MAX, s->dev);
			return -E2BIG;
		}
		p->tunnel[n++] = s->locals[i];
	}
	p->n_tunnel = n;
	if (s->decap == XLB_HOST_DECAP_XDP && !n) {
		p_err("%s has no address of global scope and no --local is given: the balancers would have no address to send to",
		      s->dev);
		return -EINVAL;
	}
	for (i = 0; i < s->n_vips; i++) {
		if (addr_in(p->tunnel, n, &s->vips[i])) {
			p_err("VIP %s is a tunnel address of this host (on %s or --local): a VIP must be an address of its own",
			      addr_s(&s->vips[i], a), s->dev);
			return -EINVAL;
		}
	}
	return 0;
}

static int plan_build(struct xlb_host *h, const struct xlb_host_spec *s,
		      struct plan *p)
{
	struct want_sysctl w[XLB_HOST_MAX_SYSCTLS];
	__u32 i, n;
	int err;

	p->old = h->have_record ? &h->rec : NULL;
	memset(&p->fds, 0xff, sizeof(p->fds));
	p->lo_ifindex = if_nametoindex("lo");
	err = p->lo_ifindex ? 0 : -ENODEV;
	if (!err)
		err = xlb_host_addrs(&h->nl, p->lo_ifindex, false, p->lo,
				     XLB_DECAP_ADDRS_MAX, &p->n_lo);
	if (err) {
		p_err("cannot list the addresses of lo: %s", strerror(-err));
		return err;
	}
	if (s) {
		err = plan_check(h, p, s);
		if (err)
			return err;
		p->next.netns_cookie = h->netns_cookie;
		p->next.ifindex = p->ifindex;
		p->next.spec = *s;
		if (s->decap == XLB_HOST_DECAP_XDP)
			snprintf(p->next.pin_dir, sizeof(p->next.pin_dir), "%s",
				 h->pin_dir);
	} else {
		p->ifindex = if_nametoindex(p->old->spec.dev);
	}

	/* What is wanted, in the order it is made: the kernel's tunnel
	 * devices first, so that a kernel without the drivers fails before
	 * anything has changed; the sysctls, the VIPs, the neighbours; then
	 * decap.bpf.o, which needs them all. */
	if (s && s->decap == XLB_HOST_DECAP_KERNEL) {
		err = plan_kernel(p);
		if (err)
			return err;
	}
	n = wanted_sysctls(s, w);
	for (i = 0; i < n; i++) {
		err = plan_sysctl(p, &w[i], true);
		if (err)
			return err;
	}
	plan_vips(p, s);
	err = plan_neighbours(p, s);
	if (!err && s && s->decap == XLB_HOST_DECAP_XDP)
		err = plan_xdp(p, s);
	if (err)
		return err;

	/* What is no longer wanted, in the reverse order. */
	if (!s && p->old->spec.decap == XLB_HOST_DECAP_XDP)
		add_step(p, STEP_DECAP_REMOVE);
	if (!s && p->old->tunnels)
		add_step(p, STEP_TUNNELS_DEL);
	plan_neighbour_removals(p);
	plan_vip_removals(p);
	return plan_sysctl_restores(p);
}

/* While a setup is carried out the record holds the next one's changes
 * and the old ones still to be undone. */
static void plan_during(struct plan *p)
{
	struct xlb_host_record *d = &p->during;
	const struct xlb_host_record *u = &p->undo;
	__u32 i;

	*d = p->next;
	for (i = 0; i < u->n_sysctls; i++)
		d->sysctls[d->n_sysctls++] = u->sysctls[i];
	for (i = 0; i < u->n_vips_added; i++)
		d->vips_added[d->n_vips_added++] = u->vips_added[i];
	for (i = 0; i < u->n_neigh; i++)
		d->neigh[d->n_neigh++] = u->neigh[i];
}

/* ---- the commit ---- */

static void say(const struct xlb_host *h, const struct step *s, bool undo)
{
	char a[XLB_ADDR_STRLEN], name[XLB_SYSCTL_KEY_LEN], dev[IF_NAMESIZE];
	struct xlb_host_addr nh;
	const char *verb = undo ? "undo: " : "";

	if (!h->verbose)
		return;
	switch (s->kind) {
	case STEP_SYSCTL:
		p_info("xlb: %ssysctl %s %s -> %s", verb,
		       xlb_sysctl_name(s->sysctl.key, name, sizeof(name)),
		       undo ? s->sysctl.to : s->sysctl.from,
		       undo ? s->sysctl.from : s->sysctl.to);
		return;
	case STEP_VIP_ADD:
	case STEP_VIP_DEL:
		p_info("xlb: %s%s %s on lo", verb,
		       (s->kind == STEP_VIP_ADD) != undo ? "add" : "delete",
		       addr_s(&s->vip, a));
		return;
	case STEP_NEIGH_ADD:
	case STEP_NEIGH_DEL:
		memcpy(nh.addr, s->nh.addr, sizeof(nh.addr));
		nh.family = s->nh.family;
		if (!if_indextoname(s->nh.ifindex, dev))
			snprintf(dev, sizeof(dev), "if%d", s->nh.ifindex);
		p_info("xlb: %s%s neighbour %s dev %s", verb,
		       (s->kind == STEP_NEIGH_ADD) != undo ? "manage" : "delete",
		       addr_s(&nh, a), dev);
		return;
	case STEP_TUNNELS_ADD:
	case STEP_TUNNELS_DEL:
		p_info("xlb: %s%s %s and %s", verb,
		       (s->kind == STEP_TUNNELS_ADD) != undo ? "add" : "delete",
		       XLB_HOST_IPIP_DEV, XLB_HOST_IP6TNL_DEV);
		return;
	case STEP_DECAP_DROP:
		p_info("xlb: remove the pins of a program no device runs");
		return;
	case STEP_DECAP_INSTALL:
		p_info("xlb: %s decap.bpf.o", undo ? "undo: remove" : "load, pin and attach");
		return;
	case STEP_DECAP_MAPS:
		p_info("xlb: %swrite the program's maps", verb);
		return;
	case STEP_DECAP_REMOVE:
		p_info("xlb: detach decap.bpf.o and remove its pins");
		return;
	}
}

static int tunnels_del(struct xlb_rtnl *nl);

static int tunnels_add(struct xlb_rtnl *nl)
{
	static const char *const kinds[][2] = {
		{ XLB_HOST_IPIP_DEV, "ipip" }, { XLB_HOST_IP6TNL_DEV, "ip6tnl" },
	};
	struct want_sysctl w[8];
	char name[XLB_SYSCTL_KEY_LEN];
	__u32 i, n;
	int err;

	err = tunnels_del(nl);
	for (i = 0; i < 2 && !err; i++) {
		err = xlb_host_tunnel_add(nl, kinds[i][0], kinds[i][1]);
		if (err == -EOPNOTSUPP) {
			p_err("this kernel has no %s driver (CONFIG_%s): use --decap xdp",
			      kinds[i][1], i ? "IPV6_TUNNEL" : "NET_IPIP");
			err = -EOPNOTSUPP;
			goto out;
		}
	}
	n = tunnel_sysctls(w);
	for (i = 0; i < n && !err; i++) {
		err = xlb_sysctl_write(w[i].key, w[i].value);
		if (err == -ENOENT && w[i].optional)
			err = 0;
		if (err)
			p_err("cannot set sysctl %s: %s",
			      xlb_sysctl_name(w[i].key, name, sizeof(name)),
			      strerror(-err));
	}
	if (!err)
		err = xlb_host_link_up(nl, XLB_HOST_IPIP_DEV) ?:
		      xlb_host_link_up(nl, XLB_HOST_IP6TNL_DEV);
	if (err && err != -EOPNOTSUPP)
		p_err("cannot add %s and %s: %s", XLB_HOST_IPIP_DEV,
		      XLB_HOST_IP6TNL_DEV, strerror(-err));
out:
	if (err)
		tunnels_del(nl);
	return err;
}

/* Both devices gone; one already gone is no error. */
static int tunnels_del(struct xlb_rtnl *nl)
{
	int err = xlb_host_link_del(nl, XLB_HOST_IPIP_DEV),
	    err6 = xlb_host_link_del(nl, XLB_HOST_IP6TNL_DEV);

	if (err == -ENODEV)
		err = 0;
	return err ?: err6 == -ENODEV ? 0 : err6;
}

/* decap.bpf.o loaded, pinned and attached (xlb_decap_install()):
 * multi-buffer where the kernel has it, so that a device at a jumbo MTU
 * takes it natively. Returns 0 or -errno, the error printed. */
static int decap_install(const struct plan *p)
{
	const char *dev = p->next.spec.dev, *what = "";
	bool frags = xlb_xdp_frags_supported();
	char why[256];
	int err, native_err;

	if (!frags)
		p_info("xlb: this kernel has no multi-buffer XDP (Linux 5.18): decap.bpf.o is loaded for single-buffer frames, so %s's MTU must fit one page (%d on veth) for native mode",
		       dev, XLB_XDP_PAGE_MTU);
	err = xlb_decap_install(p->next.pin_dir, p->ifindex, &p->want, frags,
				&native_err, &what);
	if (!xlb_xdp_mtu_refused(native_err, dev)) {
		if (err)
			p_err("cannot %s (decap.bpf.o on %s): %s%s", what, dev,
			      strerror(-err), err == -EPERM ? " (not root?)" : "");
		return err;
	}
	/* Generic mode takes any MTU, at a cost per packet. */
	xlb_xdp_mtu_refusal(dev, frags, why, sizeof(why));
	if (!err)
		p_info("xlb: note: decap.bpf.o runs in generic mode on %s: %s for native mode",
		       dev, why);
	else
		p_err("cannot attach decap.bpf.o to %s, and generic mode refused it too (%s): %s, or decapsulate with the kernel's tunnel devices (--decap kernel)",
		      dev, strerror(-err), why);
	return err;
}

/* The step, or its inverse. Returns 0 or -errno, the error printed. */
static int run_step(struct xlb_host *h, struct plan *p, const struct step *s,
		    bool undo)
{
	char a[XLB_ADDR_STRLEN], name[XLB_SYSCTL_KEY_LEN];
	struct xlb_nexthop_state nh = s->nh;
	bool add;
	int err = 0;

	say(h, s, undo);
	switch (s->kind) {
	case STEP_SYSCTL:
		err = xlb_sysctl_write(s->sysctl.key, undo ? s->sysctl.from : s->sysctl.to);
		if (err == -ENOENT && undo)
			err = 0;
		if (err)
			p_err("cannot set sysctl %s: %s",
			      xlb_sysctl_name(s->sysctl.key, name, sizeof(name)),
			      strerror(-err));
		break;
	case STEP_VIP_ADD:
	case STEP_VIP_DEL:
		add = (s->kind == STEP_VIP_ADD) != undo;
		err = add ? xlb_host_addr_add(&h->nl, p->lo_ifindex, &s->vip) :
			    xlb_host_addr_del(&h->nl, p->lo_ifindex, &s->vip);
		/* Already as wanted (the operator was quicker). */
		if ((add && err == -EEXIST) || (!add && err == -EADDRNOTAVAIL))
			err = 0;
		if (err)
			p_err("cannot %s %s %s lo: %s", add ? "add" : "delete",
			      addr_s(&s->vip, a), add ? "to" : "from", strerror(-err));
		break;
	case STEP_NEIGH_ADD:
	case STEP_NEIGH_DEL:
		add = (s->kind == STEP_NEIGH_ADD) != undo;
		err = add ? xlb_nexthop_manage(&p->nx, &nh) :
			    xlb_nexthop_forget(&p->nx, &nh);
		/* An entry xlb did not make (learned, the operator's) is
		 * never taken over; forget leaves it too. */
		if (add && err == -EEXIST)
			err = 0;
		if (err) {
			struct xlb_host_addr x = { .family = nh.family };

			memcpy(x.addr, nh.addr, sizeof(x.addr));
			p_err("cannot %s the neighbour entry of %s: %s",
			      add ? "make managed" : "delete", addr_s(&x, a),
			      strerror(-err));
		}
		break;
	case STEP_TUNNELS_ADD:
		err = undo ? tunnels_del(&h->nl) : tunnels_add(&h->nl);
		break;
	case STEP_TUNNELS_DEL:
		/* A teardown's: never undone. */
		err = undo ? 0 : tunnels_del(&h->nl);
		if (err)
			p_err("cannot delete %s and %s: %s", XLB_HOST_IPIP_DEV,
			      XLB_HOST_IP6TNL_DEV, strerror(-err));
		break;
	case STEP_DECAP_DROP:
		if (!undo)
			xlb_decap_remove(p->decap_dir, 0);
		break;
	case STEP_DECAP_INSTALL:
		if (undo) {
			err = xlb_decap_remove(p->next.pin_dir, p->ifindex);
			break;
		}
		/* Prints its own error. */
		err = xlb_pin_dir_prepare(p->next.pin_dir) ?: decap_install(p);
		break;
	case STEP_DECAP_MAPS:
		err = undo ? xlb_decap_write(&p->fds, &p->want, &p->have) :
			     xlb_decap_write(&p->fds, &p->have, &p->want);
		if (err)
			p_err("cannot write the maps pinned in %s: %s",
			      p->decap_dir, strerror(-err));
		/* Written in part: back to what they held (whatever part). */
		if (err && !undo)
			xlb_decap_write(&p->fds, &p->want, &p->have);
		break;
	case STEP_DECAP_REMOVE:
		if (undo)
			break;
		err = xlb_decap_remove(h->rec.pin_dir, p->ifindex);
		if (err)
			p_err("cannot detach the program pinned in %s from %s: %s",
			      h->rec.pin_dir, h->rec.spec.dev, strerror(-err));
		/* The last namespace's takes the folder of them all. */
		rmdir(XLB_HOST_PIN_ROOT);
		break;
	}
	return err;
}

static int record_save(struct xlb_host *h, const struct xlb_host_record *r)
{
	int err = xlb_host_record_write(h->record_path, r);

	if (err)
		p_err("cannot write %s: %s", h->record_path, strerror(-err));
	return err;
}

/* The record as it was before this run. */
static void record_restore(struct xlb_host *h)
{
	if (h->have_record)
		xlb_host_record_write(h->record_path, &h->rec);
	else
		unlink(h->record_path);
}

static int commit(struct xlb_host *h, struct plan *p, bool teardown)
{
	__u32 i, failed = 0;
	int err = 0, first = 0;

	if (teardown) {
		/* Every step, even past a failure; the record stays until
		 * all is undone, to try again (each step is one that finds
		 * its work done). */
		for (i = 0; i < p->n_steps; i++) {
			err = run_step(h, p, &p->steps[i], false);
			if (err && !failed++)
				first = err;
		}
		if (failed)
			return first;
		if (unlink(h->record_path) && errno != ENOENT) {
			err = -errno;
			p_err("cannot remove %s: %s", h->record_path, strerror(-err));
		}
		return err;
	}
	/* Nothing to do: not even the record is written again. */
	if (!p->n_steps && h->have_record && xlb_host_record_equal(&p->next, &h->rec))
		return 0;
	if (p->n_steps) {
		plan_during(p);
		err = record_save(h, &p->during);
		if (err)
			return err;
	}
	for (i = 0; i < p->n_steps && !err; i++)
		err = run_step(h, p, &p->steps[i], false);
	if (err) {
		/* The failed step undid itself. */
		for (i--; i-- > 0;)
			run_step(h, p, &p->steps[i], true);
		record_restore(h);
		return err;
	}
	return record_save(h, &p->next);
}

int xlb_host_setup(struct xlb_host *h, const struct xlb_host_spec *spec)
{
	struct plan *p = calloc(1, sizeof(*p));
	int err;

	if (!p) {
		p_err("out of memory");
		return -ENOMEM;
	}
	p->nx = (struct xlb_nexthops)XLB_NEXTHOPS_INIT;
	err = plan_build(h, spec, p) ?: commit(h, p, false);
	xlb_decap_close(&p->fds);
	xlb_nexthops_close(&p->nx);
	free(p);
	return err;
}

int xlb_host_teardown(struct xlb_host *h, const char *dev)
{
	struct plan *p;
	int err;

	if (!h->have_record) {
		p_err("this network namespace has no xlb host setup");
		return -ENOENT;
	}
	if (strcmp(h->rec.spec.dev, dev)) {
		p_err("the xlb host setup of this network namespace is on %s, not %s",
		      h->rec.spec.dev, dev);
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		p_err("out of memory");
		return -ENOMEM;
	}
	p->nx = (struct xlb_nexthops)XLB_NEXTHOPS_INIT;
	err = plan_build(h, NULL, p);
	if (!err) {
		err = commit(h, p, true);
		if (err)
			p_info("xlb: the teardown is not complete: %s keeps what is left to undo; `xlb host teardown %s` tries again",
			       h->record_path, dev);
	}
	xlb_decap_close(&p->fds);
	xlb_nexthops_close(&p->nx);
	free(p);
	return err;
}
