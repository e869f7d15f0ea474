/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The scope (scope.h): pattern lists, how they match a cgroup path, and
 * the rule every selection of a policy asks. */
#include "scope.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/unit-name.h"
#include "base/util.h"

#define SCOPE_UNITS_MAX 64u /* units looked at along one path */

void scope_patterns_done(ScopePatterns *p) {
        for (size_t i = 0; i < p->n; i++)
                free(p->items[i].glob);
        p->items = mfree(p->items);
        p->n = 0;
}

void scope_done(Scope *s) {
        scope_patterns_done(&s->include);
        scope_patterns_done(&s->exclude);
        scope_patterns_done(&s->protect);
}

static bool is_space(char c) {
        return c == ' ' || c == '\t';
}

/* Can a unit-name glob match a unit name at all? Its characters are a unit
 * name's or a glob's, and a plain one is a whole unit name. */
static bool unit_glob_ok(const char *g, size_t n) {
        bool magic = false;

        for (size_t i = 0; i < n; i++) {
                if (strchr("*?[]!^", g[i])) {
                        magic = true;
                        continue;
                }
                if (!((g[i] >= 'a' && g[i] <= 'z') || (g[i] >= 'A' && g[i] <= 'Z') || (g[i] >= '0' && g[i] <= '9') ||
                      strchr(":_.\\-@", g[i])))
                        return false;
        }
        return magic || unit_name_is_valid(g, n);
}

int scope_patterns_parse(const char *value, ScopePatterns *ret, char *error, size_t error_size) {
        ScopePatterns p = {};
        size_t cap = 0;
        int k = -EINVAL;

        for (const char *s = value;;) {
                size_t n;

                while (is_space(*s))
                        s++;
                if (!*s)
                        break;
                for (n = 0; s[n] && !is_space(s[n]); n++)
                        if ((unsigned char) s[n] < 0x20 || s[n] == 0x7f) {
                                snprintf(error, error_size, "a pattern contains a control character");
                                goto fail;
                        }
                if (n > SCOPE_PATTERN_LEN_MAX) {
                        snprintf(error, error_size, "pattern '%.32s...' is longer than the limit of %u", s,
                                 SCOPE_PATTERN_LEN_MAX);
                        goto fail;
                }
                if (p.n >= SCOPE_PATTERNS_MAX) {
                        snprintf(error, error_size, "more than %u patterns", SCOPE_PATTERNS_MAX);
                        k = -E2BIG;
                        goto fail;
                }
                if (memchr(s, '/', n) && s[0] != '/') {
                        snprintf(error, error_size, "cgroup pattern '%.*s' must start with '/'", (int) n, s);
                        goto fail;
                }
                if (!memchr(s, '/', n) && !unit_glob_ok(s, n)) {
                        snprintf(error, error_size,
                                 "'%.*s' matches no unit name (a unit is NAME.service, NAME.scope or NAME.slice; "
                                 "a cgroup path starts with '/')",
                                 (int) n, s);
                        goto fail;
                }
                if (p.n == cap) {
                        ScopePattern *m = realloc(p.items, (cap = cap ? cap * 2 : 4) * sizeof(ScopePattern));

                        if (!m) {
                                k = -ENOMEM;
                                goto fail;
                        }
                        p.items = m;
                }
                p.items[p.n].glob = strndup(s, n);
                if (!p.items[p.n].glob) {
                        k = -ENOMEM;
                        goto fail;
                }
                p.items[p.n++].path = memchr(s, '/', n) != NULL;
                s += n;
        }
        scope_patterns_done(ret);
        *ret = p;
        return 0;
fail:
        scope_patterns_done(&p);
        return k;
}

