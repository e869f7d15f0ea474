/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-id128.h>

#include "base/escape.h"
#include "bus-closer.h"
#include "bus-feed.h"

#ifndef SO_PASSRIGHTS
#define SO_PASSRIGHTS 83
#endif

typedef struct BusConnection {
        BusServer *server;
        sd_bus *bus;
        sd_event_source *io; /* the client's socket: we read it, sd-bus writes it */
        int fd;              /* that socket (sd-bus's output: closed with the bus) */
        int feed_fd;         /* our end of the pair sd-bus reads (bus-feed.h) */
        int bus_in_fd;       /* sd-bus's end, until sd-bus owns it */
        BusFeed feed;
        bool doomed;         /* cut off: dropped soon, outside its callbacks */
        bool throttled;      /* its uid's calls this second are used up: not read */
        uid_t uid;
        pid_t pid;
        uint64_t serial;     /* accept order: the smallest is the oldest */
        uint64_t accepted_usec;
        uint64_t calls_before; /* feed.calls when this second began */
} BusConnection;

typedef struct BusBan {
        uid_t uid;
        uint64_t until_usec;
} BusBan;

typedef struct BusListener {
        int fd;
        char *path;
        sd_event_source *source;
} BusListener;

struct BusServer {
        sd_event *event;
        BusListener listeners[2]; /* anyone's socket, root's socket */
        sd_event_source *reaper; /* drops doomed connections, outside their callbacks */
        sd_event_source *tick;   /* each second while connections live: rates, timeouts */
        BusCloser *closer;
        BusHandler handler;
        void *userdata;
        BusConnection *conns[BUS_CONNECTIONS_MAX];
        unsigned n_conns;
        uint64_t accepted;
        BusBan bans[BUS_BANS_MAX]; /* uids that passed descriptors, kept out a while */
};

/* CLOCK_MONOTONIC, as the event loop's timers count. */
static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

unsigned bus_server_connections(const BusServer *s) {
        return s ? s->n_conns : 0;
}


static BusConnection *connection_free(BusConnection *c) {
        if (!c)
                return NULL;
        sd_event_source_disable_unref(c->io);
        if (c->bus) {
                /* closes both of its descriptors, the client's socket and
                 * its end of the pair; a reply queued just before the peer
                 * went away is lost anyway: no flush */
                sd_bus_close(c->bus);
                sd_bus_unref(c->bus);
        } else if (c->fd >= 0)
                close(c->fd);
        if (c->bus_in_fd >= 0)
                close(c->bus_in_fd);
        if (c->feed_fd >= 0)
                close(c->feed_fd);
        free(c);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(BusConnection *, connection_free);

static void connection_drop(BusServer *s, unsigned i) {
        connection_free(s->conns[i]);
        s->conns[i] = s->conns[--s->n_conns];
        s->conns[s->n_conns] = NULL;
}

static void connection_doom(BusConnection *c) {
        c->doomed = true;
        (void) sd_event_source_set_enabled(c->server->reaper, SD_EVENT_ONESHOT);
}

static BusServer *server_of(sd_bus_message *m, void *userdata, BusConnection **ret) {
        BusServer *s = userdata;
        sd_bus *bus = sd_bus_message_get_bus(m);

        *ret = NULL;
        for (unsigned i = 0; i < s->n_conns; i++)
                if (s->conns[i]->bus == bus)
                        *ret = s->conns[i];
        return s;
}

/* Dropped by the reaper: the callback runs inside sd_bus_process(). */
static int on_disconnected(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusConnection *c;

        (void) error;
        server_of(m, userdata, &c);
        if (c)
                connection_doom(c);
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
                        connection_doom(c);
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
static int m_metrics(sd_bus_message *m, void *u, sd_bus_error *e) { return dispatch(m, u, e, BUS_METHOD_METRICS); }

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
        SD_BUS_METHOD_WITH_NAMES("Metrics", "b", SD_BUS_PARAM(json), "s", SD_BUS_PARAM(reply), m_metrics,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

/* The bus daemon's Hello, answered so that a client that expects a bus
 * (busctl --address=..., whose sd-bus sends Hello first) gets a name and
 * goes on. */
static int m_hello(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusConnection *c;
        char name[32];

        (void) error;
        server_of(m, userdata, &c);
        snprintf(name, sizeof(name), ":1.%" PRIu64, c ? c->serial : 0);
        return sd_bus_reply_method_return(m, "s", name);
}

static const sd_bus_vtable hello_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Hello", "", "s", m_hello, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

/* The calls begun by uid's connections this second. */
static uint64_t uid_calls(const BusServer *s, uid_t uid) {
        uint64_t n = 0;

        for (unsigned i = 0; i < s->n_conns; i++)
                if (s->conns[i]->uid == uid)
                        n += s->conns[i]->feed.calls - s->conns[i]->calls_before;
        return n;
}

/* Descriptors in a message: to the closer, and the peer cut off. */
static void take_rights(BusConnection *c, struct msghdr *mh) {
        BusServer *s = c->server;
        unsigned slot = 0;

        for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm))
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
                        int fds[BUS_RIGHTS_MAX];
                        unsigned n = (unsigned) ((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));

                        n = n > BUS_RIGHTS_MAX ? BUS_RIGHTS_MAX : n;
                        memcpy(fds, CMSG_DATA(cm), n * sizeof(int));
                        bus_closer_take(s->closer, fds, n);
                }
        connection_doom(c);
        if (c->uid == 0)
                return;
        for (unsigned i = 1; i < BUS_BANS_MAX; i++)
                if (s->bans[i].uid == c->uid || s->bans[i].until_usec < s->bans[slot].until_usec)
                        slot = i;
        s->bans[slot] = (BusBan) { .uid = c->uid, .until_usec = now_usec() + BUS_BAN_USEC };
}

