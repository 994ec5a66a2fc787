// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The health checker: probes on schedule, rise and fall, flags swapped in
 * as transactions (checker.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include "addr.h"
#include "checker.h"
#include "hc_store.h"
#include "neigh.h"
#include "probe.h"
#include "report.h"
#include "state.h"
#include "update.h"

/* Results are written at least this often (and at once with a change). */
#define FLUSH_MS	100
/* The instance is re-read at the shortest interval in use, within these;
 * the settings (a lookup per backend) at most once a second. */
#define REFRESH_MIN_MS	100
#define REFRESH_MAX_MS	1000
/* How often the backends' next hops are seen to (neigh_pass()). */
#define NEIGH_PASS_MS	10000
#define SETTINGS_MS	1000
/* New backends' first probes are spread over their interval in this many
 * steps, so that a thousand backends are not probed in one burst. */
#define SPREAD_STEPS	32

#define HC_FLAGS	(XLB_BE_F_DOWN | XLB_BE_F_EVICT)

/* Descriptors kept from probes for the checker's own work: the instance
 * opened at each read and commit (its directory and a dozen maps), the
 * probe path's program, maps and netlink socket, epoll, the locks, stdio,
 * and a commit's new tables: about 30 at most by count, the reserve more
 * than twice that. */
#define FD_RESERVE	80
/* Causes of probes that could not start, each said once a round. */
#define START_CAUSES	4
#define ROUND_MS	1000

/* What the checker knows of one backend id. */
struct hc_backend {
	bool live;		/* a live backend in the last state read */
	bool checked;		/* its kind is not none */
	bool dirty;		/* rec holds results not written yet */
	bool probed;		/* once: its probe was started */
	__u8 next;		/* the health rec moves to at the next commit */
	__u8 flags;		/* its HC_FLAGS as the instance holds them */
	bool by_probes;		/* next was decided by probes (count of them) */
	__u32 count;
	char why[80];		/* why next */
	__u32 gen;
	__u32 vip_id;
	struct xlb_hc_config eff;
	struct xlb_probe probe;
	__u64 due_ms;		/* CLOCK_MONOTONIC */
	struct xlb_hc_state rec;
	/* Kept when the id gets a new gen: a probe of the last one may
	 * still be in flight, and its result is then dropped. */
	bool in_flight;
	__u32 flight_gen;
};

struct checker {
	const struct xlb_checker_opts *opts;
	struct xlb_nexthops nx;		/* the next hops' passes (neigh_pass()) */
	struct xlb_prober *prober;
	struct xlb_state *st;		/* the last state read */
	struct hc_backend be[XLB_MAX_BACKENDS];
	__u32 top;			/* above every live backend id */
	bool fail_open[XLB_MAX_VIPS];
	/* Each VIP's settings as reconcile() read them, once a pass. */
	struct xlb_hc_config vip_hc[XLB_MAX_VIPS];
	bool read_once;
	__u32 min_interval_ms;		/* the shortest in use, within bounds */
	__u64 next_refresh_ms;
	__u64 next_settings_ms;
	__u64 last_flush_ms;
	bool dirty;			/* some rec is dirty */
	bool pending;			/* some backend needs a commit */
	/* Probes in flight at most: the descriptor limit less the
	 * reserve. */
	__u32 max_in_flight;
	__u64 fd_limit;
	bool said_limit;		/* more checked backends than that */
	/* Probes that could not start this round, by cause. */
	struct {
		int err;
		__u32 count;
		__u32 example;		/* a backend id */
	} start_fail[START_CAUSES];
	__u64 next_round_ms;
	__u64 next_neigh_ms;
};

static __u64 mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

static __u64 real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

__u8 xlb_hc_health_of(const struct xlb_backend *b,
		      const struct xlb_hc_state *s)
{
	if (b->flags & XLB_BE_F_DOWN)
		return XLB_HC_DOWN;
	return s->health == XLB_HC_DOWN ? XLB_HC_UP : s->health;
}

/* The flags a backend should carry for a health and its settings. */
static __u8 wanted_flags(const struct hc_backend *e, __u8 health)
{
	if (!e->checked || health != XLB_HC_DOWN)
		return 0;
	return XLB_BE_F_DOWN |
	       (e->eff.on_down == XLB_HC_ON_DOWN_RESET ? XLB_BE_F_EVICT : 0);
}

static bool needs_commit(const struct hc_backend *e)
{
	return e->live &&
	       (e->next != e->rec.health || wanted_flags(e, e->next) != e->flags);
}

static void decide(struct hc_backend *e, __u8 health, bool by_probes,
		   __u32 count, const char *why)
{
	e->next = health;
	e->by_probes = by_probes;
	e->count = count;
	snprintf(e->why, sizeof(e->why), "%s", why);
}

static void probe_from(struct hc_backend *e, __u32 id,
		       const struct xlb_vip_key *key)
{
	static const __u8 kinds[] = {
		[XLB_HC_TCP] = XLB_PROBE_TCP,
		[XLB_HC_HTTP] = XLB_PROBE_HTTP,
		[XLB_HC_UDP] = XLB_PROBE_UDP,
	};
	const struct xlb_hc_config *c = &e->eff;
	struct xlb_probe *p = &e->probe;

	memset(p, 0, sizeof(*p));
	p->backend_id = id;
	p->family = key->family;
	p->kind = kinds[c->kind];
	p->port = c->port;
	memcpy(p->vip, key->addr, sizeof(p->vip));
	p->timeout_ms = c->timeout_ms;
	p->http_status = c->http_status;
	p->send_len = c->send_len;
	p->expect_len = c->expect_len;
	memcpy(p->path, c->path, sizeof(p->path));
	memcpy(p->send, c->send, sizeof(p->send));
	memcpy(p->expect, c->expect, sizeof(p->expect));
}

/* A backend's settings: its VIP's (vc) under its own. */
static int read_settings(const struct xlb_instance *inst,
			 const struct xlb_state_vip *v,
			 const struct xlb_hc_config *vc, __u32 id,
			 struct hc_backend *e)
{
	struct xlb_hc_config bc;
	int err;

	err = xlb_hc_backend_read(inst, id, &bc);
	if (err)
		return err;
	xlb_hc_merge(vc, &bc, ntohs(v->key.port), &e->eff);
	e->checked = e->eff.kind == XLB_HC_TCP || e->eff.kind == XLB_HC_HTTP ||
		     e->eff.kind == XLB_HC_UDP;
	if (e->checked)
		probe_from(e, id, &v->key);
	return 0;
}

/* A backend seen for the first time in this run, or under a new gen: its
 * record as the last run left it. */
static int adopt(struct hc_backend *e, const struct xlb_instance *inst,
		 __u32 id, const struct xlb_backend *b)
{
	bool in_flight = e->in_flight;
	__u32 flight_gen = e->flight_gen;
	int err;

	memset(e, 0, sizeof(*e));
	e->in_flight = in_flight;
	e->flight_gen = flight_gen;
	e->live = true;
	e->gen = b->gen;
	e->vip_id = b->vip_id;
	err = xlb_hc_state_read(inst, id, b->gen, &e->rec);
	if (err)
		return err;
	e->next = e->rec.health;
	return 0;
}

/*
 * Room for a probe of every backend at once, within the hard limit: a
 * mass outage, when every probe waits out its timeout, is when the
 * checker matters most. What the limit cannot hold is said once.
 */
static void fd_budget(struct checker *c)
{
	__u64 want = XLB_MAX_BACKENDS + FD_RESERVE;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = 1024;
	} else if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ?
			      want : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	c->fd_limit = rl.rlim_cur;
	/* A limit below twice the reserve still probes, half of it. */
	c->max_in_flight = rl.rlim_cur >= 2 * FD_RESERVE ?
			   rl.rlim_cur - FD_RESERVE : rl.rlim_cur / 2;
}

