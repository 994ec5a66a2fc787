// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The record of a host's setup as JSON (host_record.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <json-c/json.h>

#include "addr.h"
#include "host_record.h"
#include "json_strict.h"

/* Our own file, but read as strictly as any input: a record that says
 * something else than it reads would undo the wrong things. */
#define RECORD_MAX_BYTES	(4 << 20)

static const struct json_strict_count record_counts[] = {
	{ "settings.vips", XLB_DECAP_ADDRS_MAX, "VIPs", "" },
	{ "settings.locals", XLB_DECAP_ADDRS_MAX, "addresses", "" },
	{ "settings.balancers", XLB_DECAP_PREFIXES_MAX, "prefixes", "" },
	{ "settings.fleet", XLB_DECAP_PREFIXES_MAX, "prefixes", "" },
	{ "settings.egress", XLB_DECAP_EGRESS_MAX, "interfaces", "" },
	{ "changed.sysctls", XLB_HOST_MAX_SYSCTLS, "sysctls", "" },
	{ "changed.vips_added", XLB_DECAP_ADDRS_MAX, "VIPs", "" },
	{ "changed.neighbours", XLB_DECAP_PREFIXES_MAX, "neighbours", "" },
};

static const struct json_strict_limits record_limits = {
	.max_depth = 4,
	.counts = record_counts,
	.n_counts = sizeof(record_counts) / sizeof(record_counts[0]),
};

const char *xlb_host_decap_name(enum xlb_host_decap decap)
{
	return decap == XLB_HOST_DECAP_KERNEL ? "kernel" : "xdp";
}

static struct json_object *addr_json(const struct xlb_host_addr *a)
{
	char s[XLB_ADDR_STRLEN];

	return json_object_new_string(xlb_addr_str(a->addr, a->family, s, sizeof(s)));
}

struct json_object *xlb_host_addrs_json(const struct xlb_host_addr *a, __u32 n)
{
	struct json_object *arr = json_object_new_array();
	__u32 i;

	for (i = 0; i < n; i++)
		json_object_array_add(arr, addr_json(&a[i]));
	return arr;
}

struct json_object *xlb_host_prefixes_json(const struct xlb_host_prefix *p,
					   __u32 n)
{
	struct json_object *arr = json_object_new_array();
	char s[XLB_PREFIX_STRLEN];
	__u32 i;

	for (i = 0; i < n; i++)
		json_object_array_add(arr, json_object_new_string(
			xlb_prefix_str(p[i].addr, p[i].family, p[i].len, s, sizeof(s))));
	return arr;
}

struct json_object *xlb_host_changes_json(const struct xlb_host_record *rec)
{
	struct json_object *o = json_object_new_object(), *arr, *e;
	char name[XLB_SYSCTL_KEY_LEN];
	__u32 i;

	arr = json_object_new_array();
	for (i = 0; i < rec->n_sysctls; i++) {
		e = json_object_new_object();
		json_object_object_add(e, "key", json_object_new_string(
			xlb_sysctl_name(rec->sysctls[i].key, name, sizeof(name))));
		json_object_object_add(e, "old",
				       json_object_new_string(rec->sysctls[i].old));
		json_object_array_add(arr, e);
	}
	json_object_object_add(o, "sysctls", arr);
	json_object_object_add(o, "vips_added",
			       xlb_host_addrs_json(rec->vips_added, rec->n_vips_added));
	arr = json_object_new_array();
	for (i = 0; i < rec->n_neigh; i++) {
		e = json_object_new_object();
		json_object_object_add(e, "addr", addr_json(&rec->neigh[i].addr));
		json_object_object_add(e, "dev",
				       json_object_new_string(rec->neigh[i].dev));
		json_object_object_add(e, "ifindex",
				       json_object_new_int(rec->neigh[i].ifindex));
		json_object_array_add(arr, e);
	}
	json_object_object_add(o, "neighbours", arr);
	return o;
}

static struct json_object *record_json(const struct xlb_host_record *rec)
{
	const struct xlb_host_spec *s = &rec->spec;
	struct json_object *o = json_object_new_object(), *set, *egress;
	__u32 i;

