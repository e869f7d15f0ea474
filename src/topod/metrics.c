/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The daemon's metrics: what it counts beyond what it already keeps for
 * status (each pass's duration, the apply's results summed), the snapshot
 * of it all for the printers (metrics-format.h), the Metrics reply and the
 * textfile (topod.conf: metrics_file), written after each pass and each
 * change the loop sees, at most once per DAEMON_METRICS_INTERVAL_USEC. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/macro.h"
#include "daemon-internal.h"
#include "metrics-file.h"
#include "metrics-format.h"

/* The file is written at most this often (a burst of changes: one write
 * at its end). */
#define DAEMON_METRICS_INTERVAL_USEC 1000000u

static const MetricsApply apply_of[_RECONCILE_STATUS_MAX] = {
        [RECONCILE_DONE] = METRICS_APPLY_DONE,         [RECONCILE_ALREADY] = METRICS_APPLY_ALREADY,
        [RECONCILE_VANISHED] = METRICS_APPLY_VANISHED, [RECONCILE_SKIPPED] = METRICS_APPLY_SKIPPED,
        [RECONCILE_FAILED] = METRICS_APPLY_FAILED,
};

_Static_assert((int) _RECONCILE_STATUS_MAX == (int) _METRICS_APPLY_MAX, "every apply result has its label");

/* What the printers take, from the Daemon as it is; the arrays in
 * *ret_policies and *ret_tasks are the caller's to free. */
/* The groups' forced idle readings, as the pipeline kept them. */
static int idle_groups(const PipelineMeasure *m, MetricsIdleGroup **ret) {
        MetricsIdleGroup *g = calloc(m->n_idle_groups ?: 1, sizeof(MetricsIdleGroup));

        if (!g)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_idle_groups; i++)
                g[i] = (MetricsIdleGroup) { .policy = m->idle_groups[i].policy, .group = m->idle_groups[i].path,
                                            .force_idle_usec = m->idle_groups[i].stat.force_idle_usec,
                                            .usage_usec = m->idle_groups[i].stat.usage_usec };
        *ret = g;
        return 0;
}

static int snapshot(const Daemon *d, MetricsSnapshot *s, MetricsPolicy **ret_policies, MetricsTasks **ret_tasks,
                    MetricsIdleGroup **ret_idle) {
        const PolicySet *set = d->p->decide.policies;
        const Plan *plan = d->pass.plan;
        _cleanup_free_ MetricsPolicy *pol = NULL;
        MetricsTasks *tasks = NULL;
        size_t n_tasks = 0;
        int k;

        *s = (MetricsSnapshot) {
                .version = TOPOD_VERSION,
                .paused = d->paused,
                .passes = d->pass.count,
                .passes_failed = d->metrics.passes_failed,
                .pass_duration = d->metrics.pass_duration,
                .have_last_pass = d->pass.count > 0,
                .last_pass_usec = { d->pass.last_stage_usec[0], d->pass.last_stage_usec[1], d->pass.last_stage_usec[2] },
                .reloads = d->reloads.count,
                .reloads_refused = d->reloads.refused,
                .fast_placed = d->gate.fast_placed,
                .idle_skips = d->gate.idle_skips,
                .storm_defers = d->gate.storm_defers,
        };
        for (size_t i = 0; i < _RECONCILE_STATUS_MAX; i++)
                s->apply[apply_of[i]] = d->metrics.apply[i];
        if (d->p->fast)
                s->exec_to_placed = d->p->fast->placed_latency;
        pol = calloc(set->n ?: 1, sizeof(MetricsPolicy));
        if (!pol)
                return -ENOMEM;
        for (size_t i = 0; i < set->n; i++) {
                const Policy *p = set->policies[i];
                const PolicyIdle *pi = &d->p->decide.idle[i];

                pol[i] = (MetricsPolicy) { .name = p->name, .in_force = d->p->decide.in_force[i] };
                if (p->has_when && p->when.has_forced_idle) {
                        pol[i].forced_idle = true;
                        pol[i].have_share = pi->have_share;
                        pol[i].share_permille = pi->share_permille;
                        pol[i].idle_groups = pi->groups;
                        if (pi->have_last) {
                                pol[i].force_idle_usec = pi->last.force_idle_usec;
                                pol[i].usage_usec = pi->last.usage_usec;
                        }
                }
        }
        if (plan) {
                for (size_t i = 0; i < plan->n_cookie_groups; i++)
                        if (plan->cookie_groups[i].policy >= 0 && (size_t) plan->cookie_groups[i].policy < set->n)
                                pol[plan->cookie_groups[i].policy].cookie_groups++;
                for (size_t i = 0; i < plan->n_groups; i++)
                        s->groups += plan->groups[i].policy >= 0;
        }
        if ((k = metrics_count_tasks(plan, set, &tasks, &n_tasks)) < 0)
                return k;
        if ((k = idle_groups(&d->p->measure, ret_idle)) < 0) {
                free(tasks);
                return k;
        }
        s->idle_groups = *ret_idle;
        s->n_idle_groups = d->p->measure.n_idle_groups;
        s->policies = pol;
        s->n_policies = set->n;
        s->tasks = tasks;
        s->n_tasks = n_tasks;
        *ret_policies = TAKE_PTR(pol);
        *ret_tasks = tasks;
        return 0;
}

