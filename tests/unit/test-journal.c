/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The journal of originals: round trip, atomic rewrite, first-original-wins,
 * limits, and malformed input refused with a message that says why. */

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#include "apply/journal.h"
#include "apply/pidref.h"
#include "base/util.h"
#include "fake-root.h"

#define SAMPLE                                                  \
        "topod-journal 2\n"                                     \
        "boot 3f9c0d1e-8a2b-4c55-9e0a-6b7d1f2e3a4c\n"           \
        "feature TTWU_QUEUE on\n"                               \
        "feature HRTICK off\n"                                  \
        "cgroup_mode concur\n"                                  \
        "task 1234 567890 /system.slice/foo.service\n"          \
        "task 99 1 /\n"                                         \
        "task 1300 pidfs:88213 /user.slice\n"                   \
        "cookie 1234 567890\n"                                  \
        "cookie 1300 pidfs:88213\n"                             \
        "cgroup /topod/llc1\n"                                  \
        "end 9\n"

static Journal *parse_ok(const char *text) {
        Journal *j = NULL;
        JournalError e = {};
        int k = journal_parse(text, strlen(text), &j, &e);

        if (k < 0)
                TEST_FAIL("journal_parse: %s (line %u: %s)", strerror(-k), e.line, e.message);
        return j;
}

static char *format(const Journal *j) {
        char *s = NULL;
        size_t len = 0;

        ASSERT_OK(journal_format(j, &s, &len));
        ASSERT_EQ(len, strlen(s));
        return s;
}

static char *slurp(const char *dir, const char *name) {
        char path[PATH_MAX];
        FILE *f;
        char *buf = NULL;
        size_t cap = 0;
        ssize_t n;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "re");
        if (!f)
                return NULL;
        n = getdelim(&buf, &cap, '\0', f);
        fclose(f);
        if (n < 0) {
                free(buf);
                return strdup("");
        }
        return buf;
}

static void test_round_trip(void) {
        _cleanup_(journal_freep) Journal *j = parse_ok(SAMPLE), *j2 = NULL;
        _cleanup_free_ char *text = NULL, *text2 = NULL;

        ASSERT_STREQ(j->boot_id, "3f9c0d1e-8a2b-4c55-9e0a-6b7d1f2e3a4c");
        ASSERT_EQ(j->n_features, 2);
        ASSERT_STREQ(j->features[0].name, "TTWU_QUEUE");
        ASSERT_TRUE(j->features[0].on);
        ASSERT_STREQ(j->features[1].name, "HRTICK");
        ASSERT_FALSE(j->features[1].on);
        ASSERT_STREQ(j->cgroup_mode, "concur");
        ASSERT_EQ(j->n_tasks, 3);
        ASSERT_EQ(j->tasks[0].tid, 1234);
        ASSERT_EQ(j->tasks[0].start_time, 567890);
        ASSERT_STREQ(j->tasks[0].cgroup, "/system.slice/foo.service");
        ASSERT_STREQ(j->tasks[1].cgroup, "/");
        /* Known by its pidfd's inode (pidref.h): another identity than
         * any start time, the same number included. */
        ASSERT_EQ(j->tasks[2].start_time, PIDREF_IDENT_PIDFS | 88213);
        ASSERT_NOT_NULL(journal_get_task(j, 1300, PIDREF_IDENT_PIDFS | 88213));
        ASSERT_NULL(journal_get_task(j, 1300, 88213));
        ASSERT_EQ(j->n_cookies, 2);
        ASSERT_EQ(j->cookies[0].tid, 1234);
        ASSERT_EQ(j->cookies[1].start_time, PIDREF_IDENT_PIDFS | 88213);
        ASSERT_EQ(j->n_cgroups, 1);
        ASSERT_STREQ(j->cgroups[0], "/topod/llc1");
        ASSERT_EQ(journal_n_entries(j), 9);
        ASSERT_FALSE(j->dirty);
        ASSERT_NULL(j->dir);
        ASSERT_NOT_NULL(journal_get_task(j, 99, 1));
        ASSERT_NULL(journal_get_task(j, 99, 2)); /* same tid, another task */

        /* Byte for byte: format(parse(x)) == x, and again. */
        text = format(j);
        ASSERT_STREQ(text, SAMPLE);
        ASSERT_OK(journal_parse(text, strlen(text), &j2, NULL));
        text2 = format(j2);
        ASSERT_STREQ(text2, text);
}

/* Version 1 (start times only) is what a journal without pidfs names is
 * written as, for a topod before them; one such name makes it version 2,
 * and it is back to 1 once that entry is gone. */
static void test_version_1(void) {
        static const char v1[] = "topod-journal 1\ntask 1234 567890 /system.slice/foo.service\nend 1\n";
        _cleanup_(journal_freep) Journal *j = parse_ok(v1);
        _cleanup_free_ char *text = NULL, *text2 = NULL, *text3 = NULL;

        ASSERT_EQ(j->tasks[0].start_time, 567890);
        text = format(j);
        ASSERT_STREQ(text, v1);
        ASSERT_EQ(journal_record_cookie(j, 1300, PIDREF_IDENT_PIDFS | 7), 1);
        text2 = format(j);
        ASSERT_STR_PREFIX(text2, "topod-journal 2\n");
        ASSERT_EQ(journal_forget_cookie(j, 1300, PIDREF_IDENT_PIDFS | 7), 1);
        text3 = format(j);
        ASSERT_STREQ(text3, v1);
}

static void test_escapes(void) {
        const char *path = "/odd dir/new\nline/back\\slash/tab\t/\x7f/üñï";
        _cleanup_(journal_freep) Journal *j = NULL, *back = NULL;
        _cleanup_free_ char *text = NULL;

        ASSERT_OK(journal_new(NULL, &j));
        ASSERT_EQ(journal_record_task(j, 7, PIDREF_IDENT_PIDFS - 1, path), 1);
        ASSERT_EQ(journal_record_cgroup(j, path), 1);
        text = format(j);
        /* One entry per line: nothing in a path may break a line or a field. */
        ASSERT_STREQ(text, "topod-journal 1\n"
                           "task 7 9223372036854775807 /odd\\x20dir/new\\x0aline/back\\x5cslash/tab\\x09/\\x7f/üñï\n"
                           "cgroup /odd\\x20dir/new\\x0aline/back\\x5cslash/tab\\x09/\\x7f/üñï\n"
                           "end 2\n");
        ASSERT_OK(journal_parse(text, strlen(text), &back, NULL));
        ASSERT_STREQ(back->tasks[0].cgroup, path);
        ASSERT_EQ(back->tasks[0].start_time, PIDREF_IDENT_PIDFS - 1);
        ASSERT_STREQ(back->cgroups[0], path);
}

