/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "daemon.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "apply/cookie.h"
#include "apply/reconcile.h"
#include "base/json.h"
#include "base/macro.h"
#include "base/sched-attr.h"
#include "bus.h"
#include "common/report.h"
#include "common/state-dir.h"
#include "explain.h"
#include "log.h"
#include "observe/observe-print.h"
#include "observe/sysload.h"
#include "pipeline/pipeline.h"
#include "pipeline/plan-diff.h"
#include "sandbox.h"

/* Process events are batched: a burst of execs costs one pass. The timer
 * fires within DAEMON_EVENT_ACCURACY_USEC of that (sd-event's default, 0,
 * is 250 ms: the first exec storm of a policy, which waits for this pass
 * to make its group, had a p99 of 80-350 ms at 200 execs/s on the 2-core
 * VM, and once 47 of 200 probes timed out at 1 s; 6-8 ms with 1 ms). */
#define DAEMON_EVENT_DELAY_USEC 2000u
#define DAEMON_EVENT_DELAY_MAX_USEC 20000u
#define DAEMON_EVENT_ACCURACY_USEC 1000u
/* A pass that failed with work left for it (what the fast path asked for,
 * what waited for its plan) is tried again after this long. */
#define DAEMON_PASS_RETRY_USEC 1000000u
/* Explain of a task the last scan did not see runs a pass, at most this
 * often. */
#define DAEMON_EXPLAIN_PASS_USEC 100000u
/* A Plan reply (the plan compared with the machine: a read of every
 * managed process's cgroup, with the lock held) is made at most this often
 * and given again meanwhile: any user may ask, as often as they like. */
#define DAEMON_PLAN_REPLY_USEC 1000000u
/* Where the kernel splits the proc connector's events: how often forks and
 * exits alone may wake us. In the test guest at 20 execs/s, 50 ms cost the
 * main thread 520 ms of CPU over 5 s (a wake-up per fork: a read, a timer,
 * the lock taken beside the placer, and the fork's child read when the
 * placer had not yet placed it), 200 ms about 80 ms beside its passes. */
#define DAEMON_LAZY_EVENTS_USEC 200000u
#define DAEMON_LAZY_EVENTS_ACCURACY_USEC 10000u
/* Ends the placer's wait for exec events (placer_stop()), sent again this
 * often until it has ended. */
#define DAEMON_PLACER_SIGNAL (SIGRTMIN + 1)
#define DAEMON_PLACER_STOP_RETRY_NSEC 10000000L
/* The placer's scheduler slice request (placer_slice()): the shortest the
 * kernel takes (it clamps to 0.1-100 ms). */
#define DAEMON_PLACER_SLICE_NSEC 100000u
/* Read errors in a row after which the placer gives the socket to the
 * loop (one alone only makes the next scan read everything). */
#define DAEMON_PLACER_ERRORS_MAX 8u
/* Policies named on status's text line; --json lists them all. */
#define DAEMON_STATUS_POLICIES_MAX 8u
/* While the idle gate holds, a pass comes at least every this many
 * rescan_intervals. */
#define DAEMON_IDLE_RESCAN_FACTOR 5u
/* During an exec storm (at least DAEMON_STORM_RATE new processes a second)
 * the sample pass waits at most this many intervals. */
#define DAEMON_STORM_DEFER_MAX 5u
#define DAEMON_STORM_RATE 10u
/* A pass lets a waiting placer in only after holding the lock this long
 * since it last took it: each placement waits at most that (and one
 * process's worth of the pass), and a pass during an exec storm still
 * gets a share of the lock (one process per turn of a busy placer made a
 * pass 20 s long under ThreadSanitizer at 500 execs/s). */
#define DAEMON_PASS_SLICE_USEC 2000u

typedef struct Daemon {
        const DaemonArgs *args;
        Log log;
        sd_event *event;
        sd_event_source *timer, *soon;
        sd_event_source *lazy_events; /* forks and exits, when the kernel splits them off */
        sd_event_source *lazy_tick;   /* drains them meanwhile (on_lazy_events()) */
        uint64_t soon_first_usec;     /* when the armed 'soon' pass was first asked for */
        Pipeline *p;
        Journal *journal;
        CookieApplier *cookies;
        CgroupHeld *held; /* held for the groups of the plan in force */
        PidRefOps pidref; /* the kernel's, naming pinned processes by pidfd inode where it can */

        /* The placer (placer_main()): everything above is touched only
         * with the lock held (lock_take()), which the loop holds but while
         * it waits. The lock: a ticket, served in turn. */
        pthread_mutex_t mutex;
        pthread_cond_t lock_turn;
        unsigned lock_next, lock_serving;
        pthread_t placer;
        bool placer_running;
        bool placer_failed;
        bool placer_stopping;            /* it is to end (placer_stop()) */
        int placer_soon;                 /* eventfd: the placer asks the loop for a pass */
        sd_event_source *placer_soon_source;
        BusServer *bus;
        char *state_dir;
        int lock;                /* on state_dir: one topod per state directory */

        Plan *plan;              /* in force: the last pass's */
        ReconcileReport *report; /* what the last pass did */
        uint64_t started_usec, last_pass_usec, last_pass_cost_usec;
        uint64_t last_pass_stage_usec[3]; /* of that: scan, plan, apply */
        uint64_t pass_yielded_usec, last_pass_yielded_usec; /* of that: the placer's, in pass_yield() */
        unsigned last_pass_deferred; /* new processes its scan left to the next (an exec storm's) */
        uint64_t watchdog_usec;   /* WatchdogSec=, 0 without */
        uint64_t slice_start_usec; /* when the pass last took the lock */
        uint64_t last_yield_ping_usec;
        unsigned passes;
        unsigned last_failed;
        bool ready;
        bool paused;             /* topoctl reset: observe, apply nothing, until a reload */
        bool restoring;          /* in restore_all(): what changes meanwhile is its own to act on */
        /* These two, with the lock held, as what is above the placer's. */
        bool in_pass;            /* a pass runs (the placer places in its yields) */
        bool pass_wanted;        /* the placer asked for a pass (placer_soon) since the last began */

        SysLoad load;            /* /proc/stat at the last timer pass */
        uint64_t own_usec;       /* our CPU time then */
        uint64_t own_switches;   /* our context switches then */
        bool have_load;
        uint64_t last_scan_usec; /* the last timer pass that scanned */
        uint64_t last_scan_end_usec; /* when it ended */
        unsigned idle_skips;
        unsigned fast_placed;    /* processes the fast path placed */
        uint64_t fresh_since_tick; /* new processes the fast path looked at since the last timer tick */
        uint64_t fresh_since_usec; /* that tick */
        unsigned storm_defers;
        uint64_t last_explain_pass_usec;
        char *plan_reply[2];          /* the last Plan reply, text [0] and JSON [1] */
        uint64_t plan_reply_usec[2];
        uint64_t plan_reply_passes[2]; /* d->passes when it was made */

        unsigned reloads, reloads_refused;
        char *last_reload;       /* one line: when and how the last reload went */
} Daemon;

#define log_error(d, ...) log_at(&(d)->log, LOG_ERR, __VA_ARGS__)
#define log_warning(d, ...) log_at(&(d)->log, LOG_WARNING, __VA_ARGS__)
#define log_notice(d, ...) log_at(&(d)->log, LOG_NOTICE, __VA_ARGS__)
#define log_info(d, ...) log_at(&(d)->log, LOG_INFO, __VA_ARGS__)
#define log_debug(d, ...) log_at(&(d)->log, LOG_DEBUG, __VA_ARGS__)

static Reconciler reconciler(const Daemon *d) {
        return (Reconciler) { .root = d->p->root, .caps = d->p->caps, .journal = d->journal, .cookies = d->cookies,
                              .held = d->held, .pidref = &d->pidref };
}

static bool fast_place(Daemon *d);

/* Why a pass runs, for the debug log. */
typedef enum PassCause {
        PASS_TIMER,   /* the sample interval */
        PASS_STORM,   /* the sample interval, during an exec storm: the
                       * processes the fast path placed since the last scan
                       * are left to the next (pipeline_sample_deferring()) */
        PASS_SOON,    /* the fast path left something, or the placer asked */
        PASS_RELOAD,
        PASS_EXPLAIN, /* a call about a process the last scan did not see */
        _PASS_CAUSE_MAX,
} PassCause;

static const char *const pass_cause_names[_PASS_CAUSE_MAX] = {
        [PASS_TIMER] = "timer", [PASS_STORM] = "timer, exec storm", [PASS_SOON] = "soon",
        [PASS_RELOAD] = "reload", [PASS_EXPLAIN] = "explain",
};

