/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The log of changes without a daemon: the rate limit against a clock the
 * test turns (a burst, silence, the count said once the interval is over,
 * by the next message or a flush), the journal fields and message built
 * for each kind of change, and log_fields() writing the message alone to
 * stderr when the journal is not the log. */

#include <fcntl.h>
#include <syslog.h>
#include <unistd.h>

#include "change-entry.h"
#include "log.h"
#include "ratelimit.h"
#include "tests.h"

#define SEC 1000000u

static void test_ratelimit_burst_then_count(void) {
        RateLimit rl = RATELIMIT_INIT(10 * SEC, 3);
        unsigned held = 99;

        /* the first interval begins at the first message */
        for (unsigned i = 0; i < 3; i++) {
                ASSERT_TRUE(ratelimit_below(&rl, 100 * SEC + i, &held));
                ASSERT_EQ(held, 0u);
        }
        for (unsigned i = 0; i < 5; i++) {
                ASSERT_FALSE(ratelimit_below(&rl, 105 * SEC, &held));
                ASSERT_EQ(held, 0u);
        }
        /* still inside the interval: nothing to say yet */
        ASSERT_EQ(ratelimit_flush(&rl, 109 * SEC), 0u);
        /* the next interval: the five held back said before this one */
        ASSERT_TRUE(ratelimit_below(&rl, 110 * SEC, &held));
        ASSERT_EQ(held, 5u);
        ASSERT_TRUE(ratelimit_below(&rl, 111 * SEC, &held));
        ASSERT_EQ(held, 0u);
}

static void test_ratelimit_flush_once(void) {
        RateLimit rl = RATELIMIT_INIT(10 * SEC, 1);
        unsigned held = 99;

        ASSERT_EQ(ratelimit_flush(&rl, 0), 0u); /* never used */
        ASSERT_TRUE(ratelimit_below(&rl, 50 * SEC, &held));
        ASSERT_FALSE(ratelimit_below(&rl, 51 * SEC, &held));
        ASSERT_FALSE(ratelimit_below(&rl, 52 * SEC, &held));
        ASSERT_EQ(ratelimit_flush(&rl, 59 * SEC), 0u);
        ASSERT_EQ(ratelimit_flush(&rl, 60 * SEC), 2u);
        /* said once: neither a second flush nor the next message repeats it */
        ASSERT_EQ(ratelimit_flush(&rl, 61 * SEC), 0u);
        ASSERT_TRUE(ratelimit_below(&rl, 70 * SEC, &held));
        ASSERT_EQ(held, 0u);
}

static void test_ratelimit_clock_back(void) {
        RateLimit rl = RATELIMIT_INIT(10 * SEC, 1);
        unsigned held = 99;

        ASSERT_TRUE(ratelimit_below(&rl, 50 * SEC, &held));
        ASSERT_FALSE(ratelimit_below(&rl, 50 * SEC, &held));
        /* a clock that went back begins a new interval */
        ASSERT_TRUE(ratelimit_below(&rl, 20 * SEC, &held));
        ASSERT_EQ(held, 1u);
}

static const char *field(const ChangeFields *f, const char *name) {
        size_t n = strlen(name);

        for (size_t i = 0; i < f->n; i++)
                if (strncmp(f->fields[i], name, n) == 0 && f->fields[i][n] == '=')
                        return f->fields[i] + n + 1;
        return NULL;
}

static void test_fields_move(void) {
        ChangeEntry e = { .kind = RECONCILE_KIND_MOVE, .result = RECONCILE_DONE, .policy = "latency-services",
                          .group = "/topod.slice/latency-llc0", .cgroup = "/topod.slice/latency-llc0", .pid = 1234,
                          .comm = "nginx", .what = "cgroup: move process 1234 (tid 1234) to /topod.slice/latency-llc0" };
        ChangeFields f;

        ASSERT_EQ(change_fields_build(&e, &f), 0);
        ASSERT_STREQ(f.message, "moved 1234 (nginx) to topod.slice/latency-llc0 [latency-services]");
        ASSERT_STREQ(field(&f, "MESSAGE"), f.message);
        ASSERT_STREQ(field(&f, "TOPOD_ACTION"), "move");
        ASSERT_STREQ(field(&f, "TOPOD_KIND"), "move");
        ASSERT_STREQ(field(&f, "TOPOD_RESULT"), "done");
        ASSERT_STREQ(field(&f, "TOPOD_POLICY"), "latency-services");
        ASSERT_STREQ(field(&f, "TOPOD_GROUP"), "/topod.slice/latency-llc0");
        ASSERT_STREQ(field(&f, "TOPOD_PID"), "1234");
        ASSERT_STREQ(field(&f, "TOPOD_COMM"), "nginx");
        ASSERT_STREQ(field(&f, "TOPOD_CGROUP"), "/topod.slice/latency-llc0");
        ASSERT_NULL(field(&f, "TOPOD_UNIT")); /* no unit in a cgroupfs path */
        ASSERT_NULL(field(&f, "ERRNO"));
        ASSERT_EQ(change_priority(&e), LOG_INFO);
        change_fields_done(&f);

        e.result = RECONCILE_ALREADY;
        ASSERT_EQ(change_fields_build(&e, &f), 0);
        ASSERT_STREQ(f.message, "1234 (nginx) already in topod.slice/latency-llc0 [latency-services]");
        ASSERT_STREQ(field(&f, "TOPOD_RESULT"), "already");
        ASSERT_EQ(change_priority(&e), LOG_DEBUG);
        change_fields_done(&f);

        e.result = RECONCILE_FAILED;
        e.error = -EACCES;
        e.reason = "cannot journal the original";
        e.comm = "bad\ncomm";
        ASSERT_EQ(change_fields_build(&e, &f), 0);
        ASSERT_STREQ(f.message, "could not move 1234 (bad?comm) to topod.slice/latency-llc0 [latency-services]: "
                                "cannot journal the original: Permission denied");
        ASSERT_STREQ(field(&f, "ERRNO"), "13");
        ASSERT_STREQ(field(&f, "TOPOD_REASON"), "cannot journal the original");
        ASSERT_STREQ(field(&f, "TOPOD_COMM"), "bad?comm");
        ASSERT_EQ(change_priority(&e), LOG_INFO);
        change_fields_done(&f);
}

