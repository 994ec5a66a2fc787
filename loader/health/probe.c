// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The probe engine (probe.h): every probe a non-blocking socket marked for
 * its backend and connected to the VIP, all of them watched by one epoll
 * descriptor; each poll reports what finished and what ran out of time.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "xlb.h"
#include "probe.h"

#define PROBE_BUF	512	/* enough for an HTTP status line and headers */
#define PROBE_EVENTS	64

enum probe_state {
	PROBE_CONNECTING,	/* TCP, HTTP: connect in progress */
	PROBE_READING,		/* HTTP: request sent; UDP: datagram sent */
	PROBE_DONE,		/* result ready, reported at the next poll */
};

struct probe_slot {
	struct xlb_probe probe;
	void *cookie;
	int fd;
	enum probe_state state;
	__u64 start_us, deadline_us;
	bool mismatch;		/* UDP: a reply without expect came */
	/* UDP: send and expect with this probe's nonce (probe.h). */
	__u8 send[XLB_PROBE_WIRE_MAX], expect[XLB_PROBE_WIRE_MAX];
	size_t send_len, expect_len;
	size_t got;
	char buf[PROBE_BUF + 1];
	struct xlb_probe_result res;
};

struct xlb_prober {
	int epfd;
	struct probe_slot **slots;
	size_t n, cap;
	size_t done;		/* slots already PROBE_DONE */
};

static __u64 now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int xlb_prober_new(struct xlb_prober **out)
{
	struct xlb_prober *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (p->epfd < 0) {
		free(p);
		return -errno;
	}
	*out = p;
	return 0;
}

static void slot_free(struct probe_slot *s)
{
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}

void xlb_prober_free(struct xlb_prober *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++)
		slot_free(p->slots[i]);
	free(p->slots);
	close(p->epfd);
	free(p);
}

size_t xlb_prober_busy(const struct xlb_prober *p)
{
	return p->n;
}

/* ------------------------------------------------------------------ */
/* Results                                                              */

/* An errno as probe.h words it: strerror's, lower case. */
static void set_errno(struct probe_slot *s, int err)
{
	snprintf(s->res.error, sizeof(s->res.error), "%s", strerror(err));
	s->res.error[0] = tolower((unsigned char)s->res.error[0]);
}

/* The slot has its result: close the socket at once (an RST for TCP, as
 * SO_LINGER 0 asks: no TIME_WAIT per probe) and report it at the next
 * poll. */
static void finish(struct xlb_prober *p, struct probe_slot *s, bool ok)
{
	s->res.ok = ok;
	s->res.rtt_us = (__u32)(now_us() - s->start_us);
	if (ok)
		s->res.error[0] = 0;
	if (s->fd >= 0) {
		epoll_ctl(p->epfd, EPOLL_CTL_DEL, s->fd, NULL);
		close(s->fd);
		s->fd = -1;
	}
	s->state = PROBE_DONE;
	p->done++;
}

static void fail_errno(struct xlb_prober *p, struct probe_slot *s, int err)
{
	set_errno(s, err);
	finish(p, s, false);
}

static void fail(struct xlb_prober *p, struct probe_slot *s, const char *why)
{
	snprintf(s->res.error, sizeof(s->res.error), "%s", why);
	finish(p, s, false);
}

/* Printable bytes of an answer, for a person to read. */
static void set_answer(struct probe_slot *s, const char *data, size_t len)
{
	size_t i, n = len < sizeof(s->res.answer) - 1 ? len : sizeof(s->res.answer) - 1;

	for (i = 0; i < n; i++)
		s->res.answer[i] = isprint((unsigned char)data[i]) ? data[i] : '.';
	s->res.answer[n] = 0;
}

/* ------------------------------------------------------------------ */
/* What goes out and what comes back                                    */

size_t xlb_probe_expand(const __u8 *data, size_t len, const char *token,
			__u8 *out)
{
	const size_t mark = sizeof(XLB_PROBE_NONCE) - 1;
	size_t i = 0, n = 0;

	while (i < len) {
		if (len - i >= mark && !memcmp(data + i, XLB_PROBE_NONCE, mark)) {
			memcpy(out + n, token, XLB_PROBE_NONCE_LEN);
			n += XLB_PROBE_NONCE_LEN;
			i += mark;
		} else {
			out[n++] = data[i++];
		}
	}
	return n;
}

