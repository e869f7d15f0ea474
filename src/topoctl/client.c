/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* topoctl's bus client (see client.h). */
#include "client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

#include "base/root.h"
#include "base/util.h"
#include "common/bus-protocol.h"
#include "common/state-dir.h"

/* How long a client waits for room in the daemon's backlog. */
#define CLIENT_CONNECT_USEC (5u * 1000000u)

struct Client {
        sd_bus *bus;
};

Client *client_free(Client *c) {
        if (!c)
                return NULL;
        sd_bus_flush_close_unref(c->bus);
        free(c);
        return NULL;
}

/* Connect to path, waiting up to CLIENT_CONNECT_USEC for room in the
 * daemon's listen backlog: other local users can fill it (each such
 * connection is accepted and closed at once), and a nonblocking connect()
 * would fail at once with EAGAIN. A blocking connect() with a send
 * timeout waits in the kernel for the daemon to accept, and gives up with
 * EAGAIN when the time is out. */
static int connect_bounded(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = CLIENT_CONNECT_USEC / 1000000, .tv_usec = CLIENT_CONNECT_USEC % 1000000 };
        int fd, k;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path));
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
            connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                k = errno == EINPROGRESS ? -EAGAIN : -errno;
                close(fd);
                return k;
        }
        tv = (struct timeval) {};
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        return fd;
}

int client_open(const char *root_dir, const char *state_dir, Client **ret, char **ret_reason) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_free_ char *dir = NULL, *path = NULL;
        _cleanup_(client_freep) Client *c = NULL;
        int k, fd;

        if ((k = root_open(root_dir, &root)) < 0 || (k = state_dir_path(state_dir, root, &dir)) < 0) {
                (void) asprintf(ret_reason, "cannot open the root %s: %s", root_dir ?: "/", strerror(-k));
                return k;
        }
        c = calloc(1, sizeof(*c));
        if (!c || asprintf(&path, "%s/" BUS_SOCKET_NAME, dir) < 0)
                return -ENOMEM;
        /* root: its own socket, which no other user can fill (absent: an
         * older daemon, the common one) */
        fd = k = -ENOENT;
        if (geteuid() == 0) {
                _cleanup_free_ char *root_path = strjoin(path, BUS_ROOT_SOCKET_SUFFIX);

                fd = k = root_path ? connect_bounded(root_path) : -ENOMEM;
        }
        if (k == -ENOENT || k == -ECONNREFUSED)
                fd = k = connect_bounded(path);
        if (k >= 0 && (k = sd_bus_new(&c->bus)) < 0)
                close(fd);
        if (k >= 0 && (k = sd_bus_set_fd(c->bus, fd, fd)) < 0)
                close(fd);
        if (k < 0 || (k = sd_bus_set_description(c->bus, "topod")) < 0 || (k = sd_bus_start(c->bus)) < 0) {
                /* Only these mean no daemon listens; EAGAIN (a full
                 * backlog), EACCES and the rest mean one may well run. */
                (void) asprintf(ret_reason, "%s (cannot connect to %s/" BUS_SOCKET_NAME ": %s)",
                                k == -ENOENT || k == -ECONNREFUSED ? "topod is not running" : "topod cannot be reached",
                                dir, strerror(-k));
                return k;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

int client_call(Client *c, BusMethod method, pid_t pid, bool json, char **ret_text, char **ret_error_name,
                char **ret_error_message) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *name = bus_method_to_string(method), *text;
        int k;

        if (method == BUS_METHOD_EXPLAIN)
                k = sd_bus_call_method(c->bus, NULL, BUS_PATH, BUS_INTERFACE, name, &error, &reply, "ub", (uint32_t) pid,
                                       (int) json);
        else
                k = sd_bus_call_method(c->bus, NULL, BUS_PATH, BUS_INTERFACE, name, &error, &reply, "b", (int) json);
        if (k < 0) {
                *ret_error_name = error.name ? strdup(error.name) : NULL;
                *ret_error_message = strdup(error.message ?: strerror(-k));
                return k;
        }
        if ((k = sd_bus_message_read(reply, "s", &text)) < 0)
                return k;
        *ret_text = strdup(text);
        return *ret_text ? 0 : -ENOMEM;
}