static void test_first_original_wins(void) {
        _cleanup_(journal_freep) Journal *j = NULL;

        ASSERT_OK(journal_new(NULL, &j));
        ASSERT_EQ(journal_record_feature(j, "TTWU_QUEUE", true), 1);
        ASSERT_EQ(journal_record_feature(j, "TTWU_QUEUE", false), 0);
        ASSERT_TRUE(journal_get_feature(j, "TTWU_QUEUE")->on);
        ASSERT_EQ(journal_record_cgroup_mode(j, "concur"), 1);
        ASSERT_EQ(journal_record_cgroup_mode(j, "max"), 0);
        ASSERT_STREQ(j->cgroup_mode, "concur");
        ASSERT_EQ(journal_record_task(j, 10, 100, "/a"), 1);
        ASSERT_EQ(journal_record_task(j, 10, 100, "/topod/llc0"), 0);
        ASSERT_STREQ(journal_get_task(j, 10, 100)->cgroup, "/a");
        /* A reused tid is another task. */
        ASSERT_EQ(journal_record_task(j, 10, 200, "/b"), 1);
        ASSERT_EQ(journal_record_cookie(j, 10, 100), 1);
        ASSERT_EQ(journal_record_cookie(j, 10, 100), 0);
        ASSERT_EQ(journal_record_cgroup(j, "/topod/llc1"), 1);
        ASSERT_EQ(journal_record_cgroup(j, "/topod/llc1"), 0);
        ASSERT_EQ(journal_n_entries(j), 6);

        /* Forgetting, then recording anew: the new original counts. */
        ASSERT_EQ(journal_forget_feature(j, "TTWU_QUEUE"), 1);
        ASSERT_EQ(journal_forget_feature(j, "TTWU_QUEUE"), 0);
        ASSERT_EQ(journal_record_feature(j, "TTWU_QUEUE", false), 1);
        ASSERT_FALSE(journal_get_feature(j, "TTWU_QUEUE")->on);
        ASSERT_EQ(journal_forget_task(j, 10, 100), 1);
        ASSERT_NULL(journal_get_task(j, 10, 100));
        ASSERT_STREQ(journal_get_task(j, 10, 200)->cgroup, "/b"); /* moved in the array, still found */
        ASSERT_EQ(journal_forget_cookie(j, 10, 100), 1);
        ASSERT_EQ(journal_forget_cgroup(j, "/topod/llc1"), 1);
        ASSERT_EQ(journal_forget_cgroup_mode(j), 1);
        ASSERT_EQ(journal_n_entries(j), 2);
}

/* Many at once, in one sweep: the rest keep their order and are found. */
static void test_forget_many(void) {
        _cleanup_(journal_freep) Journal *j = NULL;
        bool drop[200];
        char cg[32];

        ASSERT_OK(journal_new(NULL, &j));
        for (int i = 0; i < 200; i++) {
                snprintf(cg, sizeof(cg), "/c%d", i);
                ASSERT_EQ(journal_record_task(j, 1000 + i, 7, cg), 1);
                drop[i] = i % 3 != 0;
        }
        ASSERT_EQ(journal_forget_tasks(j, drop), 133);
        ASSERT_EQ(j->n_tasks, 67);
        ASSERT_TRUE(j->need_rewrite);
        for (int i = 0; i < 200; i++) {
                const JournalTask *t = journal_get_task(j, 1000 + i, 7);

                if (i % 3 != 0) {
                        ASSERT_NULL(t);
                        continue;
                }
                snprintf(cg, sizeof(cg), "/c%d", i);
                ASSERT_NOT_NULL(t);
                ASSERT_STREQ(t->cgroup, cg);
                ASSERT_PTR_EQ(t, &j->tasks[i / 3]); /* order kept */
        }
        /* Recording after the sweep finds the rest. */
        ASSERT_EQ(journal_record_task(j, 1003, 7, "/again"), 0);
        ASSERT_EQ(journal_record_task(j, 1001, 7, "/new"), 1);
        memset(drop, 0, sizeof(drop));
        ASSERT_EQ(journal_forget_tasks(j, drop), 0);
        /* Grown again past the size it had (the arrays keep their room
         * across the sweep, and grow by powers of two: under ASan an
         * array one short is an error here). */
        for (int i = 0; i < 300; i++) {
                snprintf(cg, sizeof(cg), "/d%d", i);
                ASSERT_EQ(journal_record_task(j, 5000 + i, 9, cg), 1);
                ASSERT_EQ(journal_record_cookie(j, 5000 + i, 9), 1);
        }
        ASSERT_EQ(j->n_tasks, 68u + 300u);
        for (int i = 0; i < 300; i++) {
                const JournalTask *t = journal_get_task(j, 5000 + i, 9);

                snprintf(cg, sizeof(cg), "/d%d", i);
                ASSERT_NOT_NULL(t);
                ASSERT_STREQ(t->cgroup, cg);
                ASSERT_EQ(j->tasks[68 + i].tid, 5000 + i);
                ASSERT_EQ(j->cookies[i].tid, 5000 + i);
        }
}

/* Entries recorded and forgotten one at a time, in a random order, against
 * a model: after each step every entry the model has is found with its
 * original and no other is (the index follows each removal without a
 * rebuild), and the entries stay in the order recorded. */
static void test_forget_one_by_one(void) {
        enum { TIDS = 300, STARTS = 3, STEPS = 20000 };
        _cleanup_(journal_freep) Journal *j = NULL;
        static int model_task[TIDS][STARTS], model_cookie[TIDS][STARTS]; /* 0: none, else the cgroup's number */
        uint32_t seed = 12345;
        size_t n_tasks = 0, n_cookies = 0;
        char cg[32];

        ASSERT_OK(journal_new(NULL, &j));
        for (int step = 0; step < STEPS; step++) {
                pid_t tid;
                uint64_t st;
                unsigned op;

                seed = seed * 1103515245u + 12345u;
                tid = (pid_t) ((seed >> 8) % TIDS);
                st = (seed >> 20) % STARTS;
                op = (seed >> 26) % 4;
                switch (op) {
                case 0:
                        snprintf(cg, sizeof(cg), "/s%d", step + 1);
                        ASSERT_EQ(journal_record_task(j, 1000 + tid, 1 + st, cg), model_task[tid][st] == 0);
                        if (model_task[tid][st] == 0) {
                                model_task[tid][st] = step + 1;
                                n_tasks++;
                        }
                        break;
                case 1:
                        ASSERT_EQ(journal_forget_task(j, 1000 + tid, 1 + st), model_task[tid][st] != 0);
                        n_tasks -= model_task[tid][st] != 0;
                        model_task[tid][st] = 0;
                        break;
                case 2:
                        ASSERT_EQ(journal_record_cookie(j, 1000 + tid, 1 + st), model_cookie[tid][st] == 0);
                        n_cookies += model_cookie[tid][st] == 0;
                        model_cookie[tid][st] = 1;
                        break;
                default:
                        ASSERT_EQ(journal_forget_cookie(j, 1000 + tid, 1 + st), model_cookie[tid][st] != 0);
                        n_cookies -= model_cookie[tid][st] != 0;
                        model_cookie[tid][st] = 0;
                        break;
                }
                ASSERT_EQ(j->n_tasks, n_tasks);
                ASSERT_EQ(j->n_cookies, n_cookies);
                if (step % 97 != 0 && step < STEPS - 1)
                        continue;
                for (int t = 0; t < TIDS; t++)
                        for (int k = 0; k < STARTS; k++) {
                                const JournalTask *jt = journal_get_task(j, 1000 + t, 1 + (uint64_t) k);

                                if (model_task[t][k] == 0) {
                                        ASSERT_NULL(jt);
                                        continue;
                                }
                                snprintf(cg, sizeof(cg), "/s%d", model_task[t][k]);
                                ASSERT_NOT_NULL(jt);
                                ASSERT_STREQ(jt->cgroup, cg);
                        }
                /* In the order recorded: the step numbers rise. */
                for (size_t i = 1; i < j->n_tasks; i++)
                        ASSERT_LT(strtol(j->tasks[i - 1].cgroup + 2, NULL, 10),
                                  strtol(j->tasks[i].cgroup + 2, NULL, 10));
        }
        /* The cookies, by what the index says: recording one there is refused. */
        for (int t = 0; t < TIDS; t++)
                for (int k = 0; k < STARTS; k++)
                        if (model_cookie[t][k])
                                ASSERT_EQ(journal_record_cookie(j, 1000 + t, 1 + (uint64_t) k), 0);
        ASSERT_EQ(j->n_cookies, n_cookies);
        /* And the text round trip keeps them all. */
        {
                _cleanup_free_ char *text = format(j);
                _cleanup_(journal_freep) Journal *back = parse_ok(text);

                ASSERT_EQ(back->n_tasks, n_tasks);
                ASSERT_EQ(back->n_cookies, n_cookies);
        }
}

