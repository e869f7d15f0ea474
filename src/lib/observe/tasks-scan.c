/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One scan (task_scanner_run()): the walk of /proc, or of the processes
 * the events touched, into a new snapshot; each thread read afresh or,
 * when it has not run since the last scan, taken as it was. */
#include "observe/tasks-internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct Builder {
        TaskScanner *scanner;
        TaskSnapshot *snap;
        size_t tasks_cap, procs_cap;
        TaskHeld *held; /* the new held set, appended unsorted */
        size_t n_held, held_cap;
        bool full;
        pid_t *dirty; /* the marks this scan took */
        size_t n_dirty;
        const pid_t *defer; /* not read, left marked (sorted) */
        size_t n_defer;
} Builder;

static int push_task(Builder *b, const TaskFacts *t) {
        if (b->snap->n_tasks >= TASKS_MAX)
                return -E2BIG;
        if (b->snap->n_tasks == b->tasks_cap) {
                size_t n = b->tasks_cap ? b->tasks_cap * 2 : 1024;
                TaskFacts *nt = realloc(b->snap->tasks, n * sizeof(TaskFacts));

                if (!nt)
                        return -ENOMEM;
                b->snap->tasks = nt;
                b->tasks_cap = n;
        }
        b->snap->tasks[b->snap->n_tasks++] = *t;
        return 0;
}

/* Takes a reference. */
static int push_process(Builder *b, ProcessFacts *p) {
        if (b->snap->n_processes == b->procs_cap) {
                size_t n = b->procs_cap ? b->procs_cap * 2 : 256;
                ProcessFacts **np = realloc(b->snap->processes, n * sizeof(ProcessFacts *));

                if (!np)
                        return -ENOMEM;
                b->snap->processes = np;
                b->procs_cap = n;
        }
        p->refs++;
        b->snap->processes[b->snap->n_processes++] = p;
        return 0;
}

static int push_held(Builder *b, pid_t tid, int fd) {
        if (b->n_held == b->held_cap) {
                size_t n = b->held_cap ? b->held_cap * 2 : 1024;
                TaskHeld *nh = realloc(b->held, n * sizeof(TaskHeld));

                if (!nh)
                        return -ENOMEM;
                b->held = nh;
                b->held_cap = n;
        }
        b->held[b->n_held++] = (TaskHeld) { tid, fd };
        return 0;
}

/* Per-process facts from /proc/<tgid>. Missing pieces stay NULL: a process
 * may exit, or hide its exe from us, between any two reads. */
static int read_process(int pfd, pid_t tgid, const ProcStat *leader, ProcessFacts **ret) {
        _cleanup_(process_facts_unrefp) ProcessFacts *p = calloc(1, sizeof(ProcessFacts));
        char buf[TASKS_CMDLINE_MAX + 1];
        ssize_t n;
        int k;

        if (!p)
                return -ENOMEM;
        p->refs = 1;
        p->tgid = tgid;
        p->start_time = leader->start_time;

        if (leader->flags & PROCFS_PF_KTHREAD) {
                p->cmdline = strdup("");
                if (!p->cmdline)
                        return -ENOMEM;
                *ret = TAKE_PTR(p);
                return 0;
        }

        n = readlinkat(pfd, "exe", buf, TASKS_PATH_MAX);
        if (n > 0 && n < (ssize_t) TASKS_PATH_MAX) { /* a full buffer may be cut: unknown */
                p->exe = strndup(buf, (size_t) n);
                if (!p->exe)
                        return -ENOMEM;
        }
        n = tasks_read_small_at(pfd, "cmdline", buf, sizeof(buf));
        k = procfs_format_cmdline(buf, n > 0 ? (size_t) n : 0, TASKS_CMDLINE_MAX, &p->cmdline);
        if (k < 0)
                return k;
        n = tasks_read_small_at(pfd, "cgroup", buf, sizeof(buf));
        if (n > 0 && (size_t) n < sizeof(buf) - 1) { /* a full buffer may end in a cut line */
                k = procfs_parse_cgroup(buf, (size_t) n, &p->cgroup);
                if (k < 0 && k != -ENODATA && k != -EINVAL)
                        return k;
        }
        *ret = TAKE_PTR(p);
        return 0;
}

/* Read a held schedstat again. */
static int pread_schedstat(int fd, ProcSchedstat *ret) {
        char buf[128];
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

        if (n < 0)
                return negative_errno();
        buf[n] = '\0';
        return procfs_parse_schedstat(buf, (size_t) n, ret);
}

