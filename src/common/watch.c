/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A short watch of the machine and one plan (see watch.h). */
#include "watch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "decide/diag.h"
#include "report.h"

int watch_and_plan(const char *program, const PipelineOptions *o, unsigned samples, Pipeline **ret_p, Plan **ret_plan) {
        _cleanup_(pipeline_freep) Pipeline *p = NULL;
        _cleanup_(diag_freep) Diagnostics *dg = diag_new();
        _cleanup_(plan_freep) Plan *plan = NULL;
        _cleanup_free_ char *reason = NULL;
        uint64_t next;
        int k;

        if (!dg)
                return -ENOMEM;
        k = pipeline_new(o, dg, &p, &reason);
        report_print_diagnostics(stderr, dg);
        if (k < 0) {
                fprintf(stderr, "%s: %s\n", program, reason ?: strerror(-k));
                return k;
        }
        next = pipeline_now_usec();
        for (unsigned i = 0; i <= samples; i++) {
                if ((k = pipeline_sample(p, false)) < 0) {
                        fprintf(stderr, "%s: scanning /proc failed: %s\n", program, strerror(-k));
                        return k;
                }
                if (i < samples) {
                        next += p->decide.config->sample_interval_usec;
                        pipeline_wait_until(p, next);
                }
        }
        if ((k = pipeline_plan(p, NULL, &plan)) < 0) {
                fprintf(stderr, "%s: planning failed: %s\n", program, strerror(-k));
                return k;
        }
        *ret_p = TAKE_PTR(p);
        *ret_plan = TAKE_PTR(plan);
        return 0;
}
