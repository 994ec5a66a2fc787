// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * binomial-band N P [ALPHA]: the counts a backend holding a share P of the
 * table may receive out of N independent flows, as "LO HI": the central
 * interval of the binomial distribution B(N, P) that holds with
 * probability at least 1 - ALPHA (default 1e-6), so P(X < LO) <= ALPHA/2
 * and P(X > HI) <= ALPHA/2. The end-to-end tests hold per-backend counts
 * to it: with a keyed hash, flows land on table slots like independent
 * draws, so a count outside the band points to a fault, not to bad luck
 * (a false alarm once in a million checks).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static double log_pmf(long n, long k, double p)
{
	if (p <= 0)
		return k ? -INFINITY : 0;
	if (p >= 1)
		return k == n ? 0 : -INFINITY;
	return lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0) +
	       k * log(p) + (n - k) * log1p(-p);
}

int main(int argc, char **argv)
{
	double p, alpha = 1e-6, below = 0, above = 0;
	long n, lo, hi;
	char *end;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: binomial-band N P [ALPHA]\n");
		return 2;
	}
	n = strtol(argv[1], &end, 10);
	if (*end || n < 0) {
		fprintf(stderr, "binomial-band: bad N '%s'\n", argv[1]);
		return 2;
	}
	p = strtod(argv[2], &end);
	if (*end || p < 0 || p > 1) {
		fprintf(stderr, "binomial-band: bad P '%s' (0..1)\n", argv[2]);
		return 2;
	}
	if (argc == 4) {
		alpha = strtod(argv[3], &end);
		if (*end || alpha <= 0 || alpha >= 1) {
			fprintf(stderr, "binomial-band: bad ALPHA '%s'\n", argv[3]);
			return 2;
		}
	}
	/* Walk in from each tail while the mass left outside stays within
	 * alpha/2. */
	for (lo = 0; lo < n && below + exp(log_pmf(n, lo, p)) <= alpha / 2; lo++)
		below += exp(log_pmf(n, lo, p));
	for (hi = n; hi > lo && above + exp(log_pmf(n, hi, p)) <= alpha / 2; hi--)
		above += exp(log_pmf(n, hi, p));
	printf("%ld %ld\n", lo, hi);
	return 0;
}
