// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * `xlb capture`: packets from the running datapath with their outcome.
 * The datapath fixture (tests/lib/dp_fixture.h) on an instance of the
 * test's own (maps pinned), build/xlb capturing it while the program runs
 * packets with BPF_PROG_TEST_RUN:
 *
 *  - every case of the fixture's table (each verdict and counter: forward
 *    by XDP_TX and XDP_REDIRECT, pass_*, drop_malformed, drop_vip_port,
 *    drop_no_table, drop_no_backend, drop_neigh_unresolved,
 *    drop_fib_failed, drop_too_big), and packets that make the datapath
 *    count icmp_too_big, drop_no_source and drop_no_config, are in the
 *    pcapng file in order, and tshark reads each one's comment: its
 *    verdict and counter, its VIP and backend where it has them; a
 *    forwarded one whole, with its outer header;
 *  - --drops keeps the drops only, --reason the counters named, --vip one
 *    VIP's packets, --sample 4 one in four, --snaplen the first bytes;
 *  - a second capture at once is refused, saying why;
 *  - a capture killed with SIGKILL leaves nothing on: past the lease the
 *    next packet switches the datapath's capture off, and none is handed
 *    over;
 *  - a reader that falls behind (stopped while 20,000 packets pass) is
 *    told how many the full ring lost;
 *  - bad options: one line of error.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "testlib.h"
#include "replay_fixtures.h"
#include "dp_fixture.h"
#include "pinned_instance.h"
#include "capture_rec.h"

static struct {
	bool tried, ready;
	char xlb[PATH_MAX];
	char dir[256];
} t;

static bool setup(void)
{
	struct bpf_object *obj;

	if (t.tried)
		return t.ready;
	t.tried = true;
	if (!pinned_sandbox(&fx.env))
		return false;
	/* One CPU: --sample counts packets per CPU. */
	{
		cpu_set_t one;

		CPU_ZERO(&one);
		CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
		sched_setaffinity(0, sizeof(one), &one);
	}
	obj = pinned_instance("capture");
	if (!ASSERT_TRUE(obj != NULL, "the program with its maps pinned") ||
	    !ASSERT_OK(dp_fixture_use(&fx, obj, "xlb_xdp"), "the fixture's VIPs"))
		return false;
	snprintf(t.xlb, sizeof(t.xlb), "%s/xlb", pinned_build_dir());
	snprintf(t.dir, sizeof(t.dir), "%s", fx_tmpdir());
	t.ready = true;
	return true;
}

/* A capture running in the background: build/xlb capture ARGS. */
struct bg {
	pid_t pid;
	FILE *err;		/* its stderr */
	char err_path[PATH_MAX];	/* t.dir's */
};

/* Start it and wait for it to say it captures. */
static bool bg_start(struct bg *b, const char *args)
{
	char cmd[3 * PATH_MAX], line[512] = "";
	int i;

	snprintf(b->err_path, sizeof(b->err_path), "%s/capture.err", t.dir);
	snprintf(cmd, sizeof(cmd), "exec %s --pin-dir %s capture %s 2>%s", t.xlb,
		 pinned_dir, args, b->err_path);
	unlink(b->err_path);
	b->pid = fork();
	if (b->pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 500; i++) {
		FILE *f = fopen(b->err_path, "r");

		if (f) {
			bool said = fgets(line, sizeof(line), f) != NULL;

			fclose(f);
			if (said && strstr(line, "capturing"))
				return true;
			if (said) {
				printf("  %s", line);
				return false;
			}
		}
		usleep(10000);
	}
	return false;
}

