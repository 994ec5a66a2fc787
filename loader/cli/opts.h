/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The one option parser of the xlb command: each command declares its
 * options in a table, and xlb_opts_parse() takes them out of argv wherever
 * they stand, leaving the positional arguments in order.
 *
 *	bool dump = false;
 *	__u32 m = XLB_DEFAULT_TABLE_SIZE;
 *	const struct xlb_opt opts[] = {
 *		XLB_OPT_FLAG("--dump", &dump),
 *		XLB_OPT_FN("--table-size", xlb_opt_table_size, &m),
 *		{ NULL },
 *	};
 *	err = xlb_opts_parse(opts, &argc, argv, help);
 *	if (err)
 *		return err < 0 ? err : 0;	// error printed, or help shown
 */
#ifndef XLB_OPTS_H
#define XLB_OPTS_H

#include <stdbool.h>
#include <linux/types.h>

/*
 * Reads the option's value into dest; returns 0 or -EINVAL after p_err()
 * naming the option and the value (`--weight '70000000': above the
 * maximum 1000000`).
 */
typedef int (*xlb_opt_parse_fn)(const char *opt, const char *value, void *dest);

struct xlb_opt {
	const char *name;	/* "--weight" */
	const char *alias;	/* "-w", or NULL */
	xlb_opt_parse_fn parse;	/* NULL: a flag, *(bool *)dest = true */
	void *dest;
	bool repeat;		/* may be given more than once */
};

#define XLB_OPT_FLAG(name, dest)	{ name, NULL, NULL, dest, false }
#define XLB_OPT_FN(name, fn, dest)	{ name, NULL, fn, dest, false }

/* Parsers of the common kinds of value, for XLB_OPT_FN. */
int xlb_opt_str(const char *opt, const char *value, void *dest);	/* const char * */
int xlb_opt_weight(const char *opt, const char *value, void *dest);	/* __u32 */
int xlb_opt_table_size(const char *opt, const char *value, void *dest);	/* __u32 */
int xlb_opt_u64(const char *opt, const char *value, void *dest);	/* __u64 */

/* How xlb_opts_parse() treats what is not in opts. */
enum xlb_opts_mode {
	/* A command's options: anything else starting with '-' is an error,
	 * "--" ends the options, -h, --help or a lone "help" asks for help. */
	XLB_OPTS_ALL,
	/* The global options, taken before the command runs: everything
	 * else stays where it is for the command's own parse. */
	XLB_OPTS_SOME,
};

/*
 * Take the options of opts out of argv[0..*argc) ("--name VALUE" or
 * "--name=VALUE"), leaving the rest in order and NULL-terminated. Returns
 * 0; 1 after help() when help was asked for; or -EINVAL after p_err() for
 * an unknown option, an option given twice, or a missing or bad value.
 */
int xlb_opts_parse(const struct xlb_opt *opts, int *argc, char **argv,
		   int (*help)(void), enum xlb_opts_mode mode);

#endif /* XLB_OPTS_H */
