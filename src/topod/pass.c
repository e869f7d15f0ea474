/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A pass: the scan of every thread, the plan, the apply of what differs;
 * and the fast path, which places what exec'd or was born from the plan in
 * force between passes. Its own file: the loop (daemon.c), the placer, a
 * reload and an Explain call all run passes, and all place through here. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "base/macro.h"
#include "daemon-internal.h"

static const char *const pass_cause_names[_PASS_CAUSE_MAX] = {
        [PASS_TIMER] = "timer", [PASS_STORM] = "timer, exec storm", [PASS_SOON] = "soon",
        [PASS_RELOAD] = "reload", [PASS_EXPLAIN] = "explain",
};

Reconciler reconciler(const Daemon *d) {
        const DaemonWriters *w = &d->writers;

        return (Reconciler) { .root = d->p->observe.root, .caps = d->p->observe.caps, .journal = w->journal, .cookies = w->cookies,
                              .held = w->held, .pidref = &w->pidref,
                              .unit_ops = w->unit_bus ? &w->unit_ops : NULL,
                              .cgroup_root = d->p->decide.config ? d->p->decide.config->cgroup_root : NULL };
}

/* The pass's figures, and its plan put in force: lent to the fast path
 * when it was applied, and what waited for it placed from it now. */
static void pass_use_plan(Daemon *d, Plan **plan, uint64_t start, uint64_t scanned, uint64_t planned) {
        int k;

        d->pass.count++;
        d->pass.last_usec = pipeline_now_usec();
        d->pass.last_cost_usec = d->pass.last_usec - start;
        d->pass.last_stage_usec[0] = scanned - start;
        d->pass.last_stage_usec[1] = planned - scanned;
        d->pass.last_stage_usec[2] = d->pass.last_usec - planned;
        d->pass.last_yielded_usec = d->pass.yielded_usec;
        /* The fast path borrows the plan in force: let go before freeing
         * it, and lend the new one only when it was applied. */
        (void) pipeline_use_plan(d->p, NULL);
        plan_free(d->pass.plan);
        d->pass.plan = TAKE_PTR(*plan);
        /* Files of groups the new plan may not have: opened again at the
         * next move into each. */
        cgroup_held_close_files(d->writers.held);
        if (!d->paused && (k = pipeline_use_plan(d->p, d->pass.plan)) < 0) {
                log_warning(d, "no fast placement until the next pass: %s", strerror(-k));
                arm_retry(d); /* and what waited for this plan waits for that pass */
        }
        /* What waited for a group during the pass (a policy's first, in
         * an exec storm: dozens), placed from this plan now, not by
         * another pass and its scan. Counted for the storm rate when they
         * came, not again. */
        d->pass.running = false;
        if (!d->paused && d->p->fast->place) {
                uint64_t seen = d->gate.fresh_since_tick;

                if (fast_place(d))
                        arm_soon(d);
                d->gate.fresh_since_tick = seen;
        }
}

/* What the apply did (r, kept for status): its failures, each new count
 * of them once; the debug line; the unit's STATUS=; READY=1 after the
 * first pass. */
/* The scheduler settings this pass skipped (absent here, refused by
 * lockdown), said once: at the first pass and whenever their number
 * changes (a reload that adds or drops one). */
static size_t skipped_settings(const ReconcileReport *r) {
        size_t n = 0;

        for (size_t i = 0; r && i < r->n; i++)
                n += r->items[i].status == RECONCILE_SKIPPED && startswith(r->items[i].what, "setting ");
        return n;
}