static bool has_cookie(const Journal *j, pid_t tid, uint64_t start_time) {
        for (size_t i = 0; i < j->n_cookies; i++)
                if (j->cookies[i].tid == tid && j->cookies[i].start_time == start_time)
                        return true;
        return false;
}

/* Entries named by pidfd inodes, renamed to start times: a task's cookie
 * entry under the same old name goes with it; one of the same tid under
 * another name does not; a rename onto a name already there drops the
 * later entry (first original wins); the index finds the new names. */
static void test_rename(void) {
        _cleanup_(journal_freep) Journal *j = NULL;
        const uint64_t a = PIDREF_IDENT_PIDFS | 11u, b = PIDREF_IDENT_PIDFS | 12u, c = PIDREF_IDENT_PIDFS | 13u,
                       d = PIDREF_IDENT_PIDFS | 14u;
        uint64_t tn[3] = {};

        ASSERT_OK(journal_new(NULL, &j));
        ASSERT_EQ(journal_record_task(j, 10, a, "/a"), 1);
        ASSERT_EQ(journal_record_task(j, 20, 500, "/b"), 1);
        ASSERT_EQ(journal_record_task(j, 20, b, "/b2"), 1);
        ASSERT_EQ(journal_record_cookie(j, 10, a), 1);
        ASSERT_EQ(journal_record_cookie(j, 10, c), 1); /* an earlier process that had tid 10 */
        ASSERT_EQ(journal_record_cookie(j, 20, b), 1);
        ASSERT_EQ(journal_record_cookie(j, 30, d), 1);
        j->dirty = false;

        /* Task 10 is 400; task 20's pidfs entry is the same thread as its
         * entry by start time 500: it goes, with its cookie renamed. */
        tn[0] = 400;
        tn[2] = 500;
        ASSERT_EQ(journal_name_tasks(j, tn), 4u);
        ASSERT_TRUE(j->dirty);
        ASSERT_TRUE(j->need_rewrite);
        ASSERT_EQ(j->n_tasks, 2);
        ASSERT_STREQ(journal_get_task(j, 10, 400)->cgroup, "/a");
        ASSERT_NULL(journal_get_task(j, 10, a));
        ASSERT_STREQ(journal_get_task(j, 20, 500)->cgroup, "/b"); /* the first original */
        ASSERT_NULL(journal_get_task(j, 20, b));
        ASSERT_EQ(j->n_cookies, 4);
        ASSERT_TRUE(has_cookie(j, 10, 400));
        ASSERT_FALSE(has_cookie(j, 10, a));
        ASSERT_TRUE(has_cookie(j, 10, c)); /* not the renamed task's name */
        ASSERT_TRUE(has_cookie(j, 20, 500));
        ASSERT_FALSE(has_cookie(j, 20, b));
        ASSERT_TRUE(has_cookie(j, 30, d));
        ASSERT_EQ(journal_record_cookie(j, 10, 400), 0);
        ASSERT_EQ(journal_record_task(j, 10, 400, "/x"), 0);

        /* Cookies alone: the earlier process that had tid 10 onto 400 (there:
         * dropped), 30's to 700, 20's forgotten, one not there skipped. */
        {
                const JournalCookie from[] = { { 10, c }, { 30, d }, { 20, 500 }, { 40, a }, { 10, 400 } };
                const uint64_t to[] = { 400, 700, 0, 900, 400 };

                ASSERT_EQ(journal_rename_cookies(j, from, to, ELEMENTSOF(from)), 3u);
        }
        ASSERT_EQ(j->n_cookies, 2);
        ASSERT_TRUE(has_cookie(j, 10, 400));
        ASSERT_TRUE(has_cookie(j, 30, 700));
        ASSERT_FALSE(has_cookie(j, 20, 500));
        ASSERT_FALSE(has_cookie(j, 10, c));
        ASSERT_FALSE(has_cookie(j, 30, d));
        ASSERT_EQ(journal_record_cookie(j, 30, 700), 0); /* the index knows the new names */
        {
                /* Forgotten alone: the index made again all the same. */
                const JournalCookie from[] = { { 10, 400 } };
                const uint64_t to[] = { 0 };

                ASSERT_EQ(journal_rename_cookies(j, from, to, 1), 1u);
                ASSERT_EQ(journal_record_cookie(j, 30, 700), 0);
                ASSERT_EQ(journal_record_cookie(j, 10, 400), 1);
        }
        ASSERT_EQ(journal_forget_cookie(j, 30, 700), 1);
        ASSERT_EQ(journal_forget_cookie(j, 30, d), 0);
        ASSERT_EQ(j->n_tasks, 2); /* tasks untouched */
        ASSERT_STREQ(journal_get_task(j, 20, 500)->cgroup, "/b");

        /* Without the index (a rebuild that ran out of memory): the same, by scans. */
        ASSERT_EQ(journal_record_cookie(j, 50, b), 1);
        ASSERT_EQ(journal_record_task(j, 50, b, "/e"), 1);
        j->index = mfree(j->index);
        j->index_size = 0;
        memset(tn, 0, sizeof(tn));
        tn[2] = 800; /* task 50, the third now */
        ASSERT_EQ(j->tasks[2].tid, 50);
        ASSERT_EQ(journal_name_tasks(j, tn), 2u);
        ASSERT_TRUE(has_cookie(j, 50, 800));
        ASSERT_NOT_NULL(journal_get_task(j, 50, 800));
        ASSERT_EQ(journal_record_cookie(j, 50, 800), 0);
        {
                const JournalCookie from[] = { { 50, 800 } };
                const uint64_t to[] = { 0 };

                ASSERT_EQ(journal_rename_cookies(j, from, to, 1), 1u);
        }
        ASSERT_FALSE(has_cookie(j, 50, 800));
        ASSERT_TRUE(has_cookie(j, 10, 400));
}