/* Wait for it to end (up to 10 s); its exit status, -1 on a timeout. */
static int bg_wait(struct bg *b)
{
	int status, i;

	for (i = 0; i < 1000; i++) {
		if (waitpid(b->pid, &status, WNOHANG) == b->pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		usleep(10000);
	}
	kill(b->pid, SIGKILL);
	waitpid(b->pid, &status, 0);
	return -1;
}

/* The last line it said. */
static void bg_said(const struct bg *b, char *buf, size_t len)
{
	FILE *f = fopen(b->err_path, "r");

	buf[0] = '\0';
	if (!f)
		return;
	while (fgets(buf, len, f))
		;
	fclose(f);
}

static int run_frame(const __u8 *in, size_t len)
{
	__u8 out[PKT_MAX];
	__u32 out_len = sizeof(out), retval;

	return xlb_sandbox_run(fx.prog_fd, fx.env.ifindex, in, len, out, &out_len, &retval);
}

static void run_case(size_t i)
{
	__u8 in[PKT_MAX];
	size_t l3_off, l3_len, len = build_case(&cases[i], in, &l3_off, &l3_len);

	run_frame(in, len);
}

/* A packet that counts reason, beyond the table's: icmp_too_big (1500
 * bytes with DF to an IPv4 backend: IPIP does not fit 1500),
 * drop_no_source (no IPv4 outer source) and drop_no_config (no seed). */
static void run_extra(enum xlb_stat reason)
{
	/* A port of its own each: drop_no_config comes before the
	 * connection table records a flow, and after it would not. */
	struct pkt_desc d = { V4(CLIENT4, "192.0.2.50", TCP, 40300 + reason, 80),
			      .df = true, .payload_len = 100 };
	struct xlb_config saved = fx.cfg;
	__u8 in[PKT_MAX];

	if (reason == XLB_STAT_ICMP_TOO_BIG)
		d.payload_len = 1500 - 40;
	else if (reason == XLB_STAT_DROP_NO_SOURCE)
		fx.cfg.src4 = 0;
	else
		fx.cfg.flags = 0;
	dp_write_config(&fx);
	dp_fib_cache_clear(&fx);
	run_frame(in, pkt_build(&d, in));
	fx.cfg = saved;
	dp_write_config(&fx);
}

static const enum xlb_stat extras[] = {
	XLB_STAT_ICMP_TOO_BIG, XLB_STAT_DROP_NO_SOURCE, XLB_STAT_DROP_NO_CONFIG,
};
#define N_CASES		(sizeof(cases) / sizeof(cases[0]))
#define N_EXTRAS	(sizeof(extras) / sizeof(extras[0]))

/* Every case, then the extras. */
static void run_all(void)
{
	size_t i;

	for (i = 0; i < N_CASES; i++)
		run_case(i);
	for (i = 0; i < N_EXTRAS; i++)
		run_extra(extras[i]);
}

static const char *verdict_name(int v)
{
	return v == XDP_TX ? "tx" : v == XDP_REDIRECT ? "redirect" :
	       v == XDP_PASS ? "pass" : "drop";
}

/* tshark's frame.comment of each packet in path, and its length kept,
 * into lines[] ("COMMENT\tCAPLEN"); how many. */
static int tshark_read(const char *path, char lines[][256], int max)
{
	char cmd[PATH_MAX + 128];
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "tshark -r %s -T fields -e frame.comment -e frame.cap_len 2>/dev/null", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (n < max && fgets(lines[n], 256, p)) {
		lines[n][strcspn(lines[n], "\n")] = '\0';
		n++;
	}
	pclose(p);
	return n;
}

static char lines[512][256];

/* The bytes kept of a packet, from its tshark line. */
static long caplen_of(const char *line)
{
	const char *tab = strrchr(line, '\t');

	return tab ? strtol(tab + 1, NULL, 10) : -1;
}

/* Case i's frame as the model forwards it (dp_fixture.h), cut to what a
 * capture keeps. */
static long grown(size_t i)
{
	__u8 in[PKT_MAX], want[PKT_MAX];
	size_t l3_off, l3_len, len;
	struct xlb_flow flow = dp_xlb_flow(&cases[i].flow);
	int verdict;
	__u32 be;

	build_case(&cases[i], in, &l3_off, &l3_len);
	len = dp_model_forward(&fx, cases[i].vip, &flow, in + l3_off, l3_len, want,
			       &verdict, &be);
	return len < XLB_CAPTURE_BYTES ? (long)len : XLB_CAPTURE_BYTES;
}

static void every_outcome_is_captured_with_its_comment(void)
{
	char args[PATH_MAX + 64], path[PATH_MAX], want[256], said[512];
	bool seen[XLB_STAT__MAX] = {};
	struct bg b;
	size_t i;
	int n, ok = 0;

	if (!setup())
		return;
	snprintf(path, sizeof(path), "%s/all.pcapng", t.dir);
	snprintf(args, sizeof(args), "-w %s --count %zu", path, N_CASES + N_EXTRAS);
	if (!ASSERT_TRUE(bg_start(&b, args), "xlb capture starts"))
		return;
	run_all();
	ASSERT_EQ(bg_wait(&b), 0, "xlb capture ends after --count packets");
	bg_said(&b, said, sizeof(said));
	printf("  %s", said);
	n = tshark_read(path, lines, 512);
	if (!ASSERT_EQ(n, (int)(N_CASES + N_EXTRAS), "tshark reads every packet"))
		return;
	for (i = 0; i < N_CASES + N_EXTRAS; i++) {
		int verdict = i < N_CASES ? cases[i].verdict :
			      extras[i - N_CASES] == XLB_STAT_ICMP_TOO_BIG ? XDP_TX : XDP_DROP;
		enum xlb_stat reason = i < N_CASES ? cases[i].reason : extras[i - N_CASES];

		snprintf(want, sizeof(want), "verdict %s reason %s", verdict_name(verdict),
			 stat_names[reason]);
		if (!strncmp(lines[i], want, strlen(want)) &&
		    (reason != XLB_STAT_FORWARD || strstr(lines[i], " vip ")) &&
		    (reason != XLB_STAT_FORWARD || strstr(lines[i], " backend ")) &&
		    (reason != XLB_STAT_FORWARD || i >= N_CASES ||
		     caplen_of(lines[i]) == grown(i))) {
			ok++;
			seen[reason] = true;
		} else {
			printf("  %s: '%s', want '%s'\n",
			       i < N_CASES ? cases[i].name : stat_names[reason], lines[i], want);
		}
	}
	ASSERT_EQ(ok, (int)(N_CASES + N_EXTRAS), "each packet's comment: its verdict and counter");
	printf("  counters captured:");
	for (i = 0; i < XLB_STAT_REASONS; i++)
		if (seen[i])
			printf(" %s", stat_names[i]);
	printf("\n");
}

/* Capture ARGS (after -w FILE) over run_all(): the packets written. */
static int filtered(const char *args, const char *name)
{
	char a[PATH_MAX + 256], path[PATH_MAX];
	struct bg b;
	int n;

	snprintf(path, sizeof(path), "%s/%s.pcapng", t.dir, name);
	snprintf(a, sizeof(a), "-w %s --duration 1 %s", path, args);
	if (!bg_start(&b, a))
		return -1;
	run_all();
	if (bg_wait(&b) != 0)
		return -1;
	n = tshark_read(path, lines, 512);
	return n;
}

static void filters_keep_what_they_say(void)
{
	size_t i, drops = 0, vip = 0, too_big = 0;
	int n, j;

	if (!setup())
		return;
	for (i = 0; i < N_CASES; i++) {
		drops += cases[i].verdict == XDP_DROP;
		too_big += cases[i].reason == XLB_STAT_DROP_TOO_BIG;
		vip += cases[i].reason == XLB_STAT_FORWARD && cases[i].vip == VIP_TCP4;
	}
	drops += 2;	/* drop_no_source, drop_no_config */
	n = filtered("--drops", "drops");
	ASSERT_EQ(n, (int)drops, "--drops: the drops");
	for (j = 0; j < n; j++)
		ASSERT_TRUE(!strncmp(lines[j], "verdict drop reason drop_", 25), lines[j]);
	n = filtered("--reason drop_too_big,icmp_too_big", "reasons");
	ASSERT_EQ(n, (int)too_big + 1, "--reason: those counters");
	n = filtered("--forward --vip 192.0.2.10:80/tcp", "vip");
	ASSERT_EQ(n, (int)vip, "--vip: that VIP's forwards");
	n = filtered("--sample 4", "sample");
	ASSERT_EQ(n, (int)((N_CASES + N_EXTRAS + 3) / 4), "--sample 4: one in four");
	n = filtered("--snaplen 20 --count 3", "snaplen");
	for (j = 0; j < n; j++)
		ASSERT_TRUE(strstr(lines[j], "\t20") != NULL, "--snaplen 20: 20 bytes kept");
}

static void a_second_capture_is_refused(void)
{
	char cmd[3 * PATH_MAX], err[512] = "";
	const char *ef;
	struct bg b;
	FILE *f;

	if (!setup())
		return;
	if (!ASSERT_TRUE(bg_start(&b, "--duration 3 >/dev/null"), "a first capture"))
		return;
	ef = fx_path("second.err");
	snprintf(cmd, sizeof(cmd), "%s --pin-dir %s capture --count 1 >/dev/null 2>%s",
		 t.xlb, pinned_dir, ef);
	ASSERT_TRUE(system(cmd) != 0, "a second at once fails");
	f = fopen(ef, "r");
	if (f) {
		if (!fgets(err, sizeof(err), f))
			err[0] = '\0';
		fclose(f);
	}
	ASSERT_TRUE(strstr(err, "another capture runs on the instance") != NULL, err);
	kill(b.pid, SIGTERM);
	ASSERT_EQ(bg_wait(&b), 0, "the first ends on SIGTERM");
}

static __u64 captured(void)
{
	int fd = bpf_object__find_map_fd_by_name(fx.obj, XLB_MAP_CAPTURE_STATS);
	int ncpu = libbpf_num_possible_cpus(), i;
	struct xlb_capture_stats per[ncpu];
	__u64 sum = 0;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, per))
		return ~0ULL;
	for (i = 0; i < ncpu; i++)
		sum += per[i].captured;
	return sum;
}

