/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "events.h"

#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

struct ProcEvents {
        int fd;      /* every event; split: EXEC and COMM only */
        int lazy_fd; /* split: FORK and EXIT; -EBADF when not split */
        bool blocking; /* fd made blocking by proc_events_wait_urgent() */
};

/* Receive buffer: each event costs the socket about 768 bytes (the
 * datagram's truesize), so 16 MiB holds some 20,000 — seven seconds of an
 * exec storm at 1,000 a second (fork, exec, exit each) while a pass holds
 * the loop. Lost events mean a full scan, which a storm makes long: the
 * margin keeps one slow pass from feeding the next. Memory is taken only
 * while events wait. */
#define PROC_EVENTS_RCVBUF (16u * 1024u * 1024u)

/* The kernel's per-socket filter (Linux 6.6: struct proc_input after the
 * op, a mask of enum proc_cn_event bits; older kernels ignore such a
 * request and never subscribe). */
#define PROC_MASK_FORK 0x00000001u
#define PROC_MASK_EXEC 0x00000002u
#define PROC_MASK_COMM 0x00000200u
#define PROC_MASK_EXIT 0x80000000u
/* How long a filtered subscription has to show that it works. */
#define PROC_EVENTS_PROBE_MS 100

/* mask 0: the plain request (every event). */
static int send_op(int fd, enum proc_cn_mcast_op op, uint32_t mask) {
        struct {
                struct nlmsghdr nl;
                struct cn_msg cn;
                uint32_t op;
                uint32_t mask;
        } __attribute__((packed)) req = {
                .nl.nlmsg_type = NLMSG_DONE,
                .cn.id.idx = CN_IDX_PROC,
                .cn.id.val = CN_VAL_PROC,
                .op = (uint32_t) op,
                .mask = mask,
        };
        size_t len = mask ? sizeof(req) : sizeof(req) - sizeof(req.mask);

        req.nl.nlmsg_len = (uint32_t) len;
        req.cn.len = (uint16_t) (len - sizeof(req.nl) - sizeof(req.cn));
        return send(fd, &req, len, 0) < 0 ? negative_errno() : 0;
}

static int open_socket(uint32_t mask, int *ret) {
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
        _cleanup_close_ int fd = -EBADF;
        int size = (int) PROC_EVENTS_RCVBUF, k;

        fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
        if (fd < 0)
                return negative_errno();
        /* SO_RCVBUFFORCE needs CAP_NET_ADMIN, which subscribing needs anyway. */
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
                (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return negative_errno();
        k = send_op(fd, PROC_CN_MCAST_LISTEN, mask);
        if (k < 0)
                return k;
        *ret = TAKE_FD(fd);
        return 0;
}

static int new_events(int fd, int lazy_fd, ProcEvents **ret) {
        ProcEvents *e = calloc(1, sizeof(ProcEvents));

        if (!e)
                return -ENOMEM;
        e->fd = fd;
        e->lazy_fd = lazy_fd;
        *ret = e;
        return 0;
}

int proc_events_open(ProcEvents **ret) {
        _cleanup_close_ int fd = -EBADF;
        int k;

        k = open_socket(0, &fd);
        if (k < 0)
                return k;
        k = new_events(fd, -EBADF, ret);
        if (k >= 0)
                fd = -EBADF;
        return k;
}

/* Does the kernel filter (it acknowledges nothing on a filtered socket: the
 * acknowledgement is an event the filter drops)? Rename ourselves to our
 * own name and see the COMM event come. What else arrives meanwhile is
 * before the caller's first scan, which reads everything. */
static bool filter_works(int fd) {
        char name[17] = {};
        pid_t self = getpid();

        if (prctl(PR_GET_NAME, name, 0, 0, 0) < 0 || prctl(PR_SET_NAME, name, 0, 0, 0) < 0)
                return false;
        for (int tries = 0; tries < 64; tries++) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                char buf[1024] __attribute__((aligned(8)));
                TaskEvent ev;
                ssize_t len;

                if (poll(&p, 1, PROC_EVENTS_PROBE_MS) <= 0)
                        return false;
                len = recv(fd, buf, sizeof(buf), 0);
                if (len < 0) {
                        if (errno == EINTR || errno == EAGAIN)
                                continue;
                        return false;
                }
                if (proc_events_parse(buf, (size_t) len, &ev) > 0 && ev.type == TASK_EVENT_COMM && ev.pid == self)
                        return true;
        }
        return false;
}