static void test_record_rejects(void) {
        _cleanup_(journal_freep) Journal *j = NULL;

        ASSERT_OK(journal_new(NULL, &j));
        ASSERT_ERROR(journal_record_feature(j, "ttwu_queue", true), EINVAL);
        ASSERT_ERROR(journal_record_feature(j, "NO_TTWU_QUEUE", true), EINVAL);
        ASSERT_ERROR(journal_record_feature(j, "", true), EINVAL);
        ASSERT_ERROR(journal_record_cgroup_mode(j, "Max"), EINVAL);
        ASSERT_ERROR(journal_record_task(j, 0, 1, "/a"), EINVAL);
        ASSERT_ERROR(journal_record_task(j, -5, 1, "/a"), EINVAL);
        ASSERT_ERROR(journal_record_task(j, 5, 1, "a"), EINVAL);
        ASSERT_ERROR(journal_record_task(j, 5, 1, "/a/../b"), EINVAL);
        ASSERT_ERROR(journal_record_task(j, 5, 1, "/a//b"), EINVAL);
        ASSERT_ERROR(journal_record_task(j, 5, 1, "/a/"), EINVAL);
        ASSERT_ERROR(journal_record_cgroup(j, "/"), EINVAL);
        ASSERT_ERROR(journal_record_cgroup(j, "/topod/./x"), EINVAL);
        ASSERT_ERROR(journal_set_boot_id(j, "not hex"), EINVAL);
        ASSERT_TRUE(journal_is_empty(j));
        ASSERT_FALSE(j->dirty);
}

static void test_entry_limit(void) {
        _cleanup_(journal_freep) Journal *j = NULL;
        char path[64];

        ASSERT_OK(journal_new(NULL, &j));
        for (unsigned i = 0; i < JOURNAL_ENTRIES_MAX; i++) {
                snprintf(path, sizeof(path), "/topod/g%u", i);
                ASSERT_EQ(journal_record_cgroup(j, path), 1);
        }
        ASSERT_ERROR(journal_record_cookie(j, 1, 1), E2BIG);
        ASSERT_ERROR(journal_record_cgroup_mode(j, "max"), E2BIG);
        /* Already recorded: still answered, no new entry needed. */
        ASSERT_EQ(journal_record_cgroup(j, "/topod/g7"), 0);
        ASSERT_EQ(journal_n_entries(j), JOURNAL_ENTRIES_MAX);
        {
                _cleanup_free_ char *text = format(j);
                _cleanup_(journal_freep) Journal *back = NULL;
                size_t len = strlen(text);
                char *end;

                /* The full journal parses; one entry more does not. */
                ASSERT_OK(journal_parse(text, len, &back, NULL));
                end = strstr(text, "end ");
                ASSERT_NOT_NULL(end);
                {
                        _cleanup_free_ char *more = NULL;
                        JournalError e = {};

                        ASSERT_GT(asprintf(&more, "%.*scookie 1 1\nend %u\n", (int) (end - text), text,
                                           JOURNAL_ENTRIES_MAX + 1),
                                  0);
                        ASSERT_ERROR(journal_parse(more, strlen(more), &back, &e), E2BIG);
                        ASSERT_EQ(e.line, JOURNAL_ENTRIES_MAX + 2);
                        ASSERT_STR_CONTAINS(e.message, "too many entries");
                }
        }
}

