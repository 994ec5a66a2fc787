// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * `xlb lookup` gives the datapath's own answer. An instance of the test's
 * own (xlb.bpf.o, its maps pinned, configured by build/xlb) serves three
 * tracked VIPs (192.0.2.10:80/tcp, 192.0.2.10:53/udp, [2001:db8::10]:80/tcp)
 * and two stateless ones (192.0.2.20:80/tcp, [2001:db8::20]:80/tcp) of six
 * backends each: IPv4 and IPv6 ones reached by XDP_TX, two by
 * XDP_REDIRECT (loader/sim/sandbox.h). For 10,000 random flows a mode
 * (2,000 in the vmtest VM)
 * (tracked, stateless), and some to no VIP, `xlb lookup --batch` answers
 * first; then the XDP program itself runs each flow's packet with
 * BPF_PROG_TEST_RUN, which records the tracked flows in the connection
 * table. They must agree on every flow: the verdict, the counter of the
 * outcome, the backend (the outer destination), and a stateless VIP's
 * previous owner named in GUE; and lookup's reasons must agree with its
 * run (no "mismatch"). Then again after a backend is added, after one is
 * drained and after one is removed: established flows on their entries,
 * SYNs (a fifth of the flows) by the table, entries of the removed
 * backend not honoured. The lookups change nothing: the instance's
 * counters and connection table are the same before and after them.
 * With --size, a packet too big once encapsulated gets the datapath's
 * ICMP answer and MTU, one that fits is forwarded.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>

#include "replay_fixtures.h"
#include "addr.h"
#include "gue.h"
#include "packets.h"
#include "pinned_instance.h"
#include "sandbox.h"
#include "testlib.h"

#define FLOWS_MAX	10000	/* a mode */
#define NOT_VIP		500	/* flows to no VIP */
#define N_FLOWS_MAX	(2 * FLOWS_MAX + NOT_VIP)
/* Fewer in the vmtest VM, whose emulated CPU runs the same checks on the
 * older kernel some 20 times slower. */
static size_t per_mode, n_flows;

enum mode { TRACKED, STATELESS, NONE };

static const char *const vips[] = {
	"192.0.2.10:80/tcp", "192.0.2.10:53/udp", "[2001:db8::10]:80/tcp",
	"192.0.2.20:80/tcp", "[2001:db8::20]:80/tcp",
};
#define N_VIPS		(sizeof(vips) / sizeof(vips[0]))
#define FIRST_STATELESS	3

/* TX by the default route, TX in IPv6, REDIRECT (sandbox.h). */
static const char *const backends[] = {
	"192.0.2.101", "192.0.2.102", "2001:db8:ee::1", "2001:db8:ee::2",
	"203.0.113.65", "2001:db8:b1::5",
};

struct flow {
	char client[64];
	const char *vip;
	enum mode mode;
	int family;		/* 4 or 6 */
	char src[48], dst[48];
	__u8 proto;
	__u16 sport, dport;
};

/* What one side said of a flow's packet. */
struct outcome {
	char verdict[16];
	char reason[32];
	char backend[48];	/* "" when none was sent to */
	char prev[48];		/* GUE's previous owner; "" when none */
	char mismatch[128];
};

static struct {
	bool tried, ready;
	struct xlb_sandbox env;
	struct bpf_object *obj;
	int prog_fd;
	struct xlb_obj_maps maps;
	char xlb[PATH_MAX];
	struct flow flows[N_FLOWS_MAX];
	struct outcome looked[N_FLOWS_MAX], ran[N_FLOWS_MAX];
} t;

