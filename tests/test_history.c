// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A stateless VIP's history (loader/instance/history.h), rule by rule, on
 * hand-made tables of eight slots: a slot that changes owner remembers the
 * last one as of the change, one that keeps its owner keeps its entry; an
 * entry goes once older than the setting, once its backend is deleted
 * (not when drained); a slot that changes twice remembers only the second
 * owner; one entry per owner and time. The JSON form comes back as it went, sorted, each
 * entry's slots one string of ranges read strictly; the fingerprint tells
 * histories apart. Read from a file, an entry is refused, by its index,
 * unless next() could have written it: its previous backend one of the
 * VIP's (drained too), its time not beyond the clock skew, its slots at
 * least one, within the table, named by it alone and once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include "testlib.h"
#include "history.h"
#include "update.h"

#define M	8
#define VIP	7
#define NOW	2000		/* the reader's clock */
enum { A = 1, B, C, D };	/* backend ids */

/* Strings equal, or both printed. */
#define ASSERT_STR_EQ(a, b, what) ({					\
	const char *___a = (a), *___b = (b);				\
	bool ___ok = !strcmp(___a, ___b);				\
	if (!___ok) {							\
		test_failed = true;					\
		printf("  %s:%d: %s: FAIL: \"%s\" != \"%s\"\n",	\
		       __func__, __LINE__, what, ___a, ___b);		\
	}								\
	___ok;								\
})

static struct xlb_state *st;
/* The VIP's backends as a file gives them, A to D. */
static struct xlb_want fleet[D];

static void backend(__u32 id, const char *addr, __u32 weight, __u8 flags)
{
	struct xlb_backend *b = &st->backends[id];

	memset(b, 0, sizeof(*b));
	b->vip_id = VIP;
	b->weight = weight;
	b->family = XLB_AF_INET;
	b->flags = flags;
	inet_pton(AF_INET, addr, b->addr);
	memcpy(fleet[id - 1].addr, b->addr, sizeof(b->addr));
	fleet[id - 1].family = b->family;
	fleet[id - 1].weight = weight;
}

static void setup(void)
{
	if (!st)
		st = calloc(1, sizeof(*st));
	memset(st->backends, 0, sizeof(st->backends));
	backend(A, "198.51.100.1", 1, XLB_BE_F_IN_USE);
	backend(B, "198.51.100.2", 1, XLB_BE_F_IN_USE);
	backend(C, "198.51.100.3", 1, XLB_BE_F_IN_USE);
	backend(D, "198.51.100.4", 1, XLB_BE_F_IN_USE);
}

/* The address each slot's entry names (last octet), 0 for none, and the
 * entries' times, as text: "1 0 0 2 | 100 100". */
static const char *named(const struct xlb_history *h)
{
	static char text[256];
	size_t len = 0;
	__u32 k;

	for (k = 0; k < h->m; k++)
		len += snprintf(text + len, sizeof(text) - len, "%s%u", k ? " " : "",
				h->slot[k] ? ((__u8 *)h->e[h->slot[k] - 1].addr)[3] : 0);
	len += snprintf(text + len, sizeof(text) - len, " |");
	for (k = 0; k < h->n; k++)
		len += snprintf(text + len, sizeof(text) - len, " %u", h->e[k].since);
	return text;
}

/* The history after old -> next at now with keep 100 s. */
static bool step(const __u32 *old, const struct xlb_history *prev,
		 const __u32 *next, __u32 now, struct xlb_history *out)
{
	return ASSERT_OK(xlb_history_init(out, M), "init") &&
	       ASSERT_OK(xlb_history_next(st, VIP, old, prev, next, now, 100, out),
			 "next");
}

static const __u32 t0[M] = { A, B, C, A, B, C, A, B };
static const __u32 t1[M] = { A, B, C, D, B, C, D, B };	/* D takes 3, 6 */

static void a_change_remembers_the_last_owner(void)
{
	struct xlb_history h;

	setup();
	if (!step(NULL, NULL, t0, 1000, &h))
		return;
	ASSERT_STR_EQ(named(&h), "0 0 0 0 0 0 0 0 |", "a first table remembers none");
	xlb_history_free(&h);
	if (!step(t0, NULL, t1, 1000, &h))
		return;
	ASSERT_STR_EQ(named(&h), "0 0 0 1 0 0 1 0 | 1000", "slots 3 and 6 name A");
	xlb_history_free(&h);
}

