// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bpf/hc.bpf.c, the health probes' LWT program:
 *  - through the kernel's own path (loader/health/hc_path.c installed in a
 *    private network and mount namespace, a marked UDP datagram sent to a
 *    VIP, the frame caught on the far end of a veth): the probe leaves
 *    encapsulated to the backend its mark names, in the frame the
 *    datapath's model (loader/sim/packets.h, pkt_encap) builds for that
 *    backend, for every pairing of inner and outer family, in IPIP and,
 *    for a backend of a GUE VIP, in GUE to the instance's GUE port with a
 *    UDP source port from the probe's hash; counted;
 *  - with BPF_PROG_TEST_RUN: what it must not encapsulate (no mark, an
 *    unknown or unused backend id, no outer source of the backend's
 *    family) is dropped and counted by reason. (The encapsulating helper
 *    needs the packet's route, which a test run does not give it: the
 *    encapsulation is tested on the real path above.)
 */
#include <errno.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <net/if.h>
#include <linux/if_packet.h>
#include <linux/if_ether.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "testlib.h"
#include "xlb.h"
#include "hc.h"
#include "hc_path.h"
#include "gue.h"
#include "probe.h"
#include "report.h"
#include "sandbox.h"
#include "packets.h"
#include "hc.skel.h"

#define PIN_DIR		"/sys/fs/bpf"
#define VIP4		"192.0.2.10"
#define VIP6		"2001:db8:f::10"
#define SRC4		"198.51.100.1"
#define SRC6		"2001:db8:100::1"
#define BE4		"198.51.100.2"
#define BE6		"2001:db8:100::2"
#define ID_BE4		1
#define ID_BE6		2
#define ID_NOT_IN_USE	3
#define ID_GUE4		4	/* BE4 and BE6 as backends of a GUE VIP */
#define ID_GUE6		5
#define PROBE_PORT	9
#define GUE_PORT	7000	/* the instance's setting, not the default */
static const __u8 mac_lb[6] = { 0x02, 0x58, 0x4c, 0x48, 0x00, 0x01 };
static const __u8 mac_be[6] = { 0x02, 0x58, 0x4c, 0x48, 0x00, 0x02 };

static const char topology[] =
	"link set lo up\n"
	"link add hc0 address 02:58:4c:48:00:01 type veth peer name hc0p"
		" address 02:58:4c:48:00:02\n"
	"link set hc0 up\n"
	"link set hc0p up\n"
	"addr add " SRC4 "/24 dev hc0\n"
	"addr add " SRC6 "/64 dev hc0 nodad\n"
	"neigh add " BE4 " lladdr 02:58:4c:48:00:02 dev hc0 nud permanent\n"
	"neigh add " BE6 " lladdr 02:58:4c:48:00:02 dev hc0 nud permanent\n";

static struct xlb_backend backend(int family, const char *addr, __u8 flags)
{
	struct xlb_backend b = { .family = family == 4 ? XLB_AF_INET : XLB_AF_INET6,
				 .flags = flags, .weight = 1, .gen = 1 };

	pkt_addr(family, addr, (__u8 *)b.addr);
	return b;
}

static struct xlb_config config(bool src4, bool src6)
{
	struct xlb_config c = { .flags = XLB_CFG_F_INITIALIZED,
				.gue_port = htons(GUE_PORT) };

	if (src4)
		pkt_addr(4, SRC4, (__u8 *)&c.src4);
	if (src6)
		pkt_addr(6, SRC6, (__u8 *)c.src6);
	return c;
}

/* The backends every case uses: an IPv4 and an IPv6 one in use, an IPv4
 * record not in use, and the IPv4 and IPv6 one again as backends of a
 * GUE VIP. */
