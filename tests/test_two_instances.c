// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libxlb keeps what belongs to an instance in the instance and what
 * belongs to a change in the change, so that one process (a daemon, the
 * health checker) can hold several:
 *  - two instances open at once, changed in turn step by step, and one
 *    changed from inside the other's all-or-nothing change (planned,
 *    then committed), each end as the same steps leave it alone;
 *  - a change refused by its plan writes nothing, and the same opened
 *    instance takes the next change as a fresh one would;
 *  - a plan freed without its commit is a dry run: nothing written;
 *  - a plan is a value: its steps run once, the commit performs what they
 *    recorded (and only once), and the state is the planned one only
 *    after it.
 * The instances are the program's maps pinned under /sys/fs/bpf (root);
 * the process runs in a network namespace of its own, so that the next
 * hops of the backends are looked up nowhere real.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/libbpf.h>

#include "addr.h"
#include "pinned_instance.h"
#include "state.h"
#include "table_map.h"
#include "testlib.h"
#include "update.h"

#define M1	251
#define M2	509

/* 192.0.2.10:80/tcp and 192.0.2.11:443/tcp, made by own_netns(). */
static struct xlb_vip_key vip1, vip2;

static struct xlb_vip_key vip_of(__u32 addr, __u16 port)
{
	struct xlb_vip_key k = {
		.addr = { htonl(addr) }, .port = htons(port), .proto = 6,
		.family = XLB_AF_INET,
	};

	return k;
}

/* Root, and a network namespace of the process's own: next hops are
 * looked up in it. False (the case skipped) without root. */
static bool own_netns(void)
{
	static bool done;

	if (!test_have_root()) {
		test_skip_env("needs root");
		return false;
	}
	vip1 = vip_of(0xc000020a, 80);
	vip2 = vip_of(0xc000020b, 443);
	if (!done)
		done = ASSERT_OK(unshare(CLONE_NEWNET) ? -errno : 0,
				 "unshare(CLONE_NEWNET)");
	return done;
}

/* n backends from base (host order) up, of weight w. */
static void wants(struct xlb_want *want, size_t n, __u32 base, __u32 w)
{
	size_t i;

	memset(want, 0, n * sizeof(*want));
	for (i = 0; i < n; i++) {
		want[i].addr[0] = htonl(base + i);
		want[i].family = XLB_AF_INET;
		want[i].weight = w;
	}
}

/* An opened instance and its change in progress. */
struct side {
	struct xlb_instance inst;
	struct xlb_state *st;
};

static bool side_make(struct side *s, const char *name)
{
	struct xlb_instance_opts o = {};
	struct bpf_object *obj;

	obj = pinned_instance(name);
	if (!ASSERT_TRUE(obj != NULL, "program loaded with its maps pinned"))
		return false;
	bpf_object__close(obj);
	o.pin_dir = pinned_dir;
	return ASSERT_OK(xlb_update_open(&s->inst, &o, &s->st, false),
			 "instance opened for a change");
}

static void side_close(struct side *s)
{
	xlb_update_close(&s->inst, s->st);
	s->st = NULL;
}

/* Whether a record names a VIP of the state. */
static bool owned(const struct xlb_state *st, const struct xlb_backend *b)
{
	__u32 i;

	for (i = 0; i < st->n_vips; i++)
		if (st->vips[i].vip.id == b->vip_id)
			return xlb_backend_live(b);
	return false;
}

/* What an instance holds, as text: every VIP's key, size and mode, its
 * backends by address with weight and flags, and its live table slot by
 * slot as addresses (ids may differ, what they name may not); then the
 * records in use that no VIP owns (a write a plan should have left out
 * shows there) and how many records are in use. */
