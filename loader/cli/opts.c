// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The one option parser of the xlb command (see opts.h). */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "addr.h"
#include "opts.h"
#include "report.h"

int xlb_opt_str(const char *opt, const char *value, void *dest)
{
	if (!*value) {
		p_err("%s needs a value", opt);
		return -EINVAL;
	}
	*(const char **)dest = value;
	return 0;
}

/* One shape for every bad value: the option, the value, the reason. */
static int bad_value(const char *opt, const char *value, const char *why)
{
	p_err("bad %s '%s': %s", opt, value, why);
	return -EINVAL;
}

int xlb_opt_weight(const char *opt, const char *value, void *dest)
{
	const char *why;

	return xlb_weight_parse(value, dest, &why) ?
	       bad_value(opt, value, why) : 0;
}

int xlb_opt_table_size(const char *opt, const char *value, void *dest)
{
	const char *why;

	return xlb_table_size_parse(value, dest, &why) ?
	       bad_value(opt, value, why) : 0;
}

int xlb_opt_u64(const char *opt, const char *value, void *dest)
{
	const char *why;

	return xlb_u64_parse(value, 0, UINT64_MAX, dest, &why) ?
	       bad_value(opt, value, why) : 0;
}

static const struct xlb_opt *find(const struct xlb_opt *opts, const char *arg,
				  const char **value)
{
	const struct xlb_opt *o;
	size_t len;

	for (o = opts; o->name; o++) {
		if (o->alias && !strcmp(arg, o->alias)) {
			*value = NULL;
			return o;
		}
		len = strlen(o->name);
		if (strncmp(arg, o->name, len))
			continue;
		if (!arg[len]) {
			*value = NULL;
			return o;
		}
		if (arg[len] == '=' && o->parse) {
			*value = arg + len + 1;
			return o;
		}
	}
	return NULL;
}

static bool is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

int xlb_opts_parse(const struct xlb_opt *opts, int *argc, char **argv,
		   int (*help)(void), enum xlb_opts_mode mode)
{
	const struct xlb_opt *o, *seen[64];
	int i, n = 0, n_seen = 0, k, err;
	bool rest = false;
	const char *value;

	for (i = 0; i < *argc; i++) {
		char *a = argv[i];

		/* "-" (stdin) and negative numbers are arguments, never
		 * options: their parser says what is wrong with them. */
		if (rest || a[0] != '-' || !a[1] || isdigit((unsigned char)a[1])) {
			argv[n++] = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			rest = true;
			if (mode == XLB_OPTS_SOME)
				argv[n++] = a;
			continue;
		}
		o = find(opts, a, &value);
		if (!o && mode == XLB_OPTS_SOME) {
			argv[n++] = a;
			continue;
		}
		if (!o && is_help(a))
			return help ? help() ?: 1 : 1;
		if (!o) {
			p_err("unknown option '%s'; try -h", a);
			return -EINVAL;
		}
		for (k = 0; k < n_seen && !o->repeat; k++) {
			if (seen[k] == o) {
				p_err("%s given twice", o->name);
				return -EINVAL;
			}
		}
		if (n_seen < (int)(sizeof(seen) / sizeof(seen[0])))
			seen[n_seen++] = o;
		if (!o->parse) {
			*(bool *)o->dest = true;
			continue;
		}
		if (!value) {
			if (i + 1 >= *argc) {
				p_err("%s needs a value", o->name);
				return -EINVAL;
			}
			value = argv[++i];
		}
		err = o->parse(o->name, value, o->dest);
		if (err)
			return err;
	}
	argv[n] = NULL;
	*argc = n;
	if (mode == XLB_OPTS_ALL && n == 1 && !strcmp(argv[0], "help"))
		return help ? help() ?: 1 : 1;
	return 0;
}
