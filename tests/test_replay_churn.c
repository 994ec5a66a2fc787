// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The churn lab's rules on cases small enough to know the answer by hand:
 * tables of four slots owned by backends A, B, C, connections placed in a
 * slot and on a balancer, and the packets of each at given times.
 *   - a slot that changes once keeps its connection in stateless mode (the
 *     packet is passed to the previous backend) and breaks it in table
 *     mode; changes twice and it breaks in both, counted as "twice";
 *   - a previous backend is kept for the history only;
 *   - a removed backend's connections break in every mode (the optimum);
 *     a drained one's survive tracking and, for the history, stateless;
 *   - a connection moved to another balancer breaks tracking when its
 *     slot changed owner, and survives when the slot kept it;
 *   - the ECMP models move what they should when a balancer fails;
 *   - change sequences parse, sort and play on backend sets, and bad ones
 *     get one error naming the event;
 *   - the candidates for stateless VIPs: a chain of previous owners
 *     keeps a slot changed twice, stops at its hop limit, and forgets
 *     with the history; backends that remember what they passed on keep
 *     connections past both, but not silent ones, and not once removed;
 *   - through Maglev's real tables, and on the real captures (when
 *     present): no mode breaks fewer connections than the optimum, and
 *     table mode breaks the most; each candidate keeps what the one
 *     before it keeps.
 */
#include <dirent.h>
#include <errno.h>
#include "replay_fixtures.h"
#include "replay_churn.h"
#include "testlib.h"

enum { A, B, C, N_INC };

#define S	1000000ULL	/* a second in microseconds */

/* Four slots, all A, but slot 3 is B. */
static const __u32 start[4] = { A, A, A, B };
static const bool all_alive[N_INC] = { true, true, true };

static struct churn_sim *sim_new(const struct churn_conn *conns, size_t n,
				 __u32 balancers, __u64 history)
{
	struct churn_sim *s = NULL;

	ASSERT_OK(churn_sim_new(4, N_INC, start, conns, n, balancers,
				ECMP_THRESHOLD, history, &s), "churn_sim_new");
	return s;
}

static struct churn_result result(const struct churn_sim *s)
{
	struct churn_result r;

	churn_sim_result(s, &r);
	return r;
}

static void slot_changed_once_stateless_keeps_table_breaks(void)
{
	const struct churn_conn c[] = { { .slot = 0 } };
	const __u32 t1[4] = { B, A, A, B };
	struct churn_sim *s = sim_new(c, 1, 1, 300 * S);
	struct churn_result r;

	if (!s)
		return;
	churn_sim_packet(s, 1 * S, 0);		/* SYN: owner A */
	churn_sim_backends(s, 2 * S, t1, all_alive);
	churn_sim_packet(s, 3 * S, 0);		/* lands on B, passed to A */
	r = result(s);
	ASSERT_EQ(r.broken[CM_TABLE], 1, "table alone breaks");
	ASSERT_EQ(r.broken[CM_STATELESS], 0, "stateless keeps");
	ASSERT_EQ(r.forwarded, 1, "one packet passed to the previous backend");
	ASSERT_EQ(r.window_forwarded, 1, "within the history of the change");
	ASSERT_EQ(r.broken[CM_TRACK_STAY], 0, "tracking keeps");
	ASSERT_EQ(r.broken[CM_OPTIMUM], 0, "nothing removed");
	ASSERT_EQ(r.slot_changes, 1, "one slot changed");
	churn_sim_free(s);
}

static void slot_changed_twice_breaks_both(void)
{
	const struct churn_conn c[] = { { .slot = 0 }, { .slot = 1 } };
	const __u32 t1[4] = { B, A, A, B }, t2[4] = { C, A, A, B };
	struct churn_sim *s = sim_new(c, 2, 1, 300 * S);
	struct churn_result r;

	if (!s)
		return;
	churn_sim_packet(s, 1 * S, 0);
	churn_sim_packet(s, 1 * S, 1);
	churn_sim_backends(s, 2 * S, t1, all_alive);
	churn_sim_backends(s, 3 * S, t2, all_alive);
	churn_sim_packet(s, 4 * S, 0);		/* C, previous B: not A */
	churn_sim_packet(s, 4 * S, 1);		/* its slot never changed */
	r = result(s);
	ASSERT_EQ(r.broken[CM_TABLE], 1, "table alone breaks it");
	ASSERT_EQ(r.broken[CM_STATELESS], 1, "stateless breaks it");
	ASSERT_EQ(r.broken_twice, 1, "because its slot changed twice");
	ASSERT_EQ(r.broken_expired + r.broken_gone, 0, "for no other reason");
	ASSERT_TRUE(!churn_sim_broken(s, 1, CM_STATELESS), "the other lives");
	ASSERT_EQ(r.broken[CM_TRACK_STAY], 0, "tracking keeps it");
	churn_sim_free(s);
}

