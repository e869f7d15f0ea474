/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy parser: the INI callbacks that turn one file's text into a
 * Policy, the checks of its values and of the file as a whole, and the
 * diagnostics they give. Pure, as all of decide/: text in, a Policy and
 * diagnostics out. */
#include "policy.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "decide/policy-internal.h"
#include "initext.h"

/* CPU vendors as the kernel names them: one close to these is likely a typo. */
static const char *const known_vendors[] = {
        "GenuineIntel", "AuthenticAMD", "HygonGenuine", "CentaurHauls", "  Shanghai  ", NULL,
};

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
static const char *const keys_when[] = { "smt", "llcs", "nodes", "packages", "cpus", "vendor", "kernel", "load",
                                          "forced_idle", NULL };
static const char *const keys_match[] = { "class", "comm", "exe", "cmdline", "cgroup", "user", "parent", "unit", "exclude", NULL };
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

/* A finding at a line of the file being parsed. */
#define perr(ps, line, id, ...) diag_add((ps)->d, DIAG_ERROR, (ps)->file, (line), (id), __VA_ARGS__)
#define pwarn(ps, line, id, ...) diag_add((ps)->d, DIAG_WARNING, (ps)->file, (line), (id), __VA_ARGS__)

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
        case SECTION_POLICY:
                ps->p->policy_line = line;
                break;
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

/* "kernel <cmp> VERSION". */
static int when_kernel(Parser *ps, PolicyCmp cmp, const char *value, unsigned line) {
        uint64_t v;
        int k;

        k = policy_parse_kernel_version(value, &v);
        if (k < 0)
                return perr(ps, line, k == -ERANGE ? "out-of-range" : "bad-value",
                            "invalid kernel version '%s': expected MAJOR.MINOR[.PATCH]", value);
        /* "kernel = 6.6" means any 6.6.x: compare what was written. */
        if (k == 2 && (cmp == POLICY_CMP_EQ || cmp == POLICY_CMP_NE || cmp == POLICY_CMP_GT || cmp == POLICY_CMP_LE)) {
                /* 6.6 == k  ⇔  6.6.0 <= k <= 6.6.65535; > 6.6 ⇔ > 6.6.65535 */
                if (cmp == POLICY_CMP_EQ) {
                        k = add_condition(ps, POLICY_WHEN_KERNEL, POLICY_CMP_GE, v, line);
                        if (k < 0)
                                return k;
                        return add_condition(ps, POLICY_WHEN_KERNEL, POLICY_CMP_LE, v | 0xffff, line);
                }
                if (cmp == POLICY_CMP_GT || cmp == POLICY_CMP_LE)
                        return add_condition(ps, POLICY_WHEN_KERNEL, cmp, v | 0xffff, line);
                /* != 6.6: not one interval; marked by patch 0xffff,
                 * compared with the patch masked off (policy-when.c's
                 * condition_holds()). */
                return add_condition(ps, POLICY_WHEN_KERNEL, cmp, v | 0xffff, line);
        }
        return add_condition(ps, POLICY_WHEN_KERNEL, cmp, v, line);
}

/* A count of the topology: "llcs >= 4". */
static int when_count(Parser *ps, PolicyWhenKind kind, const char *key, PolicyCmp cmp, const char *value,
                      unsigned line) {
        uint64_t v;
        int k;

        k = parse_uint(value, BITMAP_MAX_BIT + 1, &v);
        if (k < 0)
                return perr(ps, line, k == -ERANGE ? "out-of-range" : "bad-value",
                            "invalid %s '%s': expected a count, e.g. '%s >= 2'", key, value, key);
        return add_condition(ps, kind, cmp, v, line);
}

static int when_smt(Parser *ps, const char *value, unsigned line) {
        PolicyWhen *w = &ps->p->when;
        int k;

        k = parse_bool(value);
        if (k < 0)
                return perr(ps, line, "bad-value", "invalid smt '%s': expected on or off", value);
        w->smt = k ? POLICY_SMT_ON : POLICY_SMT_OFF;
        w->smt_line = line;
        return 0;
}

