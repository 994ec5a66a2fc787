// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xlb lookup CLIENT VIP: what the datapath does now with a packet of that
 * flow, and why (loader/inspect/lookup.h); --batch, a flow a line from
 * stdin. Changes nothing and sends nothing.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <json-c/json.h>
#include <linux/bpf.h>

#include "addr.h"
#include "cli.h"
#include "cmd.h"
#include "lookup.h"
#include "numbers.h"
#include "opts.h"

#define LOOKUP_USAGE "xlb lookup CLIENT VIP [--syn] [--size BYTES] [--dev DEV] | xlb lookup --batch [--dev DEV]"

struct lookup_args {
	bool syn;
	__u32 size;
	bool batch;
	const char *dev;
};

static int lookup_help(void)
{
	printf("Usage: xlb lookup CLIENT VIP [--syn] [--size BYTES] [--dev DEV] [-j]\n"
	       "       xlb lookup --batch [--dev DEV] [-j] < FLOWS\n"
	       "       CLIENT := ADDR:PORT ([IPV6]:PORT);  VIP := ADDR:PORT/{tcp|udp}\n"
	       "What the datapath does now with a packet of the flow from CLIENT to VIP,\n"
	       "and why: the flow hash, the VIP's slot and its owner, the flow's\n"
	       "connection-table entry (its backend, idle time, flags, and whether the\n"
	       "datapath honours it), a stateless VIP's previous owner named in GUE, the\n"
	       "backend's next hop and its neighbour entry, the verdict and the counters\n"
	       "it counts. The answer is the datapath's own: the XDP program runs the\n"
	       "packet (BPF_PROG_TEST_RUN) over the instance's maps, changing none of\n"
	       "them, and sends nothing.\n"
	       "  --syn    a TCP connection's first packet (default: a later one, ACK)\n"
	       "  --size   the IP packet's bytes (IPv4 with DF; default: headers only):\n"
	       "           whether it is answered \"too big\", and with which MTU\n"
	       "  --dev    the device the packet arrives on (default: the instance's)\n"
	       "  --batch  one flow a line from stdin, \"CLIENT VIP\" or \"CLIENT VIP syn\";\n"
	       "           one answer a line (-j: a JSON object a line)\n");
	return 0;
}

static const char *mac_str(const __u8 *m, char *buf, size_t len)
{
	snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x",
		 m[0], m[1], m[2], m[3], m[4], m[5]);
	return buf;
}