static char *snapshot(const struct xlb_instance *inst)
{
	char a[XLB_ADDR_STRLEN], *text = NULL;
	struct xlb_state *st;
	__u32 *slots, m, i, k;
	size_t len = 0;
	FILE *f;

	if (xlb_state_read(inst, &st))
		return NULL;
	f = open_memstream(&text, &len);
	for (i = 0; f && i < st->n_vips; i++) {
		const struct xlb_state_vip *v = &st->vips[i];

		fprintf(f, "vip %s m %u flags %#x\n",
			xlb_addr_str(v->key.addr, v->key.family, a, sizeof(a)),
			v->vip.table_size, v->vip.flags);
		for (k = 1; k < XLB_MAX_BACKENDS; k++) {
			const struct xlb_backend *b = &st->backends[k];

			if (xlb_backend_live(b) && b->vip_id == v->vip.id)
				fprintf(f, " be %s w %u flags %#x\n",
					xlb_addr_str(b->addr, b->family, a, sizeof(a)),
					b->weight, b->flags);
		}
		if (xlb_table_read(inst->tables_fd, v->vip.id, &slots, &m)) {
			fprintf(f, " no table\n");
			continue;
		}
		for (k = 0; k < m; k++)
			fprintf(f, "%s%s", k % 16 ? " " : "\n ", slots[k] ?
				xlb_addr_str(st->backends[slots[k]].addr,
					     st->backends[slots[k]].family, a,
					     sizeof(a)) : "-");
		fputc('\n', f);
		free(slots);
	}
	for (k = 1; f && k < XLB_MAX_BACKENDS; k++) {
		const struct xlb_backend *b = &st->backends[k];

		if ((b->flags & XLB_BE_F_IN_USE) && !owned(st, b))
			fprintf(f, "stray %s w %u flags %#x\n",
				xlb_addr_str(b->addr, b->family, a, sizeof(a)),
				b->weight, b->flags);
	}
	if (f) {
		fprintf(f, "records in use %zu\n", xlb_state_backends_in_use(st));
		fclose(f);
	}
	xlb_state_free(st);
	return text;
}

/* The same of the instance in dir, opened for reading. */
static char *snapshot_of(const char *dir)
{
	struct xlb_instance_opts o = { .pin_dir = dir };
	struct xlb_instance inst;
	char *text;

	if (xlb_instance_open(&inst, &o, XLB_LOCK_READ))
		return NULL;
	text = snapshot(&inst);
	xlb_instance_close(&inst);
	return text;
}

/* The steps of the instance called A, and of B. */
static int a_step(struct side *s, int n)
{
	struct xlb_want w[8];
	struct xlb_health_change down = { .down = true };
	const struct xlb_state_vip *v;

	switch (n) {
	case 0:
		wants(w, 4, 0xc6336401, 1);	/* 198.51.100.1-4 */
		return xlb_vip_converge(&s->inst, s->st, &vip1, M1, w, 4);
	case 1:
		wants(w, 5, 0xc6336401, 1);
		w[4].weight = 2;
		return xlb_vip_converge(&s->inst, s->st, &vip1, M1, w, 5);
	case 2:
		v = xlb_state_vip_find(s->st, &vip1);
		if (!v)
			return -ENOENT;
		down.id = xlb_state_backend_find(s->st, v->vip.id,
						 (__be32[4]){ htonl(0xc6336402) },
						 XLB_AF_INET);
		return xlb_backends_set_health(&s->inst, s->st, &down, 1);
	}
	return 0;
}

static int b_step(struct side *s, int n)
{
	struct xlb_want w[8];

	switch (n) {
	case 0:
		wants(w, 3, 0xcb007101, 1);	/* 203.0.113.1-3 */
		return xlb_vip_converge(&s->inst, s->st, &vip1, 257, w, 3);
	case 1:
		wants(w, 3, 0xcb007101, 1);
		w[1] = w[2];
		return xlb_vip_converge(&s->inst, s->st, &vip1, 257, w, 2);
	case 2:
		wants(w, 6, 0xcb007111, 3);	/* 203.0.113.17-22 */
		return xlb_vip_converge(&s->inst, s->st, &vip2, M2, w, 6);
	}
	return 0;
}

/* A's change of several steps, which also makes B's last step: B is
 * changed from inside A's plan and again inside its commit. */
struct nested {
	struct side *b;
};

static int a_change(struct xlb_instance *inst, struct xlb_state *st,
		    void *arg)
{
	struct nested *n = arg;
	struct xlb_want w[3];

	wants(w, 3, 0xc6336411, 1);	/* 198.51.100.17-19 */
	return xlb_vip_converge(inst, st, &vip2, M2, w, 3) ?:
	       (n ? b_step(n->b, 2) : 0);
}

