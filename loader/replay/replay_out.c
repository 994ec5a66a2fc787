// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* `xlb replay` output: the terminal table, JSON and CSV files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "addr.h"
#include "report.h"
#include "replay_report.h"
#include "vip_mode.h"

static const char *const phase_names[2] = { "before", "after" };

const char *replay_algo_label(const struct replay_report *r,
			      enum lb_algo_kind kind, char *buf, size_t len)
{
	if (kind == LB_RING)
		snprintf(buf, len, "%s/%u", lb_algo_name(kind), r->params.vnodes);
	else if (kind == LB_MAGLEV)
		snprintf(buf, len, "%s/%u", lb_algo_name(kind),
			 r->params.table_size);
	else
		snprintf(buf, len, "%s", lb_algo_name(kind));
	return buf;
}

void replay_report_free(struct replay_report *r)
{
	int k, p;

	for (k = 0; k < LB__MAX; k++) {
		for (p = 0; p < 2; p++) {
			free(r->algo[k].assign[p]);
			free(r->algo[k].load[p]);
		}
	}
	replay_random_free(&r->random[0]);
	replay_random_free(&r->random[1]);
	free(r->set[0]);
	free(r->set[1]);
	free(r->pcaps);
	replay_flows_free(&r->rf);
	trace_free(&r->trace);
	churn_report_free(r->churn);
	free(r->churn);
}

/* "203.0.113.1 .. 203.0.113.10" or the whole list when short. */
static void print_set(const struct lb_backend *set, size_t n)
{
	bool equal = true;
	size_t i;

	for (i = 1; i < n; i++)
		equal &= set[i].weight == set[0].weight;
	if (n > 4) {
		printf("%zu: %s .. %s", n, set[0].id, set[n - 1].id);
	} else {
		printf("%zu:", n);
		for (i = 0; i < n; i++)
			printf(" %s", set[i].id);
	}
	if (equal) {
		printf(", weight %u each\n", set[0].weight);
		return;
	}
	printf(", weights");
	for (i = 0; i < n && i < 16; i++)
		printf(" %u", set[i].weight);
	printf("%s\n", n > 16 ? " ..." : "");
}

/* A next-hop MTU the answers named, "-" when none of the family came. */
static const char *mtu_str(__u32 mtu, char *buf, size_t len)
{
	if (!mtu)
		return "-";
	snprintf(buf, len, "%u", mtu);
	return buf;
}

static void print_too_big(const struct replay_report *r)
{
	const struct replay_too_big *tb = &r->too_big;
	char m4[16], m6[16];

	printf("mtu        ICMP too big: %llu packets of %llu flows (path MTU %u, "
	       "%u bytes of encapsulation); next-hop MTU answered %s IPv4, "
	       "%s IPv6", (unsigned long long)tb->packets,
	       (unsigned long long)tb->flows, r->mtu, REPLAY_BPF_ENCAP_LEN,
	       mtu_str(tb->mtu4, m4, sizeof(m4)),
	       mtu_str(tb->mtu6, m6, sizeof(m6)));
	if (tb->dropped)
		printf("; %llu more dropped, from clients never answered "
		       "(loopback, multicast, broadcast)",
		       (unsigned long long)tb->dropped);
	printf("\n");
}

