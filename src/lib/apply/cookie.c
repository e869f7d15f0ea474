/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "apply/cookie.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* The agents read a stat file and make a few syscalls: a small stack does. */
#define COOKIE_AGENT_STACK (256u * 1024u)

/* ---------------------------------------------------------------------- */
/* the real syscalls */

static int host_create(pid_t tid, void *userdata) {
        (void) userdata;
        if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_CREATE, (unsigned long) tid, PR_SCHED_CORE_SCOPE_THREAD, 0UL) < 0)
                return negative_errno();
        return 0;
}

static int host_share_from(pid_t tid, void *userdata) {
        (void) userdata;
        /* The kernel accepts SHARE_FROM with the thread scope only. */
        if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_SHARE_FROM, (unsigned long) tid, PR_SCHED_CORE_SCOPE_THREAD, 0UL) < 0)
                return negative_errno();
        return 0;
}

static int host_share_to(pid_t tid, void *userdata) {
        (void) userdata;
        if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_SHARE_TO, (unsigned long) tid, PR_SCHED_CORE_SCOPE_THREAD, 0UL) < 0)
                return negative_errno();
        return 0;
}

static int host_create_process(pid_t tid, void *userdata) {
        (void) userdata;
        if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_CREATE, (unsigned long) tid, PR_SCHED_CORE_SCOPE_THREAD_GROUP, 0UL) < 0)
                return negative_errno();
        return 0;
}

static int host_share_to_process(pid_t tid, void *userdata) {
        (void) userdata;
        if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_SHARE_TO, (unsigned long) tid, PR_SCHED_CORE_SCOPE_THREAD_GROUP, 0UL) < 0)
                return negative_errno();
        return 0;
}

static int host_get(pid_t tid, uint64_t *ret_cookie, void *userdata) {
        uint64_t cookie = 0; /* the kernel writes a u64 and wants it 8-byte aligned */

        (void) userdata;
        if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_GET, (unsigned long) tid, PR_SCHED_CORE_SCOPE_THREAD,
                  (unsigned long) &cookie) < 0)
                return negative_errno();
        *ret_cookie = cookie;
        return 0;
}

const CookieOps cookie_ops_host = {
        .create = host_create,
        .share_from = host_share_from,
        .share_to = host_share_to,
        .create_process = host_create_process,
        .share_to_process = host_share_to_process,
        .get = host_get,
        .pidref = &pidref_ops_host,
};

/* ---------------------------------------------------------------------- */
/* outcomes and errors */

static const char *const outcome_names[_COOKIE_OUTCOME_MAX] = {
        [COOKIE_DONE] = "done",
        [COOKIE_ALREADY] = "already",
        [COOKIE_VANISHED] = "vanished",
        [COOKIE_REFUSED] = "refused",
        [COOKIE_FAILED] = "failed",
};

const char *cookie_outcome_to_string(CookieOutcome o) {
        if ((unsigned) o >= _COOKIE_OUTCOME_MAX)
                return NULL;
        return outcome_names[o];
}

bool cookie_error_is_machine_wide(int error) {
        switch (-error) {
        case EINVAL: /* CONFIG_SCHED_CORE=n: prctl does not know PR_SCHED_CORE */
        case ENODEV: /* no SMT present (nosmt, SMT off, or a CPU without it) */
                return true;
        default:
                return false;
        }
}

bool cookie_error_is_permanent(int error) {
        if (cookie_error_is_machine_wide(error))
                return true;
        switch (-error) {
        case EPERM: /* ptrace_may_access() said no: until the target's or our creds change */
        case ENOTRECOVERABLE: /* our zero-cookie thread got a cookie from outside */
                return true;
        default:
                /* ENOMEM (cookie allocation), EMFILE/ENFILE (pidfd), EAGAIN,
                 * EINTR and whatever else: try again on the next reconcile. */
                return false;
        }
}

/* ---------------------------------------------------------------------- */
/* the applier and its two threads */

typedef enum JobKind {
        JOB_ASSIGN,
        JOB_JOIN,
        JOB_CLEAR,
        JOB_RELEASE,
} JobKind;

