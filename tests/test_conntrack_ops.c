// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * `xlb conntrack list | count | del | flush` and `xlb backend
 * wait-drained` on a connection table of 2,097,152 slots holding
 * 1,000,000 entries, as build/xlb runs them on an instance of the test's
 * own (the datapath loaded as `xlb attach --conntrack-size` loads it,
 * maps pinned). Two VIPs of three backends each; the entries are written
 * straight into the table where the datapath finds them, a tenth of them
 * no longer live (their backend's record reused since).
 *
 *  - count gives each backend's live entries, as written; list --vip,
 *    --backend, --client gives exactly the matching live entries (JSON
 *    that parses), --all the others too;
 *  - a list blocked on a reader that does not read holds up no writer: an
 *    `xlb backend set` completes meanwhile (the time it took is printed);
 *  - del ends one flow's entry: the datapath's next packet of it goes by
 *    the VIP's table, not to the drained backend the entry named; del
 *    again says there is none;
 *  - flush --backend ends exactly that backend's entries, flush --vip
 *    that VIP's; wait-drained says how many a drained backend holds and
 *    fails at its timeout, and returns once they are flushed;
 *  - a flush killed with SIGKILL at any moment leaves each entry ended
 *    or as it was, and runs again to the end;
 *  - bad input: one line of error, nothing changed.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>

#include "replay_fixtures.h"
#include "ct_entry.h"
#include "flow_hash.h"
#include "packets.h"
#include "pinned_instance.h"
#include "sandbox.h"
#include "table_map.h"
#include "testlib.h"
#include "xlb.skel.h"

#define SLOTS		(1U << 21)
#define ENTRIES		1000000
#define N_BACKENDS	6	/* 3 a VIP */

static const char *const vips[2] = { "192.0.2.10:80/tcp", "[2001:db8::10]:80/tcp" };
static const char *const backends[N_BACKENDS] = {
	"2001:db8:ee::1", "2001:db8:ee::2", "2001:db8:ee::3",
	"2001:db8:ee::4", "2001:db8:ee::5", "2001:db8:ee::6",
};

static struct {
	bool tried, ready;
	struct xlb_sandbox env;
	struct xlb *skel;
	int ct_fd, prog_fd;
	char xlb[PATH_MAX];
	struct xlb_config cfg;
	__u32 id[N_BACKENDS], gen[N_BACKENDS];	/* backend records */
	struct xlb_ct_slot *table;
	__u64 live[N_BACKENDS], expired[N_BACKENDS];
	__u64 live_client[N_BACKENDS];	/* live, client in 203.0.113.0/28 */
	__u32 written;
} t;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static __u64 coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * XLB_NS_PER_S + ts.tv_nsec;
}

/* The instance as `xlb attach --conntrack-size SLOTS` loads it, its maps
 * pinned in a pin dir of the test's (pinned_instance.h removes them). */
static bool load(void)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts);

	if (!pinned_instance_dir("ctops"))
		return false;
	opts.pin_root_path = pinned_dir;
	libbpf_set_print(NULL);
	t.skel = xlb__open_opts(&opts);
	if (!ASSERT_TRUE(t.skel != NULL, "open xlb"))
		return false;
	t.skel->rodata->xlb_ct_mask = SLOTS - 1;
	bpf_map__set_max_entries(t.skel->maps.xlb_conntrack, SLOTS);
	if (!ASSERT_OK(xlb__load(t.skel), "load xlb with a table of 2M slots"))
		return false;
	t.ct_fd = bpf_map__fd(t.skel->maps.xlb_conntrack);
	t.prog_fd = bpf_program__fd(t.skel->progs.xlb_xdp);
	return true;
}

static bool configure(void)
{
	const char *path = fx_path("state.json");
	FILE *f = fopen(path, "w");
	struct xlb_backend be;
	__u32 id, zero = 0;
	int v, b, i;
	__u8 a[16];

	if (!ASSERT_TRUE(f != NULL, "state file"))
		return false;
	fprintf(f, "{\"config\": {\"seed\": \"00112233445566778899aabbccddeeff\", "
		"\"src4\": \"%s\", \"src6\": \"%s\"}, \"vips\": [", XLB_SANDBOX_SRC4,
		XLB_SANDBOX_SRC6);
	for (v = 0; v < 2; v++) {
		fprintf(f, "%s{\"vip\": \"%s\", \"backends\": [", v ? ", " : "", vips[v]);
		for (b = 0; b < 3; b++)
			fprintf(f, "%s{\"addr\": \"%s\"}", b ? ", " : "", backends[v * 3 + b]);
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
	fclose(f);
	if (!ASSERT_OK(pinned_xlb("apply %s >/dev/null", path), "xlb apply") ||
	    !ASSERT_OK(bpf_map_lookup_elem(bpf_map__fd(t.skel->maps.xlb_config),
					   &zero, &t.cfg), "config"))
		return false;
	for (i = 0; i < N_BACKENDS; i++) {
		inet_pton(AF_INET6, backends[i], a);
		for (id = 1; id < XLB_MAX_BACKENDS; id++)
			if (!bpf_map_lookup_elem(bpf_map__fd(t.skel->maps.xlb_backends),
						 &id, &be) &&
			    (be.flags & XLB_BE_F_IN_USE) && !memcmp(be.addr, a, 16))
				break;
		if (!ASSERT_TRUE(id < XLB_MAX_BACKENDS, backends[i]))
			return false;
		t.id[i] = id;
		t.gen[i] = be.gen;
	}
	return true;
}

/* Flow i: client 203.0.113.0/24 or 2001:db8:c::/64 by i, to VIP i % 2. */
static void flow_of(__u32 i, struct xlb_flow *f)
{
	memset(f, 0, sizeof(*f));
	f->proto = IPPROTO_TCP;
	f->dport = htons(80);
	f->sport = htons(1024 + i % 60000);
	if (i % 2 == 0) {
		f->family = XLB_AF_INET;
		f->src[0] = htonl(0xcb007100 | (i / 60000) % 256);	/* 203.0.113.x */
		inet_pton(AF_INET, "192.0.2.10", f->dst);
	} else {
		f->family = XLB_AF_INET6;
		inet_pton(AF_INET6, "2001:db8:c::", f->src);
		f->src[3] = htonl(i / 60000);
		inet_pton(AF_INET6, "2001:db8::10", f->dst);
	}
}

/* ENTRIES entries where the datapath finds them: flow i on backend
 * (i % 2) * 3 + i / 2 % 3 of its VIP, every tenth no longer live. */
static bool fill(void)
{
	size_t len = (size_t)SLOTS * sizeof(struct xlb_ct_slot);
	__u64 now = coarse_ns();
	struct xlb_flow f;
	__u32 i, w, set;

	t.table = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, t.ct_fd, 0);
	if (!ASSERT_TRUE(t.table != MAP_FAILED, "map the table"))
		return false;
	for (i = 0; t.written < ENTRIES; i++) {
		int b = (i % 2) * 3 + i / 2 % 3;
		bool old = i % 10 == 9;
		struct xlb_ct_slot *s;

		flow_of(i, &f);
		set = xlb_ct_set_of(&f, t.cfg.ct_seed, SLOTS - 1);
		for (w = 0; w < XLB_CT_WAYS && t.table[set + w].flow.family; w++)
			;
		if (w == XLB_CT_WAYS)
			continue;
		s = &t.table[set + w];
		s->flow = f;
		/* One no longer live: of an earlier generation of its
		 * backend's record (an age past the timeout would need the
		 * clock past it, which a VM just booted is not). */
		s->e = (struct xlb_ct_entry){
			.backend_id = t.id[b], .gen = old ? t.gen[b] + 1 : t.gen[b],
			.flags = XLB_CT_F_ESTABLISHED, .last_seen_ns = now,
		};
		if (old) {
			t.expired[b]++;
		} else {
			t.live[b]++;
			if (f.family == XLB_AF_INET && (ntohl(f.src[0]) & 0xff) < 16)
				t.live_client[b]++;
		}
		t.written++;
	}
	return true;
}

static bool setup(void)
{
	if (t.tried)
		return t.ready;
	t.tried = true;
	if (!pinned_sandbox(&t.env))
		return false;
	snprintf(t.xlb, sizeof(t.xlb), "%s/xlb", pinned_build_dir());
	if (!load() || !configure() || !fill())
		return false;
	printf("  %u entries in a table of %u slots\n", t.written, SLOTS);
	t.ready = true;
	return true;
}

/* Run cmd (with pin dir); its stdout into a file; 0 or -1. */
static int run_to(const char *out, double *ms, const char *fmt, ...)
{
	char args[1024];
	va_list ap;
	double t0 = now_ms();
	int rc;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	rc = pinned_xlb("%s >%s", args, out);
	if (ms)
		*ms = now_ms() - t0;
	return rc;
}

static long count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	long n = 0;
	int c;

	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* The "flows" of backend i in `xlb -j conntrack count`. */
static long counted(const char *path, int i)
{
	struct json_object *arr = json_object_from_file(path), *o, *x;
	long n = -1;
	size_t k;

	if (!arr)
		return -1;
	for (k = 0; k < json_object_array_length(arr); k++) {
		o = json_object_array_get_idx(arr, k);
		if (json_object_object_get_ex(o, "backend", &x) &&
		    !strcmp(json_object_get_string(x), backends[i]) &&
		    json_object_object_get_ex(o, "flows", &x))
			n = json_object_get_int64(x);
	}
	json_object_put(arr);
	return n;
}

static void count_and_list_give_the_live_entries(void)
{
	const char *out = fx_path("out");
	struct json_object *arr;
	double ms;
	int i;

	if (!setup())
		return;
	if (!ASSERT_OK(run_to(out, &ms, "-j conntrack count"), "count"))
		return;
	printf("  count: %.0f ms\n", ms);
	for (i = 0; i < N_BACKENDS; i++)
		ASSERT_EQ(counted(out, i), (long)t.live[i], backends[i]);

	ASSERT_OK(run_to(out, &ms, "conntrack list"), "list");
	printf("  list of every live entry: %.0f ms\n", ms);
	ASSERT_EQ(count_lines(out), (long)(t.written - t.expired[0] - t.expired[1] -
		  t.expired[2] - t.expired[3] - t.expired[4] - t.expired[5]), "a line a live entry");
	ASSERT_OK(run_to(out, &ms, "conntrack list --all"), "list --all");
	ASSERT_EQ(count_lines(out), (long)t.written, "--all: timed out too");

	ASSERT_OK(run_to(out, &ms, "-j conntrack list --vip %s --backend %s --client 203.0.113.0/28",
			 vips[0], backends[1]), "list filtered");
	arr = json_object_from_file(out);
	if (ASSERT_TRUE(arr != NULL, "JSON that parses")) {
		ASSERT_EQ((long)json_object_array_length(arr), (long)t.live_client[1],
			  "exactly the matching entries");
		json_object_put(arr);
	}
}

static void a_blocked_list_holds_up_no_writer(void)
{
	char cmd[2 * PATH_MAX];
	double t0, ms;
	FILE *list;
	int rc;

	if (!setup())
		return;
	/* Nobody reads: the list blocks once the pipe is full. */
	snprintf(cmd, sizeof(cmd), "%s --pin-dir %s conntrack list", t.xlb, pinned_dir);
	list = popen(cmd, "r");
	if (!ASSERT_TRUE(list != NULL, "start a list"))
		return;
	usleep(300 * 1000);
	t0 = now_ms();
	rc = pinned_xlb("backend set %s %s --weight 2 >/dev/null", vips[0], backends[2]);
	ms = now_ms() - t0;
	printf("  xlb backend set during a blocked list: %.0f ms\n", ms);
	ASSERT_OK(rc, "the writer completes while the list waits for its reader");
	/* Read it all: the list then ends well. */
	while (fgetc(list) != EOF)
		;
	ASSERT_OK(pclose(list), "the list ends");
	pinned_xlb("backend set %s %s --weight 1 >/dev/null", vips[0], backends[2]);
}

/* Backend index (in backends[]) the datapath sent flow f's ACK to, -1 if
 * none. */
static int datapath_backend(const struct xlb_flow *f)
{
	char src[64], dst[64];
	struct pkt_desc d = {
		.family = f->family == XLB_AF_INET6 ? 6 : 4, .src = src, .dst = dst,
		.proto = IPPROTO_TCP, .sport = ntohs(f->sport), .dport = 80,
		.tcp_flags = PKT_TCP_ACK,
	};
	__u8 in[PKT_MAX], out[PKT_MAX], a[16];
	__u32 len, out_len = sizeof(out), retval;
	int i;

	inet_ntop(d.family == 6 ? AF_INET6 : AF_INET, f->src, src, sizeof(src));
	inet_ntop(d.family == 6 ? AF_INET6 : AF_INET, f->dst, dst, sizeof(dst));
	len = pkt_build(&d, in);
	if (xlb_sandbox_run(t.prog_fd, t.env.ifindex, in, len, out, &out_len, &retval) ||
	    retval != XDP_TX || pkt_get16(out + 12) != PKT_ETH_P_IPV6)
		return -1;
	for (i = 0; i < N_BACKENDS; i++) {
		inet_pton(AF_INET6, backends[i], a);
		if (!memcmp(out + PKT_ETH_LEN + 24, a, 16))
			return i;
	}
	return -1;
}

static void del_sends_the_flow_by_the_table(void)
{
	char client[64], addr[48];
	struct xlb_flow f;
	__u64 hash;
	__u32 *slots = NULL, m, i;
	struct xlb_vip vip = {};
	int owner = -1, b = -1;

	if (!setup())
		return;
	/* A live flow of VIP 0 whose entry names another backend than its
	 * slot does. */
	bpf_map_lookup_elem(bpf_map__fd(t.skel->maps.xlb_vips),
			    &(struct xlb_vip_key){ .port = htons(80), .proto = IPPROTO_TCP,
						   .family = XLB_AF_INET,
						   .addr = { htonl(0xc000020a) } }, &vip);
	if (!ASSERT_OK(xlb_table_read(bpf_map__fd(t.skel->maps.xlb_tables), vip.id,
				      &slots, &m), "the table"))
		return;
	for (i = 0; i < 1000; i += 2) {
		flow_of(i, &f);
		hash = xlb_flow_hash(&f, t.cfg.hash_key);
		b = i / 2 % 3;
		if (i % 10 == 9 || slots[(__u32)hash % m] == t.id[b])
			continue;
		for (owner = 0; owner < 3; owner++)
			if (t.id[owner] == slots[(__u32)hash % m])
				break;
		break;
	}
	free(slots);
	if (!ASSERT_TRUE(owner >= 0 && owner < 3, "a flow whose entry is not its slot's"))
		return;
	ASSERT_EQ(datapath_backend(&f), b, "before: the entry's backend");
	inet_ntop(AF_INET, f.src, addr, sizeof(addr));
	snprintf(client, sizeof(client), "%s:%u", addr, ntohs(f.sport));
	ASSERT_OK(pinned_xlb("conntrack del %s %s >/dev/null", client, vips[0]), "del");
	ASSERT_EQ(datapath_backend(&f), owner, "after: the slot's backend");
	/* Its packet made the entry anew, for the slot's backend: ended
	 * again, and then there is none. */
	ASSERT_OK(pinned_xlb("conntrack del %s %s >/dev/null", client, vips[0]), "del the new entry");
	ASSERT_TRUE(pinned_xlb("conntrack del %s %s 2>/dev/null", client, vips[0]) != 0,
		    "del of no entry fails");
}

static void flush_and_wait_drained(void)
{
	const char *out = fx_path("out"), *before = fx_path("before");
	int i;

	if (!setup())
		return;
	ASSERT_OK(run_to(before, NULL, "-j conntrack count"), "count");
	ASSERT_OK(pinned_xlb("backend set %s %s --weight 0 >/dev/null", vips[1], backends[4]), "drain");
	ASSERT_TRUE(pinned_xlb("backend wait-drained %s %s --timeout 0 >/dev/null 2>&1",
			vips[1], backends[4]) != 0, "wait-drained: entries left, timed out");
	ASSERT_OK(pinned_xlb("conntrack flush --backend %s >/dev/null", backends[4]), "flush --backend");
	ASSERT_OK(pinned_xlb("backend wait-drained %s %s --timeout 5 >/dev/null", vips[1],
		      backends[4]), "wait-drained returns once flushed");
	ASSERT_OK(run_to(out, NULL, "-j conntrack count"), "count");
	for (i = 0; i < N_BACKENDS; i++)
		ASSERT_EQ(counted(out, i), i == 4 ? 0 : counted(before, i),
			  "only the flushed backend's entries ended");
	ASSERT_OK(pinned_xlb("conntrack flush --vip %s >/dev/null", vips[0]), "flush --vip");
	ASSERT_OK(run_to(out, NULL, "-j conntrack count"), "count");
	for (i = 0; i < N_BACKENDS; i++)
		ASSERT_EQ(counted(out, i), i < 3 || i == 4 ? 0 : counted(before, i),
			  "only the flushed VIP's entries ended");
}

static void a_killed_flush_leaves_each_entry_whole(void)
{
	char cmd[2 * PATH_MAX];
	struct xlb_ct_slot *copy;
	size_t len = (size_t)SLOTS * sizeof(*copy);
	__u64 ended = 0, torn = 0;
	__u32 i;
	pid_t pid;

	if (!setup())
		return;
	copy = malloc(len);
	if (!ASSERT_TRUE(copy != NULL, "memory"))
		return;
	memcpy(copy, t.table, len);
	/* exec: the pid killed is xlb's. */
	snprintf(cmd, sizeof(cmd), "exec %s --pin-dir %s conntrack flush --all >/dev/null",
		 t.xlb, pinned_dir);
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	/* Somewhere in the walk (the table is read first, then ended). */
	usleep(60 * 1000);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (i = 0; i < SLOTS; i++) {
		if (!memcmp(&t.table[i], &copy[i], sizeof(copy[i])))
			continue;
		if (t.table[i].e.backend_id == XLB_BACKEND_NONE && !(t.table[i].e.seq & 1) &&
		    !memcmp(&t.table[i].flow, &copy[i].flow, sizeof(copy[i].flow)) &&
		    t.table[i].e.gen == copy[i].e.gen)
			ended++;
		else
			torn++;
	}
	printf("  killed flush: %llu entries ended, %llu changed otherwise\n",
	       (unsigned long long)ended, (unsigned long long)torn);
	ASSERT_EQ(torn, 0, "each entry ended or as it was");
	ASSERT_OK(pinned_xlb("conntrack flush --all >/dev/null"), "flush again");
	for (i = 0, torn = 0; i < SLOTS; i++)
		torn += t.table[i].flow.family && t.table[i].e.backend_id != XLB_BACKEND_NONE;
	ASSERT_EQ(torn, 0, "then every entry ended");
	free(copy);
}

static void bad_input_changes_nothing(void)
{
	static const char *const cases[] = {
		"conntrack flush",
		"conntrack flush --all --vip 192.0.2.10:80/tcp",
		"conntrack del 203.0.113.7 192.0.2.10:80/tcp",
		"conntrack del 203.0.113.7:5 192.0.2.10:80",
		"conntrack list --client 203.0.113.7/33",
		"conntrack list --vip nonsense",
		"conntrack count --vip 192.0.2.99:80/tcp",
		"backend wait-drained 192.0.2.10:80/tcp 2001:db8:ee::99 --timeout 0",
	};
	const char *before = fx_path("before"), *after = fx_path("after");
	char cmd[PATH_MAX + 512];
	size_t i;

	if (!setup())
		return;
	ASSERT_OK(run_to(before, NULL, "conntrack list --all"), "list before");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(cmd, sizeof(cmd), "%s 2>%s", cases[i], fx_path("err"));
		ASSERT_TRUE(pinned_xlb("%s", cmd) != 0, cases[i]);
		ASSERT_EQ(count_lines(fx_path("err")), 1, "one line of error");
	}
	ASSERT_OK(run_to(after, NULL, "conntrack list --all"), "list after");
	snprintf(cmd, sizeof(cmd), "cmp -s %s %s", before, after);
	ASSERT_OK(system(cmd), "the table as it was");
}

TEST_MAIN(
	TEST(count_and_list_give_the_live_entries),
	TEST(a_blocked_list_holds_up_no_writer),
	TEST(bad_input_changes_nothing),
	TEST(del_sends_the_flow_by_the_table),
	TEST(flush_and_wait_drained),
	TEST(a_killed_flush_leaves_each_entry_whole),
)
