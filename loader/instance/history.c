// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A stateless VIP's history (see history.h). */
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "addr.h"
#include "history.h"
#include "update.h"

int xlb_history_init(struct xlb_history *h, __u32 m)
{
	memset(h, 0, sizeof(*h));
	h->slot = calloc(m ? m : 1, sizeof(*h->slot));
	if (!h->slot)
		return -ENOMEM;
	h->m = m;
	return 0;
}

void xlb_history_free(struct xlb_history *h)
{
	free(h->slot);
	free(h->e);
	memset(h, 0, sizeof(*h));
}

__u32 xlb_history_now(void)
{
	return (__u32)time(NULL);
}

__u32 xlb_history_keep(const struct xlb_config *cfg)
{
	return cfg->history_s ? cfg->history_s : XLB_HISTORY_DEFAULT_S;
}

/* The address of backend id, if the record is in use (REMOVED or not). */
static const struct xlb_backend *owner(const struct xlb_state *st, __u32 id)
{
	const struct xlb_backend *b;

	if (id == XLB_BACKEND_NONE || id >= XLB_MAX_BACKENDS)
		return NULL;
	b = &st->backends[id];
	return b->flags & XLB_BE_F_IN_USE ? b : NULL;
}

static bool same_addr(const struct xlb_hist_entry *e, const struct xlb_backend *b)
{
	return b && e->family == b->family &&
	       !memcmp(e->addr, b->addr, sizeof(e->addr));
}

/* Does e survive: young enough, its backend still the VIP's (live) and
 * not the slot's owner now? */
static bool keeps(const struct xlb_state *st, __u32 vip_id,
		  const struct xlb_hist_entry *e, const struct xlb_backend *cur,
		  __u32 now, __u32 keep_s)
{
	return (__u64)e->since + keep_s > now &&
	       xlb_state_backend_find(st, vip_id, e->addr, e->family) &&
	       !same_addr(e, cur);
}

/* The entry number of e in out, added if new; 0 when full. */
static __u16 entry_of(struct xlb_history *out, const struct xlb_hist_entry *e,
		      __u32 *cap)
{
	struct xlb_hist_entry *grown;
	__u32 i;

	for (i = out->n; i > 0; i--)
		if (!memcmp(&out->e[i - 1], e, sizeof(*e)))
			return i;
	if (out->n == XLB_HIST_MAX)
		return 0;
	if (out->n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		grown = realloc(out->e, *cap * sizeof(*grown));
		if (!grown)
			return 0;
		out->e = grown;
	}
	out->e[out->n++] = *e;
	return out->n;
}

int xlb_history_next(const struct xlb_state *st, __u32 vip_id,
		     const __u32 *old_slots, const struct xlb_history *old,
		     const __u32 *new_slots, __u32 now, __u32 keep_s,
		     struct xlb_history *out)
{
	const struct xlb_backend *cur, *was;
	struct xlb_hist_entry e;
	__u32 k, cap = 0;
	__u16 at;

	for (k = 0; k < out->m; k++) {
		cur = owner(st, new_slots[k]);
		was = old_slots ? owner(st, old_slots[k]) : NULL;
		out->slot[k] = 0;
		if (was && cur && (was->family != cur->family ||
				   memcmp(was->addr, cur->addr, sizeof(cur->addr)))) {
			memset(&e, 0, sizeof(e));
			memcpy(e.addr, was->addr, sizeof(e.addr));
			e.family = was->family;
			e.since = now;
		} else if (old && old->m == out->m && old->slot[k] &&
			   old->slot[k] <= old->n) {
			e = old->e[old->slot[k] - 1];
		} else {
			continue;
		}
		if (!keeps(st, vip_id, &e, cur, now, keep_s))
			continue;
		at = entry_of(out, &e, &cap);
		if (!at)
			return out->n == XLB_HIST_MAX ? -E2BIG : -ENOMEM;
		out->slot[k] = at;
	}
	return 0;
}

