// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xlb host { setup | show | stats | teardown | help }: a backend host set
 * up for the balancers in one command, and undone in one (loader/host/).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "addr.h"
#include "cli.h"
#include "cmd.h"
#include "gue.h"
#include "host.h"
#include "host_decap.h"
#include "host_record.h"
#include "opts.h"

#define SETUP_USAGE "xlb host setup DEV --vip ADDR[,ADDR...] [--decap xdp|kernel] [--gue-port P] [--balancers PREFIX[,...]] [--fleet PREFIX[,...]] [--egress IFACE[,...]] [--local ADDR[,...]]"
#define SHOW_USAGE "xlb host show"
#define STATS_USAGE "xlb host stats [--prometheus]"
#define TEARDOWN_USAGE "xlb host teardown DEV"

#define STAT_NAME(name, str) str,
static const char *const stat_names[XLB_DECAP__MAX] = {
	XLB_DECAP_STAT_LIST(STAT_NAME)
};
#undef STAT_NAME

static int host_help(void)
{
	printf("Usage: " SETUP_USAGE "\n"
	       "       xlb host show            (-j: JSON)\n"
	       "       " STATS_USAGE "  (-j: JSON)\n"
	       "       " TEARDOWN_USAGE "\n"
	       "       xlb host help\n"
	       "Set this network namespace up as a backend of xlb's balancers, on DEV,\n"
	       "the device they send to (docs/backend.md):\n"
	       "  --vip ADDR        the VIPs served here: put on lo (/32, /128) unless\n"
	       "                    there already; DEV answers no ARP for them\n"
	       "  --decap xdp       decap.bpf.o on DEV (the default): it takes tunnelled\n"
	       "                    packets to DEV's global addresses (and --local's)\n"
	       "                    whose inner destination is a VIP, nothing else\n"
	       "  --decap kernel    the kernel's ipip and ip6tnl devices in external\n"
	       "                    mode (%s, %s) instead\n"
	       "  --balancers PREFIX  the balancers' outer sources: tunnelled packets\n"
	       "                    from elsewhere are dropped (drop_source)\n"
	       "  --fleet PREFIX    the backends a GUE packet may be passed on to (the\n"
	       "                    second chance); without it nothing is. Turns on\n"
	       "                    forwarding on lo (never on DEV), and gives each\n"
	       "                    member named by its address a managed neighbour entry\n"
	       "  --egress IFACE    interfaces besides the receiving one that a passed-on\n"
	       "                    packet may leave by\n"
	       "  --gue-port P      the GUE port (default %u), as the balancers' gue-port\n"
	       "  --local ADDR      a tunnel address besides DEV's own\n"
	       "Lists: repeat the option or separate by commas. Everything is checked\n"
	       "before anything changes. What setup changed, and each value it replaced,\n"
	       "is recorded in %s/host-ns<inode>.json; run again, it changes\n"
	       "only what differs (the same arguments: nothing); teardown undoes exactly\n"
	       "what it recorded. Another DEV or --decap needs a teardown first.\n"
	       "show: what is in effect and what setup changed; stats: decap.bpf.o's\n"
	       "counters summed over CPUs (names: include/decap.h, docs/second-chance.md).\n",
	       XLB_HOST_IPIP_DEV, XLB_HOST_IP6TNL_DEV, XLB_GUE_DEFAULT_PORT,
	       XLB_HOST_RUN_DIR);
	return 0;
}

/* ---- setup's options: each appends to the spec ---- */

/* For each comma-separated item of value: one(opt, item, spec). */
static int each_item(const char *opt, const char *value, struct xlb_host_spec *spec,
		     int (*one)(const char *opt, const char *item,
				struct xlb_host_spec *spec))
{
	char buf[1024], *item, *save = NULL;
	int err = 0;

	if (!*value || strlen(value) >= sizeof(buf)) {
		p_err(*value ? "%s: list too long; repeat the option" :
		      "%s needs a value", opt);
		return -EINVAL;
	}
	strcpy(buf, value);
	for (item = strtok_r(buf, ",", &save); item && !err;
	     item = strtok_r(NULL, ",", &save))
		err = one(opt, item, spec);
	return err;
}

