/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Compiler helpers of the datapath, defined once for bpf/ and for the
 * headers both sides compile (flow_hash.h).
 */
#ifndef XLB_COMPILER_H
#define XLB_COMPILER_H

/* The verifier sees one function: helpers are inlined, never called (the
 * few BPF-to-BPF calls are marked as such where they are defined). */
#define XLB_INLINE static inline __attribute__((always_inline))

/* One access of x, neither merged with others nor torn. */
#define XLB_READ_ONCE(x)	(*(volatile typeof(x) *)&(x))
#define XLB_WRITE_ONCE(x, v)	(*(volatile typeof(x) *)&(x) = (v))
/* Keeps the compiler from moving memory accesses across it; orders
 * nothing on the CPU. */
#define xlb_barrier()		asm volatile("" ::: "memory")

#endif /* XLB_COMPILER_H */
