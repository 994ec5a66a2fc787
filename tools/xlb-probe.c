// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xlb-probe: health probes by hand. Installs the probe path of the
 * instance in --pin-dir (loader/health/hc_path.h), runs every probe given,
 * all at once, prints one line per probe, and removes the path again.
 *
 *   xlb-probe [--pin-dir DIR] [--timeout-ms T] PROBE...
 *
 * PROBE is KIND,BACKEND_ID,VIP,PORT[,A[,B]]:
 *   tcp,3,192.0.2.10,80                 up when the connection is accepted
 *   http,3,192.0.2.10,80,/health,200    up when GET /health answers 200
 *   udp,3,2001:db8:f::10,5000,ping,b3   up when "ping" is answered by a
 *                                       datagram holding "b3" (any reply
 *                                       when B is absent)
 * Output, tab-separated: index (from 1), up or down, round trip in
 * microseconds, the error ("-" when up), the start of the answer.
 * Exit status 0 when every probe ran (up or down), 1 otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xlb.h"
#include "numbers.h"
#include "report.h"
#include "hc_path.h"
#include "probe.h"

#define MAX_PROBES	256

struct outcome {
	bool reported;
	struct xlb_probe_result res;
};

static int usage(void)
{
	fprintf(stderr,
		"usage: xlb-probe [--pin-dir DIR] [--timeout-ms T] PROBE...\n"
		"  PROBE: tcp,ID,VIP,PORT | http,ID,VIP,PORT[,PATH[,STATUS]] |\n"
		"         udp,ID,VIP,PORT[,SEND[,EXPECT]]\n");
	return EXIT_FAILURE;
}

static int parse_u32(const char *what, const char *text, __u32 min, __u32 max,
		     __u32 *out)
{
	const char *why;

	if (xlb_u32_parse(text, min, max, out, &why)) {
		p_err("bad %s '%s': %s", what, text, why);
		return -EINVAL;
	}
	return 0;
}

static int copy_data(const char *what, const char *text, __u8 *out, __u8 *len)
{
	size_t n = strlen(text);

	if (n > XLB_PROBE_DATA_MAX) {
		p_err("%s '%s' is longer than %d bytes", what, text, XLB_PROBE_DATA_MAX);
		return -EINVAL;
	}
	memcpy(out, text, n);
	*len = n;
	return 0;
}

static int parse_probe(char *spec, __u32 timeout_ms, struct xlb_probe *pr)
{
	char *f[6] = {}, *save = NULL, *tok;
	__u32 v;
	int n = 0;

	for (tok = strtok_r(spec, ",", &save); tok && n < 6;
	     tok = strtok_r(NULL, ",", &save))
		f[n++] = tok;
	if (n < 4 || tok) {
		p_err("bad probe: KIND,BACKEND_ID,VIP,PORT[,A[,B]]");
		return -EINVAL;
	}
	memset(pr, 0, sizeof(*pr));
	pr->timeout_ms = timeout_ms;
	if (!strcmp(f[0], "tcp")) {
		pr->kind = XLB_PROBE_TCP;
	} else if (!strcmp(f[0], "http")) {
		pr->kind = XLB_PROBE_HTTP;
	} else if (!strcmp(f[0], "udp")) {
		pr->kind = XLB_PROBE_UDP;
	} else {
		p_err("bad probe kind '%s': tcp, http or udp", f[0]);
		return -EINVAL;
	}
	if (parse_u32("backend id", f[1], 1, XLB_MAX_BACKENDS - 1, &pr->backend_id) ||
	    parse_u32("port", f[3], 1, 65535, &v))
		return -EINVAL;
	pr->port = v;
	if (inet_pton(AF_INET, f[2], pr->vip) == 1) {
		pr->family = XLB_AF_INET;
	} else if (inet_pton(AF_INET6, f[2], pr->vip) == 1) {
		pr->family = XLB_AF_INET6;
	} else {
		p_err("bad VIP address '%s'", f[2]);
		return -EINVAL;
	}
	switch (pr->kind) {
	case XLB_PROBE_HTTP:
		snprintf(pr->path, sizeof(pr->path), "%s", f[4] ? f[4] : "/");
		pr->http_status = 200;
		if (f[5] && parse_u32("HTTP status", f[5], 100, 599, &v))
			return -EINVAL;
		if (f[5])
			pr->http_status = v;
		return 0;
	case XLB_PROBE_UDP:
		if (f[4] && copy_data("request", f[4], pr->send, &pr->send_len))
			return -EINVAL;
		if (f[5] && copy_data("expected reply", f[5], pr->expect, &pr->expect_len))
			return -EINVAL;
		return 0;
	default:
		return f[4] ? (p_err("a tcp probe takes no more fields"), -EINVAL) : 0;
	}
}

static void on_done(void *cookie, const struct xlb_probe_result *res, void *ctx)
{
	struct outcome *o = cookie;

	(void)ctx;
	o->reported = true;
	o->res = *res;
}

int main(int argc, char **argv)
{
	static struct xlb_probe probes[MAX_PROBES];
	static struct outcome outs[MAX_PROBES];
	const char *pin_dir = XLB_DEFAULT_PIN_DIR;
	struct xlb_hc_path *path = NULL;
	struct xlb_prober *prober = NULL;
	__u32 timeout_ms = 1000;
	int i, n = 0, err, ret = EXIT_FAILURE;

	xlb_progname = "xlb-probe";
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pin-dir") && i + 1 < argc) {
			pin_dir = argv[++i];
		} else if (!strcmp(argv[i], "--timeout-ms") && i + 1 < argc) {
			if (parse_u32("timeout", argv[++i], 1, 3600000, &timeout_ms))
				return EXIT_FAILURE;
		} else if (argv[i][0] == '-') {
			return usage();
		} else if (n == MAX_PROBES) {
			p_err("at most %d probes", MAX_PROBES);
			return EXIT_FAILURE;
		} else if (parse_probe(argv[i], timeout_ms, &probes[n++])) {
			return EXIT_FAILURE;
		}
	}
	if (!n)
		return usage();

	err = xlb_hc_path_install(pin_dir, NULL, &path);
	if (err)
		return EXIT_FAILURE;
	err = xlb_prober_new(&prober);
	if (err) {
		p_err("cannot start the prober: %s", strerror(-err));
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		err = xlb_prober_start(prober, &probes[i], &outs[i]);
		if (err) {
			p_err("cannot start probe %d: %s", i + 1, strerror(-err));
			goto cleanup;
		}
	}
	while (xlb_prober_busy(prober)) {
		err = xlb_prober_poll(prober, -1, on_done, NULL);
		if (err < 0 && err != -EINTR) {
			p_err("waiting for the probes: %s", strerror(-err));
			goto cleanup;
		}
	}
	for (i = 0; i < n; i++)
		printf("%d\t%s\t%u\t%s\t%s\n", i + 1,
		       outs[i].res.ok ? "up" : "down", outs[i].res.rtt_us,
		       outs[i].res.ok ? "-" : outs[i].res.error, outs[i].res.answer);
	ret = EXIT_SUCCESS;
cleanup:
	xlb_prober_free(prober);
	xlb_hc_path_remove(path);
	return ret;
}