static void check_budget(struct checker *c)
{
	__u32 id, checked = 0;

	for (id = 1; id < c->top; id++)
		checked += c->be[id].live && c->be[id].checked;
	if (checked <= c->max_in_flight || c->said_limit)
		return;
	c->said_limit = true;
	p_info("xlb: %u backends are checked, but the descriptor limit (%llu) holds %u probes in flight: when more are due at once, the rest are counted as failed; raise it (LimitNOFILE=, ulimit -n) to %u",
	       checked, (unsigned long long)c->fd_limit, c->max_in_flight,
	       checked + FD_RESERVE);
}

/*
 * Take the state just read: backends that came or went, their settings
 * (when settings), and flags that disagree with a record: a run killed
 * between a flag and its record, or a flag changed by another hand. The
 * flag wins, and the record is completed by the next commit.
 */
static int reconcile(struct checker *c, const struct xlb_instance *inst,
		     bool settings, __u64 now)
{
	bool vc_read[XLB_MAX_VIPS] = { false };
	struct xlb_state *st = c->st;
	__u32 id, min_interval = REFRESH_MAX_MS;
	const struct xlb_backend *b;
	struct xlb_state_vip *v;
	struct hc_backend *e;
	bool fresh;
	int err;

	c->top = 1;
	for (id = 1; id < XLB_MAX_BACKENDS; id++) {
		b = &st->backends[id];
		e = &c->be[id];
		v = xlb_backend_live(b) ? xlb_state_vip_by_id(st, b->vip_id) : NULL;
		if (!v || v->corrupt[0]) {
			e->live = false;
			continue;
		}
		c->top = id + 1;
		fresh = !e->live || e->gen != b->gen;
		if (fresh) {
			err = adopt(e, inst, id, b);
			if (err)
				return err;
		}
		e->flags = b->flags & HC_FLAGS;
		if (fresh || settings) {
			if (!vc_read[b->vip_id]) {
				err = xlb_hc_vip_read(inst, b->vip_id,
						      &c->vip_hc[b->vip_id]);
				if (err)
					return err;
				vc_read[b->vip_id] = true;
			}
			err = read_settings(inst, v, &c->vip_hc[b->vip_id],
					    id, e);
			if (err)
				return err;
		}
		if (fresh && e->checked)
			e->due_ms = c->opts->once ? now :
				now + (__u64)e->eff.interval_ms *
				(id % SPREAD_STEPS) / SPREAD_STEPS;
		if (e->checked && e->eff.interval_ms < min_interval)
			min_interval = e->eff.interval_ms;

		if (!e->checked) {
			if (e->next == XLB_HC_DOWN)
				decide(e, XLB_HC_UP, false, 0,
				       "health checks off");
		} else if ((e->flags & XLB_BE_F_DOWN) &&
			   e->rec.health != XLB_HC_DOWN &&
			   e->next != XLB_HC_DOWN) {
			decide(e, XLB_HC_DOWN, false, 0,
			       "flagged down in the instance");
		} else if (!(e->flags & XLB_BE_F_DOWN) &&
			   e->rec.health == XLB_HC_DOWN &&
			   e->next == XLB_HC_DOWN) {
			decide(e, XLB_HC_UP, false, 0,
			       "not flagged down in the instance");
		}
		if (needs_commit(e))
			c->pending = true;
	}
	if (settings) {
		check_budget(c);
		c->next_settings_ms = now + SETTINGS_MS;
		c->min_interval_ms = min_interval < REFRESH_MIN_MS ?
				     REFRESH_MIN_MS : min_interval;
	}
	return 0;
}

