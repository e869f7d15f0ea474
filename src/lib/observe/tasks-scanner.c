/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The scanner (TaskScanner, see tasks.h) and the snapshots it gives: what
 * it keeps between scans (the last snapshot, the held schedstat files, the
 * marks of events), its settings, and the entry points of a scan, whose
 * walk is tasks-scan.c. */
#include "observe/tasks-internal.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/sched-core.h"

int tasks_get_cookie_host(pid_t tid, uint64_t *ret_cookie, void *userdata) {
        unsigned long cookie = 0;

        (void) userdata;
        if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_GET, (unsigned long) tid, 0 /* PIDTYPE_PID */,
                  (unsigned long) &cookie) < 0)
                return negative_errno();
        *ret_cookie = cookie;
        return 0;
}

/* ---- snapshots ------------------------------------------------------------ */

ProcessFacts *process_facts_unref(ProcessFacts *p) {
        if (!p || --p->refs > 0)
                return NULL;
        free(p->exe);
        free(p->cmdline);
        free(p->cgroup);
        free(p);
        return NULL;
}

TaskSnapshot *task_snapshot_ref(TaskSnapshot *s) {
        if (s)
                s->n_ref++;
        return s;
}

TaskSnapshot *task_snapshot_free(TaskSnapshot *s) {
        if (!s || --s->n_ref > 0)
                return NULL;
        for (size_t i = 0; i < s->n_processes; i++)
                process_facts_unref(s->processes[i]);
        free(s->processes);
        free(s->tasks);
        free(s);
        return NULL;
}

int task_held_compare(const void *a, const void *b) {
        const TaskHeld *x = a, *y = b;

        return (x->tid > y->tid) - (x->tid < y->tid);
}

TaskHeld *task_scanner_find_held(const TaskScanner *s, pid_t tid) {
        TaskHeld key = { .tid = tid };

        return s->n_held ? bsearch(&key, s->held, s->n_held, sizeof(TaskHeld), task_held_compare) : NULL;
}

int task_facts_compare(const void *a, const void *b) {
        const TaskFacts *x = a, *y = b;

        return (x->tid > y->tid) - (x->tid < y->tid);
}

unsigned task_snapshot_count_threads(const TaskSnapshot *s, pid_t tgid) {
        unsigned n = 0;

        for (size_t i = 0; i < s->n_tasks; i++)
                n += s->tasks[i].tgid == tgid;
        return n;
}

const TaskFacts *task_snapshot_find(const TaskSnapshot *s, pid_t tid) {
        TaskFacts key = { .tid = tid };

        if (s->n_tasks == 0)
                return NULL;
        return bsearch(&key, s->tasks, s->n_tasks, sizeof(TaskFacts), task_facts_compare);
}

/* ---- the scanner ---------------------------------------------------------- */

int task_scanner_new(const Root *root, const TaskScanOps *ops, TaskScanner **ret) {
        TaskScanner *s = calloc(1, sizeof(TaskScanner));

        if (!s)
                return -ENOMEM;
        s->root = root;
        {
                /* Keep a reserve of descriptors for everything else (the
                 * directories and files of a scan, the apply stage, whose
                 * pass holds up to 256 handles on the processes it moves). */
                struct rlimit rl;
                rlim_t cur = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;

                s->held_budget = cur > 1024 ? (size_t) MIN(cur - 512, (rlim_t) TASKS_MAX) : (size_t) (cur / 2);
        }
        if (ops) {
                s->ops = *ops;
                s->has_ops = true;
        }
        *ret = s;
        return 0;
}

void task_held_close(TaskHeld *h, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (h[i].fd >= 0)
                        close(h[i].fd);
}

TaskScanner *task_scanner_free(TaskScanner *s) {
        if (!s)
                return NULL;
        task_held_close(s->held, s->n_held);
        free(s->held);
        free(s->dirty);
        free(s->late);
        task_snapshot_free(s->prev);
        free(s);
        return NULL;
}

static void held_forget(TaskScanner *s, pid_t tid) {
        TaskHeld *h = task_scanner_find_held(s, tid);

        /* Without its held schedstat the thread is new to the next scan,
         * and when it is a leader, so is its process. */
        if (h && h->fd >= 0) {
                close(h->fd);
                h->fd = -EBADF;
        }
}

