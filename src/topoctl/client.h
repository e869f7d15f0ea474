/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topoctl's side of topod's socket (the protocol: common/bus-protocol.h):
 * connect, call one method, hand back the reply text or the error. */

#include <stdbool.h>
#include <sys/types.h>

#include "base/macro.h"
#include "common/bus-protocol.h"

typedef struct Client Client;

/* Connect to the daemon's socket in state_dir (NULL: run/topod below root).
 * -ENOENT / -ECONNREFUSED when no daemon listens, another negative errno
 * when one may listen but cannot be reached; ret_reason says which in one
 * line. */
int client_open(const char *root, const char *state_dir, Client **ret, char **ret_reason);
Client *client_free(Client *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Client *, client_free);

/* Call method (Explain takes pid). 0 and the reply, or a negative errno
 * and the error's name and message (either may be NULL). */
int client_call(Client *c, BusMethod method, pid_t pid, bool json, char **ret_text, char **ret_error_name,
                char **ret_error_message);
