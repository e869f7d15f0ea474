/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The systemd driver's calls over the system bus with sd-bus: the real
 * UnitOps. Its own file: the rest of the driver (unit-apply.c,
 * unit-restore.c) decides and reports against the ops alone, so that its
 * unit tests run with a fake and no bus.
 *
 * Who may call (systemd 252): StartTransientUnit, SetUnitProperties,
 * AttachProcessesToUnit and StopUnit check the caller with
 * bus_verify_manage_units_async_full() (src/core/dbus-unit.c,
 * dbus-manager.c) → bus_verify_polkit_async() (src/shared/bus-polkit.c)
 * → sd_bus_query_sender_privilege(call, CAP_SYS_ADMIN): granted when the
 * sender's effective capabilities, as the bus reports them, hold
 * CAP_SYS_ADMIN, or, where the capabilities are not known, when its uid is
 * systemd's (0). dbus-daemon reports no capabilities (sd-bus does not
 * augment them from /proc for authorization), so on the system bus root
 * is enough, with any capability set; without polkit anything else is
 * -EACCES ("Access denied"). AttachProcessesToUnit refuses a target
 * without Delegate=yes (-EINVAL) and processes of another user when the
 * caller is not root. Reading properties needs nothing. */
#include "apply/unit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "base/unit-name.h"
#include "base/util.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
/* A call systemd does not answer in this long failed (a PID 1 that is
 * busy starting units answers late, never this late). */
#define UNIT_BUS_TIMEOUT_USEC (10u * 1000000u)

struct UnitBus {
        sd_bus *bus;
        uint64_t calls;
        char error[256];
};

int unit_bus_open(UnitBus **ret) {
        UnitBus *b = calloc(1, sizeof(UnitBus));
        int k;

        if (!b)
                return -ENOMEM;
        if ((k = sd_bus_open_system(&b->bus)) < 0) {
                free(b);
                return k;
        }
        *ret = b;
        return 0;
}

UnitBus *unit_bus_free(UnitBus *b) {
        if (!b)
                return NULL;
        sd_bus_flush_close_unref(b->bus);
        free(b);
        return NULL;
}

uint64_t unit_bus_calls(const UnitBus *b) {
        return b ? b->calls : 0;
}

static int call(UnitBus *b, sd_bus_message *m, sd_bus_message **reply) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        int k;

        b->calls++;
        k = sd_bus_call(b->bus, m, UNIT_BUS_TIMEOUT_USEC, &e, reply);
        if (k < 0)
                snprintf(b->error, sizeof(b->error), "%s", e.message ?: e.name ?: strerror(-k));
        sd_bus_error_free(&e);
        return k < 0 ? k : 0;
}

static int new_call(UnitBus *b, const char *method, sd_bus_message **ret) {
        return sd_bus_message_new_method_call(b->bus, ret, SD_DEST, SD_PATH, SD_MANAGER, method);
}

static int append_bytes_prop(sd_bus_message *m, const char *name, const char *list) {
        _cleanup_free_ uint8_t *bytes = NULL;
        size_t n = 0;
        int k;

        if ((k = unit_list_to_bytes(list, &bytes, &n)) < 0)
                return k;
        if ((k = sd_bus_message_open_container(m, 'r', "sv")) < 0 || (k = sd_bus_message_append(m, "s", name)) < 0 ||
            (k = sd_bus_message_open_container(m, 'v', "ay")) < 0 ||
            (k = sd_bus_message_append_array(m, 'y', bytes ? (const void *) bytes : (const void *) "", n)) < 0 ||
            (k = sd_bus_message_close_container(m)) < 0)
                return k;
        return sd_bus_message_close_container(m);
}

static int append_values(sd_bus_message *m, const UnitValues *v) {
        int k;

        for (UnitProperty p = 0; p < _UNIT_PROP_MAX; p++) {
                if (!v->v[p])
                        continue;
                if (p == UNIT_PROP_WEIGHT) {
                        uint64_t w = UINT64_MAX; /* "not set" */

                        if (*v->v[p] && !parse_u64_decimal(v->v[p], 10000, &w))
                                return -EINVAL;
                        k = sd_bus_message_append(m, "(sv)", "CPUWeight", "t", w);
                } else
                        k = append_bytes_prop(m, unit_property_name(p), v->v[p]);
                if (k < 0)
                        return k;
        }
        return 0;
}

static int bus_start_slice(void *userdata, const char *name, const UnitValues *v) {
        UnitBus *b = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        int k;

        if ((k = new_call(b, "StartTransientUnit", &m)) < 0 || (k = sd_bus_message_append(m, "ss", name, "fail")) < 0 ||
            (k = sd_bus_message_open_container(m, 'a', "(sv)")) < 0 ||
            (k = sd_bus_message_append(m, "(sv)", "Description", "s", "topod group")) < 0 ||
            (k = append_values(m, v)) < 0 || (k = sd_bus_message_close_container(m)) < 0 ||
            (k = sd_bus_message_append(m, "a(sa(sv))", 0)) < 0)
                return k;
        return call(b, m, &reply);
}

