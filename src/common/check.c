/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* topoctl check and topod --check: the same checker for both programs (see check.h). */
#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/escape.h"
#include "base/json.h"
#include "base/macro.h"
#include "base/root.h"
#include "base/util.h"
#include "report.h"
#include "decide/config.h"
#include "decide/diag.h"
#include "decide/policy-check.h"
#include "decide/policy-read.h"
#include "decide/policy.h"
#include "observe/kernelcaps.h"
#include "observe/topology.h"

#define EXIT_USAGE 2

static bool endswith(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);

        return a >= b && streq(s + a - b, suffix);
}

static int prefixed(const char *root_dir, const char *path, char **ret) {
        size_t n;

        if (!root_dir || streq(root_dir, "/"))
                return (*ret = strdup(path)) ? 0 : -ENOMEM;
        n = strlen(root_dir);
        while (n > 0 && root_dir[n - 1] == '/')
                n--;
        return asprintf(ret, "%.*s/%s", (int) n, root_dir, path + (path[0] == '/')) < 0 ? -ENOMEM : 0;
}

/* The machine: topology and kernel caps below root_dir (or the other
 * host's). What cannot be loaded is said on stderr and left NULL, and its
 * checks are skipped; -1 when that was the other host's, asked for by name
 * (the check then fails), else 0. */
static int load_machine(const char *root_dir, const CheckHost *host, Topology **ret_t, KernelCaps **ret_c,
                         uint64_t *ret_kernel) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_free_ char *release = NULL;
        TopologySource src = { .kind = TOPOLOGY_SOURCE_ROOT, .arg = root_dir };
        int k;

        if (host && host->xml)
                src = (TopologySource) { .kind = TOPOLOGY_SOURCE_XML, .arg = host->xml };
        else if (host && host->synthetic)
                src = (TopologySource) { .kind = TOPOLOGY_SOURCE_SYNTHETIC, .arg = host->synthetic };

        *ret_t = NULL;
        *ret_c = NULL;
        *ret_kernel = 0;
        k = root_open(root_dir, &root);
        if (k < 0) {
                fprintf(stderr, "%s: cannot open root %s: %s; machine checks skipped\n", program_invocation_short_name, root_dir ?: "/", strerror(-k));
                return 0;
        }
        k = topology_load(&src, ret_t);
        if (k < 0 && src.kind != TOPOLOGY_SOURCE_ROOT) {
                fprintf(stderr, "%s: cannot load the topology from %s: %s%s\n", program_invocation_short_name, src.arg,
                        strerror(-k), src.kind == TOPOLOGY_SOURCE_SYNTHETIC ? " (bad description?)" : "");
                return -1;
        }
        if (k < 0)
                fprintf(stderr, "%s: cannot load the topology%s%s: %s; topology checks skipped\n", program_invocation_short_name,
                        src.kind == TOPOLOGY_SOURCE_ROOT ? "" : " from ", src.kind == TOPOLOGY_SOURCE_ROOT ? "" : src.arg,
                        strerror(-k));
        if (host && host->caps) {
                _cleanup_free_ char *why = NULL;

                k = kernelcaps_load_json_file(host->caps, ret_c, &why);
                if (k < 0) {
                        fprintf(stderr, "%s: cannot read the kernel probe %s\n", program_invocation_short_name,
                                why ?: strerror(-k));
                        return -1;
                }
                return 0; /* that host's kernel version is not in its probe */
        }
        k = kernelcaps_probe(root, NULL, ret_c);
        if (k < 0)
                fprintf(stderr, "%s: kernel capability probe failed: %s; kernel checks skipped\n", program_invocation_short_name, strerror(-k));
        if (root_read_line(root, "proc/sys/kernel/osrelease", &release) >= 0 &&
            policy_parse_kernel_version(release, ret_kernel) < 0)
                *ret_kernel = 0;
        return 0;
}

