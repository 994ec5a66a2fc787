// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Health settings by name (see hc_store.h): parsed from the command line
 * and from JSON, printed by `xlb show`, one list for all three.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "numbers.h"
#include "hc_store.h"

enum field_type { KIND, ON_DOWN, PORT, MS, COUNT, STATUS, PATH, DATA };

struct xlb_hc_setting {
	const char *option;	/* "--interval"; printed without the dashes */
	const char *json;
	enum field_type type;
	size_t offset;		/* in struct xlb_hc_config */
	size_t len_offset;	/* DATA: its length byte */
};

#define AT(f) offsetof(struct xlb_hc_config, f)

static const struct xlb_hc_setting settings[XLB_HC_SETTINGS] = {
	{ "--health",      "kind",        KIND,    AT(kind), 0 },
	{ "--health-port", "port",        PORT,    AT(port), 0 },
	{ "--interval",    "interval_ms", MS,      AT(interval_ms), 0 },
	{ "--timeout",     "timeout_ms",  MS,      AT(timeout_ms), 0 },
	{ "--rise",        "rise",        COUNT,   AT(rise), 0 },
	{ "--fall",        "fall",        COUNT,   AT(fall), 0 },
	{ "--http-path",   "http_path",   PATH,    AT(path), 0 },
	{ "--http-status", "http_status", STATUS,  AT(http_status), 0 },
	{ "--udp-send",    "udp_send",    DATA,    AT(send), AT(send_len) },
	{ "--udp-expect",  "udp_expect",  DATA,    AT(expect), AT(expect_len) },
	{ "--on-down",     "on_down",     ON_DOWN, AT(on_down), 0 },
};

static void *field(const struct xlb_hc_setting *s, struct xlb_hc_config *c)
{
	return (char *)c + s->offset;
}

static const void *cfield(const struct xlb_hc_setting *s,
			  const struct xlb_hc_config *c)
{
	return (const char *)c + s->offset;
}

static size_t field_size(const struct xlb_hc_setting *s)
{
	switch (s->type) {
	case KIND:
	case ON_DOWN:
	case COUNT:
		return 1;
	case PORT:
	case STATUS:
		return 2;
	case MS:
		return 4;
	case PATH:
		return XLB_HC_PATH_MAX;
	case DATA:
		return XLB_HC_DATA_MAX;
	}
	return 0;
}

static bool is_set(const struct xlb_hc_setting *s, const struct xlb_hc_config *c)
{
	static const char zero[XLB_HC_PATH_MAX];

	if (s->type == DATA)
		return ((const __u8 *)c)[s->len_offset] != 0;
	return memcmp(cfield(s, c), zero, field_size(s)) != 0;
}

const struct xlb_hc_setting *xlb_hc_setting_at(size_t i)
{
	return i < XLB_HC_SETTINGS ? &settings[i] : NULL;
}

const struct xlb_hc_setting *xlb_hc_setting_find(const char *name)
{
	size_t i;

	for (i = 0; i < XLB_HC_SETTINGS; i++)
		if (!strcmp(name, settings[i].option) ||
		    !strcmp(name, settings[i].option + 2) ||
		    !strcmp(name, settings[i].json))
			return &settings[i];
	return NULL;
}

size_t xlb_hc_setting_index(const struct xlb_hc_setting *s)
{
	return s - settings;
}

const char *xlb_hc_setting_option(const struct xlb_hc_setting *s)
{
	return s->option;
}

static int name_parse(const char *text, const char *const *names, size_t n,
		      __u8 *out, const char *why_unknown, const char **why)
{
	size_t i;

	/* Index 0, inherit, is spelled "default". */
	for (i = 1; i < n; i++) {
		if (!strcmp(text, names[i])) {
			*out = i;
			return 0;
		}
	}
	*why = why_unknown;
	return -EINVAL;
}

int xlb_hc_setting_parse(const struct xlb_hc_setting *s,
			 struct xlb_hc_config *c, const char *text,
			 const char **why)
{
	static const char *const kinds[] = { "", "none", "tcp", "http", "udp" };
	static const char *const on_down[] = { "", "keep", "reset" };
	void *f = field(s, c);
	size_t len;
	__u32 v;

	if (!strcmp(text, "default")) {
		memset(f, 0, field_size(s));
		if (s->type == DATA)
			((__u8 *)c)[s->len_offset] = 0;
		return 0;
	}
	switch (s->type) {
	case KIND:
		return name_parse(text, kinds, 5, f,
				  "unknown kind (tcp, http, udp, none or default)",
				  why);
	case ON_DOWN:
		return name_parse(text, on_down, 3, f,
				  "must be keep, reset or default", why);
	case PORT:
		if (xlb_u32_parse(text, 1, 65535, &v, why))
			return -EINVAL;
		*(__u16 *)f = v;
		return 0;
	case MS:
		return xlb_duration_parse(text, s->offset == AT(interval_ms) ?
					  XLB_HC_MIN_INTERVAL_MS :
					  XLB_HC_MIN_INTERVAL_MS / 2,
					  XLB_HC_MAX_INTERVAL_MS, f, why);
	case COUNT:
		if (xlb_u32_parse(text, 1, XLB_HC_MAX_COUNT, &v, why))
			return -EINVAL;
		*(__u8 *)f = v;
		return 0;
	case STATUS:
		if (xlb_u32_parse(text, 100, 599, &v, why))
			return -EINVAL;
		*(__u16 *)f = v;
		return 0;
	case PATH:
	case DATA:
		len = strlen(text);
		if (!len) {
			*why = "empty";
			return -EINVAL;
		}
		if (len > (s->type == PATH ? XLB_HC_PATH_MAX - 1 :
					      XLB_HC_DATA_MAX)) {
			*why = s->type == PATH ? "longer than 63 bytes" :
						 "longer than 64 bytes";
			return -EINVAL;
		}
		memset(f, 0, field_size(s));
		memcpy(f, text, len);
		if (s->type == DATA)
			((__u8 *)c)[s->len_offset] = len;
		return 0;
	}
	return -EINVAL;
}

