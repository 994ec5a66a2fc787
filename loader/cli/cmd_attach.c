// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xlb attach / detach: the XDP program on a device through libxdp, with its
 * maps pinned in --pin-dir. (`ip link set dev DEV xdp obj xlb.bpf.o sec xdp`
 * does the same without libxdp, pinning in /sys/fs/bpf/tc/globals.)
 */
#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>
#include <xdp/libxdp.h>

#include "cli.h"
#include "opts.h"
#include "cmd.h"
#include "conntrack_size.h"
#include "neigh.h"
#include "settings.h"
#include "update.h"
#include "xdp_frags.h"
#include "xlb.skel.h"

#define ATTACH_USAGE "xlb attach DEV [--mode native|generic] [--conntrack-size N]"
#define DETACH_USAGE "xlb detach DEV"

/* libxdp, like libbpf (xlb_quiet_libbpf()), reports every step on
 * stderr: its messages too only with -v. */
static int print_libxdp(enum libxdp_print_level level, const char *fmt,
			va_list ap)
{
	(void)level;
	return xlb_opts.instance.verbose ? vfprintf(stderr, fmt, ap) : 0;
}

static void quiet_libs(void)
{
	xlb_quiet_libbpf();
	libxdp_set_print(print_libxdp);
}

static const char *mode_name(enum xdp_attach_mode mode)
{
	switch (mode) {
	case XDP_MODE_NATIVE:
		return "native";
	case XDP_MODE_SKB:
		return "generic";
	case XDP_MODE_HW:
		return "offload";
	default:
		return "unknown";
	}
}

static int ifindex_of(const char *dev)
{
	int ifindex = if_nametoindex(dev);

	if (!ifindex)
		p_err("no device %s", dev);
	return ifindex;
}

/* The xlb program among those attached to ifindex, or NULL. The name is
 * the one the skeleton gives the XDP entry point. */
static struct xdp_program *find_xlb(const struct xdp_multiprog *mp)
{
	const char *name = "xlb_xdp";
	struct xdp_program *p;

	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		return p && !strcmp(xdp_program__name(p), name) ? p : NULL;
	}
	for (p = xdp_multiprog__next_prog(NULL, mp); p;
	     p = xdp_multiprog__next_prog(p, mp))
		if (!strcmp(xdp_program__name(p), name))
			return p;
	return NULL;
}

static struct xdp_multiprog *attached(int ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);

	if (libxdp_get_error(mp))
		return NULL;
	if (!xdp_multiprog__main_prog(mp) && !xdp_multiprog__hw_prog(mp)) {
		xdp_multiprog__close(mp);
		return NULL;
	}
	return mp;
}

static void report(const char *dev, int ifindex, struct xdp_multiprog *mp,
		   struct xdp_program *prog)
{
	bool legacy = xdp_multiprog__is_legacy(mp);
	const char *mode = mode_name(xdp_multiprog__attach_mode(mp));
	struct json_object *o;

	if (xlb_opts.json) {
		o = json_object_new_object();
		json_object_object_add(o, "device", json_object_new_string(dev));
		json_object_object_add(o, "ifindex", json_object_new_int(ifindex));
		json_object_object_add(o, "mode", json_object_new_string(mode));
		json_object_object_add(o, "prog_id",
			json_object_new_int64(xdp_program__id(prog)));
		json_object_object_add(o, "pin_dir",
			json_object_new_string(xlb_opts.instance.pin_dir));
		json_object_object_add(o, "dispatcher",
			json_object_new_boolean(!legacy));
		xlb_json_print(o);
	} else {
		printf("attached to %s in %s mode (program id %u), maps in %s\n",
		       dev, mode, xdp_program__id(prog), xlb_opts.instance.pin_dir);
	}
	if (legacy)
		p_info("xlb: note: %s runs xlb without the libxdp dispatcher (this kernel refuses the freplace programs it needs), so no other XDP program can share %s",
		       dev, dev);
}

static int parse_mode(const char *opt, const char *arg, void *dest)
{
	enum xdp_attach_mode *mode = dest;

	if (!strcmp(arg, "native") || !strcmp(arg, "drv"))
		*mode = XDP_MODE_NATIVE;
	else if (!strcmp(arg, "generic") || !strcmp(arg, "skb"))
		*mode = XDP_MODE_SKB;
	else {
		p_err("bad %s '%s': native or generic", opt, arg);
		return -EINVAL;
	}
	return 0;
}

/* --conntrack-size: the setting of that name, checked as `config set`
 * checks it. */
