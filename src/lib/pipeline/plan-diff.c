/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "pipeline/plan-diff.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply/feat.h"
#include "base/macro.h"
#include "base/util.h"
#include "observe/procfs.h"

typedef struct Diff {
        Json *j;   /* NULL: text to out */
        FILE *out;
        PlanDiffCounts counts;
} Diff;

static void emit(Diff *d, const char *kind, const char *state, const char *want, const char *have, const char *reason,
                 const char *what) {
        if (d->j) {
                json_object_begin(d->j);
                json_kv_string(d->j, "kind", kind);
                json_kv_string(d->j, "what", what);
                json_kv_string(d->j, "state", state);
                json_kv_string(d->j, "planned", want);
                json_kv_string(d->j, "current", have);
                json_kv_string(d->j, "reason", reason);
                json_object_end(d->j);
        } else if (streq(state, "skipped"))
                fprintf(d->out, "%-8s %-8s %s: planned %s, not applied here: %s\n", state, kind, what ?: "?", want,
                        reason ?: "?");
        else if (!streq(state, "same"))
                fprintf(d->out, "%-8s %-8s %s: planned %s, now %s\n", state, kind, what ?: "?", want,
                        have ?: "(unreadable)");
}

/* Compared: have NULL is unknown. With skip, not compared: this host
 * cannot apply it, and says why. */
_printf_(6, 7) static void item_or_skip(Diff *d, const char *kind, const char *want, const char *have, const char *skip,
                                        const char *fmt, ...) {
        _cleanup_free_ char *what = NULL;
        const char *state;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&what, fmt, ap) < 0)
                what = NULL;
        va_end(ap);
        if (skip) {
                state = "skipped";
                d->counts.skipped++;
                have = NULL;
        } else if (!have) {
                state = "unknown";
                d->counts.unknown++;
        } else if (streq(want, have)) {
                state = "same";
                d->counts.same++;
        } else {
                state = "differs";
                d->counts.differs++;
        }
        emit(d, kind, state, want, have, skip, what);
}

#define item(d, kind, want, have, ...) item_or_skip(d, kind, want, have, NULL, __VA_ARGS__)

const char *plan_diff_controller_missing(const KernelCaps *c, const char *controller) {
        if (!c->cgroup2_mount)
                return "no cgroup2 mount";
        if (!c->cgroup2_controllers) /* unread: as the writer, assume it is there */
                return NULL;
        for (char **w = c->cgroup2_controllers; *w; w++)
                if (streq(*w, controller))
                        return NULL;
        if (streq(controller, "cpuset"))
                return strv_contains(c->cgroup_v1_controllers, "cpuset")
                               ? "cpuset controller not available on the cgroup2 mount (bound to cgroup v1)"
                               : "cpuset controller not available on the cgroup2 mount";
        if (streq(controller, "cpu"))
                return strv_contains(c->cgroup_v1_controllers, "cpu")
                               ? "cpu controller not available on the cgroup2 mount (bound to cgroup v1)"
                               : "cpu controller not available on the cgroup2 mount";
        return "controller not available on the cgroup2 mount";
}

static char *read_attr(const Pipeline *p, const char *cg, const char *attr) {
        _cleanup_free_ char *rel = NULL;
        char *v = NULL;

        if (asprintf(&rel, "%s%s/%s", p->observe.caps->cgroup2_mount, cg, attr) < 0)
                return NULL;
        if (root_read_line(p->observe.root, rel, &v) < 0)
                return NULL;
        return v;
}