void xlb_hc_overlay(struct xlb_hc_config *dst, const struct xlb_hc_config *src,
		    __u32 given)
{
	const struct xlb_hc_setting *s;
	size_t i;

	for (i = 0; i < XLB_HC_SETTINGS; i++) {
		if (!(given & 1U << i))
			continue;
		s = &settings[i];
		memcpy(field(s, dst), cfield(s, src), field_size(s));
		if (s->type == DATA)
			((__u8 *)dst)[s->len_offset] =
				((const __u8 *)src)[s->len_offset];
	}
}

/* The value as text for `xlb show` and JSON; data as it is. */
static const char *value_str(const struct xlb_hc_setting *s,
			     const struct xlb_hc_config *c, char *buf,
			     size_t len)
{
	const void *f = cfield(s, c);

	switch (s->type) {
	case KIND:
		return xlb_hc_kind_name(*(const __u8 *)f);
	case ON_DOWN:
		return xlb_hc_on_down_name(*(const __u8 *)f);
	case PORT:
	case STATUS:
		snprintf(buf, len, "%u", *(const __u16 *)f);
		return buf;
	case MS:
		return xlb_duration_str(*(const __u32 *)f, buf, len);
	case COUNT:
		snprintf(buf, len, "%u", *(const __u8 *)f);
		return buf;
	case PATH:
		return f;
	case DATA:
		snprintf(buf, len, "%.*s", ((const __u8 *)c)[s->len_offset],
			 (const char *)f);
		return buf;
	}
	return "?";
}

struct json_object *xlb_hc_json(const struct xlb_hc_config *c)
{
	struct json_object *o = NULL, *v;
	const struct xlb_hc_setting *s;
	char buf[XLB_HC_DATA_MAX + 1];
	size_t i;

	for (i = 0; i < XLB_HC_SETTINGS; i++) {
		s = &settings[i];
		if (!is_set(s, c))
			continue;
		switch (s->type) {
		case PORT:
		case STATUS:
			v = json_object_new_int64(*(const __u16 *)cfield(s, c));
			break;
		case MS:
			v = json_object_new_int64(*(const __u32 *)cfield(s, c));
			break;
		case COUNT:
			v = json_object_new_int64(*(const __u8 *)cfield(s, c));
			break;
		default:
			v = json_object_new_string(value_str(s, c, buf,
							     sizeof(buf)));
			break;
		}
		if (!o)
			o = json_object_new_object();
		json_object_object_add(o, s->json, v);
	}
	return o;
}

int xlb_hc_from_json(struct json_object *o, struct xlb_hc_config *c,
		     const char **key, const char **why)
{
	const struct xlb_hc_setting *s;
	char text[24];
	__s64 n;

	memset(c, 0, sizeof(*c));
	*key = NULL;
	if (!json_object_is_type(o, json_type_object)) {
		*why = "must be an object";
		return -EINVAL;
	}
	json_object_object_foreach(o, k, val) {
		*key = k;
		s = xlb_hc_setting_find(k);
		if (!s || strcmp(k, s->json)) {
			*why = "unknown health setting";
			return -EINVAL;
		}
		switch (s->type) {
		case PORT:
		case STATUS:
		case MS:
		case COUNT:
			if (!json_object_is_type(val, json_type_int)) {
				*why = "must be an integer";
				return -EINVAL;
			}
			n = json_object_get_int64(val);
			if (s->type == MS && n >= 0)
				snprintf(text, sizeof(text), "%lldms",
					 (long long)n);
			else
				snprintf(text, sizeof(text), "%lld",
					 (long long)n);
			break;
		default:
			if (!json_object_is_type(val, json_type_string)) {
				*why = "must be a string";
				return -EINVAL;
			}
			if (!strcmp(json_object_get_string(val), "default")) {
				*why = "leave the key out for the default";
				return -EINVAL;
			}
			if (xlb_hc_setting_parse(s, c,
						 json_object_get_string(val), why))
				return -EINVAL;
			continue;
		}
		if (xlb_hc_setting_parse(s, c, text, why))
			return -EINVAL;
	}
	*key = NULL;
	return 0;
}

/* UDP data as a C string literal when quote is set; paths as they are. */
static void print_value(FILE *f, const char *v, bool quote)
{
	const char *p;

	if (!quote) {
		fputs(v, f);
		return;
	}
	fputc('"', f);
	for (p = v; *p; p++) {
		if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\r')
			fputs("\\r", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

void xlb_hc_print(FILE *f, const struct xlb_hc_config *c)
{
	const struct xlb_hc_setting *s;
	char buf[XLB_HC_DATA_MAX + 1];
	size_t i;

	for (i = 0; i < XLB_HC_SETTINGS; i++) {
		s = &settings[i];
		if (!is_set(s, c))
			continue;
		fprintf(f, " %s ", s->option + 2);
		print_value(f, value_str(s, c, buf, sizeof(buf)), s->type == DATA);
	}
}
