/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What can change under a running topod and changes its plan: what
 * forbids cookies (SMT, a sched_ext scheduler), the CPUs online, and so the
 * policies in force; read at every pass and every tick, acted on when it
 * changed. And, once at start, what this kernel does not let topod do. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "daemon-internal.h"

/* The cookie worker's interlocks, from the capabilities as last read. */
void set_interlocks(Daemon *d) {
        CookieInterlocks il = { .smt_off = !d->p->observe.caps->smt_active, .sched_ext_active = d->p->observe.caps->sched_ext_active };

        if (d->writers.cookies)
                cookie_applier_set_interlocks(d->writers.cookies, &il);
}

/* SMT or sched_ext changed under us. The plan that follows gives no
 * cookies while either forbids them, and the apply clears those topod gave
 * (clearing is allowed beside sched_ext; with SMT off the kernel refuses
 * every call, and the journal keeps them for later). The worker lets go
 * of its keep-alive cookie: with the last cookie gone, the kernel switches
 * core scheduling off, which is the point beside sched_ext. */
static void interlocks_changed(Daemon *d) {
        const KernelCaps *c = d->p->observe.caps;

        set_interlocks(d);
        if (c->sched_ext_active) {
                log_warning(d, "a sched_ext scheduler (%s) is now %s: no more cookies, and those topod gave are "
                               "cleared (core scheduling with sched_ext is reported to hang hosts)",
                            c->sched_ext_ops ?: "unnamed", c->sched_ext_state ?: "enabled");
                if (d->writers.cookies) {
                        Reconciler rc = reconciler(d);
                        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;

                        /* Those inherited first: the values of the
                         * journaled ones, which the apply clears, tell
                         * them. */
                        if (reconcile_clear_inherited_cookies(&rc, &r) >= 0 && r && r->n > 0) {
                                changes_log_report(d, d->pass.plan, r);
                                log_notice(d, "cleared %u cookies threads had inherited (%u failed)",
                                           r->counts[RECONCILE_DONE], r->counts[RECONCILE_FAILED]);
                        }
                        (void) cookie_applier_release(d->writers.cookies);
                }
        } else if (!c->smt_active)
                log_warning(d, "SMT is now off: no cookies until it is on again");
        else if (!c->core_sched.available)
                log_notice(d, "SMT is on and no sched_ext scheduler runs, but core scheduling is unavailable: %s",
                           c->core_sched.reason ?: "unknown");
        else if (!d->writers.cookies)
                log_notice(d, "SMT is on and no sched_ext scheduler runs, but topod's cookie worker could not be "
                              "started: no cookies until topod is restarted");
        else {
                log_notice(d, "SMT is on and no sched_ext scheduler runs: cookies are given");
                /* Paused by a reset while SMT was off, which left cookies
                 * in the journal: no pass applies anything now, so they
                 * are cleared here (running, the next pass does it). */
                if (d->paused && !d->restoring && d->writers.journal && d->writers.journal->n_cookies > 0)
                        (void) restore_all(d, "SMT is on again after a reset", NULL);
        }
}

/* What forbids cookies, read again (two files); acted on when it changed.
 * Whether it did. */
bool refresh_interlocks(Daemon *d) {
        if (kernelcaps_refresh_interlocks(d->p->observe.caps, d->p->observe.root, NULL) <= 0)
                return false;
        interlocks_changed(d);
        return true;
}

/* Which policies are in force, after the load (read here: one file) and
 * SMT as last read; each one that entered or left force is said. Whether
 * any did: the plan in use was made without it. */
static bool refresh_in_force(Daemon *d) {
        const PolicySet *ps = d->p->decide.policies;
        _cleanup_free_ bool *was = malloc(MAX(ps->n, (size_t) 1) * sizeof(bool));
        char load[32] = "unreadable";

        if (!was)
                return false;
        memcpy(was, d->p->decide.in_force, ps->n * sizeof(bool));
        if (pipeline_refresh_in_force(d->p, true) == 0)
                return false;
        if (d->p->decide.have_load)
                snprintf(load, sizeof(load), "%u%%", d->p->decide.load_percent);
        for (size_t i = 0; i < ps->n; i++)
                if (was[i] != d->p->decide.in_force[i])
                        log_notice(d, "policy %s (%s) %s force: [when] %s now (load %s, SMT %s, %u CPUs)",
                                   ps->policies[i]->name, ps->policies[i]->file, d->p->decide.in_force[i] ? "enters" : "leaves",
                                   d->p->decide.in_force[i] ? "holds" : "does not hold", load,
                                   d->p->observe.caps->smt_active ? "on" : "off", d->p->observe.topology->n_pus);
        plan_reply_forget(d);
        return true;
}

/* What can change under a running topod and changes its plan: the
 * interlocks (SMT, sched_ext), the CPUs online (SMT switched on brings
 * siblings online one by one: read again until the list stays), and so
 * which policies are in force (the load, SMT, the CPU counts of [when]).
 * Four small files. Whether anything changed. */
bool refresh_machine(Daemon *d) {
        bool changed = refresh_interlocks(d);
        int k = pipeline_refresh_topology(d->p);

        if (k < 0)
                log_warning(d, "the CPUs online changed, but the topology cannot be read again (%s): planning goes on "
                               "with the CPUs before; tried again at the next tick",
                            strerror(-k));
        else if (k > 0) {
                log_notice(d, "the CPUs online changed: topology read again, %u CPUs", d->p->observe.topology->n_pus);
                plan_reply_forget(d);
                changed = true;
        }
        return refresh_in_force(d) || changed;
}

/* Say once, at start, what this kernel will not let topod do and what it
 * does instead: an operator reading the log should not have to guess why
 * no cookie or cgroup ever appears. */
void log_limits(const Daemon *d) {
        const KernelCaps *c = d->p->observe.caps;
        static const struct {
                const char *name;
                size_t offset;
                const char *consequence;
        } rows[] = {
                { "core scheduling", offsetof(KernelCaps, core_sched), "no cookies; placement and kernel settings go on" },
                { "cgroup2", offsetof(KernelCaps, cgroup2), NULL /* said below */ },
                { "sched features", offsetof(KernelCaps, sched_features), "sched features are left as they are" },
                { "cgroup_mode", offsetof(KernelCaps, cgroup_mode), "cgroup_mode cannot be set: modes are emulated with cpu.weight where cgroups work" },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const CapStatus *cs = (const CapStatus *) ((const char *) c + rows[i].offset);

                if (!cs->available)
                        log_notice(d, "%s: %s; %s", rows[i].name, cs->reason ?: "unavailable",
                                   rows[i].consequence ?: c->cgroup2_mount
                                           ? "tasks are still grouped and moved, without cpusets or weights"
                                           : "tasks stay where they are; cookies and kernel settings go on");
        }
        if (c->sched_ext_active)
                log_notice(d, "a sched_ext scheduler (%s) is running: no cookies (core scheduling with sched_ext is reported to hang hosts)",
                      c->sched_ext_ops ?: "unnamed");
}
