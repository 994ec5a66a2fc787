// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The probes cannot be fooled (loader/health/probe.h):
 *  - an HTTP status line is read strictly: "HTTP/1.0 2000 Whatever" is
 *    not status 200, nor is any other malformed line, end to end through
 *    the prober too;
 *  - a UDP probe's nonce is fresh per probe and the same in send and
 *    expect; a reply that does not echo it, datagrams that hold the
 *    expected bytes from another port, and the answer to an earlier probe
 *    do not make a probe up; the echo of its own nonce does.
 * The prober's cases run on the loopback of a network namespace of their
 * own (root), with no probe path: the mark routes nothing there.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "probe.h"
#include "testlib.h"

/* ---- the status line, as a table ---- */

static const struct {
	const char *line;
	int err;
	unsigned int status;
} status_lines[] = {
	{ "HTTP/1.0 200 OK", 0, 200 },
	{ "HTTP/1.1 503 Service Unavailable", 0, 503 },
	{ "HTTP/1.1 204", 0, 204 },
	{ "HTTP/1.1 200 ", 0, 200 },
	{ "HTTP/1.0 200 OK\tfine", 0, 200 },
	{ "HTTP/1.0 2000 Whatever", -EPROTO, 0 },
	{ "HTTP/1.0 20 OK", -EPROTO, 0 },
	{ "HTTP/1.0 20", -EPROTO, 0 },
	{ "HTTP/1.0 +20 OK", -EPROTO, 0 },
	{ "HTTP/1.0 2x0 OK", -EPROTO, 0 },
	{ "HTTP/1.0  200 OK", -EPROTO, 0 },
	{ "HTTP/1.0 200OK", -EPROTO, 0 },
	{ "HTTP/1.2 200 OK", -EPROTO, 0 },
	{ "HTTP/2 200 OK", -EPROTO, 0 },
	{ "HTTP/1.0\t200 OK", -EPROTO, 0 },
	{ "http/1.0 200 OK", -EPROTO, 0 },
	{ " HTTP/1.0 200 OK", -EPROTO, 0 },
	{ "HTTP/1.0 200 O\nK", -EPROTO, 0 },
	{ "HTTP/1.0 200 O\x01K", -EPROTO, 0 },
	{ "", -EPROTO, 0 },
};

static void http_status_line_is_read_strictly(void)
{
	unsigned int status;
	size_t i;
	int err;

	for (i = 0; i < sizeof(status_lines) / sizeof(status_lines[0]); i++) {
		status = 0;
		err = xlb_http_status_parse(status_lines[i].line,
					    strlen(status_lines[i].line), &status);
		if (!ASSERT_EQ(err, status_lines[i].err, status_lines[i].line))
			continue;
		if (!err)
			ASSERT_EQ(status, status_lines[i].status, status_lines[i].line);
	}
}

static void nonce_is_replaced_everywhere(void)
{
	static const char token[] = "0123456789abcdef";
	__u8 out[XLB_PROBE_WIRE_MAX];
	__u8 full[XLB_PROBE_DATA_MAX];
	size_t n, i;

	n = xlb_probe_expand((const __u8 *)"ping {nonce}!{nonce}", 20, token, out);
	ASSERT_EQ(n, 5 + 16 + 1 + 16, "length");
	ASSERT_MEM_EQ(out, "ping 0123456789abcdef!0123456789abcdef", n, "bytes");
	n = xlb_probe_expand((const __u8 *)"{nonce", 6, token, out);
	ASSERT_MEM_EQ(out, "{nonce", 6, "half a placeholder is kept");
	/* As many placeholders as the settings hold still fit. */
	for (i = 0; i + 7 <= sizeof(full); i += 7)
		memcpy(full + i, XLB_PROBE_NONCE, 7);
	memset(full + i, 'x', sizeof(full) - i);
	n = xlb_probe_expand(full, sizeof(full), token, out);
	ASSERT_LE(n, XLB_PROBE_WIRE_MAX, "the longest expansion fits");
}

/* ---- the prober, on a loopback ---- */

static bool netns_ready;

