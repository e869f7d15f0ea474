/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The scheduler's other debugfs settings: the catalog and its names across
 * kernel versions, the text of values, the probe on fake 7.3-, 6.12- and
 * 6.5-like trees, the journal's "setting" entries, and setting, skipping,
 * releasing and restoring them against a model of the kernel's files
 * (written through FeatOps: a number replaces the file's text, a word of a
 * choice file moves the parentheses, a locked-down kernel refuses). */

#include <sys/wait.h>

#include "apply/feat.h"
#include "apply/journal.h"
#include "apply/reconcile.h"
#include "decide/plan.h"
#include "base/sched-settings.h"
#include "base/util.h"
#include "fake-root.h"
#include "observe/kernelcaps.h"

#define DEBUGFS "/sys/kernel/debug"
#define SCHED "sys/kernel/debug/sched/"

#define MOUNTINFO                                                                                       \
        "22 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"                  \
        "30 22 0:7 / /sys/kernel/debug rw,nosuid,nodev,noexec,relatime shared:15 - debugfs debugfs rw\n"

/* ---- the catalog and values ---------------------------------------------- */

static void test_catalog(void) {
        size_t keys = 0;

        ASSERT_GE(sched_settings_count, 17);
        for (size_t i = 0; i < sched_settings_count; i++) {
                const SchedSettingInfo *s = &sched_settings[i];

                /* Its first file is its name; every name it has had is found. */
                ASSERT_STREQ(s->files[0].name, s->name);
                ASSERT_PTR_EQ(sched_setting_lookup(s->name), s);
                ASSERT_EQ(sched_setting_index(s), i);
                ASSERT_NOT_NULL(s->absent);
                ASSERT_STR_PREFIX(s->absent, "not on this kernel: ");
                for (size_t f = 0; f < s->n_files; f++) {
                        ASSERT_PTR_EQ(sched_setting_by_file(s->files[f].name), s);
                        ASSERT_TRUE(sched_setting_file_valid(s->files[f].name));
                }
                ASSERT_TRUE(strv_contains((char *const *) sched_setting_keys, s->name));
                keys++;
                for (const char *const *a = s->aliases; a && *a; a++) {
                        ASSERT_PTR_EQ(sched_setting_lookup(*a), s);
                        ASSERT_TRUE(strv_contains((char *const *) sched_setting_keys, *a));
                        keys++;
                }
        }
        /* The "did you mean" list is the names and the aliases, no more. */
        ASSERT_EQ(strv_length((char *const *) sched_setting_keys), keys);

        /* The rename of 6.6 and tuned's sysctl names. */
        ASSERT_PTR_EQ(sched_setting_lookup("min_granularity_ns"), sched_setting_lookup("base_slice_ns"));
        ASSERT_PTR_EQ(sched_setting_lookup("sched_min_granularity_ns"), sched_setting_lookup("base_slice_ns"));
        ASSERT_PTR_EQ(sched_setting_by_file("min_granularity_ns"), sched_setting_lookup("base_slice_ns"));
        ASSERT_PTR_EQ(sched_setting_lookup("numa_balancing_scan_delay_ms"),
                      sched_setting_lookup("numa_balancing/scan_delay_ms"));
        ASSERT_TRUE(sched_setting_lookup("latency_ns")->removed);
        ASSERT_STR_CONTAINS(sched_setting_lookup("wakeup_granularity_ns")->absent, "6.6");
        ASSERT_STR_CONTAINS(sched_setting_lookup("llc_balancing/enabled")->absent, "7.3");
        ASSERT_STR_CONTAINS(sched_setting_lookup("llc_balancing/imb_pct")->absent, "CONFIG_SCHED_CACHE");
        ASSERT_EQ(sched_setting_lookup("llc_balancing/enabled")->kind, SCHED_SETTING_SWITCH);
        ASSERT_EQ(sched_setting_lookup("preempt")->kind, SCHED_SETTING_CHOICE);
        ASSERT_NULL(sched_setting_lookup("features"));
        ASSERT_NULL(sched_setting_lookup("cgroup_mode"));
        ASSERT_NULL(sched_setting_lookup("llc_balancing"));
        ASSERT_NULL(sched_setting_by_file("latency_warn_ms"));
        {
                _cleanup_free_ char *h = NULL;

                ASSERT_OK(sched_setting_history(sched_setting_lookup("base_slice_ns"), &h));
                ASSERT_STREQ(h, "base_slice_ns from 6.6, min_granularity_ns from 5.13 until 6.6");
        }
        ASSERT_FALSE(sched_setting_file_valid("../features"));
        ASSERT_FALSE(sched_setting_file_valid("/base_slice_ns"));
        ASSERT_FALSE(sched_setting_file_valid("llc_balancing//enabled"));
        ASSERT_FALSE(sched_setting_file_valid("llc_balancing/"));
        ASSERT_FALSE(sched_setting_file_valid(""));
}