int scope_patterns_copy(const ScopePatterns *from, ScopePatterns *ret) {
        ScopePatterns p = {};

        if (from->n > 0) {
                p.items = calloc(from->n, sizeof(ScopePattern));
                if (!p.items)
                        return -ENOMEM;
        }
        for (; p.n < from->n; p.n++) {
                p.items[p.n] = (ScopePattern) { strdup(from->items[p.n].glob), from->items[p.n].path };
                if (!p.items[p.n].glob) {
                        scope_patterns_done(&p);
                        return -ENOMEM;
                }
        }
        scope_patterns_done(ret);
        *ret = p;
        return 0;
}

bool scope_patterns_equal(const ScopePatterns *a, const ScopePatterns *b) {
        if (a->n != b->n)
                return false;
        for (size_t i = 0; i < a->n; i++)
                if (!streq(a->items[i].glob, b->items[i].glob))
                        return false;
        return true;
}

/* A cgroup-path glob: the path, or one of the cgroups above it. */
static bool path_matches(const char *glob, const char *cgroup) {
        char buf[4096];
        size_t n = strlen(cgroup);

        if (streq(glob, "/") || fnmatch(glob, cgroup, 0) == 0)
                return true;
        if (n >= sizeof buf)
                return false;
        memcpy(buf, cgroup, n + 1);
        for (size_t i = n; i > 1; i--)
                if (buf[i - 1] == '/') {
                        buf[i - 1] = '\0';
                        if (fnmatch(glob, buf, 0) == 0)
                                return true;
                }
        return false;
}

static bool unit_matches(const char *glob, const UnitRef *units, size_t n_units) {
        for (size_t i = 0; i < n_units; i++) {
                char name[UNIT_NAME_MAX + 1];

                memcpy(name, units[i].name, units[i].len);
                name[units[i].len] = '\0';
                if (fnmatch(glob, name, 0) == 0)
                        return true;
        }
        return false;
}

bool scope_patterns_match(const ScopePatterns *p, const char *cgroup) {
        UnitRef units[SCOPE_UNITS_MAX];
        size_t n_units = 0;
        bool have_units = false;

        if (!cgroup || !p)
                return false;
        for (size_t i = 0; i < p->n; i++) {
                if (p->items[i].path) {
                        if (path_matches(p->items[i].glob, cgroup))
                                return true;
                        continue;
                }
                if (!have_units) {
                        n_units = unit_path_units(cgroup, units, ELEMENTSOF(units));
                        have_units = true;
                }
                if (unit_matches(p->items[i].glob, units, n_units))
                        return true;
        }
        return false;
}

const char *scope_refusal(const Scope *s, pid_t tgid, bool names, const ScopePatterns *policy_exclude,
                          const char *cgroup) {
        if (tgid == 1)
                return "PID 1 is never touched";
        if (s && s->self > 0 && tgid == s->self)
                return "topod itself is never touched";
        if (s && scope_patterns_match(&s->protect, cgroup))
                return "[scope] protect matches its cgroup";
        if (scope_patterns_match(policy_exclude, cgroup))
                return "the policy's [match] exclude matches its cgroup";
        if (names)
                return NULL;
        if (!s || !scope_patterns_match(&s->include, cgroup))
                return "the policy names nothing (class/user only) and its cgroup is outside [scope] include";
        if (scope_patterns_match(&s->exclude, cgroup))
                return "the policy names nothing (class/user only) and [scope] exclude matches its cgroup";
        return NULL;
}

bool scope_admits(const Scope *s, pid_t tgid, bool names, const ScopePatterns *policy_exclude, const char *cgroup) {
        return !scope_refusal(s, tgid, names, policy_exclude, cgroup);
}

char *scope_patterns_format(const ScopePatterns *p) {
        size_t len = 1;
        char *s;

        for (size_t i = 0; i < p->n; i++)
                len += strlen(p->items[i].glob) + 1;
        s = calloc(len, 1);
        if (!s)
                return NULL;
        for (size_t i = 0; i < p->n; i++) {
                if (i > 0)
                        strcat(s, " ");
                strcat(s, p->items[i].glob);
        }
        return s;
}