static void a_killed_capture_leaves_nothing_on(void)
{
	struct bg b;
	__u64 before;

	if (!setup())
		return;
	if (!ASSERT_TRUE(bg_start(&b, "--duration 60 >/dev/null"), "a capture"))
		return;
	kill(b.pid, SIGKILL);
	waitpid(b.pid, NULL, 0);
	/* Past the lease: nothing renews it. */
	usleep((XLB_CAPTURE_LEASE_MS + 500) * 1000);
	before = captured();
	run_all();
	ASSERT_EQ(captured(), before, "no packet handed over once the lease ran out");
}

static void a_reader_behind_is_told_what_was_lost(void)
{
	char said[512];
	__u8 in[PKT_MAX];
	struct pkt_desc d = { V4(CLIENT4, VIP4, TCP, 40000, 80), .payload_len = 200 };
	size_t len = pkt_build(&d, in);
	struct bg b;
	int i;

	if (!setup())
		return;
	if (!ASSERT_TRUE(bg_start(&b, "-w /dev/null --duration 2"), "a capture"))
		return;
	kill(b.pid, SIGSTOP);
	for (i = 0; i < 20000; i++)
		run_frame(in, len);
	kill(b.pid, SIGCONT);
	ASSERT_EQ(bg_wait(&b), 0, "it ends");
	bg_said(&b, said, sizeof(said));
	printf("  %s", said);
	ASSERT_TRUE(strstr(said, "lost") && !strstr(said, "lost none") &&
		    strstr(said, "the ring was full"), "says how many the full ring lost");
}

static void bad_options_are_refused(void)
{
	static const char *const cases_bad[] = {
		"capture --reason drop_nonsense",
		"capture --snaplen 0",
		"capture --snaplen 257",
		"capture --sample 0",
		"capture --vip 192.0.2.99:80/tcp",
		"capture --backend 2001:db8:ee::ff",
		"capture extra",
	};
	char cmd[3 * PATH_MAX];
	size_t i;

	if (!setup())
		return;
	for (i = 0; i < sizeof(cases_bad) / sizeof(cases_bad[0]); i++) {
		snprintf(cmd, sizeof(cmd), "%s --pin-dir %s %s >/dev/null 2>%s", t.xlb,
			 pinned_dir, cases_bad[i], fx_path("bad.err"));
		ASSERT_TRUE(system(cmd) != 0, cases_bad[i]);
	}
}

TEST_MAIN(
	TEST(every_outcome_is_captured_with_its_comment),
	TEST(filters_keep_what_they_say),
	TEST(a_second_capture_is_refused),
	TEST(a_killed_capture_leaves_nothing_on),
	TEST(a_reader_behind_is_told_what_was_lost),
	TEST(bad_options_are_refused),
)
