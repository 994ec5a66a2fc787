// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xlb table: build a table offline from the backends on the command line
 * and print how evenly it shares the slots, or the table itself. Nothing
 * is loaded or changed; it answers "what would these backends get?" and
 * compares Maglev with the other algorithms on the same backends.
 */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lb_impl.h"
#include "opts.h"

#define DEFAULT_VNODES	100

struct table_cmd {
	enum lb_algo_kind algo;
	struct lb_params params;
	bool dump;
	struct lb_backend *backends;
	size_t n;
};

/* What the table gives each backend, against its fair share. */
struct table_stats {
	__u32 *owner;		/* per slot: index into the backends */
	__u32 *slots;		/* per backend */
	__u64 total_weight;
	double min_load, max_load;	/* slots / fair slots */
	__u32 min_slots, max_slots;
};

static int table_help(void)
{
	printf("Usage: xlb table [--algo ALGO] [--table-size M] [--vnodes V] [--seed S]\n"
	       "                 [--dump] [-j] BACKEND[:WEIGHT]...\n"
	       "       ALGO    := { maglev | ring | rendezvous | jump | modulo } (default maglev)\n"
	       "       BACKEND := { IPV4 | IPV6 | [IPV6] | NAME }; WEIGHT 0..%u (default 1)\n"
	       "Builds the table offline and prints each backend's slots and share, max/mean\n"
	       "(the most loaded backend against its fair share) and the spread; --dump\n"
	       "prints the table instead, one backend per slot.\n"
	       "  --table-size M  prime, %u..%u (default %u); for ring, rendezvous, jump\n"
	       "                  and modulo: the number of evenly spaced flow hashes sampled\n"
	       "  --vnodes V      ring tokens per unit of weight (default %u)\n"
	       "  --seed S        perturb the identity hashes (default 0: the datapath's tables)\n",
	       XLB_MAX_WEIGHT, XLB_MIN_TABLE_SIZE, XLB_MAX_TABLE_SIZE,
	       XLB_DEFAULT_TABLE_SIZE, DEFAULT_VNODES);
	return 0;
}

static int parse_algo(const char *opt, const char *value, void *dest)
{
	int kind = lb_algo_parse(value);

	if (kind < 0) {
		p_err("bad %s: unknown algorithm '%s'; expected maglev, ring, "
		      "rendezvous, jump or modulo", opt, value);
		return -EINVAL;
	}
	*(enum lb_algo_kind *)dest = kind;
	return 0;
}

static int parse_vnodes(const char *opt, const char *value, void *dest)
{
	const char *why;

	if (xlb_u32_parse(value, 1, LB_RING_MAX_TOKENS, dest, &why)) {
		p_err("bad %s '%s': %s", opt, value, why);
		return -EINVAL;
	}
	return 0;
}

/* Options anywhere, backends in between. Returns 0, 1 after the help, or
 * -errno after p_err(). */
