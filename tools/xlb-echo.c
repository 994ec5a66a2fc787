// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xlb-echo: the server on every backend of the end-to-end topology, and the
 * client that drives real TCP and UDP traffic through the balancer.
 *
 *   xlb-echo server NAME [--port P] [--udp-port U]
 *   xlb-echo conns ADDR PORT -n N [-P PAR] [--src A[,B...]] [-q]
 *   xlb-echo udp   ADDR PORT -n N [-P PAR] [--src A[,B...]] [-q]
 *   xlb-echo bulk  ADDR PORT -n N --bytes B [--src A[,B...]]
 *   xlb-echo hold  ADDR PORT -n N [--interval-ms I] [--stall-ms S] [--max-s T]
 *
 * The server answers with its NAME, so every reply tells which backend took
 * the connection. On a line protocol over TCP (any port):
 *   GET ... <blank line>  ->  an HTTP/1.0 response whose body is NAME; close
 *   PING SEQ              ->  NAME SEQ
 *   UP LEN + LEN bytes    ->  NAME LEN ok|bad     (bytes checked against a pattern)
 *   DOWN LEN              ->  NAME LEN + LEN bytes of the pattern
 * and over UDP: a datagram D gets "NAME D" back, sent from the address the
 * request was sent to (the VIP, which backends hold on loopback).
 *
 * The client modes print one line per connection or datagram (IDX, local
 * address, ok or the failure, backend, detail), then "backend NAME COUNT"
 * per backend and a "summary" line; -q keeps only the last two kinds.
 * `hold` keeps N connections open and pings each every interval until
 * SIGTERM or SIGINT, then pings once more and reports per connection ok,
 * reset, stall (no answer within the stall time) or moved (another backend
 * answered); it prints "ready N" once all are open, and a "status" line on
 * SIGUSR1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NAME_LEN	64
#define LINE_LEN	256
#define ADDR_LEN	(INET6_ADDRSTRLEN + 8)
#define CHUNK		65536
#define MAX_SRCS	64

static const char *prog = "xlb-echo";

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* The byte at offset i of every bulk transfer: not periodic over any short
 * span, so a lost, repeated or reordered segment cannot go unnoticed. */
static unsigned char pattern_byte(unsigned long long i)
{
	return (unsigned char)(i * 131 + (i >> 13) * 7 + (i >> 21));
}

/* ---- addresses ---- */

/* "192.0.2.10" or "2001:db8::10" (brackets allowed) with a port. */
static int parse_addr(const char *s, int port, struct sockaddr_storage *ss)
{
	char buf[INET6_ADDRSTRLEN + 2];
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	size_t len = strlen(s);

	memset(ss, 0, sizeof(*ss));
	if (len >= sizeof(buf))
		return -EINVAL;
	if (s[0] == '[' && len > 2 && s[len - 1] == ']') {
		memcpy(buf, s + 1, len - 2);
		buf[len - 2] = '\0';
	} else {
		strcpy(buf, s);
	}
	if (inet_pton(AF_INET, buf, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		return 0;
	}
	if (inet_pton(AF_INET6, buf, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		return 0;
	}
	return -EINVAL;
}

static socklen_t addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in)
					 : sizeof(struct sockaddr_in6);
}

/* "addr:port" or "[addr]:port"; IPv4-mapped IPv6 shown as IPv4. */
static void fmt_addr(const struct sockaddr_storage *ss, char *out)
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
	char a[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		snprintf(out, ADDR_LEN, "%s:%u", a, ntohs(in->sin_port));
	} else if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
		inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], a, sizeof(a));
		snprintf(out, ADDR_LEN, "%s:%u", a, ntohs(in6->sin6_port));
	} else {
		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		snprintf(out, ADDR_LEN, "[%s]:%u", a, ntohs(in6->sin6_port));
	}
}

static bool same_addr(const struct sockaddr_storage *a,
		      const struct sockaddr_storage *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;

	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return a4->sin_addr.s_addr == b4->sin_addr.s_addr &&
		       a4->sin_port == b4->sin_port;
	return !memcmp(&a6->sin6_addr, &b6->sin6_addr, sizeof(a6->sin6_addr)) &&
	       a6->sin6_port == b6->sin6_port;
}

/* ---- blocking I/O with deadlines ---- */