/* The connection's sd-bus server, made when the client's first bytes
 * came: a client that connects and closes (or never says anything) costs
 * an accept and a read, not a bus made and torn down. Nothing of sd-bus's
 * server side happens before the client speaks (it waits for the
 * handshake), so a bus made now behaves as one made at accept. */
static int connection_start_bus(BusConnection *c) {
        BusServer *s = c->server;
        int pair[2];
        sd_id128_t id;
        int k;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) < 0)
                return -errno;
        c->feed_fd = pair[0];
        c->bus_in_fd = pair[1];
        if ((k = sd_id128_randomize(&id)) < 0 || (k = sd_bus_new(&c->bus)) < 0)
                return k;
        if ((k = sd_bus_set_fd(c->bus, c->bus_in_fd, c->fd)) < 0)
                return k;
        c->bus_in_fd = -1; /* the bus's now, and fd with it */
        if ((k = sd_bus_set_server(c->bus, 1, id)) < 0 || (k = sd_bus_negotiate_fds(c->bus, false)) < 0 ||
            (k = sd_bus_set_description(c->bus, "topoctl")) < 0 ||
            (k = sd_bus_add_object_vtable(c->bus, NULL, BUS_PATH, BUS_INTERFACE, manager_vtable, s)) < 0 ||
            (k = sd_bus_add_object_vtable(c->bus, NULL, "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                          hello_vtable, s)) < 0 ||
            (k = sd_bus_match_signal(c->bus, NULL, "org.freedesktop.DBus.Local",
                                     "/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local", "Disconnected",
                                     on_disconnected, s)) < 0 ||
            (k = sd_bus_start(c->bus)) < 0)
                return k;
        return 0;
}

/* Read what the client sent (a bounded amount per wake-up), check it and
 * pass it on to sd-bus. */
static void connection_read(BusConnection *c) {
        BusServer *s = c->server;

        for (unsigned round = 0; round < BUS_READS_PER_WAKEUP && !c->doomed && !c->throttled; round++) {
                uint8_t in[BUS_READ_SIZE], out[BUS_FEED_OUT_MAX(BUS_READ_SIZE)];
                union {
                        struct cmsghdr align;
                        uint8_t buf[CMSG_SPACE(BUS_RIGHTS_MAX * sizeof(int))];
                } control = {};
                struct iovec iov = { .iov_base = in, .iov_len = sizeof(in) };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                                     .msg_controllen = sizeof(control) };
                size_t out_len = 0;
                ssize_t n;

                n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return;
                if (n < 0) {
                        connection_doom(c); /* and mh is as we made it: no control data to read */
                        return;
                }
                if (mh.msg_controllen > 0 || (mh.msg_flags & MSG_CTRUNC)) {
                        take_rights(c, &mh); /* fds were refused in the handshake */
                        return;
                }
                if (n > 0 && !c->bus && connection_start_bus(c) < 0) {
                        connection_doom(c);
                        return;
                }
                if (n <= 0 || bus_feed(&c->feed, in, (size_t) n, out, &out_len) < 0 ||
                    write(c->feed_fd, out, out_len) != (ssize_t) out_len) {
                        /* gone, not D-Bus, over the size limit, or sd-bus
                         * not reading a bounded backlog */
                        connection_doom(c);
                        return;
                }
                if (c->uid != 0 && uid_calls(s, c->uid) >= BUS_CALLS_PER_SECOND)
                        c->throttled = true;
                /* sd-bus reads it: one message at a time, all of them */
                for (unsigned i = 0; i < BUS_PROCESS_MAX && !c->doomed; i++) {
                        int k = sd_bus_process(c->bus, NULL);

                        if (k < 0)
                                connection_doom(c);
                        if (k <= 0)
                                break;
                }
        }
}