static void kept_while_young_gone_when_old(void)
{
	struct xlb_history h1, h2, h3;

	setup();
	if (!step(t0, NULL, t1, 1000, &h1) || !step(t1, &h1, t1, 1099, &h2) ||
	    !step(t1, &h1, t1, 1100, &h3))
		return;
	ASSERT_STR_EQ(named(&h2), "0 0 0 1 0 0 1 0 | 1000", "99 s later: kept");
	ASSERT_STR_EQ(named(&h3), "0 0 0 0 0 0 0 0 |", "100 s later: gone");
	ASSERT_TRUE(!xlb_history_stale(st, VIP, &h1, t1, 1099, 100), "not stale at 99 s");
	ASSERT_TRUE(xlb_history_stale(st, VIP, &h1, t1, 1100, 100), "stale at 100 s");
	xlb_history_free(&h1);
	xlb_history_free(&h2);
	xlb_history_free(&h3);
}

static void drained_stays_deleted_goes(void)
{
	struct xlb_history h1, h2, h3;

	setup();
	if (!step(t0, NULL, t1, 1000, &h1))
		return;
	backend(A, "198.51.100.1", 0, XLB_BE_F_IN_USE);
	if (!step(t1, &h1, t1, 1001, &h2))
		return;
	ASSERT_STR_EQ(named(&h2), "0 0 0 1 0 0 1 0 | 1000", "A drained: kept");
	backend(A, "198.51.100.1", 0, XLB_BE_F_IN_USE | XLB_BE_F_REMOVED);
	if (!step(t1, &h1, t1, 1001, &h3))
		return;
	ASSERT_STR_EQ(named(&h3), "0 0 0 0 0 0 0 0 |", "A deleted: gone");
	ASSERT_TRUE(xlb_history_stale(st, VIP, &h1, t1, 1001, 100), "stale once A is deleted");
	xlb_history_free(&h1);
	xlb_history_free(&h2);
	xlb_history_free(&h3);
}

static void twice_remembers_the_second_owner(void)
{
	static const __u32 t2[M] = { A, B, C, C, B, C, A, B };	/* 3: D -> C, 6: D -> A */
	struct xlb_history h1, h2;

	setup();
	if (!step(t0, NULL, t1, 1000, &h1) || !step(t1, &h1, t2, 1010, &h2))
		return;
	/* Slots 3 and 6 change again, from D: each names D as of the
	 * second change, slot 6 although A, which it named, has it again. */
	ASSERT_STR_EQ(named(&h2), "0 0 0 4 0 0 4 0 | 1010", "the second owner, one entry");
	xlb_history_free(&h1);
	xlb_history_free(&h2);
}

static void json_round_trip_and_fingerprint(void)
{
	static const __u32 t2[M] = { A, B, B, D, B, C, D, B };	/* 2: C -> B */
	struct xlb_history h1, h2, back;
	struct json_object *j;
	const char *why;
	size_t at;

	setup();
	if (!step(t0, NULL, t1, 1000, &h1) || !step(t1, &h1, t2, 1005, &h2))
		return;
	ASSERT_STR_EQ(named(&h2), "0 0 3 1 0 0 1 0 | 1005 1000", "two entries, as met");
	xlb_history_sort(&h2);
	j = xlb_history_json(&h2);
	ASSERT_STR_EQ(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN),
		      "[{\"prev\":\"198.51.100.1\",\"since\":1000,\"slots\":\"3,6\"},"
		      "{\"prev\":\"198.51.100.3\",\"since\":1005,\"slots\":\"2\"}]",
		      "the JSON form");
	if (ASSERT_OK(xlb_history_init(&back, M), "init") &&
	    ASSERT_OK(xlb_history_from_json(j, fleet, D, NOW, &back, &why, &at),
		      "from JSON"))
		ASSERT_TRUE(xlb_history_equal(&back, &h2), "back as it went");
	ASSERT_NE(xlb_history_fingerprint(1, &h1), xlb_history_fingerprint(1, &h2),
		  "fingerprints differ");
	ASSERT_EQ(xlb_history_fingerprint(1, &back), xlb_history_fingerprint(1, &h2),
		  "fingerprints agree");
	json_object_put(j);
	xlb_history_free(&h1);
	xlb_history_free(&h2);
	xlb_history_free(&back);
}

