// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xlb exporter: the instance's counters over HTTP for Prometheus, the text
 * of `xlb stats --prometheus` at /metrics, read afresh at a scrape (at most
 * once a second; four connections an address, sixteen in all).
 * The HTTP side is libmicrohttpd's. It listens on loopback unless told
 * otherwise: counters name VIPs and backends.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
	       "Prometheus over HTTP, at /metrics, read afresh at a scrape (at most once\n"
	       "a second); until SIGINT or SIGTERM.\n"
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

/* The last scrape's text: scrapes closer together than CACHE_S share it,
 * so that no client can make the exporter read the maps (and take the
 * instance's lock) back to back. One thread serves every request
 * (libmicrohttpd's internal polling thread): no lock. */
#define CACHE_S	1.0

struct exporter {
	char *text;
	size_t len;
	double at;		/* CLOCK_MONOTONIC, s */
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The counters' text, read afresh when the last is older than CACHE_S.
 * 0 or -errno. */
static int refresh(struct exporter *e)
{
	char *body = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	if (e->text && mono_s() - e->at < CACHE_S)
		return 0;
	f = open_memstream(&body, &len);
	if (!f)
		return -errno;
	err = xlb_stats_prometheus(f);
	fclose(f);
	if (err) {
		free(body);
		return err;
	}
	free(e->text);
	e->text = body;
	e->len = len;
	e->at = mono_s();
	return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload_data,
				  size_t *upload_size, void **state)
{
	struct exporter *e = cls;
	char *body;

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
	if (refresh(e))
		return reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain",
			     strdup("cannot read the instance's counters (see xlb exporter's log)\n"),
			     61);
	body = malloc(e->len);
	if (!body)
		return MHD_NO;
	memcpy(body, e->text, e->len);
	return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
		     body, e->len);
}

int do_exporter(int argc, char **argv)
{
	const char *listen = EXPORTER_DEFAULT;
	const struct xlb_opt opts[] = {
		XLB_OPT_FN("--listen", xlb_opt_str, &listen),
		{ NULL },
	};
	struct exporter e = {};
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
	err = refresh(&e);
	if (err)
		return err;
	/* The signals are waited for here, not delivered to a thread. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
			     (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
			     0, NULL, NULL, on_request, &e,
			     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)16,
			     MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)4,
			     MHD_OPTION_END);
	if (!d) {
		p_err("cannot listen on %s: %s", listen, strerror(errno ?: EADDRINUSE));
		free(e.text);
		return -EADDRINUSE;
	}
	p_info("xlb: serving the counters of %s at http://%s/metrics",
	       xlb_opts.instance.pin_dir ?: "the instance", listen);
	sigwait(&set, &sig);
	MHD_stop_daemon(d);
	free(e.text);
	return 0;
}