static void connection_update(BusConnection *c) {
        uint32_t events = c->throttled || c->doomed ? 0 : EPOLLIN;
        int e = c->bus ? sd_bus_get_events(c->bus) : 0;

        if (e > 0 && (e & POLLOUT))
                events |= EPOLLOUT;
        (void) sd_event_source_set_io_events(c->io, events);
}

static int on_io(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        BusConnection *c = userdata;

        (void) es;
        (void) fd;
        if (revents & EPOLLOUT && sd_bus_process(c->bus, NULL) < 0)
                connection_doom(c);
        if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))
                connection_read(c);
        connection_update(c);
        return 0;
}

/* cred: the peer's identity, the socket's (SO_PEERCRED), taken once at
 * accept; what it says in the D-Bus handshake is not used (bus-feed.h).
 * The connection counts against the limits from now on; its bus is made
 * when it first sends (connection_start_bus()). */
static int connection_start(BusServer *s, int fd, const struct ucred *cred, BusConnection *c) {
        c->server = s;
        c->fd = fd;
        c->uid = cred->uid;
        c->pid = cred->pid;
        c->serial = ++s->accepted;
        c->accepted_usec = now_usec();
        bus_feed_init(&c->feed, geteuid());
        return sd_event_add_io(s->event, &c->io, fd, EPOLLIN, on_io, c);
}

static unsigned count_uid(const BusServer *s, uid_t uid) {
        unsigned n = 0;

        for (unsigned i = 0; i < s->n_conns; i++)
                n += s->conns[i]->uid == uid;
        return n;
}

static bool banned(const BusServer *s, uid_t uid) {
        uint64_t now = now_usec();

        for (unsigned i = 0; i < BUS_BANS_MAX; i++)
                if (s->bans[i].until_usec > now && s->bans[i].uid == uid)
                        return true;
        return false;
}

/* Room for a connection of uid: root always gets one (the oldest other
 * connection goes), others within BUS_CONNECTIONS_PER_UID each and short of
 * the slots kept for root, unless they passed descriptors lately. */
static bool make_room(BusServer *s, uid_t uid) {
        unsigned oldest = UINT_MAX;

        if (uid != 0 && (count_uid(s, uid) >= BUS_CONNECTIONS_PER_UID ||
                         s->n_conns >= BUS_CONNECTIONS_MAX - BUS_CONNECTIONS_ROOT || banned(s, uid)))
                return false;
        if (s->n_conns < BUS_CONNECTIONS_MAX)
                return true;
        for (unsigned i = 0; i < s->n_conns; i++)
                if (oldest == UINT_MAX || s->conns[i]->serial < s->conns[oldest]->serial)
                        oldest = i;
        connection_drop(s, oldest);
        return true;
}

static int on_reap(sd_event_source *es, void *userdata) {
        BusServer *s = userdata;

        (void) es;
        for (unsigned i = s->n_conns; i-- > 0;)
                if (s->conns[i]->doomed)
                        connection_drop(s, i);
        return 0;
}

/* Each second while connections live: a new second of calls for every
 * uid (throttled connections are read again), and a connection still
 * not past its handshake after BUS_AUTH_USEC is dropped. */
static int on_tick(sd_event_source *es, uint64_t usec, void *userdata) {
        BusServer *s = userdata;

        (void) usec;
        for (unsigned i = 0; i < s->n_conns; i++) {
                BusConnection *c = s->conns[i];

                c->calls_before = c->feed.calls;
                if ((!c->bus || sd_bus_is_ready(c->bus) <= 0) && now_usec() - c->accepted_usec > BUS_AUTH_USEC)
                        connection_doom(c);
                if (c->throttled) {
                        c->throttled = false;
                        connection_read(c);
                        connection_update(c);
                }
        }
        on_reap(NULL, s);
        if (s->n_conns > 0) {
                (void) sd_event_source_set_time_relative(es, 1000000);
                (void) sd_event_source_set_enabled(es, SD_EVENT_ONESHOT);
        }
        return 0;
}