typedef struct Job {
        JobKind kind;
        const CookieTask *source;
        const CookieTask *tasks;
        size_t n;
        CookieResult *results;
        int r;
        bool done;
} Job;

typedef struct Agent {
        CookieApplier *applier;
        pthread_t thread;
        bool started;
        pid_t tid;  /* set by the thread itself once running */
        Job *job;   /* posted, not yet taken */
        bool quit;
        const char *name; /* its thread's, as top -H and ps -L show it */
} Agent;

struct CookieApplier {
        const Root *root; /* borrowed: the caller keeps it alive */
        CookieOps ops;
        CookieInterlocks interlocks;

        pthread_mutex_t lock;
        pthread_cond_t cond; /* any change of a job slot, a job's done flag, or a tid */
        Agent worker, blank;

        /* Written by the worker while the caller waits for it, read by the
         * caller after: the job handoff through the mutex orders both. */
        bool holding;
};

static void run_job(CookieApplier *a, Job *j);

static void *agent_main(void *userdata) {
        Agent *ag = userdata;
        CookieApplier *a = ag->applier;

        (void) prctl(PR_SET_NAME, ag->name, 0, 0, 0);
        pthread_mutex_lock(&a->lock);
        ag->tid = gettid();
        pthread_cond_broadcast(&a->cond);
        for (;;) {
                Job *j;

                while (!ag->job && !ag->quit)
                        pthread_cond_wait(&a->cond, &a->lock);
                if (ag->quit)
                        break;
                j = ag->job;
                ag->job = NULL;
                pthread_mutex_unlock(&a->lock);

                run_job(a, j);

                pthread_mutex_lock(&a->lock);
                j->done = true;
                pthread_cond_broadcast(&a->cond);
        }
        pthread_mutex_unlock(&a->lock);
        return NULL;
}

static int agent_start(CookieApplier *a, Agent *ag, const char *name) {
        pthread_attr_t attr;
        sigset_t all, old;
        int k;

        ag->applier = a;
        ag->name = name;
        k = pthread_attr_init(&attr);
        if (k != 0)
                return -k;
        k = pthread_attr_setstacksize(&attr, COOKIE_AGENT_STACK);
        if (k == 0) {
                /* Signals are the event loop's business (signalfd): the agents
                 * take none, but SIGSYS, so that a system call the sandbox
                 * refuses is named by its handler instead of killing us
                 * silently. The mask is inherited from the creating thread. */
                sigfillset(&all);
                sigdelset(&all, SIGSYS);
                pthread_sigmask(SIG_SETMASK, &all, &old);
                k = pthread_create(&ag->thread, &attr, agent_main, ag);
                pthread_sigmask(SIG_SETMASK, &old, NULL);
        }
        pthread_attr_destroy(&attr);
        if (k != 0)
                return -k;
        ag->started = true;

        pthread_mutex_lock(&a->lock);
        while (ag->tid == 0)
                pthread_cond_wait(&a->cond, &a->lock);
        pthread_mutex_unlock(&a->lock);
        return 0;
}

static void agent_stop(CookieApplier *a, Agent *ag) {
        if (!ag->started)
                return;
        pthread_mutex_lock(&a->lock);
        ag->quit = true;
        pthread_cond_broadcast(&a->cond);
        pthread_mutex_unlock(&a->lock);
        pthread_join(ag->thread, NULL);
        ag->started = false;
}

/* Hand a job to an agent and wait for it. */
static int agent_run(CookieApplier *a, Agent *ag, Job *j) {
        pthread_mutex_lock(&a->lock);
        ag->job = j;
        pthread_cond_broadcast(&a->cond);
        while (!j->done)
                pthread_cond_wait(&a->cond, &a->lock);
        pthread_mutex_unlock(&a->lock);
        return j->r;
}