static bool configure(void)
{
	const char *path = fx_path("state.json");
	FILE *f = fopen(path, "w");
	size_t v, b;

	if (!ASSERT_TRUE(f != NULL, "state file"))
		return false;
	fprintf(f, "{\"config\": {\"seed\": \"00112233445566778899aabbccddeeff\", "
		"\"src4\": \"%s\", \"src6\": \"%s\", \"ct_rate_limit\": 10000000}, "
		"\"vips\": [", XLB_SANDBOX_SRC4, XLB_SANDBOX_SRC6);
	for (v = 0; v < N_VIPS; v++) {
		fprintf(f, "%s{\"vip\": \"%s\",%s \"backends\": [", v ? ", " : "",
			vips[v], v >= FIRST_STATELESS ? " \"mode\": \"stateless\"," : "");
		for (b = 0; b < sizeof(backends) / sizeof(backends[0]); b++)
			fprintf(f, "%s{\"addr\": \"%s\"}", b ? ", " : "", backends[b]);
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
	fclose(f);
	return ASSERT_OK(pinned_xlb("apply %s >/dev/null", path), "xlb apply");
}

static bool setup(void)
{
	struct bpf_program *prog;

	if (t.tried)
		return t.ready;
	t.tried = true;
	if (!pinned_sandbox(&t.env))
		return false;
	snprintf(t.xlb, sizeof(t.xlb), "%s/xlb", pinned_build_dir());
	t.obj = pinned_instance("lookup");
	prog = t.obj ? bpf_object__find_program_by_name(t.obj, "xlb_xdp") : NULL;
	if (!ASSERT_TRUE(prog != NULL && !xlb_obj_maps(t.obj, &t.maps),
			 "the program with its maps pinned") || !configure())
		return false;
	t.prog_fd = bpf_program__fd(prog);
	t.ready = true;
	return true;
}

/* Random flows: per_mode to the tracked VIPs, per_mode to the stateless
 * ones, NOT_VIP to a VIP's address at a port no VIP has. */
static void make_flows(void)
{
	struct xlb_vip_key key;
	const char *why;
	size_t i;

	srandom(7);
	for (i = 0; i < n_flows; i++) {
		struct flow *f = &t.flows[i];
		size_t r = (size_t)random();
		size_t v = i < per_mode ? r % FIRST_STATELESS :
			   i < 2 * per_mode ? FIRST_STATELESS + r % (N_VIPS - FIRST_STATELESS) :
			   0;

		f->mode = i < per_mode ? TRACKED : i < 2 * per_mode ? STATELESS : NONE;
		f->vip = vips[v];
		xlb_vip_parse(f->vip, &key, &why);
		f->family = key.family == XLB_AF_INET6 ? 6 : 4;
		f->proto = key.proto;
		f->dport = f->mode == NONE ? 8080 : ntohs(key.port);
		f->sport = 1024 + random() % 64000;
		inet_ntop(f->family == 6 ? AF_INET6 : AF_INET, key.addr, f->dst,
			  sizeof(f->dst));
		if (f->family == 6)
			snprintf(f->src, sizeof(f->src), "2001:db8:c::%lx:%lx",
				 random() & 0xffff, random() & 0xffff);
		else
			snprintf(f->src, sizeof(f->src), "203.0.113.%ld",
				 1 + random() % 60);
		snprintf(f->client, sizeof(f->client), f->family == 6 ? "[%s]:%u" : "%s:%u",
			 f->src, f->sport);
		if (f->mode == NONE) {
			static char vip[64];
			snprintf(vip, sizeof(vip), "192.0.2.10:8080/tcp");
			f->vip = vip;
		}
	}
}

static bool is_syn(size_t i, int phase)
{
	return t.flows[i].proto == IPPROTO_TCP && phase > 0 && i % 5 == 0;
}

/* `xlb -j lookup --batch` on every flow, into t.looked. */
static bool lookup_all(int phase)
{
	const char *in = fx_path("flows"), *out = fx_path("answers");
	char cmd[3 * PATH_MAX], line[8192];
	FILE *f = fopen(in, "w");
	size_t i, n = 0;

	if (!ASSERT_TRUE(f != NULL, "flows file"))
		return false;
	for (i = 0; i < n_flows; i++)
		fprintf(f, "%s %s%s\n", t.flows[i].client, t.flows[i].vip,
			is_syn(i, phase) ? " syn" : "");
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s --pin-dir %s -j lookup --batch --dev %s <%s >%s",
		 t.xlb, pinned_dir, XLB_SANDBOX_IF_IN, in, out);
	if (!ASSERT_OK(system(cmd), "xlb lookup --batch"))
		return false;
	f = fopen(out, "r");
	if (!ASSERT_TRUE(f != NULL, "answers"))
		return false;
	while (n < n_flows && fgets(line, sizeof(line), f)) {
		struct json_object *o = json_tokener_parse(line), *x, *y;
		struct outcome *a = &t.looked[n++];

		memset(a, 0, sizeof(*a));
		if (!o)
			break;
		if (json_object_object_get_ex(o, "verdict", &x))
			snprintf(a->verdict, sizeof(a->verdict), "%s", json_object_get_string(x));
		if (json_object_object_get_ex(o, "reason", &x))
			snprintf(a->reason, sizeof(a->reason), "%s", json_object_get_string(x));
		if (json_object_object_get_ex(o, "sent", &y) &&
		    json_object_object_get_ex(o, "backend", &x) &&
		    json_object_object_get_ex(x, "addr", &x))
			snprintf(a->backend, sizeof(a->backend), "%s", json_object_get_string(x));
		if (json_object_object_get_ex(o, "gue_previous_owner", &x) && x)
			snprintf(a->prev, sizeof(a->prev), "%s", json_object_get_string(x));
		if (json_object_object_get_ex(o, "mismatch", &x))
			snprintf(a->mismatch, sizeof(a->mismatch), "%s", json_object_get_string(x));
		json_object_put(o);
	}
	fclose(f);
	return ASSERT_EQ(n, n_flows, "an answer a flow");
}

