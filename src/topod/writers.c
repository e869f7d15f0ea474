/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the daemon writes with, and puts back with: the journal in the state
 * directory (and the lock that makes it the only writer), the cookie
 * worker, the cgroup files held open; and restore_all(), at a reset, at a
 * stop, and when recovering the journal of a crashed run. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/macro.h"
#include "base/unit-name.h"
#include "base/util.h"
#include "common/state-dir.h"
#include "daemon-internal.h"

/* Is PID 1 systemd on a pure cgroup2 host (the Root's proc/1/comm and
 * run/systemd/system, as sd_booted() looks)? Why not, in why. */
static bool systemd_runs(Daemon *d, const char **why) {
        const KernelCaps *c = d->p->observe.caps;
        _cleanup_free_ char *comm = NULL;

        if (root_read_line(d->p->observe.root, "proc/1/comm", &comm) < 0 || !streq(comm, "systemd")) {
                *why = "PID 1 is not systemd";
                return false;
        }
        if (root_exists(d->p->observe.root, "run/systemd/system") <= 0) {
                *why = "PID 1 is systemd, but run/systemd/system is missing (not booted with it)";
                return false;
        }
        if (!c->cgroup2_mount || c->cgroup_hybrid) {
                *why = "PID 1 is systemd, but cgroup v2 is not the only hierarchy";
                return false;
        }
        *why = "PID 1 is systemd on a pure cgroup2 host";
        return true;
}

/* The cgroup driver: [cgroup] driver, auto resolved once at start. The
 * systemd driver needs the system bus; asked for and not had, topod does
 * not start (it would write behind systemd's back). */
static int choose_driver(Daemon *d) {
        DaemonWriters *w = &d->writers;
        ConfigCgroupDriver want = d->p->decide.config->cgroup_driver;
        const char *why = NULL;
        bool sd = systemd_runs(d, &why);
        char buf[192];
        int k;

        if (want == CONFIG_CGROUP_DRIVER_CGROUPFS || (want == CONFIG_CGROUP_DRIVER_AUTO && !sd)) {
                w->driver = CONFIG_CGROUP_DRIVER_CGROUPFS;
                snprintf(buf, sizeof(buf), "%s%s", want == CONFIG_CGROUP_DRIVER_AUTO ? "auto: " : "driver = cgroupfs; ",
                         why);
        } else {
                const char *root = d->p->decide.config->cgroup_root, *last = strrchr(root, '/');
                _cleanup_free_ char *want_path = NULL;

                /* A slice's cgroup is where its name says. */
                if (unit_slice_cgroup_path(last ? last + 1 : root, &want_path) < 0 || !streq(want_path, root) ||
                    streq(root, "/")) {
                        log_error(d, "cgroup driver systemd: cgroup_root %s is not the cgroup of a slice "
                                     "(such as /topod.slice)", root);
                        return -EINVAL;
                }
                if ((k = unit_bus_open(&w->unit_bus)) < 0) {
                        log_error(d, "cgroup driver systemd: cannot connect to the system bus: %s", strerror(-k));
                        return k;
                }
                w->unit_ops = unit_bus_ops(w->unit_bus);
                w->driver = CONFIG_CGROUP_DRIVER_SYSTEMD;
                d->p->decide.slices = true;
                snprintf(buf, sizeof(buf), "%s%s", want == CONFIG_CGROUP_DRIVER_AUTO ? "auto: " : "driver = systemd; ",
                         why);
        }
        w->driver_why = strdup(buf);
        log_info(d, "cgroup driver: %s (%s)", config_cgroup_driver_to_string(w->driver), buf);
        return 0;
}

void daemon_writers_init(DaemonWriters *w) {
        *w = (DaemonWriters) { .lock = -EBADF, .pidref = pidref_ops_host };
}

/* Lock the state directory and open the journal there, then the writers;
 * a journal left by a crash is restored first. -errno when the journal
 * cannot be had (said on stderr): topod does not run without it. */
int daemon_writers_open(Daemon *d) {
        DaemonWriters *w = &d->writers;
        bool found = false;
        int k;

        if ((k = choose_driver(d)) < 0)
                return k;
        if ((k = state_dir_open_journal(d->args->state_dir, d->p->observe.root, &w->journal, &found, &w->lock)) < 0 ||
            (k = state_dir_path(d->args->state_dir, d->p->observe.root, &w->state_dir)) < 0)
                return k;
        /* The journal inside is 0600; the directory is open so that anyone
         * can reach the socket (calls are checked one by one). */
        (void) chmod(w->state_dir, 0755);
        (void) cgroup_held_new(&w->held); /* without: opened per move */
        w->pidref.pidfs_idents = d->p->observe.caps->pidfs.available;
        /* With SMT off too: the interlock holds it back until SMT is on. */
        if (kernelcaps_core_sched_built(d->p->observe.caps) && cookie_applier_new(d->p->observe.root, NULL, &w->cookies) >= 0)
                set_interlocks(d);
        if (found)
                /* A journal left by a crash: put the machine back first, so
                 * this run starts from the true originals. */
                (void) restore_all(d, "recovering the journal of an earlier run", NULL);
        return 0;
}

/* Put back what the journal holds (why: for the log). *ret (may be NULL)
 * is the report, left NULL when the journal held nothing. */
int restore_all(Daemon *d, const char *why, ReconcileReport **ret) {
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        Reconciler rc = reconciler(d);
        int k;

        cgroup_held_clear(d->writers.held);
        if (journal_is_empty(d->writers.journal))
                return 0;
        /* SMT as it is now, not as the last pass read it: a clear the
         * worker refuses for SMT off stays journaled. */
        d->restoring = true;
        (void) refresh_interlocks(d);
        k = reconcile_restore(&rc, &r);
        d->restoring = false;
        if (k < 0) {
                log_error(d, "%s: restore failed: %s", why, strerror(-k));
                return k;
        }
        changes_log_report(d, d->pass.plan, r);
        log_info(d, "%s: restored (%u done, %u skipped, %u failed)", why, r->counts[RECONCILE_DONE],
                 r->counts[RECONCILE_SKIPPED], r->counts[RECONCILE_FAILED]);
        if (journal_is_empty(d->writers.journal))
                (void) journal_remove(d->writers.state_dir);
        else
                /* Failed, or refused for now (a cookie while SMT is off):
                 * the next run's recovery, or a later pass, tries again. */
                log_notice(d, "%s: %zu journal entries not undone yet stay in %s/journal", why,
                           journal_n_entries(d->writers.journal), d->writers.state_dir);
        if (ret)
                *ret = TAKE_PTR(r);
        return 0;
}

void daemon_writers_done(DaemonWriters *w) {
        w->cookies = cookie_applier_free(w->cookies);
        w->held = cgroup_held_free(w->held);
        w->unit_bus = unit_bus_free(w->unit_bus);
        w->driver_why = mfree(w->driver_why);
        /* The lock file goes with the journal: nothing left behind. */
        state_dir_unlock(w->state_dir, &w->lock, w->journal && journal_is_empty(w->journal));
        w->journal = journal_free(w->journal);
        w->state_dir = mfree(w->state_dir);
}
