/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Parsers of /proc text. Pure and bounded: they take a buffer and its
 * length, never read past it, never trust a number, and say -EINVAL for
 * text they do not recognise. Fuzzed in tests/fuzz. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROCFS_COMM_MAX 64 /* the kernel's is 16; room for odd trees */

/* /proc/<pid>/task/<tid>/stat, the fields topod uses. */
typedef struct ProcStat {
        pid_t pid;
        char comm[PROCFS_COMM_MAX]; /* may hold spaces, parentheses, newlines */
        char state;
        pid_t ppid;
        unsigned flags;             /* PF_* */
        uint64_t utime, stime;      /* clock ticks */
        int nice;
        unsigned num_threads;
        uint64_t start_time;        /* clock ticks after boot: a task's identity with its pid */
        unsigned rt_priority;
        unsigned policy;            /* SCHED_* */
        int processor;
} ProcStat;

#define PROCFS_PF_KTHREAD 0x00200000u

/* /proc/<pid>/status, the lines topod uses. Missing lines leave has_* false. */
typedef struct ProcStatus {
        bool has_uid, has_ctxt;
        uid_t uid, euid;
        gid_t gid, egid;
        pid_t tgid;
        uint64_t voluntary_ctxt, nonvoluntary_ctxt;
} ProcStatus;

/* /proc/<pid>/schedstat: "run_ns wait_ns timeslices". */
typedef struct ProcSchedstat {
        uint64_t run_ns, wait_ns, timeslices;
} ProcSchedstat;

/* /proc/<pid>/arch_status "AVX512_elapsed_ms:\t<n>" (-1: never seen). */
typedef enum ProcAvx {
        PROC_AVX_NO_LINE,   /* the CPU does not report AVX-512 state */
        PROC_AVX_NEVER,     /* -1 */
        PROC_AVX_ELAPSED,   /* ms since the last use */
} ProcAvx;

int procfs_parse_stat(const char *text, size_t len, ProcStat *ret);
/* A process (its leader's stat) that has exited and waits for its parent:
 * a zombie with no thread left. A leader that exited before its other
 * threads shows Z too, but counts them: that process lives on. */
/* A task that exited: a zombie, or dead. */
static inline bool procfs_state_exited(char state) {
        return state == 'Z' || state == 'X';
}

static inline bool procfs_stat_exited(const ProcStat *st) {
        return procfs_state_exited(st->state) && st->num_threads <= 1;
}
int procfs_parse_status(const char *text, size_t len, ProcStatus *ret);
int procfs_parse_schedstat(const char *text, size_t len, ProcSchedstat *ret);
/* ret_ms is set for PROC_AVX_ELAPSED only. */
int procfs_parse_arch_status(const char *text, size_t len, ProcAvx *ret_kind, uint64_t *ret_ms);

/* The cgroup v2 path ("0::/system.slice/x.service") from /proc/<pid>/cgroup,
 * as a new string; -ENODATA when there is no v2 line. */
int procfs_parse_cgroup(const char *text, size_t len, char **ret);

/* cmdline: NULs between arguments become spaces, the trailing NUL goes,
 * other control bytes become '?'. At most max bytes are kept. */
int procfs_format_cmdline(const char *raw, size_t len, size_t max, char **ret);
