/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Workloads for the guest tests, each with a known class:
 *
 *   workload busy              spin: throughput
 *   workload pingpong          two threads ("ping", "pong") waking each other
 *                              through pipes as fast as they can: latency
 *   workload idle [NAME [FILE]] sleep; rename itself to NAME with prctl (a
 *                              proc-connector COMM event) after 1 s, or, with
 *                              FILE, half a second after FILE appears
 *   workload slice TID         not a workload: print thread TID's scheduler
 *                              slice request (sched_getattr's sched_runtime,
 *                              ns; 0 without one) and exit
 *   workload forker NAME FILE  rename itself to NAME at once; when FILE
 *                              appears, fork a child that renames itself
 *                              "inherit" (what it inherits: the cookie and
 *                              the cgroup) and sleeps; both sleep on
 *   workload orphan NAME [FILE] rename itself to NAME, start a thread
 *                              (NAME too) that sleeps, and end the main
 *                              thread (exit(2), the thread's) at once, or when FILE
 *                              appears: a process whose main thread
 *                              exited while another lives
 *   workload cookie TID        not a workload: print "TID COOKIE", thread
 *                              TID's core-scheduling cookie
 *                              (PR_SCHED_CORE_GET), and exit
 *   workload threads N SECS    start N-1 threads at once (N in all, at most
 *                              64) and, in each, read the main thread's
 *                              cookie and then its own, every 2 ms, for
 *                              SECS seconds. Where the main thread holds a
 *                              cookie and this thread another, it reads
 *                              both every millisecond until they agree
 *                              again or the main thread's changes: that
 *                              stretch is a window outside its process's
 *                              cookie. The kernel sets a process's threads
 *                              one after the other, so a window of a few
 *                              milliseconds is the kernel's walk (longer
 *                              when a virtual CPU stalls mid-walk); one
 *                              that lasts until topod's next pass is a
 *                              thread it missed. Prints a line per thread,
 *                              "thread I TID samples S windows W longest L
 *                              cookie C" (L: the longest window, in ms; C:
 *                              its last cookie), and exits
 *
 * A busy loop that shares its vCPU with others under TCG gets less than a
 * whole CPU: the guest test's topod.conf asks for 50%.
 *
 * They run until killed. */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/sched-attr.h"

static int ping[2], pong[2];

static void *ponger(void *arg) {
        char c;

        (void) arg;
        prctl(PR_SET_NAME, "pong");
        for (;;) {
                if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1)
                        _exit(1);
        }
        return NULL;
}

static int pingpong(void) {
        pthread_t t;
        char c = 'x';

        if (pipe(ping) < 0 || pipe(pong) < 0 || pthread_create(&t, NULL, ponger, NULL) != 0)
                return 1;
        prctl(PR_SET_NAME, "ping");
        for (;;) {
                if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
                        return 1;
        }
}

static int slice(pid_t tid) {
        SchedAttr a;

        memset(&a, 0, sizeof(a));
        if (syscall(SYS_sched_getattr, tid, &a, sizeof(a), 0) < 0) {
                perror("sched_getattr");
                return 1;
        }
        printf("%llu\n", (unsigned long long) a.runtime);
        return 0;
}

static int cookie(pid_t tid) {
        unsigned long long c = 0;

        if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_GET, (unsigned long) tid, PR_SCHED_CORE_SCOPE_THREAD,
                  (unsigned long) &c) < 0) {
                perror("PR_SCHED_CORE_GET");
                return 1;
        }
        printf("%d %llu\n", (int) tid, c);
        return 0;
}

#define THREADS_MAX 64

static unsigned long long core_cookie(pid_t tid) {
        unsigned long long c = 0;

        if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_GET, (unsigned long) tid, PR_SCHED_CORE_SCOPE_THREAD,
                  (unsigned long) &c) < 0)
                return ~0ULL;
        return c;
}

typedef struct Sampler {
        pid_t tid;
        unsigned long samples, windows;
        unsigned long long longest_us, cookie;
} Sampler;

static pid_t main_tid;
static volatile int samplers_stop;

static unsigned long long now_us(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (unsigned long long) ts.tv_sec * 1000000ULL + (unsigned long long) ts.tv_nsec / 1000ULL;
}

