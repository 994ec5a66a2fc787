// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* xlb vip { add | set | del | help }: virtual services. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "cmd.h"
#include "cli.h"
#include "hc_opts.h"
#include "opts.h"
#include "update.h"
#include "src_ranges.h"
#include "vip_local.h"
#include "vip_mode.h"

#define VIP_HASH_USAGE "[--hash FIELDS] [--affinity-prefix LEN] [--ping on|off]" \
	" [--allow PREFIXES] [--deny PREFIXES]"
#define VIP_ADD_USAGE "xlb vip add VIP [--table-size M] [--encap ENCAP] [--mode MODE] " \
	VIP_HASH_USAGE " " XLB_HC_OPTS_USAGE
#define VIP_SET_USAGE "xlb vip set VIP [--encap ENCAP] [--mode MODE] " \
	VIP_HASH_USAGE " HEALTH..."
#define VIP_DEL_USAGE "xlb vip del VIP"

static int vip_help(void)
{
	printf("Usage: " VIP_ADD_USAGE "\n"
	       "       " VIP_SET_USAGE "\n"
	       "       " VIP_DEL_USAGE "\n"
	       "       xlb vip help\n"
	       "VIP := ADDR:PORT/PROTO, e.g. 192.0.2.10:80/tcp or [2001:db8::10]:443/udp;\n"
	       "       port 0 receives the fragments sent to ADDR with PROTO; port *\n"
	       "       every port of ADDR with PROTO that no VIP of its own takes\n"
	       "       (and the fragments, without a port-0 VIP)\n"
	       "M   := the Maglev table size, a prime in %d..%d (default %d);\n"
	       "       a VIP holds at most M backends\n"
	       "ENCAP := ipip (the default: IPIP, or IPv6-in-IP to IPv6 backends) or\n"
	       "       gue (IP in UDP to the gue-port setting, with the second-chance\n"
	       "       field; backends decapsulate with decap.bpf.o or fou)\n"
	       "MODE  := tracked (the default: the connection table keeps each flow's\n"
	       "       backend) or stateless (no per-flow state: each packet goes to\n"
	       "       its slot's backend, with the slot's previous backend named for\n"
	       "       the backend's decap.bpf.o to pass it on; implies --encap gue)\n"
	       "FIELDS := what the flow hash takes: 5-tuple (the default: each\n"
	       "       connection on its own) or src-ip (client affinity: every\n"
	       "       connection of a client address, whatever its ports, on one\n"
	       "       backend)\n"
	       "LEN   := with src-ip, the client prefix that counts as one client\n"
	       "       (default the whole address): e.g. 24 for IPv4 behind NAT\n"
	       "       pools, 64 for IPv6 clients with many addresses\n"
	       "--ping: whether the VIP answers ICMP echo requests to its address\n"
	       "       from the datapath (default on; the address answers while\n"
	       "       any of its VIPs does, at most icmp-rate a second a CPU)\n"
	       "PREFIXES := source ranges, comma-separated prefixes of the VIP's\n"
	       "       family (ADDR/LEN, 0.0.0.0/0, ::/0): --allow lets only them in\n"
	       "       (any: every client), --deny turns them away (none: no one);\n"
	       "       a client's longest match decides, at most %d prefixes a\n"
	       "       VIP and %d in all; counted as drop_src_denied\n"
	       "%s"
	       "A new VIP has no backends: add them with `xlb backend add`.\n"
	       "`xlb vip set` changes what it is given, the rest stays.\n"
	       "Deleting a VIP deletes its backends and its table.\n",
	       XLB_MIN_TABLE_SIZE, XLB_MAX_TABLE_SIZE, XLB_DEFAULT_TABLE_SIZE,
	       XLB_SRC_MAX_VIP, XLB_SRC_MAX, xlb_hc_opts_help);
	return 0;
}

/*
 * The VIP's settings with h over them, checked alone (a VIP of port 0,
 * fragments or all ports, must name the port to probe) and under each of
 * its backends' overrides (a backend's timeout must stay below the
 * VIP's new interval). Returns 0 or -EINVAL after p_err().
 */