static void arm_soon(Daemon *d);
static void arm_retry(Daemon *d);

/* The Plan replies kept (DAEMON_PLAN_REPLY_USEC), dropped when what they
 * say changed without a pass: a reload, a reset. */
static void plan_reply_forget(Daemon *d) {
        for (size_t i = 0; i < ELEMENTSOF(d->plan_reply); i++)
                d->plan_reply[i] = mfree(d->plan_reply[i]);
}

static int restore_all(Daemon *d, const char *why, ReconcileReport **ret);

/* The cookie worker's interlocks, from the capabilities as last read. */
static void set_interlocks(Daemon *d) {
        CookieInterlocks il = { .smt_off = !d->p->caps->smt_active, .sched_ext_active = d->p->caps->sched_ext_active };

        if (d->cookies)
                cookie_applier_set_interlocks(d->cookies, &il);
}

/* SMT or sched_ext changed under us. The plan that follows gives no
 * cookies while either forbids them, and the apply clears those topod gave
 * (clearing is allowed beside sched_ext; with SMT off the kernel refuses
 * every call, and the journal keeps them for later). The worker lets go
 * of its keep-alive cookie: with the last cookie gone, the kernel switches
 * core scheduling off, which is the point beside sched_ext. */
static void interlocks_changed(Daemon *d) {
        const KernelCaps *c = d->p->caps;

        set_interlocks(d);
        if (c->sched_ext_active) {
                log_warning(d, "a sched_ext scheduler (%s) is now %s: no more cookies, and those topod gave are "
                               "cleared (core scheduling with sched_ext is reported to hang hosts)",
                            c->sched_ext_ops ?: "unnamed", c->sched_ext_state ?: "enabled");
                if (d->cookies) {
                        Reconciler rc = reconciler(d);
                        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;

                        /* Those inherited first: the values of the
                         * journaled ones, which the apply clears, tell
                         * them. */
                        if (reconcile_clear_inherited_cookies(&rc, &r) >= 0 && r && r->n > 0)
                                log_notice(d, "cleared %u cookies threads had inherited (%u failed)",
                                           r->counts[RECONCILE_DONE], r->counts[RECONCILE_FAILED]);
                        (void) cookie_applier_release(d->cookies);
                }
        } else if (!c->smt_active)
                log_warning(d, "SMT is now off: no cookies until it is on again");
        else if (!c->core_sched.available)
                log_notice(d, "SMT is on and no sched_ext scheduler runs, but core scheduling is unavailable: %s",
                           c->core_sched.reason ?: "unknown");
        else if (!d->cookies)
                log_notice(d, "SMT is on and no sched_ext scheduler runs, but topod's cookie worker could not be "
                              "started: no cookies until topod is restarted");
        else {
                log_notice(d, "SMT is on and no sched_ext scheduler runs: cookies are given");
                /* Paused by a reset while SMT was off, which left cookies
                 * in the journal: no pass applies anything now, so they
                 * are cleared here (running, the next pass does it). */
                if (d->paused && !d->restoring && d->journal && d->journal->n_cookies > 0)
                        (void) restore_all(d, "SMT is on again after a reset", NULL);
        }
}

/* What forbids cookies, read again (two files); acted on when it changed.
 * Whether it did. */
static bool refresh_interlocks(Daemon *d) {
        if (kernelcaps_refresh_interlocks(d->p->caps, d->p->root, NULL) <= 0)
                return false;
        interlocks_changed(d);
        return true;
}

/* Which policies are in force, after the load (read here: one file) and
 * SMT as last read; each one that entered or left force is said. Whether
 * any did: the plan in use was made without it. */
static bool refresh_in_force(Daemon *d) {
        const PolicySet *ps = d->p->policies;
        _cleanup_free_ bool *was = malloc(MAX(ps->n, (size_t) 1) * sizeof(bool));
        char load[32] = "unreadable";

        if (!was)
                return false;
        memcpy(was, d->p->in_force, ps->n * sizeof(bool));
        if (pipeline_refresh_in_force(d->p, true) == 0)
                return false;
        if (d->p->have_load)
                snprintf(load, sizeof(load), "%u%%", d->p->load_percent);
        for (size_t i = 0; i < ps->n; i++)
                if (was[i] != d->p->in_force[i])
                        log_notice(d, "policy %s (%s) %s force: [when] %s now (load %s, SMT %s, %u CPUs)",
                                   ps->policies[i]->name, ps->policies[i]->file, d->p->in_force[i] ? "enters" : "leaves",
                                   d->p->in_force[i] ? "holds" : "does not hold", load,
                                   d->p->caps->smt_active ? "on" : "off", d->p->topology->n_pus);
        plan_reply_forget(d);
        return true;
}

/* What can change under a running topod and changes its plan: the
 * interlocks (SMT, sched_ext), the CPUs online (SMT switched on brings
 * siblings online one by one: read again until the list stays), and so
 * which policies are in force (the load, SMT, the CPU counts of [when]).
 * Four small files. Whether anything changed. */
static bool refresh_machine(Daemon *d) {
        bool changed = refresh_interlocks(d);
        int k = pipeline_refresh_topology(d->p);

        if (k < 0)
                log_warning(d, "the CPUs online changed, but the topology cannot be read again (%s): planning goes on "
                               "with the CPUs before; tried again at the next tick",
                            strerror(-k));
        else if (k > 0) {
                log_notice(d, "the CPUs online changed: topology read again, %u CPUs", d->p->topology->n_pus);
                plan_reply_forget(d);
                changed = true;
        }
        return refresh_in_force(d) || changed;
}

/* One pass: scan, plan, reconcile only what differs. Paused, it only
 * observes (explain still answers). */
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
        d->pass_yielded_usec = 0;
        d->slice_start_usec = start;
        /* Where processes are is read afresh by this pass's moves, which
         * remember it for the fast path until the next pass (a pass that
         * fails early leaves none older than that). */
        cgroup_held_forget_origins(d->held);
        if ((k = (cause == PASS_STORM ? pipeline_sample_deferring : pipeline_sample)(d->p, false)) < 0) {
                log_error(d, "scanning /proc failed: %s", strerror(-k));
                return k;
        }
        scanned = pipeline_now_usec();
        task_scanner_stats(d->p->scanner, &ss);
        d->last_pass_deferred = ss.deferred;
        /* What forbids cookies can change while topod runs (a sched_ext
         * scheduler loaded, SMT switched off), and with it the CPUs online
         * and the policies in force. Read at every pass, so that this plan
         * and the cookie worker follow. */
        (void) refresh_machine(d);
        if ((k = pipeline_plan(d->p, &plan)) < 0) {
                log_error(d, "planning failed: %s", strerror(-k));
                return k;
        }
        planned = pipeline_now_usec();
        if (!d->paused && (k = reconcile_apply(&rc, plan, &r)) < 0) {
                log_error(d, "apply failed: %s", strerror(-k));
                return k;
        }
        d->passes++;
        d->last_pass_usec = pipeline_now_usec();
        d->last_pass_cost_usec = d->last_pass_usec - start;
        d->last_pass_stage_usec[0] = scanned - start;
        d->last_pass_stage_usec[1] = planned - scanned;
        d->last_pass_stage_usec[2] = d->last_pass_usec - planned;
        d->last_pass_yielded_usec = d->pass_yielded_usec;
        /* The fast path borrows the plan in force: let go before freeing
         * it, and lend the new one only when it was applied. */
        (void) pipeline_use_plan(d->p, NULL);
        plan_free(d->plan);
        d->plan = TAKE_PTR(plan);
        /* Files of groups the new plan may not have: opened again at the
         * next move into each. */
        cgroup_held_close_files(d->held);
        if (!d->paused && (k = pipeline_use_plan(d->p, d->plan)) < 0) {
                log_warning(d, "no fast placement until the next pass: %s", strerror(-k));
                arm_retry(d); /* and what waited for this plan waits for that pass */
        }
        /* What waited for a group during the pass (a policy's first, in
         * an exec storm: dozens), placed from this plan now, not by
         * another pass and its scan. Counted for the storm rate when they
         * came, not again. */
        d->in_pass = false;
        if (!d->paused && d->p->place) {
                uint64_t seen = d->fresh_since_tick;

                if (fast_place(d))
                        arm_soon(d);
                d->fresh_since_tick = seen;
        }
        /* the groups' concurrency, for the next plan's emulated concur */
        if (!d->paused && (k = pipeline_measure(d->p, d->plan)) < 0)
                log_warning(d, "cannot measure the groups' concurrency: %s", strerror(-k));
        if (!r)
                return 0;
        for (size_t i = 0; i < r->n; i++)
                if (r->items[i].status == RECONCILE_FAILED && (d->passes == 1 || r->counts[RECONCILE_FAILED] != d->last_failed))
                        log_warning(d, "%s: %s%s%s", r->items[i].what, r->items[i].reason ?: "", r->items[i].reason ? " " : "",
                              r->items[i].error ? strerror(-r->items[i].error) : "");
        d->last_failed = r->counts[RECONCILE_FAILED];
        log_at(&d->log, LOG_DEBUG,
               "pass %u (%s): %zu tasks, %zu groups; %u changed, %u already so, %u vanished, %u failed; %" PRIu64
               " us (scan %" PRIu64 ", plan %" PRIu64 ", apply %" PRIu64 "; the placer's turns %" PRIu64
               "); %u new processes left to the next scan; the scan read %u threads, kept %u (%s), passed over %u gone and %u dead; %zu processes journaled",
               d->passes, pass_cause_names[cause], d->plan->n_tasks, d->plan->n_groups, r->counts[RECONCILE_DONE], r->counts[RECONCILE_ALREADY],
               r->counts[RECONCILE_VANISHED], r->counts[RECONCILE_FAILED], d->last_pass_cost_usec,
               d->last_pass_stage_usec[0], d->last_pass_stage_usec[1], d->last_pass_stage_usec[2],
               d->last_pass_yielded_usec, d->last_pass_deferred, ss.threads_reread, ss.threads_reused,
               ss.by_events ? "by events" : "listing /proc", ss.gone, ss.dead, d->journal ? d->journal->n_tasks : (size_t) 0);
        (void) sd_notifyf(false, "STATUS=%zu policies, %zu tasks managed in %zu groups; last pass: %u changed, %u failed",
                          d->p->policies->n, d->plan->n_tasks, d->plan->n_groups, r->counts[RECONCILE_DONE],
                          r->counts[RECONCILE_FAILED]);
        reconcile_report_free(d->report);
        d->report = TAKE_PTR(r);
        if (!d->ready) {
                d->ready = true;
                (void) sd_notify(false, "READY=1");
                log_info(d, "ready: %zu tasks managed in %zu groups", d->plan->n_tasks, d->plan->n_groups);
        }
        return 0;
}