/* The instance's counters, summed over CPUs, into c[XLB_STAT__MAX]. */
static bool counters(__u64 *c)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	struct xlb_counter per[ncpu];
	__u32 k;

	for (k = 0; k < XLB_STAT__MAX; k++) {
		if (bpf_map_lookup_elem(t.maps.stats, &k, per))
			return false;
		c[k] = 0;
		for (i = 0; i < ncpu; i++)
			c[k] += per[i].packets;
	}
	return true;
}

#define STAT_NAME(name, str) str,
static const char *const stat_names[XLB_STAT__MAX] = { XLB_STAT_LIST(STAT_NAME) };
#undef STAT_NAME

static const char *verdict_str(__u32 v)
{
	return v == XDP_TX ? "tx" : v == XDP_REDIRECT ? "redirect" :
	       v == XDP_PASS ? "pass" : v == XDP_DROP ? "drop" : "aborted";
}

/* The XDP program on flow i's packet, into t.ran[i]. */
static bool run_one(size_t i, int phase)
{
	const struct flow *f = &t.flows[i];
	struct pkt_desc d = {
		.family = f->family, .src = f->src, .dst = f->dst,
		.proto = f->proto, .sport = f->sport, .dport = f->dport,
		.tcp_flags = is_syn(i, phase) ? PKT_TCP_SYN : PKT_TCP_ACK,
	};
	__u8 in[PKT_MAX], out[PKT_MAX];
	__u32 len = pkt_build(&d, in), out_len = sizeof(out), retval, k;
	__u64 before[XLB_STAT__MAX], after[XLB_STAT__MAX];
	struct outcome *r = &t.ran[i];
	const __u8 *ip = out + PKT_ETH_LEN, *udp = NULL;
	struct xlb_gue g;

	memset(r, 0, sizeof(*r));
	if (!counters(before) ||
	    xlb_sandbox_run(t.prog_fd, t.env.ifindex, in, len, out, &out_len, &retval) ||
	    !counters(after))
		return false;
	snprintf(r->verdict, sizeof(r->verdict), "%s", verdict_str(retval));
	for (k = 0; k < XLB_STAT_REASONS; k++)
		if (after[k] != before[k])
			snprintf(r->reason, sizeof(r->reason), "%s", stat_names[k]);
	if (retval != XDP_TX && retval != XDP_REDIRECT)
		return true;
	if (pkt_get16(out + 12) == PKT_ETH_P_IP) {
		inet_ntop(AF_INET, ip + 16, r->backend, sizeof(r->backend));
		if (ip[9] == IPPROTO_UDP)
			udp = ip + 20;
	} else {
		inet_ntop(AF_INET6, ip + 24, r->backend, sizeof(r->backend));
		if (ip[6] == IPPROTO_UDP)
			udp = ip + 40;
	}
	if (udp && udp + 8 + sizeof(g) <= out + out_len) {
		memcpy(&g, udp + 8, sizeof(g));
		if (g.priv.family == XLB_AF_INET)
			inet_ntop(AF_INET, g.priv.prev, r->prev, sizeof(r->prev));
		else if (g.priv.family == XLB_AF_INET6)
			inet_ntop(AF_INET6, g.priv.prev, r->prev, sizeof(r->prev));
	}
	return true;
}

