/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Command-line conventions shared by every `xlb OBJECT VERB` command. */
#ifndef XLB_CLI_H
#define XLB_CLI_H

#include <stdbool.h>

/* Global options, accepted anywhere on the command line. */
struct xlb_opts {
	bool json;		/* -j, --json: JSON on stdout, errors too */
	bool verbose;		/* -v, --verbose */
	const char *pin_dir;	/* --pin-dir DIR: the instance's maps */
};
extern struct xlb_opts xlb_opts;

/* Print an error once, at the boundary: a JSON object in JSON mode,
 * "PROGNAME: message" on stderr otherwise, or hand it to p_err_hook when a
 * program (a test) wants to keep it. */
void p_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern const char *xlb_progname;
extern void (*p_err_hook)(const char *msg);
/* An informational note on stderr (never mixed into JSON on stdout). */
void p_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The commands: each returns 0 or -errno and has printed any error. */
int do_table(int argc, char **argv);
int do_replay(int argc, char **argv);
int do_attach(int argc, char **argv);
int do_detach(int argc, char **argv);
int do_vip(int argc, char **argv);
int do_backend(int argc, char **argv);
int do_config(int argc, char **argv);
int do_show(int argc, char **argv);
int do_stats(int argc, char **argv);
int do_apply(int argc, char **argv);

#endif /* XLB_CLI_H */
