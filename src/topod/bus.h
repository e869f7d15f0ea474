/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topod's IPC: sd-bus, peer to peer, on a private unix socket (no bus
 * daemon). One object, BUS_PATH, with one interface, BUS_INTERFACE:
 *
 *   Explain(u pid, b json) → s   every thread of a process (or one thread)
 *   Status(b json)         → s   the daemon's state and the kernel's
 *   Plan(b json)           → s   the plan in force and the last apply
 *   Reload(b json)         → s   re-read topod.conf and the policies, all or nothing
 *   Reset(b json)          → s   put everything back and pause (Reload resumes)
 *
 * Replies are the text or JSON topoctl prints, so every client sees the
 * same answer, and `busctl --address=unix:path=/run/topod/bus` can call
 * them by hand. Rights come from the peer's SO_PEERCRED: anyone may read;
 * only uid 0 may Reload or Reset.
 *
 * What a local user can make the daemon hold is bounded: replies by
 * BUS_REPLY_MAX; connections by BUS_CONNECTIONS_PER_UID per uid other than
 * root and BUS_CONNECTIONS_MAX in all, BUS_CONNECTIONS_ROOT of them kept
 * for root (whose new connection drops the oldest one when all are taken);
 * unread replies by BUS_QUEUED_MAX per connection (more, and it is
 * dropped); the backlog is emptied at each wake-up. Not bounded below
 * sd-bus's own limit (128 MiB): the size of one incoming message, which
 * sd-bus reads whole before it checks the signature and offers no setting
 * for — so one uid can make us hold at most BUS_CONNECTIONS_PER_UID such
 * messages at once (the unit's MemoryMax= is the backstop). */

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "base/macro.h"

#define BUS_INTERFACE "io.topod.Manager1"
#define BUS_PATH "/io/topod/Manager1"
#define BUS_SOCKET_NAME "bus"
#define BUS_CONNECTIONS_MAX 32u
#define BUS_CONNECTIONS_ROOT 4u
#define BUS_CONNECTIONS_PER_UID 4u
#define BUS_QUEUED_MAX 8u
#define BUS_REPLY_MAX (16u * 1024u * 1024u)

/* Errors beyond the standard org.freedesktop.DBus.Error.* ones. */
#define BUS_ERROR_NO_SUCH_PROCESS "io.topod.Error.NoSuchProcess"
#define BUS_ERROR_POLICY_REJECTED "io.topod.Error.PolicyRejected"
#define BUS_ERROR_NOT_READY "io.topod.Error.NotReady"

typedef enum BusMethod {
        BUS_METHOD_EXPLAIN,
        BUS_METHOD_STATUS,
        BUS_METHOD_PLAN,
        BUS_METHOD_RELOAD,
        BUS_METHOD_RESET,
        _BUS_METHOD_MAX,
} BusMethod;

typedef struct BusCall {
        BusMethod method;
        uid_t uid; /* the peer, from SO_PEERCRED */
        pid_t peer_pid;
        pid_t pid; /* Explain's argument */
        bool json;
} BusCall;

/* Answer a call: 0 with the reply text, or a negative errno with an error
 * text (and, optionally, a D-Bus error name; NULL picks one from the
 * errno). */
typedef int (*BusHandler)(void *userdata, const BusCall *call, char **ret_text, char **ret_error,
                          const char **ret_error_name);

typedef struct BusServer BusServer;

/* Listen on path (the socket file is replaced; mode 0666: rights are
 * checked per call). */
int bus_server_new(sd_event *e, const char *path, BusHandler handler, void *userdata, BusServer **ret);
BusServer *bus_server_free(BusServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(BusServer *, bus_server_free);

unsigned bus_server_connections(const BusServer *s);
const char *bus_method_to_string(BusMethod m);