static void pass_report(Daemon *d, PassCause cause, ReconcileReport *r, const TaskScanStats *ss) {
        changes_log_report(d, d->pass.plan, r);
        if (skipped_settings(r) > 0 && (d->pass.count == 1 || skipped_settings(r) != skipped_settings(d->pass.report)))
                for (size_t i = 0; i < r->n; i++)
                        if (r->items[i].status == RECONCILE_SKIPPED && startswith(r->items[i].what, "setting "))
                                log_notice(d, "%s: skipped: %s", r->items[i].what, r->items[i].reason ?: "");
        for (size_t i = 0; i < r->n; i++)
                if (r->items[i].status == RECONCILE_FAILED &&
                    (d->pass.count == 1 || r->counts[RECONCILE_FAILED] != d->pass.last_failed))
                        log_warning(d, "%s: %s%s%s", r->items[i].what, r->items[i].reason ?: "", r->items[i].reason ? " " : "",
                              r->items[i].error ? strerror(-r->items[i].error) : "");
        d->pass.last_failed = r->counts[RECONCILE_FAILED];
        log_at(&d->log, LOG_DEBUG,
               "pass %u (%s): %zu tasks, %zu groups; %u changed, %u already so, %u vanished, %u failed; %" PRIu64
               " us (scan %" PRIu64 ", plan %" PRIu64 ", apply %" PRIu64 "; the placer's turns %" PRIu64
               "); %u new processes left to the next scan; the scan read %u threads, kept %u (%s), passed over %u gone and %u dead; %zu processes journaled",
               d->pass.count, pass_cause_names[cause], d->pass.plan->n_tasks, d->pass.plan->n_groups, r->counts[RECONCILE_DONE], r->counts[RECONCILE_ALREADY],
               r->counts[RECONCILE_VANISHED], r->counts[RECONCILE_FAILED], d->pass.last_cost_usec,
               d->pass.last_stage_usec[0], d->pass.last_stage_usec[1], d->pass.last_stage_usec[2],
               d->pass.last_yielded_usec, d->pass.last_deferred, ss->threads_reread, ss->threads_reused,
               ss->by_events ? "by events" : "listing /proc", ss->gone, ss->dead, d->writers.journal ? d->writers.journal->n_tasks : (size_t) 0);
        (void) sd_notifyf(false, "STATUS=%zu policies, %zu tasks managed in %zu groups; last pass: %u changed, %u failed",
                          d->p->decide.policies->n, d->pass.plan->n_tasks, d->pass.plan->n_groups, r->counts[RECONCILE_DONE],
                          r->counts[RECONCILE_FAILED]);
        reconcile_report_free(d->pass.report);
        d->pass.report = TAKE_PTR(r);
        if (!d->ready) {
                d->ready = true;
                (void) sd_notify(false, "READY=1");
                log_info(d, "ready: %zu tasks managed in %zu groups", d->pass.plan->n_tasks, d->pass.plan->n_groups);
        }
}

/* The [when] forced_idle bands after a pass: each policy that entered or
 * left force by its band, said once, with the figure. */
static void measure_forced_idle(Daemon *d) {
        const PolicySet *ps = d->p->decide.policies;
        _cleanup_free_ bool *was = malloc(MAX(ps->n, (size_t) 1) * sizeof(bool));
        int k;

        if (was)
                memcpy(was, d->p->decide.in_force, ps->n * sizeof(bool));
        k = was ? pipeline_measure_forced_idle(d->p, d->pass.plan) : -ENOMEM;
        if (k < 0) {
                log_warning(d, "cannot measure the groups' forced idle: %s", strerror(-k));
                return;
        }
        for (size_t i = 0; k > 0 && i < ps->n; i++) {
                const Policy *p = ps->policies[i];
                const PolicyIdle *pi = &d->p->decide.idle[i];

                if (was[i] == d->p->decide.in_force[i] || !p->has_when || !p->when.has_forced_idle)
                        continue;
                log_notice(d, "policy %s %s force: its groups' SMT siblings were kept idle %u.%u%% of their CPU time "
                              "([when] forced_idle = %u-%u%%, %s:%u)",
                           p->name, d->p->decide.in_force[i] ? "entered" : "left", pi->share_permille / 10u,
                           pi->share_permille % 10u, p->when.forced_idle_low, p->when.forced_idle_high, p->file,
                           p->when.forced_idle_line);
        }
}

/* One pass: scan, plan, reconcile only what differs. Paused, it only
 * observes (explain still answers). */
/* The journal file changed by someone else since topod wrote it (found
 * now, or by a commit since the last pass): said, and topod's own written
 * back in its place (the other moved aside, journal.h). */
