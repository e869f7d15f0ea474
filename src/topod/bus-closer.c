/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The closer thread for descriptors bus peers passed (see bus-closer.h). */
#include "bus-closer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct BusCloser {
        pthread_t thread;
        int pipe[2]; /* [1]: descriptors to close, as ints; [0]: the thread reads */
};

static void *closer_main(void *userdata) {
        BusCloser *c = userdata;
        int fd;

        /* Until the write end is closed: EOF. */
        while (read(c->pipe[0], &fd, sizeof(fd)) == (ssize_t) sizeof(fd))
                close(fd);
        return NULL;
}

int bus_closer_new(BusCloser **ret) {
        BusCloser *c = calloc(1, sizeof(*c));
        int k;

        if (!c)
                return -ENOMEM;
        if (pipe2(c->pipe, O_CLOEXEC) < 0) {
                k = -errno;
                free(c);
                return k;
        }
        (void) fcntl(c->pipe[1], F_SETFL, O_NONBLOCK);
        k = -pthread_create(&c->thread, NULL, closer_main, c);
        if (k < 0) {
                close(c->pipe[0]);
                close(c->pipe[1]);
                free(c);
                return k;
        }
        *ret = c;
        return 0;
}

BusCloser *bus_closer_free(BusCloser *c) {
        if (!c)
                return NULL;
        close(c->pipe[1]);
        (void) pthread_join(c->thread, NULL);
        close(c->pipe[0]);
        free(c);
        return NULL;
}

void bus_closer_take(BusCloser *c, const int *fds, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                if (!c || write(c->pipe[1], &fds[i], sizeof(fds[i])) != (ssize_t) sizeof(fds[i]))
                        close(fds[i]);
}
