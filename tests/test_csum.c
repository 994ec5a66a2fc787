// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The IPv4 header checksum arithmetic of the datapath (bpf/csum.h). The
 * parser checks a header with xlb_csum_ok(), a shortcut; it must agree
 * with the plain ones' complement fold for every sum a header can have.
 */
#include <stdint.h>
#include <stdlib.h>
#include "../bpf/csum.h"
#include "testlib.h"

/* The checksum as RFC 1071 computes it: 16-bit words, end-around carry. */
static __u16 rfc1071(const __u8 *p, size_t len)
{
	__u32 sum = 0;
	size_t i;

	for (i = 0; i < len; i += 2) {
		sum += (__u32)p[i] << 8 | p[i + 1];
		sum = (sum & 0xffff) + (sum >> 16);
	}
	return (__u16)~sum;
}

/* Sum of a header's 32-bit words, as the parser reads them. */
static __u64 word_sum(const __u8 *p, size_t len)
{
	__u64 sum = 0;
	size_t i;

	for (i = 0; i < len; i += 4) {
		__u32 w;

		memcpy(&w, p + i, 4);
		sum += w;
	}
	return sum;
}

static void shortcut_agrees_with_the_fold_for_every_sum(void)
{
	static const __u64 edges[] = {
		0, 1, 0xfffe, 0xffff, 0x10000, 0x1fffe, 0x1ffff, 0x2fffd,
		0xfffeffff, 0xffffffff, 0x100000000ULL, 0x1fffffffeULL,
		15ULL * 0xffffffffULL, 0xffffULL * 0x10000, 0xffffULL * 0xf0000,
	};
	unsigned long bad = 0;
	__u64 k, sum;
	size_t i;

	for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		if (xlb_csum_ok(edges[i]) != (xlb_csum_fold(edges[i]) == 0))
			bad++;
	/* Every multiple of 0xffff a 15-word sum can reach, and its
	 * neighbours. */
	for (k = 0; k * 0xffff <= 15ULL * 0xffffffffULL; k++) {
		for (sum = k * 0xffff - (k ? 1 : 0); sum <= k * 0xffff + 1; sum++)
			if (xlb_csum_ok(sum) != (xlb_csum_fold(sum) == 0))
				bad++;
	}
	srandom(1);
	for (i = 0; i < 10000000; i++) {
		sum = ((__u64)random() << 31 | random()) % (15ULL * 0xffffffffULL + 1);
		if (xlb_csum_ok(sum) != (xlb_csum_fold(sum) == 0))
			bad++;
	}
	ASSERT_EQ(bad, 0, "sums where the shortcut and the fold disagree");
}

/* Real headers, 20 to 60 bytes: right checksums pass, each wrong one
 * (every other value of the checksum field) fails. */
static void headers_pass_with_the_right_checksum_only(void)
{
	unsigned long wrong_passed = 0, right_failed = 0;
	__u8 h[60];
	int n, hlen, v;

	srandom(2);
	for (n = 0; n < 2000; n++) {
		__u16 c;

		hlen = 20 + 4 * (n % 11);
		for (v = 0; v < hlen; v++)
			h[v] = random();
		h[0] = 0x40 | hlen / 4;
		h[10] = h[11] = 0;
		c = rfc1071(h, hlen);
		h[10] = c >> 8;
		h[11] = c & 0xff;
		if (!xlb_csum_ok(word_sum(h, hlen)))
			right_failed++;
		for (v = 0; v <= 0xffff; v += 1 + (n % 5)) {
			if (v == c)
				continue;
			h[10] = v >> 8;
			h[11] = v & 0xff;
			/* 0 and 0xffff are the same ones' complement number:
			 * each checks as right in place of the other. */
			if (xlb_csum_ok(word_sum(h, hlen)) &&
			    !((v == 0 && c == 0xffff) || (v == 0xffff && c == 0)))
				wrong_passed++;
		}
	}
	ASSERT_EQ(right_failed, 0, "headers with a right checksum refused");
	ASSERT_EQ(wrong_passed, 0, "headers with a wrong checksum taken");
}

TEST_MAIN(TEST(shortcut_agrees_with_the_fold_for_every_sum),
	  TEST(headers_pass_with_the_right_checksum_only))
