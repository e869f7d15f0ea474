/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* [when] evaluated: whether a policy's conditions hold on a machine, its
 * load band over time (hysteresis and dwell), and what two [when]s can
 * say about each other (satisfiable, may overlap) for the checks. */
#include "policy.h"

#include "base/util.h"

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
        /* "kernel != 6.6" compares major.minor only (see policy-parse.c's
         * when_kernel()). */
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
        return policy_band_update(b, w->load_low, w->load_high, load, hysteresis, dwell_usec, now_usec);
}

bool policy_band_update(PolicyLoadBand *b, unsigned low, unsigned high, unsigned value, unsigned hysteresis,
                        uint64_t dwell_usec, uint64_t now_usec) {
        bool inside = value >= low && value <= high, flip;

        if (!b->started) {
                *b = (PolicyLoadBand) { .holds = inside, .started = true };
                return b->holds;
        }
        /* Held: left only beyond the hysteresis. Not held: entered inside. */
        flip = b->holds ? value + hysteresis < low || value > high + hysteresis : inside;
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
        if (w->has_forced_idle && w->forced_idle_low > w->forced_idle_high)
                return false;
        return kinds_satisfiable(w, NULL);
}

bool policy_when_may_overlap(const PolicyWhen *a, const PolicyWhen *b) {
        if (a->smt != POLICY_SMT_ANY && b->smt != POLICY_SMT_ANY && a->smt != b->smt)
                return false;
        if (a->has_load && b->has_load && (a->load_high < b->load_low || b->load_high < a->load_low))
                return false;
        if (a->has_forced_idle && b->has_forced_idle &&
            (a->forced_idle_high < b->forced_idle_low || b->forced_idle_high < a->forced_idle_low))
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
