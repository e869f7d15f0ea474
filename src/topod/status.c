/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Status and Plan replies, text and JSON: what the daemon holds, read
 * only. Its own file: the longest printers, and nothing else of the daemon
 * needs them. */
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "base/macro.h"
#include "daemon-internal.h"
#include "observe/observe-print.h"
#include "pipeline/plan-diff.h"

/* Policies named on status's text line; --json lists them all. */
#define DAEMON_STATUS_POLICIES_MAX 8u

void status_print_text(const Daemon *d, FILE *f) {
        uint64_t now = pipeline_now_usec();
        const char *sep = "";

        fprintf(f, "topod %s, pid %d, up %" PRIu64 " s: %s\n", TOPOD_VERSION, (int) getpid(),
                (now - d->started_usec) / 1000000u,
                d->paused ? "paused by 'topoctl reset' ('topoctl reload' resumes)" : d->ready ? "running" : "starting");
        fprintf(f, "cgroup driver: %s (%s)", config_cgroup_driver_to_string(d->writers.driver),
                d->writers.driver_why ?: "not chosen yet");
        if (d->writers.unit_bus)
                fprintf(f, "; %" PRIu64 " calls to systemd so far", unit_bus_calls(d->writers.unit_bus));
        fputc('\n', f);
        fputs("policies in force:", f);
        {
                size_t shown = 0, in_force = 0;

                for (size_t i = 0; i < d->p->decide.policies->n; i++)
                        if (d->p->decide.in_force[i] && in_force++ < DAEMON_STATUS_POLICIES_MAX) {
                                fprintf(f, "%s %s", sep, d->p->decide.policies->policies[i]->name);
                                sep = ",";
                                shown++;
                        }
                if (in_force > shown)
                        fprintf(f, " and %zu more", in_force - shown);
        }
        fprintf(f, "%s (%zu loaded; --json lists them all)\n", *sep ? "" : " none", d->p->decide.policies->n);
        if (d->p->decide.have_load)
                fprintf(f, "load: %u%% (1-minute load average per CPU; [when] load = bands)\n", d->p->decide.load_percent);
        else
                fputs("load: unknown (/proc/loadavg unreadable): [when] load = bands stay as they were\n", f);
        for (size_t i = 0; i < d->p->decide.policies->n; i++) {
                const Policy *p = d->p->decide.policies->policies[i];
                const PolicyIdle *pi = &d->p->decide.idle[i];

                if (!p->has_when || !p->when.has_forced_idle)
                        continue;
                fprintf(f, "forced idle: %s: ", p->name);
                if (pi->have_share)
                        fprintf(f, "%u.%u%% of its %u groups' CPU time", pi->share_permille / 10u, pi->share_permille % 10u,
                                pi->groups);
                else
                        fputs("not measured yet", f);
                fprintf(f, " ([when] forced_idle = %u-%u%%: %s)%s\n", p->when.forced_idle_low, p->when.forced_idle_high,
                        pipeline_forced_idle_holds(d->p, i) ? "holds" : "does not hold",
                        d->p->observe.caps->schedstats.available ? "" : "; not accounted: kernel.sched_schedstats is off");
        }
        /* Paused, everything was put back: nothing is managed, whatever
         * the last plan held. */
        if (d->pass.plan && d->paused)
                fprintf(f, "managed: nothing, paused (the plan would place %zu tasks in %zu groups)\n",
                        d->pass.plan->n_tasks, d->pass.plan->n_groups);
        else if (d->pass.plan)
                fprintf(f, "managed: %zu tasks in %zu groups, %zu cookie groups\n", d->pass.plan->n_tasks, d->pass.plan->n_groups,
                        d->pass.plan->n_cookie_groups);
        if (d->pass.count > 0)
                fprintf(f, "last pass: %" PRIu64 " ms ago, took %" PRIu64 " ms (scan %" PRIu64 ", plan %" PRIu64
                           ", apply %" PRIu64 "; the placer's turns in between %" PRIu64 ")",
                        (now - d->pass.last_usec) / 1000u, d->pass.last_cost_usec / 1000u,
                        d->pass.last_stage_usec[0] / 1000u, d->pass.last_stage_usec[1] / 1000u,
                        d->pass.last_stage_usec[2] / 1000u, d->pass.last_yielded_usec / 1000u);
        if (d->pass.report)
                fprintf(f, ": %u changed, %u already so, %u vanished, %u skipped, %u failed",
                        d->pass.report->counts[RECONCILE_DONE], d->pass.report->counts[RECONCILE_ALREADY],
                        d->pass.report->counts[RECONCILE_VANISHED], d->pass.report->counts[RECONCILE_SKIPPED],
                        d->pass.report->counts[RECONCILE_FAILED]);
        if (d->pass.count > 0 && d->pass.last_deferred > 0)
                fprintf(f, "; %u new processes left to the next scan (exec storm)", d->pass.last_deferred);
        fprintf(f, "%s", d->pass.count > 0 ? "\n" : "");
        fprintf(f, "fast path: %u processes placed at exec; timer passes skipped: %u idle, %u during exec storms\n",
                d->gate.fast_placed, d->gate.idle_skips, d->gate.storm_defers);
        fprintf(f, "reloads: %u (%u refused)%s%s\n", d->reloads.count, d->reloads.refused, d->reloads.last ? "; last: " : "",
                d->reloads.last ?: "");
        fprintf(f, "new tasks: %s\n",
                d->p->observe.events ? "proc connector events" : "found by scanning every sample interval (no proc connector)");
        fputc('\n', f);
        (void) kernelcaps_print_text(f, d->p->observe.caps, root_path(d->p->observe.root));
}

