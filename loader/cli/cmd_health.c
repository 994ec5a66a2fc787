// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xlb health { run | show | help }: the health checker in the foreground
 * (loader/health/checker.h), and each backend's health as it last wrote.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "addr.h"
#include "checker.h"
#include "cli.h"
#include "cmd.h"
#include "hc_lock.h"
#include "hc_path.h"
#include "hc_store.h"
#include "opts.h"
#include "state.h"

#define HEALTH_RUN_USAGE "xlb health run [--once] [--obj PATH]"
#define HEALTH_SHOW_USAGE "xlb health show"

static int health_help(void)
{
	printf("Usage: " HEALTH_RUN_USAGE "\n"
	       "       " HEALTH_SHOW_USAGE "\n"
	       "       xlb health help\n"
	       "run    check every backend whose settings name a kind of check (tcp,\n"
	       "       http, udp), each at its interval, in the foreground until\n"
	       "       SIGTERM or SIGINT; one line on stdout per change of health\n"
	       "       (one JSON object per line with -j). `fall` failed probes in a\n"
	       "       row take a backend out of its VIP's table, its weight kept;\n"
	       "       `rise` good ones bring it back. A VIP whose backends are all\n"
	       "       down keeps them all (fail open). Probes are sent to the VIP and\n"
	       "       encapsulated to the backend as client traffic is: run it on the\n"
	       "       balancer, in the network namespace of its interface.\n"
	       "  --once      probe every checked backend once, apply the results, exit\n"
	       "  --obj PATH  the probe path's BPF program (default: the one built\n"
	       "              into xlb)\n"
	       "show   per backend: its check, its health (up, down, unknown until\n"
	       "       probed, unchecked), since when, the last round trip and error,\n"
	       "       its transitions (downs: to down, ups: back from down).\n");
	return 0;
}

/* ---- run ---- */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static const char *health_name(__u8 h)
{
	return xlb_hc_health_name(h);
}

static void print_event(const struct xlb_hc_event *ev, void *ctx)
{
	char vip[XLB_VIP_STRLEN], addr[XLB_ADDR_STRLEN];
	struct json_object *o;

	(void)ctx;
	xlb_vip_str(&ev->vip, vip, sizeof(vip));
	if (xlb_opts.json) {
		o = json_object_new_object();
		json_object_object_add(o, "vip", json_object_new_string(vip));
		if (ev->kind == XLB_HC_EV_FAIL_OPEN) {
			json_object_object_add(o, "fail_open",
					       json_object_new_boolean(true));
		} else {
			json_object_object_add(o, "backend", json_object_new_string(
				xlb_addr_str(ev->addr, ev->family, addr, sizeof(addr))));
			json_object_object_add(o, "from", json_object_new_string(
				health_name(ev->from)));
			json_object_object_add(o, "to", json_object_new_string(
				health_name(ev->to)));
			json_object_object_add(o, "why", json_object_new_string(ev->why));
			if (ev->by_probes) {
				json_object_object_add(o, "run", json_object_new_int64(ev->run));
				json_object_object_add(o, "of", json_object_new_int64(ev->count));
			}
		}
		xlb_json_print(o);
	} else if (ev->kind == XLB_HC_EV_FAIL_OPEN) {
		printf("%s every backend is down: failing open, the table keeps them all\n",
		       vip);
	} else {
		printf("%s %s %s -> %s: %s", vip,
		       xlb_addr_str(ev->addr, ev->family, addr, sizeof(addr)),
		       health_name(ev->from), health_name(ev->to), ev->why);
		if (ev->by_probes)
			printf(" (%u of %u %s)", ev->run, ev->count,
			       ev->to == XLB_HC_DOWN ? "failed" : "good");
		putchar('\n');
	}
	fflush(stdout);
}

/*
 * One checker per network namespace: the probe path (its routing rule and
 * table) is the namespace's, and a second checker would replace it, then
 * remove it under the first one's feet. An abstract socket, which the
 * kernel keeps per network namespace and frees with the process, holds
 * the place.
 */
