// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xlb replay: the flows of packet captures, addressed to one VIP, through
 * each table algorithm; how evenly they spread over the backends, and how
 * many move when the backend set changes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "addr.h"
#include "cli.h"
#include "opts.h"
#include "replay_bpf.h"
#include "replay_report.h"
#include "vip_mode.h"

/* The default flow hash seed: fixed, so replays are reproducible. */
static const __u64 default_key[2] = {
	0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL,
};

#define RANDOM_SEED	0x7265706c6179ULL	/* the band's simulation */

static int replay_help(void)
{
	printf(
"Usage: xlb replay [--algo LIST] [--table-size M] [--vnodes V]\n"
"                  [--backends N | BACKEND[:WEIGHT]...]\n"
"                  [--remove K | --add K[:WEIGHT] | --reweight ADDR=W...]\n"
"                  [--via model|bpf [--mtu MTU]] [--seed HEX] [--csv DIR]\n"
"                  [--hash FIELDS [--affinity-prefix P4[,P6]]] [--plot DIR]\n"
"                  PCAP...\n"
"       xlb replay --churn EVENTS|@FILE [--balancers L] [--ecmp MODEL]\n"
"                  [--history KEEP] [--algo LIST] [--table-size M] [--vnodes V]\n"
"                  [--backends N | BACKEND[:WEIGHT]...] [--seed HEX] [--csv DIR]\n"
"                  PCAP...\n"
"  LIST      algorithms, comma-separated: maglev ring rendezvous jump modulo\n"
"            (default: all; with --via bpf: maglev)\n"
"  M         Maglev table size, a prime (default %u)\n"
"  V         ring points per unit of weight (default 100)\n"
"  N         backends 203.0.113.1 .. 203.0.113.N (default 10; beyond 254,\n"
"            2001:db8:be::N); or list them: an argument that is an IP\n"
"            address, with an optional :WEIGHT, is a backend ([IPV6]:WEIGHT)\n"
"  --remove  the last K backends leave;  --add  K new backends join (next\n"
"            free names of the default sequence, weight 1 or WEIGHT);\n"
"            --reweight  ADDR's weight becomes W (repeatable)\n"
"  --via     model: the userspace tables; bpf: every packet through the XDP\n"
"            program with BPF_PROG_TEST_RUN (root; maglev only)\n"
"  --mtu     with --via bpf: the path MTU to the backends, %u..%u; the\n"
"            client's packets run at their captured length (IPv4 with DF),\n"
"            and those too big once encapsulated (%u bytes, IP6IP6) must be\n"
"            answered with ICMP too big, which the report counts\n"
"  --seed    the flow hash key, 32 hex digits (default fixed)\n"
"  --hash    what the VIPs' flow hash takes: 5-tuple (the default) or src-ip\n"
"            (client affinity: a client's connections on one backend), as\n"
"            `xlb vip add --hash`; --affinity-prefix the prefix of a client,\n"
"            IPv4 and IPv6 (default 32,128)\n"
"  --churn   changes over time, TIME:ACTION, comma-separated (or one a line\n"
"            in FILE), TIME from each capture's start (90s, 1500ms); ACTION:\n"
"            add K[:W], remove K, remove ADDR, reweight ADDR=W, lb-join [K],\n"
"            lb-fail [ID]; reports for each way of keeping connections how\n"
"            many break: optimum, table alone, tracking (flows staying on\n"
"            their balancer, or moved by ECMP), stateless with second chance\n"
"  L         balancers at the start, numbered from 1 (default 1)\n"
"  MODEL     the router's ECMP hash: threshold (Linux's, default), modulo,\n"
"            consistent\n"
"  KEEP      how long a slot keeps its previous backend (default 300s)\n"
"Every flow is addressed to VIP " REPLAY_VIP4 " or " REPLAY_VIP6 " at its own\n"
"server port: its client (the side that sent the SYN, else the first\n"
"packet) keeps address and port. -j prints JSON; -v adds per-backend loads.\n",
		XLB_DEFAULT_TABLE_SIZE, REPLAY_BPF_MTU_MIN, REPLAY_BPF_MTU_MAX,
		REPLAY_BPF_ENCAP_LEN);
	return 0;
}

