/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel's own LLC aggregation beside topod's placement. 7.3's
 * cache-aware load balancing (sched/llc_balancing/, CONFIG_SCHED_CACHE, on
 * by default) gathers the threads of a process on one LLC of the CPUs it may
 * use: the ground a policy with cpus = llc covers. Where topod pins a group
 * to one LLC its cpuset decides, and the kernel's aggregation can only work
 * inside it; where a group spans several LLCs (cpus = node, package, all)
 * the kernel picks which. A policy's [kernel] llc_balancing/enabled = off
 * leaves the choice to topod's cpusets and the plain load balancer. Its own
 * file as the one place that knows how the two meet; pure, as the planner. */
#include "plan-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

int plan_choose_llc_balancing(Builder *b) {
        const SchedSettingInfo *info = sched_setting_lookup("llc_balancing/enabled");
        const KernelSetting *ks = kernelcaps_setting(b->in->caps, info);
        const PolicyKernelPlan *k = b->plan->kernel;
        PlanLlcBalancing *lb = &b->plan->llc_balancing;

        *lb = (PlanLlcBalancing) { .policy = -1 };
        if (!ks || !ks->file)
                return 0;
        lb->present = true;
        lb->on = streq(ks->value, "1");
        /* A file that does not open for writing keeps the kernel's value:
         * topod skips or fails the write, so the policy's is not in force. */
        for (size_t i = 0; ks->writable && i < k->n_settings; i++)
                if (k->settings[i].info == info) {
                        lb->on = streq(k->settings[i].value, "1");
                        lb->policy = k->setting_policy[i];
                }
        return 0;
}

static const char *policy_name(const PolicySet *ps, int i) {
        return ps && i >= 0 && (size_t) i < ps->n ? ps->policies[i]->name : NULL;
}

int plan_llc_decider(const Plan *p, const PlanGroup *g, const PolicySet *policies, char **ret) {
        const PlanLlcBalancing *lb = &p->llc_balancing;
        const char *by = policy_name(policies, lb->policy);
        char whose[96];
        int k;

        *ret = NULL;
        if (!lb->present)
                return 0;
        if (by)
                snprintf(whose, sizeof(whose), "%s by policy %s", lb->on ? "on" : "off", by);
        else
                snprintf(whose, sizeof(whose), "%s, as the kernel has it", lb->on ? "on" : "off");
        if (g->kind == PLAN_DOMAIN_LLC)
                k = asprintf(ret, "topod decides: the group is pinned to LLC %d; the kernel's cache-aware load "
                             "balancing (%s) %s", g->domain, whose,
                             lb->on ? "gathers its processes' threads only within it" : "does not gather threads");
        else if (lb->on)
                k = asprintf(ret, "the kernel decides: its cache-aware load balancing (%s) gathers each process's "
                             "threads on one LLC of the group's CPUs", whose);
        else
                k = asprintf(ret, "neither gathers threads on an LLC: the group spans several and the kernel's "
                             "cache-aware load balancing is %s", whose);
        return k < 0 ? -ENOMEM : 0;
}