static int claim_namespace(int *fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static const char name[] = "xlb-health-run";
	socklen_t len;

	int err;

	*fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*fd < 0) {
		err = -errno;
		p_err("cannot create a socket: %s", strerror(-err));
		return err;
	}
	memcpy(sa.sun_path + 1, name, sizeof(name) - 1);
	len = offsetof(struct sockaddr_un, sun_path) + sizeof(name);
	if (!bind(*fd, (struct sockaddr *)&sa, len))
		return 0;
	/* Kept before p_err() and close(), which may change errno. */
	err = errno == EADDRINUSE ? -EBUSY : -errno;
	if (err == -EBUSY)
		p_err("another `xlb health run` is running in this network namespace");
	else
		p_err("cannot claim the network namespace's checker socket: %s",
		      strerror(-err));
	close(*fd);
	*fd = -1;
	return err;
}

static int health_run(int argc, char **argv)
{
	struct xlb_checker_opts copts = {
		.instance = &xlb_opts.instance,
		.stop = &stop,
		.event = print_event,
	};
	struct sigaction sa = { .sa_handler = on_signal };
	const char *obj = NULL;
	const struct xlb_opt opts[] = {
		XLB_OPT_FLAG("--once", &copts.once),
		XLB_OPT_FN("--obj", xlb_opt_str, &obj),
		{ NULL },
	};
	struct xlb_hc_path *path = NULL;
	struct xlb_instance inst;
	int err, fd, lock_fd;
	struct xlb_state *st;

	err = xlb_cmd_args(opts, &argc, argv, health_help, 0, HEALTH_RUN_USAGE);
	if (err)
		return err;
	/* An instance to check before anything is installed. */
	err = xlb_state_open(&inst, &xlb_opts.instance, &st);
	if (err)
		return err;
	xlb_state_free(st);
	xlb_instance_close(&inst);
	err = xlb_hc_lock(xlb_opts.instance.pin_dir, &lock_fd);
	if (err)
		return err;
	err = claim_namespace(&fd);
	if (err)
		goto unlock;
	/* The probe path reports its own errors once. */
	xlb_quiet_libbpf();
	err = xlb_hc_path_install(xlb_opts.instance.pin_dir, obj, &path);
	if (err)
		goto out;
	/* Not SA_RESTART: the prober's wait returns, and the run ends. */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	err = xlb_checker_run(&copts);
	xlb_hc_path_remove(path);
out:
	close(fd);
unlock:
	xlb_hc_unlock(lock_fd);
	return err;
}

/* ---- show ---- */

/* CLOCK_REALTIME ns as ISO 8601 UTC, "-" for never. */
static const char *iso_time(__u64 ns, char *buf, size_t len)
{
	time_t t = ns / 1000000000ULL;
	struct tm tm;

	if (!ns || !gmtime_r(&t, &tm) ||
	    !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "-");
	return buf;
}

static struct json_object *time_json(__u64 ns)
{
	char buf[32];

	return ns ? json_object_new_string(iso_time(ns, buf, sizeof(buf))) : NULL;
}

struct health_row {
	const struct xlb_state_vip *v;
	const struct xlb_backend *b;
	struct xlb_hc_config eff;
	struct xlb_hc_state s;
	const char *health;
};

static struct json_object *row_json(const struct health_row *r)
{
	char text[XLB_VIP_STRLEN];
	struct json_object *o = json_object_new_object();
	bool probed = r->s.last_probe_ns != 0;

	json_object_object_add(o, "vip", json_object_new_string(
		xlb_vip_str(&r->v->key, text, sizeof(text))));
	json_object_object_add(o, "addr", json_object_new_string(
		xlb_addr_str(r->b->addr, r->b->family, text, sizeof(text))));
	json_object_object_add(o, "check", json_object_new_string(
		xlb_hc_kind_name(r->eff.kind)));
	json_object_object_add(o, "health", json_object_new_string(r->health));
	json_object_object_add(o, "since", time_json(r->s.since_ns));
	json_object_object_add(o, "last_probe", time_json(r->s.last_probe_ns));
	json_object_object_add(o, "last_rtt_us", probed ?
			       json_object_new_int64(r->s.last_rtt_us) : NULL);
	json_object_object_add(o, "last_error", probed ?
			       json_object_new_string(r->s.last_error) : NULL);
	json_object_object_add(o, "good_run", json_object_new_int64(r->s.good_run));
	json_object_object_add(o, "bad_run", json_object_new_int64(r->s.bad_run));
	json_object_object_add(o, "downs", json_object_new_int64(r->s.downs));
	json_object_object_add(o, "ups", json_object_new_int64(r->s.ups));
	json_object_object_add(o, "fail_open", json_object_new_int64(r->s.fail_open));
	return o;
}