static void test_values(void) {
        char v[SCHED_SETTING_VALUE_MAX];
        char **choices = NULL;

        ASSERT_OK(sched_setting_value_parse(SCHED_SETTING_NUMBER, "3000000", v));
        ASSERT_STREQ(v, "3000000");
        ASSERT_OK(sched_setting_value_parse(SCHED_SETTING_NUMBER, "0", v));
        ASSERT_OK(sched_setting_value_parse(SCHED_SETTING_NUMBER, "4294967295", v));
        ASSERT_ERROR(sched_setting_value_parse(SCHED_SETTING_NUMBER, "4294967296", v), EINVAL);
        ASSERT_ERROR(sched_setting_value_parse(SCHED_SETTING_NUMBER, "-1", v), EINVAL);
        ASSERT_ERROR(sched_setting_value_parse(SCHED_SETTING_NUMBER, "007", v), EINVAL);
        ASSERT_ERROR(sched_setting_value_parse(SCHED_SETTING_NUMBER, "3ms", v), EINVAL);
        ASSERT_ERROR(sched_setting_value_parse(SCHED_SETTING_NUMBER, "", v), EINVAL);
        ASSERT_OK(sched_setting_value_parse(SCHED_SETTING_SWITCH, "off", v));
        ASSERT_STREQ(v, "0");
        ASSERT_OK(sched_setting_value_parse(SCHED_SETTING_SWITCH, "yes", v));
        ASSERT_STREQ(v, "1");
        ASSERT_OK(sched_setting_value_parse(SCHED_SETTING_SWITCH, "1", v));
        ASSERT_STREQ(v, "1");
        ASSERT_ERROR(sched_setting_value_parse(SCHED_SETTING_SWITCH, "2", v), EINVAL);
        ASSERT_OK(sched_setting_value_parse(SCHED_SETTING_CHOICE, "lazy", v));
        ASSERT_STREQ(v, "lazy");
        ASSERT_ERROR(sched_setting_value_parse(SCHED_SETTING_CHOICE, "Full", v), EINVAL);
        ASSERT_ERROR(sched_setting_value_parse(SCHED_SETTING_CHOICE, "full lazy", v), EINVAL);

        /* What the kernel's files read. */
        ASSERT_OK(sched_setting_text_parse(SCHED_SETTING_NUMBER, "2800000\n", v, NULL));
        ASSERT_STREQ(v, "2800000");
        ASSERT_ERROR(sched_setting_text_parse(SCHED_SETTING_NUMBER, "2800000 12\n", v, NULL), EBADMSG);
        ASSERT_OK(sched_setting_text_parse(SCHED_SETTING_SWITCH, "1\n", v, NULL));
        ASSERT_STREQ(v, "1");
        ASSERT_OK(sched_setting_text_parse(SCHED_SETTING_SWITCH, "N\n", v, NULL)); /* a debugfs bool */
        ASSERT_STREQ(v, "0");
        ASSERT_ERROR(sched_setting_text_parse(SCHED_SETTING_SWITCH, "maybe\n", v, NULL), EBADMSG);
        ASSERT_OK(sched_setting_text_parse(SCHED_SETTING_CHOICE, "none (voluntary) full \n", v, &choices));
        ASSERT_STREQ(v, "voluntary");
        ASSERT_EQ(strv_length(choices), 3);
        ASSERT_STREQ(choices[2], "full");
        choices = strv_free(choices);
        ASSERT_OK(sched_setting_text_parse(SCHED_SETTING_CHOICE, "full (lazy) \n", v, NULL));
        ASSERT_STREQ(v, "lazy");
        ASSERT_ERROR(sched_setting_text_parse(SCHED_SETTING_CHOICE, "full lazy\n", v, &choices), ENODATA);
        ASSERT_ERROR(sched_setting_text_parse(SCHED_SETTING_CHOICE, "(full) (lazy)\n", v, &choices), EBADMSG);
        ASSERT_ERROR(sched_setting_text_parse(SCHED_SETTING_CHOICE, "\n", v, &choices), EBADMSG);
        ASSERT_NULL(choices);
}

/* ---- the probe ------------------------------------------------------------ */

/* The 7.3.4 test guest's sched/ (read there), less the files topod does not manage. */
static char *tree_73(void) {
        char *d = fake_root_new();

        fake_write(d, "proc/self/mountinfo", MOUNTINFO);
        fake_write(d, SCHED "features", "PLACE_LAG TTWU_QUEUE NO_HRTICK \n");
        fake_write(d, SCHED "cgroup_mode", "up smp (concur) max tasks \n");
        fake_write(d, SCHED "base_slice_ns", "2800000\n");
        fake_write(d, SCHED "migration_cost_ns", "500000\n");
        fake_write(d, SCHED "nr_migrate", "32\n");
        fake_write(d, SCHED "preempt", "full (lazy) \n");
        fake_write(d, SCHED "llc_balancing/enabled", "1\n");
        fake_write(d, SCHED "llc_balancing/aggr_tolerance", "1\n");
        fake_write(d, SCHED "llc_balancing/epoch_period", "10\n");
        fake_write(d, SCHED "llc_balancing/epoch_affinity_timeout", "5\n");
        fake_write(d, SCHED "llc_balancing/imb_pct", "20\n");
        fake_write(d, SCHED "llc_balancing/overaggr_pct", "50\n");
        return d;
}

/* A 6.5 (CFS) kernel: min_granularity_ns, latency_ns, NUMA balancing. */
static char *tree_65(void) {
        char *d = fake_root_new();

        fake_write(d, "proc/self/mountinfo", MOUNTINFO);
        fake_write(d, SCHED "features", "PLACE_LAG TTWU_QUEUE \n");
        fake_write(d, SCHED "min_granularity_ns", "3000000\n");
        fake_write(d, SCHED "latency_ns", "24000000\n");
        fake_write(d, SCHED "wakeup_granularity_ns", "4000000\n");
        fake_write(d, SCHED "migration_cost_ns", "500000\n");
        fake_write(d, SCHED "nr_migrate", "32\n");
        fake_write(d, SCHED "numa_balancing/scan_delay_ms", "1000\n");
        fake_write(d, SCHED "numa_balancing/scan_period_min_ms", "1000\n");
        fake_write(d, SCHED "numa_balancing/scan_period_max_ms", "60000\n");
        fake_write(d, SCHED "numa_balancing/scan_size_mb", "256\n");
        fake_write(d, SCHED "numa_balancing/hot_threshold_ms", "1000\n");
        return d;
}

static int no_syscall(void *u) {
        (void) u;
        return -EINVAL;
}

static KernelCaps *probe(const char *dir) {
        _cleanup_(root_freep) Root *r = NULL;
        KernelProbeOps ops = { .core_sched_get = no_syscall, .proc_connector = no_syscall };
        KernelCaps *c = NULL;

        ASSERT_OK(root_open(dir, &r));
        ASSERT_OK(kernelcaps_probe(r, &ops, &c));
        return c;
}

