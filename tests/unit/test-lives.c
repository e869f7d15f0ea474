/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* observe/lives: which processes died whole, from FORK and EXIT events. */

#include <stdlib.h>

#include "observe/lives.h"
#include "tests.h"

static Lives *new_lives(void) {
        Lives *l = NULL;

        ASSERT_OK(lives_new(&l));
        return l;
}

/* One thread: its EXIT is the process's death. */
static void test_single_thread(void) {
        Lives *l = new_lives();

        lives_fork(l, 500, 500);
        ASSERT_FALSE(lives_dead(l, 500));
        lives_exit(l, 500, 500);
        ASSERT_TRUE(lives_dead(l, 500));
        ASSERT_FALSE(lives_dead(l, 501));
        /* The number taken again, by a process or by a thread: not dead. */
        lives_fork(l, 500, 500);
        ASSERT_FALSE(lives_dead(l, 500));
        lives_exit(l, 500, 500);
        ASSERT_TRUE(lives_dead(l, 500));
        lives_fork(l, 600, 600);
        lives_fork(l, 500, 600);
        ASSERT_FALSE(lives_dead(l, 500));
        ASSERT_EQ(lives_stats(l).dead, 0);
        ASSERT_EQ(lives_stats(l).counted, 1);
        lives_free(l);
}

/* The main thread ends first (pthread_exit): the process lives on in
 * the others, and dies with the last. */
static void test_main_thread_first(void) {
        Lives *l = new_lives();

        lives_fork(l, 700, 700);
        lives_fork(l, 701, 700);
        lives_fork(l, 702, 700);
        lives_exit(l, 700, 700);
        ASSERT_FALSE(lives_dead(l, 700));
        lives_exit(l, 702, 700);
        ASSERT_FALSE(lives_dead(l, 700));
        lives_exit(l, 701, 700);
        ASSERT_TRUE(lives_dead(l, 700));
        lives_free(l);
}

/* A thread execs: the others exit, the old main thread among them (its
 * EXIT names the process's number); the one that exec'd goes on as the
 * process, under that number, and its exit is the death. */
static void test_thread_execs(void) {
        Lives *l = new_lives();

        lives_fork(l, 800, 800);
        lives_fork(l, 801, 800);
        lives_fork(l, 802, 800);
        lives_exit(l, 802, 800);
        lives_exit(l, 800, 800); /* the old main thread */
        ASSERT_FALSE(lives_dead(l, 800));
        lives_exit(l, 800, 800); /* the exec'd thread, as the main one */
        ASSERT_TRUE(lives_dead(l, 800));
        lives_free(l);
}

/* A process born before anything was seen, or a thread of one: never known dead. */
static void test_unseen_birth(void) {
        Lives *l = new_lives();

        lives_fork(l, 901, 900);
        lives_exit(l, 901, 900);
        lives_exit(l, 900, 900);
        ASSERT_FALSE(lives_dead(l, 900));
        ASSERT_EQ(lives_stats(l).counted + lives_stats(l).dead, 0);
        ASSERT_FALSE(lives_dead(NULL, 900));
        lives_free(l);
}

/* Lost events: nothing known; deaths kept LIVES_ERAS eras. */
static void test_forget_and_eras(void) {
        Lives *l = new_lives();

        lives_fork(l, 1000, 1000);
        lives_fork(l, 1001, 1001);
        lives_exit(l, 1000, 1000);
        lives_forget(l);
        ASSERT_FALSE(lives_dead(l, 1000));
        lives_exit(l, 1001, 1001); /* counted before the loss: not any more */
        ASSERT_FALSE(lives_dead(l, 1001));

        lives_fork(l, 1002, 1002);
        lives_exit(l, 1002, 1002);
        for (unsigned e = 1; e < LIVES_ERAS; e++) {
                lives_next_era(l);
                ASSERT_TRUE(lives_dead(l, 1002));
        }
        lives_next_era(l);
        ASSERT_FALSE(lives_dead(l, 1002));
        ASSERT_EQ(lives_stats(l).dead, 0);
        lives_free(l);
}

/* Lost events: suspended, nothing counted until resumed (the socket read
 * empty), then counting afresh. */
static void test_suspend(void) {
        Lives *l = new_lives();

        lives_fork(l, 1100, 1100);
        lives_suspend(l);
        /* In the gap: a thread born unseen, then these. */
        lives_fork(l, 1200, 1200);
        lives_exit(l, 1200, 1200);
        lives_exit(l, 1100, 1100);
        ASSERT_FALSE(lives_dead(l, 1100));
        ASSERT_FALSE(lives_dead(l, 1200));
        lives_resume(l);
        lives_exit(l, 1100, 1100);
        ASSERT_FALSE(lives_dead(l, 1100)); /* counted before: not any more */
        lives_fork(l, 1300, 1300);
        lives_exit(l, 1300, 1300);
        ASSERT_TRUE(lives_dead(l, 1300));
        lives_resume(l); /* not suspended: nothing */
        ASSERT_TRUE(lives_dead(l, 1300));
        lives_free(l);
}

/* Many, in runs of consecutive numbers (an exec storm's), the table grown
 * and swept: every answer stays right after each removal. */
static void test_many(void) {
        enum { N = 20000 };
        Lives *l = new_lives();
        bool *dead = calloc(N, sizeof(bool));

        ASSERT_NOT_NULL(dead);
        for (pid_t p = 1; p < N; p++)
                lives_fork(l, 100000 + p, 100000 + p);
        /* Every third dies, then in the next era every fifth of the rest. */
        for (pid_t p = 1; p < N; p += 3) {
                lives_exit(l, 100000 + p, 100000 + p);
                dead[p] = true;
        }
        lives_next_era(l);
        for (pid_t p = 1; p < N; p += 5)
                if (!dead[p]) {
                        lives_exit(l, 100000 + p, 100000 + p);
                        dead[p] = true;
                }
        for (pid_t p = 1; p < N; p++)
                ASSERT_EQ(lives_dead(l, 100000 + p), dead[p]);
        /* The first deaths leave the table, the later stay. */
        for (unsigned e = 1; e < LIVES_ERAS; e++)
                lives_next_era(l);
        for (pid_t p = 1; p < N; p++) {
                bool later = dead[p] && (p - 1) % 3 != 0;

                ASSERT_EQ(lives_dead(l, 100000 + p), later);
        }
        /* Those alive are still counted: their deaths are known. */
        for (pid_t p = 1; p < N; p++)
                if (!dead[p]) {
                        lives_exit(l, 100000 + p, 100000 + p);
                        ASSERT_TRUE(lives_dead(l, 100000 + p));
                }
        lives_next_era(l);
        lives_next_era(l);
        lives_next_era(l);
        ASSERT_EQ(lives_stats(l).counted, 0);
        ASSERT_EQ(lives_stats(l).dead, 0);
        free(dead);
        lives_free(l);
}

int main(void) {
        RUN(test_single_thread);
        RUN(test_main_thread_first);
        RUN(test_thread_execs);
        RUN(test_unseen_birth);
        RUN(test_forget_and_eras);
        RUN(test_suspend);
        RUN(test_many);
        return 0;
}