static int fill_maps(int config_fd, int backends_fd, const struct xlb_config *cfg)
{
	struct xlb_backend b4 = backend(4, BE4, XLB_BE_F_IN_USE);
	struct xlb_backend b6 = backend(6, BE6, XLB_BE_F_IN_USE);
	struct xlb_backend unused = backend(4, BE4, 0);
	struct xlb_backend g4 = backend(4, BE4, XLB_BE_F_IN_USE | XLB_BE_F_GUE);
	struct xlb_backend g6 = backend(6, BE6, XLB_BE_F_IN_USE | XLB_BE_F_GUE);
	__u32 k0 = 0, k4 = ID_BE4, k6 = ID_BE6, ku = ID_NOT_IN_USE;
	__u32 kg4 = ID_GUE4, kg6 = ID_GUE6;

	return bpf_map_update_elem(config_fd, &k0, cfg, 0) ||
	       bpf_map_update_elem(backends_fd, &k4, &b4, 0) ||
	       bpf_map_update_elem(backends_fd, &k6, &b6, 0) ||
	       bpf_map_update_elem(backends_fd, &ku, &unused, 0) ||
	       bpf_map_update_elem(backends_fd, &kg4, &g4, 0) ||
	       bpf_map_update_elem(backends_fd, &kg6, &g6, 0) ? -errno : 0;
}

static __u64 hc_count(int stats_fd, __u32 reason)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	struct xlb_counter c[ncpu > 0 ? ncpu : 1];
	__u64 sum = 0;

	if (ncpu <= 0 || bpf_map_lookup_elem(stats_fd, &reason, c))
		return ~0ULL;
	for (i = 0; i < ncpu; i++)
		sum += c[i].packets;
	return sum;
}

/* ------------------------------------------------------------------ */
/* BPF_PROG_TEST_RUN: the drops                                          */

static struct hc *load_private(void)
{
	struct hc *skel = hc__open();
	struct bpf_map *map;

	if (!skel)
		return NULL;
	/* Maps of its own: nothing pinned anywhere. */
	bpf_object__for_each_map(map, skel->obj)
		bpf_map__set_pin_path(map, NULL);
	if (hc__load(skel)) {
		hc__destroy(skel);
		return NULL;
	}
	return skel;
}

/* Run the program on an IPv4 UDP packet to the VIP, marked mark. */
static int run_marked(struct hc *skel, __u32 mark, __u32 *retval)
{
	struct pkt_desc d = { .family = 4, .src = SRC4, .dst = VIP4,
			      .proto = IPPROTO_UDP, .sport = 40000,
			      .dport = PROBE_PORT, .payload_len = 8 };
	struct __sk_buff ctx = { .mark = mark };
	__u8 in[PKT_MAX], out[PKT_MAX];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .data_out = out,
		    .data_size_out = sizeof(out));
	int err;

	opts.data_in = in;
	opts.data_size_in = pkt_build(&d, in);
	err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.xlb_hc), &opts);
	*retval = opts.retval;
	return err ? -errno : 0;
}

struct drop_case {
	const char *what;
	__u32 mark;
	bool src4, src6;
	enum xlb_hc_stat reason;
};

