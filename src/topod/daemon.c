/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The long-running topod (daemon.h): its start, the event loop with its
 * timers and event sources, the gates that let a timer pass skip its scan,
 * and its stop. What the loop calls is in the files daemon-internal.h
 * lists. */
#include "daemon.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "base/macro.h"
#include "daemon-internal.h"
#include "observe/sysload.h"
#include "sandbox.h"

/* Process events are batched: a burst of execs costs one pass. The timer
 * fires within DAEMON_EVENT_ACCURACY_USEC of that: sd-event's default
 * accuracy, 0, means 250 ms, and the first processes of a policy, which
 * wait for this pass to make its group, would wait that long. */
#define DAEMON_EVENT_DELAY_USEC 2000u
#define DAEMON_EVENT_DELAY_MAX_USEC 20000u
#define DAEMON_EVENT_ACCURACY_USEC 1000u
/* A pass that failed with work left for it (what the fast path asked for,
 * what waited for its plan) is tried again after this long. */
#define DAEMON_PASS_RETRY_USEC 1000000u
/* Where the kernel splits the proc connector's events: how often forks and
 * exits alone may wake us. Each wake-up costs the main thread a read, a
 * timer, the lock taken beside the placer, and the fork's child read when
 * the placer has not placed it yet: five a second stay small beside its
 * passes, twenty cost several times as much. */
#define DAEMON_LAZY_EVENTS_USEC 200000u
#define DAEMON_LAZY_EVENTS_ACCURACY_USEC 10000u
/* While the idle gate holds, a pass comes at least every this many
 * rescan_intervals. */
#define DAEMON_IDLE_RESCAN_FACTOR 5u
/* During an exec storm (at least DAEMON_STORM_RATE new processes a second)
 * the sample pass waits at most this many intervals. */
#define DAEMON_STORM_DEFER_MAX 5u
#define DAEMON_STORM_RATE 10u

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

        if (!d->p->observe.events || sysload_read(d->p->observe.root, &cur) < 0)
                return false;
        own_usage(&own, &own_sw);
        span_ticks = d->p->decide.config->sample_interval_usec * (uint64_t) (hz > 0 ? hz : 100) / 1000000u;
        slack = 1 + span_ticks / 100;
        max_switches = MAX((uint64_t) d->p->decide.classifier->params.latency_wakeups_min *
                                   d->p->decide.config->sample_interval_usec / 1000000u,
                           (uint64_t) 1);
        /* An idle machine is rescanned five times less often: what a full
         * scan finds that the events and the gate miss (a change made
         * without running) is rare, and an idle scan of every thread is
         * most of an idle topod's CPU. */
        idle = d->gate.have_load && d->pass.count > 0 &&
               now - d->gate.last_scan_usec < DAEMON_IDLE_RESCAN_FACTOR * d->p->decide.config->rescan_interval_usec &&
               sysload_idle(&d->gate.load, &cur, own - d->gate.own_usec, slack, hz) &&
               sysload_quiet(&d->gate.load, &cur, own_sw - d->gate.own_switches, max_switches);
        d->gate.load = cur;
        d->gate.own_usec = own;
        d->gate.own_switches = own_sw;
        d->gate.have_load = true;
        return idle;
}

/* An exec storm: DAEMON_STORM_RATE new processes a second at least since
 * the last tick, over the time since (a long pass's included). Fewer (a
 * tool run now and then) leave the sample pass alone: classes come from
 * its samples. */
