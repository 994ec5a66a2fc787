/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The maps of the XDP program. All are pinned by name so that `xlb` finds
 * them after `ip link ... xdp obj` (under /sys/fs/bpf/tc/globals) or after
 * `xlb attach --pin-dir DIR` (under DIR). Key and value types come from
 * include/xlb.h, the one definition both sides use.
 */
#ifndef XLB_BPF_MAPS_H
#define XLB_BPF_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "health.h"
#include "xlb.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xlb_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XLB_MAX_VIPS);
	__type(key, struct xlb_vip_key);
	__type(value, struct xlb_vip);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_vips SEC(".maps");

/*
 * Atomic table updates: each VIP's lookup table (M backend ids, packed four
 * to an 8-byte element: struct xlb_table_elem) is an inner
 * array held in xlb_tables at the VIP's id. The loader fills a new inner
 * array completely (BPF_F_MMAPABLE: one memcpy) and then replaces the outer
 * entry in one update, so a packet sees either the whole old table or the
 * whole new one; the old array is freed once no program holds it.
 * BPF_F_INNER_MAP lets inner arrays of different sizes (M per VIP) share
 * one outer map.
 */
struct xlb_table_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	__uint(max_entries, XLB_TABLE_ELEMS(XLB_DEFAULT_TABLE_SIZE));
	__type(key, __u32);
	/* struct xlb_table_elem's shape: as a struct, BTF would hold it
	 * only as a forward declaration, which libbpf cannot size. */
	__type(value, __u16[XLB_TABLE_IDS]);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, XLB_MAX_VIPS);
	__type(key, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__array(values, struct xlb_table_inner);
} xlb_tables SEC(".maps");

/* Written whole by the loader whenever the set of VIPs changes: a bit set
 * before a VIP is added, cleared after it is deleted. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xlb_vip_filter);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_vip_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XLB_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct xlb_backend);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_backends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_MAX_VIPS);
	__type(key, __u32);
	__type(value, struct xlb_counter);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_vip_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct xlb_counter);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_backend_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_STAT__MAX);
	__type(key, __u32);
	__type(value, struct xlb_counter);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_stats SEC(".maps");

/*
 * The connection table (bpf/conntrack.h): flow -> backend, a set-associative
 * table in one array shared by all CPUs, so a flow that RSS moves to another
 * CPU keeps its entry and `xlb show` counts every flow once. 64 bytes of
 * kernel memory per entry, all allocated when the map is made
 * (docs/conntrack.md). Mmapable for its layout: the kernel then places the
 * values at a page boundary, so every slot is one cache line and every set
 * lies within one page. `xlb attach` sizes it from the conntrack-size
 * setting, `ip link ... xdp obj` makes it with this default.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XLB_CT_DEFAULT_SIZE);
	__type(key, __u32);
	__type(value, struct xlb_ct_slot);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_conntrack SEC(".maps");

/* The VIP addresses (struct xlb_vip_addr), written by the loader with the
 * VIP filter: an address is in it while any VIP has it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XLB_MAX_VIPS);
	__type(key, struct xlb_vip_key);
	__type(value, struct xlb_vip_addr);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_vip_addrs SEC(".maps");

/* A copy of each VIP's key and record at its filter bit (include/xlb.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XLB_VIP_FILTER_BITS);
	__type(key, __u32);
	__type(value, struct xlb_vip_slot);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_vip_slots SEC(".maps");

/* Source ranges (include/xlb.h: struct xlb_src_key): read only for the
 * VIPs whose bit xlb_vip_ranged has. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, XLB_SRC_MAP_ENTRIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xlb_src_key);
	__type(value, struct xlb_src_value);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_src_ranges SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xlb_vip_ranged);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_vip_ranged SEC(".maps");

/* Each VIP's packets its source ranges turned away (drop_src_denied). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XLB_MAX_VIPS);
	__type(key, __u32);
	__type(value, struct xlb_counter);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_vip_denied SEC(".maps");

/* Health settings and each backend's health (include/health.h): the
 * datapath reads neither, but declaring them here makes `xlb attach` and
 * `ip link ... xdp obj` create them with the instance. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XLB_HC_CONFIG_ENTRIES);
	__type(key, __u32);
	__type(value, struct xlb_hc_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_hc_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XLB_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct xlb_hc_state);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xlb_hc_state SEC(".maps");

#endif /* XLB_BPF_MAPS_H */