static bool soon_armed(Daemon *d) {
        int enabled;

        return d->soon && sd_event_source_get_enabled(d->soon, &enabled) >= 0 && enabled != SD_EVENT_OFF;
}

static int pass(Daemon *d, PassCause cause) {
        bool asked = d->pass_wanted || soon_armed(d);
        int k;

        /* What the fast path asked a pass for before this one began,
         * this one does (its scan sees it): a pass armed 'soon' before a
         * timer pass would follow it at once, for nothing. Not an exec
         * storm's pass: it leaves what the fast path placed since the last
         * scan to the next (a process moved whose cookie failed, say).
         * What the fast path asks for during this one arms it again after. */
        if (cause != PASS_STORM) {
                d->pass_wanted = false;
                if (d->soon)
                        (void) sd_event_source_set_enabled(d->soon, SD_EVENT_OFF);
        }
        /* The placer, placing in its yields, leaves to it what waits
         * for a group (fast_place()). */
        d->in_pass = true;
        k = pass_run(d, cause);
        d->in_pass = false;
        /* Failed before its plan was in use: what was asked of it, and
         * what waited for it, are not done. Again in a while (not in 2 ms:
         * it may fail again), whatever the idle gate or a storm say. */
        if (k < 0 && !d->paused && (asked || d->pass_wanted || pipeline_waiting_for_plan(d->p)))
                arm_retry(d);
        return k;
}

static void own_usage(uint64_t *ret_usec, uint64_t *ret_switches) {
        struct rusage ru;

        *ret_usec = *ret_switches = 0;
        if (getrusage(RUSAGE_SELF, &ru) < 0)
                return;
        *ret_usec = (uint64_t) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
                    (uint64_t) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
        *ret_switches = (uint64_t) ru.ru_nvcsw + (uint64_t) ru.ru_nivcsw;
}

/* The idle gate: skip the scan of every thread when nothing but topod ran
 * since the last timer pass — at most 1% of one CPU besides us (and a tick
 * of rounding), and fewer context switches besides ours than one thread at
 * latency_wakeups_min would make (so a thread that could be classed
 * latency always opens it). Never without the proc connector (new tasks
 * are found by scanning then), nor longer than rescan_interval. */
static bool machine_idle(Daemon *d, uint64_t now) {
        long hz = sysconf(_SC_CLK_TCK);
        uint64_t own, own_sw, span_ticks, slack, max_switches;
        SysLoad cur;
        bool idle;

        if (!d->p->events || sysload_read(d->p->root, &cur) < 0)
                return false;
        own_usage(&own, &own_sw);
        span_ticks = d->p->config->sample_interval_usec * (uint64_t) (hz > 0 ? hz : 100) / 1000000u;
        slack = 1 + span_ticks / 100;
        max_switches = MAX((uint64_t) d->p->classifier->params.latency_wakeups_min *
                                   d->p->config->sample_interval_usec / 1000000u,
                           (uint64_t) 1);
        /* An idle machine is rescanned five times less often: what a full
         * scan finds that the events and the gate miss (a change made
         * without running) is rare, and an idle scan of every thread is
         * most of an idle topod's CPU. */
        idle = d->have_load && d->passes > 0 &&
               now - d->last_scan_usec < DAEMON_IDLE_RESCAN_FACTOR * d->p->config->rescan_interval_usec &&
               sysload_idle(&d->load, &cur, own - d->own_usec, slack, hz) &&
               sysload_quiet(&d->load, &cur, own_sw - d->own_switches, max_switches);
        d->load = cur;
        d->own_usec = own;
        d->own_switches = own_sw;
        d->have_load = true;
        return idle;
}

/* An exec storm: DAEMON_STORM_RATE new processes a second at least since
 * the last tick, over the time since (a long pass's included). Fewer (a
 * tool run now and then) leave the sample pass alone: classes come from
 * its samples. */
static bool storm_on(const Daemon *d, uint64_t now) {
        uint64_t elapsed = MAX(now - MIN(d->fresh_since_usec, now), (uint64_t) 1);

        return d->p->place && d->fresh_since_tick > 0 && d->fresh_since_tick * 1000000u >= DAEMON_STORM_RATE * elapsed;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Daemon *d = userdata;
        /* Not usec: that is when the timer was due, and it runs late by up
         * to its accuracy. */
        uint64_t now = pipeline_now_usec(), next;
        bool storm, changed;

        now = MAX(now, usec);
        storm = storm_on(d, now);
        /* Counted from here: what the fast path places during a pass
         * counts for the next tick. */
        d->fresh_since_tick = 0;
        d->fresh_since_usec = now;
        /* Before the gates: a sched_ext scheduler loaded, SMT switched
         * on, a load band entered do not make the machine busy, and must
         * not wait for minutes of idle skips (four small files a tick). A
         * change is a pass now, whatever the gates say. */
        changed = refresh_machine(d);

        if (!changed && machine_idle(d, now))
                d->idle_skips++;
        else if (!changed && storm && now - MIN(d->last_scan_end_usec, now) < DAEMON_STORM_DEFER_MAX * d->p->config->sample_interval_usec)
                /* Processes are being started by the dozen and the fast
                 * path places them: a scan of every thread would hold the
                 * loop (and their placement) up, and learn little of
                 * processes that live for a moment. It waits, a few
                 * intervals at most. */
                d->storm_defers++;
        else {
                /* Still a storm after those intervals: the pass reads all
                 * but what the fast path placed since the last one (read
                 * by the next pass if still there). */
                (void) pass(d, storm ? PASS_STORM : PASS_TIMER);
                d->last_scan_usec = now;
                /* The intervals a storm defers the next are counted
                 * from here: a storm pass of seconds would use them up. */
                d->last_scan_end_usec = pipeline_now_usec();
                /* the next gate starts after our own pass */
                if (sysload_read(d->p->root, &d->load) >= 0)
                        own_usage(&d->own_usec, &d->own_switches);
        }
        /* A pass longer than the interval (an exec storm in the test
         * guest: seconds) is followed by a full interval, not at once by
         * another: passes back to back, each too soon to see the storm
         * (its count reset at the last), read every new process. */
        next = usec + d->p->config->sample_interval_usec;
        now = pipeline_now_usec();
        if (next <= now)
                next = now + d->p->config->sample_interval_usec;
        (void) sd_event_source_set_time(s, next);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int on_soon(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) s;
        (void) usec;
        (void) pass(userdata, PASS_SOON); /* a failed pass is logged; the loop goes on */
        return 0;
}