/* A digest of the instance's connection table and counters. */
static __u64 instance_digest(void)
{
	__u64 c[XLB_STAT__MAX], h = 1469598103934665603ULL;
	struct xlb_ct_slot s;
	__u32 i, k;

	for (i = 0; i < XLB_CT_DEFAULT_SIZE; i++) {
		if (bpf_map_lookup_elem(t.maps.conntrack, &i, &s))
			break;
		for (k = 0; k < sizeof(s); k++)
			h = (h ^ ((__u8 *)&s)[k]) * 1099511628211ULL;
	}
	if (counters(c))
		for (k = 0; k < XLB_STAT__MAX; k++)
			h = (h ^ c[k]) * 1099511628211ULL;
	return h;
}

static bool same(const struct outcome *a, const struct outcome *b)
{
	return !strcmp(a->verdict, b->verdict) && !strcmp(a->reason, b->reason) &&
	       !strcmp(a->backend, b->backend) && !strcmp(a->prev, b->prev) &&
	       !a->mismatch[0];
}

/* Lookup, then the datapath, on every flow; they agree on each. */
static void agree(const char *when, int phase)
{
	size_t i, n[3] = {}, ok[3] = {}, prev = 0, shown = 0;
	__u64 before;

	before = instance_digest();
	if (!lookup_all(phase))
		return;
	ASSERT_EQ(instance_digest(), before, "lookups change neither the counters nor the connection table");
	for (i = 0; i < n_flows; i++) {
		if (!ASSERT_TRUE(run_one(i, phase), "BPF_PROG_TEST_RUN"))
			return;
		n[t.flows[i].mode]++;
		prev += t.ran[i].prev[0] != '\0';
		if (same(&t.looked[i], &t.ran[i])) {
			ok[t.flows[i].mode]++;
		} else if (shown++ < 5) {
			printf("  %s %s%s: lookup %s %s %s prev '%s' %s; datapath %s %s %s prev '%s'\n",
			       t.flows[i].client, t.flows[i].vip, is_syn(i, phase) ? " syn" : "",
			       t.looked[i].verdict, t.looked[i].reason, t.looked[i].backend,
			       t.looked[i].prev, t.looked[i].mismatch, t.ran[i].verdict,
			       t.ran[i].reason, t.ran[i].backend, t.ran[i].prev);
		}
	}
	printf("  %s: tracked %zu of %zu agree, stateless %zu of %zu, no VIP %zu of %zu; %zu named a previous owner\n",
	       when, ok[TRACKED], n[TRACKED], ok[STATELESS], n[STATELESS], ok[NONE],
	       n[NONE], prev);
	ASSERT_EQ(ok[TRACKED], n[TRACKED], "tracked: lookup == datapath");
	ASSERT_EQ(ok[STATELESS], n[STATELESS], "stateless: lookup == datapath");
	ASSERT_EQ(ok[NONE], n[NONE], "no VIP: lookup == datapath");
}

