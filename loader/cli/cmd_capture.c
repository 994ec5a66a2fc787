// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xlb capture: packets from the running datapath with their outcome
 * (loader/inspect/capture.h), a line each, or to a pcapng file with each
 * packet's verdict, counter, VIP and backend in its comment.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/bpf.h>

#include "addr.h"
#include "capture.h"
#include "cli.h"
#include "cmd.h"
#include "numbers.h"
#include "opts.h"
#include "pcapng_write.h"
#include "state.h"

#define CAPTURE_USAGE "xlb capture [-w FILE] [--drops] [--forward] [--reason NAME[,NAME...]] [--vip VIP] [--backend ADDR] [--count N] [--duration S] [--sample N] [--snaplen N]"

#define STAT_NAME(name, str) str,
static const char *const reason_names[XLB_STAT__MAX] = {
	XLB_STAT_LIST(STAT_NAME)
};
#undef STAT_NAME

static int capture_help(void)
{
	printf("Usage: " CAPTURE_USAGE "\n"
	       "Packets from the running datapath with their outcome: a line each (-j: a\n"
	       "JSON object a line), or\n"
	       "with -w a pcapng file (-w -: stdout) that tshark and Wireshark read, each\n"
	       "packet's verdict, counter, VIP and backend in its comment. The frame is\n"
	       "as the datapath leaves it: forwarded, encapsulated; answered too big, the\n"
	       "ICMP answer; anything else, as received. Until --count packets, --duration\n"
	       "seconds, or Ctrl-C; one capture at a time an instance. When it ends (even\n"
	       "killed) the datapath stops handing packets over within %u ms.\n"
	       "  --drops          only packets dropped (any drop_ counter)\n"
	       "  --forward        only packets forwarded\n"
	       "  --reason NAMES   only those counters (xlb stats names them), comma-separated\n"
	       "                   (these three add up)\n"
	       "  --vip VIP        only packets to VIP (the datapath then hands over no\n"
	       "                   pass_not_ip, pass_not_vip packet unless --reason asks)\n"
	       "  --backend ADDR   only packets for that backend (of --vip's VIP, else of\n"
	       "                   any)\n"
	       "  --sample N       one packet in N of those the filter lets through (the\n"
	       "                   first, then every Nth; each CPU counts its own)\n"
	       "  --snaplen N      the first N bytes of each (1..%u, default %u)\n",
	       XLB_CAPTURE_LEASE_MS, XLB_CAPTURE_BYTES, XLB_CAPTURE_BYTES);
	return 0;
}

struct capture_args {
	const char *file;
	bool drops, forward;
	__u32 reasons;
	const char *vip, *backend;
	__u64 count, duration;
	__u32 sample, snaplen;
};

static int parse_reasons(const char *opt, const char *val, void *dest)
{
	char buf[512], *tok, *save;
	__u32 *mask = dest, k;

	snprintf(buf, sizeof(buf), "%s", val);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (k = 0; k < XLB_STAT_REASONS; k++)
			if (!strcmp(tok, reason_names[k]))
				break;
		if (k == XLB_STAT_REASONS) {
			p_err("bad %s '%s': no counter '%s' of a packet's outcome (forward, pass_*, drop_*, icmp_too_big, icmp_echo_reply)",
			      opt, val, tok);
			return -EINVAL;
		}
		*mask |= 1U << k;
	}
	return 0;
}

static int parse_u32_min1(const char *opt, const char *val, void *dest, __u32 max)
{
	const char *why;

	if (xlb_u32_parse(val, 1, max, dest, &why)) {
		p_err("bad %s '%s': %s", opt, val, why);
		return -EINVAL;
	}
	return 0;
}

static int parse_sample(const char *opt, const char *val, void *dest)
{
	return parse_u32_min1(opt, val, dest, 1000000000);
}

static int parse_snaplen(const char *opt, const char *val, void *dest)
{
	return parse_u32_min1(opt, val, dest, XLB_CAPTURE_BYTES);
}