static int vip_health_check(const struct xlb_instance *inst,
			    const struct xlb_state *st, const char *name,
			    __be16 port, __u32 vip_id,
			    const struct xlb_hc_config *c)
{
	static __u32 ids[XLB_MAX_BACKENDS];
	char addr[XLB_ADDR_STRLEN];
	const struct xlb_backend *b;
	struct xlb_hc_config be;
	const char *why;
	size_t n, i;
	int err;

	if (xlb_hc_check(NULL, c, &why)) {
		p_err("VIP %s: %s", name, why);
		return -EINVAL;
	}
	if (xlb_hc_port_check(NULL, c, port, &why)) {
		p_err("VIP %s: %s", name, why);
		return -EINVAL;
	}
	n = inst ? xlb_state_vip_backends(st, vip_id, ids) : 0;
	for (i = 0; i < n; i++) {
		err = xlb_hc_backend_read(inst, ids[i], &be);
		if (err)
			return err;
		if (!xlb_hc_check(c, &be, &why))
			continue;
		b = &st->backends[ids[i]];
		p_err("VIP %s: backend %s: %s", name,
		      xlb_addr_str(b->addr, b->family, addr, sizeof(addr)), why);
		return -EINVAL;
	}
	return 0;
}

/* --encap and --mode: the XLB_VIP_F_MODE bits they set and clear;
 * --hash and --affinity-prefix: the hash's fields. */
struct vip_mode_opt {
	__u32 set, clear;
	__u32 hash;		/* XLB_VIP_F_HASH flags of --hash */
	__u32 prefix;		/* --affinity-prefix */
	bool encap, mode, given_hash, given_prefix, ping;	/* given */
	const char *allow, *deny;	/* --allow, --deny: NULL, not given */
};

static int opt_allow(const char *opt, const char *value, void *dest)
{
	(void)opt;
	((struct vip_mode_opt *)dest)->allow = value;
	return 0;
}

static int opt_deny(const char *opt, const char *value, void *dest)
{
	(void)opt;
	((struct vip_mode_opt *)dest)->deny = value;
	return 0;
}

/* The VIP's lists l (as they are) with --allow and --deny over them,
 * checked whole. Returns 0 or -EINVAL after p_err(). */
static int vip_src_lists(const struct vip_mode_opt *o, const char *name,
			 __u8 family, struct xlb_src_list *l)
{
	char why[160];

	if (o->allow && xlb_src_parse(o->allow, family, false, l, why,
				      sizeof(why))) {
		p_err("VIP %s: --allow %s", name, why);
		return -EINVAL;
	}
	if (o->deny && xlb_src_parse(o->deny, family, true, l, why,
				     sizeof(why))) {
		p_err("VIP %s: --deny %s", name, why);
		return -EINVAL;
	}
	if (xlb_src_check(l, why, sizeof(why))) {
		p_err("VIP %s: %s", name, why);
		return -EINVAL;
	}
	return 0;
}

/* What `xlb vip add|set` writes, as one change: the VIP in its mode (a
 * new one with its backends none, born closed when it is to have source
 * ranges), then its lists. */
struct vip_write {
	const struct xlb_vip_key *key;
	__u32 m, flags;
	bool mode, src;		/* what to write */
	const struct xlb_src_list *l;
};

static int vip_write(struct xlb_instance *inst, struct xlb_state *st,
		     void *arg)
{
	static struct xlb_want want[XLB_MAX_BACKENDS];
	const struct vip_write *w = arg;
	const struct xlb_state_vip *v = xlb_state_vip_find(st, w->key);
	size_t n = v ? xlb_vip_wants(st, v->vip.id, want) : 0;
	int err = 0;

	if (w->mode)
		err = xlb_vip_converge_mode(inst, st, w->key, w->m, w->flags,
					    NULL, want, n);
	if (!err && w->src)
		err = xlb_vip_src_set(inst, st, w->key, w->l);
	return err;
}

static int mode_opt(const char *opt, const char *value, void *dest,
		    int (*parse)(const char *, __u32 *, const char **),
		    __u32 bit)
{
	struct vip_mode_opt *m = dest;
	const char *why;
	__u32 flags = 0;

	if (parse(value, &flags, &why)) {
		p_err("%s '%s': %s", opt, value, why);
		return -EINVAL;
	}
	m->set = (m->set & ~bit) | (flags & bit);
	m->clear = (m->clear & ~bit) | (~flags & bit);
	return 0;
}

static int opt_encap(const char *opt, const char *value, void *dest)
{
	((struct vip_mode_opt *)dest)->encap = true;
	return mode_opt(opt, value, dest, xlb_encap_parse, XLB_VIP_F_GUE);
}

static int opt_mode(const char *opt, const char *value, void *dest)
{
	((struct vip_mode_opt *)dest)->mode = true;
	return mode_opt(opt, value, dest, xlb_mode_parse, XLB_VIP_F_STATELESS);
}

