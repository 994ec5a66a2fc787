// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* xlb config { set | show | help }: the instance settings. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "cli.h"
#include "opts.h"
#include "settings.h"
#include "update.h"

#define CONFIG_SET_USAGE "xlb config set NAME VALUE [NAME VALUE ...]"

static int config_help(void)
{
	printf("Usage: " CONFIG_SET_USAGE "\n"
	       "       xlb config show\n"
	       "       xlb config help\n"
	       "NAME VALUE :=\n"
	       "  seed HEX            the flow hash key, 32 hex digits; balancers that\n"
	       "                      share VIPs must share it (set at random on first use)\n"
	       "  src4 ADDR | none    outer IPv4 source of encapsulated packets\n"
	       "  src6 ADDR | none    outer IPv6 source\n"
	       "  udp-timeout S       connection table: UDP idle timeout, seconds\n"
	       "  tcp-timeout S       connection table: TCP idle timeout, seconds\n"
	       "  tcp-closing-timeout S  connection table: TCP idle timeout once a FIN\n"
	       "                      or RST has passed, seconds\n"
	       "  ct-rate-limit N     connection table: new entries per second per CPU\n"
	       "  conntrack-size N    connection table entries, applied by the next\n"
	       "                      `xlb attach` (1024 to 67108864)\n"
	       "  gue-port P          UDP port of GUE (VIPs with --encap gue); the\n"
	       "                      backends' decap.bpf.o must use the same\n"
	       "  history S           how long a stateless VIP's table names a slot's\n"
	       "                      previous backend after a change, seconds\n"
	       "  icmp-rate N         ICMP \"too big\" answers to clients, per second\n"
	       "                      per CPU (at most 65535); echo replies to pings\n"
	       "                      of VIPs, the same in a bucket of their own\n"
	       "                      (0 for any of these: the default, see xlb(8))\n");
	return 0;
}

static int config_set(int argc, char **argv)
{
	const struct xlb_setting *s;
	struct xlb_config want = {};
	struct xlb_instance inst;
	struct xlb_state *st;
	bool seed = false;
	const char *why;
	int i, err;

	err = xlb_cmd_args(NULL, &argc, argv, config_help, -1, CONFIG_SET_USAGE);
	if (err)
		return err;
	if (argc == 0 || argc % 2) {
		p_err(argc ? "setting '%s' has no value; usage: %s" :
		      "nothing to set%s; usage: %s",
		      argc ? argv[argc - 1] : "", CONFIG_SET_USAGE);
		return -EINVAL;
	}
	/* Everything is checked against a scratch copy before the instance
	 * is opened, so bad input changes nothing. */
	for (i = 0; i < argc; i += 2) {
		s = xlb_setting_find(argv[i]);
		if (!s) {
			p_err("unknown setting '%s'; try `xlb config help`",
			      argv[i]);
			return -EINVAL;
		}
		if (xlb_setting_parse(s, &want, argv[i + 1], &why)) {
			p_err("bad %s '%s': %s", argv[i], argv[i + 1], why);
			return -EINVAL;
		}
		seed |= xlb_setting_is_seed(s);
	}

	err = xlb_update_open(&inst, &xlb_opts.instance, &st, seed);
	if (err)
		return err;
	want = st->config;
	for (i = 0; i < argc; i += 2)
		xlb_setting_parse(xlb_setting_find(argv[i]), &want,
				  argv[i + 1], &why);
	err = xlb_config_write(&inst, st, &want);
	xlb_update_close(&inst, st);
	for (i = 0; !err && i < argc; i += 2)
		if (xlb_setting_find(argv[i]) == xlb_setting_find("conntrack-size"))
			p_info("xlb: note: conntrack-size applies from the next `xlb attach` (the connection table is made anew then)");
	return err;
}

static int config_show(int argc, char **argv)
{
	struct xlb_instance inst;
	struct xlb_state *st;
	int err;

	err = xlb_cmd_args(NULL, &argc, argv, config_help, 0, "xlb config show");
	if (err)
		return err;
	err = xlb_state_open(&inst, &xlb_opts.instance, &st);
	if (err)
		return err;
	xlb_instance_close(&inst);
	if (xlb_opts.json) {
		xlb_json_print(xlb_settings_json(&st->config));
	} else {
		xlb_settings_print(stdout, &st->config, false);
	}
	xlb_state_free(st);
	return 0;
}

int do_config(int argc, char **argv)
{
	static const struct xlb_verb verbs[] = {
		{ "set", NULL, config_set },
		{ "show", NULL, config_show },
		{ NULL },
	};

	return xlb_dispatch("config", verbs, config_help, argc, argv);
}