/* `xlb backend CMD` of addr on every VIP. */
static bool every_vip(const char *cmd, const char *addr)
{
	bool ok = true;
	size_t v;

	for (v = 0; v < N_VIPS; v++)
		ok &= ASSERT_OK(pinned_xlb("backend %s %s %s >/dev/null", cmd, vips[v], addr), cmd);
	return ok;
}

static void lookup_is_the_datapath_through_changes(void)
{
	if (!setup())
		return;
	per_mode = getenv("VMTEST") ? 2000 : FLOWS_MAX;
	n_flows = 2 * per_mode + NOT_VIP;
	make_flows();
	agree("before any change", 0);
	if (every_vip("add", "2001:db8:ee::3"))
		agree("after an add", 1);
	if (every_vip("set", "192.0.2.102 --weight 0"))
		agree("after a drain", 2);
	if (every_vip("del", "2001:db8:ee::1"))
		agree("after a removal", 3);
}

/* The MTU an ICMP too-big answer in a frame names (0: none). */
static __u32 answer_mtu_of(const __u8 *out, __u32 len)
{
	const __u8 *ip = out + PKT_ETH_LEN;

	if (len >= PKT_ETH_LEN + 28 && pkt_get16(out + 12) == PKT_ETH_P_IP &&
	    ip[9] == IPPROTO_ICMP && ip[20] == 3 && ip[21] == 4)
		return pkt_get16(ip + 26);
	if (len >= PKT_ETH_LEN + 48 && pkt_get16(out + 12) == PKT_ETH_P_IPV6 &&
	    ip[6] == IPPROTO_ICMPV6 && ip[40] == 2)
		return (__u32)pkt_get16(ip + 44) << 16 | pkt_get16(ip + 46);
	return 0;
}

/*
 * --size: a packet too big for its backend's route once encapsulated
 * (every route here is MTU 1500) is answered "too big", naming the MTU
 * the datapath names, and one that fits is forwarded, as the program
 * itself does with the same packet.
 */
static void lookup_answers_too_big_as_the_datapath(void)
{
	char cmd[3 * PATH_MAX], line[8192];
	size_t i, agree = 0, answered = 0, n = 0;

	if (!setup())
		return;
	for (i = 0; i < 40; i++) {
		/* Tracked flows of 192.0.2.10:80/tcp and [2001:db8::10]:80/tcp,
		 * 1500 and 1400 bytes. */
		const struct flow *f = &t.flows[i * 3];
		__u32 size = i % 2 ? 1400 : 1500;
		struct pkt_desc d = {
			.family = f->family, .src = f->src, .dst = f->dst, .proto = f->proto,
			.sport = f->sport, .dport = f->dport, .tcp_flags = PKT_TCP_ACK,
			.df = true,
			.payload_len = size - (f->family == 6 ? 40 : 20) - 20,
		};
		__u8 in[PKT_MAX], out[PKT_MAX];
		__u32 len, out_len = sizeof(out), retval, mtu;
		struct json_object *o, *x;
		char want[96];
		FILE *p;

		if (f->proto != IPPROTO_TCP)
			continue;
		n++;
		snprintf(cmd, sizeof(cmd), "%s --pin-dir %s -j lookup '%s' '%s' --size %u --dev %s",
			 t.xlb, pinned_dir, f->client, f->vip, size, XLB_SANDBOX_IF_IN);
		p = popen(cmd, "r");
		line[0] = '\0';
		if (p) {
			if (!fgets(line, sizeof(line), p))
				line[0] = '\0';
			pclose(p);
		}
		len = pkt_build(&d, in);
		if (!ASSERT_OK(xlb_sandbox_run(t.prog_fd, t.env.ifindex, in, len, out,
					       &out_len, &retval), "BPF_PROG_TEST_RUN"))
			return;
		mtu = answer_mtu_of(out, out_len);
		snprintf(want, sizeof(want), "%s %u", retval == XDP_TX && mtu ? "icmp_too_big" :
			 "forward", mtu);
		o = json_tokener_parse(line);
		if (o && json_object_object_get_ex(o, "reason", &x)) {
			char got[96];
			struct json_object *m;

			snprintf(got, sizeof(got), "%s %d", json_object_get_string(x),
				 json_object_object_get_ex(o, "answer_mtu", &m) ?
				 json_object_get_int(m) : 0);
			if (!strcmp(got, want))
				agree++;
			else
				printf("  %s %s --size %u: lookup '%s', datapath '%s'\n",
				       f->client, f->vip, size, got, want);
		}
		answered += mtu != 0;
		json_object_put(o);
	}
	printf("  --size: %zu of %zu flows agree, %zu answered too big\n", agree, n, answered);
	ASSERT_EQ(agree, n, "lookup --size == datapath");
	ASSERT_TRUE(answered > 0 && answered < n, "some answered, some forwarded");
}

