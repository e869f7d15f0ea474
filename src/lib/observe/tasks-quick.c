/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One process by pid (TaskQuick, see tasks.h): the fast path's read of
 * what [match] may look at of one new process, file by file as a policy
 * asks, into fixed buffers; and one thread's own stat. */
#include "observe/tasks-internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void task_quick_reset(TaskQuick *q, pid_t pid) {
        q->pid = pid;
        q->have = 0;
        q->comm[0] = '\0';
        q->start_time = 0;
        q->ppid = 0;
        q->kernel_thread = false;
        q->n_threads = 0;
        q->has_uid = false;
        q->uid = 0;
        q->exe = q->cmdline = q->cgroup = q->parent_comm = NULL;
}

/* A small file of a process into buf (NUL-terminated). The length, -ESRCH
 * when the process is gone, or a negative errno. */
static ssize_t quick_read(const Root *root, pid_t pid, const char *file, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        char rel[64];
        ssize_t n;

        snprintf(rel, sizeof(rel), "proc/%d/%s", (int) pid, file);
        fd = root_openat(root, rel, O_RDONLY | O_NOCTTY);
        if (fd < 0)
                return tasks_vanished(fd) ? -ESRCH : fd;
        n = read_record(fd, buf, size);
        return n < 0 && tasks_vanished((int) n) ? -ESRCH : n;
}

static int quick_comm(const Root *root, pid_t pid, char *buf, size_t size, FdBin *bin) {
        _cleanup_close_ int fd = -EBADF;
        char rel[64];
        ssize_t n;

        /* One read: comm is one short line, whole in the first read (no
         * second read to see the end of the file: the cheapest check of an
         * exec that matches nothing). */
        /* "proc/PID/comm", without snprintf()'s format parsing (every exec
         * comes here). */
        memcpy(rel, "proc/", 5);
        n = (ssize_t) format_u64(rel + 5, (uint64_t) pid);
        memcpy(rel + 5 + n, "/comm", sizeof("/comm"));
        fd = root_openat(root, rel, O_RDONLY | O_NOCTTY);
        if (fd < 0)
                return tasks_vanished(fd) ? -ESRCH : fd;
        do
                n = read(fd, buf, size - 1);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return tasks_vanished(negative_errno()) ? -ESRCH : negative_errno();
        if (n == 0)
                return -ESRCH; /* exiting */
        fd_bin_put(bin, TAKE_FD(fd));
        buf[n] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        return 0;
}

/* stat: the start time, ppid, kernel thread, threads, and comm unless read. */
static int quick_stat(const Root *root, TaskQuick *q, char *buf, size_t size) {
        ProcStat st;
        ssize_t n;

        n = quick_read(root, q->pid, "stat", buf, size);
        if (n < 0)
                return (int) n;
        if (n == 0 || procfs_parse_stat(buf, (size_t) n, &st) < 0)
                return -ESRCH; /* an exiting task can give an empty file */
        if (procfs_state_exited(st.state))
                return -ESRCH; /* it has exited: nothing to decide for */
        if (!(q->have & TASK_QUICK_COMM)) {
                memcpy(q->comm, st.comm, sizeof(q->comm));
                q->have |= TASK_QUICK_COMM;
        }
        q->start_time = st.start_time;
        q->ppid = st.ppid;
        q->kernel_thread = st.flags & PROCFS_PF_KTHREAD;
        q->n_threads = st.num_threads;
        q->have |= TASK_QUICK_STAT;
        return 0;
}

/* status: the real uid. */
static int quick_uid(const Root *root, TaskQuick *q, char *buf, size_t size) {
        ProcStatus ps;
        ssize_t n;

        n = quick_read(root, q->pid, "status", buf, size);
        if (n == -ESRCH)
                return -ESRCH;
        if (n >= 0 && procfs_parse_status(buf, (size_t) n, &ps) >= 0 && ps.has_uid) {
                q->has_uid = true;
                q->uid = ps.uid;
        }
        q->have |= TASK_QUICK_UID;
        return 0;
}

static void quick_exe(const Root *root, TaskQuick *q) {
        char rel[64];
        ssize_t n;

        /* Unreadable (a kernel thread, an exiting process, another
         * user's without ptrace rights): unknown, as in the scan. */
        snprintf(rel, sizeof(rel), "proc/%d/exe", (int) q->pid);
        n = readlinkat(root_fd(root), rel, q->exe_buf, TASKS_PATH_MAX);
        if (n > 0 && n < (ssize_t) TASKS_PATH_MAX) {
                q->exe_buf[n] = '\0';
                q->exe = q->exe_buf;
        }
        q->have |= TASK_QUICK_EXE;
}

