// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* How every part of xlb reports (see report.h). */
#include <stdarg.h>
#include <stdio.h>

#include "report.h"

const char *xlb_progname = "xlb";
bool xlb_report_json;
void (*p_err_hook)(const char *msg);

static void print_json_error(const char *msg)
{
	const char *c;

	/* The message is ours, but it quotes what came from the user. */
	printf("{\"error\":\"");
	for (c = msg; *c; c++) {
		if (*c == '"' || *c == '\\')
			printf("\\%c", *c);
		else if ((unsigned char)*c < 0x20)
			printf("\\u%04x", *c);
		else
			putchar(*c);
	}
	printf("\"}\n");
}

void p_err(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p_err_hook)
		p_err_hook(msg);
	else if (xlb_report_json)
		print_json_error(msg);
	else
		fprintf(stderr, "%s: %s\n", xlb_progname, msg);
}

void p_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
