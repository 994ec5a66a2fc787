// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A VIP's source-range lists as values: parsed, checked, printed
 * (src_ranges.h). Nothing here touches an instance. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "src_ranges.h"

static const char *family_name(__u8 family)
{
	return family == XLB_AF_INET ? "IPv4" : "IPv6";
}

/* A prefix of any address (addr.h): a list names sources, which the
 * rules for a VIP's or a backend's address do not fit (0.0.0.0/8,
 * 127.0.0.0/8, 224.0.0.0/4 and the like belong in a deny list). */
static int prefix_parse(const char *s, struct xlb_src_prefix *p,
			const char **why)
{
	memset(p, 0, sizeof(*p));
	return xlb_source_prefix_parse(s, p->addr, &p->family, &p->len, why);
}

int xlb_src_add(const char *text, __u8 family, bool deny,
		struct xlb_src_list *l, char *why, size_t len)
{
	struct xlb_src_prefix p;
	const char *w = NULL;

	if (prefix_parse(text, &p, &w)) {
		snprintf(why, len, "'%s': %s", text, w);
		return -EINVAL;
	}
	if (p.family != family) {
		snprintf(why, len, "'%s': not an %s prefix, as the VIP's address is",
			 text, family_name(family));
		return -EINVAL;
	}
	if (l->n >= XLB_SRC_LIST_ROOM) {
		snprintf(why, len, "more than %d prefixes (the limit of a VIP)",
			 XLB_SRC_MAX_VIP);
		return -EINVAL;
	}
	p.deny = deny;
	l->p[l->n++] = p;
	return 0;
}

int xlb_src_parse(const char *text, __u8 family, bool deny,
		  struct xlb_src_list *l, char *why, size_t len)
{
	struct xlb_src_list *out;
	const char *empty = deny ? XLB_SRC_DENY_NONE : XLB_SRC_ALLOW_ANY;
	char *copy, *item, *save = NULL;
	__u32 i;
	int err = 0;