struct replay_args {
	bool algos[LB__MAX];
	bool algos_given;
	__u32 n_backends;
	struct lb_backend *listed;
	size_t n_listed;
	enum replay_change change;
	__u32 change_k, add_weight;
	char **reweights;
	int n_reweights;
	const char *csv_dir, *plot_dir;
	const char *churn;
	__u32 balancers;
	const char *ecmp, *history;
	__u32 hash;		/* --hash: XLB_VIP_F_HASH flags */
	__u32 prefix[2];	/* --affinity-prefix: IPv4, IPv6; 0: not given */
};

/* An argument is a backend when it is an address, alone or with :WEIGHT. */
static bool is_backend_arg(const char *arg)
{
	char buf[XLB_ADDR_STRLEN + 16];
	const char *why;
	__be32 addr[4];
	__u8 family;
	char *colon;

	if (!xlb_addr_parse(arg, addr, &family, &why))
		return true;
	if (strlen(arg) >= sizeof(buf))
		return false;
	strcpy(buf, arg);
	colon = strrchr(buf, ':');
	if (!colon)
		return false;
	*colon = 0;
	return !xlb_addr_parse(buf, addr, &family, &why);
}

static long find_backend(const struct lb_backend *set, size_t n,
			 const char *id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(set[i].id, id))
			return i;
	return -1;
}

static int parse_algos(const char *opt, const char *list, void *dest)
{
	struct replay_args *a = dest;
	char *copy = strdup(list), *tok, *save = NULL;
	int err = 0, k;

	if (!copy)
		return -ENOMEM;
	memset(a->algos, 0, sizeof(a->algos));
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "all")) {
			for (k = 0; k < LB__MAX; k++)
				a->algos[k] = true;
			continue;
		}
		k = lb_algo_parse(tok);
		if (k < 0) {
			p_err("bad %s '%s': unknown algorithm '%s' (maglev, "
			      "ring, rendezvous, jump, modulo, all)", opt, list,
			      tok);
			err = -EINVAL;
			break;
		}
		a->algos[k] = true;
	}
	free(copy);
	a->algos_given = true;
	return err;
}

static int parse_u32_opt(const char *opt, const char *val, __u32 min,
			 __u32 max, __u32 *out)
{
	const char *why;

	if (xlb_u32_parse(val, min, max, out, &why)) {
		p_err("bad %s '%s': %s", opt, val, why);
		return -EINVAL;
	}
	return 0;
}

static int parse_vnodes(const char *opt, const char *val, void *dest)
{
	return parse_u32_opt(opt, val, 1, 100000, dest);
}

static int parse_n_backends(const char *opt, const char *val, void *dest)
{
	return parse_u32_opt(opt, val, 1, XLB_MAX_BACKENDS, dest);
}

static int parse_balancers(const char *opt, const char *val, void *dest)
{
	return parse_u32_opt(opt, val, 1, CHURN_MAX_BALANCERS, dest);
}

static int set_change(struct replay_args *a, enum replay_change c,
		      const char *opt)
{
	if (a->change != CHANGE_NONE && a->change != c) {
		p_err("%s: one change at a time (--remove, --add or --reweight)",
		      opt);
		return -EINVAL;
	}
	a->change = c;
	return 0;
}

static int parse_remove(const char *opt, const char *val, void *dest)
{
	struct replay_args *a = dest;

	return set_change(a, CHANGE_REMOVE, opt) ?:
	       parse_u32_opt(opt, val, 1, XLB_MAX_BACKENDS, &a->change_k);
}

static int parse_reweight(const char *opt, const char *val, void *dest)
{
	struct replay_args *a = dest;
	int err = set_change(a, CHANGE_REWEIGHT, opt);

	if (!err)
		a->reweights[a->n_reweights++] = (char *)val;
	return err;
}

static int parse_via(const char *opt, const char *val, void *dest)
{
	struct replay_report *r = dest;

	if (strcmp(val, "bpf") && strcmp(val, "model")) {
		p_err("bad %s '%s': expected model or bpf", opt, val);
		return -EINVAL;
	}
	r->via_bpf = !strcmp(val, "bpf");
	return 0;
}

