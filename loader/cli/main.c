// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* xlb: the command-line front end; `xlb OBJECT VERB ...` like ip(8). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opts.h"
#include "xlb.h"

struct xlb_opts xlb_opts = {
	.instance.pin_dir = XLB_DEFAULT_PIN_DIR,
};

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
	{ "apply",   do_apply,   "converge to the state described in a file" },
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
		"           (default pin dir: %s, where `ip link ... xdp obj` pins)\n"
		"OBJECT:\n", XLB_DEFAULT_PIN_DIR);
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
 * Where `ip link ... xdp obj` pinned the maps when no --pin-dir is given.
 * iproute2 pins XDP objects under /sys/fs/bpf/xdp/globals, which it makes a
 * symlink to tc/ (so: tc/globals); but when libxdp created /sys/fs/bpf/xdp
 * as a directory of its own first, iproute2 pins there instead.
 */
static void find_default_pin_dir(void)
{
	static const char xdp_dir[] = "/sys/fs/bpf/xdp/globals";
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", XLB_DEFAULT_PIN_DIR, XLB_MAP_CONFIG);
	if (!access(path, F_OK))
		return;
	snprintf(path, sizeof(path), "%s/%s", xdp_dir, XLB_MAP_CONFIG);
	if (!access(path, F_OK))
		xlb_opts.instance.pin_dir = xdp_dir;
}

int main(int argc, char **argv)
{
	size_t i;
	int err;

	argc--;
	argv++;
	if (take_global_opts(&argc, argv))
		return EXIT_FAILURE;
	if (!strcmp(xlb_opts.instance.pin_dir, XLB_DEFAULT_PIN_DIR))
		find_default_pin_dir();
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
		/* > 0: the help was printed. */
		err = cmds[i].fn(argc - 1, argv + 1);
		return err < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
	}
	p_err("unknown object '%s'; try `xlb help`", argv[0]);
	return EXIT_FAILURE;
}
