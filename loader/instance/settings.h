/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The instance settings (struct xlb_config) by name: one list used by
 * `xlb config set/show`, `xlb show` and `xlb apply`, so the names, ranges
 * and printed forms cannot drift apart. Each setting has a command-line
 * name (udp-timeout) and a JSON name (udp_timeout).
 */
#ifndef XLB_SETTINGS_H
#define XLB_SETTINGS_H

#include <stdbool.h>
#include <json-c/json.h>
#include <stdio.h>
#include "xlb.h"

struct xlb_setting;

/* Look a setting up by its command-line or JSON name; NULL if unknown. */
const struct xlb_setting *xlb_setting_find(const char *name);

/* Set it in cfg from text (the command line); 0 or -EINVAL with *why. */
int xlb_setting_parse(const struct xlb_setting *s, struct xlb_config *cfg,
		      const char *text, const char **why);
/* Set it from a JSON value (a string, an integer, or null for "unset"). */
int xlb_setting_from_json(const struct xlb_setting *s,
			  struct xlb_config *cfg, struct json_object *val,
			  const char **why);
/* Did the setting's text name the seed? (It also initialises.) */
bool xlb_setting_is_seed(const struct xlb_setting *s);

/* All settings as a JSON object (JSON names), or as "name value" pairs:
 * one per line, or all on one line. */
struct json_object *xlb_settings_json(const struct xlb_config *cfg);
void xlb_settings_print(FILE *f, const struct xlb_config *cfg, bool one_line);

#endif /* XLB_SETTINGS_H */