/* Write the records holding results not written yet. */
static int flush(struct checker *c, struct xlb_instance *inst)
{
	struct hc_backend *e;
	__u32 id;
	int err;

	for (id = 1; id < c->top; id++) {
		e = &c->be[id];
		if (!e->dirty || !e->live)
			continue;
		e->rec.gen = e->gen;
		err = xlb_hc_state_write(inst, id, &e->rec);
		if (err)
			return err;
		e->dirty = false;
	}
	c->dirty = false;
	c->last_flush_ms = mono_ms();
	return 0;
}

/*
 * Read the instance (shared lock), take what changed, write results; with
 * refresh, the settings too when they are due, and the next refresh set.
 */
static int sync_read(struct checker *c, bool refresh)
{
	bool settings = refresh && mono_ms() >= c->next_settings_ms;
	struct xlb_instance inst;
	struct xlb_state *st;
	__u32 i, vid;
	int err;

	err = xlb_state_open(&inst, c->opts->instance, &st);
	if (err)
		return err;
	xlb_state_free(c->st);
	c->st = st;
	err = reconcile(c, &inst, settings, mono_ms());
	if (refresh)
		c->next_refresh_ms = mono_ms() + c->min_interval_ms;
	if (!err && !c->read_once) {
		/* A VIP found failing open was logged and counted by the
		 * run that took its last backend down. */
		for (i = 0; i < st->n_vips; i++) {
			vid = st->vips[i].vip.id;
			if (vid < XLB_MAX_VIPS)
				c->fail_open[vid] =
					xlb_state_vip_fail_open(st, vid);
		}
		c->read_once = true;
	}
	if (!err)
		err = flush(c, &inst);
	xlb_instance_close(&inst);
	return err;
}

