// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Helpers shared by the xlb commands: arguments, output. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>

#include "addr.h"
#include "cmd.h"
#include "cli.h"
#include "opts.h"

static bool is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

int xlb_dispatch(const char *object, const struct xlb_verb *verbs,
		 int (*help)(void), int argc, char **argv)
{
	const struct xlb_verb *v;
	int i;

	if (argc < 1) {
		p_err("missing command; try `xlb %s help`", object);
		return -EINVAL;
	}
	for (i = 0; i < argc && strcmp(argv[i], "--"); i++)
		if (is_help(argv[i]))
			return help();
	if (!strcmp(argv[0], "help") || (argc == 2 && !strcmp(argv[1], "help")))
		return help();
	for (v = verbs; v->name; v++)
		if (!strcmp(argv[0], v->name) ||
		    (v->alias && !strcmp(argv[0], v->alias)))
			return v->fn(argc - 1, argv + 1);
	p_err("unknown command '%s %s'; try `xlb %s help`", object, argv[0],
	      object);
	return -EINVAL;
}

int xlb_cmd_args(const struct xlb_opt *opts, int *argc, char **argv,
		 int (*help)(void), int n, const char *usage)
{
	static const struct xlb_opt none[] = { { NULL } };
	int err;

	err = xlb_opts_parse(opts ? opts : none, argc, argv, help,
			     XLB_OPTS_ALL);
	if (err || n < 0)
		return err;
	return xlb_expect_args(*argc, argv, n, usage);
}

int xlb_expect_args(int argc, char **argv, int n, const char *usage)
{
	if (argc > n) {
		p_err("unexpected argument '%s'; usage: %s", argv[n], usage);
		return -EINVAL;
	}
	if (argc < n) {
		p_err("missing argument; usage: %s", usage);
		return -EINVAL;
	}
	return 0;
}

int xlb_vip_arg(const char *arg, struct xlb_vip_key *key)
{
	const char *why;

	if (xlb_vip_parse(arg, key, &why)) {
		p_err("bad VIP '%s': %s", arg, why);
		return -EINVAL;
	}
	return 0;
}

int xlb_addr_arg(const char *arg, __be32 addr[4], __u8 *family)
{
	const char *why;

	if (xlb_addr_parse(arg, addr, family, &why)) {
		p_err("bad address '%s': %s", arg, why);
		return -EINVAL;
	}
	return 0;
}

void xlb_json_print(struct json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o,
		JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static int print_libbpf(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	(void)level;
	return xlb_opts.instance.verbose ? vfprintf(stderr, fmt, ap) : 0;
}

void xlb_quiet_libbpf(void)
{
	libbpf_set_print(print_libbpf);
}

void xlb_counters_text(const char *heading, const char *const *names,
		       const struct xlb_counter *c, size_t n)
{
	size_t i;

	printf("%-24s %20s %20s\n", heading, "packets", "bytes");
	for (i = 0; i < n; i++)
		printf("%-24s %20llu %20llu\n", names[i],
		       (unsigned long long)c[i].packets,
		       (unsigned long long)c[i].bytes);
}

struct json_object *xlb_counter_json(const struct xlb_counter *c,
				     const char *key, const char *name)
{
	struct json_object *o = json_object_new_object();

	if (key)
		json_object_object_add(o, key, json_object_new_string(name));
	json_object_object_add(o, "packets", json_object_new_int64(c->packets));
	json_object_object_add(o, "bytes", json_object_new_int64(c->bytes));
	return o;
}

struct json_object *xlb_counters_json(const char *const *names,
				      const struct xlb_counter *c, size_t n)
{
	struct json_object *o = json_object_new_object();
	size_t i;

	for (i = 0; i < n; i++)
		json_object_object_add(o, names[i], xlb_counter_json(&c[i], NULL, NULL));
	return o;
}

void xlb_counters_prometheus(FILE *f, const char *prefix, const char *what,
			     const char *const *names,
			     const struct xlb_counter *c, size_t n)
{
	static const char *const unit[] = { "packets", "bytes" };
	size_t i;
	int u;

	for (u = 0; u < 2; u++) {
		fprintf(f, "# HELP %s_%s_total %s %s\n# TYPE %s_%s_total counter\n",
			prefix, unit[u], u ? "Bytes" : "Packets", what, prefix,
			unit[u]);
		for (i = 0; i < n; i++)
			fprintf(f, "%s_%s_total{reason=\"%s\"} %llu\n", prefix,
			       unit[u], names[i], (unsigned long long)(u ?
			       c[i].bytes : c[i].packets));
	}
}

int xlb_flow_args(const char *client, const char *vip, const char *where,
		  struct xlb_flow *flow)
{
	struct xlb_vip_key key;
	const char *why;
	__u8 family;

	memset(flow, 0, sizeof(*flow));
	if (xlb_client_parse(client, flow->src, &family, &flow->sport, &why)) {
		p_err("%sbad CLIENT '%s': %s", where, client, why);
		return -EINVAL;
	}
	if (xlb_vip_parse(vip, &key, &why)) {
		p_err("%sbad VIP '%s': %s", where, vip, why);
		return -EINVAL;
	}
	if (key.proto & XLB_VIP_PROTO_ALL_PORTS) {
		p_err("%sbad VIP '%s': give the port the flow goes to",
		      where, vip);
		return -EINVAL;
	}
	if (!key.port) {
		p_err("%sbad VIP '%s': a VIP of fragments has no flow: give its port",
		      where, vip);
		return -EINVAL;
	}
	if (key.family != family) {
		p_err("%sbad CLIENT '%s': not of the VIP's address family",
		      where, client);
		return -EINVAL;
	}
	memcpy(flow->dst, key.addr, sizeof(flow->dst));
	flow->dport = key.port;
	flow->proto = key.proto;
	flow->family = family;
	return 0;
}
