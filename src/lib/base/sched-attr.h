/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* struct sched_attr as the kernel has it (linux/sched/types.h; glibc
 * before 2.41 declares none), for sched_getattr()/sched_setattr() through
 * syscall(). A fair (SCHED_OTHER) thread's runtime is its scheduler slice
 * request on 6.12 and later (EEVDF): 0 when it has none, and always 0
 * before. Header only: the bench's reference placer and the guest's
 * workload use it without the library. */

#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct SchedAttr {
        uint32_t size, policy;
        uint64_t flags;
        int32_t nice;
        uint32_t priority;
        uint64_t runtime, deadline, period;
        uint32_t util_min, util_max;
} SchedAttr;

/* Ask the kernel for a slice of ns for the calling thread, where it runs
 * SCHED_OTHER or SCHED_BATCH (a real-time policy is left alone). The
 * slice it kept, read back, ns: 0 before 6.12 (none kept), for another
 * policy, or on an error. */
static inline uint64_t sched_attr_ask_slice(uint64_t ns) {
        SchedAttr a = { 0 };

        if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) < 0 || (a.policy != SCHED_OTHER && a.policy != SCHED_BATCH))
                return 0;
        a.size = sizeof(a);
        a.runtime = ns;
        if (syscall(SYS_sched_setattr, 0, &a, 0) < 0)
                return 0;
        a = (SchedAttr) { 0 };
        if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) < 0)
                return 0;
        return a.runtime;
}
