// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* xlb vip { add | del | help }: virtual services. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "cmd.h"
#include "cli.h"
#include "opts.h"
#include "update.h"

#define VIP_ADD_USAGE "xlb vip add VIP [--table-size M]"
#define VIP_DEL_USAGE "xlb vip del VIP"

static int vip_help(void)
{
	printf("Usage: " VIP_ADD_USAGE "\n"
	       "       " VIP_DEL_USAGE "\n"
	       "       xlb vip help\n"
	       "VIP := ADDR:PORT/PROTO, e.g. 192.0.2.10:80/tcp or [2001:db8::10]:443/udp;\n"
	       "       port 0 receives the fragments sent to ADDR with PROTO\n"
	       "M   := the Maglev table size, a prime in %d..%d (default %d);\n"
	       "       a VIP holds at most M backends\n"
	       "A new VIP has no backends: add them with `xlb backend add`.\n"
	       "Deleting a VIP deletes its backends and its table.\n",
	       XLB_MIN_TABLE_SIZE, XLB_MAX_TABLE_SIZE, XLB_DEFAULT_TABLE_SIZE);
	return 0;
}

static int vip_add(int argc, char **argv)
{
	__u32 m = XLB_DEFAULT_TABLE_SIZE;
	char name[XLB_VIP_STRLEN];
	struct xlb_vip_key key;
	struct xlb_instance inst;
	struct xlb_state *st;
	const struct xlb_opt opts[] = {
		XLB_OPT_FN("--table-size", xlb_opt_table_size, &m),
		{ NULL },
	};
	int err;

	err = xlb_cmd_args(opts, &argc, argv, vip_help, 1, VIP_ADD_USAGE);
	if (!err)
		err = xlb_vip_arg(argv[0], &key);
	if (err)
		return err;
	xlb_vip_str(&key, name, sizeof(name));

	err = xlb_update_open(&inst, &xlb_opts.instance, &st, false);
	if (err)
		return err;
	if (xlb_state_vip_find(st, &key)) {
		p_err("VIP %s already exists", name);
		err = -EEXIST;
		goto out;
	}
	err = xlb_vip_check(st, &key, m, NULL, 0, xlb_vips_free(st),
			    xlb_backend_ids_free(st), name);
	if (!err)
		err = xlb_vip_converge(&inst, st, &key, m, NULL, 0);
out:
	xlb_update_close(&inst, st);
	return err;
}

static int vip_del(int argc, char **argv)
{
	struct xlb_vip_key key;
	struct xlb_instance inst;
	struct xlb_state *st;
	int err;

	err = xlb_cmd_args(NULL, &argc, argv, vip_help, 1, VIP_DEL_USAGE);
	if (!err)
		err = xlb_vip_arg(argv[0], &key);
	if (err)
		return err;
	err = xlb_update_open(&inst, &xlb_opts.instance, &st, false);
	if (err)
		return err;
	err = xlb_vip_remove(&inst, st, &key);
	xlb_update_close(&inst, st);
	return err;
}

int do_vip(int argc, char **argv)
{
	static const struct xlb_verb verbs[] = {
		{ "add", NULL, vip_add },
		{ "del", "delete", vip_del },
		{ NULL },
	};

	return xlb_dispatch("vip", verbs, vip_help, argc, argv);
}
