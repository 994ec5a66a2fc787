// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xlb exporter: the instance's counters over HTTP for Prometheus, the text
 * of `xlb stats --prometheus` at /metrics, read afresh at every scrape.
 * The HTTP side is libmicrohttpd's. It listens on loopback unless told
 * otherwise: counters name VIPs and backends.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <microhttpd.h>

#include "cli.h"
#include "cmd.h"
#include "numbers.h"
#include "opts.h"

#define EXPORTER_USAGE "xlb exporter [--listen ADDR:PORT]"
#define EXPORTER_DEFAULT "127.0.0.1:9688"

static int exporter_help(void)
{
	printf("Usage: " EXPORTER_USAGE "\n"
	       "Serve the instance's counters (what `xlb stats --prometheus` prints) to\n"
	       "Prometheus over HTTP, at /metrics, read afresh at each scrape; until\n"
	       "SIGINT or SIGTERM.\n"
	       "  --listen  the address and port to listen on (default " EXPORTER_DEFAULT
	       ";\n"
	       "            IPv6 in brackets). The counters name every VIP and backend:\n"
	       "            keep it on loopback or a management network.\n");
	return 0;
}

/* ADDR:PORT (IPv6 in brackets) into a socket address: any address,
 * loopback and the unspecified one included, as a listener takes. */
static int listen_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in6 *a6 = (void *)ss;
	struct sockaddr_in *a4 = (void *)ss;
	const char *colon = strrchr(s, ':'), *why;
	char host[INET6_ADDRSTRLEN + 2];
	size_t n = colon ? (size_t)(colon - s) : 0;
	__u32 port;

	memset(ss, 0, sizeof(*ss));
	if (!colon || n == 0 || n >= sizeof(host) ||
	    xlb_u32_parse(colon + 1, 1, 65535, &port, &why)) {
		p_err("bad --listen '%s': expected ADDR:PORT ([IPV6]:PORT), port 1..65535", s);
		return -EINVAL;
	}
	memcpy(host, s, n);
	host[n] = '\0';
	if (host[0] == '[' && host[n - 1] == ']') {
		host[n - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) == 1) {
			a6->sin6_family = AF_INET6;
			a6->sin6_port = htons(port);
			*len = sizeof(*a6);
			return 0;
		}
	} else if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		*len = sizeof(*a4);
		return 0;
	}
	p_err("bad --listen '%s': not an IPv4 address or a bracketed IPv6 one", s);
	return -EINVAL;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status,
			     const char *type, char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload_data,
				  size_t *upload_size, void **state)
{
	char *body = NULL;
	size_t len = 0;
	FILE *f;

	(void)cls;
	(void)version;
	(void)upload_data;
	(void)upload_size;
	(void)state;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
			     strdup("GET or HEAD only\n"), 17);
	if (strcmp(url, "/metrics"))
		return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain",
			     strdup("the counters are at /metrics\n"), 29);
	f = open_memstream(&body, &len);
	if (!f)
		return MHD_NO;
	if (xlb_stats_prometheus(f)) {
		fclose(f);
		free(body);
		return reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain",
			     strdup("cannot read the instance's counters (see xlb exporter's log)\n"),
			     61);
	}
	fclose(f);
	return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
		     body, len);
}

int do_exporter(int argc, char **argv)
{
	const char *listen = EXPORTER_DEFAULT;
	const struct xlb_opt opts[] = {
		XLB_OPT_FN("--listen", xlb_opt_str, &listen),
		{ NULL },
	};
	struct sockaddr_storage ss;
	struct MHD_Daemon *d;
	sigset_t set;
	socklen_t len;
	int err, sig;

	err = xlb_cmd_args(opts, &argc, argv, exporter_help, 0, EXPORTER_USAGE);
	if (err)
		return err;
	err = listen_parse(listen, &ss, &len);
	if (err)
		return err;
	/* The counters must be readable before anything listens. */
	{
		FILE *f = fopen("/dev/null", "w");

		err = f ? xlb_stats_prometheus(f) : -errno;
		if (f)
			fclose(f);
		if (err)
			return err;
	}
	/* The signals are waited for here, not delivered to a thread. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
			     (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
			     0, NULL, NULL, on_request, NULL,
			     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)16,
			     MHD_OPTION_END);
	if (!d) {
		p_err("cannot listen on %s: %s", listen, strerror(errno ?: EADDRINUSE));
		return -EADDRINUSE;
	}
	p_info("xlb: serving the counters of %s at http://%s/metrics",
	       xlb_opts.instance.pin_dir ?: "the instance", listen);
	sigwait(&set, &sig);
	MHD_stop_daemon(d);
	return 0;
}