int cookie_applier_new(const Root *root, const CookieOps *ops, CookieApplier **ret) {
        CookieApplier *a;
        int k;

        if (!root || !ret)
                return -EINVAL;
        if (!ops)
                ops = &cookie_ops_host;
        if (!ops->create || !ops->share_from || !ops->share_to || !ops->get)
                return -EINVAL;

        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->root = root;
        a->ops = *ops;
        if (!a->ops.pidref)
                a->ops.pidref = &pidref_ops_host;
        pthread_mutex_init(&a->lock, NULL);
        pthread_cond_init(&a->cond, NULL);

        k = agent_start(a, &a->worker, "topod-cookie");
        if (k >= 0)
                k = agent_start(a, &a->blank, "topod-blank");
        if (k < 0) {
                cookie_applier_free(a);
                return k;
        }
        *ret = a;
        return 0;
}

CookieApplier *cookie_applier_free(CookieApplier *a) {
        if (!a)
                return NULL;
        agent_stop(a, &a->worker);
        agent_stop(a, &a->blank);
        pthread_cond_destroy(&a->cond);
        pthread_mutex_destroy(&a->lock);
        free(a);
        return NULL;
}

void cookie_applier_set_interlocks(CookieApplier *a, const CookieInterlocks *il) {
        a->interlocks = il ? *il : (CookieInterlocks) {};
}

pid_t cookie_applier_keepalive_tid(const CookieApplier *a) {
        return a->holding ? a->worker.tid : 0;
}

bool cookie_applier_checks_pidfs(const CookieApplier *a) {
        const PidRefOps *o = a->ops.pidref;

        return o && o->pidfd_open && o->pidfd_alive && o->pidfd_ino;
}

int cookie_get(const CookieApplier *a, pid_t tid, uint64_t *ret_cookie) {
        uint64_t c;
        int k;

        if (tid < 0 || !ret_cookie)
                return -EINVAL;
        k = a->ops.get(tid, &c, a->ops.userdata);
        if (k < 0)
                return k;
        *ret_cookie = c;
        return 0;
}

/* ---------------------------------------------------------------------- */
/* the jobs (run on the agents) */

static void result_set(CookieResult *r, CookieOutcome o, int error, uint64_t cookie) {
        r->outcome = o;
        r->error = o == COOKIE_FAILED || o == COOKIE_REFUSED ? error : 0;
        r->cookie = o == COOKIE_DONE || o == COOKIE_ALREADY ? cookie : 0;
}

/* An error from a step on one thread: ESRCH means it has gone (the kernel
 * found no such tid, or our identity check did). */
static void result_error(CookieResult *r, int error) {
        if (error == -ESRCH)
                result_set(r, COOKIE_VANISHED, 0, 0);
        else
                result_set(r, COOKIE_FAILED, error, 0);
}

static void results_fill(CookieResult *results, size_t from, size_t n, CookieOutcome o, int error) {
        for (size_t i = from; i < n; i++)
                result_set(&results[i], o, error, 0);
}

static int ref_take(CookieApplier *a, const CookieTask *t, PidRef *ret) {
        /* The caller's, where ours can check it (a pidfd needs our pidfd
         * ops: theirs and ours are the kernel's, but for tests). */
        if (t->pinned && t->pinned->tid == t->tid && t->pinned->start_time == t->start_time &&
            (t->pinned->pidfd >= 0 ? a->ops.pidref && a->ops.pidref->pidfd_alive : t->pinned->procfd >= 0)) {
                /* Taken a while ago (before the journal's commit and the
                 * move): still the same thread now? (One check, no
                 * stat read: the pin holds its identity.) Not again when
                 * the caller's check after its move just said so: a
                 * system call less a placement, the dear kind in an
                 * emulated guest. */
                int k = t->pinned_checked ? 1 : pidref_alive(t->pinned, a->root, a->ops.pidref);

                if (k < 0)
                        return k;
                if (k == 0)
                        return -ESRCH;
                *ret = pidref_borrow(t->pinned);
                return 0;
        }
        return t->leader ? pidref_acquire_process(a->root, a->ops.pidref, t->tid, t->start_time, ret)
                         : pidref_acquire(a->root, a->ops.pidref, t->tid, t->start_time, ret);
}

/* After acting on a thread by number: 0 if it was still alive, so the act
 * reached it; -ESRCH if it has gone (maybe before the act: not ours to
 * count as done); another negative errno if that cannot be told. */
