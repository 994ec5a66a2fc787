// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The instance settings by name (see settings.h). */
#include <errno.h>
#include <arpa/inet.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "settings.h"

enum setting_kind { SEED, ADDR4, ADDR6, NUMBER, NUMBER16, PORT };

struct xlb_setting {
	const char *cli;
	const char *json;
	enum setting_kind kind;
	size_t offset;		/* in struct xlb_config */
	__u32 max;		/* NUMBER, NUMBER16, PORT */
	__u32 min;		/* NUMBER: least value other than 0 (default) */
	bool pow2;		/* NUMBER: a power of two (or 0) */
	/* NUMBER16: a __u16 */
	/* PORT: a __be16, which settings show in host order */
};

#define AT(field) offsetof(struct xlb_config, field)

static const struct xlb_setting settings[] = {
	{ "seed",          "seed",          SEED,   AT(hash_key),      0, 0, false },
	{ "src4",          "src4",          ADDR4,  AT(src4),          0, 0, false },
	{ "src6",          "src6",          ADDR6,  AT(src6),          0, 0, false },
	{ "udp-timeout",   "udp_timeout",   NUMBER, AT(udp_timeout_s), 86400, 0, false },
	{ "tcp-timeout",   "tcp_timeout",   NUMBER, AT(tcp_timeout_s), 604800, 0, false },
	{ "ct-rate-limit", "ct_rate_limit", NUMBER, AT(ct_rate_limit), 100000000, 0, false },
	{ "tcp-closing-timeout", "tcp_closing_timeout", NUMBER,
	  AT(tcp_closing_timeout_s), 604800, 0, false },
	{ "conntrack-size", "conntrack_size", NUMBER, AT(ct_size),
	  XLB_CT_MAX_SIZE, XLB_CT_MIN_SIZE, true },
	{ "gue-port",      "gue_port",      PORT,   AT(gue_port),      65535, 0, false },
	{ "history",       "history",       NUMBER, AT(history_s),     604800, 0, false },
	{ "icmp-rate",     "icmp_rate",     NUMBER16, AT(icmp_rate),   65535, 0, false },
};

#define N_SETTINGS (sizeof(settings) / sizeof(settings[0]))

static void *field(const struct xlb_setting *s, struct xlb_config *cfg)
{
	return (char *)cfg + s->offset;
}

static const void *cfield(const struct xlb_setting *s,
			  const struct xlb_config *cfg)
{
	return (const char *)cfg + s->offset;
}

const struct xlb_setting *xlb_setting_find(const char *name)
{
	size_t i;

	for (i = 0; i < N_SETTINGS; i++)
		if (!strcmp(name, settings[i].cli) ||
		    !strcmp(name, settings[i].json))
			return &settings[i];
	return NULL;
}

bool xlb_setting_is_seed(const struct xlb_setting *s)
{
	return s->kind == SEED;
}

int xlb_setting_parse(const struct xlb_setting *s, struct xlb_config *cfg,
		      const char *text, const char **why)
{
	__be32 addr[4];
	__u32 num;
	__u8 family;
	int err;

	switch (s->kind) {
	case SEED:
		err = xlb_seed_parse(text, field(s, cfg), why);
		if (!err)
			cfg->flags |= XLB_CFG_F_INITIALIZED;
		return err;
	case ADDR4:
	case ADDR6:
		if (!strcmp(text, "none")) {
			memset(field(s, cfg), 0, s->kind == ADDR4 ? 4 : 16);
			return 0;
		}
		err = xlb_addr_parse(text, addr, &family, why);
		if (err)
			return err;
		if (family != (s->kind == ADDR4 ? XLB_AF_INET : XLB_AF_INET6)) {
			*why = s->kind == ADDR4 ? "not an IPv4 address" :
						  "not an IPv6 address";
			return -EINVAL;
		}
		memcpy(field(s, cfg), addr, s->kind == ADDR4 ? 4 : 16);
		return 0;
	case NUMBER16:
		err = xlb_u32_parse(text, 0, s->max, &num, why);
		if (err)
			return err;
		*(__u16 *)field(s, cfg) = num;
		return 0;
	case NUMBER:
		err = xlb_u32_parse(text, 0, s->max, &num, why);
		if (err)
			return err;
		if (num && num < s->min) {
			*why = "too small (0 for the default)";
			return -EINVAL;
		}
		if (s->pow2 && (num & (num - 1))) {
			*why = "not a power of two";
			return -EINVAL;
		}
		*(__u32 *)field(s, cfg) = num;
		return 0;
	case PORT:
		err = xlb_u32_parse(text, 0, s->max, &num, why);
		if (err)
			return err;
		*(__be16 *)field(s, cfg) = htons(num);
		return 0;
	}
	return -EINVAL;
}

