// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xlb show [VIP]: settings, VIPs, backends, weights, and what the live
 * tables actually hold (slots per backend, read back from the kernel), with
 * a fingerprint per VIP to compare balancers, and the flows each backend
 * still holds in the connection table (conntrack_map.h says how they are
 * counted).
 *
 * It begins with the pin dir it read, so that scripts find the instance
 * wherever the default led (`xlb -j show | jq -r .pin_dir`).
 *
 * `xlb show -j` is accepted by `xlb apply`, which skips the observed keys
 * (xlb_show_observed(), xlb_show_observed_top()).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <net/if.h>
#include <json-c/json.h>

#include "addr.h"
#include "cli.h"
#include "opts.h"
#include "cmd.h"
#include "conntrack_map.h"
#include "hc_store.h"
#include "neigh.h"
#include "settings.h"
#include "state.h"
#include "table_map.h"
#include "history.h"
#include "src_ranges.h"
#include "vip_mode.h"

/* What the live table of one VIP holds. */
struct live_table {
	__u32 *slots;		/* NULL: no table installed */
	__u32 m;
	__u32 *count;		/* slots per backend id */
	__u32 unassigned;	/* slots naming no live backend of the VIP */
	__u64 fingerprint;
	struct xlb_history hist;	/* a stateless VIP's, sorted */
	const struct xlb_src_list *src;	/* its source ranges */
	bool closed;		/* flagged with lists, none written */
};

static int read_live(const struct xlb_instance *inst,
		     const struct xlb_state *st,
		     const struct xlb_state_vip *v,
		     const struct xlb_src_list *src, struct live_table *t)
{
	const struct xlb_backend *b;
	__u32 i, id;
	int err;

	memset(t, 0, sizeof(*t));
	t->src = src;
	t->count = calloc(XLB_MAX_BACKENDS, sizeof(*t->count));
	if (!t->count)
		return -ENOMEM;
	err = xlb_table_read_hist(inst->tables_fd, v->vip.id, &t->slots, &t->m,
				  &t->hist);
	if (err == -ENOENT)
		return 0;
	if (err)
		return err;
	xlb_history_sort(&t->hist);
	for (i = 0; i < t->m; i++) {
		id = t->slots[i];
		b = id < XLB_MAX_BACKENDS ? &st->backends[id] : NULL;
		if (b && id != XLB_BACKEND_NONE && xlb_backend_live(b) &&
		    b->vip_id == v->vip.id)
			t->count[id]++;
		else
			t->unassigned++;
	}
	/* The previous owners too: they choose where a packet goes next;
	 * and the source ranges, which choose whether it goes. */
	if (t->m == v->vip.table_size)
		t->fingerprint = xlb_src_fingerprint(xlb_history_fingerprint(
			xlb_state_fingerprint(st, v, t->slots), &t->hist),
			src);
	return 0;
}

static void free_live(struct live_table *t)
{
	free(t->slots);
	free(t->count);
	xlb_history_free(&t->hist);
}

static const struct xlb_hc_config no_health;

/* A VIP's health settings and its backends' health (hc_store.h). */
struct vip_health {
	struct xlb_hc_config vip;	/* its own settings */
	bool fail_open;			/* all down: none left out */
	struct xlb_hc_config *own;	/* each backend's, as ids[] */
	struct xlb_hc_state *state;
	struct xlb_hc_config *eff;
};

static int read_health(const struct xlb_instance *inst,
		       const struct xlb_state *st,
		       const struct xlb_state_vip *v, const __u32 *ids,
		       size_t n, struct vip_health *h)
{
	size_t i;
	int err;

	memset(h, 0, sizeof(*h));
	h->own = calloc(n + 1, sizeof(*h->own));
	h->state = calloc(n + 1, sizeof(*h->state));
	h->eff = calloc(n + 1, sizeof(*h->eff));
	if (!h->own || !h->state || !h->eff)
		return -ENOMEM;
	h->fail_open = xlb_state_vip_fail_open(st, v->vip.id);
	err = xlb_hc_vip_read(inst, v->vip.id, &h->vip);
	for (i = 0; i < n && !err; i++) {
		err = xlb_hc_backend_read(inst, ids[i], &h->own[i]) ?:
		      xlb_hc_state_read(inst, ids[i], st->backends[ids[i]].gen,
					&h->state[i]);
		xlb_hc_merge(&h->vip, &h->own[i], 0, &h->eff[i]);
	}
	return err;
}

static void free_health(struct vip_health *h)
{
	free(h->own);
	free(h->state);
	free(h->eff);
}