int proc_events_open_split(ProcEvents **ret) {
        _cleanup_close_ int fd = -EBADF, lazy_fd = -EBADF;
        int k;

        if (open_socket(PROC_MASK_EXEC | PROC_MASK_COMM, &fd) < 0 || !filter_works(fd) ||
            open_socket(PROC_MASK_FORK | PROC_MASK_EXIT, &lazy_fd) < 0) {
                /* Unsubscribe as subscribed, with a mask: a kernel that
                 * ignored the masked request ignores this one too (a plain
                 * IGNORE would take one from its count of listeners, ours
                 * never added, and could stop events for everyone). */
                if (fd >= 0)
                        (void) send_op(fd, PROC_CN_MCAST_IGNORE, PROC_MASK_EXEC | PROC_MASK_COMM);
                if (lazy_fd >= 0)
                        (void) send_op(lazy_fd, PROC_CN_MCAST_IGNORE, PROC_MASK_FORK | PROC_MASK_EXIT);
                return proc_events_open(ret);
        }
        k = new_events(fd, lazy_fd, ret);
        if (k >= 0)
                fd = lazy_fd = -EBADF;
        return k;
}

ProcEvents *proc_events_free(ProcEvents *e) {
        if (!e)
                return NULL;
        if (e->fd >= 0) {
                (void) send_op(e->fd, PROC_CN_MCAST_IGNORE, 0);
                close(e->fd);
        }
        if (e->lazy_fd >= 0) {
                (void) send_op(e->lazy_fd, PROC_CN_MCAST_IGNORE, 0);
                close(e->lazy_fd);
        }
        free(e);
        return NULL;
}

int proc_events_fd(const ProcEvents *e) {
        return e->fd;
}

int proc_events_lazy_fd(const ProcEvents *e) {
        return e->lazy_fd;
}

int proc_events_parse(const void *buf, size_t len, TaskEvent *ret) {
        const struct nlmsghdr *nl = buf;
        const struct cn_msg *cn;
        struct proc_event ev;
        TaskEvent t = {};
        size_t need = sizeof(struct nlmsghdr) + sizeof(struct cn_msg);

        if (len < need || nl->nlmsg_len < need || nl->nlmsg_len > len)
                return -EINVAL;
        if (nl->nlmsg_type == NLMSG_ERROR || nl->nlmsg_type == NLMSG_NOOP)
                return 0;
        cn = (const struct cn_msg *) NLMSG_DATA(nl);
        if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC)
                return 0;
        /* The payload may be shorter than struct proc_event (older kernels
         * send only the union member); copy what is there. */
        if (cn->len > nl->nlmsg_len - need)
                return -EINVAL;
        if (cn->len < offsetof(struct proc_event, event_data))
                return -EINVAL;
        memset(&ev, 0, sizeof(ev));
        memcpy(&ev, cn->data, MIN((size_t) cn->len, sizeof(ev)));

        t.timestamp_ns = ev.timestamp_ns;
        switch (ev.what) {
        case PROC_EVENT_NONE:
                t.type = TASK_EVENT_ACK;
                t.error = ev.event_data.ack.err ? -(int) MIN(ev.event_data.ack.err, 4095u) : 0;
                break;
        case PROC_EVENT_FORK:
                t.type = TASK_EVENT_FORK;
                t.pid = ev.event_data.fork.child_pid;
                t.tgid = ev.event_data.fork.child_tgid;
                t.parent_pid = ev.event_data.fork.parent_pid;
                t.parent_tgid = ev.event_data.fork.parent_tgid;
                break;
        case PROC_EVENT_EXEC:
                t.type = TASK_EVENT_EXEC;
                t.pid = ev.event_data.exec.process_pid;
                t.tgid = ev.event_data.exec.process_tgid;
                break;
        case PROC_EVENT_COMM:
                t.type = TASK_EVENT_COMM;
                t.pid = ev.event_data.comm.process_pid;
                t.tgid = ev.event_data.comm.process_tgid;
                memcpy(t.comm, ev.event_data.comm.comm, sizeof(t.comm) - 1);
                t.comm[sizeof(t.comm) - 1] = '\0';
                break;
        case PROC_EVENT_EXIT:
                t.type = TASK_EVENT_EXIT;
                t.pid = ev.event_data.exit.process_pid;
                t.tgid = ev.event_data.exit.process_tgid;
                break;
        default:
                return 0;
        }
        if (t.type != TASK_EVENT_ACK && (t.pid <= 0 || t.tgid <= 0))
                return -EINVAL;
        *ret = t;
        return 1;
}

/* Datagrams taken per recvmmsg(): a burst's worth. */
#define PROC_EVENTS_BATCH 16u
#define PROC_EVENTS_DATAGRAM_MAX 1024u

/* Up to max events from one socket into events[*n...]: whether it was
 * found empty. wait: a blocking socket's first datagram is waited for
 * (-EINTR when a signal comes first); the rest are taken as they are. */