static const KernelSetting *found(const KernelCaps *c, const char *name) {
        const KernelSetting *ks = kernelcaps_setting(c, sched_setting_lookup(name));

        ASSERT_NOT_NULL(ks);
        return ks;
}

static void test_probe(void) {
        char *d = tree_73();
        _cleanup_(kernelcaps_freep) KernelCaps *c = probe(d), *old = NULL, *none = NULL;
        const KernelSetting *ks;

        ASSERT_EQ(c->n_settings, sched_settings_count);
        ASSERT_TRUE(c->sched_settings.available);
        ASSERT_STR_CONTAINS(c->sched_settings.reason, "10 of the");
        ASSERT_STR_CONTAINS(c->sched_settings.reason, "10 writable");
        ks = found(c, "base_slice_ns");
        ASSERT_STREQ(ks->file, "base_slice_ns");
        ASSERT_STREQ(ks->value, "2800000");
        ASSERT_TRUE(ks->writable);
        ASSERT_EQ(ks->error, 0);
        ks = found(c, "preempt");
        ASSERT_STREQ(ks->value, "lazy");
        ASSERT_EQ(strv_length(ks->choices), 2);
        ks = found(c, "llc_balancing/enabled");
        ASSERT_STREQ(ks->file, "llc_balancing/enabled");
        ASSERT_STREQ(ks->value, "1");
        ASSERT_STREQ(found(c, "llc_balancing/overaggr_pct")->value, "50");
        ks = found(c, "numa_balancing/scan_delay_ms");
        ASSERT_NULL(ks->file);
        ASSERT_EQ(ks->error, -ENOENT);
        ASSERT_NULL(found(c, "latency_ns")->file);
        fake_root_remove(d);

        /* 6.5: the same setting under its older name. */
        d = tree_65();
        old = probe(d);
        ks = found(old, "base_slice_ns");
        ASSERT_STREQ(ks->file, "min_granularity_ns");
        ASSERT_STREQ(ks->value, "3000000");
        ASSERT_STREQ(found(old, "latency_ns")->file, "latency_ns");
        ASSERT_STREQ(found(old, "numa_balancing/hot_threshold_ms")->value, "1000");
        ASSERT_NULL(found(old, "llc_balancing/enabled")->file);
        ASSERT_NULL(found(old, "preempt")->file);
        fake_root_remove(d);

        /* No debugfs: nothing found, and the caps say why. */
        d = fake_root_new();
        fake_write(d, "proc/self/mountinfo", "22 1 0:21 / /sys rw - sysfs sysfs rw\n");
        none = probe(d);
        ASSERT_FALSE(none->sched_settings.available);
        ASSERT_STR_CONTAINS(none->sched_settings.reason, "debugfs");
        ASSERT_NULL(found(none, "base_slice_ns")->file);
        fake_root_remove(d);
}

/* A file that neither reads nor is refused by lockdown tells neither way:
 * not found, not absent, the error kept. As root a directory in its place
 * gives EISDIR; as nobody every file under the 0700 debugfs gives EACCES. */
/* What an operator, tuned or the kernel wrote since the probe is read
 * again; what was absent stays absent. */
static void test_refresh(void) {
        char *d = tree_73();
        _cleanup_(kernelcaps_freep) KernelCaps *c = probe(d);
        _cleanup_(root_freep) Root *r = NULL;

        ASSERT_OK(root_open(d, &r));
        ASSERT_EQ(kernelcaps_refresh_settings(c, r), 0);
        fake_write(d, SCHED "base_slice_ns", "3000000\n");
        fake_write(d, SCHED "llc_balancing/enabled", "0\n");
        ASSERT_EQ(kernelcaps_refresh_settings(c, r), 1);
        ASSERT_STREQ(found(c, "base_slice_ns")->value, "3000000");
        ASSERT_STREQ(found(c, "llc_balancing/enabled")->value, "0");
        ASSERT_STREQ(found(c, "migration_cost_ns")->value, "500000");
        ASSERT_EQ(kernelcaps_refresh_settings(c, r), 0);
        /* text of another format keeps the value read before */
        fake_write(d, SCHED "nr_migrate", "lots\n");
        ASSERT_EQ(kernelcaps_refresh_settings(c, r), 0);
        ASSERT_STREQ(found(c, "nr_migrate")->value, "32");
        /* a file that appears later is not found by a refresh: the probe's */
        fake_write(d, SCHED "numa_balancing/scan_delay_ms", "1000\n");
        ASSERT_EQ(kernelcaps_refresh_settings(c, r), 0);
        ASSERT_NULL(found(c, "numa_balancing/scan_delay_ms")->file);
        fake_root_remove(d);
}

static void test_probe_cannot_tell(void) {
        char *d = tree_73();
        _cleanup_(kernelcaps_freep) KernelCaps *c = NULL;
        const KernelSetting *ks;
        char path[PATH_MAX];
        pid_t pid;
        int status;

        snprintf(path, sizeof(path), "%s/" SCHED "nr_migrate", d);
        ASSERT_OK(unlink(path) < 0 ? -errno : 0);
        fake_mkdir(d, SCHED "nr_migrate");
        c = probe(d);
        ks = found(c, "nr_migrate");
        ASSERT_NULL(ks->file);
        ASSERT_EQ(ks->error, -EISDIR);
        ASSERT_NOT_NULL(kernelcaps_setting_unknown(ks));
        ASSERT_NULL(kernelcaps_setting_unknown(found(c, "latency_ns")));
        ASSERT_NULL(kernelcaps_setting_unknown(found(c, "base_slice_ns")));
        ASSERT_STR_CONTAINS(c->sched_settings.reason, "1 cannot tell");

        if (geteuid() != 0) {
                fake_root_remove(d);
                return;
        }
        ASSERT_OK(chmod(d, 0755) < 0 ? -errno : 0); /* nobody reaches the tree, not debugfs */
        snprintf(path, sizeof(path), "%s/sys/kernel/debug", d);
        ASSERT_OK(chmod(path, 0700) < 0 ? -errno : 0);
        pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
                _cleanup_(kernelcaps_freep) KernelCaps *u = NULL;

                if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                        _exit(77);
                u = probe(d);
                ASSERT_FALSE(u->sched_settings.available);
                ASSERT_EQ(u->sched_settings.error, -EACCES);
                ASSERT_STR_CONTAINS(u->sched_settings.reason, "cannot tell");
                for (size_t i = 0; i < u->n_settings; i++) {
                        ASSERT_NULL(u->settings[i].file);
                        ASSERT_EQ(u->settings[i].error, -EACCES);
                        ASSERT_STREQ(kernelcaps_setting_unknown(&u->settings[i]), "not root");
                }
                _exit(0);
        }
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_TRUE(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 77);
        fake_root_remove(d);
}

