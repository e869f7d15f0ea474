/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A reload (SIGHUP, or the Reload call): the new configuration whole or
 * not at all. Its own file: two entry points, and the one place that swaps
 * the policies under a running daemon. What the new set is judged by is
 * the pipeline's rule, the one start-up uses (pipeline_reload()). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "base/json.h"
#include "base/macro.h"
#include "common/report.h"
#include "daemon-internal.h"

/* The new configuration is parsed and checked whole before anything
 * changes; a bad one is refused (file:line in ret_messages and the log)
 * and the running policy stays in force; a good one is swapped in and
 * reconciled, changing only what differs. A reload also ends a pause. */
/* The reply of `topoctl reload --json`: whether the new set is in force,
 * how many policies, the pass after it, every finding. */
static void print_json(FILE *f, const Daemon *d, const Diagnostics *dg, int k, int pk) {
        _cleanup_(json_freep) Json *j = json_new(f, true);

        if (!j)
                return;
        json_object_begin(j);
        json_kv_bool(j, "reloaded", k >= 0);
        json_kv_string(j, "refused", k >= 0 ? NULL : k == -EINVAL ? "errors in the files" : strerror(-k));
        json_kv_uint(j, "policies", d->p->decide.policies->n);
        json_kv_string(j, "pass", k < 0 ? NULL : pk < 0 ? strerror(-pk) : "ok");
        json_kv_uint(j, "errors", dg->n_errors);
        json_kv_uint(j, "warnings", dg->n_warnings);
        json_key(j, "diagnostics");
        report_print_diagnostics_json(j, dg);
        json_object_end(j);
}

/* cgroup_root moved and the pass built the new tree: the old one goes
 * (only what the journal says topod made there). The systemd driver's
 * slices are its units' to remove. */
static void retire_old_root(Daemon *d, const char *old_root) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        Reconciler rc = reconciler(d);
        int k;

        if (!old_root || !d->p->decide.config->cgroup_root || streq(old_root, d->p->decide.config->cgroup_root))
                return;
        if (d->writers.unit_bus) {
                log_notice(d, "cgroup_root moved from %s to %s: the old slices stay until topod stops (stopping a "
                              "slice would end whatever else is still in it)", old_root, d->p->decide.config->cgroup_root);
                return;
        }
        k = reconcile_retire_cgroup_root(&rc, old_root, &r);
        if (k < 0) {
                log_error(d, "cgroup_root moved from %s to %s: the old tree stays: %s", old_root,
                          d->p->decide.config->cgroup_root, strerror(-k));
                return;
        }
        log_info(d, "cgroup_root moved from %s to %s: the old tree removed (%u done, %u already so, %u failed)",
                 old_root, d->p->decide.config->cgroup_root, r->counts[RECONCILE_DONE], r->counts[RECONCILE_ALREADY],
                 r->counts[RECONCILE_FAILED]);
        for (size_t i = 0; i < r->n; i++)
                if (r->items[i].status == RECONCILE_FAILED)
                        log_warning(d, "old tree: %s: %s, ignoring", r->items[i].what, r->items[i].reason ?: "failed");
}

int reload(Daemon *d, bool json, char **ret_messages) {
        _cleanup_(diag_freep) Diagnostics *dg = diag_new();
        _cleanup_free_ char *text = NULL, *old_root = NULL;
        size_t len = 0;
        FILE *f;
        int k, pk = 0;

        if (!dg)
                return -ENOMEM;
        /* The tree in place now: taken down if the new one is elsewhere. */
        if (d->p->decide.config && d->p->decide.config->cgroup_root &&
            !(old_root = strdup(d->p->decide.config->cgroup_root)))
                return -ENOMEM;
        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, pipeline_now_usec());
        k = pipeline_reload(d->p, dg);
        log_diagnostics(d, dg);
        d->reloads.count++;
        plan_reply_forget(d);
        free(d->reloads.last);
        if (k < 0) {
                log_error(d, "reload refused (%s): the running policy stays in force",
                          k == -EINVAL ? "errors above" : strerror(-k));
                d->reloads.refused++;
                metrics_changed(d);
                d->reloads.last = dg->n > 0 ? strdup(dg->items[0].message) : strdup(strerror(-k));
        } else {
                /* The plan in force names policies of the set just freed
                 * (indexes, feature and mode names): drop it before
                 * anything can read it; until the pass below makes a new
                 * one, calls answer "not ready". */
                (void) pipeline_use_plan(d->p, NULL);
                d->pass.plan = plan_free(d->pass.plan);
                d->paused = false;
                log_set_config_level(&d->log, (int) d->p->decide.config->log_level);
                pk = pass(d, PASS_RELOAD);
                if (pk < 0)
                        log_error(d, "reloaded %zu policies, but the pass after it failed: %s", d->p->decide.policies->n,
                                  strerror(-pk));
                else {
                        log_info(d, "reloaded: %zu policies", d->p->decide.policies->n);
                        retire_old_root(d, old_root);
                }
                d->reloads.last = pk < 0 ? strdup("ok, but the pass after it failed") : strdup("ok");
        }
        f = open_memstream(&text, &len);
        if (f && json) {
                print_json(f, d, dg, k, pk);
                fclose(f);
        } else if (f) {
                report_print_diagnostics(f, dg);
                if (k < 0)
                        fprintf(f, "reload refused (%s): the running policy stays in force\n",
                                k == -EINVAL ? "errors above" : strerror(-k));
                else if (pk < 0)
                        fprintf(f, "reloaded: %zu policies, but the pass after it failed (%s); the next pass retries\n",
                                d->p->decide.policies->n, strerror(-pk));
                else
                        fprintf(f, "reloaded: %zu policies\n", d->p->decide.policies->n);
                fclose(f);
        }
        (void) sd_notify(false, "READY=1");
        if (ret_messages)
                *ret_messages = TAKE_PTR(text);
        return k;
}

int on_reload(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        (void) s;
        (void) si;
        (void) reload(userdata, false, NULL);
        return 0;
}

void daemon_reloads_done(DaemonReloads *r) {
        r->last = mfree(r->last);
}