/* A fresh token: the kernel's random bits, as hex. */
static int new_nonce(char token[XLB_PROBE_NONCE_LEN + 1])
{
	__u8 raw[XLB_PROBE_NONCE_LEN / 2];
	size_t i;

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return errno ? -errno : -EIO;
	for (i = 0; i < sizeof(raw); i++)
		snprintf(token + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

int xlb_http_status_parse(const char *line, size_t len, unsigned int *status)
{
	static const char v10[] = "HTTP/1.0 ", v11[] = "HTTP/1.1 ";
	const size_t pre = sizeof(v10) - 1;
	size_t i;

	if (len < pre + 3 ||
	    (memcmp(line, v10, pre) && memcmp(line, v11, pre)))
		return -EPROTO;
	for (i = pre; i < pre + 3; i++)
		if (line[i] < '0' || line[i] > '9')
			return -EPROTO;
	if (len > pre + 3 && line[pre + 3] != ' ')
		return -EPROTO;
	/* The reason phrase: visible characters, spaces and tabs. */
	for (i = pre + 4; i < len; i++)
		if (line[i] != '\t' && ((unsigned char)line[i] < ' ' ||
					line[i] == 0x7f))
			return -EPROTO;
	*status = (line[pre] - '0') * 100 + (line[pre + 1] - '0') * 10 +
		  (line[pre + 2] - '0');
	return 0;
}

/* ------------------------------------------------------------------ */
/* Starting                                                             */

static int check_probe(const struct xlb_probe *pr)
{
	if (pr->backend_id == XLB_BACKEND_NONE ||
	    pr->backend_id >= XLB_MAX_BACKENDS ||
	    (pr->family != XLB_AF_INET && pr->family != XLB_AF_INET6) ||
	    !pr->port || !pr->timeout_ms ||
	    pr->send_len > XLB_PROBE_DATA_MAX ||
	    pr->expect_len > XLB_PROBE_DATA_MAX)
		return -EINVAL;
	switch (pr->kind) {
	case XLB_PROBE_TCP:
	case XLB_PROBE_UDP:
		return 0;
	case XLB_PROBE_HTTP:
		if (pr->http_status < 100 || pr->http_status > 599 ||
		    pr->path[0] != '/' ||
		    !memchr(pr->path, 0, sizeof(pr->path)) ||
		    strpbrk(pr->path, " \r\n"))
			return -EINVAL;
		return 0;
	}
	return -EINVAL;
}

static socklen_t vip_sockaddr(const struct xlb_probe *pr,
			      struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (pr->family == XLB_AF_INET) {
		struct sockaddr_in *sin = (void *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(pr->port);
		sin->sin_addr.s_addr = pr->vip[0];
		return sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (void *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(pr->port);
		memcpy(&sin6->sin6_addr, pr->vip, 16);
		return sizeof(*sin6);
	}
}

/* The socket, marked for the backend. */
static int open_socket(const struct xlb_probe *pr)
{
	bool stream = pr->kind != XLB_PROBE_UDP;
	__u32 mark = XLB_HC_MARK_BASE | pr->backend_id;
	struct linger no_linger = { .l_onoff = 1, .l_linger = 0 };
	int fd, err;

	fd = socket(pr->family == XLB_AF_INET ? AF_INET : AF_INET6,
		    (stream ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* The mark picks the probe path's route (hc_path.h) for every
	 * packet of the socket, the connect's route lookup included. */
	if (setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) ||
	    (stream && setsockopt(fd, SOL_SOCKET, SO_LINGER, &no_linger,
				  sizeof(no_linger)))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int watch(struct xlb_prober *p, struct probe_slot *s, __u32 events)
{
	struct epoll_event ev = { .events = events, .data.ptr = s };

	return epoll_ctl(p->epfd, EPOLL_CTL_ADD, s->fd, &ev) ? -errno : 0;
}

static int rewatch(struct xlb_prober *p, struct probe_slot *s, __u32 events)
{
	struct epoll_event ev = { .events = events, .data.ptr = s };

	return epoll_ctl(p->epfd, EPOLL_CTL_MOD, s->fd, &ev) ? -errno : 0;
}

static void send_http(struct xlb_prober *p, struct probe_slot *s)
{
	const struct xlb_probe *pr = &s->probe;
	char req[XLB_PROBE_PATH_MAX + INET6_ADDRSTRLEN + 64], host[INET6_ADDRSTRLEN];
	char port[8] = "";
	ssize_t sent;
	int len, err;

	inet_ntop(pr->family == XLB_AF_INET ? AF_INET : AF_INET6, pr->vip,
		  host, sizeof(host));
	if (pr->port != 80)
		snprintf(port, sizeof(port), ":%u", pr->port);
	len = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s%s%s%s\r\n\r\n",
		       pr->path, pr->family == XLB_AF_INET6 ? "[" : "", host,
		       pr->family == XLB_AF_INET6 ? "]" : "", port);
	/* A few dozen bytes on a fresh connection: all of it or an error. */
	sent = send(s->fd, req, len, MSG_NOSIGNAL);
	if (sent != len) {
		fail_errno(p, s, sent < 0 ? errno : EMSGSIZE);
		return;
	}
	s->state = PROBE_READING;
	err = rewatch(p, s, EPOLLIN);
	if (err)
		fail_errno(p, s, -err);
}

/* Connect to the VIP (and send a UDP probe's request): what fails from
 * here on is the probe's result, not a failure to start it. */
static void begin(struct xlb_prober *p, struct probe_slot *s)
{
	struct sockaddr_storage ss;
	socklen_t len = vip_sockaddr(&s->probe, &ss);

	if (connect(s->fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS) {
		fail_errno(p, s, errno);
		return;
	}
	if (s->probe.kind == XLB_PROBE_UDP &&
	    send(s->fd, s->send, s->send_len, 0) < 0)
		fail_errno(p, s, errno);
}

int xlb_prober_start(struct xlb_prober *p, const struct xlb_probe *probe,
		     void *cookie)
{
	struct probe_slot *s, **slots;
	int err;

	err = check_probe(probe);
	if (err)
		return err;
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;

		slots = realloc(p->slots, cap * sizeof(*slots));
		if (!slots)
			return -ENOMEM;
		p->slots = slots;
		p->cap = cap;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->probe = *probe;
	if (probe->kind == XLB_PROBE_UDP) {
		char token[XLB_PROBE_NONCE_LEN + 1];

		err = new_nonce(token);
		if (err) {
			free(s);
			return err;
		}
		s->send_len = xlb_probe_expand(probe->send, probe->send_len,
					       token, s->send);
		s->expect_len = xlb_probe_expand(probe->expect,
						 probe->expect_len, token,
						 s->expect);
	}
	s->cookie = cookie;
	s->start_us = now_us();
	s->deadline_us = s->start_us + (__u64)probe->timeout_ms * 1000;
	s->fd = open_socket(probe);
	if (s->fd < 0) {
		err = s->fd;
		free(s);
		return err;
	}
	if (probe->kind == XLB_PROBE_UDP) {
		s->state = PROBE_READING;
		err = watch(p, s, EPOLLIN);
	} else {
		/* EPOLLOUT says when the connect completes. */
		s->state = PROBE_CONNECTING;
		err = watch(p, s, EPOLLOUT);
	}
	if (err) {
		slot_free(s);
		return err;
	}
	p->slots[p->n++] = s;
	begin(p, s);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Progress                                                             */

static void on_connect(struct xlb_prober *p, struct probe_slot *s)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
	if (err) {
		fail_errno(p, s, err);
		return;
	}
	if (s->probe.kind == XLB_PROBE_TCP)
		finish(p, s, true);
	else
		send_http(p, s);
}

/* "HTTP/1.x NNN ...": the status, judged once the whole status line is
 * in; the body that came with it is the answer. */
static void judge_http(struct xlb_prober *p, struct probe_slot *s, bool eof)
{
	char *eol = memmem(s->buf, s->got, "\r\n", 2), *body;
	unsigned int status;
	char why[32];

	if (!eol) {
		if (eof || s->got == PROBE_BUF)
			fail(p, s, eof ? "closed before the status line" :
					 "no HTTP status line");
		return;
	}
	if (xlb_http_status_parse(s->buf, eol - s->buf, &status)) {
		fail(p, s, "not an HTTP response");
		return;
	}
	body = memmem(s->buf, s->got, "\r\n\r\n", 4);
	if (body)
		set_answer(s, body + 4, s->got - (body + 4 - s->buf));
	if (status != s->probe.http_status) {
		snprintf(why, sizeof(why), "HTTP %u", status);
		fail(p, s, why);
		return;
	}
	finish(p, s, true);
}

static void on_http_data(struct xlb_prober *p, struct probe_slot *s)
{
	bool eof = false;
	ssize_t n;

	/* Everything that is there now, so that the body that came with
	 * the status line is the answer. */
	while (s->got < PROBE_BUF) {
		n = recv(s->fd, s->buf + s->got, PROBE_BUF - s->got, 0);
		if (n > 0) {
			s->got += n;
			continue;
		}
		if (n == 0) {
			eof = true;
			break;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			break;
		if (errno == EINTR)
			continue;
		fail_errno(p, s, errno);
		return;
	}
	s->buf[s->got] = 0;
	judge_http(p, s, eof);
}

static void on_udp_data(struct xlb_prober *p, struct probe_slot *s)
{
	char data[1500];
	ssize_t n;

	for (;;) {
		n = recv(s->fd, data, sizeof(data), 0);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EINTR)
				continue;
			/* ECONNREFUSED: ICMP port unreachable came back. */
			fail_errno(p, s, errno);
			return;
		}
		/* The socket is connected: only VIP:port's datagrams
		 * reach it, and only this probe's, with its nonce. */
		if (!s->expect_len ||
		    memmem(data, n, s->expect, s->expect_len)) {
			set_answer(s, data, n);
			finish(p, s, true);
			return;
		}
		s->mismatch = true;
		set_answer(s, data, n);
	}
}

static void on_event(struct xlb_prober *p, struct probe_slot *s)
{
	if (s->state == PROBE_CONNECTING)
		on_connect(p, s);
	else if (s->probe.kind == XLB_PROBE_HTTP)
		on_http_data(p, s);
	else
		on_udp_data(p, s);
}

/* Report and drop every finished slot. A done() that starts new probes
 * appends them, after the scan's position. */
static int report_done(struct xlb_prober *p, xlb_probe_done_fn done,
		       void *ctx)
{
	struct probe_slot *s;
	int count = 0;
	size_t i = 0;

	while (i < p->n && p->done) {
		s = p->slots[i];
		if (s->state != PROBE_DONE) {
			i++;
			continue;
		}
		p->slots[i] = p->slots[--p->n];
		p->done--;
		done(s->cookie, &s->res, ctx);
		slot_free(s);
		count++;
	}
	return count;
}

static void expire(struct xlb_prober *p, __u64 now)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		struct probe_slot *s = p->slots[i];

		if (s->state == PROBE_DONE || now < s->deadline_us)
			continue;
		fail(p, s, s->mismatch ? "timeout (unexpected reply)" : "timeout");
	}
}

/* Milliseconds until the nearest deadline (rounded up), or -1. */
static int next_deadline_ms(const struct xlb_prober *p, __u64 now)
{
	__u64 first = 0;
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->slots[i]->state != PROBE_DONE &&
		    (!first || p->slots[i]->deadline_us < first))
			first = p->slots[i]->deadline_us;
	if (!first)
		return -1;
	return first <= now ? 0 : (int)((first - now + 999) / 1000);
}

int xlb_prober_poll(struct xlb_prober *p, int timeout_ms,
		    xlb_probe_done_fn done, void *ctx)
{
	__u64 until = timeout_ms > 0 ? now_us() + (__u64)timeout_ms * 1000 : 0;
	struct epoll_event ev[PROBE_EVENTS];
	int wait, left, n, i;

	/* An event may only move a probe on (an HTTP connect completing):
	 * wait again until one finishes or the time is up. */
	while (p->n) {
		__u64 now = now_us();

		wait = next_deadline_ms(p, now);
		left = timeout_ms < 0 ? -1 : until > now ?
		       (int)((until - now + 999) / 1000) : 0;
		if (p->done)
			wait = 0;
		else if (left >= 0 && (wait < 0 || left < wait))
			wait = left;
		n = epoll_wait(p->epfd, ev, PROBE_EVENTS, wait);
		if (n < 0 && (errno != EINTR || !p->done))
			return -errno;
		for (i = 0; i < n; i++) {
			struct probe_slot *s = ev[i].data.ptr;

			if (s->state != PROBE_DONE)
				on_event(p, s);
		}
		expire(p, now_us());
		if (p->done)
			return report_done(p, done, ctx);
		if (!wait || (timeout_ms >= 0 && now_us() >= until))
			return 0;
	}
	return 0;
}