static void print_text(const Diagnostics *d, bool strict) {
        for (size_t i = 0; i < d->n; i++) {
                const Diagnostic *x = &d->items[i];
                bool as_error = x->severity == DIAG_ERROR || strict;
                /* a file name or a quoted value may hold any byte */
                _cleanup_free_ char *file = escape_string(x->file, ESCAPE_CONTROL),
                                    *message = escape_string(x->message, ESCAPE_CONTROL);

                if (x->line > 0)
                        printf("%s:%u: %s: %s%s\n", file ?: "?", x->line, as_error ? "error" : "warning", message ?: "?",
                               x->severity == DIAG_WARNING && strict ? " [--strict]" : "");
                else
                        printf("%s: %s: %s%s\n", file ?: "?", as_error ? "error" : "warning", message ?: "?",
                               x->severity == DIAG_WARNING && strict ? " [--strict]" : "");
        }
        if (d->truncated)
                printf("%s: error: more than %u findings; the rest are not shown\n", program_invocation_short_name, DIAG_MAX);
}

static void print_json(const Diagnostics *d, const PolicySet *s, const Config *c, char *const *checked,
                       const PolicyFiles *files, bool strict, bool offline, bool ok) {
        _cleanup_(json_freep) Json *j = json_new(stdout, true);

        if (!j)
                return;
        json_object_begin(j);
        json_kv_bool(j, "valid", ok);
        json_kv_bool(j, "strict", strict);
        json_kv_bool(j, "offline", offline);
        json_kv_uint(j, "errors", d->n_errors);
        json_kv_uint(j, "warnings", d->n_warnings);
        json_kv_bool(j, "truncated", d->truncated);
        json_kv_uint(j, "policy_count", s ? s->n : 0);
        json_key(j, "checked");
        json_array_begin(j);
        for (char *const *p = checked; p && *p; p++)
                json_string(j, *p);
        json_array_end(j);
        json_key(j, "diagnostics");
        report_print_diagnostics_json(j, d);
        json_key(j, "policies");
        json_array_begin(j);
        for (size_t i = 0; s && i < s->n; i++) {
                const Policy *p = s->policies[i];

                json_object_begin(j);
                json_kv_string(j, "name", p->name);
                json_kv_string(j, "file", p->file);
                json_kv_uint(j, "line", p->policy_line);
                json_kv_string(j, "layer", p->layer);
                json_kv_int(j, "priority", p->priority);
                json_kv_bool(j, "enabled", p->enabled);
                json_kv_string(j, "group", p->place.present ? p->place.group : NULL);
                json_kv_string(j, "cookie", p->place.present ? policy_cookie_to_string(p->place.cookie) : NULL);
                json_kv_string(j, "cgroup_mode", p->cgroup_mode ?: "keep");
                json_object_end(j);
        }
        json_array_end(j);
        /* every file of the layers and what became of it */
        json_key(j, "files");
        json_array_begin(j);
        for (size_t i = 0; i < files->n; i++) {
                json_object_begin(j);
                json_kv_string(j, "file", files->items[i].path);
                json_kv_string(j, "layer", files->items[i].layer);
                json_kv_string(j, "state", policy_file_state_to_string(files->items[i].state));
                json_kv_string(j, "by", files->items[i].by);
                json_object_end(j);
        }
        json_array_end(j);
        if (c) {
                json_key(j, "config");
                json_object_begin(j);
                json_kv_string(j, "policies_dir", c->policies_dir);
                json_kv_string(j, "cgroup_root", c->cgroup_root);
                json_kv_string(j, "hierarchy", config_hierarchy_to_string(c->hierarchy));
                json_kv_string(j, "seccomp", config_seccomp_to_string(c->seccomp));
                json_kv_string(j, "metrics_file", c->metrics_file);
                json_kv_string(j, "log_level", config_log_level_to_string(c->log_level));
                json_kv_uint(j, "sample_interval_usec", c->sample_interval_usec);
                json_kv_uint(j, "rescan_interval_usec", c->rescan_interval_usec);
                json_kv_bool(j, "restore_on_exit", c->restore_on_exit);
                json_key(j, "scope");
                json_object_begin(j);
                {
                        const ScopePatterns *lists[] = { &c->scope.include, &c->scope.exclude, &c->scope.protect };
                        static const char *const names[] = { "include", "exclude", "protect" };

                        for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
                                json_key(j, names[i]);
                                json_array_begin(j);
                                for (size_t p = 0; p < lists[i]->n; p++)
                                        json_string(j, lists[i]->items[p].glob);
                                json_array_end(j);
                        }
                }
                json_object_end(j);
                json_object_end(j);
        }
        json_object_end(j);
}

