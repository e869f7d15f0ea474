/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "policy-check.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "decide/policy-internal.h"

static bool when_unconditional(const PolicyWhen *w) {
        return w->smt == POLICY_SMT_ANY && !w->vendors && !w->has_load && !w->has_forced_idle && w->n_conditions == 0;
}

static bool conditions_contain(const PolicyWhen *a, const PolicyCondition *c) {
        for (size_t i = 0; i < a->n_conditions; i++)
                if (a->conditions[i].kind == c->kind && a->conditions[i].cmp == c->cmp &&
                    a->conditions[i].value == c->value)
                        return true;
        return false;
}

/* Does a hold whenever b holds? Exact for the common cases (a has no
 * conditions, or the same ones); false when unsure. */
static bool when_implied_by(const PolicyWhen *a, const PolicyWhen *b) {
        if (when_unconditional(a))
                return true;
        if (a->smt != POLICY_SMT_ANY && a->smt != b->smt)
                return false;
        if (a->has_load && (!b->has_load || b->load_low < a->load_low || b->load_high > a->load_high))
                return false;
        if (a->has_forced_idle && (!b->has_forced_idle || b->forced_idle_low < a->forced_idle_low ||
                                   b->forced_idle_high > a->forced_idle_high))
                return false;
        if (a->vendors) {
                if (!b->vendors)
                        return false;
                for (char **v = b->vendors; *v; v++)
                        if (!strv_contains(a->vendors, *v))
                                return false;
        }
        for (size_t i = 0; i < a->n_conditions; i++)
                if (!conditions_contain(b, &a->conditions[i]))
                        return false;
        return true;
}

/* Does a match every task b matches? Each field a constrains, b constrains
 * at least as much: the same patterns or fewer (OR within a field). And
 * the scope lets a act wherever it lets b: a's own exclude patterns are
 * b's too, and a names what it matches when b does (one that names
 * nothing acts only inside [scope] include). */
static bool match_covers(const PolicyMatch *a, const PolicyMatch *b) {
        for (size_t i = 0; i < a->exclude.n; i++) {
                bool found = false;

                for (size_t j = 0; j < b->exclude.n && !found; j++)
                        found = streq(a->exclude.items[i].glob, b->exclude.items[j].glob);
                if (!found)
                        return false;
        }
        if (!policy_match_names(a) && policy_match_names(b))
                return false;
        if (a->classes) {
                if (!b->classes || (b->classes & ~a->classes))
                        return false;
        }
        for (size_t f = 0; f < _POLICY_MATCH_FIELD_MAX; f++) {
                if (a->fields[f].n == 0)
                        continue;
                if (b->fields[f].n == 0 || !policy_patterns_subset(&b->fields[f], &a->fields[f]))
                        return false;
        }
        return true;
}

static int check_shadowing(const PolicySet *s, Diagnostics *d) {
        for (size_t j = 0; j < s->n; j++) {
                const Policy *b = s->policies[j];

                if (!b->enabled || !b->place.present)
                        continue;
                for (size_t i = 0; i < j; i++) {
                        const Policy *a = s->policies[i];
                        int k;

                        if (!a->enabled || !a->place.present)
                                continue;
                        if (!match_covers(&a->match, &b->match) || !when_implied_by(&a->when, &b->when))
                                continue;
                        k = diag_add(d, DIAG_WARNING, b->file, b->match_line ?: b->name_line, "shadowed",
                                     "policy '%s' never places a task: '%s' (%s:%u, priority %d) comes first and matches "
                                     "every task it matches whenever it is in force",
                                     b->name, a->name, a->file, a->name_line, a->priority);
                        if (k < 0)
                                return k;
                        break;
                }
        }
        return 0;
}

/* b sets a scheduler setting a, ahead of it and in force with it, sets
 * otherwise. */
static int check_setting_conflicts(const Policy *a, const Policy *b, Diagnostics *d) {
        for (size_t sb = 0; sb < b->n_settings; sb++)
                for (size_t sa = 0; sa < a->n_settings; sa++) {
                        const PolicySetting *x = &a->settings[sa], *y = &b->settings[sb];
                        int k;

                        if (x->info != y->info || streq(x->value, y->value))
                                continue;
                        k = diag_add(d, DIAG_WARNING, b->file, y->line, "conflict",
                                     "%s = %s conflicts with '%s' (%s:%u, %s = %s); where both are in force '%s' wins",
                                     y->info->name, y->value, a->name, a->file, x->line, x->info->name, x->value,
                                     a->name);
                        if (k < 0)
                                return k;
                }
        return 0;
}