/* An entry's "slots" as the one string it must be, else refused. */
static void slots_string_strict(void)
{
	static const struct {
		const char *slots;	/* JSON value */
		const char *named;	/* named() after, NULL: refused */
	} cases[] = {
		{ "\"0-2,5,7\"", "1 1 1 0 0 1 0 1 | 1000" },
		{ "\"3-4,5\"", "0 0 0 1 1 1 0 0 | 1000" },
		{ "\"\"", NULL },		/* no slot */
		{ "\"5,2\"", NULL },		/* not ascending */
		{ "\"0-3,3\"", NULL },		/* overlapping */
		{ "\"2-2\"", NULL },		/* one slot is "2" */
		{ "\"3-1\"", NULL },
		{ "\"8\"", NULL },		/* beyond the table */
		{ "\"0-8\"", NULL },
		{ "\"99999999999999999999\"", NULL },
		{ "\"01\"", NULL },
		{ "\"-1\"", NULL },
		{ "\"1,\"", NULL },
		{ "\",1\"", NULL },
		{ "\"1,,2\"", NULL },
		{ "\"1, 2\"", NULL },
		{ "\"1-\"", NULL },
		{ "\"x\"", NULL },
		{ "\"1\\u00002\"", NULL },	/* a NUL inside */
		{ "[[0, 2]]", NULL },		/* runs of numbers */
		{ "3", NULL },
	};
	struct xlb_history h;
	struct json_object *j;
	char text[128];
	const char *why;
	size_t i, at;
	int err;

	setup();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text),
			 "[{\"prev\": \"198.51.100.1\", \"since\": 1000, \"slots\": %s}]",
			 cases[i].slots);
		j = json_tokener_parse(text);
		if (!ASSERT_TRUE(j, text) ||
		    !ASSERT_OK(xlb_history_init(&h, M), "init")) {
			json_object_put(j);
			return;
		}
		err = xlb_history_from_json(j, fleet, D, NOW, &h, &why, &at);
		if (cases[i].named) {
			if (ASSERT_OK(err, cases[i].slots))
				ASSERT_STR_EQ(named(&h), cases[i].named, cases[i].slots);
		} else if (ASSERT_EQ(err, -EINVAL, cases[i].slots)) {
			ASSERT_TRUE(strstr(why, "\"slots\""), cases[i].slots);
			ASSERT_EQ(at, 0, "the entry at fault");
		}
		xlb_history_free(&h);
		json_object_put(j);
	}
}

/* An entry as xlb show -j writes it. */
#define ENTRY(prev, since, slots) \
	"{\"prev\": \"" prev "\", \"since\": " #since ", \"slots\": \"" slots "\"}"
#define AT_A	"198.51.100.1"
#define AT_B	"198.51.100.2"

/* text read as a history of M slots for the VIP of A to D, at NOW. */
static int read_history(const char *text, struct xlb_history *h,
			const char **why, size_t *at)
{
	struct json_object *j = json_tokener_parse(text);
	int err;

	memset(h, 0, sizeof(*h));
	if (!ASSERT_TRUE(j, text))
		return -EINVAL;
	err = xlb_history_init(h, M) ?:
	      xlb_history_from_json(j, fleet, D, NOW, h, why, at);
	json_object_put(j);
	return err;
}

/* text refused, entry at named at fault, why saying fragment. */
static void refused(const char *text, size_t at, const char *fragment)
{
	struct xlb_history h;
	const char *why = "";
	size_t got = 0;

	if (ASSERT_EQ(read_history(text, &h, &why, &got), -EINVAL, text)) {
		ASSERT_EQ(got, at, "the entry at fault");
		if (!ASSERT_TRUE(strstr(why, fragment), fragment))
			printf("  said: %s\n", why);
	}
	xlb_history_free(&h);
}

/* text accepted, each slot naming what want says (named()). */
static void accepted(const char *text, const char *want)
{
	struct xlb_history h;
	const char *why = "";
	size_t at;

	if (ASSERT_OK(read_history(text, &h, &why, &at), why))
		ASSERT_STR_EQ(named(&h), want, text);
	xlb_history_free(&h);
}

static void valid_history_accepted(void)
{
	setup();
	accepted("[" ENTRY(AT_B, 1500, "2,5-6") "," ENTRY(AT_A, 1000, "0") ","
		 ENTRY(AT_A, 1200, "7") "]", "1 0 2 0 0 2 2 1 | 1000 1200 1500");
	accepted("[]", "0 0 0 0 0 0 0 0 |");
}

/* One that has weight 0 is still one of the VIP's backends. */
static void prev_drained_accepted(void)
{
	setup();
	backend(A, "198.51.100.1", 0, XLB_BE_F_IN_USE);
	accepted("[" ENTRY(AT_A, 1000, "3") "]", "0 0 0 1 0 0 0 0 | 1000");
}