static bool loopback(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int fd;

	if (netns_ready)
		return true;
	if (!test_have_root()) {
		test_skip_env("needs root");
		return false;
	}
	if (!ASSERT_OK(unshare(CLONE_NEWNET) ? -errno : 0, "unshare"))
		return false;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	ifr.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
	if (!ASSERT_OK(fd < 0 || ioctl(fd, SIOCSIFFLAGS, &ifr) ? -errno : 0, "lo up"))
		return false;
	close(fd);
	netns_ready = true;
	return true;
}

/* A socket of type on 127.0.0.1, its port in *port. */
static int server(int type, __u16 *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, len) ||
	    (type == SOCK_STREAM && listen(fd, 8)) ||
	    getsockname(fd, (struct sockaddr *)&sin, &len))
		return -1;
	*port = ntohs(sin.sin_port);
	return fd;
}

static struct xlb_probe probe_of(int kind, __u16 port)
{
	struct xlb_probe pr = {
		.backend_id = 7, .family = XLB_AF_INET, .kind = kind,
		.port = port, .timeout_ms = 300, .http_status = 200,
	};

	pr.vip[0] = htonl(INADDR_LOOPBACK);
	strcpy(pr.path, "/");
	return pr;
}

static void take(void *cookie, const struct xlb_probe_result *res, void *ctx)
{
	(void)cookie;
	*(struct xlb_probe_result *)ctx = *res;
}

/* Poll until the probe in flight reports; false when it never does. */
static bool result(struct xlb_prober *p, struct xlb_probe_result *res)
{
	int i;

	for (i = 0; i < 50 && xlb_prober_busy(p); i++)
		if (xlb_prober_poll(p, 20, take, res) < 0)
			return false;
	return !xlb_prober_busy(p);
}

/* An HTTP probe answered with line: its result. */
static bool http_answered(const char *line, struct xlb_probe_result *res)
{
	struct xlb_probe pr;
	struct xlb_prober *p = NULL;
	char answer[128], req[512];
	int lfd, cfd = -1;
	bool ok = false;
	__u16 port;

	lfd = server(SOCK_STREAM, &port);
	pr = probe_of(XLB_PROBE_HTTP, port);
	if (!ASSERT_GE(lfd, 0, "http server") ||
	    !ASSERT_OK(xlb_prober_new(&p), "prober") ||
	    !ASSERT_OK(xlb_prober_start(p, &pr, NULL), "start"))
		goto out;
	/* The connect completes in the backlog; the request follows. */
	xlb_prober_poll(p, 50, take, res);
	cfd = accept(lfd, NULL, NULL);
	if (!ASSERT_GE(cfd, 0, "accept") ||
	    !ASSERT_GT(recv(cfd, req, sizeof(req), 0), 0, "the request"))
		goto out;
	snprintf(answer, sizeof(answer), "%s\r\nContent-Length: 2\r\n\r\nok", line);
	if (!ASSERT_EQ(send(cfd, answer, strlen(answer), 0), (ssize_t)strlen(answer), "answer"))
		goto out;
	ok = ASSERT_TRUE(result(p, res), "a result");
out:
	xlb_prober_free(p);
	if (cfd >= 0)
		close(cfd);
	if (lfd >= 0)
		close(lfd);
	return ok;
}

static void http_probe_is_not_fooled(void)
{
	static const char *const bad[] = {
		"HTTP/1.0 2000 Whatever", "HTTP/1.0 200OK", "HTTP/1.9 200 OK",
	};
	struct xlb_probe_result res;
	size_t i;

	if (!loopback())
		return;
	if (http_answered("HTTP/1.0 200 OK", &res))
		ASSERT_TRUE(res.ok, "a well-formed 200 is up");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (!http_answered(bad[i], &res))
			continue;
		ASSERT_TRUE(!res.ok, bad[i]);
		ASSERT_TRUE(!strcmp(res.error, "not an HTTP response"), res.error);
	}
}

/*
 * A UDP probe to srv, with send and expect; the server answers each
 * datagram with reply (NULL: echoes it), and before that, a spoofer on
 * another port of the same address sends spoof to the probe's port.
 */
