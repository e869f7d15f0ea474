/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* topoctl's bus client (see client.h). */
#include "client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "base/root.h"
#include "common/bus-protocol.h"
#include "common/state-dir.h"

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

int client_open(const char *root_dir, const char *state_dir, Client **ret, char **ret_reason) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_free_ char *dir = NULL, *address = NULL;
        _cleanup_(client_freep) Client *c = NULL;
        int k;

        if ((k = root_open(root_dir, &root)) < 0 || (k = state_dir_path(state_dir, root, &dir)) < 0) {
                (void) asprintf(ret_reason, "cannot open the root %s: %s", root_dir ?: "/", strerror(-k));
                return k;
        }
        c = calloc(1, sizeof(*c));
        if (!c || asprintf(&address, "unix:path=%s/" BUS_SOCKET_NAME, dir) < 0)
                return -ENOMEM;
        if ((k = sd_bus_new(&c->bus)) < 0 || (k = sd_bus_set_address(c->bus, address)) < 0 ||
            (k = sd_bus_set_description(c->bus, "topod")) < 0 || (k = sd_bus_start(c->bus)) < 0) {
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
