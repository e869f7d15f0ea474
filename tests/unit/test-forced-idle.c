/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* observe/forced-idle: the kernel's forced idle counters as it prints them. */

#include <errno.h>
#include <string.h>

#include "observe/forced-idle.h"
#include "tests.h"

static void test_cpu_stat(void) {
        static const char six12[] = "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n"
                                    "core_sched.force_idle_usec 7890\nnr_periods 0\nnr_throttled 0\n";
        static const char nocore[] = "usage_usec 5\nuser_usec 5\nsystem_usec 0\n";
        ForcedIdleStat s;

        ASSERT_OK(forced_idle_parse_cpu_stat(six12, strlen(six12), &s));
        ASSERT_EQ(s.usage_usec, 123456u);
        ASSERT_EQ(s.force_idle_usec, 7890u);
        ASSERT_TRUE(s.has_force_idle);
        ASSERT_OK(forced_idle_parse_cpu_stat(nocore, strlen(nocore), &s));
        ASSERT_EQ(s.usage_usec, 5u);
        ASSERT_FALSE(s.has_force_idle);
        ASSERT_ERROR(forced_idle_parse_cpu_stat("user_usec 5\n", 12, &s), ENODATA);
        ASSERT_ERROR(forced_idle_parse_cpu_stat("usage_usec x\n", 13, &s), EINVAL);
        /* a key that only starts like one is not it */
        ASSERT_ERROR(forced_idle_parse_cpu_stat("usage_usecs 5\n", 14, &s), ENODATA);
}

static void test_task_sched(void) {
        static const char on[] = "ping (42, #threads: 2)\n-------\nse.exec_start                                :"
                                 "        1234.567890\ncore_forceidle_sum                           :"
                                 "          12.345678\nnr_switches                                  :   9\n";
        static const char whole[] = "core_forceidle_sum : 3\n";
        static const char off[] = "se.exec_start : 1.000000\nnr_switches : 9\n";
        uint64_t us;

        ASSERT_OK(forced_idle_parse_task_sched(on, strlen(on), &us));
        ASSERT_EQ(us, 12345u); /* 12.345678 ms */
        ASSERT_OK(forced_idle_parse_task_sched(whole, strlen(whole), &us));
        ASSERT_EQ(us, 3000u);
        ASSERT_ERROR(forced_idle_parse_task_sched(off, strlen(off), &us), ENODATA);
        ASSERT_ERROR(forced_idle_parse_task_sched("core_forceidle_sum : -1\n", 24, &us), EINVAL);
}

int main(void) {
        RUN(test_cpu_stat);
        RUN(test_task_sched);
        return 0;
}
