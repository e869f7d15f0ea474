/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* topod: topology-aware cgroup and core-scheduling policy manager.
 *
 * Today this runs the observe stage once (--oneshot --dry-run): it loads the
 * topology and probes the kernel through the root prefix and prints what it
 * found. The decide and apply stages and the event loop build on it. */

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/macro.h"
#include "base/root.h"
#include "check.h"
#include "observe/kernelcaps.h"
#include "observe/observe-print.h"
#include "observe/topology.h"

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
               "      --json       With --dry-run or --check: print JSON\n"
               "      --check [PATH…]  Validate topod.conf and policies and exit (see topoctl check)\n"
               "      --strict     With --check: warnings are errors\n"
               "      --offline    With --check: no warnings against this machine\n"
               "  -h, --help       Show this help\n"
               "      --version    Show the version\n"
               "\n"
               "See topod(8).\n");
}

static int observe_once(const char *root_dir, bool json) {
        _cleanup_(topology_freep) Topology *t = NULL;
        _cleanup_(kernelcaps_freep) KernelCaps *caps = NULL;
        _cleanup_(root_freep) Root *root = NULL;
        TopologySource src = { .kind = TOPOLOGY_SOURCE_ROOT, .arg = root_dir };
        int k;

        k = root_open(root_dir, &root);
        if (k < 0) {
                fprintf(stderr, "topod: cannot open root %s: %s\n", root_dir ?: "/", strerror(-k));
                return EXIT_FAILURE;
        }
        k = topology_load(&src, &t);
        if (k < 0) {
                fprintf(stderr, "topod: cannot load the topology below %s: %s\n", root_path(root), strerror(-k));
                return EXIT_FAILURE;
        }
        k = kernelcaps_probe(root, NULL, &caps);
        if (k < 0) {
                fprintf(stderr, "topod: kernel capability probe failed: %s\n", strerror(-k));
                return EXIT_FAILURE;
        }

        if (json) {
                _cleanup_(json_freep) Json *j = json_new(stdout, true);

                if (!j)
                        return EXIT_FAILURE;
                json_object_begin(j);
                json_key(j, "topology");
                if ((k = topology_print_json(j, t)) >= 0) {
                        json_key(j, "kernel");
                        k = kernelcaps_print_json(j, caps, root_path(root));
                }
                json_object_end(j);
        } else {
                k = topology_print_text(stdout, t);
                if (k >= 0) {
                        fputc('\n', stdout);
                        k = kernelcaps_print_text(stdout, caps, root_path(root));
                }
        }
        return k < 0 || fflush(stdout) != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

int main(int argc, char *argv[]) {
        enum { ARG_ROOT = 0x100, ARG_ONESHOT, ARG_DRY_RUN, ARG_JSON, ARG_VERSION, ARG_CHECK, ARG_STRICT, ARG_OFFLINE };
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
                {},
        };
        const char *root = NULL;
        bool oneshot = false, dry_run = false, json = false, check = false, strict = false, offline = false;
        int c;

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
                default:
                        return usage_error("unknown option or missing argument");
                }
        if (check)
                return topoctl_check(argv + optind, (size_t) (argc - optind), strict, offline, json, root);
        if (strict || offline)
                return usage_error("--strict and --offline go with --check");
        if (optind < argc)
                return usage_error("unexpected argument");
        if (json && !dry_run)
                return usage_error("--json goes with --dry-run or --check");
        if (!oneshot || !dry_run) {
                /* Said plainly rather than pretending: the plan/apply stages
                 * and the event loop are not built yet. */
                fputs("topod: only '--oneshot --dry-run' (observe and report) is available in this version\n",
                      stderr);
                return EXIT_FAILURE;
        }
        return observe_once(root, json);
}