/* up, down, unknown (not probed yet) or unchecked (kind none); DOWN in
 * the record is what the table follows, whatever the checker wrote. */
static const char *health_word(const struct xlb_backend *be,
			       const struct vip_health *h, size_t i)
{
	if (be->flags & XLB_BE_F_DOWN)
		return "down";
	if (h->eff[i].kind == XLB_HC_NONE)
		return "unchecked";
	return xlb_hc_health_name(h->state[i].health);
}

static bool out_by_health(const struct xlb_backend *be,
			  const struct vip_health *h)
{
	return (be->flags & XLB_BE_F_DOWN) && !h->fail_open;
}

/* The state's since as UTC, or NULL when never set. */
static const char *health_since(const struct vip_health *h, size_t i,
				char *buf, size_t len)
{
	time_t t = h->state[i].since_ns / 1000000000ULL;
	struct tm tm;

	if (!h->state[i].since_ns || !gmtime_r(&t, &tm))
		return NULL;
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

static double share(const struct live_table *t, __u32 id)
{
	return t->m ? (double)t->count[id] / t->m : 0;
}

/*
 * What `xlb show -j` prints that is observed, not configured: `xlb apply`
 * accepts show's output back and skips these keys (any other unknown key
 * is an error there). A new observed field is added here.
 */
static const char *const observed_vip_keys[] = {
	"id", "fingerprint", "slots_without_backend", "dirty", "corrupt",
	"fail_open", NULL,
};
static const char *const observed_backend_keys[] = {
	"id", "gen", "slots", "share", "flows", "health_state", "health_since",
	"out_by_health", "next_hop", NULL,
};

bool xlb_show_observed(bool backend, const char *key)
{
	const char *const *k = backend ? observed_backend_keys :
					 observed_vip_keys;

	for (; *k; k++)
		if (!strcmp(*k, key))
			return true;
	return false;
}

/* The pin dir is where this instance was found, not part of its state: a
 * file that `xlb show -j` wrote may be applied to an instance elsewhere. */
bool xlb_show_observed_top(const char *key)
{
	return !strcmp(key, "pin_dir");
}

/* A backend's next hop (neigh.h): the datapath drops its packets while
 * the next hop is unresolved. null without a route (drop_fib_failed). */
static struct json_object *nexthop_json(struct xlb_nexthops *nx,
					const struct xlb_state *st,
					const struct xlb_backend *be)
{
	char a[XLB_ADDR_STRLEN], dev[IF_NAMESIZE];
	struct xlb_nexthop_state nh;
	struct json_object *o;

	if (xlb_nexthop_get(nx, &st->config, be->addr, be->family, &nh))
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "addr", json_object_new_string(
		xlb_addr_str(nh.addr, nh.family, a, sizeof(a))));
	json_object_object_add(o, "dev", json_object_new_string(
		if_indextoname(nh.ifindex, dev) ?: ""));
	json_object_object_add(o, "resolved", json_object_new_boolean(
		xlb_nexthop_resolved(&nh)));
	return o;
}

/* The marker of a backend whose next hop is unresolved. */
static void nexthop_print(FILE *f, struct xlb_nexthops *nx,
			  const struct xlb_state *st,
			  const struct xlb_backend *be)
{
	char a[XLB_ADDR_STRLEN], dev[IF_NAMESIZE];
	struct xlb_nexthop_state nh;

	if (xlb_nexthop_get(nx, &st->config, be->addr, be->family, &nh) ||
	    xlb_nexthop_resolved(&nh))
		return;
	fprintf(f, " next-hop-unresolved (%s dev %s %s)",
		xlb_addr_str(nh.addr, nh.family, a, sizeof(a)),
		if_indextoname(nh.ifindex, dev) ?: "?",
		xlb_nexthop_nud_str(nh.nud));
}

/* A part of a VIP's source ranges: an array of prefixes, [] for none. */
static struct json_object *src_json(const struct xlb_src_list *l, bool deny)
{
	struct json_object *a = json_object_new_array();
	char text[XLB_PREFIX_STRLEN];
	__u32 i;

	for (i = 0; i < l->n; i++)
		if (l->p[i].deny == deny)
			json_object_array_add(a, json_object_new_string(
				xlb_src_prefix_str(&l->p[i], text,
						   sizeof(text))));
	return a;
}

/* A VIP's lists in show's line: allow PREFIXES, deny PREFIXES, those
 * it has. */