/* ---- the journal ------------------------------------------------------------ */

static void test_journal(void) {
        _cleanup_(journal_freep) Journal *j = NULL, *back = NULL, *loaded = NULL;
        _cleanup_free_ char *text = NULL, *dir = fake_root_new();
        const char *want = "topod-journal 3\n"
                           "feature TTWU_QUEUE on\n"
                           "setting llc_balancing/enabled 1\n"
                           "setting min_granularity_ns 3000000\n"
                           "setting preempt voluntary\n"
                           "task 42 1000 /user.slice\n"
                           "end 5\n";
        size_t len;

        ASSERT_OK(journal_new(dir, &j));
        ASSERT_OK(journal_record_feature(j, "TTWU_QUEUE", true));
        ASSERT_EQ(journal_record_setting(j, "llc_balancing/enabled", "1"), 1);
        ASSERT_EQ(journal_record_setting(j, "min_granularity_ns", "3000000"), 1);
        ASSERT_EQ(journal_record_setting(j, "llc_balancing/enabled", "0"), 0); /* the first original wins */
        ASSERT_EQ(journal_record_setting(j, "preempt", "voluntary"), 1);
        ASSERT_ERROR(journal_record_setting(j, "../features", "1"), EINVAL);
        ASSERT_ERROR(journal_record_setting(j, "nr_migrate", "3 2"), EINVAL);
        ASSERT_ERROR(journal_record_setting(j, "nr_migrate", ""), EINVAL);
        ASSERT_OK(journal_record_task(j, 42, 1000, "/user.slice"));
        ASSERT_EQ(journal_n_entries(j), 5);
        ASSERT_STREQ(journal_get_setting(j, "llc_balancing/enabled")->value, "1");
        ASSERT_NULL(journal_get_setting(j, "nr_migrate"));

        ASSERT_OK(journal_format(j, &text, &len));
        ASSERT_STREQ(text, want);
        ASSERT_OK(journal_parse(text, len, &back, NULL));
        ASSERT_EQ(back->n_settings, 3);
        ASSERT_STREQ(back->settings[1].file, "min_granularity_ns");
        ASSERT_STREQ(back->settings[1].value, "3000000");
        {
                JournalError e = {};
                Journal *bad = NULL;
                const char *dup = "topod-journal 3\nsetting preempt full\nsetting preempt lazy\nend 2\n";
                const char *arity = "topod-journal 3\nsetting preempt\nend 1\n";

                ASSERT_ERROR(journal_parse(dup, strlen(dup), &bad, &e), EBADMSG);
                ASSERT_STR_CONTAINS(e.message, "duplicate");
                ASSERT_ERROR(journal_parse(arity, strlen(arity), &bad, &e), EBADMSG);
                ASSERT_STR_CONTAINS(e.message, "setting FILE VALUE");
                ASSERT_NULL(bad);
        }

        /* Committed whole, then a task appended through the log: the log
         * holds no settings, the file keeps them, a load has both. */
        ASSERT_OK(journal_commit(j));
        ASSERT_OK(journal_record_task(j, 43, 1001, "/user.slice"));
        ASSERT_OK(journal_commit_append(j));
        ASSERT_EQ(journal_load(dir, &loaded, NULL), 1);
        ASSERT_EQ(loaded->n_settings, 3);
        ASSERT_EQ(loaded->n_tasks, 2);

        /* Forgotten: gone from the next file, whose version falls back. */
        ASSERT_EQ(journal_forget_setting(j, "min_granularity_ns"), 1);
        ASSERT_EQ(journal_forget_setting(j, "min_granularity_ns"), 0);
        ASSERT_EQ(journal_forget_setting(j, "llc_balancing/enabled"), 1);
        ASSERT_EQ(journal_forget_setting(j, "preempt"), 1);
        text = mfree(text);
        ASSERT_OK(journal_format(j, &text, &len));
        ASSERT_STR_PREFIX(text, "topod-journal 1\n");
        ASSERT_STR_NOT_CONTAINS(text, "setting");
        ASSERT_OK(journal_remove(dir));
        fake_root_remove(TAKE_PTR(dir));
}

/* ---- writing ------------------------------------------------------------------ */

typedef struct FakeKernel {
        const char *dir;
        unsigned writes;
        int refuse;  /* negative errno for every write (lockdown: -EPERM) */
        bool ignore; /* take the write, change nothing */
} FakeKernel;

static void file_text(const char *dir, const char *rel, char *buf, size_t size) {
        char path[PATH_MAX];
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "%s/%s", dir, rel);
        f = fopen(path, "re");
        ASSERT_NOT_NULL(f);
        n = fread(buf, 1, size - 1, f);
        buf[n] = '\0';
        fclose(f);
}

/* A u32 file takes a number; preempt takes one word it lists and moves the
 * parentheses; anything else is EINVAL. */