static void previous_kept_for_the_history_only(void)
{
	const struct churn_conn c[] = { { .slot = 0 }, { .slot = 1 } };
	const __u32 t1[4] = { B, B, A, B };
	struct churn_sim *s = sim_new(c, 2, 1, 5 * S);
	struct churn_result r;

	if (!s)
		return;
	churn_sim_packet(s, 1 * S, 0);
	churn_sim_packet(s, 1 * S, 1);
	churn_sim_backends(s, 2 * S, t1, all_alive);
	churn_sim_packet(s, 6 * S, 0);		/* 4 s after: kept */
	churn_sim_packet(s, 7 * S, 1);		/* 5 s after: expired */
	r = result(s);
	ASSERT_TRUE(!churn_sim_broken(s, 0, CM_STATELESS), "4 s < 5 s kept");
	ASSERT_TRUE(churn_sim_broken(s, 1, CM_STATELESS), "5 s expired");
	ASSERT_EQ(r.broken_expired, 1, "counted as kept too short");
	ASSERT_EQ(r.window_packets, 1, "one packet within the history");
	churn_sim_free(s);
}

/* The chain candidates: backends A to F, all alive; slots start as above. */
enum { D = N_INC, E, F, N_INC6 };
static const bool six_alive[N_INC6] = { true, true, true, true, true, true };

static struct churn_sim *sim6(const struct churn_conn *conns, size_t n,
			      __u64 history)
{
	struct churn_sim *s = NULL;

	ASSERT_OK(churn_sim_new(4, N_INC6, start, conns, n, 1, ECMP_THRESHOLD,
				history, &s), "churn_sim_new");
	return s;
}

/* Slots 0 and 1 pass from owner to owner: A, then each of next[]. */
static void hand_on(struct churn_sim *s, __u64 at, __u32 next,
		    const bool *alive)
{
	const __u32 t[4] = { next, next, A, B };

	churn_sim_backends(s, at, t, alive);
}

static void chain_keeps_a_slot_changed_twice(void)
{
	const struct churn_conn c[] = { { .slot = 0 } };
	struct churn_sim *s = sim6(c, 1, 300 * S);
	struct churn_result r;

	if (!s)
		return;
	churn_sim_packet(s, 1 * S, 0);		/* owner A */
	hand_on(s, 2 * S, B, six_alive);
	hand_on(s, 3 * S, C, six_alive);
	churn_sim_packet(s, 4 * S, 0);		/* C, B, then A */
	r = result(s);
	ASSERT_EQ(r.broken[CM_STATELESS], 1, "one previous owner: broken");
	ASSERT_EQ(r.broken[CM_CHAIN], 0, "the chain reaches A");
	ASSERT_EQ(r.broken[CM_CHAIN_MEMORY], 0, "so does the chain with memory");
	ASSERT_EQ(r.chain_forwarded, 1, "the packet was passed on");
	ASSERT_EQ(r.chain_multi_hop, 1, "twice");
	ASSERT_EQ(r.chain_by_memory, 0, "by the chain alone");
	churn_sim_free(s);
}

/* Four changes: the chain's three hops fall short of A, unless the
 * backends remember a connection whose packets they passed on. */
static void memory_goes_past_the_hop_limit(void)
{
	const struct churn_conn c[] = { { .slot = 0 }, { .slot = 1 } };
	const __u32 next[] = { B, C, D, E };
	struct churn_sim *s = sim6(c, 2, 300 * S);
	struct churn_result r;
	int i;

	if (!s)
		return;
	churn_sim_packet(s, 1 * S, 0);
	churn_sim_packet(s, 1 * S, 1);
	for (i = 0; i < 4; i++) {
		hand_on(s, (2 + 2 * i) * S, next[i], six_alive);
		churn_sim_packet(s, (3 + 2 * i) * S, 1);	/* slot 1 talks */
	}
	churn_sim_packet(s, 11 * S, 0);		/* slot 0 was silent */
	r = result(s);
	ASSERT_TRUE(churn_sim_broken(s, 0, CM_CHAIN), "silent: past the hop limit");
	ASSERT_TRUE(churn_sim_broken(s, 0, CM_CHAIN_MEMORY),
		    "silent: nobody learned it");
	ASSERT_TRUE(churn_sim_broken(s, 1, CM_CHAIN), "talking, chain alone: broken at E");
	ASSERT_TRUE(!churn_sim_broken(s, 1, CM_CHAIN_MEMORY),
		    "talking, with memory: kept through four changes");
	ASSERT_EQ(r.chain_forwarded, 4, "each of its packets after a change passed on");
	ASSERT_EQ(r.chain_by_memory, 3, "from the second change on, by memory");
	ASSERT_EQ(r.chain_multi_hop, 3, "each of those two hops");
	churn_sim_free(s);
}

/* A backend that passed a packet on remembers the connection after the
 * history has forgotten the previous owner; a silent connection is not
 * remembered. */