static void test_malformed(void) {
        static const struct {
                const char *text;
                int err;
                unsigned line;
                const char *message; /* a part of it */
        } cases[] = {
                { "", EBADMSG, 0, "empty" },
                { "topod-journal 1\nend 0", EBADMSG, 0, "newline" },
                { "topod-journal 1\n", EBADMSG, 1, "no \"end\"" },
                { "topod-journal 1\nfeature A on\n", EBADMSG, 2, "no \"end\"" },
                { "hello\nend 0\n", EBADMSG, 1, "header" },
                { "topod-journal\nend 0\n", EBADMSG, 1, "header" },
                { "topod-journal 5\nend 0\n", EPROTONOSUPPORT, 1, "version 5" },
                { "topod-journal 0\nend 0\n", EPROTONOSUPPORT, 1, "version 0" },
                { "topod-journal 01\nend 0\n", EBADMSG, 1, "header" },
                { "topod-journal 1\nend 1\n", EBADMSG, 2, "counts 1" },
                { "topod-journal 1\nend\n", EBADMSG, 2, "end N" },
                { "topod-journal 1\nend 0\nend 0\n", EBADMSG, 3, "after" },
                { "topod-journal 1\nend 0\nfeature A on\n", EBADMSG, 3, "after" },
                { "topod-journal 1\nfeature A maybe\nend 1\n", EBADMSG, 2, "on|off" },
                { "topod-journal 1\nfeature a on\nend 1\n", EBADMSG, 2, "invalid" },
                { "topod-journal 1\nfeature NO_A on\nend 1\n", EBADMSG, 2, "invalid" },
                { "topod-journal 1\nfeature A on\nfeature A off\nend 2\n", EBADMSG, 3, "duplicate" },
                { "topod-journal 1\ncgroup_mode concur\ncgroup_mode max\nend 2\n", EBADMSG, 3, "duplicate" },
                { "topod-journal 1\nfeature  A on\nend 1\n", EBADMSG, 2, "malformed" },
                { "topod-journal 1\nfeature A on \nend 1\n", EBADMSG, 2, "malformed" },
                { "topod-journal 1\nfeature A on\r\nend 1\n", EBADMSG, 2, "malformed" },
                { "topod-journal 1\n\nend 0\n", EBADMSG, 2, "malformed" },
                { "topod-journal 1\nfeature\tA on\nend 1\n", EBADMSG, 2, "malformed" },
                { "topod-journal 1\nsomething else\nend 1\n", EBADMSG, 2, "unknown" },
                { "topod-journal 1\ntask 0 1 /a\nend 1\n", EBADMSG, 2, "thread id" },
                { "topod-journal 1\ntask -1 1 /a\nend 1\n", EBADMSG, 2, "thread id" },
                { "topod-journal 1\ntask 2147483648 1 /a\nend 1\n", EBADMSG, 2, "thread id" },
                { "topod-journal 1\ntask 012 1 /a\nend 1\n", EBADMSG, 2, "thread id" },
                { "topod-journal 1\ntask 12 18446744073709551616 /a\nend 1\n", EBADMSG, 2, "start time" },
                { "topod-journal 1\ntask 12 1x /a\nend 1\n", EBADMSG, 2, "start time" },
                { "topod-journal 2\ntask 12 9223372036854775808 /a\nend 1\n", EBADMSG, 2, "start time" },
                { "topod-journal 2\ntask 12 pidfs:0 /a\nend 1\n", EBADMSG, 2, "start time" },
                { "topod-journal 2\ntask 12 pidfs: /a\nend 1\n", EBADMSG, 2, "start time" },
                { "topod-journal 2\ntask 12 pidfs:9223372036854775808 /a\nend 1\n", EBADMSG, 2, "start time" },
                { "topod-journal 2\ncookie 12 pidfs:x\nend 1\n", EBADMSG, 2, "start time" },
                { "topod-journal 1\ntask 12 1\nend 1\n", EBADMSG, 2, "TID START_TIME PATH" },
                { "topod-journal 1\ntask 12 1 a/b\nend 1\n", EBADMSG, 2, "invalid" },
                { "topod-journal 1\ntask 12 1 /a/../../etc\nend 1\n", EBADMSG, 2, "invalid" },
                { "topod-journal 1\ntask 12 1 /a\\x\nend 1\n", EBADMSG, 2, "escape" },
                { "topod-journal 1\ntask 12 1 /a\\x00b\nend 1\n", EBADMSG, 2, "escape" },
                { "topod-journal 1\ntask 12 1 /a\\n\nend 1\n", EBADMSG, 2, "escape" },
                { "topod-journal 1\ncookie 12\nend 1\n", EBADMSG, 2, "cookie TID" },
                { "topod-journal 1\ncgroup /\nend 1\n", EBADMSG, 2, "invalid" },
                { "topod-journal 1\ncgroup /a b\nend 1\n", EBADMSG, 2, "cgroup PATH" },
                { "topod-journal 1\nboot 1\nboot 1\nend 0\n", EBADMSG, 3, "boot" },
                { "topod-journal 1\na b c d e f\nend 0\n", EBADMSG, 2, "too many fields" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Journal *j = NULL;
                JournalError e = { .line = 999 };
                int k = journal_parse(cases[i].text, strlen(cases[i].text), &j, &e);

                if (k != -cases[i].err || e.line != cases[i].line || !strstr(e.message, cases[i].message))
                        TEST_FAIL("case %zu \"%s\": got %d line %u \"%s\", expected -%d line %u \"%s\"", i,
                                  cases[i].text, k, e.line, e.message, cases[i].err, cases[i].line,
                                  cases[i].message);
                ASSERT_NULL(j);
        }

        /* A NUL byte inside, which strlen() would hide. */
        {
                static const char nul[] = "topod-journal 1\ncgroup /a\0b\nend 1\n";
                Journal *j = NULL;
                JournalError e = {};

                ASSERT_ERROR(journal_parse(nul, sizeof(nul) - 1, &j, &e), EBADMSG);
                ASSERT_STR_CONTAINS(e.message, "NUL");
        }
        /* The error out-parameter is optional. */
        {
                Journal *j = NULL;

                ASSERT_ERROR(journal_parse("x\n", 2, &j, NULL), EBADMSG);
                ASSERT_NULL(j);
        }
}

static void test_oversized(void) {
        _cleanup_free_ char *big = NULL, *line = NULL;
        Journal *j = NULL;
        JournalError e = {};
        size_t n = JOURNAL_SIZE_MAX + 1;

        /* Refused by length alone, before any work. */
        big = malloc(n);
        ASSERT_NOT_NULL(big);
        memset(big, 'a', n);
        ASSERT_ERROR(journal_parse(big, n, &j, &e), EFBIG);
        ASSERT_EQ(e.line, 0);
        ASSERT_STR_CONTAINS(e.message, "larger than");

        /* One line longer than any valid one. */
        n = 3u * 4096u * 4u;
        line = malloc(n + 64);
        ASSERT_NOT_NULL(line);
        strcpy(line, "topod-journal 1\ncgroup /");
        memset(line + strlen(line), 'x', n);
        strcpy(line + 24 + n, "\nend 1\n");
        ASSERT_ERROR(journal_parse(line, strlen(line), &j, &e), EBADMSG);
        ASSERT_EQ(e.line, 2);
        ASSERT_STR_CONTAINS(e.message, "longer than");

        /* A path at the limit is refused when recorded. */
        {
                _cleanup_(journal_freep) Journal *jj = NULL;
                _cleanup_free_ char *p = malloc(JOURNAL_PATH_MAX + 1);

                ASSERT_NOT_NULL(p);
                p[0] = '/';
                memset(p + 1, 'y', JOURNAL_PATH_MAX - 1);
                p[JOURNAL_PATH_MAX] = '\0';
                ASSERT_OK(journal_new(NULL, &jj));
                ASSERT_ERROR(journal_record_cgroup(jj, p), EINVAL);
                p[JOURNAL_PATH_MAX - 1] = '\0'; /* 4095 bytes: the longest allowed */
                ASSERT_EQ(journal_record_cgroup(jj, p), 1);
        }
}

static void test_commit_and_load(void) {
        char *dir = fake_root_new();
        _cleanup_free_ char *jdir = NULL, *text = NULL, *old = NULL;
        _cleanup_(journal_freep) Journal *j = NULL, *loaded = NULL, *empty = NULL;
        struct stat st1, st2;
        char path[PATH_MAX];
        FILE *held;

        ASSERT_GT(asprintf(&jdir, "%s/run-topod", dir), 0);

        /* No directory yet: nothing to recover, an empty journal bound to it. */
        ASSERT_EQ(journal_load(jdir, &empty, NULL), 0);
        ASSERT_TRUE(journal_is_empty(empty));
        ASSERT_STREQ(empty->dir, jdir);

        /* Nothing recorded: commit writes nothing. */
        ASSERT_OK(journal_new(jdir, &j));
        ASSERT_OK(journal_commit(j));
        ASSERT_NULL(slurp(jdir, JOURNAL_FILE_NAME));

        ASSERT_EQ(journal_record_feature(j, "TTWU_QUEUE", true), 1);
        ASSERT_TRUE(j->dirty);
        ASSERT_OK(journal_commit(j)); /* creates the directory, 0700 */
        ASSERT_FALSE(j->dirty);
        ASSERT_EQ(stat(jdir, &st1), 0);
        ASSERT_EQ(st1.st_mode & 07777, 0700);
        text = slurp(jdir, JOURNAL_FILE_NAME);
        ASSERT_STREQ(text, "topod-journal 1\nfeature TTWU_QUEUE on\nend 1\n");
        snprintf(path, sizeof(path), "%s/%s", jdir, JOURNAL_FILE_NAME);
        ASSERT_EQ(stat(path, &st1), 0);
        ASSERT_EQ(st1.st_mode & 07777, 0600);

        /* Atomic rewrite: a reader that opened the old file keeps the whole
         * old text; the name points at a new, complete file. A stale
         * temporary file from a crash mid-write does not matter. */
        held = fopen(path, "re");
        ASSERT_NOT_NULL(held);
        fake_write(jdir, ".journal.tmp", "topod-journal 1\nfeature HALF");
        ASSERT_EQ(journal_record_task(j, 42, 4242, "/user.slice"), 1);
        ASSERT_EQ(journal_record_cgroup(j, "/topod/llc0"), 1);
        ASSERT_OK(journal_commit(j));
        ASSERT_EQ(stat(path, &st2), 0);
        ASSERT_NE(st1.st_ino, st2.st_ino);
        {
                char buf[256] = {};

                ASSERT_GT(fread(buf, 1, sizeof(buf) - 1, held), 0);
                ASSERT_STREQ(buf, "topod-journal 1\nfeature TTWU_QUEUE on\nend 1\n");
                fclose(held);
        }
        ASSERT_NULL(slurp(jdir, ".journal.tmp"));
        free(text);
        text = slurp(jdir, JOURNAL_FILE_NAME);
        ASSERT_STREQ(text, "topod-journal 1\nfeature TTWU_QUEUE on\ntask 42 4242 /user.slice\ncgroup /topod/llc0\nend 3\n");

        /* Loaded back: what was recorded, clean, bound to the directory. */
        ASSERT_EQ(journal_load(jdir, &loaded, NULL), 1);
        ASSERT_STREQ(loaded->dir, jdir);
        ASSERT_FALSE(loaded->dirty);
        ASSERT_EQ(journal_n_entries(loaded), 3);
        ASSERT_STREQ(journal_get_task(loaded, 42, 4242)->cgroup, "/user.slice");
        /* First-original-wins across a restart, too. */
        ASSERT_EQ(journal_record_feature(loaded, "TTWU_QUEUE", false), 0);

        /* A file without its "end": what it holds is loaded, the damage
         * reported. */
        fake_write(jdir, JOURNAL_FILE_NAME, "topod-journal 1\nfeature TTWU_QUEUE on\n");
        {
                _cleanup_(journal_freep) Journal *torn = NULL;
                JournalError e = {};

                ASSERT_EQ(journal_load(jdir, &torn, &e), 1);
                ASSERT_EQ(journal_n_entries(torn), 1);
                ASSERT_EQ(torn->n_damaged, 1u);
                ASSERT_STR_CONTAINS(e.message, "incomplete");
        }
        /* One garbage line among good entries: every good entry back, the
         * bad line skipped and named. */
        fake_write(jdir, JOURNAL_FILE_NAME,
                   "topod-journal 1\nfeature TTWU_QUEUE on\ncgroup /topod.slice/a\n\xff\x01garbage here\n"
                   "task 42 4242 /user.slice\ncgroup /topod.slice/b\nend 5\n");
        {
                _cleanup_(journal_freep) Journal *some = NULL;
                JournalError e = {};

                ASSERT_EQ(journal_load(jdir, &some, &e), 1);
                ASSERT_EQ(journal_n_entries(some), 4);
                ASSERT_EQ(some->n_damaged, 2u); /* the line, and "end" counting it */
                ASSERT_EQ(e.line, 4u);
                ASSERT_EQ(some->damage->line, 4u);
                ASSERT_EQ(some->n_cgroups, 2u);
                ASSERT_STREQ(some->cgroups[1], "/topod.slice/b");
                ASSERT_STREQ(journal_get_task(some, 42, 4242)->cgroup, "/user.slice");
        }
        /* What is not a journal at all is still refused. */
        fake_write(jdir, JOURNAL_FILE_NAME, "garbage\ncgroup /topod.slice/a\nend 1\n");
        {
                Journal *bad = NULL;
                JournalError e = {};

                ASSERT_ERROR(journal_load(jdir, &bad, &e), EBADMSG);
                ASSERT_NULL(bad);
                ASSERT_EQ(e.line, 1u);
        }

        ASSERT_OK(journal_remove(jdir));
        ASSERT_NULL(slurp(jdir, JOURNAL_FILE_NAME));
        ASSERT_OK(journal_remove(jdir)); /* again: nothing there is fine */
        old = strdup(jdir);
        fake_root_remove(dir);
        ASSERT_OK(journal_remove(old)); /* no directory at all: fine */
}

/* Names in dir starting with prefix (the first one in *ret). */
static unsigned count_prefixed(const char *dir, const char *prefix, char **ret) {
        DIR *d = opendir(dir);
        struct dirent *e;
        unsigned n = 0;

        ASSERT_NOT_NULL(d);
        while ((e = readdir(d)))
                if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && n++ == 0 && ret)
                        *ret = strdup(e->d_name);
        closedir(d);
        return n;
}

