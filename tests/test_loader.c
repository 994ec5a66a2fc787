// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The xlb command against a running datapath: the XDP program is loaded
 * with its maps pinned in a pin dir of its own (as `xlb attach --pin-dir`
 * pins them), configured only by running build/xlb as a user would, and
 * packets are run through it with BPF_PROG_TEST_RUN in a private network
 * namespace whose routes resolve every backend (loader/sandbox.h).
 *
 *  - a configured VIP forwards every flow to the backend its live table
 *    names under the instance's seed;
 *  - drain, delete and slot reuse do what xlb(8) says to the records;
 *  - while tables are swapped again and again, a concurrent packet stream
 *    only ever sees a whole old or a whole new table;
 *  - xlb killed after any one of its map writes leaves each VIP working on
 *    its old or its new table, and the next command finishes the job and
 *    frees what was left over.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>

#include "xlb.h"
#include "flow_hash.h"
#include "packets.h"
#include "pinned_instance.h"
#include "table_map.h"
#include "testlib.h"
#include "sandbox.h"

/* The shipped xlb, and the test build that stops after a given write. */
static char xlb_path[256], xlb_test_path[256];
static struct xlb_sandbox env;
static int prog_fd = -1;
static bool ready;

/*
 * Once per run: a private network namespace, and the program loaded with
 * its maps pinned in a pin dir of the test's own. False (case skipped or
 * failed) when that is impossible here.
 */
static bool setup(void)
{
	static bool tried;
	struct bpf_program *prog;
	struct bpf_object *obj;

	if (tried)
		return ready;
	tried = true;
	if (!test_have_root()) {
		test_skip_env("needs root");
		return false;
	}
	if (xlb_sandbox_setup(&env)) {
		test_skip_env("cannot build the test network namespace");
		return false;
	}
	snprintf(xlb_path, sizeof(xlb_path), "%s/xlb", pinned_build_dir());
	snprintf(xlb_test_path, sizeof(xlb_test_path), "%s/tests/xlb-test",
		 pinned_build_dir());
	obj = pinned_instance("loader");
	prog = obj ? bpf_object__find_program_by_name(obj, "xlb_xdp") : NULL;
	if (!prog) {
		printf("  cannot load the program with its maps pinned\n");
		test_failed = true;
		return false;
	}
	prog_fd = bpf_program__fd(prog);
	ready = true;
	return true;
}

/*
 * Run `xlb --pin-dir PIN ARGS` (args split at spaces) with the environment
 * variable fault set (NULL: none); stdout into *out when out is given.
 * Returns the exit code, or 128 + the signal that ended it.
 */
