/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cookie applier on a real kernel, run in the guest by test_cookie.py.
 *
 *   cookietool scenario PINGPONG BUSY IDLE UNTOUCHED
 *   cookietool timing
 *
 * PINGPONG, BUSY, IDLE and UNTOUCHED are pids of `workload` processes the
 * test started. Group A = the two threads of PINGPONG, group B = BUSY and
 * IDLE; UNTOUCHED is left alone. Everything is read back with
 * PR_SCHED_CORE_GET and printed as one JSON object on stdout: the test
 * decides what is right. It also forks its own children (one that exits
 * before it is assigned, one that forks and starts a thread after it got a
 * cookie) and kills them at the end. `timing` forks a process with 100
 * threads and prints the time per assignment and its pieces.
 *
 * Nothing here asserts: on a nosmt guest every result says ENODEV, and
 * that is printed like anything else. */

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "apply/cookie.h"
#include "base/util.h"

#define TIMING_THREADS 100
#define TIMING_ROUNDS 3

static Root *root;
static CookieApplier *applier;

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static CookieTask task_of(pid_t tid) {
        CookieTask t = { .tid = tid };

        if (pidref_read_start_time(root, -1, tid, &t.start_time) < 0)
                t.start_time = 0; /* gone: the applier will say vanished */
        return t;
}

/* The tids of a process, sorted (at most max). */
static size_t threads_of(pid_t pid, pid_t *ret, size_t max) {
        char path[64];
        DIR *d;
        struct dirent *de;
        size_t n = 0;

        snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                return 0;
        while ((de = readdir(d)) && n < max) {
                int tid = atoi(de->d_name);

                if (tid > 0)
                        ret[n++] = tid;
        }
        closedir(d);
        for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && ret[j - 1] > ret[j]; j--) {
                        pid_t x = ret[j];
                        ret[j] = ret[j - 1];
                        ret[j - 1] = x;
                }
        return n;
}

static void print_results(const char *name, int r, const CookieResult *res, size_t n) {
        printf("\"%s\": {\"return\": %d, \"results\": [", name, r);
        for (size_t i = 0; i < n; i++) {
                printf("%s{\"tid\": %d, \"outcome\": \"%s\", \"error\": ", i ? ", " : "", (int) res[i].tid,
                       cookie_outcome_to_string(res[i].outcome));
                if (res[i].error)
                        printf("\"%s\"", errno_name(res[i].error));
                else
                        printf("null");
                printf(", \"cookie\": %" PRIu64 "}", res[i].cookie);
        }
        printf("]},\n");
}

/* {"tid": N, "cookie": C} or {"tid": N, "error": "ENODEV"} */
static void print_get(const char *name, pid_t tid) {
        uint64_t c;
        int k = cookie_get(applier, tid, &c);

        if (k < 0)
                printf("\"%s\": {\"tid\": %d, \"error\": \"%s\"},\n", name, (int) tid, errno_name(k));
        else
                printf("\"%s\": {\"tid\": %d, \"cookie\": %" PRIu64 "},\n", name, (int) tid, c);
}

static pid_t fork_pause(void) {
        pid_t p = fork();

        if (p == 0) {
                for (;;)
                        pause();
        }
        return p;
}

