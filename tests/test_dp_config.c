// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The datapath under configuration changes: without a seed or an outer
 * source address it drops, counted, what it cannot forward; a table
 * swapped, refused or removed in its map takes effect at once.
 */
#include "testlib.h"
#include "dp_fixture.h"

static void missing_config_and_source_are_counted_drops(void)
{
	struct pkt_desc other = { V4(CLIENT4, "192.0.2.99", TCP, 40102, 80) };
	struct xlb_config saved;
	__u8 out[PKT_MAX];
	__u32 out_len;

	if (!fixture())
		return;
	/* Not before fixture(): its first call fills fx.cfg in. */
	saved = fx.cfg;
	fx.cfg.flags = 0;
	if (!ASSERT_OK(dp_write_config(&fx), "config without a seed"))
		return;
	expect_run(&to_mtu4, XDP_DROP, XLB_STAT_DROP_NO_CONFIG, out, &out_len, "vip, no config");
	expect_run(&other, XDP_PASS, XLB_STAT_PASS_NOT_VIP, out, &out_len, "not a vip, no config");

	fx.cfg = saved;
	fx.cfg.src4 = 0;
	ASSERT_OK(dp_write_config(&fx), "config without an ipv4 source");
	expect_run(&to_mtu4, XDP_DROP, XLB_STAT_DROP_NO_SOURCE, out, &out_len, "no ipv4 source");
	expect_run(&to_mtu6, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "ipv6 backend needs no ipv4 source");

	fx.cfg = saved;
	memset(fx.cfg.src6, 0, sizeof(fx.cfg.src6));
	ASSERT_OK(dp_write_config(&fx), "config without an ipv6 source");
	expect_run(&to_mtu6, XDP_DROP, XLB_STAT_DROP_NO_SOURCE, out, &out_len, "no ipv6 source");
	expect_run(&to_mtu4, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "ipv4 backend needs no ipv6 source");

	fx.cfg = saved;
	ASSERT_OK(dp_write_config(&fx), "config restored");
}

/* The outer destination of an output frame, as text. */
static void outer_dst(const __u8 *frame, char *out)
{
	if (pkt_get16(frame + 12) == PKT_ETH_P_IP)
		text_addr(4, frame + PKT_ETH_LEN + 16, out);
	else
		text_addr(6, frame + PKT_ETH_LEN + 24, out);
}

static void table_swap_read_back_and_removal(void)
{
	__u32 slots[3], *got = NULL, m = 0, a = 0, b, i, out_len;
	char dst[INET6_ADDRSTRLEN];
	/* SYNs: a new connection follows the table, whatever the connection
	 * table remembers of the 5-tuple (bpf/conntrack.h). */
	struct pkt_desc syn = { V4(CLIENT4, "192.0.2.50", TCP, 40100, 80),
				.tcp_flags = PKT_TCP_SYN };
	__u8 out[PKT_MAX];
	struct dp_vip *v;

	if (!fixture())
		return;
	/* The big random table reads back exactly. */
	v = &fx.vips[VIP_RANDOM4];
	if (ASSERT_OK(xlb_table_read(fx.maps.tables, VIP_RANDOM4, &got, &m), "read back"))
		ASSERT_TRUE(m == v->m && !memcmp(got, v->table, m * sizeof(*got)),
			    "65537-slot table read back");
	free(got);
	got = NULL;

	v = &fx.vips[VIP_MTU4];
	a = v->table[0];
	if (!ASSERT_OK(dp_add_backend(&fx, VIP_MTU4, "203.0.113.51", &b), "second backend"))
		return;
	for (i = 0; i < 3; i++)
		slots[i] = b;
	ASSERT_OK(xlb_table_install(fx.maps.tables, VIP_MTU4, slots, 3), "swap to b");
	expect_run(&syn, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "after the swap");
	outer_dst(out, dst);
	ASSERT_TRUE(!strcmp(dst, "203.0.113.51"), "the new table's backend");
	if (ASSERT_OK(xlb_table_read(fx.maps.tables, VIP_MTU4, &got, &m), "read back"))
		ASSERT_TRUE(m == 3 && got[0] == b && got[1] == b && got[2] == b, "new table read back");
	free(got);
	got = NULL;

	/* Refused installs change nothing. */
	ASSERT_EQ(xlb_table_install(fx.maps.tables, VIP_MTU4, v->table, 2), -EINVAL, "m too small");
	slots[1] = XLB_MAX_BACKENDS;
	ASSERT_EQ(xlb_table_install(fx.maps.tables, VIP_MTU4, slots, 3), -EINVAL, "slot out of range");
	ASSERT_EQ(xlb_table_install(fx.maps.tables, XLB_MAX_VIPS, v->table, 3), -EINVAL, "vip id out of range");
	expect_run(&syn, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "after refused installs");
	outer_dst(out, dst);
	ASSERT_TRUE(!strcmp(dst, "203.0.113.51"), "still the installed table");

	ASSERT_OK(xlb_table_remove(fx.maps.tables, VIP_MTU4), "remove");
	ASSERT_EQ(xlb_table_read(fx.maps.tables, VIP_MTU4, &got, &m), -ENOENT, "read a removed table");
	expect_run(&syn, XDP_DROP, XLB_STAT_DROP_NO_TABLE, out, &out_len, "table removed");

	ASSERT_OK(xlb_table_install(fx.maps.tables, VIP_MTU4, v->table, v->m), "restore");
	if (ASSERT_OK(xlb_table_read(fx.maps.tables, VIP_MTU4, &got, &m), "read back"))
		ASSERT_TRUE(m == v->m && !memcmp(got, v->table, m * sizeof(*got)),
			    "the first table read back");
	free(got);
	expect_run(&syn, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "restored");
	outer_dst(out, dst);
	/* a: the one backend of the fixture's table, 203.0.113.50. */
	ASSERT_TRUE(!strcmp(dst, fx.backends[a].addr), "the first backend again");
	ASSERT_TRUE(!strcmp(dst, "203.0.113.50"), "the first backend's address");
}

