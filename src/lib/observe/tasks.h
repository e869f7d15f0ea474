/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Every thread on the machine as plain values: one scan of /proc through the
 * Root gives a TaskSnapshot, sorted by tid, stamped with the monotonic time
 * it was taken. Reads only. A task that exits while it is being read is left
 * out and counted, never an error. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/macro.h"
#include "base/root.h"
#include "base/util.h"
#include "base/yield.h"
#include "observe/lives.h"
#include "observe/procfs.h"

/* Limits on what the machine can make us hold. */
#define TASKS_CMDLINE_MAX 4096u
#define TASKS_PATH_MAX 4096u
#define TASKS_MAX 1000000u
/* Touched processes from this many on, a scan by events lists /proc once
 * to pass over those gone (TaskScanStats.gone). */
#define TASKS_LIST_MIN 32u

/* What is shared by the threads of one process (thread group). */
typedef struct ProcessFacts {
        pid_t tgid;
        uint64_t start_time;
        char *exe;     /* NULL: kernel thread, exited, or not readable */
        char *cmdline; /* "" for kernel threads */
        char *cgroup;  /* the cgroup v2 path, or NULL */
        unsigned refs; /* snapshots holding it: facts are shared from scan to scan, so nothing
                        * here may depend on one snapshot (count threads with
                        * task_snapshot_count_threads()) */
} ProcessFacts;

typedef struct TaskFacts {
        pid_t tid, tgid, ppid;
        uint64_t start_time; /* with tid: the task's identity across pid reuse */
        char comm[PROCFS_COMM_MAX];
        char state;
        bool kernel_thread;
        int nice;
        unsigned policy, rt_priority;
        uint64_t utime, stime; /* clock ticks */

        bool has_uid;
        uid_t uid;
        gid_t gid;

        bool has_ctxt;
        uint64_t voluntary_ctxt, nonvoluntary_ctxt;

        bool has_schedstat;
        ProcSchedstat sched;

        ProcAvx avx;
        uint64_t avx_elapsed_ms;
        /* The hardware's count of AVX-512 FP operations (observe/counters.h),
         * for threads with a counter open: not the scanner's, the pipeline
         * fills it in. */
        bool has_avx512_ops;
        uint64_t avx512_ops;

        int cookie_error;   /* 0 when cookie is valid, else negative errno (not asked: -ENODATA) */
        uint64_t cookie;

        const ProcessFacts *process; /* never NULL */
        const char *parent_comm;     /* comm of the parent process's leader, or NULL */
} TaskFacts;

typedef struct TaskSnapshot {
        uint64_t timestamp_usec; /* CLOCK_MONOTONIC when the scan started */
        TaskFacts *tasks;        /* sorted by tid */
        size_t n_tasks;
        ProcessFacts **processes;
        size_t n_processes;
        unsigned vanished;       /* tasks that exited while being read */
        unsigned unreadable;     /* tasks whose files could not be read for another reason */
        unsigned n_ref;          /* the scanner keeps one to compare the next scan against */
} TaskSnapshot;

typedef struct TaskScanOps {
        /* PR_SCHED_CORE_GET for one thread: 0 and the cookie, or negative
         * errno. NULL: cookies are not asked. */
        int (*get_cookie)(pid_t tid, uint64_t *ret_cookie, void *userdata);
        void *userdata;
} TaskScanOps;

/* The real prctl. */
int tasks_get_cookie_host(pid_t tid, uint64_t *ret_cookie, void *userdata);

/* A scanner remembers the last snapshot and keeps each thread's schedstat
 * open, so a later scan reads one small file per thread (pread) and reads
 * the rest only for threads that ran since: an idle thread cannot have
 * changed its AVX state, switch counts or times. What a thread can have
 * changed without running (comm written from outside, nice, cgroup, cookie
 * set by another task) is caught by a full scan, by proc-connector events,
 * or by the caller's own writes. Without file descriptors to spare (EMFILE)
 * it falls back to reading by path. */
typedef struct TaskScanner TaskScanner;

