// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* xlb stats: the per-CPU counters summed, per VIP, per backend and per
 * reason (the names of XLB_STAT_LIST), as text, JSON or Prometheus; each
 * backend's health with the checker's counts of its transitions; and the
 * probe path's counters (XLB_HC_STAT_LIST) once `xlb health run` pinned
 * them beside the instance's maps. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>

#include "addr.h"
#include "cli.h"
#include "opts.h"
#include "cmd.h"
#include "hc.h"
#include "hc_store.h"
#include "state.h"

#define STAT_NAME(name, str) str,
static const char *const reason_names[XLB_STAT__MAX] = {
	XLB_STAT_LIST(STAT_NAME)
};
static const char *const hc_reason_names[XLB_HC_STAT__MAX] = {
	XLB_HC_STAT_LIST(STAT_NAME)
};
#undef STAT_NAME

struct counters {
	int ncpu;
	struct xlb_counter *percpu;	/* scratch for one lookup */
};

/* The sum over CPUs of entry id; a missing entry counts as zero. */
static int sum(struct counters *c, int fd, __u32 id, struct xlb_counter *out)
{
	int i;

	memset(out, 0, sizeof(*out));
	if (bpf_map_lookup_elem(fd, &id, c->percpu))
		return errno == ENOENT ? 0 : -errno;
	for (i = 0; i < c->ncpu; i++) {
		out->packets += c->percpu[i].packets;
		out->bytes += c->percpu[i].bytes;
	}
	return 0;
}

/* The counters of one VIP or backend, named as printed. */
struct row {
	char vip[XLB_VIP_STRLEN];
	char backend[XLB_ADDR_STRLEN];	/* "" for the VIP's own row */
	struct xlb_counter c;
	/* A VIP's packets its source ranges turned away (drop_src_denied). */
	struct xlb_counter denied;
	/* A backend's health: up, down, unknown or unchecked, and the
	 * transitions the checker counted (struct xlb_hc_state). */
	const char *health;
	bool down;		/* XLB_BE_F_DOWN: 1 in xlb_backend_down */
	__u32 downs, ups, fail_open;
};

/* The health of backend id into r. */
static int health_of(const struct xlb_instance *inst,
		     const struct xlb_state *st, __u32 id, struct row *r)
{
	const struct xlb_backend *b = &st->backends[id];
	struct xlb_hc_config eff;
	struct xlb_hc_state s;
	int err;

	err = xlb_hc_effective(inst, st, id, &eff) ?:
	      xlb_hc_state_read(inst, id, b->gen, &s);
	if (err)
		return err;
	r->down = b->flags & XLB_BE_F_DOWN;
	r->health = r->down ? "down" : eff.kind == XLB_HC_NONE ? "unchecked" :
		    xlb_hc_health_name(s.health);
	r->downs = s.downs;
	r->ups = s.ups;
	r->fail_open = s.fail_open;
	return 0;
}

struct snapshot {
	struct xlb_counter reason[XLB_STAT__MAX];
	bool have_hc;			/* the probe path's counters are pinned */
	struct xlb_counter hc[XLB_HC_STAT__MAX];
	struct row *rows;		/* each VIP, then its backends */
	size_t n_rows;
};

/* The probe path's counters, when a checker has pinned them in the pin
 * dir; none there is no error (no `xlb health run` yet). */
static int collect_hc(const struct xlb_instance *inst, struct counters *cnt,
		      struct snapshot *snap)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), i;
	char path[PATH_MAX];
	int fd, err = 0;

	if (snprintf(path, sizeof(path), "%s/%s", inst->dir,
		     XLB_MAP_HC_STATS) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	/* A lookup copies value_size bytes a CPU into the scratch. */
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		err = -errno;
	} else if (info.type != BPF_MAP_TYPE_PERCPU_ARRAY ||
		   info.value_size != sizeof(struct xlb_counter)) {
		p_info("xlb: %s is not the probe path's counters: left out", path);
	} else {
		snap->have_hc = true;
		for (i = 0; i < XLB_HC_STAT__MAX && !err; i++)
			err = sum(cnt, fd, i, &snap->hc[i]);
	}
	close(fd);
	return err;
}