/* The file changed under a running topod (replaced, edited in place,
 * removed): noticed, by the check and by a commit, the other file moved
 * aside and topod's own entries written back. */
static void test_changed_under(void) {
        char *dir = fake_root_new();
        _cleanup_free_ char *jdir = NULL, *what = NULL, *aside = NULL, *text = NULL, *saved = NULL;
        _cleanup_(journal_freep) Journal *j = NULL, *back = NULL;
        char path[PATH_MAX];

        ASSERT_GT(asprintf(&jdir, "%s/run-topod", dir), 0);
        ASSERT_OK(journal_new(jdir, &j));
        ASSERT_EQ(journal_check_file(j, NULL), 0); /* nothing written yet */
        ASSERT_EQ(journal_record_cgroup(j, "/topod.slice"), 1);
        ASSERT_OK(journal_commit(j));
        ASSERT_EQ(journal_check_file(j, &what), 0);
        ASSERT_NULL(what);

        /* Replaced (a new file renamed over it). */
        test_write_file(jdir, "other", "topod-journal 1\ncgroup /system.slice\nend 1\n", false);
        snprintf(path, sizeof(path), "%s/journal", jdir);
        {
                char from[PATH_MAX];

                snprintf(from, sizeof(from), "%s/other", jdir);
                ASSERT_EQ(rename(from, path), 0);
        }
        ASSERT_EQ(journal_check_file(j, &what), 1);
        ASSERT_STR_CONTAINS(what, "replaced");
        ASSERT_STR_CONTAINS(what, JOURNAL_FOREIGN_PREFIX);
        ASSERT_EQ(count_prefixed(jdir, JOURNAL_FOREIGN_PREFIX, &aside), 1u);
        saved = slurp(jdir, aside);
        ASSERT_STR_CONTAINS(saved, "/system.slice");
        ASSERT_TRUE(j->dirty);
        ASSERT_OK(journal_commit(j)); /* topod's own back */
        ASSERT_NULL(j->foreign);
        text = slurp(jdir, JOURNAL_FILE_NAME);
        ASSERT_STR_CONTAINS(text, "cgroup /topod.slice");
        ASSERT_STR_NOT_CONTAINS(text, "/system.slice");
        ASSERT_EQ(journal_check_file(j, NULL), 0);
        what = mfree(what);

        /* Edited in place, then a commit before any check: the commit
         * notices, keeps what it found in ->foreign, writes its own. */
        test_write_file(jdir, JOURNAL_FILE_NAME, "cgroup /system.slice\n", true);
        ASSERT_EQ(journal_record_cgroup(j, "/topod.slice/a"), 1);
        ASSERT_OK(journal_commit(j));
        ASSERT_NOT_NULL(j->foreign);
        ASSERT_STR_CONTAINS(j->foreign, "edited");
        ASSERT_EQ(count_prefixed(jdir, JOURNAL_FOREIGN_PREFIX, NULL), 2u);
        ASSERT_EQ(journal_load(jdir, &back, NULL), 1);
        ASSERT_EQ(back->n_cgroups, 2u);
        ASSERT_EQ(back->n_damaged, 0u);

        /* Removed while it holds entries: written again. */
        ASSERT_EQ(unlink(path), 0);
        ASSERT_EQ(journal_check_file(j, &what), 1);
        ASSERT_STR_CONTAINS(what, "removed");
        ASSERT_OK(journal_commit(j));
        ASSERT_EQ(access(path, F_OK), 0);
        /* Removed by topod after a restore (empty): nothing to say. */
        ASSERT_EQ(journal_forget_cgroup(j, "/topod.slice/a"), 1);
        ASSERT_EQ(journal_forget_cgroup(j, "/topod.slice"), 1);
        ASSERT_OK(journal_commit(j));
        ASSERT_OK(journal_remove(jdir));
        ASSERT_EQ(journal_check_file(j, NULL), 0);
        fake_root_remove(dir);
}


/* Bytes at off of dir/name, written in place (the file keeps its size
 * where they fit in it). */
static void poke(const char *dir, const char *name, off_t off, const char *bytes, size_t n) {
        char path[PATH_MAX];
        int fd;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        fd = open(path, O_RDWR | O_CLOEXEC);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(pwrite(fd, bytes, n, off), (ssize_t) n);
        close(fd);
}

/* A journal committed whole, then three blocks appended to its log. */
static Journal *with_log(const char *jdir) {
        Journal *j = NULL;

        ASSERT_OK(journal_new(jdir, &j));
        ASSERT_EQ(journal_record_cgroup(j, "/topod.slice"), 1);
        ASSERT_OK(journal_commit(j));
        ASSERT_EQ(journal_record_task(j, 42, 4242, "/user.slice"), 1);
        ASSERT_EQ(journal_record_cookie(j, 42, 4242), 1);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_EQ(journal_record_task(j, 43, 4343, "/system.slice/a.service"), 1);
        ASSERT_EQ(journal_record_cgroup(j, "/topod.slice/llc0"), 1);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_EQ(journal_record_task(j, 44, 4444, "/user.slice"), 1);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_NOT_NULL(j->log_map);
        return j;
}