/* What the packets are read against, and where they go. */
struct run {
	const struct capture_args *a;
	struct xlb_state *st;
	bool by_vip;
	struct xlb_vip_key vip;
	/* --backend without --vip: its records in every VIP, by address */
	bool by_backend;
	__be32 backend[4];
	__u8 backend_family;
	FILE *out;		/* pcapng, or NULL: lines on stdout */
	__u64 written;
	__u64 mono_to_real;	/* CLOCK_REALTIME - CLOCK_MONOTONIC, ns */
	int err;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* The flow key of a frame as received (Ethernet, one VLAN tag at most):
 * its destination as a VIP's key. false when it has none. */
static bool frame_vip(const __u8 *d, __u32 len, struct xlb_vip_key *k,
		      __be32 src[4], __be16 *sport)
{
	__u32 off = 14, ihl;
	__u16 type;
	const __u8 *ip;

	if (len < 14)
		return false;
	type = d[12] << 8 | d[13];
	if (type == 0x8100 && len >= 18) {
		type = d[16] << 8 | d[17];
		off = 18;
	}
	memset(k, 0, sizeof(*k));
	memset(src, 0, 16);
	ip = d + off;
	if (type == 0x0800 && len >= off + 20) {
		ihl = (ip[0] & 0xf) * 4;
		k->family = XLB_AF_INET;
		k->proto = ip[9];
		memcpy(k->addr, ip + 16, 4);
		memcpy(src, ip + 12, 4);
		off += ihl;
	} else if (type == 0x86dd && len >= off + 40) {
		k->family = XLB_AF_INET6;
		k->proto = ip[6];
		memcpy(k->addr, ip + 24, 16);
		memcpy(src, ip + 8, 16);
		off += 40;
	} else {
		return false;
	}
	if ((k->proto == IPPROTO_TCP || k->proto == IPPROTO_UDP) && len >= off + 4) {
		memcpy(sport, d + off, 2);
		memcpy(&k->port, d + off + 2, 2);
	}
	return true;
}

/* The VIP of a record: a forward's by its id, another's by its frame. */
static bool rec_vip(const struct run *r, const struct xlb_capture_rec *rec,
		    struct xlb_vip_key *k)
{
	__be32 src[4];
	__be16 sport = 0;
	__u32 i;

