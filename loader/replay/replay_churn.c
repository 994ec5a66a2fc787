// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A change sequence played on a trace: the packets of every capture in
 * time order, each capture from its own first packet (captures are
 * replayed side by side, not one after the other), and the tables each
 * algorithm builds for each backend set of the plan.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flow_hash.h"
#include "replay_churn.h"

/* The router's hash is not the balancers': a key of its own. */
static const __u64 ecmp_key[2] = {
	0x706d63652e72746fULL, 0x726574756f722e31ULL,
};

int churn_packets_add(void *ctx, const struct trace_packet *pkt)
{
	struct churn_packets *pk = ctx;

	if (pk->n == pk->cap) {
		size_t cap = pk->cap ? pk->cap * 2 : 4096;
		struct churn_packet *p = realloc(pk->p, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		pk->p = p;
		pk->cap = cap;
	}
	pk->p[pk->n++] = (struct churn_packet){
		.t_us = pkt->ts_us,
		.flow = pkt->flow,
		.file = pk->file,
	};
	return 0;
}

static int cmp_packet(const void *a, const void *b)
{
	const struct churn_packet *x = a, *y = b;

	if (x->t_us != y->t_us)
		return x->t_us < y->t_us ? -1 : 1;
	return x->flow < y->flow ? -1 : x->flow > y->flow;
}

int churn_packets_finish(struct churn_packets *pk,
			 const struct replay_flows *rf)
{
	__u64 *start;
	__u32 files = 0;
	size_t i;

	for (i = 0; i < pk->n; i++)
		files = pk->p[i].file + 1 > files ? pk->p[i].file + 1 : files;
	start = malloc((files ? files : 1) * sizeof(*start));
	if (!start)
		return -ENOMEM;
	memset(start, 0xff, (files ? files : 1) * sizeof(*start));
	/* A capture's start is its earliest packet: not every capture is
	 * written in time order. */
	for (i = 0; i < pk->n; i++)
		if (pk->p[i].t_us < start[pk->p[i].file])
			start[pk->p[i].file] = pk->p[i].t_us;
	pk->span_us = 0;
	for (i = 0; i < pk->n; i++) {
		struct churn_packet *p = &pk->p[i];

		p->t_us -= start[p->file];
		p->flow = rf->of_trace[p->flow];
		if (p->t_us > pk->span_us)
			pk->span_us = p->t_us;
	}
	free(start);
	qsort(pk->p, pk->n, sizeof(*pk->p), cmp_packet);
	return 0;
}

void churn_packets_free(struct churn_packets *pk)
{
	free(pk->p);
	memset(pk, 0, sizeof(*pk));
}

__u32 churn_slot(enum lb_algo_kind kind, __u64 hash, __u32 m)
{
	if (kind == LB_MAGLEV)
		return (__u32)hash % m;
	return ((unsigned __int128)hash * m) >> 64;
}

/* The table of one step: per slot the incarnation owning it; and which
 * incarnations exist (drained ones too). */
static int fill_table(enum lb_algo_kind kind, const struct lb_params *params,
		      const struct churn_step *st, __u32 n_inc, __u32 *table,
		      bool *alive)
{
	struct lb *lb;
	size_t i;
	__u32 k;
	int err;

	err = lb_build(kind, st->set, st->n, params, &lb);
	if (err)
		return err;
	for (k = 0; k < params->table_size; k++) {
		int b = lb_slot(lb, k);

		if (b < 0) {
			lb_free(lb);
			return -EINVAL;
		}
		table[k] = st->inc[b];
	}
	lb_free(lb);
	memset(alive, 0, n_inc * sizeof(*alive));
	for (i = 0; i < st->n; i++)
		alive[st->inc[i]] = true;
	return 0;
}

static int apply(struct churn_sim *sim, enum lb_algo_kind kind,
		 const struct lb_params *params, const struct churn_plan *plan,
		 size_t e, __u32 *table, bool *alive)
{
	const struct churn_event *ev = &plan->spec->ev[e];
	__u32 k;
	int err;

	switch (ev->action) {
	case CHURN_LB_JOIN:
		for (k = 0; k < ev->count; k++)
			churn_sim_lb_join(sim);
		return 0;
	case CHURN_LB_FAIL:
		churn_sim_lb_fail(sim, ev->lb);
		return 0;
	default:
		err = fill_table(kind, params, &plan->steps[e + 1], plan->n_inc,
				 table, alive);
		if (!err)
			churn_sim_backends(sim, ev->at_us, table, alive);
		return err;
	}
}

int churn_run(enum lb_algo_kind kind, const struct lb_params *params,
	      const struct churn_plan *plan, const struct replay_flows *rf,
	      const struct churn_packets *pk, struct churn_result *out)
{
	const struct churn_spec *spec = plan->spec;
	struct churn_conn *conns = NULL;
	struct churn_sim *sim = NULL;
	__u32 *table = NULL;
	bool *alive = NULL;
	size_t i, e = 0;
	int err = -ENOMEM;

	memset(out, 0, sizeof(*out));
	conns = calloc(rf->n ? rf->n : 1, sizeof(*conns));
	table = calloc(params->table_size, sizeof(*table));
	alive = calloc(plan->n_inc ? plan->n_inc : 1, sizeof(*alive));
	if (!conns || !table || !alive)
		goto cleanup;
	for (i = 0; i < rf->n; i++) {
		conns[i].slot = churn_slot(kind, rf->flows[i].hash,
					   params->table_size);
		conns[i].ecmp_hash = xlb_flow_hash(&rf->flows[i].tuple, ecmp_key);
	}
	err = fill_table(kind, params, &plan->steps[0], plan->n_inc, table,
			 alive);
	if (!err)
		err = churn_sim_new(params->table_size, plan->n_inc, table, conns,
				    rf->n, spec->balancers, spec->ecmp,
				    spec->history_us, &sim);
	for (i = 0; !err && i < pk->n; i++) {
		/* A change at a packet's time comes before the packet. */
		for (; !err && e < spec->n && spec->ev[e].at_us <= pk->p[i].t_us;
		     e++)
			err = apply(sim, kind, params, plan, e, table, alive);
		if (!err)
			churn_sim_packet(sim, pk->p[i].t_us, pk->p[i].flow);
	}
	/* Changes after the last packet break nothing, but count. */
	for (; !err && e < spec->n; e++)
		err = apply(sim, kind, params, plan, e, table, alive);
	if (!err)
		churn_sim_result(sim, out);
cleanup:
	churn_sim_free(sim);
	free(alive);
	free(table);
	free(conns);
	return err;
}

void churn_report_free(struct churn_report *c)
{
	if (!c)
		return;
	churn_plan_free(&c->plan);
	churn_spec_free(&c->spec);
	churn_packets_free(&c->packets);
}
