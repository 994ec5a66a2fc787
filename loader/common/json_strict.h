/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Strict JSON: RFC 8259 and nothing more, checked in one pass over the text
 * before a lenient parser (json-c, which takes comments, single quotes,
 * trailing commas, and lets the last of two equal keys win) builds
 * anything from it.
 *
 * Beyond the grammar it refuses what would make the text mean something
 * else than it reads: a key twice in one object, a string holding NUL
 * (json-c would cut "a\u0000b" to "a"), an unpaired surrogate escape. And
 * it stops at the first array longer than its limit or at the first value
 * past a total, so that what a parser then allocates is bounded by the
 * limits and not by the size of the text.
 */
#ifndef XLB_JSON_STRICT_H
#define XLB_JSON_STRICT_H

#include <stddef.h>

/* At most max elements in each array at path: object keys joined by '.',
 * "[]" for any index ("vips", "vips[].backends"). */
struct json_strict_count {
	const char *path;
	size_t max;
	const char *what;	/* "VIPs", for the error */
	const char *scope;	/* after the limit: "" or " over all VIPs" */
};

struct json_strict_limits {
	unsigned int max_depth;	/* arrays and objects inside one another */
	size_t max_values;	/* values of any kind; 0: no limit */
	const char *values_why;	/* after the error of max_values */
	const struct json_strict_count *counts;
	size_t n_counts;
};

/*
 * json_strict_check - check that text[0..len) is one JSON text (RFC 8259:
 * UTF-8, any value at the top, whitespace around it), with no key twice in
 * an object, no NUL in a string, and within limits.
 * Returns 0; -EINVAL when the text is not that (not JSON, a duplicate key,
 * nested too deep); -E2BIG when a limit is exceeded (the check stops there);
 * -ENOMEM. msg (msg_size bytes) then says what and where, e.g.
 *	syntax error at line 2, column 9, in vips[0]: trailing comma
 *	vips[0]: duplicate key "vip" at line 1, column 40
 *	vips: at least 257 VIPs: the limit is 256 (line 1, column 9000)
 */
int json_strict_check(const char *text, size_t len,
		      const struct json_strict_limits *limits, char *msg,
		      size_t msg_size);

#endif /* XLB_JSON_STRICT_H */
