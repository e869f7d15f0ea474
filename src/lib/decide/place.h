/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The fast path's decision: where one new process goes (it just exec'd, or
 * was just forked), taken from the LAST plan without a scan or a re-plan.
 * The next normal pass re-plans everything and corrects what this got wrong;
 * the aim is that in the common case it finds the process where the planner
 * wants it and reports "already".
 *
 * Pure: no I/O, no clock, no globals. The caller reads the process's facts
 * (comm first, more only when asked for) and applies the pick.
 *
 * Decisions, and how they mirror plan_build():
 *   - policy: the first in force, with [place], whose [match] takes the
 *     process — but a process that has never been sampled has no class. A
 *     policy whose [match] has no class restriction (match.classes == 0)
 *     may take it here. A policy that restricts the class and does NOT allow
 *     "other" cannot take it now (the planner sees an unsampled task as
 *     "other" and skips that policy too): the walk goes on past it; the
 *     classifier moves the task there later if its class comes out so. A
 *     policy that restricts the class and allows "other" would take it at
 *     the next pass: the fast path does not guess and leaves the process to
 *     that pass (PLACE_WAIT_CLASS).
 *   - facts: comm is always known; exe, cmdline, cgroup, user/uid and
 *     parent are read only when a policy that is still a candidate (its
 *     comm patterns, if any, took the process) matches on them
 *     (PLACE_NEED_FACTS tells which). Most execs on a machine match
 *     nothing and cost one read of comm. The policies whose comm
 *     patterns are all plain names are found by the comm (an index made
 *     with the state), the others walked in set order: a pick costs what
 *     the policies that could take the process cost, not the whole set.
 *   - group: one of the last plan's leaf groups of that policy. The planner
 *     places processes in tgid order; a new process has the highest tgid
 *     (outside pid wrap-around), so it is placed last, onto the loads of
 *     the plan. pack: the planner's cursor stands on the last domain it
 *     used — the last of the policy's groups in domain order — and the
 *     process goes there if it has room by the planner's rule (empty, or
 *     load + threads <= capacity: PUs, or whole cores when the policy gives
 *     cookies); with no room the planner would open the next domain, which
 *     has no group yet (PLACE_NEED_PASS), or, when every domain is in use,
 *     take the least loaded relative to its size. spread: the group with
 *     the fewest threads relative to its size, first in domain order on a
 *     tie (sizes are the planner's: PlanGroup.capacity) — but while some
 *     domain of the policy has no group, that empty domain is the planner's
 *     choice: PLACE_NEED_PASS. The loads are the plan's, kept up to date with the
 *     exits and new threads the events report (place_note_*()) and with
 *     the fast path's own placements, so that they stay what the next
 *     plan's scan will count. A policy without any group yet (its first
 *     process) is PLACE_NEED_PASS too: the tree below a new group (mkdir,
 *     cpuset, weight) is the normal pass's job. Placements made here count
 *     in the loads of the following picks (place_commit()).
 *   - cookie: policy cookie = process: a new cookie for the process; group:
 *     join the plan's cookie group of that policy through one of its
 *     members (when the plan has none yet, the policy's processes placed
 *     together share a new one); none: nothing. No cookies at all when
 *     plan->cookies_allowed is false.
 *   - kernel-wide settings: a policy with [match] and no [place] sets its
 *     [features] and cgroup_mode only while a task it matches is there. If
 *     the new process is the first such task, the pick says so (kernel):
 *     the caller runs a normal pass soon; the fast path changes nothing
 *     kernel-wide.
 *   - a process the last plan already places (same tgid and start time,
 *     when the start time is known) with the same policy is left as it is
 *     (PLACE_PLANNED): the normal pass checks it. So is one the fast path
 *     placed already for the same policy (its fork, then its exec, in two
 *     bursts), until its exit is noted. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/macro.h"
#include "decide/plan.h"
#include "decide/policy.h"
#include "observe/topology.h"

/* A set of facts of a process, one bit per [match] key. comm is always
 * known. */
#define PLACE_FACT(field) (1u << (field))
#define PLACE_FACT_COMM PLACE_FACT(POLICY_MATCH_COMM)
#define PLACE_FACTS_ALL ((1u << _POLICY_MATCH_FIELD_MAX) - 1u)

/* Members of a cookie group kept as sources to join from. */
#define PLACE_COOKIE_SOURCES_MAX 4u

typedef enum PlaceVerdict {
        PLACE_NONE,       /* no policy in force takes it: nothing to do */
        PLACE_NEED_FACTS, /* read the facts in `need` and ask again */
        PLACE_WAIT_CLASS, /* a policy ahead needs its class: left to the normal pass */
        PLACE_NEED_PASS,  /* its policy has no group for it yet: left to the normal pass */
        PLACE_PLANNED,    /* the last plan places it already, with this policy */
        PLACE_GROUP,      /* place it: group, cookie */
        _PLACE_VERDICT_MAX,
} PlaceVerdict;