static void diff_kernel(Diff *d, const Pipeline *p, const Plan *plan) {
        _cleanup_(feature_state_freep) FeatureState *fs = NULL;

        const KernelCaps *caps = p->observe.caps;
        _cleanup_free_ char *no_feat = NULL;

        /* Features this host cannot write (no debugfs, read-only under
         * lockdown) are skipped with the probe's reason. */
        if (!caps->sched_features.available || !caps->features_writable)
                (void) asprintf(&no_feat, "sched_features not writable here: %s",
                                caps->sched_features.reason ?: "not probed");
        if (!no_feat && caps->debugfs_mount)
                (void) feat_read(p->observe.root, caps->debugfs_mount, &fs);
        for (size_t i = 0; i < plan->kernel->n_features; i++) {
                const PolicyFeature *f = &plan->kernel->features[i];
                int now = fs ? feature_state_get(fs, f->name) : -1;

                item_or_skip(d, "feature", f->on ? "on" : "off", now < 0 ? NULL : now ? "on" : "off", no_feat, "%s",
                             f->name);
        }
        if (plan->mode && plan->mode_written) {
                /* Now, not as at the start: topod writes it, and others may. */
                _cleanup_free_ char *active = NULL;
                _cleanup_strv_free_ char **modes = NULL;

                if (p->observe.caps->debugfs_mount)
                        (void) feat_read_cgroup_mode(p->observe.root, p->observe.caps->debugfs_mount, &modes, &active);
                item(d, "mode", plan->mode, active, "cgroup_mode");
        }
        for (size_t i = 0; i < plan->kernel->n_settings; i++) {
                const PolicySetting *s = &plan->kernel->settings[i];
                const KernelSetting *ks = kernelcaps_setting(p->observe.caps, s->info);
                char now[SCHED_SETTING_VALUE_MAX];

                /* One this kernel lacks is the apply report's skip, not a difference. */
                if (ks && ks->file)
                        item(d, "setting", s->value,
                             feat_read_setting(p->observe.root, p->observe.caps->debugfs_mount, ks->file, now) < 0 ? NULL : now,
                             "%s", ks->file);
        }
}

static void diff_groups(Diff *d, const Pipeline *p, const Plan *plan) {
        const char *no_cpuset = plan_diff_controller_missing(p->observe.caps, "cpuset"),
                   *no_cpu = plan_diff_controller_missing(p->observe.caps, "cpu");

        for (size_t i = 0; i < plan->n_groups; i++) {
                const PlanGroup *g = &plan->groups[i];
                _cleanup_free_ char *cg = NULL, *cpus = NULL, *mems = NULL, *want_w = NULL, *have_cpus = NULL,
                                    *have_mems = NULL, *have_w = NULL, *have_part = NULL;

                if (asprintf(&cg, "%s/%s", plan->cgroup_root, g->path) < 0 || bitmap_format_list(g->cpus, &cpus) < 0 ||
                    (g->mems && bitmap_format_list(g->mems, &mems) < 0) || asprintf(&want_w, "%u", g->weight) < 0)
                        return;
                if (!no_cpuset) {
                        have_cpus = read_attr(p, cg, "cpuset.cpus");
                        have_mems = read_attr(p, cg, "cpuset.mems");
                        have_part = read_attr(p, cg, "cpuset.cpus.partition");
                }
                if (!no_cpu)
                        have_w = read_attr(p, cg, "cpu.weight");
                item_or_skip(d, "cgroup", cpus, have_cpus ?: "(absent)", no_cpuset, "%s cpuset.cpus", cg);
                if (mems)
                        item_or_skip(d, "cgroup", mems, have_mems ?: "(absent)", no_cpuset, "%s cpuset.mems", cg);
                /* "root invalid (why)" differs from "root", and says why. */
                if (g->exclusive)
                        item_or_skip(d, "cgroup", "root", have_part ?: "(absent)", no_cpuset, "%s cpuset.cpus.partition",
                                     cg);
                if (g->policy >= 0)
                        item_or_skip(d, "cgroup", want_w, have_w ?: "(absent)", no_cpu, "%s cpu.weight", cg);
        }
}

