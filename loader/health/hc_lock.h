/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * One checker per instance, whatever the network namespace: two checkers
 * of one instance would each write its backends' health, and one that
 * cannot reach the backends (run from another namespace) would take them
 * all down. The running checker holds an exclusive flock(2) on the
 * instance's pinned xlb_config, opened as a file: bpffs shares it across
 * network namespaces, the kernel drops it with the process (kill -9
 * included), and it is another inode than the pin directory, whose lock
 * every xlb command takes (instance.h), so neither waits on the other.
 */
#ifndef XLB_HEALTH_HC_LOCK_H
#define XLB_HEALTH_HC_LOCK_H

/*
 * Take the checker's lock of the instance in pin_dir into *fd (-1 when
 * the map cannot be opened as a file, a map without BTF: said once, and
 * the run goes on unguarded). Returns 0, or -EBUSY after p_err() naming
 * the running checker's pid.
 */
int xlb_hc_lock(const char *pin_dir, int *fd);
/* Release it (close). */
void xlb_hc_unlock(int fd);

#endif /* XLB_HEALTH_HC_LOCK_H */