static void interleaved_instances_end_as_alone(void)
{
	struct side a = {}, b = {}, c = {}, d = {};
	char *sa = NULL, *sb = NULL, *sc = NULL, *sd = NULL;
	struct nested nest = { .b = &b };
	int i;

	if (!own_netns())
		return;
	if (!side_make(&a, "twoa") || !side_make(&b, "twob"))
		goto out;
	/* A and B open together, their steps in turn. */
	for (i = 0; i < 3; i++) {
		ASSERT_OK(a_step(&a, i), "A's step");
		if (i < 2)
			ASSERT_OK(b_step(&b, i), "B's step");
	}
	ASSERT_OK(xlb_update_all_or_nothing(&a.inst, a.st, a_change, &nest),
		  "A's change of several steps, with B's last inside");
	side_close(&a);
	side_close(&b);

	/* The same steps, each instance alone. */
	if (!side_make(&c, "twoc"))
		goto out;
	for (i = 0; i < 3; i++)
		ASSERT_OK(a_step(&c, i), "C's step");
	ASSERT_OK(xlb_update_all_or_nothing(&c.inst, c.st, a_change, NULL),
		  "C's change of several steps");
	side_close(&c);
	if (!side_make(&d, "twod"))
		goto out;
	for (i = 0; i < 3; i++)
		ASSERT_OK(b_step(&d, i), "D's step");
	side_close(&d);

	sa = snapshot_of(pinned_dirs[0]);
	sb = snapshot_of(pinned_dirs[1]);
	sc = snapshot_of(pinned_dirs[2]);
	sd = snapshot_of(pinned_dirs[3]);
	if (ASSERT_TRUE(sa && sb && sc && sd, "instances read back")) {
		ASSERT_TRUE(strstr(sa, "198.51.100.19") != NULL, "A has its VIP 2");
		ASSERT_TRUE(strstr(sb, "203.0.113.22") != NULL, "B has its VIP 2");
		ASSERT_TRUE(!strcmp(sa, sc), "A interleaved is A alone");
		ASSERT_TRUE(!strcmp(sb, sd), "B interleaved is B alone");
		if (strcmp(sb, sd))
			printf("  B interleaved:\n%.600s\n  B alone:\n%.600s\n", sb, sd);
	}
out:
	if (a.st)
		side_close(&a);
	if (b.st)
		side_close(&b);
	if (c.st)
		side_close(&c);
	if (d.st)
		side_close(&d);
	free(sa);
	free(sb);
	free(sc);
	free(sd);
	pinned_remove();
}

/* A change whose plan fails at its last step, after a good one. */
static int too_big(struct xlb_instance *inst, struct xlb_state *st, void *arg)
{
	struct xlb_want *w = arg;
	int err;

	err = xlb_vip_converge(inst, st, &vip1, M1, w, 3);
	if (err)
		return err;
	/* 4,095 backend ids: a VIP of 4,096 does not fit. */
	err = xlb_vip_check(st, &vip2, 65537, w + 3, XLB_MAX_BACKENDS,
			    xlb_vips_free(st), xlb_backend_ids_free(st), "vip2");
	return err ?: xlb_vip_converge(inst, st, &vip2, 65537, w + 3,
				       XLB_MAX_BACKENDS);
}

static int good(struct xlb_instance *inst, struct xlb_state *st, void *arg)
{
	struct xlb_want *w = arg;

	return xlb_vip_converge(inst, st, &vip1, M1, w, 3) ?:
	       xlb_vip_converge(inst, st, &vip2, M2, w + 3, 5);
}