/* "vendor = A B": any of them; a name close to a known one is warned of. */
static int when_vendor(Parser *ps, const char *value, unsigned line) {
        _cleanup_strv_free_ char **l = NULL;
        PolicyWhen *w = &ps->p->when;
        int k;

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
                if (!strv_contains((char *const *) known_vendors, *v) && (close = diag_closest(*v, known_vendors)))
                        if ((k = pwarn(ps, line, "unknown-vendor", "unknown CPU vendor '%s'; did you mean '%s'?", *v,
                                       close)) < 0)
                                return k;
        }
        w->vendors = TAKE_PTR(l);
        w->vendor_line = line;
        return 0;
}

/* "LOW-HIGH%": 0 and *ret_lo, *ret_hi, else -ERANGE (past max) or -EINVAL. */
static int parse_band(const char *value, unsigned max, unsigned *ret_lo, unsigned *ret_hi) {
        const char *s = value;
        unsigned lo, hi;
        int k;

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
        if (k >= 0 && (lo > max || hi > max))
                k = -ERANGE;
        if (k < 0)
                return k;
        *ret_lo = lo;
        *ret_hi = hi;
        return 0;
}

/* A band of [when]: "load = LOW-HIGH%" (0 to POLICY_LOAD_MAX) or
 * "forced_idle = LOW-HIGH%" (0 to 100, of the CPU time of the policy's
 * groups). */
typedef struct WhenBand {
        const char *key, *what, *example;
        unsigned max;
} WhenBand;

static int when_band(Parser *ps, const WhenBand *b, const char *value, unsigned line, bool *ret_has, unsigned *ret_lo,
                     unsigned *ret_hi, unsigned *ret_line) {
        unsigned lo, hi;
        int k = parse_band(value, b->max, &lo, &hi);

        if (k == -ERANGE)
                return perr(ps, line, "out-of-range", "%s band '%s' goes past %u%%", b->what, value, b->max);
        if (k < 0)
                return perr(ps, line, "bad-value", "invalid %s '%s': expected a band like '%s'", b->key, value, b->example);
        if (lo > hi)
                return perr(ps, line, "bad-value", "%s band '%s' is empty: %u%% is above %u%%", b->what, value, lo, hi);
        *ret_has = true;
        *ret_lo = lo;
        *ret_hi = hi;
        *ret_line = line;
        return 0;
}

static int when_forced_idle(Parser *ps, const char *value, unsigned line) {
        static const WhenBand b = { "forced_idle", "forced idle", "0-10%", 100 };
        PolicyWhen *w = &ps->p->when;

        return when_band(ps, &b, value, line, &w->has_forced_idle, &w->forced_idle_low, &w->forced_idle_high,
                         &w->forced_idle_line);
}

static int when_load(Parser *ps, const char *value, unsigned line) {
        static const WhenBand b = { "load", "load", "0-85%", POLICY_LOAD_MAX };
        PolicyWhen *w = &ps->p->when;

        return when_band(ps, &b, value, line, &w->has_load, &w->load_low, &w->load_high, &w->load_line);
}

/* A [when] line: a comparison of a count or the kernel's version
 * (repeatable: every one must hold), or smt, vendor or load (once each,
 * with '=' only). */
