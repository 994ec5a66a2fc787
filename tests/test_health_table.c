// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A backend found down (XLB_BE_F_DOWN) and its VIP's table:
 *  - it holds no slot, and keeps its weight in its record; the others
 *    share the table as if its weight were 0;
 *  - with the flag gone it comes back with its weight: the very table it
 *    had before;
 *  - when every weighted backend of the VIP is down, the table is the one
 *    without health (fail open), never empty; drained backends and other
 *    VIPs' backends count for nothing in that;
 *  - the fingerprint follows the table;
 *  - on an instance (root): xlb_backend_set_health() swaps the live
 *    table, leaves it alone for EVICT alone, and a VIP built anew for
 *    another table size keeps its backends' DOWN flags, health settings
 *    and state.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "hc_store.h"
#include "pinned_instance.h"
#include "state.h"
#include "table_map.h"
#include "testlib.h"
#include "update.h"

#define M	1009
#define VIP_ID	3

static struct xlb_state *st;

/* A state of one VIP and n backends 198.51.100.1.. of the given weights
 * (ids 1..n). */
static void make_state(const __u32 *weights, size_t n)
{
	struct xlb_state_vip v = {
		.key = { .port = htons(80), .proto = 6, .family = XLB_AF_INET },
		.vip = { .id = VIP_ID, .table_size = M },
	};
	size_t i;

	free(st);
	st = calloc(1, sizeof(*st));
	v.key.addr[0] = htonl(0xc000020a);
	xlb_state_vip_insert(st, &v);
	for (i = 0; i < n; i++) {
		st->backends[i + 1] = (struct xlb_backend){
			.addr = { htonl(0xc6336401 + i) },
			.vip_id = VIP_ID,
			.weight = weights[i],
			.gen = 1,
			.family = XLB_AF_INET,
			.flags = XLB_BE_F_IN_USE,
		};
	}
}

static __u32 *build(void)
{
	__u32 *slots = calloc(M, sizeof(*slots));

	if (!ASSERT_OK(xlb_state_table_build(st, VIP_ID, M, slots), "table build"))
		slots[0] = ~0U;
	return slots;
}

static __u32 slots_of(const __u32 *slots, __u32 id)
{
	__u32 i, n = 0;

	for (i = 0; i < M; i++)
		n += slots[i] == id;
	return n;
}

static void down_backend_gets_no_slots_and_keeps_its_weight(void)
{
	static const __u32 weights[] = { 1, 2, 3 };
	__u32 *with, *down, *drained;

	make_state(weights, 3);
	with = build();
	ASSERT_GT(slots_of(with, 2), 0, "slots of backend 2 while up");
	st->backends[2].flags |= XLB_BE_F_DOWN;
	ASSERT_TRUE(!xlb_state_vip_fail_open(st, VIP_ID), "one down of three is no fail open");
	down = build();
	ASSERT_EQ(slots_of(down, 2), 0, "slots of backend 2 while down");
	ASSERT_EQ(slots_of(down, 1) + slots_of(down, 3), M, "the others hold every slot");
	ASSERT_EQ(st->backends[2].weight, 2, "its weight in the record");
	/* Down is weight 0 for the table, nothing more. */
	st->backends[2].flags &= ~XLB_BE_F_DOWN;
	st->backends[2].weight = 0;
	drained = build();
	ASSERT_MEM_EQ(down, drained, M * sizeof(*down), "down table = drained table");
	free(with);
	free(down);
	free(drained);
}

static void up_again_comes_back_with_its_weight(void)
{
	static const __u32 weights[] = { 1, 2, 3 };
	__u32 *before, *after;

	make_state(weights, 3);
	before = build();
	st->backends[2].flags |= XLB_BE_F_DOWN;
	free(build());
	st->backends[2].flags &= ~XLB_BE_F_DOWN;
	after = build();
	ASSERT_MEM_EQ(before, after, M * sizeof(*before), "table after coming back");
	ASSERT_GT(slots_of(after, 2), slots_of(after, 1), "weight 2 holds more than weight 1");
	free(before);
	free(after);
}

static void all_down_fails_open(void)
{
	static const __u32 weights[] = { 1, 2, 0 };
	__u32 *healthy, *all_down;

	make_state(weights, 3);
	healthy = build();
	st->backends[1].flags |= XLB_BE_F_DOWN;
	ASSERT_TRUE(!xlb_state_vip_fail_open(st, VIP_ID), "one weighted backend still up");
	st->backends[2].flags |= XLB_BE_F_DOWN;
	/* Backend 3 is drained and up: it takes no slot either way. */
	ASSERT_TRUE(xlb_state_vip_fail_open(st, VIP_ID), "every weighted backend down");
	all_down = build();
	ASSERT_EQ(slots_of(all_down, XLB_BACKEND_NONE), 0, "slots naming no backend");
	ASSERT_MEM_EQ(healthy, all_down, M * sizeof(*healthy), "fail open = the table without health");
	free(healthy);
	free(all_down);
}

