/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The benches' idle threads: a child process of n_threads threads that
 * block in pause(); it writes one byte to ready_fd once all are started.
 * Returns the child's pid to the caller (which kills it at the end). */

#include <pthread.h>
#include <unistd.h>

static void *idle_thread(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

static inline pid_t spawn_idle(unsigned n_threads, int ready_fd) {
        pid_t pid = fork();

        if (pid != 0)
                return pid;
        for (unsigned i = 1; i < n_threads; i++) {
                pthread_t t;
                pthread_attr_t a;

                pthread_attr_init(&a);
                pthread_attr_setstacksize(&a, 64 * 1024);
                if (pthread_create(&t, &a, idle_thread, NULL) != 0)
                        _exit(1);
        }
        (void) !write(ready_fd, "x", 1);
        for (;;)
                pause();
}
