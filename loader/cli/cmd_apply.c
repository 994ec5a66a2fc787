// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xlb apply FILE|-: converge the instance to the state a JSON file
 * describes. The whole file is read and checked first (strict JSON, keys,
 * values, limits); then every table the change needs is computed and made
 * (xlb_update_all_or_nothing()), so that running out of memory changes
 * nothing; only then is anything written, and only what differs: a VIP
 * whose table size and backends already match is not touched.
 *
 *   {
 *     "config": { "seed": "HEX", "src4": "ADDR", "src6": "ADDR",
 *                 "udp_timeout": S, ... every setting of `xlb config` },
 *     "vips": [ { "vip": "ADDR:PORT/PROTO" (PORT * for all ports), "table_size": M,
 *                 "encap": "ipip" | "gue", "mode": "tracked" | "stateless",
 *                 "hash": "5-tuple" | "src-ip", "affinity_prefix": LEN,
 *                 "ping": true | false,
 *                 "allow": [ PREFIX, ... ], "deny": [ PREFIX, ... ],
 *                 "history": [ { "prev": ADDR, "since": S,
 *                                "slots": "FIRST-LAST,N,..." } ],
 *                 "health": { "kind": "http", "interval_ms": MS, ... },
 *                 "backends": [ { "addr": "ADDR", "weight": W,
 *                                 "health": { ... } } ] } ]
 *   }
 *
 * Settings absent from "config" keep their value; "vips" lists every VIP
 * (those not listed are deleted), and when absent VIPs are left alone.
 * A VIP's "encap" absent is ipip, the default ("mode": "stateless" makes
 * it gue), "mode" absent tracked, "hash" absent 5-tuple, "ping" absent
 * true; "affinity_prefix" (with src-ip) absent the whole address;
 * "allow" and "deny" (source ranges, src_ranges.h) absent empty; a
 * stateless VIP's "history" (the
 * previous owners of its slots, history.h) is written as it is, once each
 * entry is found to be one xlb_history_next() could have written for the
 * VIP's backends in the file; when absent the history is carried over the
 * change.
 * A VIP's or backend's "health" is all its health settings (absent: none
 * set); a backend's health as found by the checker (DOWN, EVICT) is
 * runtime state, neither in the file nor changed by it.
 * The keys `xlb show -j` adds about what it observed (slots, shares, ids,
 * fingerprints: xlb_show_observed()) are skipped, so that output is
 * accepted back.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "addr.h"
#include "json_strict.h"
#include "cli.h"
#include "opts.h"
#include "cmd.h"
#include "hc_store.h"
#include "settings.h"
#include "history.h"
#include "src_ranges.h"
#include "update.h"
#include "vip_local.h"
#include "vip_mode.h"

#define APPLY_USAGE "xlb apply [--keep-on-error] FILE|-"
#define APPLY_MAX_BYTES (64 << 20)

struct file_vip {
	struct xlb_vip_key key;
	__u32 m;
	__u32 mode;		/* XLB_VIP_F_MODE flags */
	struct xlb_history hist;	/* slot NULL: none given */
	struct xlb_want *want;
	size_t n;
	struct xlb_hc_config hc;	/* the VIP's health settings */
	struct xlb_hc_config *be_hc;	/* each backend's, as want[] */
	struct xlb_src_list *src;	/* its source ranges */
	bool shrinks;		/* fewer prefixes than it has now */
	char where[32];		/* "vips[3]" */
};

struct desired {
	const char *file;
	struct json_object *root;
	struct json_object *config;	/* NULL: settings unchanged */
	bool seed;			/* the file sets the seed */
	bool has_vips;
	struct file_vip *vips;
	size_t n_vips;
};

/* One error line: the file, where in it, and what is wrong. */
static int bad(const struct desired *d, const char *where, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p_err("%s: %s%s%s", d->file, where, *where ? ": " : "", msg);
	return -EINVAL;
}

