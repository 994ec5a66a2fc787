// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* `xlb replay --churn` output: the terminal table, JSON and CSV files. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>

#include "report.h"
#include "replay_report.h"

static double share(__u64 part, __u64 whole)
{
	return whole ? (double)part / whole : 0;
}

static const struct churn_result *first_result(const struct replay_report *r)
{
	int k;

	for (k = 0; k < LB__MAX; k++)
		if (r->algo[k].done)
			return &r->churn->result[k];
	return NULL;
}

void churn_print_table(const struct replay_report *r)
{
	const struct churn_report *c = r->churn;
	const struct churn_spec *s = &c->spec;
	const struct churn_result *any = first_result(r);
	char label[32], hist[24];
	size_t i;
	int k, m;

	xlb_duration_str(s->history_us / 1000, hist, sizeof(hist));
	printf("churn     ");
	for (i = 0; i < s->n; i++)
		printf(" %s%s", s->ev[i].text, i + 1 < s->n ? "," : "\n");
	printf("           %u balancer%s at the start (ECMP %s), %u at the end; "
	       "%u backends at the end; previous backends kept %s\n",
	       s->balancers, s->balancers == 1 ? "" : "s",
	       churn_ecmp_names[s->ecmp], c->plan.n_balancers_end,
	       c->plan.n_backends_end, hist);
	printf("time       each capture from its first packet; the longest "
	       "spans %.1f s\n", c->packets.span_us / 1e6);
	if (!any)
		return;
	printf("\nconnections that break: %llu connections, %llu packets; "
	       "ECMP moved %llu connections between balancers\n",
	       (unsigned long long)any->connections,
	       (unsigned long long)any->packets,
	       (unsigned long long)any->ecmp_moved);
	printf("%-18s %-27s %9s %9s\n", "algorithm", "mode", "broken", "share");
	for (k = 0; k < LB__MAX; k++) {
		const struct churn_result *x = &c->result[k];

		if (!r->algo[k].done)
			continue;
		replay_algo_label(r, k, label, sizeof(label));
		for (m = 0; m < CM__MAX; m++)
			printf("%-18s %-27s %9llu %8.3f%%\n", m ? "" : label,
			       churn_mode_names[m],
			       (unsigned long long)x->broken[m],
			       100 * share(x->broken[m], x->connections));
	}
	printf("\nstateless, second chance: packets passed to the previous "
	       "backend; why connections broke\n");
	printf("%-18s %10s %7s %14s %7s %8s %11s %8s %9s\n", "algorithm",
	       "forwarded", "share", "within " , "share", "changed",
	       "kept too", "backend", "slot");
	printf("%-18s %10s %7s %14s %7s %8s %11s %8s %9s\n", "", "", "",
	       hist, "", "twice", "short", "removed", "changes");
	for (k = 0; k < LB__MAX; k++) {
		const struct churn_result *x = &c->result[k];

		if (!r->algo[k].done)
			continue;
		printf("%-18s %10llu %6.2f%% %14llu %6.2f%% %8llu %11llu %8llu "
		       "%9llu\n", replay_algo_label(r, k, label, sizeof(label)),
		       (unsigned long long)x->forwarded,
		       100 * share(x->forwarded, x->packets),
		       (unsigned long long)x->window_packets,
		       100 * share(x->window_forwarded, x->window_packets),
		       (unsigned long long)x->broken_twice,
		       (unsigned long long)x->broken_expired,
		       (unsigned long long)x->broken_gone,
		       (unsigned long long)x->slot_changes);
	}
	printf("\nwithin %s: packets sent while a change is younger than the "
	       "history, and the share of them forwarded\n", hist);
	printf("\nstateless, chain + memory (a candidate): packets passed on, "
	       "more than once, through a backend's memory\n");
	printf("%-18s %10s %7s %10s %7s %10s %7s\n", "algorithm", "passed on",
	       "share", "2+ hops", "share", "memory", "share");
	for (k = 0; k < LB__MAX; k++) {
		const struct churn_result *x = &c->result[k];

		if (!r->algo[k].done)
			continue;
		printf("%-18s %10llu %6.2f%% %10llu %6.2f%% %10llu %6.2f%%\n",
		       replay_algo_label(r, k, label, sizeof(label)),
		       (unsigned long long)x->chain_forwarded,
		       100 * share(x->chain_forwarded, x->packets),
		       (unsigned long long)x->chain_multi_hop,
		       100 * share(x->chain_multi_hop, x->packets),
		       (unsigned long long)x->chain_by_memory,
		       100 * share(x->chain_by_memory, x->packets));
	}
}

/* JSON ------------------------------------------------------------------ */

static json_object *j_u64(__u64 v)
{
	return json_object_new_int64((int64_t)v);
}