int xlb_setting_from_json(const struct xlb_setting *s,
			  struct xlb_config *cfg, struct json_object *val,
			  const char **why)
{
	char num[24];

	if (!val) {
		if (s->kind == ADDR4 || s->kind == ADDR6)
			return xlb_setting_parse(s, cfg, "none", why);
		/* A seed of null: not set by this file. */
		if (s->kind == SEED)
			return 0;
		*why = "must be a number";
		return -EINVAL;
	}
	if (s->kind == NUMBER || s->kind == NUMBER16 || s->kind == PORT) {
		if (!json_object_is_type(val, json_type_int)) {
			*why = "must be a number";
			return -EINVAL;
		}
		snprintf(num, sizeof(num), "%lld",
			 (long long)json_object_get_int64(val));
		return xlb_setting_parse(s, cfg, num, why);
	}
	if (!json_object_is_type(val, json_type_string)) {
		*why = "must be a string";
		return -EINVAL;
	}
	return xlb_setting_parse(s, cfg, json_object_get_string(val), why);
}

/* The value as text; NULL for an unset address or seed. */
static const char *setting_str(const struct xlb_setting *s,
			       const struct xlb_config *cfg, char *buf,
			       size_t len)
{
	static const __be32 zero[4];

	switch (s->kind) {
	case SEED:
		if (!(cfg->flags & XLB_CFG_F_INITIALIZED))
			return NULL;
		return xlb_seed_str(cfield(s, cfg), buf, len);
	case ADDR4:
	case ADDR6:
		if (!memcmp(cfield(s, cfg), zero, s->kind == ADDR4 ? 4 : 16))
			return NULL;
		return xlb_addr_str(cfield(s, cfg), s->kind == ADDR4 ?
				    XLB_AF_INET : XLB_AF_INET6, buf, len);
	case NUMBER:
		snprintf(buf, len, "%u", *(const __u32 *)cfield(s, cfg));
		return buf;
	case NUMBER16:
		snprintf(buf, len, "%u", *(const __u16 *)cfield(s, cfg));
		return buf;
	case PORT:
		snprintf(buf, len, "%u", ntohs(*(const __be16 *)cfield(s, cfg)));
		return buf;
	}
	return NULL;
}

struct json_object *xlb_settings_json(const struct xlb_config *cfg)
{
	struct json_object *o = json_object_new_object();
	const struct xlb_setting *s;
	char buf[XLB_VIP_STRLEN];
	const char *text;
	size_t i;

	for (i = 0; i < N_SETTINGS; i++) {
		s = &settings[i];
		text = setting_str(s, cfg, buf, sizeof(buf));
		if (s->kind == NUMBER)
			json_object_object_add(o, s->json, json_object_new_int64(
				*(const __u32 *)cfield(s, cfg)));
		else if (s->kind == NUMBER16)
			json_object_object_add(o, s->json, json_object_new_int64(
				*(const __u16 *)cfield(s, cfg)));
		else if (s->kind == PORT)
			json_object_object_add(o, s->json, json_object_new_int64(
				ntohs(*(const __be16 *)cfield(s, cfg))));
		else
			json_object_object_add(o, s->json, text ?
				json_object_new_string(text) : NULL);
	}
	return o;
}

void xlb_settings_print(FILE *f, const struct xlb_config *cfg, bool one_line)
{
	char buf[XLB_VIP_STRLEN];
	const char *text;
	size_t i;

	for (i = 0; i < N_SETTINGS; i++) {
		text = setting_str(&settings[i], cfg, buf, sizeof(buf));
		if (one_line)
			fprintf(f, "%s%s %s", i ? " " : "", settings[i].cli,
			       text ? text : "none");
		else
			fprintf(f, "%-19s %s\n", settings[i].cli,
			       text ? text : "none");
	}
	if (one_line)
		fputc('\n', f);
}