static void other_vips_count_for_nothing(void)
{
	static const __u32 weights[] = { 1, 1 };
	__u32 *slots;

	make_state(weights, 2);
	st->backends[1].flags |= XLB_BE_F_DOWN;
	/* Up, weighted, same address family, but another VIP's. */
	st->backends[2].vip_id = VIP_ID + 1;
	ASSERT_TRUE(xlb_state_vip_fail_open(st, VIP_ID), "its only backend is down");
	slots = build();
	ASSERT_EQ(slots_of(slots, 1), M, "the down backend holds every slot");
	free(slots);
	st->backends[2].vip_id = VIP_ID;
	st->backends[2].flags |= XLB_BE_F_REMOVED;
	ASSERT_TRUE(xlb_state_vip_fail_open(st, VIP_ID), "a removed backend counts for nothing");
	/* No weighted backend at all: no table, and nothing to fail open. */
	st->backends[1].weight = 0;
	ASSERT_TRUE(!xlb_state_vip_fail_open(st, VIP_ID), "no weighted backend");
}

static void fingerprint_follows_the_table(void)
{
	static const __u32 weights[] = { 1, 1, 1 };
	__u64 up, down, back;
	__u32 *slots;

	make_state(weights, 3);
	slots = build();
	up = xlb_state_fingerprint(st, &st->vips[0], slots);
	free(slots);
	st->backends[3].flags |= XLB_BE_F_DOWN;
	slots = build();
	down = xlb_state_fingerprint(st, &st->vips[0], slots);
	free(slots);
	st->backends[3].flags &= ~XLB_BE_F_DOWN;
	slots = build();
	back = xlb_state_fingerprint(st, &st->vips[0], slots);
	free(slots);
	ASSERT_NE(up, down, "fingerprint with a backend down");
	ASSERT_EQ(up, back, "fingerprint once it is back");
}

/* --- on an instance ------------------------------------------------------ */

static struct xlb_instance inst;

static bool open_instance(void)
{
	static bool tried, ok;
	struct xlb_instance_opts o = {};
	struct bpf_object *obj;

	if (tried)
		return ok;
	tried = true;
	if (!test_have_root()) {
		test_skip_env("needs root");
		return false;
	}
	obj = pinned_instance("healthtbl");
	if (!ASSERT_TRUE(obj != NULL, "program loaded with its maps pinned"))
		return false;
	bpf_object__close(obj);
	o.pin_dir = pinned_dir;
	ok = !xlb_instance_open(&inst, &o, XLB_LOCK_WRITE);
	return ASSERT_TRUE(ok, "instance opened");
}

/* Slots of backend id in the live table of vip_id; -1 on error. */
static long live_slots(__u32 vip_id, __u32 id)
{
	__u32 *slots, m, i;
	long n = 0;

	if (xlb_table_read(inst.tables_fd, vip_id, &slots, &m))
		return -1;
	for (i = 0; i < m; i++)
		n += slots[i] == id;
	free(slots);
	return n;
}

static __u32 inner_id(__u32 vip_id)
{
	__u32 id = 0;

	bpf_map_lookup_elem(inst.tables_fd, &vip_id, &id);
	return id;
}

