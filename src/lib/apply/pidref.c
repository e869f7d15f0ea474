/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "apply/pidref.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "observe/procfs.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* linux/pidfd.h, 6.9 */
#endif

/* A stat line is a few hundred bytes: 52 numbers and a comm of at most 64. */
#define PIDREF_STAT_MAX 2048u

static int host_pidfd_open(pid_t tid, void *userdata) {
        long fd;

        (void) userdata;
        /* pidfds are always O_CLOEXEC. */
        fd = syscall(SYS_pidfd_open, tid, PIDFD_THREAD);
        if (fd < 0)
                return negative_errno();
        return (int) fd;
}

static int host_pidfd_alive(int pidfd, pid_t tid, void *userdata) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };
        int n;

        (void) tid;
        (void) userdata;
        /* A thread pidfd turns readable when the thread exits. */
        do
                n = poll(&p, 1, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return negative_errno();
        if (p.revents & POLLNVAL)
                return -EBADF;
        return (p.revents & (POLLIN | POLLHUP)) ? 0 : 1;
}

static int host_pidfd_cgroup_id(int pidfd, void *userdata, uint64_t *ret) {
        PidfdInfo info = { .mask = PIDREF_PIDFD_INFO_CGROUPID };

        (void) userdata;
        if (ioctl(pidfd, PIDREF_PIDFD_GET_INFO, &info) < 0) {
                /* ENOTTY: an anon-inode pidfd (before 6.9) or pidfs
                 * without ioctls (6.9, 6.10); EINVAL: pidfs's ioctls
                 * without this one (6.11, 6.12). */
                if (errno == ENOTTY || errno == EINVAL)
                        return -EOPNOTSUPP;
                return negative_errno();
        }
        /* Without CONFIG_CGROUPS the bit stays clear. */
        if (!(info.mask & PIDREF_PIDFD_INFO_CGROUPID) || info.cgroupid == 0)
                return -EOPNOTSUPP;
        *ret = info.cgroupid;
        return 0;
}

static int host_pidfd_ino(int pidfd, void *userdata, uint64_t *ret) {
        struct stat sb;

        (void) userdata;
        if (fstat(pidfd, &sb) < 0)
                return negative_errno();
        *ret = (uint64_t) sb.st_ino;
        return 0;
}

const PidRefOps pidref_ops_host = {
        .pidfd_open = host_pidfd_open,
        .pidfd_alive = host_pidfd_alive,
        .pidfd_cgroup_id = host_pidfd_cgroup_id,
        .pidfd_ino = host_pidfd_ino,
};


