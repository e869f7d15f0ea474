/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy model: the names of its values (for printing and parsing),
 * the lifetime of a Policy and a PolicySet, and a set's precedence order.
 * Parsing a file is policy-parse.c's; evaluating [when] policy-when.c's;
 * matching tasks policy-match.c's; kernel-wide settings policy-kernel.c's. */
#include "policy.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "decide/policy-internal.h"

const char *const policy_known_cgroup_modes[] = { "up", "smp", "concur", "max", "tasks", NULL };

static const char *const cmp_names[_POLICY_CMP_MAX] = {
        [POLICY_CMP_EQ] = "==", [POLICY_CMP_NE] = "!=", [POLICY_CMP_LT] = "<",
        [POLICY_CMP_LE] = "<=", [POLICY_CMP_GT] = ">",  [POLICY_CMP_GE] = ">=",
};
const char *const policy_when_kind_names[_POLICY_WHEN_KIND_MAX + 1] = {
        [POLICY_WHEN_LLCS] = "llcs", [POLICY_WHEN_NODES] = "nodes", [POLICY_WHEN_PACKAGES] = "packages",
        [POLICY_WHEN_CPUS] = "cpus", [POLICY_WHEN_KERNEL] = "kernel",
};
const char *const policy_class_names[_POLICY_CLASS_MAX + 1] = {
        [POLICY_CLASS_AVX] = "avx", [POLICY_CLASS_LATENCY] = "latency",
        [POLICY_CLASS_THROUGHPUT] = "throughput", [POLICY_CLASS_OTHER] = "other",
};
const char *const policy_field_names[_POLICY_MATCH_FIELD_MAX + 1] = {
        [POLICY_MATCH_COMM] = "comm", [POLICY_MATCH_EXE] = "exe", [POLICY_MATCH_CMDLINE] = "cmdline",
        [POLICY_MATCH_CGROUP] = "cgroup", [POLICY_MATCH_USER] = "user", [POLICY_MATCH_PARENT] = "parent",
        [POLICY_MATCH_UNIT] = "unit",
};
const char *const policy_cookie_names[_POLICY_COOKIE_MAX + 1] = {
        [POLICY_COOKIE_NONE] = "none", [POLICY_COOKIE_GROUP] = "group", [POLICY_COOKIE_PROCESS] = "process",
};
static const char *const cpus_names[_POLICY_CPUS_MAX + 1] = {
        [POLICY_CPUS_LLC] = "llc", [POLICY_CPUS_NODE] = "node", [POLICY_CPUS_PACKAGE] = "package",
        [POLICY_CPUS_ALL] = "all", [POLICY_CPUS_EXPLICIT] = NULL,
};
const char *const policy_spread_names[_POLICY_SPREAD_MAX + 1] = {
        [POLICY_SPREAD_PACK] = "pack", [POLICY_SPREAD_SPREAD] = "spread",
};

const char *policy_cmp_to_string(PolicyCmp c) {
        return c >= 0 && c < _POLICY_CMP_MAX ? cmp_names[c] : "?";
}
const char *policy_when_kind_to_string(PolicyWhenKind k) {
        return k >= 0 && k < _POLICY_WHEN_KIND_MAX ? policy_when_kind_names[k] : "?";
}
const char *policy_class_to_string(PolicyClass c) {
        return c >= 0 && c < _POLICY_CLASS_MAX ? policy_class_names[c] : "?";
}
const char *policy_match_field_to_string(PolicyMatchField f) {
        return f >= 0 && f < _POLICY_MATCH_FIELD_MAX ? policy_field_names[f] : "?";
}
const char *policy_cookie_to_string(PolicyCookie c) {
        return c >= 0 && c < _POLICY_COOKIE_MAX ? policy_cookie_names[c] : "?";
}
const char *policy_cpus_to_string(PolicyCpus c) {
        return c == POLICY_CPUS_EXPLICIT ? "explicit" : c >= 0 && c < _POLICY_CPUS_MAX ? cpus_names[c] : "?";
}
const char *policy_spread_to_string(PolicySpread s) {
        return s >= 0 && s < _POLICY_SPREAD_MAX ? policy_spread_names[s] : "?";
}

/* ── The model's lifetime ── */

