// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * How long a configuration change takes to reach the datapath: for tables
 * of M = 65537 and 655373 slots over 100 and 1000 backends,
 *
 *  - the whole command: `xlb backend set VIP ADDR --weight W`, from fork
 *    to exit (start, open the pinned maps, lock, read the state, compute,
 *    write, swap);
 *  - computed to live: from the new table in memory to the outer map entry
 *    naming it (the moment new packets use it), measured in-process on
 *    xlb's own path (xlb_vip_converge) by a thread watching the entry;
 *  - the update's return, which comes an RCU grace period after the swap:
 *    the kernel waits until no program still runs on the old table;
 *  - baselines in the same run: writing the M slots into an array one
 *    bpf_map_update_elem each (what a loader without an mmap-able table
 *    does), and with one BPF_MAP_UPDATE_BATCH.
 *
 * Needs root (BPF maps). Medians of several runs; nothing is asserted.
 *
 *   bench_update [--quick]    --quick: one or two runs each (a smoke run)
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "addr.h"
#include "report.h"
#include "instance.h"
#include "update.h"
#include "median.h"
#include "pinned_instance.h"
#include "sandbox.h"

#define TARGET_MS 1.0	/* computed to live, M = 65537 */

static const char *build;
/* The benchmark's instance, opened in process as xlb opens it. */
static struct xlb_instance_opts where;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* An instance of our own; the pins keep the maps, the program is not
 * needed. */
static int make_instance(void)
{
	struct bpf_object *obj = pinned_instance("update");

	if (!obj)
		return -1;
	bpf_object__close(obj);
	where.pin_dir = pinned_dir;
	return 0;
}

/* Run build/xlb with args; returns its wall time in ms, or < 0. */
static double xlb_cmd(const char *const *args)
{
	char path[256], *argv[16];
	int n = 0, status, devnull;
	double t0;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/xlb", build);
	argv[n++] = path;
	argv[n++] = "--pin-dir";
	argv[n++] = pinned_dir;
	while (*args && n < 15)
		argv[n++] = (char *)*args++;
	argv[n] = NULL;
	t0 = now_ms();
	pid = fork();
	if (pid == 0) {
		devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execv(path, argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -1;
	return now_ms() - t0;
}

static void backend_addr(size_t i, char *buf, size_t len)
{
	snprintf(buf, len, "2001:db8:b::%zx", i + 1);
}

static int make_vip(__u32 m, size_t n, struct xlb_vip_key *key,
		    struct xlb_want *want)
{
	struct xlb_instance inst;
	struct xlb_state *st;
	const char *why;
	size_t i;
	int err;

	xlb_vip_parse("[2001:db8:f::1]:80/tcp", key, &why);
	for (i = 0; i < n; i++) {
		char a[XLB_ADDR_STRLEN];

		backend_addr(i, a, sizeof(a));
		xlb_addr_parse(a, want[i].addr, &want[i].family, &why);
		want[i].weight = 1;
	}
	err = xlb_update_open(&inst, &where, &st, false);
	if (err)
		return err;
	/* Start from this VIP alone. */
	while (!err && st->n_vips)
		err = xlb_vip_remove(&inst, st, &st->vips[0].key);
	if (!err)
		err = xlb_vip_converge(&inst, st, key, m, want, n);
	xlb_update_close(&inst, st);
	return err;
}

/* Each change moves backend 0 between weight 1 and 2, so every one
 * changes the table. */
static __u32 next_weight(struct xlb_want *want)
{
	want[0].weight = want[0].weight == 1 ? 2 : 1;
	return want[0].weight;
}

/* One change through xlb's own code. */
/* The change in this process, each table's timings kept in *timing. */
static int change_in_process(const struct xlb_vip_key *key, __u32 m,
			     struct xlb_want *want, size_t n,
			     struct xlb_table_timing *timing)
{
	struct xlb_instance_opts opts = where;
	struct xlb_instance inst;
	struct xlb_state *st;
	int err;

	opts.timing = timing;
	next_weight(want);
	err = xlb_update_open(&inst, &opts, &st, false);
	if (err)
		return err;
	err = xlb_vip_converge(&inst, st, key, m, want, n);
	xlb_update_close(&inst, st);
	return err;
}

/* Baselines: the M slots into an array one syscall each, or one batch. */
static int baselines(__u32 m, double *per_slot_ms, double *batch_ms)
{
	__u32 *keys, *vals, count = m, i;
	double t0;
	int fd, err = 0;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "xlbb_slots", 4, 4, m, NULL);
	keys = malloc((size_t)m * 4);
	vals = malloc((size_t)m * 4);
	if (fd < 0 || !keys || !vals) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < m; i++) {
		keys[i] = i;
		vals[i] = i % 1000 + 1;
	}
	t0 = now_ms();
	for (i = 0; i < m && !err; i++)
		err = bpf_map_update_elem(fd, &keys[i], &vals[i], BPF_ANY);
	*per_slot_ms = now_ms() - t0;
	t0 = now_ms();
	if (!err)
		err = bpf_map_update_batch(fd, keys, vals, &count, NULL);
	*batch_ms = now_ms() - t0;
out:
	free(keys);
	free(vals);
	if (fd >= 0)
		close(fd);
	return err ? -1 : 0;
}

