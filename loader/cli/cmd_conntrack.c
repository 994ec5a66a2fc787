// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xlb conntrack { list | count | del | flush | help }: the connection
 * table's entries (bpf/conntrack.h, loader/instance/conntrack_map.h); and
 * `xlb backend wait-drained`, which waits for a backend's entries to end.
 *
 * The instance is locked only while its VIPs and backends are read; the
 * table itself is walked through a mapping of it with the datapath's
 * seqlock, so that listing 67 million entries into a slow pipe holds up
 * no xlb command and no packet.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <json-c/json.h>

#include "addr.h"
#include "cli.h"
#include "cmd.h"
#include "conntrack_map.h"
#include "ct_entry.h"
#include "numbers.h"
#include "opts.h"
#include "state.h"

#define LIST_USAGE  "xlb conntrack list [--vip VIP] [--backend ADDR] [--client PREFIX] [--all]"
#define COUNT_USAGE "xlb conntrack count [--vip VIP]"
#define DEL_USAGE   "xlb conntrack del CLIENT VIP"
#define FLUSH_USAGE "xlb conntrack flush { --vip VIP | --backend ADDR | --all }"
#define WAIT_USAGE  "xlb backend wait-drained VIP ADDR [--timeout S]"

static int conntrack_help(void)
{
	printf("Usage: " LIST_USAGE "\n"
	       "       " COUNT_USAGE "\n"
	       "       " DEL_USAGE "\n"
	       "       " FLUSH_USAGE "\n"
	       "       " WAIT_USAGE "\n"
	       "       xlb conntrack help\n"
	       "CLIENT := ADDR:PORT ([IPV6]:PORT);  VIP := ADDR:PORT/{tcp|udp}\n"
	       "list   the live entries (--all: ended ones too), one a line: client,\n"
	       "       VIP, backend, idle time, flags; filtered by VIP, backend address\n"
	       "       and client prefix. -j: a JSON array, streamed.\n"
	       "count  live entries per VIP and backend: the connections each backend\n"
	       "       still holds, which a drain waits for.\n"
	       "del    end one flow's entry; flush ends those of a VIP, of a backend, or\n"
	       "       all. Those flows follow the VIP's table from their next packet:\n"
	       "       to another backend where the table has changed since they began,\n"
	       "       which resets a TCP connection it does not know.\n"
	       "wait-drained  wait until the backend holds no live entry (--timeout S,\n"
	       "       default 300; 0: just say); exit 1 when it still holds some.\n"
	       "The table is read without locking the instance or the datapath; entries\n"
	       "change meanwhile, so counts are of the moment the walk passed.\n");
	return 0;
}

/* What the table's entries are read against: the settings and backend
 * records, read under the instance's lock, and a descriptor of the table
 * of its own that outlives the lock. */
struct snapshot {
	struct xlb_state *st;
	int ct_fd;
	__u64 now;
};

static int snapshot_take(struct snapshot *s)
{
	struct xlb_instance inst;
	struct timespec ts;
	int err;

	s->st = NULL;
	s->ct_fd = -1;
	err = xlb_state_open(&inst, &xlb_opts.instance, &s->st);
	if (err)
		return err;
	s->ct_fd = dup(inst.conntrack_fd);
	if (s->ct_fd < 0) {
		err = -errno;
		p_err("cannot hold the connection table: %s", strerror(-err));
	}
	xlb_instance_close(&inst);
	/* The datapath's clock (bpf/clock.h). */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	s->now = (__u64)ts.tv_sec * XLB_NS_PER_S + ts.tv_nsec;
	if (err) {
		xlb_state_free(s->st);
		s->st = NULL;
	}
	return err;
}

static void snapshot_drop(struct snapshot *s)
{
	if (s->ct_fd >= 0)
		close(s->ct_fd);
	xlb_state_free(s->st);
}

