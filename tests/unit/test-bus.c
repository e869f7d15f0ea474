/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The bus server's limits, with real sockets and a real sd-event loop in
 * this process and clients in children: only root may Reload; a user other
 * than root gets BUS_CONNECTIONS_PER_UID connections, the rest are closed.
 * (A client that sends calls and never reads the replies is cut off at
 * BUS_QUEUED_MAX unread; an sd-bus client here never made the server queue,
 * so that path is not exercised.) The children drop to uid 65534, so the
 * test needs root (exit 77 otherwise). Each child is this program again,
 * exec'd: the server has a thread (the closer), and a child forked beside
 * it may find a lock of the allocator held by it for good. */

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "bus.h"
#include "tests.h"

#define NOBODY 65534

static unsigned calls;

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static int handler(void *userdata, const BusCall *call, char **ret_text, char **ret_error, const char **ret_name) {
        (void) userdata;
        (void) ret_error;
        (void) ret_name;
        calls++;
        *ret_text = strdup(call->method == BUS_METHOD_RELOAD ? "reloaded" : "status");
        return *ret_text ? 0 : -ENOMEM;
}

static void become_nobody(void) {
        if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
                _exit(100);
}

/* Run the server's loop until the child exits (at most 10 s); its status. */
static int serve_until_exit(sd_event *e, pid_t child) {
        uint64_t end = now_usec() + 10 * 1000000ull;

        while (now_usec() < end) {
                int st;

                (void) sd_event_run(e, 1000);
                if (waitpid(child, &st, WNOHANG) == child)
                        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        return -1;
}

static int call(const char *path, const char *method, char **ret_error_name) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        char address[256];
        sd_bus *b = NULL;
        int k;

        snprintf(address, sizeof(address), "unix:path=%s", path);
        if ((k = sd_bus_new(&b)) < 0 || (k = sd_bus_set_address(b, address)) < 0 || (k = sd_bus_start(b)) < 0)
                return k;
        k = sd_bus_call_method(b, NULL, BUS_PATH, BUS_INTERFACE, method, &error, &reply, "b", 0);
        if (k < 0 && ret_error_name && error.name)
                *ret_error_name = strdup(error.name);
        sd_bus_error_free(&error);
        sd_bus_message_unref(reply);
        sd_bus_flush_close_unref(b);
        return k;
}

/* Child: Status works for anyone, Reload only for root. Exit 0 when so. */
static int child_rights(const char *path) {
        char *name = NULL;
        int k;

        if (call(path, "Status", NULL) < 0 || call(path, "Reload", NULL) < 0)
                return 1;
        become_nobody();
        if (call(path, "Status", NULL) < 0)
                return 2;
        k = call(path, "Reload", &name) >= 0 || !name || strcmp(name, SD_BUS_ERROR_ACCESS_DENIED) != 0 ? 3 : 0;
        free(name);
        return k;
}

/* How many of fds are still connected, with nothing to read. */
static int count_open(const int *fds, size_t n) {
        int open_ = 0;

        for (size_t i = 0; i < n; i++) {
                char c;
                ssize_t k = recv(fds[i], &c, 1, MSG_DONTWAIT);

                open_ += k < 0 && errno == EAGAIN;
        }
        return open_;
}

/* Child: as nobody, open 2 × the per-uid cap of connections, give the
 * server time, exit with how many are still open. */
static int child_flood(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fds[2 * BUS_CONNECTIONS_PER_UID], open_ = -1;

        become_nobody();
        strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
        for (unsigned i = 0; i < ELEMENTSOF(fds); i++) {
                fds[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fds[i] < 0 || connect(fds[i], (struct sockaddr *) &sa, sizeof(sa)) < 0)
                        return 100;
                /* The D-Bus handshake's first byte, so the server has read
                 * work. A connection over the cap may be closed already:
                 * MSG_NOSIGNAL, or the EPIPE is a SIGPIPE that kills us. */
                (void) !send(fds[i], "", 1, MSG_NOSIGNAL);
        }
        /* Until the server has turned away all it will (one it has not
         * accepted yet reads as open too), then a while more: none of
         * those it kept may go. At most 10 s. */
        for (unsigned round = 0, settled = 0; round < 1000 && settled < 20; round++) {
                usleep(10000);
                open_ = count_open(fds, ELEMENTSOF(fds));
                settled = open_ <= (int) BUS_CONNECTIONS_PER_UID ? settled + 1 : 0;
        }
        return open_;
}