static void memory_outlives_the_history(void)
{
	const struct churn_conn c[] = { { .slot = 0 }, { .slot = 1 } };
	struct churn_sim *s = sim6(c, 2, 5 * S);
	struct churn_result r;

	if (!s)
		return;
	churn_sim_packet(s, 1 * S, 0);
	churn_sim_packet(s, 1 * S, 1);
	hand_on(s, 2 * S, B, six_alive);
	churn_sim_packet(s, 3 * S, 0);		/* B passes it to A, learns */
	churn_sim_packet(s, 20 * S, 0);		/* history long gone */
	churn_sim_packet(s, 20 * S, 1);
	r = result(s);
	ASSERT_TRUE(churn_sim_broken(s, 0, CM_STATELESS), "stateless: expired");
	ASSERT_TRUE(churn_sim_broken(s, 0, CM_CHAIN), "chain: expired");
	ASSERT_TRUE(!churn_sim_broken(s, 0, CM_CHAIN_MEMORY), "memory keeps it");
	ASSERT_EQ(r.chain_by_memory, 1, "through B's memory");
	ASSERT_TRUE(churn_sim_broken(s, 1, CM_CHAIN_MEMORY),
		    "silent through the history: not remembered");
	churn_sim_free(s);
}

/* A removed backend on the chain is left out: the packet goes from C
 * straight to A, one hop. */
static void removed_backend_is_no_hop(void)
{
	const struct churn_conn c[] = { { .slot = 0 } };
	bool b_gone[N_INC6];
	struct churn_sim *s = sim6(c, 1, 300 * S);
	struct churn_result r;

	if (!s)
		return;
	memcpy(b_gone, six_alive, sizeof(b_gone));
	b_gone[B] = false;
	churn_sim_packet(s, 1 * S, 0);		/* owner A */
	hand_on(s, 2 * S, B, six_alive);
	hand_on(s, 3 * S, C, b_gone);
	churn_sim_packet(s, 4 * S, 0);		/* C, past B, to A */
	r = result(s);
	ASSERT_EQ(r.broken[CM_CHAIN], 0, "the chain reaches A past B");
	ASSERT_EQ(r.broken[CM_CHAIN_MEMORY], 0, "so does memory");
	ASSERT_EQ(r.broken[CM_STATELESS], 1, "one previous owner (B): broken");
	ASSERT_EQ(r.chain_forwarded, 1, "passed on");
	ASSERT_EQ(r.chain_multi_hop, 0, "once");
	churn_sim_free(s);
}

/* What B remembers ends with B: removed, it is skipped, and the chain's
 * older owner A has expired. Drained (alive), B passes it on. */
static void memory_ends_with_its_backend(void)
{
	const struct churn_conn c[] = { { .slot = 0 } };
	bool b_gone[N_INC6];
	int drained;

	memcpy(b_gone, six_alive, sizeof(b_gone));
	b_gone[B] = false;
	for (drained = 0; drained < 2; drained++) {
		struct churn_sim *s = sim6(c, 1, 5 * S);

		if (!s)
			return;
		churn_sim_packet(s, 1 * S, 0);		/* owner A */
		hand_on(s, 2 * S, B, six_alive);
		churn_sim_packet(s, 3 * S, 0);		/* B learns */
		hand_on(s, 10 * S, C, drained ? six_alive : b_gone);
		churn_sim_packet(s, 11 * S, 0);		/* C, then B */
		ASSERT_EQ(churn_sim_broken(s, 0, CM_CHAIN_MEMORY), !drained,
			  drained ? "B drained: passes it on" : "B removed: forgotten");
		churn_sim_free(s);
	}
}

static void removed_breaks_everywhere_drained_survives(void)
{
	const struct churn_conn c[] = { { .slot = 3 }, { .slot = 0 } };
	/* B leaves the table in both; removed at 2 s, or only drained. */
	const __u32 t1[4] = { A, A, A, C };
	const bool b_gone[N_INC] = { true, false, true };
	enum churn_mode m;
	int drained;

	for (drained = 0; drained < 2; drained++) {
		struct churn_sim *s = sim_new(c, 2, 1, 300 * S);
		struct churn_result r;

		if (!s)
			return;
		churn_sim_packet(s, 1 * S, 0);		/* owner B */
		churn_sim_packet(s, 1 * S, 1);		/* owner A */
		churn_sim_backends(s, 2 * S, t1, drained ? all_alive : b_gone);
		churn_sim_packet(s, 3 * S, 0);
		churn_sim_packet(s, 3 * S, 1);
		r = result(s);
		if (!drained) {
			for (m = 0; m < CM__MAX; m++)
				ASSERT_EQ(r.broken[m], 1, churn_mode_names[m]);
			ASSERT_EQ(r.broken_gone, 1, "stateless: backend removed");
		} else {
			ASSERT_EQ(r.broken[CM_OPTIMUM], 0, "drained: optimum");
			ASSERT_EQ(r.broken[CM_TRACK_STAY], 0, "drained: tracking");
			ASSERT_EQ(r.broken[CM_STATELESS], 0, "drained: stateless");
			ASSERT_EQ(r.broken[CM_TABLE], 1, "drained: table alone");
		}
		ASSERT_TRUE(!churn_sim_broken(s, 1, CM_TABLE), "A's stays");
		churn_sim_free(s);
	}
}

