/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the files of the task observer share and nobody outside needs: the
 * /proc walking helpers (tasks-proc.c), the scanner's state
 * (tasks-scanner.c) and the scan over it (tasks-scan.c). The public API is
 * observe/tasks.h. */

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "observe/tasks.h"

/* ── tasks-proc.c: /proc walked ── */

/* A file of a task that vanished gives ENOENT (directory gone) or ESRCH
 * (the task is exiting while we read). */
static inline bool tasks_vanished(int err) {
        return err == -ENOENT || err == -ESRCH;
}

ssize_t tasks_read_small_at(int dirfd, const char *name, char *buf, size_t size);
bool tasks_parse_pid(const char *s, pid_t *ret);

/* Reading an open directory's entries straight from getdents64():
 * fdopendir() would add an fstat() and two fcntl() calls, for each process
 * a scan reads. */
typedef struct TasksDirReader {
        int fd;
        size_t pos, len;
        char buf[2048] __attribute__((aligned(8)));
} TasksDirReader;

int tasks_dir_next(TasksDirReader *r, const char **ret_name);
int tasks_live_thread_dir(int pfd, pid_t tgid, pid_t *ret_tid);
int tasks_open_listing(int procfd, DIR **ret);

/* ── tasks-scanner.c: the scanner, the snapshots ── */

/* A thread's schedstat, kept open between scans. */
typedef struct TaskHeld {
        pid_t tid;
        int fd;
} TaskHeld;

struct TaskScanner {
        const Root *root;
        TaskScanOps ops;
        bool has_ops;
        TaskSnapshot *prev;
        TaskHeld *held; /* sorted by tid */
        size_t n_held;
        TaskScanStats stats;

        size_t held_budget; /* most schedstat fds held at once */

        /* With a complete stream of process events, a process that had no
         * FORK, EXEC or EXIT since the last scan has the same threads: its
         * task directory need not be listed, nor /proc. */
        bool trust_events;
        pid_t *dirty; /* processes the events touched (since the scan began, during one) */
        size_t n_dirty, dirty_cap;

        /* A scan that yields (task_scanner_set_yield()) lets events in:
         * their marks go to a list of their own (the scan took the one
         * before), and invalidations to late, applied to the held set the
         * scan ends with (the thread may be in it already, with what it
         * read before the exec). */
        const YieldHooks *yield;
        bool lazy_kernel_threads; /* task_scanner_set_lazy_kernel_threads() */
        const Lives *lives;       /* task_scanner_set_lives() */
        bool scanning;
        pid_t *late;
        size_t n_late, late_cap;
        bool late_lost; /* too many, or no memory: every held fd goes */
};

ProcessFacts *process_facts_unref(ProcessFacts *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(ProcessFacts *, process_facts_unref);
int task_facts_compare(const void *a, const void *b);

int task_held_compare(const void *a, const void *b);
TaskHeld *task_scanner_find_held(const TaskScanner *s, pid_t tid);
void task_held_close(TaskHeld *h, size_t n);
bool task_scanner_known_dead(TaskScanner *s, pid_t tgid);

/* ── tasks-scan.c: one scan ── */

/* One scan of s: full, or of what the marks in dirty (taken by this scan)
 * say; the processes in defer left for the next. */
int task_scanner_run(TaskScanner *s, bool full, pid_t *dirty, size_t n_dirty, const pid_t *defer, size_t n_defer,
                     TaskSnapshot **ret);