static int fake_write_setting(void *userdata, const Root *root, const char *path, const char *word) {
        FakeKernel *fk = userdata;
        const char *file = path + strlen(DEBUGFS "/sched/");
        char text[256], out[256] = "";
        _cleanup_strv_free_ char **words = NULL;
        bool listed = false;

        (void) root;
        fk->writes++;
        if (fk->refuse < 0)
                return fk->refuse;
        ASSERT_STR_PREFIX(path, DEBUGFS "/sched/");
        if (fk->ignore)
                return 0;
        if (!streq(file, "preempt")) {
                for (const char *c = word; *c; c++)
                        if (*c < '0' || *c > '9')
                                return -EINVAL;
                snprintf(text, sizeof(text), "%s\n", word);
                fake_write(fk->dir, path + 1, text);
                return 0;
        }
        file_text(fk->dir, path + 1, text, sizeof(text));
        ASSERT_OK(strv_split_ws(text, 16, &words));
        for (char **w = words; *w; w++) {
                char name[32];

                snprintf(name, sizeof(name), "%s", **w == '(' ? *w + 1 : *w);
                name[strcspn(name, ")")] = '\0';
                listed = listed || streq(name, word);
                snprintf(out + strlen(out), sizeof(out) - strlen(out), streq(name, word) ? "(%s) " : "%s ", name);
        }
        if (!listed)
                return -EINVAL;
        strcat(out, "\n");
        fake_write(fk->dir, path + 1, out);
        return 0;
}

static const char *now(const char *dir, const char *file) {
        static char buf[256];
        char rel[PATH_MAX];

        snprintf(rel, sizeof(rel), SCHED "%s", file);
        file_text(dir, rel, buf, sizeof(buf));
        return strstrip(buf);
}

static void test_set(void) {
        char *d = tree_73();
        _cleanup_(root_freep) Root *r = NULL;
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_free_ char *jdir = fake_root_new();
        FakeKernel fk = { .dir = d };
        FeatOps ops = { fake_write_setting, &fk };
        FeatResult res;

        ASSERT_OK(root_open(d, &r));
        ASSERT_OK(journal_new(jdir, &j));

        /* Written, read back, the original journaled (and committed) first. */
        ASSERT_OK(feat_set_setting(r, &ops, DEBUGFS, j, "llc_balancing/enabled", "0", &res));
        ASSERT_EQ(res.outcome, FEAT_DONE);
        ASSERT_EQ(res.kind, FEAT_KIND_SETTING);
        ASSERT_STREQ(res.name, "llc_balancing/enabled");
        ASSERT_STREQ(res.before, "1");
        ASSERT_STREQ(res.value, "0");
        ASSERT_TRUE(res.journaled);
        ASSERT_STREQ(now(d, "llc_balancing/enabled"), "0");
        ASSERT_STREQ(journal_get_setting(j, "llc_balancing/enabled")->value, "1");
        ASSERT_FALSE(j->dirty);
        /* Again: already so, nothing written. */
        ASSERT_OK(feat_set_setting(r, &ops, DEBUGFS, j, "llc_balancing/enabled", "0", &res));
        ASSERT_EQ(res.outcome, FEAT_ALREADY);
        ASSERT_EQ(fk.writes, 1);
        /* A number, and a word of a choice file. */
        ASSERT_OK(feat_set_setting(r, &ops, DEBUGFS, j, "base_slice_ns", "3000000", &res));
        ASSERT_EQ(res.outcome, FEAT_DONE);
        ASSERT_STREQ(now(d, "base_slice_ns"), "3000000");
        ASSERT_OK(feat_set_setting(r, &ops, DEBUGFS, j, "preempt", "full", &res));
        ASSERT_STREQ(now(d, "preempt"), "(full) lazy");
        ASSERT_STREQ(journal_get_setting(j, "preempt")->value, "lazy");
        ASSERT_EQ(fk.writes, 3);

        /* Refused before the kernel is asked: a word it does not list, a
         * value of the wrong kind, a file not in the catalog. */
        ASSERT_ERROR(feat_set_setting(r, &ops, DEBUGFS, j, "preempt", "voluntary", &res), EINVAL);
        ASSERT_EQ(res.outcome, FEAT_FAILED);
        ASSERT_STR_CONTAINS(res.reason, "does not list");
        ASSERT_ERROR(feat_set_setting(r, &ops, DEBUGFS, j, "nr_migrate", "many", &res), EINVAL);
        ASSERT_ERROR(feat_set_setting(r, &ops, DEBUGFS, j, "llc_balancing/enabled", "off", &res), EINVAL);
        ASSERT_ERROR(feat_set_setting(r, &ops, DEBUGFS, j, "latency_warn_ms", "5", &res), EINVAL);
        ASSERT_ERROR(feat_set_setting(r, &ops, DEBUGFS, j, "../features", "1", &res), EINVAL);
        ASSERT_EQ(fk.writes, 3);

        /* Absent here: a skip, not a failure, nothing journaled. */
        ASSERT_ERROR(feat_set_setting(r, &ops, DEBUGFS, j, "numa_balancing/scan_delay_ms", "500", &res), ENOENT);
        ASSERT_EQ(res.outcome, FEAT_SKIPPED);
        ASSERT_STR_CONTAINS(res.reason, "absent");
        ASSERT_NULL(journal_get_setting(j, "numa_balancing/scan_delay_ms"));
        /* Lockdown: the write refused with EPERM, a skip; the value stays. */
        fk.refuse = -EPERM;
        ASSERT_ERROR(feat_set_setting(r, &ops, DEBUGFS, j, "nr_migrate", "8", &res), EPERM);
        ASSERT_EQ(res.outcome, FEAT_SKIPPED);
        ASSERT_STR_CONTAINS(res.reason, "lockdown");
        ASSERT_STREQ(now(d, "nr_migrate"), "32");
        /* Another refusal of the write is a failure. */
        fk.refuse = -EINVAL;
        ASSERT_ERROR(feat_set_setting(r, &ops, DEBUGFS, j, "nr_migrate", "8", &res), EINVAL);
        ASSERT_EQ(res.outcome, FEAT_FAILED);
        /* Taken but not so on the read-back. */
        fk.refuse = 0;
        fk.ignore = true;
        ASSERT_ERROR(feat_set_setting(r, &ops, DEBUGFS, j, "nr_migrate", "8", &res), EIO);
        ASSERT_STR_CONTAINS(res.reason, "read-back");
        fk.ignore = false;

        /* Restore: each back to its original, in the journal's order. */
        {
                _cleanup_free_ FeatResult *rs = NULL;
                size_t n = 0;

                ASSERT_EQ(feat_restore(r, &ops, DEBUGFS, j, &rs, &n), 0);
                ASSERT_EQ(n, j->n_settings);
                ASSERT_GE(n, 4); /* nr_migrate's original was recorded before the refused writes */
                for (size_t i = 0; i < n; i++) {
                        ASSERT_EQ(rs[i].kind, FEAT_KIND_SETTING);
                        ASSERT_TRUE(rs[i].outcome == FEAT_DONE || rs[i].outcome == FEAT_ALREADY);
                        feat_forget(j, &rs[i]);
                }
                ASSERT_STREQ(now(d, "llc_balancing/enabled"), "1");
                ASSERT_STREQ(now(d, "base_slice_ns"), "2800000");
                ASSERT_STREQ(now(d, "preempt"), "full (lazy)");
                ASSERT_TRUE(journal_is_empty(j));
        }
        root_free(TAKE_PTR(r));
        fake_root_remove(d);
        fake_root_remove(TAKE_PTR(jdir));
}

