/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Core-scheduling cookies for sets of threads (prctl PR_SCHED_CORE).
 *
 * Threads with the same cookie may run on the SMT siblings of one core at
 * the same time; threads with different cookies never do (the sibling idles
 * instead). A cookie is per thread and is inherited by fork and by new
 * threads, so a cookie'd process's later children and threads start in its
 * group by themselves; threads the caller wants in a group that were not in
 * it (created before the assignment, moved in by policy, or re-classified)
 * must be added with cookie_join() — the daemon does that on the proc
 * connector's FORK/EXEC events and on each scan.
 *
 * How the kernel is driven. A CookieApplier owns two long-lived threads with
 * every signal blocked:
 *
 *   worker  does assign and join. To give threads T0..Tn one new cookie it
 *           does CREATE on T0 (PIDTYPE_PID: that thread only), SHARE_FROM T0
 *           (the worker now holds T0's cookie), SHARE_TO each of T1..Tn, and
 *           then "clears itself". Clearing itself here means: let go of the
 *           group's cookie by CREATE-ing a fresh private cookie for itself,
 *           which nobody else ever gets. That private cookie is the
 *           keep-alive: the kernel turns core scheduling on when the first
 *           cookie appears and off when the last one is freed (toggling
 *           it per short-lived task doubles exec→placed latency), so
 *           while an applier has assigned anything, one cookie (the
 *           worker's) always exists. The worker never holds a group's cookie
 *           between jobs, so a group's cookie dies with its last member.
 *   blank   keeps cookie 0 for its whole life and does the clears: SHARE_TO
 *           from a thread without a cookie sets the target's cookie to 0.
 *           (A thread cannot set its own cookie to 0 by itself; some thread
 *           with cookie 0 has to be the source. Making the worker that
 *           source would mean dropping the keep-alive for every clear.)
 *
 * The alternative — the worker at cookie 0 between jobs and an idle third
 * thread holding the keep-alive — needs a third thread to be the zero
 * source the worker returns to (SHARE_FROM it) after each job; this way
 * needs two threads and the same number of syscalls per job.
 *
 * A one-thread assign needs no SHARE at all: CREATE aimed at the thread is
 * done from the caller's own thread (its cookie is not involved), and the
 * worker is woken only the first time, to take its keep-alive.
 *
 * Identity: every thread is named by (tid, start_time) as the observer saw
 * it; before acting on one the worker takes a PidRef (pidfd, then the start
 * time re-read from proc/<tid>/stat through the Root; or borrows the
 * caller's, CookieTask.pinned, checking it is still alive), acts, and then
 * checks the pidfd's thread is still alive. A thread that has gone, or whose tid
 * now names another thread, is reported COOKIE_VANISHED and not touched.
 *
 * Not thread-safe: one caller at a time (the daemon's event loop). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "apply/pidref.h"
#include "base/macro.h"
#include "base/root.h"

/* Most threads one call may name: a group is built from what the machine
 * shows us, so it is bounded like everything else an outsider controls. */
#define COOKIE_TASKS_MAX 65536u

/* The syscalls, so tests run without a kernel that has core scheduling.
 * Each returns 0 or a negative errno; tid 0 means the calling thread. They
 * are called on the applier's own threads, so "the calling thread" is the
 * worker or the blank thread (gettid() tells a fake which). */
typedef struct CookieOps {
        /* PR_SCHED_CORE_CREATE, PIDTYPE_PID: a new cookie for tid only. */
        int (*create)(pid_t tid, void *userdata);
        /* PR_SCHED_CORE_SHARE_FROM: the calling thread takes tid's cookie. */
        int (*share_from)(pid_t tid, void *userdata);
        /* PR_SCHED_CORE_SHARE_TO, PIDTYPE_PID: tid takes the calling thread's cookie. */
        int (*share_to)(pid_t tid, void *userdata);
        /* The same two for every thread of tid's process at once (PIDTYPE_TGID,
         * PR_SCHED_CORE_SCOPE_THREAD_GROUP), for a CookieTask.whole_process.
         * The kernel sets each thread of the group under the task-list lock,
         * which thread creation takes too: a thread made meanwhile is either
         * among them or made after, by one of them, and inherits the cookie.
         * NULL: create / share_to on the named thread alone. */
        int (*create_process)(pid_t tid, void *userdata);
        int (*share_to_process)(pid_t tid, void *userdata);
        /* PR_SCHED_CORE_GET: tid's cookie (0: none). */
        int (*get)(pid_t tid, uint64_t *ret_cookie, void *userdata);
        /* Identity checks; NULL means pidref_ops_host. */
        const PidRefOps *pidref;
        void *userdata;
} CookieOps;

/* The real prctl(PR_SCHED_CORE, …) and pidfds. */
extern const CookieOps cookie_ops_host;

/* What the caller knows about the machine that forbids cookies. These are
 * data, not probes: the caller fills them from KernelCaps and refreshes
 * them when it notices a change. While one is set, nothing is called and
 * every thread is reported COOKIE_REFUSED. */
typedef struct CookieInterlocks {
        bool smt_off;          /* no SMT siblings online: cookies mean nothing (the kernel says ENODEV) */
        bool sched_ext_active; /* a sched_ext scheduler is loaded: core scheduling with it is
                                * reported to hang hosts */
} CookieInterlocks;

typedef enum CookieOutcome {
        COOKIE_DONE,     /* changed as asked */
        COOKIE_ALREADY,  /* already so, nothing done (join: same cookie; clear: no cookie) */
        COOKIE_VANISHED, /* exited, or its tid names another thread now: not an error */
        COOKIE_REFUSED,  /* an interlock stopped it before any syscall; error: -ENODEV (SMT
                          * off) or -EBUSY (sched_ext active) */
        COOKIE_FAILED,   /* error says why, see cookie_error_is_permanent() */
        _COOKIE_OUTCOME_MAX,
} CookieOutcome;

const char *cookie_outcome_to_string(CookieOutcome o);

/* One thread as the observer saw it. */
typedef struct CookieTask {
        pid_t tid;
        uint64_t start_time; /* field 22 of proc/<tid>/stat, or PIDREF_IDENT_PIDFS | its
                              * pidfd's inode (cookie_applier_checks_pidfs()) */
        bool leader;         /* tid is a new process's (main) thread, which the fast path
                              * has just read: checked through proc/<tid>/stat (or its
                              * pidfd's inode, for a pidfs name), see
                              * pidref_acquire_process() */
        const PidRef *pinned; /* NULL, or the caller's handle on this very thread (same
                               * tid and start time), used in place of a new one: the
                               * fast path's move took it a moment before */
        bool pinned_checked;  /* pinned was found alive after the caller's own act on it,
                               * or taken for that act, a moment ago: not checked again
                               * before this one (the check after it tells whether it,
                               * and the caller's act, reached the thread) */
        bool whole_process;   /* tid is a process's main thread and the cookie is for every
                              * thread of that process, at once (CookieOps.create_process,
                              * share_to_process): the fast path's placements, whose
                              * process may start threads while it is placed */
        bool no_value;        /* the caller has no use for the cookie's value: a thread
                               * given a new cookie of its own is not asked for it after
                               * (CookieResult.cookie 0): a system call less */
} CookieTask;

typedef struct CookieResult {
        pid_t tid;
        CookieOutcome outcome;
        int error;       /* negative errno for COOKIE_FAILED and COOKIE_REFUSED, else 0 */
        uint64_t cookie; /* DONE/ALREADY: the cookie it has now (0 after a clear, and
                          * for a new cookie of its own the task asked no value of).
                          * Cookies are hashed pointers and a value can come back after
                          * its cookie is freed: compare live threads, never across time. */
} CookieResult;

/* Failures, sorted:
 *   permanent for the machine (stop, say so once): EINVAL (core scheduling
 *     not built into the kernel, CONFIG_SCHED_CORE=n), ENODEV (no SMT:
 *     booted nosmt, SMT switched off, or none).
 *   permanent for that thread until its credentials change: EPERM (no
 *     ptrace-read access to it: another user without CAP_SYS_PTRACE, or a
 *     non-dumpable process).
 *   temporary (retry on the next reconcile): ENOMEM (kernel cookie
 *     allocation), EMFILE/ENFILE (no fd for the pidfd), EAGAIN, EINTR, and
 *     anything unknown. */
bool cookie_error_is_permanent(int error);
/* The whole machine refuses: no point in trying other threads. */
bool cookie_error_is_machine_wide(int error);

typedef struct CookieApplier CookieApplier;

/* ops NULL: cookie_ops_host. Starts the two threads; nothing is changed on
 * the machine until the first assign. The caller's thread should have no
 * cookie (threads inherit it); the blank thread checks before each clear. */
int cookie_applier_new(const Root *root, const CookieOps *ops, CookieApplier **ret);
/* Stops the threads; the keep-alive cookie goes with the worker. Cookies
 * given to other threads stay (clear them first to restore). */
CookieApplier *cookie_applier_free(CookieApplier *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(CookieApplier *, cookie_applier_free);

void cookie_applier_set_interlocks(CookieApplier *a, const CookieInterlocks *il);

/* Give all tasks ONE new cookie, shared among them and with nobody else
 * (threads they later create inherit it). results[i] is for tasks[i]
 * (n entries, always filled). Returns the number of COOKIE_DONE results, or
 * a negative errno when the call itself was wrong (-E2BIG: n too large,
 * -EINVAL: bad arguments) and nothing was done. If the first thread has
 * gone, the next one is the seed; one that takes the cookie but cannot pass
 * it on is reported failed and left with a private cookie (isolated, never
 * shared with strangers). */
int cookie_assign(CookieApplier *a, const CookieTask *tasks, size_t n, CookieResult *results);

/* Give tasks the cookie that source (a live member of the group) has now:
 * for threads that appear later, or a reconcile that finds a member
 * outside. Already-members are COOKIE_ALREADY. Returns the number of DONE
 * results; -ESRCH when source has gone and -ENODATA when it has no cookie
 * (then nothing was done and every result says so: the caller picks another
 * member or assigns anew); other negative errnos as for cookie_assign. */
int cookie_join(CookieApplier *a, const CookieTask *source, const CookieTask *tasks, size_t n,
                CookieResult *results);

/* Set the tasks' cookies to 0. Returns the number of DONE results, or a
 * negative errno as for cookie_assign. */
int cookie_clear(CookieApplier *a, const CookieTask *tasks, size_t n, CookieResult *results);

/* Give up the keep-alive cookie (the worker goes to cookie 0): topod no
 * longer manages any cookie. The next assign takes it again. */
int cookie_applier_release(CookieApplier *a);

/* The worker's tid while it holds the keep-alive cookie, else 0 (status,
 * tests). */
pid_t cookie_applier_keepalive_tid(const CookieApplier *a);

/* Whether its identity checks take a thread named by its pidfd's inode
 * (PIDREF_IDENT_PIDFS) as CookieTask.start_time: pidfds, and their inodes. */
bool cookie_applier_checks_pidfs(const CookieApplier *a);

/* t's cookie (PR_SCHED_CORE_GET), read while t is pinned: -ESRCH when t
 * is gone or its tid names another thread now. From any thread. */
int cookie_read(CookieApplier *a, const CookieTask *t, uint64_t *ret_cookie);

/* PR_SCHED_CORE_GET through the applier's ops. */
int cookie_get(const CookieApplier *a, pid_t tid, uint64_t *ret_cookie);
