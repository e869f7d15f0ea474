/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* topod: topology-aware cgroup and core-scheduling policy manager.
 *
 * The options pick one of: the daemon (daemon.c: the event loop, the bus,
 * the sandbox), one pass (--oneshot, oneshot.c, with --dry-run only
 * printing the plan), a restore from the journal (--restore), or a check
 * of the configuration (--check); this file only parses them. */

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/macro.h"
#include "base/paths.h"
#include "common/check.h"
#include "common/restore.h"
#include "daemon.h"
#include "log.h"
#include "oneshot.h"

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
               "      --config FILE  topod.conf (default " TOPOD_CONFIG_PATH " below the root)\n"
               "      --policies PATH  Policies (default: the configuration's policies_dir, else the layers\n"
               "                       " TOPOD_POLICIES_RUNTIME_DIR ", " TOPOD_POLICIES_LOCAL_DIR ",\n"
               "                       " TOPOD_POLICIES_VENDOR_DIR ")\n"
               "      --check [PATH…]  Validate topod.conf and policies and exit (see topoctl check)\n"
               "      --strict     With --check: warnings are errors\n"
               "      --offline    With --check: no warnings against this machine\n"
               "  -h, --help       Show this help\n"
               "      --version    Show the version\n"
               "\n"
               "See topod(8).\n");
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
        if (check && (oneshot || dry_run || restore || samples || state_dir || log_level >= 0))
                return usage_error("--check takes the files to check as arguments (topod --check [PATH…]), "
                                   "with --config, --policies, --strict, --offline, --json and --root only");
        if (check) {
                /* --policies PATH: one more path to check, after the arguments */
                size_t n = (size_t) (argc - optind);
                _cleanup_free_ char **paths = calloc(n + 2, sizeof(char *));

                if (!paths)
                        return EXIT_FAILURE;
                for (size_t i = 0; i < n; i++)
                        paths[i] = argv[optind + i];
                if (policies)
                        paths[n++] = (char *) policies;
                return topoctl_check_config(config, paths, n, strict, offline, json, root);
        }
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
                return topod_oneshot(&a);
        }
}
