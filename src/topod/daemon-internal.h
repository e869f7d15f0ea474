/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the daemon's files share, private to src/topod: the Daemon, made of
 * one part per concern (each with its init/done), and the functions one
 * file of the daemon calls in another.
 *
 *   daemon.c       the loop, its timers and event sources, topod_run()
 *   pass.c         a pass (scan, plan, apply) and the fast path
 *   machine.c      what changes under a running topod: SMT, sched_ext, CPUs, [when]
 *   placer.c       the placer thread, the ticket lock, the pass's yield point
 *   writers.c      the journal, the cookie worker, held cgroup files; restores
 *   reload.c       SIGHUP and Reload
 *   status.c       the Status and Plan replies
 *   bus-methods.c  one handler per bus method
 *   metrics.c      what the metrics count, the Metrics reply, the textfile
 *
 * Threads: the placer (placer.c) touches the Daemon only with its lock held
 * (lock_take()), which the loop holds at all times but while it waits; the
 * placer's own fields are the exception, as their comments say. */

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-event.h>

#include "apply/cgroup.h"
#include "apply/cookie.h"
#include "apply/journal.h"
#include "apply/pidref.h"
#include "apply/reconcile.h"
#include "base/histogram.h"
#include "base/json.h"
#include "bus.h"
#include "change-entry.h"
#include "daemon.h"
#include "decide/diag.h"
#include "decide/plan.h"
#include "log.h"
#include "observe/sysload.h"
#include "pipeline/pipeline.h"
#include "ratelimit.h"

/* Ends the placer's wait for exec events (placer_stop()); blocked on every
 * other thread (topod_run()). */
#define DAEMON_PLACER_SIGNAL (SIGRTMIN + 1)

/* The loop and the sources the daemon arms (daemon.c). */
typedef struct DaemonSources {
        sd_event *event;
        sd_event_source *timer, *soon;
        sd_event_source *lazy_events; /* forks and exits, when the kernel splits them off */
        sd_event_source *lazy_tick;   /* drains them meanwhile (on_lazy_events()) */
        uint64_t soon_first_usec;     /* when the armed 'soon' pass was first asked for */
} DaemonSources;

/* What the daemon writes with and restores from (writers.c). */
typedef struct DaemonWriters {
        char *state_dir;
        int lock;                /* on state_dir: one topod per state directory */
        Journal *journal;
        CookieApplier *cookies;
        CgroupHeld *held; /* held for the groups of the plan in force */
        PidRefOps pidref; /* the kernel's, naming pinned processes by pidfd inode where it can */
        /* The cgroup driver, chosen at start (writers.c): systemd's (a bus
         * and its ops) or cgroupfs (unit_bus NULL); why, for status. */
        ConfigCgroupDriver driver;
        char *driver_why;
        UnitBus *unit_bus;
        UnitOps unit_ops;
} DaemonWriters;

/* The daemon's lock: a ticket, served in turn (placer.c). */
typedef struct TicketLock {
        pthread_mutex_t mutex;
        pthread_cond_t turn;
        unsigned next, serving;
} TicketLock;

/* The placer thread (placer.c). */
typedef struct Placer {
        TicketLock lock;
        pthread_t thread;
        bool running;
        bool failed;
        bool stopping;            /* it is to end (placer_stop()) */
        int soon;                 /* eventfd: the placer asks the loop for a pass */
        sd_event_source *soon_source;
} Placer;

/* The passes: the plan in force and what the last one did (pass.c). */
typedef struct PassBook {
        Plan *plan;              /* in force: the last pass's */
        ReconcileReport *report; /* what the last pass did */
        unsigned count;
        unsigned last_failed;
        uint64_t last_usec, last_cost_usec;
        uint64_t last_stage_usec[3]; /* of that: scan, plan, apply */
        uint64_t yielded_usec, last_yielded_usec; /* of that: the placer's, in pass_yield() */
        unsigned last_deferred;  /* new processes its scan left to the next (an exec storm's) */
        uint64_t slice_start_usec; /* when the pass last took the lock */
        uint64_t last_yield_ping_usec;
        /* These two, with the lock held, as the rest of the Daemon. */
        bool running;            /* a pass runs (the placer places in its yields) */
        bool wanted;             /* the placer asked for a pass (placer.soon) since the last began */
} PassBook;

