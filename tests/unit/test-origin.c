/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pipeline/origin: a process topod moved is judged by its journaled
 * original cgroup; a child forked after the move by its nearest journaled
 * ancestor's; one outside topod's tree by where it is. */
#include <stdlib.h>
#include <string.h>

#include "apply/journal.h"
#include "pipeline/origin.h"
#include "tests.h"

static void test_origin(void) {
        _cleanup_(journal_freep) Journal *j = NULL;
        ProcessFacts pf[3] = {
                { .tgid = 100, .start_time = 7, .cgroup = (char *) "/topod.slice/latency" },
                { .tgid = 200, .start_time = 9, .cgroup = (char *) "/topod.slice/latency" },
                { .tgid = 300, .start_time = 11, .cgroup = (char *) "/topod.slice/latency" },
        };
        TaskFacts tf[3] = {
                { .tid = 100, .tgid = 100, .ppid = 50, .start_time = 7, .process = &pf[0] },
                { .tid = 200, .tgid = 200, .ppid = 100, .start_time = 9, .process = &pf[1] },
                { .tid = 300, .tgid = 300, .ppid = 200, .start_time = 11, .process = &pf[2] },
        };
        TaskSnapshot snap = { .tasks = tf, .n_tasks = 3 };

        ASSERT_OK(journal_new("/nonexistent", &j));
        ASSERT_EQ(journal_record_task(j, 100, 7, "/user.slice/user-0.slice/session-1.scope"), 1);
        /* moved: its original */
        ASSERT_STREQ(origin_cgroup(j, "/topod.slice", &snap, 100, 7, 50, "/topod.slice/latency"),
                     "/user.slice/user-0.slice/session-1.scope");
        /* a child and a grandchild forked after the move: the parent's */
        ASSERT_STREQ(origin_cgroup(j, "/topod.slice", &snap, 200, 9, 100, "/topod.slice/latency"),
                     "/user.slice/user-0.slice/session-1.scope");
        ASSERT_STREQ(origin_cgroup(j, "/topod.slice", &snap, 300, 0, 200, "/topod.slice/latency"),
                     "/user.slice/user-0.slice/session-1.scope");
        /* a reused pid (another start time) is not the journaled one */
        ASSERT_STREQ(origin_cgroup(j, "/topod.slice", NULL, 100, 8, 50, "/topod.slice/latency"), "/topod.slice/latency");
        /* outside topod's tree: where it is */
        ASSERT_STREQ(origin_cgroup(j, "/topod.slice", &snap, 100, 7, 50, "/lab/x"), "/lab/x");
        ASSERT_STREQ(origin_cgroup(j, "/topod.slice", &snap, 100, 7, 50, "/topod.slicex"), "/topod.slicex");
        /* no journal: where it is */
        ASSERT_STREQ(origin_cgroup(NULL, "/topod.slice", &snap, 100, 7, 50, "/topod.slice/latency"), "/topod.slice/latency");
}

int main(void) {
        RUN(test_origin);
        return 0;
}