static void *sleeper(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

/* A child that, told through a pipe, forks a grandchild and starts a
 * thread, and reports both ids back. */
static pid_t fork_spawner(int *ret_cmd, int *ret_reply) {
        int cmd[2], reply[2];
        pid_t p;

        if (pipe(cmd) < 0 || pipe(reply) < 0)
                return -1;
        p = fork();
        if (p == 0) {
                pthread_t t;
                pid_t ids[2];
                char c;

                close(cmd[1]);
                close(reply[0]);
                if (read(cmd[0], &c, 1) != 1)
                        _exit(1);
                ids[0] = fork_pause();
                if (pthread_create(&t, NULL, sleeper, NULL) != 0)
                        _exit(1);
                /* The new thread's tid: the highest in our task list. */
                for (int tries = 0; tries < 100; tries++) {
                        pid_t tids[8];
                        size_t n = threads_of(getpid(), tids, 8);

                        if (n >= 2) {
                                ids[1] = tids[n - 1];
                                break;
                        }
                        usleep(1000);
                }
                if (write(reply[1], ids, sizeof(ids)) != (ssize_t) sizeof(ids))
                        _exit(1);
                for (;;)
                        pause();
        }
        close(cmd[0]);
        close(reply[1]);
        *ret_cmd = cmd[1];
        *ret_reply = reply[0];
        return p;
}

/* A child with n threads (the main one included), all sleeping. */
static pid_t fork_threads(size_t n) {
        int ready[2];
        pid_t p;
        char c;

        if (pipe(ready) < 0)
                return -1;
        p = fork();
        if (p == 0) {
                close(ready[0]);
                for (size_t i = 1; i < n; i++) {
                        pthread_t t;
                        pthread_attr_t attr;

                        pthread_attr_init(&attr);
                        pthread_attr_setstacksize(&attr, 64 * 1024);
                        if (pthread_create(&t, &attr, sleeper, NULL) != 0)
                                _exit(1);
                        pthread_attr_destroy(&attr);
                }
                if (write(ready[1], "x", 1) != 1)
                        _exit(1);
                for (;;)
                        pause();
        }
        close(ready[1]);
        if (read(ready[0], &c, 1) != 1)
                p = -1;
        close(ready[0]);
        return p;
}

/* The floor: bare prctl from one thread, no identity checks, no handoff. */
typedef struct Raw {
        const pid_t *tids;
        size_t n;
        uint64_t usec;
        int error;
} Raw;

static void *raw_share(void *arg) {
        Raw *r = arg;
        uint64_t t0 = now_usec();

        if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_CREATE, 0UL, PR_SCHED_CORE_SCOPE_THREAD, 0UL) < 0) {
                r->error = -errno;
                return NULL;
        }
        for (size_t i = 0; i < r->n; i++)
                if (prctl(PR_SCHED_CORE, PR_SCHED_CORE_SHARE_TO, (unsigned long) r->tids[i],
                          PR_SCHED_CORE_SCOPE_THREAD, 0UL) < 0 && !r->error)
                        r->error = -errno;
        r->usec = now_usec() - t0;
        return NULL; /* the thread's cookie goes with it */
}

static double per(uint64_t usec, size_t n) {
        return n ? (double) usec / (double) n : 0.0;
}

/* Time per assignment for TIMING_THREADS threads of one process, a few
 * rounds, and the pieces it is made of: the handoff to the worker and back
 * (a release with nothing to release), the identity check (pidfd + stat),
 * and the bare prctl from one thread. Under qemu TCG a wake-up of a thread
 * on another vCPU can wait for the round-robin slice of a busy vCPU, so
 * timings are taken in a quiet guest. */
