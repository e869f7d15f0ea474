/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "observe/sysload.h"
#include "tests.h"

static void test_parse(void) {
        static const char text[] = "cpu  100 5 50 9000 7 3 2 1 0 0\n"
                                   "cpu0 50 2 25 4500 3 1 1 0 0 0\n"
                                   "intr 1234 0 0\n"
                                   "ctxt 987654\n"
                                   "btime 1700000000\n";
        SysLoad l;

        /* no trailing NUL is read: the length decides */
        ASSERT_OK(sysload_parse(text, strlen(text), &l));
        ASSERT_EQ(l.busy_ticks, 100u + 5 + 50 + 3 + 2 + 1); /* user nice system irq softirq steal */
        ASSERT_EQ(l.ctxt, 987654u);

        /* an old kernel's four columns; no ctxt line */
        ASSERT_OK(sysload_parse("cpu  1 2 3 4\n", 13, &l));
        ASSERT_EQ(l.busy_ticks, 6u);
        ASSERT_EQ(l.ctxt, 0u);

        ASSERT_ERROR(sysload_parse("cpu0 1 2 3 4\n", 13, &l), EINVAL); /* no aggregate line */
        ASSERT_ERROR(sysload_parse("cpu  1 2\n", 9, &l), EINVAL);
        ASSERT_ERROR(sysload_parse("", 0, &l), EINVAL);
        /* cut in the middle of a number: the cut decides */
        ASSERT_OK(sysload_parse("cpu  10 20 30 40 55", 17, &l));
        ASSERT_EQ(l.busy_ticks, 60u);
        ASSERT_ERROR(sysload_parse("cpu  99999999999999999999 1 1 1\n", 33, &l), EINVAL);
}

static void test_idle(void) {
        SysLoad a = { .busy_ticks = 1000 }, b = { .busy_ticks = 1003 };

        /* 3 ticks at 100 Hz = 30 ms: all ours (30 ms) → idle */
        ASSERT_TRUE(sysload_idle(&a, &b, 30000, 1, 100));
        /* ours 10 ms, slack 1: 1 + 1 < 3 → busy */
        ASSERT_FALSE(sysload_idle(&a, &b, 10000, 1, 100));
        /* ours 20 ms + slack 1 = 3 → idle */
        ASSERT_TRUE(sysload_idle(&a, &b, 20000, 1, 100));
        /* counters going back (a reset, a bad read): busy, scan */
        ASSERT_FALSE(sysload_idle(&b, &a, 0, 100, 100));
        ASSERT_FALSE(sysload_idle(&a, &b, 0, 100, 0));
}

static void test_quiet(void) {
        SysLoad a = { .ctxt = 1000 }, b = { .ctxt = 1250 };

        /* 250 switches: ours 100 sleeps (200 switches) + 50 allowed → quiet */
        ASSERT_TRUE(sysload_quiet(&a, &b, 100, 50));
        ASSERT_FALSE(sysload_quiet(&a, &b, 100, 49));
        /* a latency thread at 200 wake-ups/s beside an idle topod: busy */
        ASSERT_FALSE(sysload_quiet(&a, &(SysLoad) { .ctxt = 1000 + 400 + 10 }, 5, 100));
        ASSERT_FALSE(sysload_quiet(&b, &a, 0, 1000000));
}

static void test_loadavg(void) {
        uint64_t c = 0;

        ASSERT_OK(sysload_parse_loadavg("1.23 0.58 0.59 2/1234 5678\n", 27, &c));
        ASSERT_EQ(c, 123u);
        ASSERT_OK(sysload_parse_loadavg("104.5 1 1 1/1 1", 15, &c));
        ASSERT_EQ(c, 10450u);
        ASSERT_OK(sysload_parse_loadavg("0.999 x", 7, &c)); /* hundredths, not rounded */
        ASSERT_EQ(c, 99u);
        ASSERT_OK(sysload_parse_loadavg("7\n", 2, &c));
        ASSERT_EQ(c, 700u);
        ASSERT_ERROR(sysload_parse_loadavg("", 0, &c), EINVAL);
        ASSERT_ERROR(sysload_parse_loadavg("-1.00 0 0", 9, &c), EINVAL);
        ASSERT_ERROR(sysload_parse_loadavg("1.2x 0 0", 8, &c), EINVAL);
        ASSERT_ERROR(sysload_parse_loadavg("99999999999999999999.00", 23, &c), ERANGE);
}

int main(void) {
        RUN(test_parse);
        RUN(test_loadavg);
        RUN(test_idle);
        RUN(test_quiet);
        return 0;
}