/* The fast path: place the processes that exec'd or were born since the
 * last call, from the plan in force (decide/place.h). Returns whether a
 * pass is needed soon for what it left: a policy with no group yet, a class
 * to wait for, kernel-wide settings, a failure. */
static bool fast_place(Daemon *d) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        PipelineFreshStats st = {};
        Reconciler rc;
        int k;

        if (d->paused || !d->p->place)
                return true;
        rc = reconciler(d);
        k = pipeline_place_fresh(d->p, &rc, &st, &r);
        if (k < 0)
                return true;
        d->fast_placed += st.placed;
        d->fresh_since_tick += st.seen;
        for (size_t i = 0; r && i < r->n; i++)
                if (r->items[i].status == RECONCILE_FAILED)
                        log_warning(d, "%s: %s%s%s", r->items[i].what, r->items[i].reason ?: "",
                                    r->items[i].reason ? " " : "", r->items[i].error ? strerror(-r->items[i].error) : "");
        /* What waits for a group during a pass is placed from its plan
         * (pass_run()): no pass after it for that. */
        return st.left > (d->in_pass ? st.waiting : 0) || st.kernel > 0;
}

static void arm_soon(Daemon *d) {
        uint64_t now = pipeline_now_usec();
        int enabled;

        if (!d->soon)
                return;
        /* A burst's requests push it back, to one pass after the burst;
         * not past DAEMON_EVENT_DELAY_MAX_USEC after the first: a placer
         * asking more often than the delay would put it off for as long
         * as that lasts. */
        if (sd_event_source_get_enabled(d->soon, &enabled) < 0 || enabled == SD_EVENT_OFF)
                d->soon_first_usec = now;
        else if (now - d->soon_first_usec >= DAEMON_EVENT_DELAY_MAX_USEC - DAEMON_EVENT_DELAY_USEC)
                return;
        if (sd_event_source_set_enabled(d->soon, SD_EVENT_ONESHOT) >= 0)
                (void) sd_event_source_set_time_relative(d->soon, DAEMON_EVENT_DELAY_USEC);
}

/* A pass again in DAEMON_PASS_RETRY_USEC: one failed, or the fast path
 * could not take its plan, with work left for it. */
static void arm_retry(Daemon *d) {
        if (!d->soon)
                return;
        d->soon_first_usec = pipeline_now_usec();
        if (sd_event_source_set_enabled(d->soon, SD_EVENT_ONESHOT) >= 0)
                (void) sd_event_source_set_time_relative(d->soon, DAEMON_PASS_RETRY_USEC);
}

/* From the loop: the fast path, and a pass soon for what it left. */
static void place_fresh(Daemon *d) {
        if (fast_place(d))
                arm_soon(d);
}

static int on_events(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Daemon *d = userdata;

        (void) fd;
        (void) revents;
        /* The pipeline marks what the events touched and remembers the
         * processes that exec'd or were born; the fast path places those
         * at once. Here: the one socket of a kernel that does not split
         * events, or the exec socket of one that does when the placer
         * could not run (the forks and exits are read with it then). */
        (void) s;
        pipeline_drain_events(d->p);
        place_fresh(d);
        return 0;
}

/* Forks and exits, where the kernel splits them off: read at once, then,
 * while they keep coming, by a timer every DAEMON_LAZY_EVENTS_USEC with the
 * socket not watched; once a drain finds it empty the socket is watched
 * again (a burst ends with one empty drain). A busy
 * machine's topod then wakes 5 times a second with a read and a timer
 * each, not with its socket's watch taken off and put back each time (a
 * rate limit on the watch: a dozen system calls a wake-up, measured in the
 * test guest as 15% of a CPU during an exec storm); an idle one sleeps. */
static bool lazy_drain(Daemon *d) {
        size_t n = pipeline_drain_lazy_events(d->p);

        place_fresh(d);
        /* New processes from their forks wait for the next read (their
         * execs are the placer's): a tick more for them. */
        return n > 0 || pipeline_forks_waiting(d->p);
}

static void lazy_tick_in(Daemon *d) {
        if (sd_event_source_set_time_relative(d->lazy_tick, DAEMON_LAZY_EVENTS_USEC) < 0 ||
            sd_event_source_set_enabled(d->lazy_tick, SD_EVENT_ONESHOT) < 0)
                /* Cannot time it: watch the socket again instead. */
                (void) sd_event_source_set_enabled(d->lazy_events, SD_EVENT_ON);
}

static int on_lazy_events(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Daemon *d = userdata;

        (void) fd;
        (void) revents;
        (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
        (void) lazy_drain(d);
        lazy_tick_in(d);
        return 0;
}

static int on_lazy_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Daemon *d = userdata;

        (void) s;
        (void) usec;
        /* Quiet: watched again; if that cannot be (a watch limit), the
         * timer goes on instead. */
        if (lazy_drain(d) || sd_event_source_set_enabled(d->lazy_events, SD_EVENT_ON) < 0)
                lazy_tick_in(d);
        return 0;
}

/* ── The placer ──
 *
 * Where the kernel sends execs on a socket of their own (6.6+), a thread of
 * ours waits on that socket alone and places the execs with the daemon's
 * lock held, which the loop holds at all times but while it waits for its
 * own events: the loop's dispatch (about 8 µs a wake-up on this 2-core VM,
 * measured) is then not on the way from an exec to its placement. What it
 * cannot do itself (sd-event is not thread-safe) it asks of the loop: a
 * pass soon, through an eventfd. A pass holds the lock: the placer waits
 * for it, as the loop's own event source did.
 *
 * The lock is taken in turn (a ticket lock): a plain mutex goes to whoever
 * runs, and a placer busy with an exec storm would take it again before
 * the loop, woken, got it: signals, timers, the watchdog and calls would
 * wait out the storm. */

static void lock_take(Daemon *d) {
        unsigned ticket;

        pthread_mutex_lock(&d->mutex);
        /* Changed atomically (under the mutex): pass_yield() looks
         * without it. */
        ticket = __atomic_fetch_add(&d->lock_next, 1u, __ATOMIC_RELAXED);
        while (ticket != d->lock_serving)
                pthread_cond_wait(&d->lock_turn, &d->mutex);
        pthread_mutex_unlock(&d->mutex);
}

static void lock_give(Daemon *d) {
        pthread_mutex_lock(&d->mutex);
        __atomic_fetch_add(&d->lock_serving, 1u, __ATOMIC_RELAXED);
        pthread_cond_broadcast(&d->lock_turn);
        pthread_mutex_unlock(&d->mutex);
}

/* A pass's yield point (base/yield.h), the lock held: when the placer
 * waits for it, it places what came and the pass goes on after. A pass
 * holds the lock for tens of milliseconds on a big host (a second under
 * emulation, measured in the test guest): without this, execs waited for
 * it. Where the pass calls this, its state is whole, and what the placer
 * placed meanwhile it leaves alone (pipeline_changed()). */
static void pass_yield(void *userdata) {
        Daemon *d = userdata;
        uint64_t t, now;

        if (__atomic_load_n(&d->lock_next, __ATOMIC_RELAXED) - __atomic_load_n(&d->lock_serving, __ATOMIC_RELAXED) <= 1u)
                return; /* nobody waits */
        t = pipeline_now_usec();
        if (t - d->slice_start_usec < DAEMON_PASS_SLICE_USEC)
                return;
        lock_give(d);
        lock_take(d);
        now = pipeline_now_usec();
        d->pass_yielded_usec += now - t;
        d->slice_start_usec = now;
        /* A pass that yields goes on (2 ms of its work at least a turn),
         * however long an exec storm makes it: the watchdog is pinged
         * meanwhile, as the loop would (a pass stuck in one process still
         * stops it). */
        if (d->watchdog_usec > 0 && now - d->last_yield_ping_usec >= d->watchdog_usec / 4) {
                (void) sd_notify(false, "WATCHDOG=1");
                d->last_yield_ping_usec = now;
        }
}

static void on_placer_signal(int sig) {
        (void) sig; /* it only ends the placer's wait */
}