int task_scanner_new(const Root *root, const TaskScanOps *ops, TaskScanner **ret);
TaskScanner *task_scanner_free(TaskScanner *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(TaskScanner *, task_scanner_free);

/* Forget what is known of this task, so the next scan reads it afresh (a
 * proc-connector EXEC or COMM said it changed). Pass the tgid of an exec:
 * the process's facts are read again too. */
void task_scanner_invalidate(TaskScanner *s, pid_t tid);

/* Given a complete stream of proc-connector events (the caller subscribed
 * before the first scan and rescans fully after an overrun), a scan need
 * not list /proc: processes without FORK, EXEC or EXIT since the last scan
 * have the same threads. Mark each process an event touched (the forking
 * parent and the child for FORK). Listing resumes when trust is off. */
void task_scanner_trust_events(TaskScanner *s, bool trust);
int task_scanner_mark(TaskScanner *s, pid_t tgid);

/* full: read every file of every thread. The snapshot is the caller's. */
int task_scanner_scan(TaskScanner *s, bool full, TaskSnapshot **ret);
/* The same, but the processes in defer (tgids, sorted ascending, n_defer
 * of them) that the last snapshot did not have are not read: they are not
 * in this one and stay marked, so the next scan reads them (an exec
 * storm's pass leaves the processes the fast path just placed, most of
 * them gone by the next). */
int task_scanner_scan_deferring(TaskScanner *s, bool full, const pid_t *defer, size_t n_defer, TaskSnapshot **ret);

/* Let another thread in between processes during a scan (base/yield.h;
 * NULL: never; borrowed). What it does meanwhile through
 * task_scanner_mark() and task_scanner_invalidate() counts for the next
 * scan: marks made during a scan are kept for it, and an invalidated
 * thread is read afresh by it even if this scan already took it with what
 * it read before. */
void task_scanner_set_yield(TaskScanner *s, const YieldHooks *hooks);

/* Between full scans, take a kernel thread seen before as it was, without
 * a read (off by default). For the daemon: no policy moves a kernel thread
 * and its class is always other, and a big machine has several per CPU;
 * its figures (times, switches) are then those of the last full scan. Not
 * for a verb that shows them (topoctl classify --all). */
void task_scanner_set_lazy_kernel_threads(TaskScanner *s, bool lazy);

/* Processes the events tell have died whole (observe/lives.h; NULL: none
 * known; borrowed): a scan neither reads them nor keeps them, though /proc
 * lists them until they are reaped (TaskScanStats.dead). */
void task_scanner_set_lives(TaskScanner *s, const Lives *lives);

/* Counters of the last scan, for benchmarks and status. */
typedef struct TaskScanStats {
        unsigned threads_reread; /* stat/status/arch_status read */
        unsigned threads_reused; /* unchanged since the last scan */
        unsigned held_fds;
        bool fd_limit_hit;
        bool by_events; /* /proc was not walked (listed at most, for gone) */
        unsigned deferred; /* processes left for the next scan (task_scanner_scan_deferring()) */
        unsigned gone;     /* processes touched that /proc no longer listed: not looked at */
        unsigned dead;     /* processes known dead (task_scanner_set_lives()): not looked at */
} TaskScanStats;
void task_scanner_stats(const TaskScanner *s, TaskScanStats *ret);

/* The numbers /proc lists now, sorted (through procfd, or root's proc when
 * procfd < 0). -ENODATA when it lists none (no procfs there); an error of
 * the listing's (a list cut short is no list), or -ENOMEM. */
int tasks_list_processes(const Root *root, int procfd, pid_t **ret, size_t *ret_n);
/* A thread of process tgid that has not exited (for one whose main thread
 * exited while others live); -ESRCH when there is none. */
int tasks_live_thread(const Root *root, pid_t tgid, pid_t *ret_tid);

/* The own stat of thread tid (proc/<tid>/task/<tid>/stat: not its
 * process's, which sums the times of every thread). -ESRCH when it is gone;
 * -EFBIG, -EINVAL or the parser's error for a file that is not its stat. */
int tasks_read_thread_stat(const Root *root, pid_t tid, ProcStat *ret);

/* One full scan without keeping anything. */
int tasks_scan(const Root *root, const TaskScanOps *ops, TaskSnapshot **ret);
/* Snapshots are shared (read-only) between the scanner and its callers:
 * _free drops one reference. */
TaskSnapshot *task_snapshot_ref(TaskSnapshot *s);
TaskSnapshot *task_snapshot_free(TaskSnapshot *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(TaskSnapshot *, task_snapshot_free);

/* Threads of the process tgid in the snapshot. */
unsigned task_snapshot_count_threads(const TaskSnapshot *s, pid_t tgid);

/* Binary search by tid; NULL when absent. */
const TaskFacts *task_snapshot_find(const TaskSnapshot *s, pid_t tid);

/* ── One process by pid, for the fast path ──
 *
 * What [match] may look at of one process, read on demand into fixed
 * buffers (no allocation for comm, stat, status, exe): the caller asks for
 * comm first and for more only when a policy wants it. Read through the
 * Root: proc/<pid>/comm, stat, status, exe, cmdline, cgroup and the
 * parent's comm, with the same parsers as the scan. */

#define TASK_QUICK_COMM    (1u << 0) /* comm */
#define TASK_QUICK_STAT    (1u << 1) /* stat: start time, ppid, flags (kernel thread), threads;
                                      * and comm, from the same file */
#define TASK_QUICK_UID     (1u << 2) /* status: real uid */
#define TASK_QUICK_EXE     (1u << 3)
#define TASK_QUICK_CMDLINE (1u << 4)
#define TASK_QUICK_CGROUP  (1u << 5)
#define TASK_QUICK_PARENT  (1u << 6) /* the parent's comm (reads stat for the ppid) */

typedef struct TaskQuick {
        pid_t pid;
        unsigned have; /* TASK_QUICK_* read (a fact asked for but absent, such as an
                        * unreadable exe, is "read" and NULL below) */
        char comm[PROCFS_COMM_MAX];
        uint64_t start_time;
        pid_t ppid;
        bool kernel_thread;
        unsigned n_threads;
        bool has_uid;
        uid_t uid;
        /* NULL, or pointing into the buffers below. */
        const char *exe, *cmdline, *cgroup, *parent_comm;
        char exe_buf[TASKS_PATH_MAX];
        char cmdline_buf[TASKS_CMDLINE_MAX + 1];
        char cgroup_buf[TASKS_PATH_MAX];
        char parent_buf[PROCFS_COMM_MAX];
        FdBin *bin; /* NULL, or where comm's descriptor goes, to be closed later
                     * with others (base/util.h: the fast path's); kept across
                     * task_quick_reset() */
} TaskQuick;

/* Forget what q holds; it is about pid now. */
void task_quick_reset(TaskQuick *q, pid_t pid);

/* Read the facts in fields (TASK_QUICK_*) that q does not have yet. 0, or
 * -ESRCH when the process has gone (or its pid was never a process: a
 * thread id), or another negative errno when a file could not be read for
 * another reason. What was read stays in q either way. */
int tasks_read_quick(const Root *root, unsigned fields, TaskQuick *q);