static json_object *j_result(const struct replay_report *r, int k)
{
	const struct churn_result *x = &r->churn->result[k];
	json_object *o = json_object_new_object(), *b, *f, *st;
	int m;

	json_object_object_add(o, "name", json_object_new_string(lb_algo_name(k)));
	b = json_object_new_object();
	f = json_object_new_object();
	for (m = 0; m < CM__MAX; m++) {
		json_object_object_add(b, churn_mode_keys[m], j_u64(x->broken[m]));
		json_object_object_add(f, churn_mode_keys[m], json_object_new_double(
					       share(x->broken[m], x->connections)));
	}
	json_object_object_add(o, "broken", b);
	json_object_object_add(o, "fraction", f);
	st = json_object_new_object();
	json_object_object_add(st, "forwarded", j_u64(x->forwarded));
	json_object_object_add(st, "forwarded_fraction", json_object_new_double(
				       share(x->forwarded, x->packets)));
	json_object_object_add(st, "window_packets", j_u64(x->window_packets));
	json_object_object_add(st, "window_forwarded", j_u64(x->window_forwarded));
	json_object_object_add(st, "window_fraction", json_object_new_double(
				       share(x->window_forwarded, x->window_packets)));
	json_object_object_add(st, "broken_changed_twice", j_u64(x->broken_twice));
	json_object_object_add(st, "broken_kept_too_short",
			       j_u64(x->broken_expired));
	json_object_object_add(st, "broken_backend_removed",
			       j_u64(x->broken_gone));
	json_object_object_add(o, "stateless", st);
	st = json_object_new_object();
	json_object_object_add(st, "passed_on", j_u64(x->chain_forwarded));
	json_object_object_add(st, "multi_hop", j_u64(x->chain_multi_hop));
	json_object_object_add(st, "by_memory", j_u64(x->chain_by_memory));
	json_object_object_add(o, "chain_memory_counts", st);
	json_object_object_add(o, "slot_changes", j_u64(x->slot_changes));
	return o;
}

json_object *churn_json(const struct replay_report *r)
{
	const struct churn_report *c = r->churn;
	const struct churn_result *any = first_result(r);
	json_object *o = json_object_new_object(), *ev, *algos;
	size_t i;
	int k;

	ev = json_object_new_array();
	for (i = 0; i < c->spec.n; i++) {
		json_object *e = json_object_new_object();

		json_object_object_add(e, "at_ms", j_u64(c->spec.ev[i].at_us / 1000));
		json_object_object_add(e, "event",
				       json_object_new_string(c->spec.ev[i].text));
		json_object_array_add(ev, e);
	}
	json_object_object_add(o, "events", ev);
	json_object_object_add(o, "balancers", j_u64(c->spec.balancers));
	json_object_object_add(o, "balancers_end", j_u64(c->plan.n_balancers_end));
	json_object_object_add(o, "backends_end", j_u64(c->plan.n_backends_end));
	json_object_object_add(o, "ecmp",
			       json_object_new_string(churn_ecmp_names[c->spec.ecmp]));
	json_object_object_add(o, "history_ms", j_u64(c->spec.history_us / 1000));
	json_object_object_add(o, "span_us", j_u64(c->packets.span_us));
	json_object_object_add(o, "connections", j_u64(any ? any->connections : 0));
	json_object_object_add(o, "packets", j_u64(any ? any->packets : 0));
	json_object_object_add(o, "ecmp_moved", j_u64(any ? any->ecmp_moved : 0));
	algos = json_object_new_array();
	for (k = 0; k < LB__MAX; k++)
		if (r->algo[k].done)
			json_object_array_add(algos, j_result(r, k));
	json_object_object_add(o, "algorithms", algos);
	return o;
}

/* CSV ------------------------------------------------------------------- */

static void csv_modes(const struct replay_report *r, FILE *f)
{
	char label[32];
	int k, m;

	fprintf(f, "algorithm,mode,connections,broken,fraction\n");
	for (k = 0; k < LB__MAX; k++) {
		const struct churn_result *x = &r->churn->result[k];

		if (!r->algo[k].done)
			continue;
		for (m = 0; m < CM__MAX; m++)
			fprintf(f, "%s,%s,%llu,%llu,%.6f\n",
				replay_algo_label(r, k, label, sizeof(label)),
				churn_mode_keys[m],
				(unsigned long long)x->connections,
				(unsigned long long)x->broken[m],
				share(x->broken[m], x->connections));
	}
}

static void csv_stateless(const struct replay_report *r, FILE *f)
{
	char label[32];
	int k;

	fprintf(f, "algorithm,packets,forwarded,forwarded_fraction,"
		"window_packets,window_forwarded,window_fraction,"
		"broken_changed_twice,broken_kept_too_short,"
		"broken_backend_removed,slot_changes,chain_memory_passed_on,"
		"chain_memory_multi_hop,chain_memory_by_memory\n");
	for (k = 0; k < LB__MAX; k++) {
		const struct churn_result *x = &r->churn->result[k];

		if (!r->algo[k].done)
			continue;
		fprintf(f, "%s,%llu,%llu,%.6f,%llu,%llu,%.6f,%llu,%llu,%llu,%llu,"
			"%llu,%llu,%llu\n",
			replay_algo_label(r, k, label, sizeof(label)),
			(unsigned long long)x->packets,
			(unsigned long long)x->forwarded,
			share(x->forwarded, x->packets),
			(unsigned long long)x->window_packets,
			(unsigned long long)x->window_forwarded,
			share(x->window_forwarded, x->window_packets),
			(unsigned long long)x->broken_twice,
			(unsigned long long)x->broken_expired,
			(unsigned long long)x->broken_gone,
			(unsigned long long)x->slot_changes,
			(unsigned long long)x->chain_forwarded,
			(unsigned long long)x->chain_multi_hop,
			(unsigned long long)x->chain_by_memory);
	}
}

int churn_write_csv(const struct replay_report *r, const char *dir)
{
	struct out_file o[2] = {};
	int err, i;

	err = out_dir_prepare(dir);
	if (err)
		return err;
	/* Both complete under temporary names first, then renamed. */
	err = out_file_open(&o[0], dir, "churn.csv");
	if (!err)
		err = out_file_open(&o[1], dir, "churn_stateless.csv");
	if (err)
		goto fail;
	csv_modes(r, o[0].f);
	csv_stateless(r, o[1].f);
	for (i = 0; i < 2 && !err; i++)
		err = out_file_commit(&o[i]);
	if (!err)
		return 0;
fail:
	out_file_abort(&o[0]);
	out_file_abort(&o[1]);
	return err;
}