static int too_many(const char *opt, unsigned int max)
{
	p_err("too many %s: at most %u", opt, max);
	return -E2BIG;
}

/* IPv4's link-local 169.254/16 (xlb_addr_parse() refuses IPv6's). */
static bool link_local(const __be32 *addr, __u8 family)
{
	const __u8 *b = (const __u8 *)addr;

	return family == XLB_AF_INET && b[0] == 169 && b[1] == 254;
}

/* An address into set (each once). */
static int add_addr(const char *opt, const char *item, struct xlb_host_addr *set,
		    __u32 *n, __u32 max)
{
	struct xlb_host_addr a = {};
	const char *why;
	__u32 i;

	if (xlb_addr_parse(item, a.addr, &a.family, &why)) {
		p_err("bad %s '%s': %s", opt, item, why);
		return -EINVAL;
	}
	/* A tunnel address is the source of what this host passes on: an
	 * address of one link only would be valid on none of the others. */
	if (link_local(a.addr, a.family)) {
		p_err("bad %s '%s': link-local address: give a routable one", opt, item);
		return -EINVAL;
	}
	for (i = 0; i < *n; i++)
		if (xlb_host_addr_eq(&set[i], &a))
			return 0;
	if (*n == max)
		return too_many(opt, max);
	set[(*n)++] = a;
	return 0;
}

static int add_prefix(const char *opt, const char *item,
		      struct xlb_host_prefix *set, __u32 *n)
{
	struct xlb_host_prefix p = {};
	const char *why;
	__u32 i;

	if (xlb_prefix_parse(item, p.addr, &p.family, &p.len, &why)) {
		p_err("bad %s '%s': %s", opt, item, why);
		return -EINVAL;
	}
	for (i = 0; i < *n; i++)
		if (!memcmp(&set[i], &p, sizeof(p)))
			return 0;
	if (*n == XLB_DECAP_PREFIXES_MAX)
		return too_many(opt, XLB_DECAP_PREFIXES_MAX);
	set[(*n)++] = p;
	return 0;
}

static int one_vip(const char *opt, const char *item, struct xlb_host_spec *s)
{
	return add_addr(opt, item, s->vips, &s->n_vips, XLB_DECAP_ADDRS_MAX);
}

static int one_local(const char *opt, const char *item, struct xlb_host_spec *s)
{
	return add_addr(opt, item, s->locals, &s->n_locals, XLB_DECAP_ADDRS_MAX);
}

static int one_balancer(const char *opt, const char *item, struct xlb_host_spec *s)
{
	return add_prefix(opt, item, s->balancers, &s->n_balancers);
}

static int one_fleet(const char *opt, const char *item, struct xlb_host_spec *s)
{
	return add_prefix(opt, item, s->fleet, &s->n_fleet);
}

static int one_egress(const char *opt, const char *item, struct xlb_host_spec *s)
{
	__u32 i;

	if (strlen(item) >= IF_NAMESIZE) {
		p_err("bad %s '%s': not an interface name", opt, item);
		return -EINVAL;
	}
	for (i = 0; i < s->n_egress; i++)
		if (!strcmp(s->egress[i], item))
			return 0;
	if (s->n_egress == XLB_DECAP_EGRESS_MAX)
		return too_many(opt, XLB_DECAP_EGRESS_MAX);
	strcpy(s->egress[s->n_egress++], item);
	return 0;
}

static int opt_vip(const char *opt, const char *v, void *d) { return each_item(opt, v, d, one_vip); }
static int opt_local(const char *opt, const char *v, void *d) { return each_item(opt, v, d, one_local); }
static int opt_balancers(const char *opt, const char *v, void *d) { return each_item(opt, v, d, one_balancer); }
static int opt_fleet(const char *opt, const char *v, void *d) { return each_item(opt, v, d, one_fleet); }
static int opt_egress(const char *opt, const char *v, void *d) { return each_item(opt, v, d, one_egress); }