/* The policies a topod.conf names (root_dir: below which), read into d and
 * *set; "checked" gets what was looked at. The layers may all be missing
 * (a warning: no policy applies); a policies_dir set must be there. */
static int check_config_policies(const char *root_dir, const Config *config, Diagnostics *d, char ***checked,
                                 PolicySet **set, PolicyFiles *files) {
        _cleanup_(policy_search_done) PolicySearch search = {};
        _cleanup_(root_freep) Root *root = NULL;
        int k;

        if ((k = root_open(root_dir, &root)) < 0)
                return diag_add(d, DIAG_ERROR, root_dir ?: "/", 0, "io", "cannot open the root: %s", strerror(-k));
        if ((k = policy_search_init(&search, root, NULL, config ? config->policies_dir : NULL)) < 0)
                return k;
        if (search.path) {
                if ((k = strv_push_dup(checked, search.path)) < 0)
                        return k;
        } else {
                for (size_t l = 0; l < _POLICY_LAYER_MAX; l++)
                        if ((k = strv_push_dup(checked, search.dirs[l])) < 0)
                                return k;
                if (!policy_search_any_dir(&search)) {
                        _cleanup_free_ char *where = policy_search_describe(&search);

                        if (!where)
                                return -ENOMEM;
                        return diag_add(d, DIAG_WARNING, search.dirs[POLICY_LAYER_LOCAL], 0, "io",
                                        "no policies directory (none of %s): topod would apply no policy", where);
                }
        }
        k = policy_search_read(&search, d, set, files);
        return k == -ENOMEM ? k : 0;
}

/* The files a layered search found that are not read: overridden or masked. */
static void print_files(const PolicyFiles *f) {
        for (size_t i = 0; i < f->n; i++) {
                const PolicyFile *x = &f->items[i];
                _cleanup_free_ char *path = escape_string(x->path, ESCAPE_CONTROL),
                                    *by = x->by ? escape_string(x->by, ESCAPE_CONTROL) : NULL;

                if (x->state == POLICY_FILE_OVERRIDDEN)
                        printf("%s: note: overridden by %s\n", path ?: "?", by ?: "?");
                else if (x->state == POLICY_FILE_MASKED)
                        printf("%s: note: masked by %s\n", path ?: "?", by ?: "?");
                else if (x->state == POLICY_FILE_MASK)
                        printf("%s: note: a mask (a symbolic link to /dev/null, or empty): the name is not read in "
                               "any layer\n", path ?: "?");
        }
}

int topoctl_check(char *const *paths, size_t n_paths, bool strict, bool offline, bool json, const char *root_dir) {
        return topoctl_check_config(NULL, paths, n_paths, strict, offline, json, root_dir);
}

int topoctl_check_config(const char *config_path, char *const *paths, size_t n_paths, bool strict, bool offline,
                         bool json, const char *root_dir) {
        return topoctl_check_host(config_path, paths, n_paths, strict, offline, json, root_dir, NULL);
}