/* The placer's turns on a busy CPU. On EEVDF (6.12 and later take a slice
 * request from a SCHED_OTHER thread, sched_attr.sched_runtime), a short
 * slice gives each wake-up an early deadline: it preempts what runs
 * rather than waiting behind it, and gets no more CPU than before, only
 * shorter turns (a placement takes a tenth of the slice asked). Measured
 * on the 2-CPU build host at 200 execs/s beside the bench's busy probes:
 * wake-up to on a CPU p90 398 us and p99 1.5 ms with the default slice, 7
 * and 9 us with this one. A real-time policy the operator gave topod is
 * left alone. The slice in us, 0 where the kernel takes none. */
static unsigned placer_slice(void) {
        return (unsigned) (sched_attr_ask_slice(DAEMON_PLACER_SLICE_NSEC) / 1000u);
}

static void *placer_main(void *userdata) {
        Daemon *d = userdata;
        TaskEvent ev[PIPELINE_EVENT_BATCH];
        sigset_t mask;

        unsigned slice;

        (void) prctl(PR_SET_NAME, "topod-placer", 0, 0, 0); /* for top -H, ps -L */
        slice = placer_slice();
        if (slice > 0)
                log_info(d, "placer: scheduler slice %u us (its wake-ups preempt a busy CPU sooner)", slice);
        else
                log_debug(d, "placer: the kernel's default scheduler slice (no slice request before 6.12)");
        /* Signals are the loop's (its signalfd), SIGSYS the sandbox's, and
         * DAEMON_PLACER_SIGNAL ends the wait below (placer_stop()). */
        sigfillset(&mask);
        sigdelset(&mask, SIGSYS);
        sigdelset(&mask, DAEMON_PLACER_SIGNAL);
        (void) pthread_sigmask(SIG_SETMASK, &mask, NULL);
        for (unsigned errors = 0; !__atomic_load_n(&d->placer_stopping, __ATOMIC_ACQUIRE);) {
                size_t n = 0;
                /* Without the lock: the only reader of the socket that
                 * waits (a pass reads it too, without waiting, with the
                 * lock held: what the placer read meanwhile is placed at
                 * the pass's first yield). One system call a wake-up,
                 * where a poll() and a read were two. */
                int k = proc_events_wait_urgent(d->p->events, ev, ELEMENTSOF(ev), &n);
                bool rest;

                if (k == -EINTR)
                        continue;
                lock_take(d);
                /* An error loses what the read had taken: the next scan
                 * reads everything, soon. */
                rest = pipeline_take_urgent_events(d->p, ev, n, k);
                errors = k < 0 ? errors + 1 : 0;
                if (k < 0 && (errors >= DAEMON_PLACER_ERRORS_MAX || k == -EBADF || k == -ENOTSOCK)) {
                        /* Cannot wait: the loop takes the socket back. */
                        log_error(d, "placer: cannot read the exec events: %s; the execs are placed from the main loop",
                                  strerror(-k));
                        d->placer_failed = d->pass_wanted = true;
                        (void) eventfd_write(d->placer_soon, 1);
                        lock_give(d);
                        break;
                }
                if (k < 0)
                        log_warning(d, "placer: reading the exec events: %s; a full scan follows", strerror(-k));
                if (k < 0 || fast_place(d)) {
                        d->pass_wanted = true;
                        (void) eventfd_write(d->placer_soon, 1);
                }
                if (rest)
                        pipeline_take_urgent_rest(d->p, ev, n);
                lock_give(d);
        }
        return NULL;
}

/* The execs from the loop, as without a placer. */
static int placer_fallback(Daemon *d) {
        int k = sd_event_add_io(d->event, NULL, proc_events_fd(d->p->events), EPOLLIN, on_events, d);

        if (k < 0)
                log_error(d, "cannot watch the proc connector: %s; new processes wait for the next pass", strerror(-k));
        return k;
}

static int on_placer_soon(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Daemon *d = userdata;
        eventfd_t v;

        (void) s;
        (void) revents;
        (void) eventfd_read(fd, &v);
        if (d->placer_failed && d->placer_running) {
                /* It has ended (or is about to, without the lock). */
                lock_give(d);
                (void) pthread_join(d->placer, NULL);
                lock_take(d);
                d->placer_running = false;
                pipeline_set_yield(d->p, NULL, NULL);
                (void) placer_fallback(d);
        }
        /* Not when a pass has begun since it asked: that pass did it. */
        if (d->pass_wanted)
                arm_soon(d);
        return 0;
}

/* Where the kernel splits the events: the placer's eventfd and thread,
 * before the sandbox (eventfd2 is not in it; TSYNC puts the thread under
 * it). The caller holds the lock: the placer starts placing once the loop
 * first waits. 1 started, 0 not needed (the loop places); a placer that
 * cannot start leaves the execs to the loop. Negative errno only when
 * neither can. */
static int placer_start(Daemon *d) {
        struct sigaction sa = { .sa_handler = on_placer_signal }; /* no SA_RESTART: the wait returns EINTR */
        int k;

        if (!d->p->events || proc_events_lazy_fd(d->p->events) < 0)
                return 0;
        d->placer_soon = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (d->placer_soon < 0 || sigaction(DAEMON_PLACER_SIGNAL, &sa, NULL) < 0)
                k = -errno;
        else
                k = sd_event_add_io(d->event, &d->placer_soon_source, d->placer_soon, EPOLLIN, on_placer_soon, d);
        if (k >= 0) {
                k = -pthread_create(&d->placer, NULL, placer_main, d);
                d->placer_running = k == 0;
        }
        if (d->placer_running)
                pipeline_set_yield(d->p, pass_yield, d);
        if (k < 0) {
                log_warning(d, "cannot start the placer: %s; the execs are placed from the main loop", strerror(-k));
                return placer_fallback(d) < 0 ? -EIO : 0;
        }
        return 1;
}

/* Called without the lock (the placer may be waiting for it). It waits in
 * recvmmsg(): the signal ends that wait. Sent until it has ended: one
 * that comes after its look at placer_stopping and before its wait is
 * lost on it. */
static void placer_stop(Daemon *d) {
        if (!d->placer_running)
                return;
        __atomic_store_n(&d->placer_stopping, true, __ATOMIC_RELEASE);
        for (;;) {
                struct timespec until;

                (void) pthread_kill(d->placer, DAEMON_PLACER_SIGNAL);
                (void) clock_gettime(CLOCK_MONOTONIC, &until);
                until.tv_nsec += DAEMON_PLACER_STOP_RETRY_NSEC;
                if (until.tv_nsec >= 1000000000L) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000L;
                }
                if (pthread_clockjoin_np(d->placer, NULL, CLOCK_MONOTONIC, &until) != ETIMEDOUT)
                        break;
        }
        d->placer_running = false;
}

/* sd_event_loop(), the lock held (by the caller, on entry) but while it
 * waits; given up on return. */
static int loop(Daemon *d) {
        int k = 0;

        while (sd_event_get_state(d->event) != SD_EVENT_FINISHED) {
                k = sd_event_prepare(d->event);
                if (k == 0) {
                        lock_give(d);
                        k = sd_event_wait(d->event, UINT64_MAX);
                        lock_take(d);
                }
                if (k > 0)
                        k = sd_event_dispatch(d->event);
                if (k < 0)
                        break;
        }
        lock_give(d);
        if (k < 0)
                return k;
        return sd_event_get_exit_code(d->event, &k) < 0 ? 0 : k;
}

static int on_term(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Daemon *d = userdata;

        (void) s;
        log_info(d, "%s: stopping", strsignal((int) si->ssi_signo));
        (void) sd_notify(false, "STOPPING=1");
        return sd_event_exit(d->event, 0);
}

static void log_diagnostics(const Daemon *d, const Diagnostics *dg) {
        for (size_t i = 0; i < dg->n; i++)
                log_at(&d->log, dg->items[i].severity == DIAG_ERROR ? LOG_ERR : LOG_WARNING, "%s:%u: %s: %s",
                       dg->items[i].file, dg->items[i].line, dg->items[i].severity == DIAG_ERROR ? "error" : "warning",
                       dg->items[i].message);
}

/* The new configuration is parsed and checked whole before anything
 * changes; a bad one is refused (file:line in ret_messages and the log)
 * and the running policy stays in force; a good one is swapped in and
 * reconciled, changing only what differs. A reload also ends a pause. */