static void first_packet_after_a_change_takes_the_new_owner(void)
{
	const struct churn_conn c[] = { { .slot = 0 } };
	const __u32 t1[4] = { B, A, A, B }, t2[4] = { C, A, A, B };
	struct churn_sim *s = sim_new(c, 1, 1, 300 * S);
	struct churn_result r;
	enum churn_mode m;

	if (!s)
		return;
	churn_sim_backends(s, 1 * S, t1, all_alive);
	churn_sim_packet(s, 2 * S, 0);		/* owner B */
	churn_sim_packet(s, 2 * S, 0);
	churn_sim_backends(s, 3 * S, t2, all_alive);
	churn_sim_packet(s, 4 * S, 0);		/* C passes it to B */
	r = result(s);
	ASSERT_EQ(r.connections, 1, "one connection");
	ASSERT_EQ(r.packets, 3, "three packets");
	for (m = 0; m < CM__MAX; m++)
		if (m != CM_TABLE)
			ASSERT_EQ(r.broken[m], 0, churn_mode_names[m]);
	ASSERT_EQ(r.broken[CM_TABLE], 1, "table alone");
	churn_sim_free(s);
}

/* With two balancers under hash-threshold, a hash in the upper half goes
 * to balancer 2, and to balancer 1 once 2 fails. */
static void balancer_move_breaks_tracking_unless_slot_kept(void)
{
	const __u64 upper = 0xc000000000000000ULL;
	const struct churn_conn c[] = {
		{ .slot = 0, .ecmp_hash = upper },	/* slot changes */
		{ .slot = 1, .ecmp_hash = upper },	/* slot keeps A */
		{ .slot = 0, .ecmp_hash = 0 },		/* stays on 1 */
	};
	const __u32 t1[4] = { B, A, A, B };
	struct churn_sim *s = sim_new(c, 3, 2, 300 * S);
	struct churn_result r;

	if (!s)
		return;
	churn_sim_packet(s, 1 * S, 0);
	churn_sim_packet(s, 1 * S, 1);
	churn_sim_packet(s, 1 * S, 2);
	churn_sim_backends(s, 2 * S, t1, all_alive);
	churn_sim_lb_fail(s, 2);
	churn_sim_packet(s, 3 * S, 0);
	churn_sim_packet(s, 3 * S, 1);
	churn_sim_packet(s, 3 * S, 2);
	r = result(s);
	ASSERT_EQ(r.ecmp_moved, 2, "two connections changed balancer");
	ASSERT_TRUE(churn_sim_broken(s, 0, CM_TRACK_MOVE),
		    "moved, slot changed: tracking breaks");
	ASSERT_TRUE(!churn_sim_broken(s, 1, CM_TRACK_MOVE),
		    "moved, slot kept its owner: tracking keeps");
	ASSERT_TRUE(!churn_sim_broken(s, 2, CM_TRACK_MOVE),
		    "not moved: its balancer knows it");
	ASSERT_EQ(r.broken[CM_TRACK_STAY], 0, "without the move, none");
	ASSERT_EQ(r.broken[CM_STATELESS], 0, "stateless keeps all");
	churn_sim_free(s);
}

/* A balancer learns a connection it is sent when the table agrees, and
 * keeps it whatever the table says later. */
static void balancer_learns_what_it_forwards(void)
{
	const struct churn_conn c[] = { { .slot = 1, .ecmp_hash = ~0ULL } };
	const __u32 t1[4] = { A, C, A, B };
	struct churn_sim *s = sim_new(c, 1, 2, 300 * S);

	if (!s)
		return;
	churn_sim_packet(s, 1 * S, 0);		/* balancer 2, owner A */
	churn_sim_lb_fail(s, 2);
	churn_sim_packet(s, 2 * S, 0);		/* balancer 1 learns it */
	churn_sim_lb_join(s);			/* balancer 3 */
	churn_sim_lb_fail(s, 3);
	churn_sim_backends(s, 3 * S, t1, all_alive);
	churn_sim_packet(s, 4 * S, 0);		/* balancer 1 again */
	ASSERT_TRUE(!churn_sim_broken(s, 0, CM_TRACK_MOVE),
		    "balancer 1 learnt it");
	ASSERT_TRUE(churn_sim_broken(s, 0, CM_TABLE), "table alone breaks");
	churn_sim_free(s);
}