static int parse_mtu(const char *opt, const char *val, void *dest)
{
	const char *why;

	if (xlb_u32_parse(val, REPLAY_BPF_MTU_MIN, REPLAY_BPF_MTU_MAX, dest,
			  &why)) {
		p_err("bad %s '%s': %s (from IPv6's minimum to the largest "
		      "packet the sandbox's frames hold)", opt, val, why);
		return -EINVAL;
	}
	return 0;
}

static int parse_key(const char *opt, const char *val, void *dest)
{
	const char *why;

	if (xlb_seed_parse(val, dest, &why)) {
		p_err("bad %s '%s': %s", opt, val, why);
		return -EINVAL;
	}
	return 0;
}

static int parse_add(const char *opt, const char *val, void *dest)
{
	struct replay_args *a = dest;
	char buf[32];
	char *colon;
	int err;

	if (set_change(a, CHANGE_ADD, opt))
		return -EINVAL;
	if (strlen(val) >= sizeof(buf)) {
		p_err("bad %s '%s': expected K or K:WEIGHT", opt, val);
		return -EINVAL;
	}
	strcpy(buf, val);
	a->add_weight = 1;
	colon = strchr(buf, ':');
	if (colon) {
		const char *why;

		*colon = 0;
		if (xlb_weight_parse(colon + 1, &a->add_weight, &why) ||
		    !a->add_weight) {
			p_err("bad %s '%s': weight: %s", opt, val,
			      a->add_weight ? why : "must be positive");
			return -EINVAL;
		}
	}
	err = parse_u32_opt(opt, buf, 1, XLB_MAX_BACKENDS, &a->change_k);
	return err;
}

static int parse_hash(const char *opt, const char *val, void *dest)
{
	const char *why;

	*(__u32 *)dest = 0;
	if (xlb_hash_parse(val, dest, &why)) {
		p_err("bad %s '%s': %s", opt, val, why);
		return -EINVAL;
	}
	return 0;
}

/* P4 or P4,P6: the client prefixes of affinity, 1..32 and 1..128. */
static int parse_prefixes(const char *opt, const char *val, void *dest)
{
	__u32 *prefix = dest;
	const char *comma = strchr(val, ','), *why = NULL;
	char p4[8];

	if ((comma ? (size_t)(comma - val) : strlen(val)) >= sizeof(p4)) {
		p_err("bad %s '%s': expected P4 or P4,P6", opt, val);
		return -EINVAL;
	}
	snprintf(p4, sizeof(p4), "%.*s", comma ? (int)(comma - val) :
		 (int)strlen(val), val);
	if (xlb_affinity_parse(p4, &prefix[0], &why) ||
	    (comma && xlb_affinity_parse(comma + 1, &prefix[1], &why)) ||
	    (prefix[0] > 32 && (why = "the IPv4 prefix is 1..32"))) {
		p_err("bad %s '%s': %s", opt, val, why);
		return -EINVAL;
	}
	return 0;
}

/* Options anywhere; the other arguments are backends (an address, with
 * an optional :WEIGHT) or captures. Returns 0, 1 after the help, or -errno
 * after p_err(). */
static int parse_args(int argc, char **argv, struct replay_args *a,
		      struct replay_report *r)
{
	const struct xlb_opt opts[] = {
		XLB_OPT_FN("--algo", parse_algos, a),
		XLB_OPT_FN("--table-size", xlb_opt_table_size,
			   &r->params.table_size),
		XLB_OPT_FN("--vnodes", parse_vnodes, &r->params.vnodes),
		XLB_OPT_FN("--backends", parse_n_backends, &a->n_backends),
		XLB_OPT_FN("--remove", parse_remove, a),
		XLB_OPT_FN("--add", parse_add, a),
		{ "--reweight", NULL, parse_reweight, a, true },
		XLB_OPT_FN("--via", parse_via, r),
		XLB_OPT_FN("--mtu", parse_mtu, &r->mtu),
		XLB_OPT_FN("--seed", parse_key, r->key),
		XLB_OPT_FN("--csv", xlb_opt_str, &a->csv_dir),
		XLB_OPT_FN("--plot", xlb_opt_str, &a->plot_dir),
		XLB_OPT_FN("--churn", xlb_opt_str, &a->churn),
		XLB_OPT_FN("--balancers", parse_balancers, &a->balancers),
		XLB_OPT_FN("--ecmp", xlb_opt_str, &a->ecmp),
		XLB_OPT_FN("--history", xlb_opt_str, &a->history),
		XLB_OPT_FN("--hash", parse_hash, &a->hash),
		XLB_OPT_FN("--affinity-prefix", parse_prefixes, a->prefix),
		{ NULL },
	};
	int i, err, k;