	json_object_object_add(o, "netns_cookie",
			       json_object_new_uint64(rec->netns_cookie));
	json_object_object_add(o, "device", json_object_new_string(s->dev));
	json_object_object_add(o, "ifindex", json_object_new_int(rec->ifindex));
	json_object_object_add(o, "decap",
			       json_object_new_string(xlb_host_decap_name(s->decap)));
	set = json_object_new_object();
	json_object_object_add(set, "vips", xlb_host_addrs_json(s->vips, s->n_vips));
	json_object_object_add(set, "locals",
			       xlb_host_addrs_json(s->locals, s->n_locals));
	json_object_object_add(set, "balancers",
			       xlb_host_prefixes_json(s->balancers, s->n_balancers));
	json_object_object_add(set, "fleet",
			       xlb_host_prefixes_json(s->fleet, s->n_fleet));
	egress = json_object_new_array();
	for (i = 0; i < s->n_egress; i++)
		json_object_array_add(egress, json_object_new_string(s->egress[i]));
	json_object_object_add(set, "egress", egress);
	json_object_object_add(set, "gue_port", json_object_new_int(s->gue_port));
	json_object_object_add(o, "settings", set);
	json_object_object_add(o, "pin_dir", json_object_new_string(rec->pin_dir));
	json_object_object_add(o, "tunnels", json_object_new_boolean(rec->tunnels));
	json_object_object_add(o, "changed", xlb_host_changes_json(rec));
	return o;
}

bool xlb_host_record_equal(const struct xlb_host_record *a,
			   const struct xlb_host_record *b)
{
	struct json_object *ja = record_json(a), *jb = record_json(b);
	bool same = !strcmp(json_object_to_json_string(ja),
			    json_object_to_json_string(jb));

	json_object_put(ja);
	json_object_put(jb);
	return same;
}

int xlb_host_record_write(const char *path, const struct xlb_host_record *rec)
{
	struct json_object *o = record_json(rec);
	char tmp[PATH_MAX];
	const char *text;
	size_t len;
	int fd, err = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp)) {
		json_object_put(o);
		return -ENAMETOOLONG;
	}
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
					      JSON_C_TO_STRING_NOSLASHESCAPE);
	len = strlen(text);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	if (write(fd, text, len) != (ssize_t)len || write(fd, "\n", 1) != 1 ||
	    fsync(fd))
		err = errno ? -errno : -EIO;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
out:
	json_object_put(o);
	return err;
}

/* Reading: each helper returns 0 or -EINVAL with why saying which key. */
struct reader {
	char *why;
	size_t len;
};

static int bad(struct reader *r, const char *key, const char *what)
{
	snprintf(r->why, r->len, "%s: %s", key, what);
	return -EINVAL;
}

static struct json_object *member(struct json_object *o, const char *key,
				  enum json_type type)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, type))
		return NULL;
	return v;
}

static int get_str(struct reader *r, struct json_object *o, const char *key,
		   char *out, size_t size)
{
	struct json_object *v = member(o, key, json_type_string);

	if (!v)
		return bad(r, key, "missing or not a string");
	if ((size_t)json_object_get_string_len(v) >= size)
		return bad(r, key, "too long");
	strcpy(out, json_object_get_string(v));
	return 0;
}

static int get_int(struct reader *r, struct json_object *o, const char *key,
		   __u64 max, __u64 *out)
{
	struct json_object *v = member(o, key, json_type_int);

	if (!v || json_object_get_int64(v) < 0 || json_object_get_uint64(v) > max)
		return bad(r, key, "missing or not a number in range");
	*out = json_object_get_uint64(v);
	return 0;
}

/* Each element of the array at key (at most max of them, their number
 * into *n) read by one(r, key, element, i, out). */
typedef int (*element_fn)(struct reader *r, const char *key,
			  struct json_object *v, __u32 i, void *out);

