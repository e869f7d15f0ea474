/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Process events from the kernel's netlink proc connector: FORK, EXEC,
 * COMM and EXIT, so a new or renamed task is seen at once instead of at the
 * next scan. The socket is non-blocking; the caller polls its fd.
 *
 * When the kernel drops events because we fell behind (ENOBUFS), a
 * TASK_EVENT_OVERRUN is returned: the caller must rescan /proc. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/macro.h"

typedef enum TaskEventType {
        TASK_EVENT_FORK,
        TASK_EVENT_EXEC,
        TASK_EVENT_COMM,
        TASK_EVENT_EXIT,
        TASK_EVENT_OVERRUN, /* events were lost: rescan */
        TASK_EVENT_ACK,     /* the kernel's answer to a (un)subscription */
        _TASK_EVENT_MAX,
} TaskEventType;

typedef struct TaskEvent {
        TaskEventType type;
        uint64_t timestamp_ns; /* the kernel's monotonic clock */
        pid_t pid, tgid;       /* the task (thread) and its process */
        pid_t parent_pid, parent_tgid; /* FORK: who forked */
        char comm[16];         /* COMM: the new name */
        int error;             /* ACK: negative errno of the subscription, or 0 */
} TaskEvent;

typedef struct ProcEvents ProcEvents;

/* Open, bind and subscribe. Negative errno: EPROTONOSUPPORT (no connector
 * in the kernel), EPERM (needs CAP_NET_ADMIN), … */
int proc_events_open(ProcEvents **ret);
/* The same on two sockets where the kernel filters events per socket
 * (Linux 6.6): EXEC and COMM on proc_events_fd(), which the caller
 * watches closely, FORK and EXIT on proc_events_lazy_fd(), which it may
 * let wait (a burst of execs then wakes it once per process, not three
 * times). Elsewhere one socket, as proc_events_open(). Renames the calling
 * process to its own name once, to see that the filter works. */
int proc_events_open_split(ProcEvents **ret);
/* Unsubscribes and closes. */
ProcEvents *proc_events_free(ProcEvents *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(ProcEvents *, proc_events_free);
int proc_events_fd(const ProcEvents *e);
/* The FORK and EXIT socket when split, else -EBADF. */
int proc_events_lazy_fd(const ProcEvents *e);

/* Read what is queued, up to max events, without blocking (both sockets
 * when split, the lazy one first): fewer than max means they were found
 * empty. Events the caller does not need (UID, SID, PTRACE, …) are
 * skipped. *ret_n may be 0. */
int proc_events_read(ProcEvents *e, TaskEvent *events, size_t max, size_t *ret_n);
/* The same, of the EXEC and COMM socket only when split (else of the one):
 * what to act on at once, the rest read after. */
int proc_events_read_urgent(ProcEvents *e, TaskEvent *events, size_t max, size_t *ret_n);
/* As proc_events_read_urgent(), but waits for the first event: returns
 * with *ret_n > 0, or -EINTR when a signal came first (the caller's way to
 * stop a thread that waits here). The first call makes the socket
 * blocking (the reads above never block: they pass MSG_DONTWAIT).
 * Datagrams of no interest to us may end the wait with *ret_n == 0. */
int proc_events_wait_urgent(ProcEvents *e, TaskEvent *events, size_t max, size_t *ret_n);
/* The same, of the FORK and EXIT socket only when split (else of the one):
 * for a reader that leaves the execs to another. */
int proc_events_read_lazy(ProcEvents *e, TaskEvent *events, size_t max, size_t *ret_n);

/* Parse one datagram from the connector (pure; fuzzed). Returns 1 and the
 * event, 0 for a message of no interest, -EINVAL for a malformed one. */
int proc_events_parse(const void *buf, size_t len, TaskEvent *ret);

const char *task_event_type_to_string(TaskEventType t);