/* Bad input: one line of error, nothing printed on stdout. */
static void bad_flows_are_refused(void)
{
	static const struct { const char *args, *says; } cases[] = {
		{ "lookup 203.0.113.7 192.0.2.10:80/tcp --dev " XLB_SANDBOX_IF_IN,
		  "bad CLIENT '203.0.113.7': expected ADDR:PORT" },
		{ "lookup 203.0.113.7:0 192.0.2.10:80/tcp --dev " XLB_SANDBOX_IF_IN,
		  "bad CLIENT '203.0.113.7:0'" },
		{ "lookup [2001:db8::7]:5 192.0.2.10:80/tcp --dev " XLB_SANDBOX_IF_IN,
		  "not of the VIP's address family" },
		{ "lookup 203.0.113.7:5 192.0.2.10:80 --dev " XLB_SANDBOX_IF_IN,
		  "bad VIP '192.0.2.10:80'" },
		{ "lookup 203.0.113.7:5 192.0.2.10:80/tcp --dev nosuchdev",
		  "no device nosuchdev" },
		{ "lookup 203.0.113.7:5 192.0.2.10:80/tcp",
		  "runs on no device of this network namespace" },
		{ "lookup 203.0.113.7:5", "expected CLIENT and VIP" },
		{ "lookup 203.0.113.7:5 192.0.2.10:80/tcp --size 30 --dev " XLB_SANDBOX_IF_IN,
		  "bad --size 30" },
		{ "lookup 203.0.113.7:5 192.0.2.10:80/tcp --size 9001 --dev " XLB_SANDBOX_IF_IN,
		  "bad --size '9001'" },
	};
	char cmd[3 * PATH_MAX], err[512];
	const char *errf = fx_path("err"), *outf = fx_path("out");
	size_t i;
	FILE *f;

	if (!setup())
		return;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(cmd, sizeof(cmd), "%s --pin-dir %s %s >%s 2>%s", t.xlb,
			 pinned_dir, cases[i].args, outf, errf);
		ASSERT_TRUE(system(cmd) != 0, cases[i].args);
		err[0] = '\0';
		f = fopen(errf, "r");
		if (f) {
			if (!fgets(err, sizeof(err), f))
				err[0] = '\0';
			fclose(f);
		}
		if (!ASSERT_TRUE(strstr(err, cases[i].says) != NULL, cases[i].says))
			printf("  said: %s", err);
	}
}

TEST_MAIN(
	TEST(lookup_is_the_datapath_through_changes),
	TEST(lookup_answers_too_big_as_the_datapath),
	TEST(bad_flows_are_refused),
)
