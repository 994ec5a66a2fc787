/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Helpers shared by the `xlb OBJECT VERB ...` commands: arguments, output. */
#ifndef XLB_CMD_H
#define XLB_CMD_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <linux/types.h>
#include "xlb.h"

struct json_object;

/* A verb of an object: `xlb OBJECT NAME ARGS...` runs fn(ARGS). */
struct xlb_verb {
	const char *name;
	const char *alias;	/* or NULL */
	int (*fn)(int argc, char **argv);
};

/* Run the verb argv[0] of object from verbs (ended by a NULL name), or
 * help: `xlb OBJECT help`, and -h or --help anywhere after the object, ask
 * for it. A missing or unknown verb is an error pointing to help. */
int xlb_dispatch(const char *object, const struct xlb_verb *verbs,
		 int (*help)(void), int argc, char **argv);

/*
 * A command's arguments: its options (opts.h; NULL for none) taken out of
 * argv, then exactly n positional arguments (n < 0: any number). Returns 0,
 * 1 after help() when help was asked for, or -EINVAL after p_err() with
 * the usage line.
 */
struct xlb_opt;
int xlb_cmd_args(const struct xlb_opt *opts, int *argc, char **argv,
		 int (*help)(void), int n, const char *usage);

/* Expect exactly n positional arguments; otherwise p_err() naming the
 * extra or missing one with the usage line, and -EINVAL. */
int xlb_expect_args(int argc, char **argv, int n, const char *usage);

/* libbpf reports every step of a load on stderr; xlb says what matters
 * itself, and passes libbpf's messages on with -v. */
void xlb_quiet_libbpf(void);

/* Parse a VIP / an address given on the command line; on
 * error p_err() names the argument and the problem. 0 or -EINVAL. */
int xlb_vip_arg(const char *arg, struct xlb_vip_key *key);
int xlb_addr_arg(const char *arg, __be32 addr[4], __u8 *family);
/* The flow of a client (ADDR:PORT) to a VIP (ADDR:PORT/PROTO, a port
 * given), as the datapath keys it; on error p_err() names the argument,
 * after where ("" or "line 3: "). 0 or -EINVAL. */
int xlb_flow_args(const char *client, const char *vip, const char *where,
		  struct xlb_flow *flow);

/* Print a JSON value on one line (slashes unescaped: VIPs are
 * "192.0.2.10:80/tcp") and release it. */
void xlb_json_print(struct json_object *o);

/*
 * Counters by name (a reason list's names), as `xlb stats` and `xlb host
 * stats` print them: a table under heading; { NAME: { packets, bytes } };
 * the Prometheus families PREFIX_packets_total and PREFIX_bytes_total,
 * labelled reason, whose help says what they count.
 */
void xlb_counters_text(const char *heading, const char *const *names,
		       const struct xlb_counter *c, size_t n);
struct json_object *xlb_counters_json(const char *const *names,
				      const struct xlb_counter *c, size_t n);
void xlb_counters_prometheus(FILE *f, const char *prefix, const char *what,
			     const char *const *names,
			     const struct xlb_counter *c, size_t n);
/* { [key: name,] packets, bytes } */
struct json_object *xlb_counter_json(const struct xlb_counter *c,
				     const char *key, const char *name);

/* Is key one that `xlb show -j` prints about a VIP (backend: about a
 * backend) as observed, not configured? `xlb apply` skips those. */
bool xlb_show_observed(bool backend, const char *key);
/* The same for a key of the top level (the pin dir). */
bool xlb_show_observed_top(const char *key);

#endif /* XLB_CMD_H */