static int read_socket(int fd, TaskEvent *events, size_t max, size_t *n, bool wait, bool *ret_empty) {
        size_t start = *n;

        char buf[PROC_EVENTS_BATCH][PROC_EVENTS_DATAGRAM_MAX] __attribute__((aligned(8)));
        struct mmsghdr msgs[PROC_EVENTS_BATCH];
        struct iovec iov[PROC_EVENTS_BATCH];

        *ret_empty = false;
        /* One system call for a burst, and the one that finds the socket
         * empty is the one that took the last datagram (it returns fewer
         * than asked): no read of nothing at the end. */
        while (*n < max) {
                unsigned want = (unsigned) MIN(max - *n, (size_t) PROC_EVENTS_BATCH);
                int got;

                for (unsigned i = 0; i < want; i++) {
                        iov[i] = (struct iovec) { .iov_base = buf[i], .iov_len = sizeof(buf[i]) };
                        msgs[i] = (struct mmsghdr) { .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
                }
                /* Waiting, one datagram is waited for and the rest of the
                 * batch taken if there (MSG_WAITFORONE): a wake-up costs
                 * that one call, not a poll() and a read. */
                got = recvmmsg(fd, msgs, want, wait && *n == start ? MSG_WAITFORONE : MSG_DONTWAIT, NULL);
                if (got < 0) {
                        if (errno == EINTR && wait && *n == start)
                                return -EINTR;
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN) {
                                *ret_empty = true;
                                return 0;
                        }
                        if (errno == ENOBUFS) {
                                /* The kernel dropped events: say so once. */
                                events[(*n)++] = (TaskEvent) { .type = TASK_EVENT_OVERRUN };
                                continue;
                        }
                        return negative_errno();
                }
                for (int i = 0; i < got; i++)
                        /* Malformed datagrams (< 0) are dropped; they cannot
                         * come from the kernel, the only sender we bind to.
                         * Events nobody needs (0) are skipped. */
                        if (proc_events_parse(buf[i], msgs[i].msg_len, &events[*n]) > 0)
                                (*n)++;
                if ((unsigned) got < want) {
                        *ret_empty = true;
                        return 0;
                }
        }
        return 0;
}

int proc_events_read(ProcEvents *e, TaskEvent *events, size_t max, size_t *ret_n) {
        bool empty = true;
        size_t n = 0;
        int k;

        /* Split: the forks and exits first, so that an exit is known
         * before the exec of the same process is looked at. */
        if (e->lazy_fd >= 0 && (k = read_socket(e->lazy_fd, events, max, &n, false, &empty)) < 0)
                return k;
        if (empty && (k = read_socket(e->fd, events, max, &n, false, &empty)) < 0)
                return k;
        *ret_n = n;
        return 0;
}

static int read_one(ProcEvents *e, int fd, TaskEvent *events, size_t max, size_t *ret_n) {
        bool empty;
        size_t n = 0;
        int k;

        if (e->lazy_fd < 0)
                return proc_events_read(e, events, max, ret_n);
        if ((k = read_socket(fd, events, max, &n, false, &empty)) < 0)
                return k;
        *ret_n = n;
        return 0;
}

int proc_events_wait_urgent(ProcEvents *e, TaskEvent *events, size_t max, size_t *ret_n) {
        bool empty;
        size_t n = 0;
        int k;

        if (max == 0)
                return -EINVAL;
        /* Every other read here passes MSG_DONTWAIT: the socket can block
         * for this one (a poll() of it, as the loop's, still works). */
        if (!e->blocking) {
                int flags = fcntl(e->fd, F_GETFL);

                if (flags < 0 || fcntl(e->fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
                        return negative_errno();
                e->blocking = true;
        }
        if ((k = read_socket(e->fd, events, max, &n, true, &empty)) < 0)
                return k;
        *ret_n = n;
        return 0;
}

int proc_events_read_urgent(ProcEvents *e, TaskEvent *events, size_t max, size_t *ret_n) {
        return read_one(e, e->fd, events, max, ret_n);
}

int proc_events_read_lazy(ProcEvents *e, TaskEvent *events, size_t max, size_t *ret_n) {
        return read_one(e, e->lazy_fd, events, max, ret_n);
}

const char *task_event_type_to_string(TaskEventType t) {
        static const char *const names[_TASK_EVENT_MAX] = {
                [TASK_EVENT_FORK] = "fork", [TASK_EVENT_EXEC] = "exec",       [TASK_EVENT_COMM] = "comm",
                [TASK_EVENT_EXIT] = "exit", [TASK_EVENT_OVERRUN] = "overrun", [TASK_EVENT_ACK] = "ack",
        };
        return (unsigned) t < _TASK_EVENT_MAX ? names[t] : "unknown";
}