static int wait_fd(int fd, short events, long long deadline_us)
{
	struct pollfd p = { .fd = fd, .events = events };
	long long left;
	int n;

	for (;;) {
		left = deadline_us - now_us();
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)((left + 999) / 1000));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

static int send_all(int fd, const void *buf, size_t len, long long deadline)
{
	const char *p = buf;
	ssize_t n;
	int err;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		err = wait_fd(fd, POLLOUT, deadline);
		if (err)
			return err;
	}
	return 0;
}

/* Read up to len bytes; 0 at EOF. */
static ssize_t recv_some(int fd, void *buf, size_t len, long long deadline)
{
	ssize_t n;
	int err;

	for (;;) {
		n = recv(fd, buf, len, MSG_DONTWAIT);
		if (n >= 0)
			return n;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		err = wait_fd(fd, POLLIN, deadline);
		if (err)
			return err;
	}
}

/* One line, byte by byte so that nothing after it is consumed; the newline
 * (and a CR before it) is stripped. Returns the length, -EPIPE at EOF. */
static int recv_line(int fd, char *line, size_t size, long long deadline)
{
	size_t len = 0;
	ssize_t n;
	char c;

	for (;;) {
		n = recv_some(fd, &c, 1, deadline);
		if (n < 0)
			return n;
		if (n == 0)
			return -EPIPE;
		if (c == '\n')
			break;
		if (len + 1 < size)
			line[len++] = c;
	}
	if (len && line[len - 1] == '\r')
		len--;
	line[len] = '\0';
	return len;
}

static const char *err_name(int err)
{
	switch (-err) {
	case ETIMEDOUT:		return "timeout";
	case ECONNRESET:	return "reset";
	case ECONNREFUSED:	return "refused";
	case EPIPE:		return "closed";
	case EHOSTUNREACH:	return "unreachable";
	case ENETUNREACH:	return "unreachable";
	default:		return "error";
	}
}

/* ---- server ---- */

static char server_name[NAME_LEN];

static int serve_up(int fd, unsigned long long len, long long deadline)
{
	unsigned char *buf = malloc(CHUNK);
	unsigned long long off = 0;
	bool good = true;
	char reply[LINE_LEN];
	ssize_t n, i;

	if (!buf)
		return -ENOMEM;
	while (off < len) {
		n = recv_some(fd, buf, len - off < CHUNK ? len - off : CHUNK,
			      deadline);
		if (n <= 0) {
			free(buf);
			return n ? n : -EPIPE;
		}
		for (i = 0; i < n && good; i++)
			good = buf[i] == pattern_byte(off + i);
		off += n;
	}
	free(buf);
	n = snprintf(reply, sizeof(reply), "%s %llu %s\n", server_name, len,
		     good ? "ok" : "bad");
	return send_all(fd, reply, n, deadline);
}

static int serve_down(int fd, unsigned long long len, long long deadline)
{
	unsigned char *buf = malloc(CHUNK);
	unsigned long long off = 0;
	char reply[LINE_LEN];
	size_t n, i;
	int err;

	if (!buf)
		return -ENOMEM;
	n = snprintf(reply, sizeof(reply), "%s %llu\n", server_name, len);
	err = send_all(fd, reply, n, deadline);
	while (!err && off < len) {
		n = len - off < CHUNK ? len - off : CHUNK;
		for (i = 0; i < n; i++)
			buf[i] = pattern_byte(off + i);
		err = send_all(fd, buf, n, deadline);
		off += n;
	}
	free(buf);
	return err;
}

static void *serve_conn(void *arg)
{
	int fd = (int)(long)arg;
	char line[LINE_LEN], reply[LINE_LEN + NAME_LEN];
	unsigned long long len;
	long long deadline;
	int n, err = 0;

	/* A connection idle for ten minutes is abandoned by its client. */
	while (!err) {
		deadline = now_us() + 600 * 1000000LL;
		n = recv_line(fd, line, sizeof(line), deadline);
		if (n < 0)
			break;
		deadline = now_us() + 60 * 1000000LL;
		if (!strncmp(line, "GET ", 4)) {
			while ((n = recv_line(fd, line, sizeof(line), deadline)) > 0)
				;
			if (n < 0)
				break;
			n = snprintf(reply, sizeof(reply),
				     "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n"
				     "Content-Length: %zu\r\n\r\n%s\n",
				     strlen(server_name) + 1, server_name);
			send_all(fd, reply, n, deadline);
			break;
		} else if (!strncmp(line, "PING ", 5)) {
			n = snprintf(reply, sizeof(reply), "%s %s\n",
				     server_name, line + 5);
			err = send_all(fd, reply, n, deadline);
		} else if (sscanf(line, "UP %llu", &len) == 1) {
			err = serve_up(fd, len, deadline);
		} else if (sscanf(line, "DOWN %llu", &len) == 1) {
			err = serve_down(fd, len, deadline);
		} else {
			n = snprintf(reply, sizeof(reply), "%s\n", server_name);
			err = send_all(fd, reply, n, deadline);
		}
	}
	close(fd);
	return NULL;
}