static void diff_tasks(Diff *d, const Pipeline *p, const Plan *plan) {
        _cleanup_free_ char *now = NULL; /* where process `read` is now, NULL: unknown */
        pid_t read = 0;

        for (size_t i = 0; i < plan->n_tasks; i++) {
                const PlanTask *t = &plan->tasks[i];
                const TaskFacts *f = task_snapshot_find(p->observe.snap, t->tid);
                _cleanup_free_ char *cg = NULL;

                if (!f || asprintf(&cg, "%s/%s", plan->cgroup_root, plan->groups[t->group].path) < 0)
                        continue;
                /* Where its process is now (the fast path may have placed
                 * it since the scan), read once a process (its threads
                 * come together); or where the scan saw it. */
                if (t->tgid != read) {
                        _cleanup_free_ char *rel = NULL, *text = NULL;
                        size_t len = 0;

                        now = mfree(now);
                        read = t->tgid;
                        if (asprintf(&rel, "proc/%d/cgroup", (int) t->tgid) >= 0 &&
                            root_read_file(p->observe.root, rel, 64 * 1024, &text, &len) >= 0)
                                (void) procfs_parse_cgroup(text, len, &now);
                }
                item_or_skip(d, "task", cg, now ?: f->process->cgroup,
                             p->observe.caps->cgroup2_mount ? NULL : "no cgroup2 mount", "tid %d (%s) cgroup", (int) t->tid,
                             f->comm);
        }
        /* Cookies: a group is as planned when its tasks share one nonzero
         * cookie; values are compared between live tasks only, read now. */
        for (size_t g = 0; g < plan->n_cookie_groups; g++) {
                uint64_t first = 0;
                bool known = true, same = true, any = false;

                if (!p->observe.caps->core_sched.available) {
                        _cleanup_free_ char *why = NULL;

                        (void) asprintf(&why, "core scheduling not available: %s",
                                        p->observe.caps->core_sched.reason ?: "not probed");
                        item_or_skip(d, "cookie", "shared", NULL, why ?: "core scheduling not available",
                                     "cookie group %zu (%u tasks)", g, plan->cookie_groups[g].n_tasks);
                        continue;
                }

                for (size_t i = 0; i < plan->n_tasks; i++) {
                        const TaskFacts *f;
                        uint64_t c = 0;
                        int e;

                        if (plan->tasks[i].cookie_group != (int) g)
                                continue;

                        f = task_snapshot_find(p->observe.snap, plan->tasks[i].tid);
                        if (!f) {
                                known = false;
                                continue;
                        }
                        /* Now, as the scan asks (the last pass's apply
                         * came after its scan). */
                        e = tasks_get_cookie_host(f->tid, &c, NULL);
                        if (e < 0) {
                                known = false;
                                continue;
                        }
                        if (!any)
                                first = c;
                        same = same && c != 0 && c == first;
                        any = true;
                }
                item(d, "cookie", "shared", known ? (same ? "shared" : "not shared") : NULL, "cookie group %zu (%u tasks)",
                     g, plan->cookie_groups[g].n_tasks);
        }
}

int plan_diff(const Pipeline *p, const Plan *plan, Json *j, FILE *out, PlanDiffCounts *ret) {
        Diff d = { .j = j, .out = out };

        if (!plan || !p->observe.snap) {
                *ret = d.counts;
                return 0;
        }
        diff_kernel(&d, p, plan);
        diff_groups(&d, p, plan);
        diff_tasks(&d, p, plan);
        *ret = d.counts;
        return 0;
}

void plan_diff_print_counts(const PlanDiffCounts *c, Json *j, FILE *out) {
        if (j) {
                json_object_begin(j);
                json_kv_uint(j, "differs", c->differs);
                json_kv_uint(j, "same", c->same);
                json_kv_uint(j, "unknown", c->unknown);
                json_kv_uint(j, "skipped", c->skipped);
                json_object_end(j);
        } else
                fprintf(out, "%u to change, %u already so, %u unknown, %u skipped (not applicable here)\n", c->differs,
                        c->same, c->unknown, c->skipped);
}