static void what_is_not_a_probe_is_dropped_and_counted(void)
{
	static const struct drop_case cases[] = {
		{ "no mark", 0, true, true, XLB_HC_STAT_DROP_NOT_MARKED },
		{ "another mark", 0x12340001, true, true, XLB_HC_STAT_DROP_NOT_MARKED },
		{ "backend id 0", XLB_HC_MARK_BASE, true, true, XLB_HC_STAT_DROP_NO_BACKEND },
		{ "unknown backend id", XLB_HC_MARK_BASE | 77, true, true, XLB_HC_STAT_DROP_NO_BACKEND },
		{ "id beyond the backends", XLB_HC_MARK_BASE | 0xffff, true, true, XLB_HC_STAT_DROP_NO_BACKEND },
		{ "record not in use", XLB_HC_MARK_BASE | ID_NOT_IN_USE, true, true, XLB_HC_STAT_DROP_NO_BACKEND },
		{ "no IPv4 source", XLB_HC_MARK_BASE | ID_BE4, false, true, XLB_HC_STAT_DROP_NO_SOURCE },
		{ "no IPv6 source", XLB_HC_MARK_BASE | ID_BE6, true, false, XLB_HC_STAT_DROP_NO_SOURCE },
	};
	struct hc *skel;
	size_t i;

	if (!test_have_root()) {
		test_skip_env("needs root");
		return;
	}
	skel = load_private();
	if (!ASSERT_TRUE(skel, "load hc.bpf.o"))
		return;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct drop_case *c = &cases[i];
		struct xlb_config cfg = config(c->src4, c->src6);
		int stats = bpf_map__fd(skel->maps.xlb_hc_stats);
		__u64 before[XLB_HC_STAT__MAX], after;
		__u32 retval = ~0U, r;

		printf("  %s\n", c->what);
		for (r = 0; r < XLB_HC_STAT__MAX; r++)
			before[r] = hc_count(stats, r);
		if (!ASSERT_OK(fill_maps(bpf_map__fd(skel->maps.xlb_config),
					 bpf_map__fd(skel->maps.xlb_backends), &cfg),
			       "fill the maps") ||
		    !ASSERT_OK(run_marked(skel, c->mark, &retval), "test run"))
			break;
		ASSERT_EQ(retval, BPF_DROP, c->what);
		for (r = 0; r < XLB_HC_STAT__MAX; r++) {
			after = hc_count(stats, r);
			ASSERT_EQ(after - before[r], r == c->reason ? 1 : 0,
				  "counted once, under its reason");
		}
	}
	hc__destroy(skel);
}

/* ------------------------------------------------------------------ */
/* The real path                                                         */

static bool netns_ready;

/* A network namespace and a bpffs of this process's own, the topology in
 * it, and an instance's two maps pinned there with the backends. */
static bool real_setup(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, none);
	struct xlb_config cfg = config(true, true);
	int config_fd, backends_fd, err;

	if (netns_ready)
		return true;
	if (!test_have_root()) {
		test_skip_env("needs root");
		return false;
	}
	if (!ASSERT_OK(unshare(CLONE_NEWNET | CLONE_NEWNS) ? -errno : 0, "unshare") ||
	    !ASSERT_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ? -errno : 0,
		       "private mounts") ||
	    !ASSERT_OK(mount("bpf", PIN_DIR, "bpf", 0, NULL) ? -errno : 0,
		       "a bpffs of our own") ||
	    !ASSERT_OK(xlb_sandbox_ip(topology), "topology"))
		return false;
	config_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, XLB_MAP_CONFIG, sizeof(__u32),
				   sizeof(struct xlb_config), 1, &none);
	backends_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, XLB_MAP_BACKENDS, sizeof(__u32),
				     sizeof(struct xlb_backend), XLB_MAX_BACKENDS, &none);
	err = config_fd < 0 || backends_fd < 0 ? -EIO :
	      fill_maps(config_fd, backends_fd, &cfg) ?:
	      (bpf_obj_pin(config_fd, PIN_DIR "/" XLB_MAP_CONFIG) ||
	       bpf_obj_pin(backends_fd, PIN_DIR "/" XLB_MAP_BACKENDS) ? -errno : 0);
	if (!ASSERT_OK(err, "the instance's maps"))
		return false;
	netns_ready = true;
	return true;
}

/* A socket that catches every frame reaching hc0p. */
static int catcher(void)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
				   .sll_protocol = htons(ETH_P_ALL),
				   .sll_ifindex = if_nametoindex("hc0p") };
	struct timeval tv = { .tv_sec = 2 };
	int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		close(fd);
		return -errno;
	}
	return fd;
}

/* Send "probe" to the VIP:PROBE_PORT of family vip_family from a socket
 * marked mark; 0 or -errno of the send. */