static void *sampler(void *arg) {
        Sampler *s = arg;

        s->tid = (pid_t) syscall(SYS_gettid);
        while (!samplers_stop) {
                unsigned long long m = core_cookie(main_tid), me = core_cookie(0);

                s->samples++;
                if (m != 0 && m != ~0ULL && me != m) {
                        unsigned long long start = now_us(), len;

                        /* Until this thread holds the main thread's cookie,
                         * or the main thread holds another (or has gone). */
                        while (!samplers_stop && core_cookie(main_tid) == m && core_cookie(0) != m)
                                usleep(1000);
                        len = now_us() - start;
                        s->windows++;
                        if (len > s->longest_us)
                                s->longest_us = len;
                        me = core_cookie(0);
                }
                s->cookie = me;
                usleep(2000);
        }
        return NULL;
}

static int threads(int n, int secs) {
        static Sampler st[THREADS_MAX];
        pthread_t t[THREADS_MAX];

        if (n < 1 || n > THREADS_MAX || secs < 1)
                return 2;
        main_tid = getpid();
        for (int i = 1; i < n; i++)
                if (pthread_create(&t[i], NULL, sampler, &st[i]) != 0)
                        return 1;
        /* The main thread reads its own, until the time is up. */
        st[0].tid = main_tid;
        for (long left = secs * 500L; left > 0; left--) {
                st[0].cookie = core_cookie(0);
                st[0].samples++;
                usleep(2000);
        }
        samplers_stop = 1;
        for (int i = 1; i < n; i++)
                pthread_join(t[i], NULL);
        for (int i = 0; i < n; i++)
                printf("thread %d %d samples %lu windows %lu longest %llu cookie %llu\n", i, (int) st[i].tid,
                       st[i].samples, st[i].windows, st[i].longest_us / 1000ULL, st[i].cookie);
        return 0;
}

static void *sleeper(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

static int orphan(const char *name, const char *file) {
        pthread_t t;

        prctl(PR_SET_NAME, name);
        if (pthread_create(&t, NULL, sleeper, NULL) != 0)
                return 1;
        while (file && access(file, F_OK) < 0)
                usleep(50000);
        /* This thread alone, as pthread_exit() would (which needs
         * libgcc_s, not in the guest). */
        syscall(SYS_exit, 0);
        return 1;
}

int main(int argc, char *argv[]) {
        if (argc >= 4 && strcmp(argv[1], "forker") == 0) {
                prctl(PR_SET_NAME, argv[2]);
                while (access(argv[3], F_OK) < 0)
                        usleep(50000);
                if (fork() == 0)
                        prctl(PR_SET_NAME, "inherit");
                for (;;)
                        pause();
        }
        if (argc >= 3 && strcmp(argv[1], "orphan") == 0)
                return orphan(argv[2], argc >= 4 ? argv[3] : NULL);
        if (argc >= 3 && strcmp(argv[1], "cookie") == 0)
                return cookie((pid_t) atoi(argv[2]));
        if (argc >= 4 && strcmp(argv[1], "threads") == 0)
                return threads(atoi(argv[2]), atoi(argv[3]));
        if (argc >= 3 && strcmp(argv[1], "slice") == 0)
                return slice((pid_t) atoi(argv[2]));
        if (argc >= 2 && strcmp(argv[1], "busy") == 0) {
                volatile unsigned long n = 0;
                for (;;)
                        n++;
        }
        if (argc >= 2 && strcmp(argv[1], "pingpong") == 0)
                return pingpong();
        if (argc >= 2 && strcmp(argv[1], "idle") == 0) {
                if (argc >= 4) {
                        while (access(argv[3], F_OK) < 0)
                                usleep(50000);
                        usleep(500000);
                } else
                        sleep(1);
                if (argc >= 3)
                        prctl(PR_SET_NAME, argv[2]);
                for (;;)
                        pause();
        }
        fprintf(stderr, "usage: workload busy|pingpong|idle [NAME [FILE]] | forker NAME FILE | orphan NAME [FILE] | slice TID | cookie TID | threads N SECS\n");
        return 2;
}