/* Is e live, as the datapath would still use it? Its backend then. */
static const struct xlb_backend *live_backend(const struct snapshot *s,
					      const struct xlb_flow *flow,
					      const struct xlb_ct_entry *e)
{
	return xlb_ct_live(flow, e, &s->st->config, s->st->backends, s->now) ?
	       &s->st->backends[e->backend_id] : NULL;
}

/* The filters of list and flush; a zero family: not filtered. */
struct filter {
	struct xlb_vip_key vip;
	bool by_vip;
	__be32 backend[4];
	__u8 backend_family;
	__be32 client[4];
	__u8 client_family, client_len;
	bool all;
	const struct snapshot *snap;
	/* list's */
	bool first;
	__u64 shown;
};

static bool in_prefix(const __be32 *a, const __be32 *p, __u8 len)
{
	const __u8 *x = (const __u8 *)a, *y = (const __u8 *)p;
	__u8 i, mask;

	for (i = 0; i < len / 8; i++)
		if (x[i] != y[i])
			return false;
	if (len % 8 == 0)
		return true;
	mask = 0xff << (8 - len % 8);
	return (x[i] & mask) == (y[i] & mask);
}

/* Is the flow the filter's VIP's? An all-port VIP's flows are those of
 * its address and protocol that its own backends hold (a VIP of their
 * port would have taken them). */
static bool vip_matches(const struct filter *f, const struct xlb_flow *flow,
			const struct xlb_ct_entry *e)
{
	const struct xlb_state_vip *v;

	if (flow->family != f->vip.family ||
	    memcmp(flow->dst, f->vip.addr, sizeof(flow->dst)))
		return false;
	if (!(f->vip.proto & XLB_VIP_PROTO_ALL_PORTS))
		return flow->proto == f->vip.proto && flow->dport == f->vip.port;
	v = xlb_state_vip_find(f->snap->st, &f->vip);
	return flow->proto == (f->vip.proto & ~XLB_VIP_PROTO_ALL_PORTS) && v &&
	       e->backend_id < XLB_MAX_BACKENDS &&
	       f->snap->st->backends[e->backend_id].vip_id == v->vip.id;
}

static bool matches(const struct filter *f, const struct xlb_flow *flow,
		    const struct xlb_ct_entry *e)
{
	const struct xlb_backend *be;

	if (f->by_vip && !vip_matches(f, flow, e))
		return false;
	if (f->client_family && (flow->family != f->client_family ||
				 !in_prefix(flow->src, f->client, f->client_len)))
		return false;
	if (f->backend_family) {
		if (e->backend_id >= XLB_MAX_BACKENDS)
			return false;
		be = &f->snap->st->backends[e->backend_id];
		if (!(be->flags & XLB_BE_F_IN_USE) || be->gen != e->gen ||
		    be->family != f->backend_family ||
		    memcmp(be->addr, f->backend, sizeof(be->addr)))
			return false;
	}
	return true;
}

static int parse_vip_opt(const char *opt, const char *val, void *dest)
{
	struct filter *f = dest;
	const char *why;

	if (xlb_vip_parse(val, &f->vip, &why)) {
		p_err("bad %s '%s': %s", opt, val, why);
		return -EINVAL;
	}
	f->by_vip = true;
	return 0;
}

static int parse_backend_opt(const char *opt, const char *val, void *dest)
{
	struct filter *f = dest;
	const char *why;

	if (xlb_addr_parse(val, f->backend, &f->backend_family, &why)) {
		p_err("bad %s '%s': %s", opt, val, why);
		return -EINVAL;
	}
	return 0;
}

static int parse_client_opt(const char *opt, const char *val, void *dest)
{
	struct filter *f = dest;
	const char *why;

	if (xlb_prefix_parse(val, f->client, &f->client_family, &f->client_len, &why)) {
		p_err("bad %s '%s': %s", opt, val, why);
		return -EINVAL;
	}
	return 0;
}

static const char *flags_str(__u16 flags)
{
	if ((flags & XLB_CT_F_ESTABLISHED) && (flags & XLB_CT_F_CLOSING))
		return "established,closing";
	if (flags & XLB_CT_F_ESTABLISHED)
		return "established";
	return flags & XLB_CT_F_CLOSING ? "closing" : "new";
}