static void ecmp_models_on_a_failure(void)
{
	const __u32 four[4] = { 1, 2, 3, 4 }, three[3] = { 1, 2, 4 };
	size_t moved[ECMP__MAX] = {}, off3 = 0, i;
	__u64 seed = 1, h;
	int e;

	for (i = 0; i < 100000; i++) {
		/* splitmix64: every bit of the hash random */
		h = (seed += 0x9e3779b97f4a7c15ULL);
		h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
		h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
		h ^= h >> 31;
		for (e = 0; e < ECMP__MAX; e++) {
			__u32 before = churn_ecmp_pick(e, h, four, 4);
			__u32 after = churn_ecmp_pick(e, h, three, 3);

			moved[e] += before != after;
			if (e == ECMP_CONSISTENT && before != 3 && before != after)
				off3++;
		}
	}
	printf("  balancer 3 of 4 fails: moved threshold %zu, modulo %zu, "
	       "consistent %zu of 100000\n", moved[ECMP_THRESHOLD],
	       moved[ECMP_MODULO], moved[ECMP_CONSISTENT]);
	ASSERT_EQ(off3, 0, "consistent: only balancer 3's flows move");
	ASSERT_GT(moved[ECMP_CONSISTENT], 23000, "consistent: about 1/4");
	ASSERT_LT(moved[ECMP_CONSISTENT], 27000, "consistent: about 1/4");
	/* Threshold: quarters become thirds; [1/4,1/3) goes from 2 to 1,
	 * [1/2,2/3) from 3 to 2, [2/3,3/4) from 3 to 4: a third moves. */
	ASSERT_GT(moved[ECMP_THRESHOLD], 32000, "threshold: about 1/3");
	ASSERT_LT(moved[ECMP_THRESHOLD], 34700, "threshold: about 1/3");
	/* Modulo: of the 12 residues of h mod 12, only 0, 1 and 11 keep
	 * their balancer: 3/4 move. */
	ASSERT_GT(moved[ECMP_MODULO], 73500, "modulo: about 3/4");
	ASSERT_LT(moved[ECMP_MODULO], 76500, "modulo: about 3/4");
}

/* Sequences ------------------------------------------------------------- */

static struct churn_spec spec_of(const char *arg, int *err)
{
	struct churn_spec s = { .balancers = 1, .history_us = 300 * S };

	*err = churn_parse(arg, &s);
	return s;
}

static void sequence_parses_and_sorts(void)
{
	int err;
	struct churn_spec s = spec_of("30s:remove 1, 10s:add 2:3,1500ms:reweight "
				      "203.0.113.3=0,45s:lb-join 2,45s:lb-fail,"
				      "50s:remove 2001:DB8::1,60s:lb-fail 2", &err);

	if (!ASSERT_OK(err, "parse") || !ASSERT_EQ(s.n, 7, "seven events"))
		goto out;
	ASSERT_EQ(s.ev[0].at_us, 1500000, "1500ms first");
	ASSERT_EQ(s.ev[0].action, CHURN_REWEIGHT, "reweight");
	ASSERT_EQ(s.ev[0].weight, 0, "to 0");
	ASSERT_TRUE(!strcmp(s.ev[0].id, "203.0.113.3"), "of 203.0.113.3");
	ASSERT_EQ(s.ev[1].action, CHURN_ADD, "then add");
	ASSERT_EQ(s.ev[1].count, 2, "two");
	ASSERT_EQ(s.ev[1].weight, 3, "weight 3");
	ASSERT_EQ(s.ev[2].count, 1, "remove 1");
	ASSERT_EQ(s.ev[3].action, CHURN_LB_JOIN, "join before fail at 45s");
	ASSERT_EQ(s.ev[3].count, 2, "two balancers");
	ASSERT_EQ(s.ev[4].action, CHURN_LB_FAIL, "then fail");
	ASSERT_EQ(s.ev[4].lb, 0, "the highest");
	ASSERT_TRUE(!strcmp(s.ev[5].id, "2001:db8::1"), "address canonical");
	ASSERT_EQ(s.ev[6].lb, 2, "balancer 2");
out:
	churn_spec_free(&s);
}

static void sequence_from_a_file(void)
{
	const char *path = fx_path("churn.txt");
	char arg[PATH_MAX + 1];
	struct churn_spec s;
	FILE *f = fopen(path, "w");
	int err;

	if (!ASSERT_TRUE(f != NULL, "write the file"))
		return;
	fprintf(f, "# a drain, then the removal\n\n10s:reweight 203.0.113.2=0\n"
		"  400s:remove 203.0.113.2   # gone\n");
	fclose(f);
	snprintf(arg, sizeof(arg), "@%s", path);
	s = spec_of(arg, &err);
	ASSERT_OK(err, "parse the file");
	ASSERT_EQ(s.n, 2, "two events");
	if (s.n == 2)
		ASSERT_EQ(s.ev[1].at_us, 400 * S, "at 400 s");
	churn_spec_free(&s);
	f = fopen(path, "w");
	if (!ASSERT_TRUE(f != NULL, "rewrite the file"))
		return;
	fprintf(f, "10s:add 1\n20s:explode\n");
	fclose(f);
	snprintf(arg, sizeof(arg), "@%s", path);
	s = spec_of(arg, &err);
	ASSERT_EQ(err, -EINVAL, "a bad line");
	ASSERT_TRUE(strstr(fx_last_err, "churn.txt:2: bad event '20s:explode'") !=
		    NULL, "names the file and line");
	churn_spec_free(&s);
}

