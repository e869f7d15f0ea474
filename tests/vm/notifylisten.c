/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* notifylisten SOCKET SECONDS: stand in for systemd's notify socket. Bind
 * an AF_UNIX datagram socket at SOCKET and print every message received
 * (one line per message, newlines inside shown as '|'), prefixed with the
 * CLOCK_MONOTONIC time in microseconds, until SECONDS have passed or a
 * message holds STOPPING=1 (then one more second for late ones). */

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

int main(int argc, char *argv[]) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        uint64_t deadline;
        int fd;

        if (argc != 3 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
                fprintf(stderr, "usage: notifylisten SOCKET SECONDS\n");
                return 2;
        }
        strcpy(sa.sun_path, argv[1]);
        deadline = now_usec() + (uint64_t) atoi(argv[2]) * 1000000u;
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        unlink(argv[1]);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                fprintf(stderr, "notifylisten: %s: %s\n", argv[1], strerror(errno));
                return 1;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        for (;;) {
                char buf[4096];
                struct pollfd p = { .fd = fd, .events = POLLIN };
                uint64_t now = now_usec();
                ssize_t n;

                if (now >= deadline)
                        return 0;
                if (poll(&p, 1, (int) ((deadline - now) / 1000u) + 1) <= 0)
                        continue;
                n = recv(fd, buf, sizeof(buf) - 1, 0);
                if (n < 0)
                        continue;
                buf[n] = 0;
                if (n > 0 && buf[n - 1] == '\n')
                        buf[n - 1] = 0;
                for (char *c = buf; *c; c++)
                        if (*c == '\n')
                                *c = '|';
                printf("%llu %s\n", (unsigned long long) now_usec(), buf);
                if (strstr(buf, "STOPPING=1") && deadline > now_usec() + 1000000u)
                        deadline = now_usec() + 1000000u;
        }
}
