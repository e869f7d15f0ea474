/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topod's bus protocol, as both ends spell it: the daemon's server
 * (src/topod/bus.c) and topoctl's client. sd-bus, peer to peer, on a
 * private unix socket (no bus daemon), BUS_SOCKET_NAME in the state
 * directory. One object, BUS_PATH, with one interface, BUS_INTERFACE:
 *
 *   Explain(u pid, b json) → s   every thread of a process (or one thread)
 *   Status(b json)         → s   the daemon's state and the kernel's
 *   Plan(b json)           → s   the plan in force and the last apply
 *   Reload(b json)         → s   re-read topod.conf and the policies, all or nothing
 *   Reset(b json)          → s   put everything back and pause (Reload resumes)
 *   Metrics(b json)        → s   the Prometheus exposition (or JSON) topod's metrics_file holds
 *
 * Replies are the text or JSON topoctl prints, so every client sees the
 * same answer, and `busctl --address=unix:path=/run/topod/bus` can call
 * them by hand. Rights come from the peer's SO_PEERCRED: anyone may read;
 * only uid 0 may Reload or Reset. Its own file so that the client needs
 * nothing of the server. */

#define BUS_INTERFACE "io.topod.Manager1"
#define BUS_PATH "/io/topod/Manager1"
#define BUS_SOCKET_NAME "bus"
/* Beside it, root's own socket (mode 0600): the same server, whose
 * backlog no other user can fill. topoctl run as root connects there. */
#define BUS_ROOT_SOCKET_SUFFIX "-root"

/* Errors beyond the standard org.freedesktop.DBus.Error.* ones. */
#define BUS_ERROR_PREFIX "io.topod.Error"
#define BUS_ERROR_NO_SUCH_PROCESS BUS_ERROR_PREFIX ".NoSuchProcess"
#define BUS_ERROR_POLICY_REJECTED BUS_ERROR_PREFIX ".PolicyRejected"
#define BUS_ERROR_NOT_READY BUS_ERROR_PREFIX ".NotReady"

typedef enum BusMethod {
        BUS_METHOD_EXPLAIN,
        BUS_METHOD_STATUS,
        BUS_METHOD_PLAN,
        BUS_METHOD_RELOAD,
        BUS_METHOD_RESET,
        BUS_METHOD_METRICS,
        _BUS_METHOD_MAX,
} BusMethod;

/* The method's name on the bus ("Explain", …); NULL for no method. */
const char *bus_method_to_string(BusMethod m);