static int opt_decap(const char *opt, const char *value, void *dest)
{
	struct xlb_host_spec *s = dest;

	if (!strcmp(value, "xdp")) {
		s->decap = XLB_HOST_DECAP_XDP;
	} else if (!strcmp(value, "kernel")) {
		s->decap = XLB_HOST_DECAP_KERNEL;
	} else {
		p_err("bad %s '%s': xdp or kernel", opt, value);
		return -EINVAL;
	}
	return 0;
}

static int opt_port(const char *opt, const char *value, void *dest)
{
	struct xlb_host_spec *s = dest;
	const char *why;
	__u32 port;

	if (xlb_u32_parse(value, 1, 65535, &port, &why)) {
		p_err("bad %s '%s': a port 1..65535", opt, value);
		return -EINVAL;
	}
	s->gue_port = port;
	return 0;
}

/* What the kernel's devices cannot do, refused by name. */
static int check_kernel(const struct xlb_host_spec *s)
{
	const struct {
		bool given;
		const char *opt, *why;
	} xdp_only[] = {
		{ s->n_fleet, "--fleet", "give no second chance" },
		{ s->n_balancers, "--balancers", "take tunnelled packets from any source" },
		{ s->gue_port, "--gue-port", "take no GUE" },
		{ s->n_egress, "--egress", "pass nothing on" },
		{ s->n_locals, "--local", "take tunnelled packets to any address" },
	};
	size_t i;

	for (i = 0; i < sizeof(xdp_only) / sizeof(xdp_only[0]); i++) {
		if (xdp_only[i].given) {
			p_err("%s needs --decap xdp: the kernel's tunnel devices %s",
			      xdp_only[i].opt, xdp_only[i].why);
			return -EINVAL;
		}
	}
	return 0;
}

static int host_setup(int argc, char **argv)
{
	struct xlb_host_spec *spec = calloc(1, sizeof(*spec));
	struct xlb_host *host = NULL;
	const struct xlb_opt opts[] = {
		{ "--vip", NULL, opt_vip, spec, true },
		{ "--local", NULL, opt_local, spec, true },
		{ "--balancers", NULL, opt_balancers, spec, true },
		{ "--fleet", NULL, opt_fleet, spec, true },
		{ "--egress", NULL, opt_egress, spec, true },
		XLB_OPT_FN("--decap", opt_decap, spec),
		XLB_OPT_FN("--gue-port", opt_port, spec),
		{ NULL },
	};
	int err;

	if (!spec) {
		p_err("out of memory");
		return -ENOMEM;
	}
	err = xlb_cmd_args(opts, &argc, argv, host_help, 1, SETUP_USAGE);
	if (err)
		goto out;
	if (strlen(argv[0]) >= IF_NAMESIZE) {
		p_err("no device %s", argv[0]);
		err = -ENODEV;
		goto out;
	}
	strcpy(spec->dev, argv[0]);
	if (!spec->n_vips) {
		p_err("no --vip: name the VIPs this host serves; usage: %s", SETUP_USAGE);
		err = -EINVAL;
		goto out;
	}
	if (spec->decap == XLB_HOST_DECAP_KERNEL) {
		err = check_kernel(spec);
		if (err)
			goto out;
	}
	xlb_quiet_libbpf();
	err = xlb_host_open(&host, true, xlb_opts.instance.verbose);
	if (!err)
		err = xlb_host_setup(host, spec);
out:
	xlb_host_close(host);
	free(spec);
	return err;
}

static int host_teardown(int argc, char **argv)
{
	struct xlb_host *host;
	int err;

	err = xlb_cmd_args(NULL, &argc, argv, host_help, 1, TEARDOWN_USAGE);
	if (err)
		return err;
	err = xlb_host_open(&host, true, xlb_opts.instance.verbose);
	if (err)
		return err;
	err = xlb_host_teardown(host, argv[0]);
	xlb_host_close(host);
	return err;
}

/* ---- show ---- */

static void print_addrs(const char *heading, const struct xlb_host_addr *a,
			__u32 n, const char *none)
{
	char s[XLB_ADDR_STRLEN];
	__u32 i;

	printf("  %-12s", heading);
	for (i = 0; i < n; i++)
		printf(" %s", xlb_addr_str(a[i].addr, a[i].family, s, sizeof(s)));
	printf("%s\n", n ? "" : none);
}