/* Through the caps: under the name this kernel has, or skipped with why. */
static void test_apply_by_caps(void) {
        char *d = tree_65();
        _cleanup_(kernelcaps_freep) KernelCaps *c = probe(d);
        _cleanup_(root_freep) Root *r = NULL;
        FakeKernel fk = { .dir = d };
        FeatOps ops = { fake_write_setting, &fk };
        PolicySetting slice = { .info = sched_setting_lookup("base_slice_ns"), .value = "4000000" };
        PolicySetting llc = { .info = sched_setting_lookup("llc_balancing/enabled"), .value = "0" };
        FeatResult res;

        ASSERT_OK(root_open(d, &r));
        /* base_slice_ns on 6.5 is min_granularity_ns. */
        ASSERT_OK(feat_apply_setting(r, &ops, c, NULL, &slice, &res));
        ASSERT_EQ(res.outcome, FEAT_DONE);
        ASSERT_STREQ(res.name, "min_granularity_ns");
        ASSERT_STREQ(now(d, "min_granularity_ns"), "4000000");
        /* llc_balancing is 7.3's. */
        ASSERT_ERROR(feat_apply_setting(r, &ops, c, NULL, &llc, &res), ENOENT);
        ASSERT_EQ(res.outcome, FEAT_SKIPPED);
        ASSERT_STREQ(res.name, "llc_balancing/enabled");
        ASSERT_STR_CONTAINS(res.reason, "7.3");
        /* A file that did not open for writing at the probe (lockdown). */
        c->settings[sched_setting_index(slice.info)].writable = false;
        c->settings[sched_setting_index(slice.info)].error = -EPERM;
        ASSERT_ERROR(feat_apply_setting(r, &ops, c, NULL, &slice, &res), EPERM);
        ASSERT_EQ(res.outcome, FEAT_SKIPPED);
        ASSERT_STR_CONTAINS(res.reason, "lockdown");
        /* Any other refusal of the write-open is a broken install, not a skip. */
        c->settings[sched_setting_index(slice.info)].error = -EROFS;
        ASSERT_ERROR(feat_apply_setting(r, &ops, c, NULL, &slice, &res), EROFS);
        ASSERT_EQ(res.outcome, FEAT_FAILED);
        ASSERT_STR_CONTAINS(res.reason, "read-only file system");
        c->settings[sched_setting_index(slice.info)].error = -EACCES;
        ASSERT_ERROR(feat_apply_setting(r, &ops, c, NULL, &slice, &res), EACCES);
        ASSERT_EQ(res.outcome, FEAT_FAILED);
        ASSERT_STR_CONTAINS(res.reason, "permission denied");
        /* A file the probe could not tell about: a failure with its errno. */
        c->settings[sched_setting_index(slice.info)].file = NULL;
        ASSERT_ERROR(feat_apply_setting(r, &ops, c, NULL, &slice, &res), EACCES);
        ASSERT_EQ(res.outcome, FEAT_FAILED);
        ASSERT_EQ(fk.writes, 1);
        root_free(TAKE_PTR(r));
        fake_root_remove(d);
}

/* What the plan no longer sets goes back, and out of the journal; what it
 * still sets stays. */
