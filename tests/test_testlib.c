// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The test harness itself: ASSERT_* order integers as mathematics does,
 * whatever their types, so that a check of a 64-bit hash or of a size
 * cannot pass or fail by a conversion.
 */
#include <stdint.h>
#include "testlib.h"

/* Run one assertion that must not hold, and take back its failure. */
#define EXPECT_FALSE(assertion) ({					\
	bool ___held;							\
	printf("  (a FAIL line is expected here)\n");			\
	___held = (assertion);						\
	test_failed = false;						\
	!___held;							\
})

static void big_unsigned_values_are_not_negative(void)
{
	uint64_t golden = 0xdeadbeefcafef00dULL;

	ASSERT_GT(golden, 1, "a u64 above LLONG_MAX > 1");
	ASSERT_GT(UINT64_MAX, 0, "UINT64_MAX > 0");
	ASSERT_EQ(golden, 0xdeadbeefcafef00dULL, "equal u64");
	ASSERT_TRUE(EXPECT_FALSE(ASSERT_LT(golden, 1, "u64 < 1")), "u64 < 1 fails");
}

static void negative_values_are_below_unsigned_ones(void)
{
	int minus_one = -1;
	unsigned int one = 1;

	ASSERT_LT(minus_one, one, "-1 < 1u");
	ASSERT_LT(-5LL, UINT64_MAX, "-5 < UINT64_MAX");
	ASSERT_NE(minus_one, UINT32_MAX, "-1 != 0xffffffff");
	ASSERT_TRUE(EXPECT_FALSE(ASSERT_EQ(minus_one, UINT64_MAX, "-1 == max")),
		    "-1 == UINT64_MAX fails");
}

static void small_types_compare_by_value(void)
{
	uint8_t byte = 200;
	int8_t sbyte = -100;
	bool yes = true;

	ASSERT_GT(byte, sbyte, "200 > -100");
	ASSERT_EQ(yes, 1, "true == 1");
	ASSERT_OK(0, "0 is ok");
	ASSERT_TRUE(EXPECT_FALSE(ASSERT_OK(-22, "-EINVAL")), "-22 is not ok");
}

TEST_MAIN(
	TEST(big_unsigned_values_are_not_negative),
	TEST(negative_values_are_below_unsigned_ones),
	TEST(small_types_compare_by_value),
)
