// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* What a host's setup has in effect, for `xlb host show` (host.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "gue.h"
#include "host.h"
#include "host_decap.h"
#include "report.h"

/* IPv4 before IPv6, each in address order: the maps' order is the
 * hash's, which show does not repeat. */
static int addr_cmp(const void *a, const void *b)
{
	const struct xlb_host_addr *x = a, *y = b;

	return x->family != y->family ? x->family - y->family :
	       memcmp(x->addr, y->addr, sizeof(x->addr));
}

static int prefix_cmp(const void *a, const void *b)
{
	const struct xlb_host_prefix *x = a, *y = b;
	int c = x->family != y->family ? x->family - y->family :
		memcmp(x->addr, y->addr, sizeof(x->addr));

	return c ?: x->len - y->len;
}

static void prefix_of(const struct xlb_decap_prefix *k, struct xlb_host_prefix *p)
{
	memset(p, 0, sizeof(*p));
	p->family = k->family;
	p->len = k->prefixlen - XLB_DECAP_PREFIX_BASE;
	memcpy(p->addr, k->addr, sizeof(p->addr));
}

/* The maps' contents, as addresses, prefixes and names. */
static void view_content(struct xlb_host_view *v, const struct xlb_decap_content *c)
{
	struct xlb_host_addr a;
	__u32 i;

	for (i = 0; i < c->n_addrs; i++) {
		memset(&a, 0, sizeof(a));
		a.family = c->addrs[i].family;
		memcpy(a.addr, c->addrs[i].addr, sizeof(a.addr));
		if (c->addr_flags[i] & XLB_DECAP_ADDR_VIP)
			v->vips[v->n_vips++] = a;
		if (c->addr_flags[i] & XLB_DECAP_ADDR_TUNNEL)
			v->tunnel[v->n_tunnel++] = a;
	}
	for (i = 0; i < c->n_fleet; i++)
		prefix_of(&c->fleet[i], &v->fleet[v->n_fleet++]);
	for (i = 0; i < c->n_lbs; i++)
		prefix_of(&c->lbs[i], &v->balancers[v->n_balancers++]);
	for (i = 0; i < c->n_out; i++)
		if (!if_indextoname(c->out[i], v->egress[v->n_egress++]))
			snprintf(v->egress[v->n_egress - 1], IF_NAMESIZE, "if%u",
				 c->out[i]);
	qsort(v->vips, v->n_vips, sizeof(v->vips[0]), addr_cmp);
	qsort(v->tunnel, v->n_tunnel, sizeof(v->tunnel[0]), addr_cmp);
	qsort(v->fleet, v->n_fleet, sizeof(v->fleet[0]), prefix_cmp);
	qsort(v->balancers, v->n_balancers, sizeof(v->balancers[0]), prefix_cmp);
	v->gue_port = c->cfg.gue_port ? ntohs(c->cfg.gue_port) : XLB_GUE_DEFAULT_PORT;
	v->check_source = c->cfg.flags & XLB_DECAP_F_CHECK_SOURCE;
}

int xlb_host_view(const struct xlb_host *h, struct xlb_host_view *v)
{
	const struct xlb_host_record *r = &h->rec;
	struct xlb_decap_content *c;
	struct xlb_decap_fds fds;
	int ifindex, err;

	memset(v, 0, sizeof(*v));
	v->rec = r;
	v->mode = "none";
	if (r->spec.decap == XLB_HOST_DECAP_KERNEL && h->have_record && !h->stale) {
		v->n_vips = r->spec.n_vips;
		memcpy(v->vips, r->spec.vips, sizeof(v->vips));
		return 0;
	}
	err = xlb_host_decap_open(h, &fds);
	if (err)
		return err;
	c = malloc(sizeof(*c));
	err = c ? xlb_decap_read(&fds, c) : -ENOMEM;
	if (!err)
		view_content(v, c);
	free(c);
	v->prog_id = xlb_decap_prog_id(fds.prog);
	xlb_decap_close(&fds);
	ifindex = if_nametoindex(r->spec.dev);
	if (!err && ifindex)
		err = xlb_decap_attached(ifindex, &v->attached_id, &v->mode);
	if (err)
		p_err("cannot read the program pinned in %s: %s", r->pin_dir,
		      strerror(-err));
	return err;
}