static void print_header(const struct replay_report *r)
{
	const struct trace_stats *s = &r->trace.stats;
	char seed[XLB_SEED_STRLEN];

	printf("trace      %llu file%s", (unsigned long long)s->files,
	       s->files == 1 ? "" : "s");
	if (s->files_skipped)
		printf(" (%llu skipped: link type)",
		       (unsigned long long)s->files_skipped);
	printf(", %llu packets: %llu TCP/UDP, skipped %llu not IP, %llu other "
	       "IP, %llu fragments, %llu short\n",
	       (unsigned long long)s->packets,
	       (unsigned long long)s->flow_packets,
	       (unsigned long long)s->skipped_not_ip,
	       (unsigned long long)s->skipped_not_l4,
	       (unsigned long long)s->skipped_fragment,
	       (unsigned long long)s->skipped_short);
	printf("flows      %zu (%zu in the trace) to VIP %s / %s at their "
	       "server port: IPv4 %zu, IPv6 %zu, TCP %zu, UDP %zu\n",
	       r->rf.n, r->rf.n_trace, REPLAY_VIP4, REPLAY_VIP6, r->rf.ipv4,
	       r->rf.ipv6, r->rf.tcp, r->rf.udp);
	printf("backends   ");
	print_set(r->set[0], r->n_set[0]);
	printf("tables     maglev M=%u, ring V=%u; flow hash seed %s; via %s\n",
	       r->params.table_size, r->params.vnodes,
	       xlb_seed_str(r->key, seed, sizeof(seed)),
	       r->via_bpf ? "bpf (the XDP program)" : "model");
	if (r->rf.vip_flags[0] & XLB_VIP_F_HASH_SRC)
		printf("hash       src-ip (client affinity): %zu clients, each its "
		       "/%u (IPv4) or /%u (IPv6)\n", r->rf.clients,
		       XLB_VIP_AFFINITY(r->rf.vip_flags[0]),
		       XLB_VIP_AFFINITY(r->rf.vip_flags[1]));
	if (r->change != CHANGE_NONE) {
		printf("change     %s -> ", r->change_text);
		print_set(r->set[1], r->n_set[1]);
	}
	if (r->mtu)
		print_too_big(r);
}

static void print_balance_row(const char *label, double flows_max,
			      double flows_min, double cv, double pkts_max,
			      double bytes_max)
{
	printf("%-22s %9.3f %9.3f %7.4f %9.3f %9.3f\n", label, flows_max,
	       flows_min, cv, pkts_max, bytes_max);
}

static void print_balance(const struct replay_report *r, int phase)
{
	const struct replay_random *rnd = &r->random[phase];
	char label[32];
	int k;

	printf("\nbalance%s: load per backend / its fair share\n",
	       r->change == CHANGE_NONE ? "" :
	       phase ? " after the change" : " before the change");
	printf("%-22s %9s %9s %7s %9s %9s\n", "algorithm", "flows max",
	       "min", "cv", "pkts max", "bytes max");
	for (k = 0; k < LB__MAX; k++) {
		const struct replay_spread *sp = r->algo[k].spread[phase];

		if (!r->algo[k].done)
			continue;
		print_balance_row(replay_algo_label(r, k, label, sizeof(label)),
				  sp[RM_FLOWS].max_mean, sp[RM_FLOWS].min_mean,
				  sp[RM_FLOWS].cv, sp[RM_PACKETS].max_mean,
				  sp[RM_BYTES].max_mean);
	}
	print_balance_row("random, 1st pct", rnd->max_mean[RM_FLOWS].p01,
			  rnd->min_mean[RM_FLOWS].p01, rnd->cv[RM_FLOWS].p01,
			  rnd->max_mean[RM_PACKETS].p01,
			  rnd->max_mean[RM_BYTES].p01);
	print_balance_row("random, median", rnd->max_mean[RM_FLOWS].p50,
			  rnd->min_mean[RM_FLOWS].p50, rnd->cv[RM_FLOWS].p50,
			  rnd->max_mean[RM_PACKETS].p50,
			  rnd->max_mean[RM_BYTES].p50);
	print_balance_row("random, 99th pct", rnd->max_mean[RM_FLOWS].p99,
			  rnd->min_mean[RM_FLOWS].p99, rnd->cv[RM_FLOWS].p99,
			  rnd->max_mean[RM_PACKETS].p99,
			  rnd->max_mean[RM_BYTES].p99);
}

static void print_disruption(const struct replay_report *r)
{
	__u64 packets = 0, bytes = 0;
	char label[32], kept[32];
	size_t i;
	int k;

	for (i = 0; i < r->rf.n; i++) {
		packets += r->rf.flows[i].packets;
		bytes += r->rf.flows[i].bytes;
	}
	printf("\ndisruption: %s; optimum %.2f%% of flows\n", r->change_text,
	       100 * replay_optimum(r->set[0], r->n_set[0], r->set[1],
				    r->n_set[1]));
	printf("%-22s %9s %8s %7s %16s %8s %8s\n", "algorithm", "moved",
	       "moved%", "ratio", "kept->kept", "pkts%", "bytes%");
	for (k = 0; k < LB__MAX; k++) {
		const struct replay_disruption *d = &r->algo[k].dis;

		if (!r->algo[k].done)
			continue;
		snprintf(kept, sizeof(kept), "%llu (%.2f%%)",
			 (unsigned long long)d->moved_kept,
			 d->flows ? 100.0 * d->moved_kept / d->flows : 0);
		printf("%-22s %9llu %7.2f%% %7.3f %16s %7.2f%% %7.2f%%\n",
		       replay_algo_label(r, k, label, sizeof(label)),
		       (unsigned long long)d->moved, 100 * d->fraction,
		       d->ratio, kept,
		       packets ? 100.0 * d->moved_v[RM_PACKETS] / packets : 0,
		       bytes ? 100.0 * d->moved_v[RM_BYTES] / bytes : 0);
	}
}