static int reload(Daemon *d, char **ret_messages) {
        _cleanup_(diag_freep) Diagnostics *dg = diag_new();
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *f;
        int k, pk = 0;

        if (!dg)
                return -ENOMEM;
        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, pipeline_now_usec());
        k = pipeline_reload(d->p, dg);
        log_diagnostics(d, dg);
        d->reloads++;
        plan_reply_forget(d);
        free(d->last_reload);
        if (k < 0) {
                log_error(d, "reload refused (%s): the running policy stays in force",
                          k == -EINVAL ? "errors above" : strerror(-k));
                d->reloads_refused++;
                d->last_reload = dg->n > 0 ? strdup(dg->items[0].message) : strdup(strerror(-k));
        } else {
                /* The plan in force names policies of the set just freed
                 * (indexes, feature and mode names): drop it before
                 * anything can read it; until the pass below makes a new
                 * one, calls answer "not ready". */
                (void) pipeline_use_plan(d->p, NULL);
                d->plan = plan_free(d->plan);
                d->paused = false;
                log_set_config_level(&d->log, (int) d->p->config->log_level);
                pk = pass(d, PASS_RELOAD);
                if (pk < 0)
                        log_error(d, "reloaded %zu policies, but the pass after it failed: %s", d->p->policies->n,
                                  strerror(-pk));
                else
                        log_info(d, "reloaded: %zu policies", d->p->policies->n);
                d->last_reload = pk < 0 ? strdup("ok, but the pass after it failed") : strdup("ok");
        }
        f = open_memstream(&text, &len);
        if (f) {
                report_print_diagnostics(f, dg);
                if (k < 0)
                        fprintf(f, "reload refused (%s): the running policy stays in force\n",
                                k == -EINVAL ? "errors above" : strerror(-k));
                else if (pk < 0)
                        fprintf(f, "reloaded: %zu policies, but the pass after it failed (%s); the next pass retries\n",
                                d->p->policies->n, strerror(-pk));
                else
                        fprintf(f, "reloaded: %zu policies\n", d->p->policies->n);
                fclose(f);
        }
        (void) sd_notify(false, "READY=1");
        if (ret_messages)
                *ret_messages = TAKE_PTR(text);
        return k;
}

static int on_reload(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        (void) s;
        (void) si;
        (void) reload(userdata, NULL);
        return 0;
}

static int restore_all(Daemon *d, const char *why, ReconcileReport **ret) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        Reconciler rc = reconciler(d);
        int k;

        cgroup_held_clear(d->held);
        if (journal_is_empty(d->journal))
                return 0;
        /* SMT as it is now, not as the last pass read it: a clear the
         * worker refuses for SMT off stays journaled. */
        d->restoring = true;
        (void) refresh_interlocks(d);
        k = reconcile_restore(&rc, &r);
        d->restoring = false;
        if (k < 0) {
                log_error(d, "%s: restore failed: %s", why, strerror(-k));
                return k;
        }
        log_info(d, "%s: restored (%u done, %u skipped, %u failed)", why, r->counts[RECONCILE_DONE],
                 r->counts[RECONCILE_SKIPPED], r->counts[RECONCILE_FAILED]);
        if (journal_is_empty(d->journal))
                (void) journal_remove(d->state_dir);
        else
                /* Failed, or refused for now (a cookie while SMT is off):
                 * the next run's recovery, or a later pass, tries again. */
                log_notice(d, "%s: %zu journal entries not undone yet stay in %s/journal", why,
                           journal_n_entries(d->journal), d->state_dir);
        if (ret)
                *ret = TAKE_PTR(r);
        return 0;
}

/* Say once, at start, what this kernel will not let topod do and what it
 * does instead: an operator reading the log should not have to guess why
 * no cookie or cgroup ever appears. */
static void log_limits(const Daemon *d) {
        const KernelCaps *c = d->p->caps;
        static const struct {
                const char *name;
                size_t offset;
                const char *consequence;
        } rows[] = {
                { "core scheduling", offsetof(KernelCaps, core_sched), "no cookies; placement and kernel settings go on" },
                { "cgroup2", offsetof(KernelCaps, cgroup2), NULL /* said below */ },
                { "sched features", offsetof(KernelCaps, sched_features), "sched features are left as they are" },
                { "cgroup_mode", offsetof(KernelCaps, cgroup_mode), "cgroup_mode cannot be set: modes are emulated with cpu.weight where cgroups work" },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const CapStatus *cs = (const CapStatus *) ((const char *) c + rows[i].offset);

                if (!cs->available)
                        log_notice(d, "%s: %s; %s", rows[i].name, cs->reason ?: "unavailable",
                                   rows[i].consequence ?: c->cgroup2_mount
                                           ? "tasks are still grouped and moved, without cpusets or weights"
                                           : "tasks stay where they are; cookies and kernel settings go on");
        }
        if (c->sched_ext_active)
                log_notice(d, "a sched_ext scheduler (%s) is running: no cookies (core scheduling with sched_ext is reported to hang hosts)",
                      c->sched_ext_ops ?: "unnamed");
}

/* ---- what topoctl asks ---------------------------------------------- */

static void print_status_text(const Daemon *d, FILE *f) {
        uint64_t now = pipeline_now_usec();
        const char *sep = "";

        fprintf(f, "topod %s, pid %d, up %" PRIu64 " s: %s\n", TOPOD_VERSION, (int) getpid(),
                (now - d->started_usec) / 1000000u,
                d->paused ? "paused by 'topoctl reset' ('topoctl reload' resumes)" : d->ready ? "running" : "starting");
        fputs("policies in force:", f);
        {
                size_t shown = 0, in_force = 0;

                for (size_t i = 0; i < d->p->policies->n; i++)
                        if (d->p->in_force[i] && in_force++ < DAEMON_STATUS_POLICIES_MAX) {
                                fprintf(f, "%s %s", sep, d->p->policies->policies[i]->name);
                                sep = ",";
                                shown++;
                        }
                if (in_force > shown)
                        fprintf(f, " and %zu more", in_force - shown);
        }
        fprintf(f, "%s (%zu loaded; --json lists them all)\n", *sep ? "" : " none", d->p->policies->n);
        if (d->p->have_load)
                fprintf(f, "load: %u%% (1-minute load average per CPU; [when] load = bands)\n", d->p->load_percent);
        else
                fputs("load: unknown (/proc/loadavg unreadable): [when] load = bands stay as they were\n", f);
        if (d->plan)
                fprintf(f, "managed: %zu tasks in %zu groups, %zu cookie groups\n", d->plan->n_tasks, d->plan->n_groups,
                        d->plan->n_cookie_groups);
        if (d->passes > 0)
                fprintf(f, "last pass: %" PRIu64 " ms ago, took %" PRIu64 " ms (scan %" PRIu64 ", plan %" PRIu64
                           ", apply %" PRIu64 "; the placer's turns in between %" PRIu64 ")",
                        (now - d->last_pass_usec) / 1000u, d->last_pass_cost_usec / 1000u,
                        d->last_pass_stage_usec[0] / 1000u, d->last_pass_stage_usec[1] / 1000u,
                        d->last_pass_stage_usec[2] / 1000u, d->last_pass_yielded_usec / 1000u);
        if (d->report)
                fprintf(f, ": %u changed, %u already so, %u vanished, %u skipped, %u failed",
                        d->report->counts[RECONCILE_DONE], d->report->counts[RECONCILE_ALREADY],
                        d->report->counts[RECONCILE_VANISHED], d->report->counts[RECONCILE_SKIPPED],
                        d->report->counts[RECONCILE_FAILED]);
        if (d->passes > 0 && d->last_pass_deferred > 0)
                fprintf(f, "; %u new processes left to the next scan (exec storm)", d->last_pass_deferred);
        fprintf(f, "%s", d->passes > 0 ? "\n" : "");
        fprintf(f, "fast path: %u processes placed at exec; timer passes skipped: %u idle, %u during exec storms\n",
                d->fast_placed, d->idle_skips, d->storm_defers);
        fprintf(f, "reloads: %u (%u refused)%s%s\n", d->reloads, d->reloads_refused, d->last_reload ? "; last: " : "",
                d->last_reload ?: "");
        fprintf(f, "new tasks: %s\n",
                d->p->events ? "proc connector events" : "found by scanning every sample interval (no proc connector)");
        fputc('\n', f);
        (void) kernelcaps_print_text(f, d->p->caps, root_path(d->p->root));
}

