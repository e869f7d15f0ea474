/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "plan-verb.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply/feat.h"
#include "base/json.h"
#include "base/macro.h"
#include "base/util.h"
#include "decide/plan.h"
#include "pipeline/pipeline.h"

typedef struct Diff {
        Json *j;        /* NULL: text */
        unsigned differ, same, unknown;
} Diff;

_printf_(5, 6) static void item(Diff *d, const char *kind, const char *want, const char *have, const char *fmt, ...) {
        _cleanup_free_ char *what = NULL;
        const char *state;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&what, fmt, ap) < 0)
                what = NULL;
        va_end(ap);
        if (!have) {
                state = "unknown";
                d->unknown++;
        } else if (streq(want, have)) {
                state = "same";
                d->same++;
        } else {
                state = "differs";
                d->differ++;
        }
        if (d->j) {
                json_object_begin(d->j);
                json_kv_string(d->j, "kind", kind);
                json_kv_string(d->j, "what", what);
                json_kv_string(d->j, "state", state);
                json_kv_string(d->j, "planned", want);
                json_kv_string(d->j, "current", have);
                json_object_end(d->j);
        } else if (!streq(state, "same"))
                printf("%-8s %-8s %s: planned %s, now %s\n", state, kind, what ?: "?", want, have ?: "(unreadable)");
}

static char *read_attr(const Pipeline *p, const char *cg, const char *attr) {
        _cleanup_free_ char *rel = NULL;
        char *v = NULL;

        if (asprintf(&rel, "%s%s/%s", p->caps->cgroup2_mount, cg, attr) < 0)
                return NULL;
        if (root_read_line(p->root, rel, &v) < 0)
                return NULL;
        return v;
}

static void diff_kernel(Diff *d, const Pipeline *p, const Plan *plan) {
        _cleanup_(feature_state_freep) FeatureState *fs = NULL;

        if (p->caps->debugfs_mount)
                (void) feat_read(p->root, p->caps->debugfs_mount, &fs);
        for (size_t i = 0; i < plan->kernel->n_features; i++) {
                const PolicyFeature *f = &plan->kernel->features[i];
                int now = fs ? feature_state_get(fs, f->name) : -1;

                item(d, "feature", f->on ? "on" : "off", now < 0 ? NULL : now ? "on" : "off", "%s", f->name);
        }
        if (plan->mode && plan->mode_written)
                item(d, "mode", plan->mode, p->caps->cgroup_mode_active, "cgroup_mode");
}

static void diff_groups(Diff *d, const Pipeline *p, const Plan *plan) {
        for (size_t i = 0; i < plan->n_groups; i++) {
                const PlanGroup *g = &plan->groups[i];
                _cleanup_free_ char *cg = NULL, *cpus = NULL, *want_w = NULL, *have_cpus = NULL, *have_w = NULL;

                if (asprintf(&cg, "%s/%s", plan->cgroup_root, g->path) < 0 || bitmap_format_list(g->cpus, &cpus) < 0 ||
                    asprintf(&want_w, "%u", g->weight) < 0)
                        return;
                have_cpus = read_attr(p, cg, "cpuset.cpus");
                have_w = read_attr(p, cg, "cpu.weight");
                item(d, "cgroup", cpus, have_cpus ?: "(absent)", "%s cpuset.cpus", cg);
                if (g->policy >= 0)
                        item(d, "cgroup", want_w, have_w ?: "(absent)", "%s cpu.weight", cg);
        }
}

static void diff_tasks(Diff *d, const Pipeline *p, const Plan *plan) {
        for (size_t i = 0; i < plan->n_tasks; i++) {
                const PlanTask *t = &plan->tasks[i];
                const TaskFacts *f = task_snapshot_find(p->snap, t->tid);
                _cleanup_free_ char *cg = NULL;

                if (!f || asprintf(&cg, "%s/%s", plan->cgroup_root, plan->groups[t->group].path) < 0)
                        continue;
                item(d, "task", cg, f->process->cgroup, "tid %d (%s) cgroup", (int) t->tid, f->comm);
        }
        /* Cookies: a group is as planned when its tasks share one nonzero
         * cookie; values are compared between live tasks only. */
        for (size_t g = 0; g < plan->n_cookie_groups; g++) {
                uint64_t first = 0;
                bool known = true, same = true, any = false;

                for (size_t i = 0; i < plan->n_tasks; i++) {
                        const TaskFacts *f;

                        if (plan->tasks[i].cookie_group != (int) g)
                                continue;
                        f = task_snapshot_find(p->snap, plan->tasks[i].tid);
                        if (!f || f->cookie_error != 0) {
                                known = false;
                                continue;
                        }
                        if (!any)
                                first = f->cookie;
                        same = same && f->cookie != 0 && f->cookie == first;
                        any = true;
                }
                item(d, "cookie", "shared", known ? (same ? "shared" : "not shared") : NULL, "cookie group %zu (%u tasks)",
                     g, plan->cookie_groups[g].n_tasks);
        }
}

int topoctl_plan(const PlanVerbArgs *a) {
        _cleanup_(pipeline_freep) Pipeline *p = NULL;
        _cleanup_(diag_freep) Diagnostics *dg = diag_new();
        _cleanup_(plan_freep) Plan *plan = NULL;
        _cleanup_free_ char *reason = NULL;
        PipelineOptions o = { .root = a->root, .config = a->config, .policies = a->policies, .events = a->samples > 0 };
        Diff d = {};
        uint64_t next;
        int k;

        if (!dg)
                return EXIT_FAILURE;
        k = pipeline_new(&o, dg, &p, &reason);
        for (size_t i = 0; i < dg->n; i++)
                fprintf(stderr, "%s:%u: %s: %s\n", dg->items[i].file, dg->items[i].line,
                        dg->items[i].severity == DIAG_ERROR ? "error" : "warning", dg->items[i].message);
        if (k < 0) {
                fprintf(stderr, "topoctl: %s\n", reason ?: strerror(-k));
                return EXIT_FAILURE;
        }
        next = pipeline_now_usec();
        for (unsigned i = 0; i <= a->samples; i++) {
                if ((k = pipeline_sample(p, false)) < 0) {
                        fprintf(stderr, "topoctl: scanning /proc failed: %s\n", strerror(-k));
                        return EXIT_FAILURE;
                }
                if (i < a->samples) {
                        next += p->config->sample_interval_usec;
                        pipeline_wait_until(p, next);
                }
        }
        if ((k = pipeline_plan(p, &plan)) < 0) {
                fprintf(stderr, "topoctl: planning failed: %s\n", strerror(-k));
                return EXIT_FAILURE;
        }
        if (a->json) {
                d.j = json_new(stdout, true);
                if (!d.j)
                        return EXIT_FAILURE;
                json_object_begin(d.j);
                json_key(d.j, "plan");
                (void) plan_print_json(d.j, plan, p->policies);
                json_key(d.j, "differences");
                json_array_begin(d.j);
        }
        diff_kernel(&d, p, plan);
        if (p->caps->cgroup2_mount)
                diff_groups(&d, p, plan);
        diff_tasks(&d, p, plan);
        if (d.j) {
                json_array_end(d.j);
                json_key(d.j, "counts");
                json_object_begin(d.j);
                json_kv_uint(d.j, "differs", d.differ);
                json_kv_uint(d.j, "same", d.same);
                json_kv_uint(d.j, "unknown", d.unknown);
                json_object_end(d.j);
                json_object_end(d.j);
                json_free(d.j);
        } else
                printf("%u to change, %u already so, %u unknown\n", d.differ, d.same, d.unknown);
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
