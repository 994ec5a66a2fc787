// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The flow hash is part of the wire contract between balancers (the same
 * seed must give the same backend everywhere) and between the datapath and
 * userspace. These golden vectors pin it: any change to the function or to
 * the packing of the tuple fails here.
 *
 * The connection table's set hash (include/ct_entry.h) is no contract, but
 * it must spread flows over the sets whichever bytes of them differ.
 */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdlib.h>
#include "ct_entry.h"
#include "flow_hash.h"
#include "testlib.h"

static const __u64 key_0_15[2] = { 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL };

/* The packing is plain SipHash: run the reference SipHash-2-4 vectors
 * (Aumasson & Bernstein, key 00..0f, message 00..len-1) through it. */
static void siphash24_reference_vectors(void)
{
	__u8 m[16];
	struct xlb_sip s;
	int i;

	for (i = 0; i < 16; i++)
		m[i] = i;
	xlb_sip_init(&s, key_0_15[0], key_0_15[1]);
	ASSERT_EQ(xlb_sip_final(&s, 0, 2, 4), 0x726fdb47dd0e0e31ULL, "empty message");
	xlb_sip_init(&s, key_0_15[0], key_0_15[1]);
	xlb_sip_word(&s, xlb_le64(m), 2);
	ASSERT_EQ(xlb_sip_final(&s, 8, 2, 4), 0x93f5f5799a932462ULL, "8 bytes");
	xlb_sip_init(&s, key_0_15[0], key_0_15[1]);
	xlb_sip_word(&s, xlb_le64(m), 2);
	xlb_sip_word(&s, xlb_le64(m + 8), 2);
	ASSERT_EQ(xlb_sip_final(&s, 16, 2, 4), 0x3f2acc7f57c29bdbULL, "16 bytes");
}

static struct xlb_flow flow4(const char *src, const char *dst, int sport,
			     int dport, int proto)
{
	struct xlb_flow f = { .family = XLB_AF_INET, .proto = proto };

	inet_pton(AF_INET, src, f.src);
	inet_pton(AF_INET, dst, f.dst);
	f.sport = htons(sport);
	f.dport = htons(dport);
	return f;
}

static struct xlb_flow flow6(const char *src, const char *dst, int sport,
			     int dport, int proto)
{
	struct xlb_flow f = { .family = XLB_AF_INET6, .proto = proto };

	inet_pton(AF_INET6, src, f.src);
	inet_pton(AF_INET6, dst, f.dst);
	f.sport = htons(sport);
	f.dport = htons(dport);
	return f;
}

/* Golden values computed by an independent SipHash-1-3 over the packed
 * tuple (see include/flow_hash.h for the packing). */
static void golden_vectors(void)
{
	static const __u64 seed[2] = { 0x0123456789abcdefULL, 0xfedcba9876543210ULL };
	struct xlb_flow f;

	f = flow4("198.51.100.7", "192.0.2.10", 40000, 80, 6);
	ASSERT_EQ(xlb_flow_hash(&f, seed), 0x46dfdf81976d0acdULL, "ipv4 tcp");
	f = flow4("198.51.100.7", "192.0.2.10", 40000, 53, 17);
	ASSERT_EQ(xlb_flow_hash(&f, seed), 0x7ee58cf0b5d8ef2eULL, "ipv4 udp");
	f = flow4("198.51.100.7", "192.0.2.10", 0, 0, 17);
	ASSERT_EQ(xlb_flow_hash(&f, seed), 0x0a55b8504bcc6b5aULL, "ipv4 fragment");
	f = flow6("2001:db8::7", "2001:db8::10", 40000, 443, 6);
	ASSERT_EQ(xlb_flow_hash(&f, seed), 0x3fb1639cee9d7f6fULL, "ipv6 tcp");
	f = flow6("2001:db8:1::7", "2001:db8::10", 5353, 443, 17);
	ASSERT_EQ(xlb_flow_hash(&f, seed), 0xe1f56c92cfc3f56cULL, "ipv6 udp");
	f = flow4("198.51.100.7", "192.0.2.10", 40000, 80, 6);
	ASSERT_EQ(xlb_flow_hash(&f, key_0_15), 0xe830d2af83fba5c7ULL, "ipv4 tcp, other seed");
}