static void print_status_json(const Daemon *d, Json *j) {
        uint64_t now = pipeline_now_usec();

        json_object_begin(j);
        json_kv_string(j, "version", TOPOD_VERSION);
        json_kv_int(j, "pid", getpid());
        json_kv_uint(j, "uptime_usec", now - d->started_usec);
        json_kv_string(j, "state", d->paused ? "paused" : d->ready ? "running" : "starting");
        json_key(j, "policies");
        json_array_begin(j);
        for (size_t i = 0; i < d->p->policies->n; i++) {
                const Policy *p = d->p->policies->policies[i];

                json_object_begin(j);
                json_kv_string(j, "name", p->name);
                json_kv_string(j, "file", p->file);
                json_kv_bool(j, "in_force", d->p->in_force[i]);
                json_object_end(j);
        }
        json_array_end(j);
        json_key(j, "load_percent");
        if (d->p->have_load)
                json_uint(j, d->p->load_percent);
        else
                json_null(j);
        json_kv_uint(j, "tasks_managed", d->plan ? d->plan->n_tasks : 0);
        json_kv_uint(j, "groups", d->plan ? d->plan->n_groups : 0);
        json_kv_uint(j, "cookie_groups", d->plan ? d->plan->n_cookie_groups : 0);
        json_kv_uint(j, "passes", d->passes);
        json_kv_uint(j, "last_pass_ago_usec", d->passes ? now - d->last_pass_usec : 0);
        json_kv_uint(j, "last_pass_cost_usec", d->last_pass_cost_usec);
        json_kv_uint(j, "last_pass_scan_usec", d->last_pass_stage_usec[0]);
        json_kv_uint(j, "last_pass_plan_usec", d->last_pass_stage_usec[1]);
        json_kv_uint(j, "last_pass_apply_usec", d->last_pass_stage_usec[2]);
        json_kv_uint(j, "last_pass_yielded_usec", d->last_pass_yielded_usec);
        json_kv_uint(j, "last_pass_deferred", d->last_pass_deferred);
        json_key(j, "last_apply");
        if (d->report) {
                json_object_begin(j);
                for (unsigned s = 0; s < _RECONCILE_STATUS_MAX; s++)
                        json_kv_uint(j, reconcile_status_to_string((ReconcileStatus) s), d->report->counts[s]);
                json_object_end(j);
        } else
                json_null(j);
        json_kv_uint(j, "idle_skips", d->idle_skips);
        json_kv_uint(j, "fast_placed", d->fast_placed);
        json_kv_uint(j, "storm_defers", d->storm_defers);
        json_kv_uint(j, "reloads", d->reloads);
        json_kv_uint(j, "reloads_refused", d->reloads_refused);
        json_kv_string(j, "last_reload", d->last_reload);
        json_kv_bool(j, "proc_connector", d->p->events != NULL);
        json_key(j, "kernel");
        (void) kernelcaps_print_json(j, d->p->caps, root_path(d->p->root));
        json_object_end(j);
}

/* The plan in force compared with the machine (as topoctl plan does
 * without topod: the same shape, and topod's state besides). */
static void print_plan(const Daemon *d, bool json, FILE *f) {
        PlanDiffCounts counts;

        if (json) {
                _cleanup_(json_freep) Json *j = json_new(f, true);

                if (!j)
                        return;
                json_object_begin(j);
                json_kv_bool(j, "paused", d->paused);
                json_key(j, "plan");
                (void) plan_print_json(j, d->plan, d->p->policies);
                json_key(j, "differences");
                json_array_begin(j);
                (void) plan_diff(d->p, d->paused ? NULL : d->plan, j, NULL, &counts);
                json_array_end(j);
                json_key(j, "counts");
                plan_diff_print_counts(&counts, j, NULL);
                json_key(j, "last_apply");
                if (d->report)
                        (void) reconcile_report_print_json(j, d->report);
                else
                        json_null(j);
                json_object_end(j);
                return;
        }
        (void) plan_print_text(f, d->plan, d->p->policies);
        if (d->paused) {
                fputs("\npaused by 'topoctl reset': nothing is applied ('topoctl reload' resumes)\n", f);
                return;
        }
        fputs("\nCompared with the machine:\n", f);
        (void) plan_diff(d->p, d->plan, NULL, f, &counts);
        plan_diff_print_counts(&counts, NULL, f);
}

static int get_cookie(pid_t tid, uint64_t *ret, void *userdata) {
        (void) userdata;
        return tasks_get_cookie_host(tid, ret, NULL);
}

/* Does the last scan know pid as it is now (same start time: not a
 * reused pid)? A pid that does not exist counts as known: the answer is
 * then "no such process". */
static bool explain_current(const Daemon *d, pid_t pid) {
        const TaskFacts *t = d->p->snap ? task_snapshot_find(d->p->snap, pid) : NULL;
        _cleanup_free_ char *text = NULL;
        char rel[40];
        size_t len;
        ProcStat st;

        snprintf(rel, sizeof(rel), "proc/%d/stat", (int) pid);
        if (root_read_file(d->p->root, rel, 4096, &text, &len) < 0 || procfs_parse_stat(text, len, &st) < 0)
                return true;
        return t && t->start_time == st.start_time;
}

static int on_call(void *userdata, const BusCall *call, char **ret_text, char **ret_error, const char **ret_name) {
        Daemon *d = userdata;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *f;
        int k = 0;

        if (call->method == BUS_METHOD_RELOAD) {
                k = reload(d, &text);
                if (k < 0) {
                        *ret_name = k == -EINVAL ? BUS_ERROR_POLICY_REJECTED : NULL;
                        *ret_error = TAKE_PTR(text);
                        return k;
                }
                *ret_text = TAKE_PTR(text);
                return 0;
        }
        if (call->method == BUS_METHOD_EXPLAIN && !explain_current(d, call->pid)) {
                uint64_t now = pipeline_now_usec();

                /* Started since the last scan, or its pid reused? Look
                 * again before answering, but at most every
                 * DAEMON_EXPLAIN_PASS_USEC: any user may ask, and a pass
                 * is not free. */
                if (now - d->last_explain_pass_usec < DAEMON_EXPLAIN_PASS_USEC) {
                        (void) asprintf(ret_error, "topod has not seen %d as it is now yet; ask again in a moment",
                                        (int) call->pid);
                        *ret_name = BUS_ERROR_NOT_READY;
                        return -EAGAIN;
                }
                d->last_explain_pass_usec = now;
                (void) pass(d, PASS_EXPLAIN);
        }
        if (!d->plan && call->method != BUS_METHOD_STATUS) {
                *ret_error = strdup("topod has not finished its first pass yet");
                return -EAGAIN;
        }

        f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;
        switch (call->method) {
        case BUS_METHOD_EXPLAIN: {
                ExplainContext x = { .p = d->p, .plan = d->plan, .paused = d->paused, .get_cookie = get_cookie };

                k = explain_write(&x, call->pid, call->json, f);
                if (k == -ESRCH)
                        (void) asprintf(ret_error, "no process or thread %d", (int) call->pid);
                break;
        }
        case BUS_METHOD_STATUS:
                if (call->json) {
                        _cleanup_(json_freep) Json *j = json_new(f, true);

                        if (j)
                                print_status_json(d, j);
                } else
                        print_status_text(d, f);
                break;
        case BUS_METHOD_PLAN: {
                uint64_t now = pipeline_now_usec();
                int v = !!call->json;

                if (d->plan_reply[v] && d->plan_reply_passes[v] == d->passes &&
                    now - d->plan_reply_usec[v] < DAEMON_PLAN_REPLY_USEC) {
                        fputs(d->plan_reply[v], f);
                        break;
                }
                {
                        _cleanup_free_ char *reply = NULL;
                        size_t n = 0;
                        FILE *g = open_memstream(&reply, &n);

                        if (!g) {
                                k = -ENOMEM;
                                break;
                        }
                        print_plan(d, call->json, g);
                        if (fclose(g) != 0) {
                                k = -ENOMEM;
                                break;
                        }
                        fputs(reply, f);
                        free(d->plan_reply[v]);
                        d->plan_reply[v] = TAKE_PTR(reply);
                        d->plan_reply_usec[v] = now;
                        d->plan_reply_passes[v] = d->passes;
                }
                break;
        }
        case BUS_METHOD_RESET: {
                _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;

                log_notice(d, "reset asked by pid %d: restoring and pausing until a reload", (int) call->peer_pid);
                d->paused = true;
                plan_reply_forget(d);
                (void) pipeline_use_plan(d->p, NULL);
                k = restore_all(d, "reset", &r);
                if (k >= 0 && !r)
                        report_print_nothing(f, call->json, "topod has changed nothing");
                else if (k >= 0)
                        (void) report_print(f, r, call->json);
                break;
        }
        default:
                k = -EOPNOTSUPP;
        }
        if (fclose(f) != 0 && k >= 0)
                k = -ENOMEM;
        if (k >= 0)
                *ret_text = TAKE_PTR(text);
        return k;
}

