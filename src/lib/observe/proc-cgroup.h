/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Where a task or a process is in the cgroup v2 hierarchy, from
 * /proc/<pid>/cgroup through the Root. Reads only: the cgroup writer
 * (apply/cgroup.h) asks it where a process is before and after each move,
 * and explain shows it. Paths are as the file shows them: relative to the
 * cgroup2 mount, starting with '/'. */

#include <sys/types.h>

#include "base/root.h"
#include "base/util.h"

/* The most of a /proc/<pid>/cgroup that is read (a line per hierarchy). */
#define PROC_CGROUP_MAX (64u * 1024u)

/* Pure: the v2 line ("0::/path") of /proc/<pid>/cgroup text. A " (deleted)"
 * suffix is kept. -ENODATA when there is no such line, -EBADMSG when it is
 * not an absolute path. */
int proc_cgroup_parse(const char *text, char **ret);

/* The cgroup of task tid: -ESRCH when it is gone. bin: NULL, or where the
 * file's descriptor goes, to be closed later with others (the fast path's,
 * base/util.h). */
int proc_cgroup_read(const Root *root, pid_t tid, FdBin *bin, char **ret);

/* Where process pid is, and the thread that says so (*ret_tid): its main
 * thread's cgroup, or, when the main thread has exited while others live,
 * that of a live thread. -ESRCH when the process is gone. */
int proc_cgroup_read_process(const Root *root, pid_t pid, FdBin *bin, char **ret, pid_t *ret_tid);
