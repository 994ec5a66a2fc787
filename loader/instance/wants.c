// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What a change is asked for, against the state (update.h): a VIP's
 * wanted backends, how they differ from its records, every check that
 * can refuse them before anything is written. Pure, but for the notes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "change.h"
#include "update.h"

size_t xlb_vip_wants(const struct xlb_state *st, __u32 vip_id,
		     struct xlb_want *want)
{
	__u32 ids[XLB_MAX_BACKENDS];
	const struct xlb_backend *b;
	size_t n, i;

	n = xlb_state_vip_backends(st, vip_id, ids);
	for (i = 0; i < n; i++) {
		b = &st->backends[ids[i]];
		memcpy(want[i].addr, b->addr, sizeof(want[i].addr));
		want[i].family = b->family;
		want[i].weight = b->weight;
	}
	return n;
}

bool xlb_want_has(const struct xlb_want *want, size_t n,
		     const struct xlb_backend *b, __u32 *weight)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (want[i].family == b->family &&
		    !memcmp(want[i].addr, b->addr, sizeof(b->addr))) {
			*weight = want[i].weight;
			return true;
		}
	}
	return false;
}

void xlb_vip_diff(const struct xlb_state *st, const struct xlb_vip_key *key,
		  __u32 m, const struct xlb_want *want, size_t n,
		  struct xlb_vip_diff *d)
{
	__u32 ids[XLB_MAX_BACKENDS];
	const struct xlb_state_vip *v;
	__u32 weight;
	size_t i, k;

	memset(d, 0, sizeof(*d));
	v = xlb_state_vip_find((struct xlb_state *)st, key);
	d->rebuild = true;
	d->adds = n;
	if (!v)
		return;
	d->exists = true;
	k = xlb_state_vip_backends(st, v->vip.id, ids);
	d->old_backends = k;
	for (i = 0; i < k; i++) {
		const struct xlb_backend *b = &st->backends[ids[i]];

		if (!xlb_want_has(want, n, b, &weight))
			d->dropped++;
		else if (weight != b->weight)
			d->reweights++;
	}
	if (v->vip.table_size != m) {
		d->removes = k;
		d->reweights = 0;
		return;
	}
	d->rebuild = false;
	d->removes = d->dropped;
	d->adds = n - (k - d->removes);
}

static int want_cmp(const void *a, const void *b)
{
	const struct xlb_want *x = a, *y = b;

	if (x->family != y->family)
		return x->family - y->family;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

int xlb_vip_check(const struct xlb_state *st, const struct xlb_vip_key *key,
		  __u32 m, const struct xlb_want *want, size_t n,
		  size_t vips_free, size_t ids_free, const char *what)
{
	char a[XLB_ADDR_STRLEN];
	struct xlb_vip_diff d;
	struct xlb_want *sorted;
	const char *why;
	size_t i;

	if (xlb_table_size_check(m, &why)) {
		p_err("%s: %s", what, why);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		if (want[i].weight > XLB_MAX_WEIGHT) {
			p_err("%s: weight %u too large (0-%d)", what,
			      want[i].weight, XLB_MAX_WEIGHT);
			return -EINVAL;
		}
	}
	sorted = malloc((n ? n : 1) * sizeof(*sorted));
	if (!sorted) {
		p_err("out of memory");
		return -ENOMEM;
	}
	if (n)
		memcpy(sorted, want, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), want_cmp);
	for (i = 1; i < n; i++) {
		if (!want_cmp(&sorted[i - 1], &sorted[i])) {
			p_err("%s: duplicate backend %s", what,
			      xlb_addr_str(sorted[i].addr, sorted[i].family,
					   a, sizeof(a)));
			free(sorted);
			return -EINVAL;
		}
	}
	free(sorted);
	if (n > m) {
		p_err("%s: %zu backends do not fit a table of %u slots (at most one backend per slot)",
		      what, n, m);
		return -EINVAL;
	}
	xlb_vip_diff(st, key, m, want, n, &d);
	if (d.rebuild && !vips_free) {
		p_err(d.exists ?
		      "%s: changing the table size needs a spare VIP id, and all %d are in use" :
		      "%s: too many VIPs (limit %d)", what, XLB_MAX_VIPS);
		return -EINVAL;
	}
	/* The records of the backends it drops can be freed first
	 * (xlb_vip_converge_mode() does when it must); those it keeps are
	 * held until its new records are written. */
	if (d.adds > ids_free + d.dropped) {
		p_err("%s: too many backends: %zu more needed, %zu free (limit %d over all VIPs)",
		      what, d.adds - d.dropped, ids_free, XLB_BACKEND_IDS);
		return -EINVAL;
	}
	return 0;
}

size_t xlb_vips_free(const struct xlb_state *st)
{
	return XLB_MAX_VIPS - st->n_vips;
}

size_t xlb_backend_ids_free(const struct xlb_state *st)
{
	return XLB_BACKEND_IDS - xlb_state_backends_in_use(st);
}

void xlb_note_sources(const struct xlb_state *st, const struct xlb_want *want,
		      size_t n)
{
	static const __be32 none[4];
	struct xlb_change *ch = st->change;
	bool need4 = false, need6 = false;
	size_t i;

	/* Once per command: a state outside a change says it each time. */
	for (i = 0; i < n; i++) {
		need4 |= want[i].family == XLB_AF_INET && !(ch && ch->said4);
		need6 |= want[i].family == XLB_AF_INET6 && !(ch && ch->said6);
	}
	if (ch) {
		ch->said4 |= need4;
		ch->said6 |= need6;
	}
	if (need4 && !st->config.src4)
		p_info("xlb: note: src4 is not set, so packets to IPv4 backends are dropped (drop_no_source): xlb config set src4 ADDR");
	if (need6 && !memcmp(st->config.src6, none, sizeof(none)))
		p_info("xlb: note: src6 is not set, so packets to IPv6 backends are dropped (drop_no_source): xlb config set src6 ADDR");
}
