// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * How long building a table takes, on one core, for the table sizes and
 * backend counts xlb is meant for, and what a lookup costs in each
 * algorithm. Prints a markdown report with the machine's description; the
 * figures are measured, never asserted.
 *
 *   bench_table [--quick]    --quick: one run and few lookups (a smoke run)
 */
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "lb_fixtures.h"

#define TARGET_MS	1.0	/* M = 65537, N = 1000 */

static const __u32 sizes[] = { 65537, 655373 };
static const size_t counts[] = { 10, 100, 1000 };

/* CPU time of this thread: the cost on one core, not counting the time
 * other processes on a shared machine hold it. */
static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void describe_machine(void)
{
	char line[256], model[256] = "unknown";
	struct utsname u;
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
			snprintf(model, sizeof(model), "%s", strchr(line, ':') + 2);
			model[strcspn(model, "\n")] = '\0';
			break;
		}
	}
	if (f)
		fclose(f);
	uname(&u);
	printf("Machine: %s, %ld cores online, Linux %s (%s), compiler %s; "
	       "one thread pinned to one core.\n\n", model,
	       sysconf(_SC_NPROCESSORS_ONLN), u.release, u.machine, __VERSION__);
}

typedef int (*build_fn)(const struct lb_backend *b, size_t n, __u32 m,
			__u32 *table);

/* Median wall time of a table build over runs. */
static double build_ms(build_fn build, const struct lb_backend *b, size_t n,
		       __u32 m, int runs)
{
	__u32 *table = malloc(m * sizeof(*table));
	double t[31], start;
	int r;

	for (r = 0; r < runs; r++) {
		start = now_ms();
		if (build(b, n, m, table)) {
			fprintf(stderr, "bench_table: a build failed\n");
			exit(EXIT_FAILURE);
		}
		t[r] = now_ms() - start;
	}
	free(table);
	return median(t, runs);
}

static struct lb *build_or_die(enum lb_algo_kind kind,
			       const struct lb_backend *b, size_t n,
			       const struct lb_params *p, double *ms)
{
	double start = now_ms();
	struct lb *lb;

	if (lb_build(kind, b, n, p, &lb)) {
		fprintf(stderr, "bench_table: %s build failed\n", lb_algo_name(kind));
		exit(EXIT_FAILURE);
	}
	*ms = now_ms() - start;
	return lb;
}

/* Mean nanoseconds per lb_lookup over pseudo-random flow hashes; the sum
 * of the answers keeps the loop from being optimised away. */
static double lookup_ns(const struct lb *lb, long lookups)
{
	__u64 seed = 99, sum = 0;
	double start = now_ms();
	long i;

	for (i = 0; i < lookups; i++)
		sum += lb_lookup(lb, fx_next(&seed));
	if (sum == (__u64)-1)
		printf("(unlikely sum)\n");
	return (now_ms() - start) * 1e6 / lookups;
}

int main(int argc, char **argv)
{
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	int runs = quick ? 1 : 11;
	long lookups = quick ? 10000 : 2000000;
	struct lb_params p = { .table_size = 65537, .vnodes = 100 };
	double target = 0, ours, plain, ms, maglev_ns = 0, ns;
	struct lb_backend *b;
	__u64 seed = 1;
	cpu_set_t cpu;
	size_t c, i;
	struct lb *lb;
	int s, k, w;

	CPU_ZERO(&cpu);
	CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &cpu);
	sched_setaffinity(0, sizeof(cpu), &cpu);
	printf("## Table build and lookup (bench/bench_table.c%s)\n\n",
	       quick ? ", --quick" : "");
	describe_machine();

	printf("Maglev build time (thread CPU time), median of %d runs (ms): xlb's "
	       "maglev_build against the paper's plain walk (same quotas, same "
	       "table; tests/lb_fixtures.h) in the same run. Unequal weights: "
	       "1..100, pseudo-random.\n\n", runs);
	printf("| M | N | weights | maglev_build | plain walk | ratio |\n");
	printf("| ---: | ---: | --- | ---: | ---: | ---: |\n");
	for (s = 0; s < 2; s++) {
		for (c = 0; c < 3; c++) {
			b = fx_backends(counts[c], 1);
			for (w = 0; w < 2; w++) {
				for (i = 0; w && i < counts[c]; i++)
					b[i].weight = 1 + fx_next(&seed) % 100;
				ours = build_ms(maglev_build, b, counts[c], sizes[s], runs);
				plain = build_ms(fx_maglev_plain, b, counts[c], sizes[s], runs);
				printf("| %u | %zu | %s | %.3f | %.3f | %.2f |\n",
				       sizes[s], counts[c], w ? "unequal" : "equal",
				       ours, plain, ours / plain);
				if (sizes[s] == 65537 && counts[c] == 1000 && !w)
					target = ours;
			}
			free(b);
		}
	}
	printf("\nM = 65537, N = 1000, equal weights: %.3f ms, %.2f x the "
	       "%.0f ms target (below 1 meets it).\n\n", target,
	       target / TARGET_MS, TARGET_MS);

	printf("Build (one run) and lookup (mean of %ld pseudo-random flow "
	       "hashes through lb_lookup; rendezvous fewer) per algorithm, "
	       "M = 65537, equal weights, ring V = 100; the ratio is the lookup "
	       "time against Maglev's with the same N.\n\n", lookups);
	printf("| algorithm | N | build (ms) | lookup (ns) | lookup vs maglev |\n");
	printf("| --- | ---: | ---: | ---: | ---: |\n");
	for (c = 0; c < 3; c++) {
		for (k = 0; k < LB__MAX; k++) {
			/* Rendezvous hashes every backend per lookup. */
			long n_lookups = k == LB_RENDEZVOUS ?
					 lookups / (long)counts[c] + 1 : lookups;

			b = fx_backends(counts[c], 1);
			lb = build_or_die(k, b, counts[c], &p, &ms);
			ns = lookup_ns(lb, n_lookups);
			if (k == LB_MAGLEV)
				maglev_ns = ns;
			printf("| %s | %zu | %.3f | %.1f | %.1f |\n", lb_algo_name(k),
			       counts[c], ms, ns, ns / maglev_ns);
			lb_free(lb);
			free(b);
		}
	}
	printf("\n(lb_build of ring, rendezvous, jump and modulo includes "
	       "finding the prime step of their sample points.)\n");
	return 0;
}