/* A table costs 2 bytes a slot: 65537 slots in 16,385 elements of 8
 * bytes, and a header, where one 32-bit id to an 8-byte element took 8. */
static void a_table_takes_two_bytes_a_slot(void)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), inner_id, vip = VIP_RANDOM4;
	int fd;

	if (!fixture())
		return;
	if (!ASSERT_OK(bpf_map_lookup_elem(fx.maps.tables, &vip, &inner_id), "outer entry"))
		return;
	fd = bpf_map_get_fd_by_id(inner_id);
	if (!ASSERT_GE(fd, 0, "inner table"))
		return;
	if (ASSERT_OK(bpf_obj_get_info_by_fd(fd, &info, &len), "info")) {
		ASSERT_EQ(fx.vips[VIP_RANDOM4].m, 65537, "the VIP's M");
		ASSERT_EQ(info.value_size, 8, "bytes an element");
		ASSERT_EQ(info.max_entries, 1 + 65537 / 4 + 1, "elements");
		ASSERT_LE((__u64)info.value_size * info.max_entries, 128 * 1024 + 16,
			  "bytes of a 65537-slot table");
	}
	close(fd);
}

/* VIP_MTU4's key, and the slot of its filter bit. */
static struct xlb_vip_key mtu4_key(__u32 *bit)
{
	const struct dp_vip_def *d = fx.vips[VIP_MTU4].def;
	struct xlb_vip_key key = { .port = htons(d->port), .proto = d->proto,
				   .family = XLB_AF_INET };

	pkt_addr(4, d->addr, (__u8 *)key.addr);
	*bit = xlb_vip_key_bit(&key);
	return key;
}

/*
 * A VIP's packet goes by the record in the slot of its filter bit when
 * the slot holds its key, and by xlb_vips otherwise: a slot that names
 * the key with another VIP's record (one without a table) is obeyed, one
 * that holds another key or none is not.
 */
static void vip_slot_taken_only_for_its_key(void)
{
	/* SYNs: each goes by the VIP's table, not by a connection-table
	 * entry the one before made. */
	struct pkt_desc syn = to_mtu4;
	struct xlb_vip_slot slot = { 0 };
	struct xlb_vip rec;
	__u8 out[PKT_MAX];
	__u32 out_len, bit;
	struct xlb_vip_key key;

	if (!fixture())
		return;
	syn.tcp_flags = PKT_TCP_SYN;
	key = mtu4_key(&bit);
	if (!ASSERT_GE(fx.maps.vip_slots, 0, "the object has VIP slots") ||
	    !ASSERT_OK(bpf_map_lookup_elem(fx.maps.vips, &key, &rec), "record") ||
	    !ASSERT_OK(bpf_map_lookup_elem(fx.maps.vip_slots, &bit, &slot), "slot"))
		return;
	ASSERT_OK(memcmp(&slot.key, &key, sizeof(key)), "the fixture's slot holds the key");
	ASSERT_OK(memcmp(&slot.vip, &rec, sizeof(rec)), "and the record");
	expect_run(&syn, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "by its slot");

	slot.vip = (struct xlb_vip){ .id = VIP_NO_TABLE, .table_size = 3 };
	ASSERT_OK(bpf_map_update_elem(fx.maps.vip_slots, &bit, &slot, BPF_ANY), "slot misnamed");
	expect_run(&syn, XDP_DROP, XLB_STAT_DROP_NO_TABLE, out, &out_len,
		   "the slot's record is the one obeyed");

	slot.key.port = htons(81);
	ASSERT_OK(bpf_map_update_elem(fx.maps.vip_slots, &bit, &slot, BPF_ANY), "slot of another key");
	expect_run(&syn, XDP_TX, XLB_STAT_FORWARD, out, &out_len,
		   "another key's slot: by xlb_vips");

	memset(&slot, 0, sizeof(slot));
	ASSERT_OK(bpf_map_update_elem(fx.maps.vip_slots, &bit, &slot, BPF_ANY), "slot emptied");
	expect_run(&syn, XDP_TX, XLB_STAT_FORWARD, out, &out_len, "empty slot: by xlb_vips");

	ASSERT_OK(xlb_obj_vip_write(&fx.maps, &key, &rec), "slot back");
}

TEST_MAIN(TEST(missing_config_and_source_are_counted_drops),
	  TEST(vip_slot_taken_only_for_its_key),
	  TEST(table_swap_read_back_and_removal),
	  TEST(a_table_takes_two_bytes_a_slot))