/* The timer pass's gates (idle, exec storm) and the fast path's counts
 * (daemon.c). */
typedef struct DaemonGates {
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
} DaemonGates;

/* The bus and what its replies keep (bus-methods.c). */
typedef struct DaemonServe {
        BusServer *bus;
        uint64_t last_explain_pass_usec;
        /* The task the last explain-forced pass was for (pid, start
         * time): one that the pass did not make known (a zombie, a task
         * the scan skips) forces no second pass. */
        pid_t last_explain_pid;
        uint64_t last_explain_start;
        char *plan_reply[2];          /* the last Plan reply, text [0] and JSON [1] */
        uint64_t plan_reply_usec[2];
        uint64_t plan_reply_passes[2]; /* d->pass.count when it was made */
} DaemonServe;

/* The reloads (reload.c). */
typedef struct DaemonReloads {
        unsigned count, refused;
        char *last;              /* one line: when and how the last reload went */
} DaemonReloads;

/* The log of changes (changes.c): a rate limit per action, for info
 * [0] and debug [1]; set up at first use. */
typedef struct ChangeLog {
        RateLimit limits[_CHANGE_ACTION_MAX][2];
} ChangeLog;
/* The metrics beyond what the rest keeps, and their file (metrics.c). */
typedef struct DaemonMetrics {
        Histogram pass_duration;
        uint64_t passes_failed;
        uint64_t apply[_RECONCILE_STATUS_MAX]; /* the passes' reports' counts, summed */
        const ReconcileReport *counted; /* the report last summed (compared, never read) */
        sd_event_source *timer;     /* the next write, when the last was too recent */
        uint64_t last_write_usec;
        int last_error;             /* of the last write: logged when it changes */
        char *written;              /* the file written (host path), removed at exit */
        unsigned placed_written;    /* d->gate.fast_placed in the file written last */
} DaemonMetrics;

typedef struct Daemon {
        const DaemonArgs *args;
        Log log;
        Pipeline *p;
        DaemonSources sources;
        DaemonWriters writers;
        Placer placer;
        PassBook pass;
        DaemonGates gate;
        DaemonServe serve;
        DaemonReloads reloads;
        ChangeLog changes;
        DaemonMetrics metrics;
        uint64_t started_usec;
        uint64_t watchdog_usec;   /* WatchdogSec=, 0 without */
        bool ready;
        bool paused;             /* topoctl reset: observe, apply nothing, until a reload */
        bool restoring;          /* in restore_all(): what changes meanwhile is its own to act on */
} Daemon;

#define log_error(d, ...) log_at(&(d)->log, LOG_ERR, __VA_ARGS__)
#define log_warning(d, ...) log_at(&(d)->log, LOG_WARNING, __VA_ARGS__)
#define log_notice(d, ...) log_at(&(d)->log, LOG_NOTICE, __VA_ARGS__)
#define log_info(d, ...) log_at(&(d)->log, LOG_INFO, __VA_ARGS__)
#define log_debug(d, ...) log_at(&(d)->log, LOG_DEBUG, __VA_ARGS__)

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

/* Each part's init (where it needs more than zeroes) and done, called by
 * daemon.c as the Daemon starts and ends. */
void daemon_writers_init(DaemonWriters *w);
void placer_init(Placer *pl);
void placer_done(Placer *pl);
void daemon_serve_done(DaemonServe *s);
void daemon_writers_done(DaemonWriters *w);
void pass_book_done(PassBook *b);
void daemon_reloads_done(DaemonReloads *r);
void daemon_metrics_done(DaemonMetrics *m);

/* daemon.c */
/* A pass in DAEMON_EVENT_DELAY_USEC, for what the fast path left; a burst
 * of requests makes one pass after it. */