	for (k = 0; k < LB__MAX; k++)
		a->algos[k] = true;
	r->params.table_size = XLB_DEFAULT_TABLE_SIZE;
	r->params.vnodes = 100;
	memcpy(r->key, default_key, sizeof(r->key));
	r->pcaps = calloc(argc ? argc : 1, sizeof(*r->pcaps));
	a->listed = calloc(argc ? argc : 1, sizeof(*a->listed));
	a->reweights = calloc(argc ? argc : 1, sizeof(*a->reweights));
	if (!r->pcaps || !a->listed || !a->reweights)
		return -ENOMEM;

	err = xlb_opts_parse(opts, &argc, argv, replay_help, XLB_OPTS_ALL);
	for (i = 0; i < argc && !err; i++) {
		if (is_backend_arg(argv[i]))
			err = lb_backend_parse(argv[i], &a->listed[a->n_listed++]);
		else
			r->pcaps[r->n_pcaps++] = argv[i];
	}
	if (err)
		return err;
	if (!r->n_pcaps) {
		p_err("no capture file given; try `xlb replay help`");
		return -EINVAL;
	}
	if (a->n_backends && a->n_listed) {
		p_err("--backends N and a list of backends exclude each other");
		return -EINVAL;
	}
	if (a->prefix[0] && !(a->hash & XLB_VIP_F_HASH_SRC)) {
		p_err("--affinity-prefix needs --hash src-ip");
		return -EINVAL;
	}
	/* The VIPs' flags, as `xlb vip add` would make them. */
	for (i = 0; i < 2; i++)
		r->hash_flags[i] = xlb_vip_mode_complete(a->hash |
				a->prefix[i] << XLB_VIP_AFFINITY_SHIFT,
				i ? XLB_AF_INET6 : XLB_AF_INET);
	return 0;
}

/* The backend set before the change. */
static int build_before(struct replay_args *a, struct replay_report *r)
{
	size_t n = a->n_listed ? a->n_listed : a->n_backends ? a->n_backends : 10;
	size_t i;

	r->set[0] = calloc(n, sizeof(*r->set[0]));
	if (!r->set[0])
		return -ENOMEM;
	r->n_set[0] = n;
	if (a->n_listed) {
		memcpy(r->set[0], a->listed, n * sizeof(*r->set[0]));
	} else {
		for (i = 0; i < n; i++) {
			replay_backend_name(i + 1, r->set[0][i].id, sizeof(r->set[0][i].id));
			r->set[0][i].weight = 1;
		}
	}
	return lb_backends_check(r->set[0], n, r->params.table_size);
}

static int apply_reweight(const char *arg, struct replay_report *r)
{
	struct lb_backend b;
	char addr[XLB_NAME_MAX + 8];
	const char *eq = strrchr(arg, '='), *why;
	__u32 w;
	long j;

	if (!eq || (size_t)(eq - arg) >= sizeof(addr)) {
		p_err("--reweight '%s': expected ADDR=WEIGHT", arg);
		return -EINVAL;
	}
	memcpy(addr, arg, eq - arg);
	addr[eq - arg] = 0;
	if (xlb_weight_parse(eq + 1, &w, &why)) {
		p_err("--reweight '%s': %s", arg, why);
		return -EINVAL;
	}
	if (lb_backend_parse(addr, &b))
		return -EINVAL;
	j = find_backend(r->set[1], r->n_set[1], b.id);
	if (j < 0) {
		p_err("--reweight '%s': %s is not one of the backends", arg, b.id);
		return -EINVAL;
	}
	r->set[1][j].weight = w;
	return 0;
}

