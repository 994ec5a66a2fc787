// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Backends as users write them, and the checks a backend set must pass:
 * every bad input is refused with exactly one error naming the problem.
 */
#include <errno.h>
#include "report.h"
#include "lb_fixtures.h"
#include "testlib.h"

/* The library reports through p_err(); here it is recorded. */
static char last_error[1024];
static int errors;

static void record_error(const char *msg)
{
	snprintf(last_error, sizeof(last_error), "%s", msg);
	errors++;
}

__attribute__((constructor)) static void keep_errors(void)
{
	p_err_hook = record_error;
}

static void expect_parse(const char *arg, const char *id, __u32 weight)
{
	struct lb_backend b;

	errors = 0;
	if (!ASSERT_OK(lb_backend_parse(arg, &b), arg))
		printf("  error: %s\n", last_error);
	ASSERT_TRUE(!strcmp(b.id, id), arg);
	ASSERT_EQ(b.weight, weight, arg);
	ASSERT_EQ(errors, 0, arg);
}

/* Refused, with one error that mentions `mentions`. */
static void expect_refused(const char *arg, const char *mentions)
{
	struct lb_backend b;

	errors = 0;
	last_error[0] = '\0';
	ASSERT_EQ(lb_backend_parse(arg, &b), -EINVAL, arg);
	ASSERT_EQ(errors, 1, arg);
	if (!ASSERT_TRUE(strstr(last_error, mentions) != NULL, arg))
		printf("  error was: %s\n", last_error);
}

static void parses_addresses_and_names(void)
{
	expect_parse("192.0.2.1", "192.0.2.1", 1);
	expect_parse("192.0.2.1:5", "192.0.2.1", 5);
	expect_parse("192.0.2.1:0", "192.0.2.1", 0);
	expect_parse("2001:db8::1", "2001:db8::1", 1);
	expect_parse("2001:DB8:0::1", "2001:db8::1", 1);
	expect_parse("[2001:db8::1]:7", "2001:db8::1", 7);
	expect_parse("[2001:db8::1]", "2001:db8::1", 1);
	expect_parse("web-1.example", "web-1.example", 1);
	expect_parse("web_2:1000000", "web_2", XLB_MAX_WEIGHT);
	expect_parse("backend-007:0012", "backend-007", 12);
}

static void refuses_bad_weights(void)
{
	expect_refused("192.0.2.1:-1", "negative");
	expect_refused("192.0.2.1:abc", "not a number");
	expect_refused("192.0.2.1:1.5", "not a number");
	expect_refused("192.0.2.1: 3", "not a number");
	expect_refused("192.0.2.1:+3", "not a number");
	expect_refused("192.0.2.1:", "missing weight");
	expect_refused("web:1000001", "above the maximum");
	expect_refused("web:99999999999999999999999", "above the maximum");
	expect_refused("[2001:db8::1]:x", "not a number");
}

static void refuses_bad_identities(void)
{
	char longname[XLB_NAME_MAX + 8];

	expect_refused(":3", "missing address or name");
	expect_refused("", "missing address or name");
	expect_refused("192.0.2.300", "neither an address nor a name");
	expect_refused("192.0.2", "neither an address nor a name");
	expect_refused("web server", "neither an address nor a name");
	expect_refused("a:b:1", "neither an address nor a name");
	expect_refused("2001:db8::zz", "neither an address nor a name");
	expect_refused("[2001:db8::1", "missing ']'");
	expect_refused("[2001:db8::1]7", "expected ':WEIGHT'");
	expect_refused("[192.0.2.1]:3", "not an IPv6 address");
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	expect_refused(longname, "longer than 63");
	longname[XLB_NAME_MAX - 1] = '\0';
	expect_parse(longname, longname, 1);
}

static void expect_check(const struct lb_backend *b, size_t n, __u32 m,
			 const char *mentions)
{
	errors = 0;
	last_error[0] = '\0';
	ASSERT_EQ(lb_backends_check(b, n, m), -EINVAL, mentions);
	ASSERT_EQ(errors, 1, mentions);
	if (!ASSERT_TRUE(strstr(last_error, mentions) != NULL, mentions))
		printf("  error was: %s\n", last_error);
}

static void checks_backend_sets(void)
{
	struct lb_backend *b = fx_backends(5, 1);

	errors = 0;
	ASSERT_OK(lb_backends_check(b, 5, 65537), "a good set");
	ASSERT_OK(lb_backends_check(b, 5, 5), "M = N");
	ASSERT_OK(lb_backends_check(b, 3, XLB_MAX_TABLE_SIZE), "largest M");
	ASSERT_EQ(errors, 0, "no error for good sets");

	expect_check(b, 0, 65537, "no backends");
	expect_check(b, 5, 65536, "not prime (the next prime is 65537)");
	expect_check(b, 2, 2, "out of range 3..1048573");
	expect_check(b, 5, 1048583, "out of range");
	expect_check(b, 5, 3, "smaller than the number of backends (5)");
	b[3].weight = XLB_MAX_WEIGHT + 1;
	expect_check(b, 5, 65537, "'backend-3': weight 1000001 is above the maximum");
	b[3].weight = 0;
	strcpy(b[4].id, "backend-1");
	expect_check(b, 5, 65537, "'backend-1' is given twice");
	free(b);
}

/* Two spellings of one address are one backend. */
static void duplicate_after_canonicalisation(void)
{
	struct lb_backend b[2];

	ASSERT_OK(lb_backend_parse("2001:db8::1:5", &b[0]), "first");
	ASSERT_OK(lb_backend_parse("[2001:DB8:0:0::1:5]:3", &b[1]), "second");
	expect_check(b, 2, 13, "'2001:db8::1:5' is given twice");
}

TEST_MAIN(TEST(parses_addresses_and_names), TEST(refuses_bad_weights),
	  TEST(refuses_bad_identities), TEST(checks_backend_sets),
	  TEST(duplicate_after_canonicalisation))
