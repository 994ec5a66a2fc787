// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Fault injection for the test build of xlb ($BUILD/tests/xlb-test): with
 * XLB_FAULT_AFTER_WRITES=N in the environment, xlb kills itself (SIGKILL)
 * right after its Nth map write. Tests use it to prove that a kill at any
 * point leaves an instance the next command repairs. The shipped xlb is
 * built without it (loader/instance/instance.c calls this only under
 * XLB_TEST_BUILD).
 */
#include <signal.h>
#include <stdlib.h>

void xlb_test_write_done(void);

void xlb_test_write_done(void)
{
	static long writes, limit = -1;
	const char *env;

	if (limit < 0) {
		env = getenv("XLB_FAULT_AFTER_WRITES");
		limit = env ? atol(env) : 0;
	}
	if (limit > 0 && ++writes == limit)
		raise(SIGKILL);
}
