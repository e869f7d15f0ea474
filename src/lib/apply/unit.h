/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The systemd driver: topod's groups as transient units that systemd
 * creates and owns, where PID 1 is systemd and owns the cgroup tree (the
 * single-writer rule of systemd's cgroup delegation document). The
 * cgroupfs writer (cgroup.h) is the other driver; reconcile picks one.
 *
 * What it does, over the system bus (UnitOps: sd-bus in unit-bus.c, a
 * recording fake in the unit tests):
 *   - Groups. cgroup_root is a slice ("/topod.slice"); the plan names each
 *     group a slice below it (PlanInputs.slices: "topod-avx.slice", nested
 *     "topod-node0.slice/topod-node0-llc1.slice/…"). Each is started with
 *     StartTransientUnit, its AllowedCPUs / AllowedMemoryNodes (ay
 *     bitmasks: bit c of byte c/8) and CPUWeight (t) given as properties;
 *     when it exists already (an earlier pass), SetUnitProperties
 *     (runtime) sets them. Values are read back from cpuset.cpus.effective,
 *     cpuset.mems.effective and cpu.weight; a group whose files already say
 *     what the plan says costs no bus call. Every unit is journaled before
 *     it is started ("unit NAME").
 *   - exclusive = yes: systemd has no property for a cpuset partition, so
 *     topod writes cpuset.cpus.partition itself, and only in slices it
 *     created (journaled); the report says so.
 *   - A process in a service unit is never moved out of it: the unit gets
 *     its group's values as runtime properties (SetUnitProperties
 *     runtime=true). The original is the unit's value before (the
 *     property as systemctl show reports it), journaled with the value
 *     topod wrote ("unitprop"); restore writes the original back only while
 *     the unit still holds what topod wrote. A change by someone else wins:
 *     the entry is released: kept as "released VALUE" (journal.h), so that
 *     topod does not set that property of that unit again while it holds
 *     the value found, and restore leaves it as it is and forgets the
 *     entry. A start after a restore (a stop, the recovery after a crash)
 *     places the unit afresh, the value found then its original.
 *     One unit whose processes the plan puts in different groups follows
 *     the group where most of its planned threads are; on a tie, the group
 *     of the lowest tgid among the processes in the tied groups.
 *   - Other processes (session scopes, systemd-run --scope, started by
 *     hand) are moved by systemd alone: a transient scope
 *     "<group slice without .slice>-<tgid>.scope" in the group's slice,
 *     PIDs=[tgid], CollectMode=inactive-or-failed. The original cgroup is
 *     journaled as a "task" entry, as the cgroupfs writer does. On restore
 *     every process in such a scope (children forked after the move too)
 *     goes back to its original unit with AttachProcessesToUnit; where
 *     systemd refuses that (it attaches only to units with Delegate=yes:
 *     "Process migration not available on non-delegated units") or the
 *     unit is gone, to a new transient scope "topod-back-<tgid>.scope" in
 *     the original's slice. No cgroup.procs is ever written.
 *   - Restore stops topod's slices, children first, only once they hold no
 *     process (cgroup.events "populated 0"): stopping a slice stops every
 *     unit in it, and would kill what topod placed.
 *
 * Library code: nothing is printed; every item is reported, in the cgroup
 * writer's report (CgroupReport), with unit names as paths for items on
 * units (they do not start with '/'). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "apply/cgroup.h"
#include "apply/journal.h"
#include "base/macro.h"
#include "decide/plan.h"

typedef enum UnitProperty {
        UNIT_PROP_CPUS,   /* AllowedCPUs, ay */
        UNIT_PROP_MEMS,   /* AllowedMemoryNodes, ay */
        UNIT_PROP_WEIGHT, /* CPUWeight, t */
        _UNIT_PROP_MAX,
} UnitProperty;

const char *unit_property_name(UnitProperty p);

/* Values as text: a CPU or node list ("0-3,8") or a decimal weight; ""
 * is "not set" (an empty bitmask, a weight of UINT64_MAX). In a
 * UnitValues, NULL leaves a property out of the call. */
typedef struct UnitValues {
        const char *v[_UNIT_PROP_MAX];
} UnitValues;

/* systemd's methods, each one call; 0 or a negative errno (sd-bus maps
 * systemd's errors: NoSuchUnit -ENOENT, UnitExists -EEXIST, AccessDenied
 * -EACCES, InvalidArgs -EINVAL). last_error (may be NULL) is the text of
 * the last error systemd sent, for the report. */
