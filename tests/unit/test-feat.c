/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Setting sched features and the cgroup mode against a fake debugfs.
 *
 * A plain file cannot behave like sched/features (a write there replaces
 * bytes instead of flipping one switch), so the write goes through FeatOps
 * to a small model of the kernel: it logs every word written, applies the
 * kernel's rules to the fake file (NAME sets, NO_NAME clears, an unknown
 * word is EINVAL; cgroup_mode moves the parentheses) or refuses like a
 * locked-down kernel. Reads are the real code reading the fake file. */

#include "apply/feat.h"
#include "base/util.h"
#include "fake-root.h"

#define FEATURES_FILE "sys/kernel/debug/sched/features"
#define MODE_FILE "sys/kernel/debug/sched/cgroup_mode"
#define DEBUGFS "/sys/kernel/debug"

#define FEATURES_612 "PLACE_LAG RUN_TO_PARITY NO_NEXT_BUDDY TTWU_QUEUE NO_HRTICK WA_IDLE "

typedef struct FakeKernel {
        const char *dir;
        char words[32][FEAT_NAME_MAX + 8]; /* every word written, in order */
        size_t n_words;
        int refuse;   /* negative errno: refuse every write (lockdown: -EPERM) */
        bool ignore;  /* accept writes but change nothing */
        const char *journal_dir; /* when set: the journal must hold an original at each write */
        size_t journal_entries_seen;
} FakeKernel;

static char *fake_read(const char *dir, const char *rel) {
        char path[PATH_MAX];
        char *buf = NULL;
        size_t cap = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, rel);
        f = fopen(path, "re");
        if (!f)
                TEST_FAIL("fopen %s: %s", path, strerror(errno));
        if (getdelim(&buf, &cap, '\0', f) < 0) {
                free(buf);
                buf = strdup("");
        }
        fclose(f);
        return buf;
}

/* The kernel's sched_feat_write(): one word, "NO_" clears, unknown EINVAL.
 * The file is rewritten the way sched_feat_show() prints it. */
static int model_features(FakeKernel *fk, const char *word) {
        _cleanup_free_ char *text = fake_read(fk->dir, FEATURES_FILE);
        _cleanup_strv_free_ char **tokens = NULL;
        bool off = startswith(word, "NO_");
        const char *name = off ? word + 3 : word;
        char out[4096] = "";
        bool found = false;

        ASSERT_OK(strv_split_ws(text, 1000, &tokens));
        for (char **t = tokens; *t; t++) {
                const char *tn = startswith(*t, "NO_") ? *t + 3 : *t;
                bool on = !startswith(*t, "NO_");

                if (streq(tn, name)) {
                        found = true;
                        on = !off;
                }
                snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s ", on ? "" : "NO_", tn);
        }
        if (!found)
                return -EINVAL;
        strcat(out, "\n");
        if (!fk->ignore)
                fake_write(fk->dir, FEATURES_FILE, out);
        return 0;
}

/* cgroup_mode: one mode name, the active one in parentheses. */
static int model_cgroup_mode(FakeKernel *fk, const char *word) {
        _cleanup_free_ char *text = fake_read(fk->dir, MODE_FILE);
        _cleanup_strv_free_ char **tokens = NULL;
        char out[4096] = "";
        bool found = false;

        ASSERT_OK(strv_split_ws(text, 1000, &tokens));
        for (char **t = tokens; *t; t++) {
                char name[64];

                snprintf(name, sizeof(name), "%s", *t[0] == '(' ? *t + 1 : *t);
                name[strcspn(name, ")")] = '\0';
                found = found || streq(name, word);
                snprintf(out + strlen(out), sizeof(out) - strlen(out), streq(name, word) ? "(%s) " : "%s ", name);
        }
        if (!found)
                return -EINVAL;
        strcat(out, "\n");
        if (!fk->ignore)
                fake_write(fk->dir, MODE_FILE, out);
        return 0;
}

static int fake_kernel_write(void *userdata, const Root *root, const char *path, const char *word) {
        FakeKernel *fk = userdata;

        ASSERT_LT(fk->n_words, ELEMENTSOF(fk->words));
        snprintf(fk->words[fk->n_words++], sizeof(fk->words[0]), "%s", word);

        /* Record-before-change: by the time a word reaches the kernel, the
         * original is durable in the journal file. */
        if (fk->journal_dir) {
                _cleanup_(journal_freep) Journal *j = NULL;

                ASSERT_EQ(journal_load(fk->journal_dir, &j, NULL), 1);
                fk->journal_entries_seen = journal_n_entries(j);
        }
        if (fk->refuse < 0)
                return fk->refuse;
        /* The path is relative to the root, under the debugfs mount found. */
        if (streq(path, DEBUGFS "/sched/features"))
                return model_features(fk, word);
        if (streq(path, DEBUGFS "/sched/cgroup_mode"))
                return model_cgroup_mode(fk, word);
        TEST_FAIL("write to unexpected path %s", path);
}

