/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* topod --restore and topoctl reset without a daemon (see restore.h). */
#include "restore.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply/cookie.h"
#include "apply/journal.h"
#include "apply/reconcile.h"
#include "base/macro.h"
#include "base/root.h"
#include "decide/config.h"
#include "decide/diag.h"
#include "decide/policy-read.h"
#include "observe/kernelcaps.h"
#include "report.h"
#include "state-dir.h"

/* topod.conf's cgroup_root below the root (its default when the file is
 * missing or unreadable), or NULL. A journal names the roots it was written
 * under (journal.h), which is what a restore goes by: this one is for a
 * journal without them. */
static char *config_cgroup_root(const Root *root) {
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_free_ char *conf = NULL;

        if (!d || root_host_path(root, CONFIG_DEFAULT_PATH, &conf) < 0)
                return NULL;
        if (config_read(conf, false, d, &c) < 0 && !c)
                return NULL;
        return c ? TAKE_PTR(c->cgroup_root) : NULL;
}

int topoctl_restore(const char *root_dir, const char *state_dir, bool json) {
        _cleanup_(kernelcaps_freep) KernelCaps *caps = NULL;
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_(cookie_applier_freep) CookieApplier *ca = NULL;
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        _cleanup_free_ char *dir = NULL, *cgroup_root = NULL;
        _cleanup_close_ int lock = -EBADF;
        bool found = false;
        int k;

        if ((k = root_open(root_dir, &root)) < 0 || (k = kernelcaps_probe(root, NULL, &caps)) < 0) {
                fprintf(stderr, "%s: cannot observe the machine: %s\n", program_invocation_short_name, strerror(-k));
                return EXIT_FAILURE;
        }
        if (state_dir_open_journal(state_dir, root, &j, &found, &lock) < 0)
                return EXIT_FAILURE;
        if (!found) {
                if (state_dir_path(state_dir, root, &dir) >= 0)
                        state_dir_unlock(dir, &lock, true);
                report_print_nothing(stdout, json, "no journal");
                return EXIT_SUCCESS;
        }
        if (j->n_cookies > 0)
                (void) cookie_applier_new(root, NULL, &ca);
        if (j->n_cgroup_roots == 0)
                cgroup_root = config_cgroup_root(root);
        {
                Reconciler rc = { .root = root, .caps = caps, .journal = j, .cookies = ca, .cgroup_root = cgroup_root };

                if ((k = reconcile_restore(&rc, &r)) < 0) {
                        fprintf(stderr, "%s: restore failed: %s\n", program_invocation_short_name, strerror(-k));
                        return EXIT_FAILURE;
                }
        }
        if (journal_is_empty(j) && state_dir_path(state_dir, root, &dir) >= 0) {
                if ((k = journal_remove(dir)) < 0)
                        fprintf(stderr, "%s: cannot remove the journal in %s: %s\n", program_invocation_short_name, dir,
                                strerror(-k));
                else
                        state_dir_unlock(dir, &lock, true);
        }
        if (report_print(stdout, r, json) < 0 || fflush(stdout) != 0)
                return EXIT_FAILURE;
        return r->counts[RECONCILE_FAILED] == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