static int parse_args(struct table_cmd *cmd, int argc, char **argv)
{
	const struct xlb_opt opts[] = {
		XLB_OPT_FN("--algo", parse_algo, &cmd->algo),
		XLB_OPT_FN("--table-size", xlb_opt_table_size,
			   &cmd->params.table_size),
		XLB_OPT_FN("--vnodes", parse_vnodes, &cmd->params.vnodes),
		XLB_OPT_FN("--seed", xlb_opt_u64, &cmd->params.seed),
		XLB_OPT_FLAG("--dump", &cmd->dump),
		{ NULL },
	};
	int i, err;

	err = xlb_opts_parse(opts, &argc, argv, table_help, XLB_OPTS_ALL);
	if (err)
		return err;
	cmd->backends = calloc(argc ? argc : 1, sizeof(*cmd->backends));
	if (!cmd->backends) {
		p_err("out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < argc; i++) {
		err = lb_backend_parse(argv[i], &cmd->backends[cmd->n]);
		if (err)
			return err;
		cmd->n++;
	}
	err = lb_backends_check(cmd->backends, cmd->n, cmd->params.table_size);
	if (err)
		return err;
	for (i = 0; i < (int)cmd->n; i++)
		if (cmd->backends[i].weight)
			return 0;
	p_err("every backend has weight 0: there is nothing to share");
	return -EINVAL;
}

static void compute_stats(const struct table_cmd *cmd, struct table_stats *st)
{
	double fair, load;
	size_t i;
	bool first = true;

	for (i = 0; i < cmd->n; i++)
		st->total_weight += cmd->backends[i].weight;
	for (i = 0; i < cmd->n; i++) {
		if (!cmd->backends[i].weight)
			continue;
		fair = (double)cmd->params.table_size * cmd->backends[i].weight /
		       st->total_weight;
		load = st->slots[i] / fair;
		if (first || load < st->min_load)
			st->min_load = load;
		if (first || load > st->max_load)
			st->max_load = load;
		if (first || st->slots[i] < st->min_slots)
			st->min_slots = st->slots[i];
		if (first || st->slots[i] > st->max_slots)
			st->max_slots = st->slots[i];
		first = false;
	}
}

static double share(__u64 part, __u64 whole)
{
	return (double)part / whole;
}

static void print_text(const struct table_cmd *cmd, const struct lb *lb,
		       const struct table_stats *st)
{
	__u32 m = cmd->params.table_size;
	int width = strlen("backend");
	size_t i;

	for (i = 0; i < cmd->n; i++)
		if ((int)strlen(cmd->backends[i].id) > width)
			width = strlen(cmd->backends[i].id);
	printf("%s: ", lb_algo_name(cmd->algo));
	if (cmd->algo == LB_MAGLEV)
		printf("%u slots", m);
	else
		printf("%u sampled flow hashes", m);
	if (cmd->algo == LB_RING)
		printf(", %u vnodes (%u tokens)", cmd->params.vnodes, lb->n_tokens);
	if (cmd->params.seed)
		printf(", seed %llu", (unsigned long long)cmd->params.seed);
	printf(", %zu backends\n", cmd->n);
	printf("%-*s  %7s  %7s  %8s  %8s\n", width, "backend", "weight",
	       "slots", "share", "fair");
	for (i = 0; i < cmd->n; i++)
		printf("%-*s  %7u  %7u  %7.3f%%  %7.3f%%\n", width,
		       cmd->backends[i].id, cmd->backends[i].weight,
		       st->slots[i], 100 * share(st->slots[i], m),
		       100 * share(cmd->backends[i].weight, st->total_weight));
	printf("max/mean  %.5f\n", st->max_load);
	printf("spread    %.5f..%.5f of the fair share, %u..%u slots\n",
	       st->min_load, st->max_load, st->min_slots, st->max_slots);
}

/* JSON by hand: identities are addresses or names of letters, digits,
 * '.', '_', '-' and ':' (lb_backend_parse), never in need of escapes, and
 * a dumped table of a million slots needs no million objects. */
static void print_json(const struct table_cmd *cmd, const struct lb *lb,
		       const struct table_stats *st)
{
	__u32 m = cmd->params.table_size, k;
	size_t i;

	printf("{\"algo\":\"%s\",\"table_size\":%u,\"seed\":%llu,",
	       lb_algo_name(cmd->algo), m, (unsigned long long)cmd->params.seed);
	if (cmd->algo == LB_RING)
		printf("\"vnodes\":%u,\"tokens\":%u,", cmd->params.vnodes,
		       lb->n_tokens);
	printf("\"backends\":[");
	for (i = 0; i < cmd->n; i++)
		printf("%s{\"id\":\"%s\",\"weight\":%u,\"slots\":%u,"
		       "\"share\":%.6f,\"fair_share\":%.6f}", i ? "," : "",
		       cmd->backends[i].id, cmd->backends[i].weight,
		       st->slots[i], share(st->slots[i], m),
		       share(cmd->backends[i].weight, st->total_weight));
	printf("],\"max_mean\":%.6f,\"min_load\":%.6f,\"max_load\":%.6f,"
	       "\"min_slots\":%u,\"max_slots\":%u", st->max_load, st->min_load,
	       st->max_load, st->min_slots, st->max_slots);
	if (cmd->dump) {
		printf(",\"table\":[");
		for (k = 0; k < m; k++)
			printf("%s\"%s\"", k ? "," : "",
			       cmd->backends[st->owner[k]].id);
		printf("]");
	}
	printf("}\n");
}

/* jump and modulo give every backend of positive weight one bucket. */
static bool weights_ignored(const struct table_cmd *cmd)
{
	__u32 w = 0;
	size_t i;

	if (cmd->algo != LB_JUMP && cmd->algo != LB_MODULO)
		return false;
	for (i = 0; i < cmd->n; i++) {
		if (!cmd->backends[i].weight)
			continue;
		if (w && cmd->backends[i].weight != w)
			return true;
		w = cmd->backends[i].weight;
	}
	return false;
}

int do_table(int argc, char **argv)
{
	struct table_cmd cmd = {
		.algo = LB_MAGLEV,
		.params = {
			.table_size = XLB_DEFAULT_TABLE_SIZE,
			.vnodes = DEFAULT_VNODES,
		},
	};
	struct table_stats st = {};
	struct lb *lb = NULL;
	__u32 m, k;
	int err;

	err = parse_args(&cmd, argc, argv);
	if (err) {
		err = err < 0 ? err : 0;
		goto cleanup;
	}
	if (weights_ignored(&cmd))
		p_info("note: %s ignores weights (weight 0 still removes a backend)",
		       lb_algo_name(cmd.algo));
	err = lb_build(cmd.algo, cmd.backends, cmd.n, &cmd.params, &lb);
	if (err == -E2BIG) {
		p_err("the ring would need more than %u tokens: lower --vnodes, "
		      "or use weights with a larger common divisor",
		      LB_RING_MAX_TOKENS);
		goto cleanup;
	}
	if (err) {
		p_err("cannot build the %s table: %s", lb_algo_name(cmd.algo),
		      strerror(-err));
		goto cleanup;
	}
	m = cmd.params.table_size;
	st.owner = calloc(m, sizeof(*st.owner));
	st.slots = calloc(cmd.n, sizeof(*st.slots));
	if (!st.owner || !st.slots) {
		p_err("out of memory");
		err = -ENOMEM;
		goto cleanup;
	}
	for (k = 0; k < m; k++) {
		st.owner[k] = lb_slot(lb, k);
		st.slots[st.owner[k]]++;
	}
	compute_stats(&cmd, &st);

	if (xlb_opts.json)
		print_json(&cmd, lb, &st);
	else if (cmd.dump)
		for (k = 0; k < m; k++)
			puts(cmd.backends[st.owner[k]].id);
	else
		print_text(&cmd, lb, &st);
cleanup:
	free(st.slots);
	free(st.owner);
	lb_free(lb);
	free(cmd.backends);
	return err;
}
