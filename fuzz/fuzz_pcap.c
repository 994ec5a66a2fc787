// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Fuzz target: the capture reader of `xlb replay` (loader/replay/
 * pcap_flows.h). The input is a pcap or pcapng file, given to
 * trace_read() as a memfd named by /proc/self/fd/N; libpcap reads the
 * file format, xlb the link, IP and transport headers inside it.
 *
 * Beyond memory errors and undefined behaviour, the reader must keep its
 * contract:
 *  - every packet read is counted once: as a flow's or as skipped;
 *  - each packet given to the callback names an existing flow, and the
 *    flows' packet counts add up to the packets given to flows;
 *  - a failure is -errno with exactly one error reported;
 *  - a callback that stops the read (here: at a TCP packet with all eight
 *    flags set) stops it at once, its value returned, nothing reported;
 *  - reading the same file again into the same trace finds no new flow
 *    and counts every packet a second time.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "pcap_flows.h"
#include "report.h"

static int fd = -1;
static char path[64];
/* The reader notes each file of an unsupported link type on stderr
 * (p_info); the fuzzer makes thousands. Those notes go to /dev/null, the
 * checks' messages to the real stderr. (glibc's stderr is a variable;
 * the sanitizers write to fd 2 directly and are not affected.) */
static FILE *out, *quiet;
static unsigned int errors;
static char last_error[1024];

struct seen {
	const struct trace *t;
	__u64 packets;		/* given to the callback */
	bool stopped;		/* the callback stopped the read */
};

#define STOP_FLAGS	0xff
#define STOPPED		(-ECANCELED)

static void count_error(const char *msg)
{
	errors++;
	snprintf(last_error, sizeof(last_error), "%s", msg);
}

#define CHECK(cond, ...) FUZZ_CHECK(out, cond, __VA_ARGS__)

static int on_packet(void *ctx, const struct trace_packet *pkt)
{
	struct seen *s = ctx;
	const struct trace_flow *f;

	CHECK(pkt->flow < s->t->n, "packet of flow %zu, %zu flows", pkt->flow, s->t->n);
	f = &s->t->flows[pkt->flow];
	CHECK(f->packets >= 1, "flow %zu has no packet", pkt->flow);
	CHECK(f->tuple.proto == 6 || f->tuple.proto == 17, "protocol %u", f->tuple.proto);
	CHECK(f->tuple.family == XLB_AF_INET || f->tuple.family == XLB_AF_INET6,
	      "family %u", f->tuple.family);
	CHECK(f->tuple.proto == 6 || !pkt->tcp_flags, "UDP with TCP flags");
	CHECK(!s->stopped, "a packet after the callback stopped the read");
	s->packets++;
	if (pkt->tcp_flags == STOP_FLAGS) {
		s->stopped = true;
		return STOPPED;
	}
	return 0;
}

static __u64 skipped(const struct trace_stats *st)
{
	return st->skipped_not_ip + st->skipped_not_l4 +
	       st->skipped_fragment + st->skipped_short;
}

/* One read of the file into t; returns its result after the checks. */
static int read_once(struct trace *t)
{
	struct trace_stats before = t->stats;
	struct seen s = { .t = t };
	__u64 sum = 0;
	size_t i;
	int err;

	errors = 0;
	stderr = quiet;
	err = trace_read(t, path, on_packet, &s);
	stderr = out;
	CHECK(err <= 0, "trace_read returned %d", err);
	CHECK(s.stopped == (err == STOPPED), "returned %d, the callback %s", err,
	      s.stopped ? "stopped it" : "did not stop it");
	CHECK((err == 0 || s.stopped) ? errors == 0 : errors == 1,
	      "returned %d after %u errors, the last: %s", err, errors, last_error);
	CHECK(t->stats.packets == t->stats.flow_packets + skipped(&t->stats),
	      "%llu packets, %llu in flows, %llu skipped",
	      (unsigned long long)t->stats.packets,
	      (unsigned long long)t->stats.flow_packets,
	      (unsigned long long)skipped(&t->stats));
	CHECK(s.packets == t->stats.flow_packets - before.flow_packets,
	      "%llu packets given, %llu counted", (unsigned long long)s.packets,
	      (unsigned long long)(t->stats.flow_packets - before.flow_packets));
	for (i = 0; i < t->n; i++)
		sum += t->flows[i].packets;
	CHECK(sum == t->stats.flow_packets, "flows hold %llu packets, %llu counted",
	      (unsigned long long)sum, (unsigned long long)t->stats.flow_packets);
	return err;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fd = memfd_create("xlb-pcap-fuzz", MFD_CLOEXEC);
	if (fd < 0) {
		perror("memfd_create");
		exit(1);
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	out = stderr;
	quiet = fopen("/dev/null", "w");
	if (!quiet)
		quiet = stderr;
	p_err_hook = count_error;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace t = {};
	struct trace_stats first;
	size_t flows;
	int err, err2;

	if (size > (1 << 20))
		return -1;
	if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) {
		perror("memfd");
		abort();
	}
	err = read_once(&t);
	first = t.stats;
	flows = t.n;
	if (first.files == 1) {
		err2 = read_once(&t);
		CHECK(err2 == err, "second read returned %d, the first %d", err2, err);
		CHECK(t.n == flows, "second read: %zu flows, the first %zu", t.n, flows);
		CHECK(t.stats.packets == 2 * first.packets &&
		      t.stats.flow_packets == 2 * first.flow_packets,
		      "second read counted %llu packets, the first %llu",
		      (unsigned long long)(t.stats.packets - first.packets),
		      (unsigned long long)first.packets);
	}
	trace_free(&t);
	return 0;
}