typedef struct Fixture {
        char *dir;
        Root *root;
        FakeKernel fk;
        FeatOps ops;
} Fixture;

static void fixture_init(Fixture *f, bool with_cgroup_mode) {
        f->dir = fake_root_new();
        fake_write(f->dir, FEATURES_FILE, FEATURES_612 "\n");
        if (with_cgroup_mode)
                fake_write(f->dir, MODE_FILE, "up smp (concur) max tasks \n");
        ASSERT_OK(root_open(f->dir, &f->root));
        f->fk = (FakeKernel) { .dir = f->dir };
        f->ops = (FeatOps) { fake_kernel_write, &f->fk };
}

static void fixture_done(Fixture *f) {
        root_free(f->root);
        fake_root_remove(f->dir);
}

static bool feature_is(Fixture *f, const char *name, bool on) {
        _cleanup_(feature_state_freep) FeatureState *s = NULL;

        ASSERT_OK(feat_read(f->root, DEBUGFS, &s));
        return feature_state_get(s, name) == (int) on;
}

static void test_parse(void) {
        _cleanup_(feature_state_freep) FeatureState *s = NULL;
        FeatureState *bad = NULL;

        ASSERT_OK(feature_state_parse(FEATURES_612 "\n", &s));
        ASSERT_EQ(s->n, 6);
        ASSERT_STREQ(s->names[2], "NEXT_BUDDY");
        ASSERT_EQ(feature_state_get(s, "NEXT_BUDDY"), 0);
        ASSERT_EQ(feature_state_get(s, "TTWU_QUEUE"), 1);
        ASSERT_ERROR(feature_state_get(s, "NO_SUCH"), ENOENT);
        ASSERT_ERROR(feature_state_parse("A NO_A", &bad), EINVAL);      /* listed twice */
        ASSERT_ERROR(feature_state_parse("A lower", &bad), EINVAL);
        ASSERT_ERROR(feature_state_parse("A NO_", &bad), EINVAL);
        ASSERT_NULL(bad);
        ASSERT_TRUE(feat_name_valid("TTWU_QUEUE"));
        ASSERT_FALSE(feat_name_valid("NO_TTWU_QUEUE"));
        ASSERT_FALSE(feat_name_valid("ttwu_queue"));
        ASSERT_FALSE(feat_name_valid(""));
        {
                /* More tokens than any kernel lists. */
                _cleanup_free_ char *many = malloc(FEAT_COUNT_MAX * 8 + 16);
                char *p = many;

                for (unsigned i = 0; i <= FEAT_COUNT_MAX; i++)
                        p += sprintf(p, "F%u ", i);
                ASSERT_ERROR(feature_state_parse(many, &bad), E2BIG);
        }
}

static void test_set_feature(void) {
        Fixture f = {};
        FeatResult r;
        _cleanup_free_ char *text = NULL;

        fixture_init(&f, false);

        /* Off: the one word NO_TTWU_QUEUE, read back. */
        ASSERT_OK(feat_set(f.root, &f.ops, DEBUGFS, NULL, "TTWU_QUEUE", false, &r));
        ASSERT_EQ(r.outcome, FEAT_DONE);
        ASSERT_EQ(r.kind, FEAT_KIND_FEATURE);
        ASSERT_STREQ(r.name, "TTWU_QUEUE");
        ASSERT_TRUE(r.had_before);
        ASSERT_TRUE(r.was_on);
        ASSERT_FALSE(r.journaled);
        ASSERT_EQ(r.error, 0);
        ASSERT_STREQ(r.reason, "");
        ASSERT_EQ(f.fk.n_words, 1);
        ASSERT_STREQ(f.fk.words[0], "NO_TTWU_QUEUE");
        text = fake_read(f.dir, FEATURES_FILE);
        ASSERT_STREQ(text, "PLACE_LAG RUN_TO_PARITY NO_NEXT_BUDDY NO_TTWU_QUEUE NO_HRTICK WA_IDLE \n");

        /* Again: already so, nothing written. */
        ASSERT_OK(feat_set(f.root, &f.ops, DEBUGFS, NULL, "TTWU_QUEUE", false, &r));
        ASSERT_EQ(r.outcome, FEAT_ALREADY);
        ASSERT_FALSE(r.was_on);
        ASSERT_EQ(f.fk.n_words, 1);

        /* On: the bare name. */
        ASSERT_OK(feat_set(f.root, &f.ops, DEBUGFS, NULL, "HRTICK", true, &r));
        ASSERT_EQ(r.outcome, FEAT_DONE);
        ASSERT_FALSE(r.was_on);
        ASSERT_EQ(f.fk.n_words, 2);
        ASSERT_STREQ(f.fk.words[1], "HRTICK");
        ASSERT_TRUE(feature_is(&f, "HRTICK", true));
        ASSERT_TRUE(feature_is(&f, "PLACE_LAG", true)); /* nothing else moved */
        ASSERT_TRUE(feature_is(&f, "NEXT_BUDDY", false));

        fixture_done(&f);
}

