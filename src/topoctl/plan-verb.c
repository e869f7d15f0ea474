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
#include "client.h"
#include "common/watch.h"
#include "decide/plan.h"
#include "pipeline/pipeline.h"
#include "pipeline/plan-diff.h"

/* Text: the "N to change, …" line; JSON: "differs" in the "counts"
 * object that follows "differences" (strings inside are escaped, so a
 * quoted key is a key). */
int plan_reply_drift(const char *reply, bool json, unsigned *ret) {
        unsigned n;

        if (json) {
                const char *d = strstr(reply, "\"differences\"");
                const char *c = d ? strstr(d, "\"counts\":") : NULL;
                const char *v = c ? strstr(c, "\"differs\":") : NULL;

                if (!v || sscanf(v + strlen("\"differs\":"), " %u", &n) != 1)
                        return -EBADMSG;
                *ret = n;
                return 0;
        }
        for (const char *l = reply; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                char tail[16];

                if (sscanf(l, "%u to chang%15s", &n, tail) == 2 && streq(tail, "e,")) {
                        *ret = n;
                        return 0;
                }
        }
        return -EBADMSG;
}

int topoctl_plan_check_daemon(const char *root, const char *state_dir, bool json, char **ret_reason) {
        _cleanup_(client_freep) Client *c = NULL;
        _cleanup_free_ char *text = NULL, *name = NULL, *message = NULL;
        const char *section;
        unsigned drift;
        int k;

        k = client_open(root, state_dir, &c, ret_reason);
        if (k == -ENOENT || k == -ECONNREFUSED)
                return -1;
        if (k < 0) {
                fprintf(stderr, "topoctl: %s\n", *ret_reason ?: strerror(-k));
                return EXIT_FAILURE;
        }
        k = client_call(c, BUS_METHOD_PLAN, 0, json, &text, &name, &message);
        if (k < 0) {
                fprintf(stderr, "topoctl: plan failed: %s\n", message ?: name ?: strerror(-k));
                return EXIT_FAILURE;
        }
        if (json) {
                fputs(text, stdout);
                if (fflush(stdout) != 0)
                        return EXIT_FAILURE;
                if (strstr(text, "\"paused\": true")) {
                        fputs("topoctl: topod is paused by 'topoctl reset': the plan is not in force\n", stderr);
                        return EXIT_FAILURE;
                }
                if (plan_reply_drift(text, true, &drift) < 0) {
                        fputs("topoctl: topod's plan reply has no counts\n", stderr);
                        return EXIT_FAILURE;
                }
                return drift > 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        }
        /* The drift: what follows the plan in the reply. */
        section = strstr(text, "\npaused by 'topoctl reset'");
        if (section) {
                fputs(section + 1, stdout);
                (void) fflush(stdout);
                return EXIT_FAILURE;
        }
        section = strstr(text, "\nCompared with the machine:\n");
        section = section ? section + strlen("\nCompared with the machine:\n") : text;
        fputs(section, stdout);
        if (fflush(stdout) != 0)
                return EXIT_FAILURE;
        if (plan_reply_drift(section, false, &drift) < 0) {
                fputs("topoctl: topod's plan reply has no counts\n", stderr);
                return EXIT_FAILURE;
        }
        return drift > 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

int topoctl_plan(const PlanVerbArgs *a) {
        _cleanup_(pipeline_freep) Pipeline *p = NULL;
        _cleanup_(plan_freep) Plan *plan = NULL;
        PipelineOptions o = { .root = a->root, .config = a->config, .policies = a->policies, .events = a->samples > 0,
                              .xml = a->xml, .synthetic = a->synthetic, .caps = a->caps };
        bool other = a->xml || a->synthetic || a->caps;
        PlanDiffCounts counts = {};

        if (watch_and_plan("topoctl", &o, a->samples, &p, &plan) < 0)
                return EXIT_FAILURE;
        if (a->json) {
                _cleanup_(json_freep) Json *j = json_new(stdout, true);

                if (!j)
                        return EXIT_FAILURE;
                json_object_begin(j);
                json_key(j, "plan");
                (void) plan_print_json(j, plan, p->decide.policies);
                if (other) {
                        /* This machine is not that host: nothing to compare. */
                        json_key(j, "host");
                        json_object_begin(j);
                        json_kv_string(j, "xml", a->xml);
                        json_kv_string(j, "synthetic", a->synthetic);
                        json_kv_string(j, "caps", a->caps);
                        json_object_end(j);
                        json_object_end(j);
                        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
                }
                json_key(j, "differences");
                json_array_begin(j);
                (void) plan_diff(p, plan, j, NULL, &counts);
                json_array_end(j);
                json_key(j, "counts");
                plan_diff_print_counts(&counts, j, NULL);
                json_kv_bool(j, "drift", counts.differs > 0);
                json_object_end(j);
        } else {
                /* As topod's reply: the plan, then the comparison; the
                 * comparison alone for --check. */
                if (!a->check)
                        (void) plan_print_text(stdout, plan, p->decide.policies);
                if (other) {
                        printf("\nPlanned for %s%s%s%s%s (this machine's tasks); not compared with this machine\n",
                               a->xml ? "the topology of " : a->synthetic ? "the synthetic topology " : "this topology",
                               a->xml ?: a->synthetic ?: "", a->caps ? " and " : "",
                               a->caps ? "the kernel probe of " : "", a->caps ?: "");
                        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
                }
                if (!a->check)
                        fputs("\nCompared with the machine:\n", stdout);
                (void) plan_diff(p, plan, NULL, stdout, &counts);
                plan_diff_print_counts(&counts, NULL, stdout);
        }
        if (fflush(stdout) != 0)
                return EXIT_FAILURE;
        return a->check && counts.differs > 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