static void print_prefixes(const char *heading, const struct xlb_host_prefix *p,
			   __u32 n, const char *none, const char *note)
{
	char s[XLB_PREFIX_STRLEN];
	__u32 i;

	printf("  %-12s", heading);
	for (i = 0; i < n; i++)
		printf(" %s", xlb_prefix_str(p[i].addr, p[i].family, p[i].len, s, sizeof(s)));
	printf("%s\n", n ? note : none);
}

static void show_text(const struct xlb_host_view *v)
{
	const struct xlb_host_record *r = v->rec;
	char name[XLB_SYSCTL_KEY_LEN], a[XLB_ADDR_STRLEN];
	__u32 i;

	printf("%s: decap %s", r->spec.dev, xlb_host_decap_name(r->spec.decap));
	if (r->spec.decap == XLB_HOST_DECAP_KERNEL)
		printf(" (%s, %s)\n", XLB_HOST_IPIP_DEV, XLB_HOST_IP6TNL_DEV);
	else if (v->attached_id == v->prog_id)
		printf(", program id %u (%s), pinned in %s\n", v->prog_id, v->mode,
		       r->pin_dir);
	else
		printf(", program id %u pinned in %s, NOT attached (%s runs %s): `xlb host setup` again\n",
		       v->prog_id, r->pin_dir, r->spec.dev,
		       v->attached_id ? "another program" : "none");
	print_addrs("vips", v->vips, v->n_vips, "");
	if (r->spec.decap == XLB_HOST_DECAP_XDP) {
		print_addrs("tunnel", v->tunnel, v->n_tunnel, " (none)");
		print_prefixes("balancers", v->balancers, v->n_balancers,
			       " any (sources not checked)",
			       v->check_source ? " (sources checked)" : " (sources NOT checked)");
		print_prefixes("fleet", v->fleet, v->n_fleet,
			       " none (no second chance)", "");
		printf("  %-12s", "egress");
		for (i = 0; i < v->n_egress; i++)
			printf(" %s", v->egress[i]);
		printf(" %s\n", v->n_egress ? "and the receiving interface" :
		       "the receiving interface only");
		printf("  %-12s %u\n", "gue port", v->gue_port);
	}
	printf("changed by setup (undone by teardown):\n");
	for (i = 0; i < r->n_sysctls; i++)
		printf("  sysctl %s, was %s\n",
		       xlb_sysctl_name(r->sysctls[i].key, name, sizeof(name)),
		       r->sysctls[i].old);
	for (i = 0; i < r->n_vips_added; i++)
		printf("  %s added to lo\n",
		       xlb_addr_str(r->vips_added[i].addr, r->vips_added[i].family,
				    a, sizeof(a)));
	for (i = 0; i < r->n_neigh; i++)
		printf("  neighbour %s dev %s made managed\n",
		       xlb_addr_str(r->neigh[i].addr.addr, r->neigh[i].addr.family,
				    a, sizeof(a)), r->neigh[i].dev);
	if (r->tunnels)
		printf("  %s and %s added\n", XLB_HOST_IPIP_DEV, XLB_HOST_IP6TNL_DEV);
	if (r->spec.decap == XLB_HOST_DECAP_XDP)
		printf("  decap.bpf.o attached to %s\n", r->spec.dev);
}