static int send_marked(int vip_family, __u32 mark)
{
	struct sockaddr_storage ss = {};
	socklen_t len;
	int fd, err = 0;

	if (vip_family == 4) {
		struct sockaddr_in *s = (void *)&ss;

		s->sin_family = AF_INET;
		s->sin_port = htons(PROBE_PORT);
		pkt_addr(4, VIP4, (__u8 *)&s->sin_addr);
		len = sizeof(*s);
	} else {
		struct sockaddr_in6 *s = (void *)&ss;

		s->sin6_family = AF_INET6;
		s->sin6_port = htons(PROBE_PORT);
		pkt_addr(6, VIP6, (__u8 *)&s->sin6_addr);
		len = sizeof(*s);
	}
	fd = socket(vip_family == 4 ? AF_INET : AF_INET6, SOCK_DGRAM, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) ||
	    sendto(fd, "probe", 5, 0, (struct sockaddr *)&ss, len) != 5)
		err = -errno;
	close(fd);
	return err;
}

/* The next frame on fd that is an outer packet of outer_family to the
 * backend, or 0 when none comes. */
static size_t catch_outer(int fd, int outer_family, __u8 *frame)
{
	__u8 dst[16];
	ssize_t n;

	pkt_addr(outer_family, outer_family == 4 ? BE4 : BE6, dst);
	for (;;) {
		n = recv(fd, frame, PKT_MAX, 0);
		if (n < 0)
			return 0;
		if (n < PKT_ETH_LEN + 40)
			continue;
		if (outer_family == 4 && pkt_get16(frame + 12) == PKT_ETH_P_IP &&
		    !memcmp(frame + PKT_ETH_LEN + 16, dst, 4))
			return n;
		if (outer_family == 6 && pkt_get16(frame + 12) == PKT_ETH_P_IPV6 &&
		    !memcmp(frame + PKT_ETH_LEN + 24, dst, 16))
			return n;
	}
}

/*
 * The frame the datapath sends to a backend of a GUE VIP, as
 * tests/test_dp_gue.c models it: pkt_encap()'s, with UDP (source port
 * sport, destination GUE_PORT, length, checksum 0) and GUE (hlen 5, the
 * inner protocol, flags 0; xlb's field: magic, hops 0, no previous
 * backend) after the outer IP header, whose protocol and length say so.
 */
static size_t gue_model(__u8 *out, int be_family, __u32 label, __u16 sport,
			const __u8 *inner, size_t inner_len)
{
	__u8 ipip[PKT_MAX];
	size_t len;

	len = pkt_encap(ipip, mac_be, mac_lb, be_family,
			be_family == 4 ? SRC4 : SRC6, be_family == 4 ? BE4 : BE6,
			label, inner, inner_len, inner[0] >> 4);
	return len ? pkt_encap_gue(out, ipip, len, sport, GUE_PORT) : 0;
}

/* A probe of a VIP of vip_family to the backend of be_family, in GUE when
 * gue (a backend of a GUE VIP), leaves in the datapath's frame. */