static void print_loads(const struct replay_report *r, int phase)
{
	char label[32];
	size_t i;
	int k;

	printf("\nflows per backend%s\n%-40s", phase ? " after the change" : "",
	       "backend");
	for (k = 0; k < LB__MAX; k++)
		if (r->algo[k].done)
			printf(" %11s", replay_algo_label(r, k, label, sizeof(label)));
	printf("\n");
	for (i = 0; i < r->n_set[phase]; i++) {
		printf("%-40s", r->set[phase][i].id);
		for (k = 0; k < LB__MAX; k++)
			if (r->algo[k].done)
				printf(" %11llu", (unsigned long long)
				       r->algo[k].load[phase][i].v[RM_FLOWS]);
		printf("\n");
	}
}

void replay_print_table(const struct replay_report *r, bool verbose)
{
	int p;

	print_header(r);
	if (r->churn) {
		churn_print_table(r);
		return;
	}
	for (p = 0; p < PHASES(r); p++)
		print_balance(r, p);
	if (r->change != CHANGE_NONE)
		print_disruption(r);
	printf("\nrandom: the same flows assigned uniformly at random "
	       "(by weight), %u runs\n", r->random[0].reps);
	if (!verbose)
		return;
	for (p = 0; p < PHASES(r); p++)
		print_loads(r, p);
}

/* JSON ------------------------------------------------------------------ */

static json_object *j_u64(__u64 v)
{
	return json_object_new_int64((int64_t)v);
}

static json_object *j_band(const struct replay_band *b)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "p01", json_object_new_double(b->p01));
	json_object_object_add(o, "p50", json_object_new_double(b->p50));
	json_object_object_add(o, "p99", json_object_new_double(b->p99));
	return o;
}

static json_object *j_set(const struct lb_backend *set, size_t n,
			  const struct replay_load *load)
{
	json_object *a = json_object_new_array();
	size_t i;
	int m;

	for (i = 0; i < n; i++) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "id", json_object_new_string(set[i].id));
		json_object_object_add(o, "weight", j_u64(set[i].weight));
		for (m = 0; load && m < RM__MAX; m++)
			json_object_object_add(o, replay_metric_names[m],
					       j_u64(load[i].v[m]));
		json_object_array_add(a, o);
	}
	return a;
}

static json_object *j_trace(const struct replay_report *r)
{
	const struct trace_stats *s = &r->trace.stats;
	json_object *o = json_object_new_object(), *files, *skip;
	int i;

	files = json_object_new_array();
	for (i = 0; i < r->n_pcaps; i++)
		json_object_array_add(files, json_object_new_string(r->pcaps[i]));
	json_object_object_add(o, "files", files);
	json_object_object_add(o, "files_skipped", j_u64(s->files_skipped));
	json_object_object_add(o, "packets", j_u64(s->packets));
	json_object_object_add(o, "flow_packets", j_u64(s->flow_packets));
	skip = json_object_new_object();
	json_object_object_add(skip, "not_ip", j_u64(s->skipped_not_ip));
	json_object_object_add(skip, "not_tcp_udp", j_u64(s->skipped_not_l4));
	json_object_object_add(skip, "fragment", j_u64(s->skipped_fragment));
	json_object_object_add(skip, "short", j_u64(s->skipped_short));
	json_object_object_add(o, "skipped", skip);
	json_object_object_add(o, "trace_flows", j_u64(r->rf.n_trace));
	json_object_object_add(o, "flows", j_u64(r->rf.n));
	json_object_object_add(o, "ipv4", j_u64(r->rf.ipv4));
	json_object_object_add(o, "ipv6", j_u64(r->rf.ipv6));
	json_object_object_add(o, "tcp", j_u64(r->rf.tcp));
	json_object_object_add(o, "udp", j_u64(r->rf.udp));
	return o;
}