static void test_fields_move_back(void) {
        /* a restore under the systemd driver: from topod's scope back to the service's unit */
        ChangeEntry e = { .kind = RECONCILE_KIND_MOVE, .undo = true, .restoring = true, .result = RECONCILE_DONE,
                          .policy = "sd-scoped", .group = "/topod.slice/topod-scoped.slice",
                          .cgroup = "/system.slice/lab-job.scope", .pid = 77, .what = "x" };
        ChangeFields f;

        ASSERT_EQ(change_fields_build(&e, &f), 0);
        ASSERT_STREQ(f.message, "moved 77 back to system.slice/lab-job.scope from topod.slice/topod-scoped.slice [sd-scoped]");
        ASSERT_STREQ(field(&f, "TOPOD_ACTION"), "restore");
        ASSERT_STREQ(field(&f, "TOPOD_KIND"), "move");
        ASSERT_STREQ(field(&f, "TOPOD_UNIT"), "lab-job.scope");
        ASSERT_NULL(field(&f, "TOPOD_COMM"));
        change_fields_done(&f);

        e.restoring = false; /* let go while running */
        e.result = RECONCILE_VANISHED;
        ASSERT_EQ(change_fields_build(&e, &f), 0);
        ASSERT_STREQ(field(&f, "TOPOD_ACTION"), "release");
        ASSERT_STREQ(field(&f, "TOPOD_RESULT"), "vanished");
        ASSERT_STREQ(f.message, "77 exited before its move back to system.slice/lab-job.scope [sd-scoped]");
        change_fields_done(&f);
}

static void test_fields_cookie_property_feature(void) {
        ChangeEntry e = { .kind = RECONCILE_KIND_COOKIE, .result = RECONCILE_DONE, .policy = "avx", .pid = 9,
                          .comm = "crunch", .what = "cookie group 0: tid 9" };
        ChangeFields f;

        ASSERT_EQ(change_fields_build(&e, &f), 0);
        ASSERT_STREQ(f.message, "gave 9 (crunch) a core-scheduling cookie [avx]");
        ASSERT_STREQ(field(&f, "TOPOD_ACTION"), "cookie");
        ASSERT_NULL(field(&f, "TOPOD_GROUP"));
        change_fields_done(&f);

        e.undo = e.restoring = true;
        ASSERT_EQ(change_fields_build(&e, &f), 0);
        ASSERT_STREQ(f.message, "cleared the core-scheduling cookie of 9 (crunch) [avx]");
        ASSERT_STREQ(field(&f, "TOPOD_ACTION"), "restore");
        ASSERT_STREQ(field(&f, "TOPOD_KIND"), "cookie");
        change_fields_done(&f);

        /* a unit's property: the unit is the name itself */
        e = (ChangeEntry) { .kind = RECONCILE_KIND_PROPERTY, .result = RECONCILE_DONE, .policy = "sd-crunch",
                            .group = "/topod.slice/topod-crunch.slice", .cgroup = "crunch.service",
                            .what = "unit crunch.service: AllowedCPUs 2-3" };
        ASSERT_EQ(change_fields_build(&e, &f), 0);
        ASSERT_STREQ(f.message, "set: unit crunch.service: AllowedCPUs 2-3 [sd-crunch]");
        ASSERT_STREQ(field(&f, "TOPOD_ACTION"), "property");
        ASSERT_STREQ(field(&f, "TOPOD_UNIT"), "crunch.service");
        ASSERT_NULL(field(&f, "TOPOD_CGROUP"));
        ASSERT_NULL(field(&f, "TOPOD_PID"));
        change_fields_done(&f);

        /* put back on stop: the unit's own value, empty */
        e.undo = e.restoring = true;
        e.what = "unit crunch.service: back AllowedCPUs ";
        ASSERT_EQ(change_fields_build(&e, &f), 0);
        ASSERT_STREQ(f.message, "put back: unit crunch.service: back AllowedCPUs [sd-crunch]");
        ASSERT_STREQ(field(&f, "TOPOD_ACTION"), "restore");
        ASSERT_STREQ(field(&f, "TOPOD_KIND"), "property");
        change_fields_done(&f);

        e = (ChangeEntry) { .kind = RECONCILE_KIND_FEATURE, .result = RECONCILE_SKIPPED,
                            .reason = "lockdown", .what = "feature TTWU_QUEUE off" };
        ASSERT_EQ(change_fields_build(&e, &f), 0);
        ASSERT_STREQ(f.message, "skipped: feature TTWU_QUEUE off: lockdown");
        ASSERT_STREQ(field(&f, "TOPOD_ACTION"), "feature");
        ASSERT_NULL(field(&f, "TOPOD_POLICY"));
        ASSERT_EQ(change_priority(&e), LOG_DEBUG);
        change_fields_done(&f);

        e = (ChangeEntry) { .kind = RECONCILE_KIND_CREATE, .result = RECONCILE_DONE, .cgroup = "/topod.slice/x",
                            .what = "cgroup /topod.slice/x: mkdir" };
        ASSERT_EQ(change_fields_build(&e, &f), 0);
        ASSERT_STREQ(f.message, "created: cgroup /topod.slice/x: mkdir");
        ASSERT_STREQ(field(&f, "TOPOD_ACTION"), "create");
        change_fields_done(&f);
}

