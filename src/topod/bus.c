/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-id128.h>

#include "base/escape.h"

typedef struct BusConnection {
        sd_bus *bus;
        bool doomed;     /* its peer does not read its replies: dropped soon */
        uid_t uid;
        pid_t pid;
        uint64_t serial; /* accept order: the smallest is the oldest */
} BusConnection;

struct BusServer {
        sd_event *event;
        sd_event_source *listener;
        sd_event_source *reaper; /* drops doomed connections, outside their callbacks */
        int fd;
        char *path;
        BusHandler handler;
        void *userdata;
        BusConnection conns[BUS_CONNECTIONS_MAX];
        unsigned n_conns;
        uint64_t accepted;
};

unsigned bus_server_connections(const BusServer *s) {
        return s ? s->n_conns : 0;
}

static void connection_drop(BusServer *s, unsigned i) {
        BusConnection *c = &s->conns[i];

        /* flush: a reply queued just before the peer went away is lost
         * anyway; close without blocking */
        sd_bus_close(c->bus);
        sd_bus_unref(c->bus);
        s->conns[i] = s->conns[--s->n_conns];
        s->conns[s->n_conns] = (BusConnection) {};
}

static BusServer *server_of(sd_bus_message *m, void *userdata, BusConnection **ret) {
        BusServer *s = userdata;
        sd_bus *bus = sd_bus_message_get_bus(m);

        *ret = NULL;
        for (unsigned i = 0; i < s->n_conns; i++)
                if (s->conns[i].bus == bus)
                        *ret = &s->conns[i];
        return s;
}

static int on_disconnected(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusServer *s = userdata;
        sd_bus *bus = sd_bus_message_get_bus(m);

        (void) error;
        for (unsigned i = 0; i < s->n_conns; i++)
                if (s->conns[i].bus == bus) {
                        connection_drop(s, i);
                        break;
                }
        return 0;
}

static const char *error_name_for(int error) {
        switch (error) {
        case -EPERM:
        case -EACCES:
                return SD_BUS_ERROR_ACCESS_DENIED;
        case -ESRCH:
                return BUS_ERROR_NO_SUCH_PROCESS;
        case -EAGAIN:
                return BUS_ERROR_NOT_READY;
        case -EINVAL:
                return SD_BUS_ERROR_INVALID_ARGS;
        default:
                return SD_BUS_ERROR_FAILED;
        }
}

static int dispatch(sd_bus_message *m, void *userdata, sd_bus_error *error, BusMethod method) {
        BusConnection *c;
        BusServer *s = server_of(m, userdata, &c);
        _cleanup_free_ char *text = NULL, *message = NULL;
        const char *name = NULL;
        BusCall call = { .method = method, .uid = (uid_t) -1, .peer_pid = -1 };
        uint32_t pid = 0;
        int json = 0, k;

        if (!c)
                return sd_bus_error_set(error, SD_BUS_ERROR_FAILED, "unknown connection");
        {
                /* A peer that sends calls and does not read the replies
                 * would have them pile up in our memory: cut it off. */
                uint64_t queued = 0;

                if (sd_bus_get_n_queued_write(c->bus, &queued) >= 0 && queued >= BUS_QUEUED_MAX) {
                        c->doomed = true;
                        (void) sd_event_source_set_enabled(s->reaper, SD_EVENT_ONESHOT);
                        return sd_bus_error_set(error, SD_BUS_ERROR_LIMITS_EXCEEDED, "replies not read: disconnecting");
                }
        }
        call.uid = c->uid;
        call.peer_pid = c->pid;
        k = method == BUS_METHOD_EXPLAIN ? sd_bus_message_read(m, "ub", &pid, &json) : sd_bus_message_read(m, "b", &json);
        if (k < 0)
                return k;
        call.pid = (pid_t) pid;
        call.json = json;
        if (method == BUS_METHOD_EXPLAIN && (pid == 0 || pid > INT32_MAX))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "not a process id: %" PRIu32, pid);
        if ((method == BUS_METHOD_RELOAD || method == BUS_METHOD_RESET) && c->uid != 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "%s changes the machine: only root may call it (you are uid %u)",
                                         bus_method_to_string(method), (unsigned) c->uid);

        k = s->handler(s->userdata, &call, &text, &message, &name);
        if (k < 0) {
                /* A D-Bus string must be valid UTF-8: a policy's bad byte
                 * in a file:line message would make the error unsendable
                 * (and the caller wait for its timeout). */
                _cleanup_free_ char *safe = escape_string(message ?: strerror(-k), ESCAPE_CONTROL | ESCAPE_KEEP_NEWLINE);

                return sd_bus_error_set(error, name ?: error_name_for(k), safe ?: "out of memory");
        }
        if (text && strlen(text) > BUS_REPLY_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED, "the reply would be %zu bytes, over %u",
                                         strlen(text), BUS_REPLY_MAX);
        {
                _cleanup_free_ char *safe = escape_string(text ?: "", ESCAPE_CONTROL | ESCAPE_KEEP_NEWLINE);

                if (!safe)
                        return -ENOMEM;
                return sd_bus_reply_method_return(m, "s", safe);
        }
}