static const char *dev_str(__u32 ifindex, char *buf)
{
	if (!if_indextoname(ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "if%u", ifindex);
	return buf;
}

/* The counters the run counted, space-separated. */
static void counted_str(__u32 counted, char *buf, size_t len)
{
	size_t n = 0;
	__u32 k;

	buf[0] = '\0';
	for (k = 0; k < XLB_STAT__MAX && n < len; k++)
		if (counted & 1U << k)
			n += snprintf(buf + n, len - n, "%s%s", n ? " " : "",
				      xlb_lookup_stat_str(k));
}

static const char *ct_flags_str(__u16 f)
{
	if ((f & XLB_CT_F_ESTABLISHED) && (f & XLB_CT_F_CLOSING))
		return "established closing";
	if (f & XLB_CT_F_ESTABLISHED)
		return "established";
	if (f & XLB_CT_F_CLOSING)
		return "closing";
	return "new";
}

static void print_text(const char *client, const char *vip,
		       const struct xlb_lookup_query *q,
		       const struct xlb_lookup_answer *a)
{
	char b[XLB_ADDR_STRLEN], b2[XLB_ADDR_STRLEN], m1[18], m2[18];
	char dev[IF_NAMESIZE], counted[256], pfx[XLB_PREFIX_STRLEN];

	counted_str(a->counted, counted, sizeof(counted));
	printf("flow       %s -> %s (%s)\n", client, vip,
	       q->flow.proto != IPPROTO_TCP ? "a datagram" :
	       q->syn ? "SYN: a new connection's first packet" :
			"ACK: a packet of a connection under way");
	printf("verdict    %s: %s (counted %s)\n",
	       xlb_lookup_verdict_str(a->verdict),
	       xlb_lookup_stat_str(a->reason), counted);
	if (!a->is_vip) {
		printf("vip        none at this address, port and protocol\n");
	} else {
		printf("vip        id %u, %s%s, table-size %u\n", a->vip.id,
		       a->vip.flags & XLB_VIP_F_STATELESS ? "stateless" : "tracked",
		       a->vip.flags & XLB_VIP_F_GUE ? ", encap gue" : "",
		       a->vip.table_size);
		if (a->slot_owner)
			printf("table      hash %016llx, slot %u, owner %s (id %u)\n",
			       (unsigned long long)a->hash, a->slot,
			       xlb_addr_str(a->owner.addr, a->owner.family, b, sizeof(b)),
			       a->slot_owner);
		else
			printf("table      hash %016llx, no table\n",
			       (unsigned long long)a->hash);
		if (a->hist)
			printf("history    the slot's previous owner %s, since %u\n",
			       xlb_addr_str(a->hist_entry.addr, a->hist_entry.family,
					    b, sizeof(b)), a->hist_entry.since);
	}
	if (a->src_lists)
		printf("ranges     %s: %s%s%s\n",
		       a->src_denied ? "denied" : "allowed",
		       a->src_matched ? xlb_src_prefix_str(&a->src_match,
				pfx, sizeof(pfx)) : "no prefix matches",
		       a->src_matched ? (a->src_match.deny ?
				" in the deny list" : " in the allow list") : "",
		       !a->src_matched && a->src_denied ?
				" and the VIP has an allow list" : "");
	if (a->ct_found)
		printf("conntrack  entry in slot %u: backend %s (id %u), idle %.1f s of %.0f s, %s; %s\n",
		       a->ct_index, xlb_addr_str(a->ct_backend.addr, a->ct_backend.family, b, sizeof(b)),
		       a->ct.backend_id, a->ct_idle_ns / 1e9,
		       a->ct_timeout_ns / 1e9, ct_flags_str(a->ct.flags),
		       xlb_lookup_ct_why_str(a->ct_why));
	else if (a->is_vip && !(a->vip.flags & XLB_VIP_F_STATELESS))
		printf("conntrack  no entry%s\n",
		       a->counted & 1U << XLB_STAT_CT_INSERT ? ": this packet makes one" :
		       a->counted & 1U << XLB_STAT_CT_BYPASS ? ": none made (the insertion rate cap)" : "");
	if (a->backend_id)
		printf("backend    %s (id %u) weight %u%s%s\n",
		       xlb_addr_str(a->backend.addr, a->backend.family, b, sizeof(b)),
		       a->backend_id, a->backend.weight,
		       a->backend.weight ? "" : " (draining)",
		       a->backend.flags & XLB_BE_F_DOWN ? ", down" : "");
	if (a->answer_mtu)
		printf("answered   ICMP too big, MTU %u, out of the device it came in on\n",
		       a->answer_mtu);
	if (a->gue)
		printf("gue        previous owner %s\n", a->prev_named ?
		       xlb_addr_str(a->prev, a->prev_family, b2, sizeof(b2)) :
		       "none named");
	if (a->backend_id && !a->nh_err)
		printf("next hop   %s dev %s, neighbour %s%s\n",
		       xlb_addr_str(a->nh.addr, a->nh.family, b, sizeof(b)),
		       dev_str(a->nh.ifindex, dev), xlb_nexthop_nud_str(a->nh.nud),
		       xlb_nexthop_resolved(&a->nh) ? "" : " (unresolved: dropped)");
	else if (a->backend_id)
		printf("next hop   none: %s\n", a->nh_err == -ENETUNREACH ?
		       "no route to the backend" : strerror(-a->nh_err));
	if (a->sent)
		printf("sent       out of %s (%s) to %s from %s, route MTU %u\n",
		       dev_str(a->ifindex, dev), a->verdict == XDP_TX ? "XDP_TX" : "XDP_REDIRECT",
		       mac_str(a->dmac, m1, sizeof(m1)), mac_str(a->smac, m2, sizeof(m2)),
		       a->mtu);
	if (a->mismatch)
		printf("note       %s: the maps changed during the lookup; ask again\n",
		       a->mismatch);
}

static json_object *json_of(const char *client, const char *vip,
			    const struct xlb_lookup_query *q,
			    const struct xlb_lookup_answer *a)
{
	char b[XLB_ADDR_STRLEN], m[18], dev[IF_NAMESIZE], hash[20];
	char pfx[XLB_PREFIX_STRLEN];
	json_object *o = json_object_new_object(), *c, *x;
	__u32 k;

	json_object_object_add(o, "client", json_object_new_string(client));
	json_object_object_add(o, "vip", json_object_new_string(vip));
	json_object_object_add(o, "syn", json_object_new_boolean(q->syn));
	json_object_object_add(o, "verdict",
			       json_object_new_string(xlb_lookup_verdict_str(a->verdict)));
	json_object_object_add(o, "reason",
			       json_object_new_string(xlb_lookup_stat_str(a->reason)));
	c = json_object_new_array();
	for (k = 0; k < XLB_STAT__MAX; k++)
		if (a->counted & 1U << k)
			json_object_array_add(c, json_object_new_string(xlb_lookup_stat_str(k)));
	json_object_object_add(o, "counted", c);
	json_object_object_add(o, "is_vip", json_object_new_boolean(a->is_vip));
	if (a->is_vip) {
		x = json_object_new_object();
		json_object_object_add(x, "id", json_object_new_int64(a->vip.id));
		json_object_object_add(x, "mode", json_object_new_string(
			a->vip.flags & XLB_VIP_F_STATELESS ? "stateless" : "tracked"));
		json_object_object_add(x, "table_size", json_object_new_int64(a->vip.table_size));
		snprintf(hash, sizeof(hash), "%016llx", (unsigned long long)a->hash);
		json_object_object_add(x, "hash", json_object_new_string(hash));
		if (a->slot_owner) {
			json_object_object_add(x, "slot", json_object_new_int64(a->slot));
			json_object_object_add(x, "slot_owner", json_object_new_string(
				xlb_addr_str(a->owner.addr, a->owner.family, b, sizeof(b))));
			json_object_object_add(x, "slot_owner_id", json_object_new_int64(a->slot_owner));
		}
		if (a->hist)
			json_object_object_add(x, "slot_previous_owner", json_object_new_string(
				xlb_addr_str(a->hist_entry.addr, a->hist_entry.family, b, sizeof(b))));
		json_object_object_add(o, "table", x);
	}
	if (a->src_lists) {
		x = json_object_new_object();
		json_object_object_add(x, "denied", json_object_new_boolean(a->src_denied));
		json_object_object_add(x, "match", a->src_matched ?
			json_object_new_string(xlb_src_prefix_str(&a->src_match,
				pfx, sizeof(pfx))) : NULL);
		json_object_object_add(x, "list", a->src_matched ?
			json_object_new_string(a->src_match.deny ? "deny" : "allow") : NULL);
		json_object_object_add(o, "source_ranges", x);
	}
	if (a->ct_found) {
		x = json_object_new_object();
		json_object_object_add(x, "slot", json_object_new_int64(a->ct_index));
		json_object_object_add(x, "backend", json_object_new_string(
			xlb_addr_str(a->ct_backend.addr, a->ct_backend.family, b, sizeof(b))));
		json_object_object_add(x, "backend_id", json_object_new_int64(a->ct.backend_id));
		json_object_object_add(x, "idle_ms", json_object_new_int64(a->ct_idle_ns / 1000000));
		json_object_object_add(x, "timeout_s", json_object_new_int64(a->ct_timeout_ns / 1000000000));
		json_object_object_add(x, "flags", json_object_new_string(ct_flags_str(a->ct.flags)));
		json_object_object_add(x, "honoured",
				       json_object_new_boolean(a->ct_why == XLB_LOOKUP_CT_HONOURED));
		json_object_object_add(x, "why", json_object_new_string(xlb_lookup_ct_why_str(a->ct_why)));
		json_object_object_add(o, "conntrack", x);
	}
	if (a->backend_id) {
		x = json_object_new_object();
		json_object_object_add(x, "id", json_object_new_int64(a->backend_id));
		json_object_object_add(x, "addr", json_object_new_string(
			xlb_addr_str(a->backend.addr, a->backend.family, b, sizeof(b))));
		json_object_object_add(x, "weight", json_object_new_int64(a->backend.weight));
		json_object_object_add(x, "down", json_object_new_boolean(a->backend.flags & XLB_BE_F_DOWN));
		json_object_object_add(o, "backend", x);
	}
	if (a->answer_mtu)
		json_object_object_add(o, "answer_mtu", json_object_new_int64(a->answer_mtu));
	if (a->gue)
		json_object_object_add(o, "gue_previous_owner", a->prev_named ?
			json_object_new_string(xlb_addr_str(a->prev, a->prev_family, b, sizeof(b))) :
			NULL);
	if (a->backend_id && !a->nh_err) {
		x = json_object_new_object();
		json_object_object_add(x, "addr", json_object_new_string(
			xlb_addr_str(a->nh.addr, a->nh.family, b, sizeof(b))));
		json_object_object_add(x, "dev", json_object_new_string(dev_str(a->nh.ifindex, dev)));
		json_object_object_add(x, "neighbour", json_object_new_string(xlb_nexthop_nud_str(a->nh.nud)));
		json_object_object_add(x, "resolved", json_object_new_boolean(xlb_nexthop_resolved(&a->nh)));
		json_object_object_add(o, "next_hop", x);
	}
	if (a->sent) {
		x = json_object_new_object();
		json_object_object_add(x, "dev", json_object_new_string(dev_str(a->ifindex, dev)));
		json_object_object_add(x, "dst_mac", json_object_new_string(mac_str(a->dmac, m, sizeof(m))));
		json_object_object_add(x, "src_mac", json_object_new_string(mac_str(a->smac, m, sizeof(m))));
		json_object_object_add(x, "mtu", json_object_new_int64(a->mtu));
		json_object_object_add(o, "sent", x);
	}
	if (a->mismatch)
		json_object_object_add(o, "mismatch", json_object_new_string(a->mismatch));
	return o;
}

/* Look one flow up and print the answer. 0 or -errno after p_err(). */
static int one(struct xlb_lookup *lk, const char *client, const char *vip,
	       bool syn, __u32 size, const char *where)
{
	struct xlb_lookup_answer a;
	struct xlb_lookup_query q = {};
	int err;

	err = xlb_flow_args(client, vip, where, &q.flow);
	if (err)
		return err;
	q.syn = syn && q.flow.proto == IPPROTO_TCP;
	q.size = size;
	err = xlb_lookup_flow(lk, &q, &a);
	if (err == -EINVAL)
		p_err("%sbad --size %u: an IP packet of this flow from %u to %u bytes",
		      where, size, (q.flow.family == XLB_AF_INET6 ? 40 : 20) +
		      (q.flow.proto == IPPROTO_TCP ? 20 : 8), XLB_LOOKUP_SIZE_MAX);
	if (err)
		return err;
	if (xlb_opts.json)
		xlb_json_print(json_of(client, vip, &q, &a));
	else
		print_text(client, vip, &q, &a);
	return 0;
}

/* One flow a line: "CLIENT VIP [syn]". */
static int batch(struct xlb_lookup *lk)
{
	char line[512], where[32], *client, *vip, *extra, *save;
	unsigned long n = 0;
	bool syn;
	int err;

	while (fgets(line, sizeof(line), stdin)) {
		n++;
		snprintf(where, sizeof(where), "line %lu: ", n);
		client = strtok_r(line, " \t\r\n", &save);
		if (!client || client[0] == '#')
			continue;
		vip = strtok_r(NULL, " \t\r\n", &save);
		extra = strtok_r(NULL, " \t\r\n", &save);
		syn = extra && !strcmp(extra, "syn");
		if (!vip || (extra && !syn) || strtok_r(NULL, " \t\r\n", &save)) {
			p_err("line %lu: expected CLIENT VIP [syn]", n);
			return -EINVAL;
		}
		err = one(lk, client, vip, syn, 0, where);
		if (err)
			return err;
		if (!xlb_opts.json)
			printf("\n");
	}
	return 0;
}

static int parse_size(const char *opt, const char *val, void *dest)
{
	const char *why;

	if (xlb_u32_parse(val, 1, XLB_LOOKUP_SIZE_MAX, dest, &why)) {
		p_err("bad %s '%s': %s", opt, val, why);
		return -EINVAL;
	}
	return 0;
}

int do_lookup(int argc, char **argv)
{
	struct lookup_args la = {};
	const struct xlb_opt opts[] = {
		XLB_OPT_FLAG("--syn", &la.syn),
		XLB_OPT_FLAG("--batch", &la.batch),
		XLB_OPT_FN("--size", parse_size, &la.size),
		XLB_OPT_FN("--dev", xlb_opt_str, &la.dev),
		{ NULL },
	};
	struct xlb_instance inst;
	struct xlb_lookup *lk = NULL;
	char dev[IF_NAMESIZE];
	int err, ifindex;

	err = xlb_cmd_args(opts, &argc, argv, lookup_help, -1, LOOKUP_USAGE);
	if (err)
		return err;
	if (la.batch ? argc != 0 : argc != 2) {
		p_err(la.batch ? "--batch reads the flows from stdin, not the command line; usage: %s" :
			         "expected CLIENT and VIP; usage: %s", LOOKUP_USAGE);
		return -EINVAL;
	}
	if (la.batch && (la.syn || la.size)) {
		p_err("--syn and --size apply to one flow; in --batch, end a line with \"syn\"");
		return -EINVAL;
	}
	xlb_quiet_libbpf();
	err = xlb_instance_open(&inst, &xlb_opts.instance, XLB_LOCK_READ);
	if (err)
		return err;
	/* The FIB and the neighbours asked are this namespace's. */
	err = xlb_instance_here(&inst, true);
	if (err)
		goto out;
	if (!la.dev) {
		err = xlb_instance_dev(&inst, dev, sizeof(dev));
		if (err <= 0) {
			p_err("the instance in %s runs on no device of this network namespace: say with --dev which device the packet arrives on",
			      inst.dir);
			err = err ?: -ENODEV;
			goto out;
		}
		la.dev = dev;
	}
	ifindex = if_nametoindex(la.dev);
	if (!ifindex) {
		p_err("no device %s in this network namespace", la.dev);
		err = -ENODEV;
		goto out;
	}
	err = xlb_lookup_open(&inst, ifindex, &lk);
	/* The lookups hold no lock: a long --batch holds up no writer. */
	xlb_instance_close(&inst);
	if (!err)
		err = la.batch ? batch(lk) : one(lk, argv[0], argv[1], la.syn, la.size, "");
	xlb_lookup_close(lk);
	return err;
out:
	xlb_instance_close(&inst);
	return err;
}
