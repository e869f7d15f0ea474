/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The reader and `topoctl check` against committed files (run from the
 * source tree): shipped policies pass --strict --offline; each broken file
 * gives exactly the one error its first line announces; warnings fail only
 * with --strict; topod.conf checks clean. */

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/escape.h"

#include "check.h"
#include "decide/policy-check.h"
#include "decide/policy-read.h"
#include "tests.h"

/* Run topoctl_check with stdout captured; returns the exit code. */
static int run_check(char **out, char *const *paths, size_t n, bool strict, bool offline, bool json) {
        FILE *tmp = tmpfile();
        int saved, rc;
        long len;

        ASSERT_NOT_NULL(tmp);
        fflush(stdout);
        saved = dup(STDOUT_FILENO);
        ASSERT_GE(saved, 0);
        ASSERT_GE(dup2(fileno(tmp), STDOUT_FILENO), 0);
        rc = topoctl_check(paths, n, strict, offline, json, NULL);
        fflush(stdout);
        ASSERT_GE(dup2(saved, STDOUT_FILENO), 0);
        close(saved);
        len = ftell(tmp);
        ASSERT_GE(len, 0);
        *out = calloc(1, (size_t) len + 1);
        ASSERT_NOT_NULL(*out);
        rewind(tmp);
        ASSERT_EQ(fread(*out, 1, (size_t) len, tmp), len);
        fclose(tmp);
        fprintf(stderr, "%s", *out);
        return rc;
}

static size_t count_lines(const char *s) {
        size_t n = 0;

        for (; *s; s++)
                n += *s == '\n';
        return n;
}

static void test_shipped_policies_strict_offline(void) {
        char *paths[] = { (char *) "policies" };
        _cleanup_free_ char *out = NULL;

        ASSERT_EQ(run_check(&out, paths, 1, true, true, false), 0);
        ASSERT_STREQ(out, "3 policies, 0 errors, 0 warnings\n");
}

static void test_shipped_policies_all_enabled(void) {
        /* Turned on together, the shipped set still has no conflicts or
         * shadowing: their bands and classes keep them apart. */
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = NULL;
        char *paths[] = { (char *) "policies" };

        ASSERT_OK(policy_read_paths(paths, 1, d, &s));
        ASSERT_EQ(s->n, 3); /* policies/examples/ is not read with them */
        for (size_t i = 0; i < s->n; i++)
                s->policies[i]->enabled = true;
        ASSERT_OK(check_policy_set(s, NULL, NULL, 0, d));
        DUMP_DIAG(d);
        ASSERT_EQ(d->n, 0);
        /* precedence: avx-isolation, latency-services, throughput-batch */
        ASSERT_STREQ(s->policies[0]->name, "avx-isolation");
        ASSERT_STREQ(s->policies[2]->name, "throughput-batch");
}

/* The documented examples parse cleanly, and on a mainline kernel (6.12's
 * features, no llc_balancing) the check finds what they set missing: the
 * SHARED_RUNQ that was never merged, the llc_balancing of 7.3; --strict
 * makes that an error. */
static void test_examples_on_a_mainline_kernel(void) {
        static char *features[] = { (char *) "PLACE_LAG", (char *) "TTWU_QUEUE", (char *) "NO_HRTICK", NULL };
        static KernelSetting settings[32];
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = NULL;
        char *paths[] = { (char *) "policies/examples" };
        KernelCaps caps = {
                .sched_features = { .available = true },
                .features_readable = true,
                .features = features,
                .sched_settings = { .available = true },
                .settings = settings,
                .n_settings = sched_settings_count,
        };

        ASSERT_LE(sched_settings_count, ELEMENTSOF(settings));
        for (size_t i = 0; i < sched_settings_count; i++)
                settings[i] = (KernelSetting) { .info = &sched_settings[i], .error = -ENOENT };
        ASSERT_OK(policy_read_paths(paths, 1, d, &s));
        ASSERT_EQ(s->n, 2);
        ASSERT_EQ(d->n, 0);
        ASSERT_OK(check_policy_set(s, NULL, NULL, 0, d));
        ASSERT_EQ(d->n, 0); /* offline: nothing to say */
        ASSERT_OK(check_policy_set(s, NULL, &caps, POLICY_KERNEL_VERSION(6, 12, 95), d));
        DUMP_DIAG(d);
        ASSERT_EQ(diag_count_id(d, "unknown-feature"), 1);
        ASSERT_EQ(diag_count_id(d, "no-setting"), 1);
        ASSERT_EQ(d->n_errors, 0);
}