/* The backend set after the change, and the change in words. */
static int build_after(struct replay_args *a, struct replay_report *r)
{
	size_t nb = r->n_set[0], na = nb, i;
	__u32 next = 1;
	int err, len;

	r->change = a->change;
	if (a->change == CHANGE_NONE)
		return 0;
	if (a->change == CHANGE_REMOVE && a->change_k >= nb) {
		p_err("--remove %u: only %zu backends; at least one must stay",
		      a->change_k, nb);
		return -EINVAL;
	}
	if (a->change == CHANGE_ADD)
		na = nb + a->change_k;
	else if (a->change == CHANGE_REMOVE)
		na = nb - a->change_k;
	r->set[1] = calloc(na > nb ? na : nb, sizeof(*r->set[1]));
	if (!r->set[1])
		return -ENOMEM;
	memcpy(r->set[1], r->set[0], (na < nb ? na : nb) * sizeof(*r->set[1]));
	r->n_set[1] = na;
	switch (a->change) {
	case CHANGE_REMOVE:
		snprintf(r->change_text, sizeof(r->change_text),
			 "remove %u of %zu (%s%s)", a->change_k, nb,
			 r->set[0][na].id, a->change_k > 1 ? " .." : "");
		break;
	case CHANGE_ADD:
		for (i = nb; i < na; i++) {
			do
				replay_backend_name(next++, r->set[1][i].id,
					     sizeof(r->set[1][i].id));
			while (find_backend(r->set[1], i, r->set[1][i].id) >= 0);
			r->set[1][i].weight = a->add_weight;
		}
		snprintf(r->change_text, sizeof(r->change_text),
			 "add %u to %zu (%s%s)", a->change_k, nb,
			 r->set[1][nb].id, a->change_k > 1 ? " .." : "");
		break;
	case CHANGE_REWEIGHT:
		len = snprintf(r->change_text, sizeof(r->change_text),
			       "reweight");
		for (i = 0; i < (size_t)a->n_reweights; i++) {
			err = apply_reweight(a->reweights[i], r);
			if (err)
				return err;
			if (len < (int)sizeof(r->change_text))
				len += snprintf(r->change_text + len,
						sizeof(r->change_text) - len,
						" %s", a->reweights[i]);
		}
		break;
	case CHANGE_NONE:
		break;
	}
	return lb_backends_check(r->set[1], na, r->params.table_size);
}

/* --churn: the sequence, its settings, and the backend sets it goes
 * through, all checked before any capture is read. */
static int build_churn(struct replay_args *a, struct replay_report *r)
{
	const char *stray = a->balancers ? "--balancers" : a->ecmp ? "--ecmp" :
			    a->history ? "--history" : NULL, *why;
	struct churn_report *c;
	__u32 ms;
	int e;

	if (!a->churn) {
		if (stray) {
			p_err("%s needs --churn", stray);
			return -EINVAL;
		}
		return 0;
	}
	if (a->change != CHANGE_NONE) {
		p_err("--churn is a sequence of changes, --remove, --add and "
		      "--reweight one change: give one or the other");
		return -EINVAL;
	}
	if (r->via_bpf || a->plot_dir) {
		p_err("--churn reports through the model as a table, -j or "
		      "--csv: leave out %s", r->via_bpf ? "--via bpf" : "--plot");
		return -EINVAL;
	}
	c = r->churn = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->spec.balancers = a->balancers ? a->balancers : 1;
	c->spec.history_us = CHURN_DEFAULT_HISTORY_US;
	if (a->history) {
		if (xlb_duration_parse(a->history, 0, UINT32_MAX, &ms, &why)) {
			p_err("bad --history '%s': %s", a->history, why);
			return -EINVAL;
		}
		c->spec.history_us = (__u64)ms * 1000;
	}
	if (a->ecmp) {
		for (e = 0; e < ECMP__MAX; e++)
			if (!strcmp(a->ecmp, churn_ecmp_names[e]))
				break;
		if (e == ECMP__MAX) {
			p_err("bad --ecmp '%s': expected threshold, modulo or "
			      "consistent", a->ecmp);
			return -EINVAL;
		}
		c->spec.ecmp = e;
	}
	return churn_parse(a->churn, &c->spec) ?:
	       churn_plan_build(&c->spec, r->set[0], r->n_set[0],
				r->params.table_size, &c->plan);
}

