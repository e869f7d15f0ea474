/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The placer: a thread that places execs as they come, the ticket lock it
 * shares with the loop, and the yield point through which a pass lets it
 * in. Its own file: the only code of topod that runs on a second thread.
 *
 * Where the kernel sends execs on a socket of their own (6.6+), a thread of
 * ours waits on that socket alone and places the execs with the daemon's
 * lock held, which the loop holds at all times but while it waits for its
 * own events: the loop's dispatch (microseconds a wake-up) is then not on
 * the way from an exec to its placement. What it cannot do itself
 * (sd-event is not thread-safe) it asks of the loop: a pass soon, through
 * an eventfd. A pass holds the lock: the placer waits for it, as any of the
 * loop's own event sources would.
 *
 * The lock is taken in turn (a ticket lock): a plain mutex goes to whoever
 * runs, and a placer busy with an exec storm would take it again before
 * the loop, woken, got it: signals, timers, the watchdog and calls would
 * wait out the storm. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "base/macro.h"
#include "base/sched-attr.h"
#include "daemon-internal.h"

/* placer_stop() sends DAEMON_PLACER_SIGNAL again this often until the
 * placer has ended. */
#define DAEMON_PLACER_STOP_RETRY_NSEC 10000000L
/* The placer's scheduler slice request (placer_slice()): the shortest the
 * kernel takes (it clamps to 0.1-100 ms). */
#define DAEMON_PLACER_SLICE_NSEC 100000u
/* Read errors in a row after which the placer gives the socket to the
 * loop (one alone only makes the next scan read everything). */
#define DAEMON_PLACER_ERRORS_MAX 8u
/* A pass lets a waiting placer in only after holding the lock this long
 * since it last took it: each placement waits at most that (and one
 * process's worth of the pass), and a pass during an exec storm still
 * gets a share of the lock (a turn per process would let a busy placer
 * stretch a pass over seconds). */
#define DAEMON_PASS_SLICE_USEC 2000u

void placer_init(Placer *pl) {
        *pl = (Placer) { .lock = { .mutex = PTHREAD_MUTEX_INITIALIZER, .turn = PTHREAD_COND_INITIALIZER },
                         .soon = -EBADF };
}

void lock_take(Daemon *d) {
        TicketLock *l = &d->placer.lock;
        unsigned ticket;

        pthread_mutex_lock(&l->mutex);
        /* Changed atomically (under the mutex): pass_yield() looks
         * without it. */
        ticket = __atomic_fetch_add(&l->next, 1u, __ATOMIC_RELAXED);
        while (ticket != l->serving)
                pthread_cond_wait(&l->turn, &l->mutex);
        pthread_mutex_unlock(&l->mutex);
}

void lock_give(Daemon *d) {
        TicketLock *l = &d->placer.lock;

        pthread_mutex_lock(&l->mutex);
        __atomic_fetch_add(&l->serving, 1u, __ATOMIC_RELAXED);
        pthread_cond_broadcast(&l->turn);
        pthread_mutex_unlock(&l->mutex);
}

/* A pass's yield point (base/yield.h), the lock held: when the placer
 * waits for it, it places what came and the pass goes on after. A pass
 * holds the lock for tens of milliseconds on a big host (up to a second
 * under emulation), and execs would wait that long for it. Where the
 * pass calls this, its state is whole, and what the placer placed
 * meanwhile it leaves alone (pipeline_changed()). */
static void pass_yield(void *userdata) {
        Daemon *d = userdata;
        TicketLock *l = &d->placer.lock;
        uint64_t t, now;

        if (__atomic_load_n(&l->next, __ATOMIC_RELAXED) - __atomic_load_n(&l->serving, __ATOMIC_RELAXED) <= 1u)
                return; /* nobody waits */
        t = pipeline_now_usec();
        if (t - d->pass.slice_start_usec < DAEMON_PASS_SLICE_USEC)
                return;
        lock_give(d);
        lock_take(d);
        now = pipeline_now_usec();
        d->pass.yielded_usec += now - t;
        d->pass.slice_start_usec = now;
        /* A pass that yields goes on (2 ms of its work at least a turn),
         * however long an exec storm makes it: the watchdog is pinged
         * meanwhile, as the loop would (a pass stuck in one process still
         * stops it). */
        if (d->watchdog_usec > 0 && now - d->pass.last_yield_ping_usec >= d->watchdog_usec / 4) {
                (void) sd_notify(false, "WATCHDOG=1");
                d->pass.last_yield_ping_usec = now;
        }
}

static void on_placer_signal(int sig) {
        (void) sig; /* it only ends the placer's wait */
}