static void probe_leaves_in(int vip_family, int be_family, bool gue)
{
	__u8 frame[PKT_MAX], want[PKT_MAX], vip[16];
	int outer_len = (be_family == 4 ? 20 : 40) + (gue ? (int)PKT_GUE_OVERHEAD : 0);
	__u32 id = gue ? (be_family == 4 ? ID_GUE4 : ID_GUE6) :
			 (be_family == 4 ? ID_BE4 : ID_BE6);
	const __u8 *inner, *udp = frame + PKT_ETH_LEN + (be_family == 4 ? 20 : 40);
	size_t len, want_len, inner_len;
	__u32 label;
	__u16 sport;
	int fd;

	fd = catcher();
	if (!ASSERT_GE(fd, 0, "packet socket on hc0p"))
		return;
	if (!ASSERT_OK(send_marked(vip_family, XLB_HC_MARK_BASE | id), "send")) {
		close(fd);
		return;
	}
	len = catch_outer(fd, be_family, frame);
	close(fd);
	if (!ASSERT_GT(len, 0, "an encapsulated frame reaches the backend's link") ||
	    !ASSERT_GT(len, PKT_ETH_LEN + outer_len, "a frame longer than its headers"))
		return;
	inner = frame + PKT_ETH_LEN + outer_len;
	inner_len = len - PKT_ETH_LEN - outer_len;
	/* The flow label and the UDP source port are the probe's own (the
	 * kernel's hash of its socket); everything else is the model's. */
	label = be_family == 6 ? (frame[PKT_ETH_LEN + 1] & 0x0f) << 16 |
				 pkt_get16(frame + PKT_ETH_LEN + 2) : 0;
	if (gue) {
		sport = pkt_get16(udp);
		ASSERT_GE(sport, 0xc000, "UDP source port in the ephemeral range");
		/* Both from one hash: its low 14 bits give the port's. */
		if (be_family == 6)
			ASSERT_EQ(sport & 0x3fff, label & 0x3fff,
				  "UDP source port and flow label from one hash");
		want_len = gue_model(want, be_family, label, sport, inner, inner_len);
	} else {
		want_len = pkt_encap(want, mac_be, mac_lb, be_family,
				     be_family == 4 ? SRC4 : SRC6,
				     be_family == 4 ? BE4 : BE6, label, inner,
				     inner_len, inner[0] >> 4);
	}
	ASSERT_EQ(len, want_len, "frame length");
	ASSERT_MEM_EQ(frame, want, want_len < len ? want_len : len,
		      "the frame the datapath's model builds");
	/* And what it carries is the probe, to the VIP. */
	pkt_addr(vip_family, vip_family == 4 ? VIP4 : VIP6, vip);
	ASSERT_EQ(inner[0] >> 4, vip_family, "inner family");
	ASSERT_MEM_EQ(inner + (vip_family == 4 ? 16 : 24), vip, vip_family == 4 ? 4 : 16,
		      "inner destination: the VIP");
	ASSERT_MEM_EQ(inner + inner_len - 5, "probe", 5, "inner payload");
}

static void probe_leaves_as_the_datapath_sends(int vip_family, int be_family)
{
	probe_leaves_in(vip_family, be_family, false);
}

static struct xlb_hc_path *path;

static bool path_up(void)
{
	if (!real_setup())
		return false;
	if (!path && !ASSERT_OK(xlb_hc_path_install(PIN_DIR, NULL, &path),
				"install the probe path"))
		return false;
	return true;
}

static void ipv4_probe_to_ipv4_backend(void)
{
	if (path_up())
		probe_leaves_as_the_datapath_sends(4, 4);
}

static void ipv6_probe_to_ipv6_backend(void)
{
	if (path_up())
		probe_leaves_as_the_datapath_sends(6, 6);
}

static void ipv4_probe_to_ipv6_backend(void)
{
	if (path_up())
		probe_leaves_as_the_datapath_sends(4, 6);
}

static void ipv6_probe_to_ipv4_backend(void)
{
	if (path_up())
		probe_leaves_as_the_datapath_sends(6, 4);
}

static void ipv4_probe_in_gue_to_ipv4_backend(void)
{
	if (path_up())
		probe_leaves_in(4, 4, true);
}

static void ipv6_probe_in_gue_to_ipv6_backend(void)
{
	if (path_up())
		probe_leaves_in(6, 6, true);
}

static void ipv4_probe_in_gue_to_ipv6_backend(void)
{
	if (path_up())
		probe_leaves_in(4, 6, true);
}

static void ipv6_probe_in_gue_to_ipv4_backend(void)
{
	if (path_up())
		probe_leaves_in(6, 4, true);
}

/* A mark naming no backend: the program drops it (the send says so) and
 * counts it; every probe sent before was counted as encapsulated. */