static void src_print(FILE *f, const struct xlb_src_list *l, bool closed)
{
	char text[XLB_PREFIX_STRLEN];
	__u32 i, k;

	for (k = 0; k < 2; k++) {
		if (!xlb_src_count(l, k))
			continue;
		fprintf(f, " %s", k ? "deny" : "allow");
		for (i = 0; i < l->n; i++)
			if (l->p[i].deny == k)
				fprintf(f, "%c%s", i && l->p[i - 1].deny == k ?
					',' : ' ', xlb_src_prefix_str(&l->p[i],
						text, sizeof(text)));
	}
	if (closed)
		fprintf(f, " (closed: its lists were not written)");
}

static struct json_object *vip_json(struct xlb_nexthops *nx,
				    const struct xlb_state *st,
				    const struct xlb_state_vip *v,
				    const struct live_table *t,
				    const __u32 *ids, size_t n,
				    const struct xlb_ct_census *ct,
				    const struct vip_health *h)
{
	struct json_object *o, *backends, *b, *hc;
	char text[XLB_VIP_STRLEN];
	const struct xlb_backend *be;
	const char *since;
	size_t i;

	o = json_object_new_object();
	json_object_object_add(o, "vip", json_object_new_string(
		xlb_vip_str(&v->key, text, sizeof(text))));
	json_object_object_add(o, "table_size",
			       json_object_new_int64(v->vip.table_size));
	json_object_object_add(o, "encap", json_object_new_string(
		xlb_encap_str(v->vip.flags)));
	json_object_object_add(o, "mode", json_object_new_string(
		xlb_mode_str(v->vip.flags)));
	json_object_object_add(o, "hash", json_object_new_string(
		xlb_hash_str(v->vip.flags)));
	if (v->vip.flags & XLB_VIP_F_HASH_SRC)
		json_object_object_add(o, "affinity_prefix", json_object_new_int64(
			XLB_VIP_AFFINITY(v->vip.flags)));
	json_object_object_add(o, "ping", json_object_new_boolean(
		!(v->vip.flags & XLB_VIP_F_NO_PING)));
	json_object_object_add(o, "allow", src_json(t->src, false));
	json_object_object_add(o, "deny", src_json(t->src, true));
	if (v->vip.flags & XLB_VIP_F_STATELESS)
		json_object_object_add(o, "history", xlb_history_json(&t->hist));
	hc = xlb_hc_json(&h->vip);
	if (hc)
		json_object_object_add(o, "health", hc);
	backends = json_object_new_array();
	for (i = 0; i < n; i++) {
		be = &st->backends[ids[i]];
		b = json_object_new_object();
		json_object_object_add(b, "addr", json_object_new_string(
			xlb_addr_str(be->addr, be->family, text, sizeof(text))));
		json_object_object_add(b, "weight",
				       json_object_new_int64(be->weight));
		json_object_object_add(b, "id", json_object_new_int64(ids[i]));
		json_object_object_add(b, "gen", json_object_new_int64(be->gen));
		json_object_object_add(b, "slots",
				       json_object_new_int64(t->count[ids[i]]));
		json_object_object_add(b, "share",
				       json_object_new_double(share(t, ids[i])));
		json_object_object_add(b, "flows",
				       json_object_new_int64(ct->flows[ids[i]]));
		hc = xlb_hc_json(&h->own[i]);
		if (hc)
			json_object_object_add(b, "health", hc);
		json_object_object_add(b, "health_state", json_object_new_string(
			health_word(be, h, i)));
		since = health_since(h, i, text, sizeof(text));
		json_object_object_add(b, "health_since", since ?
				       json_object_new_string(since) : NULL);
		json_object_object_add(b, "out_by_health", json_object_new_boolean(
			out_by_health(be, h)));
		json_object_object_add(b, "next_hop", nexthop_json(nx, st, be));
		json_object_array_add(backends, b);
	}
	json_object_object_add(o, "backends", backends);

	json_object_object_add(o, "id", json_object_new_int64(v->vip.id));
	snprintf(text, sizeof(text), "%016" PRIx64, (uint64_t)t->fingerprint);
	json_object_object_add(o, "fingerprint", t->slots ?
			       json_object_new_string(text) : NULL);
	json_object_object_add(o, "slots_without_backend",
			       json_object_new_int64(t->unassigned));
	json_object_object_add(o, "dirty", json_object_new_boolean(
		!!(v->vip.flags & XLB_VIP_F_DIRTY)));
	json_object_object_add(o, "fail_open",
			       json_object_new_boolean(h->fail_open));
	return o;
}

/* A stateless VIP's previous owners: one line each, with its time (Unix
 * seconds, as -j and apply have it) and how many slots name it. */