static void *serve_tcp(void *arg)
{
	int lfd = (int)(long)arg, fd;
	pthread_attr_t attr;
	pthread_t t;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (;;) {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept: %s", strerror(errno));
		}
		if (pthread_create(&t, &attr, serve_conn, (void *)(long)fd)) {
			close(fd);
			continue;
		}
	}
	return NULL;
}

/* UDP replies must leave from the address the request was sent to (the
 * VIP on loopback), not from the address routing would pick: the request's
 * destination comes in IP(V6)_PKTINFO and goes back out in the same way. */
static void *serve_udp(void *arg)
{
	int fd = (int)(long)arg;
	char buf[2048], reply[2048 + NAME_LEN], ctl[256];
	struct sockaddr_storage peer;
	struct iovec iov;
	struct msghdr msg;
	struct cmsghdr *c;
	ssize_t n;
	int len;

	for (;;) {
		iov = (struct iovec){ buf, sizeof(buf) - 1 };
		msg = (struct msghdr){ .msg_name = &peer,
				       .msg_namelen = sizeof(peer),
				       .msg_iov = &iov, .msg_iovlen = 1,
				       .msg_control = ctl,
				       .msg_controllen = sizeof(ctl) };
		n = recvmsg(fd, &msg, 0);
		if (n < 0)
			continue;
		buf[n] = '\0';
		len = snprintf(reply, sizeof(reply), "%s %s", server_name, buf);
		/* Keep only the packet-info control message, with the
		 * interface left to routing. */
		for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
			if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO)
				((struct in_pktinfo *)CMSG_DATA(c))->ipi_ifindex = 0;
			else if (c->cmsg_level == IPPROTO_IPV6 &&
				 c->cmsg_type == IPV6_PKTINFO)
				((struct in6_pktinfo *)CMSG_DATA(c))->ipi6_ifindex = 0;
		}
		iov = (struct iovec){ reply, len };
		msg.msg_flags = 0;
		sendmsg(fd, &msg, 0);
	}
	return NULL;
}

static int listen_on(int family, int type, int port)
{
	struct sockaddr_storage ss = { .ss_family = family };
	int fd, one = 1;

	if (family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
	fd = socket(family, type, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (type == SOCK_DGRAM && family == AF_INET)
		setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
	if (type == SOCK_DGRAM && family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, addr_len(&ss)))
		die("bind port %d: %s", port, strerror(errno));
	if (type == SOCK_STREAM && listen(fd, 4096))
		die("listen: %s", strerror(errno));
	return fd;
}

static int cmd_server(int argc, char **argv)
{
	int port = 80, udp_port = 5000, fam, i;
	void *(*fn)(void *);
	pthread_t t;

	if (argc < 1)
		die("server: NAME required");
	snprintf(server_name, sizeof(server_name), "%s", argv[0]);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--udp-port") && i + 1 < argc)
			udp_port = atoi(argv[++i]);
		else
			die("server: unknown argument '%s'", argv[i]);
	}
	for (fam = 0; fam < 4; fam++) {
		int family = fam & 1 ? AF_INET6 : AF_INET;
		int type = fam & 2 ? SOCK_DGRAM : SOCK_STREAM;

		fn = type == SOCK_STREAM ? serve_tcp : serve_udp;
		if (pthread_create(&t, NULL, fn, (void *)(long)listen_on(
				family, type, type == SOCK_STREAM ? port : udp_port)))
			die("pthread_create failed");
	}
	printf("listening %s tcp %d udp %d\n", server_name, port, udp_port);
	fflush(stdout);
	pause();
	return 0;
}