static void emit(const struct checker *c, const struct xlb_hc_event *ev)
{
	if (c->opts->event)
		c->opts->event(ev, c->opts->ctx);
}

static void emit_change(const struct checker *c, __u32 id, __u8 from)
{
	const struct hc_backend *e = &c->be[id];
	const struct xlb_backend *b = &c->st->backends[id];
	const struct xlb_state_vip *v = xlb_state_vip_by_id(c->st, e->vip_id);
	struct xlb_hc_event ev = {
		.kind = XLB_HC_EV_CHANGE,
		.family = b->family,
		.from = from,
		.to = e->rec.health,
		.by_probes = e->by_probes,
		.count = e->count,
	};

	if (!v)
		return;
	ev.vip = v->key;
	memcpy(ev.addr, b->addr, sizeof(ev.addr));
	if (e->by_probes)
		ev.run = e->rec.health == XLB_HC_DOWN ? e->rec.bad_run :
							e->rec.good_run;
	snprintf(ev.why, sizeof(ev.why), "%s", e->why);
	emit(c, &ev);
}

/* The record of a change of health: since, and the transition counted. */
static void record_change(struct hc_backend *e)
{
	if (e->next == XLB_HC_DOWN)
		e->rec.downs++;
	else if (e->rec.health == XLB_HC_DOWN)
		e->rec.ups++;
	e->rec.health = e->next;
	e->rec.since_ns = real_ns();
	e->rec.gen = e->gen;
}

/*
 * A VIP some of whose flags changed: entering fail open (every backend
 * with a weight down) is logged once and counted in each backend's
 * record; it ends when one comes back.
 */
static int check_fail_open(struct checker *c, struct xlb_instance *inst,
			   __u32 vip_id)
{
	const struct xlb_state_vip *v = xlb_state_vip_by_id(c->st, vip_id);
	struct xlb_hc_event ev = { .kind = XLB_HC_EV_FAIL_OPEN };
	struct hc_backend *e;
	__u32 id;
	int err;

	if (!xlb_state_vip_fail_open(c->st, vip_id)) {
		c->fail_open[vip_id] = false;
		return 0;
	}
	if (c->fail_open[vip_id] || !v)
		return 0;
	c->fail_open[vip_id] = true;
	for (id = 1; id < c->top; id++) {
		e = &c->be[id];
		if (!e->live || e->vip_id != vip_id ||
		    !c->st->backends[id].weight)
			continue;
		e->rec.fail_open++;
		e->rec.gen = e->gen;
		err = xlb_hc_state_write(inst, id, &e->rec);
		if (err)
			return err;
		e->dirty = false;
	}
	ev.vip = v->key;
	emit(c, &ev);
	return 0;
}

/*
 * Under the write lock: the flags each backend should carry, all of the
 * round's in one change (a table per VIP, however many of its backends
 * went down), then each backend's record; and the VIPs that entered fail
 * open.
 */