static int read_all(const char *file, char **out, size_t *len)
{
	FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
	size_t cap = 65536, n = 0, got;
	char *buf = NULL, *nbuf;
	int err = 0;

	if (!f) {
		p_err("cannot open %s: %s", file, strerror(errno));
		return -errno;
	}
	for (;;) {
		nbuf = realloc(buf, cap + 1);
		if (!nbuf) {
			err = -ENOMEM;
			p_err("out of memory reading %s", file);
			break;
		}
		buf = nbuf;
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (n < cap) {
			if (ferror(f)) {
				err = -EIO;
				p_err("cannot read %s", file);
			}
			break;
		}
		if (cap >= APPLY_MAX_BYTES) {
			err = -EFBIG;
			p_err("%s: larger than %d MiB", file, APPLY_MAX_BYTES >> 20);
			break;
		}
		cap *= 2;
	}
	if (f != stdin)
		fclose(f);
	if (err) {
		free(buf);
		return err;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/*
 * What a file within the limits can hold, for json_strict_check() to stop
 * at long before the 64 MiB cap: json-c spends hundreds of bytes on each
 * value (2.7 GB for a 10 MB file of empty objects). show -j writes up to
 * 24 values a backend and 24 a VIP besides its backends (8 without health
 * settings), and a stateless VIP's history 4 an entry, its slots one string
 * however scattered (an entry per previous owner and change, a few); more
 * than that, and room for "config".
 */
#define APPLY_MAX_VALUES (32 * XLB_BACKEND_IDS + 32 * XLB_MAX_VIPS + 1024)
#define APPLY_MAX_DEPTH	16	/* a file needs 6; json-c allows 32 */

static const struct json_strict_count apply_counts[] = {
	{ "vips", XLB_MAX_VIPS, "VIPs", "" },
	{ "vips[].backends", XLB_BACKEND_IDS, "backends", " over all VIPs" },
};

static const struct json_strict_limits apply_limits = {
	.max_depth = APPLY_MAX_DEPTH,
	.max_values = APPLY_MAX_VALUES,
	.values_why = ", more than a file within the limits holds",
	.counts = apply_counts,
	.n_counts = sizeof(apply_counts) / sizeof(apply_counts[0]),
};

/*
 * Strict JSON first (RFC 8259, no key twice, no NUL, within the limits):
 * json-c takes comments and trailing commas, and of two equal keys keeps
 * the last, so {"vips":[...],"vips":[]} would delete every VIP. What
 * passes is then parsed by json-c, which can only fail for memory.
 */
static int parse_json(struct desired *d, const char *buf, size_t len)
{
	struct json_tokener *tok;
	enum json_tokener_error jerr;
	char msg[512];
	int err;

	err = json_strict_check(buf, len, &apply_limits, msg, sizeof(msg));
	if (err) {
		p_err("%s: %s", d->file, msg);
		return err;
	}
	tok = json_tokener_new();
	if (!tok) {
		p_err("out of memory parsing %s", d->file);
		return -ENOMEM;
	}
	errno = 0;
	d->root = json_tokener_parse_ex(tok, buf, len);
	jerr = json_tokener_get_error(tok);
	/* A number or literal at the very end of the text may go on, for
	 * json-c, until it is told the text has ended. */
	if (!d->root && jerr == json_tokener_continue) {
		d->root = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
	}
	if (!d->root || jerr != json_tokener_success) {
		/* json-c 0.16 has no error for memory: a NULL value with
		 * "success", or malloc's errno. */
		if (jerr == json_tokener_success || errno == ENOMEM) {
			p_err("out of memory parsing %s", d->file);
			err = -ENOMEM;
		} else {
			p_err("%s: json-c cannot parse it: %s", d->file,
			      json_tokener_error_desc(jerr));
			err = -EINVAL;
		}
		json_object_put(d->root);
		d->root = NULL;
	}
	json_tokener_free(tok);
	return err;
}

/* An integer in [min, max] at where; names the problem otherwise. */
static int get_u32(const struct desired *d, struct json_object *v,
		   const char *where, const char *what, __u32 min, __u32 max,
		   __u32 *out)
{
	int64_t x;

	if (!json_object_is_type(v, json_type_int))
		return bad(d, where, "%s must be an integer", what);
	x = json_object_get_int64(v);
	if (x < 0 && min == 0)
		return bad(d, where, "negative %s", what);
	if (x < min || x > max)
		return bad(d, where, "%s %lld out of range (%u-%u)", what,
			   (long long)x, min, max);
	*out = x;
	return 0;
}

static int get_string(const struct desired *d, struct json_object *v,
		      const char *where, const char **out)
{
	if (!json_object_is_type(v, json_type_string))
		return bad(d, where, "must be a string");
	*out = json_object_get_string(v);
	return 0;
}

static int check_config(struct desired *d, struct json_object *cfg)
{
	const struct xlb_setting *s;
	struct xlb_config scratch = {};
	char where[96];
	const char *why;

	if (!json_object_is_type(cfg, json_type_object))
		return bad(d, "config", "must be an object");
	json_object_object_foreach(cfg, key, val) {
		snprintf(where, sizeof(where), "config.%.64s", key);
		s = xlb_setting_find(key);
		if (!s || strchr(key, '-'))
			return bad(d, where, "unknown setting");
		if (xlb_setting_from_json(s, &scratch, val, &why))
			return bad(d, where, "%s", why);
		d->seed |= xlb_setting_is_seed(s) && val;
	}
	d->config = cfg;
	return 0;
}

/* A "health" object at where. */
static int check_health(struct desired *d, struct json_object *o,
			const char *where, struct xlb_hc_config *hc)
{
	const char *key, *why;
	char at[256];

	if (!xlb_hc_from_json(o, hc, &key, &why))
		return 0;
	if (!key)
		return bad(d, where, "%s", why);
	snprintf(at, sizeof(at), "%.150s.%.64s", where, key);
	return bad(d, at, "%s", why);
}

static int check_backend(struct desired *d, struct json_object *b,
			 const char *where, struct xlb_want *w,
			 struct xlb_hc_config *hc)
{
	bool have_addr = false;
	char at[256];
	const char *text = NULL, *why = NULL;
	int err;

	if (!json_object_is_type(b, json_type_object))
		return bad(d, where, "must be an object");
	w->weight = 1;
	json_object_object_foreach(b, key, val) {
		snprintf(at, sizeof(at), "%.150s.%.64s", where, key);
		if (!strcmp(key, "addr")) {
			err = get_string(d, val, at, &text);
			if (err)
				return err;
			if (xlb_addr_parse(text, w->addr, &w->family, &why))
				return bad(d, at, "bad address '%s': %s", text, why);
			have_addr = true;
		} else if (!strcmp(key, "weight")) {
			err = get_u32(d, val, at, "weight", 0, XLB_MAX_WEIGHT,
				      &w->weight);
			if (err)
				return err;
		} else if (!strcmp(key, "health")) {
			err = check_health(d, val, at, hc);
			if (err)
				return err;
		} else if (!xlb_show_observed(true, key)) {
			return bad(d, at, "unknown key");
		}
	}
	if (!have_addr)
		return bad(d, where, "missing \"addr\"");
	return 0;
}

/* A stateless VIP's "history", read once its backends are: an entry
 * names one of them. */
static int check_history(struct desired *d, struct json_object *history,
			 struct file_vip *fv)
{
	char at[64], name[XLB_VIP_STRLEN];
	const char *why;
	size_t i;
	int err;

	snprintf(at, sizeof(at), "%s.history", fv->where);
	if (!(fv->mode & XLB_VIP_F_STATELESS))
		return bad(d, at, "only a stateless VIP has a history");
	if (xlb_history_init(&fv->hist, fv->m)) {
		p_err("out of memory");
		return -ENOMEM;
	}
	err = xlb_history_from_json(history, fv->want, fv->n,
				    xlb_history_now(), &fv->hist, &why, &i);
	if (!err)
		return 0;
	if (i != XLB_HISTORY_WHOLE)
		snprintf(at, sizeof(at), "%s.history[%zu]", fv->where, i);
	bad(d, at, "%s (VIP %s)", why, xlb_vip_str(&fv->key, name, sizeof(name)));
	return err;
}

/* "allow" or "deny": an array of prefixes of the VIP's family. The VIP
 * may come later in the object: its family is known once it is parsed,
 * so "vip" is looked up here. */
static int check_src(struct desired *d, struct json_object *o,
		     struct json_object *a, const char *at,
		     struct file_vip *fv, bool deny)
{
	struct json_object *vip, *item;
	struct xlb_vip_key key;
	const char *why;
	char msg[160];
	size_t i, n;

	if (!json_object_is_type(a, json_type_array))
		return bad(d, at, "must be an array of prefixes");
	/* A missing or bad "vip" is the object's error, told by check_vip(). */
	if (!json_object_object_get_ex(o, "vip", &vip) ||
	    !json_object_is_type(vip, json_type_string) ||
	    xlb_vip_parse(json_object_get_string(vip), &key, &why))
		return 0;
	n = json_object_array_length(a);
	for (i = 0; i < n; i++) {
		item = json_object_array_get_idx(a, i);
		if (!json_object_is_type(item, json_type_string))
			return bad(d, at, "[%zu] must be a string", i);
		if (xlb_src_add(json_object_get_string(item), key.family, deny,
				fv->src, msg, sizeof(msg)))
			return bad(d, at, "%s", msg);
	}
	return 0;
}

static int check_vip(struct desired *d, struct json_object *o,
		     struct file_vip *fv)
{
	struct json_object *backends = NULL;
	struct json_object *history = NULL;
	bool have_vip = false, encap = false, prefix_given = false;
	__u32 prefix = 0;
	char at[256], why_src[160];
	const char *text = NULL, *why = NULL;
	size_t i;
	int err;

	if (!json_object_is_type(o, json_type_object))
		return bad(d, fv->where, "must be an object");
	fv->m = XLB_DEFAULT_TABLE_SIZE;
	fv->src = calloc(1, sizeof(*fv->src));
	if (!fv->src) {
		p_err("out of memory");
		return -ENOMEM;
	}
	json_object_object_foreach(o, key, val) {
		snprintf(at, sizeof(at), "%.150s.%.64s", fv->where, key);
		if (!strcmp(key, "vip")) {
			err = get_string(d, val, at, &text);
			if (err)
				return err;
			if (xlb_vip_parse(text, &fv->key, &why))
				return bad(d, at, "bad VIP '%s': %s", text, why);
			have_vip = true;
		} else if (!strcmp(key, "table_size")) {
			if (!json_object_is_type(val, json_type_int))
				return bad(d, at, "table size must be an integer");
			if (json_object_get_int64(val) < 0 ||
			    json_object_get_int64(val) > UINT32_MAX)
				return bad(d, at, "table size out of range (%d-%d)",
					   XLB_MIN_TABLE_SIZE, XLB_MAX_TABLE_SIZE);
			fv->m = json_object_get_int64(val);
			if (xlb_table_size_check(fv->m, &why))
				return bad(d, at, "%s", why);
		} else if (!strcmp(key, "encap")) {
			err = get_string(d, val, at, &text);
			if (err)
				return err;
			if (xlb_encap_parse(text, &fv->mode, &why))
				return bad(d, at, "bad encapsulation '%s': %s",
					   text, why);
			encap = true;
		} else if (!strcmp(key, "mode")) {
			err = get_string(d, val, at, &text);
			if (err)
				return err;
			if (xlb_mode_parse(text, &fv->mode, &why))
				return bad(d, at, "bad mode '%s': %s", text, why);
		} else if (!strcmp(key, "hash")) {
			err = get_string(d, val, at, &text);
			if (err)
				return err;
			if (xlb_hash_parse(text, &fv->mode, &why))
				return bad(d, at, "bad hash '%s': %s", text, why);
		} else if (!strcmp(key, "ping")) {
			if (!json_object_is_type(val, json_type_boolean))
				return bad(d, at, "must be true or false");
			fv->mode = json_object_get_boolean(val) ?
				   fv->mode & ~XLB_VIP_F_NO_PING :
				   fv->mode | XLB_VIP_F_NO_PING;
		} else if (!strcmp(key, "affinity_prefix")) {
			if (!json_object_is_type(val, json_type_int) ||
			    json_object_get_int64(val) < 1 ||
			    json_object_get_int64(val) > 128)
				return bad(d, at, "affinity prefix must be an integer 1..128");
			prefix = json_object_get_int64(val);
			prefix_given = true;
		} else if (!strcmp(key, "allow") || !strcmp(key, "deny")) {
			err = check_src(d, o, val, at, fv, !strcmp(key, "deny"));
			if (err)
				return err;
		} else if (!strcmp(key, "history")) {
			history = val;
		} else if (!strcmp(key, "backends")) {
			if (!json_object_is_type(val, json_type_array))
				return bad(d, at, "must be an array");
			backends = val;
		} else if (!strcmp(key, "health")) {
			err = check_health(d, val, at, &fv->hc);
			if (err)
				return err;
		} else if (!xlb_show_observed(false, key)) {
			return bad(d, at, "unknown key");
		}
	}
	if (!have_vip)
		return bad(d, fv->where, "missing \"vip\"");
	if (xlb_src_check(fv->src, why_src, sizeof(why_src)))
		return bad(d, fv->where, "%s", why_src);
	if (fv->mode & XLB_VIP_F_STATELESS && !encap)
		fv->mode |= XLB_VIP_F_GUE;
	if (prefix_given) {
		if (!(fv->mode & XLB_VIP_F_HASH_SRC))
			return bad(d, fv->where, "\"affinity_prefix\" needs \"hash\": \"src-ip\"");
		fv->mode |= prefix << XLB_VIP_AFFINITY_SHIFT;
	}
	fv->mode = xlb_vip_mode_complete(fv->mode, fv->key.family);
	if (xlb_vip_mode_check(fv->mode, fv->key.family, &why))
		return bad(d, fv->where, "%s", why);
	fv->n = backends ? json_object_array_length(backends) : 0;
	if (fv->n > XLB_BACKEND_IDS)
		return bad(d, fv->where, "%zu backends: the limit is %d over all VIPs",
			   fv->n, XLB_BACKEND_IDS);
	fv->want = calloc(fv->n ? fv->n : 1, sizeof(*fv->want));
	fv->be_hc = calloc(fv->n ? fv->n : 1, sizeof(*fv->be_hc));
	if (!fv->want || !fv->be_hc) {
		p_err("out of memory");
		return -ENOMEM;
	}
	snprintf(at, sizeof(at), "%s.health", fv->where);
	if (xlb_hc_check(NULL, &fv->hc, &why))
		return bad(d, at, "%s", why);
	if (xlb_hc_port_check(NULL, &fv->hc, fv->key.port, &why))
		return bad(d, at, "%s", why);
	for (i = 0; i < fv->n; i++) {
		snprintf(at, sizeof(at), "%s.backends[%zu]", fv->where, i);
		err = check_backend(d, json_object_array_get_idx(backends, i),
				    at, &fv->want[i], &fv->be_hc[i]);
		if (err)
			return err;
		if (xlb_hc_check(&fv->hc, &fv->be_hc[i], &why) ||
		    xlb_hc_port_check(&fv->hc, &fv->be_hc[i], fv->key.port,
				      &why))
			return bad(d, at, "health: %s", why);
	}
	return history ? check_history(d, history, fv) : 0;
}

/* Everything that can be checked without the instance. */
static int check_file(struct desired *d)
{
	struct json_object *vips = NULL;
	char name[XLB_VIP_STRLEN];
	size_t i, j, n, prefixes = 0;
	int err;

	if (!json_object_is_type(d->root, json_type_object))
		return bad(d, "", "the top level must be an object");
	json_object_object_foreach(d->root, key, val) {
		if (!strcmp(key, "config")) {
			err = check_config(d, val);
			if (err)
				return err;
		} else if (!strcmp(key, "vips")) {
			if (!json_object_is_type(val, json_type_array))
				return bad(d, "vips", "must be an array");
			vips = val;
		} else if (!xlb_show_observed_top(key)) {
			return bad(d, key, "unknown key");
		}
	}
	if (!vips)
		return 0;
	d->has_vips = true;
	n = json_object_array_length(vips);
	if (n > XLB_MAX_VIPS)
		return bad(d, "vips", "%zu VIPs: the limit is %d", n,
			   XLB_MAX_VIPS);
	d->vips = calloc(n ? n : 1, sizeof(*d->vips));
	if (!d->vips) {
		p_err("out of memory");
		return -ENOMEM;
	}
	d->n_vips = n;
	for (i = 0; i < d->n_vips; i++) {
		snprintf(d->vips[i].where, sizeof(d->vips[i].where),
			 "vips[%zu]", i);
		err = check_vip(d, json_object_array_get_idx(vips, i),
				&d->vips[i]);
		if (err)
			return err;
		prefixes += d->vips[i].src->n;
		if (prefixes > XLB_SRC_MAX)
			return bad(d, d->vips[i].where,
				   "more than %d source prefixes in all (the limit)",
				   XLB_SRC_MAX);
		for (j = 0; j < i; j++)
			if (!memcmp(&d->vips[j].key, &d->vips[i].key,
				    sizeof(d->vips[i].key)))
				return bad(d, d->vips[i].where,
					   "VIP %s listed twice (also %s)",
					   xlb_vip_str(&d->vips[i].key, name,
						       sizeof(name)),
					   d->vips[j].where);
	}
	return 0;
}

static bool in_file(const struct desired *d, const struct xlb_vip_key *key)
{
	size_t i;

	for (i = 0; i < d->n_vips; i++)
		if (!memcmp(&d->vips[i].key, key, sizeof(*key)))
			return true;
	return false;
}

/* Check the VIPs against the instance: none an address of its host (asked
 * in its namespace), limits as they evolve while the changes are made in
 * order (deletions first, then the file's order). */
static int check_against(const struct desired *d, const struct xlb_state *st)
{
	static __u32 ids[XLB_MAX_BACKENDS];
	size_t vips_used = st->n_vips, ids_used, i;
	const struct file_vip *fv;
	struct xlb_vip_diff diff;
	char what[160];
	int err;

	ids_used = xlb_state_backends_in_use(st);
	for (i = 0; d->has_vips && i < st->n_vips; i++) {
		if (in_file(d, &st->vips[i].key))
			continue;
		vips_used--;
		ids_used -= xlb_state_vip_backends(st, st->vips[i].vip.id, ids);
	}
	for (i = 0; i < d->n_vips; i++) {
		fv = &d->vips[i];
		snprintf(what, sizeof(what), "%s: %s", d->file, fv->where);
		err = xlb_vip_local_check(&fv->key, what) ?:
		      xlb_vip_check(st, &fv->key, fv->m, fv->want, fv->n,
				    XLB_MAX_VIPS - vips_used,
				    XLB_BACKEND_IDS - ids_used, what);
		if (err)
			return err;
		xlb_vip_diff(st, &fv->key, fv->m, fv->want, fv->n, &diff);
		vips_used += !diff.exists;
		ids_used += diff.adds;
		ids_used -= diff.removes;
	}
	return 0;
}

/* The health settings of a VIP that converged, and of its backends. */
static int converge_health(struct xlb_instance *inst, struct xlb_state *st,
			   const struct file_vip *fv)
{
	const struct xlb_state_vip *v = xlb_state_vip_find(st, &fv->key);
	size_t i;
	int err;

	err = xlb_hc_vip_write(inst, st, v->vip.id, &fv->hc);
	for (i = 0; i < fv->n && !err; i++)
		err = xlb_hc_backend_write(inst, st,
			xlb_state_backend_find(st, v->vip.id, fv->want[i].addr,
					       fv->want[i].family),
			&fv->be_hc[i]);
	return err;
}

/*
 * The steps, in the order check_against() counted: settings, deletions,
 * then the file's VIPs. Run once, as the plan of
 * xlb_update_all_or_nothing(), which makes every table and records every
 * write before its commit performs them: it prints nothing but errors.
 */
/* Which VIPs of the file have fewer prefixes than they have now. */
static int src_shrinks(const struct xlb_instance *inst, struct xlb_state *st,
		       const struct desired *d)
{
	const struct xlb_state_vip *v;
	struct xlb_src_list *now;
	struct xlb_src_all all;
	size_t i;
	int err;

	now = malloc(sizeof(*now));
	if (!now) {
		p_err("out of memory");
		return -ENOMEM;
	}
	err = xlb_src_read_all(inst, &all);
	for (i = 0; i < d->n_vips && !err; i++) {
		v = xlb_state_vip_find(st, &d->vips[i].key);
		now->n = 0;
		if (v)
			xlb_src_of(&all, v, now);
		d->vips[i].shrinks = d->vips[i].src->n <= now->n;
	}
	xlb_src_all_free(&all);
	free(now);
	return err;
}

static int converge(struct xlb_instance *inst, struct xlb_state *st,
		    void *arg)
{
	const struct desired *d = arg;
	struct xlb_config cfg = st->config;
	const struct xlb_setting *s;
	const char *why;
	__u32 i;
	int err;

	if (d->config) {
		json_object_object_foreach(d->config, key, val) {
			s = xlb_setting_find(key);
			xlb_setting_from_json(s, &cfg, val, &why);
		}
		err = xlb_config_write(inst, st, &cfg);
		if (err)
			return err;
	}
	for (i = 0; d->has_vips && i < st->n_vips;) {
		if (in_file(d, &st->vips[i].key)) {
			i++;
			continue;
		}
		/* Removal shifts the rest of the sorted array down. */
		err = xlb_vip_remove(inst, st, &st->vips[i].key);
		if (err)
			return err;
	}
	err = src_shrinks(inst, st, d);
	for (i = 0; i < d->n_vips && !err; i++) {
		/* A new VIP with source ranges is born closed, then opened
		 * to its lists (update.h). */
		err = xlb_vip_converge_mode(inst, st, &d->vips[i].key,
					    d->vips[i].m, d->vips[i].mode |
					    (d->vips[i].src->n ?
					     XLB_VIP_F_SRC_LIST |
					     XLB_VIP_F_SRC_DENY : 0),
					    d->vips[i].hist.slot ?
					    &d->vips[i].hist : NULL,
					    d->vips[i].want, d->vips[i].n) ?:
		      converge_health(inst, st, &d->vips[i]);
	}
	/* The lists that shrink first, then those that grow: the trie
	 * never holds more than the limit on the way to a file that fits. */
	for (i = 0; i < d->n_vips && !err; i++)
		if (d->vips[i].shrinks)
			err = xlb_vip_src_set(inst, st, &d->vips[i].key,
					      d->vips[i].src);
	for (i = 0; i < d->n_vips && !err; i++)
		if (!d->vips[i].shrinks)
			err = xlb_vip_src_set(inst, st, &d->vips[i].key,
					      d->vips[i].src);
	return err;
}

static void desired_free(struct desired *d)
{
	size_t i;

	for (i = 0; i < d->n_vips; i++) {
		free(d->vips[i].want);
		free(d->vips[i].be_hc);
		free(d->vips[i].src);
		xlb_history_free(&d->vips[i].hist);
	}
	free(d->vips);
	json_object_put(d->root);
}

static int apply_help(void)
{
	printf("Usage: " APPLY_USAGE "\n"
	       "Make the instance what the JSON file (or stdin) describes:\n"
	       "  {\"config\": {\"seed\": HEX, \"src4\": ADDR, \"src6\": ADDR,\n"
	       "              \"udp_timeout\": S, ...: the settings of `xlb config`,\n"
	       "              with _ for -},\n"
	       "   \"vips\": [{\"vip\": \"ADDR:PORT/PROTO\", \"table_size\": M,\n"
	       "             \"encap\": \"ipip\" | \"gue\",\n"
	       "             \"mode\": \"tracked\" | \"stateless\",\n"
	       "             \"hash\": \"5-tuple\" | \"src-ip\", \"affinity_prefix\": LEN,\n"
	       "             \"ping\": true | false,\n"
	       "             \"allow\": [PREFIX, ...], \"deny\": [PREFIX, ...],\n"
	       "             \"history\": [{\"prev\": ADDR, \"since\": S,\n"
	       "                          \"slots\": \"FIRST-LAST,N,...\"}],\n"
	       "             \"health\": {\"kind\": \"tcp\", \"interval_ms\": MS, ...},\n"
	       "             \"backends\": [{\"addr\": ADDR, \"weight\": W,\n"
	       "                           \"health\": {...}}]}]}\n"
	       "The file must be strict JSON (RFC 8259: no comments, no trailing\n"
	       "commas, no key twice in an object). It is checked whole, and every\n"
	       "table it needs is made, before anything changes; then only what\n"
	       "differs is written (unchanged VIPs keep their tables). VIPs not in\n"
	       "\"vips\" are deleted; settings not in \"config\" keep their value.\n"
	       "\"health\" holds the health settings as `xlb show -j` prints them\n"
	       "(kind, port, interval_ms, timeout_ms, rise, fall, http_path,\n"
	       "http_status, udp_send, udp_expect, on_down); a VIP or backend\n"
	       "without it has none set. Health found by the checker is kept.\n"
	       "`xlb show -j` output is accepted (what it observed is skipped).\n"
	       "--keep-on-error (xlb.service's start): when the file cannot be\n"
	       "read or is refused and the instance already holds VIPs, they are\n"
	       "kept and the command exits 0 after the error and a warning; without\n"
	       "VIPs, or without the option, the error is the exit status.\n");
	printf("A \"history\" entry is refused unless its \"prev\" is one of the VIP's\n"
	       "backends in the file (weight 0 too), its \"since\" at most %d s ahead\n"
	       "of this clock, and its \"slots\" at least one, within the table and\n"
	       "named by no other entry nor twice.\n", XLB_HISTORY_SKEW_S);
	return 0;
}

/*
 * --keep-on-error, for the unit's start: a file that cannot be read or is
 * refused leaves the instance as it is (xlb apply changes nothing then);
 * when the pinned maps hold VIPs, those go on serving and the start
 * succeeds with a warning. An instance without VIPs has nothing worth
 * keeping: the error stands.
 */
static int keep_on_error(const struct desired *d, const struct xlb_state *st,
			 int err)
{
	if (!st || !st->n_vips)
		return err;
	p_info("xlb: warning: %s was not applied (see above): the instance keeps its configuration (%u VIP%s) and goes on serving it; fix the file and run `xlb apply %s` or reload the unit",
	       d->file, st->n_vips, st->n_vips == 1 ? "" : "s", d->file);
	return 0;
}

int do_apply(int argc, char **argv)
{
	struct desired d = {};
	struct xlb_instance inst;
	struct xlb_state *st = NULL;
	bool keep = false;
	const struct xlb_opt opts[] = {
		XLB_OPT_FLAG("--keep-on-error", &keep),
		{ NULL },
	};
	char *buf = NULL;
	size_t len = 0, i;
	int err, file_err;

	err = xlb_cmd_args(opts, &argc, argv, apply_help, 1, APPLY_USAGE);
	if (err)
		return err;
	d.file = strcmp(argv[0], "-") ? argv[0] : "<stdin>";
	file_err = read_all(argv[0], &buf, &len);
	if (!file_err)
		file_err = parse_json(&d, buf, len);
	free(buf);
	if (!file_err)
		file_err = check_file(&d);
	if (file_err && !keep) {
		err = file_err;
		goto out;
	}
	err = xlb_update_open(&inst, &xlb_opts.instance, &st,
			      !file_err && d.seed);
	if (err)
		goto out;
	err = file_err ?: check_against(&d, st);
	if (!err)
		err = xlb_update_all_or_nothing(&inst, st, converge, &d);
	for (i = 0; !err && i < d.n_vips; i++)
		xlb_note_sources(st, d.vips[i].want, d.vips[i].n);
	if (err && keep)
		err = keep_on_error(&d, st, err);
	xlb_update_close(&inst, st);
out:
	desired_free(&d);
	return err;
}