int metrics_print(const Daemon *d, bool json, FILE *f) {
        _cleanup_free_ MetricsPolicy *pol = NULL;
        _cleanup_free_ MetricsTasks *tasks = NULL;
        _cleanup_free_ MetricsIdleGroup *idle = NULL;
        MetricsSnapshot s;
        int k;

        if ((k = snapshot(d, &s, &pol, &tasks, &idle)) < 0)
                return k;
        if (json) {
                _cleanup_(json_freep) Json *j = json_new(f, true);

                if (!j)
                        return -ENOMEM;
                metrics_format_json(j, &s);
                return 0;
        }
        return metrics_format_text(f, &s);
}

/* The file as topod.conf names it now, below the root; NULL: none. */
static char *file_path(const Daemon *d) {
        char *path = NULL;

        if (d->p->decide.config->metrics_file)
                (void) root_host_path(d->p->observe.root, d->p->decide.config->metrics_file, &path);
        return path;
}

static void write_now(Daemon *d) {
        DaemonMetrics *m = &d->metrics;
        _cleanup_free_ char *path = file_path(d), *text = NULL;
        size_t len = 0;
        FILE *f;
        int k;

        m->last_write_usec = pipeline_now_usec();
        m->placed_written = d->gate.fast_placed;
        /* A reload that named another file, or none: the old one goes. */
        if (m->written && (!path || !streq(path, m->written))) {
                (void) unlink(m->written);
                m->written = mfree(m->written);
        }
        if (!path)
                return;
        f = open_memstream(&text, &len);
        if (!f)
                return;
        k = metrics_print(d, false, f);
        if (fclose(f) != 0 && k >= 0)
                k = -ENOMEM;
        if (k >= 0)
                k = metrics_file_write(path, text, len);
        if (k < 0) {
                /* Once per cause, not once per pass. */
                if (k != m->last_error)
                        log_warning(d, "cannot write the metrics to %s: %s, ignoring", path, strerror(-k));
                m->last_error = k;
                return;
        }
        if (m->last_error)
                log_notice(d, "metrics written to %s again", path);
        m->last_error = 0;
        if (!m->written)
                m->written = TAKE_PTR(path);
}

static int on_metrics_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) s;
        (void) usec;
        write_now(userdata);
        return 0;
}

void metrics_changed(Daemon *d) {
        DaemonMetrics *m = &d->metrics;
        uint64_t now = pipeline_now_usec(), wait;
        int enabled = SD_EVENT_OFF;

        if (!d->p->decide.config->metrics_file && !m->written)
                return;
        if (m->timer && sd_event_source_get_enabled(m->timer, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                return; /* a write is on its way */
        if (m->last_write_usec == 0 || now - m->last_write_usec >= DAEMON_METRICS_INTERVAL_USEC || !d->sources.event) {
                write_now(d);
                return;
        }
        wait = m->last_write_usec + DAEMON_METRICS_INTERVAL_USEC - now;
        if (!m->timer) {
                if (sd_event_add_time_relative(d->sources.event, &m->timer, CLOCK_MONOTONIC, wait, 0, on_metrics_timer, d) < 0)
                        write_now(d); /* no timer: written now, not never */
                else
                        (void) sd_event_source_set_enabled(m->timer, SD_EVENT_ONESHOT);
                return;
        }
        (void) sd_event_source_set_time_relative(m->timer, wait);
        (void) sd_event_source_set_enabled(m->timer, SD_EVENT_ONESHOT);
}

void metrics_note_pass(Daemon *d, int k, unsigned passes_before) {
        DaemonMetrics *m = &d->metrics;

        if (k < 0)
                m->passes_failed++;
        if (d->pass.count != passes_before)
                histogram_observe(&m->pass_duration, d->pass.last_cost_usec * 1000u);
        /* The report this pass made (a new one is made while the last is
         * still held: a new address), counted once. */
        if (d->pass.report && d->pass.report != m->counted) {
                for (size_t i = 0; i < _RECONCILE_STATUS_MAX; i++)
                        m->apply[i] += d->pass.report->counts[i];
                m->counted = d->pass.report;
        }
        metrics_changed(d);
}

void metrics_tick(Daemon *d) {
        if (d->gate.fast_placed != d->metrics.placed_written)
                metrics_changed(d);
}

void daemon_metrics_done(DaemonMetrics *m) {
        m->timer = sd_event_source_unref(m->timer);
        /* A stopped topod has no figures: its file goes (node_exporter then
         * exports none, rather than the last ones as if it ran). */
        if (m->written)
                (void) unlink(m->written);
        m->written = mfree(m->written);
}