static void test_set_feature_failures(void) {
        Fixture f = {};
        FeatResult r;

        fixture_init(&f, false);

        /* Not listed by the kernel: EINVAL, and the kernel is not asked. */
        ASSERT_ERROR(feat_set(f.root, &f.ops, DEBUGFS, NULL, "SIS_PROP", true, &r), EINVAL);
        ASSERT_EQ(r.outcome, FEAT_FAILED);
        ASSERT_EQ(r.error, -EINVAL);
        ASSERT_FALSE(r.had_before);
        ASSERT_STR_CONTAINS(r.reason, "does not list");
        /* Not a name at all. */
        ASSERT_ERROR(feat_set(f.root, &f.ops, DEBUGFS, NULL, "NO_TTWU_QUEUE", true, &r), EINVAL);
        ASSERT_ERROR(feat_set(f.root, &f.ops, DEBUGFS, NULL, "ttwu_queue", true, &r), EINVAL);
        ASSERT_ERROR(feat_set(f.root, &f.ops, DEBUGFS, NULL, "TTWU QUEUE", true, &r), EINVAL);
        ASSERT_EQ(f.fk.n_words, 0);

        /* Lockdown: the kernel refuses with EPERM; reported, the value stays. */
        f.fk.refuse = -EPERM;
        ASSERT_ERROR(feat_set(f.root, &f.ops, DEBUGFS, NULL, "TTWU_QUEUE", false, &r), EPERM);
        ASSERT_EQ(r.outcome, FEAT_FAILED);
        ASSERT_EQ(r.error, -EPERM);
        ASSERT_STR_CONTAINS(r.reason, "lockdown");
        ASSERT_TRUE(r.had_before);
        ASSERT_TRUE(r.was_on);
        ASSERT_EQ(f.fk.n_words, 1);
        ASSERT_TRUE(feature_is(&f, "TTWU_QUEUE", true));

        /* The kernel takes the word but the read-back disagrees. */
        f.fk.refuse = 0;
        f.fk.ignore = true;
        ASSERT_ERROR(feat_set(f.root, &f.ops, DEBUGFS, NULL, "TTWU_QUEUE", false, &r), EIO);
        ASSERT_STR_CONTAINS(r.reason, "read-back");
        ASSERT_STREQ(f.fk.words[1], "NO_TTWU_QUEUE");
        f.fk.ignore = false;

        /* No debugfs mount, no features file. */
        ASSERT_ERROR(feat_set(f.root, &f.ops, NULL, NULL, "TTWU_QUEUE", false, &r), ENOENT);
        ASSERT_STR_CONTAINS(r.reason, "debugfs");
        ASSERT_ERROR(feat_set(f.root, &f.ops, "/elsewhere", NULL, "TTWU_QUEUE", false, &r), ENOENT);
        ASSERT_STR_CONTAINS(r.reason, "no sched/features");
        ASSERT_EQ(f.fk.n_words, 2);

        /* A features file in a format we do not know: refused, not guessed. */
        fake_write(f.dir, FEATURES_FILE, "TTWU_QUEUE [weird]\n");
        ASSERT_ERROR(feat_set(f.root, &f.ops, DEBUGFS, NULL, "TTWU_QUEUE", false, &r), EBADMSG);
        ASSERT_STR_CONTAINS(r.reason, "format");
        ASSERT_EQ(f.fk.n_words, 2);

        fixture_done(&f);
}