void task_scanner_invalidate(TaskScanner *s, pid_t tid) {
        /* During a scan: the old set, for a thread the scan has not come
         * to yet, and after it the new one (below). */
        held_forget(s, tid);
        if (!s->scanning || s->late_lost)
                return;
        if (s->n_late == s->late_cap) {
                size_t n = s->late_cap ? s->late_cap * 2 : 64;
                pid_t *nl = n <= TASKS_MAX ? realloc(s->late, n * sizeof(pid_t)) : NULL;

                if (!nl) {
                        s->late_lost = true;
                        return;
                }
                s->late = nl;
                s->late_cap = n;
        }
        s->late[s->n_late++] = tid;
}

void task_scanner_set_yield(TaskScanner *s, const YieldHooks *hooks) {
        s->yield = hooks;
}

void task_scanner_set_lives(TaskScanner *s, const Lives *lives) {
        s->lives = lives;
}

/* Known dead (every thread exited, maybe not reaped): not read, not kept. */
bool task_scanner_known_dead(TaskScanner *s, pid_t tgid) {
        if (!lives_dead(s->lives, tgid))
                return false;
        s->stats.dead++;
        return true;
}

void task_scanner_set_lazy_kernel_threads(TaskScanner *s, bool lazy) {
        s->lazy_kernel_threads = lazy;
}

void task_scanner_trust_events(TaskScanner *s, bool trust) {
        s->trust_events = trust;
}

int task_scanner_mark(TaskScanner *s, pid_t tgid) {
        if (tgid <= 0)
                return 0;
        if (s->n_dirty == s->dirty_cap) {
                size_t n = s->dirty_cap ? s->dirty_cap * 2 : 64;
                pid_t *nd;

                if (n > TASKS_MAX) {
                        /* A storm: stop listing processes, list /proc. */
                        s->n_dirty = 0;
                        s->trust_events = false;
                        return -E2BIG;
                }
                nd = realloc(s->dirty, n * sizeof(pid_t));
                if (!nd)
                        return -ENOMEM;
                s->dirty = nd;
                s->dirty_cap = n;
        }
        s->dirty[s->n_dirty++] = tgid;
        return 0;
}

void task_scanner_stats(const TaskScanner *s, TaskScanStats *ret) {
        *ret = s->stats;
        ret->held_fds = (unsigned) s->n_held;
}

int task_scanner_scan(TaskScanner *s, bool full, TaskSnapshot **ret) {
        return task_scanner_scan_deferring(s, full, NULL, 0, ret);
}

int task_scanner_scan_deferring(TaskScanner *s, bool full, const pid_t *defer, size_t n_defer, TaskSnapshot **ret) {
        pid_t *taken = s->dirty;
        size_t n_taken = s->n_dirty, taken_cap = s->dirty_cap;
        int k;

        /* The marks so far are this scan's; those made while it yields,
         * the next one's. */
        s->dirty = NULL;
        s->n_dirty = s->dirty_cap = 0;
        s->scanning = true;
        k = task_scanner_run(s, full, taken, n_taken, defer, n_defer, ret);
        s->scanning = false;
        if (!s->dirty) {
                /* none came: the buffer serves again */
                s->dirty = taken;
                s->dirty_cap = taken_cap;
        } else
                free(taken);
        /* What exec'd or renamed itself while the scan ran may be in the
         * new held set with what was read before: read afresh next time. */
        if (s->late_lost) {
                for (size_t i = 0; i < s->n_held; i++)
                        if (s->held[i].fd >= 0) {
                                close(s->held[i].fd);
                                s->held[i].fd = -EBADF;
                        }
        } else
                for (size_t i = 0; i < s->n_late; i++)
                        held_forget(s, s->late[i]);
        s->n_late = 0;
        s->late_lost = false;
        return k;
}

int tasks_scan(const Root *root, const TaskScanOps *ops, TaskSnapshot **ret) {
        _cleanup_(task_scanner_freep) TaskScanner *s = NULL;
        int k = task_scanner_new(root, ops, &s);

        if (k < 0)
                return k;
        return task_scanner_scan(s, true, ret);
}