void arm_soon(Daemon *d);
/* A pass in DAEMON_PASS_RETRY_USEC: one failed with work left for it. */
void arm_retry(Daemon *d);
/* The proc connector's socket, from the loop: drain, then place. */
int on_events(sd_event_source *s, int fd, uint32_t revents, void *userdata);
void log_diagnostics(const Daemon *d, const Diagnostics *dg);

/* pass.c */
/* The apply's writers, as the Daemon holds them. */
Reconciler reconciler(const Daemon *d);
/* Scan, plan, apply what differs; a pass that fails is logged, and tried
 * again later when work waits for it. */
int pass(Daemon *d, PassCause cause);
/* Place what exec'd or was born since the last call, from the plan in
 * force. Whether a pass is needed soon for what it left. */
bool fast_place(Daemon *d);
/* fast_place(), and arm_soon() when it left something. */
void place_fresh(Daemon *d);

/* machine.c */
/* The cookie worker's interlocks, from the capabilities as last read. */
void set_interlocks(Daemon *d);
/* Read again what forbids cookies, act on a change; whether it changed. */
bool refresh_interlocks(Daemon *d);
/* The interlocks, the CPUs online and the policies in force, read again;
 * whether anything changed (the plan in use was made without it). */
bool refresh_machine(Daemon *d);
/* Once at start: what this kernel does not let topod do. */
void log_limits(const Daemon *d);

/* placer.c */
/* The daemon's lock, taken in turn. */
void lock_take(Daemon *d);
void lock_give(Daemon *d);
/* With the lock held: 1 started, 0 not needed (the loop places the execs),
 * negative errno when neither the placer nor the loop can. */
int placer_start(Daemon *d);
/* Without the lock: end the placer and wait for it. */
void placer_stop(Placer *pl);

/* writers.c */
/* The state directory locked, the journal open (a crash's restored), the
 * cookie worker and held cgroup files set up. */
int daemon_writers_open(Daemon *d);
/* Put back what the journal holds; *ret (may be NULL): the report, NULL
 * when nothing was journaled. */
int restore_all(Daemon *d, const char *why, ReconcileReport **ret);

/* changes.c */
/* Each change in r (about plan: the one in force, or NULL) logged, and the
 * counts the rate limits held back said. */
void changes_log_report(Daemon *d, const Plan *plan, const ReconcileReport *r);
/* The fast path's batch, as reconcile_place() left it. */
void changes_log_placements(Daemon *d, const Plan *plan, const ReconcilePlacement *b, size_t n);
/* What the rate limits held back in an interval now over, said. */
void changes_flush(Daemon *d);

/* reload.c */
/* Read the configuration again, all or nothing; ret_messages (may be
 * NULL): file:line of each finding and how it went. */
int reload(Daemon *d, bool json, char **ret_messages);
/* SIGHUP. */
int on_reload(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata);

/* status.c */
/* The Status reply. */
void status_print_text(const Daemon *d, FILE *f);
void status_print_json(const Daemon *d, Json *j);
/* The Plan reply: the plan in force compared with the machine. */
void status_print_plan(const Daemon *d, bool json, FILE *f);

/* bus-methods.c */
/* Listen on the bus socket in the state directory. */
int daemon_serve_start(Daemon *d);
/* Drop the Plan replies kept: what they say changed without a pass. */
void plan_reply_forget(Daemon *d);

/* metrics.c */
/* The Metrics reply: the exposition, or JSON. */
int metrics_print(const Daemon *d, bool json, FILE *f);
/* Something the metrics show changed: the file written now, or once
 * the interval since the last write is over. */
void metrics_changed(Daemon *d);
/* After pass() (k: its result; passes_before: d->pass.count before it):
 * its duration and apply results counted, the file written. */
void metrics_note_pass(Daemon *d, int k, unsigned passes_before);
/* At each timer tick, passed or skipped: the file written when the fast
 * path placed processes since (the placer's, which the loop does not see). */
void metrics_tick(Daemon *d);