static void test_unit_of(void) {
        ASSERT_STREQ(change_unit_of("/system.slice/crunch.service"), "crunch.service");
        ASSERT_STREQ(change_unit_of("topod-x.slice"), "topod-x.slice");
        ASSERT_NULL(change_unit_of("/topod.slice/node0/avx"));
        ASSERT_NULL(change_unit_of("/"));
        ASSERT_NULL(change_unit_of(".service"));
        ASSERT_NULL(change_unit_of(NULL));
}

static void test_suppressed(void) {
        ChangeFields f;

        ASSERT_EQ(change_fields_suppressed(CHANGE_MOVE, 532, 10, &f), 0);
        ASSERT_STREQ(f.message, "suppressed 532 messages about moves in the last 10 s");
        ASSERT_STREQ(field(&f, "TOPOD_ACTION"), "move");
        ASSERT_STREQ(field(&f, "TOPOD_SUPPRESSED"), "532");
        change_fields_done(&f);
}

/* What stderr gets when the journal is not the log: "topod: <MESSAGE>",
 * the same text, nothing else; below the level, nothing. */
static void test_stderr_same_text(void) {
        char path[] = "/tmp/test-change-log-XXXXXX", buf[512] = {};
        ChangeEntry e = { .kind = RECONCILE_KIND_MOVE, .result = RECONCILE_DONE, .policy = "p", .group = "/topod.slice/g",
                          .cgroup = "/topod.slice/g", .pid = 42, .comm = "w", .what = "x" };
        int fd = mkstemp(path), saved = dup(STDERR_FILENO);
        ChangeFields f;
        ssize_t n;
        Log l;

        ASSERT_TRUE(fd >= 0 && saved >= 0);
        (void) unsetenv("JOURNAL_STREAM");
        log_open(&l, LOG_INFO);
        ASSERT_FALSE(l.journal);
        ASSERT_EQ(change_fields_build(&e, &f), 0);
        fflush(stderr);
        ASSERT_EQ(dup2(fd, STDERR_FILENO), STDERR_FILENO);
        log_fields(&l, change_priority(&e), f.fields, f.n, f.message);
        log_fields(&l, LOG_DEBUG, f.fields, f.n, "not at info");
        fflush(stderr);
        ASSERT_EQ(dup2(saved, STDERR_FILENO), STDERR_FILENO);
        n = pread(fd, buf, sizeof(buf) - 1, 0);
        ASSERT_GT(n, 0);
        ASSERT_STREQ(buf, "topod: moved 42 (w) to topod.slice/g [p]\n");
        change_fields_done(&f);
        close(fd);
        close(saved);
        unlink(path);
}

int main(void) {
        RUN(test_ratelimit_burst_then_count);
        RUN(test_ratelimit_flush_once);
        RUN(test_ratelimit_clock_back);
        RUN(test_fields_move);
        RUN(test_fields_move_back);
        RUN(test_fields_cookie_property_feature);
        RUN(test_unit_of);
        RUN(test_suppressed);
        RUN(test_stderr_same_text);
        return 0;
}
