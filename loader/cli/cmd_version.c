// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* xlb version: xlb's own version, and the libbpf and libxdp it runs with. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>
#include <xdp/libxdp.h>

#include "cli.h"
#include "cmd.h"

#ifndef XLB_VERSION
#define XLB_VERSION "unknown"
#endif

static int version_help(void)
{
	printf("Usage: xlb version\n"
	       "Print xlb's version and the versions of libbpf and libxdp in use.\n");
	return 0;
}

/*
 * libxdp has no version call: the version is in the name of the shared
 * object the running xlb loaded (libxdp.so.1.3.0), found from one of its
 * functions. "static" when xlb was linked with the archive.
 */
static const char *libxdp_version(char *buf, size_t len)
{
	char path[PATH_MAX];
	const char *so;
	Dl_info info;

	if (!dladdr((void *)xdp_program__open_file, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, path))
		return "static";
	so = strstr(path, ".so.");
	snprintf(buf, len, "%s", so ? so + 4 : "unknown");
	return buf;
}

int do_version(int argc, char **argv)
{
	char xdp[32];
	int err;

	err = xlb_cmd_args(NULL, &argc, argv, version_help, 0, "xlb version");
	if (err)
		return err;
	libxdp_version(xdp, sizeof(xdp));
	if (xlb_opts.json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "xlb", json_object_new_string(XLB_VERSION));
		json_object_object_add(o, "libbpf",
				       json_object_new_string(libbpf_version_string() + 1));
		json_object_object_add(o, "libxdp", json_object_new_string(xdp));
		xlb_json_print(o);
		return 0;
	}
	printf("xlb %s\nlibbpf %s\nlibxdp %s\n", XLB_VERSION,
	       libbpf_version_string() + 1, xdp);
	return 0;
}
