/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The one parser of the numbers users type: counts, weights, table sizes,
 * seeds. Every parser returns 0 or -EINVAL and sets *why to a short reason
 * in one style ("not a number", "negative", "out of range 3..1048573"); the
 * caller prints it after the input and where it came from:
 *	bad --table-size '2': out of range 3..1048573
 *	backend 'a:-1': bad weight '-1': negative
 */
#ifndef XLB_NUMBERS_H
#define XLB_NUMBERS_H

#include <linux/types.h>

/* A decimal number in [min, max], digits only. */
int xlb_u64_parse(const char *s, __u64 min, __u64 max, __u64 *out,
		  const char **why);
int xlb_u32_parse(const char *s, __u32 min, __u32 max, __u32 *out,
		  const char **why);
/* Weight: 0 (drain) .. XLB_MAX_WEIGHT. */
int xlb_weight_parse(const char *s, __u32 *weight, const char **why);
/* Table size: a prime in [XLB_MIN_TABLE_SIZE, XLB_MAX_TABLE_SIZE]. */
int xlb_table_size_check(__u32 m, const char **why);
int xlb_table_size_parse(const char *s, __u32 *m, const char **why);
/* Seed: 32 hex digits (an optional 0x), the SipHash key as printed by
 * `xlb config show`. */
int xlb_seed_parse(const char *s, __u64 key[2], const char **why);
const char *xlb_seed_str(const __u64 key[2], char *buf, size_t len);

#define XLB_SEED_STRLEN	33

/* A duration in milliseconds as a number and a unit, "500ms" or "2s", in
 * [min_ms, max_ms]; and the shortest such text for ms. */
int xlb_duration_parse(const char *s, __u32 min_ms, __u32 max_ms, __u32 *ms,
		       const char **why);
const char *xlb_duration_str(__u32 ms, char *buf, size_t len);

/* True when m is prime. */
int is_prime(__u32 m);

#endif /* XLB_NUMBERS_H */
