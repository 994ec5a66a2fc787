// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* xlb: the command-line front end; `xlb OBJECT VERB ...` like ip(8). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "opts.h"
#include "xlb.h"

#define XDP_PIN_PARENT	"/sys/fs/bpf/xdp"
#define XDP_PIN_DIR	XDP_PIN_PARENT "/globals"

/* pin_dir stays NULL until --pin-dir names one or main() finds the default. */
struct xlb_opts xlb_opts;

static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} cmds[] = {
	{ "attach",  do_attach,  "attach the XDP program to a device (libxdp)" },
	{ "detach",  do_detach,  "detach it" },
	{ "vip",     do_vip,     "add or delete virtual services" },
	{ "backend", do_backend, "add, reweight, drain or delete backends" },
	{ "config",  do_config,  "instance settings: seed, outer sources, timeouts" },
	{ "show",    do_show,    "VIPs, tables, backends, weights and shares" },
	{ "stats",   do_stats,   "counters per VIP, backend and drop reason" },
	{ "lookup",  do_lookup,  "what the datapath does with a flow's packet, and why" },
	{ "conntrack", do_conntrack, "the connection table's entries: list, count, del, flush" },
	{ "capture", do_capture, "packets from the datapath with their outcome (pcapng)" },
	{ "exporter", do_exporter, "the counters over HTTP for Prometheus" },
	{ "apply",   do_apply,   "converge to the state described in a file" },
	{ "health",  do_health,  "check backends through the traffic's path: run, show" },
	{ "host",    do_host,    "set a backend host up: decapsulation, VIPs, second chance" },
	{ "table",   do_table,   "build a table offline and print its balance" },
	{ "replay",  do_replay,  "replay pcaps: balance and disruption per algorithm" },
	{ "version", do_version, "xlb's version, and the libbpf and libxdp in use" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f,
		"Usage: xlb [OPTIONS] OBJECT { COMMAND | help }\n"
		"OPTIONS := { -j|--json | -v|--verbose | --pin-dir DIR }\n"
		"           (default pin dir: %s or %s,\n"
		"           wherever `ip link ... xdp obj` pinned xlb; `xlb show` names it)\n"
		"OBJECT:\n", XLB_DEFAULT_PIN_DIR, XDP_PIN_DIR);
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "See xlb(8), or `xlb OBJECT help`.\n");
}

/* Take the global options out of argv wherever they are (up to "--"), so
 * `xlb stats -j` and `xlb -j stats` mean the same. */
static int take_global_opts(int *argc, char **argv)
{
	const struct xlb_opt opts[] = {
		/* The error path's own flag: an error after -j is JSON. */
		{ "--json", "-j", NULL, &xlb_report_json, false },
		{ "--verbose", "-v", NULL, &xlb_opts.instance.verbose, false },
		XLB_OPT_FN("--pin-dir", xlb_opt_str, &xlb_opts.instance.pin_dir),
		{ NULL },
	};
	int err;

	err = xlb_opts_parse(opts, argc, argv, NULL, XLB_OPTS_SOME);
	xlb_opts.json = xlb_report_json;
	return err;
}

/*
 * The pin dir when no --pin-dir is given: wherever `ip link ... xdp obj`
 * pinned xlb. iproute2 pins XDP maps in /sys/fs/bpf/xdp/globals; creating
 * /sys/fs/bpf/xdp itself, it makes it a symlink to tc/ (the maps are then in
 * tc/globals), but when libxdp made /sys/fs/bpf/xdp a directory first (any
 * libxdp attach does, `xlb attach` too), iproute2 pins in xdp/globals.
 * An instance in one of them is the one; in both (not one directory seen
 * through the symlink) xlb cannot choose. With neither, a new instance goes
 * where `ip link` will find it after `xlb attach`: xdp/globals, unless
 * /sys/fs/bpf/xdp is iproute2's symlink.
 */
static int find_instance_dir(const char **dir)
{
	struct stat tc, xdp;
	bool in_tc = !stat(XLB_DEFAULT_PIN_DIR "/" XLB_MAP_CONFIG, &tc);
	bool in_xdp = !stat(XDP_PIN_DIR "/" XLB_MAP_CONFIG, &xdp);

	if (in_tc && in_xdp &&
	    (tc.st_dev != xdp.st_dev || tc.st_ino != xdp.st_ino)) {
		p_err("xlb maps are pinned in both %s and %s: say which instance with --pin-dir",
		      XLB_DEFAULT_PIN_DIR, XDP_PIN_DIR);
		return -EEXIST;
	}
	if (in_tc)
		*dir = XLB_DEFAULT_PIN_DIR;
	else if (in_xdp)
		*dir = XDP_PIN_DIR;
	else
		*dir = !lstat(XDP_PIN_PARENT, &xdp) && S_ISLNK(xdp.st_mode) ?
		       XLB_DEFAULT_PIN_DIR : XDP_PIN_DIR;
	return 0;
}

/* The commands that work without an instance, and so need no pin dir
 * (a backend host's setup keeps its own, per network namespace). */
static bool offline(const char *cmd)
{
	return !strcmp(cmd, "table") || !strcmp(cmd, "replay") ||
	       !strcmp(cmd, "host") || !strcmp(cmd, "version");
}

/*
 * Whether the words after the object ask for its help, as the commands
 * read them (cmd.c, opts.c): -h or --help anywhere before "--", or "help"
 * as the verb or after the one verb. Help needs no instance, and so no
 * pin dir: it works even where xlb could not choose one.
 */
static bool asks_help(int argc, char **argv)
{
	int i;

	for (i = 0; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	return (argc >= 1 && !strcmp(argv[0], "help")) ||
	       (argc == 2 && !strcmp(argv[1], "help"));
}

int main(int argc, char **argv)
{
	size_t i;
	int err;

	argc--;
	argv++;
	if (take_global_opts(&argc, argv))
		return EXIT_FAILURE;
	if (argc == 0) {
		usage(stderr);
		return EXIT_FAILURE;
	}
	if (!strcmp(argv[0], "help") || !strcmp(argv[0], "-h") ||
	    !strcmp(argv[0], "--help")) {
		usage(stdout);
		return EXIT_SUCCESS;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[0], cmds[i].name))
			continue;
		if (!offline(argv[0]) && !xlb_opts.instance.pin_dir &&
		    !asks_help(argc - 1, argv + 1) &&
		    find_instance_dir(&xlb_opts.instance.pin_dir))
			return EXIT_FAILURE;
		/* > 0: the help was printed. */
		err = cmds[i].fn(argc - 1, argv + 1);
		return err < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
	}
	p_err("unknown object '%s'; try `xlb help`", argv[0]);
	return EXIT_FAILURE;
}