static int on_accept(sd_event_source *es, int lfd, uint32_t revents, void *userdata) {
        BusServer *s = userdata;
        (void) es;
        (void) revents;
        /* Take the whole backlog at each wake-up, so that a peer that
         * only connects cannot keep it full for the others. */
        for (unsigned n = 0; n < 4 * BUS_CONNECTIONS_MAX; n++) {
                _cleanup_(connection_freep) BusConnection *c = NULL;
                struct ucred cred = {};
                socklen_t len = sizeof(cred);
                int fd, off = 0;

                fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0)
                        return 0; /* EAGAIN: done; or a peer gone before we took it */
                /* A peer that closed before we took it (a connect/close
                 * loop on the backlog): nothing to read, nobody to answer,
                 * so no connection to make, register and reap. */
                {
                        char b;

                        if (recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
                                close(fd);
                                continue;
                        }
                }
                /* No descriptors may be sent to us at all, where the
                 * kernel can say so (Linux 6.16): the sender's sendmsg()
                 * fails; elsewhere take_rights() deals with them. */
                (void) setsockopt(fd, SOL_SOCKET, SO_PASSRIGHTS, &off, sizeof(off));
                if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || !make_room(s, cred.uid) ||
                    !(c = calloc(1, sizeof(*c)))) {
                        close(fd);
                        continue;
                }
                c->feed_fd = c->bus_in_fd = -1;
                if (connection_start(s, fd, &cred, c) < 0)
                        continue; /* freed with fd */
                s->conns[s->n_conns++] = TAKE_PTR(c);
                if (sd_event_source_get_enabled(s->tick, NULL) == 0) {
                        (void) sd_event_source_set_time_relative(s->tick, 1000000);
                        (void) sd_event_source_set_enabled(s->tick, SD_EVENT_ONESHOT);
                }
        }
        return 0;
}

/* Listen on path with the socket file's mode (umask: the bits cleared). */
static int listen_on(BusServer *s, BusListener *l, const char *path, mode_t umask_bits) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        mode_t old;
        int k;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        if (!(l->path = strdup(path)))
                return -ENOMEM;
        memcpy(sa.sun_path, path, strlen(path));
        l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (l->fd < 0)
                return -errno;
        (void) unlink(path);
        old = umask(umask_bits);
        k = bind(l->fd, (struct sockaddr *) &sa, sizeof(sa));
        umask(old);
        if (k < 0 || listen(l->fd, SOMAXCONN) < 0)
                return -errno;
        /* Refuse descriptors from the start: a connection's flags come
         * from its listener, and a client may send before we accept. */
        (void) setsockopt(l->fd, SOL_SOCKET, SO_PASSRIGHTS, &(int) { 0 }, sizeof(int));
        return sd_event_add_io(s->event, &l->source, l->fd, EPOLLIN, on_accept, s);
}

int bus_server_new(sd_event *e, const char *path, BusHandler handler, void *userdata, BusServer **ret) {
        _cleanup_(bus_server_freep) BusServer *s = NULL;
        _cleanup_free_ char *root_path = NULL;
        int k;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->listeners[0].fd = s->listeners[1].fd = -1;
        s->event = sd_event_ref(e);
        s->handler = handler;
        s->userdata = userdata;
        if (asprintf(&root_path, "%s" BUS_ROOT_SOCKET_SUFFIX, path) < 0)
                return -ENOMEM;
        /* Anyone may connect to path: what one uid can hold and cost is
         * bounded (bus.h), and each call checks the caller. Only root
         * reaches the other (mode 0600), so that no other user's
         * connections can fill its backlog. */
        if ((k = listen_on(s, &s->listeners[0], path, 0111)) < 0 ||
            (k = listen_on(s, &s->listeners[1], root_path, 0177)) < 0)
                return k;
        if ((k = sd_event_add_defer(e, &s->reaper, on_reap, s)) < 0 ||
            (k = sd_event_source_set_enabled(s->reaper, SD_EVENT_OFF)) < 0 ||
            (k = sd_event_add_time_relative(e, &s->tick, CLOCK_MONOTONIC, 1000000, 0, on_tick, s)) < 0 ||
            (k = sd_event_source_set_enabled(s->tick, SD_EVENT_OFF)) < 0 ||
 (k = bus_closer_new(&s->closer)) < 0)
                return k;
        *ret = TAKE_PTR(s);
        return 0;
}

BusServer *bus_server_free(BusServer *s) {
        if (!s)
                return NULL;
        while (s->n_conns > 0)
                connection_drop(s, s->n_conns - 1);
        for (size_t i = 0; i < ELEMENTSOF(s->listeners); i++) {
                BusListener *l = &s->listeners[i];

                sd_event_source_disable_unref(l->source);
                if (l->fd >= 0) {
                        close(l->fd);
                        (void) unlink(l->path);
                }
                free(l->path);
        }
        sd_event_source_disable_unref(s->reaper);
        sd_event_source_disable_unref(s->tick);
        bus_closer_free(s->closer);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}
