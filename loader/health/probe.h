/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * loader/health: health checks that travel the traffic's path.
 *
 *   probe.h    one probe: a real TCP, HTTP or UDP exchange with VIP:port,
 *              from a socket whose mark names the backend (this file)
 *   hc_path.h  the path a marked packet takes: a routing rule sends it to
 *              bpf/hc.bpf.c, which encapsulates it to the backend exactly
 *              as the datapath encapsulates client traffic
 *   checker.h  the up/down state machine behind `xlb health run`
 *              (the settings: include/health.h)
 *
 * A probe is addressed to the VIP, not to the backend, so a backend that
 * answers ping but lacks the VIP on its loopback, or its decapsulation,
 * is found down. The backend answers the probe's socket directly (direct
 * server return), as it answers a client.
 */
#ifndef XLB_HEALTH_PROBE_H
#define XLB_HEALTH_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/*
 * Probe packets carry XLB_HC_MARK_BASE | backend id in skb->mark (set
 * with SO_MARK); hc_path.h routes every packet whose mark matches
 * XLB_HC_MARK_MASK to the encapsulating program. The mark is defined in
 * include/hc.h, which the program shares.
 */
#include "hc.h"
#include "health.h"

enum xlb_probe_kind {
	XLB_PROBE_TCP,		/* up: the connection is accepted */
	XLB_PROBE_HTTP,		/* up: "GET path" answered with status */
	XLB_PROBE_UDP,		/* up: send answered by a datagram that
				 * holds expect (any datagram if expect_len
				 * is 0), from VIP:port, to this probe's
				 * socket */
};

/*
 * In a UDP probe's send and expect, every XLB_PROBE_NONCE is replaced by
 * one fresh random token per probe (XLB_PROBE_NONCE_LEN hex digits), the
 * same in both: a reply that echoes it cannot have been made before the
 * probe was sent, so datagrams sprayed from a spoofed VIP:port cannot
 * bring a dead backend up. Without it a UDP check proves only that some
 * datagram holding expect reached the probe's port (docs/health.md).
 */
#define XLB_PROBE_NONCE		"{nonce}"
#define XLB_PROBE_NONCE_LEN	16
/* send or expect with every nonce replaced: at most this long. */
#define XLB_PROBE_WIRE_MAX	(XLB_PROBE_DATA_MAX / (sizeof(XLB_PROBE_NONCE) - 1) * \
				 XLB_PROBE_NONCE_LEN + XLB_PROBE_DATA_MAX)

/* A probe carries what its settings (include/health.h) can hold. */
#define XLB_PROBE_PATH_MAX	XLB_HC_PATH_MAX	/* with its NUL */
#define XLB_PROBE_DATA_MAX	XLB_HC_DATA_MAX

struct xlb_probe {
	__u32 backend_id;	/* 1..XLB_MAX_BACKENDS-1: the mark's low bits */
	__u8 family;		/* enum xlb_family, the VIP's */
	__u8 kind;		/* enum xlb_probe_kind */
	__u16 port;		/* host order */
	__be32 vip[4];		/* IPv4 in vip[0] */
	__u32 timeout_ms;	/* > 0 */
	__u16 http_status;	/* expected status (HTTP) */
	__u8 send_len;		/* UDP request */
	__u8 expect_len;	/* UDP reply must contain this */
	char path[XLB_PROBE_PATH_MAX];	/* HTTP, begins with '/' */
	__u8 send[XLB_PROBE_DATA_MAX];
	__u8 expect[XLB_PROBE_DATA_MAX];
};

struct xlb_probe_result {
	bool ok;
	__u32 rtt_us;		/* start to answer (ok or not) */
	char error[64];		/* why not ok: "connection refused",
				 * "timeout", "HTTP 503", ...; "" if ok */
	char answer[64];	/* the start of what the backend answered,
				 * for a person to read: the HTTP body that
				 * came with the status line, the UDP reply;
				 * NUL-terminated, "" for TCP */
};

/*
 * data (len bytes) with every XLB_PROBE_NONCE replaced by token
 * (XLB_PROBE_NONCE_LEN characters) into out, which holds
 * XLB_PROBE_WIRE_MAX bytes. Returns the length written. Pure.
 */
size_t xlb_probe_expand(const __u8 *data, size_t len, const char *token,
			__u8 *out);

/*
 * An HTTP status line (without its CRLF), parsed strictly: "HTTP/1.0" or
 * "HTTP/1.1", one space, exactly three digits, then the end or one space
 * and a reason phrase of visible characters, spaces and tabs. Returns 0
 * with *status, or -EPROTO for anything else ("HTTP/1.0 2000 OK" is not
 * status 200). Pure.
 */
int xlb_http_status_parse(const char *line, size_t len, unsigned int *status);

/* Many probes in flight at once, driven by one thread with epoll. */
struct xlb_prober;

int xlb_prober_new(struct xlb_prober **out);
void xlb_prober_free(struct xlb_prober *p);	/* abandons probes in flight */

/*
 * Start a probe; its result is reported by a later xlb_prober_poll(),
 * with cookie. A probe that cannot even start (no descriptors, a bad
 * probe) returns -errno and reports nothing: the caller counts it.
 */
int xlb_prober_start(struct xlb_prober *p, const struct xlb_probe *probe,
		     void *cookie);

/* Probes in flight. */
size_t xlb_prober_busy(const struct xlb_prober *p);

typedef void (*xlb_probe_done_fn)(void *cookie,
				  const struct xlb_probe_result *res,
				  void *ctx);

/*
 * Wait up to timeout_ms (0: do not wait; -1: until one finishes) and call
 * done for every probe that finished or timed out meanwhile. Returns how
 * many finished, or -errno (-EINTR when a signal came: the caller checks
 * its stop flag and calls again). With no probe in flight it returns 0 at
 * once: there is nothing to wait for, and the caller sleeps as it likes.
 */
int xlb_prober_poll(struct xlb_prober *p, int timeout_ms,
		    xlb_probe_done_fn done, void *ctx);

#endif /* XLB_HEALTH_PROBE_H */
