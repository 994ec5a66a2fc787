// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Fuzz target: the state file of `xlb apply` (loader/cli/cmd_apply.c).
 *
 * The input is the file. It goes through the command itself, do_apply(),
 * as `xlb --pin-dir DIR apply FILE` with a DIR that does not exist: the
 * whole file is read, parsed and checked before the instance is opened,
 * so a file that passes every check ends at "no xlb instance" and nothing
 * is ever written. The file is a memfd, named by /proc/self/fd/N.
 *
 * Beyond memory errors and undefined behaviour, the command must keep its
 * contract: it fails (never succeeds: there is no instance) with exactly
 * one error, printed on one line whatever the file quotes: "xlb: ..." on
 * stderr, or with -j a JSON object on stdout ({"error": "..."}); inputs
 * of odd length run as `xlb -j apply`. And json-c never refuses a file
 * that passed the strict check (which, cmd_apply.c says, leaves json-c
 * nothing to fail on but memory).
 *
 * Both streams are caught in memory: glibc's stdout and stderr are
 * variables; the sanitizers and libFuzzer write to the file descriptors
 * and are not affected.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <json-c/json.h>

#include "fuzz.h"
#include "cli.h"

/* main.c's, which is not linked. */
struct xlb_opts xlb_opts;

#define NO_INSTANCE "/nonexistent/xlb-fuzz/pin"

static int fd = -1;
static char path[64];
static FILE *real_stderr;

#define CHECK(cond, ...) FUZZ_CHECK(real_stderr, cond, __VA_ARGS__)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fd = memfd_create("xlb-apply-fuzz", MFD_CLOEXEC);
	if (fd < 0) {
		perror("memfd_create");
		exit(1);
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	xlb_opts.instance.pin_dir = NO_INSTANCE;
	real_stderr = stderr;
	return 0;
}

/* One line, its end the only control character in it. */
static void one_line(const char *out, size_t len, const char *stream)
{
	size_t i;

	CHECK(len > 0 && out[len - 1] == '\n', "%s: '%.*s' is not a line",
	      stream, (int)len, out);
	for (i = 0; i + 1 < len; i++)
		CHECK((unsigned char)out[i] >= 0x20 && out[i] != 0x7f,
		      "%s: byte 0x%02x at %zu of '%.*s'", stream,
		      (unsigned char)out[i], i, (int)len, out);
}

static void check_output(bool json, const char *out, size_t out_len,
			 const char *err, size_t err_len)
{
	struct json_object *o, *e;

	if (!json) {
		CHECK(out_len == 0, "stdout: '%.*s'", (int)out_len, out);
		one_line(err, err_len, "stderr");
		CHECK(!strncmp(err, "xlb: ", 5), "stderr: '%.*s'", (int)err_len, err);
		return;
	}
	CHECK(err_len == 0, "-j, stderr: '%.*s'", (int)err_len, err);
	one_line(out, out_len, "stdout");
	o = json_tokener_parse(out);
	CHECK(o && json_object_is_type(o, json_type_object) &&
	      json_object_object_length(o) == 1 &&
	      json_object_object_get_ex(o, "error", &e) &&
	      json_object_is_type(e, json_type_string) &&
	      json_object_get_string_len(e) > 0,
	      "-j: not {\"error\": \"...\"}: '%.*s'", (int)out_len, out);
	json_object_put(o);
}

/* The error is not json-c's: the strict check passed what json-c takes. */
static void not_json_c(bool json, const char *text)
{
	char refused[128];

	snprintf(refused, sizeof(refused), json ?
		 "{\"error\":\"%s: json-c cannot parse it" :
		 "xlb: %s: json-c cannot parse it", path);
	CHECK(strncmp(text, refused, strlen(refused)),
	      "passed the strict check, refused by json-c: %.*s",
	      (int)strcspn(text, "\n"), text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[] = { path, NULL };
	FILE *saved_out = stdout, *saved_err = stderr;
	char *out = NULL, *err_text = NULL;
	size_t out_len = 0, err_len = 0;
	bool json = size & 1;
	int argc = 1, err;

	/* The command reads at most 64 MiB; larger inputs teach nothing. */
	if (size > (1 << 20))
		return -1;
	if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) {
		perror("memfd");
		abort();
	}
	stdout = open_memstream(&out, &out_len);
	stderr = open_memstream(&err_text, &err_len);
	if (!stdout || !stderr)
		abort();
	xlb_opts.json = xlb_report_json = json;
	err = do_apply(argc, argv);
	fclose(stdout);
	fclose(stderr);
	stdout = saved_out;
	stderr = saved_err;
	CHECK(err < 0, "apply succeeded without an instance (%d)", err);
	check_output(json, out, out_len, err_text, err_len);
	not_json_c(json, json ? out : err_text);
	free(out);
	free(err_text);
	return 0;
}
