/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* topod --oneshot (see oneshot.h): apart from main.c, which only parses
 * the options, and from the daemon, which it shares nothing with but the
 * library. */
#include "oneshot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply/cookie.h"
#include "apply/journal.h"
#include "apply/reconcile.h"
#include "base/json.h"
#include "base/macro.h"
#include "base/root.h"
#include "common/report.h"
#include "common/state-dir.h"
#include "common/watch.h"
#include "observe/kernelcaps.h"
#include "observe/observe-print.h"
#include "observe/topology.h"

/* Apply: journal every original first; the journal stays for topod
 * --restore (topoctl reset) to put things back. */
static int oneshot_apply(const OneshotArgs *a, const Pipeline *p, const Plan *plan) {
        _cleanup_(journal_freep) Journal *jr = NULL;
        _cleanup_(cookie_applier_freep) CookieApplier *ca = NULL;
        _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
        _cleanup_close_ int lock = -EBADF;
        bool found = false;
        int k;

        if ((k = state_dir_open_journal(a->state_dir, p->observe.root, &jr, &found, &lock)) < 0)
                return EXIT_FAILURE;
        if (p->observe.caps->core_sched.available && (k = cookie_applier_new(p->observe.root, NULL, &ca)) >= 0) {
                CookieInterlocks il = { .smt_off = !p->observe.caps->smt_active,
                                        .sched_ext_active = p->observe.caps->sched_ext_active };
                cookie_applier_set_interlocks(ca, &il);
        }
        {
                Reconciler rc = { .root = p->observe.root, .caps = p->observe.caps, .journal = jr, .cookies = ca };

                if ((k = reconcile_apply(&rc, plan, &r)) < 0) {
                        fprintf(stderr, "topod: apply failed: %s\n", strerror(-k));
                        return EXIT_FAILURE;
                }
        }
        if (report_print(stdout, r, a->json) < 0 || fflush(stdout) != 0)
                return EXIT_FAILURE;
        return r->counts[RECONCILE_FAILED] == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

static int oneshot_print_json(const OneshotArgs *a, const Pipeline *p, const Plan *plan) {
        _cleanup_(json_freep) Json *j = json_new(stdout, true);
        int k;

        if (!j)
                return -ENOMEM;
        json_object_begin(j);
        json_kv_uint(j, "samples", a->samples);
        json_key(j, "topology");
        if ((k = topology_print_json(j, p->observe.topology)) >= 0) {
                json_key(j, "kernel");
                k = kernelcaps_print_json(j, p->observe.caps, root_path(p->observe.root));
        }
        if (k >= 0) {
                json_key(j, "plan");
                k = plan_print_json(j, plan, p->decide.policies);
        }
        json_object_end(j);
        return k;
}

static int oneshot_print_text(const OneshotArgs *a, const Pipeline *p, const Plan *plan) {
        int k;

        k = topology_print_text(stdout, p->observe.topology);
        if (k >= 0) {
                fputc('\n', stdout);
                k = kernelcaps_print_text(stdout, p->observe.caps, root_path(p->observe.root));
        }
        if (k >= 0) {
                fputc('\n', stdout);
                if (a->samples == 0)
                        fputs("(no samples watched: classes come from explicit rules only; "
                              "use --samples N to let the classifier watch)\n",
                              stdout);
                k = plan_print_text(stdout, plan, p->decide.policies);
        }
        return k;
}

/* --dry-run: the topology, the kernel probe and the plan. */
static int oneshot_print(const OneshotArgs *a, const Pipeline *p, const Plan *plan) {
        int k = a->json ? oneshot_print_json(a, p, plan) : oneshot_print_text(a, p, plan);

        return k < 0 || fflush(stdout) != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

int topod_oneshot(const OneshotArgs *a) {
        _cleanup_(pipeline_freep) Pipeline *p = NULL;
        _cleanup_(plan_freep) Plan *plan = NULL;
        PipelineOptions o = { .root = a->root, .config = a->config, .policies = a->policies, .events = a->samples > 0 };

        if (watch_and_plan("topod", &o, a->samples, &p, &plan) < 0)
                return EXIT_FAILURE;
        return a->dry_run ? oneshot_print(a, p, plan) : oneshot_apply(a, p, plan);
}