static void history_print(FILE *f, const struct xlb_history *h)
{
	char text[XLB_ADDR_STRLEN];
	__u32 i, k, slots;

	for (i = 0; i < h->n; i++) {
		for (k = slots = 0; k < h->m; k++)
			slots += h->slot[k] == i + 1;
		fprintf(f, "\tprevious %s since %u slots %u\n",
			xlb_addr_str(h->e[i].addr, h->e[i].family, text,
				     sizeof(text)), h->e[i].since, slots);
	}
}

static void vip_print(FILE *f, struct xlb_nexthops *nx,
		      const struct xlb_state *st,
		      const struct xlb_state_vip *v,
		      const struct live_table *t, const __u32 *ids, size_t n,
		      const struct xlb_ct_census *ct,
		      const struct vip_health *h)
{
	char text[XLB_VIP_STRLEN];
	const struct xlb_backend *be;
	const char *since;
	size_t i;

	fprintf(f, "vip %s table-size %u backends %zu", xlb_vip_str(&v->key, text,
	       sizeof(text)), v->vip.table_size, n);
	if (t->slots)
		fprintf(f, " fingerprint %016" PRIx64, (uint64_t)t->fingerprint);
	else
		fprintf(f, " no-table");
	if (t->unassigned && n)
		fprintf(f, " slots-without-backend %u", t->unassigned);
	/* The defaults, ipip, tracked, 5-tuple and ping on, go without saying. */
	if (v->vip.flags & XLB_VIP_F_GUE)
		fprintf(f, " encap %s", xlb_encap_str(v->vip.flags));
	if (v->vip.flags & XLB_VIP_F_STATELESS)
		fprintf(f, " mode %s", xlb_mode_str(v->vip.flags));
	if (v->vip.flags & XLB_VIP_F_HASH_SRC)
		fprintf(f, " hash %s affinity-prefix %u",
			xlb_hash_str(v->vip.flags), XLB_VIP_AFFINITY(v->vip.flags));
	if (v->vip.flags & XLB_VIP_F_NO_PING)
		fprintf(f, " ping %s", xlb_ping_str(v->vip.flags));
	src_print(f, t->src, t->closed);
	xlb_hc_print(f, &h->vip);
	if (h->fail_open)
		fprintf(f, " fail-open (every backend is down: none left out)");
	if (v->vip.flags & XLB_VIP_F_DIRTY)
		fprintf(f, " (a change was interrupted: the next xlb change finishes it)");
	fputc('\n', f);
	for (i = 0; i < n; i++) {
		be = &st->backends[ids[i]];
		fprintf(f, "\tbackend %s weight %u slots %u share %.2f%% flows %u%s",
		       xlb_addr_str(be->addr, be->family, text, sizeof(text)),
		       be->weight, t->count[ids[i]], 100 * share(t, ids[i]),
		       ct->flows[ids[i]], be->weight ? "" : " draining");
		if (h->eff[i].kind != XLB_HC_NONE || be->flags & XLB_BE_F_DOWN) {
			fprintf(f, " health %s", health_word(be, h, i));
			since = health_since(h, i, text, sizeof(text));
			if (since)
				fprintf(f, " since %s", since);
		}
		if (out_by_health(be, h))
			fprintf(f, " out-by-health");
		if (memcmp(&h->own[i], &no_health, sizeof(no_health))) {
			fprintf(f, " overrides");
			xlb_hc_print(f, &h->own[i]);
		}
		nexthop_print(f, nx, st, be);
		fputc('\n', f);
	}
	history_print(f, &t->hist);
}

/* A VIP whose record cannot be right: what is wrong, and nothing of a
 * table or backends that its id may not own. */
static void corrupt_print(FILE *f, struct json_object *vips,
			  const struct xlb_state_vip *v)
{
	char name[XLB_VIP_STRLEN];
	struct json_object *o;

	xlb_vip_str(&v->key, name, sizeof(name));
	if (!vips) {
		fprintf(f, "vip %s corrupt: %s (`xlb vip del %s` removes it)\n",
			name, v->corrupt, name);
		return;
	}
	o = json_object_new_object();
	json_object_object_add(o, "vip", json_object_new_string(name));
	json_object_object_add(o, "corrupt", json_object_new_string(v->corrupt));
	json_object_array_add(vips, o);
}

#define SHOW_USAGE "xlb show [VIP]"

static int show_help(void)
{
	printf("Usage: " SHOW_USAGE "\n"
	       "Settings, VIPs with their table size and fingerprint, backends with\n"
	       "their weight, the slots and share they hold in the live table, and\n"
	       "the flows they hold in the connection table (live entries, counted\n"
	       "at the time of the command); health settings, and each backend's\n"
	       "health (up, down, unknown, unchecked; since when; out-by-health when\n"
	       "a down backend is out of the table). -j prints JSON, which `xlb apply`\n"
	       "accepts back.\n");
	return 0;
}

