/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the planner's files share, and nothing outside decide/plan*.c sees:
 * the builder that plan_build()'s steps hand on, and the helpers of each
 * part. plan.c holds the steps (which policy takes each task, where each
 * process goes, the groups kept, the cookie groups); plan-tree.c the
 * candidate domains and the cgroup tree made of them (paths, inner
 * directories, cpusets, exclusive partitions); plan-mode.c the kernel-wide
 * settings, the cgroup mode and the weights that emulate it; plan-print.c
 * the printed plan. All of it pure, as plan.h says. */

#include <stdbool.h>
#include <stddef.h>

#include "base/macro.h"
#include "decide/plan.h"

/* A candidate domain of one policy while tasks are being placed. */
typedef struct Domain {
        PlanDomainKind kind;
        int id;           /* LLC / node / package id, -1 */
        int node;         /* for the nested path: the node (os number) it lies in, -1 */
        Bitmap *cpus;     /* owned */
        unsigned capacity;
        unsigned load;
        int group;        /* Plan group, once used; -1 */
        bool split;       /* the part of an LLC that spans nodes */
} Domain;

/* A task some policy places. */
typedef struct Member {
        size_t task; /* index into in->tasks */
        int policy;
} Member;

/* The plan being built, and what its steps hand on. */
typedef struct Builder {
        const PlanInputs *in;
        Plan *plan;
        size_t groups_cap;
        Member *members;    /* sorted by policy, tgid, tid */
        size_t n_members;
        Domain **domains;   /* per policy: its candidate domains, made once (plan_domains_ensure()) */
        size_t *n_domains;
        size_t *cursor;     /* per policy: where pack stands in its domains */
} Builder;

/* A note in the plan: what could not be done as asked, and why (once). */
_printf_(2, 3) int plan_note(Plan *p, const char *fmt, ...);

/* plan-tree.c */
int plan_mems_of(const Topology *t, const Bitmap *cpus, Bitmap **ret);
int plan_take_exclusive(Plan *p, const Topology *t);
void plan_domains_free(Domain *d, size_t n);
int plan_pick_domain(const Domain *d, size_t n, unsigned need, PolicySpread spread, size_t *cursor);
int plan_group_for(Builder *b, int policy, Domain *dom);
int plan_domains_ensure(Plan *p, const Topology *t, const Policy *policy, Domain **domains, size_t *n_domains);

/* plan-mode.c: the features and the cgroup mode in force, the mode written
 * or emulated (or a note why neither); a policy group's cpu.weight. */
int plan_choose_kernel(Builder *b);

/* plan-llc.c: the kernel's cache-aware load balancing as the plan leaves it. */
int plan_choose_llc_balancing(Builder *b);
int plan_set_weight(Plan *p, const PlanInputs *in, PlanGroup *g);