static json_object *j_random(const struct replay_random *rnd)
{
	json_object *o = json_object_new_object();
	int m;

	json_object_object_add(o, "runs", j_u64(rnd->reps));
	for (m = 0; m < RM__MAX; m++) {
		json_object *x = json_object_new_object();

		json_object_object_add(x, "max_mean", j_band(&rnd->max_mean[m]));
		json_object_object_add(x, "min_mean", j_band(&rnd->min_mean[m]));
		json_object_object_add(x, "cv", j_band(&rnd->cv[m]));
		json_object_object_add(o, replay_metric_names[m], x);
	}
	return o;
}

static json_object *j_balance(const struct replay_spread *sp)
{
	json_object *o = json_object_new_object();
	int m;

	for (m = 0; m < RM__MAX; m++) {
		json_object *x = json_object_new_object();

		json_object_object_add(x, "max_mean",
				       json_object_new_double(sp[m].max_mean));
		json_object_object_add(x, "min_mean",
				       json_object_new_double(sp[m].min_mean));
		json_object_object_add(x, "cv", json_object_new_double(sp[m].cv));
		json_object_object_add(o, replay_metric_names[m], x);
	}
	return o;
}

static json_object *j_too_big(const struct replay_report *r)
{
	const struct replay_too_big *tb = &r->too_big;
	json_object *o = json_object_new_object();

	json_object_object_add(o, "path_mtu", j_u64(r->mtu));
	json_object_object_add(o, "encap_bytes", j_u64(REPLAY_BPF_ENCAP_LEN));
	json_object_object_add(o, "packets", j_u64(tb->packets));
	json_object_object_add(o, "flows", j_u64(tb->flows));
	json_object_object_add(o, "dropped_unanswerable", j_u64(tb->dropped));
	/* What the answers named; null when no packet of the family was. */
	json_object_object_add(o, "next_hop_mtu_ipv4",
			       tb->mtu4 ? j_u64(tb->mtu4) : NULL);
	json_object_object_add(o, "next_hop_mtu_ipv6",
			       tb->mtu6 ? j_u64(tb->mtu6) : NULL);
	return o;
}

static json_object *j_disruption(const struct replay_disruption *d)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "flows", j_u64(d->flows));
	json_object_object_add(o, "moved", j_u64(d->moved));
	json_object_object_add(o, "fraction", json_object_new_double(d->fraction));
	json_object_object_add(o, "optimum", json_object_new_double(d->optimum));
	json_object_object_add(o, "ratio", json_object_new_double(d->ratio));
	json_object_object_add(o, "moved_between_kept", j_u64(d->moved_kept));
	json_object_object_add(o, "on_leaving_backends", j_u64(d->on_leaving));
	json_object_object_add(o, "moved_packets", j_u64(d->moved_v[RM_PACKETS]));
	json_object_object_add(o, "moved_bytes", j_u64(d->moved_v[RM_BYTES]));
	return o;
}

