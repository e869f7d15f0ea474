/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The planner: from the machine, the policies in force and the classified
 * tasks to the desired state — the cgroup tree under topod's root with its
 * cpusets and weights, where each task goes, which tasks share a
 * core-scheduling cookie, and the kernel-wide settings.
 *
 * Pure: no I/O, no clock, no globals. The same inputs give the same Plan,
 * and the same printed plan byte for byte.
 *
 * Decisions (see topod.policy(5)):
 *   - hierarchy: nested is <node>/<llc>/<group> (node/<group> for node
 *     domains, <group> for package, all and explicit ones); flat is one
 *     level, <group>-llcN / <group>-nodeN / <group>-packageN / <group>.
 *     auto is nested where the kernel has sched/cgroup_mode (the flattened
 *     pick makes depth cheap), flat where it does not (weight is diluted at
 *     every level).
 *   - domains: the [place] cpus = llc | node | package give one candidate
 *     domain per LLC / node / package; all and an explicit list give one.
 *     Threads of one process stay in one domain. pack fills domains in id
 *     order up to their capacity (PUs, or cores when the policy gives
 *     cookies while cookies are given: a cookie'd group owns whole cores)
 *     before opening the next; spread puts each process where the fewest
 *     threads already are relative to that capacity. A domain's capacity
 *     is counted before exclusive groups take CPUs from it, and kept in
 *     its PlanGroup so that the fast path (place.h) counts alike.
 *     Processes are taken in tgid order.
 *   - weight: with sched/cgroup_mode the policy's weight is written as is
 *     and the mode is set; without it the mode is emulated by scaling
 *     cpu.weight (1..10000): max ×CPUs of the group, concur ×min(measured
 *     concurrency, CPUs), tasks ×runnable threads, smp as is; up cannot be
 *     emulated and is reported.
 *   - cookies: cookie = group gives one cookie to all the policy's tasks,
 *     process one per process, none none; no cookies at all without core
 *     scheduling, with SMT off or while a sched_ext scheduler runs
 *     (reported). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "base/bitmap.h"
#include "base/json.h"
#include "base/macro.h"
#include "decide/config.h"
#include "decide/policy.h"
#include "observe/kernelcaps.h"
#include "observe/topology.h"

#define PLAN_WEIGHT_MIN 1u
#define PLAN_WEIGHT_MAX 10000u

/* One task as the planner sees it: its identity, its class and the facts
 * [match] looks at. */
typedef struct PlanTaskInput {
        pid_t tid, tgid;
        uint64_t start_time;
        bool kernel_thread;
        bool runnable;    /* state R at the last scan: for the tasks mode */
        PolicyTask match; /* class, comm, exe, … */
} PlanTaskInput;

/* The measured concurrency of a group (Δ cpu.stat usage_usec / Δ wall),
 * in thousandths of a CPU, for the emulated concur mode. */
typedef struct PlanUsage {
        const char *path;
        unsigned concurrency_permille;
} PlanUsage;

struct Plan;
typedef struct PlanInputs {
        const Topology *topology;
        const KernelCaps *caps;
        const Config *config;
        const PolicySet *policies;
        const bool *in_force; /* per policy, in set order */
        const PlanTaskInput *tasks;
        size_t n_tasks;
        const PlanUsage *usage;
        size_t n_usage;
        const struct Plan *keep;     /* the plan in force, same policy set: its groups stay even when empty; or NULL */
        /* The groups are systemd slice units (the systemd driver): each
         * level of a group's path is named "<root>-<part>-….slice" after
         * the slice of cgroup_root (plan naming follows the driver). */
        bool slices;
} PlanInputs;

typedef enum PlanDomainKind {
        PLAN_DOMAIN_LLC,
        PLAN_DOMAIN_NODE,
        PLAN_DOMAIN_PACKAGE,
        PLAN_DOMAIN_ALL,
        PLAN_DOMAIN_EXPLICIT,
        PLAN_DOMAIN_INNER, /* an intermediate directory of the nested tree */
        _PLAN_DOMAIN_MAX,
} PlanDomainKind;

typedef struct PlanGroup {
        char *path;       /* below cgroup_root, "node0/llc1/avx"; with slices
                           * "topod-node0.slice/topod-node0-llc1.slice/topod-node0-llc1-avx.slice" */
        int policy;       /* -1 for intermediate directories */
        PlanDomainKind kind;
        int domain;       /* LLC / node / package id; -1 */
        Bitmap *cpus;
        Bitmap *mems;     /* NUMA node os numbers */
        bool exclusive;   /* cpuset.cpus.partition = root */
        unsigned weight;  /* cpu.weight to write */
        char *weight_why; /* how the weight was reached */
        unsigned n_tasks;
        unsigned n_runnable;
        unsigned capacity; /* a policy group's domain's, as pack and spread count it (see above) */
} PlanGroup;

#define PLAN_COMM_MAX 64 /* as observe's (the kernel's is 16) */

typedef struct PlanTask {
        pid_t tid, tgid;
        char comm[PLAN_COMM_MAX]; /* the thread's, as scanned (may hold control characters) */
        uint64_t start_time;
        PolicyClass class;
        int policy;       /* -1: no policy places it */
        int group;        /* index into Plan.groups, -1 */
        int cookie_group; /* index into Plan.cookie_groups, -1 */
} PlanTask;

typedef struct PlanCookieGroup {
        int policy;
        pid_t tgid;       /* cookie = process: its process; else 0 */
        unsigned n_tasks;
} PlanCookieGroup;

/* The kernel's own cache-aware load balancing (7.3's sched/llc_balancing/,
 * CONFIG_SCHED_CACHE) while the plan is in force: it gathers a process's
 * threads on one LLC of the CPUs it may use, the ground cpus = llc covers
 * (plan-llc.c). */
typedef struct PlanLlcBalancing {
        bool present; /* the kernel has it */
        bool on;      /* as the plan leaves it: a policy's value, else the kernel's */
        int policy;   /* the policy in force that sets it, -1: the kernel's own value */
} PlanLlcBalancing;

typedef struct Plan {
        ConfigHierarchy hierarchy; /* flat or nested, never auto */
        bool slices;               /* the groups are slice units (PlanInputs.slices) */
        char *cgroup_root;
        const char *mode;          /* the cgroup_mode in force (NULL: keep) */
        bool mode_written;         /* the kernel has sched/cgroup_mode */
        bool mode_emulated;        /* else: weights scaled to stand in for it */
        PolicyKernelPlan *kernel;  /* features and the mode, with conflicts */
        PlanLlcBalancing llc_balancing;
        PlanGroup *groups;         /* sorted by path; parents before children */
        size_t n_groups;
        PlanTask *tasks;           /* managed tasks only, sorted by tid */
        size_t n_tasks;
        PlanCookieGroup *cookie_groups;
        size_t n_cookie_groups;
        bool cookies_allowed;
        char **notes;              /* what could not be done as asked, and why */
} Plan;

int plan_build(const PlanInputs *in, Plan **ret);
Plan *plan_free(Plan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Plan *, plan_free);

const PlanTask *plan_find_task(const Plan *p, pid_t tid);

/* Pure: a group's path as slices below the slice root_slice ("topod.slice"):
 * "node0/llc1/avx" → "topod-node0.slice/topod-node0-llc1.slice/
 * topod-node0-llc1-avx.slice", each part escaped (unit_name_escape_part():
 * "avx-llc0" → "avx\x2dllc0"). -EINVAL when root_slice is not a slice name
 * or a name would be too long; -ENOMEM. */
int plan_slice_path(const char *root_slice, const char *path, char **ret);

/* How many candidate domains a policy's [place] cpus make on t. */
int plan_count_domains(const Topology *t, const Policy *pol, size_t *ret);
const char *plan_domain_kind_to_string(PlanDomainKind k);

/* Which of the two decides the LLC a group's processes run on, in one
 * line: topod, for a group it pins to one LLC (the kernel's aggregation
 * then only works within it), or the kernel's cache-aware load balancing,
 * on, for a wider group. NULL in *ret when the kernel has none. -ENOMEM. */
int plan_llc_decider(const Plan *p, const PlanGroup *g, const PolicySet *policies, char **ret);

int plan_print_text(FILE *f, const Plan *p, const PolicySet *policies);
int plan_print_json(Json *j, const Plan *p, const PolicySet *policies);
