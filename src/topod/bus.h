/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topod's side of its bus (the protocol, the names both ends use, is
 * common/bus-protocol.h): the server, and what it bounds.
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
#include "common/bus-protocol.h"

#define BUS_CONNECTIONS_MAX 32u
#define BUS_CONNECTIONS_ROOT 4u
#define BUS_CONNECTIONS_PER_UID 4u
#define BUS_QUEUED_MAX 8u
#define BUS_REPLY_MAX (16u * 1024u * 1024u)

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
