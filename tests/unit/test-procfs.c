/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/macro.h"
#include "observe/procfs.h"
#include "tests.h"

#define STAT_TAIL " S 1 1234 1234 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 4 0 5678 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0"

static void test_stat(void) {
        static const char text[] = "1234 (worker) S 1 1234 1234 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 4 0 5678 1000000 "
                                   "200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n";
        ProcStat s;

        ASSERT_OK(procfs_parse_stat(text, sizeof(text) - 1, &s));
        ASSERT_EQ(s.pid, 1234);
        ASSERT_STREQ(s.comm, "worker");
        ASSERT_EQ(s.state, 'S');
        ASSERT_EQ(s.ppid, 1);
        ASSERT_EQ(s.flags, 4194560);
        ASSERT_EQ(s.utime, 7);
        ASSERT_EQ(s.stime, 3);
        ASSERT_EQ(s.nice, 0);
        ASSERT_EQ(s.num_threads, 4);
        ASSERT_EQ(s.start_time, 5678);
        ASSERT_EQ(s.processor, 3);
        ASSERT_EQ(s.policy, 0);
}

static void test_stat_odd_comm(void) {
        /* comm with spaces, parentheses and a newline: the last ')' ends it. */
        static const char text[] = "77 (a) b (c\n)" STAT_TAIL;
        static const char kthread[] = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 2 0 0 "
                                      "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 0 0 0 0 0";
        static const char negnice[] = "9 (x) R 1 1 1 0 -1 0 0 0 0 0 5 5 0 0 39 19 1 0 9 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 99 1";
        ProcStat s;

        ASSERT_OK(procfs_parse_stat(text, sizeof(text) - 1, &s));
        ASSERT_STREQ(s.comm, "a) b (c\n");
        ASSERT_EQ(s.ppid, 1);
        ASSERT_OK(procfs_parse_stat(kthread, sizeof(kthread) - 1, &s));
        ASSERT_TRUE(s.flags & PROCFS_PF_KTHREAD);
        ASSERT_EQ(s.ppid, 0);
        ASSERT_OK(procfs_parse_stat(negnice, sizeof(negnice) - 1, &s));
        ASSERT_EQ(s.nice, 19);
        ASSERT_EQ(s.rt_priority, 99);
        ASSERT_EQ(s.policy, 1);
}

static void test_stat_bad(void) {
        ProcStat s = { .pid = 42 };
        static const char *bad[] = {
                "",
                "1 (x",
                "x (y) S 1",
                "1 (y) S",
                "1 (y) S 1 2 3",
                "0 (y)" STAT_TAIL,
                "-5 (y)" STAT_TAIL,
                "1 (y) S 1 1234 1234 0 -1 4194560 100 0 0 0 7 3 0 0 20 99 4 0 5678", /* nice 99, truncated */
                "1 (y) S 99999999999999999999999",
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (procfs_parse_stat(bad[i], strlen(bad[i]), &s) >= 0)
                        TEST_FAIL("accepted bad stat #%zu: %s", i, bad[i]);
        ASSERT_EQ(s.pid, 42); /* untouched */

        /* Bounded: a buffer without NUL must not be read past its length. */
        {
                char buf[8];
                memcpy(buf, "1 (abcde", 8);
                ASSERT_ERROR(procfs_parse_stat(buf, sizeof(buf), &s), EINVAL);
        }
}

static void test_status(void) {
        static const char text[] = "Name:\tworker\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t1234\nNgid:\t0\n"
                                   "Pid:\t1240\nPPid:\t1\nUid:\t1000\t1001\t1000\t1000\nGid:\t100\t101\t100\t100\n"
                                   "voluntary_ctxt_switches:\t150\nnonvoluntary_ctxt_switches:\t3\n";
        static const char partial[] = "Name:\tx\nUid:\t0\t0\t0\t0\n";
        ProcStatus s;

        ASSERT_OK(procfs_parse_status(text, sizeof(text) - 1, &s));
        ASSERT_EQ(s.tgid, 1234);
        ASSERT_TRUE(s.has_uid);
        ASSERT_EQ(s.uid, 1000);
        ASSERT_EQ(s.euid, 1001);
        ASSERT_EQ(s.gid, 100);
        ASSERT_TRUE(s.has_ctxt);
        ASSERT_EQ(s.voluntary_ctxt, 150);
        ASSERT_EQ(s.nonvoluntary_ctxt, 3);

        ASSERT_OK(procfs_parse_status(partial, sizeof(partial) - 1, &s));
        ASSERT_TRUE(s.has_uid);
        ASSERT_FALSE(s.has_ctxt);
        ASSERT_ERROR(procfs_parse_status("Uid:\tx\n", 7, &s), EINVAL);
        ASSERT_ERROR(procfs_parse_status("Uid:\t99999999999 0\n", 19, &s), EINVAL);
}

static void test_schedstat_arch_cgroup(void) {
        ProcSchedstat ss;
        ProcAvx kind;
        uint64_t ms = 7;
        char *cg = NULL;

        ASSERT_OK(procfs_parse_schedstat("123456 789 10\n", 14, &ss));
        ASSERT_EQ(ss.run_ns, 123456);
        ASSERT_EQ(ss.wait_ns, 789);
        ASSERT_EQ(ss.timeslices, 10);
        ASSERT_ERROR(procfs_parse_schedstat("1 2\n", 4, &ss), EINVAL);

        ASSERT_OK(procfs_parse_arch_status("AVX512_elapsed_ms:\t-1\n", 22, &kind, &ms));
        ASSERT_EQ(kind, PROC_AVX_NEVER);
        ASSERT_EQ(ms, 7);
        ASSERT_OK(procfs_parse_arch_status("AVX512_elapsed_ms:\t42\n", 22, &kind, &ms));
        ASSERT_EQ(kind, PROC_AVX_ELAPSED);
        ASSERT_EQ(ms, 42);
        ASSERT_OK(procfs_parse_arch_status("", 0, &kind, &ms));
        ASSERT_EQ(kind, PROC_AVX_NO_LINE);
        ASSERT_ERROR(procfs_parse_arch_status("AVX512_elapsed_ms:\t-2\n", 22, &kind, &ms), EINVAL);

        ASSERT_OK(procfs_parse_cgroup("12:cpu:/x\n0::/system.slice/a b.service\n", 40, &cg));
        ASSERT_STREQ(cg, "/system.slice/a b.service");
        free(cg);
        cg = NULL;
        ASSERT_ERROR(procfs_parse_cgroup("12:cpu:/x\n", 10, &cg), ENODATA);
        ASSERT_NULL(cg);
}

static void test_cmdline(void) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;

        ASSERT_OK(procfs_format_cmdline("sleep\0" "10\0", 9, 100, &a));
        ASSERT_STREQ(a, "sleep 10");
        ASSERT_OK(procfs_format_cmdline("a\nb\0", 4, 100, &b));
        ASSERT_STREQ(b, "a?b");
        ASSERT_OK(procfs_format_cmdline("abcdef", 6, 3, &c));
        ASSERT_STREQ(c, "abc");
}

int main(void) {
        RUN(test_stat);
        RUN(test_stat_odd_comm);
        RUN(test_stat_bad);
        RUN(test_status);
        RUN(test_schedstat_arch_cgroup);
        RUN(test_cmdline);
        return 0;
}