/* ---- client ---- */

struct client {
	struct sockaddr_storage dst;
	struct sockaddr_storage src[MAX_SRCS];
	int nsrc;
	int n, par;
	unsigned long long bytes;
	int timeout_ms, interval_ms, stall_ms, max_s;
	bool quiet;
};

struct result {
	char local[ADDR_LEN];
	char backend[NAME_LEN];
	char detail[LINE_LEN];
	const char *status;	/* NULL: ok */
	long long usec;
};

static int open_conn(const struct client *c, int idx, long long deadline,
		     char *local)
{
	struct sockaddr_storage me;
	socklen_t len = sizeof(me);
	int fd, err, one = 1;

	fd = socket(c->dst.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (c->nsrc && bind(fd, (const struct sockaddr *)&c->src[idx % c->nsrc],
			    addr_len(&c->src[idx % c->nsrc]))) {
		err = -errno;
		goto fail;
	}
	if (connect(fd, (const struct sockaddr *)&c->dst, addr_len(&c->dst)) &&
	    errno != EINPROGRESS) {
		err = -errno;
		goto fail;
	}
	err = wait_fd(fd, POLLOUT, deadline);
	if (!err) {
		len = sizeof(err);
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
		err = -err;
	}
	if (err)
		goto fail;
	len = sizeof(me);
	getsockname(fd, (struct sockaddr *)&me, &len);
	fmt_addr(&me, local);
	return fd;
fail:
	close(fd);
	return err;
}

/* One short HTTP-like exchange; the backend's name is the body. */
static void item_conn(const struct client *c, int idx, struct result *r)
{
	static const char req[] = "GET / HTTP/1.0\r\nHost: xlb\r\n\r\n";
	long long deadline = now_us() + c->timeout_ms * 1000LL;
	char resp[1024], *body;
	size_t len = 0;
	ssize_t n;
	int fd, err;

	fd = open_conn(c, idx, deadline, r->local);
	if (fd < 0) {
		r->status = err_name(fd);
		snprintf(r->detail, sizeof(r->detail), "connect: %s", strerror(-fd));
		return;
	}
	err = send_all(fd, req, sizeof(req) - 1, deadline);
	while (!err && len < sizeof(resp) - 1) {
		n = recv_some(fd, resp + len, sizeof(resp) - 1 - len, deadline);
		if (n <= 0) {
			err = n;
			break;
		}
		len += n;
	}
	close(fd);
	resp[len] = '\0';
	body = strstr(resp, "\r\n\r\n");
	if (err || !body || strncmp(resp, "HTTP/1.0 200", 12)) {
		r->status = err ? err_name(err) : "bad-reply";
		snprintf(r->detail, sizeof(r->detail), "after %zu bytes", len);
		return;
	}
	sscanf(body + 4, "%63s", r->backend);
}

/* Our address as the reply's destination: an unconnected socket has none
 * of its own until routing picks one for each datagram. */
static void reply_local(const struct msghdr *msg, int port, char *out)
{
	struct sockaddr_storage me = { 0 };
	struct sockaddr_in *in = (struct sockaddr_in *)&me;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&me;
	struct cmsghdr *c;

	for (c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			in->sin_family = AF_INET;
			in->sin_addr = ((struct in_pktinfo *)CMSG_DATA(c))->ipi_addr;
			in->sin_port = htons(port);
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
			in6->sin6_family = AF_INET6;
			in6->sin6_addr = ((struct in6_pktinfo *)CMSG_DATA(c))->ipi6_addr;
			in6->sin6_port = htons(port);
		}
	}
	if (me.ss_family)
		fmt_addr(&me, out);
}

/* One datagram from a fresh socket (a new flow each), with retries; the
 * reply must come from the address and port the request went to. */
