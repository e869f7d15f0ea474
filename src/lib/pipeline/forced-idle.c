/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The [when] forced_idle band over time (pipeline.h): the policy's groups'
 * forced idle against their CPU time, measured after each pass. Its own
 * file: the pipeline's measuring of the kernel's accounting, apart from
 * the planning and the load. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "observe/forced-idle.h"
#include "pipeline/pipeline.h"

bool pipeline_forced_idle_holds(const Pipeline *p, size_t i) {
        const Policy *pol = p->decide.policies->policies[i];
        const PolicyIdle *pi = p->decide.idle ? &p->decide.idle[i] : NULL;

        if (!pol->has_when || !pol->when.has_forced_idle || !pi)
                return true;
        return !pi->band.started || pi->band.holds;
}

/* The readings kept for the metrics (PipelineMeasure.idle_groups). */
typedef struct GroupReadings {
        ForcedIdleGroup *g;
        size_t n, cap;
} GroupReadings;

static int readings_add(GroupReadings *gr, const char *policy, const char *path, const ForcedIdleStat *s) {
        if (gr->n == gr->cap) {
                size_t cap = gr->cap ? gr->cap * 2 : 8;
                ForcedIdleGroup *g = realloc(gr->g, cap * sizeof(ForcedIdleGroup));

                if (!g)
                        return -ENOMEM;
                gr->g = g;
                gr->cap = cap;
        }
        gr->g[gr->n] = (ForcedIdleGroup) { .policy = strdup(policy), .path = strdup(path), .stat = *s };
        if (!gr->g[gr->n].policy || !gr->g[gr->n].path) {
                free(gr->g[gr->n].policy);
                free(gr->g[gr->n].path);
                return -ENOMEM;
        }
        gr->n++;
        return 0;
}

/* The sums of cpu.stat over policy i's groups in the plan, each group's
 * reading also in gr: how many groups were read. */
static unsigned read_policy_groups(const Pipeline *p, const Plan *applied, size_t i, GroupReadings *gr,
                                   ForcedIdleStat *ret) {
        const char *mount = p->observe.caps->cgroup2_mount;
        ForcedIdleStat sum = {};
        unsigned n = 0;

        for (size_t g = 0; applied && mount && g < applied->n_groups; g++) {
                const PlanGroup *pg = &applied->groups[g];
                _cleanup_free_ char *path = NULL;
                ForcedIdleStat s;

                if (pg->policy != (int) i)
                        continue;
                if (!(path = strjoin(applied->cgroup_root, "/", pg->path)))
                        continue;
                if (forced_idle_read_cgroup(p->observe.root, mount, path, &s) < 0)
                        continue;
                /* short of memory: the metrics lack it, the band does not */
                (void) readings_add(gr, p->decide.policies->policies[i]->name, pg->path, &s);
                sum.usage_usec += s.usage_usec;
                sum.force_idle_usec += s.force_idle_usec;
                sum.has_force_idle = sum.has_force_idle || s.has_force_idle;
                n++;
        }
        *ret = sum;
        return n;
}

/* The share between two readings, in permille of the CPU time used; 0
 * when none was used or a counter went back (a group made anew: the
 * reading is only the new base). */
static unsigned share_permille(const ForcedIdleStat *last, const ForcedIdleStat *now) {
        uint64_t used, idle;

        if (now->usage_usec <= last->usage_usec || now->force_idle_usec < last->force_idle_usec)
                return 0;
        used = now->usage_usec - last->usage_usec;
        idle = now->force_idle_usec - last->force_idle_usec;
        return (unsigned) MIN(idle * 1000u / used, (uint64_t) 1000u);
}

int pipeline_measure_forced_idle(Pipeline *p, const Plan *applied) {
        uint64_t now = pipeline_now_usec();
        GroupReadings gr = {};
        bool any = false;

        for (size_t i = 0; i < p->decide.policies->n; i++) {
                const Policy *pol = p->decide.policies->policies[i];
                PolicyIdle *pi = &p->decide.idle[i];
                ForcedIdleStat s;

                if (!pol->has_when || !pol->when.has_forced_idle)
                        continue;
                if (!any && kernelcaps_refresh_schedstats(p->observe.caps, p->observe.root) == -ENOMEM)
                        return -ENOMEM;
                any = true;
                pi->groups = read_policy_groups(p, applied, i, &gr, &s);
                if (pi->groups == 0) {
                        /* nothing placed: nothing kept idle */
                        pi->have_last = false;
                        pi->share_permille = 0;
                        pi->have_share = true;
                } else if (pi->have_last) {
                        pi->share_permille = share_permille(&pi->last, &s);
                        pi->have_share = true;
                }
                if (pi->groups > 0) {
                        pi->last = s;
                        pi->have_last = true;
                }
                if (pi->have_share)
                        (void) policy_band_update(&pi->band, pol->when.forced_idle_low, pol->when.forced_idle_high,
                                                  pi->share_permille / 10u, p->decide.config->load_hysteresis,
                                                  p->decide.config->load_dwell_usec, now);
        }
        forced_idle_groups_free(p->measure.idle_groups, p->measure.n_idle_groups);
        p->measure.idle_groups = gr.g;
        p->measure.n_idle_groups = gr.n;
        return any ? (int) pipeline_refresh_in_force(p, false) : 0;
}