int do_show(int argc, char **argv)
{
	static __u32 ids[XLB_MAX_BACKENDS];
	static struct xlb_src_list src;
	struct xlb_src_all all = {};
	struct json_object *o = NULL, *vips = NULL;
	struct xlb_nexthops nx = XLB_NEXTHOPS_INIT;
	struct xlb_ct_census *ct = NULL;
	struct xlb_vip_key only;
	struct xlb_instance inst;
	struct xlb_state_vip *v;
	struct xlb_state *st;
	struct live_table t;
	struct vip_health h;
	bool filter = false, closed;
	size_t n, text_len = 0;
	char *text = NULL;
	FILE *f = NULL;
	__u32 i;
	int err;

	err = xlb_cmd_args(NULL, &argc, argv, show_help, -1, SHOW_USAGE);
	if (err)
		return err;
	if (argc > 1)
		return xlb_expect_args(argc, argv, 1, SHOW_USAGE);
	if (argc == 1) {
		err = xlb_vip_arg(argv[0], &only);
		if (err)
			return err;
		filter = true;
	}
	err = xlb_state_open(&inst, &xlb_opts.instance, &st);
	if (err)
		return err;
	if (filter && !xlb_state_vip_find(st, &only)) {
		char name[XLB_VIP_STRLEN];

		p_err("no VIP %s", xlb_vip_str(&only, name, sizeof(name)));
		err = -ENOENT;
		goto out;
	}
	err = xlb_src_read_all(&inst, &all);
	if (err)
		goto out;
	ct = malloc(sizeof(*ct));
	err = ct ? xlb_ct_census(inst.conntrack_fd, &st->config, st->backends, ct) :
	      -ENOMEM;
	if (err) {
		p_err("cannot read the connection table: %s", strerror(-err));
		goto out;
	}

	/* Everything is read and formatted under the lock, and printed once
	 * it is released: a reader whose output blocks (xlb show | less)
	 * must not hold every writer up. */
	f = open_memstream(&text, &text_len);
	if (!f) {
		err = -errno;
		p_err("out of memory");
		goto out;
	}
	if (xlb_opts.json) {
		o = json_object_new_object();
		json_object_object_add(o, "pin_dir", json_object_new_string(inst.dir));
		json_object_object_add(o, "config", xlb_settings_json(&st->config));
		vips = json_object_new_array();
		json_object_object_add(o, "vips", vips);
	} else if (!filter) {
		fprintf(f, "pin-dir %s\n", inst.dir);
		xlb_settings_print(f, &st->config, true);
		fprintf(f, "conntrack size %u entries %llu live %llu\n", ct->size,
		       (unsigned long long)ct->entries, (unsigned long long)ct->live);
	}
	for (i = 0; i < st->n_vips; i++) {
		v = &st->vips[i];
		if (filter && memcmp(&v->key, &only, sizeof(only)))
			continue;
		if (v->corrupt[0]) {
			corrupt_print(f, vips, v);
			continue;
		}
		xlb_src_of(&all, v, &src);
		/* Born closed, its lists never written (a change that failed
		 * between the two): it denies every client, and says so. */
		closed = xlb_src_closed(v->vip.flags, &src);
		if (closed)
			xlb_src_deny_all(&src, v->key.family);
		err = read_live(&inst, st, v, &src, &t);
		t.closed = closed;
		if (err) {
			p_err("cannot read the table of VIP id %u: %s",
			      v->vip.id, strerror(-err));
			free_live(&t);
			goto out;
		}
		n = xlb_state_vip_backends(st, v->vip.id, ids);
		err = read_health(&inst, st, v, ids, n, &h);
		if (err == -ENOMEM)
			p_err("out of memory");
		if (err) {
			free_health(&h);
			free_live(&t);
			goto out;
		}
		if (xlb_opts.json)
			json_object_array_add(vips, vip_json(&nx, st, v, &t, ids, n,
							     ct, &h));
		else
			vip_print(f, &nx, st, v, &t, ids, n, ct, &h);
		free_health(&h);
		free_live(&t);
	}
out:
	if (f)
		fclose(f);
	free(ct);
	xlb_src_all_free(&all);
	xlb_nexthops_close(&nx);
	xlb_state_free(st);
	xlb_instance_close(&inst);
	if (!err && o) {
		xlb_json_print(o);
		o = NULL;
	} else if (!err) {
		fwrite(text, 1, text_len, stdout);
	}
	json_object_put(o);
	free(text);
	return err;
}
