// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Fuzz target: a stateless VIP's history as `xlb apply` reads it from a
 * file, xlb_history_from_json() (loader/instance/history.h), the reader
 * and the checks against the VIP it is for.
 *
 * The first byte gives the table size, 3 + its low 5 bits (3 to 34
 * slots, so that ranges meet the table's end); the rest is the history's
 * JSON text, parsed by json-c. The VIP's backends are three, one drained
 * (FLEET below), and the clock reads NOW. Beyond memory errors and
 * undefined behaviour, the reader must keep its contract:
 *  - it returns 0, -EINVAL or -ENOMEM, with a reason when it fails, and
 *    the entry at fault within the array (or XLB_HISTORY_WHOLE);
 *  - what it accepts is what xlb_history_next() could have written: as
 *    many entries as the array, each previous backend one of the VIP's,
 *    no time beyond NOW + XLB_HISTORY_SKEW_S, every entry named by a slot
 *    and every slot naming an entry or none, no owner and time twice;
 *  - it is sorted (sorting it again changes nothing), and its JSON form
 *    reads back to the same history, fingerprint and text.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "fuzz.h"
#include "addr.h"
#include "history.h"
#include "update.h"

#define CHECK(cond, ...) FUZZ_CHECK(stderr, cond, __VA_ARGS__)

#define NOW		1700000000u
#define MAX_M		(XLB_MIN_TABLE_SIZE + 31)
#define MAX_TEXT	(1 << 16)

static const char *const FLEET[] = { "198.51.100.11", "198.51.100.12", "2001:db8::1" };
#define N_FLEET (sizeof(FLEET) / sizeof(FLEET[0]))

static struct xlb_want fleet[N_FLEET];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *why;
	size_t i;

	(void)argc;
	(void)argv;
	for (i = 0; i < N_FLEET; i++) {
		if (xlb_addr_parse(FLEET[i], fleet[i].addr, &fleet[i].family, &why))
			abort();
		fleet[i].weight = i == 1 ? 0 : 1;
	}
	return 0;
}

static bool in_fleet(const struct xlb_hist_entry *e)
{
	size_t i;

	for (i = 0; i < N_FLEET; i++)
		if (e->family == fleet[i].family &&
		    !memcmp(e->addr, fleet[i].addr, sizeof(e->addr)))
			return true;
	return false;
}

/* h, accepted from an array of n entries, is what next() could write. */
static void check_accepted(const struct xlb_history *h, size_t n)
{
	const struct xlb_hist_entry *e;
	bool named[MAX_M + 1] = {};
	__u32 i, k;

	CHECK(h->n == n, "%u entries of %zu", h->n, n);
	CHECK(h->n <= h->m, "%u entries of %u slots", h->n, h->m);
	for (k = 0; k < h->m; k++) {
		CHECK(h->slot[k] <= h->n, "slot %u names entry %u of %u", k,
		      h->slot[k], h->n);
		named[h->slot[k]] = true;
	}
	for (i = 0; i < h->n; i++) {
		e = &h->e[i];
		CHECK(named[i + 1], "entry %u names no slot", i);
		CHECK(in_fleet(e), "entry %u: its previous backend is no backend", i);
		CHECK(e->since <= NOW + XLB_HISTORY_SKEW_S, "entry %u: since %u", i,
		      e->since);
		CHECK(!e->pad[0] && !e->pad[1] && !e->pad[2], "entry %u: padding", i);
		CHECK(!i || memcmp(e, e - 1, sizeof(*e)),
		      "entries %u and %u are the same", i - 1, i);
	}
}

/* Sorted already, and its JSON form a fixed point. */
static void check_canonical(const struct xlb_history *h)
{
	struct xlb_history again, back;
	struct json_object *j, *j2;
	const char *why = NULL;
	size_t at;
	int err;

	if (xlb_history_init(&again, h->m))
		abort();
	again.e = malloc((h->n ? h->n : 1) * sizeof(*again.e));
	if (!again.e)
		abort();
	again.n = h->n;
	memcpy(again.slot, h->slot, h->m * sizeof(*h->slot));
	if (h->n)
		memcpy(again.e, h->e, h->n * sizeof(*h->e));
	xlb_history_sort(&again);
	CHECK(xlb_history_equal(&again, h), "sorting it again changes it");
	xlb_history_free(&again);

	j = xlb_history_json(h);
	if (!j || xlb_history_init(&back, h->m))
		abort();
	err = xlb_history_from_json(j, fleet, N_FLEET, NOW, &back, &why, &at);
	CHECK(!err, "its JSON form is refused: %s (at %zu): %s", why, at,
	      json_object_to_json_string(j));
	CHECK(xlb_history_equal(&back, h), "its JSON form reads back otherwise");
	CHECK(xlb_history_fingerprint(1, &back) == xlb_history_fingerprint(1, h),
	      "another fingerprint read back");
	j2 = xlb_history_json(&back);
	if (!j2)
		abort();
	CHECK(!strcmp(json_object_to_json_string(j), json_object_to_json_string(j2)),
	      "its JSON form changes: %s, then %s", json_object_to_json_string(j),
	      json_object_to_json_string(j2));
	json_object_put(j2);
	json_object_put(j);
	xlb_history_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_tokener *tok;
	struct json_object *o;
	struct xlb_history h;
	const char *why = NULL;
	size_t at = 0, n = 0;
	__u32 m;
	int err;

	if (size < 1 || size > MAX_TEXT)
		return -1;
	m = XLB_MIN_TABLE_SIZE + (data[0] & (MAX_M - XLB_MIN_TABLE_SIZE));
	tok = json_tokener_new();
	if (!tok)
		abort();
	o = json_tokener_parse_ex(tok, (const char *)data + 1, size - 1);
	if (!o && json_tokener_get_error(tok) == json_tokener_continue)
		o = json_tokener_parse_ex(tok, "", 1);
	json_tokener_free(tok);
	if (!o)
		return 0;
	if (json_object_is_type(o, json_type_array))
		n = json_object_array_length(o);
	if (xlb_history_init(&h, m))
		abort();
	err = xlb_history_from_json(o, fleet, N_FLEET, NOW, &h, &why, &at);
	CHECK(err == 0 || err == -EINVAL || err == -ENOMEM, "returned %d", err);
	if (err) {
		CHECK(why && *why, "refused without a reason");
		CHECK(at == XLB_HISTORY_WHOLE || at < n, "entry %zu of %zu at fault",
		      at, n);
	} else {
		check_accepted(&h, n);
		check_canonical(&h);
	}
	xlb_history_free(&h);
	json_object_put(o);
	return 0;
}