static void journal_notice_foreign(Daemon *d) {
        Journal *j = d->writers.journal;
        _cleanup_free_ char *what = NULL, *what_log = NULL;
        int k, kl;

        if (!j)
                return;
        if (j->foreign) {
                log_warning(d, "%s/journal was changed by another writer since topod wrote it: %s", j->dir, j->foreign);
                j->foreign = mfree(j->foreign);
        }
        if (j->foreign_log) {
                log_warning(d, "%s/" JOURNAL_LOG_NAME " was changed by another writer since topod wrote it: %s", j->dir,
                            j->foreign_log);
                j->foreign_log = mfree(j->foreign_log);
        }
        k = journal_check_file(j, &what);
        if (k < 0)
                log_warning(d, "cannot look at %s/journal: %s, ignoring", j->dir, strerror(-k));
        kl = journal_check_log(j, &what_log);
        if (kl < 0)
                log_warning(d, "cannot look at %s/" JOURNAL_LOG_NAME ": %s, ignoring", j->dir, strerror(-kl));
        if (k <= 0 && kl <= 0)
                return;
        if (k > 0)
                log_warning(d, "%s/journal was changed by another writer since topod wrote it: %s; topod's entries "
                               "written back", j->dir, what);
        if (kl > 0)
                log_warning(d, "%s/" JOURNAL_LOG_NAME " was changed by another writer since topod wrote it: %s; "
                               "topod's entries written back into %s/journal", j->dir, what_log, j->dir);
        if ((k = journal_commit(j)) < 0)
                log_error(d, "cannot write %s/journal: %s", j->dir, strerror(-k));
}

static int pass_run(Daemon *d, PassCause cause) {
        _cleanup_(plan_freep) Plan *plan = NULL;
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        Reconciler rc = reconciler(d);
        uint64_t start = pipeline_now_usec(), scanned, planned;
        TaskScanStats ss;
        int k;

        /* What exec'd since the last events: placed now, not after the
         * scan, the plan and the apply (the scan would take it from the
         * fast path). */
        pipeline_drain_events(d->p);
        (void) fast_place(d);
        /* Where the placer runs, the pass lets it in between processes
         * (pass_yield()) and leaves alone what changed meanwhile; what an
         * exec storm's scan left, it leaves alone wherever it runs. */
        rc.yield = pipeline_yield_hooks(d->p);
        d->pass.yielded_usec = 0;
        d->pass.slice_start_usec = start;
        /* Where processes are is read afresh by this pass's moves, which
         * remember it for the fast path until the next pass (a pass that
         * fails early leaves none older than that). */
        cgroup_held_forget_origins(d->writers.held);
        journal_notice_foreign(d);
        if ((k = (cause == PASS_STORM ? pipeline_sample_deferring : pipeline_sample)(d->p, false)) < 0) {
                log_error(d, "scanning /proc failed: %s", strerror(-k));
                return k;
        }
        scanned = pipeline_now_usec();
        task_scanner_stats(d->p->observe.scanner, &ss);
        d->pass.last_deferred = ss.deferred;
        /* What forbids cookies can change while topod runs (a sched_ext
         * scheduler loaded, SMT switched off), and with it the CPUs online
         * and the policies in force. Read at every pass, so that this plan
         * and the cookie worker follow. */
        (void) refresh_machine(d);
        /* The scheduler settings as the kernel has them now (an operator,
         * tuned or the kernel itself may have written one): the plan's
         * account of who decides the LLC, and status, read them. */
        if (kernelcaps_refresh_settings(d->p->observe.caps, d->p->observe.root) == -ENOMEM)
                log_warning(d, "cannot read the scheduler settings again: %s, ignoring", strerror(ENOMEM));
        if ((k = pipeline_plan(d->p, d->writers.journal, &plan)) < 0) {
                log_error(d, "planning failed: %s", strerror(-k));
                return k;
        }
        planned = pipeline_now_usec();
        if (!d->paused && (k = reconcile_apply(&rc, plan, &r)) < 0) {
                log_error(d, "apply failed: %s", strerror(-k));
                return k;
        }
        /* and as this pass left them, for status until the next */
        if (!d->paused)
                (void) kernelcaps_refresh_settings(d->p->observe.caps, d->p->observe.root);
        pass_use_plan(d, &plan, start, scanned, planned);
        /* the groups' concurrency, for the next plan's emulated concur */
        if (!d->paused && (k = pipeline_measure(d->p, d->pass.plan)) < 0)
                log_warning(d, "cannot measure the groups' concurrency: %s", strerror(-k));
        /* and their forced idle, for the [when] forced_idle bands */
        if (!d->paused)
                measure_forced_idle(d);
        if (r)
                pass_report(d, cause, TAKE_PTR(r), &ss);
        return 0;
}