static void item_udp(const struct client *c, int idx, struct result *r)
{
	struct sockaddr_storage me, from;
	char req[64], resp[256], fromtxt[ADDR_LEN], ctl[256];
	struct iovec iov = { resp, sizeof(resp) - 1 };
	struct msghdr msg;
	socklen_t len = sizeof(me);
	long long deadline;
	ssize_t n = -1;
	int fd, try, one = 1, port = 0;

	fd = socket(c->dst.ss_family, SOCK_DGRAM, 0);
	if (fd >= 0) {
		if (c->dst.ss_family == AF_INET)
			setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
		else
			setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one));
	}
	if (fd < 0 || (c->nsrc && bind(fd, (const struct sockaddr *)&c->src[idx % c->nsrc],
				     addr_len(&c->src[idx % c->nsrc])))) {
		r->status = "error";
		snprintf(r->detail, sizeof(r->detail), "socket: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	snprintf(req, sizeof(req), "REQ %d", idx);
	for (try = 0; try < 3 && n < 0; try++) {
		sendto(fd, req, strlen(req), 0, (const struct sockaddr *)&c->dst,
		       addr_len(&c->dst));
		if (!try && !getsockname(fd, (struct sockaddr *)&me, &len)) {
			fmt_addr(&me, r->local);
			port = ntohs(me.ss_family == AF_INET ?
				     ((struct sockaddr_in *)&me)->sin_port :
				     ((struct sockaddr_in6 *)&me)->sin6_port);
		}
		deadline = now_us() + c->timeout_ms * 1000LL / 3;
		while (!wait_fd(fd, POLLIN, deadline)) {
			msg = (struct msghdr){ .msg_name = &from,
					       .msg_namelen = sizeof(from),
					       .msg_iov = &iov, .msg_iovlen = 1,
					       .msg_control = ctl,
					       .msg_controllen = sizeof(ctl) };
			n = recvmsg(fd, &msg, MSG_DONTWAIT);
			if (n >= 0) {
				reply_local(&msg, port, r->local);
				break;
			}
		}
	}
	close(fd);
	if (n < 0) {
		r->status = "timeout";
		snprintf(r->detail, sizeof(r->detail), "3 tries");
		return;
	}
	resp[n] = '\0';
	fmt_addr(&from, fromtxt);
	if (!same_addr(&from, &c->dst)) {
		r->status = "wrong-source";
		snprintf(r->detail, sizeof(r->detail), "from %s", fromtxt);
		return;
	}
	if (sscanf(resp, "%63s", r->backend) != 1 || !strstr(resp, req)) {
		r->status = "bad-reply";
		snprintf(r->detail, sizeof(r->detail), "from %s", fromtxt);
		return;
	}
	snprintf(r->detail, sizeof(r->detail), "from %s", fromtxt);
}

/* Upload then download c->bytes, both checked byte for byte. */
static void item_bulk(const struct client *c, int idx, struct result *r)
{
	unsigned char *buf = malloc(CHUNK);
	long long deadline = now_us() + c->timeout_ms * 1000LL, t0, t1;
	unsigned long long off, len = c->bytes, got;
	char line[LINE_LEN], verdict[16], name[NAME_LEN];
	ssize_t n, i;
	int fd, err;

	fd = buf ? open_conn(c, idx, deadline, r->local) : -ENOMEM;
	if (fd < 0) {
		r->status = err_name(fd);
		snprintf(r->detail, sizeof(r->detail), "connect: %s", strerror(-fd));
		free(buf);
		return;
	}
	t0 = now_us();
	n = snprintf(line, sizeof(line), "UP %llu\n", len);
	err = send_all(fd, line, n, deadline);
	for (off = 0; !err && off < len; off += n) {
		n = len - off < CHUNK ? len - off : CHUNK;
		for (i = 0; i < n; i++)
			buf[i] = pattern_byte(off + i);
		err = send_all(fd, buf, n, deadline);
	}
	if (!err)
		err = recv_line(fd, line, sizeof(line), deadline) < 0 ? -EPIPE : 0;
	if (!err && (sscanf(line, "%63s %llu %15s", r->backend, &got, verdict) != 3 ||
		     got != len || strcmp(verdict, "ok"))) {
		r->status = "bad-upload";
		snprintf(r->detail, sizeof(r->detail), "server said '%.128s'", line);
		goto out;
	}
	t1 = now_us();
	n = snprintf(line, sizeof(line), "DOWN %llu\n", len);
	if (!err)
		err = send_all(fd, line, n, deadline);
	if (!err)
		err = recv_line(fd, line, sizeof(line), deadline) < 0 ? -EPIPE : 0;
	if (!err && (sscanf(line, "%63s %llu", name, &got) != 2 || got != len))
		err = -EPROTO;
	for (off = 0; !err && off < len; off += n) {
		n = recv_some(fd, buf, len - off < CHUNK ? len - off : CHUNK, deadline);
		if (n <= 0) {
			err = n ? n : -EPIPE;
			break;
		}
		for (i = 0; i < n; i++)
			if (buf[i] != pattern_byte(off + i))
				break;
		if (i < n) {
			r->status = "bad-download";
			snprintf(r->detail, sizeof(r->detail), "at byte %llu", off + i);
			goto out;
		}
	}
	if (err) {
		r->status = err_name(err);
		snprintf(r->detail, sizeof(r->detail), "%s", strerror(-err));
		goto out;
	}
	snprintf(r->detail, sizeof(r->detail), "up %.1f MB/s down %.1f MB/s",
		 len / (double)(t1 - t0), len / (double)(now_us() - t1));
out:
	free(buf);
	close(fd);
}

struct run {
	const struct client *c;
	void (*item)(const struct client *, int, struct result *);
	struct result *res;
	atomic_int next;
};

static void *worker(void *arg)
{
	struct run *run = arg;
	long long t0;
	int i;

	while ((i = atomic_fetch_add(&run->next, 1)) < run->c->n) {
		t0 = now_us();
		run->item(run->c, i, &run->res[i]);
		run->res[i].usec = now_us() - t0;
	}
	return NULL;
}

/* Per-backend tally, in order of first appearance. */
struct tally {
	char name[NAME_LEN];
	int count;
};

static void tally_add(struct tally *t, int *nt, int max, const char *name)
{
	int i;

	for (i = 0; i < *nt; i++) {
		if (!strcmp(t[i].name, name)) {
			t[i].count++;
			return;
		}
	}
	if (*nt < max) {
		snprintf(t[*nt].name, NAME_LEN, "%s", name);
		t[(*nt)++].count = 1;
	}
}

static void print_tally(const struct tally *t, int nt)
{
	int i;

	for (i = 0; i < nt; i++)
		printf("backend %s %d\n", t[i].name, t[i].count);
}

static int run_items(const char *kind, const struct client *c,
		     void (*item)(const struct client *, int, struct result *))
{
	struct run run = { .c = c, .item = item };
	struct tally tally[256];
	int i, nt = 0, failed = 0, nthreads = c->par < c->n ? c->par : c->n;
	pthread_t *threads;
	long long t0 = now_us();

	run.res = calloc(c->n, sizeof(*run.res));
	threads = calloc(nthreads, sizeof(*threads));
	if (!run.res || !threads)
		die("out of memory");
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&threads[i], NULL, worker, &run))
			die("pthread_create failed");
	for (i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	for (i = 0; i < c->n; i++) {
		struct result *r = &run.res[i];

		if (r->status)
			failed++;
		else
			tally_add(tally, &nt, 256, r->backend);
		if (!c->quiet || r->status)
			printf("%s %d %s %s %s %.2fms%s%s\n", kind, i,
			       r->local[0] ? r->local : "-",
			       r->status ? r->status : "ok",
			       r->backend[0] ? r->backend : "-", r->usec / 1000.0,
			       r->detail[0] ? " " : "", r->detail);
	}
	print_tally(tally, nt);
	printf("summary %s=%d ok=%d failed=%d elapsed_ms=%lld\n", kind, c->n,
	       c->n - failed, failed, (now_us() - t0) / 1000);
	free(threads);
	free(run.res);
	return failed ? 1 : 0;
}