struct result {
	double command, build, live, ret, per_slot, batch;
};

static int measure(__u32 m, size_t n, int runs, int base_runs, struct result *r)
{
	static struct xlb_want want[XLB_MAX_BACKENDS];
	double command[64], build_ms[64], live[64], ret[64], slot[8], batch[8];
	struct xlb_table_timing timing = {};
	char addr[XLB_ADDR_STRLEN], weight[8];
	const char *args[] = { "backend", "set", "[2001:db8:f::1]:80/tcp", addr,
			       "--weight", weight, NULL };
	struct xlb_vip_key key;
	int i;

	if (make_vip(m, n, &key, want))
		return -1;
	backend_addr(0, addr, sizeof(addr));
	for (i = 0; i < runs; i++) {
		snprintf(weight, sizeof(weight), "%u", next_weight(want));
		command[i] = xlb_cmd(args);
		if (command[i] < 0)
			return -1;
	}
	for (i = 0; i < runs; i++) {
		if (change_in_process(&key, m, want, n, &timing))
			return -1;
		build_ms[i] = timing.build_us / 1e3;
		live[i] = timing.live_us / 1e3;
		ret[i] = timing.return_us / 1e3;
	}
	for (i = 0; i < base_runs; i++)
		if (baselines(m, &slot[i], &batch[i]))
			return -1;
	r->command = median(command, runs);
	r->build = median(build_ms, runs);
	r->live = median(live, runs);
	r->ret = median(ret, runs);
	r->per_slot = median(slot, base_runs);
	r->batch = median(batch, base_runs);
	return 0;
}

int main(int argc, char **argv)
{
	static const __u32 sizes[] = { 65537, 655373 };
	static const size_t counts[] = { 100, 1000 };
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	int runs = quick ? 2 : 15, base_runs = quick ? 1 : 3;
	struct sched_param rt_prio = { .sched_priority = 10 };
	long nproc = sysconf(_SC_NPROCESSORS_ONLN);
	struct result r, target = {};
	struct xlb_sandbox env;
	size_t s, c;
	bool rt;

	xlb_progname = "bench_update";
	build = pinned_build_dir();
	/* A network namespace of its own, which the xlb commands inherit:
	 * their backends' next hops are the sandbox's, never the host's. */
	if (xlb_sandbox_setup(&env))
		return 1;
	if (make_instance())
		return 1;
	/* Real-time priority (inherited by the watching thread and the xlb
	 * commands) keeps other work on a shared machine out of the
	 * figures: the swap is seen when it happens, not when the watcher
	 * next gets a CPU. */
	rt = nproc > 1 && !sched_setscheduler(0, SCHED_FIFO, &rt_prio);

	printf("## Configuration changes: command to live table (bench/bench_update.c%s)\n\n",
	       quick ? ", --quick" : "");
	printf("`xlb backend set VIP ADDR --weight W` changing one backend's weight, so the\n"
	       "VIP's whole table is recomputed and swapped in. Medians of %d runs (baselines:\n"
	       "%d), wall-clock ms. *computed to live*: from the new table in memory to the\n"
	       "outer map entry naming it, i.e. new packets use it (a fresh mmap-able array\n"
	       "filled with one copy, frozen, swapped by one update). *update returns*: the\n"
	       "same update's syscall returning, an RCU grace period later (the kernel waits\n"
	       "until no program runs on the old table). Baselines, same run: the M slots\n"
	       "written into an array with one `bpf_map_update_elem` each, and with one\n"
	       "`BPF_MAP_UPDATE_BATCH` (neither is atomic for a live table). %s\n\n",
	       runs, base_runs, rt ? "Measured at real-time priority (SCHED_FIFO)." :
	       "Real-time priority unavailable: figures include other load.");
	printf("| M | backends | whole command | compute | computed to live | update returns | per-slot updates | batch update | per-slot / live |\n");
	printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
			fprintf(stderr, "bench_update: M %u, %zu backends\n",
				sizes[s], counts[c]);
			if (measure(sizes[s], counts[c], runs, base_runs, &r)) {
				fprintf(stderr, "bench_update: measuring failed\n");
				return 1;
			}
			printf("| %u | %zu | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.0f |\n",
			       sizes[s], counts[c], r.command, r.build, r.live,
			       r.ret, r.per_slot, r.batch, r.per_slot / r.live);
			if (sizes[s] == 65537 && r.live > target.live)
				target = r;
		}
	}
	printf("\nTarget: computed to live under %.1f ms for M = 65537: %.3f ms at most over "
	       "100 and 1000 backends (%s), %.0f x faster than per-slot updates.\n",
	       TARGET_MS, target.live, target.live < TARGET_MS ? "met" : "not met",
	       target.per_slot / target.live);
	return 0;
}