static int collect(struct xlb_instance *inst, struct xlb_state *st,
		   struct snapshot *snap)
{
	static __u32 ids[XLB_MAX_BACKENDS];
	const struct xlb_backend *b;
	struct counters cnt;
	struct row *r;
	size_t n, k;
	__u32 i;
	int err = 0;

	cnt.ncpu = libbpf_num_possible_cpus();
	if (cnt.ncpu < 0)
		return cnt.ncpu;
	cnt.percpu = calloc(cnt.ncpu, sizeof(*cnt.percpu));
	snap->rows = calloc(st->n_vips + XLB_MAX_BACKENDS, sizeof(*snap->rows));
	if (!cnt.percpu || !snap->rows) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < XLB_STAT__MAX && !err; i++)
		err = sum(&cnt, inst->stats_fd, i, &snap->reason[i]);
	if (!err)
		err = collect_hc(inst, &cnt, snap);
	for (i = 0; i < st->n_vips && !err; i++) {
		const struct xlb_state_vip *v = &st->vips[i];

		/* Its id names no counters of its own. */
		if (v->corrupt[0]) {
			xlb_state_vip_corrupt_note(v);
			continue;
		}
		r = &snap->rows[snap->n_rows++];
		xlb_vip_str(&v->key, r->vip, sizeof(r->vip));
		err = sum(&cnt, inst->vip_stats_fd, v->vip.id, &r->c);
		/* An instance older than source ranges denies no one. */
		if (!err && inst->vip_denied_fd >= 0)
			err = sum(&cnt, inst->vip_denied_fd, v->vip.id,
				  &r->denied);
		n = xlb_state_vip_backends(st, v->vip.id, ids);
		for (k = 0; k < n && !err; k++) {
			b = &st->backends[ids[k]];
			r = &snap->rows[snap->n_rows++];
			xlb_vip_str(&v->key, r->vip, sizeof(r->vip));
			xlb_addr_str(b->addr, b->family, r->backend,
				     sizeof(r->backend));
			err = sum(&cnt, inst->backend_stats_fd, ids[k], &r->c) ?:
			      health_of(inst, st, ids[k], r);
		}
	}
out:
	free(cnt.percpu);
	return err;
}

/* A table of counters by name under a heading. */
static void print_text(const struct snapshot *snap)
{
	const struct row *r;
	size_t i;

	for (i = 0; i < snap->n_rows; i++) {
		r = &snap->rows[i];
		if (r->backend[0])
			printf("\tbackend %s", r->backend);
		else
			printf("vip %s", r->vip);
		printf(" packets %llu bytes %llu",
		       (unsigned long long)r->c.packets,
		       (unsigned long long)r->c.bytes);
		if (r->backend[0])
			printf(" health %s downs %u ups %u fail-open %u",
			       r->health, r->downs, r->ups, r->fail_open);
		else
			printf(" drop_src_denied %llu",
			       (unsigned long long)r->denied.packets);
		putchar('\n');
	}
	xlb_counters_text("reason", reason_names, snap->reason, XLB_STAT__MAX);
	if (snap->have_hc)
		xlb_counters_text("probe-path", hc_reason_names, snap->hc,
				   XLB_HC_STAT__MAX);
}

static void print_json(const struct snapshot *snap)
{
	struct json_object *o, *vips, *vo = NULL, *backends = NULL, *bo;
	const struct row *r;
	size_t i;

	o = json_object_new_object();
	vips = json_object_new_array();
	for (i = 0; i < snap->n_rows; i++) {
		r = &snap->rows[i];
		if (r->backend[0]) {
			bo = xlb_counter_json(&r->c, "addr", r->backend);
			json_object_object_add(bo, "health_state",
					       json_object_new_string(r->health));
			json_object_object_add(bo, "downs",
					       json_object_new_int64(r->downs));
			json_object_object_add(bo, "ups",
					       json_object_new_int64(r->ups));
			json_object_object_add(bo, "fail_open",
					       json_object_new_int64(r->fail_open));
			json_object_array_add(backends, bo);
			continue;
		}
		vo = xlb_counter_json(&r->c, "vip", r->vip);
		json_object_object_add(vo, "drop_src_denied",
				       xlb_counter_json(&r->denied, NULL, NULL));
		backends = json_object_new_array();
		json_object_object_add(vo, "backends", backends);
		json_object_array_add(vips, vo);
	}
	json_object_object_add(o, "vips", vips);
	json_object_object_add(o, "counters",
			       xlb_counters_json(reason_names, snap->reason, XLB_STAT__MAX));
	if (snap->have_hc)
		json_object_object_add(o, "probe_path",
				       xlb_counters_json(hc_reason_names, snap->hc,
						    XLB_HC_STAT__MAX));
	xlb_json_print(o);
}

