/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "daemon.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "apply/cookie.h"
#include "apply/reconcile.h"
#include "base/macro.h"
#include "pipeline/pipeline.h"
#include "restore.h"

/* Process events are batched: a burst of execs costs one pass. */
#define DAEMON_EVENT_DELAY_USEC 2000u

typedef struct Daemon {
        const DaemonArgs *args;
        sd_event *event;
        sd_event_source *timer, *soon;
        Pipeline *p;
        Journal *journal;
        CookieApplier *cookies;
        unsigned passes;
        unsigned last_failed;
        bool ready;
} Daemon;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        fputs("topod: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

/* One pass: scan, plan, reconcile only what differs. */
static int pass(Daemon *d) {
        _cleanup_(plan_freep) Plan *plan = NULL;
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        Reconciler rc = { .root = d->p->root, .caps = d->p->caps, .journal = d->journal, .cookies = d->cookies };
        int k;

        if ((k = pipeline_sample(d->p, false)) < 0) {
                logf_("scanning /proc failed: %s", strerror(-k));
                return k;
        }
        if ((k = pipeline_plan(d->p, &plan)) < 0) {
                logf_("planning failed: %s", strerror(-k));
                return k;
        }
        if ((k = reconcile_apply(&rc, plan, &r)) < 0) {
                logf_("apply failed: %s", strerror(-k));
                return k;
        }
        d->passes++;
        for (size_t i = 0; i < r->n; i++)
                if (r->items[i].status == RECONCILE_FAILED && (d->passes == 1 || r->counts[RECONCILE_FAILED] != d->last_failed))
                        logf_("%s: %s%s%s", r->items[i].what, r->items[i].reason ?: "", r->items[i].reason ? " " : "",
                              r->items[i].error ? strerror(-r->items[i].error) : "");
        d->last_failed = r->counts[RECONCILE_FAILED];
        (void) sd_notifyf(false, "STATUS=%zu tasks managed, %zu groups; last pass: %u changed, %u failed", plan->n_tasks,
                          plan->n_groups, r->counts[RECONCILE_DONE], r->counts[RECONCILE_FAILED]);
        if (!d->ready) {
                d->ready = true;
                (void) sd_notify(false, "READY=1");
                logf_("ready: %zu tasks managed in %zu groups", plan->n_tasks, plan->n_groups);
        }
        return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Daemon *d = userdata;

        (void) pass(d);
        (void) sd_event_source_set_time(s, usec + d->p->config->sample_interval_usec);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int on_soon(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) s;
        (void) usec;
        (void) pass(userdata); /* a failed pass is logged; the loop goes on */
        return 0;
}

static int on_events(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Daemon *d = userdata;

        (void) s;
        (void) fd;
        (void) revents;
        /* The pipeline marks what the events touched; a pass soon after
         * places new and exec'd tasks without waiting for the timer. */
        pipeline_drain_events(d->p);
        if (d->soon)
                return sd_event_source_set_enabled(d->soon, SD_EVENT_ONESHOT) < 0
                               ? 0
                               : sd_event_source_set_time_relative(d->soon, DAEMON_EVENT_DELAY_USEC);
        return 0;
}

static int on_term(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Daemon *d = userdata;

        (void) s;
        logf_("%s: stopping", strsignal((int) si->ssi_signo));
        (void) sd_notify(false, "STOPPING=1");
        return sd_event_exit(d->event, 0);
}

/* SIGHUP: the new configuration is parsed and checked whole before
 * anything changes; a bad one is refused (file:line logged) and the running
 * policy stays in force; a good one is swapped in and reconciled, changing
 * only what differs. */
static int on_reload(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Daemon *d = userdata;
        _cleanup_(diag_freep) Diagnostics *dg = diag_new();
        int k;

        (void) s;
        (void) si;
        if (!dg)
                return 0;
        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, pipeline_now_usec());
        k = pipeline_reload(d->p, dg);
        for (size_t i = 0; i < dg->n; i++)
                fprintf(stderr, "%s:%u: %s: %s\n", dg->items[i].file, dg->items[i].line,
                        dg->items[i].severity == DIAG_ERROR ? "error" : "warning", dg->items[i].message);
        if (k < 0)
                logf_("reload refused (%s): the running policy stays in force", k == -EINVAL ? "errors above" : strerror(-k));
        else {
                logf_("reloaded: %zu policies", d->p->policies->n);
                (void) pass(d);
        }
        (void) sd_notify(false, "READY=1");
        return 0;
}