static void timing(void) {
        pid_t tids[TIMING_THREADS];
        CookieTask tasks[TIMING_THREADS];
        CookieResult res[TIMING_THREADS];
        pid_t p = fork_threads(TIMING_THREADS);
        size_t n;

        if (p < 0) {
                printf("\"timing\": {\"error\": \"fork\"},\n");
                return;
        }
        n = threads_of(p, tids, TIMING_THREADS);
        for (size_t i = 0; i < n; i++)
                tasks[i] = task_of(tids[i]);

        printf("\"timing\": {\"threads\": %zu, \"rounds\": [", n);
        for (int round = 0; round < TIMING_ROUNDS; round++) {
                uint64_t t0, group, singles, clear, handoff, ident, ok_group, ok_single = 0, ok_clear;
                Raw raw = { .tids = tids, .n = n };
                pthread_t t;
                int r;

                /* One group of n threads. */
                t0 = now_usec();
                r = cookie_assign(applier, tasks, n, res);
                group = now_usec() - t0;
                ok_group = r > 0 ? (uint64_t) r : 0;

                /* n groups of one thread each. */
                t0 = now_usec();
                for (size_t i = 0; i < n; i++)
                        ok_single += cookie_assign(applier, &tasks[i], 1, &res[i]) == 1;
                singles = now_usec() - t0;

                t0 = now_usec();
                r = cookie_clear(applier, tasks, n, res);
                clear = now_usec() - t0;
                ok_clear = r > 0 ? (uint64_t) r : 0;

                /* The pieces. */
                (void) cookie_applier_release(applier);
                t0 = now_usec();
                for (size_t i = 0; i < n; i++)
                        (void) cookie_applier_release(applier); /* nothing held: the handoff alone */
                handoff = now_usec() - t0;

                t0 = now_usec();
                for (size_t i = 0; i < n; i++) {
                        PidRef ref = PIDREF_NULL;

                        if (pidref_acquire(root, &pidref_ops_host, tasks[i].tid, tasks[i].start_time, &ref) >= 0)
                                (void) pidref_alive(&ref, root, &pidref_ops_host);
                        pidref_done(&ref);
                }
                ident = now_usec() - t0;

                if (pthread_create(&t, NULL, raw_share, &raw) == 0)
                        pthread_join(t, NULL);

                printf("%s{\"group_usec\": %" PRIu64 ", \"group_done\": %" PRIu64
                       ", \"group_usec_per_thread\": %.1f, "
                       "\"singles_usec\": %" PRIu64 ", \"singles_done\": %" PRIu64
                       ", \"usec_per_single_assign\": %.1f, "
                       "\"clear_usec\": %" PRIu64 ", \"clear_done\": %" PRIu64
                       ", \"clear_usec_per_thread\": %.1f, "
                       "\"handoff_usec\": %.1f, \"identity_check_usec\": %.1f, "
                       "\"raw_share_to_usec_per_thread\": %.1f, \"raw_error\": %s%s%s}",
                       round ? ", " : "", group, ok_group, per(group, n), singles, ok_single, per(singles, n),
                       clear, ok_clear, per(clear, n), per(handoff, n), per(ident, n), per(raw.usec, n),
                       raw.error ? "\"" : "", raw.error ? errno_name(raw.error) : "null", raw.error ? "\"" : "");
        }
        printf("]},\n");
        kill(p, SIGKILL);
        waitpid(p, NULL, 0);
}