static int opt_ping(const char *opt, const char *value, void *dest)
{
	((struct vip_mode_opt *)dest)->ping = true;
	return mode_opt(opt, value, dest, xlb_ping_parse, XLB_VIP_F_NO_PING);
}

static int opt_hash(const char *opt, const char *value, void *dest)
{
	struct vip_mode_opt *m = dest;
	const char *why;

	m->hash = 0;
	if (xlb_hash_parse(value, &m->hash, &why)) {
		p_err("%s '%s': %s", opt, value, why);
		return -EINVAL;
	}
	m->given_hash = true;
	return 0;
}

static int opt_affinity(const char *opt, const char *value, void *dest)
{
	struct vip_mode_opt *m = dest;
	const char *why;

	if (xlb_affinity_parse(value, &m->prefix, &why)) {
		p_err("%s '%s': %s", opt, value, why);
		return -EINVAL;
	}
	m->given_prefix = true;
	return 0;
}

/* The mode flags of a VIP of family that had flags, after the options:
 * stateless brings GUE unless --encap says otherwise, which is refused;
 * --hash src-ip the whole address as the client unless
 * --affinity-prefix or the VIP's own prefix says otherwise, and --hash
 * 5-tuple drops the prefix.
 * Returns 0 or -EINVAL after p_err(). */
static int vip_mode_flags(const struct vip_mode_opt *o, const char *name,
			  int family, __u32 flags, __u32 *out)
{
	const char *why;

	flags = (flags & XLB_VIP_F_MODE & ~o->clear) | o->set;
	if (o->set & XLB_VIP_F_STATELESS && !o->encap)
		flags |= XLB_VIP_F_GUE;
	/* src-ip again keeps the prefix it had. */
	if (o->given_hash && !(o->hash & flags & XLB_VIP_F_HASH_SRC))
		flags = (flags & ~XLB_VIP_F_HASH) | o->hash;
	if (o->given_prefix) {
		if (!(flags & XLB_VIP_F_HASH_SRC)) {
			p_err("VIP %s: --affinity-prefix needs --hash src-ip",
			      name);
			return -EINVAL;
		}
		flags = (flags & ~XLB_VIP_AFFINITY_MASK) |
			o->prefix << XLB_VIP_AFFINITY_SHIFT;
	}
	flags = xlb_vip_mode_complete(flags, family);
	if (xlb_vip_mode_check(flags, family, &why)) {
		p_err("VIP %s: %s", name, why);
		return -EINVAL;
	}
	*out = flags;
	return 0;
}

static int vip_add(int argc, char **argv)
{
	__u32 m = XLB_DEFAULT_TABLE_SIZE;
	char name[XLB_VIP_STRLEN];
	struct xlb_state_vip *v;
	struct xlb_vip_key key;
	struct xlb_instance inst;
	struct xlb_state *st;
	struct vip_mode_opt mode = {};
	struct xlb_hc_opts h;
	struct xlb_opt opts[XLB_HC_SETTINGS + 9] = {
		XLB_OPT_FN("--table-size", xlb_opt_table_size, &m),
		XLB_OPT_FN("--encap", opt_encap, &mode),
		XLB_OPT_FN("--mode", opt_mode, &mode),
		XLB_OPT_FN("--hash", opt_hash, &mode),
		XLB_OPT_FN("--affinity-prefix", opt_affinity, &mode),
		XLB_OPT_FN("--ping", opt_ping, &mode),
		XLB_OPT_FN("--allow", opt_allow, &mode),
		XLB_OPT_FN("--deny", opt_deny, &mode),
	};
	static struct xlb_src_list l;
	struct vip_write w = { .key = &key, .mode = true, .l = &l };
	__u32 flags;
	int err;

	xlb_hc_opts_table(opts + 8, &h);
	err = xlb_cmd_args(opts, &argc, argv, vip_help, 1, VIP_ADD_USAGE);
	if (!err)
		err = xlb_vip_arg(argv[0], &key);
	if (err)
		return err;
	xlb_vip_str(&key, name, sizeof(name));
	l.n = 0;
	err = vip_health_check(NULL, NULL, name, key.port, 0, &h.c) ?:
	      vip_mode_flags(&mode, name, key.family, 0, &flags) ?:
	      vip_src_lists(&mode, name, key.family, &l);
	if (err)
		return err;
	w.m = m;
	w.src = l.n > 0;
	/* Closed until its lists are there. */
	w.flags = flags | (w.src ? XLB_VIP_F_SRC_LIST | XLB_VIP_F_SRC_DENY : 0);

	err = xlb_update_open(&inst, &xlb_opts.instance, &st, false);
	if (err)
		return err;
	if (xlb_state_vip_find(st, &key)) {
		p_err("VIP %s already exists", name);
		err = -EEXIST;
		goto out;
	}
	/* Asked here, once the instance is open: in its namespace. */
	err = xlb_vip_local_check(&key, name) ?:
	      xlb_vip_check(st, &key, m, NULL, 0, xlb_vips_free(st),
			    xlb_backend_ids_free(st), name);
	if (!err)
		err = xlb_update_all_or_nothing(&inst, st, vip_write, &w);
	v = err ? NULL : xlb_state_vip_find(st, &key);
	if (v)
		err = xlb_hc_vip_write(&inst, st, v->vip.id, &h.c);
out:
	xlb_update_close(&inst, st);
	return err;
}

