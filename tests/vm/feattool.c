/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* feattool: the feat_* and journal_* code on a real kernel, for the guest
 * tier (tests/vm/test_feat.py). Prints JSON on stdout.
 *
 *   feattool read
 *   feattool set [--journal DIR] [--hold FILE] NAME on|off
 *   feattool mode [--journal DIR] [MODE]        read, or set, sched/cgroup_mode
 *   feattool restore --journal DIR              recover: restore, then forget/remove
 *
 * --hold FILE: after the change, create FILE and wait to be killed (the test
 * kills -9 here to leave a journal behind, as a crash would).
 * Exit: 0 done/already (or read), 1 failed, 2 usage. */

#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apply/feat.h"
#include "apply/journal.h"
#include "base/json.h"
#include "base/root.h"
#include "base/util.h"
#include "observe/kernelcaps.h"
#include "guest-tool.h"

static void result_json(Json *j, const FeatResult *r) {
        json_object_begin(j);
        json_kv_string(j, "kind", r->kind == FEAT_KIND_FEATURE ? "feature" : "cgroup_mode");
        json_kv_string(j, "name", r->name);
        if (r->kind == FEAT_KIND_FEATURE) {
                json_kv_bool(j, "on", r->on);
                json_key(j, "was_on");
                if (r->had_before)
                        json_bool(j, r->was_on);
                else
                        json_null(j);
        } else {
                json_key(j, "before");
                if (r->had_before)
                        json_string(j, r->before);
                else
                        json_null(j);
        }
        json_kv_string(j, "outcome", feat_outcome_to_string(r->outcome));
        json_key(j, "error");
        if (r->error)
                json_string(j, errno_name(r->error));
        else
                json_null(j);
        json_kv_string(j, "reason", r->reason);
        json_kv_bool(j, "journaled", r->journaled);
        json_object_end(j);
}

static int verb_read(const Root *root, const KernelCaps *caps) {
        _cleanup_(json_freep) Json *j = json_new(stdout, true);
        _cleanup_(feature_state_freep) FeatureState *s = NULL;
        _cleanup_strv_free_ char **modes = NULL;
        _cleanup_free_ char *active = NULL;
        int k;

        json_object_begin(j);
        json_kv_string(j, "debugfs", caps->debugfs_mount);
        k = feat_read(root, caps->debugfs_mount, &s);
        json_key(j, "features");
        if (k < 0)
                json_string(j, errno_name(k));
        else {
                json_object_begin(j);
                for (size_t i = 0; i < s->n; i++)
                        json_kv_bool(j, s->names[i], s->on[i]);
                json_object_end(j);
        }
        json_key(j, "cgroup_mode");
        json_object_begin(j);
        k = feat_read_cgroup_mode(root, caps->debugfs_mount, &modes, &active);
        json_kv_bool(j, "present", k >= 0);
        json_key(j, "error");
        if (k < 0)
                json_string(j, errno_name(k));
        else
                json_null(j);
        json_kv_string(j, "caps_reason", caps->cgroup_mode.reason);
        json_key(j, "modes");
        json_array_begin(j);
        for (char **m = modes; m && *m; m++)
                json_string(j, *m);
        json_array_end(j);
        json_kv_string(j, "active", active);
        json_object_end(j);
        json_object_end(j);
        return 0;
}

static int verb_set(const Root *root, const KernelCaps *caps, const char *jdir, const char *hold_file, char **args,
                    int n) {
        _cleanup_(journal_freep) Journal *jn = NULL;
        FeatResult r;
        int k;

        if (n != 2 || !(streq(args[1], "on") || streq(args[1], "off"))) {
                fprintf(stderr, "feattool set: expected NAME on|off\n");
                return 2;
        }
        if (open_journal(jdir, &jn) < 0)
                return 1;
        k = feat_set(root, NULL, caps->debugfs_mount, jdir ? jn : NULL, args[0], streq(args[1], "on"), &r);
        {
                _cleanup_(json_freep) Json *j = json_new(stdout, true);
                result_json(j, &r);
        }
        if (k < 0)
                return 1;
        hold(hold_file);
        return 0;
}

