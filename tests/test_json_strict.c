// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Strict JSON (loader/common/json_strict.c): what RFC 8259 allows passes,
 * everything a lenient parser also takes is refused with its line and
 * column, a key twice in an object is refused with the object's path, and
 * limits stop the check at the first array or value past them.
 */
#include <errno.h>
#include "json_strict.h"
#include "testlib.h"

static char msg[512];

static int check(const char *text, const struct json_strict_limits *lim)
{
	msg[0] = '\0';
	return json_strict_check(text, strlen(text), lim, msg, sizeof(msg));
}

/* text is refused with -EINVAL and an error that contains fragment. */
static bool refused(const char *text, const char *fragment)
{
	int err = check(text, NULL);
	bool ok = err == -EINVAL && strstr(msg, fragment);

	if (!ok)
		printf("  %s: %d '%s', expected '%s'\n", text, err, msg, fragment);
	return ASSERT_TRUE(ok, text);
}

static void accepts_json(void)
{
	static const char *const ok[] = {
		"{}", "[]", " \t\r\n{ } ", "0", "-0", "-0.5e-7", "1E+2", "12.25",
		"\"\"", "true", "false", "null", "[1, \"a\", null, [], {}]",
		"{\"a\": {\"a\": {\"a\": 1}}, \"b\": [{\"a\": 1}, {\"a\": 2}]}",
		"\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\uD83D\\uDE00\"",
		"\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
		"{\"a\": 1, \"A\": 2, \"a \": 3}",
	};
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!ASSERT_OK(check(ok[i], NULL), ok[i]))
			printf("  %s: %s\n", ok[i], msg);
}

static void refuses_what_rfc8259_does_not_allow(void)
{
	refused("", "syntax error at line 1, column 1: unexpected end of input");
	refused("{\"a\": 1", "unexpected end of input");
	refused("{} {}", "line 1, column 4: text after the JSON value");
	refused("{\"a\": 1} x", "text after the JSON value");
	refused("{/* c */}", "comments are not JSON");
	refused("{\"a\": 1 // c\n}", "comments are not JSON");
	refused("{'a': 1}", "single quotes are not JSON");
	refused("[\n1,\n2,\n]", "line 3, column 2: trailing comma before ']'");
	refused("{\"a\": 1,}", "trailing comma before '}'");
	refused("[1,,2]", "expected a value, found ','");
	refused("{\"a\" 1}", "expected ':' after the key");
	refused("{a: 1}", "expected a key in double quotes, found 'a'");
	refused("[1 2]", "expected ',' or ']', found '2'");
	refused("[007]", "leading zero");
	refused("[-01]", "leading zero");
	refused("[1.]", "expected a digit after '.'");
	refused("[.5]", "expected a value, found '.'");
	refused("[+1]", "expected a value, found '+'");
	refused("[1e]", "expected a digit in the exponent");
	refused("[0x10]", "bad number");
	refused("[NaN]", "NaN and Infinity are not JSON");
	refused("[-Infinity]", "NaN and Infinity are not JSON");
	refused("[Infinity]", "NaN and Infinity are not JSON");
	refused("[True]", "expected a value, found 'T'");
	refused("[nul]", "expected 'null'");
	refused("[nullx]", "expected 'null'");
	refused("[\"a\tb\"]", "control character U+0009 in a string");
	refused("[\"a\nb\"]", "control character U+000A in a string");
	refused("[\"\\x\"]", "bad escape '\\x'");
	refused("[\"\\u12\"]", "\\u takes 4 hex digits");
	refused("[\"\\uD83D\"]", "unpaired surrogate \\ud83d");
	refused("[\"\\uDE00\"]", "unpaired surrogate \\ude00");
	refused("[\"\\uD83D\\u0041\"]", "unpaired surrogate");
	refused("[\"\xff\"]", "invalid UTF-8");
	refused("[\"\xc0\xaf\"]", "invalid UTF-8");		/* overlong '/' */
	refused("[\"\xed\xa0\x80\"]", "invalid UTF-8");	/* a surrogate */
	refused("[\"\xf4\x90\x80\x80\"]", "invalid UTF-8");	/* above U+10FFFF */
	refused("[\"\xe2\x82\"]", "invalid UTF-8");		/* cut short */
	refused("\xef\xbb\xbf{}", "byte order mark");
	refused("[\"\xc3\xa9\", x]", "line 1, column 7, in [1]: expected a value, found 'x'");
}

/* json-c would cut the string at the NUL: "a\u0000b" would read "a". */
static void refuses_nul_in_strings(void)
{
	refused("{\"vip\": \"192.0.2.10:80/tcp\\u0000junk\"}",
		"line 1, column 27, in vip: a string may not contain NUL (\\u0000)");
	refused("{\"a\\u0000\": 1}", "a string may not contain NUL");
	/* A raw NUL byte is a control character. */
	ASSERT_EQ(json_strict_check("[\"a\0\"]", 6, NULL, msg, sizeof(msg)),
		  -EINVAL, "raw NUL");
	ASSERT_TRUE(strstr(msg, "control character U+0000") != NULL, msg);
	ASSERT_EQ(json_strict_check("[1]\0", 4, NULL, msg, sizeof(msg)),
		  -EINVAL, "NUL after the value");
}