static void restore_all(Daemon *d, const char *why) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        _cleanup_free_ char *dir = NULL;
        Reconciler rc = { .root = d->p->root, .caps = d->p->caps, .journal = d->journal, .cookies = d->cookies };

        if (journal_is_empty(d->journal))
                return;
        if (reconcile_restore(&rc, &r) < 0) {
                logf_("%s: restore failed", why);
                return;
        }
        logf_("%s: restored (%u done, %u failed)", why, r->counts[RECONCILE_DONE], r->counts[RECONCILE_FAILED]);
        if (journal_is_empty(d->journal) && restore_state_dir(d->args->state_dir, d->p->root, &dir) >= 0)
                (void) journal_remove(dir);
}

int topod_run(const DaemonArgs *a) {
        _cleanup_(diag_freep) Diagnostics *dg = diag_new();
        _cleanup_free_ char *reason = NULL;
        PipelineOptions o = { .root = a->root, .config = a->config, .policies = a->policies, .events = true };
        Daemon d = { .args = a };
        sigset_t mask;
        bool found = false;
        int k, r = EXIT_FAILURE;

        if (!dg)
                return EXIT_FAILURE;
        /* Block the stop signals first: one that arrives while starting
         * (recovering a journal, the first scan) is then handled by the
         * loop, with a restore, instead of killing us half-way. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return EXIT_FAILURE;
        k = pipeline_new(&o, dg, &d.p, &reason);
        for (size_t i = 0; i < dg->n; i++)
                fprintf(stderr, "%s:%u: %s: %s\n", dg->items[i].file, dg->items[i].line,
                        dg->items[i].severity == DIAG_ERROR ? "error" : "warning", dg->items[i].message);
        if (k < 0) {
                logf_("%s", reason ?: strerror(-k));
                return EXIT_FAILURE;
        }
        if (!d.p->events)
                logf_("proc connector unavailable (%s): new tasks are found by scanning every %" PRIu64 " ms",
                      strerror(-d.p->events_error), d.p->config->sample_interval_usec / 1000);
        if (restore_open_journal(a->state_dir, d.p->root, &d.journal, &found) < 0)
                goto finish;
        if (d.p->caps->core_sched.available && cookie_applier_new(d.p->root, NULL, &d.cookies) >= 0) {
                CookieInterlocks il = { .smt_off = !d.p->caps->smt_active, .sched_ext_active = d.p->caps->sched_ext_active };
                cookie_applier_set_interlocks(d.cookies, &il);
        }
        if (found)
                /* A journal left by a crash: put the machine back first, so
                 * this run starts from the true originals. */
                restore_all(&d, "recovering the journal of an earlier run");

        if ((k = sd_event_default(&d.event)) < 0 ||
            (k = sd_event_add_signal(d.event, NULL, SIGTERM, on_term, &d)) < 0 ||
            (k = sd_event_add_signal(d.event, NULL, SIGINT, on_term, &d)) < 0 ||
            (k = sd_event_add_signal(d.event, NULL, SIGHUP, on_reload, &d)) < 0 ||
            (k = sd_event_add_time_relative(d.event, &d.timer, CLOCK_MONOTONIC, 0, 0, on_timer, &d)) < 0 ||
            (k = sd_event_add_time_relative(d.event, &d.soon, CLOCK_MONOTONIC, DAEMON_EVENT_DELAY_USEC, 0, on_soon, &d)) < 0 ||
            (k = sd_event_source_set_enabled(d.soon, SD_EVENT_OFF)) < 0) {
                logf_("cannot set up the event loop: %s", strerror(k < 0 ? -k : errno));
                goto finish;
        }
        if (d.p->events &&
            (k = sd_event_add_io(d.event, NULL, proc_events_fd(d.p->events), EPOLLIN, on_events, &d)) < 0) {
                logf_("cannot watch the proc connector: %s", strerror(-k));
                goto finish;
        }
        k = sd_event_loop(d.event);
        if (k < 0)
                logf_("event loop failed: %s", strerror(-k));
        if (d.p->config->restore_on_exit)
                restore_all(&d, "stopping");
        else
                logf_("restore_on_exit = no: changes stay; 'topoctl reset' puts them back");
        r = k < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
finish:
        sd_event_source_unref(d.timer);
        sd_event_source_unref(d.soon);
        sd_event_unref(d.event);
        cookie_applier_free(d.cookies);
        journal_free(d.journal);
        pipeline_free(d.p);
        return r;
}