static int check_conflicts(const PolicySet *s, Diagnostics *d) {
        for (size_t j = 0; j < s->n; j++) {
                const Policy *b = s->policies[j];
                bool mode_reported = false;

                if (!b->enabled)
                        continue;
                for (size_t i = 0; i < j; i++) {
                        const Policy *a = s->policies[i];
                        int k;

                        if (!a->enabled || !policy_when_may_overlap(&a->when, &b->when))
                                continue;
                        if (a->cgroup_mode && b->cgroup_mode && !streq(a->cgroup_mode, b->cgroup_mode) && !mode_reported) {
                                mode_reported = true;
                                k = diag_add(d, DIAG_WARNING, b->file, b->cgroup_mode_line, "conflict",
                                             "cgroup_mode = %s conflicts with '%s' (%s:%u, cgroup_mode = %s); where both "
                                             "are in force '%s' wins",
                                             b->cgroup_mode, a->name, a->file, a->cgroup_mode_line, a->cgroup_mode, a->name);
                                if (k < 0)
                                        return k;
                        }
                        for (size_t fb = 0; fb < b->n_features; fb++)
                                for (size_t fa = 0; fa < a->n_features; fa++) {
                                        const PolicyFeature *x = &a->features[fa], *y = &b->features[fb];

                                        if (!streq(x->name, y->name) || x->on == y->on)
                                                continue;
                                        k = diag_add(d, DIAG_WARNING, b->file, y->line, "conflict",
                                                     "%s = %s conflicts with '%s' (%s:%u, %s = %s); where both are in "
                                                     "force '%s' wins",
                                                     y->name, y->on ? "on" : "off", a->name, a->file, x->line, x->name,
                                                     x->on ? "on" : "off", a->name);
                                        if (k < 0)
                                                return k;
                                }
                        if ((k = check_setting_conflicts(a, b, d)) < 0)
                                return k;
                }
        }
        return 0;
}

void check_machine_from(const Topology *t, const KernelCaps *caps, uint64_t kernel_version, PolicyMachine *ret) {
        *ret = (PolicyMachine) { .kernel = kernel_version };
        if (t) {
                ret->smt = topology_has_smt(t);
                ret->n_llcs = (unsigned) t->n_llcs;
                ret->n_nodes = (unsigned) t->n_numa_nodes;
                ret->n_packages = (unsigned) t->n_packages;
                ret->n_cpus = t->n_pus;
                ret->vendor = t->cpu_vendor;
        }
        /* SMT can be present in the topology and switched off (nosmt). */
        if (caps && caps->smt.available)
                ret->smt = caps->smt_active;
}

static int check_when_on_machine(const Policy *p, const PolicyMachine *m, bool have_topology, bool know_smt,
                                 Diagnostics *d) {
        const PolicyWhen *w = &p->when;
        int k;

        if (know_smt && w->smt != POLICY_SMT_ANY && (w->smt == POLICY_SMT_ON) != m->smt) {
                k = diag_add(d, DIAG_WARNING, p->file, w->smt_line, "never-holds",
                             "smt = %s never holds here: SMT is %s on this machine", w->smt == POLICY_SMT_ON ? "on" : "off",
                             m->smt ? "on" : "off");
                if (k < 0)
                        return k;
        }
        if (w->vendors && m->vendor && !strv_contains(w->vendors, m->vendor)) {
                k = diag_add(d, DIAG_WARNING, p->file, w->vendor_line, "never-holds",
                             "vendor never holds here: this CPU is %s", m->vendor);
                if (k < 0)
                        return k;
        }
        for (size_t i = 0; i < w->n_conditions; i++) {
                const PolicyCondition *c = &w->conditions[i];
                PolicyWhen one = { .conditions = (PolicyCondition *) c, .n_conditions = 1 };
                PolicyMachine mm = *m;
                uint64_t have;

                if (c->kind == POLICY_WHEN_KERNEL) {
                        if (m->kernel == 0)
                                continue;
                        have = m->kernel;
                } else {
                        if (!have_topology)
                                continue;
                        have = c->kind == POLICY_WHEN_LLCS ? m->n_llcs : c->kind == POLICY_WHEN_NODES ? m->n_nodes
                               : c->kind == POLICY_WHEN_PACKAGES ? m->n_packages : m->n_cpus;
                }
                mm.smt = true;
                mm.vendor = NULL;
                if (policy_when_holds(&one, &mm))
                        continue;
                if (c->kind == POLICY_WHEN_KERNEL)
                        k = diag_add(d, DIAG_WARNING, p->file, c->line, "never-holds",
                                     "kernel condition never holds here: this kernel is %u.%u.%u",
                                     (unsigned) (have >> 32), (unsigned) ((have >> 16) & 0xffff), (unsigned) (have & 0xffff));
                else
                        k = diag_add(d, DIAG_WARNING, p->file, c->line, "never-holds",
                                     "%s %s %llu never holds on this topology: it has %llu", policy_when_kind_to_string(c->kind),
                                     policy_cmp_to_string(c->cmp), (unsigned long long) c->value, (unsigned long long) have);
                if (k < 0)
                        return k;
        }
        return 0;
}

