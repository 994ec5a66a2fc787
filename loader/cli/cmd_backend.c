// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* xlb backend { add | set | del | help }: a VIP's backends. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "cmd.h"
#include "cli.h"
#include "hc_opts.h"
#include "opts.h"
#include "update.h"

#define BACKEND_ADD_USAGE "xlb backend add VIP ADDR [--weight W] " XLB_HC_OPTS_USAGE
#define BACKEND_SET_USAGE "xlb backend set VIP ADDR [--weight W] " XLB_HC_OPTS_USAGE
#define BACKEND_DEL_USAGE "xlb backend del VIP ADDR"
#define BACKEND_WAIT_USAGE "xlb backend wait-drained VIP ADDR [--timeout S]"

static int backend_help(void)
{
	printf("Usage: " BACKEND_ADD_USAGE "\n"
	       "       " BACKEND_SET_USAGE "\n"
	       "       " BACKEND_DEL_USAGE "\n"
	       "       " BACKEND_WAIT_USAGE "\n"
	       "       xlb backend help\n"
	       "VIP  := ADDR:PORT/PROTO, e.g. 192.0.2.10:80/tcp\n"
	       "ADDR := the backend's address, of the VIP's family; packets reach it\n"
	       "        encapsulated (IPIP or IP6IP6)\n"
	       "W    := 0..%d, default 1: its share of the table is W over the\n"
	       "        sum of the VIP's weights. W = 0 drains the backend: it leaves\n"
	       "        the table (no new flows) but keeps its record, so tracked\n"
	       "        connections still reach it until they end.\n"
	       "%s"
	       "`xlb backend wait-drained` waits (up to --timeout S, default 300) until\n"
	       "the backend holds no live connection-table entry: a drain's end.\n"
	       "`xlb backend set` changes what it is given (at least one of --weight\n"
	       "and HEALTH), the rest stays. Every change recomputes the VIP's table\n"
	       "and swaps it in at once (-v prints how long that took).\n",
	       XLB_MAX_WEIGHT, xlb_hc_opts_help);
	return 0;
}

enum backend_op { BACKEND_ADD, BACKEND_SET, BACKEND_DEL };

static int backend_change(enum backend_op op, int argc, char **argv)
{
	static const char *const usage[] = {
		[BACKEND_ADD] = BACKEND_ADD_USAGE,
		[BACKEND_SET] = BACKEND_SET_USAGE,
		[BACKEND_DEL] = BACKEND_DEL_USAGE,
	};
	char vname[XLB_VIP_STRLEN], aname[XLB_ADDR_STRLEN];
	struct xlb_want *want = NULL, w = { .weight = 1 };
	struct xlb_state_vip *v;
	struct xlb_instance inst;
	struct xlb_vip_key key;
	struct xlb_state *st;
	struct xlb_hc_config vip_hc, hc = {};
	struct xlb_hc_opts h;
	/* Above any weight: tells whether --weight was given. */
	__u32 weight = UINT32_MAX, id;
	struct xlb_opt opts[XLB_HC_SETTINGS + 2] = {
		XLB_OPT_FN("--weight", xlb_opt_weight, &weight),
	};
	const char *why;
	size_t n, i;
	int err;

	xlb_hc_opts_table(opts + 1, &h);
	err = xlb_cmd_args(op == BACKEND_DEL ? NULL : opts, &argc, argv,
			   backend_help, 2, usage[op]);
	if (err)
		return err;
	if (op == BACKEND_SET && weight == UINT32_MAX && !h.given) {
		p_err("missing --weight or a health option; usage: %s",
		      usage[op]);
		return -EINVAL;
	}
	if (weight != UINT32_MAX)
		w.weight = weight;
	err = xlb_vip_arg(argv[0], &key);
	if (!err)
		err = xlb_addr_arg(argv[1], w.addr, &w.family);
	if (err)
		return err;
	xlb_vip_str(&key, vname, sizeof(vname));
	xlb_addr_str(w.addr, w.family, aname, sizeof(aname));

	want = calloc(XLB_MAX_BACKENDS, sizeof(*want));
	if (!want) {
		p_err("out of memory");
		return -ENOMEM;
	}
	err = xlb_update_open(&inst, &xlb_opts.instance, &st, false);
	if (err)
		goto out_free;
	v = xlb_state_vip_find(st, &key);
	if (!v) {
		p_err("no VIP %s", vname);
		err = -ENOENT;
		goto out;
	}
	if (v->corrupt[0]) {
		p_err("VIP %s is corrupt (%s): `xlb vip del %s` removes it", vname,
		      v->corrupt, vname);
		err = -EINVAL;
		goto out;
	}
	n = xlb_vip_wants(st, v->vip.id, want);
	for (i = 0; i < n; i++)
		if (want[i].family == w.family &&
		    !memcmp(want[i].addr, w.addr, sizeof(w.addr)))
			break;
	if (op == BACKEND_ADD && i < n) {
		p_err("backend %s is already in VIP %s", aname, vname);
		err = -EEXIST;
		goto out;
	}
	if (op != BACKEND_ADD && i == n) {
		p_err("no backend %s in VIP %s", aname, vname);
		err = -ENOENT;
		goto out;
	}
	if (op == BACKEND_ADD)
		want[n++] = w;
	else if (op == BACKEND_SET && weight != UINT32_MAX)
		want[i].weight = w.weight;
	else if (op == BACKEND_DEL)
		want[i] = want[--n];

	/* Its health settings over the VIP's, checked before any write. */
	id = op == BACKEND_SET ? xlb_state_backend_find(st, v->vip.id, w.addr,
							w.family) : 0;
	err = xlb_hc_vip_read(&inst, v->vip.id, &vip_hc);
	if (!err && id)
		err = xlb_hc_backend_read(&inst, id, &hc);
	if (err)
		goto out;
	xlb_hc_overlay(&hc, &h.c, h.given);
	if (op != BACKEND_DEL && (xlb_hc_check(&vip_hc, &hc, &why) ||
				  xlb_hc_port_check(&vip_hc, &hc, key.port, &why))) {
		p_err("backend %s of VIP %s: %s", aname, vname, why);
		err = -EINVAL;
		goto out;
	}

	err = xlb_vip_check(st, &key, v->vip.table_size, want, n,
			    xlb_vips_free(st), xlb_backend_ids_free(st), vname);
	if (!err)
		err = xlb_vip_converge(&inst, st, &key, v->vip.table_size,
				       want, n);
	if (!err && op != BACKEND_DEL && h.given) {
		v = xlb_state_vip_find(st, &key);
		id = xlb_state_backend_find(st, v->vip.id, w.addr, w.family);
		err = xlb_hc_backend_write(&inst, st, id, &hc);
	}
	if (!err && op == BACKEND_ADD)
		xlb_note_sources(st, &w, 1);
out:
	xlb_update_close(&inst, st);
out_free:
	free(want);
	return err;
}

static int backend_add(int argc, char **argv)
{
	return backend_change(BACKEND_ADD, argc, argv);
}

static int backend_set(int argc, char **argv)
{
	return backend_change(BACKEND_SET, argc, argv);
}

static int backend_del(int argc, char **argv)
{
	return backend_change(BACKEND_DEL, argc, argv);
}

int do_backend(int argc, char **argv)
{
	static const struct xlb_verb verbs[] = {
		{ "add", NULL, backend_add },
		{ "set", NULL, backend_set },
		{ "del", "delete", backend_del },
		{ "wait-drained", NULL, xlb_backend_wait_drained },
		{ NULL },
	};

	return xlb_dispatch("backend", verbs, backend_help, argc, argv);
}