/* A backend's health: a gauge of being out by health, and the counts of
 * its transitions. */
static void print_prometheus_health(FILE *f, const struct snapshot *snap)
{
	static const struct {
		const char *name, *type, *help;
	} fam[] = {
		{ "xlb_backend_down", "gauge",
		  "1 while the health checker has a backend down (out of its VIP's table unless all are down)" },
		{ "xlb_backend_health_downs_total", "counter",
		  "Times a backend was found down" },
		{ "xlb_backend_health_ups_total", "counter",
		  "Times a down backend came back" },
		{ "xlb_backend_health_fail_open_total", "counter",
		  "Times a down backend stayed in its VIP's table because every backend of the VIP was down" },
	};
	const struct row *r;
	unsigned long long v;
	size_t k, i;

	for (k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fam[k].name,
			fam[k].help, fam[k].name, fam[k].type);
		for (i = 0; i < snap->n_rows; i++) {
			r = &snap->rows[i];
			if (!r->backend[0])
				continue;
			v = k == 0 ? r->down : k == 1 ? r->downs :
			    k == 2 ? r->ups : r->fail_open;
			fprintf(f, "%s{vip=\"%s\",backend=\"%s\"} %llu\n",
				fam[k].name, r->vip, r->backend, v);
		}
	}
}

static const char *const unit[] = { "packets", "bytes" };

/* The Prometheus text exposition format: one family per metric. */
static void print_prometheus(FILE *f, const struct snapshot *snap)
{
	const struct row *r;
	unsigned long long v;
	size_t i;
	int u;

	xlb_counters_prometheus(f, "xlb", "by outcome: forward, the pass_ and drop_ reasons, connection-table events",
				 reason_names, snap->reason, XLB_STAT__MAX);
	if (snap->have_hc)
		xlb_counters_prometheus(f, "xlb_hc", "of health probes seen by the probe path's program: encap, or the drop_ reasons",
					 hc_reason_names, snap->hc,
					 XLB_HC_STAT__MAX);
	for (u = 0; u < 4; u++) {
		bool backend = u >= 2;

		fprintf(f, "# HELP xlb_%s_%s_total %s\n# TYPE xlb_%s_%s_total counter\n",
			backend ? "backend" : "vip", unit[u % 2], backend ?
			"Traffic sent to a backend of a VIP" : "Traffic to a VIP",
			backend ? "backend" : "vip", unit[u % 2]);
		for (i = 0; i < snap->n_rows; i++) {
			r = &snap->rows[i];
			if (!!r->backend[0] != backend)
				continue;
			v = u % 2 ? r->c.bytes : r->c.packets;
			if (backend)
				fprintf(f, "xlb_backend_%s_total{vip=\"%s\",backend=\"%s\"} %llu\n",
					unit[u % 2], r->vip, r->backend, v);
			else
				fprintf(f, "xlb_vip_%s_total{vip=\"%s\"} %llu\n",
					unit[u % 2], r->vip, v);
		}
	}
	fprintf(f, "# HELP xlb_vip_drop_src_denied_total Packets to a VIP that its source ranges turned away\n"
		"# TYPE xlb_vip_drop_src_denied_total counter\n");
	for (i = 0; i < snap->n_rows; i++) {
		r = &snap->rows[i];
		if (!r->backend[0])
			fprintf(f, "xlb_vip_drop_src_denied_total{vip=\"%s\"} %llu\n",
				r->vip, (unsigned long long)r->denied.packets);
	}
	print_prometheus_health(f, snap);
}

enum format { TEXT, JSON, PROMETHEUS };

