/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "plan-verb.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/macro.h"
#include "base/util.h"
#include "common/watch.h"
#include "decide/plan.h"
#include "pipeline/pipeline.h"
#include "pipeline/plan-diff.h"

int topoctl_plan(const PlanVerbArgs *a) {
        _cleanup_(pipeline_freep) Pipeline *p = NULL;
        _cleanup_(plan_freep) Plan *plan = NULL;
        PipelineOptions o = { .root = a->root, .config = a->config, .policies = a->policies, .events = a->samples > 0 };
        PlanDiffCounts counts;

        if (watch_and_plan("topoctl", &o, a->samples, &p, &plan) < 0)
                return EXIT_FAILURE;
        if (a->json) {
                _cleanup_(json_freep) Json *j = json_new(stdout, true);

                if (!j)
                        return EXIT_FAILURE;
                json_object_begin(j);
                json_key(j, "plan");
                (void) plan_print_json(j, plan, p->decide.policies);
                json_key(j, "differences");
                json_array_begin(j);
                (void) plan_diff(p, plan, j, NULL, &counts);
                json_array_end(j);
                json_key(j, "counts");
                plan_diff_print_counts(&counts, j, NULL);
                json_object_end(j);
        } else {
                (void) plan_diff(p, plan, NULL, stdout, &counts);
                plan_diff_print_counts(&counts, NULL, stdout);
        }
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
