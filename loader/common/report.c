// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* How every part of xlb reports (see report.h). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "report.h"

const char *xlb_progname = "xlb";
bool xlb_report_json;
void (*p_err_hook)(const char *msg);

/* The length of the well-formed UTF-8 sequence at s (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	for (i = 1; i < n; i++, lo = 0x80, hi = 0xbf)
		if (s[i] < lo || s[i] > hi)
			return 0;
	return n;
}

/*
 * A message quotes what came from the user, which may hold anything: one
 * line whatever it holds. As JSON: control characters as \u00XX, bytes
 * that are no UTF-8 as U+FFFD. As text: control characters and such bytes
 * as \xXX.
 */
static void print_escaped(FILE *f, const char *msg, bool json)
{
	const unsigned char *c = (const unsigned char *)msg;
	size_t n;

	while (*c) {
		n = utf8_len(c);
		if (json && (*c == '"' || *c == '\\')) {
			fprintf(f, "\\%c", *c);
		} else if (n == 1 && (*c < 0x20 || *c == 0x7f)) {
			fprintf(f, json ? "\\u%04x" : "\\x%02x", *c);
		} else if (!n) {
			if (json)
				fputs("\\ufffd", f);
			else
				fprintf(f, "\\x%02x", *c);
			n = 1;
		} else {
			fwrite(c, 1, n, f);
		}
		c += n;
	}
}

void p_err(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p_err_hook) {
		p_err_hook(msg);
	} else if (xlb_report_json) {
		printf("{\"error\":\"");
		print_escaped(stdout, msg, true);
		printf("\"}\n");
	} else {
		fprintf(stderr, "%s: ", xlb_progname);
		print_escaped(stderr, msg, false);
		fputc('\n', stderr);
	}
}

void p_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
