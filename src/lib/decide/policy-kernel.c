/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel-wide settings of the policies in force ([kernel] cgroup_mode
 * and the scheduler settings, [features]): the one earlier in precedence
 * wins each, and the losers are recorded as conflicts. */
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

PolicyKernelPlan *policy_kernel_plan_free(PolicyKernelPlan *p) {
        if (!p)
                return NULL;
        free(p->features);
        free(p->feature_policy);
        free(p->settings);
        free(p->setting_policy);
        for (size_t i = 0; i < p->n_conflicts; i++)
                free(p->conflicts[i].what);
        free(p->conflicts);
        free(p);
        return NULL;
}

static int add_conflict(PolicyKernelPlan *plan, const char *what, const char *name, size_t winner, size_t loser) {
        PolicyConflict *n;
        char *w;

        if (name ? asprintf(&w, "%s %s", what, name) < 0 : !(w = strdup(what)))
                return -ENOMEM;
        n = realloc(plan->conflicts, (plan->n_conflicts + 1) * sizeof(PolicyConflict));
        if (!n) {
                free(w);
                return -ENOMEM;
        }
        plan->conflicts = n;
        plan->conflicts[plan->n_conflicts++] = (PolicyConflict) { .what = w, .winner = winner, .loser = loser };
        return 0;
}

/* One more winner: item (size bytes) at the end of *items, the policy i
 * that set it at the end of *policies. */
static int push_winner(void **items, int **policies, size_t *n, const void *item, size_t size, size_t i) {
        void *ni = realloc(*items, (*n + 1) * size);
        int *np;

        if (!ni)
                return -ENOMEM;
        *items = ni;
        np = realloc(*policies, (*n + 1) * sizeof(int));
        if (!np)
                return -ENOMEM;
        *policies = np;
        memcpy((char *) ni + *n * size, item, size);
        np[(*n)++] = (int) i;
        return 0;
}

/* A feature no policy ahead set: policy i's setting wins it. */
static int add_feature(PolicyKernelPlan *plan, const PolicyFeature *pf, size_t i) {
        return push_winner((void **) &plan->features, &plan->feature_policy, &plan->n_features, pf,
                           sizeof(PolicyFeature), i);
}

/* Policy i's settings: each one no policy ahead set is won; a different
 * value for one already won is a conflict. */
static int add_settings(PolicyKernelPlan *plan, const Policy *p, size_t i) {
        int k;

        for (size_t x = 0; x < p->n_settings; x++) {
                const PolicySetting *ps = &p->settings[x];
                size_t w;

                for (w = 0; w < plan->n_settings; w++)
                        if (plan->settings[w].info == ps->info)
                                break;
                if (w < plan->n_settings) {
                        if (!streq(plan->settings[w].value, ps->value) &&
                            (k = add_conflict(plan, "setting", ps->info->name, (size_t) plan->setting_policy[w], i)) < 0)
                                return k;
                        continue;
                }
                if ((k = push_winner((void **) &plan->settings, &plan->setting_policy, &plan->n_settings, ps,
                                     sizeof(PolicySetting), i)) < 0)
                        return k;
        }
        return 0;
}

int policy_set_resolve_kernel(const PolicySet *s, const bool *in_force, PolicyKernelPlan **ret) {
        _cleanup_(policy_kernel_plan_freep) PolicyKernelPlan *plan = calloc(1, sizeof(PolicyKernelPlan));
        int k;

        if (!plan)
                return -ENOMEM;
        plan->cgroup_mode_policy = -1;
        for (size_t i = 0; i < s->n; i++) {
                const Policy *p = s->policies[i];

                if (!in_force[i] || !p->enabled)
                        continue;
                if (p->cgroup_mode) {
                        if (plan->cgroup_mode_policy < 0) {
                                plan->cgroup_mode = p->cgroup_mode;
                                plan->cgroup_mode_policy = (int) i;
                        } else if (!streq(plan->cgroup_mode, p->cgroup_mode) &&
                                   (k = add_conflict(plan, "cgroup_mode", NULL, (size_t) plan->cgroup_mode_policy, i)) < 0)
                                return k;
                }
                for (size_t f = 0; f < p->n_features; f++) {
                        const PolicyFeature *pf = &p->features[f];
                        size_t w;

                        for (w = 0; w < plan->n_features; w++)
                                if (streq(plan->features[w].name, pf->name))
                                        break;
                        if (w < plan->n_features) {
                                if (plan->features[w].on != pf->on &&
                                    (k = add_conflict(plan, "feature", pf->name, (size_t) plan->feature_policy[w], i)) < 0)
                                        return k;
                                continue;
                        }
                        if ((k = add_feature(plan, pf, i)) < 0)
                                return k;
                }
                if ((k = add_settings(plan, p, i)) < 0)
                        return k;
        }
        *ret = TAKE_PTR(plan);
        return 0;
}