static int m_explain(sd_bus_message *m, void *u, sd_bus_error *e) { return dispatch(m, u, e, BUS_METHOD_EXPLAIN); }
static int m_status(sd_bus_message *m, void *u, sd_bus_error *e) { return dispatch(m, u, e, BUS_METHOD_STATUS); }
static int m_plan(sd_bus_message *m, void *u, sd_bus_error *e) { return dispatch(m, u, e, BUS_METHOD_PLAN); }
static int m_reload(sd_bus_message *m, void *u, sd_bus_error *e) { return dispatch(m, u, e, BUS_METHOD_RELOAD); }
static int m_reset(sd_bus_message *m, void *u, sd_bus_error *e) { return dispatch(m, u, e, BUS_METHOD_RESET); }

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_NAMES("Explain", "ub", SD_BUS_PARAM(pid) SD_BUS_PARAM(json), "s", SD_BUS_PARAM(reply),
                                 m_explain, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Status", "b", SD_BUS_PARAM(json), "s", SD_BUS_PARAM(reply), m_status,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Plan", "b", SD_BUS_PARAM(json), "s", SD_BUS_PARAM(reply), m_plan,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Reload", "b", SD_BUS_PARAM(json), "s", SD_BUS_PARAM(reply), m_reload,
                                 SD_BUS_VTABLE_UNPRIVILEGED), /* checked in dispatch(): uid 0 only */
        SD_BUS_METHOD_WITH_NAMES("Reset", "b", SD_BUS_PARAM(json), "s", SD_BUS_PARAM(reply), m_reset,
                                 SD_BUS_VTABLE_UNPRIVILEGED), /* likewise */
        SD_BUS_VTABLE_END,
};

/* cred: the peer's identity, the socket's (SO_PEERCRED), taken once at
 * accept: what it says in the D-Bus handshake must agree (sd-bus checks). */
static int connection_start(BusServer *s, int fd, const struct ucred *cred, BusConnection *c) {
        sd_id128_t id;
        int k;

        c->uid = cred->uid;
        c->pid = cred->pid;
        if ((k = sd_id128_randomize(&id)) < 0 || (k = sd_bus_new(&c->bus)) < 0)
                return k;
        if ((k = sd_bus_set_fd(c->bus, fd, fd)) < 0 ||
            (k = sd_bus_set_server(c->bus, 1, id)) < 0 ||
            (k = sd_bus_set_description(c->bus, "topoctl")) < 0 ||
            (k = sd_bus_add_object_vtable(c->bus, NULL, BUS_PATH, BUS_INTERFACE, manager_vtable, s)) < 0 ||
            (k = sd_bus_match_signal(c->bus, NULL, "org.freedesktop.DBus.Local",
                                     "/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local", "Disconnected",
                                     on_disconnected, s)) < 0 ||
            (k = sd_bus_start(c->bus)) < 0 ||
            (k = sd_bus_attach_event(c->bus, s->event, SD_EVENT_PRIORITY_NORMAL)) < 0)
                return k;
        c->serial = ++s->accepted;
        return 0;
}

