/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What `xlb lookup` reads back from its run of the datapath
 * (bpf/lookup.bpf.c, loader/inspect/lookup.h): the value xlb_process()
 * returned and the VIP and backend it named, as xlb_account() takes them.
 */
#ifndef XLB_LOOKUP_RESULT_H
#define XLB_LOOKUP_RESULT_H

#include <linux/types.h>
#include "xlb.h"

struct xlb_lookup_result {
	__s32 ret;		/* an XDP verdict, or -reason (enum xlb_stat) */
	__u32 vip_id;		/* 0: none named */
	__u32 backend_id;	/* 0: none named */
	__u32 runs;		/* runs of the program so far */
};
XLB_STATIC_ASSERT(sizeof(struct xlb_lookup_result) == 16, "xlb_lookup_result layout");

#endif /* XLB_LOOKUP_RESULT_H */