static bool udp_answered(const char *send_, const char *expect, const char *reply,
			 const char *spoof, struct xlb_probe_result *res,
			 char *got, size_t got_len)
{
	struct sockaddr_in from;
	socklen_t from_len = sizeof(from);
	struct xlb_prober *p = NULL;
	struct xlb_probe pr;
	int sfd, xfd = -1;
	bool ok = false;
	__u16 port, xport;
	char buf[256];
	ssize_t n;

	sfd = server(SOCK_DGRAM, &port);
	pr = probe_of(XLB_PROBE_UDP, port);
	pr.send_len = strlen(send_);
	memcpy(pr.send, send_, pr.send_len);
	pr.expect_len = strlen(expect);
	memcpy(pr.expect, expect, pr.expect_len);
	if (!ASSERT_GE(sfd, 0, "udp server") ||
	    !ASSERT_OK(xlb_prober_new(&p), "prober") ||
	    !ASSERT_OK(xlb_prober_start(p, &pr, NULL), "start"))
		goto out;
	n = recvfrom(sfd, buf, sizeof(buf) - 1, 0, (struct sockaddr *)&from, &from_len);
	if (!ASSERT_GT(n, 0, "the probe's datagram"))
		goto out;
	buf[n] = 0;
	snprintf(got, got_len, "%s", buf);
	if (spoof) {
		xfd = server(SOCK_DGRAM, &xport);
		if (!ASSERT_GE(xfd, 0, "spoofer") ||
		    !ASSERT_GT(sendto(xfd, spoof, strlen(spoof), 0,
				      (struct sockaddr *)&from, from_len), 0, "spoof"))
			goto out;
		xlb_prober_poll(p, 50, take, res);
		if (!ASSERT_EQ(xlb_prober_busy(p), 1, "still in flight after the spoof"))
			goto out;
	}
	if (reply)
		n = strlen(reply);
	if (!ASSERT_GT(sendto(sfd, reply ? reply : buf, n, 0,
			      (struct sockaddr *)&from, from_len), 0, "reply"))
		goto out;
	ok = ASSERT_TRUE(result(p, res), "a result");
out:
	xlb_prober_free(p);
	if (xfd >= 0)
		close(xfd);
	if (sfd >= 0)
		close(sfd);
	return ok;
}

static void udp_probe_is_not_fooled(void)
{
	struct xlb_probe_result res;
	char got[256], first[256];

	if (!loopback())
		return;
	/* Echoed with its nonce: up; the nonce was replaced, fresh. */
	if (udp_answered("ping {nonce}", "pong {nonce}", NULL, NULL, &res,
			 first, sizeof(first)))
		ASSERT_TRUE(!res.ok, "an echo of the request is not the expected reply");
	if (udp_answered("{nonce}", "{nonce}", NULL, NULL, &res, first, sizeof(first))) {
		ASSERT_TRUE(res.ok, "its own nonce echoed: up");
		ASSERT_EQ(strlen(first), XLB_PROBE_NONCE_LEN, "the nonce on the wire");
		ASSERT_TRUE(!strchr(first, '{'), first);
	}
	/* A reply made without the nonce (the expected text known in
	 * advance, as a spoofer knows it): not up. */
	if (udp_answered("ping {nonce}", "pong {nonce}", "pong {nonce}", NULL,
			 &res, got, sizeof(got)))
		ASSERT_TRUE(!res.ok, "the placeholder itself is not the nonce");
	if (udp_answered("{nonce}", "{nonce}", first, NULL, &res, got, sizeof(got))) {
		ASSERT_TRUE(strcmp(got, first) != 0, "a new nonce per probe");
		ASSERT_TRUE(!res.ok, "the answer to an earlier probe is not up");
	}
	/* The expected bytes from another port: ignored, and the real
	 * reply that follows counts. */
	if (udp_answered("ping", "pong", "pong", "pong", &res, got, sizeof(got)))
		ASSERT_TRUE(res.ok, "the backend's reply after a spoof: up");
	if (udp_answered("ping", "pong", "nope", "pong", &res, got, sizeof(got)))
		ASSERT_TRUE(!res.ok, "a datagram from another port is not the reply");
}

TEST_MAIN(
	TEST(http_status_line_is_read_strictly),
	TEST(nonce_is_replaced_everywhere),
	TEST(http_probe_is_not_fooled),
	TEST(udp_probe_is_not_fooled),
)