static int check_via(struct replay_args *a, struct replay_report *r)
{
	int k;

	if (r->mtu && !r->via_bpf) {
		p_err("--mtu is the path MTU of the XDP program's run: it needs "
		      "--via bpf");
		return -EINVAL;
	}
	if (!r->via_bpf)
		return 0;
	if (!a->algos_given) {
		memset(a->algos, 0, sizeof(a->algos));
		a->algos[LB_MAGLEV] = true;
	}
	for (k = 0; k < LB__MAX; k++) {
		if (a->algos[k] && k != LB_MAGLEV) {
			p_err("--via bpf runs the XDP program, whose tables are "
			      "Maglev's: use --algo maglev (or --via model for "
			      "%s)", lb_algo_name(k));
			return -EINVAL;
		}
	}
	if (geteuid()) {
		p_err("--via bpf loads the XDP program and needs root; "
		      "--via model needs nothing");
		return -EPERM;
	}
	return 0;
}

/* gnuplot must be there before the work starts, not after. */
static int check_gnuplot(void)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL, buf[4096];
	bool found = false;

	copy = strdup(path ? path : "/usr/bin:/bin");
	if (!copy)
		return -ENOMEM;
	for (dir = strtok_r(copy, ":", &save); dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(buf, sizeof(buf), "%s/gnuplot", dir);
		found = !access(buf, X_OK);
	}
	free(copy);
	if (!found) {
		p_err("--plot needs gnuplot (Debian: gnuplot-nox)");
		return -ENOENT;
	}
	return 0;
}

/* Read every capture, giving each packet to fn (when not NULL); *file,
 * when given, says which capture is being read. */
static int read_traces(struct replay_report *r, trace_packet_fn fn, void *ctx,
		       __u32 *file)
{
	int i, err;

	r->trace.progress = isatty(STDERR_FILENO);
	for (i = 0; i < r->n_pcaps; i++) {
		if (file)
			*file = i;
		err = trace_read(&r->trace, r->pcaps[i], fn, ctx);
		if (err)
			return err;
	}
	if (r->trace.stats.files == r->trace.stats.files_skipped) {
		p_err("no capture with a supported link type");
		return -EINVAL;
	}
	if (!r->trace.n) {
		p_err("no TCP or UDP flow in %s%s", r->pcaps[0],
		      r->n_pcaps > 1 ? " and the other captures" : "");
		return -ENODATA;
	}
	err = replay_flows_build(&r->trace, r->key, &r->rf);
	if (!err && (r->hash_flags[0] | r->hash_flags[1]))
		err = replay_flows_hash(&r->rf, r->key, r->hash_flags);
	return err;
}

static int assign(struct replay_report *r, enum lb_algo_kind k, int phase,
		  struct replay_packets *pk, struct replay_bpf *dp)
{
	struct replay_algo *a = &r->algo[k];
	const struct lb_backend *set = r->set[phase];
	size_t n = r->n_set[phase];
	int err, m;

	a->assign[phase] = calloc(r->rf.n, sizeof(int));
	a->load[phase] = calloc(n, sizeof(struct replay_load));
	if (!a->assign[phase] || !a->load[phase])
		return -ENOMEM;
	if (dp)
		err = replay_assign_bpf(dp, &r->params, set, n, &r->rf, pk,
					a->assign[phase], &r->too_big);
	else
		err = replay_assign_model(k, &r->params, set, n, &r->rf,
					  a->assign[phase]);
	if (err)
		return err;
	replay_loads(&r->rf, a->assign[phase], n, a->load[phase]);
	for (m = 0; m < RM__MAX; m++)
		replay_spread(a->load[phase], set, n, m, &a->spread[phase][m]);
	return 0;
}

