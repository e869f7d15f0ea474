/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* /proc walked: small files read in one go, a task directory read by
 * getdents64(), the processes /proc lists, and a live thread of a process
 * whose main thread exited. The scan and the one-process read both stand on
 * these. */
#include "observe/tasks-internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Read a small file below dirfd into buf (NUL-terminated); the length, or
 * negative errno. Longer files are cut at size - 1 bytes. Only files made
 * whole in one go (read_record()). */
ssize_t tasks_read_small_at(int dirfd, const char *name, char *buf, size_t size) {
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);

        if (fd < 0)
                return negative_errno();
        return read_record(fd, buf, size);
}

/* A number /proc lists: a positive decimal that fits a pid_t. */
bool tasks_parse_pid(const char *s, pid_t *ret) {
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

/* The next entry's name: 1, 0 at the end, or a negative errno. */
int tasks_dir_next(TasksDirReader *r, const char **ret_name) {
        for (;;) {
                const struct dirent64 *de;
                ssize_t n;

                if (r->pos < r->len) {
                        de = (const struct dirent64 *) (r->buf + r->pos);
                        r->pos += de->d_reclen;
                        *ret_name = de->d_name;
                        return 1;
                }
                n = syscall(SYS_getdents64, r->fd, r->buf, sizeof(r->buf));
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        return 0;
                r->pos = 0;
                r->len = (size_t) n;
        }
}

/* A live thread's directory (task/TID) of process tgid, whose main thread
 * exited while others live: the exited one has no memory map (no exe, an
 * empty cmdline) and its cgroup is where it exited. Its number in
 * *ret_tid. -ESRCH when none. */
int tasks_live_thread_dir(int pfd, pid_t tgid, pid_t *ret_tid) {
        _cleanup_close_ int taskfd = openat(pfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        TasksDirReader r = { .fd = taskfd };
        const char *entry;

        if (taskfd < 0)
                return errno == ENOENT ? -ESRCH : negative_errno();
        while (tasks_dir_next(&r, &entry) > 0) {
                _cleanup_close_ int tfd = -EBADF;
                char buf[1024];
                ProcStat st;
                ssize_t n;
                pid_t tid;

                if (!tasks_parse_pid(entry, &tid) || tid == tgid)
                        continue;
                tfd = openat(taskfd, entry, O_PATH | O_DIRECTORY | O_CLOEXEC);
                n = tfd < 0 ? -1 : tasks_read_small_at(tfd, "stat", buf, sizeof(buf));
                if (n > 0 && procfs_parse_stat(buf, (size_t) n, &st) >= 0 && !procfs_state_exited(st.state)) {
                        *ret_tid = tid;
                        return TAKE_FD(tfd);
                }
        }
        return -ESRCH;
}

/* A listing of /proc through procfd, which stays open. */
int tasks_open_listing(int procfd, DIR **ret) {
        int dupfd = fcntl(procfd, F_DUPFD_CLOEXEC, 3);

        if (dupfd < 0)
                return negative_errno();
        *ret = fdopendir(dupfd);
        if (!*ret) {
                close(dupfd);
                return negative_errno();
        }
        return 0;
}

int tasks_list_processes(const Root *root, int procfd, pid_t **ret, size_t *ret_n) {
        _cleanup_close_ int own = -EBADF;
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0, cap = 0;
        DIR *d;
        int k;

        if (procfd < 0 && (procfd = own = root_openat(root, "proc", O_RDONLY | O_DIRECTORY)) < 0)
                return procfd;
        if ((k = tasks_open_listing(procfd, &d)) < 0)
                return k;
        for (;;) {
                struct dirent *de;
                pid_t pid;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        k = errno ? -errno : 0; /* a list cut short is no list */
                        break;
                }
                if (!tasks_parse_pid(de->d_name, &pid))
                        continue;
                if (n == cap) {
                        size_t c = cap ? cap * 2 : 256;
                        pid_t *np = realloc(pids, c * sizeof(pid_t));

                        if (!np) {
                                k = -ENOMEM;
                                break;
                        }
                        pids = np;
                        cap = c;
                }
                pids[n++] = pid;
        }
        closedir(d);
        if (k < 0)
                return k;
        if (n == 0)
                return -ENODATA; /* no procfs there (an empty directory) */
        qsort(pids, n, sizeof(pid_t), compare_pid);
        *ret = TAKE_PTR(pids);
        *ret_n = n;
        return 0;
}

int tasks_live_thread(const Root *root, pid_t tgid, pid_t *ret_tid) {
        _cleanup_close_ int pfd = -EBADF, fd = -EBADF;
        char rel[32];

        snprintf(rel, sizeof(rel), "proc/%d", (int) tgid);
        pfd = root_openat(root, rel, O_RDONLY | O_DIRECTORY);
        if (pfd == -ENOENT || pfd == -ESRCH)
                return -ESRCH;
        if (pfd < 0)
                return pfd;
        fd = tasks_live_thread_dir(pfd, tgid, ret_tid);
        return fd < 0 ? fd : 0;
}
