// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * `xlb replay --via bpf` and `--via model` agree flow by flow: every packet
 * of a trace, run through the XDP program with BPF_PROG_TEST_RUN (Maglev
 * table installed in its maps, before and after a change), reaches the
 * backend the userspace table names for its flow. Checked on a generated
 * trace (both families, TCP and UDP, server ports in more batches than the
 * VIP map holds), with equal and unequal weights, another table size and
 * another flow hash key, and on the real captures when present.
 */
#include <dirent.h>
#include "replay_bpf.h"
#include "replay_fixtures.h"
#include "testlib.h"

static const __u64 other_key[2] = { 0x1122334455667788ULL, 0x99aabbccddeeff00ULL };

/* Read captures keeping their packets, flows hashed with key. */
static bool load(int n, const char *const *paths, const __u64 key[2],
		 struct trace *t, struct replay_flows *rf,
		 struct replay_packets *pk)
{
	int i;

	memset(t, 0, sizeof(*t));
	memset(pk, 0, sizeof(*pk));
	for (i = 0; i < n; i++)
		if (!ASSERT_OK(trace_read(t, paths[i], replay_packets_add, pk),
			       paths[i]))
			return false;
	if (!ASSERT_OK(replay_flows_build(t, key, rf), "flows"))
		return false;
	replay_packets_resolve(pk, rf);
	return true;
}

/* The model's and the program's backend for every flow: how many differ. */
static long compare(struct replay_bpf *dp, __u32 m, const struct lb_backend *set,
		    size_t n, const struct replay_flows *rf,
		    const struct replay_packets *pk)
{
	struct lb_params p = { .table_size = m };
	int *model = fx_assign(LB_MAGLEV, m, 100, set, n, rf);
	int *bpf = calloc(rf->n, sizeof(*bpf));
	long differ = -1;
	size_t i;

	if (model && bpf && !replay_assign_bpf(dp, &p, set, n, rf, pk, bpf)) {
		differ = 0;
		for (i = 0; i < rf->n; i++)
			differ += model[i] != bpf[i];
	}
	free(model);
	free(bpf);
	return differ;
}

static bool have_root(void)
{
	if (test_have_root())
		return true;
	test_skip_env("needs root: loads the XDP program");
	return false;
}

static void generated_trace_flow_by_flow(void)
{
	const char *path = fx_path("trace.pcap");
	struct replay_packets pk;
	struct replay_flows rf;
	struct replay_bpf *dp;
	struct lb_backend *set;
	struct trace t;
	size_t n;

	if (!have_root())
		return;
	/* 600 server ports: three batches of the 256-key VIP map. */
	if (!ASSERT_OK(fx_gentrace("-n 8000 -s 11 --ports 600 -o %s", path),
		       "gentrace") ||
	    !load(1, &path, fx_key, &t, &rf, &pk) ||
	    !ASSERT_OK(replay_bpf_open(fx_key, &dp), "load the program"))
		return;
	printf("  %zu flows, %zu packets\n", rf.n, pk.n);
	set = fx_set(101);
	for (n = 10; n <= 100; n += 90) {
		ASSERT_EQ(compare(dp, 65537, set, n, &rf, &pk), 0, "N backends");
		ASSERT_EQ(compare(dp, 65537, set, n - 1, &rf, &pk), 0, "one left");
	}
	ASSERT_EQ(compare(dp, 65537, set, 11, &rf, &pk), 0, "one joined");
	set[0].weight = 3;
	set[1].weight = 0;
	set[2].weight = 2;
	ASSERT_EQ(compare(dp, 65537, set, 10, &rf, &pk), 0, "weights");
	ASSERT_EQ(compare(dp, 251, set, 10, &rf, &pk), 0, "M = 251");
	replay_bpf_close(dp);

	/* Another seed: the program hashes with the key in its config, and
	 * flows hashed with the old one now land elsewhere. */
	if (!ASSERT_OK(replay_bpf_open(other_key, &dp), "load again"))
		return;
	ASSERT_GT(compare(dp, 65537, set, 10, &rf, &pk), rf.n / 2,
		  "the comparison sees a wrong key");
	replay_flows_free(&rf);
	if (!ASSERT_OK(replay_flows_build(&t, other_key, &rf), "rehash"))
		return;
	replay_packets_resolve(&pk, &rf);
	ASSERT_EQ(compare(dp, 65537, set, 10, &rf, &pk), 0, "other key");
	replay_bpf_close(dp);
	replay_flows_free(&rf);
	replay_packets_free(&pk);
	trace_free(&t);
	free(set);
}

static void real_captures_flow_by_flow(void)
{
	const char *dir = getenv("XLB_PCAP_DIR") ?: "../shared/pcaps";
	char **paths = calloc(1024, sizeof(*paths));
	struct replay_packets pk;
	struct replay_flows rf;
	struct replay_bpf *dp;
	struct lb_backend *set;
	struct dirent *e;
	struct trace t;
	int n = 0;
	DIR *d;

	if (!have_root())
		return;
	d = opendir(dir);
	while (d && paths && (e = readdir(d)) && n < 1024) {
		if (strstr(e->d_name, ".pcap")) {
			paths[n] = malloc(PATH_MAX);
			snprintf(paths[n++], PATH_MAX, "%s/%s", dir, e->d_name);
		}
	}
	if (d)
		closedir(d);
	if (!n) {
		test_skip("no captures (set XLB_PCAP_DIR)");
		free(paths);
		return;
	}
	if (!load(n, (const char *const *)paths, fx_key, &t, &rf, &pk) ||
	    !ASSERT_OK(replay_bpf_open(fx_key, &dp), "load the program"))
		return;
	printf("  %d captures: %zu flows, %zu packets\n", n, rf.n, pk.n);
	set = fx_set(10);
	ASSERT_EQ(compare(dp, 65537, set, 10, &rf, &pk), 0, "10 backends");
	ASSERT_EQ(compare(dp, 65537, set, 9, &rf, &pk), 0, "one left");
	replay_bpf_close(dp);
	replay_flows_free(&rf);
	replay_packets_free(&pk);
	trace_free(&t);
	free(set);
	while (n--)
		free(paths[n]);
	free(paths);
}

TEST_MAIN(
	TEST(generated_trace_flow_by_flow),
	TEST(real_captures_flow_by_flow),
)
