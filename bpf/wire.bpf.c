// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Makes a packet sent by a local socket look like one received from a
 * wire: without the socket's flow hash. Such a packet keeps that hash
 * (skb->hash, marked as an L4 hash) when it crosses a veth into another
 * namespace, and a router there takes it for its ECMP choice instead of
 * hashing the 5-tuple (fib_multipath_hash_policy 1 uses an L4 hash it
 * finds). The router of the scale-out topology runs this at ingress from
 * its clients, so its choice is the 5-tuple hash a router makes of packets
 * from a NIC.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int tc_wire(struct __sk_buff *skb)
{
	bpf_set_hash_invalid(skb);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