int replay_print_json(const struct replay_report *r)
{
	json_object *root = json_object_new_object(), *algos, *params, *vip;
	char seed[XLB_SEED_STRLEN];
	int k, p;

	if (!root)
		return -ENOMEM;
	json_object_object_add(root, "trace", j_trace(r));
	vip = json_object_new_object();
	json_object_object_add(vip, "ipv4", json_object_new_string(REPLAY_VIP4));
	json_object_object_add(vip, "ipv6", json_object_new_string(REPLAY_VIP6));
	json_object_object_add(vip, "port", json_object_new_string("server port"));
	json_object_object_add(root, "vip", vip);
	params = json_object_new_object();
	json_object_object_add(params, "table_size", j_u64(r->params.table_size));
	json_object_object_add(params, "vnodes", j_u64(r->params.vnodes));
	json_object_object_add(params, "seed", json_object_new_string(
				       xlb_seed_str(r->key, seed, sizeof(seed))));
	json_object_object_add(params, "via", json_object_new_string(
				       r->via_bpf ? "bpf" : "model"));
	json_object_object_add(params, "hash", json_object_new_string(
				       xlb_hash_str(r->rf.vip_flags[0])));
	if (r->rf.vip_flags[0] & XLB_VIP_F_HASH_SRC) {
		struct json_object *pl = json_object_new_array();

		for (p = 0; p < 2; p++)
			json_object_array_add(pl, j_u64(XLB_VIP_AFFINITY(
						r->rf.vip_flags[p])));
		json_object_object_add(params, "affinity_prefix", pl);
		json_object_object_add(params, "clients", j_u64(r->rf.clients));
	}
	if (r->mtu)
		json_object_object_add(params, "mtu", j_u64(r->mtu));
	json_object_object_add(root, "params", params);
	if (r->mtu)
		json_object_object_add(root, "too_big", j_too_big(r));
	json_object_object_add(root, "backends",
			       j_set(r->set[0], r->n_set[0], NULL));
	if (r->change != CHANGE_NONE) {
		json_object *c = json_object_new_object();

		json_object_object_add(c, "change",
				       json_object_new_string(r->change_text));
		json_object_object_add(c, "backends",
				       j_set(r->set[1], r->n_set[1], NULL));
		json_object_object_add(root, "after", c);
	}
	if (r->churn) {
		json_object_object_add(root, "churn", churn_json(r));
		goto print;
	}
	json_object_object_add(root, "random", j_random(&r->random[0]));
	if (r->change != CHANGE_NONE)
		json_object_object_add(root, "random_after",
				       j_random(&r->random[1]));
	algos = json_object_new_array();
	for (k = 0; k < LB__MAX; k++) {
		const struct replay_algo *a = &r->algo[k];
		json_object *o;

		if (!a->done)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "name",
				       json_object_new_string(lb_algo_name(k)));
		for (p = 0; p < PHASES(r); p++) {
			json_object *x = json_object_new_object();

			json_object_object_add(x, "balance",
					       j_balance(a->spread[p]));
			json_object_object_add(x, "backends",
					       j_set(r->set[p], r->n_set[p],
						     a->load[p]));
			json_object_object_add(o, phase_names[p], x);
		}
		if (r->change != CHANGE_NONE)
			json_object_object_add(o, "disruption",
					       j_disruption(&a->dis));
		json_object_array_add(algos, o);
	}
	json_object_object_add(root, "algorithms", algos);
print:
	printf("%s\n", json_object_to_json_string_ext(root,
						       JSON_C_TO_STRING_PLAIN));
	json_object_put(root);
	return 0;
}

/* Files ----------------------------------------------------------------- */

int out_dir_prepare(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		int err = -errno;

		p_err("%s: cannot create directory: %s", dir, strerror(-err));
		return err;
	}
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		p_err("%s: not a directory", dir);
		return -ENOTDIR;
	}
	return 0;
}

