/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The median of a benchmark's runs (sorts v in place). */
#ifndef XLB_BENCH_MEDIAN_H
#define XLB_BENCH_MEDIAN_H

#include <stdlib.h>

static inline int median_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static inline double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), median_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif /* XLB_BENCH_MEDIAN_H */
