/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* topod: topology-aware cgroup and core-scheduling policy manager.
 *
 * The options pick one of: the daemon (daemon.c: the event loop, the bus,
 * the sandbox), one pass (--oneshot, with --dry-run only printing the
 * plan), a restore from the journal (--restore), or a check of the
 * configuration (--check). */

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/json.h"
#include "base/macro.h"
#include "base/root.h"
#include "common/check.h"
#include "common/report.h"
#include "common/restore.h"
#include "common/state-dir.h"
#include "daemon.h"
#include "log.h"
#include "observe/kernelcaps.h"
#include "observe/observe-print.h"
#include "observe/topology.h"
#include "apply/reconcile.h"
#include "pipeline/pipeline.h"

#define EXIT_USAGE 2

static int usage_error(const char *msg) {
        fprintf(stderr, "topod: %s\nTry 'topod --help' for more information.\n", msg);
        return EXIT_USAGE;
}

static void help(void) {
        printf("Usage: topod [OPTIONS]\n"
               "\n"
               "Topology-aware cgroup and core-scheduling policy manager.\n"
               "\n"
               "Options:\n"
               "      --root DIR   Read and write /proc, /sys below DIR instead of /\n"
               "      --oneshot    Run the pipeline once and exit\n"
               "      --dry-run    Change nothing; print what was observed and decided\n"
               "      --restore    Put back what the journal recorded, then exit\n"
               "      --state-dir DIR  Where the journal and the socket live (default run/topod below the root)\n"
               "      --log-level LEVEL  err, warning, notice, info or debug (default: topod.conf's log_level)\n"
               "      --json       With --oneshot, --restore or --check: print JSON\n"
               "      --samples N  With --oneshot: watch N sample intervals first (classes)\n"
               "      --config FILE  topod.conf (default /etc/topod/topod.conf below the root)\n"
               "      --policies PATH  Policies (default: the configuration's policies_dir)\n"
               "      --check [PATH…]  Validate topod.conf and policies and exit (see topoctl check)\n"
               "      --strict     With --check: warnings are errors\n"
               "      --offline    With --check: no warnings against this machine\n"
               "  -h, --help       Show this help\n"
               "      --version    Show the version\n"
               "\n"
               "See topod(8).\n");
}

typedef struct OneshotArgs {
        const char *root, *config, *policies, *state_dir;
        unsigned samples;
        bool json;
        bool dry_run;
} OneshotArgs;

/* One pass of the pipeline without touching anything: observe (watching
 * for some samples so the classifier can tell classes), decide, print. */