static void real_path_counts_encapsulated_and_dropped(void)
{
	int stats;
	__u64 encap, no_backend;

	if (!path_up())
		return;
	stats = bpf_obj_get(PIN_DIR "/" XLB_MAP_HC_STATS);
	if (!ASSERT_GE(stats, 0, "the pinned counters"))
		return;
	encap = hc_count(stats, XLB_HC_STAT_ENCAP);
	no_backend = hc_count(stats, XLB_HC_STAT_DROP_NO_BACKEND);
	ASSERT_EQ(send_marked(4, XLB_HC_MARK_BASE | 77), -EPERM, "the send of a dropped probe fails");
	ASSERT_EQ(hc_count(stats, XLB_HC_STAT_DROP_NO_BACKEND), no_backend + 1,
		  "drop_no_backend");
	ASSERT_OK(send_marked(6, XLB_HC_MARK_BASE | ID_BE4), "send");
	ASSERT_EQ(hc_count(stats, XLB_HC_STAT_ENCAP), encap + 1, "encap");
	close(stats);
}

/* Removing takes the rule and route away: a marked packet then has no
 * route at all (the namespace has none to the VIP). */
static void removed_path_routes_nothing(void)
{
	if (!path_up())
		return;
	xlb_hc_path_remove(path);
	path = NULL;
	ASSERT_EQ(send_marked(4, XLB_HC_MARK_BASE | ID_BE4), -ENETUNREACH,
		  "send without the path");
}

static void on_result(void *cookie, const struct xlb_probe_result *res, void *ctx)
{
	(void)ctx;
	*(struct xlb_probe_result *)cookie = *res;
}

/* Without the path, a probe still starts, and reports why it failed. */
static void probe_without_the_path_reports_unreachable(void)
{
	struct xlb_probe pr = { .backend_id = ID_BE4, .family = XLB_AF_INET,
				.kind = XLB_PROBE_TCP, .port = 80, .timeout_ms = 1000 };
	struct xlb_probe_result res = { .ok = true };
	struct xlb_prober *p;

	if (!real_setup() || !ASSERT_TRUE(!path, "the path is removed") ||
	    !ASSERT_OK(xlb_prober_new(&p), "prober"))
		return;
	pkt_addr(4, VIP4, (__u8 *)pr.vip);
	if (ASSERT_OK(xlb_prober_start(p, &pr, &res), "start")) {
		ASSERT_EQ(xlb_prober_poll(p, 1000, on_result, NULL), 1, "one result");
		ASSERT_TRUE(!res.ok, "down");
		ASSERT_TRUE(!strcmp(res.error, "network is unreachable"), res.error);
	}
	xlb_prober_free(p);
}

/* An instance with no outer IPv6 source: the path installs, probes to
 * IPv4 backends leave (from either VIP family), and a probe to an IPv6
 * backend is dropped by the program, its send failing at once. */
static void no_ipv6_source_leaves_ipv4_backends(void)
{
	struct xlb_config v4_only = config(true, false), both = config(true, true);
	__u32 zero = 0;
	int fd;

	if (!real_setup() || !ASSERT_TRUE(!path, "the path is removed"))
		return;
	fd = bpf_obj_get(PIN_DIR "/" XLB_MAP_CONFIG);
	if (!ASSERT_GE(fd, 0, "the pinned config") ||
	    !ASSERT_OK(bpf_map_update_elem(fd, &zero, &v4_only, 0) ? -errno : 0,
		       "no src6") ||
	    !ASSERT_OK(xlb_hc_path_install(PIN_DIR, NULL, &path),
		       "install without an IPv6 source"))
		goto out;
	probe_leaves_as_the_datapath_sends(4, 4);
	probe_leaves_as_the_datapath_sends(6, 4);
	ASSERT_EQ(send_marked(4, XLB_HC_MARK_BASE | ID_BE6), -EPERM,
		  "a probe of an IPv6 backend is dropped");
	xlb_hc_path_remove(path);
	path = NULL;
out:
	if (fd >= 0) {
		ASSERT_OK(bpf_map_update_elem(fd, &zero, &both, 0) ? -errno : 0,
			  "both sources back");
		close(fd);
	}
}