static void test_release(void) {
        char *d = tree_73();
        _cleanup_(root_freep) Root *r = NULL;
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_free_ FeatResult *rs = NULL;
        FakeKernel fk = { .dir = d };
        FeatOps ops = { fake_write_setting, &fk };
        PolicySetting keep = { .info = sched_setting_lookup("base_slice_ns"), .value = "3000000" };
        PolicyKernelPlan plan = { .settings = &keep, .n_settings = 1, .cgroup_mode_policy = -1 };
        FeatResult res;
        size_t n = 0;

        ASSERT_OK(root_open(d, &r));
        ASSERT_OK(journal_new(NULL, &j));
        ASSERT_OK(feat_set_setting(r, &ops, DEBUGFS, NULL, "base_slice_ns", "3000000", &res));
        ASSERT_OK(journal_record_setting(j, "base_slice_ns", "2800000"));
        ASSERT_OK(feat_set_setting(r, &ops, DEBUGFS, NULL, "llc_balancing/enabled", "0", &res));
        ASSERT_OK(journal_record_setting(j, "llc_balancing/enabled", "1"));

        ASSERT_EQ(feat_release_unplanned(r, &ops, DEBUGFS, j, &plan, NULL, &rs, &n), 0);
        ASSERT_EQ(n, 1);
        ASSERT_STREQ(rs[0].name, "llc_balancing/enabled");
        ASSERT_EQ(rs[0].outcome, FEAT_DONE);
        ASSERT_STREQ(now(d, "llc_balancing/enabled"), "1");
        ASSERT_STREQ(now(d, "base_slice_ns"), "3000000");
        ASSERT_EQ(j->n_settings, 1);
        ASSERT_STREQ(j->settings[0].file, "base_slice_ns");

        /* An entry outside the catalog (journaled by a topod that knew more
         * settings): failed once, naming it, and forgotten, not kept for ever. */
        ASSERT_EQ(journal_record_setting(j, "llc_balancing/future_knob", "7"), 1);
        rs = mfree(rs);
        ASSERT_EQ(feat_release_unplanned(r, &ops, DEBUGFS, j, &plan, NULL, &rs, &n), 1);
        ASSERT_EQ(n, 1);
        ASSERT_STREQ(rs[0].name, "llc_balancing/future_knob");
        ASSERT_EQ(rs[0].outcome, FEAT_FAILED);
        ASSERT_STR_CONTAINS(rs[0].reason, "forgotten");
        ASSERT_TRUE(feat_result_settled(&rs[0]));
        ASSERT_EQ(j->n_settings, 1);
        ASSERT_STREQ(j->settings[0].file, "base_slice_ns");
        /* The same at a restore: the caller forgets what is settled. */
        ASSERT_EQ(journal_record_setting(j, "future_knob", "7"), 1);
        rs = mfree(rs);
        ASSERT_EQ(feat_restore(r, &ops, DEBUGFS, j, &rs, &n), 1);
        ASSERT_EQ(n, 2);
        ASSERT_EQ(rs[0].outcome, FEAT_DONE);
        ASSERT_STREQ(rs[1].name, "future_knob");
        ASSERT_EQ(rs[1].outcome, FEAT_FAILED);
        for (size_t i = 0; i < n; i++)
                if (feat_result_settled(&rs[i]))
                        feat_forget(j, &rs[i]);
        ASSERT_TRUE(journal_is_empty(j));
        root_free(TAKE_PTR(r));
        fake_root_remove(d);
}

static ReconcileStatus item(const ReconcileReport *rep, const char *what_prefix) {
        for (size_t i = 0; i < rep->n; i++)
                if (startswith(rep->items[i].what, what_prefix))
                        return rep->items[i].status;
        TEST_FAIL("no report item \"%s…\"", what_prefix);
}

/* The pass: the plan's settings applied (or skipped with why), a setting a
 * later plan drops put back, and the stop's restore of the rest. */
static void test_reconcile(void) {
        char *d = tree_73();
        _cleanup_(kernelcaps_freep) KernelCaps *c = probe(d);
        _cleanup_(root_freep) Root *r = NULL;
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_free_ char *jdir = fake_root_new();
        FakeKernel fk = { .dir = d };
        FeatOps ops = { fake_write_setting, &fk };
        PolicySetting both[] = {
                { .info = sched_setting_lookup("llc_balancing/enabled"), .value = "0" },
                { .info = sched_setting_lookup("base_slice_ns"), .value = "3000000" },
                { .info = sched_setting_lookup("numa_balancing/scan_delay_ms"), .value = "500" },
        };
        PolicyKernelPlan kp = { .settings = both, .n_settings = 3, .cgroup_mode_policy = -1 };
        Plan plan = { .kernel = &kp };

        ASSERT_OK(root_open(d, &r));
        ASSERT_OK(journal_new(jdir, &j));
        {
                Reconciler rc = { .root = r, .caps = c, .journal = j, .feat_ops = &ops };
                _cleanup_(reconcile_report_freep) ReconcileReport *rep = NULL;

                ASSERT_OK(reconcile_apply(&rc, &plan, &rep));
                ASSERT_EQ(item(rep, "setting llc_balancing/enabled 0"), RECONCILE_DONE);
                ASSERT_EQ(item(rep, "setting base_slice_ns 3000000"), RECONCILE_DONE);
                ASSERT_EQ(item(rep, "setting numa_balancing/scan_delay_ms"), RECONCILE_SKIPPED);
                ASSERT_EQ(rep->counts[RECONCILE_FAILED], 0);
                ASSERT_STREQ(now(d, "llc_balancing/enabled"), "0");
                ASSERT_EQ(j->n_settings, 2);
        }
        /* A reload drops llc_balancing: back to 1, out of the journal. */
        kp.settings = both + 1;
        kp.n_settings = 1;
        {
                Reconciler rc = { .root = r, .caps = c, .journal = j, .feat_ops = &ops };
                _cleanup_(reconcile_report_freep) ReconcileReport *rep = NULL;

                ASSERT_OK(reconcile_apply(&rc, &plan, &rep));
                ASSERT_EQ(item(rep, "setting base_slice_ns 3000000"), RECONCILE_ALREADY);
                ASSERT_EQ(item(rep, "released setting llc_balancing/enabled"), RECONCILE_DONE);
                ASSERT_STREQ(now(d, "llc_balancing/enabled"), "1");
                ASSERT_EQ(j->n_settings, 1);
        }
        /* The stop. */
        {
                Reconciler rc = { .root = r, .caps = c, .journal = j, .feat_ops = &ops };
                _cleanup_(reconcile_report_freep) ReconcileReport *rep = NULL;

                ASSERT_OK(reconcile_restore(&rc, &rep));
                ASSERT_EQ(item(rep, "restore setting base_slice_ns"), RECONCILE_DONE);
                ASSERT_STREQ(now(d, "base_slice_ns"), "2800000");
                ASSERT_TRUE(journal_is_empty(j));
        }
        root_free(TAKE_PTR(r));
        fake_root_remove(d);
        fake_root_remove(TAKE_PTR(jdir));
}

/* The planner knows the kernel's own LLC aggregation: for a group pinned to
 * an LLC topod decides, for a wider one the kernel (while on); a policy
 * that switches it off says so, and a kernel without it is not mentioned. */