static int run_oneshot(const OneshotArgs *a) {
        _cleanup_(pipeline_freep) Pipeline *p = NULL;
        _cleanup_(diag_freep) Diagnostics *d = diag_new();
        _cleanup_(plan_freep) Plan *plan = NULL;
        _cleanup_free_ char *reason = NULL;
        PipelineOptions o = { .root = a->root, .config = a->config, .policies = a->policies, .events = a->samples > 0 };
        uint64_t next;
        int k;

        if (!d)
                return EXIT_FAILURE;
        k = pipeline_new(&o, d, &p, &reason);
        report_print_diagnostics(stderr, d);
        if (k < 0) {
                fprintf(stderr, "topod: %s\n", reason ?: strerror(-k));
                return EXIT_FAILURE;
        }
        next = pipeline_now_usec();
        for (unsigned i = 0; i <= a->samples; i++) {
                if ((k = pipeline_sample(p, false)) < 0) {
                        fprintf(stderr, "topod: scanning /proc failed: %s\n", strerror(-k));
                        return EXIT_FAILURE;
                }
                if (i < a->samples) {
                        next += p->config->sample_interval_usec;
                        pipeline_wait_until(p, next);
                }
        }
        if ((k = pipeline_plan(p, &plan)) < 0) {
                fprintf(stderr, "topod: planning failed: %s\n", strerror(-k));
                return EXIT_FAILURE;
        }

        if (!a->dry_run) {
                /* Apply: journal every original first; the journal stays
                 * for topod --restore (topoctl reset) to put things back. */
                _cleanup_(journal_freep) Journal *jr = NULL;
                _cleanup_(cookie_applier_freep) CookieApplier *ca = NULL;
                _cleanup_(reconcile_report_freep) ReconcileReport *r = NULL;
                _cleanup_close_ int lock = -EBADF;
                bool found = false;

                if ((k = state_dir_open_journal(a->state_dir, p->root, &jr, &found, &lock)) < 0)
                        return EXIT_FAILURE;
                if (p->caps->core_sched.available && (k = cookie_applier_new(p->root, NULL, &ca)) >= 0) {
                        CookieInterlocks il = { .smt_off = !p->caps->smt_active,
                                                .sched_ext_active = p->caps->sched_ext_active };
                        cookie_applier_set_interlocks(ca, &il);
                }
                {
                        Reconciler rc = { .root = p->root, .caps = p->caps, .journal = jr, .cookies = ca };

                        if ((k = reconcile_apply(&rc, plan, &r)) < 0) {
                                fprintf(stderr, "topod: apply failed: %s\n", strerror(-k));
                                return EXIT_FAILURE;
                        }
                }
                if (report_print(stdout, r, a->json) < 0 || fflush(stdout) != 0)
                        return EXIT_FAILURE;
                return r->counts[RECONCILE_FAILED] == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
        }

        if (a->json) {
                _cleanup_(json_freep) Json *j = json_new(stdout, true);

                if (!j)
                        return EXIT_FAILURE;
                json_object_begin(j);
                json_kv_uint(j, "samples", a->samples);
                json_key(j, "topology");
                if ((k = topology_print_json(j, p->topology)) >= 0) {
                        json_key(j, "kernel");
                        k = kernelcaps_print_json(j, p->caps, root_path(p->root));
                }
                if (k >= 0) {
                        json_key(j, "plan");
                        k = plan_print_json(j, plan, p->policies);
                }
                json_object_end(j);
        } else {
                k = topology_print_text(stdout, p->topology);
                if (k >= 0) {
                        fputc('\n', stdout);
                        k = kernelcaps_print_text(stdout, p->caps, root_path(p->root));
                }
                if (k >= 0) {
                        fputc('\n', stdout);
                        if (a->samples == 0)
                                fputs("(no samples watched: classes come from explicit rules only; "
                                      "use --samples N to let the classifier watch)\n",
                                      stdout);
                        k = plan_print_text(stdout, plan, p->policies);
                }
        }
        return k < 0 || fflush(stdout) != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

int main(int argc, char *argv[]) {
        enum { ARG_ROOT = 0x100, ARG_ONESHOT, ARG_DRY_RUN, ARG_JSON, ARG_VERSION, ARG_CHECK, ARG_STRICT, ARG_OFFLINE,
               ARG_SAMPLES, ARG_CONFIG, ARG_POLICIES,
               ARG_RESTORE, ARG_STATE_DIR, ARG_LOG_LEVEL };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "root", required_argument, NULL, ARG_ROOT },
                { "oneshot", no_argument, NULL, ARG_ONESHOT },
                { "dry-run", no_argument, NULL, ARG_DRY_RUN },
                { "json", no_argument, NULL, ARG_JSON },
                { "check", no_argument, NULL, ARG_CHECK },
                { "strict", no_argument, NULL, ARG_STRICT },
                { "offline", no_argument, NULL, ARG_OFFLINE },
                { "samples", required_argument, NULL, ARG_SAMPLES },
                { "config", required_argument, NULL, ARG_CONFIG },
                { "policies", required_argument, NULL, ARG_POLICIES },
                { "restore", no_argument, NULL, ARG_RESTORE },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                {},
        };
        const char *root = NULL, *config = NULL, *policies = NULL, *state_dir = NULL;
        bool restore = false;
        unsigned samples = 0;
        int log_level = -1;
        bool oneshot = false, dry_run = false, json = false, check = false, strict = false, offline = false;
        int c;

        /* Snapshots of every thread are large arrays, replaced every
         * sample: keep them mmap()ed so freeing one gives the memory back,
         * rather than letting glibc raise its threshold and keep them. */
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);

        opterr = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return EXIT_SUCCESS;
                case ARG_VERSION:
                        puts("topod " TOPOD_VERSION);
                        return EXIT_SUCCESS;
                case ARG_ROOT:
                        root = optarg;
                        break;
                case ARG_ONESHOT:
                        oneshot = true;
                        break;
                case ARG_DRY_RUN:
                        dry_run = true;
                        break;
                case ARG_JSON:
                        json = true;
                        break;
                case ARG_CHECK:
                        check = true;
                        break;
                case ARG_STRICT:
                        strict = true;
                        break;
                case ARG_OFFLINE:
                        offline = true;
                        break;
                case ARG_SAMPLES: {
                        char *end;
                        unsigned long v;

                        errno = 0;
                        v = strtoul(optarg, &end, 10);
                        if (errno || *end || end == optarg || v > 3600)
                                return usage_error("--samples takes a number from 0 to 3600");
                        samples = (unsigned) v;
                        break;
                }
                case ARG_CONFIG:
                        config = optarg;
                        break;
                case ARG_POLICIES:
                        policies = optarg;
                        break;
                case ARG_RESTORE:
                        restore = true;
                        break;
                case ARG_STATE_DIR:
                        state_dir = optarg;
                        break;
                case ARG_LOG_LEVEL:
                        log_level = log_level_from_string(optarg);
                        if (log_level < 0)
                                return usage_error("--log-level takes err, warning, notice, info or debug");
                        break;
                default:
                        return usage_error("unknown option or missing argument");
                }
        /* What a mode does not use is refused, not ignored: "--restore
         * --dry-run" must not restore. */
        if (check && (oneshot || dry_run || restore || samples || config || policies || state_dir || log_level >= 0))
                return usage_error("--check takes the files to check as arguments (topod --check [PATH…]), "
                                   "with --strict, --offline, --json and --root only");
        if (check)
                return topoctl_check(argv + optind, (size_t) (argc - optind), strict, offline, json, root);
        if (restore && (oneshot || dry_run || samples || config || policies || log_level >= 0))
                return usage_error("--restore goes with --root, --state-dir and --json only");
        if (strict || offline)
                return usage_error("--strict and --offline go with --check");
        if (optind < argc)
                return usage_error("unexpected argument");
        {
                OneshotArgs a = { .root = root, .config = config, .policies = policies, .state_dir = state_dir,
                                  .samples = samples, .json = json, .dry_run = dry_run };

                if (restore)
                        return topoctl_restore(a.root, a.state_dir, a.json);
                if (oneshot && log_level >= 0)
                        return usage_error("--log-level goes with the daemon (no --oneshot)");
                if (dry_run && state_dir)
                        return usage_error("--dry-run uses no state directory (no --state-dir)");
                if (!oneshot) {
                        DaemonArgs da = { .root = root, .config = config, .policies = policies, .state_dir = state_dir,
                                          .log_level = log_level };

                        if (dry_run || json || samples)
                                return usage_error("--dry-run, --json and --samples go with --oneshot");
                        return topod_run(&da);
                }
                return run_oneshot(&a);
        }
}