#define STATS_USAGE "xlb stats [-j | --prometheus | --watch [--interval S] [--count N]]"

static int stats_help(void)
{
	printf("Usage: " STATS_USAGE "\n"
	       "Packets and bytes per VIP, per backend, and per outcome: forward,\n"
	       "pass_* and drop_* reasons, connection-table events (ct_*).\n"
	       "Counters are summed over CPUs; a new VIP or backend starts at zero.\n"
	       "Each backend's health (up, down, unknown: not probed yet, unchecked:\n"
	       "no health check) and the checker's counts of its transitions: downs,\n"
	       "ups, and fail-open (kept in the table because all were down).\n"
	       "Once `xlb health run` has run, the probe path's counters too\n"
	       "(probe-path; probe_path in -j; xlb_hc_* in Prometheus): probes\n"
	       "encapsulated (encap) and dropped (drop_*).\n"
	       "--watch: packets and bytes per second instead, every --interval S\n"
	       "seconds (default 1), redrawn in place on a terminal, a block of lines\n"
	       "each time otherwise (-j: a JSON object a line); --count N intervals,\n"
	       "or until Ctrl-C. `xlb exporter` serves the Prometheus text over HTTP.\n");
	return 0;
}

/* The instance's counters now, into *snap. 0 or -errno after p_err(). */
static int snapshot_take(struct snapshot *snap)
{
	struct xlb_instance inst;
	struct xlb_state *st;
	int err;

	memset(snap, 0, sizeof(*snap));
	err = xlb_state_open(&inst, &xlb_opts.instance, &st);
	if (err)
		return err;
	err = collect(&inst, st, snap);
	if (err)
		p_err("cannot read counters in %s: %s", inst.dir, strerror(-err));
	xlb_state_free(st);
	xlb_instance_close(&inst);
	return err;
}

int xlb_stats_prometheus(FILE *f)
{
	struct snapshot snap;
	int err;

	err = snapshot_take(&snap);
	if (!err)
		print_prometheus(f, &snap);
	free(snap.rows);
	return err;
}

static volatile sig_atomic_t watch_stop;

static void on_signal(int sig)
{
	(void)sig;
	watch_stop = 1;
}

/* The row of prev with r's names, or NULL (a VIP or backend new since). */
static const struct row *row_before(const struct snapshot *prev, const struct row *r)
{
	size_t i;

	for (i = 0; i < prev->n_rows; i++)
		if (!strcmp(prev->rows[i].vip, r->vip) &&
		    !strcmp(prev->rows[i].backend, r->backend))
			return &prev->rows[i];
	return NULL;
}

static double rate(__u64 now, __u64 before, double secs)
{
	return now >= before ? (now - before) / secs : 0;
}

