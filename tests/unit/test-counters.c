/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* observe/counters: the AVX-512 counter set behind its ops (a fake counter
 * source with recorded readings), and the live perf_event_open() path on
 * this machine: its failure modes for a hardware event where no PMU is
 * visible, and a software event for the plumbing, so that no line of it
 * first runs on a customer's machine. */

#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/util.h"
#include "observe/counters.h"
#include "tests.h"

/* ---- a fake source: per tid an error to open with, or recorded readings ---- */

typedef struct FakeCounter {
        pid_t tid;
        int open_error;
        uint64_t value;
        int fd;  /* while open */
} FakeCounter;

static FakeCounter fake[8];
static unsigned opens, closes;

static FakeCounter *fake_by_tid(pid_t tid) {
        for (size_t i = 0; i < ELEMENTSOF(fake); i++)
                if (fake[i].tid == tid)
                        return &fake[i];
        return NULL;
}

static int fk_open(const CounterAttr *a, pid_t tid, void *userdata) {
        FakeCounter *c = fake_by_tid(tid);

        (void) a;
        (void) userdata;
        if (!c)
                return -ESRCH;
        if (c->open_error)
                return c->open_error;
        opens++;
        c->fd = 100 + (int) (c - fake);
        return c->fd;
}

static int fk_read(int fd, uint64_t *ret, void *userdata) {
        (void) userdata;
        for (size_t i = 0; i < ELEMENTSOF(fake); i++)
                if (fake[i].fd == fd) {
                        *ret = fake[i].value;
                        return 0;
                }
        return -EBADF;
}

static void fk_close(int fd, void *userdata) {
        (void) userdata;
        for (size_t i = 0; i < ELEMENTSOF(fake); i++)
                if (fake[i].fd == fd)
                        fake[i].fd = 0;
        closes++;
}

static const CounterOps fake_ops = { .open = fk_open, .read = fk_read, .close = fk_close };

/* Sync opens the new, keeps the held, closes the dropped; a thread gone is
 * skipped, a permanent refusal remembered (not tried again), a temporary
 * one tried again at the next sync. */
static void test_set(void) {
        _cleanup_(counter_set_freep) CounterSet *s = NULL;
        CounterAttr attr = { .type = PERF_TYPE_RAW, .config = 0xc7 };
        pid_t a[] = { 10, 11, 12, 13 }, b[] = { 11, 12, 13, 14 };
        uint64_t v;

        fake[0] = (FakeCounter) { .tid = 10, .value = 5 };
        fake[1] = (FakeCounter) { .tid = 11, .value = 7 };
        fake[2] = (FakeCounter) { .tid = 12, .open_error = -EACCES };
        fake[3] = (FakeCounter) { .tid = 13, .open_error = -EMFILE };
        fake[4] = (FakeCounter) { .tid = 14, .value = 9 };
        ASSERT_OK(counter_set_new(&fake_ops, &attr, &s));
        ASSERT_EQ(counter_set_sync(s, a, 4), 2);
        ASSERT_EQ(opens, 2u);
        ASSERT_OK(counter_set_read(s, 10, &v));
        ASSERT_EQ(v, 5u);
        ASSERT_ERROR(counter_set_read(s, 12, &v), EACCES);
        ASSERT_ERROR(counter_set_read(s, 13, &v), ENOENT); /* temporary: not held */
        ASSERT_ERROR(counter_set_read(s, 99, &v), ENOENT);

        fake[3].open_error = 0;
        ASSERT_EQ(counter_set_sync(s, b, 4), 3); /* 11 kept, 12 still refused, 13 now, 14 new */
        ASSERT_EQ(opens, 4u);
        ASSERT_EQ(closes, 1u); /* 10 */
        ASSERT_EQ(counter_set_size(s), 3u);
        fake[1].value = 70;
        ASSERT_OK(counter_set_read(s, 11, &v));
        ASSERT_EQ(v, 70u);
        ASSERT_EQ(counter_set_stats(s).opened, 4u);
        ASSERT_EQ(counter_set_stats(s).refused, 2u);
        s = counter_set_free(s);
        ASSERT_EQ(closes, 4u);
}

