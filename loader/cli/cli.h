/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Command-line conventions shared by every `xlb OBJECT VERB` command.
 *
 * loader/cli, the top layer of loader/: the only one that knows the command
 * line; it may include every layer below (common, algo, sim, instance,
 * host, health, inspect, replay) and none includes it.
 *   main.c         global options, the objects
 *   opts.h         the one option parser;  cmd.h  verbs, arguments, output
 *   cmd_OBJECT.c   one file per object (attach, vip, backend, config, show,
 *                  stats, lookup, conntrack, capture, exporter, apply,
 *                  health, host,
 *                  table, replay, version)
 */
#ifndef XLB_CLI_H
#define XLB_CLI_H

#include <stdbool.h>
#include <stdio.h>
#include "instance.h"
#include "report.h"

/* Global options, accepted anywhere on the command line. */
struct xlb_opts {
	bool json;		/* -j, --json: JSON on stdout, errors too */
	/* --pin-dir DIR: the instance's maps; -v, --verbose */
	struct xlb_instance_opts instance;
};
extern struct xlb_opts xlb_opts;

/* The commands: each returns 0 or -errno and has printed any error. */
int do_table(int argc, char **argv);
int do_replay(int argc, char **argv);
int do_attach(int argc, char **argv);
int do_detach(int argc, char **argv);
int do_vip(int argc, char **argv);
int do_backend(int argc, char **argv);
int do_config(int argc, char **argv);
int do_show(int argc, char **argv);
int do_stats(int argc, char **argv);
/* The instance's counters in the Prometheus text format, to f (what
 * `xlb stats --prometheus` prints; cmd_stats.c). 0 or -errno after p_err(). */
int xlb_stats_prometheus(FILE *f);
int do_lookup(int argc, char **argv);
int do_conntrack(int argc, char **argv);
int do_capture(int argc, char **argv);
int do_exporter(int argc, char **argv);
/* `xlb backend wait-drained` (cmd_conntrack.c). */
int xlb_backend_wait_drained(int argc, char **argv);
int do_apply(int argc, char **argv);
int do_health(int argc, char **argv);
int do_host(int argc, char **argv);
int do_version(int argc, char **argv);

#endif /* XLB_CLI_H */