void status_print_json(const Daemon *d, Json *j) {
        uint64_t now = pipeline_now_usec();

        json_object_begin(j);
        json_kv_string(j, "version", TOPOD_VERSION);
        json_kv_int(j, "pid", getpid());
        json_kv_uint(j, "uptime_usec", now - d->started_usec);
        json_kv_string(j, "state", d->paused ? "paused" : d->ready ? "running" : "starting");
        json_key(j, "policies");
        json_array_begin(j);
        for (size_t i = 0; i < d->p->decide.policies->n; i++) {
                const Policy *p = d->p->decide.policies->policies[i];

                json_object_begin(j);
                json_kv_string(j, "name", p->name);
                json_kv_string(j, "file", p->file);
                json_kv_bool(j, "in_force", d->p->decide.in_force[i]);
                if (p->has_when && p->when.has_forced_idle) {
                        const PolicyIdle *pi = &d->p->decide.idle[i];

                        json_key(j, "forced_idle");
                        json_object_begin(j);
                        json_key(j, "permille");
                        if (pi->have_share)
                                json_uint(j, pi->share_permille);
                        else
                                json_null(j);
                        json_kv_uint(j, "groups", pi->groups);
                        json_kv_uint(j, "band_low_pct", p->when.forced_idle_low);
                        json_kv_uint(j, "band_high_pct", p->when.forced_idle_high);
                        json_kv_bool(j, "holds", pipeline_forced_idle_holds(d->p, i));
                        json_kv_bool(j, "accounted", d->p->observe.caps->schedstats.available);
                        json_object_end(j);
                }
                json_object_end(j);
        }
        json_array_end(j);
        json_key(j, "load_percent");
        if (d->p->decide.have_load)
                json_uint(j, d->p->decide.load_percent);
        else
                json_null(j);
        {
                const Plan *in_force = d->paused ? NULL : d->pass.plan;

                json_kv_uint(j, "tasks_managed", in_force ? in_force->n_tasks : 0);
                json_kv_uint(j, "groups", in_force ? in_force->n_groups : 0);
                json_kv_uint(j, "cookie_groups", in_force ? in_force->n_cookie_groups : 0);
                json_kv_uint(j, "tasks_planned", d->pass.plan ? d->pass.plan->n_tasks : 0);
        }
        json_kv_uint(j, "passes", d->pass.count);
        json_kv_uint(j, "last_pass_ago_usec", d->pass.count ? now - d->pass.last_usec : 0);
        json_kv_uint(j, "last_pass_cost_usec", d->pass.last_cost_usec);
        json_kv_uint(j, "last_pass_scan_usec", d->pass.last_stage_usec[0]);
        json_kv_uint(j, "last_pass_plan_usec", d->pass.last_stage_usec[1]);
        json_kv_uint(j, "last_pass_apply_usec", d->pass.last_stage_usec[2]);
        json_kv_uint(j, "last_pass_yielded_usec", d->pass.last_yielded_usec);
        json_kv_uint(j, "last_pass_deferred", d->pass.last_deferred);
        json_key(j, "last_apply");
        if (d->pass.report) {
                json_object_begin(j);
                for (unsigned s = 0; s < _RECONCILE_STATUS_MAX; s++)
                        json_kv_uint(j, reconcile_status_to_string((ReconcileStatus) s), d->pass.report->counts[s]);
                json_object_end(j);
        } else
                json_null(j);
        json_kv_uint(j, "idle_skips", d->gate.idle_skips);
        json_kv_uint(j, "fast_placed", d->gate.fast_placed);
        json_kv_uint(j, "storm_defers", d->gate.storm_defers);
        json_kv_uint(j, "reloads", d->reloads.count);
        json_kv_uint(j, "reloads_refused", d->reloads.refused);
        json_kv_string(j, "last_reload", d->reloads.last);
        json_kv_bool(j, "proc_connector", d->p->observe.events != NULL);
        json_key(j, "cgroup_driver");
        json_object_begin(j);
        json_kv_string(j, "driver", config_cgroup_driver_to_string(d->writers.driver));
        json_kv_string(j, "why", d->writers.driver_why);
        json_kv_uint(j, "bus_calls", unit_bus_calls(d->writers.unit_bus));
        json_object_end(j);
        json_key(j, "kernel");
        (void) kernelcaps_print_json(j, d->p->observe.caps, root_path(d->p->observe.root));
        json_object_end(j);
}

/* The plan in force compared with the machine (as topoctl plan does
 * without topod: the same shape, and topod's state besides). */
void status_print_plan(const Daemon *d, bool json, FILE *f) {
        PlanDiffCounts counts;

        if (json) {
                _cleanup_(json_freep) Json *j = json_new(f, true);

                if (!j)
                        return;
                json_object_begin(j);
                json_kv_bool(j, "paused", d->paused);
                json_key(j, "plan");
                (void) plan_print_json(j, d->pass.plan, d->p->decide.policies);
                json_key(j, "differences");
                json_array_begin(j);
                (void) plan_diff(d->p, d->paused ? NULL : d->pass.plan, j, NULL, &counts);
                json_array_end(j);
                json_key(j, "counts");
                plan_diff_print_counts(&counts, j, NULL);
                json_kv_bool(j, "drift", counts.differs > 0);
                json_key(j, "last_apply");
                if (d->pass.report)
                        (void) reconcile_report_print_json(j, d->pass.report);
                else
                        json_null(j);
                json_object_end(j);
                return;
        }
        (void) plan_print_text(f, d->pass.plan, d->p->decide.policies);
        if (d->paused) {
                fputs("\npaused by 'topoctl reset': nothing is applied ('topoctl reload' resumes)\n", f);
                return;
        }
        fputs("\nCompared with the machine:\n", f);
        (void) plan_diff(d->p, d->pass.plan, NULL, f, &counts);
        plan_diff_print_counts(&counts, NULL, f);
}