static void bad_sequences_named(void)
{
	static const struct {
		const char *arg, *msg;
	} bad[] = {
		{ "10s:explode 1", "unknown action 'explode'" },
		{ "10:add 1", "time '10': needs a unit" },
		{ "10x:add 1", "unknown unit" },
		{ "add 1", "expected TIME:ACTION" },
		{ "10s:add", "add needs an argument" },
		{ "10s:add 0", "count '0'" },
		{ "10s:add 1:0", "must be positive" },
		{ "10s:reweight 203.0.113.1", "expected reweight ADDR=WEIGHT" },
		{ "10s:reweight 203.0.113.1=x", "weight 'x'" },
		{ "10s:lb-join 65", "count '65'" },
		{ "10s:remove 203.0.113.1:2", "has no weight" },
		{ ",", "no event" },
	};
	size_t i;
	int err;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct churn_spec s;

		fx_last_err[0] = 0;
		s = spec_of(bad[i].arg, &err);
		if (!ASSERT_EQ(err, -EINVAL, bad[i].arg) ||
		    !ASSERT_TRUE(strstr(fx_last_err, bad[i].msg) != NULL,
				 bad[i].msg))
			printf("  for '%s'\n", bad[i].arg);
		churn_spec_free(&s);
	}
}

static void sequence_plays_on_sets(void)
{
	struct lb_backend *set = fx_set(3);
	struct churn_plan plan;
	struct churn_spec s;
	int err;

	s = spec_of("1s:remove 203.0.113.2,2s:add 2,3s:reweight 203.0.113.3=5,"
		    "4s:lb-join,5s:remove 1", &err);
	if (!ASSERT_OK(err, "parse") ||
	    !ASSERT_OK(churn_plan_build(&s, set, 3, 7, &plan), "plan"))
		goto out;
	/* {1,2,3} -> {1,3} -> {1,3,2',4} -> 3 weighs 5 -> (balancer) -> {1,3,2'} */
	ASSERT_EQ(plan.steps[1].n, 2, "one removed");
	ASSERT_EQ(plan.steps[2].n, 4, "two added");
	ASSERT_TRUE(!strcmp(plan.steps[2].set[2].id, "203.0.113.2"),
		    "the free name first");
	ASSERT_EQ(plan.steps[2].inc[2], 3, "a new incarnation of .2");
	ASSERT_EQ(plan.steps[2].inc[3], 4, "and of .4");
	ASSERT_EQ(plan.steps[3].set[1].weight, 5, "reweighted");
	ASSERT_EQ(plan.steps[4].n, 4, "a balancer event keeps the set");
	ASSERT_EQ(plan.steps[5].n, 3, "the last removed");
	ASSERT_EQ(plan.n_inc, 5, "five incarnations");
	ASSERT_EQ(plan.n_balancers_end, 2, "two balancers at the end");
	churn_plan_free(&plan);
	churn_spec_free(&s);

	s = spec_of("1s:remove 203.0.113.9", &err);
	ASSERT_EQ(churn_plan_build(&s, set, 3, 7, &plan), -EINVAL, "not there");
	ASSERT_TRUE(strstr(fx_last_err, "203.0.113.9 is not one of the backends") !=
		    NULL, "says so");
	churn_spec_free(&s);
	s = spec_of("1s:lb-fail", &err);
	ASSERT_EQ(churn_plan_build(&s, set, 3, 7, &plan), -EINVAL, "last balancer");
	ASSERT_TRUE(strstr(fx_last_err, "the last balancer cannot fail") != NULL,
		    "says so");
	churn_spec_free(&s);
	s = spec_of("1s:reweight 203.0.113.1=0,1s:remove 2", &err);
	ASSERT_EQ(churn_plan_build(&s, set, 3, 7, &plan), -EINVAL, "all drained");
	ASSERT_TRUE(strstr(fx_last_err, "no backend with a positive weight") !=
		    NULL, "says so");
	churn_spec_free(&s);
	s = spec_of("1s:add 5", &err);
	ASSERT_EQ(churn_plan_build(&s, set, 3, 7, &plan), -EINVAL, "past M");
	ASSERT_TRUE(strstr(fx_last_err, "more than the table's 7 slots") != NULL,
		    "says so");
out:
	churn_spec_free(&s);
	free(set);
}

/* Through Maglev ---------------------------------------------------------- */

