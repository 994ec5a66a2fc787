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
static void print_prometheus_health(const struct snapshot *snap)
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
	size_t f, i;

	for (f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		printf("# HELP %s %s\n# TYPE %s %s\n", fam[f].name,
		       fam[f].help, fam[f].name, fam[f].type);
		for (i = 0; i < snap->n_rows; i++) {
			r = &snap->rows[i];
			if (!r->backend[0])
				continue;
			v = f == 0 ? r->down : f == 1 ? r->downs :
			    f == 2 ? r->ups : r->fail_open;
			printf("%s{vip=\"%s\",backend=\"%s\"} %llu\n",
			       fam[f].name, r->vip, r->backend, v);
		}
	}
}

static const char *const unit[] = { "packets", "bytes" };

/* The Prometheus text exposition format: one family per metric. */
static void print_prometheus(const struct snapshot *snap)
{
	const struct row *r;
	unsigned long long v;
	size_t i;
	int u;

	xlb_counters_prometheus("xlb", "by outcome: forward, the pass_ and drop_ reasons, connection-table events",
				 reason_names, snap->reason, XLB_STAT__MAX);
	if (snap->have_hc)
		xlb_counters_prometheus("xlb_hc", "of health probes seen by the probe path's program: encap, or the drop_ reasons",
					 hc_reason_names, snap->hc,
					 XLB_HC_STAT__MAX);
	for (u = 0; u < 4; u++) {
		bool backend = u >= 2;

		printf("# HELP xlb_%s_%s_total %s\n# TYPE xlb_%s_%s_total counter\n",
		       backend ? "backend" : "vip", unit[u % 2], backend ?
		       "Traffic sent to a backend of a VIP" : "Traffic to a VIP",
		       backend ? "backend" : "vip", unit[u % 2]);
		for (i = 0; i < snap->n_rows; i++) {
			r = &snap->rows[i];
			if (!!r->backend[0] != backend)
				continue;
			v = u % 2 ? r->c.bytes : r->c.packets;
			if (backend)
				printf("xlb_backend_%s_total{vip=\"%s\",backend=\"%s\"} %llu\n",
				       unit[u % 2], r->vip, r->backend, v);
			else
				printf("xlb_vip_%s_total{vip=\"%s\"} %llu\n",
				       unit[u % 2], r->vip, v);
		}
	}
	print_prometheus_health(snap);
}

enum format { TEXT, JSON, PROMETHEUS };

#define STATS_USAGE "xlb stats [-j | --prometheus]"

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
	       "encapsulated (encap) and dropped (drop_*).\n");
	return 0;
}

int do_stats(int argc, char **argv)
{
	enum format fmt = xlb_opts.json ? JSON : TEXT;
	struct snapshot snap = {};
	struct xlb_instance inst;
	struct xlb_state *st;
	bool prometheus = false;
	const struct xlb_opt opts[] = {
		XLB_OPT_FLAG("--prometheus", &prometheus),
		{ NULL },
	};
	int err;

	err = xlb_cmd_args(opts, &argc, argv, stats_help, 0, STATS_USAGE);
	if (err)
		return err;
	if (prometheus) {
		if (xlb_opts.json) {
			p_err("-j and --prometheus exclude each other");
			return -EINVAL;
		}
		fmt = PROMETHEUS;
	}
	err = xlb_state_open(&inst, &xlb_opts.instance, &st);
	if (err)
		return err;
	err = collect(&inst, st, &snap);
	if (err)
		p_err("cannot read counters in %s: %s", inst.dir, strerror(-err));
	xlb_state_free(st);
	xlb_instance_close(&inst);
	if (!err && fmt == TEXT)
		print_text(&snap);
	else if (!err && fmt == JSON)
		print_json(&snap);
	else if (!err)
		print_prometheus(&snap);
	free(snap.rows);
	return err;
}