int topoctl_check_host(const char *config_path, char *const *paths, size_t n_paths, bool strict, bool offline,
                       bool json, const char *root_dir, const CheckHost *host) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(policy_set_freep) PolicySet *set = NULL;
        _cleanup_(config_freep) Config *config = NULL;
        _cleanup_strv_free_ char **policy_paths = calloc(1, sizeof(char *));
        _cleanup_strv_free_ char **checked = calloc(1, sizeof(char *));
        _cleanup_(topology_freep) Topology *topology = NULL;
        _cleanup_(kernelcaps_freep) KernelCaps *caps = NULL;
        _cleanup_(policy_files_done) PolicyFiles files = {};
        bool config_given = false;
        uint64_t kernel = 0;
        bool ok;
        int k;

        if (!d || !policy_paths || !checked)
                goto oom;
        for (size_t i = 0; i < n_paths; i++)
                if (!paths[i] || !*paths[i]) {
                        fprintf(stderr, "%s: check: empty path\nTry '%s --help' for more information.\n", program_invocation_short_name, program_invocation_short_name);
                        return EXIT_USAGE;
                }

        if (config_path) {
                /* --config: a topod.conf whatever its name */
                k = config_read(config_path, true, d, &config);
                if (k == -ENOMEM || strv_push_dup(&checked, config_path) < 0)
                        goto oom;
                config_given = true;
        }
        if (n_paths == 0 && !config_path) {
                _cleanup_free_ char *conf = NULL;

                if (prefixed(root_dir, CONFIG_DEFAULT_PATH, &conf) < 0)
                        goto oom;
                k = config_read(conf, false, d, &config);
                if (k == -ENOMEM)
                        goto oom;
                if (strv_push_dup(&checked, conf) < 0)
                        goto oom;
                config_given = true;
        } else
                for (size_t i = 0; i < n_paths; i++) {
                        struct stat st;

                        if (strv_push_dup(&checked, paths[i]) < 0)
                                goto oom;
                        if (endswith(paths[i], ".conf") && stat(paths[i], &st) >= 0 && !S_ISDIR(st.st_mode)) {
                                _cleanup_(config_freep) Config *c = NULL;

                                k = config_read(paths[i], true, d, &c);
                                if (k == -ENOMEM)
                                        goto oom;
                                if (!config)
                                        config = TAKE_PTR(c);
                                config_given = true;
                                continue;
                        }
                        if (strv_push_dup(&policy_paths, paths[i]) < 0)
                                goto oom;
                }

        if (policy_paths[0]) {
                /* policies named: those, whatever a topod.conf beside them says */
                k = policy_read_paths(policy_paths, strv_length(policy_paths), d, &set);
                if (k == -ENOMEM)
                        goto oom;
        } else if (config_given && check_config_policies(root_dir, config, d, &checked, &set, &files) < 0)
                goto oom;
        if (set) {
                if (!offline && load_machine(root_dir, host, &topology, &caps, &kernel) < 0)
                        return EXIT_FAILURE;
                k = check_policy_set(set, topology, caps, kernel, d);
                if (k < 0)
                        goto oom;
        }

        diag_sort(d);
        ok = d->n_errors == 0 && (!strict || d->n_warnings == 0);
        if (json)
                print_json(d, set, config, checked, &files, strict, offline, ok);
        else {
                size_t n = set ? set->n : 0;

                print_text(d, strict);
                print_files(&files);
                printf("%zu polic%s, %zu error%s, %zu warning%s%s\n", n, n == 1 ? "y" : "ies", d->n_errors,
                       d->n_errors == 1 ? "" : "s", d->n_warnings, d->n_warnings == 1 ? "" : "s",
                       strict && d->n_warnings > 0 ? " (warnings count as errors with --strict)" : "");
        }
        if (fflush(stdout) != 0)
                return EXIT_FAILURE;
        return ok ? EXIT_SUCCESS : EXIT_FAILURE;

oom:
        fprintf(stderr, "%s: out of memory\n", program_invocation_short_name);
        return EXIT_FAILURE;
}
