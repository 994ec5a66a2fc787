// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Fuzz target: the strict JSON check in front of json-c
 * (loader/common/json_strict.h), which every `xlb apply` file passes first.
 *
 * The input is the text, not NUL-terminated (ASan sees a read past its
 * end). It is checked three ways: without limits, with limits like apply's
 * (and a short depth so json-c's own limit of 32 is never the one that
 * stops), and with a message buffer of a few bytes. Beyond memory errors
 * and undefined behaviour:
 *  - the result is 0, -EINVAL or -E2BIG, with a message when not 0, cut
 *    to the buffer and NUL-terminated;
 *  - a text within the limits passes without them too, and one refused as
 *    not JSON without limits is refused with them;
 *  - the message buffer's size changes the message, not the result;
 *  - what passes the check, json-c parses whole (the check is stricter).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "fuzz.h"
#include "json_strict.h"

#define CHECK(cond, ...) FUZZ_CHECK(stderr, cond, __VA_ARGS__)

static const struct json_strict_count counts[] = {
	{ "vips", 256, "VIPs", "" },
	{ "vips[].backends", 4095, "backends", " over all VIPs" },
	{ "a", 3, "elements", "" },
};

static const struct json_strict_limits limits = {
	.max_depth = 16,
	.max_values = 300,
	.values_why = ", more than this file may hold",
	.counts = counts,
	.n_counts = sizeof(counts) / sizeof(counts[0]),
};

/* A result and its message; msg is exactly msg_size bytes on the heap. */
static int check(const uint8_t *data, size_t size,
		 const struct json_strict_limits *lim, size_t msg_size,
		 char *out, size_t out_size)
{
	char *msg = malloc(msg_size);
	int err;

	if (!msg)
		abort();
	memset(msg, 'X', msg_size);
	err = json_strict_check((const char *)data, size, lim, msg, msg_size);
	CHECK(err == 0 || err == -EINVAL || err == -E2BIG || err == -ENOMEM,
	      "returned %d", err);
	if (err) {
		CHECK(memchr(msg, '\0', msg_size), "message not terminated");
		CHECK(msg_size < 2 || msg[0], "no message for %d", err);
		snprintf(out, out_size, "%s", msg);
	}
	free(msg);
	return err;
}

/* json-c parses the whole text into one value. */
static void json_c_parses(const uint8_t *data, size_t size, const char *how)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o;
	enum json_tokener_error jerr;
	size_t end;

	if (!tok)
		abort();
	o = json_tokener_parse_ex(tok, (const char *)data, size);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	/* A bare number at the end of the text is complete only at its
	 * end: json-c waits for more, as for a stream. */
	if (jerr == json_tokener_continue && !o) {
		o = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
		end = size;
	}
	while (end < size && strchr(" \t\r\n", data[end]))
		end++;
	CHECK(jerr == json_tokener_success && end == size,
	      "passes the check %s, but json-c stops at byte %zu of %zu: %s", how,
	      end, size, json_tokener_error_desc(jerr));
	json_object_put(o);
	json_tokener_free(tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char free_msg[512] = "", lim_msg[512] = "", small_msg[512] = "";
	int free_err, lim_err, small_err;

	if (size > (1 << 20))
		return -1;
	free_err = check(data, size, NULL, 512, free_msg, sizeof(free_msg));
	lim_err = check(data, size, &limits, 512, lim_msg, sizeof(lim_msg));
	small_err = check(data, size, &limits, 1 + size % 24, small_msg,
			  sizeof(small_msg));

	CHECK(small_err == lim_err, "%d with a short buffer, %d: %s", small_err,
	      lim_err, lim_msg);
	CHECK(lim_err || !free_err, "passes with limits, not without: %s", free_msg);
	CHECK(free_err != -EINVAL || lim_err, "refused without limits (%s), passes with them",
	      free_msg);
	if (!lim_err)
		json_c_parses(data, size, "with limits");
	return 0;
}