static int write_sysctl(const char *path, const char *value)
{
	FILE *f = fopen(path, "w");
	int err = 0;

	if (!f)
		return -errno;
	if (fputs(value, f) < 0)
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

/* IPv6 disabled on the device of the outer source: the IPv4 probes keep
 * their path; the IPv6 ones fail at once (an unreachable route) instead
 * of leaving unencapsulated by the main table, each reporting why. (Disabling IPv6 flushes
 * the device's IPv6 addresses: this case comes after every IPv6 one.) */
static void ipv6_disabled_on_the_device_leaves_ipv4(void)
{
	struct xlb_probe pr = { .backend_id = ID_BE6, .family = XLB_AF_INET6,
				.kind = XLB_PROBE_TCP, .port = 80, .timeout_ms = 1000 };
	struct xlb_probe_result res = { .ok = true };
	struct xlb_prober *p;

	if (!real_setup() || !ASSERT_TRUE(!path, "the path is removed") ||
	    !ASSERT_OK(write_sysctl("/proc/sys/net/ipv6/conf/hc0/disable_ipv6", "1"),
		       "disable IPv6 on hc0") ||
	    !ASSERT_OK(xlb_hc_path_install(PIN_DIR, NULL, &path),
		       "install with IPv6 disabled on the device"))
		return;
	probe_leaves_as_the_datapath_sends(4, 4);
	ASSERT_EQ(send_marked(6, XLB_HC_MARK_BASE | ID_BE4), -EHOSTUNREACH,
		  "an IPv6 probe meets the unreachable route");
	if (ASSERT_OK(xlb_prober_new(&p), "prober")) {
		pkt_addr(6, VIP6, (__u8 *)pr.vip);
		if (ASSERT_OK(xlb_prober_start(p, &pr, &res), "start")) {
			ASSERT_EQ(xlb_prober_poll(p, 1000, on_result, NULL), 1,
				  "one result");
			ASSERT_TRUE(!res.ok, "down");
			ASSERT_TRUE(!strcmp(res.error, "no route to host"), res.error);
		}
		xlb_prober_free(p);
	}
	xlb_hc_path_remove(path);
	path = NULL;
}

/* No family can be installed (the device down, IPv6 disabled on it): the
 * install fails, and leaves no route or rule. */
static void no_family_installable_fails(void)
{
	if (!real_setup() || !ASSERT_TRUE(!path, "the path is removed") ||
	    !ASSERT_OK(write_sysctl("/proc/sys/net/ipv6/conf/hc0/disable_ipv6", "1"),
		       "disable IPv6 on hc0") ||
	    !ASSERT_OK(xlb_sandbox_ip("link set hc0 down\n"), "hc0 down"))
		return;
	ASSERT_TRUE(xlb_hc_path_install(PIN_DIR, NULL, &path) < 0, "install fails");
	ASSERT_TRUE(!path, "no path");
	ASSERT_EQ(send_marked(4, XLB_HC_MARK_BASE | ID_BE4), -ENETUNREACH,
		  "nothing left in place");
	ASSERT_OK(xlb_sandbox_ip("link set hc0 up\n"), "hc0 up");
}

TEST_MAIN(
	TEST(what_is_not_a_probe_is_dropped_and_counted),
	TEST(ipv4_probe_to_ipv4_backend),
	TEST(ipv6_probe_to_ipv6_backend),
	TEST(ipv4_probe_to_ipv6_backend),
	TEST(ipv6_probe_to_ipv4_backend),
	TEST(ipv4_probe_in_gue_to_ipv4_backend),
	TEST(ipv6_probe_in_gue_to_ipv6_backend),
	TEST(ipv4_probe_in_gue_to_ipv6_backend),
	TEST(ipv6_probe_in_gue_to_ipv4_backend),
	TEST(real_path_counts_encapsulated_and_dropped),
	TEST(removed_path_routes_nothing),
	TEST(probe_without_the_path_reports_unreachable),
	TEST(no_ipv6_source_leaves_ipv4_backends),
	TEST(ipv6_disabled_on_the_device_leaves_ipv4),
	TEST(no_family_installable_fails),
)
