/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A small test harness in the manner of the kernel's BPF selftests: named
 * cases, ASSERT_* macros that return whether they held and print what was
 * expected and what came instead, one line per case for tests/run.sh:
 *   PASS name | FAIL name | SKIP name: reason
 */
#ifndef XLB_TESTLIB_H
#define XLB_TESTLIB_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct test_case {
	const char *name;
	void (*fn)(void);
};

static bool test_failed;
static const char *test_skip_reason;

#define ASSERT_TRUE(cond, what) ({					\
	bool ___ok = (cond);						\
	if (!___ok) {							\
		test_failed = true;					\
		printf("  %s:%d: %s: FAIL: %s is false\n",		\
		       __func__, __LINE__, what, #cond);		\
	}								\
	___ok;								\
})

/*
 * An integer operand as its sign and its bits: the comparisons below order
 * any two integer types as mathematics does (a u64 above LLONG_MAX is not
 * negative, -1 is not above an unsigned 1), and print each operand in its
 * own signedness.
 */
struct test_int {
	bool neg;
	unsigned long long bits;
};

#define TEST_IS_SIGNED(x) _Generic((x),				\
	char: (char)-1 < 0, signed char: 1, short: 1, int: 1,		\
	long: 1, long long: 1, default: 0)

#define TEST_INT(x) ({							\
	unsigned long long ___bits = (unsigned long long)(x);		\
	(struct test_int){						\
		.neg = TEST_IS_SIGNED(x) && (___bits >> 63),		\
		.bits = ___bits,					\
	};								\
})

/* -1, 0 or 1 as a is below, equal to or above b. */
static inline int test_int_cmp(struct test_int a, struct test_int b)
{
	if (a.neg != b.neg)
		return a.neg ? -1 : 1;
	/* Same sign: two's complement keeps the order of the bits. */
	return a.bits < b.bits ? -1 : a.bits > b.bits;
}

static inline void test_int_print(struct test_int v)
{
	if (v.neg)
		printf("%lld", (long long)v.bits);
	else
		printf("%llu", v.bits);
}

#define ASSERT_CMP(a, op, b, what) ({						struct test_int ___a = TEST_INT(a), ___b = TEST_INT(b);		bool ___ok = test_int_cmp(___a, ___b) op 0;				if (!___ok) {									test_failed = true;							printf("  %s:%d: %s: FAIL: actual ", __func__,				       __LINE__, what);							test_int_print(___a);							printf(" " #op " expected ");						test_int_print(___b);							printf(" is false\n");						}									___ok;								})

#define ASSERT_EQ(a, b, what)	ASSERT_CMP(a, ==, b, what)
#define ASSERT_NE(a, b, what)	ASSERT_CMP(a, !=, b, what)
#define ASSERT_LE(a, b, what)	ASSERT_CMP(a, <=, b, what)
#define ASSERT_LT(a, b, what)	ASSERT_CMP(a, <, b, what)
#define ASSERT_GE(a, b, what)	ASSERT_CMP(a, >=, b, what)
#define ASSERT_GT(a, b, what)	ASSERT_CMP(a, >, b, what)
#define ASSERT_OK(err, what)	ASSERT_CMP(err, ==, 0, what)

#define ASSERT_DBL(a, op, b, what) ({					\
	double ___a = (a), ___b = (b);					\
	bool ___ok = ___a op ___b;					\
	if (!___ok) {							\
		test_failed = true;					\
		printf("  %s:%d: %s: FAIL: actual %.6g " #op		\
		       " expected %.6g is false\n",			\
		       __func__, __LINE__, what, ___a, ___b);		\
	}								\
	___ok;								\
})

#define ASSERT_MEM_EQ(a, b, len, what) ({				\
	bool ___ok = memcmp(a, b, len) == 0;				\
	if (!___ok) {							\
		test_failed = true;					\
		printf("  %s:%d: %s: FAIL: %zu bytes differ\n",		\
		       __func__, __LINE__, what, (size_t)(len));	\
	}								\
	___ok;								\
})

/*
 * Skip the current case when a privilege or kernel feature is missing.
 * Under CI (XLB_CI=1, root on a BPF-capable kernel) nothing may be skipped
 * for that reason, so there the skip is a failure.
 */
static inline void test_skip_env(const char *reason)
{
	if (getenv("XLB_CI")) {
		test_failed = true;
		printf("  cannot skip under CI: %s\n", reason);
		return;
	}
	test_skip_reason = reason;
}

/* Skip for a reason CI may also have (an optional input is absent). */
static inline void test_skip(const char *reason)
{
	test_skip_reason = reason;
}

static inline bool test_have_root(void)
{
	return geteuid() == 0;
}

/* Run the cases named on the command line, or all; return the exit code. */
static inline int test_run(const struct test_case *cases, size_t n,
			   int argc, char **argv)
{
	int failed = 0;
	size_t i;
	int a;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < n; i++) {
		bool wanted = argc <= 1;

		for (a = 1; a < argc; a++)
			wanted |= strcmp(argv[a], cases[i].name) == 0;
		if (!wanted)
			continue;
		test_failed = false;
		test_skip_reason = NULL;
		cases[i].fn();
		if (test_failed) {
			printf("FAIL %s\n", cases[i].name);
			failed++;
		} else if (test_skip_reason) {
			printf("SKIP %s: %s\n", cases[i].name, test_skip_reason);
		} else {
			printf("PASS %s\n", cases[i].name);
		}
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#define TEST_MAIN(...)							\
int main(int argc, char **argv)						\
{									\
	static const struct test_case cases[] = { __VA_ARGS__ };	\
	return test_run(cases, sizeof(cases) / sizeof(cases[0]),	\
			argc, argv);					\
}

#define TEST(fn) { #fn, fn }

#endif /* XLB_TESTLIB_H */