/* Every algorithm through the change sequence. */
static int run_churn(struct replay_args *a, struct replay_report *r)
{
	struct churn_report *c = r->churn;
	int err, k;

	err = read_traces(r, churn_packets_add, &c->packets, &c->packets.file) ?:
	      churn_packets_finish(&c->packets, &r->rf);
	for (k = 0; !err && k < LB__MAX; k++) {
		if (!a->algos[k])
			continue;
		err = churn_run(k, &r->params, &c->plan, &r->rf, &c->packets,
				&c->result[k]);
		if (err == -EINVAL && !a->algos_given) {
			p_info("%s cannot build every backend set; left out",
			       lb_algo_name(k));
			err = 0;
			continue;
		}
		if (err && err != -ENOMEM)
			p_err("%s: cannot build a table: %s", lb_algo_name(k),
			      strerror(-err));
		else
			r->algo[k].done = true;
	}
	return err;
}

static int run(struct replay_args *a, struct replay_report *r)
{
	struct replay_packets packets = {}, *pk = r->via_bpf ? &packets : NULL;
	struct replay_bpf *dp = NULL;
	int err, k, p;

	if (r->churn)
		return run_churn(a, r);
	err = read_traces(r, pk ? replay_packets_add : NULL, pk, NULL);
	if (err)
		goto cleanup;
	if (pk) {
		replay_packets_resolve(pk, &r->rf);
		err = replay_bpf_open(r->key, r->mtu, &dp);
		if (err)
			goto cleanup;
	}
	for (p = 0; p < PHASES(r); p++) {
		err = replay_random_band(&r->rf, r->set[p], r->n_set[p],
					 replay_random_reps(r->rf.n),
					 RANDOM_SEED, &r->random[p]);
		if (err)
			goto cleanup;
	}
	for (k = 0; k < LB__MAX; k++) {
		if (!a->algos[k])
			continue;
		for (p = 0; p < PHASES(r) && !err; p++)
			err = assign(r, k, p, pk, dp);
		if (err == -EINVAL && !a->algos_given) {
			/* Not every algorithm takes every set (weights). */
			p_info("%s cannot build this backend set; left out",
			       lb_algo_name(k));
			err = 0;
			continue;
		}
		if (err) {
			if (!dp)
				p_err("%s: cannot build the table: %s",
				      lb_algo_name(k), strerror(-err));
			goto cleanup;
		}
		if (r->change != CHANGE_NONE)
			err = replay_disruption(&r->rf, r->set[0], r->n_set[0],
						r->algo[k].assign[0], r->set[1],
						r->n_set[1], r->algo[k].assign[1],
						&r->algo[k].dis);
		if (err)
			goto cleanup;
		r->algo[k].done = true;
	}
cleanup:
	replay_bpf_close(dp);
	replay_packets_free(&packets);
	return err;
}

static int output(struct replay_args *a, struct replay_report *r)
{
	int err = 0;

	if (a->csv_dir)
		err = replay_write_csv(r, a->csv_dir);
	if (!err && a->plot_dir)
		err = replay_write_plots(r, a->plot_dir);
	if (err)
		return err;
	if (xlb_opts.json)
		return replay_print_json(r);
	replay_print_table(r, xlb_opts.instance.verbose);
	return 0;
}

int do_replay(int argc, char **argv)
{
	struct replay_report r = {};
	struct replay_args a = {};
	int err;

	err = parse_args(argc, argv, &a, &r);
	if (!err)
		err = build_before(&a, &r);
	if (!err)
		err = build_churn(&a, &r);
	if (!err)
		err = build_after(&a, &r);
	if (!err)
		err = check_via(&a, &r);
	if (!err && a.plot_dir)
		err = check_gnuplot();
	if (!err)
		err = run(&a, &r);
	if (!err)
		err = output(&a, &r);
	if (err == -ENOMEM)
		p_err("out of memory");
	replay_report_free(&r);
	free(a.listed);
	free(a.reweights);
	return err;
}