typedef struct UnitOps {
        /* StartTransientUnit(name, "fail", [Description, properties]) of a slice */
        int (*start_slice)(void *userdata, const char *name, const UnitValues *v);
        /* StartTransientUnit of a scope: PIDs, Slice=, CollectMode=inactive-or-failed */
        int (*start_scope)(void *userdata, const char *name, const char *slice, const pid_t *pids, size_t n);
        /* SetUnitProperties(unit, runtime=true, properties) */
        int (*set_properties)(void *userdata, const char *unit, const UnitValues *v);
        /* The property as systemd reports it (text as above) */
        int (*get_property)(void *userdata, const char *unit, UnitProperty p, char **ret);
        /* AttachProcessesToUnit(unit, "", pids) */
        int (*attach)(void *userdata, const char *unit, const pid_t *pids, size_t n);
        /* StopUnit(unit, "fail") */
        int (*stop)(void *userdata, const char *unit);
        const char *(*last_error)(void *userdata);
        void *userdata;
} UnitOps;

/* The system bus, for the real ops (unit-bus.c). */
typedef struct UnitBus UnitBus;
int unit_bus_open(UnitBus **ret);
UnitBus *unit_bus_free(UnitBus *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(UnitBus *, unit_bus_free);
/* Ops over b (b must outlive them). */
UnitOps unit_bus_ops(UnitBus *b);
/* Calls made since unit_bus_open(): for the bench and status. */
uint64_t unit_bus_calls(const UnitBus *b);

typedef struct UnitEnv {
        const CgroupEnv *cgroup; /* root, mount, the writes of partitions; its pidref for identities */
        const UnitOps *ops;
        /* How long a read-back waits for systemd to realize what it was
         * asked (its jobs run after the call returns), in microseconds;
         * 0: read once. */
        uint64_t settle_usec;
} UnitEnv;

/* Pure: a CPU or node list as an ay bitmask and back. bytes_to_list of
 * n == 0 is "" (not set). -EINVAL for a bad list, -ENOMEM. */
int unit_list_to_bytes(const char *list, uint8_t **ret, size_t *ret_n);
int unit_bytes_to_list(const uint8_t *bytes, size_t n, char **ret);

/* Pure: the unit the plan's processes of one unit follow. weights[g] is
 * the number of planned threads of the unit in group g (n groups);
 * lowest_tgid[g] the lowest tgid among them (0: none). The group with the
 * most threads; a tie goes to the group of the lowest tgid among the tied
 * groups. -1 when no group has a thread. */
int unit_majority_group(const unsigned *weights, const pid_t *lowest_tgid, size_t n);

/* The tree as slices, then the processes: service units get properties,
 * the others are moved into scopes. Returns the number of failed items,
 * or a negative errno as cgroup_apply(). */
int unit_apply(const UnitEnv *env, const Plan *plan, Journal *journal, CgroupReport *report);

/* For the fast path, no bus call: is process tgid where group g of the
 * plan would have it already? In a scope of topod's in g's slice, or in a
 * service unit the journal says topod gave g's CPUs (a process forked or
 * exec'd in a unit topod placed). A read of its proc/PID/cgroup. */
bool unit_process_placed(const Root *root, const Plan *plan, int g, const Journal *journal, pid_t tgid);

/* At the pass, after unit_apply(): let go of what the plan no longer
 * places (its policy left force, a reload removed it, its processes no
 * longer match), while topod runs, as restore does. A service unit none of
 * whose processes the plan places gets each journaled property back to its
 * original while it still holds what topod wrote; one changed since is
 * left as it is (released); the entries are forgotten. A scope of topod's
 * whose process the plan no longer places (by any thread): every process
 * in it goes back where it came from (its original unit, or a new scope in
 * the original's slice), and systemd collects the empty scope
 * (CollectMode=inactive-or-failed); its entries are forgotten. Left alone:
 * a process changed since the scan (yield_changed()), the plan's own
 * slices. Where the cgroupfs driver keeps an unplanned process in an empty
 * group of a policy in force, a unit has no group to stay in: its
 * properties are its placement. Not committed. Returns the number of
 * failed items, or a negative errno. */
int unit_release_unplanned(const UnitEnv *env, const Plan *plan, Journal *journal, CgroupReport *report);

/* For explain: the service unit a planned process (tgid) is placed
 * through and the group the unit follows, by the rule above, from the
 * plan and every planned process's proc/PID/cgroup. -ENOENT when the plan
 * does not place the process or it is in no service unit (topod's own
 * scopes, a session scope, a process started by hand). */
typedef struct UnitThrough {
        char *unit;       /* "crunch.service" */
        int group;        /* the group the unit follows (index into Plan.groups) */
        unsigned threads; /* the unit's planned threads in that group */
        unsigned total;   /* the unit's planned threads in all */
        unsigned groups;  /* groups its planned threads are in: > 1, the majority decided */
} UnitThrough;
int unit_plan_through(const Root *root, const Plan *plan, pid_t tgid, UnitThrough *ret);

/* Put back what the journal's "unit", "unitprop" and "task" entries
 * record (see above), forgetting each once restored, released or moot.
 * Not committed. Returns the number of failed items or a negative errno. */
int unit_restore(const UnitEnv *env, Journal *journal, CgroupReport *report);