static Plan *plan_of(const char *policy_text, const KernelCaps *caps, PolicySet **ret_set) {
        TopologySource src = { .kind = TOPOLOGY_SOURCE_SYNTHETIC, .arg = "pack:2 [numa] l3:2 core:2 pu:2" };
        _cleanup_(topology_freep) Topology *t = NULL;
        _cleanup_(config_freep) Config *config = NULL;
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        IniSource in_src = { "50-p.ini", policy_text, strlen(policy_text) };
        PlanTaskInput tasks[] = {
                { .tid = 100, .tgid = 100, .start_time = 5, .match = { .class = POLICY_CLASS_OTHER, .comm = "pinned" } },
                { .tid = 101, .tgid = 101, .start_time = 5, .match = { .class = POLICY_CLASS_OTHER, .comm = "wide" } },
        };
        bool in_force[2] = { true, true };
        PolicySet *ps = NULL;
        Plan *p = NULL;

        ASSERT_OK(topology_load(&src, &t));
        ASSERT_OK(config_new(&config));
        config->hierarchy = CONFIG_HIERARCHY_FLAT;
        ASSERT_OK(policy_set_parse(&in_src, 1, d, &ps));
        {
                PlanInputs in = { .topology = t, .caps = caps, .config = config, .policies = ps,
                                  .in_force = in_force, .tasks = tasks, .n_tasks = ELEMENTSOF(tasks) };

                ASSERT_OK(plan_build(&in, &p));
        }
        *ret_set = ps;
        return p;
}

static const PlanGroup *group_of(const Plan *p, const char *path_prefix) {
        for (size_t i = 0; i < p->n_groups; i++)
                if (startswith(p->groups[i].path, path_prefix))
                        return &p->groups[i];
        TEST_FAIL("no group %s…", path_prefix);
}

static void test_plan_llc(void) {
        static const char pinned_on[] = "[policy]\nname = p\n[match]\ncomm = pinned\n[place]\ngroup = pin\ncpus = llc\n";
        static const char two[] = "[policy]\nname = p\n[match]\ncomm = pinned\n[place]\ngroup = pin\ncpus = llc\n"
                                  "[kernel]\nllc_balancing/enabled = off\n";
        char *d = tree_73();
        _cleanup_(kernelcaps_freep) KernelCaps *c73 = probe(d), *c612 = NULL;
        _cleanup_(policy_set_freep) PolicySet *ps = NULL;
        _cleanup_(plan_freep) Plan *p = NULL;
        _cleanup_free_ char *why = NULL, *text = NULL;
        size_t len = 0;
        FILE *f;

        fake_root_remove(d);
        /* On, by the kernel: topod decides for the pinned group. */
        p = plan_of(pinned_on, c73, &ps);
        ASSERT_TRUE(p->llc_balancing.present);
        ASSERT_TRUE(p->llc_balancing.on);
        ASSERT_EQ(p->llc_balancing.policy, -1);
        ASSERT_OK(plan_llc_decider(p, group_of(p, "pin-llc"), ps, &why));
        ASSERT_STR_PREFIX(why, "topod decides: the group is pinned to LLC ");
        ASSERT_STR_CONTAINS(why, "on, as the kernel has it");
        why = mfree(why);
        /* A wider group: the kernel decides. */
        {
                PlanGroup wide = { .kind = PLAN_DOMAIN_NODE, .domain = 0, .policy = 0 };

                ASSERT_OK(plan_llc_decider(p, &wide, ps, &why));
                ASSERT_STR_PREFIX(why, "the kernel decides: its cache-aware load balancing (on");
                why = mfree(why);
        }
        f = open_memstream(&text, &len);
        ASSERT_OK(plan_print_text(f, p, ps));
        fclose(f);
        ASSERT_STR_CONTAINS(text, "  llc: topod decides");
        text = mfree(text);
        p = plan_free(p);
        ps = policy_set_free(ps);

        /* Switched off by the policy: the plan says by whom. */
        p = plan_of(two, c73, &ps);
        ASSERT_FALSE(p->llc_balancing.on);
        ASSERT_EQ(p->llc_balancing.policy, 0);
        ASSERT_OK(plan_llc_decider(p, group_of(p, "pin-llc"), ps, &why));
        ASSERT_STR_CONTAINS(why, "off by policy p");
        why = mfree(why);
        f = open_memstream(&text, &len);
        ASSERT_OK(plan_print_text(f, p, ps));
        fclose(f);
        ASSERT_STR_CONTAINS(text, "setting: llc_balancing/enabled 0 (from p)");
        text = mfree(text);
        p = plan_free(p);
        ps = policy_set_free(ps);

        /* The same where the file does not open for writing: the kernel's
         * value holds, whatever the policy says. */
        c73->settings[sched_setting_index(sched_setting_lookup("llc_balancing/enabled"))].writable = false;
        c73->settings[sched_setting_index(sched_setting_lookup("llc_balancing/enabled"))].error = -EPERM;
        p = plan_of(two, c73, &ps);
        ASSERT_TRUE(p->llc_balancing.on);
        ASSERT_EQ(p->llc_balancing.policy, -1);
        ASSERT_OK(plan_llc_decider(p, group_of(p, "pin-llc"), ps, &why));
        ASSERT_STR_CONTAINS(why, "on, as the kernel has it");
        why = mfree(why);
        p = plan_free(p);
        ps = policy_set_free(ps);

        /* 6.12: nothing to say. */
        d = tree_65();
        c612 = probe(d);
        fake_root_remove(d);
        p = plan_of(pinned_on, c612, &ps);
        ASSERT_FALSE(p->llc_balancing.present);
        ASSERT_OK(plan_llc_decider(p, group_of(p, "pin-llc"), ps, &why));
        ASSERT_NULL(why);
}

int main(void) {
        test_catalog();
        test_values();
        test_probe();
        test_refresh();
        test_probe_cannot_tell();
        test_journal();
        test_set();
        test_apply_by_caps();
        test_release();
        test_reconcile();
        test_plan_llc();
        return 0;
}