typedef enum PlaceCookie {
        PLACE_COOKIE_KEEP, /* nothing */
        PLACE_COOKIE_NEW,  /* a new cookie of its own (cookie = process) */
        PLACE_COOKIE_JOIN, /* the policy's group cookie (cookie = group): through a member of the
                            * plan's cookie group; without one, the processes of the policy
                            * placed together share one new cookie */
        _PLACE_COOKIE_MAX,
} PlaceCookie;

/* A new process as the fast path sees it. */
typedef struct PlaceProcess {
        pid_t tgid;
        uint64_t start_time; /* of its main thread; 0: unknown (a process the plan has under its
                              * pid is then taken to be that one) */
        unsigned n_threads;  /* 1 right after exec or fork */
        PolicyTask match;    /* class ignored; only the facts in `have` are looked at */
        unsigned have;       /* PLACE_FACT() bits filled in match; comm always */
        bool unapplied;      /* the plan may have it, but its pass left it alone (changed
                              * since its scan began): not PLACE_PLANNED for that */
} PlaceProcess;

typedef struct PlacePick {
        PlaceVerdict verdict;
        unsigned need;    /* NEED_FACTS: the facts to read */
        int policy;       /* GROUP, PLANNED, NEED_PASS, WAIT_CLASS: the policy; else -1 */
        int group;        /* GROUP: index into Plan.groups; else -1 */
        PlaceCookie cookie;
        int cookie_group; /* JOIN: index into Plan.cookie_groups, -1 when the plan has none yet
                           * (place_cookie_sources() gives its members) */
        bool kernel;      /* whatever the verdict: a policy with [match] and no [place] that sets
                           * nothing in the plan takes it — kernel-wide settings may change,
                           * which is the normal pass's job: run one soon */
} PlacePick;

/* The last plan as the fast path reads it, with the loads of its groups
 * (the plan's, plus what the fast path placed since). It keeps pointers to
 * plan, policies and topology: they must outlive it, unchanged; in_force
 * is copied (which policies are active) when it is made. */
typedef struct PlaceState PlaceState;

int place_state_new(const Plan *plan, const PolicySet *policies, const bool *in_force, const Scope *scope,
                    const Topology *topology, PlaceState **ret);
PlaceState *place_state_free(PlaceState *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(PlaceState *, place_state_free);

const Plan *place_state_plan(const PlaceState *s);

/* The facts some in-force policy with [place] matches on (PLACE_FACT()
 * bits, comm always): a reader that wants everything up front reads these. */
unsigned place_state_facts(const PlaceState *s);

/* Decide for one process. */
void place_pick(const PlaceState *s, const PlaceProcess *proc, PlacePick *ret);

/* The placement is being made: the process's threads count in the group's
 * load from now on (it moves out of the group the plan had it in, if any).
 * Call place_note_exit() to take it back when the placement came to
 * nothing (the process vanished). */
void place_commit(PlaceState *s, const PlacePick *pick, pid_t tgid, unsigned n_threads);

/* Keep the loads as the next plan will count them (threads alive at its
 * scan): a thread of a process the plan or the fast path placed exited
 * (tid == tgid: the whole process is taken out), or such a process made a
 * new thread. Unknown processes are ignored. */
void place_note_exit(PlaceState *s, pid_t tgid, pid_t tid);
void place_note_thread(PlaceState *s, pid_t tgid);

/* A thread to take a group cookie from. */
typedef struct PlaceSource {
        pid_t tid;
        uint64_t start_time;
} PlaceSource;

/* For a JOIN pick: members of the policy's cookie group to take the cookie
 * from, best first (the plan's, main threads first, then the last one the
 * fast path gave the cookie to). Fills at most max (PLACE_COOKIE_SOURCES_MAX
 * + 1 is all there can be); returns how many. */
size_t place_cookie_sources(const PlaceState *s, const PlacePick *pick, PlaceSource *ret, size_t max);

/* A process of the policy got its group cookie on the fast path: a source
 * for the next JOIN (useful while the plan has no cookie group for it). */
void place_note_cookie(PlaceState *s, int policy, pid_t tid, uint64_t start_time);
/* Those last processes, one per policy (tid 0: none), to carry to the
 * state of the next plan of the same policy set: ret holds the policies'
 * count. */
void place_fresh_sources(const PlaceState *s, PlaceSource *ret);
void place_set_fresh_sources(PlaceState *s, const PlaceSource *src, size_t n);

/* A group's load as the next pick sees it, in threads (tests, explain). */
unsigned place_state_load(const PlaceState *s, int group);

const char *place_verdict_to_string(PlaceVerdict v);
const char *place_cookie_to_string(PlaceCookie c);
