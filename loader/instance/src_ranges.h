/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Source ranges: the client prefixes a VIP lets in (its allow list) and
 * turns away (its deny list), as include/xlb.h lays them out in
 * xlb_src_ranges. The client's longest match decides; a client no prefix
 * matches is let in unless the VIP has an allow list. One list of
 * prefixes for `xlb vip add|set --allow|--deny`, `xlb show` and
 * `xlb apply` (src_list.c, pure), and the change that writes a VIP's
 * lists whole (src_ranges.c).
 */
#ifndef XLB_SRC_RANGES_H
#define XLB_SRC_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "instance.h"
#include "state.h"
#include "xlb.h"

/* One prefix of a VIP's lists. */
struct xlb_src_prefix {
	__be32 addr[4];		/* IPv4 in addr[0], no bit set past len */
	__u8 family;		/* enum xlb_family: the VIP's */
	__u8 len;
	__u8 deny;		/* 0: allow list, 1: deny list */
	__u8 pad;
};

/* A VIP's lists, allow prefixes first, each part sorted by address and
 * length (xlb_src_check() sorts). Room for twice a VIP's limit: while a
 * command replaces one list, the other one it drops is still there. */
#define XLB_SRC_LIST_ROOM	(2 * XLB_SRC_MAX_VIP)
struct xlb_src_list {
	__u32 n;
	struct xlb_src_prefix p[XLB_SRC_LIST_ROOM];
};

/* What --allow or --deny says: "any" (no allow list) and "none" (no deny
 * list) empty the part; else comma-separated prefixes (PREFIX as in
 * addr.h, 0.0.0.0/0 and ::/0 too) of the VIP's family. */
#define XLB_SRC_ALLOW_ANY	"any"
#define XLB_SRC_DENY_NONE	"none"

/* Replace the allow (deny 0) or deny part of l with the prefixes of
 * text, for a VIP of family. 0 or -EINVAL with why[len] set, l as it
 * was. */
int xlb_src_parse(const char *text, __u8 family, bool deny,
		  struct xlb_src_list *l, char *why, size_t len);
/* Add one prefix to a part of l (xlb apply's arrays): 0 or -EINVAL with
 * why set (not a prefix of family, or the list full). */
int xlb_src_add(const char *text, __u8 family, bool deny,
		struct xlb_src_list *l, char *why, size_t len);
/* Sort l and check it whole: at most XLB_SRC_MAX_VIP prefixes, none
 * twice, none in both parts, none inside another of its own part
 * (overlapping: it would say nothing). 0 or -EINVAL with why set. */
int xlb_src_check(struct xlb_src_list *l, char *why, size_t len);
/* The prefixes of a part. */
__u32 xlb_src_count(const struct xlb_src_list *l, bool deny);
/* p as text (addr.h's PREFIX); buf of XLB_PREFIX_STRLEN. */
const char *xlb_src_prefix_str(const struct xlb_src_prefix *p, char *buf,
			       size_t size);
/* The part as text, comma-separated, or "any" / "none" when empty. */
const char *xlb_src_part_str(const struct xlb_src_list *l, bool deny,
			     char *buf, size_t size);
/* l made a deny list of every client of family: what a VIP flagged
 * with lists but without entries does (born closed, its lists never
 * written), as show, its JSON and the fingerprint say it. */
void xlb_src_deny_all(struct xlb_src_list *l, __u8 family);
/* Whether a VIP of flags whose lists are l is such a one. */
bool xlb_src_closed(__u32 vip_flags, const struct xlb_src_list *l);
/* The VIP flags l asks for, but the generation: XLB_VIP_F_SRC_LIST with
 * any prefix, XLB_VIP_F_SRC_DENY with an allow list. */
__u32 xlb_src_flags(const struct xlb_src_list *l);
/* The longest prefix of l that holds addr (of l's family), or NULL. */
const struct xlb_src_prefix *xlb_src_match(const struct xlb_src_list *l,
					   const __be32 addr[4]);
/* Whether a VIP of flags (its record's) denies a client whose longest
 * match in its lists is m (NULL: none), as the datapath decides. */
bool xlb_src_denies(__u32 vip_flags, const struct xlb_src_prefix *m);
/* fp folded with the lists (sorted), for the VIP's fingerprint: a
 * VIP without lists keeps the fingerprint it had. */
__u64 xlb_src_fingerprint(__u64 fp, const struct xlb_src_list *l);

/* Every entry of the instance's trie, read once (show reads each VIP's
 * lists from it). */
struct xlb_src_entry {
	struct xlb_src_key key;
	struct xlb_src_value value;
};
struct xlb_src_all {
	__u32 n;
	struct xlb_src_entry *e;
};
/* 0 (an instance without the trie has none) or -errno after p_err(). */
int xlb_src_read_all(const struct xlb_instance *inst, struct xlb_src_all *all);
/* The same from the trie's descriptor fd (-1: none). */
int xlb_src_read_fd(int fd, struct xlb_src_all *all);
void xlb_src_all_free(struct xlb_src_all *all);
/* v's lists in all: the entries of its key and generation, when its
 * record says it has lists. */
void xlb_src_of(const struct xlb_src_all *all, const struct xlb_state_vip *v,
		struct xlb_src_list *l);
/* The same, read from the instance. 0 or -errno after p_err(). */
int xlb_src_read(const struct xlb_instance *inst,
		 const struct xlb_state_vip *v, struct xlb_src_list *l);

/*
 * Make the lists of the VIP of key l (checked, xlb_src_check()), as a
 * change: nothing when they are so already. The new entries are written
 * under the generation the record does not name, then the record (and
 * the VIP filter's ranged bits before it when it gains lists, after it
 * when it loses them), then the old entries deleted: a packet meets the
 * old lists or the new ones, and a kill leaves entries of the other
 * generation, which the next change of the VIP's lists, or the next
 * command's repair (xlb_src_leftovers()), deletes. Returns 0 or -errno
 * after p_err() (-EOPNOTSUPP: an instance made before source ranges).
 */
int xlb_vip_src_set(struct xlb_instance *inst, struct xlb_state *st,
		    const struct xlb_vip_key *key, const struct xlb_src_list *l);

/* A step of a change (change.h): delete the entries no VIP's record
 * names (a VIP deleted, a list swap interrupted), or those of key only
 * (a VIP being deleted; NULL: all). */
int xlb_src_leftovers(struct xlb_instance *inst, struct xlb_state *st,
		      const struct xlb_vip_key *key);

#endif /* XLB_SRC_RANGES_H */