	if (!*text) {
		snprintf(why, len, "no prefix (to empty the list: %s)", empty);
		return -EINVAL;
	}
	out = malloc(sizeof(*out));
	copy = strdup(text);
	if (!out || !copy) {
		free(out);
		free(copy);
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	out->n = 0;
	for (i = 0; i < l->n; i++)
		if (l->p[i].deny != deny)
			out->p[out->n++] = l->p[i];
	if (!strcmp(text, empty))
		goto done;
	/* strtok_r would pass over an empty item: "a,,b" is a typo. */
	for (item = copy; item && !err; item = save) {
		save = strchr(item, ',');
		if (save)
			*save++ = '\0';
		if (!*item) {
			snprintf(why, len, "an empty prefix between commas");
			err = -EINVAL;
			break;
		}
		err = xlb_src_add(item, family, deny, out, why, len);
	}
done:
	if (!err)
		memcpy(l, out, sizeof(out->n) + out->n * sizeof(out->p[0]));
	free(copy);
	free(out);
	return err;
}

static int prefix_cmp(const void *a, const void *b)
{
	const struct xlb_src_prefix *x = a, *y = b;
	int c;

	if (x->deny != y->deny)
		return x->deny - y->deny;
	c = memcmp(x->addr, y->addr, sizeof(x->addr));
	return c ?: x->len - y->len;
}

/* Whether outer, of length outer->len, holds inner's addresses. */
static bool prefix_holds(const struct xlb_src_prefix *outer,
			 const struct xlb_src_prefix *inner)
{
	const __u8 *a = (const __u8 *)outer->addr;
	const __u8 *b = (const __u8 *)inner->addr;
	__u32 i;

	if (outer->len > inner->len)
		return false;
	for (i = 0; i < outer->len; i++)
		if ((a[i / 8] ^ b[i / 8]) & (0x80 >> (i % 8)))
			return false;
	return true;
}

/* Whether a prefix of the other list lies between outer and inner, of
 * one list: inner is then an exception to that exception, and says
 * something (allow 10/8 and 10.1.2/24, deny 10.1/16). */
static bool between(const struct xlb_src_list *l,
		    const struct xlb_src_prefix *outer,
		    const struct xlb_src_prefix *inner)
{
	__u32 i;

	for (i = 0; i < l->n; i++)
		if (l->p[i].deny != outer->deny &&
		    prefix_holds(outer, &l->p[i]) &&
		    prefix_holds(&l->p[i], inner))
			return true;
	return false;
}

int xlb_src_check(struct xlb_src_list *l, char *why, size_t len)
{
	char a[XLB_PREFIX_STRLEN], b[XLB_PREFIX_STRLEN];
	const struct xlb_src_prefix *p, *q;
	__u32 i, j;

	if (l->n > XLB_SRC_MAX_VIP) {
		snprintf(why, len, "%u prefixes: more than %d prefixes (the limit of a VIP)",
			 l->n, XLB_SRC_MAX_VIP);
		return -EINVAL;
	}
	qsort(l->p, l->n, sizeof(l->p[0]), prefix_cmp);
	/* Quadratic, over at most a VIP's limit once per command. */
	for (i = 0; i < l->n; i++) {
		for (j = 0; j < l->n; j++) {
			p = &l->p[i];
			q = &l->p[j];
			if (i == j || !prefix_holds(p, q))
				continue;
			xlb_src_prefix_str(p, a, sizeof(a));
			xlb_src_prefix_str(q, b, sizeof(b));
			if (p->len == q->len && p->deny != q->deny)
				snprintf(why, len, "%s is both allowed and denied", a);
			else if (p->len == q->len)
				snprintf(why, len, "%s is given twice", a);
			else if (p->deny == q->deny && !between(l, p, q))
				snprintf(why, len, "%s overlaps %s in the %s list (it is inside it)",
					 b, a, p->deny ? "deny" : "allow");
			else
				continue;	/* an exception to a wider prefix */
			return -EINVAL;
		}
	}
	return 0;
}

const struct xlb_src_prefix *xlb_src_match(const struct xlb_src_list *l,
					   const __be32 addr[4])
{
	const struct xlb_src_prefix *best = NULL;
	struct xlb_src_prefix host = { .len = 128 };
	__u32 i;

	memcpy(host.addr, addr, sizeof(host.addr));
	for (i = 0; i < l->n; i++)
		if (prefix_holds(&l->p[i], &host) &&
		    (!best || l->p[i].len > best->len))
			best = &l->p[i];
	return best;
}

bool xlb_src_denies(__u32 vip_flags, const struct xlb_src_prefix *m)
{
	if (!(vip_flags & XLB_VIP_F_SRC_LIST))
		return false;
	return m ? m->deny : !!(vip_flags & XLB_VIP_F_SRC_DENY);
}

__u32 xlb_src_count(const struct xlb_src_list *l, bool deny)
{
	__u32 i, n = 0;

	for (i = 0; i < l->n; i++)
		n += l->p[i].deny == deny;
	return n;
}

const char *xlb_src_prefix_str(const struct xlb_src_prefix *p, char *buf,
			       size_t size)
{
	if (!p->len) {
		snprintf(buf, size, "%s", p->family == XLB_AF_INET ?
			 "0.0.0.0/0" : "::/0");
		return buf;
	}
	return xlb_prefix_str(p->addr, p->family, p->len, buf, size);
}

const char *xlb_src_part_str(const struct xlb_src_list *l, bool deny,
			     char *buf, size_t size)
{
	char one[XLB_PREFIX_STRLEN];
	size_t used = 0;
	__u32 i;

	snprintf(buf, size, "%s", deny ? XLB_SRC_DENY_NONE : XLB_SRC_ALLOW_ANY);
	for (i = 0; i < l->n; i++) {
		if (l->p[i].deny != deny)
			continue;
		xlb_src_prefix_str(&l->p[i], one, sizeof(one));
		used += snprintf(buf + used, used < size ? size - used : 0,
				 "%s%s", used ? "," : "", one);
	}
	return buf;
}

void xlb_src_deny_all(struct xlb_src_list *l, __u8 family)
{
	memset(&l->p[0], 0, sizeof(l->p[0]));
	l->p[0].family = family;
	l->p[0].deny = 1;
	l->n = 1;
}

bool xlb_src_closed(__u32 vip_flags, const struct xlb_src_list *l)
{
	return (vip_flags & (XLB_VIP_F_SRC_LIST | XLB_VIP_F_SRC_DENY)) ==
	       (XLB_VIP_F_SRC_LIST | XLB_VIP_F_SRC_DENY) && !l->n;
}

__u32 xlb_src_flags(const struct xlb_src_list *l)
{
	if (!l->n)
		return 0;
	return XLB_VIP_F_SRC_LIST |
	       (xlb_src_count(l, false) ? XLB_VIP_F_SRC_DENY : 0);
}

/* FNV-1a over the bytes: the fingerprint only has to tell lists apart. */
__u64 xlb_src_fingerprint(__u64 fp, const struct xlb_src_list *l)
{
	const __u8 *b;
	__u32 i, k;

	for (i = 0; i < l->n; i++) {
		b = (const __u8 *)&l->p[i];
		for (k = 0; k < sizeof(l->p[i]); k++) {
			fp ^= b[k];
			fp *= 0x100000001b3ULL;
		}
	}
	return fp;
}