static int ref_confirm(CookieApplier *a, const PidRef *ref) {
        int k = pidref_alive(ref, a->root, a->ops.pidref);

        if (k < 0)
                return k;
        return k ? 0 : -ESRCH;
}

int cookie_read(CookieApplier *a, const CookieTask *t, uint64_t *ret_cookie) {
        _cleanup_(pidref_done) PidRef ref = PIDREF_NULL;
        uint64_t c;
        int k;

        if (!a || !t || t->tid <= 0 || !ret_cookie)
                return -EINVAL;
        k = ref_take(a, t, &ref);
        if (k < 0)
                return k;
        k = a->ops.get(t->tid, &c, a->ops.userdata);
        if (k < 0)
                return k;
        k = ref_confirm(a, &ref);
        if (k < 0)
                return k;
        *ret_cookie = c;
        return 0;
}

/* One thread: identity, then op, then confirm; the outcome goes to res.
 * With check_first, a thread whose cookie already is `cookie` is ALREADY and
 * left alone. Returns a machine-wide error from the kernel (the caller's
 * cue to stop calling), else 0. */
static int step_one(CookieApplier *a, const CookieTask *t, int (*op)(pid_t, void *), bool check_first,
                    uint64_t cookie, CookieResult *res) {
        _cleanup_(pidref_done) PidRef ref = PIDREF_NULL;
        int k;

        k = ref_take(a, t, &ref);
        if (k < 0) {
                result_error(res, k);
                return 0;
        }
        if (check_first) {
                uint64_t now;

                k = a->ops.get(t->tid, &now, a->ops.userdata);
                if (k < 0) {
                        result_error(res, k);
                        return cookie_error_is_machine_wide(k) ? k : 0;
                }
                if (now == cookie) {
                        result_set(res, COOKIE_ALREADY, 0, cookie);
                        return 0;
                }
        }
        k = op(t->tid, a->ops.userdata);
        if (k < 0) {
                result_error(res, k);
                return cookie_error_is_machine_wide(k) ? k : 0;
        }
        k = ref_confirm(a, &ref);
        if (k < 0) {
                result_error(res, k);
                return 0;
        }
        result_set(res, COOKIE_DONE, 0, cookie);
        return 0;
}

/* The op for a task: its whole process at once where it asks so and the
 * ops can (CookieTask.whole_process), else the thread. */
typedef int (*CookieOp)(pid_t tid, void *userdata);

static CookieOp op_create(const CookieApplier *a, const CookieTask *t) {
        return t->whole_process && a->ops.create_process ? a->ops.create_process : a->ops.create;
}

static CookieOp op_share_to(const CookieApplier *a, const CookieTask *t) {
        return t->whole_process && a->ops.share_to_process ? a->ops.share_to_process : a->ops.share_to;
}

/* The worker after a job: drop the group's cookie and hold a private one of
 * its own (the keep-alive). If it cannot get one (ENOMEM), it at least lets
 * go of the group's cookie by taking the blank thread's cookie 0. */
static void worker_settle(CookieApplier *a, bool holds_group_cookie) {
        int k;

        if (!holds_group_cookie && a->holding)
                return;
        k = a->ops.create(0, a->ops.userdata);
        if (k >= 0) {
                a->holding = true;
                return;
        }
        a->holding = false;
        if (holds_group_cookie)
                (void) a->ops.share_from(a->blank.tid, a->ops.userdata);
}