/* ---- hold: long-lived connections ---- */

enum hold_state { HOLD_OK, HOLD_RESET, HOLD_STALL, HOLD_MOVED };
static const char *const hold_names[] = { "ok", "reset", "stall", "moved" };

struct held {
	int fd;
	enum hold_state state;
	char local[ADDR_LEN];
	char backend[NAME_LEN];
	unsigned long exchanges;
	char detail[LINE_LEN];
	bool waiting;
};

static volatile sig_atomic_t hold_stop, hold_status;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		hold_status = 1;
	else
		hold_stop = 1;
}

static void hold_fail(struct held *h, enum hold_state state, const char *why)
{
	h->state = state;
	h->waiting = false;
	snprintf(h->detail, sizeof(h->detail), "%.128s after %lu exchanges", why,
		 h->exchanges);
	close(h->fd);
	h->fd = -1;
}

/* One round: every live connection sends PING seq and must get its
 * backend's answer within the stall time. */
static void hold_round(struct held *hs, int n, unsigned long seq, int stall_ms)
{
	long long deadline = now_us() + stall_ms * 1000LL;
	char line[LINE_LEN], name[NAME_LEN];
	struct pollfd *p = calloc(n, sizeof(*p));
	unsigned long got;
	int i, k, left = 0, len, err;

	if (!p)
		die("out of memory");
	for (i = 0; i < n; i++) {
		if (hs[i].state != HOLD_OK)
			continue;
		len = snprintf(line, sizeof(line), "PING %lu\n", seq);
		err = send_all(hs[i].fd, line, len, deadline);
		if (err) {
			hold_fail(&hs[i], err == -ETIMEDOUT ? HOLD_STALL : HOLD_RESET,
				  err_name(err));
			continue;
		}
		hs[i].waiting = true;
		left++;
	}
	while (left > 0 && now_us() < deadline) {
		for (i = 0; i < n; i++)
			p[i] = (struct pollfd){ .fd = hs[i].waiting ? hs[i].fd : -1,
						.events = POLLIN };
		k = poll(p, n, (int)((deadline - now_us()) / 1000) + 1);
		if (k <= 0)
			continue;
		for (i = 0; i < n; i++) {
			if (!hs[i].waiting || !p[i].revents)
				continue;
			left--;
			err = recv_line(hs[i].fd, line, sizeof(line), deadline);
			if (err < 0) {
				hold_fail(&hs[i], err == -ETIMEDOUT ? HOLD_STALL : HOLD_RESET,
					  err_name(err));
				continue;
			}
			hs[i].waiting = false;
			if (sscanf(line, "%63s %lu", name, &got) != 2 || got != seq ||
			    strcmp(name, hs[i].backend)) {
				hold_fail(&hs[i], HOLD_MOVED, line);
				continue;
			}
			hs[i].exchanges++;
		}
	}
	for (i = 0; i < n; i++)
		if (hs[i].waiting)
			hold_fail(&hs[i], HOLD_STALL, "no answer");
	free(p);
}