static int get_array(struct reader *r, struct json_object *o, const char *key,
		     __u32 max, __u32 *n, element_fn one, void *out)
{
	struct json_object *arr = member(o, key, json_type_array);
	__u32 i;
	int err;

	if (!arr || json_object_array_length(arr) > max)
		return bad(r, key, "missing, not an array, or too long");
	*n = json_object_array_length(arr);
	for (i = 0; i < *n; i++) {
		err = one(r, key, json_object_array_get_idx(arr, i), i, out);
		if (err)
			return err;
	}
	return 0;
}

static int one_addr(struct reader *r, const char *key, struct json_object *v,
		    __u32 i, void *out)
{
	struct xlb_host_addr *a = (struct xlb_host_addr *)out + i;
	const char *why;

	memset(a, 0, sizeof(*a));
	if (!json_object_is_type(v, json_type_string) ||
	    xlb_addr_parse(json_object_get_string(v), a->addr, &a->family, &why))
		return bad(r, key, "not an address");
	return 0;
}

static int one_prefix(struct reader *r, const char *key, struct json_object *v,
		      __u32 i, void *out)
{
	struct xlb_host_prefix *p = (struct xlb_host_prefix *)out + i;
	const char *why;

	memset(p, 0, sizeof(*p));
	if (!json_object_is_type(v, json_type_string) ||
	    xlb_prefix_parse(json_object_get_string(v), p->addr, &p->family,
			     &p->len, &why))
		return bad(r, key, "not a prefix");
	return 0;
}

static int one_egress(struct reader *r, const char *key, struct json_object *v,
		      __u32 i, void *out)
{
	char (*egress)[IF_NAMESIZE] = out;

	if (!json_object_is_type(v, json_type_string) ||
	    (size_t)json_object_get_string_len(v) >= IF_NAMESIZE)
		return bad(r, key, "not an interface name");
	strcpy(egress[i], json_object_get_string(v));
	return 0;
}

static int one_sysctl(struct reader *r, const char *key, struct json_object *v,
		      __u32 i, void *out)
{
	struct xlb_host_sysctl *sc = (struct xlb_host_sysctl *)out + i;
	char name[XLB_SYSCTL_KEY_LEN];
	int err;

	err = get_str(r, v, "key", name, sizeof(name)) ?:
	      get_str(r, v, "old", sc->old, sizeof(sc->old));
	if (err)
		return err;
	/* The name's '.' and '/' swapped back: its path. */
	xlb_sysctl_name(name, sc->key, sizeof(sc->key));
	if (strncmp(sc->key, "net/", 4) || strstr(sc->key, ".."))
		return bad(r, key, "not a network sysctl");
	return 0;
}

/* A next hop's address: a gateway's may be link-local (fe80::1), which
 * no VIP or tunnel address is, so not xlb_addr_parse(). */
static int one_hop(struct reader *r, const char *key, struct json_object *v,
		   struct xlb_host_addr *a)
{
	const char *s = v ? json_object_get_string(v) : NULL;

	memset(a, 0, sizeof(*a));
	if (s && inet_pton(AF_INET, s, a->addr) == 1)
		a->family = XLB_AF_INET;
	else if (s && inet_pton(AF_INET6, s, a->addr) == 1)
		a->family = XLB_AF_INET6;
	else
		return bad(r, key, "not an address");
	return 0;
}

static int one_neigh(struct reader *r, const char *key, struct json_object *v,
		     __u32 i, void *out)
{
	struct xlb_host_neigh *nb = (struct xlb_host_neigh *)out + i;
	__u64 ifindex = 0;
	int err;

	err = one_hop(r, key, member(v, "addr", json_type_string), &nb->addr) ?:
	      get_str(r, v, "dev", nb->dev, sizeof(nb->dev)) ?:
	      get_int(r, v, "ifindex", INT32_MAX, &ifindex);
	nb->ifindex = ifindex;
	return err;
}

static int get_settings(struct reader *r, struct json_object *set,
			struct xlb_host_spec *s)
{
	__u64 port = 0;
	int err;