static void maglev_slot_changed_once_through_churn_run(void)
{
	struct lb_params p = { .table_size = 65537, .vnodes = 100 };
	struct lb_backend *set = fx_set(11);
	struct replay_flows rf = {};
	struct churn_packets pk = {};
	struct churn_result r;
	struct churn_plan plan;
	struct churn_spec s;
	struct lb *before = NULL, *after = NULL;
	__u32 k, moved = 0, kept = 0;
	int err;

	s = spec_of("10s:add 1", &err);
	if (!ASSERT_OK(err, "parse") ||
	    !ASSERT_OK(churn_plan_build(&s, set, 10, p.table_size, &plan), "plan"))
		goto out;
	ASSERT_OK(lb_build(LB_MAGLEV, set, 10, &p, &before), "table of 10");
	ASSERT_OK(lb_build(LB_MAGLEV, set, 11, &p, &after), "table of 11");
	if (!before || !after)
		goto out;
	/* A flow in a slot that moves to the new backend, one in a slot that
	 * does not: hash = slot. */
	rf.n = 2;
	rf.flows = calloc(2, sizeof(*rf.flows));
	pk.p = calloc(4, sizeof(*pk.p));
	if (!rf.flows || !pk.p)
		goto out;
	for (k = 0; k < p.table_size && (!moved || !kept); k++) {
		if (lb_slot(before, k) != lb_slot(after, k))
			moved = moved ? moved : k;
		else
			kept = kept ? kept : k;
	}
	rf.flows[0].hash = moved;
	rf.flows[1].hash = kept;
	ASSERT_EQ(churn_slot(LB_MAGLEV, moved, p.table_size), moved, "slot = hash");
	pk.p[0] = (struct churn_packet){ .t_us = 5 * S, .flow = 0 };
	pk.p[1] = (struct churn_packet){ .t_us = 5 * S, .flow = 1 };
	pk.p[2] = (struct churn_packet){ .t_us = 15 * S, .flow = 0 };
	pk.p[3] = (struct churn_packet){ .t_us = 15 * S, .flow = 1 };
	pk.n = 4;
	if (!ASSERT_OK(churn_run(LB_MAGLEV, &p, &plan, &rf, &pk, &r), "run"))
		goto out;
	ASSERT_EQ(r.connections, 2, "two connections");
	ASSERT_EQ(r.broken[CM_TABLE], 1, "the moved slot's breaks in table mode");
	ASSERT_EQ(r.broken[CM_STATELESS], 0, "and survives stateless");
	ASSERT_EQ(r.forwarded, 1, "through one forwarded packet");
	/* Maglev moves about 1/11 of the slots to the 11th backend. */
	ASSERT_GT(r.slot_changes, p.table_size / 11, "slots that changed");
	ASSERT_LT(r.slot_changes, p.table_size / 11 + p.table_size / 100,
		  "few more than the new backend's");
out:
	lb_free(before);
	lb_free(after);
	free(rf.flows);
	free(pk.p);
	churn_plan_free(&plan);
	churn_spec_free(&s);
	free(set);
}

/* Two captures replayed side by side: each from its own first packet. */
static void captures_start_together(void)
{
	struct replay_flows rf = {};
	struct churn_packets pk = {};
	__u32 of_trace[2] = { 1, 0 };
	struct trace_packet tp = {};

	rf.of_trace = of_trace;
	rf.n_trace = 2;
	pk.file = 0;
	tp.flow = 0;
	tp.ts_us = 1000 * S + 7;
	ASSERT_OK(churn_packets_add(&pk, &tp), "add");
	tp.ts_us = 1000 * S;
	ASSERT_OK(churn_packets_add(&pk, &tp), "add an earlier one");
	pk.file = 1;
	tp.flow = 1;
	tp.ts_us = 5 * S + 3;
	ASSERT_OK(churn_packets_add(&pk, &tp), "add");
	ASSERT_OK(churn_packets_finish(&pk, &rf), "finish");
	if (ASSERT_EQ(pk.n, 3, "three packets")) {
		ASSERT_EQ(pk.p[0].t_us, 0, "capture 1 starts at 0");
		ASSERT_EQ(pk.p[0].flow, 0, "its trace flow 1 is replay flow 0");
		ASSERT_EQ(pk.p[1].t_us, 0, "capture 0 from its earliest packet");
		ASSERT_EQ(pk.p[1].flow, 1, "trace flow 0 is replay flow 1");
		ASSERT_EQ(pk.p[2].t_us, 7, "then 7 us");
		ASSERT_EQ(pk.span_us, 7, "span");
	}
	churn_packets_free(&pk);
}

/* Real captures ----------------------------------------------------------- */