static void test_valid_dir(void) {
        char *paths[] = { (char *) "tests/data/policies/valid", (char *) "conf/topod.conf" };
        _cleanup_free_ char *out = NULL;

        ASSERT_EQ(run_check(&out, paths, 2, true, true, false), 0);
}

/* "# expect: ID LINE" or "# expect: none" on the first line of each file. */
static void test_broken_dir_one_error_each(void) {
        static const char dir[] = "tests/data/policies/broken";
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *s = NULL;
        char *paths[] = { (char *) dir };
        _cleanup_free_ char *out = NULL;
        size_t n_expected = 0;
        struct dirent *de;
        DIR *dp;

        ASSERT_EQ(policy_read_paths(paths, 1, d, &s), -EINVAL);
        DUMP_DIAG(d);
        ASSERT_EQ(d->n_warnings, 0);
        dp = opendir(dir);
        ASSERT_NOT_NULL(dp);
        while ((de = readdir(dp))) {
                char path[512], first[128] = "", id[64] = "";
                unsigned line = 0;
                size_t found = 0;
                FILE *f;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
                f = fopen(path, "re");
                ASSERT_NOT_NULL(f);
                ASSERT_NOT_NULL(fgets(first, sizeof first, f));
                fclose(f);
                for (size_t i = 0; i < d->n; i++)
                        if (strcmp(d->items[i].file, path) == 0)
                                found++;
                if (strncmp(first, "# expect: none", 14) == 0) {
                        ASSERT_EQ(found, 0);
                        continue;
                }
                ASSERT_EQ(sscanf(first, "# expect: %63s %u", id, &line), 2);
                fprintf(stderr, "   %s: %s at %u\n", path, id, line);
                ASSERT_EQ(found, 1);
                for (size_t i = 0; i < d->n; i++)
                        if (strcmp(d->items[i].file, path) == 0) {
                                ASSERT_STREQ(d->items[i].id, id);
                                ASSERT_EQ(d->items[i].line, line);
                                ASSERT_EQ(d->items[i].severity, DIAG_ERROR);
                        }
                n_expected++;
        }
        closedir(dp);
        ASSERT_EQ(d->n_errors, n_expected);
        ASSERT_GE(n_expected, 12);

        /* the CLI: one "file:line: error:" line per error, exit 1 */
        ASSERT_EQ(run_check(&out, paths, 1, false, true, false), 1);
        ASSERT_EQ(count_lines(out), n_expected + 1);
        for (char *l = out; *l; l = strchr(l, '\n') + 1) {
                if (!strchr(strchr(l, '\n') + 1, '\n')) { /* the last line: the summary */
                        char summary[128];

                        /* the files of "expect: none" parse */
                        snprintf(summary, sizeof summary, ", %zu errors, 0 warnings\n", n_expected);
                        ASSERT_STR_CONTAINS(l, summary);
                        break;
                }
                ASSERT_STR_PREFIX(l, "tests/data/policies/broken/");
                ASSERT_STR_CONTAINS(l, ": error: ");
        }
}

static void test_warning_only(void) {
        char *paths[] = { (char *) "tests/data/policies/warning-only" };
        _cleanup_free_ char *out = NULL, *out2 = NULL, *json = NULL;

        ASSERT_EQ(run_check(&out, paths, 1, false, true, false), 0);
        ASSERT_EQ(count_lines(out), 4);
        ASSERT_STR_CONTAINS(out, "\n1 policy, 0 errors, 3 warnings\n");
        ASSERT_STR_CONTAINS(out, "comm-too-long.ini:6: warning: unknown CPU vendor 'GenuineIntle'; did you mean 'GenuineIntel'?");
        ASSERT_EQ(run_check(&out2, paths, 1, true, true, false), 1);
        ASSERT_STR_CONTAINS(out2, ": error: ");
        ASSERT_EQ(run_check(&json, paths, 1, true, true, true), 1);
        ASSERT_STR_CONTAINS(json, "\"valid\": false");
        ASSERT_STR_CONTAINS(json, "\"id\": \"comm-too-long\"");
        ASSERT_STR_CONTAINS(json, "\"line\": 12");
}