/* Everything is set up (socket bound, proc connector subscribed, journal
 * open, cookie workers running): confine the loop. A filter that cannot
 * be installed is logged loudly and the daemon goes on: tuning without the
 * inner sandbox (the unit's still holds) beats no tuning. The level is read
 * once: a reload cannot lift a filter. */
static void sandbox(const Daemon *d) {
        static const SandboxLevel levels[] = {
                [CONFIG_SECCOMP_OFF] = SANDBOX_OFF,
                [CONFIG_SECCOMP_LOG] = SANDBOX_LOG,
                [CONFIG_SECCOMP_ENFORCE] = SANDBOX_ENFORCE,
        };
        SandboxLevel level = levels[d->p->config->seccomp];
        _cleanup_free_ char *why = NULL;
        int k;

        if (level == SANDBOX_OFF) {
                log_notice(d, "seccomp = off: no system call filter");
                return;
        }
        k = sandbox_install(level, &why);
        if (k < 0)
                log_error(d, "seccomp = %s: the filter could not be installed (%s); going on WITHOUT it",
                      sandbox_level_to_string(level), why ?: strerror(-k));
        else
                log_info(d, "seccomp = %s: %zu system calls allowed", sandbox_level_to_string(level), sandbox_allowed_count());
}

int topod_run(const DaemonArgs *a) {
        _cleanup_(diag_freep) Diagnostics *dg = diag_new();
        _cleanup_free_ char *reason = NULL, *socket_path = NULL;
        PipelineOptions o = { .root = a->root, .config = a->config, .policies = a->policies, .events = true };
        Daemon d = { .args = a, .started_usec = pipeline_now_usec(), .lock = -EBADF, .pidref = pidref_ops_host,
                     .mutex = PTHREAD_MUTEX_INITIALIZER, .lock_turn = PTHREAD_COND_INITIALIZER,
                     .placer_soon = -EBADF };

        log_open(&d.log, a->log_level);
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
        /* The placer's alone (placer_main()): every thread made from here
         * on blocks it. */
        sigaddset(&mask, DAEMON_PLACER_SIGNAL);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return EXIT_FAILURE;
        k = pipeline_new(&o, dg, &d.p, &reason);
        log_diagnostics(&d, dg);
        if (k < 0) {
                log_error(&d, "%s", reason ?: strerror(-k));
                return EXIT_FAILURE;
        }
        log_set_config_level(&d.log, (int) d.p->config->log_level);
        log_limits(&d);
        /* Kernel threads: read by the full scans only (tasks.h). */
        task_scanner_set_lazy_kernel_threads(d.p->scanner, true);
        if (!d.p->events)
                log_warning(&d, "proc connector unavailable (%s): new tasks are found by scanning every %" PRIu64 " ms",
                      strerror(-d.p->events_error), d.p->config->sample_interval_usec / 1000);
        if (state_dir_open_journal(a->state_dir, d.p->root, &d.journal, &found, &d.lock) < 0 ||
            state_dir_path(a->state_dir, d.p->root, &d.state_dir) < 0)
                goto finish;
        /* The journal inside is 0600; the directory is open so that anyone
         * can reach the socket (calls are checked one by one). */
        (void) chmod(d.state_dir, 0755);
        (void) cgroup_held_new(&d.held); /* without: opened per move */
        d.pidref.pidfs_idents = d.p->caps->pidfs.available;
        /* With SMT off too: the interlock holds it back until SMT is on. */
        if (kernelcaps_core_sched_built(d.p->caps) && cookie_applier_new(d.p->root, NULL, &d.cookies) >= 0)
                set_interlocks(&d);
        if (found)
                /* A journal left by a crash: put the machine back first, so
                 * this run starts from the true originals. */
                (void) restore_all(&d, "recovering the journal of an earlier run", NULL);

        if ((k = sd_event_default(&d.event)) < 0 ||
            (k = sd_event_add_signal(d.event, NULL, SIGTERM, on_term, &d)) < 0 ||
            (k = sd_event_add_signal(d.event, NULL, SIGINT, on_term, &d)) < 0 ||
            (k = sd_event_add_signal(d.event, NULL, SIGHUP, on_reload, &d)) < 0 ||
            (k = sd_event_add_time_relative(d.event, &d.timer, CLOCK_MONOTONIC, 0, 0, on_timer, &d)) < 0 ||
            (k = sd_event_add_time_relative(d.event, &d.soon, CLOCK_MONOTONIC, DAEMON_EVENT_DELAY_USEC,
                                            DAEMON_EVENT_ACCURACY_USEC, on_soon, &d)) < 0 ||
            (k = sd_event_source_set_enabled(d.soon, SD_EVENT_OFF)) < 0 ||
            /* WATCHDOG=1 from the loop itself, at half of WatchdogSec=: a
             * loop stuck in a pass stops the pings and systemd restarts us
             * (the journal then restores). A no-op without WatchdogSec=. */
            (k = sd_event_set_watchdog(d.event, true)) < 0) {
                log_error(&d, "cannot set up the event loop: %s", strerror(k < 0 ? -k : errno));
                goto finish;
        }
        d.fresh_since_usec = d.started_usec;
        if (sd_watchdog_enabled(false, &d.watchdog_usec) <= 0)
                d.watchdog_usec = 0;
        if (d.p->events && proc_events_lazy_fd(d.p->events) < 0 &&
            (k = sd_event_add_io(d.event, NULL, proc_events_fd(d.p->events), EPOLLIN, on_events, &d)) < 0) {
                log_error(&d, "cannot watch the proc connector: %s", strerror(-k));
                goto finish;
        }

        if (d.p->events && proc_events_lazy_fd(d.p->events) >= 0) {
                /* Forks and exits are read at once, then every
                 * DAEMON_LAZY_EVENTS_USEC while they keep coming (the
                 * socket holds 16 MiB of them meanwhile): what only forks
                 * waits that long at most to be placed, and exits that
                 * long to count. */
                if ((k = sd_event_add_io(d.event, &d.lazy_events, proc_events_lazy_fd(d.p->events), EPOLLIN, on_lazy_events,
                                         &d)) < 0 ||
                    (k = sd_event_add_time_relative(d.event, &d.lazy_tick, CLOCK_MONOTONIC, DAEMON_LAZY_EVENTS_USEC,
                                                    DAEMON_LAZY_EVENTS_ACCURACY_USEC, on_lazy_tick, &d)) < 0 ||
                    (k = sd_event_source_set_enabled(d.lazy_tick, SD_EVENT_OFF)) < 0) {
                        log_error(&d, "cannot watch the proc connector: %s", strerror(-k));
                        goto finish;
                }
        }
        if (asprintf(&socket_path, "%s/" BUS_SOCKET_NAME, d.state_dir) < 0)
                goto finish;
        if ((k = bus_server_new(d.event, socket_path, on_call, &d, &d.bus)) < 0) {
                log_error(&d, "cannot listen on %s: %s", socket_path, strerror(-k));
                goto finish;
        }
        lock_take(&d); /* given up by loop() */
        if ((k = placer_start(&d)) < 0) {
                lock_give(&d);
                goto finish;
        }
        sandbox(&d);
        k = loop(&d);
        placer_stop(&d);
        if (k < 0)
                log_error(&d, "event loop failed: %s", strerror(-k));
        /* No calls while restoring: they would see a half-restored machine. */
        d.bus = bus_server_free(d.bus);
        if (d.p->config->restore_on_exit)
                (void) restore_all(&d, "stopping", NULL);
        else
                log_notice(&d, "restore_on_exit = no: changes stay; 'topoctl reset' puts them back");
        r = k < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
finish:
        placer_stop(&d);
        sd_event_source_unref(d.placer_soon_source);
        closep(&d.placer_soon);
        bus_server_free(d.bus);
        sd_event_source_unref(d.timer);
        sd_event_source_unref(d.soon);
        sd_event_source_unref(d.lazy_events);
        sd_event_source_unref(d.lazy_tick);
        sd_event_unref(d.event);
        cookie_applier_free(d.cookies);
        cgroup_held_free(d.held);
        /* The lock file goes with the journal: nothing left behind. */
        state_dir_unlock(d.state_dir, &d.lock, d.journal && journal_is_empty(d.journal));
        journal_free(d.journal);
        plan_free(d.plan);
        free(d.plan_reply[0]);
        free(d.plan_reply[1]);
        reconcile_report_free(d.report);
        free(d.last_reload);
        free(d.state_dir);
        pipeline_free(d.p);
        return r;
}
