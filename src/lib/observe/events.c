/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "events.h"

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct ProcEvents {
        int fd;
};

/* Receive buffer: each event costs the socket about 768 bytes (the
 * datagram's truesize), so 16 MiB holds some 20,000 — seven seconds of an
 * exec storm at 1,000 a second (fork, exec, exit each) while a pass holds
 * the loop. Lost events mean a full scan, which a storm makes long: the
 * margin keeps one slow pass from feeding the next. Memory is taken only
 * while events wait. */
#define PROC_EVENTS_RCVBUF (16u * 1024u * 1024u)

static int send_op(int fd, enum proc_cn_mcast_op op) {
        struct {
                struct nlmsghdr nl;
                struct cn_msg cn;
                enum proc_cn_mcast_op op;
        } __attribute__((packed)) req = {
                .nl.nlmsg_len = sizeof(req),
                .nl.nlmsg_type = NLMSG_DONE,
                .cn.id.idx = CN_IDX_PROC,
                .cn.id.val = CN_VAL_PROC,
                .cn.len = sizeof(enum proc_cn_mcast_op),
                .op = op,
        };

        return send(fd, &req, sizeof(req), 0) < 0 ? negative_errno() : 0;
}

int proc_events_open(ProcEvents **ret) {
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
        _cleanup_close_ int fd = -EBADF;
        int size = (int) PROC_EVENTS_RCVBUF, k;
        ProcEvents *e;

        fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
        if (fd < 0)
                return negative_errno();
        /* SO_RCVBUFFORCE needs CAP_NET_ADMIN, which subscribing needs anyway. */
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
                (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return negative_errno();
        k = send_op(fd, PROC_CN_MCAST_LISTEN);
        if (k < 0)
                return k;
        e = calloc(1, sizeof(ProcEvents));
        if (!e)
                return -ENOMEM;
        e->fd = TAKE_FD(fd);
        *ret = e;
        return 0;
}

ProcEvents *proc_events_free(ProcEvents *e) {
        if (!e)
                return NULL;
        if (e->fd >= 0) {
                (void) send_op(e->fd, PROC_CN_MCAST_IGNORE);
                close(e->fd);
        }
        free(e);
        return NULL;
}

int proc_events_fd(const ProcEvents *e) {
        return e->fd;
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

int proc_events_read(ProcEvents *e, TaskEvent *events, size_t max, size_t *ret_n) {
        size_t n = 0;

        while (n < max) {
                char buf[1024] __attribute__((aligned(8)));
                ssize_t len = recv(e->fd, buf, sizeof(buf), 0);
                int k;

                if (len < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                break;
                        if (errno == ENOBUFS) {
                                /* The kernel dropped events: say so once. */
                                events[n++] = (TaskEvent) { .type = TASK_EVENT_OVERRUN };
                                continue;
                        }
                        return negative_errno();
                }
                k = proc_events_parse(buf, (size_t) len, &events[n]);
                if (k > 0)
                        n++;
                /* Malformed datagrams (k < 0) are dropped; they cannot come
                 * from the kernel, which is the only sender we bind to. */
        }
        *ret_n = n;
        return 0;
}

const char *task_event_type_to_string(TaskEventType t) {
        static const char *const names[_TASK_EVENT_MAX] = {
                [TASK_EVENT_FORK] = "fork", [TASK_EVENT_EXEC] = "exec",       [TASK_EVENT_COMM] = "comm",
                [TASK_EVENT_EXIT] = "exit", [TASK_EVENT_OVERRUN] = "overrun", [TASK_EVENT_ACK] = "ack",
        };
        return (unsigned) t < _TASK_EVENT_MAX ? names[t] : "unknown";
}