/* The seed is the whole point: another seed, another hash. */
static void seed_changes_every_hash(void)
{
	static const __u64 a[2] = { 1, 2 }, b[2] = { 1, 3 };
	struct xlb_flow f = flow4("198.51.100.7", "192.0.2.10", 0, 80, 6);
	int port, same = 0;

	for (port = 1; port <= 1000; port++) {
		f.sport = htons(port);
		same += xlb_flow_hash(&f, a) == xlb_flow_hash(&f, b);
	}
	ASSERT_EQ(same, 0, "hashes equal under two seeds");
}

/* Every field of the tuple takes part. */
static void every_field_counts(void)
{
	static const __u64 k[2] = { 7, 9 };
	struct xlb_flow base = flow6("2001:db8::7", "2001:db8::10", 1000, 443, 6), f;
	__u64 h = xlb_flow_hash(&base, k);

	f = base; f.src[3] ^= htonl(1);
	ASSERT_NE(xlb_flow_hash(&f, k), h, "src low word");
	f = base; f.src[0] ^= htonl(1);
	ASSERT_NE(xlb_flow_hash(&f, k), h, "src high word");
	f = base; f.dst[1] ^= htonl(1);
	ASSERT_NE(xlb_flow_hash(&f, k), h, "dst");
	f = base; f.sport ^= 1;
	ASSERT_NE(xlb_flow_hash(&f, k), h, "sport");
	f = base; f.dport ^= 1;
	ASSERT_NE(xlb_flow_hash(&f, k), h, "dport");
	f = base; f.proto = 17;
	ASSERT_NE(xlb_flow_hash(&f, k), h, "proto");
}

/* A 5-tuple VIP's hash is the flow hash; an affinity VIP's is the hash
 * of the client's prefix, the VIP and the protocol, with no port. */
static void affinity_hashes_the_clients_prefix_alone(void)
{
	static const __u64 k[2] = { 7, 9 };
	const __u32 src32 = XLB_VIP_F_HASH_SRC | 32 << XLB_VIP_AFFINITY_SHIFT;
	const __u32 src24 = XLB_VIP_F_HASH_SRC | 24 << XLB_VIP_AFFINITY_SHIFT;
	const __u32 src64 = XLB_VIP_F_HASH_SRC | 64 << XLB_VIP_AFFINITY_SHIFT;
	const __u32 src60 = XLB_VIP_F_HASH_SRC | 60 << XLB_VIP_AFFINITY_SHIFT;
	struct xlb_flow a = flow4("198.51.100.7", "192.0.2.10", 1000, 80, 6), b;
	struct xlb_flow c = flow6("2001:db8:1:2:3::7", "2001:db8::10", 1000, 443, 6), d;

	ASSERT_EQ(xlb_vip_flow_hash(&a, 0, k), xlb_flow_hash(&a, k), "5-tuple");
	ASSERT_EQ(xlb_vip_flow_hash(&a, XLB_VIP_F_GUE | XLB_VIP_F_STATELESS, k),
		  xlb_flow_hash(&a, k), "5-tuple, stateless");
	b = a; b.sport = htons(2000); b.dport = htons(8080);
	ASSERT_NE(xlb_vip_flow_hash(&b, 0, k), xlb_vip_flow_hash(&a, 0, k), "5-tuple: ports count");
	ASSERT_EQ(xlb_vip_flow_hash(&b, src32, k), xlb_vip_flow_hash(&a, src32, k), "src-ip: ports do not");
	b = a; b.src[0] ^= htonl(1);
	ASSERT_NE(xlb_vip_flow_hash(&b, src32, k), xlb_vip_flow_hash(&a, src32, k), "/32: the last bit counts");
	b = a; b.src[0] ^= htonl(0xff);
	ASSERT_EQ(xlb_vip_flow_hash(&b, src24, k), xlb_vip_flow_hash(&a, src24, k), "/24: the last byte does not");
	b = a; b.src[0] ^= htonl(0x100);
	ASSERT_NE(xlb_vip_flow_hash(&b, src24, k), xlb_vip_flow_hash(&a, src24, k), "/24: bit 24 counts");
	b = a; b.dst[0] ^= htonl(1);
	ASSERT_NE(xlb_vip_flow_hash(&b, src32, k), xlb_vip_flow_hash(&a, src32, k), "src-ip: the VIP counts");
	b = a; b.proto = 17;
	ASSERT_NE(xlb_vip_flow_hash(&b, src32, k), xlb_vip_flow_hash(&a, src32, k), "src-ip: the protocol counts");

	d = c; d.src[2] = htonl(0xffffffff); d.src[3] = htonl(0x12345678); d.sport = 1;
	ASSERT_EQ(xlb_vip_flow_hash(&d, src64, k), xlb_vip_flow_hash(&c, src64, k), "/64: the interface id does not");
	d = c; d.src[1] ^= htonl(1);
	ASSERT_NE(xlb_vip_flow_hash(&d, src64, k), xlb_vip_flow_hash(&c, src64, k), "/64: bit 64 counts");
	ASSERT_EQ(xlb_vip_flow_hash(&d, src60, k), xlb_vip_flow_hash(&c, src60, k), "/60: bit 64 does not");
	d = c; d.src[1] ^= htonl(0x10);
	ASSERT_NE(xlb_vip_flow_hash(&d, src60, k), xlb_vip_flow_hash(&c, src60, k), "/60: bit 60 counts");
}