/* One interval's rates: of cur against prev, secs apart. */
static void print_rates(const struct snapshot *prev, const struct snapshot *cur,
			double secs, bool tty)
{
	struct json_object *o = NULL, *arr = NULL, *reasons = NULL, *x;
	char when[32];
	time_t now = time(NULL);
	const struct row *r, *p;
	size_t i;

	strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
	if (xlb_opts.json) {
		o = json_object_new_object();
		json_object_object_add(o, "time", json_object_new_int64(now));
		json_object_object_add(o, "interval_s", json_object_new_double(secs));
		arr = json_object_new_array();
		reasons = json_object_new_object();
	} else if (tty) {
		/* Home and clear, as top redraws. */
		printf("\033[H\033[2J");
		printf("xlb stats --watch: per second over %.1f s, at %s (Ctrl-C ends)\n\n",
		       secs, when);
	}
	for (i = 0; i < cur->n_rows; i++) {
		__u64 pp, pb;

		r = &cur->rows[i];
		p = row_before(prev, r);
		pp = p ? p->c.packets : r->c.packets;
		pb = p ? p->c.bytes : r->c.bytes;
		if (o) {
			x = json_object_new_object();
			json_object_object_add(x, "vip", json_object_new_string(r->vip));
			if (r->backend[0])
				json_object_object_add(x, "backend", json_object_new_string(r->backend));
			json_object_object_add(x, "packets_per_s",
					       json_object_new_double(rate(r->c.packets, pp, secs)));
			json_object_object_add(x, "bytes_per_s",
					       json_object_new_double(rate(r->c.bytes, pb, secs)));
			json_object_array_add(arr, x);
			continue;
		}
		printf("%s%s%s %s pkt/s %.0f bytes/s %.0f\n", tty ? "" : when,
		       tty ? "" : " ", r->backend[0] ? "\tbackend" : "vip",
		       r->backend[0] ? r->backend : r->vip,
		       rate(r->c.packets, pp, secs), rate(r->c.bytes, pb, secs));
	}
	for (i = 0; i < XLB_STAT__MAX; i++) {
		double pr = rate(cur->reason[i].packets, prev->reason[i].packets, secs);
		double br = rate(cur->reason[i].bytes, prev->reason[i].bytes, secs);

		/* Outcomes that did not happen say nothing. */
		if (!pr)
			continue;
		if (o) {
			x = json_object_new_object();
			json_object_object_add(x, "packets_per_s", json_object_new_double(pr));
			json_object_object_add(x, "bytes_per_s", json_object_new_double(br));
			json_object_object_add(reasons, reason_names[i], x);
			continue;
		}
		printf("%s%sreason %s pkt/s %.0f bytes/s %.0f\n", tty ? "" : when,
		       tty ? "" : " ", reason_names[i], pr, br);
	}
	if (o) {
		json_object_object_add(o, "vips", arr);
		json_object_object_add(o, "reasons", reasons);
		xlb_json_print(o);
	}
	fflush(stdout);
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int parse_interval(const char *opt, const char *val, void *dest)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(val, &end);
	if (errno || end == val || *end || !(v >= 0.1 && v <= 3600)) {
		p_err("bad %s '%s': seconds from 0.1 to 3600", opt, val);
		return -EINVAL;
	}
	*(double *)dest = v;
	return 0;
}

static int watch(double interval, __u64 count)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct snapshot prev, cur;
	bool tty = isatty(STDOUT_FILENO);
	double t0, t1;
	__u64 n = 0;
	int err;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	err = snapshot_take(&prev);
	t0 = mono_s();
	while (!err && !watch_stop && (!count || n < count)) {
		struct timespec ts = { .tv_sec = (time_t)interval,
				       .tv_nsec = (long)((interval - (time_t)interval) * 1e9) };

		/* A signal cuts the sleep short: the loop ends. */
		nanosleep(&ts, NULL);
		if (watch_stop)
			break;
		err = snapshot_take(&cur);
		t1 = mono_s();
		if (!err)
			print_rates(&prev, &cur, t1 - t0, tty);
		free(prev.rows);
		prev = cur;
		t0 = t1;
		n++;
	}
	free(prev.rows);
	return err;
}

int do_stats(int argc, char **argv)
{
	enum format fmt = xlb_opts.json ? JSON : TEXT;
	struct snapshot snap = {};
	bool prometheus = false, watching = false;
	double interval = 0;	/* 0: not given (1 s) */
	__u64 count = 0;
	const struct xlb_opt opts[] = {
		XLB_OPT_FLAG("--prometheus", &prometheus),
		XLB_OPT_FLAG("--watch", &watching),
		XLB_OPT_FN("--interval", parse_interval, &interval),
		XLB_OPT_FN("--count", xlb_opt_u64, &count),
		{ NULL },
	};
	int err;

	err = xlb_cmd_args(opts, &argc, argv, stats_help, 0, STATS_USAGE);
	if (err)
		return err;
	if ((interval || count) && !watching) {
		p_err("--interval and --count go with --watch");
		return -EINVAL;
	}
	if (prometheus) {
		if (xlb_opts.json || watching) {
			p_err("--prometheus excludes -j and --watch (a scraper computes rates: xlb exporter)");
			return -EINVAL;
		}
		fmt = PROMETHEUS;
	}
	if (watching)
		return watch(interval ? interval : 1, count);
	err = snapshot_take(&snap);
	if (!err && fmt == TEXT)
		print_text(&snap);
	else if (!err && fmt == JSON)
		print_json(&snap);
	else if (!err)
		print_prometheus(stdout, &snap);
	free(snap.rows);
	return err;
}