static int list_one(__u32 index, const struct xlb_flow *flow,
		    const struct xlb_ct_entry *e, void *ctx)
{
	struct filter *f = ctx;
	const struct xlb_backend *be = live_backend(f->snap, flow, e);
	char client[XLB_VIP_STRLEN], vip[XLB_VIP_STRLEN], addr[XLB_ADDR_STRLEN];
	struct xlb_vip_key key = {
		.port = flow->dport, .proto = flow->proto, .family = flow->family,
	};
	const struct xlb_backend *rec;
	double idle;

	if ((!be && !f->all) || !matches(f, flow, e))
		return 0;
	memcpy(key.addr, flow->dst, sizeof(key.addr));
	xlb_vip_str(&key, vip, sizeof(vip));
	xlb_addr_str(flow->src, flow->family, addr, sizeof(addr));
	snprintf(client, sizeof(client), flow->family == XLB_AF_INET6 ? "[%s]:%u" : "%s:%u",
		 addr, ntohs(flow->sport));
	rec = e->backend_id < XLB_MAX_BACKENDS ? &f->snap->st->backends[e->backend_id] : NULL;
	if (rec && (rec->flags & XLB_BE_F_IN_USE) && rec->gen == e->gen)
		xlb_addr_str(rec->addr, rec->family, addr, sizeof(addr));
	else
		snprintf(addr, sizeof(addr), "gone");
	idle = f->snap->now > e->last_seen_ns ? (f->snap->now - e->last_seen_ns) / 1e9 : 0;
	f->shown++;
	if (xlb_opts.json) {
		printf("%s\n{\"client\":\"%s\",\"vip\":\"%s\",\"backend\":\"%s\",\"backend_id\":%u,"
		       "\"idle_s\":%.1f,\"flags\":\"%s\",\"live\":%s,\"slot\":%u}",
		       f->first ? "" : ",", client, vip, addr, e->backend_id, idle,
		       flags_str(e->flags), be ? "true" : "false", index);
		f->first = false;
	} else {
		printf("%s %s backend %s idle %.1fs %s%s\n", client, vip, addr, idle,
		       flags_str(e->flags), be ? "" : " ended");
	}
	/* A reader gone (xlb conntrack list | head) ends the walk. */
	return ferror(stdout) ? -EPIPE : 0;
}

static int conntrack_list(int argc, char **argv)
{
	struct filter f = { .first = true };
	const struct xlb_opt opts[] = {
		XLB_OPT_FN("--vip", parse_vip_opt, &f),
		XLB_OPT_FN("--backend", parse_backend_opt, &f),
		XLB_OPT_FN("--client", parse_client_opt, &f),
		XLB_OPT_FLAG("--all", &f.all),
		{ NULL },
	};
	struct snapshot s;
	int err;

	err = xlb_cmd_args(opts, &argc, argv, conntrack_help, 0, LIST_USAGE);
	if (err)
		return err;
	err = snapshot_take(&s);
	if (err)
		return err;
	f.snap = &s;
	if (xlb_opts.json)
		printf("[");
	err = xlb_ct_walk(s.ct_fd, list_one, &f);
	if (xlb_opts.json)
		printf("\n]\n");
	if (err == -EPIPE)
		err = 0;
	else if (err)
		p_err("cannot read the connection table: %s", strerror(-err));
	snapshot_drop(&s);
	return err;
}

/* Live entries per backend id, counted by a walk. */
struct counts {
	const struct snapshot *snap;
	__u64 flows[XLB_MAX_BACKENDS];
	__u64 live, entries;
};

static int count_one(__u32 index, const struct xlb_flow *flow,
		     const struct xlb_ct_entry *e, void *ctx)
{
	struct counts *c = ctx;

	(void)index;
	c->entries++;
	if (live_backend(c->snap, flow, e)) {
		c->flows[e->backend_id]++;
		c->live++;
	}
	return 0;
}