static int parse_ct_size(const char *opt, const char *arg, void *dest)
{
	const char *why;

	if (xlb_setting_parse(xlb_setting_find("conntrack-size"), dest, arg,
			      &why)) {
		p_err("bad %s '%s': %s", opt, arg, why);
		return -EINVAL;
	}
	return 0;
}

static int attach_help(void)
{
	printf("Usage: " ATTACH_USAGE "\n"
	       "Load the XDP program on DEV through libxdp, its maps pinned in the\n"
	       "pin dir: --pin-dir, or else the instance's wherever `ip link ... xdp\n"
	       "obj` pinned it (%s, or /sys/fs/bpf/xdp/globals when\n"
	       "/sys/fs/bpf/xdp is a directory); a new instance goes where `ip link`\n"
	       "will find it (xdp/globals, unless /sys/fs/bpf/xdp is iproute2's\n"
	       "symlink to tc/). `xlb show` names it. Without --mode, native\n"
	       "if the driver supports it, generic otherwise. --conntrack-size sets\n"
	       "the conntrack-size setting and sizes the connection table by it;\n"
	       "without it, the setting (default %u entries) does.\n",
	       XLB_DEFAULT_PIN_DIR, XLB_CT_DEFAULT_SIZE);
	return 0;
}

static int detach_help(void)
{
	printf("Usage: " DETACH_USAGE "\n"
	       "Remove xlb from DEV. Its maps stay pinned in the pin dir, so the\n"
	       "configuration is there again when xlb is attached again.\n");
	return 0;
}

static void rollback(const char *dev, int ifindex, struct xdp_program *prog,
		     struct xdp_multiprog *mp)
{
	enum xdp_attach_mode mode = XDP_MODE_UNSPEC;
	char msg[128];
	int err;

	if (mp)
		mode = xdp_multiprog__attach_mode(mp);
	err = xdp_program__detach(prog, ifindex, mode, 0);
	if (err) {
		libxdp_strerror(err, msg, sizeof(msg));
		p_info("xlb: could not detach from %s after the failure: %s; `xlb detach %s`",
		       dev, msg, dev);
	} else {
		p_info("xlb: detached from %s again", dev);
	}
}