static void refuses_duplicate_keys(void)
{
	refused("{\"vips\": [1], \"vips\": []}",
		"duplicate key \"vips\" at line 1, column 15");
	refused("{\"vips\": [{\"vip\": \"a\", \"vip\": \"b\"}]}",
		"vips[0]: duplicate key \"vip\" at line 1, column 24");
	refused("{\"vips\": [{}, {\"backends\": [{\"addr\": 1, \"weight\": 1, \"addr\": 2}]}]}",
		"vips[1].backends[0]: duplicate key \"addr\"");
	/* The same string however it is written. */
	refused("{\"vip\": 1, \"v\\u0069p\": 2}", "duplicate key \"v\\u0069p\"");
	refused("{\"\\u00e9\": 1, \"\xc3\xa9\": 2}", "duplicate key");
	refused("{\"\\/\": 1, \"/\": 2}", "duplicate key");
	/* Equal keys in different objects are not duplicates. */
	ASSERT_OK(check("{\"a\": {\"a\": 1}, \"b\": {\"a\": 1}}", NULL), msg);
}

static void many_keys_are_checked_quickly(void)
{
	size_t n = 200000, i, len = 0;
	char *text = malloc(n * 16 + 16);

	if (!ASSERT_TRUE(text != NULL, "malloc"))
		return;
	text[len++] = '{';
	for (i = 0; i < n; i++)
		len += sprintf(text + len, "%s\"k%zu\":%zu", i ? "," : "", i, i);
	text[len++] = '}';
	ASSERT_OK(json_strict_check(text, len, NULL, msg, sizeof(msg)), msg);
	/* The last key again. */
	len--;
	len += sprintf(text + len, ",\"k%zu\":0}", n - 1);
	ASSERT_EQ(json_strict_check(text, len, NULL, msg, sizeof(msg)), -EINVAL,
		  "duplicate among many");
	ASSERT_TRUE(strstr(msg, "duplicate key \"k199999\"") != NULL, msg);
	free(text);
}

static const struct json_strict_count counts[] = {
	{ "vips", 3, "VIPs", "" },
	{ "vips[].backends", 2, "backends", " over all VIPs" },
};

static const struct json_strict_limits limits = {
	.max_depth = 5,
	.max_values = 40,
	.values_why = ", more than any file within the limits",
	.counts = counts,
	.n_counts = 2,
};

static void limits_stop_the_check(void)
{
	ASSERT_OK(check("{\"vips\": [{}, {}, {\"backends\": [{}, {}]}]}", &limits), msg);
	ASSERT_EQ(check("{\"vips\": [{}, {}, {}, {}, {}]}", &limits), -E2BIG, "vips");
	ASSERT_TRUE(strstr(msg, "vips: at least 4 VIPs: the limit is 3 (line 1, column 23)") != NULL, msg);
	/* Stopped at the fourth: what follows is not even read. */
	ASSERT_EQ(check("{\"vips\": [1, 2, 3, 4, this is not JSON", &limits), -E2BIG, "stops there");
	ASSERT_EQ(check("{\"vips\": [{\"backends\": [1, 2, 3]}]}", &limits), -E2BIG, "backends");
	ASSERT_TRUE(strstr(msg, "vips[0].backends: at least 3 backends: the limit is 2 over all VIPs") != NULL, msg);
	/* Spelt otherwise, the key is the same. */
	ASSERT_EQ(check("{\"v\\u0069ps\": [1, 2, 3, 4]}", &limits), -E2BIG, "escaped key");
	/* Elsewhere, no such limit. */
	ASSERT_OK(check("{\"other\": [1, 2, 3, 4], \"vips\": [{\"x\": [1, 2, 3]}]}", &limits), msg);
	ASSERT_EQ(check("[[[[[[1]]]]]]", &limits), -EINVAL, "depth 6");
	ASSERT_TRUE(strstr(msg, "[0][0][0][0][0]: arrays and objects nested deeper than 5") != NULL, msg);
	ASSERT_OK(check("[[[[[1]]]]]", &limits), msg);
	ASSERT_EQ(check("[1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0]",
			&limits), -E2BIG, "values");
	ASSERT_TRUE(strstr(msg, "more than 40 values, more than any file within the limits (line 1, column 80)") != NULL, msg);
}

/* Without limits, nesting still stops (the check recurses). */
static void deep_nesting_is_refused(void)
{
	char text[4001];

	memset(text, '[', 4000);
	text[4000] = '\0';
	ASSERT_EQ(check(text, NULL), -EINVAL, "4000 levels");
	ASSERT_TRUE(strstr(msg, "nested deeper than 64") != NULL, msg);
}

TEST_MAIN(TEST(accepts_json), TEST(refuses_what_rfc8259_does_not_allow),
	  TEST(refuses_nul_in_strings), TEST(refuses_duplicate_keys),
	  TEST(many_keys_are_checked_quickly), TEST(limits_stop_the_check),
	  TEST(deep_nesting_is_refused))