/* The placer's turns on a busy CPU. On EEVDF (6.12 and later take a slice
 * request from a SCHED_OTHER thread, sched_attr.sched_runtime), a short
 * slice gives each wake-up an early deadline: it preempts what runs
 * rather than waiting behind it, and gets no more CPU than before, only
 * shorter turns (a placement takes a tenth of the slice asked): beside
 * busy tasks, a wake-up is on a CPU within microseconds, not after what
 * is left of their slices (a millisecond and more). A real-time policy the operator gave topod is
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
        for (unsigned errors = 0; !__atomic_load_n(&d->placer.stopping, __ATOMIC_ACQUIRE);) {
                size_t n = 0;
                /* Without the lock: the only reader of the socket that
                 * waits (a pass reads it too, without waiting, with the
                 * lock held: what the placer read meanwhile is placed at
                 * the pass's first yield). One system call a wake-up,
                 * not a poll() and a read. */
                int k = proc_events_wait_urgent(d->p->observe.events, ev, ELEMENTSOF(ev), &n);
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
                        d->placer.failed = d->pass.wanted = true;
                        (void) eventfd_write(d->placer.soon, 1);
                        lock_give(d);
                        break;
                }
                if (k < 0)
                        log_warning(d, "placer: reading the exec events: %s; a full scan follows", strerror(-k));
                if (k < 0 || fast_place(d)) {
                        d->pass.wanted = true;
                        (void) eventfd_write(d->placer.soon, 1);
                }
                if (rest)
                        pipeline_take_urgent_rest(d->p, ev, n);
                lock_give(d);
        }
        return NULL;
}

/* The execs from the loop, as without a placer. */
static int placer_fallback(Daemon *d) {
        int k = sd_event_add_io(d->sources.event, NULL, proc_events_fd(d->p->observe.events), EPOLLIN, on_events, d);

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
        if (d->placer.failed && d->placer.running) {
                /* It has ended (or is about to, without the lock). */
                lock_give(d);
                (void) pthread_join(d->placer.thread, NULL);
                lock_take(d);
                d->placer.running = false;
                pipeline_set_yield(d->p, NULL, NULL);
                (void) placer_fallback(d);
        }
        /* Not when a pass has begun since it asked: that pass did it. */
        if (d->pass.wanted)
                arm_soon(d);
        return 0;
}

/* Where the kernel splits the events: the placer's eventfd and thread,
 * before the sandbox (eventfd2 is not in it; TSYNC puts the thread under
 * it). The caller holds the lock: the placer starts placing once the loop
 * first waits. 1 started, 0 not needed (the loop places); a placer that
 * cannot start leaves the execs to the loop. Negative errno only when
 * neither can. */
int placer_start(Daemon *d) {
        struct sigaction sa = { .sa_handler = on_placer_signal }; /* no SA_RESTART: the wait returns EINTR */
        int k;

        if (!d->p->observe.events || proc_events_lazy_fd(d->p->observe.events) < 0)
                return 0;
        d->placer.soon = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (d->placer.soon < 0 || sigaction(DAEMON_PLACER_SIGNAL, &sa, NULL) < 0)
                k = -errno;
        else
                k = sd_event_add_io(d->sources.event, &d->placer.soon_source, d->placer.soon, EPOLLIN, on_placer_soon,
                                    d);
        if (k >= 0) {
                k = -pthread_create(&d->placer.thread, NULL, placer_main, d);
                d->placer.running = k == 0;
        }
        if (d->placer.running)
                pipeline_set_yield(d->p, pass_yield, d);
        if (k < 0) {
                log_warning(d, "cannot start the placer: %s; the execs are placed from the main loop", strerror(-k));
                return placer_fallback(d) < 0 ? -EIO : 0;
        }
        return 1;
}

/* Called without the lock (the placer may be waiting for it). It waits in
 * recvmmsg(): the signal ends that wait. Sent until it has ended: one
 * that comes after its look at pl->stopping and before its wait is
 * lost on it. */
void placer_stop(Placer *pl) {
        if (!pl->running)
                return;
        __atomic_store_n(&pl->stopping, true, __ATOMIC_RELEASE);
        for (;;) {
                struct timespec until;

                (void) pthread_kill(pl->thread, DAEMON_PLACER_SIGNAL);
                (void) clock_gettime(CLOCK_MONOTONIC, &until);
                until.tv_nsec += DAEMON_PLACER_STOP_RETRY_NSEC;
                if (until.tv_nsec >= 1000000000L) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000L;
                }
                if (pthread_clockjoin_np(pl->thread, NULL, CLOCK_MONOTONIC, &until) != ETIMEDOUT)
                        break;
        }
        pl->running = false;
}

void placer_done(Placer *pl) {
        placer_stop(pl);
        pl->soon_source = sd_event_source_unref(pl->soon_source);
        closep(&pl->soon);
}