/* The offset of the first occurrence of needle in the log's text. */
static off_t log_offset(const char *jdir, const char *needle) {
        _cleanup_free_ char *log = slurp(jdir, JOURNAL_LOG_NAME);
        const char *at;

        ASSERT_NOT_NULL(log);
        at = strstr(log, needle);
        ASSERT_NOT_NULL(at);
        return (off_t) (at - log);
}

/* A damaged line of the log is skipped and reported (which line, why, as
 * the log's), every other entry of the file and the log loaded: a restore
 * leaves nothing of what they name behind. */
static void test_log_salvage(void) {
        char *dir = fake_root_new();
        _cleanup_free_ char *jdir = NULL, *log = NULL;
        _cleanup_(journal_freep) Journal *j = NULL;
        Journal *l = NULL;
        JournalError e = {};

        ASSERT_GT(asprintf(&jdir, "%s/run-topod", dir), 0);
        j = with_log(jdir);
        log = slurp(jdir, JOURNAL_LOG_NAME);
        /* 1 header, 2 task 42, 3 cookie 42, 4 end 2, 5 task 43, 6 cgroup, 7 end 2, 8 task 44, 9 end 1 */
        ASSERT_STR_CONTAINS(log, "\ntask 43 4343 /system.slice/a.service\ncgroup /topod.slice/llc0\nend 2\n");

        /* Clean: every entry, no damage. */
        ASSERT_EQ(journal_load(jdir, &l, &e), 1);
        ASSERT_EQ(journal_n_entries(l), 6u);
        ASSERT_EQ(l->n_log_damaged, 0u);
        ASSERT_NULL(l->log_damage);
        l = journal_free(l);

        /* Garbage over one entry line (control bytes): that line skipped,
         * and its block's "end", which counted it; the rest read. */
        poke(jdir, JOURNAL_LOG_NAME, log_offset(jdir, "task 43"), "\x01\xffsk 43", 7);
        e = (JournalError) {};
        ASSERT_EQ(journal_load(jdir, &l, &e), 1);
        ASSERT_EQ(l->n_damaged, 0u);
        ASSERT_EQ(l->n_log_damaged, 2u);
        ASSERT_EQ(l->log_damage->line, 5u);
        ASSERT_STR_CONTAINS(l->log_damage->message, "malformed line");
        ASSERT_NULL(journal_get_task(l, 43, 4343));
        ASSERT_STREQ(journal_get_task(l, 42, 4242)->cgroup, "/user.slice");
        ASSERT_STREQ(journal_get_task(l, 44, 4444)->cgroup, "/user.slice");
        ASSERT_EQ(l->n_cookies, 1u);
        ASSERT_EQ(l->n_cgroups, 2u);
        ASSERT_STREQ(l->cgroups[1], "/topod.slice/llc0");
        ASSERT_EQ(e.line, 0u); /* the file's own error: none */
        l = journal_free(l);
        poke(jdir, JOURNAL_LOG_NAME, 0, log, strlen(log));

        /* A NUL byte inside a line (not at a line's start, where a block
         * being copied begins): that line skipped, the text goes on. */
        poke(jdir, JOURNAL_LOG_NAME, log_offset(jdir, "cookie 42") + 3, "\0", 1);
        ASSERT_EQ(journal_load(jdir, &l, &e), 1);
        ASSERT_EQ(l->n_log_damaged, 2u);
        ASSERT_EQ(l->log_damage->line, 3u);
        ASSERT_STR_CONTAINS(l->log_damage->message, "NUL");
        ASSERT_EQ(l->n_cookies, 0u);
        ASSERT_NOT_NULL(journal_get_task(l, 43, 4343));
        ASSERT_NOT_NULL(journal_get_task(l, 44, 4444));
        l = journal_free(l);
        poke(jdir, JOURNAL_LOG_NAME, 0, log, strlen(log));

        /* An "end" damaged: its block's entries were committed (the first
         * byte, copied last, is there) and are read; the next block's
         * "end" then miscounts. */
        poke(jdir, JOURNAL_LOG_NAME, log_offset(jdir, "end 2\ntask 44"), "enx", 3);
        ASSERT_EQ(journal_load(jdir, &l, &e), 1);
        ASSERT_EQ(journal_n_entries(l), 6u);
        ASSERT_EQ(l->n_log_damaged, 2u);
        ASSERT_EQ(l->log_damage->line, 7u);
        ASSERT_STR_CONTAINS(l->log_damage->message, "unknown entry");
        l = journal_free(l);
        poke(jdir, JOURNAL_LOG_NAME, 0, log, strlen(log));

        /* A damaged header cannot say which file the log extends: its
         * entries are read all the same, the header reported. */
        poke(jdir, JOURNAL_LOG_NAME, 0, "topod-journal-lxg", 17);
        ASSERT_EQ(journal_load(jdir, &l, &e), 1);
        ASSERT_EQ(journal_n_entries(l), 6u);
        ASSERT_EQ(l->n_log_damaged, 1u);
        ASSERT_EQ(l->log_damage->line, 1u);
        ASSERT_STR_CONTAINS(l->log_damage->message, "header");
        l = journal_free(l);
        poke(jdir, JOURNAL_LOG_NAME, 0, log, strlen(log));

        /* A version this topod does not know: refused, as the log's. */
        poke(jdir, JOURNAL_LOG_NAME, strlen("topod-journal-log "), "9", 1);
        e = (JournalError) {};
        ASSERT_ERROR(journal_load(jdir, &l, &e), EPROTONOSUPPORT);
        ASSERT_NULL(l);
        ASSERT_TRUE(e.log);
        ASSERT_EQ(e.line, 1u);
        poke(jdir, JOURNAL_LOG_NAME, 0, log, strlen(log));

        /* Damage in the file and in the log: each reported as its own. */
        {
                _cleanup_free_ char *file = slurp(jdir, JOURNAL_FILE_NAME);
                char *at = strstr(file, "cgroup /topod.slice\n");

                ASSERT_NOT_NULL(at);
                poke(jdir, JOURNAL_FILE_NAME, at - file, "cgrou\x02", 6);
                poke(jdir, JOURNAL_LOG_NAME, log_offset(jdir, "task 44"), "tusk", 4);
                e = (JournalError) {};
                ASSERT_EQ(journal_load(jdir, &l, &e), 1);
                ASSERT_EQ(l->n_damaged, 2u);
                ASSERT_EQ(l->damage->line, 2u);
                ASSERT_EQ(l->n_log_damaged, 2u);
                ASSERT_EQ(l->log_damage->line, 8u);
                ASSERT_EQ(e.line, 2u);
                ASSERT_FALSE(e.log);
                ASSERT_EQ(journal_n_entries(l), 4u);
                l = journal_free(l);
        }
        fake_root_remove(dir);
}

/* The log changed under a running topod (edited in place, cut short,
 * replaced, removed, or made where topod had none): noticed, by the check
 * and by a whole commit, the other file moved aside, the mapping dropped
 * (no store into another's file, no SIGBUS past the end of one cut
 * short), and every entry written into the file. */