static void test_cgroup_mode(void) {
        Fixture f = {};
        FeatResult r;
        _cleanup_strv_free_ char **modes = NULL;
        _cleanup_free_ char *active = NULL, *text = NULL;

        fixture_init(&f, true);
        ASSERT_OK(feat_read_cgroup_mode(f.root, DEBUGFS, &modes, &active));
        ASSERT_EQ(strv_length(modes), 5);
        ASSERT_STREQ(active, "concur");

        ASSERT_OK(feat_set_cgroup_mode(f.root, &f.ops, DEBUGFS, NULL, "max", &r));
        ASSERT_EQ(r.outcome, FEAT_DONE);
        ASSERT_EQ(r.kind, FEAT_KIND_CGROUP_MODE);
        ASSERT_STREQ(r.before, "concur");
        ASSERT_EQ(f.fk.n_words, 1);
        ASSERT_STREQ(f.fk.words[0], "max");
        text = fake_read(f.dir, MODE_FILE);
        ASSERT_STREQ(text, "up smp concur (max) tasks \n");

        ASSERT_OK(feat_set_cgroup_mode(f.root, &f.ops, DEBUGFS, NULL, "max", &r));
        ASSERT_EQ(r.outcome, FEAT_ALREADY);
        ASSERT_EQ(f.fk.n_words, 1);

        /* The kernel's list decides: a mode it does not list is refused unwritten. */
        ASSERT_ERROR(feat_set_cgroup_mode(f.root, &f.ops, DEBUGFS, NULL, "flat", &r), EINVAL);
        ASSERT_STR_CONTAINS(r.reason, "does not list");
        ASSERT_ERROR(feat_set_cgroup_mode(f.root, &f.ops, DEBUGFS, NULL, "MAX", &r), EINVAL);
        ASSERT_EQ(f.fk.n_words, 1);
        /* A mode this topod never heard of, listed by a newer kernel, works. */
        fake_write(f.dir, MODE_FILE, "up smp (concur) max tasks burst \n");
        ASSERT_OK(feat_set_cgroup_mode(f.root, &f.ops, DEBUGFS, NULL, "burst", &r));
        ASSERT_EQ(r.outcome, FEAT_DONE);

        /* Lockdown. */
        f.fk.refuse = -EPERM;
        ASSERT_ERROR(feat_set_cgroup_mode(f.root, &f.ops, DEBUGFS, NULL, "up", &r), EPERM);
        ASSERT_STR_CONTAINS(r.reason, "lockdown");
        f.fk.refuse = 0;
        /* Read-back disagrees. */
        f.fk.ignore = true;
        ASSERT_ERROR(feat_set_cgroup_mode(f.root, &f.ops, DEBUGFS, NULL, "up", &r), EIO);
        f.fk.ignore = false;

        fixture_done(&f);
}

static void test_cgroup_mode_absent(void) {
        Fixture f = {};
        FeatResult r;
        char **modes = NULL;
        char *active = NULL;
        _cleanup_(journal_freep) Journal *j = NULL;

        /* A 6.12 kernel: no cgroup_mode file. */
        fixture_init(&f, false);
        ASSERT_ERROR(feat_read_cgroup_mode(f.root, DEBUGFS, &modes, &active), ENOENT);
        ASSERT_NULL(modes);
        ASSERT_NULL(active);
        ASSERT_OK(journal_new("/nonexistent/never-written", &j));
        ASSERT_ERROR(feat_set_cgroup_mode(f.root, &f.ops, DEBUGFS, j, "max", &r), ENOENT);
        ASSERT_EQ(r.outcome, FEAT_FAILED);
        ASSERT_FALSE(r.had_before);
        ASSERT_FALSE(r.journaled);
        ASSERT_STR_CONTAINS(r.reason, "absent");
        ASSERT_EQ(f.fk.n_words, 0);
        ASSERT_TRUE(journal_is_empty(j));
        fixture_done(&f);
}