static void row_print(FILE *f, const struct health_row *r)
{
	char vip[XLB_VIP_STRLEN], addr[XLB_ADDR_STRLEN], since[32], rtt[16];

	if (r->s.last_probe_ns)
		snprintf(rtt, sizeof(rtt), "%.1fms", r->s.last_rtt_us / 1000.0);
	else
		snprintf(rtt, sizeof(rtt), "-");
	fprintf(f, "%-24s %-16s %-5s %-9s %-20s %8s %5u %5u  %s\n",
		xlb_vip_str(&r->v->key, vip, sizeof(vip)),
		xlb_addr_str(r->b->addr, r->b->family, addr, sizeof(addr)),
		xlb_hc_kind_name(r->eff.kind), r->health,
		iso_time(r->s.since_ns, since, sizeof(since)), rtt, r->s.downs,
		r->s.ups, r->s.last_error[0] ? r->s.last_error : "-");
}

static int health_show(int argc, char **argv)
{
	static __u32 ids[XLB_MAX_BACKENDS];
	struct json_object *o = NULL, *rows = NULL;
	const struct xlb_state_vip *v;
	struct xlb_instance inst;
	struct health_row r;
	struct xlb_state *st;
	size_t n, k, text_len = 0;
	char *text = NULL;
	FILE *f;
	__u32 i;
	int err;

	err = xlb_cmd_args(NULL, &argc, argv, health_help, 0, HEALTH_SHOW_USAGE);
	if (err)
		return err;
	err = xlb_state_open(&inst, &xlb_opts.instance, &st);
	if (err)
		return err;
	/* Formatted under the lock, printed after it (as xlb show does). */
	f = open_memstream(&text, &text_len);
	if (!f) {
		err = -errno;
		p_err("out of memory");
		goto out;
	}
	if (xlb_opts.json) {
		o = json_object_new_object();
		rows = json_object_new_array();
		json_object_object_add(o, "backends", rows);
	} else {
		fprintf(f, "%-24s %-16s %-5s %-9s %-20s %8s %5s %5s  %s\n", "VIP",
			"BACKEND", "CHECK", "HEALTH", "SINCE", "RTT", "DOWNS",
			"UPS", "LAST ERROR");
	}
	for (i = 0; i < st->n_vips && !err; i++) {
		v = &st->vips[i];
		if (v->corrupt[0])
			continue;
		n = xlb_state_vip_backends(st, v->vip.id, ids);
		for (k = 0; k < n && !err; k++) {
			r.v = v;
			r.b = &st->backends[ids[k]];
			err = xlb_hc_effective(&inst, st, ids[k], &r.eff);
			if (!err)
				err = xlb_hc_state_read(&inst, ids[k], r.b->gen,
							&r.s);
			if (err)
				break;
			/* As xlb show says it: kind none is not checked. */
			r.health = r.eff.kind == XLB_HC_NONE ? "unchecked" :
				   xlb_hc_health_name(xlb_hc_health_of(r.b, &r.s));
			if (rows)
				json_object_array_add(rows, row_json(&r));
			else
				row_print(f, &r);
		}
	}
	fclose(f);
out:
	xlb_state_free(st);
	xlb_instance_close(&inst);
	if (!err && o) {
		xlb_json_print(o);
		o = NULL;
	} else if (!err) {
		fwrite(text, 1, text_len, stdout);
	}
	json_object_put(o);
	free(text);
	return err;
}

int do_health(int argc, char **argv)
{
	static const struct xlb_verb verbs[] = {
		{ "run", NULL, health_run },
		{ "show", NULL, health_show },
		{ NULL },
	};

	return xlb_dispatch("health", verbs, health_help, argc, argv);
}