static int quick_cmdline(const Root *root, TaskQuick *q, char *buf, size_t size) {
        _cleanup_free_ char *s = NULL;
        ssize_t n;
        int k;

        n = quick_read(root, q->pid, "cmdline", buf, size);
        if (n == -ESRCH)
                return -ESRCH;
        if ((k = procfs_format_cmdline(buf, n > 0 ? (size_t) n : 0, TASKS_CMDLINE_MAX, &s)) < 0)
                return k;
        snprintf(q->cmdline_buf, sizeof(q->cmdline_buf), "%s", s);
        q->cmdline = q->cmdline_buf;
        q->have |= TASK_QUICK_CMDLINE;
        return 0;
}

static int quick_cgroup(const Root *root, TaskQuick *q, char *buf, size_t size) {
        _cleanup_free_ char *s = NULL;
        ssize_t n;
        int k;

        n = quick_read(root, q->pid, "cgroup", buf, size);
        if (n == -ESRCH)
                return -ESRCH;
        /* A full buffer may end in a cut line: unknown. */
        if (n > 0 && (size_t) n < size - 1) {
                k = procfs_parse_cgroup(buf, (size_t) n, &s);
                if (k == -ENOMEM)
                        return k;
                if (k >= 0 && strlen(s) < sizeof(q->cgroup_buf)) {
                        strcpy(q->cgroup_buf, s);
                        q->cgroup = q->cgroup_buf;
                }
        }
        q->have |= TASK_QUICK_CGROUP;
        return 0;
}

int tasks_read_quick(const Root *root, unsigned fields, TaskQuick *q) {
        char buf[TASKS_CMDLINE_MAX + 1];
        int k;

        if (q->pid <= 0)
                return -EINVAL;
        if ((fields & TASK_QUICK_PARENT) && !(q->have & TASK_QUICK_PARENT))
                fields |= TASK_QUICK_STAT; /* for the ppid */
        fields &= ~q->have;
        /* stat holds comm too: one file for both. */
        if (fields & TASK_QUICK_STAT)
                fields &= ~TASK_QUICK_COMM;

        if (fields & TASK_QUICK_COMM) {
                if ((k = quick_comm(root, q->pid, q->comm, sizeof(q->comm), q->bin)) < 0)
                        return k;
                q->have |= TASK_QUICK_COMM;
        }
        if ((fields & TASK_QUICK_STAT) && (k = quick_stat(root, q, buf, sizeof(buf))) < 0)
                return k;
        if ((fields & TASK_QUICK_UID) && (k = quick_uid(root, q, buf, sizeof(buf))) < 0)
                return k;
        if (fields & TASK_QUICK_EXE)
                quick_exe(root, q);
        if ((fields & TASK_QUICK_CMDLINE) && (k = quick_cmdline(root, q, buf, sizeof(buf))) < 0)
                return k;
        if ((fields & TASK_QUICK_CGROUP) && (k = quick_cgroup(root, q, buf, sizeof(buf))) < 0)
                return k;
        if (fields & TASK_QUICK_PARENT) {
                /* The parent process's leader's comm, as the scan has it. */
                if (q->ppid > 0 && quick_comm(root, q->ppid, q->parent_buf, sizeof(q->parent_buf), q->bin) >= 0)
                        q->parent_comm = q->parent_buf;
                q->have |= TASK_QUICK_PARENT;
        }
        return 0;
}

int tasks_read_thread_stat(const Root *root, pid_t tid, ProcStat *ret) {
        /* A stat line is a few hundred bytes: 52 numbers and a comm of at
         * most 64; a longer file is not a stat file. */
        char file[48], buf[2048];
        ProcStat st;
        ssize_t n;
        int k;

        snprintf(file, sizeof(file), "task/%d/stat", (int) tid);
        n = quick_read(root, tid, file, buf, sizeof(buf));
        if (n < 0)
                return (int) n;
        if (n == 0) /* a task that exited while we read */
                return -ESRCH;
        if ((size_t) n >= sizeof(buf) - 1)
                return -EFBIG;
        k = procfs_parse_stat(buf, (size_t) n, &st);
        if (k < 0)
                return k;
        if (st.pid != tid)
                return -EINVAL; /* a tree that is not what it claims */
        *ret = st;
        return 0;
}
