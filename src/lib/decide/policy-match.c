/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* [match] evaluated: whether a policy's patterns take a task, the first
 * policy of a set that does, and the index by comm that spares a task the
 * policies that cannot take it. */
#include "policy.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/unit-name.h"
#include "base/util.h"
#include "decide/policy-internal.h"

/* How many bytes a pattern starts with that fnmatch() takes as they are.
 * Unlike policy-parse.c's glob_has_magic() (may the pattern match a
 * longer name?), a backslash counts: fnmatch() takes it as an escape
 * (k\9 matches "k9"). */
static size_t glob_plain_prefix(const char *glob) {
        return strcspn(glob, "*?[\\");
}

bool policy_glob_is_literal(const char *glob) {
        return glob[glob_plain_prefix(glob)] == '\0';
}

bool policy_patterns_subset(const PolicyPatterns *a, const PolicyPatterns *b) {
        for (size_t i = 0; i < a->n; i++) {
                bool found = false;

                for (size_t j = 0; j < b->n && !found; j++)
                        found = streq(a->items[i].glob, b->items[j].glob);
                if (!found)
                        return false;
        }
        return true;
}

static bool patterns_equal(const PolicyPatterns *a, const PolicyPatterns *b) {
        /* Same set, in any order; patterns within one list are distinct. */
        return a->n == b->n && policy_patterns_subset(a, b);
}

bool policy_match_equal(const PolicyMatch *a, const PolicyMatch *b) {
        if (a->classes != b->classes || !scope_patterns_equal(&a->exclude, &b->exclude))
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

/* unit =: any of the units along the cgroup path. */
static bool units_match(const PolicyPatterns *pp, const char *cgroup) {
        UnitRef units[64];
        size_t n = unit_path_units(cgroup, units, ELEMENTSOF(units));

        for (size_t i = 0; i < n; i++) {
                char name[UNIT_NAME_MAX + 1];

                memcpy(name, units[i].name, units[i].len);
                name[units[i].len] = '\0';
                if (patterns_match(pp, name))
                        return true;
        }
        return false;
}

bool policy_match_names(const PolicyMatch *m) {
        for (size_t f = 0; f < _POLICY_MATCH_FIELD_MAX; f++)
                if (f != POLICY_MATCH_USER && m->fields[f].n > 0)
                        return true;
        return false;
}

bool policy_takes(const Policy *p, const Scope *scope, const PolicyTask *t) {
        return policy_match_task(&p->match, t) &&
               scope_admits(scope, t->tgid, policy_match_names(&p->match), &p->match.exclude, t->cgroup);
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
                case POLICY_MATCH_UNIT:
                        if (units_match(pp, t->cgroup))
                                continue;
                        return false;
                default:
                        return false;
                }
                if (!patterns_match(pp, v))
                        return false;
        }
        return true;
}

int policy_set_select(const PolicySet *s, const bool *in_force, const Scope *scope, const PolicyTask *t) {
        for (size_t i = 0; i < s->n; i++) {
                const Policy *p = s->policies[i];

                if (!in_force[i] || !p->enabled || !p->place.present)
                        continue;
                if (policy_takes(p, scope, t))
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
