/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* base/util: the string helpers of the hot paths. */

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/escape.h"
#include "base/util.h"
#include "tests.h"

static void test_strjoin(void) {
        _cleanup_free_ char *a = strjoin("/sys/fs/cgroup", "/topod.slice", "/", "cgroup.procs");
        _cleanup_free_ char *b = strjoin("", "");
        _cleanup_free_ char *c = strjoin("one");

        ASSERT_STREQ(a, "/sys/fs/cgroup/topod.slice/cgroup.procs");
        ASSERT_STREQ(b, "");
        ASSERT_STREQ(c, "one");
}

/* Into a buffer: the length, or -ENAMETOOLONG and "" when the string and
 * its NUL do not fit (exactly fitting is fine). */
static void test_strjoin_buf(void) {
        char buf[12];

        ASSERT_EQ(strjoin_buf(buf, sizeof(buf), "proc/", "4194304", "/c"), -ENAMETOOLONG);
        ASSERT_STREQ(buf, "");
        ASSERT_EQ(strjoin_buf(buf, sizeof(buf), "proc/", "123", "/cg"), 11);
        ASSERT_STREQ(buf, "proc/123/cg");
        ASSERT_EQ(strjoin_buf(buf, sizeof(buf), "proc/", "1234", "/cg"), -ENAMETOOLONG);
        ASSERT_STREQ(buf, "");
        ASSERT_EQ(strjoin_buf(buf, sizeof(buf), "", ""), 0);
        ASSERT_STREQ(buf, "");
        ASSERT_EQ(strjoin_buf(buf, 1, "x"), -ENAMETOOLONG);
        ASSERT_STREQ(buf, "");
        buf[0] = 'q';
        ASSERT_EQ(strjoin_buf(buf, 0, ""), -ENAMETOOLONG); /* no room even for the NUL: untouched */
        ASSERT_EQ(buf[0], 'q');
        ASSERT_EQ(strjoin_buf(buf, sizeof(buf), "one"), 3);
        ASSERT_STREQ(buf, "one");
}

static void test_format_u64(void) {
        static const uint64_t values[] = { 0, 7, 10, 4194304, 2147483647, UINT64_MAX - 1, UINT64_MAX };
        char buf[21], want[32];

        for (size_t i = 0; i < ELEMENTSOF(values); i++) {
                size_t n = format_u64(buf, values[i]);

                snprintf(want, sizeof(want), "%" PRIu64, values[i]);
                ASSERT_STREQ(buf, want);
                ASSERT_EQ(n, strlen(want));
        }
}

static bool fd_open(int fd) {
        return fcntl(fd, F_GETFD) >= 0;
}

/* What the bin holds is closed when it is emptied, in runs of consecutive
 * numbers (close_range()) or one by one; a number it does not hold, in the
 * middle of a run, stays open. Without a bin, or past its room, at once. */
static void test_fd_bin(void) {
        FdBin bin = {};
        int fd[8];

        for (size_t i = 0; i < ELEMENTSOF(fd); i++)
                ASSERT_GE((fd[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)), 0);
        /* In any order: 0 1 2, not 3 (someone else's), 4 5, 7. */
        fd_bin_put(&bin, fd[5]);
        fd_bin_put(&bin, fd[0]);
        fd_bin_put(&bin, fd[2]);
        fd_bin_put(&bin, fd[1]);
        fd_bin_put(&bin, fd[4]);
        fd_bin_put(&bin, fd[7]);
        fd_bin_put(&bin, -EBADF); /* nothing */
        ASSERT_EQ(bin.n, 6);
        for (size_t i = 0; i < ELEMENTSOF(fd); i++)
                ASSERT_TRUE(fd_open(fd[i]));
        fd_bin_empty(&bin);
        ASSERT_EQ(bin.n, 0);
        for (size_t i = 0; i < ELEMENTSOF(fd); i++)
                ASSERT_EQ(fd_open(fd[i]), i == 3 || i == 6);
        /* Runs are found in order (0 1 2 is one close_range()): what it
         * held is left in ascending order. */
        for (size_t i = 1; i < 6; i++)
                ASSERT_LT(bin.fd[i - 1], bin.fd[i]);
        fd_bin_put(NULL, fd[3]);
        ASSERT_FALSE(fd_open(fd[3]));
        fd_bin_empty(&bin); /* empty: nothing */
        ASSERT_TRUE(fd_open(fd[6]));

        /* Full: the next is closed at once. */
        for (size_t i = 0; i < FD_BIN_MAX; i++)
                fd_bin_put(&bin, dup(fd[6]));
        ASSERT_EQ(bin.n, FD_BIN_MAX);
        {
                int extra = dup(fd[6]);

                ASSERT_GE(extra, 0);
                fd_bin_put(&bin, extra);
                ASSERT_FALSE(fd_open(extra));
        }
        fd_bin_empty(&bin);
        ASSERT_TRUE(fd_open(fd[6]));
        ASSERT_EQ(close(fd[6]), 0);
}

/* The one escaping: UTF-8 kept once, invalid bytes \xHH, control
 * characters \xHH with ESCAPE_CONTROL (newlines kept only when asked). */
static void test_escape(void) {
        static const struct {
                const char *in;
                EscapeFlags flags;
                const char *out;
        } cases[] = {
                { "caf\xc3\xa9", ESCAPE_CONTROL, "caf\xc3\xa9" },
                { "a\xff" "b", 0, "a\\xffb" },
                { "\xc3(", 0, "\\xc3(" },
                { "\xe2\x82", 0, "\\xe2\\x82" },
                { "\xc0\xaf", 0, "\\xc0\\xaf" },         /* overlong '/' */
                { "\xed\xa0\x80", 0, "\\xed\\xa0\\x80" }, /* a surrogate */
                { "\xf4\x90\x80\x80", 0, "\\xf4\\x90\\x80\\x80" }, /* past U+10FFFF */
                { "\xf0\x9f\x98\x80", ESCAPE_CONTROL, "\xf0\x9f\x98\x80" },
                { "\x1b]0;evil\x07", ESCAPE_CONTROL, "\\x1b]0;evil\\x07" },
                { "x\ny\tz", ESCAPE_CONTROL, "x\\x0ay\\x09z" },
                { "x\ny\tz\r", ESCAPE_CONTROL | ESCAPE_KEEP_NEWLINE, "x\ny\tz\\x0d" },
                { "\xc2\x9b", ESCAPE_CONTROL, "\\xc2\\x9b" }, /* C1 CSI */
                { "\x1b", 0, "\x1b" },
                { "a\\x2db", ESCAPE_CONTROL, "a\\x2db" }, /* systemd's escapes kept */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *e = escape_string(cases[i].in, cases[i].flags);

                ASSERT_STREQ(e, cases[i].out);
                ASSERT_TRUE(utf8_valid(e, strlen(e), NULL));
        }
        {
                size_t bad = 0;

                ASSERT_TRUE(utf8_valid("caf\xc3\xa9", 5, NULL));
                ASSERT_FALSE(utf8_valid("ab\xff" "c", 4, &bad));
                ASSERT_EQ(bad, 2u);
                ASSERT_FALSE(utf8_valid("ab\0c", 4, &bad));
                ASSERT_EQ(bad, 2u);
        }
}

int main(void) {
        RUN(test_escape);
        RUN(test_strjoin);
        RUN(test_strjoin_buf);
        RUN(test_format_u64);
        RUN(test_fd_bin);
        return 0;
}