static bool storm_on(const Daemon *d, uint64_t now) {
        uint64_t elapsed = MAX(now - MIN(d->gate.fresh_since_usec, now), (uint64_t) 1);

        return d->p->fast->place && d->gate.fresh_since_tick > 0 && d->gate.fresh_since_tick * 1000000u >= DAEMON_STORM_RATE * elapsed;
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
        d->gate.fresh_since_tick = 0;
        d->gate.fresh_since_usec = now;
        /* Before the gates: a sched_ext scheduler loaded, SMT switched
         * on, a load band entered do not make the machine busy, and must
         * not wait for minutes of idle skips (four small files a tick). A
         * change is a pass now, whatever the gates say. */
        changed = refresh_machine(d);

        if (!changed && machine_idle(d, now))
                d->gate.idle_skips++;
        else if (!changed && storm && now - MIN(d->gate.last_scan_end_usec, now) < DAEMON_STORM_DEFER_MAX * d->p->decide.config->sample_interval_usec)
                /* Processes are being started by the dozen and the fast
                 * path places them: a scan of every thread would hold the
                 * loop (and their placement) up, and learn little of
                 * processes that live for a moment. It waits, a few
                 * intervals at most. */
                d->gate.storm_defers++;
        else {
                /* Still a storm after those intervals: the pass reads all
                 * but what the fast path placed since the last one (read
                 * by the next pass if still there). */
                (void) pass(d, storm ? PASS_STORM : PASS_TIMER);
                d->gate.last_scan_usec = now;
                /* The intervals a storm defers the next are counted
                 * from here: a storm pass of seconds would use them up. */
                d->gate.last_scan_end_usec = pipeline_now_usec();
                /* the next gate starts after our own pass */
                if (sysload_read(d->p->observe.root, &d->gate.load) >= 0)
                        own_usage(&d->gate.own_usec, &d->gate.own_switches);
        }
        metrics_tick(d);
        /* A pass longer than the interval (an exec storm under
         * emulation: seconds) is followed by a full interval, not at once by
         * another: passes back to back, each too soon to see the storm
         * (its count reset at the last), read every new process. */
        next = usec + d->p->decide.config->sample_interval_usec;
        now = pipeline_now_usec();
        if (next <= now)
                next = now + d->p->decide.config->sample_interval_usec;
        (void) sd_event_source_set_time(s, next);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int on_soon(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) s;
        (void) usec;
        (void) pass(userdata, PASS_SOON); /* a failed pass is logged; the loop goes on */
        return 0;
}

void arm_soon(Daemon *d) {
        uint64_t now = pipeline_now_usec();
        int enabled;

        if (!d->sources.soon)
                return;
        /* A burst's requests push it back, to one pass after the burst;
         * not past DAEMON_EVENT_DELAY_MAX_USEC after the first: a placer
         * asking more often than the delay would put it off for as long
         * as that lasts. */
        if (sd_event_source_get_enabled(d->sources.soon, &enabled) < 0 || enabled == SD_EVENT_OFF)
                d->sources.soon_first_usec = now;
        else if (now - d->sources.soon_first_usec >= DAEMON_EVENT_DELAY_MAX_USEC - DAEMON_EVENT_DELAY_USEC)
                return;
        if (sd_event_source_set_enabled(d->sources.soon, SD_EVENT_ONESHOT) >= 0)
                (void) sd_event_source_set_time_relative(d->sources.soon, DAEMON_EVENT_DELAY_USEC);
}

/* A pass again in DAEMON_PASS_RETRY_USEC: one failed, or the fast path
 * could not take its plan, with work left for it. */
void arm_retry(Daemon *d) {
        if (!d->sources.soon)
                return;
        d->sources.soon_first_usec = pipeline_now_usec();
        if (sd_event_source_set_enabled(d->sources.soon, SD_EVENT_ONESHOT) >= 0)
                (void) sd_event_source_set_time_relative(d->sources.soon, DAEMON_PASS_RETRY_USEC);
}

int on_events(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
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
 * rate limit on the watch: a dozen system calls a wake-up, a large share
 * of a CPU during an exec storm); an idle one sleeps. */
static bool lazy_drain(Daemon *d) {
        size_t n = pipeline_drain_lazy_events(d->p);

        place_fresh(d);
        /* New processes from their forks wait for the next read (their
         * execs are the placer's): a tick more for them. */
        return n > 0 || pipeline_forks_waiting(d->p);
}

static void lazy_tick_in(Daemon *d) {
        if (sd_event_source_set_time_relative(d->sources.lazy_tick, DAEMON_LAZY_EVENTS_USEC) < 0 ||
            sd_event_source_set_enabled(d->sources.lazy_tick, SD_EVENT_ONESHOT) < 0)
                /* Cannot time it: watch the socket again instead. */
                (void) sd_event_source_set_enabled(d->sources.lazy_events, SD_EVENT_ON);
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
        if (lazy_drain(d) || sd_event_source_set_enabled(d->sources.lazy_events, SD_EVENT_ON) < 0)
                lazy_tick_in(d);
        return 0;
}

/* sd_event_loop(), the lock held (by the caller, on entry) but while it
 * waits; given up on return. */
