/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The planner's kernel-wide part: the features and cgroup mode in force
 * (a policy without [place] only while a task it matches is there), whether
 * the mode is written or emulated, and each group's cpu.weight, scaled to
 * stand in for the mode where the kernel has no sched/cgroup_mode. Its own
 * file: none of it depends on where the tasks go. */
#include "plan-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static unsigned usage_of(const PlanInputs *in, const char *path, bool *ret_known) {
        for (size_t i = 0; i < in->n_usage; i++)
                if (in->usage[i].path && streq(in->usage[i].path, path)) {
                        *ret_known = true;
                        return in->usage[i].concurrency_permille;
                }
        *ret_known = false;
        return 1000;
}

int plan_set_weight(Plan *p, const PlanInputs *in, PlanGroup *g) {
        const Policy *pol = in->policies->policies[g->policy];
        unsigned base = pol->place.weight ? pol->place.weight : POLICY_WEIGHT_DEFAULT, ncpus = bitmap_count(g->cpus);
        uint64_t w = base;
        const char *mode = p->mode;
        int k = 0;

        if (!mode)
                k = asprintf(&g->weight_why, "policy weight %u", base);
        else if (p->mode_written)
                k = asprintf(&g->weight_why, "policy weight %u (the kernel applies cgroup_mode %s)", base, mode);
        else if (!p->mode_emulated)
                /* A kernel with modes, not this one: nothing to emulate
                 * either (the plan's note says it is not set). */
                k = asprintf(&g->weight_why, "policy weight %u (cgroup_mode %s not among the kernel's: not set)", base,
                             mode);
        else if (streq(mode, "max")) {
                w = (uint64_t) base * MAX(ncpus, 1u);
                k = asprintf(&g->weight_why, "max emulated: %u x %u CPUs", base, ncpus);
        } else if (streq(mode, "concur")) {
                bool known;
                unsigned conc = usage_of(in, g->path, &known);
                unsigned capped = MIN(conc, ncpus * 1000u);
                unsigned factor = MAX((capped + 500u) / 1000u, 1u);

                w = (uint64_t) base * factor;
                k = known ? asprintf(&g->weight_why, "concur emulated: %u x min(concurrency %u.%03u, %u CPUs) = %u x %u", base,
                                     conc / 1000, conc % 1000, ncpus, base, factor)
                          : asprintf(&g->weight_why, "concur emulated: %u x 1 (concurrency not measured yet)", base);
        } else if (streq(mode, "tasks")) {
                w = (uint64_t) base * MAX(g->n_runnable, 1u);
                k = asprintf(&g->weight_why, "tasks emulated: %u x %u runnable threads", base, MAX(g->n_runnable, 1u));
        } else if (streq(mode, "smp"))
                k = asprintf(&g->weight_why, "smp emulated: policy weight %u as is", base);
        else if (streq(mode, "up")) {
                k = asprintf(&g->weight_why, "policy weight %u (up cannot be emulated)", base);
                if (k >= 0)
                        k = plan_note(p, "cgroup_mode up cannot be emulated without the kernel's sched/cgroup_mode: weights kept as "
                                    "written");
        } else {
                k = asprintf(&g->weight_why, "policy weight %u (cgroup_mode %s unknown: not emulated)", base, mode);
        }
        if (k < 0)
                return -ENOMEM;
        if (w > PLAN_WEIGHT_MAX) {
                char *s;

                if (asprintf(&s, "%s, capped at %u", g->weight_why, PLAN_WEIGHT_MAX) < 0)
                        return -ENOMEM;
                free(g->weight_why);
                g->weight_why = s;
                w = PLAN_WEIGHT_MAX;
        }
        g->weight = (unsigned) MAX(w, (uint64_t) PLAN_WEIGHT_MIN);
        return 0;
}
/* Kernel-wide settings and the mode. A policy with [match] but no [place]
 * sets them only while a task it matches is there. */
static int resolve_kernel(Builder *b) {
        const PlanInputs *in = b->in;
        const PolicySet *ps = in->policies;
        _cleanup_free_ bool *kernel_in_force = calloc(MAX(ps->n, (size_t) 1), sizeof(bool));
        _cleanup_free_ bool *waiting = calloc(MAX(ps->n, (size_t) 1), sizeof(bool));
        _cleanup_(policy_index_freep) PolicyIndex *x = NULL;
        size_t n_waiting = 0;
        int k;

        if (!kernel_in_force || !waiting)
                return -ENOMEM;
        for (size_t i = 0; i < ps->n; i++) {
                const Policy *pol = ps->policies[i];

                kernel_in_force[i] = in->in_force[i];
                waiting[i] = kernel_in_force[i] && pol->has_match && !pol->place.present;
                if (waiting[i])
                        kernel_in_force[i] = false;
                n_waiting += waiting[i];
        }
        /* Which of them a task matches: each task against the ones
         * that could take it (by its comm), not each of them
         * against every task. */
        if (n_waiting > 0 && (k = policy_index_new(ps, waiting, &x)) < 0)
                return k;
        for (size_t t_ = 0; t_ < in->n_tasks && n_waiting > 0; t_++) {
                const PolicyTask *task = &in->tasks[t_].match;
                size_t c;

                if (in->tasks[t_].kernel_thread)
                        continue;
                for (PolicyWalk w = policy_index_walk(x, task->comm ?: ""); policy_walk_next(&w, &c);)
                        if (!kernel_in_force[c] && policy_takes(ps->policies[c], &in->config->scope, task)) {
                                kernel_in_force[c] = true;
                                n_waiting--;
                        }
        }
        return policy_set_resolve_kernel(ps, kernel_in_force, &b->plan->kernel);
}

int plan_choose_kernel(Builder *b) {
        const KernelCaps *caps = b->in->caps;
        Plan *p = b->plan;
        int k;

        if ((k = resolve_kernel(b)) < 0)
                return k;
        p->mode = p->kernel->cgroup_mode;
        if (p->mode && streq(p->mode, "keep"))
                p->mode = NULL;
        if (p->mode) {
                if (caps->cgroup_mode.available && strv_contains(caps->cgroup_modes, p->mode))
                        p->mode_written = true;
                else if (caps->cgroup_mode.available) {
                        if ((k = plan_note(p, "cgroup_mode %s is not among the kernel's modes: not set", p->mode)) < 0)
                                return k;
                } else
                        p->mode_emulated = true;
        }
        return 0;
}