	err = get_array(r, set, "vips", XLB_DECAP_ADDRS_MAX, &s->n_vips,
			one_addr, s->vips) ?:
	      get_array(r, set, "locals", XLB_DECAP_ADDRS_MAX, &s->n_locals,
			one_addr, s->locals) ?:
	      get_array(r, set, "balancers", XLB_DECAP_PREFIXES_MAX,
			&s->n_balancers, one_prefix, s->balancers) ?:
	      get_array(r, set, "fleet", XLB_DECAP_PREFIXES_MAX, &s->n_fleet,
			one_prefix, s->fleet) ?:
	      get_array(r, set, "egress", XLB_DECAP_EGRESS_MAX, &s->n_egress,
			one_egress, s->egress) ?:
	      get_int(r, set, "gue_port", 65535, &port);
	s->gue_port = port;
	return err;
}

static int get_changes(struct reader *r, struct json_object *ch,
		       struct xlb_host_record *rec)
{
	return get_array(r, ch, "sysctls", XLB_HOST_MAX_SYSCTLS, &rec->n_sysctls,
			 one_sysctl, rec->sysctls) ?:
	       get_array(r, ch, "vips_added", XLB_DECAP_ADDRS_MAX,
			 &rec->n_vips_added, one_addr, rec->vips_added) ?:
	       get_array(r, ch, "neighbours", XLB_DECAP_PREFIXES_MAX,
			 &rec->n_neigh, one_neigh, rec->neigh);
}

static int parse_record(struct reader *r, struct json_object *o,
			struct xlb_host_record *rec)
{
	struct json_object *set, *ch, *v;
	char decap[16];
	__u64 n;
	int err;

	memset(rec, 0, sizeof(*rec));
	if (!json_object_is_type(o, json_type_object))
		return bad(r, "record", "not an object");
	err = get_int(r, o, "netns_cookie", UINT64_MAX, &rec->netns_cookie) ?:
	      get_str(r, o, "device", rec->spec.dev, sizeof(rec->spec.dev)) ?:
	      get_int(r, o, "ifindex", INT32_MAX, &n) ?:
	      get_str(r, o, "decap", decap, sizeof(decap)) ?:
	      get_str(r, o, "pin_dir", rec->pin_dir, sizeof(rec->pin_dir));
	if (err)
		return err;
	rec->ifindex = n;
	if (!strcmp(decap, "xdp"))
		rec->spec.decap = XLB_HOST_DECAP_XDP;
	else if (!strcmp(decap, "kernel"))
		rec->spec.decap = XLB_HOST_DECAP_KERNEL;
	else
		return bad(r, "decap", "neither xdp nor kernel");
	v = member(o, "tunnels", json_type_boolean);
	set = member(o, "settings", json_type_object);
	ch = member(o, "changed", json_type_object);
	if (!v || !set || !ch)
		return bad(r, "record", "tunnels, settings or changed missing");
	rec->tunnels = json_object_get_boolean(v);
	return get_settings(r, set, &rec->spec) ?: get_changes(r, ch, rec);
}

static int read_text(const char *path, char **text, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	ssize_t got = 0;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(RECORD_MAX_BYTES + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (n < RECORD_MAX_BYTES &&
	       (got = read(fd, buf + n, RECORD_MAX_BYTES - n)) > 0)
		n += got;
	if (got < 0)
		err = -errno;
	else if (n == RECORD_MAX_BYTES)
		err = -EFBIG;
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return 0;
}

int xlb_host_record_read(const char *path, struct xlb_host_record *rec,
			 char *why, size_t len)
{
	struct reader r = { .why = why, .len = len };
	struct json_object *o;
	char *text = NULL;
	size_t n = 0;
	int err;

	err = read_text(path, &text, &n);
	if (err == -EFBIG)
		return bad(&r, "record", "larger than any record");
	if (err)
		return err;
	err = json_strict_check(text, n, &record_limits, why, len);
	if (err) {
		free(text);
		return -EINVAL;
	}
	o = json_tokener_parse(text);
	free(text);
	if (!o)
		return bad(&r, "record", "cannot be parsed");
	err = parse_record(&r, o, rec);
	json_object_put(o);
	return err;
}