static void set_health_swaps_the_live_table(void)
{
	struct xlb_vip_key key = {
		.addr = { htonl(0xc000020b) }, .port = htons(80), .proto = 6,
		.family = XLB_AF_INET,
	};
	struct xlb_want want[2] = {
		{ .addr = { htonl(0xc6336415) }, .family = XLB_AF_INET, .weight = 1 },
		{ .addr = { htonl(0xc6336416) }, .family = XLB_AF_INET, .weight = 3 },
	};
	struct xlb_hc_config c = { .kind = XLB_HC_TCP, .port = 8080 }, got;
	struct xlb_hc_state hs = { .health = XLB_HC_DOWN, .downs = 7 };
	struct xlb_state *s = NULL;
	__u32 vid, id1, id2, inner;

	if (!open_instance())
		return;
	if (!ASSERT_OK(xlb_update_begin(&inst, &s, false), "update begin") ||
	    !ASSERT_OK(xlb_vip_converge(&inst, s, &key, 251, want, 2), "VIP made"))
		goto out;
	vid = xlb_state_vip_find(s, &key)->vip.id;
	id1 = xlb_state_backend_find(s, vid, want[0].addr, XLB_AF_INET);
	id2 = xlb_state_backend_find(s, vid, want[1].addr, XLB_AF_INET);
	ASSERT_GT(live_slots(vid, id1), 0, "slots of backend 1 while up");

	ASSERT_OK(xlb_backend_set_health(&inst, s, id1, true, false), "set down");
	ASSERT_EQ(live_slots(vid, id1), 0, "live slots of backend 1 while down");
	ASSERT_EQ(live_slots(vid, id2), 251, "live slots of backend 2");
	ASSERT_EQ(s->backends[id1].flags, XLB_BE_F_IN_USE | XLB_BE_F_DOWN, "record flags");
	ASSERT_EQ(s->vips[0].vip.flags & XLB_VIP_F_DIRTY, 0, "VIP clean after the swap");

	inner = inner_id(vid);
	ASSERT_OK(xlb_backend_set_health(&inst, s, id1, true, true), "set evict");
	ASSERT_EQ(inner_id(vid), inner, "EVICT alone swaps no table");
	ASSERT_EQ(s->backends[id1].flags,
		  XLB_BE_F_IN_USE | XLB_BE_F_DOWN | XLB_BE_F_EVICT, "record flags");

	/* Built anew under another id for another table size: what the
	 * checker found, and the settings, go with the address. */
	hs.gen = s->backends[id1].gen;
	ASSERT_OK(xlb_hc_backend_write(&inst, s, id1, &c), "override written");
	ASSERT_OK(xlb_hc_state_write(&inst, id1, &hs), "state written");
	ASSERT_OK(xlb_vip_converge(&inst, s, &key, 257, want, 2), "table size changed");
	vid = xlb_state_vip_find(s, &key)->vip.id;
	id1 = xlb_state_backend_find(s, vid, want[0].addr, XLB_AF_INET);
	id2 = xlb_state_backend_find(s, vid, want[1].addr, XLB_AF_INET);
	ASSERT_EQ(s->backends[id1].flags & (XLB_BE_F_DOWN | XLB_BE_F_EVICT),
		  XLB_BE_F_DOWN | XLB_BE_F_EVICT, "flags kept by the rebuild");
	ASSERT_EQ(live_slots(vid, id1), 0, "rebuilt table leaves it out");
	ASSERT_EQ(live_slots(vid, id2), 257, "rebuilt table");
	ASSERT_OK(xlb_hc_backend_read(&inst, id1, &got), "override read");
	ASSERT_MEM_EQ(&got, &c, sizeof(c), "override kept by the rebuild");
	ASSERT_OK(xlb_hc_state_read(&inst, id1, s->backends[id1].gen, &hs), "state read");
	ASSERT_EQ(hs.health, XLB_HC_DOWN, "health kept by the rebuild");
	ASSERT_EQ(hs.downs, 7, "downs kept by the rebuild");

	ASSERT_OK(xlb_backend_set_health(&inst, s, id1, false, false), "set up");
	ASSERT_GT(live_slots(vid, id1), 0, "live slots of backend 1 once up");
	ASSERT_EQ(live_slots(vid, id1) + live_slots(vid, id2), 257, "every slot");

	/* A backend that is gone and added again starts afresh. */
	ASSERT_OK(xlb_backend_set_health(&inst, s, id1, true, false), "set down");
	ASSERT_OK(xlb_vip_converge(&inst, s, &key, 257, want + 1, 1), "backend 1 deleted");
	ASSERT_OK(xlb_vip_converge(&inst, s, &key, 257, want, 2), "backend 1 added again");
	id1 = xlb_state_backend_find(s, vid, want[0].addr, XLB_AF_INET);
	ASSERT_EQ(s->backends[id1].flags, XLB_BE_F_IN_USE, "flags of the new record");
	ASSERT_OK(xlb_hc_backend_read(&inst, id1, &got), "override read");
	ASSERT_EQ(got.kind, XLB_HC_INHERIT, "no override of the old record");
	ASSERT_GT(live_slots(vid, id1), 0, "in the table");
out:
	xlb_state_free(s);
}

TEST_MAIN(
	TEST(down_backend_gets_no_slots_and_keeps_its_weight),
	TEST(up_again_comes_back_with_its_weight),
	TEST(all_down_fails_open),
	TEST(other_vips_count_for_nothing),
	TEST(fingerprint_follows_the_table),
	TEST(set_health_swaps_the_live_table),
)
