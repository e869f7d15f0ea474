/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "policy.h"

#include <ctype.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "initext.h"

const char *const policy_known_cgroup_modes[] = { "up", "smp", "concur", "max", "tasks", NULL };

static const char *const cmp_names[_POLICY_CMP_MAX] = {
        [POLICY_CMP_EQ] = "==", [POLICY_CMP_NE] = "!=", [POLICY_CMP_LT] = "<",
        [POLICY_CMP_LE] = "<=", [POLICY_CMP_GT] = ">",  [POLICY_CMP_GE] = ">=",
};
static const char *const when_kind_names[_POLICY_WHEN_KIND_MAX + 1] = {
        [POLICY_WHEN_LLCS] = "llcs", [POLICY_WHEN_NODES] = "nodes", [POLICY_WHEN_PACKAGES] = "packages",
        [POLICY_WHEN_CPUS] = "cpus", [POLICY_WHEN_KERNEL] = "kernel",
};
static const char *const class_names[_POLICY_CLASS_MAX + 1] = {
        [POLICY_CLASS_AVX] = "avx", [POLICY_CLASS_LATENCY] = "latency",
        [POLICY_CLASS_THROUGHPUT] = "throughput", [POLICY_CLASS_OTHER] = "other",
};
static const char *const field_names[_POLICY_MATCH_FIELD_MAX + 1] = {
        [POLICY_MATCH_COMM] = "comm", [POLICY_MATCH_EXE] = "exe", [POLICY_MATCH_CMDLINE] = "cmdline",
        [POLICY_MATCH_CGROUP] = "cgroup", [POLICY_MATCH_USER] = "user", [POLICY_MATCH_PARENT] = "parent",
};
static const char *const cookie_names[_POLICY_COOKIE_MAX + 1] = {
        [POLICY_COOKIE_NONE] = "none", [POLICY_COOKIE_GROUP] = "group", [POLICY_COOKIE_PROCESS] = "process",
};
static const char *const cpus_names[_POLICY_CPUS_MAX + 1] = {
        [POLICY_CPUS_LLC] = "llc", [POLICY_CPUS_NODE] = "node", [POLICY_CPUS_PACKAGE] = "package",
        [POLICY_CPUS_ALL] = "all", [POLICY_CPUS_EXPLICIT] = NULL,
};
static const char *const spread_names[_POLICY_SPREAD_MAX + 1] = {
        [POLICY_SPREAD_PACK] = "pack", [POLICY_SPREAD_SPREAD] = "spread",
};
static const char *const known_vendors[] = {
        "GenuineIntel", "AuthenticAMD", "HygonGenuine", "CentaurHauls", "  Shanghai  ", NULL,
};