static int job_assign(CookieApplier *a, const CookieTask *tasks, size_t n, CookieResult *results) {
        bool shared = false; /* the worker holds the group's cookie */
        uint64_t cookie = 0;
        size_t i, seed = n, done = 0;
        int fatal = 0, k;

        /* The seed: the first thread that takes a new cookie. */
        for (i = 0; i < n && seed == n; i++) {
                _cleanup_(pidref_done) PidRef ref = PIDREF_NULL;

                k = ref_take(a, &tasks[i], &ref);
                if (k < 0) {
                        result_error(&results[i], k);
                        continue;
                }
                k = op_create(a, &tasks[i])(tasks[i].tid, a->ops.userdata);
                if (k < 0) {
                        result_error(&results[i], k);
                        if (cookie_error_is_machine_wide(k)) {
                                fatal = k;
                                break;
                        }
                        continue; /* EPERM, ENOMEM, gone: the next one may do */
                }
                if (i + 1 < n) {
                        /* Others to follow: the worker takes the seed's cookie to pass it on. */
                        k = a->ops.share_from(tasks[i].tid, a->ops.userdata);
                        if (k < 0) {
                                /* It keeps a private cookie nobody else has. */
                                result_error(&results[i], k);
                                if (cookie_error_is_machine_wide(k)) {
                                        fatal = k;
                                        break;
                                }
                                continue;
                        }
                        shared = true;
                        k = a->ops.get(0, &cookie, a->ops.userdata);
                } else
                        k = tasks[i].no_value ? -ENODATA : a->ops.get(tasks[i].tid, &cookie, a->ops.userdata);
                if (k < 0)
                        cookie = 0; /* reported as unknown; the assignment stands */
                k = ref_confirm(a, &ref);
                if (k < 0) {
                        /* Gone after the CREATE. If the worker took its cookie,
                         * the others can still share it: it is the seed anyway. */
                        result_error(&results[i], k);
                        if (shared)
                                seed = i;
                        continue;
                }
                result_set(&results[i], COOKIE_DONE, 0, cookie);
                done++;
                seed = i;
        }

        if (fatal < 0)
                results_fill(results, i + 1, n, COOKIE_FAILED, fatal);
        else
                for (i = seed + 1; i < n; i++) {
                        if (fatal < 0) {
                                result_set(&results[i], COOKIE_FAILED, fatal, 0);
                                continue;
                        }
                        fatal = step_one(a, &tasks[i], op_share_to(a, &tasks[i]), false, cookie, &results[i]);
                        done += results[i].outcome == COOKIE_DONE;
                }

        if (seed < n)
                worker_settle(a, shared);
        return (int) done;
}

static int job_join(CookieApplier *a, const CookieTask *source, const CookieTask *tasks, size_t n,
                    CookieResult *results) {
        _cleanup_(pidref_done) PidRef ref = PIDREF_NULL;
        uint64_t cookie;
        size_t done = 0;
        int fatal = 0, k;

        k = ref_take(a, source, &ref);
        if (k >= 0)
                k = a->ops.get(source->tid, &cookie, a->ops.userdata);
        if (k >= 0 && cookie == 0)
                k = -ENODATA;
        if (k >= 0)
                k = a->ops.share_from(source->tid, a->ops.userdata);
        if (k < 0) {
                results_fill(results, 0, n, COOKIE_FAILED, k);
                return k;
        }
        /* The worker holds the group's cookie now; if the source exits
         * meanwhile the cookie lives on with the worker and the others. */
        pidref_done(&ref);

        for (size_t i = 0; i < n; i++) {
                if (fatal < 0) {
                        result_set(&results[i], COOKIE_FAILED, fatal, 0);
                        continue;
                }
                fatal = step_one(a, &tasks[i], op_share_to(a, &tasks[i]), true, cookie, &results[i]);
                done += results[i].outcome == COOKIE_DONE;
        }
        worker_settle(a, true);
        return (int) done;
}

static int job_clear(CookieApplier *a, const CookieTask *tasks, size_t n, CookieResult *results) {
        uint64_t self;
        size_t done = 0;
        int fatal = 0, k;

        /* SHARE_TO passes on our own cookie: it must be 0. Something with
         * ptrace rights over us could have given us one. */
        k = a->ops.get(0, &self, a->ops.userdata);
        if (k >= 0 && self != 0)
                k = -ENOTRECOVERABLE;
        if (k < 0) {
                results_fill(results, 0, n, COOKIE_FAILED, k);
                return (int) done;
        }
        for (size_t i = 0; i < n; i++) {
                if (fatal < 0) {
                        result_set(&results[i], COOKIE_FAILED, fatal, 0);
                        continue;
                }
                fatal = step_one(a, &tasks[i], a->ops.share_to, true, 0, &results[i]);
                done += results[i].outcome == COOKIE_DONE;
        }
        return (int) done;
}