static int key_when(Parser *ps, const char *key, PolicyCmp cmp, bool has_cmp, const char *value, unsigned line) {
        int k, kind;

        kind = table_lookup(policy_when_kind_names, _POLICY_WHEN_KIND_MAX, key);
        if (kind == POLICY_WHEN_KERNEL)
                return when_kernel(ps, has_cmp ? cmp : POLICY_CMP_EQ, value, line);
        if (kind >= 0)
                return when_count(ps, (PolicyWhenKind) kind, key, has_cmp ? cmp : POLICY_CMP_EQ, value, line);

        if (has_cmp && cmp != POLICY_CMP_EQ)
                return perr(ps, line, "bad-value", "'%s' takes no comparison, only '%s = …'", key, key);
        if ((k = once(ps, line, key)) != 0)
                return MIN(k, 0);
        if (streq(key, "smt"))
                return when_smt(ps, value, line);
        if (streq(key, "vendor"))
                return when_vendor(ps, value, line);
        if (streq(key, "load"))
                return when_load(ps, value, line);
        if (streq(key, "forced_idle"))
                return when_forced_idle(ps, value, line);
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

/* A [scope]-style list of a [match] key into *ret: 1, or 0 when the
 * value is an error (reported at its line), or -ENOMEM. */
static int parse_list(Parser *ps, const char *key, const char *value, unsigned line, ScopePatterns *ret) {
        char error[200];
        int k = scope_patterns_parse(value, ret, error, sizeof error);

        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return MIN(perr(ps, line, k == -E2BIG ? "limit" : "bad-value", "invalid %s: %s", key, error), 0);
        return 1;
}

/* exclude =: a [scope]-style list; set again, the patterns add up. */
static int match_exclude(Parser *ps, const char *value, unsigned line) {
        _cleanup_(scope_patterns_done) ScopePatterns l = {};
        ScopePatterns *ex = &ps->p->match.exclude;
        ScopePattern *m;
        int k = parse_list(ps, "exclude", value, line, &l);

        if (k <= 0)
                return k;
        if (ex->n + l.n > SCOPE_PATTERNS_MAX)
                return perr(ps, line, "limit", "more than %u exclude patterns", SCOPE_PATTERNS_MAX);
        m = realloc(ex->items, MAX(ex->n + l.n, (size_t) 1) * sizeof(ScopePattern));
        if (!m)
                return -ENOMEM;
        memcpy(m + ex->n, l.items, l.n * sizeof(ScopePattern));
        ex->items = m;
        ex->n += l.n;
        l.items = mfree(l.items); /* the globs are ex's now */
        l.n = 0;
        if (!ps->p->match.exclude_line)
                ps->p->match.exclude_line = line;
        return 0;
}

/* unit =: space-separated unit-name globs, as [scope] takes them; each
 * one a pattern of its own (a repeated key is OR). */
static int match_units(Parser *ps, const char *value, unsigned line) {
        _cleanup_(scope_patterns_done) ScopePatterns l = {};
        int k = parse_list(ps, "unit", value, line, &l);

        if (k <= 0)
                return k;
        if (l.n == 0)
                return perr(ps, line, "bad-value", "%s", "'unit' needs a value");
        for (size_t i = 0; i < l.n; i++)
                if (l.items[i].path)
                        return perr(ps, line, "bad-value",
                                    "invalid unit pattern '%s': a unit name, not a cgroup path (cgroup = takes paths)",
                                    l.items[i].glob);
        for (size_t i = 0; i < l.n; i++)
                if ((k = add_pattern(ps, POLICY_MATCH_UNIT, l.items[i].glob, line)) < 0)
                        return k;
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
                        int i = table_lookup(policy_class_names, _POLICY_CLASS_MAX, *c);

                        if (i < 0)
                                return bad_enum(ps, line, "class", *c, policy_class_names);
                        ps->p->match.classes |= 1u << i;
                }
                if (!ps->p->match.class_line)
                        ps->p->match.class_line = line;
                return 0;
        }
        if (streq(key, "exclude"))
                return match_exclude(ps, value, line);
        if (streq(key, "unit"))
                return match_units(ps, value, line);
        f = table_lookup(policy_field_names, _POLICY_MATCH_FIELD_MAX, key);
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
                if ((i = table_lookup(policy_cookie_names, _POLICY_COOKIE_MAX, value)) < 0)
                        return bad_enum(ps, line, key, value, policy_cookie_names);
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
                if ((i = table_lookup(policy_spread_names, _POLICY_SPREAD_MAX, value)) < 0)
                        return bad_enum(ps, line, key, value, policy_spread_names);
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

/* A scheduler setting (base/sched-settings.h): its key, or an older name
 * of it, and a value of its kind. */