static int verb_mode(const Root *root, const KernelCaps *caps, const char *jdir, const char *hold_file, char **args,
                     int n) {
        _cleanup_(journal_freep) Journal *jn = NULL;
        FeatResult r;
        int k;

        if (n == 0)
                return verb_read(root, caps);
        if (n != 1) {
                fprintf(stderr, "feattool mode: expected at most one MODE\n");
                return 2;
        }
        if (open_journal(jdir, &jn) < 0)
                return 1;
        k = feat_set_cgroup_mode(root, NULL, caps->debugfs_mount, jdir ? jn : NULL, args[0], &r);
        {
                _cleanup_(json_freep) Json *j = json_new(stdout, true);
                result_json(j, &r);
        }
        if (k < 0)
                return 1;
        hold(hold_file);
        return 0;
}

static int verb_restore(const Root *root, const KernelCaps *caps, const char *jdir) {
        _cleanup_(journal_freep) Journal *jn = NULL;
        _cleanup_free_ FeatResult *results = NULL;
        size_t n = 0, entries;
        int found, failed, k;
        bool removed = false;

        if (!jdir) {
                fprintf(stderr, "feattool restore: --journal DIR is required\n");
                return 2;
        }
        found = open_journal(jdir, &jn);
        if (found < 0)
                return 1;
        entries = journal_n_entries(jn);
        failed = feat_restore(root, NULL, caps->debugfs_mount, jn, &results, &n);
        if (failed < 0) {
                error_json("feat_restore", failed, NULL);
                return 1;
        }
        /* Forget what is back; keep what is not, and whatever other modules
         * (tasks, cookies, cgroups) still have to put back. */
        for (size_t i = 0; i < n; i++)
                if (results[i].outcome != FEAT_FAILED) {
                        if (results[i].kind == FEAT_KIND_FEATURE)
                                (void) journal_forget_feature(jn, results[i].name);
                        else
                                (void) journal_forget_cgroup_mode(jn);
                }
        if (journal_is_empty(jn)) {
                k = journal_remove(jdir);
                removed = k >= 0;
        } else
                k = journal_commit(jn);
        {
                _cleanup_(json_freep) Json *j = json_new(stdout, true);

                json_object_begin(j);
                json_kv_bool(j, "journal_found", found > 0);
                json_kv_uint(j, "entries", entries);
                json_key(j, "results");
                json_array_begin(j);
                for (size_t i = 0; i < n; i++)
                        result_json(j, &results[i]);
                json_array_end(j);
                json_kv_int(j, "failed", failed);
                json_kv_uint(j, "entries_left", journal_n_entries(jn));
                json_kv_bool(j, "journal_removed", removed);
                json_key(j, "journal_error");
                if (k < 0)
                        json_string(j, errno_name(k));
                else
                        json_null(j);
                json_object_end(j);
        }
        return failed > 0 || k < 0 ? 1 : 0;
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "journal", required_argument, NULL, 'j' },
                { "hold", required_argument, NULL, 'H' },
                { "root", required_argument, NULL, 'r' },
                {},
        };
        _cleanup_(kernelcaps_freep) KernelCaps *caps = NULL;
        _cleanup_(root_freep) Root *root = NULL;
        const char *jdir = NULL, *hold_file = NULL, *root_dir = "/", *verb;
        int c, k;

        /* Permuting: options may stand before or after the verb. */
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'j':
                        jdir = optarg;
                        break;
                case 'H':
                        hold_file = optarg;
                        break;
                case 'r':
                        root_dir = optarg;
                        break;
                default:
                        return 2;
                }
        if (optind >= argc) {
                fprintf(stderr, "usage: feattool [--journal DIR] [--hold FILE] read|set|mode|restore ...\n");
                return 2;
        }
        verb = argv[optind++];

        k = root_open(root_dir, &root);
        if (k < 0) {
                error_json("root_open", k, NULL);
                return 1;
        }
        k = kernelcaps_probe(root, NULL, &caps);
        if (k < 0) {
                error_json("kernelcaps_probe", k, NULL);
                return 1;
        }

        if (streq(verb, "read"))
                return verb_read(root, caps);
        if (streq(verb, "set"))
                return verb_set(root, caps, jdir, hold_file, argv + optind, argc - optind);
        if (streq(verb, "mode"))
                return verb_mode(root, caps, jdir, hold_file, argv + optind, argc - optind);
        if (streq(verb, "restore"))
                return verb_restore(root, caps, jdir);
        fprintf(stderr, "feattool: unknown verb %s\n", verb);
        return 2;
}