/* Child: as nobody, begin a handshake and say no more. Exit 0 when the
 * server hangs up after BUS_AUTH_USEC (within its tick of a second, and a
 * second of slack), 1 when sooner, 2 when not in 9 s. */
static int child_mute(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = 9 };
        uint64_t t0, took;
        char c;
        int fd;

        become_nobody();
        strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 || send(fd, "", 1, MSG_NOSIGNAL) != 1)
                return 100;
        t0 = now_usec();
        if (recv(fd, &c, 1, 0) > 0)
                return 3; /* an answer to no question */
        if (errno == EAGAIN)
                return 2;
        took = now_usec() - t0;
        return took < BUS_AUTH_USEC - 100000u ? 1 : took > BUS_AUTH_USEC + 2000000u ? 2 : 0;
}

/* This program again as the child KIND on path: fork and exec, nothing
 * allocated in between. */
static pid_t spawn(const char *kind, const char *path) {
        char *argv[] = { (char *) "test-bus", (char *) kind, (char *) path, NULL };
        pid_t pid = fork();

        if (pid == 0) {
                execv("/proc/self/exe", argv);
                _exit(127);
        }
        ASSERT_GT(pid, 0);
        return pid;
}

int main(int argc, char **argv) {
        char dir[] = "/tmp/test-bus.XXXXXX", path[64];
        _cleanup_(bus_server_freep) BusServer *s = NULL;
        sd_event *e = NULL;
        pid_t pid;
        int rc;

        if (argc == 3 && strcmp(argv[1], "--rights") == 0)
                return child_rights(argv[2]);
        if (argc == 3 && strcmp(argv[1], "--flood") == 0)
                return child_flood(argv[2]);
        if (argc == 3 && strcmp(argv[1], "--mute") == 0)
                return child_mute(argv[2]);
        if (geteuid() != 0) {
                fprintf(stderr, "test-bus: needs root (clients drop to uid %d): skipped\n", NOBODY);
                return 77;
        }
        ASSERT_NOT_NULL(mkdtemp(dir));
        ASSERT_OK(chmod(dir, 0755));
        snprintf(path, sizeof(path), "%s/bus", dir);
        ASSERT_OK(sd_event_new(&e));
        ASSERT_OK(bus_server_new(e, path, handler, NULL, &s));

        /* Rights: anyone reads, only root reloads. */
        pid = spawn("--rights", path);
        rc = serve_until_exit(e, pid);
        ASSERT_EQ(rc, 0);
        ASSERT_EQ(calls, 3u); /* root's Status and Reload, nobody's Status: the refused Reload never got here */
        /* Its connections gone (a turn of the loop after the exit each),
         * or the flood below would find one of nobody's still counted. */
        for (int i = 0; i < 100 && bus_server_connections(s) > 0; i++)
                (void) sd_event_run(e, 1000);
        ASSERT_EQ(bus_server_connections(s), 0u);

        /* A flood of connections from one user: it keeps its share. */
        pid = spawn("--flood", path);
        rc = serve_until_exit(e, pid);
        ASSERT_EQ(rc, (int) BUS_CONNECTIONS_PER_UID);

        /* The flood's connections are gone with it. */
        for (int i = 0; i < 100; i++)
                (void) sd_event_run(e, 1000);
        ASSERT_EQ(bus_server_connections(s), 0u);

        /* A handshake begun and never finished: dropped after
         * BUS_AUTH_USEC, not before. */
        pid = spawn("--mute", path);
        rc = serve_until_exit(e, pid);
        ASSERT_EQ(rc, 0);
        for (int i = 0; i < 100 && bus_server_connections(s) > 0; i++)
                (void) sd_event_run(e, 1000);
        ASSERT_EQ(bus_server_connections(s), 0u);

        s = bus_server_free(s);
        sd_event_unref(e);
        (void) rmdir(dir);
        return 0;
}