static int xlb_run(const char *fault, char **out, const char *fmt, ...)
{
	char line[1024], *argv[64], *save, *tok;
	int argc = 0, pipefd[2], status, devnull;
	size_t cap = 0, len = 0;
	va_list ap;
	pid_t pid;
	ssize_t n;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	argv[argc++] = fault ? xlb_test_path : xlb_path;
	argv[argc++] = "--pin-dir";
	argv[argc++] = pinned_dir;
	for (tok = strtok_r(line, " ", &save); tok && argc < 63;
	     tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;

	if (pipe(pipefd))
		return -1;
	pid = fork();
	if (pid == 0) {
		devnull = open("/dev/null", O_WRONLY);
		dup2(out ? pipefd[1] : devnull, 1);
		if (!getenv("XLB_TEST_VERBOSE"))
			dup2(devnull, 2);
		close(pipefd[0]);
		if (fault)
			setenv("XLB_FAULT_AFTER_WRITES", fault, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pipefd[1]);
	if (out)
		*out = NULL;
	for (;;) {
		char buf[4096];

		n = read(pipefd[0], buf, sizeof(buf));
		if (n <= 0)
			break;
		if (!out)
			continue;
		if (len + n + 1 > cap) {
			cap = (len + n + 1) * 2;
			*out = realloc(*out, cap);
		}
		memcpy(*out + len, buf, n);
		len += n;
		(*out)[len] = '\0';
	}
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

static struct json_object *xlb_json(const char *fmt_args)
{
	struct json_object *o;
	char *out = NULL;

	if (xlb_run(NULL, &out, "-j %s", fmt_args) || !out) {
		free(out);
		return NULL;
	}
	o = json_tokener_parse(out);
	free(out);
	return o;
}

/* Write text to a file of the test and apply it; returns xlb's status. */
static int apply_text(const char *fault, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/xlbt-loader-%d.json", getpid());
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	fclose(f);
	return xlb_run(fault, NULL, "apply %s", path);
}

/* The state every case starts from: only the seed and sources set. */
#define SETTINGS "\"config\":{\"seed\":\"000102030405060708090a0b0c0d0e0f\"," \
		 "\"src4\":\"" XLB_SANDBOX_SRC4 "\",\"src6\":\"" XLB_SANDBOX_SRC6 "\"}"

static bool reset(void)
{
	return ASSERT_EQ(apply_text(NULL, "{" SETTINGS ",\"vips\":[]}"), 0,
			 "reset to no VIPs");
}

/* A flow towards a VIP: client i of 203.0.113.0/26 or 2001:db8:c::/64. */
struct flow {
	int family;
	char src[INET6_ADDRSTRLEN];
	const char *dst;
	__u16 sport, dport;
	__u8 proto;
};

static struct flow flow_n(int family, const char *vip, __u16 port, int i)
{
	struct flow f = { .family = family, .dst = vip, .dport = port,
			  .proto = IPPROTO_TCP, .sport = 10000 + i };

	if (family == 4)
		snprintf(f.src, sizeof(f.src), "203.0.113.%d", 1 + i % 62);
	else
		snprintf(f.src, sizeof(f.src), "2001:db8:c::%x", 1 + i);
	return f;
}

/* What the program did with one packet of the flow. */
struct verdict {
	__u32 retval;
	int family;		/* of the outer header; 0: not forwarded */
	__u8 dst[16];		/* outer destination: the backend */
};

/* A SYN: a new connection follows the table whatever the connection
 * table remembers of its 5-tuple, so every packet here shows the table. */
static int run_flow(const struct flow *f, struct verdict *v)
{
	struct pkt_desc d = {
		.family = f->family, .src = f->src, .dst = f->dst,
		.proto = f->proto, .sport = f->sport, .dport = f->dport,
		.tcp_flags = PKT_TCP_SYN, .payload_len = 32,
	};
	__u8 in[PKT_MAX], out[PKT_MAX + 64];
	__u32 len, out_len = sizeof(out);
	__u16 type;
	int err;

	memset(v, 0, sizeof(*v));
	len = pkt_build(&d, in);
	err = xlb_sandbox_run(prog_fd, env.ifindex, in, len, out, &out_len,
			  &v->retval);
	if (err)
		return err;
	if (v->retval != XDP_TX && v->retval != XDP_REDIRECT)
		return 0;
	type = pkt_get16(out + 12);
	if (type == PKT_ETH_P_IP) {
		v->family = 4;
		memcpy(v->dst, out + PKT_ETH_LEN + 16, 4);
	} else if (type == PKT_ETH_P_IPV6) {
		v->family = 6;
		memcpy(v->dst, out + PKT_ETH_LEN + 24, 16);
	}
	return 0;
}

static const char *verdict_str(const struct verdict *v, char *buf, size_t len)
{
	if (!v->family)
		snprintf(buf, len, "verdict %u", v->retval);
	else
		inet_ntop(v->family == 4 ? AF_INET : AF_INET6, v->dst, buf, len);
	return buf;
}

/* The instance as the model sees it: seed, a VIP's live table, records. */
struct model {
	__u64 key[2];
	__u32 vip_id;
	__u32 *slots, m;
	struct xlb_backend backends[XLB_MAX_BACKENDS];
};

static int open_pinned(const char *name)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%s", pinned_dir, name);
	return bpf_obj_get(path);
}

static bool model_read(struct model *md, const char *vip_addr, int family,
		       __u16 port)
{
	int cfg_fd = open_pinned(XLB_MAP_CONFIG), vips_fd = open_pinned(XLB_MAP_VIPS);
	int tables_fd = open_pinned(XLB_MAP_TABLES);
	int be_fd = open_pinned(XLB_MAP_BACKENDS);
	struct xlb_vip_key key = { .port = htons(port), .proto = IPPROTO_TCP,
				   .family = family == 4 ? XLB_AF_INET : XLB_AF_INET6 };
	struct xlb_config cfg;
	struct xlb_vip vip;
	__u32 zero = 0, i;
	bool ok = false;

	memset(md, 0, sizeof(*md));
	pkt_addr(family, vip_addr, (__u8 *)key.addr);
	if (cfg_fd < 0 || vips_fd < 0 || tables_fd < 0 || be_fd < 0 ||
	    bpf_map_lookup_elem(cfg_fd, &zero, &cfg) ||
	    bpf_map_lookup_elem(vips_fd, &key, &vip) ||
	    xlb_table_read(tables_fd, vip.id, &md->slots, &md->m))
		goto out;
	md->key[0] = cfg.hash_key[0];
	md->key[1] = cfg.hash_key[1];
	md->vip_id = vip.id;
	for (i = 0; i < XLB_MAX_BACKENDS; i++)
		if (bpf_map_lookup_elem(be_fd, &i, &md->backends[i]))
			goto out;
	ok = true;
out:
	close(cfg_fd);
	close(vips_fd);
	close(tables_fd);
	close(be_fd);
	return ok;
}

/* The backend the live table names for the flow. */
static const struct xlb_backend *model_pick(const struct model *md,
					    const struct flow *f)
{
	struct xlb_flow x = { .family = f->family == 4 ? XLB_AF_INET : XLB_AF_INET6,
			      .proto = f->proto, .sport = htons(f->sport),
			      .dport = htons(f->dport) };

	pkt_addr(f->family, f->src, (__u8 *)x.src);
	pkt_addr(f->family, f->dst, (__u8 *)x.dst);
	return &md->backends[md->slots[(__u32)xlb_flow_hash(&x, md->key) % md->m]];
}

static bool same_backend(const struct verdict *v, const struct xlb_backend *b)
{
	return v->family && (v->family == 4) == (b->family == XLB_AF_INET) &&
	       !memcmp(v->dst, b->addr, v->family == 4 ? 4 : 16);
}

/* The id of the VIP's live record that the program sent the packet to
 * (the outer destination), 0 for none. */
static __u32 sent_to(const struct model *md, const struct verdict *v)
{
	__u32 id;

	for (id = 1; id < XLB_MAX_BACKENDS; id++) {
		const struct xlb_backend *b = &md->backends[id];

		if ((b->flags & (XLB_BE_F_IN_USE | XLB_BE_F_REMOVED)) == XLB_BE_F_IN_USE &&
		    b->vip_id == md->vip_id && same_backend(v, b))
			return id;
	}
	return 0;
}

/* Every flow of the VIP goes to the backend its table names. */
static void check_forwarding(const char *vip, int family, __u16 port,
			     int flows, int backends)
{
	struct model md;
	struct verdict v;
	bool seen[XLB_MAX_BACKENDS] = {};
	char got[64], want[64];
	int i, n_seen = 0, wrong = 0;
	__u32 to;

	if (!ASSERT_TRUE(model_read(&md, vip, family, port), "read the live table"))
		return;
	for (i = 0; i < flows; i++) {
		struct flow f = flow_n(family, vip, port, i);
		const struct xlb_backend *b = model_pick(&md, &f);

		if (!ASSERT_OK(run_flow(&f, &v), "test run"))
			break;
		if (!same_backend(&v, b) && wrong++ < 3)
			printf("  flow %d to %s: sent to %s, table names %s\n", i,
			       vip, verdict_str(&v, got, sizeof(got)),
			       inet_ntop(b->family == XLB_AF_INET ? AF_INET : AF_INET6,
					 b->addr, want, sizeof(want)));
		/* Counted by where the program sent it, not by the model. */
		to = sent_to(&md, &v);
		if (to && !seen[to]) {
			seen[to] = true;
			n_seen++;
		}
	}
	ASSERT_EQ(wrong, 0, "flows sent elsewhere than the table says");
	ASSERT_EQ(n_seen, backends, "backends that received flows (outer destinations)");
	free(md.slots);
}

static void configured_vips_forward(void)
{
	if (!setup() || !reset())
		return;
	ASSERT_EQ(xlb_run(NULL, NULL, "vip add 192.0.2.10:80/tcp"), 0, "vip add");
	ASSERT_EQ(xlb_run(NULL, NULL, "backend add 192.0.2.10:80/tcp 203.0.113.1"), 0, "add 1");
	ASSERT_EQ(xlb_run(NULL, NULL, "backend add 192.0.2.10:80/tcp 203.0.113.2 --weight 2"), 0, "add 2");
	ASSERT_EQ(xlb_run(NULL, NULL, "backend add 192.0.2.10:80/tcp 2001:db8:b0::3"), 0, "add 3");
	ASSERT_EQ(xlb_run(NULL, NULL, "vip add [2001:db8:f::10]:443/tcp --table-size 1009"), 0,
		  "vip add v6");
	ASSERT_EQ(xlb_run(NULL, NULL, "backend add [2001:db8:f::10]:443/tcp 2001:db8:b0::11"), 0,
		  "add v6 1");
	ASSERT_EQ(xlb_run(NULL, NULL, "backend add [2001:db8:f::10]:443/tcp 2001:db8:b0::12"), 0,
		  "add v6 2");
	check_forwarding("192.0.2.10", 4, 80, 500, 3);
	check_forwarding("2001:db8:f::10", 6, 443, 500, 2);
}

static const struct xlb_backend *record_of(const struct model *md,
					   const char *addr, __u32 *id)
{
	__u8 bin[16] = {};
	int family = strchr(addr, ':') ? 6 : 4;
	__u32 i;

	pkt_addr(family, addr, bin);
	for (i = 1; i < XLB_MAX_BACKENDS; i++) {
		const struct xlb_backend *b = &md->backends[i];

		if ((b->family == XLB_AF_INET) == (family == 4) && b->family &&
		    !memcmp(b->addr, bin, family == 4 ? 4 : 16)) {
			*id = i;
			return b;
		}
	}
	return NULL;
}

static void drain_delete_and_reuse(void)
{
	const struct xlb_backend *b;
	struct model md;
	__u32 id, id2, gen, s, slots = 0;

	if (!setup() || !reset())
		return;
	ASSERT_EQ(apply_text(NULL, "{" SETTINGS ",\"vips\":[{\"vip\":\"192.0.2.10:80/tcp\","
		  "\"backends\":[{\"addr\":\"203.0.113.1\"},{\"addr\":\"203.0.113.2\"},"
		  "{\"addr\":\"203.0.113.3\"}]}]}"), 0, "apply three backends");

	/* Drain: out of the table, record kept for tracked connections. */
	ASSERT_EQ(xlb_run(NULL, NULL, "backend set 192.0.2.10:80/tcp 203.0.113.2 --weight 0"),
		  0, "drain");
	if (!ASSERT_TRUE(model_read(&md, "192.0.2.10", 4, 80), "read"))
		return;
	b = record_of(&md, "203.0.113.2", &id);
	if (ASSERT_TRUE(b != NULL, "drained record found")) {
		ASSERT_EQ(b->flags, XLB_BE_F_IN_USE, "drained record still in use");
		ASSERT_EQ(b->weight, 0, "drained weight");
		for (s = 0; s < md.m; s++)
			slots += md.slots[s] == id;
		ASSERT_EQ(slots, 0, "slots of the drained backend");
	}
	free(md.slots);
	check_forwarding("192.0.2.10", 4, 80, 300, 2);

	/* Delete: the record is freed, its gen kept for the next user. */
	ASSERT_EQ(xlb_run(NULL, NULL, "backend del 192.0.2.10:80/tcp 203.0.113.2"), 0, "del");
	if (!ASSERT_TRUE(model_read(&md, "192.0.2.10", 4, 80), "read"))
		return;
	ASSERT_EQ(md.backends[id].flags, 0, "deleted record's flags");
	gen = md.backends[id].gen;
	ASSERT_GE(gen, 1, "deleted record keeps its gen");
	free(md.slots);

	/* Reuse: the slot's next backend has a new gen. */
	ASSERT_EQ(xlb_run(NULL, NULL, "backend add 192.0.2.10:80/tcp 203.0.113.4"), 0, "re-add");
	if (!ASSERT_TRUE(model_read(&md, "192.0.2.10", 4, 80), "read"))
		return;
	b = record_of(&md, "203.0.113.4", &id2);
	if (ASSERT_TRUE(b != NULL, "new record found")) {
		ASSERT_EQ(id2, id, "the freed slot is reused");
		ASSERT_EQ(b->gen, gen + 1, "gen of the reused slot");
	}
	free(md.slots);
	check_forwarding("192.0.2.10", 4, 80, 300, 3);
}

/* -------- swaps under a concurrent packet stream -------- */

#define SWAP_FLOWS	64
#define SWAPS		40
#define MAX_SAMPLES	400000

struct sample {
	int before, after;	/* swaps completed around the packet */
	int flow;
	struct verdict v;
};

/* Snapshot i: the table live after swap i, as backend addresses. */
struct snapshot {
	struct verdict pick[SWAP_FLOWS];
};

static struct snapshot snaps[SWAPS + 1];
static struct sample *samples;
static atomic_int swaps_done;
static atomic_bool stream_stop;
static int n_samples;

static void *stream(void *arg)
{
	int i = 0;

	(void)arg;
	while (!atomic_load(&stream_stop) && n_samples < MAX_SAMPLES) {
		struct sample *s = &samples[n_samples];
		struct flow f = flow_n(4, "192.0.2.10", 80, i % SWAP_FLOWS);

		s->flow = i % SWAP_FLOWS;
		s->before = atomic_load(&swaps_done);
		if (run_flow(&f, &s->v))
			break;
		s->after = atomic_load(&swaps_done);
		n_samples++;
		i++;
	}
	return NULL;
}

/* What the live table says for every flow, as the model computes it. */
static bool snapshot(struct snapshot *s)
{
	struct model md;
	int i;

	if (!model_read(&md, "192.0.2.10", 4, 80))
		return false;
	for (i = 0; i < SWAP_FLOWS; i++) {
		struct flow f = flow_n(4, "192.0.2.10", 80, i);
		const struct xlb_backend *b = model_pick(&md, &f);

		s->pick[i].family = b->family == XLB_AF_INET ? 4 :
				    b->family == XLB_AF_INET6 ? 6 : 0;
		memcpy(s->pick[i].dst, b->addr, 16);
	}
	free(md.slots);
	return true;
}

static bool sample_ok(const struct sample *s)
{
	int j;

	/* The table the packet used was live at some point between the
	 * last swap finished before it and the one after it. */
	for (j = s->before; j <= s->after + 1 && j <= SWAPS; j++)
		if (s->v.family == snaps[j].pick[s->flow].family &&
		    !memcmp(s->v.dst, snaps[j].pick[s->flow].dst,
			    s->v.family == 4 ? 4 : 16))
			return true;
	return false;
}

static void swaps_under_traffic(void)
{
	static const char *const changes[] = {
		"backend set 192.0.2.10:80/tcp 203.0.113.2 --weight 3",
		"backend add 192.0.2.10:80/tcp 203.0.113.5",
		"backend del 192.0.2.10:80/tcp 203.0.113.1",
		"backend set 192.0.2.10:80/tcp 203.0.113.2 --weight 1",
		"backend add 192.0.2.10:80/tcp 203.0.113.1",
		"backend del 192.0.2.10:80/tcp 203.0.113.5",
	};
	pthread_t thread;
	char where[64];
	int i, bad = 0, changed = 0;

	if (!setup() || !reset())
		return;
	ASSERT_EQ(apply_text(NULL, "{" SETTINGS ",\"vips\":[{\"vip\":\"192.0.2.10:80/tcp\","
		  "\"backends\":[{\"addr\":\"203.0.113.1\"},{\"addr\":\"203.0.113.2\"},"
		  "{\"addr\":\"203.0.113.3\"}]}]}"), 0, "apply");
	samples = calloc(MAX_SAMPLES, sizeof(*samples));
	if (!ASSERT_TRUE(samples && snapshot(&snaps[0]), "first snapshot"))
		return;
	atomic_store(&swaps_done, 0);
	atomic_store(&stream_stop, false);
	n_samples = 0;
	if (!ASSERT_OK(pthread_create(&thread, NULL, stream, NULL), "stream"))
		return;
	for (i = 1; i <= SWAPS; i++) {
		snprintf(where, sizeof(where), "swap %d", i);
		if (!ASSERT_EQ(xlb_run(NULL, NULL, "%s", changes[(i - 1) %
			       (sizeof(changes) / sizeof(changes[0]))]), 0, where) ||
		    !ASSERT_TRUE(snapshot(&snaps[i]), where))
			break;
		changed += !!memcmp(&snaps[i], &snaps[i - 1], sizeof(snaps[i]));
		atomic_store(&swaps_done, i);
	}
	atomic_store(&stream_stop, true);
	pthread_join(thread, NULL);

	for (i = 0; i < n_samples; i++) {
		char got[64];

		if (sample_ok(&samples[i]))
			continue;
		if (bad++ < 3)
			printf("  packet %d (flow %d, between swaps %d and %d) went to %s\n",
			       i, samples[i].flow, samples[i].before,
			       samples[i].after + 1,
			       verdict_str(&samples[i].v, got, sizeof(got)));
	}
	printf("  %d packets during %d swaps (%d changed the flows' backends)\n",
	       n_samples, SWAPS, changed);
	ASSERT_GT(n_samples, SWAPS * 10, "packets sent during the swaps");
	ASSERT_GT(changed, SWAPS / 2, "swaps that moved flows");
	ASSERT_EQ(bad, 0, "packets on a backend of neither the old nor the new table");
	free(samples);
}

/* -------- a kill after every map write -------- */

#define KILL_FLOWS 48

/* What the datapath does with KILL_FLOWS flows of a VIP (a whole table). */
struct outcome {
	struct verdict v[KILL_FLOWS];
};

struct kill_vip {
	const char *addr;
	int family;
	__u16 port;
};

static const struct kill_vip kill_vips[] = {
	{ "192.0.2.10", 4, 80 },
	{ "192.0.2.11", 4, 80 },
	{ "2001:db8:f::12", 6, 80 },
};
#define KILL_VIPS (sizeof(kill_vips) / sizeof(kill_vips[0]))

static void outcome_of(int vip, struct outcome *o)
{
	int i;

	for (i = 0; i < KILL_FLOWS; i++) {
		struct flow f = flow_n(kill_vips[vip].family, kill_vips[vip].addr,
				       kill_vips[vip].port, i);

		run_flow(&f, &o->v[i]);
	}
}

/* A VIP's configuration in `xlb show -j`: "M addr/w addr/w ..." or
 * "absent"; with the table's fingerprint apart. */
static void vip_config(struct json_object *show, int vip, char *cfg,
		       size_t len, char *fp, size_t fplen)
{
	struct json_object *vips, *v, *bs, *b, *x;
	char name[64];
	size_t i, k, used;

	if (kill_vips[vip].family == 4)
		snprintf(name, sizeof(name), "%s:%u/tcp", kill_vips[vip].addr,
			 kill_vips[vip].port);
	else
		snprintf(name, sizeof(name), "[%s]:%u/tcp", kill_vips[vip].addr,
			 kill_vips[vip].port);
	snprintf(cfg, len, "absent");
	snprintf(fp, fplen, "-");
	if (!json_object_object_get_ex(show, "vips", &vips))
		return;
	for (i = 0; i < json_object_array_length(vips); i++) {
		v = json_object_array_get_idx(vips, i);
		json_object_object_get_ex(v, "vip", &x);
		if (strcmp(json_object_get_string(x), name))
			continue;
		json_object_object_get_ex(v, "table_size", &x);
		used = snprintf(cfg, len, "%d", json_object_get_int(x));
		json_object_object_get_ex(v, "backends", &bs);
		for (k = 0; k < json_object_array_length(bs) && used < len; k++) {
			b = json_object_array_get_idx(bs, k);
			json_object_object_get_ex(b, "addr", &x);
			used += snprintf(cfg + used, len - used, " %s",
					 json_object_get_string(x));
			json_object_object_get_ex(b, "weight", &x);
			used += snprintf(cfg + used, len - used, "/%d",
					 json_object_get_int(x));
		}
		json_object_object_get_ex(v, "fingerprint", &x);
		snprintf(fp, fplen, "%s", x ? json_object_get_string(x) : "none");
	}
}

struct kill_state {
	struct outcome out[KILL_VIPS];
	char cfg[KILL_VIPS][512];
	char fp[KILL_VIPS][32];
};

static bool observe(struct kill_state *ks)
{
	struct json_object *show = xlb_json("show");
	size_t i;

	if (!show)
		return false;
	for (i = 0; i < KILL_VIPS; i++) {
		outcome_of(i, &ks->out[i]);
		vip_config(show, i, ks->cfg[i], sizeof(ks->cfg[i]), ks->fp[i],
			   sizeof(ks->fp[i]));
	}
	json_object_put(show);
	return true;
}

/* Records in use and tables installed, straight from the maps. */
static void count_objects(int *records, int *tables)
{
	int be_fd = open_pinned(XLB_MAP_BACKENDS), t_fd = open_pinned(XLB_MAP_TABLES);
	struct xlb_backend b;
	__u32 i, inner;

	*records = *tables = 0;
	for (i = 0; i < XLB_MAX_BACKENDS; i++)
		if (!bpf_map_lookup_elem(be_fd, &i, &b) && (b.flags & XLB_BE_F_IN_USE))
			(*records)++;
	for (i = 0; i < XLB_MAX_VIPS; i++)
		if (!bpf_map_lookup_elem(t_fd, &i, &inner))
			(*tables)++;
	close(be_fd);
	close(t_fd);
}

/* The state show reports should hold: VIPs and backends, no more. */
static void check_no_leftovers(const char *where)
{
	struct json_object *show = xlb_json("show"), *vips, *bs;
	int records, tables, want_records = 0, want_tables;
	char what[320];
	size_t i;

	if (!ASSERT_TRUE(show != NULL, "show"))
		return;
	json_object_object_get_ex(show, "vips", &vips);
	want_tables = json_object_array_length(vips);
	for (i = 0; i < (size_t)want_tables; i++) {
		json_object_object_get_ex(json_object_array_get_idx(vips, i),
					  "backends", &bs);
		want_records += json_object_array_length(bs);
	}
	count_objects(&records, &tables);
	snprintf(what, sizeof(what), "%s: backend records in use", where);
	ASSERT_EQ(records, want_records, what);
	snprintf(what, sizeof(what), "%s: tables installed", where);
	ASSERT_EQ(tables, want_tables, what);
	json_object_put(show);
}

#define KV(addr, w) "{\"addr\":\"" addr "\",\"weight\":" #w "}"

static const char kill_start[] = "{" SETTINGS ",\"vips\":["
	"{\"vip\":\"192.0.2.10:80/tcp\",\"backends\":[" KV("203.0.113.1", 1) ","
	KV("203.0.113.2", 1) "," KV("203.0.113.3", 2) "]},"
	"{\"vip\":\"192.0.2.11:80/tcp\",\"table_size\":251,\"backends\":["
	KV("203.0.113.21", 1) "," KV("2001:db8:b0::22", 1) "]}]}";

/* Several VIPs at once: one reweighted and grown, one resized, one new. */
static const char kill_apply[] = "{" SETTINGS ",\"vips\":["
	"{\"vip\":\"192.0.2.10:80/tcp\",\"backends\":[" KV("203.0.113.1", 3) ","
	KV("203.0.113.3", 2) "," KV("203.0.113.4", 1) "]},"
	"{\"vip\":\"192.0.2.11:80/tcp\",\"table_size\":1009,\"backends\":["
	KV("203.0.113.21", 1) "," KV("2001:db8:b0::22", 1) "]},"
	"{\"vip\":\"[2001:db8:f::12]:80/tcp\",\"backends\":["
	KV("2001:db8:b0::31", 1) "]}]}";

static bool same_outcome(const struct outcome *a, const struct outcome *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* Run one change with a kill after each of its writes in turn. */
static void kill_each_write(const char *change)
{
	static struct kill_state old, new, cut, done;
	char new_json[8192], where[256], fault[16];
	char *show = NULL;
	int n, rc, writes = 0;
	size_t i;

	/* The two states the change goes between, from clean runs. */
	if (!ASSERT_EQ(apply_text(NULL, kill_start), 0, "start state") ||
	    !ASSERT_TRUE(observe(&old), "observe old"))
		return;
	rc = strcmp(change, "apply") ? xlb_run(NULL, NULL, "%s", change) :
					apply_text(NULL, kill_apply);
	if (!ASSERT_EQ(rc, 0, change) || !ASSERT_TRUE(observe(&new), "observe new") ||
	    !ASSERT_EQ(xlb_run(NULL, &show, "-j show"), 0, "show new"))
		return;
	snprintf(new_json, sizeof(new_json), "%s", show);
	free(show);

	for (n = 1; n < 64; n++) {
		if (!ASSERT_EQ(apply_text(NULL, kill_start), 0, "back to the start"))
			return;
		snprintf(fault, sizeof(fault), "%d", n);
		snprintf(where, sizeof(where), "%s, killed after write %d", change, n);
		rc = strcmp(change, "apply") ? xlb_run(fault, NULL, "%s", change) :
						apply_text(fault, kill_apply);
		if (rc == 0)
			break;
		writes = n;
		if (!ASSERT_EQ(rc, 128 + SIGKILL, where) ||
		    !ASSERT_TRUE(observe(&cut), where))
			return;
		for (i = 0; i < KILL_VIPS; i++) {
			bool as_old = same_outcome(&cut.out[i], &old.out[i]);
			bool as_new = same_outcome(&cut.out[i], &new.out[i]);

			if (!as_old && !as_new)
				printf("  %s: VIP %s forwards by neither table\n",
				       where, kill_vips[i].addr);
			ASSERT_TRUE(as_old || as_new, where);
			if (strcmp(cut.cfg[i], old.cfg[i]) &&
			    strcmp(cut.cfg[i], new.cfg[i]))
				printf("  %s: VIP %s is '%s', neither '%s' nor '%s'\n",
				       where, kill_vips[i].addr, cut.cfg[i],
				       old.cfg[i], new.cfg[i]);
			ASSERT_TRUE(!strcmp(cut.cfg[i], old.cfg[i]) ||
				    !strcmp(cut.cfg[i], new.cfg[i]), where);
		}
		/* The next command finishes or undoes the change, frees
		 * what was left over, and converges. */
		if (!ASSERT_EQ(apply_text(NULL, new_json), 0, "apply the new state") ||
		    !ASSERT_TRUE(observe(&done), "observe after"))
			return;
		for (i = 0; i < KILL_VIPS; i++) {
			ASSERT_TRUE(same_outcome(&done.out[i], &new.out[i]), where);
			ASSERT_TRUE(!strcmp(done.cfg[i], new.cfg[i]) &&
				    !strcmp(done.fp[i], new.fp[i]), where);
		}
		check_no_leftovers(where);
	}
	printf("  %s: %d writes, killed after each\n", change, writes);
	ASSERT_GE(writes, 1, "writes the change made");
}

static void kill_after_every_write(void)
{
	if (!setup() || !reset())
		return;
	kill_each_write("backend add 192.0.2.10:80/tcp 203.0.113.4");
	kill_each_write("backend set 192.0.2.10:80/tcp 203.0.113.2 --weight 0");
	kill_each_write("backend set 192.0.2.10:80/tcp 203.0.113.2 --weight 5");
	kill_each_write("backend del 192.0.2.10:80/tcp 203.0.113.1");
	kill_each_write("vip del 192.0.2.11:80/tcp");
	kill_each_write("vip add [2001:db8:f::12]:80/tcp");
	kill_each_write("apply");
}

/* The shipped xlb has no fault injection: the variable that stops the
 * test build after its first write changes nothing. */
static void shipped_xlb_ignores_fault_injection(void)
{
	int rc;

	if (!setup() || !reset() ||
	    !ASSERT_EQ(xlb_run(NULL, NULL, "vip add 192.0.2.10:80/tcp"), 0,
		       "vip add"))
		return;
	setenv("XLB_FAULT_AFTER_WRITES", "1", 1);
	rc = xlb_run(NULL, NULL, "backend add 192.0.2.10:80/tcp 203.0.113.4");
	unsetenv("XLB_FAULT_AFTER_WRITES");
	ASSERT_EQ(rc, 0, "build/xlb with XLB_FAULT_AFTER_WRITES=1");
	rc = xlb_run("1", NULL, "backend add 192.0.2.10:80/tcp 203.0.113.5");
	ASSERT_EQ(rc, 128 + SIGKILL, "the test build, killed after write 1");
}

TEST_MAIN(
	TEST(configured_vips_forward),
	TEST(drain_delete_and_reuse),
	TEST(swaps_under_traffic),
	TEST(kill_after_every_write),
	TEST(shipped_xlb_ignores_fault_injection),
)
