/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tasks.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#ifndef PR_SCHED_CORE
#define PR_SCHED_CORE 62
#endif
#ifndef PR_SCHED_CORE_GET
#define PR_SCHED_CORE_GET 0
#endif

/* A file of a task that vanished gives ENOENT (directory gone) or ESRCH
 * (the task is exiting while we read). */
static bool is_vanished(int err) {
        return err == -ENOENT || err == -ESRCH;
}

int tasks_get_cookie_host(pid_t tid, uint64_t *ret_cookie, void *userdata) {
        unsigned long cookie = 0;

        (void) userdata;
        if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_GET, (unsigned long) tid, 0 /* PIDTYPE_PID */,
                  (unsigned long) &cookie) < 0)
                return negative_errno();
        *ret_cookie = cookie;
        return 0;
}

/* Read a small file below dirfd into buf (NUL-terminated); the length, or
 * negative errno. Longer files are cut at size - 1 bytes. */
static ssize_t read_small_at(int dirfd, const char *name, char *buf, size_t size) {
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        size_t len = 0;

        if (fd < 0)
                return negative_errno();
        while (len < size - 1) {
                ssize_t n = read(fd, buf + len, size - 1 - len);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        buf[len] = '\0';
        return (ssize_t) len;
}

static bool parse_pid(const char *s, pid_t *ret) {
        long v = 0;

        if (!*s)
                return false;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return false;
                v = v * 10 + (*s - '0');
                if (v > INT32_MAX)
                        return false;
        }
        if (v <= 0)
                return false;
        *ret = (pid_t) v;
        return true;
}

static ProcessFacts *process_facts_free(ProcessFacts *p) {
        if (!p)
                return NULL;
        free(p->exe);
        free(p->cmdline);
        free(p->cgroup);
        free(p);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(ProcessFacts *, process_facts_free);

TaskSnapshot *task_snapshot_free(TaskSnapshot *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_processes; i++)
                process_facts_free(s->processes[i]);
        free(s->processes);
        free(s->tasks);
        free(s);
        return NULL;
}

