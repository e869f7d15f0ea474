/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* struct sched_attr as the kernel has it (linux/sched/types.h; glibc
 * before 2.41 declares none), for sched_getattr()/sched_setattr() through
 * syscall(). A fair (SCHED_OTHER) thread's runtime is its scheduler slice
 * request on 6.12 and later (EEVDF): 0 when it has none, and always 0
 * before. Header only: the bench's reference placer and the guest's
 * workload use it without the library. */

#include <stdint.h>

typedef struct SchedAttr {
        uint32_t size, policy;
        uint64_t flags;
        int32_t nice;
        uint32_t priority;
        uint64_t runtime, deadline, period;
        uint32_t util_min, util_max;
} SchedAttr;