/* Everything of one thread but its schedstat. Returns 1 when read, 0 when
 * it vanished, negative errno otherwise. */
static int read_thread_files(Builder *b, int tfd, TaskFacts *t) {
        char buf[4096];
        ProcStat st;
        ssize_t n;
        int k;

        n = tasks_read_small_at(tfd, "stat", buf, sizeof(buf));
        if (n < 0)
                return tasks_vanished((int) n) ? 0 : (int) n;
        k = procfs_parse_stat(buf, (size_t) n, &st);
        if (k < 0)
                return n == 0 ? 0 : k; /* an exiting task can give an empty file */
        memcpy(t->comm, st.comm, sizeof(t->comm));
        t->ppid = st.ppid;
        t->start_time = st.start_time;
        t->state = st.state;
        t->kernel_thread = st.flags & PROCFS_PF_KTHREAD;
        t->nice = st.nice;
        t->policy = st.policy;
        t->rt_priority = st.rt_priority;
        t->utime = st.utime;
        t->stime = st.stime;
        if (t->kernel_thread)
                return 1;

        {
                ProcStatus ps;

                n = tasks_read_small_at(tfd, "status", buf, sizeof(buf));
                if (n >= 0 && procfs_parse_status(buf, (size_t) n, &ps) >= 0) {
                        t->has_uid = ps.has_uid;
                        t->uid = ps.uid;
                        t->gid = ps.gid;
                        t->has_ctxt = ps.has_ctxt;
                        t->voluntary_ctxt = ps.voluntary_ctxt;
                        t->nonvoluntary_ctxt = ps.nonvoluntary_ctxt;
                } else if (n < 0 && tasks_vanished((int) n))
                        return 0;
        }
        n = tasks_read_small_at(tfd, "arch_status", buf, sizeof(buf));
        if (n < 0 || procfs_parse_arch_status(buf, (size_t) n, &t->avx, &t->avx_elapsed_ms) < 0)
                t->avx = PROC_AVX_NO_LINE;
        t->cookie_error = -ENODATA;
        if (b->scanner->has_ops && b->scanner->ops.get_cookie)
                t->cookie_error = b->scanner->ops.get_cookie(t->tid, &t->cookie, b->scanner->ops.userdata);
        return 1;
}

/* A kernel thread seen before, outside a full scan: taken as it was,
 * without a read. No policy moves it and its class is always other, so
 * what it changes by running (times, switches) matters to no decision;
 * the full scan (every rescan_interval) reads it. Its exit is an event,
 * or its missing directory when /proc is listed. A big machine has a few
 * per CPU: most threads of an idle one. */
static bool quiet_kernel_thread(const Builder *b, const TaskFacts *prev, const ProcessFacts *proc) {
        /* The same process as before: its leader's held schedstat answered
         * (a process that took a dead kernel thread's number has new
         * facts). Only where the caller asked (the daemon). */
        return b->scanner->lazy_kernel_threads && prev && !b->full && prev->kernel_thread && prev->process == proc;
}