static void test_error_states(void) {
        ASSERT_EQ(counter_error_state(-EACCES), COUNTER_NOT_PERMITTED);
        ASSERT_EQ(counter_error_state(-EPERM), COUNTER_NOT_PERMITTED);
        ASSERT_EQ(counter_error_state(-ENOENT), COUNTER_UNSUPPORTED);
        ASSERT_EQ(counter_error_state(-EOPNOTSUPP), COUNTER_UNSUPPORTED);
        ASSERT_TRUE(counter_error_is_temporary(-EMFILE));
        ASSERT_FALSE(counter_error_is_temporary(-EACCES));
        ASSERT_STREQ(counter_state_to_string(COUNTER_NO_EVENT), "no-event");
}

/* ---- the live path on this machine ---------------------------------------- */

static volatile int spin_stop;
static volatile pid_t spin_tid;

static void *spin(void *arg) {
        volatile unsigned long n = 0;

        (void) arg;
        spin_tid = (pid_t) syscall(SYS_gettid);
        while (!spin_stop)
                n++;
        return NULL;
}

/* The probe says what this machine has, in words; a raw hardware event is
 * opened or refused with the errno sorted; a software event (task-clock)
 * on a busy thread, through the same set and ops the daemon uses, counts. */
static void test_host(void) {
        CounterProbe p = {};
        CounterAttr raw = { .type = PERF_TYPE_RAW, .config = 0x40c7 }; /* FP_ARITH_INST_RETIRED.512B_PACKED_DOUBLE */
        CounterAttr clock = { .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_TASK_CLOCK };
        _cleanup_(counter_set_freep) CounterSet *s = NULL;
        pthread_t t;
        uint64_t v0 = 0, v1 = 0;
        pid_t tid;
        int fd;

        ASSERT_OK(counters_probe(NULL, &p));
        printf("  probe here: %s: %s\n", counter_state_to_string(p.state), p.reason);
        ASSERT_NOT_NULL(p.reason);
        if (p.state == COUNTER_AVAILABLE)
                ASSERT_NOT_NULL(p.event);
        else
                ASSERT_LT(p.error, 0);
        counter_probe_done(&p);

        fd = counter_ops_host.open(&raw, 0, NULL);
        printf("  raw 0x40c7 on ourselves: %s (%s)\n", fd >= 0 ? "opened" : errno_name(fd),
               counter_state_to_string(counter_error_state(fd < 0 ? fd : 0)));
        if (fd >= 0)
                counter_ops_host.close(fd, NULL);
        else
                ASSERT_NE(counter_error_state(fd), COUNTER_AVAILABLE);

        fd = counter_ops_host.open(&clock, 0, NULL);
        if (fd == -ENOSYS || fd == -EACCES || fd == -EPERM)
                test_skip("perf_event_open() for a software event refused here (%s): the plumbing cannot run",
                          errno_name(fd));
        ASSERT_GE(fd, 0);
        counter_ops_host.close(fd, NULL);

        ASSERT_EQ(pthread_create(&t, NULL, spin, NULL), 0);
        while (!spin_tid)
                usleep(1000);
        tid = spin_tid;
        ASSERT_OK(counter_set_new(NULL, &clock, &s));
        ASSERT_EQ(counter_set_sync(s, &tid, 1), 1);
        ASSERT_OK(counter_set_read(s, tid, &v0));
        usleep(50000);
        ASSERT_OK(counter_set_read(s, tid, &v1));
        printf("  task-clock of a busy thread: %llu ns in 50 ms\n", (unsigned long long) (v1 - v0));
        ASSERT_GT(v1, v0);
        spin_stop = 1;
        pthread_join(t, NULL);
        /* no longer a candidate: the next sync closes its counter */
        ASSERT_EQ(counter_set_sync(s, NULL, 0), 0);
        ASSERT_ERROR(counter_set_read(s, tid, &v1), ENOENT);
}

int main(void) {
        RUN(test_set);
        RUN(test_error_states);
        RUN(test_host);
        return 0;
}
