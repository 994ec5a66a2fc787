/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What `xlb replay` measured, and its outputs: the terminal table, JSON,
 * CSV files and gnuplot charts. Every file is written under a temporary
 * name and renamed when complete, so a failure leaves no partial file.
 */
#ifndef XLB_REPLAY_REPORT_H
#define XLB_REPLAY_REPORT_H

#include "replay.h"
#include "replay_bpf.h"
#include "replay_churn.h"

enum replay_change {
	CHANGE_NONE,
	CHANGE_REMOVE,
	CHANGE_ADD,
	CHANGE_REWEIGHT,
};

/* One algorithm's assignment of the flows, before and after the change. */
struct replay_algo {
	bool done;
	enum lb_algo_kind kind;
	int *assign[2];				/* per flow: backend index */
	struct replay_load *load[2];		/* per backend */
	struct replay_spread spread[2][RM__MAX];
	struct replay_disruption dis;
};

struct replay_report {
	/* input */
	char **pcaps;
	int n_pcaps;
	struct lb_params params;
	__u64 key[2];
	bool via_bpf;
	__u32 mtu;				/* --mtu; 0: not given */
	__u32 hash_flags[2];			/* --hash: the IPv4 and IPv6
						 * VIPs' XLB_VIP_F_HASH flags */
	enum replay_change change;
	char change_text[128];
	struct lb_backend *set[2];		/* before, after */
	size_t n_set[2];

	/* measured */
	struct trace trace;
	struct replay_flows rf;
	struct replay_random random[2];
	struct replay_algo algo[LB__MAX];
	/* --mtu: the packets answered too big, the same before and after
	 * a change (they depend on the packets' sizes alone). */
	struct replay_too_big too_big;

	/* --churn: a sequence of changes instead of one (NULL without); its
	 * report replaces balance and disruption, an algorithm's done says
	 * it ran. */
	struct churn_report *churn;
};

#define PHASES(r)	((r)->change == CHANGE_NONE ? 1 : 2)

void replay_report_free(struct replay_report *r);

void replay_print_table(const struct replay_report *r, bool verbose);
int replay_print_json(const struct replay_report *r);
int replay_write_csv(const struct replay_report *r, const char *dir);
int replay_write_plots(const struct replay_report *r, const char *dir);

/* The --churn report (churn_out.c), called by the three above. */
struct json_object;
void churn_print_table(const struct replay_report *r);
struct json_object *churn_json(const struct replay_report *r);
int churn_write_csv(const struct replay_report *r, const char *dir);

/* A display name: "ring" carries its V ("ring/100"). */
const char *replay_algo_label(const struct replay_report *r,
			      enum lb_algo_kind kind, char *buf, size_t len);

/*
 * An output file written under a temporary name in its directory and
 * renamed over its final name by out_file_commit(); out_file_abort()
 * removes it.
 */
struct out_file {
	FILE *f;
	char tmp[4096];
	char path[4096];
};

int out_file_open(struct out_file *o, const char *dir, const char *name);
int out_file_commit(struct out_file *o);
void out_file_abort(struct out_file *o);
/* dir/name into buf; -ENAMETOOLONG when it does not fit. */
int out_path(char *buf, size_t len, const char *dir, const char *name);
/* Create dir when missing (one level). Returns 0 or -errno after p_err(). */
int out_dir_prepare(const char *dir);

#endif /* XLB_REPLAY_REPORT_H */
