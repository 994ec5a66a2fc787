// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Requests over rtnetlink (see rtnl.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "rtnl.h"

static int rtnl_socket(struct xlb_rtnl *nl)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int fd, one = 1, err;

	if (nl->fd >= 0)
		return nl->fd;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	/* Single-entry gets checked strictly where the kernel can (4.20+);
	 * older kernels ignore the option. */
	setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	nl->fd = fd;
	return fd;
}

int xlb_rtnl_open(struct xlb_rtnl *nl)
{
	int fd = rtnl_socket(nl);

	return fd < 0 ? fd : 0;
}

void xlb_rtnl_req_init(struct xlb_rtnl_req *req, __u16 type, __u16 flags,
		       size_t hdr_len)
{
	memset(req, 0, sizeof(*req));
	req->n.nlmsg_len = NLMSG_LENGTH(hdr_len);
	req->n.nlmsg_type = type;
	req->n.nlmsg_flags = NLM_F_REQUEST | flags;
}

void xlb_rtnl_attr(struct nlmsghdr *n, __u16 type, const void *data,
		   size_t len)
{
	struct rtattr *rta = (void *)((char *)n + NLMSG_ALIGN(n->nlmsg_len));

	rta->rta_type = type;
	rta->rta_len = RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(rta), data, len);
	n->nlmsg_len = NLMSG_ALIGN(n->nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

struct rtattr *xlb_rtnl_nest(struct nlmsghdr *n, __u16 type)
{
	struct rtattr *nest = (void *)((char *)n + NLMSG_ALIGN(n->nlmsg_len));

	xlb_rtnl_attr(n, type, NULL, 0);
	return nest;
}

void xlb_rtnl_nest_end(struct nlmsghdr *n, struct rtattr *nest)
{
	nest->rta_len = (char *)n + n->nlmsg_len - (char *)nest;
}

/* The next datagram of the socket into nl->buf: its length or -errno. */
static ssize_t rtnl_recv(struct xlb_rtnl *nl)
{
	ssize_t len;

	/* MSG_TRUNC: the datagram's whole length, so that one larger than
	 * the buffer is an error rather than a dump silently cut short. */
	do {
		len = recv(nl->fd, nl->buf, sizeof(nl->buf), MSG_TRUNC);
	} while (len < 0 && errno == EINTR);
	if (len > (ssize_t)sizeof(nl->buf))
		return -EMSGSIZE;
	return len < 0 ? -errno : len;
}

static int rtnl_send(struct xlb_rtnl *nl, struct nlmsghdr *req)
{
	int fd = rtnl_socket(nl);

	if (fd < 0)
		return fd;
	req->nlmsg_seq = ++nl->seq;
	return send(fd, req, req->nlmsg_len, 0) < 0 ? -errno : 0;
}

/* The answers to the request numbered seq: a dump's messages to fn until
 * its end, or a get's one reply, or a change's acknowledgement; *ack, when
 * ack is not NULL, the error message that ended them (in nl->buf). */
static int rtnl_answer(struct xlb_rtnl *nl, __u32 seq, struct nlmsghdr **reply,
		       int (*fn)(const struct nlmsghdr *msg, void *ctx),
		       void *ctx, struct nlmsghdr **ack)
{
	struct nlmsghdr *h;
	ssize_t len;
	int err;

	for (;;) {
		len = rtnl_recv(nl);
		if (len < 0)
			return len;
		for (h = (void *)nl->buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				if (ack)
					*ack = h;
				return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			}
			if (!fn) {
				if (reply)
					*reply = h;
				return 0;
			}
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			/* The rest of a dump stopped here is skipped by the
			 * next request (another sequence number). */
			err = fn(h, ctx);
			if (err)
				return err;
		}
	}
}

int xlb_rtnl_talk(struct xlb_rtnl *nl, struct nlmsghdr *req,
		  struct nlmsghdr **reply)
{
	return rtnl_send(nl, req) ?:
	       rtnl_answer(nl, req->nlmsg_seq, reply, NULL, NULL, NULL);
}

int xlb_rtnl_dump(struct xlb_rtnl *nl, struct nlmsghdr *req,
		  int (*fn)(const struct nlmsghdr *msg, void *ctx), void *ctx)
{
	req->nlmsg_flags |= NLM_F_DUMP;
	return rtnl_send(nl, req) ?:
	       rtnl_answer(nl, req->nlmsg_seq, NULL, fn, ctx, NULL);
}

/* The kernel's words in an error message (NLMSGERR_ATTR_MSG), as
 * " (words)" in why. */
static void ext_ack_msg(const struct nlmsghdr *h, char *why, size_t why_len)
{
	const struct nlmsgerr *e = NLMSG_DATA(h);
	const struct nlattr *a;
	size_t off;
	int len;

	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS) ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
		return;
	/* The attributes follow the request, which the kernel echoes back
	 * whole unless NLM_F_CAPPED says it did not. */
	off = NLMSG_HDRLEN + sizeof(*e);
	if (!(h->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	if (off >= h->nlmsg_len)
		return;
	a = (const void *)((const char *)h + off);
	for (len = h->nlmsg_len - off;
	     len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= len;
	     len -= NLA_ALIGN(a->nla_len),
	     a = (const void *)((const char *)a + NLA_ALIGN(a->nla_len)))
		if ((a->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG)
			snprintf(why, why_len, " (%.*s)",
				 (int)(a->nla_len - NLA_HDRLEN),
				 (const char *)a + NLA_HDRLEN);
}

int xlb_rtnl_change(struct xlb_rtnl *nl, struct nlmsghdr *req, char *why,
		    size_t why_len)
{
	struct nlmsghdr *ack = NULL;
	int fd, one = 1, err;

	why[0] = 0;
	fd = rtnl_socket(nl);
	if (fd < 0)
		return fd;
	/* Without it the kernel's reason for a refusal is lost. */
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	req->nlmsg_flags |= NLM_F_ACK;
	err = rtnl_send(nl, req) ?:
	      rtnl_answer(nl, req->nlmsg_seq, NULL, NULL, NULL, &ack);
	if (err && ack)
		ext_ack_msg(ack, why, why_len);
	return err;
}

int xlb_rtnl_route_type(struct xlb_rtnl *nl, int af, const void *dst,
			__u8 *type)
{
	size_t len = af == AF_INET ? 4 : 16;
	struct xlb_rtnl_req req;
	struct nlmsghdr *h;
	struct rtmsg *r;
	int err;

	xlb_rtnl_req_init(&req, RTM_GETROUTE, 0, sizeof(*r));
	r = xlb_rtnl_hdr(&req);
	r->rtm_family = af;
	r->rtm_dst_len = len * 8;
	xlb_rtnl_attr(&req.n, RTA_DST, dst, len);
	err = xlb_rtnl_talk(nl, &req.n, &h);
	/* The kernel answers a route that leads nowhere with its error. */
	if (err == -ENETUNREACH || err == -EHOSTUNREACH)
		*type = RTN_UNREACHABLE;
	else if (err == -EINVAL)
		*type = RTN_BLACKHOLE;
	else if (err == -EACCES)
		*type = RTN_PROHIBIT;
	else if (!err && h->nlmsg_type == RTM_NEWROUTE)
		*type = ((struct rtmsg *)NLMSG_DATA(h))->rtm_type;
	else
		return err ?: -EPROTO;
	return 0;
}

void xlb_rtnl_close(struct xlb_rtnl *nl)
{
	if (nl->fd >= 0)
		close(nl->fd);
	nl->fd = -1;
}