static void prev_outside_the_fleet_refused(void)
{
	setup();
	refused("[" ENTRY(AT_A, 1000, "0") "," ENTRY("198.51.100.9", 1000, "1") "]",
		1, "\"prev\" is not one of the VIP's backends");
	refused("[" ENTRY("2001:db8::1", 1000, "1") "]",
		0, "\"prev\" is not one of the VIP's backends");
}

static void prev_the_vip_refused(void)
{
	setup();
	refused("[" ENTRY("192.0.2.10", 1000, "0") "]",
		0, "\"prev\" is not one of the VIP's backends");
}

static void prev_the_subnet_broadcast_refused(void)
{
	setup();
	refused("[" ENTRY("198.51.100.255", 1000, "0") "]",
		0, "\"prev\" is not one of the VIP's backends");
}

/* Up to the skew ahead: another balancer's clock; further: refused. */
static void since_within_skew_accepted(void)
{
	char text[256], want[64];

	setup();
	snprintf(text, sizeof(text),
		 "[{\"prev\": \"" AT_A "\", \"since\": %u, \"slots\": \"1\"}]",
		 NOW + XLB_HISTORY_SKEW_S);
	snprintf(want, sizeof(want), "0 1 0 0 0 0 0 0 | %u", NOW + XLB_HISTORY_SKEW_S);
	accepted(text, want);
}

static void since_beyond_skew_refused(void)
{
	char text[256];

	setup();
	snprintf(text, sizeof(text),
		 "[" ENTRY(AT_A, 1000, "0") ","
		 "{\"prev\": \"" AT_B "\", \"since\": %u, \"slots\": \"1\"}]",
		 NOW + XLB_HISTORY_SKEW_S + 1);
	refused(text, 1, "\"since\" is more than");
	refused("[" ENTRY(AT_A, 4294967295, "0") "]", 0, "\"since\" is more than");
}

static void empty_slots_refused(void)
{
	setup();
	refused("[" ENTRY(AT_A, 1000, "0") "," ENTRY(AT_B, 1000, "") "]",
		1, "\"slots\" names no slot");
}

static void slot_beyond_the_table_refused(void)
{
	setup();
	refused("[" ENTRY(AT_A, 1000, "8") "]", 0, "not within the table");
	refused("[" ENTRY(AT_A, 1000, "0-8") "]", 0, "not within the table");
	refused("[" ENTRY(AT_A, 1000, "4294967296") "]", 0, "not within the table");
}

static void slot_twice_within_an_entry_refused(void)
{
	setup();
	refused("[" ENTRY(AT_A, 1000, "2,2") "]", 0, "\"slots\" names a slot twice");
	refused("[" ENTRY(AT_A, 1000, "1,3-5,4") "]", 0, "\"slots\" names a slot twice");
}

static void slot_twice_across_entries_refused(void)
{
	setup();
	refused("[" ENTRY(AT_A, 1000, "0-2") "," ENTRY(AT_B, 1000, "4") ","
		ENTRY(AT_B, 1001, "2") "]", 2, "a slot an earlier entry names");
}

/* The entry named is the first that repeats an earlier one. */
static void same_prev_and_time_twice_refused(void)
{
	setup();
	refused("[" ENTRY(AT_A, 1000, "0") "," ENTRY(AT_B, 1000, "1") ","
		ENTRY(AT_A, 1000, "2") "]", 2, "the same previous backend and time twice");
	refused("[" ENTRY(AT_B, 1000, "0") "," ENTRY(AT_A, 1000, "1") ","
		ENTRY(AT_A, 1000, "2") "," ENTRY(AT_B, 1000, "3") "]",
		2, "the same previous backend and time twice");
}

TEST_MAIN(TEST(a_change_remembers_the_last_owner),
	  TEST(kept_while_young_gone_when_old),
	  TEST(drained_stays_deleted_goes),
	  TEST(twice_remembers_the_second_owner),
	  TEST(json_round_trip_and_fingerprint),
	  TEST(slots_string_strict),
	  TEST(valid_history_accepted),
	  TEST(prev_drained_accepted),
	  TEST(prev_outside_the_fleet_refused),
	  TEST(prev_the_vip_refused),
	  TEST(prev_the_subnet_broadcast_refused),
	  TEST(since_within_skew_accepted),
	  TEST(since_beyond_skew_refused),
	  TEST(empty_slots_refused),
	  TEST(slot_beyond_the_table_refused),
	  TEST(slot_twice_within_an_entry_refused),
	  TEST(slot_twice_across_entries_refused),
	  TEST(same_prev_and_time_twice_refused))