const char *policy_cmp_to_string(PolicyCmp c) {
        return c >= 0 && c < _POLICY_CMP_MAX ? cmp_names[c] : "?";
}
const char *policy_when_kind_to_string(PolicyWhenKind k) {
        return k >= 0 && k < _POLICY_WHEN_KIND_MAX ? when_kind_names[k] : "?";
}
const char *policy_class_to_string(PolicyClass c) {
        return c >= 0 && c < _POLICY_CLASS_MAX ? class_names[c] : "?";
}
const char *policy_match_field_to_string(PolicyMatchField f) {
        return f >= 0 && f < _POLICY_MATCH_FIELD_MAX ? field_names[f] : "?";
}
const char *policy_cookie_to_string(PolicyCookie c) {
        return c >= 0 && c < _POLICY_COOKIE_MAX ? cookie_names[c] : "?";
}
const char *policy_cpus_to_string(PolicyCpus c) {
        return c == POLICY_CPUS_EXPLICIT ? "explicit" : c >= 0 && c < _POLICY_CPUS_MAX ? cpus_names[c] : "?";
}
const char *policy_spread_to_string(PolicySpread s) {
        return s >= 0 && s < _POLICY_SPREAD_MAX ? spread_names[s] : "?";
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
        free(p->place.group);
        bitmap_free(p->place.cpu_list);
        free(p->cgroup_mode);
        for (size_t i = 0; i < p->n_features; i++)
                free(p->features[i].name);
        free(p->features);
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

PolicyKernelPlan *policy_kernel_plan_free(PolicyKernelPlan *p) {
        if (!p)
                return NULL;
        free(p->features);
        free(p->feature_policy);
        for (size_t i = 0; i < p->n_conflicts; i++)
                free(p->conflicts[i].what);
        free(p->conflicts);
        free(p);
        return NULL;
}

/* ── Small value parsers ── */

static int parse_uint(const char *s, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;

        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        for (; isdigit((unsigned char) *s); s++) {
                if (v > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*s - '0');
        }
        if (*s)
                return -EINVAL;
        if (v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

static int parse_bool(const char *s) {
        static const char *const yes[] = { "yes", "on", "true", "1" }, *const no[] = { "no", "off", "false", "0" };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        }
        return -EINVAL;
}

static int table_lookup(const char *const *table, size_t n, const char *s) {
        for (size_t i = 0; i < n; i++)
                if (table[i] && streq(table[i], s))
                        return (int) i;
        return -1;
}

int policy_parse_kernel_version(const char *s, uint64_t *ret) {
        unsigned long part[3] = {};
        unsigned n = 0;

        while (n < 3) {
                char *end;

                if (!isdigit((unsigned char) *s))
                        return -EINVAL;
                errno = 0;
                part[n] = strtoul(s, &end, 10);
                if (errno != 0 || part[n] > 65535)
                        return -ERANGE;
                n++;
                s = end;
                if (*s != '.')
                        break;
                s++;
        }
        if (n < 2)
                return -EINVAL;
        /* "6.8.0-31-generic", "6.6+": what follows the numbers is a build tag. */
        if (*s && *s != '-' && *s != '+' && *s != '_' && *s != '~')
                return -EINVAL;
        *ret = POLICY_KERNEL_VERSION(part[0], part[1], part[2]);
        return (int) n;
}

static bool valid_word(const char *s, size_t max, const char *extra) {
        size_t n = strlen(s);

        if (n == 0 || n > max)
                return false;
        for (; *s; s++)
                if (!isalnum((unsigned char) *s) && !strchr(extra, *s))
                        return false;
        return true;
}

/* fnmatch() treats a '[' without ']' as a literal; a typo like "gemm[0-9"
 * is more likely, so reject it. */
static bool glob_brackets_ok(const char *g) {
        for (; *g; g++) {
                if (*g == '\\' && g[1]) {
                        g++;
                        continue;
                }
                if (*g == '[') {
                        const char *e = g + 1;

                        if (*e == '!' || *e == '^')
                                e++;
                        if (*e == ']')
                                e++;
                        while (*e && *e != ']')
                                e++;
                        if (!*e)
                                return false;
                        g = e;
                }
        }
        return true;
}

static bool glob_has_magic(const char *g) {
        return strpbrk(g, "*?[") != NULL;
}

/* How many bytes a pattern starts with that fnmatch() takes as they are.
 * Unlike glob_has_magic() (may the pattern match a longer name?), a
 * backslash counts: fnmatch() takes it as an escape (k\9 matches "k9"). */
static size_t glob_plain_prefix(const char *glob) {
        return strcspn(glob, "*?[\\");
}

bool policy_glob_is_literal(const char *glob) {
        return glob[glob_plain_prefix(glob)] == '\0';
}

/* ── The parser ── */

typedef enum Section {
        SECTION_POLICY,
        SECTION_WHEN,
        SECTION_MATCH,
        SECTION_PLACE,
        SECTION_KERNEL,
        SECTION_FEATURES,
        _SECTION_MAX,
        SECTION_NONE = -1,
        SECTION_UNKNOWN = -2,
} Section;

static const char *const section_names[_SECTION_MAX + 1] = {
        "policy", "when", "match", "place", "kernel", "features", NULL,
};

static const char *const keys_policy[] = { "name", "priority", "description", "enabled", NULL };
static const char *const keys_when[] = { "smt", "llcs", "nodes", "packages", "cpus", "vendor", "kernel", "load", NULL };
static const char *const keys_match[] = { "class", "comm", "exe", "cmdline", "cgroup", "user", "parent", NULL };
static const char *const keys_place[] = { "group", "cookie", "cpus", "spread", "exclusive", "weight", NULL };
static const char *const keys_kernel[] = { "cgroup_mode", NULL };
static const char *const *const section_keys[_SECTION_MAX] = {
        keys_policy, keys_when, keys_match, keys_place, keys_kernel, NULL,
};

/* Single-valued keys remember where they were first set. */
#define SEEN_MAX 16

typedef struct Parser {
        Policy *p;
        Diagnostics *d;
        const char *file;
        Section section;
        unsigned section_line[_SECTION_MAX];
        unsigned seen[_SECTION_MAX][SEEN_MAX];
        size_t n_rules;
        size_t errors_before;
        bool rules_limit_reported, when_limit_reported, features_limit_reported;
} Parser;

_printf_(4, 5) static int perr(Parser *ps, unsigned line, const char *id, const char *fmt, ...) {
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = diag_addv(ps->d, DIAG_ERROR, ps->file, line, id, fmt, ap);
        va_end(ap);
        return k;
}

_printf_(4, 5) static int pwarn(Parser *ps, unsigned line, const char *id, const char *fmt, ...) {
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = diag_addv(ps->d, DIAG_WARNING, ps->file, line, id, fmt, ap);
        va_end(ap);
        return k;
}

/* "expected a, b or c" with a "did you mean" when close. */
static int bad_enum(Parser *ps, unsigned line, const char *key, const char *value, const char *const *choices) {
        _cleanup_free_ char *list = NULL;
        const char *close = diag_closest(value, choices);
        int k;

        k = strv_join((char *const *) choices, ", ", &list);
        if (k < 0)
                return k;
        if (close)
                return perr(ps, line, "bad-value", "invalid %s '%s': expected one of %s; did you mean '%s'?", key,
                            value, list, close);
        return perr(ps, line, "bad-value", "invalid %s '%s': expected one of %s", key, value, list);
}

static int once(Parser *ps, unsigned line, const char *key) {
        const char *const *keys = section_keys[ps->section];
        int i = keys ? table_lookup(keys, strv_length((char *const *) keys), key) : -1;

        if (i < 0 || i >= SEEN_MAX)
                return 0;
        if (ps->seen[ps->section][i]) {
                int k = perr(ps, line, "duplicate-key", "'%s' is set twice in [%s] (first at line %u)", key,
                             section_names[ps->section], ps->seen[ps->section][i]);
                return k < 0 ? k : 1;
        }
        ps->seen[ps->section][i] = line;
        return 0;
}

static int on_section(void *userdata, const char *name, unsigned line) {
        Parser *ps = userdata;
        int i = table_lookup(section_names, _SECTION_MAX, name);

        if (i < 0) {
                const char *close = diag_closest(name, section_names);

                ps->section = SECTION_UNKNOWN;
                if (close)
                        return perr(ps, line, "unknown-section", "unknown section [%s]; did you mean [%s]?", name, close);
                return perr(ps, line, "unknown-section",
                            "unknown section [%s]; expected [policy], [when], [match], [place], [kernel] or [features]",
                            name);
        }
        ps->section = (Section) i;
        if (ps->section_line[i]) {
                ps->section = SECTION_UNKNOWN; /* its keys are not read twice */
                return perr(ps, line, "duplicate-section",
                            "section [%s] appears twice (first at line %u); a file holds one policy", name,
                            ps->section_line[i]);
        }
        ps->section_line[i] = line;
        switch (ps->section) {
        case SECTION_WHEN:
                ps->p->has_when = true;
                ps->p->when_line = line;
                break;
        case SECTION_MATCH:
                ps->p->has_match = true;
                ps->p->match_line = line;
                break;
        case SECTION_PLACE:
                ps->p->place.present = true;
                ps->p->place.line = line;
                break;
        default:
                break;
        }
        return 0;
}

static int check_string(Parser *ps, unsigned line, const char *key, const char *value, size_t max) {
        size_t n = strlen(value);

        if (n == 0)
                return perr(ps, line, "bad-value", "'%s' needs a value", key);
        if (n > max)
                return perr(ps, line, "limit", "'%s' is %zu characters long, longer than the limit of %zu", key, n, max);
        for (const char *c = value; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        return perr(ps, line, "bad-value", "'%s' contains a control character", key);
        return 1;
}

static int key_policy(Parser *ps, const char *key, const char *value, unsigned line) {
        Policy *p = ps->p;
        uint64_t u;
        int k;

        if (streq(key, "name")) {
                if (!valid_word(value, POLICY_NAME_MAX, "-_.") || value[0] == '.')
                        return perr(ps, line, strlen(value) > POLICY_NAME_MAX ? "limit" : "bad-value",
                                    "invalid name '%s': use 1 to %u letters, digits, '-', '_' or '.', not starting with '.'",
                                    value, POLICY_NAME_MAX);
                free(p->name);
                if (!(p->name = strdup(value)))
                        return -ENOMEM;
                p->name_line = line;
        } else if (streq(key, "priority")) {
                k = parse_uint(value, POLICY_PRIORITY_MAX, &u);
                if (k < 0)
                        return perr(ps, line, k == -ERANGE ? "out-of-range" : "bad-value",
                                    "invalid priority '%s': expected an integer from %d to %d", value,
                                    POLICY_PRIORITY_MIN, POLICY_PRIORITY_MAX);
                p->priority = (int) u;
                p->priority_line = line;
        } else if (streq(key, "description")) {
                if ((k = check_string(ps, line, key, value, POLICY_STRING_MAX)) <= 0)
                        return k;
                free(p->description);
                if (!(p->description = strdup(value)))
                        return -ENOMEM;
        } else if (streq(key, "enabled")) {
                k = parse_bool(value);
                if (k < 0)
                        return perr(ps, line, "bad-value", "invalid enabled '%s': expected yes or no", value);
                p->enabled = k;
                p->enabled_line = line;
        }
        return 0;
}

static int parse_cmp_prefix(const char **s, PolicyCmp *ret) {
        static const struct {
                const char *op;
                PolicyCmp cmp;
        } ops[] = {
                { ">=", POLICY_CMP_GE }, { "<=", POLICY_CMP_LE }, { "==", POLICY_CMP_EQ }, { "!=", POLICY_CMP_NE },
                { ">", POLICY_CMP_GT },  { "<", POLICY_CMP_LT },  { "=", POLICY_CMP_EQ },
        };

        for (size_t i = 0; i < ELEMENTSOF(ops); i++)
                if (startswith(*s, ops[i].op)) {
                        *s += strlen(ops[i].op);
                        while (isspace((unsigned char) **s))
                                (*s)++;
                        *ret = ops[i].cmp;
                        return 1;
                }
        return 0;
}

static int add_condition(Parser *ps, PolicyWhenKind kind, PolicyCmp cmp, uint64_t v, unsigned line) {
        PolicyWhen *w = &ps->p->when;
        PolicyCondition *n;

        if (w->n_conditions >= POLICY_WHEN_MAX) {
                if (ps->when_limit_reported)
                        return 0;
                ps->when_limit_reported = true;
                return perr(ps, line, "limit", "more than %u [when] conditions", POLICY_WHEN_MAX);
        }
        n = realloc(w->conditions, (w->n_conditions + 1) * sizeof(PolicyCondition));
        if (!n)
                return -ENOMEM;
        w->conditions = n;
        w->conditions[w->n_conditions++] = (PolicyCondition) { .kind = kind, .cmp = cmp, .value = v, .line = line };
        return 0;
}

static int parse_percent(const char *s, const char **end, unsigned *ret) {
        uint64_t v = 0;
        const char *c = s;

        if (!isdigit((unsigned char) *c))
                return -EINVAL;
        for (; isdigit((unsigned char) *c); c++) {
                v = v * 10 + (uint64_t) (*c - '0');
                if (v > POLICY_LOAD_MAX)
                        return -ERANGE;
        }
        while (isspace((unsigned char) *c))
                c++;
        if (*c == '%')
                c++;
        while (isspace((unsigned char) *c))
                c++;
        *end = c;
        *ret = (unsigned) v;
        return 0;
}

static int key_when(Parser *ps, const char *key, PolicyCmp cmp, bool has_cmp, const char *value, unsigned line) {
        PolicyWhen *w = &ps->p->when;
        int k, kind;

        kind = table_lookup(when_kind_names, _POLICY_WHEN_KIND_MAX, key);
        if (kind >= 0) {
                uint64_t v;

                if (kind == POLICY_WHEN_KERNEL) {
                        k = policy_parse_kernel_version(value, &v);
                        if (k < 0)
                                return perr(ps, line, k == -ERANGE ? "out-of-range" : "bad-value",
                                            "invalid kernel version '%s': expected MAJOR.MINOR[.PATCH]", value);
                        /* "kernel = 6.6" means any 6.6.x: compare what was written. */
                        if (k == 2 && (cmp == POLICY_CMP_EQ || cmp == POLICY_CMP_NE || cmp == POLICY_CMP_GT ||
                                       cmp == POLICY_CMP_LE)) {
                                /* 6.6 == k  ⇔  6.6.0 <= k <= 6.6.65535; > 6.6 ⇔ > 6.6.65535 */
                                if (cmp == POLICY_CMP_EQ) {
                                        k = add_condition(ps, kind, POLICY_CMP_GE, v, line);
                                        if (k < 0)
                                                return k;
                                        return add_condition(ps, kind, POLICY_CMP_LE, v | 0xffff, line);
                                }
                                if (cmp == POLICY_CMP_GT || cmp == POLICY_CMP_LE)
                                        return add_condition(ps, kind, cmp, v | 0xffff, line);
                                /* != 6.6: not one interval; marked by patch
                                 * 0xffff, compared with the patch masked off
                                 * (condition_holds()). */
                                return add_condition(ps, kind, cmp, v | 0xffff, line);
                        }
                } else {
                        k = parse_uint(value, BITMAP_MAX_BIT + 1, &v);
                        if (k < 0)
                                return perr(ps, line, k == -ERANGE ? "out-of-range" : "bad-value",
                                            "invalid %s '%s': expected a count, e.g. '%s >= 2'", key, value, key);
                }
                return add_condition(ps, (PolicyWhenKind) kind, has_cmp ? cmp : POLICY_CMP_EQ, v, line);
        }

        if (has_cmp && cmp != POLICY_CMP_EQ)
                return perr(ps, line, "bad-value", "'%s' takes no comparison, only '%s = …'", key, key);

        if (streq(key, "smt")) {
                if ((k = once(ps, line, key)) != 0)
                        return MIN(k, 0);
                k = parse_bool(value);
                if (k < 0)
                        return perr(ps, line, "bad-value", "invalid smt '%s': expected on or off", value);
                w->smt = k ? POLICY_SMT_ON : POLICY_SMT_OFF;
                w->smt_line = line;
        } else if (streq(key, "vendor")) {
                _cleanup_strv_free_ char **l = NULL;

                if ((k = once(ps, line, key)) != 0)
                        return MIN(k, 0);
                k = strv_split_ws(value, POLICY_VENDORS_MAX, &l);
                if (k == -E2BIG)
                        return perr(ps, line, "limit", "more than %u vendors", POLICY_VENDORS_MAX);
                if (k < 0)
                        return k;
                if (!l[0])
                        return perr(ps, line, "bad-value", "%s", "'vendor' needs at least one vendor name");
                for (char **v = l; *v; v++) {
                        const char *close;

                        if (!valid_word(*v, POLICY_NAME_MAX, "-_"))
                                return perr(ps, line, "bad-value", "invalid vendor '%s'", *v);
                        if (!strv_contains((char *const *) known_vendors, *v) &&
                            (close = diag_closest(*v, known_vendors)))
                                if ((k = pwarn(ps, line, "unknown-vendor",
                                               "unknown CPU vendor '%s'; did you mean '%s'?", *v, close)) < 0)
                                        return k;
                }
                w->vendors = TAKE_PTR(l);
                w->vendor_line = line;
        } else if (streq(key, "load")) {
                const char *s = value;
                unsigned lo, hi;

                if ((k = once(ps, line, key)) != 0)
                        return MIN(k, 0);
                k = parse_percent(s, &s, &lo);
                if (k >= 0 && *s == '-') {
                        s++;
                        while (isspace((unsigned char) *s))
                                s++;
                        k = parse_percent(s, &s, &hi);
                } else if (k >= 0)
                        k = -EINVAL;
                if (k >= 0 && *s)
                        k = -EINVAL;
                if (k == -ERANGE)
                        return perr(ps, line, "out-of-range", "load band '%s' goes past %u%%", value, POLICY_LOAD_MAX);
                if (k < 0)
                        return perr(ps, line, "bad-value", "invalid load '%s': expected a band like '0-85%%'", value);
                if (lo > hi)
                        return perr(ps, line, "bad-value", "load band '%s' is empty: %u%% is above %u%%", value, lo, hi);
                w->has_load = true;
                w->load_low = lo;
                w->load_high = hi;
                w->load_line = line;
        }
        return 0;
}

static int add_pattern(Parser *ps, PolicyMatchField f, const char *value, unsigned line) {
        PolicyPatterns *pp = &ps->p->match.fields[f];
        const char *fname = policy_match_field_to_string(f);
        PolicyPattern *n;
        char *g;
        int k;

        if ((k = check_string(ps, line, fname, value, POLICY_STRING_MAX)) <= 0)
                return k;
        if (!glob_brackets_ok(value))
                return perr(ps, line, "bad-value", "invalid %s pattern '%s': '[' without a closing ']'",
                            fname, value);
        if ((f == POLICY_MATCH_EXE || f == POLICY_MATCH_CGROUP) && value[0] != '/' && value[0] != '*')
                return perr(ps, line, "bad-value", "invalid %s pattern '%s': must start with '/' (or '*')",
                            fname, value);
        if (ps->n_rules >= POLICY_RULES_MAX) {
                if (ps->rules_limit_reported)
                        return 0;
                ps->rules_limit_reported = true;
                return perr(ps, line, "limit", "more than %u [match] rules", POLICY_RULES_MAX);
        }
        for (size_t i = 0; i < pp->n; i++)
                if (streq(pp->items[i].glob, value))
                        return pwarn(ps, line, "duplicate-pattern", "%s pattern '%s' repeats line %u, ignoring",
                                     fname, value, pp->items[i].line);
        if ((f == POLICY_MATCH_COMM || f == POLICY_MATCH_PARENT) && !glob_has_magic(value) &&
            strlen(value) > TASK_COMM_MAX)
                if ((k = pwarn(ps, line, "comm-too-long",
                               "%s pattern can never match: the kernel keeps at most %u characters of a command name",
                               fname, TASK_COMM_MAX)) < 0)
                        return k;

        g = strdup(value);
        if (!g)
                return -ENOMEM;
        n = realloc(pp->items, (pp->n + 1) * sizeof(PolicyPattern));
        if (!n) {
                free(g);
                return -ENOMEM;
        }
        pp->items = n;
        pp->items[pp->n++] = (PolicyPattern) { .glob = g, .line = line, .literal = policy_glob_is_literal(g) };
        ps->n_rules++;
        return 0;
}

static int key_match(Parser *ps, const char *key, const char *value, unsigned line) {
        int f;

        if (streq(key, "class")) {
                _cleanup_strv_free_ char **l = NULL;
                int k = strv_split_ws(value, _POLICY_CLASS_MAX, &l);

                if (k == -E2BIG)
                        return perr(ps, line, "bad-value", "too many classes in '%s'", value);
                if (k < 0)
                        return k;
                if (!l[0])
                        return perr(ps, line, "bad-value", "%s", "'class' needs a value");
                for (char **c = l; *c; c++) {
                        int i = table_lookup(class_names, _POLICY_CLASS_MAX, *c);

                        if (i < 0)
                                return bad_enum(ps, line, "class", *c, class_names);
                        ps->p->match.classes |= 1u << i;
                }
                if (!ps->p->match.class_line)
                        ps->p->match.class_line = line;
                return 0;
        }
        f = table_lookup(field_names, _POLICY_MATCH_FIELD_MAX, key);
        if (f < 0)
                return 0;
        return add_pattern(ps, (PolicyMatchField) f, value, line);
}

static int key_place(Parser *ps, const char *key, const char *value, unsigned line) {
        PolicyPlace *pl = &ps->p->place;
        int k, i;

        if ((k = once(ps, line, key)) != 0)
                return MIN(k, 0);
        if (streq(key, "group")) {
                if (!valid_word(value, POLICY_NAME_MAX, "-_.") || value[0] == '.' || startswith(value, "cgroup."))
                        return perr(ps, line, strlen(value) > POLICY_NAME_MAX ? "limit" : "bad-value",
                                    "invalid group '%s': a cgroup directory name of 1 to %u letters, digits, '-', "
                                    "'_' or '.', not starting with '.' or 'cgroup.'",
                                    value, POLICY_NAME_MAX);
                free(pl->group);
                if (!(pl->group = strdup(value)))
                        return -ENOMEM;
                pl->group_line = line;
        } else if (streq(key, "cookie")) {
                if ((i = table_lookup(cookie_names, _POLICY_COOKIE_MAX, value)) < 0)
                        return bad_enum(ps, line, key, value, cookie_names);
                pl->cookie = (PolicyCookie) i;
                pl->cookie_line = line;
        } else if (streq(key, "cpus")) {
                if (isdigit((unsigned char) value[0])) {
                        _cleanup_(bitmap_freep) Bitmap *b = NULL;

                        k = bitmap_parse_list(value, &b);
                        if (k == -ENOMEM)
                                return k;
                        if (k < 0)
                                return perr(ps, line, k == -ERANGE ? "out-of-range" : "bad-value",
                                            "invalid cpu list '%s': expected e.g. '0-3,8'", value);
                        if (bitmap_is_empty(b))
                                return perr(ps, line, "bad-value", "cpu list '%s' is empty", value);
                        bitmap_free(pl->cpu_list);
                        pl->cpu_list = TAKE_PTR(b);
                        pl->cpus = POLICY_CPUS_EXPLICIT;
                } else {
                        static const char *const choices[] = { "llc", "node", "package", "all", NULL };

                        if ((i = table_lookup(choices, 4, value)) < 0)
                                return bad_enum(ps, line, "cpus (or a cpu list)", value, choices);
                        pl->cpus = (PolicyCpus) i;
                }
                pl->cpus_line = line;
        } else if (streq(key, "spread")) {
                if ((i = table_lookup(spread_names, _POLICY_SPREAD_MAX, value)) < 0)
                        return bad_enum(ps, line, key, value, spread_names);
                pl->spread = (PolicySpread) i;
                pl->spread_line = line;
        } else if (streq(key, "exclusive")) {
                if ((k = parse_bool(value)) < 0)
                        return perr(ps, line, "bad-value", "invalid exclusive '%s': expected yes or no", value);
                pl->exclusive = k;
                pl->exclusive_line = line;
        } else if (streq(key, "weight")) {
                uint64_t u;

                k = parse_uint(value, POLICY_WEIGHT_MAX, &u);
                if (k >= 0 && u < POLICY_WEIGHT_MIN)
                        k = -ERANGE;
                if (k < 0)
                        return perr(ps, line, k == -ERANGE ? "out-of-range" : "bad-value",
                                    "invalid weight '%s': expected an integer from %u to %u", value,
                                    POLICY_WEIGHT_MIN, POLICY_WEIGHT_MAX);
                pl->weight = (unsigned) u;
                pl->weight_line = line;
        }
        return 0;
}

static int key_kernel(Parser *ps, const char *key, const char *value, unsigned line) {
        int k;

        if ((k = once(ps, line, key)) != 0)
                return MIN(k, 0);
        /* A free word: the kernel's own list decides (a warning in
         * policy-check), so a new mode needs no new topod. */
        if (!valid_word(value, POLICY_NAME_MAX, "_-"))
                return perr(ps, line, "bad-value", "invalid cgroup_mode '%s': expected one word such as concur or keep",
                            value);
        free(ps->p->cgroup_mode);
        ps->p->cgroup_mode = NULL;
        if (!streq(value, "keep") && !(ps->p->cgroup_mode = strdup(value)))
                return -ENOMEM;
        ps->p->cgroup_mode_line = line;
        return 0;
}

static int key_feature(Parser *ps, const char *key, const char *value, unsigned line) {
        Policy *p = ps->p;
        PolicyFeature *n;
        char *name;
        int on;

        if (!valid_word(key, POLICY_NAME_MAX, "_"))
                return perr(ps, line, strlen(key) > POLICY_NAME_MAX ? "limit" : "bad-value",
                            "invalid feature name '%s': sched_feat names are letters, digits and '_'", key);
        for (const char *c = key; *c; c++)
                if (islower((unsigned char) *c)) {
                        _cleanup_free_ char *up = strdup(key);

                        if (!up)
                                return -ENOMEM;
                        for (char *u = up; *u; u++)
                                *u = (char) toupper((unsigned char) *u);
                        return perr(ps, line, "bad-value",
                                    "feature names are upper case as the kernel lists them; did you mean '%s'?", up);
                }
        on = parse_bool(value);
        if (startswith(key, "NO_"))
                return perr(ps, line, "bad-value", "write '%s = %s' rather than '%s = %s'; did you mean '%s'?", key + 3,
                            on == 0 ? "on" : "off", key, value, key + 3);
        if (on < 0)
                return perr(ps, line, "bad-value", "invalid value '%s' for feature %s: expected on or off", value, key);
        for (size_t i = 0; i < p->n_features; i++)
                if (streq(p->features[i].name, key))
                        return perr(ps, line, p->features[i].on == on ? "duplicate-key" : "contradiction",
                                    "feature %s is set twice (first at line %u%s)", key, p->features[i].line,
                                    p->features[i].on == on ? "" : ", to the opposite value");
        if (p->n_features >= POLICY_FEATURES_MAX) {
                if (ps->features_limit_reported)
                        return 0;
                ps->features_limit_reported = true;
                return perr(ps, line, "limit", "more than %u [features] lines", POLICY_FEATURES_MAX);
        }
        name = strdup(key);
        if (!name)
                return -ENOMEM;
        n = realloc(p->features, (p->n_features + 1) * sizeof(PolicyFeature));
        if (!n) {
                free(name);
                return -ENOMEM;
        }
        p->features = n;
        p->features[p->n_features++] = (PolicyFeature) { .name = name, .on = on, .line = line };
        return 0;
}

static int on_key(void *userdata, const char *section, const char *rawkey, const char *value, unsigned line) {
        Parser *ps = userdata;
        char key[256];
        PolicyCmp cmp = POLICY_CMP_EQ;
        bool has_cmp = false;
        size_t n;
        int k;

        (void) section;
        if (ps->section == SECTION_UNKNOWN)
                return 0; /* reported once at the header */
        if (ps->section == SECTION_NONE)
                return perr(ps, line, "syntax", "'%s' is outside any section; start with [policy]", rawkey);

        n = strlen(rawkey);
        if (n >= sizeof key)
                return perr(ps, line, "unknown-key", "unknown key '%.*s…' in [%s]", 20, rawkey, section_names[ps->section]);
        memcpy(key, rawkey, n + 1);

        /* "llcs >= 4" reaches us as key "llcs >" and value "4". */
        if (n > 0 && strchr("<>!", key[n - 1])) {
                char op = key[n - 1];

                key[--n] = '\0';
                while (n > 0 && isspace((unsigned char) key[n - 1]))
                        key[--n] = '\0';
                cmp = op == '<' ? POLICY_CMP_LE : op == '>' ? POLICY_CMP_GE : POLICY_CMP_NE;
                has_cmp = true;
        }
        if (ps->section == SECTION_WHEN) {
                PolicyCmp c2;

                if (parse_cmp_prefix(&value, &c2)) {
                        if (has_cmp)
                                return perr(ps, line, "syntax", "two comparisons in '%s %s'", rawkey, value);
                        cmp = c2;
                        has_cmp = true;
                }
        }

        if (has_cmp && ps->section != SECTION_WHEN)
                return perr(ps, line, "syntax", "comparison in '%s %s' outside [when]", rawkey, value);

        if (section_keys[ps->section] && table_lookup(section_keys[ps->section],
                                                      strv_length((char *const *) section_keys[ps->section]), key) < 0) {
                const char *close = diag_closest(key, section_keys[ps->section]);

                if (!close)
                        for (size_t s = 0; s < _SECTION_MAX && !close; s++)
                                if (section_keys[s] && table_lookup(section_keys[s],
                                                                    strv_length((char *const *) section_keys[s]), key) >= 0)
                                        return perr(ps, line, "unknown-key", "unknown key '%s' in [%s]; it belongs in [%s]",
                                                    key, section_names[ps->section], section_names[s]);
                if (close)
                        return perr(ps, line, "unknown-key", "unknown key '%s' in [%s]; did you mean '%s'?", key,
                                    section_names[ps->section], close);
                return perr(ps, line, "unknown-key", "unknown key '%s' in [%s]", key, section_names[ps->section]);
        }
        if (ps->section == SECTION_POLICY && (k = once(ps, line, key)) != 0)
                return MIN(k, 0);
        if (!*value)
                return perr(ps, line, "bad-value", "'%s' needs a value", key);

        switch (ps->section) {
        case SECTION_POLICY:
                return key_policy(ps, key, value, line);
        case SECTION_WHEN:
                return key_when(ps, key, cmp, has_cmp, value, line);
        case SECTION_MATCH:
                return key_match(ps, key, value, line);
        case SECTION_PLACE:
                return key_place(ps, key, value, line);
        case SECTION_KERNEL:
                return key_kernel(ps, key, value, line);
        case SECTION_FEATURES:
                return key_feature(ps, key, value, line);
        default:
                return 0;
        }
}

/* What no single line is wrong about, but the file as a whole is. */
static int check_whole(Parser *ps) {
        Policy *p = ps->p;
        int k;

        if (!p->name)
                return perr(ps, ps->section_line[SECTION_POLICY], "missing-name", "%s",
                            ps->section_line[SECTION_POLICY] ? "[policy] has no 'name'"
                                                             : "no [policy] section with a 'name'");
        if (p->has_when && !policy_when_satisfiable(&p->when)) {
                /* Name the lines involved. */
                for (PolicyWhenKind kind = 0; kind < _POLICY_WHEN_KIND_MAX; kind++) {
                        PolicyWhen one = { .conditions = p->when.conditions, .n_conditions = 0 };
                        _cleanup_free_ PolicyCondition *sel = calloc(p->when.n_conditions + 1, sizeof(PolicyCondition));

                        if (!sel)
                                return -ENOMEM;
                        for (size_t i = 0; i < p->when.n_conditions; i++)
                                if (p->when.conditions[i].kind == kind)
                                        sel[one.n_conditions++] = p->when.conditions[i];
                        one.conditions = sel;
                        if (!policy_when_satisfiable(&one))
                                if ((k = perr(ps, sel[one.n_conditions - 1].line, "contradiction",
                                              "the [when] conditions on %s (lines %u to %u) can never all hold",
                                              when_kind_names[kind], sel[0].line, sel[one.n_conditions - 1].line)) < 0)
                                        return k;
                }
        }
        if (p->place.present) {
                size_t n_rules = 0;

                for (size_t f = 0; f < _POLICY_MATCH_FIELD_MAX; f++)
                        n_rules += p->match.fields[f].n;
                if (n_rules == 0 && p->match.classes == 0)
                        if ((k = perr(ps, p->place.line, "missing-match", "%s",
                                      "[place] without a [match] rule would move every task on the machine")) < 0)
                                return k;
                if (p->place.exclusive && p->place.cpus == POLICY_CPUS_ALL)
                        if ((k = perr(ps, p->place.exclusive_line, "contradiction", "%s",
                                      "exclusive = yes with cpus = all leaves no CPU for anything else")) < 0)
                                return k;
                if (p->place.cookie != POLICY_COOKIE_NONE && p->when.smt == POLICY_SMT_OFF)
                        if ((k = perr(ps, p->place.cookie_line, "contradiction",
                                      "cookie = %s does nothing when the policy only holds with smt = off (line %u)",
                                      cookie_names[p->place.cookie], p->when.smt_line)) < 0)
                                return k;
        }
        if (!p->place.present && !p->cgroup_mode && p->n_features == 0 && !ps->section_line[SECTION_KERNEL])
                if ((k = pwarn(ps, ps->section_line[SECTION_POLICY], "noop", "%s",
                               "the policy does nothing: it has no [place], [kernel] cgroup_mode or [features]")) < 0)
                        return k;
        return 0;
}

int policy_parse(const char *text, size_t len, const char *file, Diagnostics *d, Policy **ret) {
        static const IniTextCallbacks cb = { .section = on_section, .key = on_key };
        _cleanup_(policy_freep) Policy *p = NULL;
        Parser ps;
        const char *slash;
        int k;

        if (!file)
                file = "<input>";
        if (len > POLICY_FILE_SIZE_MAX) {
                k = diag_add(d, DIAG_ERROR, file, 0, "limit", "file is %zu bytes, larger than the limit of %u", len,
                             POLICY_FILE_SIZE_MAX);
                return k < 0 ? k : -EFBIG;
        }
        p = calloc(1, sizeof(Policy));
        if (!p)
                return -ENOMEM;
        p->file = strdup(file);
        if (!p->file)
                return -ENOMEM;
        slash = strrchr(p->file, '/');
        p->file_name = slash ? slash + 1 : p->file;
        p->priority = POLICY_PRIORITY_DEFAULT;
        p->enabled = true;
        p->place.weight = POLICY_WEIGHT_DEFAULT;
        p->place.cpus = POLICY_CPUS_ALL;
        p->place.spread = POLICY_SPREAD_PACK;
        p->place.cookie = POLICY_COOKIE_NONE;

        ps = (Parser) { .p = p, .d = d, .file = file, .section = SECTION_NONE, .errors_before = d->n_errors };
        k = initext_parse(text, len, file, d, &cb, &ps);
        if (k < 0)
                return k;
        if (d->n_errors == ps.errors_before) {
                k = check_whole(&ps);
                if (k < 0)
                        return k;
        }
        if (d->n_errors != ps.errors_before)
                return -EINVAL;
        if (p->place.present && !p->place.group) {
                p->place.group = strdup(p->name);
                if (!p->place.group)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(p);
        return 0;
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

/* ── Evaluation ── */

bool policy_cmp_holds(PolicyCmp cmp, uint64_t lhs, uint64_t rhs) {
        switch (cmp) {
        case POLICY_CMP_EQ:
                return lhs == rhs;
        case POLICY_CMP_NE:
                return lhs != rhs;
        case POLICY_CMP_LT:
                return lhs < rhs;
        case POLICY_CMP_LE:
                return lhs <= rhs;
        case POLICY_CMP_GT:
                return lhs > rhs;
        case POLICY_CMP_GE:
                return lhs >= rhs;
        default:
                return false;
        }
}

static bool condition_holds(const PolicyCondition *c, uint64_t v) {
        /* "kernel != 6.6" compares major.minor only (see key_when()). */
        if (c->kind == POLICY_WHEN_KERNEL && c->cmp == POLICY_CMP_NE && (c->value & 0xffff) == 0xffff)
                return (v | 0xffff) != c->value;
        return policy_cmp_holds(c->cmp, v, c->value);
}

bool policy_when_holds(const PolicyWhen *w, const PolicyMachine *m) {
        if (w->has_load && (!m->has_load || m->load < w->load_low || m->load > w->load_high))
                return false;
        return policy_when_holds_but_load(w, m);
}

bool policy_when_holds_but_load(const PolicyWhen *w, const PolicyMachine *m) {
        if (w->smt == POLICY_SMT_ON && !m->smt)
                return false;
        if (w->smt == POLICY_SMT_OFF && m->smt)
                return false;
        if (w->vendors && (!m->vendor || !strv_contains(w->vendors, m->vendor)))
                return false;
        for (size_t i = 0; i < w->n_conditions; i++) {
                const PolicyCondition *c = &w->conditions[i];
                uint64_t v;

                switch (c->kind) {
                case POLICY_WHEN_LLCS:
                        v = m->n_llcs;
                        break;
                case POLICY_WHEN_NODES:
                        v = m->n_nodes;
                        break;
                case POLICY_WHEN_PACKAGES:
                        v = m->n_packages;
                        break;
                case POLICY_WHEN_CPUS:
                        v = m->n_cpus;
                        break;
                case POLICY_WHEN_KERNEL:
                        if (m->kernel == 0)
                                return false;
                        v = m->kernel;
                        break;
                default:
                        return false;
                }
                if (!condition_holds(c, v))
                        return false;
        }
        return true;
}

bool policy_load_band_update(PolicyLoadBand *b, const PolicyWhen *w, unsigned load, unsigned hysteresis,
                             uint64_t dwell_usec, uint64_t now_usec) {
        bool inside = load >= w->load_low && load <= w->load_high, flip;

        if (!b->started) {
                *b = (PolicyLoadBand) { .holds = inside, .started = true };
                return b->holds;
        }
        /* Held: left only beyond the hysteresis. Not held: entered inside. */
        flip = b->holds ? load + hysteresis < w->load_low || load > w->load_high + hysteresis : inside;
        if (!flip) {
                b->pending = false;
                return b->holds;
        }
        if (!b->pending) {
                b->pending = true;
                b->since_usec = now_usec;
        }
        if (now_usec - MIN(b->since_usec, now_usec) >= dwell_usec) {
                b->holds = !b->holds;
                b->pending = false;
        }
        return b->holds;
}

/* The values a list of conditions of one kind allows, as an interval;
 * false when none. != is only exact for single points. */
static bool conditions_interval(const PolicyCondition *const *cs, size_t n, uint64_t *ret_lo, uint64_t *ret_hi) {
        uint64_t lo = 0, hi = UINT64_MAX;

        for (size_t i = 0; i < n; i++) {
                uint64_t v = cs[i]->value;

                switch (cs[i]->cmp) {
                case POLICY_CMP_EQ:
                        lo = MAX(lo, v);
                        hi = MIN(hi, v);
                        break;
                case POLICY_CMP_LT:
                        if (v == 0)
                                return false;
                        hi = MIN(hi, v - 1);
                        break;
                case POLICY_CMP_LE:
                        hi = MIN(hi, v);
                        break;
                case POLICY_CMP_GT:
                        if (v == UINT64_MAX)
                                return false;
                        lo = MAX(lo, v + 1);
                        break;
                case POLICY_CMP_GE:
                        lo = MAX(lo, v);
                        break;
                default:
                        break;
                }
        }
        if (lo > hi)
                return false;
        for (size_t i = 0; i < n; i++)
                if (cs[i]->cmp == POLICY_CMP_NE && lo == hi && condition_holds(cs[i], lo) == false)
                        return false;
        *ret_lo = lo;
        *ret_hi = hi;
        return true;
}

static bool kinds_satisfiable(const PolicyWhen *a, const PolicyWhen *b) {
        const PolicyCondition *sel[2 * POLICY_WHEN_MAX];

        for (PolicyWhenKind kind = 0; kind < _POLICY_WHEN_KIND_MAX; kind++) {
                size_t n = 0;
                uint64_t lo, hi;

                for (size_t i = 0; i < a->n_conditions && n < ELEMENTSOF(sel); i++)
                        if (a->conditions[i].kind == kind)
                                sel[n++] = &a->conditions[i];
                for (size_t i = 0; b && i < b->n_conditions && n < ELEMENTSOF(sel); i++)
                        if (b->conditions[i].kind == kind)
                                sel[n++] = &b->conditions[i];
                if (n > 0 && !conditions_interval(sel, n, &lo, &hi))
                        return false;
        }
        return true;
}

bool policy_when_satisfiable(const PolicyWhen *w) {
        if (w->has_load && w->load_low > w->load_high)
                return false;
        return kinds_satisfiable(w, NULL);
}

bool policy_when_may_overlap(const PolicyWhen *a, const PolicyWhen *b) {
        if (a->smt != POLICY_SMT_ANY && b->smt != POLICY_SMT_ANY && a->smt != b->smt)
                return false;
        if (a->has_load && b->has_load && (a->load_high < b->load_low || b->load_high < a->load_low))
                return false;
        if (a->vendors && b->vendors) {
                bool common = false;

                for (char **v = a->vendors; *v && !common; v++)
                        common = strv_contains(b->vendors, *v);
                if (!common)
                        return false;
        }
        return kinds_satisfiable(a, b);
}

static bool patterns_equal(const PolicyPatterns *a, const PolicyPatterns *b) {
        /* Same set, in any order; patterns within one list are distinct. */
        if (a->n != b->n)
                return false;
        for (size_t i = 0; i < a->n; i++) {
                bool found = false;

                for (size_t j = 0; j < b->n && !found; j++)
                        found = streq(a->items[i].glob, b->items[j].glob);
                if (!found)
                        return false;
        }
        return true;
}

bool policy_match_equal(const PolicyMatch *a, const PolicyMatch *b) {
        if (a->classes != b->classes)
                return false;
        for (size_t f = 0; f < _POLICY_MATCH_FIELD_MAX; f++)
                if (!patterns_equal(&a->fields[f], &b->fields[f]))
                        return false;
        return true;
}

static bool patterns_match(const PolicyPatterns *pp, const char *s) {
        if (!s)
                return false;
        for (size_t i = 0; i < pp->n; i++)
                if (pp->items[i].literal ? streq(pp->items[i].glob, s) : fnmatch(pp->items[i].glob, s, 0) == 0)
                        return true;
        return false;
}

bool policy_match_task(const PolicyMatch *m, const PolicyTask *t) {
        if (m->classes && !(t->class >= 0 && t->class < _POLICY_CLASS_MAX && (m->classes & (1u << t->class))))
                return false;
        for (size_t f = 0; f < _POLICY_MATCH_FIELD_MAX; f++) {
                const PolicyPatterns *pp = &m->fields[f];
                const char *v = NULL;

                if (pp->n == 0)
                        continue;
                switch ((PolicyMatchField) f) {
                case POLICY_MATCH_COMM:
                        v = t->comm;
                        break;
                case POLICY_MATCH_EXE:
                        v = t->exe;
                        break;
                case POLICY_MATCH_CMDLINE:
                        v = t->cmdline;
                        break;
                case POLICY_MATCH_CGROUP:
                        v = t->cgroup;
                        break;
                case POLICY_MATCH_USER: {
                        char uid[16];

                        snprintf(uid, sizeof uid, "%" PRIu32, t->uid);
                        if (patterns_match(pp, t->user) || patterns_match(pp, uid))
                                continue;
                        return false;
                }
                case POLICY_MATCH_PARENT:
                        v = t->parent;
                        break;
                default:
                        return false;
                }
                if (!patterns_match(pp, v))
                        return false;
        }
        return true;
}

int policy_set_select(const PolicySet *s, const bool *in_force, const PolicyTask *t) {
        for (size_t i = 0; i < s->n; i++) {
                const Policy *p = s->policies[i];

                if (!in_force[i] || !p->enabled || !p->place.present)
                        continue;
                if (policy_match_task(&p->match, t))
                        return (int) i;
        }
        return -1;
}

struct PolicyIndex {
        PolicyIndexKey *names;  /* sorted by name, then policy */
        size_t n_names;
        PolicyIndexKey *starts; /* sorted by start, then policy */
        size_t n_starts;
        uint64_t start_lens; /* bit n: a start of n bytes (n < 64) */
        bool long_starts;    /* a start of 64 bytes or more */
        size_t *unnamed;     /* ascending */
        size_t n_unnamed;
        size_t *taken;       /* every policy made over, ascending */
        size_t n_taken;
};

PolicyIndex *policy_index_free(PolicyIndex *x) {
        if (!x)
                return NULL;
        free(x->names);
        free(x->starts);
        free(x->unnamed);
        free(x->taken);
        free(x);
        return NULL;
}

/* A plain name (*ret_len: its length, *ret_start false), or a plain start
 * and a final '*' (*ret_start true, *ret_len without the '*'), or neither. */
static bool keyed_pattern(const PolicyPattern *pat, size_t *ret_len, bool *ret_start) {
        size_t n = strlen(pat->glob);

        if (pat->literal) {
                *ret_len = n;
                *ret_start = false;
                return true;
        }
        if (n == 0 || pat->glob[n - 1] != '*' || glob_plain_prefix(pat->glob) != n - 1)
                return false;
        *ret_len = n - 1;
        *ret_start = true;
        return true;
}

static bool keyed_by_comm(const PolicyPatterns *comm) {
        size_t len;
        bool start;

        for (size_t j = 0; j < comm->n; j++)
                if (!keyed_pattern(&comm->items[j], &len, &start))
                        return false;
        return comm->n > 0;
}

static int compare_bytes(const char *a, size_t na, const char *b, size_t nb) {
        int c = memcmp(a, b, MIN(na, nb));

        return c != 0 ? c : (na > nb) - (na < nb);
}

static int compare_keys(const void *a, const void *b) {
        const PolicyIndexKey *x = a, *y = b;
        int c = compare_bytes(x->key, x->len, y->key, y->len);

        return c != 0 ? c : (x->policy > y->policy) - (x->policy < y->policy);
}

int policy_index_new(const PolicySet *s, const bool *take, PolicyIndex **ret) {
        _cleanup_(policy_index_freep) PolicyIndex *x = calloc(1, sizeof(PolicyIndex));
        size_t n_keys = 0, n_unnamed = 0;

        if (!x)
                return -ENOMEM;
        for (size_t i = 0; i < s->n; i++) {
                const PolicyPatterns *comm = &s->policies[i]->match.fields[POLICY_MATCH_COMM];

                if (take && !take[i])
                        continue;
                if (keyed_by_comm(comm))
                        n_keys += comm->n;
                else
                        n_unnamed++;
        }
        x->names = calloc(MAX(n_keys, (size_t) 1), sizeof(PolicyIndexKey));
        x->starts = calloc(MAX(n_keys, (size_t) 1), sizeof(PolicyIndexKey));
        x->unnamed = calloc(MAX(n_unnamed, (size_t) 1), sizeof(size_t));
        x->taken = calloc(MAX(s->n, (size_t) 1), sizeof(size_t));
        if (!x->names || !x->starts || !x->unnamed || !x->taken)
                return -ENOMEM;
        for (size_t i = 0; i < s->n; i++) {
                const PolicyPatterns *comm = &s->policies[i]->match.fields[POLICY_MATCH_COMM];

                if (take && !take[i])
                        continue;
                x->taken[x->n_taken++] = i;
                if (!keyed_by_comm(comm)) {
                        x->unnamed[x->n_unnamed++] = i;
                        continue;
                }
                for (size_t j = 0; j < comm->n; j++) {
                        PolicyIndexKey k = { comm->items[j].glob, 0, i };
                        bool start = false;

                        (void) keyed_pattern(&comm->items[j], &k.len, &start);
                        if (!start) {
                                x->names[x->n_names++] = k;
                                continue;
                        }
                        x->starts[x->n_starts++] = k;
                        if (k.len < 64)
                                x->start_lens |= UINT64_C(1) << k.len;
                        else
                                x->long_starts = true;
                }
        }
        qsort(x->names, x->n_names, sizeof(PolicyIndexKey), compare_keys);
        qsort(x->starts, x->n_starts, sizeof(PolicyIndexKey), compare_keys);
        *ret = TAKE_PTR(x);
        return 0;
}

/* The keys equal to the first len bytes of s (a range sorted by policy). */
static size_t find_keys(const PolicyIndexKey *keys, size_t n, const char *s, size_t len, const PolicyIndexKey **ret) {
        size_t lo = 0, hi = n, m = 0;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (compare_bytes(keys[mid].key, keys[mid].len, s, len) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        while (lo + m < n && compare_bytes(keys[lo + m].key, keys[lo + m].len, s, len) == 0)
                m++;
        *ret = keys + lo;
        return m;
}

static bool walk_add(PolicyWalk *w, const PolicyIndexKey *at, size_t n) {
        if (n == 0)
                return true;
        if (w->n_ranges >= POLICY_WALK_RANGES)
                return false;
        w->range[w->n_ranges].at = at;
        w->range[w->n_ranges++].n = n;
        return true;
}

PolicyWalk policy_index_walk(const PolicyIndex *x, const char *comm) {
        PolicyWalk w = { .unnamed = x->unnamed, .n_unnamed = x->n_unnamed, .last = SIZE_MAX };
        const PolicyWalk all = { .unnamed = x->taken, .n_unnamed = x->n_taken, .last = SIZE_MAX };
        const PolicyIndexKey *at;
        size_t len, n;

        if (!comm)
                return all;
        len = strlen(comm);
        n = find_keys(x->names, x->n_names, comm, len, &at);
        if (!walk_add(&w, at, n))
                return all;
        for (size_t k = 0; k <= len && x->n_starts > 0; k++) {
                if (k < 64 ? !(x->start_lens & (UINT64_C(1) << k)) : !x->long_starts)
                        continue;
                n = find_keys(x->starts, x->n_starts, comm, k, &at);
                if (!walk_add(&w, at, n))
                        return all; /* more than a comm can hit: every policy, then */
        }
        return w;
}

bool policy_walk_next(PolicyWalk *w, size_t *ret) {
        size_t best = SIZE_MAX, from = SIZE_MAX;

        /* The lowest policy at the head of a range, or of the unnamed; a
         * policy in several ranges (two of its patterns hit) comes once. */
        for (size_t r = 0; r < w->n_ranges; r++) {
                while (w->range[r].n > 0 && w->range[r].at->policy == w->last) {
                        w->range[r].at++;
                        w->range[r].n--;
                }
                if (w->range[r].n > 0 && w->range[r].at->policy < best) {
                        best = w->range[r].at->policy;
                        from = r;
                }
        }
        if (w->n_unnamed > 0 && *w->unnamed < best) {
                best = *w->unnamed;
                w->unnamed++;
                w->n_unnamed--;
        } else if (from != SIZE_MAX) {
                w->range[from].at++;
                w->range[from].n--;
        } else
                return false;
        *ret = w->last = best;
        return true;
}

static int add_conflict(PolicyKernelPlan *plan, const char *what, const char *name, size_t winner, size_t loser) {
        PolicyConflict *n;
        char *w;

        if (name ? asprintf(&w, "%s %s", what, name) < 0 : !(w = strdup(what)))
                return -ENOMEM;
        n = realloc(plan->conflicts, (plan->n_conflicts + 1) * sizeof(PolicyConflict));
        if (!n) {
                free(w);
                return -ENOMEM;
        }
        plan->conflicts = n;
        plan->conflicts[plan->n_conflicts++] = (PolicyConflict) { .what = w, .winner = winner, .loser = loser };
        return 0;
}

int policy_set_resolve_kernel(const PolicySet *s, const bool *in_force, PolicyKernelPlan **ret) {
        _cleanup_(policy_kernel_plan_freep) PolicyKernelPlan *plan = calloc(1, sizeof(PolicyKernelPlan));
        int k;

        if (!plan)
                return -ENOMEM;
        plan->cgroup_mode_policy = -1;
        for (size_t i = 0; i < s->n; i++) {
                const Policy *p = s->policies[i];

                if (!in_force[i] || !p->enabled)
                        continue;
                if (p->cgroup_mode) {
                        if (plan->cgroup_mode_policy < 0) {
                                plan->cgroup_mode = p->cgroup_mode;
                                plan->cgroup_mode_policy = (int) i;
                        } else if (!streq(plan->cgroup_mode, p->cgroup_mode) &&
                                   (k = add_conflict(plan, "cgroup_mode", NULL, (size_t) plan->cgroup_mode_policy, i)) < 0)
                                return k;
                }
                for (size_t f = 0; f < p->n_features; f++) {
                        const PolicyFeature *pf = &p->features[f];
                        size_t w;

                        for (w = 0; w < plan->n_features; w++)
                                if (streq(plan->features[w].name, pf->name))
                                        break;
                        if (w < plan->n_features) {
                                if (plan->features[w].on != pf->on &&
                                    (k = add_conflict(plan, "feature", pf->name, (size_t) plan->feature_policy[w], i)) < 0)
                                        return k;
                                continue;
                        }
                        {
                                PolicyFeature *nf = realloc(plan->features, (plan->n_features + 1) * sizeof(PolicyFeature));
                                int *np;

                                if (!nf)
                                        return -ENOMEM;
                                plan->features = nf;
                                np = realloc(plan->feature_policy, (plan->n_features + 1) * sizeof(int));
                                if (!np)
                                        return -ENOMEM;
                                plan->feature_policy = np;
                                plan->features[plan->n_features] = *pf;
                                plan->feature_policy[plan->n_features] = (int) i;
                                plan->n_features++;
                        }
                }
        }
        *ret = TAKE_PTR(plan);
        return 0;
}
