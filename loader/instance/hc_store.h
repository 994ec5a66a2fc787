/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Health settings and health state in the instance's maps xlb_hc_config
 * and xlb_hc_state (include/health.h): reading and writing them, the
 * settings that apply to a backend, their checks, and their forms on the
 * command line and in JSON (`xlb show -j`, `xlb apply`).
 *
 * An instance attached by an xlb older than health checks lacks both
 * maps: it reads as "no settings" and "health unknown", and the first
 * write of a setting creates them (pinned in the instance's directory
 * with bpf/maps.h's definition, so a later `xlb attach` reuses them).
 *
 * A record's id is reset (settings and state zeroed) when update.c hands
 * the id out again, before anything can reach it: a new VIP or backend
 * never inherits its id's last user's settings, even after a kill.
 */
#ifndef XLB_HC_STORE_H
#define XLB_HC_STORE_H

#include <stdbool.h>
#include <stdio.h>
#include <json-c/json.h>
#include <linux/types.h>
#include "health.h"
#include "instance.h"
#include "state.h"

/* Keys of xlb_hc_config. */
static inline __u32 xlb_hc_vip_key(__u32 vip_id)
{
	return vip_id;
}

static inline __u32 xlb_hc_backend_key(__u32 backend_id)
{
	return XLB_MAX_VIPS + backend_id;
}

/* Does the instance have the health maps? */
bool xlb_hc_present(const struct xlb_instance *inst);

/*
 * A VIP's or a backend's own settings (zero fields: not set). Absent maps
 * read as all zero. Returns 0 or -errno after p_err().
 */
int xlb_hc_vip_read(const struct xlb_instance *inst, __u32 vip_id,
		    struct xlb_hc_config *c);
int xlb_hc_backend_read(const struct xlb_instance *inst, __u32 backend_id,
			struct xlb_hc_config *c);

/*
 * Write them when they differ from what the map holds (nothing to write:
 * 0), after what the command's first write owes (xlb_update_pending()).
 * Call under XLB_LOCK_WRITE (after xlb_update_begin()), after
 * xlb_hc_check(). In a plan (st->planning), recorded for its commit,
 * which writes what differs then. Creates the maps when the instance lacks
 * them and c is not all zero. Returns 0 or -errno after p_err().
 */
int xlb_hc_vip_write(struct xlb_instance *inst, struct xlb_state *st,
		     __u32 vip_id, const struct xlb_hc_config *c);
int xlb_hc_backend_write(struct xlb_instance *inst, struct xlb_state *st,
			 __u32 backend_id, const struct xlb_hc_config *c);

/*
 * The settings a backend is checked with: its own over its VIP's, field
 * by field, then the defaults (XLB_HC_DEFAULT_*), port 0 made the VIP's
 * port. kind is never XLB_HC_INHERIT (NONE when neither sets one),
 * on_down never XLB_HC_ON_DOWN_INHERIT; an unset timeout is the
 * default or half the interval, whichever is shorter. Pure.
 */
void xlb_hc_merge(const struct xlb_hc_config *vip,
		  const struct xlb_hc_config *backend, __u16 vip_port,
		  struct xlb_hc_config *out);
/* The same, read from the maps for live backend id of st. Returns 0 or
 * -errno after p_err() (-ENOENT: id is not a live backend). */
int xlb_hc_effective(const struct xlb_instance *inst,
		     const struct xlb_state *st, __u32 backend_id,
		     struct xlb_hc_config *out);

/*
 * A backend's health as the checker last wrote it. A record of another
 * gen than gen (the id was reused), or none at all, reads as zero with
 * gen set and health XLB_HC_UNKNOWN. Returns 0 or -errno after p_err().
 */
int xlb_hc_state_read(const struct xlb_instance *inst, __u32 backend_id,
		      __u32 gen, struct xlb_hc_state *s);
/* Write it (one map update; creates the maps when absent). Returns 0 or
 * -errno after p_err(). */
int xlb_hc_state_write(struct xlb_instance *inst, __u32 backend_id,
		       const struct xlb_hc_state *s);

/*
 * For a change's records (records.c, update.c), where ids are handed out: zero the settings of a VIP id,
 * or the settings and state of backend ids[n]; copy a VIP's settings,
 * or a backend's settings and state (its gen made new_gen), to the id
 * that replaces it when a VIP is built anew for another table size.
 * Nothing to do without the maps. The change leaves them out of its
 * plan. Return 0 or -errno after p_err().
 */
int xlb_hc_reset_vip(struct xlb_instance *inst, __u32 vip_id);
int xlb_hc_reset_backends(struct xlb_instance *inst, const __u32 *ids,
			  __u32 n);
int xlb_hc_copy_vip(struct xlb_instance *inst, __u32 from, __u32 to);
int xlb_hc_copy_backend(struct xlb_instance *inst, __u32 from, __u32 to,
			__u32 new_gen);

/*
 * Check settings as stored (zero: not set) for what cannot be right:
 * unknown kind or on_down, rise or fall above XLB_HC_MAX_COUNT, an
 * interval or timeout outside XLB_HC_MIN/MAX_INTERVAL_MS, HTTP status
 * outside 100..599, a path not starting with '/' or holding spaces or
 * control characters, UDP data other than printable ASCII, tab, CR and
 * LF, lengths beyond the arrays, and, for the effective settings, a
 * timeout not below the interval. With vip NULL, c is a VIP's;
 * otherwise c is a backend's override of vip. Returns 0 or -EINVAL
 * with *why set (one line, no prefix).
 */
#define XLB_HC_MAX_COUNT	100
#define XLB_HC_MIN_INTERVAL_MS	10
#define XLB_HC_MAX_INTERVAL_MS	3600000
int xlb_hc_check(const struct xlb_hc_config *vip,
		 const struct xlb_hc_config *c, const char **why);

/* The same check of a probe's port for a VIP of port vip_port (network
 * order): a VIP of port 0 (of fragments, or of all ports) has none of
 * its own, so checks on (a backend's c over vip, or the VIP's c) must
 * name one. 0, or -EINVAL with *why. */
int xlb_hc_port_check(const struct xlb_hc_config *vip,
		      const struct xlb_hc_config *c, __be16 vip_port,
		      const char **why);

/* Names of kinds, on_down values and health states ("tcp", "reset",
 * "down", ...). */
const char *xlb_hc_kind_name(__u8 kind);
const char *xlb_hc_on_down_name(__u8 on_down);
const char *xlb_hc_health_name(__u8 health);

/*
 * The settings by name: one list gives the command-line options
 * (--interval), the names `xlb show` prints (interval) and the JSON keys
 * (interval_ms), so they cannot drift apart. Index i of the list is bit i
 * of a "given" mask.
 */
struct xlb_hc_setting;
#define XLB_HC_SETTINGS		11
/* The i-th setting, NULL past the last. */
const struct xlb_hc_setting *xlb_hc_setting_at(size_t i);
/* By option ("--interval"), printed name or JSON key; NULL if unknown. */
const struct xlb_hc_setting *xlb_hc_setting_find(const char *name);
size_t xlb_hc_setting_index(const struct xlb_hc_setting *s);
const char *xlb_hc_setting_option(const struct xlb_hc_setting *s);
/* Set it in c from text; "default" unsets it. 0 or -EINVAL with *why. */
int xlb_hc_setting_parse(const struct xlb_hc_setting *s,
			 struct xlb_hc_config *c, const char *text,
			 const char **why);
/* Copy the settings whose bit is in given from src to dst. */
void xlb_hc_overlay(struct xlb_hc_config *dst, const struct xlb_hc_config *src,
		    __u32 given);

/* The fields c sets, as a JSON object; NULL when it sets none. */
struct json_object *xlb_hc_json(const struct xlb_hc_config *c);
/* c from such an object (absent keys unset). 0 or -EINVAL with *why,
 * and *key naming the key at fault (NULL: the object). Does not run
 * xlb_hc_check(). */
int xlb_hc_from_json(struct json_object *o, struct xlb_hc_config *c,
		     const char **key, const char **why);
/* The fields c sets as " name value" pairs on one line (no newline). */
void xlb_hc_print(FILE *f, const struct xlb_hc_config *c);

#endif /* XLB_HC_STORE_H */
