/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topoctl explain: why a process's threads are where they are. One answer
 * per thread, from what the daemon holds (the last scan, the classifier,
 * the policies in force, the plan in force) and what the kernel says now
 * (the cgroup the thread is in, its cpuset.cpus.effective, its cookie):
 *
 *   - the policy that placed it (name, file:line) and the policies that
 *     also matched but did not place it, each with why: an earlier policy
 *     took it (priority, or file-name order at equal priority), [when]
 *     does not hold, disabled, no [place], or a class it does not have;
 *   - its class and the evidence (figures against thresholds);
 *   - its cookie group, how many threads share it, the kernel's cookie;
 *   - its cgroup, the cpus it may run on and which LLCs / nodes those are;
 *   - under the systemd driver, "placed through unit X" for a process of a
 *     service unit, and, where the unit's planned threads are in several
 *     groups, the group the unit followed (most of its planned threads);
 *   - the features and cgroup_mode in force and the policy that set each;
 *   - or "not managed because …".
 *
 * Reads only (through the Root); writes nothing. */

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "decide/plan.h"
#include "pipeline/pipeline.h"

/* Threads listed for one process at most; the rest are counted. */
#define EXPLAIN_THREADS_MAX 256u

typedef struct ExplainContext {
        const Pipeline *p;
        const Plan *plan; /* in force; NULL before the first pass */
        const Journal *origins; /* where moved processes came from (pipeline/origin.h); NULL: none */
        bool paused;      /* topoctl reset: nothing is applied until a reload */
        /* The systemd driver places a service unit's processes through the
         * unit's properties (apply/unit.h): explain says which unit, and
         * which group it followed. */
        bool unit_driver;
        /* PR_SCHED_CORE_GET of a thread; NULL: not asked */
        int (*get_cookie)(pid_t tid, uint64_t *ret_cookie, void *userdata);
        void *userdata;
        /* Who asks (SO_PEERCRED): a process's exe path is told to root and
         * to a caller of the process's own real uid only, as the kernel's
         * readlink of /proc/PID/exe would (other users' are withheld). */
        uid_t caller_uid;
} ExplainContext;

/* -ESRCH when pid is neither a process nor a thread the last scan saw and
 * it does not exist now either. */
int explain_write(const ExplainContext *x, pid_t pid, bool json, FILE *f);