static int count_all(struct snapshot *s, struct counts *c)
{
	int err;

	memset(c, 0, sizeof(*c));
	c->snap = s;
	err = xlb_ct_walk(s->ct_fd, count_one, c);
	if (err)
		p_err("cannot read the connection table: %s", strerror(-err));
	return err;
}

static int conntrack_count(int argc, char **argv)
{
	struct filter f = {};
	const struct xlb_opt opts[] = {
		XLB_OPT_FN("--vip", parse_vip_opt, &f),
		{ NULL },
	};
	char vname[XLB_VIP_STRLEN], bname[XLB_ADDR_STRLEN];
	json_object *arr = NULL, *o;
	struct counts *c;
	struct snapshot s;
	__u32 v, id;
	int err;

	err = xlb_cmd_args(opts, &argc, argv, conntrack_help, 0, COUNT_USAGE);
	if (err)
		return err;
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	err = snapshot_take(&s);
	if (err)
		goto out_free;
	if (f.by_vip && !xlb_state_vip_find(s.st, &f.vip)) {
		p_err("no VIP %s", xlb_vip_str(&f.vip, vname, sizeof(vname)));
		err = -ENOENT;
		goto out;
	}
	err = count_all(&s, c);
	if (err)
		goto out;
	if (xlb_opts.json)
		arr = json_object_new_array();
	for (v = 0; v < s.st->n_vips; v++) {
		const struct xlb_state_vip *sv = &s.st->vips[v];

		if (f.by_vip && memcmp(&sv->key, &f.vip, sizeof(f.vip)))
			continue;
		xlb_vip_str(&sv->key, vname, sizeof(vname));
		for (id = 1; id < XLB_MAX_BACKENDS; id++) {
			const struct xlb_backend *be = &s.st->backends[id];

			if (!(be->flags & XLB_BE_F_IN_USE) || be->vip_id != sv->vip.id)
				continue;
			xlb_addr_str(be->addr, be->family, bname, sizeof(bname));
			if (!arr) {
				printf("vip %s backend %s flows %llu%s\n", vname, bname,
				       (unsigned long long)c->flows[id],
				       be->weight ? "" : " draining");
				continue;
			}
			o = json_object_new_object();
			json_object_object_add(o, "vip", json_object_new_string(vname));
			json_object_object_add(o, "backend", json_object_new_string(bname));
			json_object_object_add(o, "flows", json_object_new_int64(c->flows[id]));
			json_object_object_add(o, "draining", json_object_new_boolean(!be->weight));
			json_object_array_add(arr, o);
		}
	}
	if (arr)
		xlb_json_print(arr);
out:
	snapshot_drop(&s);
out_free:
	free(c);
	return err;
}

static int conntrack_del(int argc, char **argv)
{
	char vname[XLB_VIP_STRLEN];
	struct xlb_flow flow;
	struct snapshot s;
	int err;

	err = xlb_cmd_args(NULL, &argc, argv, conntrack_help, 2, DEL_USAGE);
	if (err)
		return err;
	err = xlb_flow_args(argv[0], argv[1], "", &flow);
	if (err)
		return err;
	err = snapshot_take(&s);
	if (err)
		return err;
	err = xlb_ct_end_flow(s.ct_fd, s.st->config.ct_seed, &flow);
	if (err == -ENOENT)
		p_err("no entry for %s -> %s", argv[0], argv[1]);
	else if (err)
		p_err("cannot change the connection table: %s", strerror(-err));
	else if (xlb_opts.json)
		printf("{\"ended\":1}\n");
	else
		printf("ended the entry of %s -> %s: its next packet goes by %s's table\n",
		       argv[0], argv[1], xlb_vip_str(&(struct xlb_vip_key){
			       .port = flow.dport, .proto = flow.proto, .family = flow.family,
			       .addr = { flow.dst[0], flow.dst[1], flow.dst[2], flow.dst[3] } },
			       vname, sizeof(vname)));
	snapshot_drop(&s);
	return err;
}