static void modes_ordered_on_real_captures(void)
{
	const char *dir = getenv("XLB_PCAP_DIR");
	struct lb_params p = { .table_size = 65537, .vnodes = 100 };
	struct lb_backend *set = fx_set(10);
	struct churn_packets pk = {};
	struct replay_flows rf = {};
	struct trace t = {};
	struct churn_plan plan = {};
	struct churn_spec s;
	struct dirent *de;
	char path[PATH_MAX];
	int err, k, files = 0;
	DIR *d;

	dir = dir && *dir ? dir : "../shared/pcaps";
	d = opendir(dir);
	s = spec_of("10s:add 1,20s:lb-join,30s:remove 203.0.113.2,"
		    "40s:lb-fail 1,50s:reweight 203.0.113.4=0,60s:lb-join,"
		    "300s:remove 203.0.113.4", &err);
	s.balancers = 3;
	if (!d) {
		test_skip("no captures (set XLB_PCAP_DIR)");
		goto out;
	}
	while ((de = readdir(d))) {
		if (!strstr(de->d_name, ".pcap"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		pk.file = files++;
		if (!ASSERT_OK(trace_read(&t, path, churn_packets_add, &pk), path))
			goto out;
	}
	if (!files) {
		test_skip("no captures (set XLB_PCAP_DIR)");
		goto out;
	}
	if (!ASSERT_OK(err, "parse") ||
	    !ASSERT_OK(replay_flows_build(&t, fx_key, &rf), "flows") ||
	    !ASSERT_OK(churn_packets_finish(&pk, &rf), "packets") ||
	    !ASSERT_OK(churn_plan_build(&s, set, 10, p.table_size, &plan), "plan"))
		goto out;
	for (k = 0; k < LB__MAX; k++) {
		struct churn_result r;

		if (!ASSERT_OK(churn_run(k, &p, &plan, &rf, &pk, &r), lb_algo_name(k)))
			continue;
		printf("  %d captures, %-10s optimum %llu, table %llu, tracking "
		       "%llu / moved %llu, stateless %llu, chain %llu, with "
		       "memory %llu of %llu\n", files,
		       lb_algo_name(k), (unsigned long long)r.broken[CM_OPTIMUM],
		       (unsigned long long)r.broken[CM_TABLE],
		       (unsigned long long)r.broken[CM_TRACK_STAY],
		       (unsigned long long)r.broken[CM_TRACK_MOVE],
		       (unsigned long long)r.broken[CM_STATELESS],
		       (unsigned long long)r.broken[CM_CHAIN],
		       (unsigned long long)r.broken[CM_CHAIN_MEMORY],
		       (unsigned long long)r.connections);
		ASSERT_EQ(r.connections, rf.n, "every flow is a connection");
		ASSERT_GT(r.broken[CM_OPTIMUM], 0, "removals break some");
		ASSERT_EQ(r.broken[CM_TRACK_STAY], r.broken[CM_OPTIMUM],
			  "tracking without moves is the optimum");
		ASSERT_GE(r.broken[CM_TRACK_MOVE], r.broken[CM_TRACK_STAY],
			  "moves only add");
		ASSERT_GE(r.broken[CM_STATELESS], r.broken[CM_OPTIMUM],
			  "stateless no better than the optimum");
		ASSERT_LE(r.broken[CM_STATELESS], r.broken[CM_TABLE],
			  "stateless no worse than the table alone");
		ASSERT_LE(r.broken[CM_TRACK_MOVE], r.broken[CM_TABLE],
			  "tracking no worse than the table alone");
		ASSERT_EQ(r.broken_gone + r.broken_twice + r.broken_expired,
			  r.broken[CM_STATELESS], "every stateless break has a reason");
		ASSERT_GT(r.broken[CM_TABLE], r.broken[CM_STATELESS],
			  "the table alone breaks more");
		/* Each candidate keeps what the one before it keeps. */
		ASSERT_LE(r.broken[CM_CHAIN], r.broken[CM_STATELESS],
			  "the chain no worse than one previous owner");
		ASSERT_LE(r.broken[CM_CHAIN_MEMORY], r.broken[CM_CHAIN],
			  "memory no worse than the chain alone");
		ASSERT_GE(r.broken[CM_CHAIN_MEMORY], r.broken[CM_OPTIMUM],
			  "memory no better than the optimum");
	}
out:
	if (d)
		closedir(d);
	churn_plan_free(&plan);
	churn_spec_free(&s);
	churn_packets_free(&pk);
	replay_flows_free(&rf);
	trace_free(&t);
	free(set);
}

TEST_MAIN(
	TEST(slot_changed_once_stateless_keeps_table_breaks),
	TEST(slot_changed_twice_breaks_both),
	TEST(previous_kept_for_the_history_only),
	TEST(chain_keeps_a_slot_changed_twice),
	TEST(memory_goes_past_the_hop_limit),
	TEST(memory_outlives_the_history),
	TEST(removed_backend_is_no_hop),
	TEST(memory_ends_with_its_backend),
	TEST(removed_breaks_everywhere_drained_survives),
	TEST(first_packet_after_a_change_takes_the_new_owner),
	TEST(balancer_move_breaks_tracking_unless_slot_kept),
	TEST(balancer_learns_what_it_forwards),
	TEST(ecmp_models_on_a_failure),
	TEST(sequence_parses_and_sorts),
	TEST(sequence_from_a_file),
	TEST(bad_sequences_named),
	TEST(sequence_plays_on_sets),
	TEST(maglev_slot_changed_once_through_churn_run),
	TEST(captures_start_together),
	TEST(modes_ordered_on_real_captures),
)