	if (rec->reason == XLB_STAT_FORWARD) {
		for (i = 0; i < r->st->n_vips; i++)
			if (r->st->vips[i].vip.id == rec->vip_id) {
				*k = r->st->vips[i].key;
				return true;
			}
		return false;
	}
	if (!frame_vip(rec->data, rec->caplen, k, src, &sport) ||
	    k->proto & XLB_VIP_PROTO_ALL_PORTS)
		return false;
	if (xlb_state_vip_find(r->st, k))
		return true;
	/* As the datapath: the VIP of the port, else the all-port one. */
	k->port = 0;
	k->proto |= XLB_VIP_PROTO_ALL_PORTS;
	return xlb_state_vip_find(r->st, k);
}

static const char *verdict_str(__u32 v)
{
	switch (v) {
	case XDP_DROP:		return "drop";
	case XDP_PASS:		return "pass";
	case XDP_TX:		return "tx";
	case XDP_REDIRECT:	return "redirect";
	}
	return "aborted";
}

static int on_packet(const struct xlb_capture_rec *rec, void *ctx)
{
	struct run *r = ctx;
	char vip[XLB_VIP_STRLEN] = "", be[XLB_ADDR_STRLEN] = "", text[256];
	char src[XLB_ADDR_STRLEN], dst[XLB_VIP_STRLEN];
	const struct xlb_backend *b = NULL;
	struct xlb_vip_key k, fk;
	__be32 saddr[4];
	__be16 sport = 0;
	bool has_vip = rec_vip(r, rec, &k);
	__u32 caplen = rec->caplen < r->a->snaplen ? rec->caplen : r->a->snaplen;

	if (r->by_vip && (!has_vip || memcmp(&k, &r->vip, sizeof(k))))
		return 0;
	if (r->by_backend &&
	    (!rec->backend_id || rec->backend_id >= XLB_MAX_BACKENDS ||
	     r->st->backends[rec->backend_id].family != r->backend_family ||
	     memcmp(r->st->backends[rec->backend_id].addr, r->backend, sizeof(r->backend))))
		return 0;
	if (has_vip)
		xlb_vip_str(&k, vip, sizeof(vip));
	if (rec->backend_id && rec->backend_id < XLB_MAX_BACKENDS &&
	    (r->st->backends[rec->backend_id].flags & XLB_BE_F_IN_USE)) {
		b = &r->st->backends[rec->backend_id];
		xlb_addr_str(b->addr, b->family, be, sizeof(be));
	}
	snprintf(text, sizeof(text), "verdict %s reason %s%s%s%s%s",
		 verdict_str(rec->verdict),
		 rec->reason < XLB_STAT__MAX ? reason_names[rec->reason] : "?",
		 vip[0] ? " vip " : "", vip, be[0] ? " backend " : "", be);
	if (r->out) {
		if (xlb_pcapng_frame(r->out, rec->ts_ns + r->mono_to_real, rec->data,
				     caplen, rec->len, text))
			return r->err = -EIO;
	} else {
		src[0] = dst[0] = '\0';
		if (frame_vip(rec->data, rec->caplen, &fk, saddr, &sport)) {
			xlb_addr_str(saddr, fk.family, src, sizeof(src));
			xlb_vip_str(&fk, dst, sizeof(dst));
		}
		if (xlb_opts.json)
			printf("{\"time\":%.6f,\"verdict\":\"%s\",\"reason\":\"%s\",\"vip\":\"%s\","
			       "\"backend\":\"%s\",\"src\":\"%s\",\"dst\":\"%s\",\"len\":%u}\n",
			       rec->ts_ns / 1e9, verdict_str(rec->verdict),
			       rec->reason < XLB_STAT__MAX ? reason_names[rec->reason] : "?",
			       vip, be, src, dst, rec->len);
		else
			printf("%.6f %s%s%s%s%s, %u bytes\n", rec->ts_ns / 1e9, text,
			       src[0] ? ", " : "", src, src[0] ? " -> " : "", dst, rec->len);
		if (ferror(stdout))
			return r->err = -EPIPE;
	}
	r->written++;
	return r->a->count && r->written >= r->a->count ? -ECANCELED : 0;
}

static __u64 clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int do_capture(int argc, char **argv)
{
	struct capture_args a = { .snaplen = XLB_CAPTURE_BYTES };
	const struct xlb_opt opts[] = {
		{ "--write", "-w", xlb_opt_str, &a.file, false },
		XLB_OPT_FLAG("--drops", &a.drops),
		XLB_OPT_FLAG("--forward", &a.forward),
		XLB_OPT_FN("--reason", parse_reasons, &a.reasons),
		XLB_OPT_FN("--vip", xlb_opt_str, &a.vip),
		XLB_OPT_FN("--backend", xlb_opt_str, &a.backend),
		XLB_OPT_FN("--count", xlb_opt_u64, &a.count),
		XLB_OPT_FN("--duration", xlb_opt_u64, &a.duration),
		XLB_OPT_FN("--sample", parse_sample, &a.sample),
		XLB_OPT_FN("--snaplen", parse_snaplen, &a.snaplen),
		{ NULL },
	};
	struct xlb_capture_cfg cfg = { .backend_id = XLB_CAPTURE_ANY };
	struct xlb_capture_stats totals;
	struct xlb_capture *c = NULL;
	struct run r = { .a = &a };
	struct xlb_instance inst;
	struct sigaction sa = { .sa_handler = on_signal };
	__be32 baddr[4];
	__u8 bfamily;
	__u64 end_ns;
	__u32 id, k;
	int err;

	err = xlb_cmd_args(opts, &argc, argv, capture_help, 0, CAPTURE_USAGE);
	if (err)
		return err;
	if (a.vip && xlb_vip_arg(a.vip, &r.vip))
		return -EINVAL;
	r.by_vip = a.vip;
	if (a.backend && xlb_addr_arg(a.backend, baddr, &bfamily))
		return -EINVAL;
	cfg.reasons = a.reasons;
	if (a.forward)
		cfg.reasons |= 1U << XLB_STAT_FORWARD;
	if (a.drops)
		for (k = 0; k < XLB_STAT_REASONS; k++)
			if (!strncmp(reason_names[k], "drop_", 5))
				cfg.reasons |= 1U << k;
	cfg.sample = a.sample;

	err = xlb_state_open(&inst, &xlb_opts.instance, &r.st);
	if (err)
		return err;
	if (r.by_vip && !xlb_state_vip_find(r.st, &r.vip)) {
		p_err("no VIP %s", a.vip);
		err = -ENOENT;
		goto out_inst;
	}
	if (a.backend) {
		const struct xlb_state_vip *v = r.by_vip ? xlb_state_vip_find(r.st, &r.vip) : NULL;

		for (id = 1; id < XLB_MAX_BACKENDS; id++) {
			const struct xlb_backend *b = &r.st->backends[id];

			if ((b->flags & XLB_BE_F_IN_USE) && b->family == bfamily &&
			    !memcmp(b->addr, baddr, sizeof(baddr)) &&
			    (!v || b->vip_id == v->vip.id))
				break;
		}
		if (id == XLB_MAX_BACKENDS) {
			p_err("no backend %s%s%s", a.backend, r.by_vip ? " of VIP " : "",
			      r.by_vip ? a.vip : "");
			err = -ENOENT;
			goto out_inst;
		}
		/* Of one VIP, one record, which the datapath filters on; of
		 * any, the address may have a record in several: the reader
		 * filters. */
		if (v) {
			cfg.backend_id = id;
		} else {
			r.by_backend = true;
			memcpy(r.backend, baddr, sizeof(baddr));
			r.backend_family = bfamily;
		}
	}
	/* No packet of a VIP is one of these: with --vip, the ring is
	 * spared the host's other traffic. */
	if (r.by_vip && !cfg.reasons)
		cfg.reasons = ~0U & ~(1U << XLB_STAT_PASS_NOT_IP) &
			      ~(1U << XLB_STAT_PASS_NOT_VIP);
	err = xlb_capture_start(&inst, &cfg, &c);
	/* The instance's lock is not held while the capture runs. */
	xlb_instance_close(&inst);
	if (err)
		goto out_file;
	/* Only once the capture runs: a refused one leaves the file alone. */
	if (a.file) {
		r.out = strcmp(a.file, "-") ? fopen(a.file, "w") : stdout;
		if (!r.out || xlb_pcapng_start(r.out, a.snaplen)) {
			err = r.out ? -EIO : -errno;
			p_err("cannot write %s: %s", a.file, strerror(-err));
			xlb_capture_stop(c, NULL);
			goto out_file;
		}
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	r.mono_to_real = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
	p_info("xlb: capturing on %u program%s of the instance in %s%s", xlb_capture_programs(c),
	       xlb_capture_programs(c) == 1 ? "" : "s", xlb_opts.instance.pin_dir ?: "",
	       a.count || a.duration ? "" : " (Ctrl-C stops)");
	end_ns = a.duration ? clock_ns(CLOCK_MONOTONIC) + a.duration * 1000000000ULL : 0;
	while (!stop && (!end_ns || clock_ns(CLOCK_MONOTONIC) < end_ns)) {
		err = xlb_capture_poll(c, 100, on_packet, &r);
		if (err)
			break;
		if (r.out)
			fflush(r.out);
	}
	if (err == -ECANCELED)
		err = 0;
	else if (err && !r.err)
		p_err("capture failed: %s", strerror(-err));
	else if (r.err)
		p_err(r.err == -EPIPE ? "the reader went away" : "cannot write %s",
		      a.file ?: "stdout");
	xlb_capture_stop(c, &totals);
	if (totals.lost)
		p_info("xlb: %llu packet%s written; the datapath handed over %llu and lost %llu: the ring was full, the reader fell behind (try --sample or a narrower filter)",
		       (unsigned long long)r.written, r.written == 1 ? "" : "s",
		       (unsigned long long)totals.captured, (unsigned long long)totals.lost);
	else
		p_info("xlb: %llu packet%s written; the datapath handed over %llu, lost none",
		       (unsigned long long)r.written, r.written == 1 ? "" : "s",
		       (unsigned long long)totals.captured);
	goto out_file;
out_inst:
	xlb_instance_close(&inst);
out_file:
	if (r.out && r.out != stdout && fclose(r.out) && !err) {
		err = -EIO;
		p_err("cannot write %s", a.file);
	}
	xlb_state_free(r.st);
	return err;
}