static int job_release(CookieApplier *a) {
        int k;

        if (!a->holding)
                return 0;
        k = a->ops.share_from(a->blank.tid, a->ops.userdata);
        if (k < 0)
                return k;
        a->holding = false;
        return 0;
}

static void run_job(CookieApplier *a, Job *j) {
        switch (j->kind) {
        case JOB_ASSIGN:
                j->r = job_assign(a, j->tasks, j->n, j->results);
                break;
        case JOB_JOIN:
                j->r = job_join(a, j->source, j->tasks, j->n, j->results);
                break;
        case JOB_CLEAR:
                j->r = job_clear(a, j->tasks, j->n, j->results);
                break;
        case JOB_RELEASE:
                j->r = job_release(a);
                break;
        }
}

/* ---------------------------------------------------------------------- */
/* the calls */

static int check_args(const CookieTask *tasks, size_t n, CookieResult *results) {
        if (n > COOKIE_TASKS_MAX)
                return -E2BIG;
        if (n > 0 && (!tasks || !results))
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (tasks[i].tid <= 0)
                        return -EINVAL;
        for (size_t i = 0; i < n; i++)
                results[i] = (CookieResult) { .tid = tasks[i].tid, .outcome = COOKIE_FAILED, .error = -EIO };
        return 0;
}

/* The interlock that stops `kind`, as the errno reported, or 0. */
static int interlock(const CookieApplier *a, JobKind kind) {
        if (a->interlocks.smt_off)
                return -ENODEV; /* what the kernel would say */
        /* Clearing cookies is the way out of core scheduling: allowed under
         * sched_ext (and needed to restore). Giving new ones is not. */
        if (a->interlocks.sched_ext_active && kind != JOB_CLEAR)
                return -EBUSY;
        return 0;
}

static int submit(CookieApplier *a, Agent *ag, Job *j) {
        int k;

        if (!a)
                return -EINVAL;
        k = check_args(j->tasks, j->n, j->results);
        if (k < 0)
                return k;
        if (j->n == 0)
                return 0;
        k = interlock(a, j->kind);
        if (k < 0) {
                results_fill(j->results, 0, j->n, COOKIE_REFUSED, k);
                return 0;
        }
        return agent_run(a, ag, j);
}

int cookie_assign(CookieApplier *a, const CookieTask *tasks, size_t n, CookieResult *results) {
        Job j = { .kind = JOB_ASSIGN, .tasks = tasks, .n = n, .results = results };
        int k;

        if (!a)
                return -EINVAL;
        /* One thread (the exec hot path): CREATE aimed at it does not involve
         * the calling thread's cookie, so once the worker holds its
         * keep-alive there is nothing for the worker to do and the handoff
         * (two wake-ups) is saved. */
        if (n == 1 && a->holding) {
                k = check_args(tasks, n, results);
                if (k < 0)
                        return k;
                k = interlock(a, JOB_ASSIGN);
                if (k < 0) {
                        results_fill(results, 0, n, COOKIE_REFUSED, k);
                        return 0;
                }
                return job_assign(a, tasks, n, results);
        }
        return submit(a, &a->worker, &j);
}

int cookie_join(CookieApplier *a, const CookieTask *source, const CookieTask *tasks, size_t n,
                CookieResult *results) {
        Job j = { .kind = JOB_JOIN, .source = source, .tasks = tasks, .n = n, .results = results };

        if (!a || !source || source->tid <= 0)
                return -EINVAL;
        return submit(a, &a->worker, &j);
}

int cookie_clear(CookieApplier *a, const CookieTask *tasks, size_t n, CookieResult *results) {
        Job j = { .kind = JOB_CLEAR, .tasks = tasks, .n = n, .results = results };

        return a ? submit(a, &a->blank, &j) : -EINVAL;
}

int cookie_applier_release(CookieApplier *a) {
        Job j = { .kind = JOB_RELEASE };

        if (!a)
                return -EINVAL;
        return agent_run(a, &a->worker, &j);
}
