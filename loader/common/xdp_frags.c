// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Multi-buffer XDP and device MTUs (see xdp_frags.h). */
#include <stdio.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <string.h>
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>

#include "xdp_frags.h"

/* Asked by loading the smallest such program: no kernel version says
 * it, since distributions backport. */
bool xlb_xdp_frags_supported(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
		  .imm = XDP_PASS },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
		    .prog_flags = BPF_F_XDP_HAS_FRAGS);
	int fd;

	fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "xlb_frags", "GPL", insns,
			   sizeof(insns) / sizeof(insns[0]), &opts);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int xlb_dev_mtu(const char *dev)
{
	struct ifreq ifr = {};
	int fd, mtu = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	if (!ioctl(fd, SIOCGIFMTU, &ifr))
		mtu = ifr.ifr_mtu;
	close(fd);
	return mtu;
}

/* The name of dev's driver ("veth", "virtio_net"), or "" when the
 * kernel does not say. */
static void dev_driver(const char *dev, char *buf, size_t len)
{
	struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
	struct ifreq ifr = {};
	int fd;

	buf[0] = '\0';
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	ifr.ifr_data = (void *)&info;
	if (!ioctl(fd, SIOCETHTOOL, &ifr))
		snprintf(buf, len, "%.*s", (int)sizeof(info.driver), info.driver);
	close(fd);
}

bool xlb_xdp_mtu_refused(int err, const char *dev)
{
	return err == -ERANGE ||
	       (err == -EINVAL && xlb_dev_mtu(dev) > XLB_XDP_PAGE_MTU);
}

void xlb_xdp_mtu_refusal(const char *dev, bool frags, char *buf, size_t len)
{
	char driver[40];
	bool veth;

	dev_driver(dev, driver, sizeof(driver));
	veth = !strcmp(driver, "veth");
	/* A veth checks its peer's MTU as well as its own; other drivers
	 * say their limit in the kernel's log only. */
	snprintf(buf, len,
		 "its MTU %d%s is above what its driver%s%s%s takes for XDP%s: lower it (%s: ip link set dev %s mtu %d)",
		 xlb_dev_mtu(dev), veth ? " (or its peer's)" : "",
		 driver[0] ? " (" : "", driver, driver[0] ? ")" : "",
		 frags ? " (the driver has no multi-buffer XDP)" :
			 " without multi-buffer support, which this kernel lacks",
		 veth ? "3498 fits a veth" :
			"about a page less XDP's headroom fits; dmesg names the driver's limit",
		 dev, XLB_XDP_PAGE_MTU);
}