int do_attach(int argc, char **argv)
{
	DECLARE_LIBBPF_OPTS(bpf_object_open_opts, open_opts,
			    .pin_root_path = xlb_opts.instance.pin_dir);
	DECLARE_LIBXDP_OPTS(xdp_program_opts, prog_opts);
	enum xdp_attach_mode mode = XDP_MODE_UNSPEC;
	struct xdp_multiprog *mp = NULL;
	struct xdp_program *prog = NULL, *found;
	struct xlb_config ct = {}, want;
	__u32 slots;
	struct xlb_instance inst;
	struct xlb_state *st;
	struct xlb *skel = NULL;
	const struct xlb_opt opts[] = {
		XLB_OPT_FN("--mode", parse_mode, &mode),
		XLB_OPT_FN("--conntrack-size", parse_ct_size, &ct),
		{ NULL },
	};
	bool is_attached = false;
	int ct_fd = -1;
	const char *dev;
	char msg[128], why[256];
	int ifindex, err;

	err = xlb_cmd_args(opts, &argc, argv, attach_help, 1, ATTACH_USAGE);
	if (err)
		return err;
	dev = argv[0];
	ifindex = ifindex_of(dev);
	if (!ifindex)
		return -ENODEV;
	quiet_libs();

	mp = attached(ifindex);
	if (mp) {
		found = find_xlb(mp);
		p_err(found ? "xlb is already attached to %s (program id %u): `xlb detach %s` first" :
		      "%s already runs an XDP program (id %u) outside the libxdp dispatcher: remove it first (%s)",
		      dev, xdp_program__id(found ? found : xdp_multiprog__main_prog(mp)),
		      found ? dev : "ip link set dev DEV xdp off");
		xdp_multiprog__close(mp);
		return -EEXIST;
	}
	err = xlb_pin_dir_prepare(xlb_opts.instance.pin_dir);
	if (err)
		return err;

	skel = xlb__open_opts(&open_opts);
	err = libbpf_get_error(skel);
	if (err) {
		skel = NULL;
		p_err("cannot open the XDP program: %s", strerror(-err));
		return err;
	}
	err = xlb_ct_size_for_load(skel->maps.xlb_conntrack, xlb_opts.instance.pin_dir,
				   ct.ct_size, &slots, &ct_fd);
	if (err)
		goto cleanup;
	skel->rodata->xlb_ct_mask = slots - 1;
	/* Multi-buffer where the kernel has it: jumbo frames
	 * (bpf/xlb.bpf.c). */
	if (xlb_xdp_frags_supported())
		bpf_program__set_flags(skel->progs.xlb_xdp,
				       bpf_program__flags(skel->progs.xlb_xdp) |
				       BPF_F_XDP_HAS_FRAGS);
	else
		p_info("xlb: this kernel has no multi-buffer XDP (Linux 5.18): the program is loaded for single-buffer frames, so the device's MTU must fit one page (%d on veth)",
		       XLB_XDP_PAGE_MTU);
	prog_opts.obj = skel->obj;
	prog_opts.prog_name = bpf_program__name(skel->progs.xlb_xdp);
	prog = xdp_program__create(&prog_opts);
	err = libxdp_get_error(prog);
	if (err) {
		prog = NULL;
		libxdp_strerror(err, msg, sizeof(msg));
		p_err("cannot prepare the XDP program: %s", msg);
		goto cleanup;
	}
	err = xdp_program__attach(prog, ifindex, mode, 0);
	if (mode != XDP_MODE_SKB && xlb_xdp_mtu_refused(err, dev)) {
		/* The driver's refusal of a frame larger than one buffer: its
		 * errno says nothing of the MTU. */
		xlb_xdp_mtu_refusal(dev, bpf_program__flags(skel->progs.xlb_xdp) &
					 BPF_F_XDP_HAS_FRAGS, why, sizeof(why));
		p_err("cannot attach to %s: %s, or attach with --mode generic, which takes any MTU at a cost per packet",
		      dev, why);
		goto cleanup;
	}
	if (err) {
		libxdp_strerror(err, msg, sizeof(msg));
		p_err("cannot attach to %s: %s%s", dev, msg,
		      err == -EOPNOTSUPP ? " (try --mode generic)" :
		      err == -EEXIST || err == -EBUSY ?
		      " (another XDP program is attached)" :
		      err == -EINVAL || err == -EACCES ?
		      " (maps pinned in the pin dir by another build of xlb? rerun with -v; docs/cli.md, \"Upgrading an instance\")" : "");
		goto cleanup;
	}
	is_attached = true;
	mp = attached(ifindex);
	if (!mp) {
		p_err("attached to %s, but cannot find the program there", dev);
		err = -ENOENT;
		goto cleanup;
	}

	/* A new connection table takes the old one's place only now. */
	err = xlb_ct_pin(xlb_opts.instance.pin_dir, ct_fd);
	if (err)
		goto cleanup;
	/* First use of the instance: give it a seed now; and keep the size
	 * asked for, so that attaching again keeps it. */
	err = xlb_update_open(&inst, &xlb_opts.instance, &st, false);
	if (!err) {
		want = st->config;
		if (ct.ct_size)
			want.ct_size = ct.ct_size;
		err = xlb_update_pending(&inst, st) ?:
		      xlb_config_write(&inst, st, &want);
		/* The backends' next hops, on this device too (a note when
		 * it fails: the program is attached). */
		if (!err)
			xlb_neigh_sync(&inst, st, NULL);
		xlb_update_close(&inst, st);
	}
	if (!err)
		report(dev, ifindex, mp, prog);
cleanup:
	/* A step after the attach failed: take the program off again, so
	 * that the device is as it was and the next attempt is not told
	 * that xlb is already attached. */
	if (err && is_attached)
		rollback(dev, ifindex, prog, mp);
	xdp_multiprog__close(mp);
	xdp_program__close(prog);
	xlb__destroy(skel);
	if (ct_fd >= 0)
		close(ct_fd);
	return err;
}

int do_detach(int argc, char **argv)
{
	struct xdp_multiprog *mp;
	struct xdp_program *prog;
	char msg[128];
	int ifindex, err;

	err = xlb_cmd_args(NULL, &argc, argv, detach_help, 1, DETACH_USAGE);
	if (err)
		return err;
	ifindex = ifindex_of(argv[0]);
	if (!ifindex)
		return -ENODEV;
	quiet_libs();
	mp = attached(ifindex);
	prog = mp ? find_xlb(mp) : NULL;
	if (!prog) {
		p_err("xlb is not attached to %s", argv[0]);
		xdp_multiprog__close(mp);
		return -ENOENT;
	}
	err = xdp_program__detach(prog, ifindex, xdp_multiprog__attach_mode(mp), 0);
	if (err) {
		libxdp_strerror(err, msg, sizeof(msg));
		p_err("cannot detach from %s: %s", argv[0], msg);
	}
	xdp_multiprog__close(mp);
	return err;
}
