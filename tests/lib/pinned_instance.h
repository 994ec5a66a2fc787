/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * An xlb instance of a test's or benchmark's own: $BUILD/xlb.bpf.o loaded
 * with its maps pinned in a fresh directory on bpffs, as `xlb attach
 * --pin-dir` pins them, so that build/xlb configures it with --pin-dir.
 * The pins are removed at exit, and on a signal that ends the test (an
 * interrupt, an abort, a crash).
 */
#ifndef XLB_TEST_PINNED_INSTANCE_H
#define XLB_TEST_PINNED_INSTANCE_H

#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/libbpf.h>
#include "capture_rec.h"
#include "health.h"
#include "instance.h"
#include "neigh.h"
#include "sandbox.h"
#include "testlib.h"
#include "xlb.h"

/* The directory of the last instance made; every one is removed at exit. */
static char pinned_dir[96];
#define PINNED_MAX	4
static char pinned_dirs[PINNED_MAX][96];
static int pinned_n;
static bool pinned_hooked;

static inline const char *pinned_build_dir(void)
{
	const char *b = getenv("BUILD");

	return b && *b ? b : "build";
}

static inline void pinned_remove(void)
{
	static const char *const maps[] = {
		XLB_MAP_CONFIG, XLB_MAP_VIPS, XLB_MAP_TABLES, XLB_MAP_BACKENDS,
		XLB_MAP_VIP_STATS, XLB_MAP_BACKEND_STATS, XLB_MAP_STATS,
		XLB_MAP_CONNTRACK, XLB_MAP_VIP_FILTER, XLB_MAP_HC_CONFIG,
		XLB_MAP_HC_STATE, XLB_MAP_VIP_ADDRS, XLB_MAP_VIP_SLOTS,
		XLB_MAP_SRC_RANGES, XLB_MAP_VIP_RANGED, XLB_MAP_VIP_DENIED,
		XLB_MAP_CAPTURE_RING,
		XLB_MAP_CAPTURE_CFG, XLB_MAP_CAPTURE_STATS,
		XLB_NEIGH_MAP,	/* pinned by xlb itself (neigh.h) */
	};
	char path[PINNED_MAX * 96 + 32];	/* as the compiler counts */
	size_t i;
	int d;

	for (d = 0; d < pinned_n; d++) {
		for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
			snprintf(path, sizeof(path), "%s/%s", pinned_dirs[d],
				 maps[i]);
			unlink(path);
		}
		rmdir(pinned_dirs[d]);
	}
	pinned_n = 0;
}

/* The signals after which the pins are removed, and what each did before
 * (a sanitizer's report, or the default) that it does again after. */
static const int pinned_signals[] = {
	SIGINT, SIGTERM, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL,
};
static struct sigaction pinned_old[sizeof(pinned_signals) /
				    sizeof(pinned_signals[0])];

static inline void pinned_on_signal(int sig)
{
	size_t i;

	pinned_remove();
	for (i = 0; i < sizeof(pinned_signals) / sizeof(pinned_signals[0]); i++)
		if (pinned_signals[i] == sig)
			sigaction(sig, &pinned_old[i], NULL);
	/* A fault comes again when the faulting instruction does, with
	 * its own address for whoever reports it. */
	if (sig != SIGSEGV && sig != SIGBUS && sig != SIGFPE && sig != SIGILL)
		raise(sig);
}

static inline void pinned_on_signals(void)
{
	struct sigaction sa = { .sa_handler = pinned_on_signal };
	size_t i;

	for (i = 0; i < sizeof(pinned_signals) / sizeof(pinned_signals[0]); i++)
		sigaction(pinned_signals[i], &sa, &pinned_old[i]);
}

/*
 * Create /sys/fs/bpf/xlbt-NAME-PID (mounting bpffs when it is not) and load the program with its maps
 * pinned there (pinned_dir names it). Returns the loaded object (the
 * caller closes it; the pins keep the maps), or NULL after a message on
 * stderr. Up to PINNED_MAX instances of other names, one process.
 */
/* Root, and the sandbox's network namespace entered (sandbox.h); false,
 * the case skipped saying why, without either. */
static inline bool pinned_sandbox(struct xlb_sandbox *env)
{
	if (!test_have_root()) {
		test_skip_env("needs root (network namespace, BPF)");
		return false;
	}
	if (xlb_sandbox_setup(env)) {
		test_skip_env("cannot build the test network namespace");
		return false;
	}
	return true;
}

/* A fresh pin dir for an instance (pinned_dir), removed at exit; false
 * after a message when it cannot be made. */
static inline bool pinned_instance_dir(const char *name)
{
	if (pinned_n == PINNED_MAX) {
		fprintf(stderr, "%s: more than %d instances\n", name, PINNED_MAX);
		return false;
	}
	snprintf(pinned_dir, sizeof(pinned_dir), "/sys/fs/bpf/xlbt-%s-%d",
		 name, getpid());
	/* As xlb attach does: mount bpffs first on a machine without it. */
	if (xlb_pin_dir_prepare(pinned_dir)) {
		fprintf(stderr, "%s: cannot create %s (root?)\n", name,
			pinned_dir);
		pinned_dir[0] = '\0';
		return false;
	}
	memcpy(pinned_dirs[pinned_n++], pinned_dir, sizeof(pinned_dir));
	/* Once a process: a second time would take its own handler for
	 * what was there before. */
	if (!pinned_hooked) {
		pinned_hooked = true;
		atexit(pinned_remove);
		pinned_on_signals();
	}
	return true;
}

/* build/xlb on the last instance made (--pin-dir), ARGS as a shell
 * command line after it: 0 when it exits 0, else -1. */
__attribute__((format(printf, 1, 2)))
static inline int pinned_xlb(const char *fmt, ...)
{
	char args[2048], cmd[2 * PATH_MAX + 2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s/xlb --pin-dir %s %s", pinned_build_dir(),
		 pinned_dir, args);
	return system(cmd) == 0 ? 0 : -1;
}

static inline struct bpf_object *pinned_instance(const char *name)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts);
	struct bpf_object *obj;
	char path[256];

	if (!pinned_instance_dir(name))
		return NULL;
	snprintf(path, sizeof(path), "%s/xlb.bpf.o", pinned_build_dir());
	opts.pin_root_path = pinned_dir;
	libbpf_set_print(NULL);
	obj = bpf_object__open_file(path, &opts);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "%s: cannot load %s with its maps pinned in %s\n",
			name, path, pinned_dir);
		bpf_object__close(obj);
		return NULL;
	}
	return obj;
}

#endif /* XLB_TEST_PINNED_INSTANCE_H */
