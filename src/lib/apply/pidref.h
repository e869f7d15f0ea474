/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A handle on one thread that survives pid reuse.
 *
 * The observer knows a thread as (tid, start_time). Before an apply step acts
 * on a tid it takes a PidRef: first a pidfd (which pins the kernel's struct
 * pid), then the start time from proc/<tid>/stat read through the Root. When
 * both agree the pidfd is known to name the thread the caller meant: that
 * thread held the tid from before the pidfd was opened until the stat was
 * read, so nothing else can have taken it meanwhile. After acting by tid
 * (prctl, cgroup.procs take numbers) the caller asks pidref_alive(): a thread
 * still alive then held its tid throughout, so the act reached it.
 *
 * Without pidfds for threads (PIDFD_THREAD is 6.9+; pidfd_open is 5.3+ and
 * only for thread-group leaders before that) the handle is the
 * proc/<tid>/task/<tid> directory itself: an open /proc directory of a task
 * stays bound to the task it was opened for, and reads under it fail with
 * ESRCH once that task is gone, even if the number is reused.
 *
 * The stat read is proc/<tid>/task/<tid>/stat, the thread's own: the
 * process-level proc/<tid>/stat sums over all threads of the process, which
 * would make checking every thread of a big process quadratic.
 *
 * Where pidfds are inodes of pidfs (6.9, 64-bit: KernelCaps.pidfs)
 * the inode number of a pidfd names its struct pid for as long as the
 * system runs, and one fstat() of the pin tells who it is without reading
 * /proc. The fast path, which pins a process it has only just seen exec
 * (pidref_acquire_current()), then knows it by that number: an identity
 * "start time" of PIDREF_IDENT_PIDFS | inode. Start times (clock ticks
 * after boot) never reach that bit; every pidref_acquire*() takes either
 * kind, and only the apply steps that pinned a process keep the inode kind
 * (the journal's entries of processes moved); what compares with the
 * observer's start times reads the start time. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/types.h>

#include "base/macro.h"
#include "base/root.h"
#include "base/util.h"
#include "observe/procfs.h"

/* linux/pidfd.h, 6.13: the first version of struct pidfd_info (64 bytes),
 * which later kernels extend at the end. */
typedef struct PidfdInfo {
        uint64_t mask;
        uint64_t cgroupid;
        uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
        int32_t exit_code;
} PidfdInfo;
_Static_assert(sizeof(PidfdInfo) == 64, "PIDFD_INFO_SIZE_VER0");
#define PIDREF_PIDFD_INFO_CGROUPID (1ull << 2)
/* The sandbox lets this ioctl through. */
#define PIDREF_PIDFD_GET_INFO _IOWR(0xFF, 11, PidfdInfo)

#define PIDREF_IDENT_PIDFS (UINT64_C(1) << 63)

static inline bool pidref_ident_is_pidfs(uint64_t start_time) {
        return (start_time & PIDREF_IDENT_PIDFS) != 0;
}

typedef struct PidRefOps {
        /* pidfd_open(tid, PIDFD_THREAD): an fd (O_CLOEXEC) or negative errno.
         * -EINVAL means "no pidfds for threads here": the proc directory is
         * used instead. NULL: never use pidfds. */
        int (*pidfd_open)(pid_t tid, void *userdata);
        /* Has the thread behind pidfd exited? 1 alive, 0 exited, negative errno. */
        int (*pidfd_alive)(int pidfd, pid_t tid, void *userdata);
        /* The id of the cgroup2 cgroup its process is in now (the cgroup
         * directory's inode number): 0, -ESRCH once it has exited, and
         * -EOPNOTSUPP where the kernel cannot tell (PIDFD_GET_INFO is 6.13).
         * NULL: never asked. */
        int (*pidfd_cgroup_id)(int pidfd, void *userdata, uint64_t *ret);
        /* The inode number of pidfd (fstat()): 0 or negative errno. NULL:
         * identities of the pidfs kind cannot be checked (-EOPNOTSUPP). */
        int (*pidfd_ino)(int pidfd, void *userdata, uint64_t *ret);
        /* pidref_acquire_current() names what it pins by its pidfd's inode
         * (PIDREF_IDENT_PIDFS), not by a read of its start time: only where
         * KernelCaps.pidfs says so. */
        bool pidfs_idents;
        void *userdata;
} PidRefOps;

/* The real syscalls. */
extern const PidRefOps pidref_ops_host;

typedef struct PidRef {
        pid_t tid;
        uint64_t start_time;
        int pidfd;  /* -EBADF when pidfds are not usable for this thread */
        int procfd; /* proc/<tid>/task/<tid> through the root, only when pidfd is not */
        bool borrowed; /* another PidRef's fds (pidref_borrow()): not closed here */
} PidRef;

#define PIDREF_NULL ((PidRef) { .pidfd = -EBADF, .procfd = -EBADF })

/* Take a handle on the thread (tid, start_time). -ESRCH when it has exited or
 * its tid now names another thread (start time differs): the caller's thread
 * is gone either way. -EINVAL for a tid <= 0. Other negative errnos (EMFILE,
 * EACCES, unparsable stat) are failures of ours. On failure *ret is
 * untouched. */
int pidref_acquire(const Root *root, const PidRefOps *ops, pid_t tid, uint64_t start_time, PidRef *ret);
/* The same for a process, by its main thread: its start time is read from
 * proc/<tgid>/stat, where the fast path has just read comm (a new
 * process's task/<tid> entries are never made), not from the thread's
 * own file. That file sums the times of every thread: one, right after
 * exec or fork; O(threads) for an old process, once per move. */
int pidref_acquire_process(const Root *root, const PidRefOps *ops, pid_t tgid, uint64_t start_time, PidRef *ret);
/* The same for whatever process runs at tgid now (one just seen exec'ing):
 * who it is is learnt through the pin, in ret->start_time: its start time,
 * or with ops->pidfs_idents, PIDREF_IDENT_PIDFS | its pidfd's inode. */
int pidref_acquire_current(const Root *root, const PidRefOps *ops, pid_t tgid, PidRef *ret);

/* 1 while the thread lives, 0 once it has exited, negative errno if that
 * cannot be told. */
int pidref_alive(const PidRef *p, const Root *root, const PidRefOps *ops);

/* Does it hold a handle (not PIDREF_NULL, not released)? */
static inline bool pidref_is_set(const PidRef *p) {
        return p->pidfd >= 0 || p->procfd >= 0;
}

/* The same handle, lent: valid while from is; pidref_done() on it closes
 * nothing. */
PidRef pidref_borrow(const PidRef *from);

/* Close the handle (unless borrowed); the PidRef becomes PIDREF_NULL.
 * Accepts PIDREF_NULL. */
void pidref_done(PidRef *p);
/* The same, its descriptors into bin (base/util.h) to be closed later. */
void pidref_done_into(PidRef *p, FdBin *bin);

/* Read the start time (clock ticks after boot, field 22) of
 * proc/<tid>/task/<tid>/stat, or of "stat" below dirfd when dirfd >= 0.
 * -ESRCH when the task is gone. */
int pidref_read_start_time(const Root *root, int dirfd, pid_t tid, uint64_t *ret);
/* The same read, whole. */
int pidref_read_stat(const Root *root, int dirfd, pid_t tid, ProcStat *ret);
/* The process that tgid and start_time (a start time, or a pidfs name)
 * name, read through a pin on it: its stat, and whether it was still the
 * pinned one after the read. 1: alive, *ret is its own; 0: exited since
 * the pin (*ret is what the read found, its zombie or what took its
 * number; zeroed when nothing was there); -ESRCH: the pin found it gone;
 * another negative errno: not told (the pin, the read or the check
 * failed). How an entry known by its pidfd's inode learns its start time. */
int pidref_read_stat_pinned(const Root *root, const PidRefOps *ops, pid_t tgid, uint64_t start_time, ProcStat *ret);