static bool flush_match(const struct xlb_flow *flow, const struct xlb_ct_entry *e,
			void *ctx)
{
	return matches(ctx, flow, e);
}

static int conntrack_flush(int argc, char **argv)
{
	struct filter f = {};
	const struct xlb_opt opts[] = {
		XLB_OPT_FN("--vip", parse_vip_opt, &f),
		XLB_OPT_FN("--backend", parse_backend_opt, &f),
		XLB_OPT_FLAG("--all", &f.all),
		{ NULL },
	};
	struct snapshot s;
	__u64 ended = 0;
	int err;

	err = xlb_cmd_args(opts, &argc, argv, conntrack_help, 0, FLUSH_USAGE);
	if (err)
		return err;
	if (f.all == (f.by_vip || f.backend_family)) {
		p_err("say which entries to end: --vip VIP, --backend ADDR (or both), or --all; usage: %s",
		      FLUSH_USAGE);
		return -EINVAL;
	}
	err = snapshot_take(&s);
	if (err)
		return err;
	f.snap = &s;
	err = xlb_ct_end(s.ct_fd, flush_match, &f, &ended);
	if (err)
		p_err("cannot change the connection table: %s", strerror(-err));
	else if (xlb_opts.json)
		printf("{\"ended\":%llu}\n", (unsigned long long)ended);
	else
		printf("ended %llu entries: those flows follow their VIP's table from their next packet\n",
		       (unsigned long long)ended);
	snapshot_drop(&s);
	return err;
}

int do_conntrack(int argc, char **argv)
{
	static const struct xlb_verb verbs[] = {
		{ "list", "ls", conntrack_list },
		{ "count", NULL, conntrack_count },
		{ "del", "delete", conntrack_del },
		{ "flush", NULL, conntrack_flush },
		{ NULL },
	};

	return xlb_dispatch("conntrack", verbs, conntrack_help, argc, argv);
}

int xlb_backend_wait_drained(int argc, char **argv)
{
	__u64 timeout = 300, waited = 0;
	__u32 id;
	const struct xlb_opt opts[] = {
		XLB_OPT_FN("--timeout", xlb_opt_u64, &timeout),
		{ NULL },
	};
	struct xlb_state_vip *v;
	struct xlb_vip_key key;
	__u8 family;
	__be32 addr[4];
	struct counts *c;
	struct snapshot s;
	int err;

	err = xlb_cmd_args(opts, &argc, argv, conntrack_help, 2, WAIT_USAGE);
	if (err)
		return err;
	err = xlb_vip_arg(argv[0], &key) ?: xlb_addr_arg(argv[1], addr, &family);
	if (err)
		return err;
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (;;) {
		err = snapshot_take(&s);
		if (err)
			break;
		v = xlb_state_vip_find(s.st, &key);
		id = v ? xlb_state_backend_find(s.st, v->vip.id, addr, family) : 0;
		if (!v || !id) {
			p_err("no backend %s of VIP %s", argv[1], argv[0]);
			err = -ENOENT;
		} else {
			err = count_all(&s, c);
		}
		snapshot_drop(&s);
		if (err)
			break;
		if (!c->flows[id]) {
			if (xlb_opts.json)
				printf("{\"backend\":\"%s\",\"vip\":\"%s\",\"flows\":0,\"waited_s\":%llu}\n",
				       argv[1], argv[0], (unsigned long long)waited);
			else
				printf("%s holds no live entry of %s\n", argv[1], argv[0]);
			break;
		}
		if (waited >= timeout) {
			p_err("%s still holds %llu live entries of %s after %llu s", argv[1],
			      (unsigned long long)c->flows[id], argv[0],
			      (unsigned long long)waited);
			err = -ETIMEDOUT;
			break;
		}
		if (!xlb_opts.json)
			printf("%s holds %llu live entries of %s\n", argv[1],
			       (unsigned long long)c->flows[id], argv[0]);
		fflush(stdout);
		sleep(1);
		waited++;
	}
	free(c);
	return err;
}