static unsigned count_uid(const BusServer *s, uid_t uid) {
        unsigned n = 0;

        for (unsigned i = 0; i < s->n_conns; i++)
                n += s->conns[i].uid == uid;
        return n;
}

/* Room for a connection of uid: root always gets one (the oldest other
 * connection goes), others within BUS_CONNECTIONS_PER_UID each and short of
 * the slots kept for root. */
static bool make_room(BusServer *s, uid_t uid) {
        unsigned oldest = UINT_MAX;

        if (uid != 0 && (count_uid(s, uid) >= BUS_CONNECTIONS_PER_UID ||
                         s->n_conns >= BUS_CONNECTIONS_MAX - BUS_CONNECTIONS_ROOT))
                return false;
        if (s->n_conns < BUS_CONNECTIONS_MAX)
                return true;
        for (unsigned i = 0; i < s->n_conns; i++)
                if (oldest == UINT_MAX || s->conns[i].serial < s->conns[oldest].serial)
                        oldest = i;
        connection_drop(s, oldest);
        return true;
}

static int on_reap(sd_event_source *es, void *userdata) {
        BusServer *s = userdata;

        (void) es;
        for (unsigned i = s->n_conns; i-- > 0;)
                if (s->conns[i].doomed)
                        connection_drop(s, i);
        return 0;
}

static int on_accept(sd_event_source *es, int lfd, uint32_t revents, void *userdata) {
        BusServer *s = userdata;

        (void) es;
        (void) revents;
        /* Take the whole backlog at each wake-up, so that a peer that
         * only connects cannot keep it full for the others. */
        for (unsigned n = 0; n < 4 * BUS_CONNECTIONS_MAX; n++) {
                BusConnection c = {};
                struct ucred cred = {};
                socklen_t len = sizeof(cred);
                int fd, k;

                fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0)
                        return 0; /* EAGAIN: done; or a peer gone before we took it */
                if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || !make_room(s, cred.uid)) {
                        close(fd);
                        continue;
                }
                k = connection_start(s, fd, &cred, &c);
                if (k < 0) {
                        if (c.bus)
                                sd_bus_close_unref(c.bus); /* closes fd too */
                        else
                                close(fd);
                        continue;
                }
                s->conns[s->n_conns++] = c;
        }
        return 0;
}

int bus_server_new(sd_event *e, const char *path, BusHandler handler, void *userdata, BusServer **ret) {
        _cleanup_(bus_server_freep) BusServer *s = NULL;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int k;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->fd = -1;
        s->event = sd_event_ref(e);
        s->handler = handler;
        s->userdata = userdata;
        if (!(s->path = strdup(path)))
                return -ENOMEM;
        memcpy(sa.sun_path, path, strlen(path));
        s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (s->fd < 0)
                return -errno;
        (void) unlink(path);
        {
                /* Anyone may connect; each call checks the caller. */
                mode_t old = umask(0111);

                k = bind(s->fd, (struct sockaddr *) &sa, sizeof(sa));
                umask(old);
        }
        if (k < 0 || listen(s->fd, SOMAXCONN) < 0)
                return -errno;
        if ((k = sd_event_add_io(e, &s->listener, s->fd, EPOLLIN, on_accept, s)) < 0 ||
            (k = sd_event_add_defer(e, &s->reaper, on_reap, s)) < 0 ||
            (k = sd_event_source_set_enabled(s->reaper, SD_EVENT_OFF)) < 0)
                return k;
        *ret = TAKE_PTR(s);
        return 0;
}

BusServer *bus_server_free(BusServer *s) {
        if (!s)
                return NULL;
        while (s->n_conns > 0)
                connection_drop(s, s->n_conns - 1);
        sd_event_source_disable_unref(s->listener);
        sd_event_source_disable_unref(s->reaper);
        if (s->fd >= 0) {
                close(s->fd);
                (void) unlink(s->path);
        }
        free(s->path);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}