static int commit(struct checker *c)
{
	bool touched[XLB_MAX_VIPS] = { false };
	struct xlb_health_change *ch = NULL;
	struct xlb_instance inst;
	struct hc_backend *e;
	struct xlb_state *st;
	size_t n = 0;
	__u8 want, from;
	__u32 id;
	int err;

	err = xlb_update_open(&inst, c->opts->instance, &st, false);
	if (err)
		return err;
	xlb_state_free(c->st);
	c->st = st;
	/* What the operator changed since the last read counts first. */
	err = reconcile(c, &inst, false, mono_ms());
	ch = calloc(XLB_MAX_BACKENDS, sizeof(*ch));
	if (!err && !ch) {
		p_err("out of memory");
		err = -ENOMEM;
	}
	for (id = 1; !err && id < c->top; id++) {
		e = &c->be[id];
		if (!needs_commit(e))
			continue;
		want = wanted_flags(e, e->next);
		if (want != e->flags)
			ch[n++] = (struct xlb_health_change){
				.id = id,
				.down = want & XLB_BE_F_DOWN,
				.evict = want & XLB_BE_F_EVICT,
			};
	}
	if (!err && n)
		err = xlb_backends_set_health(&inst, st, ch, n);
	for (id = 1; !err && id < c->top; id++) {
		e = &c->be[id];
		if (!needs_commit(e))
			continue;
		want = wanted_flags(e, e->next);
		if (want != e->flags) {
			e->flags = want;
			touched[e->vip_id] = true;
		}
		if (e->next == e->rec.health)
			continue;
		from = e->rec.health;
		record_change(e);
		err = xlb_hc_state_write(&inst, id, &e->rec);
		if (err)
			break;
		e->dirty = false;
		emit_change(c, id, from);
	}
	for (id = 0; !err && id < XLB_MAX_VIPS; id++)
		if (touched[id])
			err = check_fail_open(c, &inst, id);
	if (!err)
		c->pending = false;
	free(ch);
	/* The state stays: it is the newest read. */
	xlb_instance_close(&inst);
	return err;
}

static void on_result(void *cookie, const struct xlb_probe_result *res,
		      void *ctx)
{
	struct checker *c = ctx;
	__u32 id = (__u32)(uintptr_t)cookie;
	struct hc_backend *e = &c->be[id];
	struct xlb_hc_state *r = &e->rec;
	char why[80];

	e->in_flight = false;
	/* The backend went, or its checks were turned off, meanwhile. */
	if (!e->live || e->flight_gen != e->gen || !e->checked)
		return;
	r->last_probe_ns = real_ns();
	r->last_rtt_us = res->rtt_us;
	snprintf(r->last_error, sizeof(r->last_error), "%s",
		 res->ok ? "" : res->error);
	if (res->ok) {
		r->good_run++;
		r->bad_run = 0;
	} else {
		r->bad_run++;
		r->good_run = 0;
	}
	e->dirty = c->dirty = true;

	if (res->ok)
		snprintf(why, sizeof(why), "answered in %.1f ms",
			 res->rtt_us / 1000.0);
	else
		snprintf(why, sizeof(why), "%s", res->error);
	if (!res->ok && e->next != XLB_HC_DOWN && r->bad_run >= e->eff.fall)
		decide(e, XLB_HC_DOWN, true, e->eff.fall, why);
	else if (res->ok && e->next == XLB_HC_DOWN && r->good_run >= e->eff.rise)
		decide(e, XLB_HC_UP, true, e->eff.rise, why);
	else if (res->ok && e->next == XLB_HC_UNKNOWN)
		decide(e, XLB_HC_UP, true, 1, why);
	if (needs_commit(e))
		c->pending = true;
}

static bool outer_source_set(const struct xlb_config *cfg, __u8 family)
{
	if (family == XLB_AF_INET)
		return cfg->src4 != 0;
	return (cfg->src6[0] | cfg->src6[1] | cfg->src6[2] | cfg->src6[3]) != 0;
}

/* A probe that cannot be sent counts as failed, with the reason: a
 * backend is never left unknown because its probe could not go. */