static bool kernel_has_feature(char *const *tokens, const char *name) {
        for (char *const *t = tokens; t && *t; t++) {
                const char *n = startswith(*t, "NO_") ? *t + 3 : *t;

                if (streq(n, name))
                        return true;
        }
        return false;
}

static int check_features_on_machine(const Policy *p, const KernelCaps *caps, Diagnostics *d) {
        _cleanup_free_ const char **names = NULL;
        size_t n = strv_length(caps->features);
        int k;

        if (p->n_features == 0)
                return 0;
        if (!caps->features_readable || !caps->features)
                return diag_add(d, DIAG_WARNING, p->file, p->features[0].line, "no-features",
                                "[features] cannot apply: sched features are not readable here (%s)",
                                caps->sched_features.reason ?: "unknown reason");
        names = calloc(n + 1, sizeof(char *));
        if (!names)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                names[i] = startswith(caps->features[i], "NO_") ? caps->features[i] + 3 : caps->features[i];
        for (size_t i = 0; i < p->n_features; i++) {
                const char *close;

                if (kernel_has_feature(caps->features, p->features[i].name))
                        continue;
                close = diag_closest(p->features[i].name, names);
                if (close)
                        k = diag_add(d, DIAG_WARNING, p->file, p->features[i].line, "unknown-feature",
                                     "this kernel lists no sched feature %s; did you mean %s?", p->features[i].name, close);
                else
                        k = diag_add(d, DIAG_WARNING, p->file, p->features[i].line, "unknown-feature",
                                     "this kernel lists no sched feature %s", p->features[i].name);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* Each [kernel] setting against the kernel's: present, writable, and for a
 * choice one of the words it lists. */
static int check_settings_on_machine(const Policy *p, const KernelCaps *caps, Diagnostics *d) {
        for (size_t i = 0; i < p->n_settings; i++) {
                const PolicySetting *ps = &p->settings[i];
                const KernelSetting *ks = kernelcaps_setting(caps, ps->info);
                _cleanup_free_ char *list = NULL;
                int k = 0;

                if (!ks)
                        return 0; /* caps without the settings: nothing to judge by */
                if (kernelcaps_setting_unknown(ks))
                        k = diag_add(d, DIAG_WARNING, p->file, ps->line, "setting-unknown",
                                     "%s: cannot tell whether this kernel has it (%s)", ps->info->name,
                                     kernelcaps_setting_unknown(ks));
                else if (!ks->file)
                        k = diag_add(d, DIAG_WARNING, p->file, ps->line, "no-setting", "%s cannot apply (%s); topod skips it",
                                     ps->info->name, ps->info->absent);
                else if (!ks->writable)
                        k = diag_add(d, DIAG_WARNING, p->file, ps->line, "setting-read-only",
                                     "%s cannot apply: sched/%s does not open for writing (%s); topod skips it",
                                     ps->info->name, ks->file, errno_name(ks->error));
                else if (ps->info->kind == SCHED_SETTING_CHOICE && ks->choices && !strv_contains(ks->choices, ps->value)) {
                        if ((k = strv_join(ks->choices, ", ", &list)) < 0)
                                return k;
                        k = diag_add(d, DIAG_WARNING, p->file, ps->line, "unknown-choice",
                                     "%s = %s is not one this kernel lists (%s)", ps->info->name, ps->value, list);
                }
                if (k < 0)
                        return k;
        }
        return 0;
}

static int check_cgroup_mode(const Policy *p, const KernelCaps *caps, Diagnostics *d) {
        _cleanup_free_ char *list = NULL;
        const char *const *modes = policy_known_cgroup_modes;
        const char *close;
        int k;

        if (!p->cgroup_mode)
                return 0;
        if (caps) {
                if (!caps->cgroup_mode.available)
                        return diag_add(d, DIAG_WARNING, p->file, p->cgroup_mode_line, "no-cgroup-mode",
                                        "cgroup_mode = %s cannot apply: this kernel has no cgroup_mode (%s)", p->cgroup_mode,
                                        caps->cgroup_mode.reason ?: "unknown reason");
                modes = (const char *const *) caps->cgroup_modes;
        }
        if (strv_contains((char *const *) modes, p->cgroup_mode))
                return 0;
        k = strv_join((char *const *) modes, ", ", &list);
        if (k < 0)
                return k;
        close = diag_closest(p->cgroup_mode, modes);
        return diag_add(d, DIAG_WARNING, p->file, p->cgroup_mode_line, "unknown-cgroup-mode",
                        "cgroup_mode '%s' is not one %s knows (%s)%s%s%s", p->cgroup_mode,
                        caps ? "this kernel" : "topod", list, close ? "; did you mean '" : "", close ?: "",
                        close ? "'?" : "");
}

/* class = avx where arch_status cannot tell AVX-512 work from the rest
 * (observe/kernelcaps.h): polluted by the C library, or no AVX-512 line;
 * the classifier then never votes avx, so the policy matches nothing by
 * class. Explicit rules (comm, exe, cgroup, unit) still name AVX work. */
static int check_avx_on_machine(const Policy *p, const KernelCaps *caps, Diagnostics *d) {
        if (!(p->match.classes & (1u << POLICY_CLASS_AVX)) || kernelcaps_avx512_tellable(caps))
                return 0;
        return diag_add(d, DIAG_WARNING, p->file, p->match.class_line, "avx-untellable",
                        "class = avx cannot hold on this host: no counters (%s) and arch_status is %s (%s); "
                        "name AVX work with comm, exe or cgroup rules",
                        caps->avx512_counters.reason ?: "not probed",
                        kernel_avx_evidence_to_string(caps->avx512_arch_status),
                        caps->avx512_evidence.reason ?: "not probed");
}

int check_policy_set(const PolicySet *s, const Topology *topology, const KernelCaps *caps, uint64_t kernel_version,
                     Diagnostics *d) {
        PolicyMachine m;
        int k;

        k = check_conflicts(s, d);
        if (k < 0)
                return k;
        k = check_shadowing(s, d);
        if (k < 0)
                return k;
        check_machine_from(topology, caps, kernel_version, &m);
        for (size_t i = 0; i < s->n; i++) {
                const Policy *p = s->policies[i];

                /* A disabled policy is checked as text only: the machine
                 * warnings are about what would apply here. */
                k = check_cgroup_mode(p, p->enabled ? caps : NULL, d);
                if (k < 0)
                        return k;
                if (!p->enabled)
                        continue;
                if (caps) {
                        k = check_features_on_machine(p, caps, d);
                        if (k >= 0)
                                k = check_settings_on_machine(p, caps, d);
                        if (k < 0)
                                return k;
                        k = check_avx_on_machine(p, caps, d);
                        if (k >= 0 && p->has_when && p->when.has_forced_idle && !caps->schedstats.available)
                                k = diag_add(d, DIAG_WARNING, p->file, p->when.forced_idle_line, "no-schedstats",
                                             "forced_idle cannot be measured: %s",
                                             caps->schedstats.reason ?: "schedstats are off");
                        if (k < 0)
                                return k;
                        if (p->place.present && p->place.cookie != POLICY_COOKIE_NONE && !caps->core_sched.available) {
                                k = diag_add(d, DIAG_WARNING, p->file, p->place.cookie_line, "no-core-sched",
                                             "cookie = %s cannot apply: core scheduling is unavailable (%s)",
                                             policy_cookie_to_string(p->place.cookie),
                                             caps->core_sched.reason ?: "unknown reason");
                                if (k < 0)
                                        return k;
                        }
                }
                if (topology || caps || kernel_version) {
                        k = check_when_on_machine(p, &m, topology != NULL, topology || (caps && caps->smt.available), d);
                        if (k < 0)
                                return k;
                }
                if (topology && p->place.cpus == POLICY_CPUS_EXPLICIT && topology->cpus &&
                    !bitmap_is_subset(p->place.cpu_list, topology->cpus)) {
                        _cleanup_free_ char *have = NULL;

                        k = bitmap_format_list(topology->cpus, &have);
                        if (k < 0)
                                return k;
                        k = diag_add(d, DIAG_WARNING, p->file, p->place.cpus_line, "cpu-not-present",
                                     "the cpu list names CPUs this machine does not have (it has %s)", have);
                        if (k < 0)
                                return k;
                }
        }
        return 0;
}