static int vip_set(int argc, char **argv)
{
	char name[XLB_VIP_STRLEN];
	struct xlb_state_vip *v;
	struct xlb_vip_key key;
	struct xlb_instance inst;
	struct xlb_hc_config c;
	struct xlb_state *st;
	struct vip_mode_opt mode = {};
	struct xlb_hc_opts h;
	struct xlb_opt opts[XLB_HC_SETTINGS + 8] = {
		XLB_OPT_FN("--encap", opt_encap, &mode),
		XLB_OPT_FN("--mode", opt_mode, &mode),
		XLB_OPT_FN("--hash", opt_hash, &mode),
		XLB_OPT_FN("--affinity-prefix", opt_affinity, &mode),
		XLB_OPT_FN("--ping", opt_ping, &mode),
		XLB_OPT_FN("--allow", opt_allow, &mode),
		XLB_OPT_FN("--deny", opt_deny, &mode),
	};
	static struct xlb_src_list l;
	struct vip_write w = { .key = &key, .l = &l };
	__u32 flags;
	int err;

	xlb_hc_opts_table(opts + 7, &h);
	err = xlb_cmd_args(opts, &argc, argv, vip_help, 1, VIP_SET_USAGE);
	if (!err)
		err = xlb_vip_arg(argv[0], &key);
	if (err)
		return err;
	w.mode = mode.encap || mode.mode || mode.given_hash ||
		 mode.given_prefix || mode.ping;
	w.src = mode.allow || mode.deny;
	if (!h.given && !w.mode && !w.src) {
		p_err("nothing to set; usage: %s", VIP_SET_USAGE);
		return -EINVAL;
	}
	xlb_vip_str(&key, name, sizeof(name));

	err = xlb_update_open(&inst, &xlb_opts.instance, &st, false);
	if (err)
		return err;
	v = xlb_state_vip_find(st, &key);
	if (!v || v->corrupt[0]) {
		p_err(v ? "VIP %s is corrupt: `xlb vip del %s` removes it" :
		      "no VIP %s", name, name);
		err = v ? -EINVAL : -ENOENT;
		goto out;
	}
	err = xlb_hc_vip_read(&inst, v->vip.id, &c);
	if (err)
		goto out;
	xlb_hc_overlay(&c, &h.c, h.given);
	err = vip_health_check(&inst, st, name, key.port, v->vip.id, &c) ?:
	      vip_mode_flags(&mode, name, key.family, v->vip.flags, &flags) ?:
	      (w.src ? xlb_src_read(&inst, v, &l) : 0);
	/* A VIP left closed denies every client, as show says: the lists
	 * given change that. */
	if (!err && w.src && xlb_src_closed(v->vip.flags, &l))
		xlb_src_deny_all(&l, key.family);
	err = err ?: (w.src ? vip_src_lists(&mode, name, key.family, &l) : 0);
	if (err)
		goto out;
	/* Checked whole before the first write. */
	w.m = v->vip.table_size;
	w.flags = flags;
	if (w.mode || w.src)
		err = xlb_update_all_or_nothing(&inst, st, vip_write, &w);
	if (!err && h.given)
		err = xlb_hc_vip_write(&inst, st, v->vip.id, &c);
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
		{ "set", NULL, vip_set },
		{ "del", "delete", vip_del },
		{ NULL },
	};

	return xlb_dispatch("vip", verbs, vip_help, argc, argv);
}