static void show_json(const struct xlb_host_view *v)
{
	const struct xlb_host_record *r = v->rec;
	struct json_object *o = json_object_new_object(), *egress, *t;
	bool xdp = r->spec.decap == XLB_HOST_DECAP_XDP;
	__u32 i;

	json_object_object_add(o, "device", json_object_new_string(r->spec.dev));
	json_object_object_add(o, "ifindex", json_object_new_int(r->ifindex));
	json_object_object_add(o, "decap",
			       json_object_new_string(xlb_host_decap_name(r->spec.decap)));
	json_object_object_add(o, "vips", xlb_host_addrs_json(v->vips, v->n_vips));
	if (xdp) {
		json_object_object_add(o, "prog_id", json_object_new_int64(v->prog_id));
		json_object_object_add(o, "attached",
				       json_object_new_boolean(v->prog_id == v->attached_id));
		json_object_object_add(o, "attach_mode", json_object_new_string(v->mode));
		json_object_object_add(o, "pin_dir", json_object_new_string(r->pin_dir));
		json_object_object_add(o, "tunnel_addrs",
				       xlb_host_addrs_json(v->tunnel, v->n_tunnel));
		json_object_object_add(o, "balancers",
				       xlb_host_prefixes_json(v->balancers, v->n_balancers));
		json_object_object_add(o, "check_source",
				       json_object_new_boolean(v->check_source));
		json_object_object_add(o, "fleet",
				       xlb_host_prefixes_json(v->fleet, v->n_fleet));
		egress = json_object_new_array();
		for (i = 0; i < v->n_egress; i++)
			json_object_array_add(egress, json_object_new_string(v->egress[i]));
		json_object_object_add(o, "egress", egress);
		json_object_object_add(o, "gue_port", json_object_new_int(v->gue_port));
	} else {
		t = json_object_new_array();
		json_object_array_add(t, json_object_new_string(XLB_HOST_IPIP_DEV));
		json_object_array_add(t, json_object_new_string(XLB_HOST_IP6TNL_DEV));
		json_object_object_add(o, "tunnels", t);
	}
	json_object_object_add(o, "changed", xlb_host_changes_json(r));
	xlb_json_print(o);
}

static int host_show(int argc, char **argv)
{
	struct xlb_host_view *view = NULL;
	struct xlb_host *host;
	int err;

	err = xlb_cmd_args(NULL, &argc, argv, host_help, 0, SHOW_USAGE);
	if (err)
		return err;
	err = xlb_host_open(&host, false, false);
	if (err)
		return err;
	view = malloc(sizeof(*view));
	err = view ? xlb_host_view(host, view) : -ENOMEM;
	if (!err && xlb_opts.json)
		show_json(view);
	else if (!err)
		show_text(view);
	else if (!view)
		p_err("out of memory");
	free(view);
	xlb_host_close(host);
	return err;
}

/* ---- stats ---- */

static int host_stats(int argc, char **argv)
{
	struct xlb_counter c[XLB_DECAP__MAX];
	struct xlb_decap_fds fds;
	struct xlb_host *host;
	bool prometheus = false;
	const struct xlb_opt opts[] = {
		XLB_OPT_FLAG("--prometheus", &prometheus),
		{ NULL },
	};
	int err;

	err = xlb_cmd_args(opts, &argc, argv, host_help, 0, STATS_USAGE);
	if (err)
		return err;
	if (prometheus && xlb_opts.json) {
		p_err("-j and --prometheus exclude each other");
		return -EINVAL;
	}
	err = xlb_host_open(&host, false, false);
	if (err)
		return err;
	err = xlb_host_decap_open(host, &fds);
	xlb_host_close(host);
	if (err)
		return err;
	err = xlb_decap_stats(&fds, c);
	xlb_decap_close(&fds);
	if (err) {
		p_err("cannot read the counters: %s", strerror(-err));
		return err;
	}
	if (prometheus)
		xlb_counters_prometheus(stdout, "xlb_decap", "counted by the backend's decap.bpf.o: each tunnelled packet under what became of it",
					stat_names, c, XLB_DECAP__MAX);
	else if (xlb_opts.json)
		xlb_json_print(xlb_counters_json(stat_names, c, XLB_DECAP__MAX));
	else
		xlb_counters_text("reason", stat_names, c, XLB_DECAP__MAX);
	return 0;
}

int do_host(int argc, char **argv)
{
	static const struct xlb_verb verbs[] = {
		{ "setup", NULL, host_setup },
		{ "show", NULL, host_show },
		{ "stats", NULL, host_stats },
		{ "teardown", NULL, host_teardown },
		{ NULL },
	};

	return xlb_dispatch("host", verbs, host_help, argc, argv);
}