static void test_journaled_and_restore(void) {
        Fixture f = {};
        FeatResult r;
        _cleanup_(journal_freep) Journal *j = NULL, *loaded = NULL;
        _cleanup_free_ FeatResult *results = NULL;
        _cleanup_free_ char *jdir = NULL, *text = NULL;
        size_t n = 0;

        fixture_init(&f, true);
        ASSERT_GT(asprintf(&jdir, "%s/run/topod", f.dir), 0);
        fake_mkdir(f.dir, "run");
        f.fk.journal_dir = jdir;
        ASSERT_OK(journal_new(jdir, &j));

        ASSERT_OK(feat_set(f.root, &f.ops, DEBUGFS, j, "TTWU_QUEUE", false, &r));
        ASSERT_EQ(r.outcome, FEAT_DONE);
        ASSERT_TRUE(r.journaled);
        ASSERT_EQ(f.fk.journal_entries_seen, 1); /* durable before the write */
        ASSERT_OK(feat_set(f.root, &f.ops, DEBUGFS, j, "HRTICK", true, &r));
        ASSERT_EQ(f.fk.journal_entries_seen, 2);
        ASSERT_OK(feat_set_cgroup_mode(f.root, &f.ops, DEBUGFS, j, "tasks", &r));
        ASSERT_TRUE(r.journaled);
        ASSERT_EQ(f.fk.journal_entries_seen, 3);

        /* Already so: neither written nor journaled. */
        ASSERT_OK(feat_set(f.root, &f.ops, DEBUGFS, j, "PLACE_LAG", true, &r));
        ASSERT_EQ(r.outcome, FEAT_ALREADY);
        ASSERT_FALSE(r.journaled);
        ASSERT_NULL(journal_get_feature(j, "PLACE_LAG"));

        /* A second change keeps the first original (on), and the mode's (concur). */
        ASSERT_OK(feat_set(f.root, &f.ops, DEBUGFS, j, "TTWU_QUEUE", true, &r));
        ASSERT_OK(feat_set(f.root, &f.ops, DEBUGFS, j, "TTWU_QUEUE", false, &r));
        ASSERT_OK(feat_set_cgroup_mode(f.root, &f.ops, DEBUGFS, j, "max", &r));
        text = fake_read(jdir, JOURNAL_FILE_NAME);
        ASSERT_STREQ(text, "topod-journal 1\n"
                           "feature TTWU_QUEUE on\n"
                           "feature HRTICK off\n"
                           "cgroup_mode concur\n"
                           "end 3\n");

        /* Restore from the file, as stop does. */
        ASSERT_EQ(journal_load(jdir, &loaded, NULL), 1);
        f.fk.journal_dir = NULL;
        f.fk.n_words = 0;
        ASSERT_EQ(feat_restore(f.root, &f.ops, DEBUGFS, loaded, &results, &n), 0);
        ASSERT_EQ(n, 3);
        ASSERT_STREQ(results[0].name, "TTWU_QUEUE");
        ASSERT_TRUE(results[0].on);
        ASSERT_EQ(results[0].outcome, FEAT_DONE);
        ASSERT_STREQ(results[1].name, "HRTICK");
        ASSERT_EQ(results[1].outcome, FEAT_DONE);
        ASSERT_EQ(results[2].kind, FEAT_KIND_CGROUP_MODE);
        ASSERT_STREQ(results[2].name, "concur");
        ASSERT_STREQ(results[2].before, "max");
        ASSERT_EQ(results[2].outcome, FEAT_DONE);
        ASSERT_EQ(f.fk.n_words, 3);
        ASSERT_STREQ(f.fk.words[0], "TTWU_QUEUE");
        ASSERT_STREQ(f.fk.words[1], "NO_HRTICK");
        ASSERT_STREQ(f.fk.words[2], "concur");
        free(text);
        text = fake_read(f.dir, FEATURES_FILE);
        ASSERT_STREQ(text, FEATURES_612 "\n");
        free(text);
        text = fake_read(f.dir, MODE_FILE);
        ASSERT_STREQ(text, "up smp (concur) max tasks \n");

        /* Restoring twice is harmless: all already so. */
        results = mfree(results);
        ASSERT_EQ(feat_restore(f.root, &f.ops, DEBUGFS, loaded, &results, &n), 0);
        for (size_t i = 0; i < n; i++)
                ASSERT_EQ(results[i].outcome, FEAT_ALREADY);
        ASSERT_EQ(f.fk.n_words, 3);

        fixture_done(&f);
}

static void test_journal_unwritable(void) {
        Fixture f = {};
        FeatResult r;
        _cleanup_(journal_freep) Journal *j = NULL;

        /* The journal's directory cannot be made: nothing is changed. */
        fixture_init(&f, false);
        ASSERT_OK(journal_new("/nonexistent/parent/topod", &j));
        ASSERT_ERROR(feat_set(f.root, &f.ops, DEBUGFS, j, "TTWU_QUEUE", false, &r), ENOENT);
        ASSERT_STR_CONTAINS(r.reason, "journal");
        ASSERT_FALSE(r.journaled);
        ASSERT_EQ(f.fk.n_words, 0);
        ASSERT_TRUE(feature_is(&f, "TTWU_QUEUE", true));
        fixture_done(&f);
}