bool xlb_history_stale(const struct xlb_state *st, __u32 vip_id,
		       const struct xlb_history *h, const __u32 *slots,
		       __u32 now, __u32 keep_s)
{
	__u32 k;

	for (k = 0; k < h->m; k++)
		if (h->slot[k] && (h->slot[k] > h->n ||
		    !keeps(st, vip_id, &h->e[h->slot[k] - 1],
			   owner(st, slots[k]), now, keep_s)))
			return true;
	return false;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct xlb_hist_entry *x = a, *y = b;

	if (x->since != y->since)
		return x->since < y->since ? -1 : 1;
	if (x->family != y->family)
		return x->family - y->family;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

/* An entry and its index before the sort. */
struct numbered {
	struct xlb_hist_entry e;
	__u32 was;
};

static int numbered_cmp(const void *a, const void *b)
{
	const struct numbered *x = a, *y = b;

	return entry_cmp(&x->e, &y->e) ?: (x->was > y->was) - (x->was < y->was);
}

/*
 * Sort h's entries, the slots renumbered, in O(n log n): a history read
 * from a file may have tens of thousands of entries. *twice: the index of
 * the first entry equal to an earlier one, h->n when none. 0 or -ENOMEM
 * (h unchanged).
 */
static int sort_entries(struct xlb_history *h, __u32 *twice)
{
	struct numbered *sorted;
	__u16 *to;		/* entry number before -> after */
	__u32 i;

	*twice = h->n;
	sorted = malloc((h->n ? h->n : 1) * sizeof(*sorted));
	to = malloc((h->n + 1) * sizeof(*to));
	if (!sorted || !to) {
		free(sorted);
		free(to);
		return -ENOMEM;
	}
	for (i = 0; i < h->n; i++) {
		sorted[i].e = h->e[i];
		sorted[i].was = i;
	}
	qsort(sorted, h->n, sizeof(*sorted), numbered_cmp);
	to[0] = 0;
	for (i = 0; i < h->n; i++) {
		/* Equal entries sort by index: the later one is the second. */
		if (i && !entry_cmp(&sorted[i - 1].e, &sorted[i].e) &&
		    sorted[i].was < *twice)
			*twice = sorted[i].was;
		h->e[i] = sorted[i].e;
		to[sorted[i].was + 1] = i + 1;
	}
	for (i = 0; i < h->m; i++)
		if (h->slot[i] <= h->n)
			h->slot[i] = to[h->slot[i]];
	free(sorted);
	free(to);
	return 0;
}

void xlb_history_sort(struct xlb_history *h)
{
	__u32 twice;

	sort_entries(h, &twice);
}

bool xlb_history_equal(const struct xlb_history *a, const struct xlb_history *b)
{
	return a->m == b->m && a->n == b->n &&
	       !memcmp(a->slot, b->slot, a->m * sizeof(*a->slot)) &&
	       (!a->n || !memcmp(a->e, b->e, a->n * sizeof(*a->e)));
}

/*
 * The slots that name entry i as "FIRST-LAST,N,...", or NULL when out of
 * memory: one JSON value however scattered they are, so that a change
 * moving thousands of runs stays within apply's count of values.
 */
static char *slot_ranges(const struct xlb_history *h, __u32 i)
{
	/* "65535-65536," at most per run, a run at most every other slot */
	size_t size = 12 * ((size_t)h->m / 2 + 1) + 1, len = 0;
	char *s = malloc(size);
	__u32 k, first;

	if (!s)
		return NULL;
	s[0] = '\0';
	for (k = 0; k < h->m; k++) {
		if (h->slot[k] != i)
			continue;
		for (first = k; k + 1 < h->m && h->slot[k + 1] == i; k++)
			;
		len += snprintf(s + len, size - len, first == k ? "%s%u" : "%s%u-%u",
				len ? "," : "", first, k);
	}
	return s;
}

struct json_object *xlb_history_json(const struct xlb_history *h)
{
	struct json_object *arr = json_object_new_array(), *o;
	char text[XLB_ADDR_STRLEN], *slots;
	__u32 i;

	for (i = 1; i <= h->n; i++) {
		slots = slot_ranges(h, i);
		if (!slots) {
			json_object_put(arr);
			return NULL;
		}
		o = json_object_new_object();
		json_object_object_add(o, "prev", json_object_new_string(
			xlb_addr_str(h->e[i - 1].addr, h->e[i - 1].family,
				     text, sizeof(text))));
		json_object_object_add(o, "since",
				       json_object_new_int64(h->e[i - 1].since));
		json_object_object_add(o, "slots", json_object_new_string(slots));
		free(slots);
		json_object_array_add(arr, o);
	}
	return arr;
}

/* A JSON integer in [0, max]. */
static bool json_u32(struct json_object *v, __u32 max, __u32 *out)
{
	int64_t x;

	if (!v || !json_object_is_type(v, json_type_int))
		return false;
	x = json_object_get_int64(v);
	if (x < 0 || x > max)
		return false;
	*out = x;
	return true;
}

/* A slot number in [0, max] at *p, decimal without leading zeros;
 * -EINVAL if none, -ERANGE if beyond max. */
static int slot_number(const char **p, __u32 max, __u32 *out)
{
	const char *c = *p;
	__u64 x = 0;

	if (*c < '0' || *c > '9' || (c[0] == '0' && c[1] >= '0' && c[1] <= '9'))
		return -EINVAL;
	for (; *c >= '0' && *c <= '9'; c++) {
		x = x * 10 + (*c - '0');
		if (x > max)
			return -ERANGE;
	}
	*p = c;
	*out = x;
	return 0;
}

/*
 * Mark the slots of "FIRST-LAST,N,..." (sorted, apart, within the table,
 * at least one, none another entry's) as naming entry i.
 */
static int slot_ranges_parse(const char *s, struct xlb_history *h, __u32 i,
			     const char **why)
{
	__u32 first, last, k;
	bool any = false;
	__u64 next = 0;
	int err;

	if (!*s) {
		*why = "\"slots\" names no slot";
		return -EINVAL;
	}
	while (*s) {
		if (any && *s++ != ',')
			goto bad;
		err = slot_number(&s, h->m - 1, &first);
		last = first;
		if (!err && *s == '-') {
			s++;
			err = slot_number(&s, h->m - 1, &last);
			if (!err && last <= first)
				goto bad;
		}
		if (err == -ERANGE) {
			*why = "\"slots\" names a slot not within the table";
			return -EINVAL;
		}
		if (err)
			goto bad;
		if (first < next) {
			*why = h->slot[first] == i ?
			       "\"slots\" names a slot twice" :
			       "\"slots\" must be in ascending order, ranges apart";
			return -EINVAL;
		}
		for (k = first; k <= last; k++) {
			if (h->slot[k]) {
				*why = "\"slots\" names a slot an earlier entry names";
				return -EINVAL;
			}
			h->slot[k] = i;
		}
		next = (__u64)last + 1;
		any = true;
	}
	return 0;
bad:
	*why = "\"slots\" must be a string of slots and ranges FIRST-LAST within the table, such as \"0-4,9\"";
	return -EINVAL;
}

/* An entry's key among the backends: its address, no time. */
static void backend_key(struct xlb_hist_entry *key, const __be32 addr[4],
			__u8 family)
{
	memset(key, 0, sizeof(*key));
	memcpy(key->addr, addr, sizeof(key->addr));
	key->family = family;
}

/* The backends as sorted keys, for one search per entry; NULL: no memory. */
static struct xlb_hist_entry *backend_keys(const struct xlb_want *backends,
					   size_t n)
{
	struct xlb_hist_entry *keys = malloc((n ? n : 1) * sizeof(*keys));
	size_t i;

	if (!keys)
		return NULL;
	for (i = 0; i < n; i++)
		backend_key(&keys[i], backends[i].addr, backends[i].family);
	qsort(keys, n, sizeof(*keys), entry_cmp);
	return keys;
}

#define STR_(x) #x
#define STR(x) STR_(x)

/* Entry i of the file (its slots read) into h->e[i]. */
static int entry_from_json(struct json_object *e, struct xlb_history *h,
			   size_t i, const struct xlb_hist_entry *keys,
			   size_t n_keys, __u32 now, const char **why)
{
	struct xlb_hist_entry *ent = &h->e[i], key;
	const char *why_addr;
	struct json_object *v;

	if (!json_object_is_type(e, json_type_object) ||
	    json_object_object_length(e) != 3) {
		*why = "must be an object of \"prev\", \"since\" and \"slots\"";
		return -EINVAL;
	}
	if (!json_object_object_get_ex(e, "prev", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    xlb_addr_parse(json_object_get_string(v), ent->addr,
			   &ent->family, &why_addr)) {
		*why = "\"prev\" must be an address";
		return -EINVAL;
	}
	backend_key(&key, ent->addr, ent->family);
	if (!bsearch(&key, keys, n_keys, sizeof(*keys), entry_cmp)) {
		*why = "\"prev\" is not one of the VIP's backends";
		return -EINVAL;
	}
	json_object_object_get_ex(e, "since", &v);
	if (!json_u32(v, UINT32_MAX, &ent->since)) {
		*why = "\"since\" must be Unix seconds";
		return -EINVAL;
	}
	if ((__u64)ent->since > (__u64)now + XLB_HISTORY_SKEW_S) {
		*why = "\"since\" is more than " STR(XLB_HISTORY_SKEW_S)
		       " s in the future";
		return -EINVAL;
	}
	/* a NUL inside would end the string early */
	if (!json_object_object_get_ex(e, "slots", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strlen(json_object_get_string(v)) !=
	    (size_t)json_object_get_string_len(v)) {
		*why = "\"slots\" must be a string such as \"0-4,9\"";
		return -EINVAL;
	}
	return slot_ranges_parse(json_object_get_string(v), h, i + 1, why);
}

int xlb_history_from_json(struct json_object *o,
			  const struct xlb_want *backends, size_t n_backends,
			  __u32 now, struct xlb_history *h,
			  const char **why, size_t *at)
{
	struct xlb_hist_entry *keys = NULL;
	__u32 twice;
	size_t i, n;
	int err;

	*at = XLB_HISTORY_WHOLE;
	if (!json_object_is_type(o, json_type_array)) {
		*why = "must be an array";
		return -EINVAL;
	}
	n = json_object_array_length(o);
	if (n > XLB_HIST_MAX) {
		*why = "too many entries";
		return -EINVAL;
	}
	h->e = calloc(n ? n : 1, sizeof(*h->e));
	keys = backend_keys(backends, n_backends);
	if (!h->e || !keys) {
		err = -ENOMEM;
		*why = "out of memory";
		goto out;
	}
	for (i = 0; i < n; i++) {
		*at = i;
		err = entry_from_json(json_object_array_get_idx(o, i), h, i,
				      keys, n_backends, now, why);
		if (err)
			goto out;
		h->n = i + 1;
	}
	*at = XLB_HISTORY_WHOLE;
	err = sort_entries(h, &twice);
	if (err) {
		*why = "out of memory";
	} else if (twice < h->n) {
		*at = twice;
		*why = "the same previous backend and time twice";
		err = -EINVAL;
	}
out:
	free(keys);
	return err;
}

/* FNV-1a, 64 bits: the fingerprint only has to tell states apart. */
static __u64 fnv(__u64 h, const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--) {
		h ^= *c++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

__u64 xlb_history_fingerprint(__u64 fp, const struct xlb_history *h)
{
	const struct xlb_hist_entry *e;
	__u32 k;

	/* Per slot what it names, so entry numbering does not matter. */
	for (k = 0; k < h->m; k++) {
		if (!h->slot[k] || h->slot[k] > h->n)
			continue;
		e = &h->e[h->slot[k] - 1];
		fp = fnv(fp, &k, sizeof(k));
		fp = fnv(fp, e, sizeof(*e));
	}
	return fp;
}