typedef struct Builder {
        TaskSnapshot *snap;
        size_t tasks_cap, procs_cap;
        const TaskScanOps *ops;
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

static int push_process(Builder *b, ProcessFacts *p) {
        if (b->snap->n_processes == b->procs_cap) {
                size_t n = b->procs_cap ? b->procs_cap * 2 : 256;
                ProcessFacts **np = realloc(b->snap->processes, n * sizeof(ProcessFacts *));

                if (!np)
                        return -ENOMEM;
                b->snap->processes = np;
                b->procs_cap = n;
        }
        b->snap->processes[b->snap->n_processes++] = p;
        return 0;
}

/* Per-process facts from /proc/<tgid>. Missing pieces stay NULL: a process
 * may exit, or hide its exe from us, between any two reads. */
static int read_process(int pfd, pid_t tgid, const ProcStat *leader, ProcessFacts **ret) {
        _cleanup_(process_facts_freep) ProcessFacts *p = calloc(1, sizeof(ProcessFacts));
        char buf[TASKS_CMDLINE_MAX + 1];
        ssize_t n;
        int k;

        if (!p)
                return -ENOMEM;
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
        if (n > 0) {
                p->exe = strndup(buf, (size_t) n);
                if (!p->exe)
                        return -ENOMEM;
        }
        n = read_small_at(pfd, "cmdline", buf, sizeof(buf));
        k = procfs_format_cmdline(buf, n > 0 ? (size_t) n : 0, TASKS_CMDLINE_MAX, &p->cmdline);
        if (k < 0)
                return k;
        n = read_small_at(pfd, "cgroup", buf, sizeof(buf));
        if (n > 0) {
                k = procfs_parse_cgroup(buf, (size_t) n, &p->cgroup);
                if (k < 0 && k != -ENODATA && k != -EINVAL)
                        return k;
        }
        *ret = TAKE_PTR(p);
        return 0;
}

/* One thread from its /proc/<tgid>/task/<tid> directory. Returns 1 when
 * read, 0 when it vanished, negative errno otherwise. */
static int read_thread(Builder *b, int tfd, pid_t tid, const ProcessFacts *proc, TaskFacts *ret) {
        TaskFacts t = { .tid = tid, .tgid = proc->tgid, .process = proc, .cookie_error = -ENODATA };
        char buf[4096];
        ProcStat st;
        ssize_t n;
        int k;

        n = read_small_at(tfd, "stat", buf, sizeof(buf));
        if (n < 0)
                return is_vanished((int) n) ? 0 : (int) n;
        k = procfs_parse_stat(buf, (size_t) n, &st);
        if (k < 0)
                return n == 0 ? 0 : k; /* an exiting task can give an empty file */
        memcpy(t.comm, st.comm, sizeof(t.comm));
        t.ppid = st.ppid;
        t.start_time = st.start_time;
        t.state = st.state;
        t.kernel_thread = st.flags & PROCFS_PF_KTHREAD;
        t.nice = st.nice;
        t.policy = st.policy;
        t.rt_priority = st.rt_priority;
        t.utime = st.utime;
        t.stime = st.stime;

        if (!t.kernel_thread) {
                ProcStatus ps;
                ProcSchedstat ss;

                n = read_small_at(tfd, "status", buf, sizeof(buf));
                if (n >= 0 && procfs_parse_status(buf, (size_t) n, &ps) >= 0) {
                        t.has_uid = ps.has_uid;
                        t.uid = ps.uid;
                        t.gid = ps.gid;
                        t.has_ctxt = ps.has_ctxt;
                        t.voluntary_ctxt = ps.voluntary_ctxt;
                        t.nonvoluntary_ctxt = ps.nonvoluntary_ctxt;
                } else if (n < 0 && is_vanished((int) n))
                        return 0;

                n = read_small_at(tfd, "schedstat", buf, sizeof(buf));
                if (n >= 0 && procfs_parse_schedstat(buf, (size_t) n, &ss) >= 0) {
                        t.has_schedstat = true;
                        t.sched = ss;
                }

                n = read_small_at(tfd, "arch_status", buf, sizeof(buf));
                if (n < 0 || procfs_parse_arch_status(buf, (size_t) n, &t.avx, &t.avx_elapsed_ms) < 0)
                        t.avx = PROC_AVX_NO_LINE;

                if (b->ops && b->ops->get_cookie)
                        t.cookie_error = b->ops->get_cookie(tid, &t.cookie, b->ops->userdata);
        }
        *ret = t;
        return 1;
}

static int scan_process(Builder *b, int procfd, pid_t tgid) {
        _cleanup_close_ int pfd = -EBADF, taskfd = -EBADF, leaderfd = -EBADF;
        _cleanup_(process_facts_freep) ProcessFacts *proc = NULL;
        char name[16], buf[4096];
        ProcStat leader;
        ProcessFacts *owned;
        DIR *d;
        ssize_t n;
        int k;

        snprintf(name, sizeof(name), "%d", (int) tgid);
        pfd = openat(procfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0)
                return is_vanished(negative_errno()) ? 0 : negative_errno();
        n = read_small_at(pfd, "stat", buf, sizeof(buf));
        if (n < 0) {
                if (is_vanished((int) n))
                        b->snap->vanished++;
                else
                        b->snap->unreadable++;
                return 0;
        }
        if (procfs_parse_stat(buf, (size_t) n, &leader) < 0) {
                b->snap->vanished++; /* empty stat: exiting */
                return 0;
        }
        k = read_process(pfd, tgid, &leader, &proc);
        if (k < 0)
                return k;
        k = push_process(b, proc);
        if (k < 0)
                return k;
        owned = TAKE_PTR(proc);

        taskfd = openat(pfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (taskfd < 0) {
                b->snap->vanished++;
                return 0;
        }
        d = fdopendir(taskfd);
        if (!d)
                return negative_errno();
        taskfd = -EBADF; /* owned by d now */
        for (struct dirent *de; (de = readdir(d));) {
                _cleanup_close_ int tfd = -EBADF;
                TaskFacts t;
                pid_t tid;

                if (!parse_pid(de->d_name, &tid))
                        continue;
                tfd = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (tfd < 0) {
                        b->snap->vanished++;
                        continue;
                }
                k = read_thread(b, tfd, tid, owned, &t);
                if (k < 0 && k != -ENOMEM && k != -E2BIG) {
                        b->snap->unreadable++;
                        continue;
                }
                if (k < 0) {
                        closedir(d);
                        return k;
                }
                if (k == 0) {
                        b->snap->vanished++;
                        continue;
                }
                k = push_task(b, &t);
                if (k < 0) {
                        closedir(d);
                        return k;
                }
                owned->refs++;
        }
        closedir(d);
        return 0;
}

static int compare_tid(const void *a, const void *b) {
        const TaskFacts *x = a, *y = b;

        return (x->tid > y->tid) - (x->tid < y->tid);
}

const TaskFacts *task_snapshot_find(const TaskSnapshot *s, pid_t tid) {
        TaskFacts key = { .tid = tid };

        if (s->n_tasks == 0)
                return NULL;
        return bsearch(&key, s->tasks, s->n_tasks, sizeof(TaskFacts), compare_tid);
}

int tasks_scan(const Root *root, const TaskScanOps *ops, TaskSnapshot **ret) {
        _cleanup_(task_snapshot_freep) TaskSnapshot *snap = calloc(1, sizeof(TaskSnapshot));
        _cleanup_close_ int procfd = -EBADF;
        Builder b = { .ops = ops };
        struct timespec ts;
        DIR *d;
        int k = 0;

        if (!snap)
                return -ENOMEM;
        b.snap = snap;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        snap->timestamp_usec = (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;

        procfd = root_openat(root, "proc", O_RDONLY | O_DIRECTORY);
        if (procfd < 0)
                return procfd;
        {
                int dupfd = fcntl(procfd, F_DUPFD_CLOEXEC, 3);

                if (dupfd < 0)
                        return negative_errno();
                d = fdopendir(dupfd);
                if (!d) {
                        close(dupfd);
                        return negative_errno();
                }
        }
        for (struct dirent *de; (de = readdir(d));) {
                pid_t tgid;

                if (!parse_pid(de->d_name, &tgid))
                        continue;
                k = scan_process(&b, procfd, tgid);
                if (k < 0)
                        break;
        }
        closedir(d);
        if (k < 0)
                return k;

        qsort(snap->tasks, snap->n_tasks, sizeof(TaskFacts), compare_tid);
        /* The parent's comm, for [match] parent = … */
        for (size_t i = 0; i < snap->n_tasks; i++) {
                const TaskFacts *p = snap->tasks[i].ppid > 0 ? task_snapshot_find(snap, snap->tasks[i].ppid) : NULL;

                snap->tasks[i].parent_comm = p ? p->comm : NULL;
        }
        *ret = TAKE_PTR(snap);
        return 0;
}