static void hold_counts(const struct held *hs, int n, const char *what)
{
	int i, count[4] = { 0 };

	for (i = 0; i < n; i++)
		count[hs[i].state]++;
	printf("%s held=%d ok=%d reset=%d stall=%d moved=%d\n", what, n,
	       count[HOLD_OK], count[HOLD_RESET], count[HOLD_STALL],
	       count[HOLD_MOVED]);
	fflush(stdout);
}

static int cmd_hold(struct client *c)
{
	struct held *hs = calloc(c->n, sizeof(*hs));
	struct sigaction sa = { .sa_handler = on_signal };
	struct tally tally[256];
	long long deadline, end;
	unsigned long seq = 0;
	char line[LINE_LEN];
	int i, nt = 0, fd, len, bad = 0;

	if (!hs)
		die("out of memory");
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	for (i = 0; i < c->n; i++) {
		deadline = now_us() + c->timeout_ms * 1000LL;
		fd = open_conn(c, i, deadline, hs[i].local);
		if (fd < 0)
			die("hold: connection %d: %s", i, strerror(-fd));
		hs[i].fd = fd;
		len = snprintf(line, sizeof(line), "PING 0\n");
		if (send_all(fd, line, len, deadline) ||
		    recv_line(fd, line, sizeof(line), deadline) < 0 ||
		    sscanf(line, "%63s", hs[i].backend) != 1)
			die("hold: connection %d: no answer", i);
		tally_add(tally, &nt, 256, hs[i].backend);
	}
	print_tally(tally, nt);
	printf("ready %d\n", c->n);
	fflush(stdout);

	end = now_us() + c->max_s * 1000000LL;
	while (!hold_stop && now_us() < end) {
		deadline = now_us() + c->interval_ms * 1000LL;
		hold_round(hs, c->n, ++seq, c->stall_ms);
		if (hold_status) {
			hold_status = 0;
			hold_counts(hs, c->n, "status");
		}
		while (!hold_stop && now_us() < deadline)
			usleep(10000);
	}
	/* A last round after the stop: every connection proves it still
	 * works at the very end. */
	hold_round(hs, c->n, ++seq, c->stall_ms);
	for (i = 0; i < c->n; i++) {
		struct held *h = &hs[i];

		if (h->state != HOLD_OK)
			bad++;
		printf("hold %d %s %s %s %lu%s%s\n", i, h->local,
		       hold_names[h->state], h->backend, h->exchanges,
		       h->detail[0] ? " " : "", h->detail);
		if (h->fd >= 0)
			close(h->fd);
	}
	hold_counts(hs, c->n, "summary");
	free(hs);
	return bad ? 1 : 0;
}

