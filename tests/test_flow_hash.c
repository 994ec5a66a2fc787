// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The flow hash is part of the wire contract between balancers (the same
 * seed must give the same backend everywhere) and between the datapath and
 * userspace. These golden vectors pin it: any change to the function or to
 * the packing of the tuple fails here.
 */
#include <arpa/inet.h>
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

TEST_MAIN(TEST(siphash24_reference_vectors), TEST(golden_vectors),
	  TEST(seed_changes_every_hash), TEST(every_field_counts))