/* How many distinct sets of the default table n flows fall in. */
static unsigned distinct_sets(const struct xlb_flow *f, unsigned n, __u32 seed)
{
	const __u32 sets = XLB_CT_DEFAULT_SIZE / XLB_CT_WAYS;
	unsigned char *seen = calloc(sets, 1);
	unsigned i, d = 0;
	__u32 set;

	if (!seen)
		return 0;
	for (i = 0; i < n; i++) {
		set = xlb_ct_set_of(&f[i], seed, XLB_CT_DEFAULT_SIZE - 1) / XLB_CT_WAYS;
		d += !seen[set];
		seen[set] = 1;
	}
	free(seen);
	return d;
}

/*
 * 256 flows that differ in one byte only, for every byte of the addresses
 * and ports of both families, fall in nearly as many sets as 256 random
 * flows would (255.0 on average of 32,768 sets); and 4,096 flows that
 * count up in an address's last two bytes, as generators and NAT pools
 * do, in nearly as many as 4,096 random ones (3,847).
 */
static void ct_sets_spread_flows_whichever_bytes_differ(void)
{
	static struct xlb_flow f[4096];
	struct xlb_flow base[2] = {
		flow6("2001:db8::7", "2001:db8::10", 1000, 443, 6),
		flow4("192.0.2.7", "192.0.2.10", 1000, 443, 6),
	};
	unsigned fam, byte, v, worst = 256, where = 0;
	__u8 *b;

	for (fam = 0; fam < 2; fam++) {
		for (byte = 0; byte < offsetof(struct xlb_flow, proto); byte++) {
			if (fam == 1 && byte >= 4 && byte < 16)
				continue;	/* IPv4: address words 1..3 are zero */
			if (fam == 1 && byte >= 20 && byte < 32)
				continue;
			for (v = 0; v < 256; v++) {
				f[v] = base[fam];
				((__u8 *)&f[v])[byte] = v;
			}
			v = distinct_sets(f, 256, 0x5eed);
			if (v < worst) {
				worst = v;
				where = fam * 100 + byte;
			}
		}
		for (v = 0; v < 4096; v++) {
			f[v] = base[fam];
			b = (__u8 *)(fam ? &f[v].src[0] : &f[v].src[3]);
			b[2] = v >> 8;
			b[3] = v & 0xff;
		}
		ASSERT_GE(distinct_sets(f, 4096, 0x5eed), 3700,
			  fam ? "IPv4 sources counting up: sets" : "IPv6 sources counting up: sets");
	}
	printf("  fewest sets of 256 flows differing in one byte: %u (%s, byte %u)\n",
	       worst, where >= 100 ? "IPv4" : "IPv6", where % 100);
	ASSERT_GE(worst, 240, "flows differing in any one byte: sets");
}

TEST_MAIN(TEST(siphash24_reference_vectors), TEST(golden_vectors),
	  TEST(seed_changes_every_hash), TEST(every_field_counts),
	  TEST(affinity_hashes_the_clients_prefix_alone),
	  TEST(ct_sets_spread_flows_whichever_bytes_differ))