Policy *policy_free(Policy *p) {
        if (!p)
                return NULL;
        free(p->file);
        free(p->name);
        free(p->description);
        free(p->when.conditions);
        strv_free(p->when.vendors);
        for (size_t f = 0; f < _POLICY_MATCH_FIELD_MAX; f++) {
                for (size_t i = 0; i < p->match.fields[f].n; i++)
                        free(p->match.fields[f].items[i].glob);
                free(p->match.fields[f].items);
        }
        scope_patterns_done(&p->match.exclude);
        free(p->place.group);
        bitmap_free(p->place.cpu_list);
        free(p->cgroup_mode);
        for (size_t i = 0; i < p->n_features; i++)
                free(p->features[i].name);
        free(p->features);
        free(p->settings);
        free(p);
        return NULL;
}

PolicySet *policy_set_new(void) {
        return calloc(1, sizeof(PolicySet));
}

PolicySet *policy_set_free(PolicySet *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n; i++)
                policy_free(s->policies[i]);
        free(s->policies);
        free(s);
        return NULL;
}

/* ── Sets and precedence ── */

int policy_compare(const Policy *a, const Policy *b) {
        int c;

        if (a->priority != b->priority)
                return a->priority > b->priority ? -1 : 1;
        if ((c = strcmp(a->file_name, b->file_name)) != 0)
                return c;
        if ((c = strcmp(a->file, b->file)) != 0)
                return c;
        return strcmp(a->name ?: "", b->name ?: "");
}

static int policy_comparep(const void *a, const void *b) {
        return policy_compare(*(Policy *const *) a, *(Policy *const *) b);
}

int policy_set_add(PolicySet *s, Policy *p) {
        Policy **n;

        if (s->n >= POLICY_COUNT_MAX) {
                policy_free(p);
                return -E2BIG;
        }
        n = realloc(s->policies, (s->n + 1) * sizeof(Policy *));
        if (!n) {
                policy_free(p);
                return -ENOMEM;
        }
        s->policies = n;
        s->policies[s->n++] = p;
        return 0;
}

int policy_set_finalize(PolicySet *s, Diagnostics *d) {
        bool clash = false;
        size_t j = 0;

        if (s->n > 1)
                qsort(s->policies, s->n, sizeof(Policy *), policy_comparep);
        /* The first definition in precedence order keeps the name; later
         * ones are errors and leave the set. */
        for (size_t i = 0; i < s->n; i++) {
                Policy *p = s->policies[i];
                const Policy *first = NULL;

                for (size_t m = 0; m < j && !first; m++)
                        if (streq(s->policies[m]->name, p->name))
                                first = s->policies[m];
                if (first) {
                        int k = diag_add(d, DIAG_ERROR, p->file, p->name_line, "duplicate-name",
                                         "policy name '%s' is already used by %s:%u", p->name, first->file,
                                         first->name_line);
                        policy_free(p);
                        clash = true;
                        if (k < 0) {
                                /* keep the array consistent before failing */
                                for (size_t r = i + 1; r < s->n; r++)
                                        s->policies[j++] = s->policies[r];
                                s->n = j;
                                return k;
                        }
                        continue;
                }
                s->policies[j++] = p;
        }
        s->n = j;
        return clash ? -EINVAL : 0;
}

int policy_set_parse(const IniSource *texts, size_t n, Diagnostics *d, PolicySet **ret) {
        _cleanup_(policy_set_freep) PolicySet *s = NULL;
        bool bad = false;
        int k;

        if (n > POLICY_COUNT_MAX) {
                k = diag_add(d, DIAG_ERROR, texts[POLICY_COUNT_MAX].file, 0, "limit",
                             "%zu policy files, more than the limit of %u", n, POLICY_COUNT_MAX);
                return k < 0 ? k : -E2BIG;
        }
        s = policy_set_new();
        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                Policy *p = NULL;

                k = policy_parse(texts[i].text, texts[i].len, texts[i].file, d, &p);
                if (k == -ENOMEM)
                        return k;
                if (k < 0) {
                        bad = true;
                        continue;
                }
                k = policy_set_add(s, p);
                if (k < 0)
                        return k;
        }
        k = policy_set_finalize(s, d);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                bad = true;
        *ret = TAKE_PTR(s);
        return bad ? -EINVAL : 0;
}
