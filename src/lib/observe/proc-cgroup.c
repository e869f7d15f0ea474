/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The reader of /proc/<pid>/cgroup (observe/proc-cgroup.h): the parser of
 * its text, one task's file, and a process's cgroup told by its live
 * threads. Its own module: it only reads, and the cgroup writer is not the
 * only one that asks. */
#include "observe/proc-cgroup.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "observe/procfs.h"
#include "observe/tasks.h"

int proc_cgroup_parse(const char *text, char **ret) {
        for (const char *line = text; line && *line;) {
                const char *nl = strchr(line, '\n');
                size_t len = nl ? (size_t) (nl - line) : strlen(line);

                if (len >= 3 && strneq(line, "0::", 3)) {
                        char *p;

                        if (len < 4 || line[3] != '/')
                                return -EBADMSG;
                        p = strndup(line + 3, len - 3);
                        if (!p)
                                return -ENOMEM;
                        *ret = p;
                        return 0;
                }
                line = nl ? nl + 1 : NULL;
        }
        return -ENODATA;
}

/* The cgroup of a task: -ESRCH when it is gone. */
int proc_cgroup_read(const Root *root, pid_t tid, FdBin *bin, char **ret) {
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -EBADF;
        char rel[64], num[21], buf[4096];
        ssize_t n;
        int k;

        (void) format_u64(num, (uint64_t) tid);
        (void) strjoin_buf(rel, sizeof(rel), "proc/", num, "/cgroup"); /* fits */
        fd = root_openat(root, rel, O_RDONLY | O_NOCTTY);
        if (fd == -ENOENT || fd == -ESRCH)
                return -ESRCH;
        if (fd < 0)
                return fd;
        /* One read as a rule (a line per hierarchy, made in one go: it is
         * read for every process the fast path moves). */
        n = read_record(fd, buf, sizeof(buf));
        if (n == -ENOENT || n == -ESRCH)
                return -ESRCH;
        if (n < 0)
                return (int) n;
        if ((size_t) n == sizeof(buf) - 1) {
                /* Longer: again from the start, whole. */
                if (lseek(fd, 0, SEEK_SET) < 0)
                        return negative_errno();
                k = read_full_fd(fd, PROC_CGROUP_MAX, &text, NULL);
                if (k == -ENOENT || k == -ESRCH)
                        return -ESRCH;
                if (k < 0)
                        return k;
        }
        fd_bin_put(bin, TAKE_FD(fd)); /* the fast path's: closed with others, later */
        if (!*(text ?: buf)) /* a task that exited while we read */
                return -ESRCH;
        return proc_cgroup_parse(text ?: buf, ret);
}

/* Where process pid is, and the thread that says so (*ret_tid). A main
 * thread that exited while other threads live stays where it was: its
 * /proc/PID/cgroup (and the cgroup.procs that lists the process) keep
 * naming that cgroup however the live threads are moved (writing the
 * process's number moves those only). Such a process is where its live
 * threads are: the first that lives (not one that exited and waits for a
 * tracer) names it. A stat read beyond the cgroup's: for restores and
 * read-backs that disagree, not the fast path's moves (a process that just
 * exec'd has a live main thread). */
int proc_cgroup_read_process(const Root *root, pid_t pid, FdBin *bin, char **ret, pid_t *ret_tid) {
        _cleanup_free_ char *cg = NULL;
        ProcStat st;
        pid_t tid;
        int k;

        *ret_tid = pid;
        k = proc_cgroup_read(root, pid, bin, &cg);
        if (k < 0)
                return k;
        k = tasks_read_thread_stat(root, pid, &st);
        if (k == -ESRCH)
                return k;
        if (k < 0 || !procfs_state_exited(st.state) || st.num_threads <= 1) {
                *ret = TAKE_PTR(cg);
                return 0;
        }
        /* Twice: the live thread found may exit before its read. */
        for (unsigned attempt = 0; attempt < 2; attempt++) {
                k = tasks_live_thread(root, pid, &tid);
                if (k == -ESRCH)
                        break;
                if (k < 0)
                        return k;
                k = proc_cgroup_read(root, tid, bin, ret);
                if (k != -ESRCH) {
                        *ret_tid = tid;
                        return k;
                }
        }
        /* None other lives: exited meanwhile, or one exec'd and took the
         * number (the main thread again, live). */
        k = tasks_read_thread_stat(root, pid, &st);
        if (k < 0)
                return k;
        return procfs_state_exited(st.state) ? -ESRCH : proc_cgroup_read(root, pid, bin, ret);
}