static int loop(Daemon *d) {
        int k = 0;

        while (sd_event_get_state(d->sources.event) != SD_EVENT_FINISHED) {
                k = sd_event_prepare(d->sources.event);
                if (k == 0) {
                        lock_give(d);
                        k = sd_event_wait(d->sources.event, UINT64_MAX);
                        lock_take(d);
                }
                if (k > 0)
                        k = sd_event_dispatch(d->sources.event);
                if (k < 0)
                        break;
        }
        lock_give(d);
        if (k < 0)
                return k;
        return sd_event_get_exit_code(d->sources.event, &k) < 0 ? 0 : k;
}

static int on_term(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Daemon *d = userdata;

        (void) s;
        log_info(d, "%s: stopping", strsignal((int) si->ssi_signo));
        (void) sd_notify(false, "STOPPING=1");
        return sd_event_exit(d->sources.event, 0);
}

void log_diagnostics(const Daemon *d, const Diagnostics *dg) {
        for (size_t i = 0; i < dg->n; i++)
                log_at(&d->log, dg->items[i].severity == DIAG_ERROR ? LOG_ERR : LOG_WARNING, "%s:%u: %s: %s",
                       dg->items[i].file, dg->items[i].line, dg->items[i].severity == DIAG_ERROR ? "error" : "warning",
                       dg->items[i].message);
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
        SandboxLevel level = levels[d->p->decide.config->seccomp];
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

/* The stop signals are blocked first: one that arrives while starting
 * (recovering a journal, the first scan) is then handled by the loop,
 * with a restore, instead of killing us half-way. */
static int block_signals(void) {
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        /* The placer's alone (placer_main()): every thread made from here
         * on blocks it. */
        sigaddset(&mask, DAEMON_PLACER_SIGNAL);
        return sigprocmask(SIG_BLOCK, &mask, NULL) < 0 ? -errno : 0;
}

/* The pipeline (topology, kernel probe, configuration, proc connector),
 * and the log level and warnings that follow from it. */
static int open_pipeline(Daemon *d) {
        const DaemonArgs *a = d->args;
        _cleanup_(diag_freep) Diagnostics *dg = diag_new();
        _cleanup_free_ char *reason = NULL;
        PipelineOptions o = { .root = a->root, .config = a->config, .policies = a->policies, .events = true };
        int k;

        if (!dg)
                return -ENOMEM;
        k = pipeline_new(&o, dg, &d->p, &reason);
        log_diagnostics(d, dg);
        if (k < 0) {
                log_error(d, "%s", reason ?: strerror(-k));
                return k;
        }
        log_set_config_level(&d->log, (int) d->p->decide.config->log_level);
        log_limits(d);
        /* Kernel threads: read by the full scans only (tasks.h). */
        task_scanner_set_lazy_kernel_threads(d->p->observe.scanner, true);
        if (!d->p->observe.events)
                log_warning(d, "proc connector unavailable (%s): new tasks are found by scanning every %" PRIu64 " ms",
                      strerror(-d->p->observe.events_error), d->p->decide.config->sample_interval_usec / 1000);
        return 0;
}

/* The loop, its signals and timers, and the proc connector's sockets as
 * the kernel offers them (the exec socket of a kernel that splits events
 * is the placer's: placer_start()). */
static int sources_add(Daemon *d) {
        DaemonSources *s = &d->sources;
        int k;

        if ((k = sd_event_default(&s->event)) < 0 ||
            (k = sd_event_add_signal(s->event, NULL, SIGTERM, on_term, d)) < 0 ||
            (k = sd_event_add_signal(s->event, NULL, SIGINT, on_term, d)) < 0 ||
            (k = sd_event_add_signal(s->event, NULL, SIGHUP, on_reload, d)) < 0 ||
            (k = sd_event_add_time_relative(s->event, &s->timer, CLOCK_MONOTONIC, 0, 0, on_timer, d)) < 0 ||
            (k = sd_event_add_time_relative(s->event, &s->soon, CLOCK_MONOTONIC, DAEMON_EVENT_DELAY_USEC,
                                            DAEMON_EVENT_ACCURACY_USEC, on_soon, d)) < 0 ||
            (k = sd_event_source_set_enabled(s->soon, SD_EVENT_OFF)) < 0 ||
            /* WATCHDOG=1 from the loop itself, at half of WatchdogSec=: a
             * loop stuck in a pass stops the pings and systemd restarts us
             * (the journal then restores). A no-op without WatchdogSec=. */
            (k = sd_event_set_watchdog(s->event, true)) < 0) {
                log_error(d, "cannot set up the event loop: %s", strerror(k < 0 ? -k : errno));
                return k < 0 ? k : -errno;
        }
        d->gate.fresh_since_usec = d->started_usec;
        if (sd_watchdog_enabled(false, &d->watchdog_usec) <= 0)
                d->watchdog_usec = 0;
        if (d->p->observe.events && proc_events_lazy_fd(d->p->observe.events) < 0 &&
            (k = sd_event_add_io(s->event, NULL, proc_events_fd(d->p->observe.events), EPOLLIN, on_events, d)) < 0) {
                log_error(d, "cannot watch the proc connector: %s", strerror(-k));
                return k;
        }

        if (d->p->observe.events && proc_events_lazy_fd(d->p->observe.events) >= 0) {
                /* Forks and exits are read at once, then every
                 * DAEMON_LAZY_EVENTS_USEC while they keep coming (the
                 * socket holds 16 MiB of them meanwhile): what only forks
                 * waits that long at most to be placed, and exits that
                 * long to count. */
                if ((k = sd_event_add_io(s->event, &s->lazy_events, proc_events_lazy_fd(d->p->observe.events), EPOLLIN,
                                         on_lazy_events, d)) < 0 ||
                    (k = sd_event_add_time_relative(s->event, &s->lazy_tick, CLOCK_MONOTONIC, DAEMON_LAZY_EVENTS_USEC,
                                                    DAEMON_LAZY_EVENTS_ACCURACY_USEC, on_lazy_tick, d)) < 0 ||
                    (k = sd_event_source_set_enabled(s->lazy_tick, SD_EVENT_OFF)) < 0) {
                        log_error(d, "cannot watch the proc connector: %s", strerror(-k));
                        return k;
                }
        }
        return 0;
}

static void sources_done(DaemonSources *s) {
        s->timer = sd_event_source_unref(s->timer);
        s->soon = sd_event_source_unref(s->soon);
        s->lazy_events = sd_event_source_unref(s->lazy_events);
        s->lazy_tick = sd_event_source_unref(s->lazy_tick);
        s->event = sd_event_unref(s->event);
}

/* After the loop: no more calls, then what restore_on_exit says. */
static void daemon_stop(Daemon *d) {
        /* No calls while restoring: they would see a half-restored machine. */
        d->serve.bus = bus_server_free(d->serve.bus);
        if (d->p->decide.config->restore_on_exit)
                (void) restore_all(d, "stopping", NULL);
        else
                log_notice(d, "restore_on_exit = no: changes stay; 'topoctl reset' puts them back");
}

static void daemon_init(Daemon *d, const DaemonArgs *a) {
        *d = (Daemon) { .args = a, .started_usec = pipeline_now_usec() };
        daemon_writers_init(&d->writers);
        placer_init(&d->placer);
        log_open(&d->log, a->log_level);
}

static void daemon_done(Daemon *d) {
        placer_done(&d->placer);
        daemon_serve_done(&d->serve);
        daemon_metrics_done(&d->metrics);
        sources_done(&d->sources);
        daemon_writers_done(&d->writers);
        pass_book_done(&d->pass);
        daemon_reloads_done(&d->reloads);
        d->p = pipeline_free(d->p);
}

int topod_run(const DaemonArgs *a) {
        Daemon d;
        int k, r = EXIT_FAILURE;

        daemon_init(&d, a);
        if (block_signals() < 0)
                return EXIT_FAILURE;
        if (open_pipeline(&d) < 0 || daemon_writers_open(&d) < 0 || sources_add(&d) < 0 || daemon_serve_start(&d) < 0)
                goto finish;
        lock_take(&d); /* given up by loop() */
        if ((k = placer_start(&d)) < 0) {
                lock_give(&d);
                goto finish;
        }
        sandbox(&d);
        k = loop(&d);
        placer_stop(&d.placer);
        if (k < 0)
                log_error(&d, "event loop failed: %s", strerror(-k));
        daemon_stop(&d);
        r = k < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
finish:
        daemon_done(&d);
        return r;
}