static int read_stat(const Root *root, int dirfd, pid_t tid, bool process, ProcStat *ret) {
        _cleanup_close_ int fd = -EBADF;
        char text[PIDREF_STAT_MAX];
        size_t len = 0;
        ssize_t n;
        ProcStat st;
        int k;

        if (dirfd >= 0)
                fd = openat(dirfd, "stat", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        else {
                char rel[64];

                /* The thread's own stat: /proc/<tid>/stat would sum the times
                 * of every thread of its process, O(threads) per read. A
                 * process's is where the fast path has just read it: no
                 * /proc entries to make for a task/<tid> never looked up
                 * (most of the cost of the read of a new process). */
                if (process)
                        snprintf(rel, sizeof(rel), "proc/%d/stat", (int) tid);
                else
                        snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", (int) tid, (int) tid);
                fd = root_openat(root, rel, O_RDONLY | O_NOCTTY);
                if (fd < 0)
                        errno = -fd;
        }
        if (fd < 0)
                /* ENOENT: no such tid any more; ESRCH: the directory's task is gone. */
                return errno == ENOENT || errno == ESRCH ? -ESRCH : negative_errno();

        /* One read gives the whole line; a longer one is not a stat file. */
        n = read_record(fd, text, sizeof(text));
        if (n < 0)
                return n == -ESRCH || n == -ENOENT ? -ESRCH : (int) n;
        len = (size_t) n;
        if (len == 0) /* a task that exited while we read */
                return -ESRCH;
        if (len >= sizeof(text) - 1)
                return -EFBIG;
        text[len] = '\0';
        k = procfs_parse_stat(text, len, &st);
        if (k < 0)
                return k;
        if (st.pid != tid)
                return -EINVAL; /* a tree that is not what it claims */
        *ret = st;
        return 0;
}

static int read_start_time(const Root *root, int dirfd, pid_t tid, bool process, uint64_t *ret) {
        ProcStat st;
        int k = read_stat(root, dirfd, tid, process, &st);

        if (k < 0)
                return k;
        *ret = st.start_time;
        return 0;
}

int pidref_read_start_time(const Root *root, int dirfd, pid_t tid, uint64_t *ret) {
        return read_start_time(root, dirfd, tid, false, ret);
}

int pidref_read_stat(const Root *root, int dirfd, pid_t tid, ProcStat *ret) {
        return read_stat(root, dirfd, tid, false, ret);
}

int pidref_read_stat_pinned(const Root *root, const PidRefOps *ops, pid_t tgid, uint64_t start_time, ProcStat *ret) {
        _cleanup_(pidref_done) PidRef ref = PIDREF_NULL;
        int k;

        k = pidref_acquire_process(root, ops, tgid, start_time, &ref);
        if (k < 0)
                return k;
        k = pidref_read_stat(root, -1, tgid, ret);
        if (k == -ESRCH) {
                /* Reaped since the pin: nothing read. */
                *ret = (ProcStat) {};
                return 0;
        }
        if (k < 0)
                return k;
        return pidref_alive(&ref, root, ops);
}

PidRef pidref_borrow(const PidRef *from) {
        PidRef r = *from;

        r.borrowed = true;
        return r;
}

void pidref_done_into(PidRef *p, FdBin *bin) {
        if (!p)
                return;
        if (!p->borrowed) {
                fd_bin_put(bin, TAKE_FD(p->pidfd));
                fd_bin_put(bin, TAKE_FD(p->procfd));
        }
        *p = PIDREF_NULL;
}

void pidref_done(PidRef *p) {
        pidref_done_into(p, NULL);
}

/* Pin tid (a pidfd, or its /proc directory where the kernel has no pidfds
 * for threads), then read the start time through the pin. want: the start
 * time the caller means, or NULL for whatever runs at tid now. */
static int acquire(const Root *root, const PidRefOps *ops, pid_t tid, const uint64_t *want, bool process,
                   PidRef *ret) {
        _cleanup_close_ int pidfd = -EBADF, procfd = -EBADF;
        uint64_t st;
        int k;

        if (tid <= 0)
                return -EINVAL;

        /* 1. Pin the task first. */
        if (ops && ops->pidfd_open) {
                k = ops->pidfd_open(tid, ops->userdata);
                if (k >= 0)
                        pidfd = k;
                else if (k == -ESRCH)
                        return -ESRCH;
                else if (k != -EINVAL && k != -ENOSYS)
                        return k; /* EMFILE, ENOMEM: ours, temporary */
                /* EINVAL/ENOSYS: this kernel has no pidfds for threads. */
        }
        if (pidfd < 0) {
                char rel[64];

                snprintf(rel, sizeof(rel), "proc/%d/task/%d", (int) tid, (int) tid);
                procfd = root_openat(root, rel, O_RDONLY | O_DIRECTORY);
                if (procfd == -ENOENT || procfd == -ESRCH)
                        return -ESRCH;
                if (procfd < 0)
                        return procfd;
        }

        /* 2. Is it the thread the caller means? */
        if ((want && pidref_ident_is_pidfs(*want)) || (!want && ops && ops->pidfs_idents && pidfd >= 0 && ops->pidfd_ino)) {
                uint64_t ino;

                /* Its pidfd's inode number: only a pidfd has one. */
                if (pidfd < 0 || !ops->pidfd_ino)
                        return -EOPNOTSUPP;
                k = ops->pidfd_ino(pidfd, ops->userdata, &ino);
                if (k < 0)
                        return k;
                st = PIDREF_IDENT_PIDFS | ino;
        } else {
                k = read_start_time(root, procfd, tid, process, &st);
                if (k < 0)
                        return k;
        }
        if (want && st != *want)
                return -ESRCH; /* the tid was reused: the caller's thread is gone */

        *ret = (PidRef) {
                .tid = tid,
                .start_time = st,
                .pidfd = TAKE_FD(pidfd),
                .procfd = TAKE_FD(procfd),
        };
        return 0;
}

int pidref_acquire(const Root *root, const PidRefOps *ops, pid_t tid, uint64_t start_time, PidRef *ret) {
        return acquire(root, ops, tid, &start_time, false, ret);
}

int pidref_acquire_process(const Root *root, const PidRefOps *ops, pid_t tgid, uint64_t start_time, PidRef *ret) {
        return acquire(root, ops, tgid, &start_time, true, ret);
}

int pidref_acquire_current(const Root *root, const PidRefOps *ops, pid_t tgid, PidRef *ret) {
        return acquire(root, ops, tgid, NULL, true, ret);
}

int pidref_alive(const PidRef *p, const Root *root, const PidRefOps *ops) {
        uint64_t st;
        int k;

        if (p->pidfd >= 0)
                return ops->pidfd_alive(p->pidfd, p->tid, ops->userdata);
        if (p->procfd < 0)
                return -EBADF;
        k = pidref_read_start_time(root, p->procfd, p->tid, &st);
        if (k == -ESRCH)
                return 0;
        if (k < 0)
                return k;
        return st == p->start_time;
}