static void parse_srcs(struct client *c, char *list)
{
	char *tok, *save = NULL;

	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (c->nsrc == MAX_SRCS)
			die("--src: at most %d addresses", MAX_SRCS);
		if (parse_addr(tok, 0, &c->src[c->nsrc]) ||
		    c->src[c->nsrc].ss_family != c->dst.ss_family)
			die("--src: '%s' is not an address of the VIP's family", tok);
		c->nsrc++;
	}
}

static unsigned long long parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s)
		die("bad size '%s'", s);
	if (*end == 'k' || *end == 'K')
		v <<= 10;
	else if (*end == 'm' || *end == 'M')
		v <<= 20;
	else if (*end)
		die("bad size '%s'", s);
	return v;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: %s server NAME [--port P] [--udp-port U]\n"
		"       %s conns|udp ADDR PORT -n N [-P PAR] [--src A[,B..]] [--timeout-ms T] [-q]\n"
		"       %s bulk ADDR PORT -n N --bytes B[k|M] [--src A[,B..]]\n"
		"       %s hold ADDR PORT -n N [--interval-ms I] [--stall-ms S] [--max-s T]\n",
		prog, prog, prog, prog);
	exit(2);
}

int main(int argc, char **argv)
{
	struct client c = { .n = 1, .par = 16, .timeout_ms = 3000,
			    .interval_ms = 200, .stall_ms = 2000, .max_s = 600 };
	const char *mode;
	char *srcs = NULL;
	int i;

	if (argc < 2)
		usage();
	mode = argv[1];
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "server"))
		return cmd_server(argc - 2, argv + 2);
	if (argc < 4)
		usage();
	if (parse_addr(argv[2], atoi(argv[3]), &c.dst) || atoi(argv[3]) <= 0)
		die("bad address or port '%s' '%s'", argv[2], argv[3]);
	for (i = 4; i < argc; i++) {
		const char *a = argv[i];
		bool has = i + 1 < argc;

		if (!strcmp(a, "-n") && has)
			c.n = atoi(argv[++i]);
		else if (!strcmp(a, "-P") && has)
			c.par = atoi(argv[++i]);
		else if (!strcmp(a, "--src") && has)
			srcs = argv[++i];
		else if (!strcmp(a, "--bytes") && has)
			c.bytes = parse_size(argv[++i]);
		else if (!strcmp(a, "--timeout-ms") && has)
			c.timeout_ms = atoi(argv[++i]);
		else if (!strcmp(a, "--interval-ms") && has)
			c.interval_ms = atoi(argv[++i]);
		else if (!strcmp(a, "--stall-ms") && has)
			c.stall_ms = atoi(argv[++i]);
		else if (!strcmp(a, "--max-s") && has)
			c.max_s = atoi(argv[++i]);
		else if (!strcmp(a, "-q"))
			c.quiet = true;
		else
			die("unknown argument '%s'", a);
	}
	if (c.n <= 0 || c.par <= 0 || c.timeout_ms <= 0 || c.interval_ms <= 0 ||
	    c.stall_ms <= 0 || c.max_s <= 0)
		die("counts and times must be positive");
	if (srcs)
		parse_srcs(&c, srcs);
	if (!strcmp(mode, "conns"))
		return run_items("conn", &c, item_conn);
	if (!strcmp(mode, "udp"))
		return run_items("dgram", &c, item_udp);
	if (!strcmp(mode, "bulk")) {
		if (!c.bytes)
			die("bulk: --bytes required");
		c.par = c.n;
		/* A transfer gets a minute, however large the timeout for
		 * a single exchange. */
		c.timeout_ms = c.timeout_ms > 60000 ? c.timeout_ms : 60000;
		return run_items("bulk", &c, item_bulk);
	}
	if (!strcmp(mode, "hold"))
		return cmd_hold(&c);
	usage();
	return 2;
}