/* One thread. Returns 1 when added, 0 when it vanished, negative errno. */
static int scan_thread(Builder *b, int taskfd, const char *name, pid_t tid, ProcessFacts *proc) {
        TaskScanner *s = b->scanner;
        TaskHeld *h = task_scanner_find_held(s, tid);
        const TaskFacts *prev = s->prev ? task_snapshot_find(s->prev, tid) : NULL;
        TaskFacts t = { .tid = tid, .tgid = proc->tgid, .process = proc, .cookie_error = -ENODATA };
        ProcSchedstat ss;
        int fd = -EBADF, k;

        if (h && h->fd >= 0) {
                fd = h->fd;
                h->fd = -EBADF; /* moves to the new held set, or is closed below */
                if (quiet_kernel_thread(b, prev, proc)) {
                        t = *prev;
                        t.process = proc;
                        t.parent_comm = NULL;
                        s->stats.threads_reused++;
                        goto push;
                }
                if (pread_schedstat(fd, &ss) < 0) {
                        /* The thread is gone (ESRCH); the tid may be a new thread's. */
                        close(fd);
                        fd = -EBADF;
                        prev = NULL;
                }
        }
        if (fd < 0) {
                char path[64];

                prev = NULL;
                if ((size_t) snprintf(path, sizeof(path), "%s/schedstat", name) >= sizeof(path))
                        return -EINVAL;
                fd = openat(taskfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0) {
                        if (tasks_vanished(negative_errno()))
                                return 0;
                        if (errno == EMFILE || errno == ENFILE)
                                s->stats.fd_limit_hit = true;
                } else if (pread_schedstat(fd, &ss) < 0) {
                        close(fd);
                        return 0;
                }
                if (fd >= 0 && b->n_held >= s->held_budget) {
                        /* Over budget: read now, keep nothing open. */
                        t.has_schedstat = true;
                        t.sched = ss;
                        close(fd);
                        fd = -EBADF;
                        s->stats.fd_limit_hit = true;
                }
        }
        if (fd >= 0) {
                t.has_schedstat = true;
                t.sched = ss;
        }
        /* Without a held fd the previous facts are reused only if the
         * schedstat just read says it did not run. */

        if (prev && prev->tgid == proc->tgid && !b->full && prev->has_schedstat &&
            prev->sched.run_ns == ss.run_ns && prev->sched.timeslices == ss.timeslices) {
                /* Has not run since: nothing it can change itself has changed. */
                t = *prev;
                t.process = proc;
                t.parent_comm = NULL;
                s->stats.threads_reused++;
        } else {
                _cleanup_close_ int tfd = openat(taskfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);

                if (tfd < 0)
                        k = tasks_vanished(negative_errno()) ? 0 : negative_errno();
                else
                        k = read_thread_files(b, tfd, &t);
                if (k <= 0) {
                        if (fd >= 0)
                                close(fd);
                        return k;
                }
                s->stats.threads_reread++;
        }

push:
        k = push_task(b, &t);
        if (k >= 0 && fd >= 0) {
                k = push_held(b, tid, fd);
                if (k >= 0)
                        fd = -EBADF;
        }
        if (fd >= 0)
                close(fd);
        if (k < 0)
                return k;
        return 1;
}

/* The previous scan's facts of this process, when it is the same process. */
static ProcessFacts *find_prev_process(const TaskScanner *s, pid_t tgid) {
        const TaskFacts *leader;

        if (!s->prev)
                return NULL;
        leader = task_snapshot_find(s->prev, tgid);
        return leader ? (ProcessFacts *) leader->process : NULL;
}

