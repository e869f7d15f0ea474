/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One plan from a short watch of the machine, without the daemon: what
 * topod --oneshot and topoctl plan both do before they apply or print. */

#include "decide/plan.h"
#include "pipeline/pipeline.h"

/* Open the pipeline (what its parsers found is printed on stderr, file:line),
 * scan samples + 1 times a sample interval apart (so the classifier can
 * tell classes), and plan. 0, or a negative errno with what failed said
 * on stderr as "program: …". */
int watch_and_plan(const char *program, const PipelineOptions *o, unsigned samples, Pipeline **ret_p, Plan **ret_plan);