static void fail_at_once(struct checker *c, __u32 id, const char *why)
{
	struct xlb_probe_result res = { .ok = false };
	struct hc_backend *e = &c->be[id];

	snprintf(res.error, sizeof(res.error), "%s", why);
	e->in_flight = true;
	e->flight_gen = e->gen;
	e->probed = true;
	on_result((void *)(uintptr_t)id, &res, c);
}

static void fail_no_source(struct checker *c, __u32 id)
{
	bool v4 = c->st->backends[id].family == XLB_AF_INET;
	char why[64];

	snprintf(why, sizeof(why), "no outer %s source (xlb config set %s)",
		 v4 ? "IPv4" : "IPv6", v4 ? "src4" : "src6");
	fail_at_once(c, id, why);
}

/*
 * A probe that could not start (out of descriptors, of memory, of socket
 * buffers): failed, and its cause counted for the round's one line per
 * cause, not one per probe of a mass outage.
 */
static void fail_start(struct checker *c, __u32 id, int err)
{
	char why[64];
	int i;

	for (i = 0; i < START_CAUSES - 1; i++)
		if (!c->start_fail[i].count || c->start_fail[i].err == err)
			break;
	if (!c->start_fail[i].count) {
		c->start_fail[i].err = err;
		c->start_fail[i].example = id;
	}
	c->start_fail[i].count++;
	snprintf(why, sizeof(why), "cannot start a probe: %s", strerror(-err));
	fail_at_once(c, id, why);
}

/* The round's lines about probes that could not start. */
static void say_start_failures(struct checker *c, __u64 now)
{
	char name[XLB_ADDR_STRLEN];
	const struct xlb_backend *b;
	int i;

	if (now < c->next_round_ms)
		return;
	c->next_round_ms = now + ROUND_MS;
	for (i = 0; i < START_CAUSES && c->start_fail[i].count; i++) {
		b = &c->st->backends[c->start_fail[i].example];
		p_info("xlb: %u probe%s could not start (%s, %s%s), counted as failed",
		       c->start_fail[i].count,
		       c->start_fail[i].count == 1 ? "" : "s",
		       strerror(-c->start_fail[i].err),
		       c->start_fail[i].count == 1 ? "" : "the first of ",
		       xlb_addr_str(b->addr, b->family, name, sizeof(name)));
		c->start_fail[i].count = 0;
	}
}

/* Start every probe that is due; returns when the next one is. */
static __u64 start_due(struct checker *c, __u64 now)
{
	__u64 next = now + REFRESH_MAX_MS;
	struct hc_backend *e;
	__u32 id;
	int err;

	for (id = 1; id < c->top; id++) {
		e = &c->be[id];
		if (!e->live || !e->checked || e->in_flight ||
		    (c->opts->once && e->probed))
			continue;
		if (e->due_ms > now) {
			if (e->due_ms < next)
				next = e->due_ms;
			continue;
		}
		/* The next one keeps the cadence, unless it fell behind. */
		e->due_ms += e->eff.interval_ms;
		if (e->due_ms <= now)
			e->due_ms = now + e->eff.interval_ms;
		if (e->due_ms < next)
			next = e->due_ms;
		/* Without the outer source of its family the probe path
		 * drops the probe (EPERM): say what is missing instead. */
		if (!outer_source_set(&c->st->config,
				      c->st->backends[id].family)) {
			fail_no_source(c, id);
			continue;
		}
		/* Past the budget the socket would take a descriptor of
		 * the reserve: EMFILE before the kernel says it. */
		err = xlb_prober_busy(c->prober) >= c->max_in_flight ? -EMFILE :
		      xlb_prober_start(c->prober, &e->probe,
				       (void *)(uintptr_t)id);
		if (err) {
			fail_start(c, id, err);
			continue;
		}
		e->in_flight = true;
		e->flight_gen = e->gen;
		e->probed = true;
	}
	return next;
}

/* --once: every checked backend probed, every result in. */
static bool once_done(const struct checker *c)
{
	const struct hc_backend *e;
	__u32 id;

	if (c->pending || xlb_prober_busy(c->prober))
		return false;
	for (id = 1; id < c->top; id++) {
		e = &c->be[id];
		if (e->live && e->checked && !e->probed)
			return false;
	}
	return true;
}

