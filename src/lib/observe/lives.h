/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Which processes have died whole, told by the proc connector's FORK and
 * EXIT events alone.
 *
 * A process whose birth (the FORK of its main thread) was seen counts its
 * threads: +1 for each thread it starts (a FORK naming it), -1 for each
 * EXIT naming it. At 0 every thread has exited: the process is dead. Until
 * its parent reaps it, /proc still lists it and its files still read (a
 * zombie): each look at it costs a system call or more, for nothing. In an
 * exec storm hundreds are: without these counts the scan would read each
 * one and the journal's upkeep pin each one.
 *
 * An EXIT naming the main thread is not enough: a main thread may end and
 * the process live on in its other threads; a thread that execs takes the
 * main thread's number, and the old main thread's EXIT comes then (the
 * count goes on: one is left, the one that exec'd).
 *
 * Dead means: no task has that number now, as far as the events read so
 * far tell. A FORK giving the number to a new task (process or thread)
 * ends it. Events come in order on one socket (FORK and EXIT share one, and
 * a task's FORK is sent before it can run, so before its EXIT). Lost events
 * (the socket overran) make every count unsure, and more are lost after
 * the error the kernel reports, silently, until the socket has been read
 * empty: lives_suspend() at the error drops every count and ignores the
 * events until lives_resume(), once the socket was found empty, starts
 * counting afresh. A process born before topod watched (or before the
 * resumption) is never counted, so never known dead: it is read as before.
 *
 * "As far as the events read so far tell": the FORK of a process that took
 * a dead one's number may not have been read yet (another socket brings
 * execs sooner); whoever acts on an answer for a process it learnt of
 * otherwise must allow for that.
 *
 * Knowing is only ever a saving: whoever asks must do without it (read
 * /proc) when the answer is no. Dead entries are kept for LIVES_ERAS eras
 * (one a scan, lives_next_era()) after the death, for the scan and the
 * journal's upkeep of the passes that may leave them to the next. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define LIVES_ERAS 3u
/* Counted processes (alive or known dead) at most: past it, new ones are
 * not counted (never known dead). */
#define LIVES_MAX (1u << 20)

typedef struct Lives Lives;

int lives_new(Lives **ret);
Lives *lives_free(Lives *l);

/* A FORK event: task pid of process tgid began (pid == tgid: a new process). */
void lives_fork(Lives *l, pid_t pid, pid_t tgid);
/* An EXIT event: task pid of process tgid exited. */
void lives_exit(Lives *l, pid_t pid, pid_t tgid);
/* Events were lost: nothing counted holds any more. */
void lives_forget(Lives *l);
/* Events were lost, and are until the socket is read empty: forgotten,
 * and ignored until lives_resume(). */
void lives_suspend(Lives *l);
/* The socket was read empty since lives_suspend(): counting starts afresh
 * from the events that follow. Nothing when not suspended. */
void lives_resume(Lives *l);
/* The next era (a scan begins): deaths older than LIVES_ERAS eras are dropped. */
void lives_next_era(Lives *l);

/* Has process tgid died whole, with no task born with its number since? */
bool lives_dead(const Lives *l, pid_t tgid);

typedef struct LivesStats {
        size_t counted; /* alive and counted */
        size_t dead;    /* known dead, kept */
} LivesStats;
LivesStats lives_stats(const Lives *l);
