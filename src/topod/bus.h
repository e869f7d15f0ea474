/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topod's side of its bus (the protocol, the names both ends use, is
 * common/bus-protocol.h): the server, and what it bounds.
 *
 * What a local user can make the daemon hold or spend is bounded, before
 * sd-bus sees a byte (the server reads each socket itself and passes only
 * what bus-feed.h lets through):
 *   - connections: BUS_CONNECTIONS_PER_UID per uid other than root and
 *     BUS_CONNECTIONS_MAX in all, BUS_CONNECTIONS_ROOT of them kept for
 *     root (whose new connection drops the oldest one when all are
 *     taken); the backlog is emptied at each wake-up; a handshake not
 *     done in BUS_AUTH_USEC is dropped;
 *   - memory: one message at most BUS_FEED_MESSAGE_MAX (64 KiB, checked
 *     from its header), read BUS_READ_SIZE bytes at a time; replies by
 *     BUS_REPLY_MAX; unread replies by BUS_QUEUED_MAX per connection (more,
 *     and it is dropped);
 *   - descriptors: none accepted (SO_PASSRIGHTS off, fd negotiation
 *     refused); any that arrive anyway are closed off the main loop
 *     (bus-closer.h), the connection dropped and its uid refused for
 *     BUS_BAN_USEC;
 *   - time: BUS_CALLS_PER_SECOND calls per second per uid other than
 *     root; past that its connections are not read until the next second
 *     (the calls wait in the kernel's socket buffer, costing us nothing). */

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
#define BUS_CALLS_PER_SECOND 20u
#define BUS_AUTH_USEC (5u * 1000000u)
#define BUS_BAN_USEC (60u * 1000000u)
#define BUS_BANS_MAX 8u
#define BUS_READ_SIZE 4096u
#define BUS_READS_PER_WAKEUP 4u
#define BUS_PROCESS_MAX 64u
#define BUS_RIGHTS_MAX 253u /* SCM_MAX_FD: all one message can carry */

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
 * checked per call, and the bounds above hold for every peer). */
int bus_server_new(sd_event *e, const char *path, BusHandler handler, void *userdata, BusServer **ret);
BusServer *bus_server_free(BusServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(BusServer *, bus_server_free);

unsigned bus_server_connections(const BusServer *s);