static void test_missing_path(void) {
        char *paths[] = { (char *) "tests/data/policies/does-not-exist.ini" };
        char *empty[] = { (char *) "" };
        _cleanup_free_ char *out = NULL;

        ASSERT_EQ(run_check(&out, paths, 1, false, true, false), 1);
        ASSERT_STR_CONTAINS(out, "does-not-exist.ini: error: cannot read");
        ASSERT_EQ(topoctl_check(empty, 1, false, true, false, NULL), 2);
}

static void test_bad_conf(void) {
        char *paths[] = { (char *) "tests/data/policies/bad-topod.conf" };
        _cleanup_free_ char *out = NULL;

        ASSERT_EQ(run_check(&out, paths, 1, false, true, false), 1);
        ASSERT_STR_CONTAINS(out, "bad-topod.conf:3: error: unknown key 'sample_intervall' in [daemon]; did you mean 'sample_interval'?");
}

static void write_file(const char *path, const char *text) {
        FILE *f = fopen(path, "we");

        ASSERT_NOT_NULL(f);
        fputs(text, f);
        ASSERT_EQ(fclose(f), 0);
}

/* A FIFO, a device (a node where root may make one, and a symbolic link
 * to /dev/zero), a file with a byte that is not UTF-8 and a file whose
 * name is not UTF-8: each refused with its file (and line) at once, never
 * opened for reading in a way that blocks, and the output valid UTF-8.
 * alarm(): a blocking open() fails the test instead of hanging it. */
static void test_special_files(void) {
        char dir[] = "/tmp/topod-check-XXXXXX", p[PATH_MAX];
        char *paths[] = { dir };
        _cleanup_free_ char *out = NULL;
        bool dev;

        ASSERT_NOT_NULL(mkdtemp(dir));
        snprintf(p, sizeof(p), "%s/10-fifo.ini", dir);
        ASSERT_EQ(mkfifo(p, 0644), 0);
        snprintf(p, sizeof(p), "%s/20-zero.ini", dir);
        ASSERT_EQ(symlink("/dev/zero", p), 0);
        snprintf(p, sizeof(p), "%s/25-null.ini", dir);
        dev = mknod(p, S_IFCHR | 0644, makedev(1, 3)) == 0;
        snprintf(p, sizeof(p), "%s/30-bytes.ini", dir);
        write_file(p, "[policy]\nname = x\ncomment = caf\xff\n");
        snprintf(p, sizeof(p), "%s/40-\xfe.ini", dir);
        write_file(p, "[policy\n");

        alarm(10);
        ASSERT_EQ(run_check(&out, paths, 1, false, true, false), 1);
        alarm(0);
        ASSERT_STR_CONTAINS(out, "10-fifo.ini: error: not a regular file");
        ASSERT_STR_CONTAINS(out, "20-zero.ini: error: a symbolic link");
        if (dev)
                ASSERT_STR_CONTAINS(out, "25-null.ini: error: not a regular file");
        ASSERT_STR_CONTAINS(out, "30-bytes.ini:3: error: byte 0xff at offset");
        ASSERT_STR_CONTAINS(out, "40-\\xfe.ini:");
        ASSERT_TRUE(utf8_valid(out, strlen(out), NULL));
        ASSERT_EQ(system("rm -rf /tmp/topod-check-*"), 0);
}

int main(void) {
        RUN(test_special_files);
        RUN(test_shipped_policies_strict_offline);
        RUN(test_shipped_policies_all_enabled);
        RUN(test_examples_on_a_mainline_kernel);
        RUN(test_valid_dir);
        RUN(test_broken_dir_one_error_each);
        RUN(test_warning_only);
        RUN(test_missing_path);
        RUN(test_bad_conf);
        return 0;
}
