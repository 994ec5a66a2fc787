/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* What the fuzz targets share. */
#ifndef XLB_FUZZ_H
#define XLB_FUZZ_H

#include <stdio.h>
#include <stdlib.h>

/* A broken contract: say which, on stream, and abort, so that libFuzzer
 * keeps the input that broke it. */
#define FUZZ_CHECK(stream, cond, ...)					\
	do {								\
		if (!(cond)) {						\
			fprintf(stream, "%s:%d: %s: ", __FILE__,	\
				__LINE__, #cond);			\
			fprintf(stream, __VA_ARGS__);			\
			fputc('\n', stream);				\
			abort();					\
		}							\
	} while (0)

#endif /* XLB_FUZZ_H */