static void change_retried_after_its_plan_failed(void)
{
	struct side a = {}, c = {};
	char *before = NULL, *after = NULL, *sa = NULL, *sc = NULL;
	struct xlb_plan *plan;
	struct xlb_want *w;

	if (!own_netns())
		return;
	w = calloc(XLB_MAX_BACKENDS + 3, sizeof(*w));
	if (!ASSERT_TRUE(w != NULL, "memory"))
		return;
	wants(w, 3, 0xc6336401, 1);
	wants(w + 3, XLB_MAX_BACKENDS, 0xcb007101, 1);	/* 203.0.113.1.. */
	if (!side_make(&a, "retrya"))
		goto out;
	before = snapshot(&a.inst);
	ASSERT_EQ(xlb_update_all_or_nothing(&a.inst, a.st, too_big, w), -EINVAL,
		  "the plan refuses a VIP of more backends than ids");
	after = snapshot(&a.inst);
	ASSERT_TRUE(before && after && !strcmp(before, after),
		    "nothing written by the refused change");
	/* A plan never committed: a dry run. */
	ASSERT_OK(xlb_update_plan(&a.inst, a.st, good, w, &plan), "plan made");
	xlb_plan_free(plan);
	free(after);
	after = snapshot(&a.inst);
	ASSERT_TRUE(after && !strcmp(before, after),
		    "nothing written by a plan freed uncommitted");
	ASSERT_OK(xlb_update_all_or_nothing(&a.inst, a.st, good, w),
		  "the next change on the same opened instance");
	side_close(&a);

	if (!side_make(&c, "retryc"))
		goto out;
	ASSERT_OK(xlb_update_all_or_nothing(&c.inst, c.st, good, w),
		  "the same change on a fresh instance");
	side_close(&c);
	sa = snapshot_of(pinned_dirs[0]);
	sc = snapshot_of(pinned_dirs[1]);
	ASSERT_TRUE(sa && sc && strstr(sa, "203.0.113.5") && !strcmp(sa, sc),
		    "retried, it ends as on a fresh instance");
out:
	if (a.st)
		side_close(&a);
	if (c.st)
		side_close(&c);
	free(before);
	free(after);
	free(sa);
	free(sc);
	free(w);
	pinned_remove();
}

/* The steps of good(), counted. */
struct counted {
	struct xlb_want *w;
	int runs;
};

static int counted_good(struct xlb_instance *inst, struct xlb_state *st,
			void *arg)
{
	struct counted *c = arg;

	c->runs++;
	return good(inst, st, c->w);
}

static void commit_performs_the_plan_not_its_steps(void)
{
	struct side a = {}, c = {};
	char *before = NULL, *planned = NULL, *sa = NULL, *sc = NULL;
	struct counted n = {};
	struct xlb_plan *plan = NULL;

	if (!own_netns())
		return;
	n.w = calloc(8, sizeof(*n.w));
	if (!ASSERT_TRUE(n.w != NULL, "memory"))
		return;
	wants(n.w, 8, 0xc6336401, 2);	/* 198.51.100.1-8 */
	if (!side_make(&a, "valuea"))
		goto out;
	before = snapshot(&a.inst);
	if (!ASSERT_OK(xlb_update_plan(&a.inst, a.st, counted_good, &n, &plan),
		       "plan made"))
		goto out;
	ASSERT_EQ(n.runs, 1, "the plan runs the steps once");
	planned = snapshot(&a.inst);
	ASSERT_TRUE(before && planned && !strcmp(before, planned),
		    "a plan alone writes nothing");
	ASSERT_EQ(a.st->n_vips, 0, "nor changes the state it was made on");
	ASSERT_OK(xlb_update_commit(&a.inst, a.st, plan), "plan committed");
	ASSERT_EQ(n.runs, 1, "the commit runs no step again");
	ASSERT_EQ(a.st->n_vips, 2, "the state is the planned one after it");
	ASSERT_EQ(xlb_update_commit(&a.inst, a.st, plan), -EINVAL,
		  "a plan commits once");
	xlb_plan_free(plan);
	plan = NULL;
	side_close(&a);

	if (!side_make(&c, "valuec"))
		goto out;
	ASSERT_OK(xlb_update_all_or_nothing(&c.inst, c.st, good, n.w),
		  "the same change in one call, on a fresh instance");
	side_close(&c);
	sa = snapshot_of(pinned_dirs[0]);
	sc = snapshot_of(pinned_dirs[1]);
	ASSERT_TRUE(sa && sc && strstr(sa, "198.51.100.8") && !strcmp(sa, sc),
		    "committed, it ends as the change made at once");
out:
	xlb_plan_free(plan);
	if (a.st)
		side_close(&a);
	if (c.st)
		side_close(&c);
	free(before);
	free(planned);
	free(sa);
	free(sc);
	free(n.w);
	pinned_remove();
}

TEST_MAIN(
	TEST(interleaved_instances_end_as_alone),
	TEST(change_retried_after_its_plan_failed),
	TEST(commit_performs_the_plan_not_its_steps),
)