static int bus_start_scope(void *userdata, const char *name, const char *slice, const pid_t *pids, size_t n) {
        UnitBus *b = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        int k;

        if ((k = new_call(b, "StartTransientUnit", &m)) < 0 || (k = sd_bus_message_append(m, "ss", name, "fail")) < 0 ||
            (k = sd_bus_message_open_container(m, 'a', "(sv)")) < 0 ||
            (k = sd_bus_message_append(m, "(sv)(sv)(sv)", "Description", "s", "placed by topod", "Slice", "s", slice,
                                       "CollectMode", "s", "inactive-or-failed")) < 0 ||
            (k = sd_bus_message_open_container(m, 'r', "sv")) < 0 || (k = sd_bus_message_append(m, "s", "PIDs")) < 0 ||
            (k = sd_bus_message_open_container(m, 'v', "au")) < 0 ||
            (k = sd_bus_message_open_container(m, 'a', "u")) < 0)
                return k;
        for (size_t i = 0; i < n; i++)
                if ((k = sd_bus_message_append(m, "u", (uint32_t) pids[i])) < 0)
                        return k;
        if ((k = sd_bus_message_close_container(m)) < 0 || (k = sd_bus_message_close_container(m)) < 0 ||
            (k = sd_bus_message_close_container(m)) < 0 || (k = sd_bus_message_close_container(m)) < 0 ||
            (k = sd_bus_message_append(m, "a(sa(sv))", 0)) < 0)
                return k;
        return call(b, m, &reply);
}

static int bus_set_properties(void *userdata, const char *unit, const UnitValues *v) {
        UnitBus *b = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        int k;

        if ((k = new_call(b, "SetUnitProperties", &m)) < 0 || (k = sd_bus_message_append(m, "sb", unit, 1)) < 0 ||
            (k = sd_bus_message_open_container(m, 'a', "(sv)")) < 0 || (k = append_values(m, v)) < 0 ||
            (k = sd_bus_message_close_container(m)) < 0)
                return k;
        return call(b, m, &reply);
}

static const char *type_interface(const char *unit) {
        switch (unit_name_type(unit, strlen(unit))) {
        case UNIT_TYPE_SERVICE:
                return "org.freedesktop.systemd1.Service";
        case UNIT_TYPE_SCOPE:
                return "org.freedesktop.systemd1.Scope";
        case UNIT_TYPE_SLICE:
                return "org.freedesktop.systemd1.Slice";
        default:
                return NULL;
        }
}

static int bus_get_property(void *userdata, const char *unit, UnitProperty p, char **ret) {
        UnitBus *b = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_free_ char *path = NULL;
        const char *iface = type_interface(unit);
        int k;

        if (!iface)
                return -EINVAL;
        if ((k = sd_bus_path_encode(SD_PATH "/unit", unit, &path)) < 0 ||
            (k = sd_bus_message_new_method_call(b->bus, &m, SD_DEST, path, "org.freedesktop.DBus.Properties", "Get")) < 0 ||
            (k = sd_bus_message_append(m, "ss", iface, unit_property_name(p))) < 0 || (k = call(b, m, &reply)) < 0)
                return k;
        if (p == UNIT_PROP_WEIGHT) {
                uint64_t w;
                char buf[21];

                if ((k = sd_bus_message_read(reply, "v", "t", &w)) < 0)
                        return k;
                if (w == UINT64_MAX)
                        buf[0] = '\0';
                else
                        (void) format_u64(buf, w);
                *ret = strdup(buf);
                return *ret ? 0 : -ENOMEM;
        } else {
                const void *bytes = NULL;
                size_t n = 0;

                if ((k = sd_bus_message_enter_container(reply, 'v', "ay")) < 0 ||
                    (k = sd_bus_message_read_array(reply, 'y', &bytes, &n)) < 0)
                        return k;
                return unit_bytes_to_list(bytes, n, ret);
        }
}

static int bus_attach(void *userdata, const char *unit, const pid_t *pids, size_t n) {
        UnitBus *b = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        int k;

        if ((k = new_call(b, "AttachProcessesToUnit", &m)) < 0 || (k = sd_bus_message_append(m, "ss", unit, "")) < 0 ||
            (k = sd_bus_message_open_container(m, 'a', "u")) < 0)
                return k;
        for (size_t i = 0; i < n; i++)
                if ((k = sd_bus_message_append(m, "u", (uint32_t) pids[i])) < 0)
                        return k;
        if ((k = sd_bus_message_close_container(m)) < 0)
                return k;
        return call(b, m, &reply);
}

static int bus_stop(void *userdata, const char *unit) {
        UnitBus *b = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        int k;

        if ((k = new_call(b, "StopUnit", &m)) < 0 || (k = sd_bus_message_append(m, "ss", unit, "fail")) < 0)
                return k;
        return call(b, m, &reply);
}

static const char *bus_last_error(void *userdata) {
        UnitBus *b = userdata;

        return b->error[0] ? b->error : NULL;
}

UnitOps unit_bus_ops(UnitBus *b) {
        return (UnitOps) {
                .start_slice = bus_start_slice,
                .start_scope = bus_start_scope,
                .set_properties = bus_set_properties,
                .get_property = bus_get_property,
                .attach = bus_attach,
                .stop = bus_stop,
                .last_error = bus_last_error,
                .userdata = b,
        };
}