static int scenario(pid_t pingpong, pid_t busy, pid_t idle, pid_t untouched) {
        pid_t pp[4];
        CookieTask a[2], b[2];
        CookieResult res[4];
        size_t npp;
        int r;

        npp = threads_of(pingpong, pp, 4);
        if (npp != 2) {
                fprintf(stderr, "pingpong %d has %zu threads, expected 2\n", (int) pingpong, npp);
                return 1;
        }
        a[0] = task_of(pp[0]);
        a[1] = task_of(pp[1]);
        b[0] = task_of(busy);
        b[1] = task_of(idle);

        printf("{\n");
        printf("\"tids\": {\"a1\": %d, \"a2\": %d, \"b1\": %d, \"b2\": %d, \"untouched\": %d},\n", (int) a[0].tid,
               (int) a[1].tid, (int) b[0].tid, (int) b[1].tid, (int) untouched);

        /* Two groups. */
        r = cookie_assign(applier, a, 2, res);
        print_results("assign_a", r, res, 2);
        r = cookie_assign(applier, b, 2, res);
        print_results("assign_b", r, res, 2);
        printf("\"after_assign\": {\n");
        print_get("a1", a[0].tid);
        print_get("a2", a[1].tid);
        print_get("b1", b[0].tid);
        print_get("b2", b[1].tid);
        print_get("untouched", untouched);
        print_get("self", 0);
        printf("\"keepalive_tid\": %d},\n", (int) cookie_applier_keepalive_tid(applier));
        if (cookie_applier_keepalive_tid(applier) > 0)
                print_get("keepalive", cookie_applier_keepalive_tid(applier));

        /* A task that exits before its assignment: vanished, not failed. The
         * second of the pair is alive and gets the cookie. */
        {
                pid_t dead = fork_pause(), live = fork_pause();
                CookieTask v[2];

                v[0] = task_of(dead);
                v[1] = task_of(live);
                kill(dead, SIGKILL);
                waitpid(dead, NULL, 0);
                r = cookie_assign(applier, v, 2, res);
                print_results("assign_vanished", r, res, 2);
                print_get("vanished_live", live);
                kill(live, SIGKILL);
                waitpid(live, NULL, 0);
        }

        /* Inheritance: a cookie'd process forks and starts a thread. */
        {
                int cmd = -1, reply = -1;
                pid_t spawner = fork_spawner(&cmd, &reply), ids[2] = { 0, 0 };
                CookieTask s = task_of(spawner);

                r = cookie_assign(applier, &s, 1, res);
                print_results("assign_spawner", r, res, 1);
                if (write(cmd, "x", 1) != 1 || read(reply, ids, sizeof(ids)) != (ssize_t) sizeof(ids))
                        fprintf(stderr, "spawner did not answer\n");
                printf("\"inherit\": {\n");
                print_get("parent", spawner);
                print_get("forked_child", ids[0]);
                print_get("new_thread", ids[1]);
                printf("\"spawner_pid\": %d},\n", (int) spawner);

                /* A process that was not in the group when it was made: join. */
                pid_t later = fork_pause();
                CookieTask l = task_of(later);
                r = cookie_join(applier, &b[0], &l, 1, res);
                print_results("join_b", r, res, 1);
                print_get("join_b_later", later);

                if (ids[0] > 0) {
                        kill(ids[0], SIGKILL);
                        /* the grandchild is the spawner's child: reaped by init when it dies */
                }
                kill(spawner, SIGKILL);
                waitpid(spawner, NULL, 0);
                kill(later, SIGKILL);
                waitpid(later, NULL, 0);
                close(cmd);
                close(reply);
        }

        /* Clear group A; B stays. */
        r = cookie_clear(applier, a, 2, res);
        print_results("clear_a", r, res, 2);
        r = cookie_clear(applier, a, 2, res);
        print_results("clear_a_again", r, res, 2);
        printf("\"after_clear\": {\n");
        print_get("a1", a[0].tid);
        print_get("a2", a[1].tid);
        print_get("b1", b[0].tid);
        print_get("b2", b[1].tid);
        printf("\"keepalive_tid\": %d},\n", (int) cookie_applier_keepalive_tid(applier));

        /* The interlocks: refused, nothing called. */
        {
                CookieInterlocks il = { .smt_off = true };

                cookie_applier_set_interlocks(applier, &il);
                r = cookie_assign(applier, a, 2, res);
                print_results("refused_smt_off", r, res, 2);
                il = (CookieInterlocks) { .sched_ext_active = true };
                cookie_applier_set_interlocks(applier, &il);
                r = cookie_assign(applier, a, 2, res);
                print_results("refused_sched_ext", r, res, 2);
                cookie_applier_set_interlocks(applier, NULL);
        }

        /* Give up the keep-alive. */
        {
                pid_t w = cookie_applier_keepalive_tid(applier);

                r = cookie_applier_release(applier);
                printf("\"release\": {\"return\": %d, \"error\": \"%s\", \"keepalive_tid\": %d},\n", r,
                       r < 0 ? errno_name(r) : "", (int) cookie_applier_keepalive_tid(applier));
                if (w > 0)
                        print_get("worker_after_release", w);
        }

        r = cookie_clear(applier, b, 2, res);
        print_results("clear_b", r, res, 2);
        printf("\"end\": true\n}\n");
        return 0;
}

int main(int argc, char *argv[]) {
        int k, rc;

        bool do_timing = argc == 2 && strcmp(argv[1], "timing") == 0;

        if (!do_timing && (argc != 6 || strcmp(argv[1], "scenario") != 0)) {
                fprintf(stderr, "usage: cookietool scenario PINGPONG BUSY IDLE UNTOUCHED\n"
                                "       cookietool timing\n");
                return 2;
        }
        k = root_open("/", &root);
        if (k < 0) {
                fprintf(stderr, "root_open: %s\n", strerror(-k));
                return 1;
        }
        k = cookie_applier_new(root, NULL, &applier);
        if (k < 0) {
                fprintf(stderr, "cookie_applier_new: %s\n", strerror(-k));
                return 1;
        }
        if (do_timing) {
                printf("{\n");
                timing();
                printf("\"end\": true\n}\n");
                rc = 0;
        } else
                rc = scenario(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
        fflush(stdout);
        applier = cookie_applier_free(applier);
        root = root_free(root);
        return rc;
}