int out_path(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int out_file_open(struct out_file *o, const char *dir, const char *name)
{
	char tmp_name[256];
	int fd, err;

	memset(o, 0, sizeof(*o));
	snprintf(tmp_name, sizeof(tmp_name), ".%s.XXXXXX", name);
	if (out_path(o->path, sizeof(o->path), dir, name) ||
	    out_path(o->tmp, sizeof(o->tmp), dir, tmp_name)) {
		p_err("%s: path too long", dir);
		o->tmp[0] = 0;
		return -ENAMETOOLONG;
	}
	fd = mkstemp(o->tmp);
	if (fd < 0) {
		err = -errno;
		p_err("%s: %s", o->path, strerror(errno));
		o->tmp[0] = 0;
		return err;
	}
	fchmod(fd, 0644);
	o->f = fdopen(fd, "w");
	if (!o->f) {
		err = -errno;
		close(fd);
		out_file_abort(o);
		p_err("%s: %s", o->path, strerror(-err));
		return err;
	}
	return 0;
}

int out_file_commit(struct out_file *o)
{
	int err = 0;

	if (ferror(o->f) | fclose(o->f))
		err = -EIO;
	o->f = NULL;
	if (!err && rename(o->tmp, o->path))
		err = -errno;
	if (err) {
		p_err("%s: cannot write: %s", o->path, strerror(-err));
		out_file_abort(o);
		return err;
	}
	o->tmp[0] = 0;
	return 0;
}

void out_file_abort(struct out_file *o)
{
	if (o->f)
		fclose(o->f);
	o->f = NULL;
	if (o->tmp[0])
		unlink(o->tmp);
	o->tmp[0] = 0;
}

static void csv_balance(const struct replay_report *r, FILE *f)
{
	char label[32];
	int k, p, m;

	fprintf(f, "algorithm,phase,metric,max_mean,min_mean,cv,"
		"random_max_mean_p01,random_max_mean_p50,random_max_mean_p99\n");
	for (p = 0; p < PHASES(r); p++) {
		const struct replay_random *rnd = &r->random[p];

		for (k = 0; k < LB__MAX; k++) {
			if (!r->algo[k].done)
				continue;
			for (m = 0; m < RM__MAX; m++) {
				const struct replay_spread *s = &r->algo[k].spread[p][m];

				fprintf(f, "%s,%s,%s,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f\n",
					replay_algo_label(r, k, label, sizeof(label)),
					phase_names[p], replay_metric_names[m],
					s->max_mean, s->min_mean, s->cv,
					rnd->max_mean[m].p01, rnd->max_mean[m].p50,
					rnd->max_mean[m].p99);
			}
		}
	}
}

static void csv_backends(const struct replay_report *r, FILE *f)
{
	char label[32];
	size_t i;
	int k, p;

	fprintf(f, "algorithm,phase,backend,weight,flows,packets,bytes\n");
	for (k = 0; k < LB__MAX; k++) {
		if (!r->algo[k].done)
			continue;
		for (p = 0; p < PHASES(r); p++) {
			for (i = 0; i < r->n_set[p]; i++) {
				const struct replay_load *l = &r->algo[k].load[p][i];

				fprintf(f, "%s,%s,%s,%u,%llu,%llu,%llu\n",
					replay_algo_label(r, k, label, sizeof(label)),
					phase_names[p], r->set[p][i].id,
					r->set[p][i].weight,
					(unsigned long long)l->v[RM_FLOWS],
					(unsigned long long)l->v[RM_PACKETS],
					(unsigned long long)l->v[RM_BYTES]);
			}
		}
	}
}

static void csv_disruption(const struct replay_report *r, FILE *f)
{
	char label[32];
	int k;

	fprintf(f, "algorithm,change,flows,moved,fraction,optimum,ratio,"
		"moved_between_kept,on_leaving_backends,moved_packets,moved_bytes\n");
	for (k = 0; k < LB__MAX; k++) {
		const struct replay_disruption *d = &r->algo[k].dis;

		if (!r->algo[k].done)
			continue;
		fprintf(f, "%s,\"%s\",%llu,%llu,%.6f,%.6f,%.6f,%llu,%llu,%llu,%llu\n",
			replay_algo_label(r, k, label, sizeof(label)),
			r->change_text, (unsigned long long)d->flows,
			(unsigned long long)d->moved, d->fraction, d->optimum,
			d->ratio, (unsigned long long)d->moved_kept,
			(unsigned long long)d->on_leaving,
			(unsigned long long)d->moved_v[RM_PACKETS],
			(unsigned long long)d->moved_v[RM_BYTES]);
	}
}

int replay_write_csv(const struct replay_report *r, const char *dir)
{
	static const struct {
		const char *name;
		void (*write)(const struct replay_report *r, FILE *f);
		bool needs_change;
	} files[] = {
		{ "balance.csv", csv_balance, false },
		{ "backends.csv", csv_backends, false },
		{ "disruption.csv", csv_disruption, true },
	};
	struct out_file o[3] = {};
	size_t i, n = 0;
	int err;

	if (r->churn)
		return churn_write_csv(r, dir);
	err = out_dir_prepare(dir);
	if (err)
		return err;
	/* All complete under temporary names first, then renamed together. */
	for (i = 0; i < 3; i++) {
		if (files[i].needs_change && r->change == CHANGE_NONE)
			continue;
		err = out_file_open(&o[n], dir, files[i].name);
		if (err)
			goto fail;
		files[i].write(r, o[n].f);
		n++;
	}
	for (i = 0; i < n; i++) {
		err = out_file_commit(&o[i]);
		if (err)
			goto fail;
	}
	return 0;
fail:
	for (i = 0; i < n; i++)
		out_file_abort(&o[i]);
	return err;
}
