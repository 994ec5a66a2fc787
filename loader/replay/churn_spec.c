// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The change sequence of `xlb replay --churn`: events parsed from the
 * command line or a file, then played on the backend set into the sets a
 * run goes through, every backend that joins a new incarnation.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "replay_churn.h"

const char *const churn_ecmp_names[ECMP__MAX] = {
	[ECMP_THRESHOLD] = "threshold",
	[ECMP_MODULO] = "modulo",
	[ECMP_CONSISTENT] = "consistent",
};

void replay_backend_name(__u32 i, char *buf, size_t len)
{
	if (i <= 254)
		snprintf(buf, len, "203.0.113.%u", i);
	else
		snprintf(buf, len, "2001:db8:be::%x", i);
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = 0;
	return s;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* An event's count, weight or id, the failure named after where. */
static int event_u32(const char *where, const char *text, const char *what,
		     const char *s, __u32 min, __u32 max, __u32 *out)
{
	const char *why;

	if (xlb_u32_parse(s, min, max, out, &why)) {
		p_err("%s: bad event '%s': %s '%s': %s", where, text, what, s,
		      why);
		return -EINVAL;
	}
	return 0;
}

static int event_backend(const char *where, const char *text, const char *s,
			 struct churn_event *ev)
{
	struct lb_backend b;

	if (lb_backend_parse(s, &b))
		return -EINVAL;
	if (b.weight != 1) {
		p_err("%s: bad event '%s': a backend here has no weight", where,
		      text);
		return -EINVAL;
	}
	memcpy(ev->id, b.id, sizeof(ev->id));
	return 0;
}

static int parse_arg(const char *where, const char *text, const char *verb,
		     char *arg, struct churn_event *ev)
{
	const char *why;
	char *sep;

	if (!strcmp(verb, "add")) {
		ev->action = CHURN_ADD;
		ev->weight = 1;
		sep = strchr(arg, ':');
		if (sep) {
			*sep = 0;
			if (xlb_weight_parse(sep + 1, &ev->weight, &why) ||
			    !ev->weight) {
				p_err("%s: bad event '%s': weight '%s': %s", where,
				      text, sep + 1,
				      ev->weight ? why : "must be positive");
				return -EINVAL;
			}
		}
		return event_u32(where, text, "count", arg, 1, XLB_MAX_BACKENDS,
				 &ev->count);
	}
	if (!strcmp(verb, "remove")) {
		ev->action = CHURN_REMOVE;
		if (all_digits(arg))
			return event_u32(where, text, "count", arg, 1,
					 XLB_MAX_BACKENDS, &ev->count);
		return event_backend(where, text, arg, ev);
	}
	if (!strcmp(verb, "reweight")) {
		ev->action = CHURN_REWEIGHT;
		sep = strrchr(arg, '=');
		if (!sep) {
			p_err("%s: bad event '%s': expected reweight ADDR=WEIGHT",
			      where, text);
			return -EINVAL;
		}
		*sep = 0;
		if (xlb_weight_parse(sep + 1, &ev->weight, &why)) {
			p_err("%s: bad event '%s': weight '%s': %s", where, text,
			      sep + 1, why);
			return -EINVAL;
		}
		return event_backend(where, text, arg, ev);
	}
	if (!strcmp(verb, "lb-join")) {
		ev->action = CHURN_LB_JOIN;
		ev->count = 1;
		return *arg ? event_u32(where, text, "count", arg, 1,
					CHURN_MAX_BALANCERS, &ev->count) : 0;
	}
	if (!strcmp(verb, "lb-fail")) {
		ev->action = CHURN_LB_FAIL;
		return *arg ? event_u32(where, text, "balancer", arg, 1,
					CHURN_MAX_BALANCERS, &ev->lb) : 0;
	}
	p_err("%s: bad event '%s': unknown action '%s' (add, remove, reweight, "
	      "lb-join, lb-fail)", where, text, verb);
	return -EINVAL;
}

/* One "TIME:ACTION [ARG]"; where names it in errors. */
static int parse_event(const char *where, const char *given,
		       struct churn_event *ev)
{
	char buf[256], *colon, *action, *arg, *text;
	const char *why;
	__u32 ms;

	memset(ev, 0, sizeof(*ev));
	if (strlen(given) >= sizeof(buf) ||
	    strlen(given) >= sizeof(ev->text)) {
		p_err("%s: event '%.40s...' is too long", where, given);
		return -EINVAL;
	}
	strcpy(buf, given);
	text = trim(buf);
	snprintf(ev->text, sizeof(ev->text), "%s", text);
	colon = strchr(text, ':');
	if (!colon) {
		p_err("%s: bad event '%s': expected TIME:ACTION (10s:add 1)",
		      where, ev->text);
		return -EINVAL;
	}
	*colon = 0;
	if (xlb_duration_parse(trim(text), 0, UINT32_MAX, &ms, &why)) {
		p_err("%s: bad event '%s': time '%s': %s", where, ev->text,
		      trim(text), why);
		return -EINVAL;
	}
	ev->at_us = (__u64)ms * 1000;
	action = trim(colon + 1);
	arg = action + strcspn(action, " \t");
	if (*arg)
		*arg++ = 0;
	arg = trim(arg);
	if (!*arg && (!strcmp(action, "add") || !strcmp(action, "remove") ||
		      !strcmp(action, "reweight"))) {
		p_err("%s: bad event '%s': %s needs an argument", where,
		      ev->text, action);
		return -EINVAL;
	}
	return parse_arg(where, ev->text, action, arg, ev);
}

static int add_event(struct churn_spec *spec, const char *where,
		     const char *text)
{
	struct churn_event *ev;

	if (spec->n >= CHURN_MAX_EVENTS) {
		p_err("%s: more than %d events", where, CHURN_MAX_EVENTS);
		return -EINVAL;
	}
	if (spec->n == spec->cap) {
		size_t cap = spec->cap ? 2 * spec->cap : 8;

		ev = realloc(spec->ev, cap * sizeof(*ev));
		if (!ev)
			return -ENOMEM;
		spec->ev = ev;
		spec->cap = cap;
	}
	return parse_event(where, text, &spec->ev[spec->n++]) ? -EINVAL : 0;
}

static int parse_file(const char *path, struct churn_spec *spec)
{
	char line[512], where[4096 + 32];
	unsigned int no = 0;
	int err = 0;
	FILE *f;

	f = fopen(path, "r");
	if (!f) {
		err = -errno;
		p_err("--churn %s: %s", path, strerror(errno));
		return err;
	}
	while (!err && fgets(line, sizeof(line), f)) {
		char *s = trim(line), *hash = strchr(s, '#');

		no++;
		if (hash)
			*hash = 0;
		s = trim(s);
		if (!*s)
			continue;
		snprintf(where, sizeof(where), "--churn %s:%u", path, no);
		err = add_event(spec, where, s);
	}
	if (!err && ferror(f)) {
		p_err("--churn %s: read error", path);
		err = -EIO;
	}
	fclose(f);
	if (!err && !spec->n) {
		p_err("--churn %s: no event", path);
		err = -EINVAL;
	}
	return err;
}

int churn_parse(const char *arg, struct churn_spec *spec)
{
	char *copy, *tok, *save = NULL;
	size_t i, j;
	int err = 0;

	if (arg[0] == '@')
		err = parse_file(arg + 1, spec);
	else {
		copy = strdup(arg);
		if (!copy)
			return -ENOMEM;
		for (tok = strtok_r(copy, ",", &save); tok && !err;
		     tok = strtok_r(NULL, ",", &save))
			err = add_event(spec, "--churn", tok);
		free(copy);
		if (!err && !spec->n) {
			p_err("--churn '%s': no event", arg);
			err = -EINVAL;
		}
	}
	if (err)
		return err;
	/* In time order; events at one time in the order given. */
	for (i = 1; i < spec->n; i++) {
		struct churn_event ev = spec->ev[i];

		for (j = i; j > 0 && spec->ev[j - 1].at_us > ev.at_us; j--)
			spec->ev[j] = spec->ev[j - 1];
		spec->ev[j] = ev;
	}
	return 0;
}

void churn_spec_free(struct churn_spec *spec)
{
	free(spec->ev);
	spec->ev = NULL;
	spec->n = spec->cap = 0;
}

/* Plan ------------------------------------------------------------------ */

static long find_id(const struct churn_step *st, const char *id)
{
	size_t i;

	for (i = 0; i < st->n; i++)
		if (!strcmp(st->set[i].id, id))
			return i;
	return -1;
}

/* The step after ev: a copy of prev with room for what ev adds. */
static int step_copy(const struct churn_step *prev, size_t extra,
		     struct churn_step *st)
{
	size_t cap = prev->n + extra;

	st->set = calloc(cap ? cap : 1, sizeof(*st->set));
	st->inc = calloc(cap ? cap : 1, sizeof(*st->inc));
	if (!st->set || !st->inc)
		return -ENOMEM;
	memcpy(st->set, prev->set, prev->n * sizeof(*st->set));
	memcpy(st->inc, prev->inc, prev->n * sizeof(*st->inc));
	st->n = prev->n;
	return 0;
}

static void step_drop(struct churn_step *st, size_t i)
{
	memmove(&st->set[i], &st->set[i + 1], (st->n - i - 1) * sizeof(*st->set));
	memmove(&st->inc[i], &st->inc[i + 1], (st->n - i - 1) * sizeof(*st->inc));
	st->n--;
}

/* Balancers alive, to check lb-fail and lb-join against. */
struct lb_fleet {
	__u32 live[CHURN_MAX_BALANCERS];
	size_t n;
	__u32 next;
};

static int play_balancers(const struct churn_event *ev, struct lb_fleet *f)
{
	size_t i, at;
	__u32 k;

	if (ev->action == CHURN_LB_JOIN) {
		if (f->next + ev->count - 1 > CHURN_MAX_BALANCERS) {
			p_err("--churn event '%s': more than %d balancers over "
			      "the run", ev->text, CHURN_MAX_BALANCERS);
			return -EINVAL;
		}
		for (k = 0; k < ev->count; k++)
			f->live[f->n++] = f->next++;
		return 0;
	}
	at = f->n - 1;
	for (i = 0; ev->lb && i < f->n; i++)
		if (f->live[i] == ev->lb)
			at = i;
	if (ev->lb && f->live[at] != ev->lb) {
		p_err("--churn event '%s': balancer %u is not running", ev->text,
		      ev->lb);
		return -EINVAL;
	}
	if (f->n == 1) {
		p_err("--churn event '%s': the last balancer cannot fail",
		      ev->text);
		return -EINVAL;
	}
	memmove(&f->live[at], &f->live[at + 1], (f->n - at - 1) * sizeof(__u32));
	f->n--;
	return 0;
}

static int play_backends(const struct churn_event *ev, struct churn_plan *plan,
			 struct churn_step *st, __u32 m)
{
	__u32 next = 1, k;
	bool weight = false;
	size_t i;
	long j;

	switch (ev->action) {
	case CHURN_ADD:
		for (k = 0; k < ev->count; k++) {
			struct lb_backend *b = &st->set[st->n];

			do
				replay_backend_name(next++, b->id, sizeof(b->id));
			while (find_id(st, b->id) >= 0);
			b->weight = ev->weight;
			st->inc[st->n++] = plan->n_inc++;
		}
		break;
	case CHURN_REMOVE:
		if (!ev->id[0]) {
			if (ev->count >= st->n) {
				p_err("--churn event '%s': only %zu backends; at "
				      "least one must stay", ev->text, st->n);
				return -EINVAL;
			}
			st->n -= ev->count;
			break;
		}
		/* fall through */
	case CHURN_REWEIGHT:
		j = find_id(st, ev->id);
		if (j < 0) {
			p_err("--churn event '%s': %s is not one of the backends "
			      "then", ev->text, ev->id);
			return -EINVAL;
		}
		if (ev->action == CHURN_REWEIGHT)
			st->set[j].weight = ev->weight;
		else
			step_drop(st, j);
		break;
	default:
		break;
	}
	if (st->n > m) {
		p_err("--churn event '%s': %zu backends, more than the table's "
		      "%u slots", ev->text, st->n, m);
		return -EINVAL;
	}
	for (i = 0; i < st->n; i++)
		weight |= st->set[i].weight > 0;
	if (!weight) {
		p_err("--churn event '%s': no backend with a positive weight "
		      "would be left", ev->text);
		return -EINVAL;
	}
	return 0;
}

int churn_plan_build(const struct churn_spec *spec,
		     const struct lb_backend *start, size_t n, __u32 m,
		     struct churn_plan *plan)
{
	struct lb_fleet fleet = {};
	struct churn_step first;
	size_t i;
	int err;

	memset(plan, 0, sizeof(*plan));
	plan->spec = spec;
	if (spec->balancers < 1 || spec->balancers > CHURN_MAX_BALANCERS)
		return -EINVAL;
	for (fleet.next = 1; fleet.next <= spec->balancers; fleet.next++)
		fleet.live[fleet.n++] = fleet.next;
	plan->steps = calloc(spec->n + 1, sizeof(*plan->steps));
	if (!plan->steps)
		return -ENOMEM;
	first = (struct churn_step){ .set = (struct lb_backend *)start, .n = n };
	first.inc = calloc(n ? n : 1, sizeof(*first.inc));
	err = first.inc ? 0 : -ENOMEM;
	for (i = 0; !err && i < n; i++)
		first.inc[i] = plan->n_inc++;
	if (!err)
		err = step_copy(&first, 0, &plan->steps[0]);
	free(first.inc);
	for (i = 0; !err && i < spec->n; i++) {
		const struct churn_event *ev = &spec->ev[i];
		size_t extra = ev->action == CHURN_ADD ? ev->count : 0;

		err = step_copy(&plan->steps[i], extra, &plan->steps[i + 1]);
		if (err)
			break;
		if (ev->action == CHURN_LB_JOIN || ev->action == CHURN_LB_FAIL)
			err = play_balancers(ev, &fleet);
		else
			err = play_backends(ev, plan, &plan->steps[i + 1], m);
	}
	if (err) {
		churn_plan_free(plan);
		return err;
	}
	plan->n_balancers_end = fleet.n;
	plan->n_backends_end = plan->steps[spec->n].n;
	return 0;
}

void churn_plan_free(struct churn_plan *plan)
{
	size_t i;

	for (i = 0; plan->steps && i <= plan->spec->n; i++) {
		free(plan->steps[i].set);
		free(plan->steps[i].inc);
	}
	free(plan->steps);
	plan->steps = NULL;
}