/* Wait for results, or for the time to pass when no probe is in flight
 * (the prober returns at once then); a signal cuts either short. */
static int wait_results(struct checker *c, int timeout_ms)
{
	if (xlb_prober_busy(c->prober))
		return xlb_prober_poll(c->prober, timeout_ms, on_result, c);
	if (timeout_ms > 0 && poll(NULL, 0, timeout_ms) < 0)
		return -errno;
	return 0;
}

/* What ends a run: the instance gone, or an error that waiting does not
 * cure. A lock held too long by another command is waited out. */
static bool fatal(int err)
{
	return err && err != -EBUSY;
}

/*
 * The backends' next hops given entries of xlb's where they have none, as
 * every command that changes backends does (neigh.h): an entry xlb leaves
 * alone, the kernel's or the operator's, can go (aged out, deleted), and
 * then the datapath drops the backend's packets (drop_neigh_unresolved)
 * until a command made a new one; the checker runs all along, so it does
 * within NEIGH_PASS_MS. Silently and without waiting for the entries it
 * makes (xlb_neigh_refresh()): the probe loop goes on. Under the write
 * lock, as a change; an instance that cannot be opened now is tried next
 * time.
 */
static void neigh_pass(struct checker *c)
{
	struct xlb_instance inst;
	struct xlb_state *st;

	if (!xlb_update_open(&inst, c->opts->instance, &st, false)) {
		xlb_neigh_refresh(&inst, st, &c->nx);
		xlb_state_free(st);
		xlb_instance_close(&inst);
	}
}

int xlb_checker_run(const struct xlb_checker_opts *opts)
{
	struct checker *c;
	__u64 now, next, wake;
	int err, n;

	c = calloc(1, sizeof(*c));
	if (!c) {
		p_err("out of memory");
		return -ENOMEM;
	}
	c->opts = opts;
	c->nx = (struct xlb_nexthops)XLB_NEXTHOPS_INIT;
	fd_budget(c);
	err = xlb_prober_new(&c->prober);
	if (err) {
		p_err("cannot start the prober: %s", strerror(-err));
		goto out;
	}
	err = sync_read(c, true);
	while (!fatal(err) && !*opts->stop) {
		now = mono_ms();
		err = 0;
		if (now >= c->next_refresh_ms ||
		    (c->dirty && now >= c->last_flush_ms + FLUSH_MS))
			err = sync_read(c, now >= c->next_refresh_ms);
		if (!err && c->pending)
			err = commit(c);
		if (fatal(err))
			break;
		if (!opts->once && c->st && now >= c->next_neigh_ms) {
			neigh_pass(c);
			c->next_neigh_ms = now + NEIGH_PASS_MS;
		}
		if (!c->st) {
			/* The last read failed: wait for the next refresh. */
			c->next_refresh_ms = now + REFRESH_MAX_MS;
			next = c->next_refresh_ms;
		} else {
			next = start_due(c, now);
			say_start_failures(c, now);
		}
		if (opts->once && c->st && once_done(c))
			break;
		wake = next < c->next_refresh_ms ? next : c->next_refresh_ms;
		if (c->dirty && c->last_flush_ms + FLUSH_MS < wake)
			wake = c->last_flush_ms + FLUSH_MS;
		if (c->pending)
			wake = now;
		n = wait_results(c, wake > now ? (int)(wake - now) : 0);
		if (n < 0 && n != -EINTR) {
			p_err("probing: %s", strerror(-n));
			err = n;
			goto out;
		}
	}
	if (fatal(err))
		goto out;
	/* Stopping: the results already in are written, the changes they
	 * decided committed; probes still in flight are abandoned. */
	err = c->pending ? commit(c) : 0;
	if (!err && c->dirty)
		err = sync_read(c, false);
	if (c->st) {
		c->next_round_ms = 0;
		say_start_failures(c, 0);
	}
out:
	xlb_prober_free(c->prober);
	xlb_nexthops_close(&c->nx);
	xlb_state_free(c->st);
	free(c);
	return err;
}
