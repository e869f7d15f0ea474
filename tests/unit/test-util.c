/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* base/util: the string helpers of the hot paths. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

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

int main(void) {
        RUN(test_strjoin);
        RUN(test_format_u64);
        return 0;
}