static void test_log_changed_under(void) {
        char *dir = fake_root_new();
        _cleanup_free_ char *jdir = NULL, *what = NULL, *aside = NULL, *saved = NULL, *text = NULL;
        _cleanup_(journal_freep) Journal *j = NULL, *back = NULL;
        char path[PATH_MAX];

        ASSERT_GT(asprintf(&jdir, "%s/run-topod", dir), 0);
        snprintf(path, sizeof(path), "%s/%s", jdir, JOURNAL_LOG_NAME);
        j = with_log(jdir);
        ASSERT_EQ(journal_check_log(j, &what), 0);
        ASSERT_NULL(what);
        ASSERT_EQ(journal_check_file(j, NULL), 0); /* the appends leave the file alone */

        /* Edited in place, its size kept: the text is not topod's. */
        poke(jdir, JOURNAL_LOG_NAME, log_offset(jdir, "/user.slice"), "/sys", 4);
        ASSERT_EQ(journal_check_log(j, &what), 1);
        ASSERT_STR_CONTAINS(what, "edited");
        ASSERT_STR_CONTAINS(what, JOURNAL_LOG_FOREIGN_PREFIX);
        ASSERT_NULL(j->log_map);
        ASSERT_TRUE(j->dirty);
        ASSERT_EQ(count_prefixed(jdir, JOURNAL_LOG_FOREIGN_PREFIX, &aside), 1u);
        saved = slurp(jdir, aside);
        ASSERT_STR_CONTAINS(saved, "/sys");
        ASSERT_NULL(slurp(jdir, JOURNAL_LOG_NAME));
        ASSERT_OK(journal_commit_append(j)); /* a whole commit: every entry in the file */
        text = slurp(jdir, JOURNAL_FILE_NAME);
        ASSERT_STR_CONTAINS(text, "task 42 4242 /user.slice\n");
        ASSERT_STR_CONTAINS(text, "task 44 4444 /user.slice\n");
        ASSERT_STR_CONTAINS(text, "end 6\n");
        what = mfree(what);

        /* Written past its text, into the NULs (an entry slipped in). */
        ASSERT_EQ(journal_record_task(j, 45, 1, "/"), 1);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_NOT_NULL(j->log_map);
        ASSERT_EQ(journal_check_log(j, NULL), 0);
        poke(jdir, JOURNAL_LOG_NAME, (off_t) j->log_size, "cgroup /system.slice\nend 1\n", 27);
        ASSERT_EQ(journal_check_log(j, &what), 1);
        ASSERT_STR_CONTAINS(what, "edited");
        what = mfree(what);
        ASSERT_OK(journal_commit(j));

        /* Cut short: noticed before the next append would fault. */
        ASSERT_EQ(journal_record_task(j, 46, 1, "/"), 1);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_NOT_NULL(j->log_map);
        ASSERT_EQ(truncate(path, 100), 0);
        ASSERT_EQ(journal_check_log(j, &what), 1);
        ASSERT_STR_CONTAINS(what, "cut short (100 bytes");
        ASSERT_NULL(j->log_map);
        what = mfree(what);
        ASSERT_EQ(journal_record_task(j, 47, 1, "/"), 1);
        ASSERT_OK(journal_commit_append(j)); /* no SIGBUS: a whole commit */
        ASSERT_EQ(journal_load(jdir, &back, NULL), 1);
        ASSERT_NOT_NULL(journal_get_task(back, 47, 1));
        ASSERT_NOT_NULL(journal_get_task(back, 46, 1));
        back = journal_free(back);

        /* Replaced by another file: found by the next whole commit, which
         * keeps what it found in ->foreign_log. */
        ASSERT_EQ(journal_record_task(j, 48, 1, "/"), 1);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_NOT_NULL(j->log_map);
        {
                char from[PATH_MAX];

                test_write_file(jdir, "other", "topod-journal-log 1 1 1\ncgroup /system.slice\nend 1\n", false);
                snprintf(from, sizeof(from), "%s/other", jdir);
                ASSERT_EQ(rename(from, path), 0);
        }
        ASSERT_EQ(journal_forget_task(j, 45, 1), 1);
        ASSERT_OK(journal_commit(j));
        ASSERT_NOT_NULL(j->foreign_log);
        ASSERT_STR_CONTAINS(j->foreign_log, "replaced");
        ASSERT_EQ(count_prefixed(jdir, JOURNAL_LOG_FOREIGN_PREFIX, NULL), 4u);
        ASSERT_EQ(journal_load(jdir, &back, NULL), 1);
        ASSERT_NOT_NULL(journal_get_task(back, 48, 1));
        back = journal_free(back);

        /* Removed: nothing to move aside; the entries go into the file. */
        ASSERT_EQ(journal_record_task(j, 49, 1, "/"), 1);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_NOT_NULL(j->log_map);
        ASSERT_EQ(unlink(path), 0);
        ASSERT_EQ(journal_check_log(j, &what), 1);
        ASSERT_STR_CONTAINS(what, "removed");
        what = mfree(what);
        ASSERT_OK(journal_commit(j));
        ASSERT_EQ(journal_load(jdir, &back, NULL), 1);
        ASSERT_NOT_NULL(journal_get_task(back, 49, 1));
        back = journal_free(back);

        /* Made by someone else while topod has none. */
        ASSERT_EQ(journal_check_log(j, NULL), 0);
        test_write_file(jdir, JOURNAL_LOG_NAME, "topod-journal-log 1 1 1\ncgroup /system.slice\nend 1\n", false);
        ASSERT_EQ(journal_check_log(j, &what), 1);
        ASSERT_STR_CONTAINS(what, "created by another writer");
        ASSERT_NULL(slurp(jdir, JOURNAL_LOG_NAME));
        what = mfree(what);
        ASSERT_OK(journal_commit(j));

        /* A log a load read, edited before the commit that folds it in:
         * that commit notices rather than remove it unseen. */
        ASSERT_EQ(journal_record_task(j, 50, 1, "/"), 1);
        ASSERT_OK(journal_commit_append(j));
        ASSERT_EQ(journal_load(jdir, &back, NULL), 1);
        ASSERT_TRUE(back->log_seen);
        ASSERT_EQ(journal_check_log(back, NULL), 0);
        test_write_file(jdir, JOURNAL_LOG_NAME, "x", true);
        ASSERT_EQ(journal_record_cgroup(back, "/topod.slice/llc1"), 1);
        ASSERT_OK(journal_commit(back));
        ASSERT_NOT_NULL(back->foreign_log);
        ASSERT_STR_CONTAINS(back->foreign_log, "edited");
        ASSERT_EQ(count_prefixed(jdir, JOURNAL_LOG_FOREIGN_PREFIX, NULL), 6u);
        fake_root_remove(dir);
}

int main(void) {
        RUN(test_round_trip);
        RUN(test_version_1);
        RUN(test_escapes);
        RUN(test_first_original_wins);
        RUN(test_forget_many);
        RUN(test_forget_one_by_one);
        RUN(test_rename);
        RUN(test_record_rejects);
        RUN(test_entry_limit);
        RUN(test_malformed);
        RUN(test_oversized);
        RUN(test_commit_and_load);
        RUN(test_changed_under);
        RUN(test_log_salvage);
        RUN(test_log_changed_under);
        return 0;
}
