// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Helpers shared by the xlb commands: arguments, output. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>

#include "addr.h"
#include "cmd.h"
#include "cli.h"

bool xlb_is_help(const char *verb)
{
	return !strcmp(verb, "help") || !strcmp(verb, "-h") ||
	       !strcmp(verb, "--help");
}

int xlb_dispatch(const char *object, const struct xlb_verb *verbs,
		 int (*help)(void), int argc, char **argv)
{
	const struct xlb_verb *v;

	if (argc < 1) {
		p_err("missing command; try `xlb %s help`", object);
		return -EINVAL;
	}
	if (xlb_is_help(argv[0]))
		return help();
	for (v = verbs; v->name; v++)
		if (!strcmp(argv[0], v->name) ||
		    (v->alias && !strcmp(argv[0], v->alias)))
			return v->fn(argc - 1, argv + 1);
	p_err("unknown command '%s %s'; try `xlb %s help`", object, argv[0],
	      object);
	return -EINVAL;
}

static void drop(int *argc, char **argv, int i, int n)
{
	memmove(&argv[i], &argv[i + n], (*argc - i - n + 1) * sizeof(*argv));
	*argc -= n;
}

int xlb_take_opt(int *argc, char **argv, const char *name, const char **value)
{
	size_t len = strlen(name);
	int i, found = 0;

	for (i = 0; i < *argc;) {
		const char *a = argv[i];

		if (strncmp(a, name, len) || (a[len] && a[len] != '=')) {
			i++;
			continue;
		}
		if (found) {
			p_err("%s given twice", name);
			return -EINVAL;
		}
		found = 1;
		if (a[len] == '=') {
			*value = a + len + 1;
			drop(argc, argv, i, 1);
		} else if (i + 1 < *argc) {
			*value = argv[i + 1];
			drop(argc, argv, i, 2);
		} else {
			p_err("%s needs a value", name);
			return -EINVAL;
		}
	}
	return found;
}

int xlb_take_flag(int *argc, char **argv, const char *name)
{
	int i, found = 0;

	for (i = 0; i < *argc;) {
		if (strcmp(argv[i], name)) {
			i++;
			continue;
		}
		found = 1;
		drop(argc, argv, i, 1);
	}
	return found;
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

int xlb_weight_arg(const char *arg, __u32 *weight)
{
	const char *why;

	if (xlb_weight_parse(arg, weight, &why)) {
		p_err("bad weight '%s': %s", arg, why);
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