static bool soon_armed(Daemon *d) {
        int enabled;

        return d->sources.soon && sd_event_source_get_enabled(d->sources.soon, &enabled) >= 0 && enabled != SD_EVENT_OFF;
}

int pass(Daemon *d, PassCause cause) {
        bool asked = d->pass.wanted || soon_armed(d);
        unsigned passes_before = d->pass.count;
        int k;

        /* What the fast path asked a pass for before this one began,
         * this one does (its scan sees it): a pass armed 'soon' before a
         * timer pass would follow it at once, for nothing. Not an exec
         * storm's pass: it leaves what the fast path placed since the last
         * scan to the next (a process moved whose cookie failed, say).
         * What the fast path asks for during this one arms it again after. */
        if (cause != PASS_STORM) {
                d->pass.wanted = false;
                if (d->sources.soon)
                        (void) sd_event_source_set_enabled(d->sources.soon, SD_EVENT_OFF);
        }
        /* The placer, placing in its yields, leaves to it what waits
         * for a group (fast_place()). */
        d->pass.running = true;
        k = pass_run(d, cause);
        d->pass.running = false;
        metrics_note_pass(d, k, passes_before);
        /* Failed before its plan was in use: what was asked of it, and
         * what waited for it, are not done. Again in a while (not in 2 ms:
         * it may fail again), whatever the idle gate or a storm say. */
        if (k < 0 && !d->paused && (asked || d->pass.wanted || pipeline_waiting_for_plan(d->p)))
                arm_retry(d);
        return k;
}

/* The fast path: place the processes that exec'd or were born since the
 * last call, from the plan in force (decide/place.h). Returns whether a
 * pass is needed soon for what it left: a policy with no group yet, a class
 * to wait for, kernel-wide settings, a failure. */
bool fast_place(Daemon *d) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        FastPathStats st = {};
        Reconciler rc;
        int k;

        if (d->paused || !d->p->fast->place)
                return true;
        rc = reconciler(d);
        k = pipeline_place_fresh(d->p, &rc, &st, &r);
        if (k < 0)
                return true;
        if (r)
                changes_log_placements(d, d->p->fast->plan, d->p->fast->batch, d->p->fast->n_batch);
        d->gate.fast_placed += st.placed;
        d->gate.fresh_since_tick += st.seen;
        for (size_t i = 0; r && i < r->n; i++)
                if (r->items[i].status == RECONCILE_FAILED)
                        log_warning(d, "%s: %s%s%s", r->items[i].what, r->items[i].reason ?: "",
                                    r->items[i].reason ? " " : "", r->items[i].error ? strerror(-r->items[i].error) : "");
        /* What waits for a group during a pass is placed from its plan
         * (pass_run()): no pass after it for that. */
        return st.left > (d->pass.running ? st.waiting : 0) || st.kernel > 0;
}

/* From the loop: the fast path, and a pass soon for what it left. */
void place_fresh(Daemon *d) {
        unsigned placed = d->gate.fast_placed;

        if (fast_place(d))
                arm_soon(d);
        if (d->gate.fast_placed != placed)
                metrics_changed(d);
}

void pass_book_done(PassBook *b) {
        b->plan = plan_free(b->plan);
        b->report = reconcile_report_free(b->report);
}