static int key_setting(Parser *ps, const SchedSettingInfo *info, const char *key, const char *value, unsigned line) {
        Policy *p = ps->p;
        PolicySetting set = { .info = info, .line = line }, *n;
        int k;

        for (size_t i = 0; i < p->n_settings; i++)
                if (p->settings[i].info == info)
                        return perr(ps, line, "duplicate-key", "%s is set twice in [kernel] (first at line %u)",
                                    info->name, p->settings[i].line);
        if (sched_setting_value_parse(info->kind, value, set.value) < 0)
                return perr(ps, line, "bad-value", "invalid value '%s' for %s: expected %s", value, key,
                            info->kind == SCHED_SETTING_NUMBER ? "a number from 0 to 4294967295" :
                            info->kind == SCHED_SETTING_SWITCH ? "on or off" :
                                                                 "one word as the kernel lists them");
        if (!sched_setting_in_range(info, set.value))
                return perr(ps, line, "bad-value", "invalid value '%s' for %s: expected a number from %" PRIu32
                            " to %" PRIu32, value, key, info->min, sched_setting_max(info));
        if (!streq(key, info->name)) {
                _cleanup_free_ char *history = NULL;

                /* An older name, or tuned's sysctl name: the policy is
                 * written for another kernel. Managed under the current
                 * name, on whatever name the running kernel has. */
                if ((k = sched_setting_history(info, &history)) < 0)
                        return k;
                k = pwarn(ps, line, "renamed-setting", "'%s' is an %s name of %s; managed as %s, on the file the "
                          "running kernel has (%s)", key,
                          startswith(key, "sched_") || startswith(key, "numa_balancing_") ? "old sysctl (before 5.13)" : "older",
                          info->name, info->name, history);
                if (k < 0)
                        return k;
        }
        n = realloc(p->settings, (p->n_settings + 1) * sizeof(PolicySetting));
        if (!n)
                return -ENOMEM;
        p->settings = n;
        p->settings[p->n_settings++] = set;
        return 0;
}

static int key_kernel(Parser *ps, const char *key, const char *value, unsigned line) {
        const SchedSettingInfo *info = sched_setting_lookup(key);
        int k;

        if (info)
                return key_setting(ps, info, key, value, line);

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

static bool section_has_key(Section section, const char *key) {
        const char *const *keys = section_keys[section];

        return keys && table_lookup(keys, strv_length((char *const *) keys), key) >= 0;
}

/* A key the current section does not have: with the one it belongs in,
 * or the closest it has. */
static int unknown_key(Parser *ps, const char *key, unsigned line) {
        const char *close = diag_closest(key, section_keys[ps->section]);

        if (!close && ps->section == SECTION_KERNEL)
                close = diag_closest(key, sched_setting_keys);

        if (!close)
                for (size_t s = 0; s < _SECTION_MAX && !close; s++)
                        if (section_has_key((Section) s, key))
                                return perr(ps, line, "unknown-key", "unknown key '%s' in [%s]; it belongs in [%s]", key,
                                            section_names[ps->section], section_names[s]);
        if (close)
                return perr(ps, line, "unknown-key", "unknown key '%s' in [%s]; did you mean '%s'?", key,
                            section_names[ps->section], close);
        return perr(ps, line, "unknown-key", "unknown key '%s' in [%s]", key, section_names[ps->section]);
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

        if (section_keys[ps->section] && !section_has_key(ps->section, key) &&
            !(ps->section == SECTION_KERNEL && sched_setting_lookup(key)))
                return unknown_key(ps, key, line);
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
                                              policy_when_kind_names[kind], sel[0].line, sel[one.n_conditions - 1].line)) < 0)
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
                                      policy_cookie_names[p->place.cookie], p->when.smt_line)) < 0)
                                return k;
        }
        if (!p->place.present && !p->cgroup_mode && p->n_features == 0 && p->n_settings == 0 &&
            !ps->section_line[SECTION_KERNEL])
                if ((k = pwarn(ps, ps->section_line[SECTION_POLICY], "noop", "%s",
                               "the policy does nothing: it has no [place], [kernel] setting or [features]")) < 0)
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