static void test_crash_recovery(void) {
        Fixture f = {};
        FeatResult r;
        _cleanup_free_ char *jdir = NULL;

        fixture_init(&f, true);
        ASSERT_GT(asprintf(&jdir, "%s/run-topod", f.dir), 0);

        /* First life: change things, then die without restoring (the
         * journal object is dropped, the file stays). */
        {
                _cleanup_(journal_freep) Journal *j = NULL;

                ASSERT_EQ(journal_load(jdir, &j, NULL), 0); /* nothing to recover */
                ASSERT_OK(feat_set(f.root, &f.ops, DEBUGFS, j, "TTWU_QUEUE", false, &r));
                ASSERT_OK(feat_set(f.root, &f.ops, DEBUGFS, j, "NEXT_BUDDY", true, &r));
                ASSERT_OK(feat_set_cgroup_mode(f.root, &f.ops, DEBUGFS, j, "up", &r));
        }
        ASSERT_TRUE(feature_is(&f, "TTWU_QUEUE", false));

        /* Second life: a journal is found, restored, and removed. */
        {
                _cleanup_(journal_freep) Journal *j = NULL, *after = NULL;
                _cleanup_free_ FeatResult *results = NULL;
                _cleanup_free_ char *mode = NULL;
                size_t n;

                ASSERT_EQ(journal_load(jdir, &j, NULL), 1);
                ASSERT_EQ(journal_n_entries(j), 3);
                ASSERT_EQ(feat_restore(f.root, &f.ops, DEBUGFS, j, &results, &n), 0);
                ASSERT_EQ(n, 3);
                ASSERT_OK(journal_remove(jdir));
                ASSERT_TRUE(feature_is(&f, "TTWU_QUEUE", true));
                ASSERT_TRUE(feature_is(&f, "NEXT_BUDDY", false));
                ASSERT_OK(feat_read_cgroup_mode(f.root, DEBUGFS, NULL, &mode));
                ASSERT_STREQ(mode, "concur");
                ASSERT_EQ(journal_load(jdir, &after, NULL), 0);
        }

        /* A partial restore (lockdown since) reports failures; the caller
         * keeps the journal. */
        {
                _cleanup_(journal_freep) Journal *j = NULL;
                _cleanup_free_ FeatResult *results = NULL;
                size_t n;

                ASSERT_OK(journal_new(jdir, &j));
                ASSERT_OK(feat_set(f.root, &f.ops, DEBUGFS, j, "TTWU_QUEUE", false, &r));
                ASSERT_OK(journal_record_feature(j, "GONE_IN_THIS_KERNEL", true));
                f.fk.refuse = -EPERM;
                ASSERT_EQ(feat_restore(f.root, &f.ops, DEBUGFS, j, &results, &n), 2);
                ASSERT_EQ(results[0].error, -EPERM);
                ASSERT_EQ(results[1].error, -EINVAL);
        }

        fixture_done(&f);
}

/* The real write, against a plain file: exactly the word, in one piece,
 * nothing else (no newline, no NUL). */
static void test_kernel_ops(void) {
        char *dir = fake_root_new();
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_free_ char *text = NULL;

        fake_write(dir, FEATURES_FILE, "");
        ASSERT_OK(root_open(dir, &root));
        ASSERT_OK(feat_ops_kernel.write(NULL, root, DEBUGFS "/sched/features", "NO_TTWU_QUEUE"));
        text = fake_read(dir, FEATURES_FILE);
        ASSERT_STREQ(text, "NO_TTWU_QUEUE");
        ASSERT_ERROR(feat_ops_kernel.write(NULL, root, DEBUGFS "/sched/cgroup_mode", "max"), ENOENT);
        fake_root_remove(dir);
        ASSERT_STREQ(feat_outcome_to_string(FEAT_ALREADY), "already");
}

int main(void) {
        RUN(test_parse);
        RUN(test_set_feature);
        RUN(test_set_feature_failures);
        RUN(test_cgroup_mode);
        RUN(test_cgroup_mode_absent);
        RUN(test_journaled_and_restore);
        RUN(test_journal_unwritable);
        RUN(test_crash_recovery);
        RUN(test_kernel_ops);
        return 0;
}
