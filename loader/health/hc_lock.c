// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The checker's lock of its instance (hc_lock.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "hc_lock.h"
#include "report.h"
#include "xlb.h"

/*
 * The pid holding a flock on fd's inode, as /proc/locks names it
 * ("1: FLOCK  ADVISORY  WRITE 1234 00:1e:5678 0 EOF"), or 0 when it
 * cannot be told (no /proc, the holder gone meanwhile).
 */
static long holder_pid(int fd)
{
	unsigned int maj, min;
	unsigned long ino;
	char line[256];
	struct stat st;
	long pid = 0, p;
	FILE *f;

	if (fstat(fd, &st))
		return 0;
	f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	while (!pid && fgets(line, sizeof(line), f))
		if (strstr(line, " FLOCK ") &&
		    sscanf(strstr(line, " FLOCK "),
			   " FLOCK %*s %*s %ld %x:%x:%lu", &p, &maj, &min,
			   &ino) == 4 &&
		    maj == major(st.st_dev) && min == minor(st.st_dev) &&
		    ino == st.st_ino)
			pid = p;
	fclose(f);
	return pid;
}

int xlb_hc_lock(const char *pin_dir, int *fd)
{
	char path[PATH_MAX];
	long pid;
	int err;

	snprintf(path, sizeof(path), "%s/%s", pin_dir, XLB_MAP_CONFIG);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		p_info("xlb: cannot open %s as a file (%s): a second checker of this instance would not be refused",
		       path, strerror(errno));
		return 0;
	}
	if (!flock(*fd, LOCK_EX | LOCK_NB))
		return 0;
	err = errno == EWOULDBLOCK ? -EBUSY : -errno;
	if (err == -EBUSY) {
		pid = holder_pid(*fd);
		if (pid)
			p_err("another `xlb health run` (pid %ld) checks the instance in %s: one checker per instance, whatever the network namespace; stop it first",
			      pid, pin_dir);
		else
			p_err("another `xlb health run` checks the instance in %s: one checker per instance, whatever the network namespace; stop it first",
			      pin_dir);
	} else {
		p_err("cannot lock %s: %s", path, strerror(-err));
	}
	close(*fd);
	*fd = -1;
	return err;
}

void xlb_hc_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}