static int scan_process(Builder *b, int procfd, pid_t tgid) {
        _cleanup_close_ int pfd = -EBADF, taskfd = -EBADF, files = -EBADF;
        _cleanup_(process_facts_unrefp) ProcessFacts *fresh = NULL;
        ProcessFacts *proc = NULL;
        char name[16], buf[4096];
        ProcStat leader;
        TasksDirReader r;
        ssize_t n;
        int k;

        snprintf(name, sizeof(name), "%d", (int) tgid);
        pfd = openat(procfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0) {
                if (tasks_vanished(negative_errno()))
                        b->snap->vanished++;
                else
                        b->snap->unreadable++; /* EMFILE and the like: not gone */
                return 0;
        }

        /* Same process as last time when its leader is the same task: the
         * leader's held schedstat still answers. exe, cmdline and cgroup
         * change by exec or by a move, which the caller learns of by events
         * or a full scan. */
        proc = b->full ? NULL : find_prev_process(b->scanner, tgid);
        if (proc) {
                TaskHeld *h = task_scanner_find_held(b->scanner, tgid);
                ProcSchedstat ss;

                if (!h || h->fd < 0 || pread_schedstat(h->fd, &ss) < 0)
                        proc = NULL;
        }
        if (!proc) {
                n = tasks_read_small_at(pfd, "stat", buf, sizeof(buf));
                if (n < 0 || procfs_parse_stat(buf, (size_t) n, &leader) < 0) {
                        b->snap->vanished++;
                        return 0;
                }
                /* Exited, not yet reaped: nothing to read, place or give
                 * a cookie (an exec storm's short-lived processes wait
                 * for their parent so, by the hundred).
                 * A leader that exited before its other threads shows Z
                 * too: counted with them, it is read. */
                if (procfs_stat_exited(&leader)) {
                        b->snap->vanished++;
                        return 0;
                }
                pid_t live;

                if (procfs_state_exited(leader.state))
                        files = tasks_live_thread_dir(pfd, tgid, &live);
                k = read_process(files >= 0 ? files : pfd, tgid, &leader, &fresh);
                if (k < 0)
                        return k;
                proc = fresh;
        }
        k = push_process(b, proc);
        if (k < 0)
                return k;

        taskfd = openat(pfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (taskfd < 0) {
                b->snap->vanished++;
                return 0;
        }
        r.fd = taskfd;
        r.pos = r.len = 0;
        for (const char *entry; tasks_dir_next(&r, &entry) > 0;) {
                pid_t tid;

                if (!tasks_parse_pid(entry, &tid))
                        continue;
                k = scan_thread(b, taskfd, entry, tid, proc);
                if (k == -ENOMEM || k == -E2BIG)
                        return k;
                if (k < 0)
                        b->snap->unreadable++;
                else if (k == 0)
                        b->snap->vanished++;
        }
        return 0;
}

static int compare_task_index(const void *a, const void *b, void *userdata) {
        const TaskFacts *t = userdata;
        const TaskFacts *x = &t[*(const size_t *) a], *y = &t[*(const size_t *) b];

        if (x->tgid != y->tgid)
                return (x->tgid > y->tgid) - (x->tgid < y->tgid);
        return (x->tid > y->tid) - (x->tid < y->tid);
}

/* One known thread of a quiet process: pread its held schedstat, reread
 * its files only if it ran. 1 added, 0 gone (the process needs a listing),
 * negative errno. */
static int fast_thread(Builder *b, int procfd, const TaskFacts *prev, ProcessFacts *proc) {
        TaskScanner *s = b->scanner;
        TaskHeld *h = task_scanner_find_held(s, prev->tid);
        TaskFacts t;
        ProcSchedstat ss;
        int fd, k;

        if (!h || h->fd < 0)
                return 0;
        if (!quiet_kernel_thread(b, prev, proc) && pread_schedstat(h->fd, &ss) < 0)
                return 0;
        fd = h->fd;
        h->fd = -EBADF;
        if (quiet_kernel_thread(b, prev, proc) ||
            (prev->has_schedstat && prev->sched.run_ns == ss.run_ns && prev->sched.timeslices == ss.timeslices)) {
                t = *prev;
                t.process = proc;
                t.parent_comm = NULL;
                s->stats.threads_reused++;
        } else {
                char path[64];
                _cleanup_close_ int tfd = -EBADF;

                t = (TaskFacts) { .tid = prev->tid, .tgid = proc->tgid, .process = proc, .cookie_error = -ENODATA,
                                  .has_schedstat = true, .sched = ss };
                snprintf(path, sizeof(path), "%d/task/%d", (int) prev->tgid, (int) prev->tid);
                tfd = openat(procfd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
                k = tfd < 0 ? 0 : read_thread_files(b, tfd, &t);
                if (k <= 0) {
                        close(fd);
                        return k;
                }
                s->stats.threads_reread++;
        }
        k = push_task(b, &t);
        if (k >= 0)
                k = push_held(b, t.tid, fd);
        if (k < 0) {
                close(fd);
                return k;
        }
        return 1;
}

/* A process this scan leaves for the next: marked again for it (the marks
 * made during a scan are the next one's). Only one new since the last
 * scan: one the snapshot had would drop out of it. */
static bool deferred(Builder *b, pid_t tgid) {
        const TaskSnapshot *prev = b->scanner->prev;

        if (b->n_defer == 0 || !bsearch(&tgid, b->defer, b->n_defer, sizeof(pid_t), compare_pid) ||
            (prev && task_snapshot_find(prev, tgid)))
                return false;
        if (task_scanner_mark(b->scanner, tgid) < 0)
                return false; /* the next scan cannot know: read it now */
        b->scanner->stats.deferred++;
        return true;
}

/* The touched processes, sorted, once each. */
static void dirty_sort_unique(Builder *b) {
        size_t n_dirty = 0;

        if (b->n_dirty > 0)
                qsort(b->dirty, b->n_dirty, sizeof(pid_t), compare_pid);
        for (size_t i = 0; i < b->n_dirty; i++)
                if (n_dirty == 0 || b->dirty[n_dirty - 1] != b->dirty[i])
                        b->dirty[n_dirty++] = b->dirty[i];
        b->n_dirty = n_dirty;
}

/* A quiet process of the last snapshot (its threads order[i..j)), from
 * its held schedstats; listed as usual when one of them has gone. */
static int scan_quiet(Builder *b, int procfd, const size_t *order, size_t i, size_t j) {
        TaskScanner *s = b->scanner;
        const TaskSnapshot *prev = s->prev;
        const TaskFacts *first = &prev->tasks[order[i]];
        ProcessFacts *proc = (ProcessFacts *) first->process;
        size_t mark_tasks = b->snap->n_tasks, mark_held = b->n_held;
        bool gone = false;
        int k;

        yield_now(s->yield);
        if ((k = push_process(b, proc)) < 0)
                return k;
        for (size_t m = i; m < j && !gone; m++) {
                k = fast_thread(b, procfd, &prev->tasks[order[m]], proc);
                if (k < 0)
                        return k;
                gone = k == 0;
        }
        if (gone) {
                /* Something changed without an event we saw: undo
                 * and list this process. The held fds taken go back
                 * to the old set's slots as closed; reopen by path. */
                for (size_t m = mark_held; m < b->n_held; m++)
                        close(b->held[m].fd);
                b->n_held = mark_held;
                b->snap->n_tasks = mark_tasks;
                b->snap->n_processes--;
                process_facts_unref(proc);
                if ((k = scan_process(b, procfd, first->tgid)) < 0)
                        return k;
        }
        return 0;
}

/* The processes the events touched, listed as usual. */
static int scan_touched(Builder *b, int procfd) {
        TaskScanner *s = b->scanner;
        _cleanup_free_ pid_t *live = NULL;
        size_t n_dirty = 0, n_live = 0;
        bool listed = false;
        int k;

        /* The touched that died whole (an exec storm's, mostly): nothing
         * to read, nothing to leave to the next scan. */
        for (size_t i = 0; i < b->n_dirty; i++)
                if (!task_scanner_known_dead(s, b->dirty[i]))
                        b->dirty[n_dirty++] = b->dirty[i];
        b->n_dirty = n_dirty;
        /* Many touched (an exec storm's, most of them gone by now, those a
         * storm's scan left to this one among them): one listing of /proc
         * tells which are, where a look at each costs a system call or
         * more, and, with the placer waiting, a turn handed to it (for a
         * few hundred gone processes, most of a storm's pass). One
         * not listed has no process now: nothing to read, nothing to leave
         * to the next scan (a process that takes its number later is
         * marked by its own events). Without the listing, one by one. */
        if (b->n_dirty >= TASKS_LIST_MIN) {
                k = tasks_list_processes(s->root, procfd, &live, &n_live);
                if (k == -ENOMEM)
                        return k;
                listed = k >= 0;
        }
        for (size_t i = 0; i < b->n_dirty; i++) {
                if (listed && !bsearch(&b->dirty[i], live, n_live, sizeof(pid_t), compare_pid)) {
                        s->stats.gone++;
                        continue;
                }
                if (deferred(b, b->dirty[i]))
                        continue;
                yield_now(s->yield);
                if ((k = scan_process(b, procfd, b->dirty[i])) < 0)
                        return k;
        }
        return 0;
}

/* The scan without listing: quiet processes from the last snapshot, then
 * the ones events touched, listed as usual. */
static int scan_by_events(Builder *b, int procfd) {
        TaskScanner *s = b->scanner;
        const TaskSnapshot *prev = s->prev;
        _cleanup_free_ size_t *order = NULL;
        int k;

        dirty_sort_unique(b);
        order = malloc(MAX(prev->n_tasks, (size_t) 1) * sizeof(size_t));
        if (!order)
                return -ENOMEM;
        for (size_t i = 0; i < prev->n_tasks; i++)
                order[i] = i;
        if (prev->n_tasks > 0)
                qsort_r(order, prev->n_tasks, sizeof(size_t), compare_task_index, prev->tasks);

        for (size_t i = 0; i < prev->n_tasks;) {
                const TaskFacts *first = &prev->tasks[order[i]];
                size_t j = i;

                while (j < prev->n_tasks && prev->tasks[order[j]].tgid == first->tgid)
                        j++;
                if (b->n_dirty > 0 && bsearch(&first->tgid, b->dirty, b->n_dirty, sizeof(pid_t), compare_pid)) {
                        i = j;
                        continue; /* listed below */
                }
                if (task_scanner_known_dead(s, first->tgid)) {
                        i = j;
                        continue;
                }
                if ((k = scan_quiet(b, procfd, order, i, j)) < 0)
                        return k;
                i = j;
        }
        return scan_touched(b, procfd);
}

/* Every process /proc lists (d, closed here) but those known dead or left
 * for the next scan. */
static int scan_listed(Builder *b, int procfd, DIR *d) {
        TaskScanner *s = b->scanner;
        int k = 0;

        for (struct dirent *de; (de = readdir(d));) {
                pid_t tgid;

                if (!tasks_parse_pid(de->d_name, &tgid) || task_scanner_known_dead(s, tgid) || deferred(b, tgid))
                        continue;
                yield_now(s->yield);
                k = scan_process(b, procfd, tgid);
                if (k < 0)
                        break;
        }
        closedir(d);
        return k;
}

/* Threads not seen again have exited: close what is left of the old held
 * set, keep the new one; after a walk that failed (k < 0), nothing
 * half-built. Returns k. */
static int take_held(TaskScanner *s, Builder *b, int k) {
        task_held_close(s->held, s->n_held);
        free(s->held);
        s->held = b->held;
        s->n_held = b->n_held;
        if (k < 0) {
                /* Keep nothing half-built. */
                task_held_close(s->held, s->n_held);
                free(s->held);
                s->held = NULL;
                s->n_held = 0;
                s->prev = task_snapshot_free(s->prev);
        }
        return k;
}

/* The held set and the snapshot's tasks sorted by tid, each tid once. */
static void sort_by_tid(TaskScanner *s, TaskSnapshot *snap) {
        size_t w = 0;

        if (s->n_held > 0)
                qsort(s->held, s->n_held, sizeof(TaskHeld), task_held_compare);
        if (snap->n_tasks > 0)
                qsort(snap->tasks, snap->n_tasks, sizeof(TaskFacts), task_facts_compare);
        /* A task directory listed while threads come and go can name
         * a tid twice (the kernel resumes by position): keep one. */
        for (size_t i = 0; i < snap->n_tasks; i++)
                if (w == 0 || snap->tasks[w - 1].tid != snap->tasks[i].tid)
                        snap->tasks[w++] = snap->tasks[i];
        snap->n_tasks = w;
        for (size_t i = 1; s->n_held > 0 && i < s->n_held;)
                if (s->held[i].tid == s->held[i - 1].tid) {
                        close(s->held[i].fd);
                        memmove(&s->held[i], &s->held[i + 1], (s->n_held - i - 1) * sizeof(TaskHeld));
                        s->n_held--;
                } else
                        i++;
}

/* The arrays grew by doubling: give back the slack. */
static void give_back_slack(TaskScanner *s, const Builder *b) {
        TaskSnapshot *snap = b->snap;

        if (snap->n_tasks > 0 && b->tasks_cap > snap->n_tasks) {
                TaskFacts *t = realloc(snap->tasks, snap->n_tasks * sizeof(TaskFacts));
                if (t)
                        snap->tasks = t;
        }
        if (s->n_held > 0 && b->held_cap > s->n_held) {
                TaskHeld *h = realloc(s->held, s->n_held * sizeof(TaskHeld));
                if (h)
                        s->held = h;
        }
}

/* The parent's comm, for [match] parent = … */
static void link_parents(TaskSnapshot *snap) {
        for (size_t i = 0; i < snap->n_tasks; i++) {
                const TaskFacts *p = snap->tasks[i].ppid > 0 ? task_snapshot_find(snap, snap->tasks[i].ppid) : NULL;

                snap->tasks[i].parent_comm = p ? p->comm : NULL;
        }
}

int task_scanner_run(TaskScanner *s, bool full, pid_t *dirty, size_t n_dirty, const pid_t *defer, size_t n_defer,
                     TaskSnapshot **ret) {
        _cleanup_(task_snapshot_freep) TaskSnapshot *snap = calloc(1, sizeof(TaskSnapshot));
        _cleanup_close_ int procfd = -EBADF;
        Builder b = { .scanner = s, .full = full, .dirty = dirty, .n_dirty = n_dirty, .defer = defer, .n_defer = n_defer };
        struct timespec ts;
        DIR *d;
        int k = 0;

        if (!snap)
                return -ENOMEM;
        snap->n_ref = 1;
        b.snap = snap;
        s->stats = (TaskScanStats) {};
        clock_gettime(CLOCK_MONOTONIC, &ts);
        snap->timestamp_usec = (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;

        procfd = root_openat(s->root, "proc", O_RDONLY | O_DIRECTORY);
        if (procfd < 0)
                return procfd;
        if (!full && s->trust_events && s->prev) {
                k = scan_by_events(&b, procfd);
                s->stats.by_events = true;
        } else {
                if ((k = tasks_open_listing(procfd, &d)) < 0)
                        return k;
                k = scan_listed(&b, procfd, d);
        }
        k = take_held(s, &b, k);
        if (k < 0)
                return k;
        sort_by_tid(s, snap);
        give_back_slack(s, &b);
        link_parents(snap);

        /* The scanner keeps a reference to compare the next scan against. */
        task_snapshot_free(s->prev);
        s->prev = task_snapshot_ref(snap);
        *ret = TAKE_PTR(snap);
        return 0;
}
