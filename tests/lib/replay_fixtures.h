/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Traces, backend sets and assignments shared by the replay tests. */
#ifndef XLB_REPLAY_FIXTURES_H
#define XLB_REPLAY_FIXTURES_H

#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report.h"
#include "replay.h"

/* The library reports errors through p_err(): keep the last message so
 * tests can check what a user would have been told. */
static char fx_last_err[1024];

static void fx_record_error(const char *msg)
{
	snprintf(fx_last_err, sizeof(fx_last_err), "%s", msg);
	printf("  (error: %s)\n", fx_last_err);
}

__attribute__((constructor)) static void fx_keep_errors(void)
{
	p_err_hook = fx_record_error;
}

/* The seed `xlb replay` uses by default. */
static const __u64 fx_key[2] = { 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL };

static char fx_dir[PATH_MAX];

static inline int fx_rm(const char *path, const struct stat *st, int flag,
		 struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

static inline void fx_cleanup(void)
{
	if (fx_dir[0])
		nftw(fx_dir, fx_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* A scratch directory for this run, removed at exit. */
static inline const char *fx_tmpdir(void)
{
	if (fx_dir[0])
		return fx_dir;
	strcpy(fx_dir, "/tmp/xlb-replay-test.XXXXXX");
	if (!mkdtemp(fx_dir)) {
		fx_dir[0] = 0;
		return NULL;
	}
	atexit(fx_cleanup);
	return fx_dir;
}

/* A path in the scratch directory. */
static inline const char *fx_path(const char *name)
{
	static char buf[4][PATH_MAX];
	static int i;
	char *p = buf[i++ % 4];

	snprintf(p, PATH_MAX, "%s/%s", fx_tmpdir(), name);
	return p;
}

/* Run the trace generator (next to this test program) with args. */
static inline int fx_gentrace(const char *fmt, ...)
{
	char exe[PATH_MAX] = "", cmd[2 * PATH_MAX], args[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	va_list ap;

	if (n <= 0)
		return -1;
	exe[n] = 0;
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s/../tools/gentrace %s", dirname(exe), args);
	return system(cmd) == 0 ? 0 : -1;
}

/* Backends as `xlb replay --backends N` names them. */
static inline struct lb_backend *fx_set(size_t n)
{
	struct lb_backend *b = calloc(n, sizeof(*b));
	size_t i;

	for (i = 0; b && i < n; i++) {
		snprintf(b[i].id, sizeof(b[i].id), "203.0.113.%zu", i + 1);
		b[i].weight = 1;
	}
	return b;
}

/* Read the captures into one set of replay flows. Returns 0 or -errno. */
static inline int fx_load(struct trace *t, struct replay_flows *rf, int n,
		   const char *const *paths)
{
	int i, err;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < n; i++) {
		err = trace_read(t, paths[i], NULL, NULL);
		if (err)
			return err;
	}
	return replay_flows_build(t, fx_key, rf);
}

/* The backend of every flow under one algorithm; NULL on failure. */
static inline int *fx_assign(enum lb_algo_kind kind, __u32 m, __u32 vnodes,
		      const struct lb_backend *set, size_t n,
		      const struct replay_flows *rf)
{
	struct lb_params p = { .table_size = m, .vnodes = vnodes };
	int *out = calloc(rf->n ? rf->n : 1, sizeof(*out));

	if (out && replay_assign_model(kind, &p, set, n, rf, out)) {
		free(out);
		return NULL;
	}
	return out;
}

/* Balance of an assignment: the flows' spread over the set. */
static inline struct replay_spread fx_spread(const struct replay_flows *rf,
				      const int *assign,
				      const struct lb_backend *set, size_t n)
{
	struct replay_load *loads = calloc(n, sizeof(*loads));
	struct replay_spread sp = {};

	if (!loads)
		return sp;
	replay_loads(rf, assign, n, loads);
	replay_spread(loads, set, n, RM_FLOWS, &sp);
	free(loads);
	return sp;
}

#endif /* XLB_REPLAY_FIXTURES_H */
