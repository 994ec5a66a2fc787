// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * floor_attach: loads bench/bpf/floor.bpf.c, the throughput benchmark's
 * minimal Maglev forwarder, fills its maps and attaches it to a device in
 * native mode; the program stays attached after this exits.
 *
 *   floor_attach OBJ DEV NEXTHOP_MAC STATS_PIN [BACKENDS]
 *
 * The table is loader/algo's Maglev over BACKENDS (default 8) backends,
 * 192.0.2.201 and on, as bench/throughput.sh gives xlb's VIP; the outer
 * source is 203.0.113.1, as xlb's there. Each backend's Ethernet and outer
 * IPv4 header is built here once: to NEXTHOP_MAC, from DEV's address. The
 * counters are pinned at STATS_PIN for the benchmark's path check.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "lb_algo.h"
#include "bpf/floor.h"

static int dev_mac(const char *dev, unsigned char mac[6])
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		err = -errno;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
	return err;
}

static __u16 ip_csum(const void *hdr, size_t len)
{
	const __u8 *p = hdr;
	__u32 sum = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (__u32)p[i] << 8 | p[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons(~sum & 0xffff);
}

/* Backend i's header: Ethernet to the next hop, IPv4 in IPv4 with DF,
 * length 0 (the program adds each packet's). */
static void backend_hdr(struct floor_backend *b, const unsigned char dst[6],
			const unsigned char src[6], __u32 i)
{
	struct iphdr ip = {
		.version = 4, .ihl = 5, .ttl = 64, .protocol = IPPROTO_IPIP,
		.frag_off = htons(IP_DF),
		.saddr = htonl(0xcb007101),		/* 203.0.113.1 */
		.daddr = htonl(0xc00002c9 + i),	/* 192.0.2.201 + i */
	};

	memset(b, 0, sizeof(*b));
	memcpy(b->hdr, dst, 6);
	memcpy(b->hdr + 6, src, 6);
	b->hdr[12] = 0x08;
	ip.check = ip_csum(&ip, sizeof(ip));
	memcpy(b->hdr + 14, &ip, sizeof(ip));
}

int main(int argc, char **argv)
{
	struct lb_backend in[FLOOR_MAX_BACKENDS] = { 0 };
	unsigned char nh[6], mac[6];
	struct floor_backend hdr;
	struct bpf_object *obj;
	struct bpf_program *prog;
	__u32 n = 8, i, *table;
	int ifindex, err, fd;

	if (argc < 5 || argc > 6 ||
	    sscanf(argv[3], "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &nh[0], &nh[1],
		   &nh[2], &nh[3], &nh[4], &nh[5]) != 6 ||
	    (argc == 6 && (sscanf(argv[5], "%u", &n) != 1 || !n ||
			   n > FLOOR_MAX_BACKENDS))) {
		fprintf(stderr, "usage: floor_attach OBJ DEV NEXTHOP_MAC STATS_PIN [BACKENDS 1-%d]\n",
			FLOOR_MAX_BACKENDS);
		return 2;
	}
	ifindex = if_nametoindex(argv[2]);
	if (!ifindex || dev_mac(argv[2], mac)) {
		fprintf(stderr, "floor_attach: no device %s\n", argv[2]);
		return 1;
	}
	table = calloc(FLOOR_M, sizeof(*table));
	if (!table)
		return 1;
	for (i = 0; i < n; i++) {
		snprintf(in[i].id, sizeof(in[i].id), "192.0.2.%u", 201 + i);
		in[i].weight = 1;
	}
	err = maglev_build(in, n, FLOOR_M, table);
	if (err) {
		fprintf(stderr, "floor_attach: maglev_build: %s\n", strerror(-err));
		return 1;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "floor_attach: cannot load %s\n", argv[1]);
		return 1;
	}
	fd = bpf_object__find_map_fd_by_name(obj, "floor_slots");
	for (i = 0; i < FLOOR_M && !err; i++)
		err = bpf_map_update_elem(fd, &i, &table[i], BPF_ANY);
	fd = bpf_object__find_map_fd_by_name(obj, "floor_backends");
	for (i = 0; i < n && !err; i++) {
		backend_hdr(&hdr, nh, mac, i);
		err = bpf_map_update_elem(fd, &i, &hdr, BPF_ANY);
	}
	if (!err)
		err = bpf_obj_pin(bpf_object__find_map_fd_by_name(obj, "floor_stats"),
				  argv[4]);
	prog = bpf_object__find_program_by_name(obj, "floor_xdp");
	if (!err && prog)
		err = bpf_xdp_attach(ifindex, bpf_program__fd(prog),
				     XDP_FLAGS_DRV_MODE, NULL);
	if (err || !prog) {
		fprintf(stderr, "floor_attach: cannot set up %s on %s: %s\n",
			argv[1], argv[2], strerror(errno));
		return 1;
	}
	bpf_object__close(obj);
	free(table);
	return 0;
}
