/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* topoctl: ask topod, or the machine, what it sees and what it would do. */

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/paths.h"
#include "base/json.h"
#include "base/macro.h"
#include "base/root.h"
#include "base/util.h"
#include "classify-verb.h"
#include "client.h"
#include "common/bus-protocol.h"
#include "common/check.h"
#include "common/restore.h"
#include "plan-verb.h"
#include "decide/config.h"
#include "observe/kernelcaps.h"
#include "observe/observe-print.h"
#include "observe/topology.h"

#define EXIT_USAGE 2

/* The long options; a verb names those it takes (OPT()), and any other
 * given is refused rather than ignored. */
enum {
        ARG_JSON = 0x100,
        ARG_ROOT,
        ARG_XML,
        ARG_SYNTHETIC,
        ARG_VERSION,
        ARG_STRICT,
        ARG_OFFLINE,
        ARG_SAMPLES,
        ARG_INTERVAL,
        ARG_PID,
        ARG_ALL,
        ARG_EVENTS,
        ARG_CONFIG,
        ARG_POLICIES,
        ARG_STATE_DIR,
        ARG_CHECK,
        ARG_CAPS,
        _ARG_MAX,
};
#define OPT(arg) (1u << ((arg) - ARG_JSON))

typedef struct Args {
        unsigned given; /* OPT() of each option given */
        const char *root;
        const char *xml;
        const char *synthetic;
        const char *caps;
        bool json;
        bool strict;
        bool offline;
        bool check;
        ClassifyVerbArgs classify;
        const char *state_dir;
        int argc;      /* positional arguments after the verb */
        char **argv;
} Args;

_printf_(1, 2) static int usage_error(const char *fmt, ...) {
        va_list ap;

        fputs("topoctl: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputs("\nTry 'topoctl --help' for more information.\n", stderr);
        return EXIT_USAGE;
}

static void help(void) {
        printf("Usage: topoctl [OPTIONS] VERB [ARGS]\n"
               "\n"
               "Ask topod, or the machine, what it sees and what it would do.\n"
               "\n"
               "Verbs:\n"
               "  explain PID     Why each thread of PID is where it is (needs topod)\n"
               "  status          topod's state, and the kernel capability probe\n"
               "  reload          Make topod re-read its configuration; errors as file:line\n"
               "  plan            The plan in force (topod), or computed here if it is not running\n"
               "  reset           Put back everything topod changed (it pauses until a reload)\n"
               "  metrics         topod's metrics: Prometheus text exposition, or --json\n"
               "  topology        Print packages, NUMA nodes, LLCs, cores, PUs, SMT siblings\n"
               "  check [PATH…]   Validate topod.conf and policies; file:line diagnostics\n"
               "  classify        Watch threads for a while; print class, evidence, policy\n"
               "\n"
               "Options:\n"
               "      --json            Print JSON instead of text\n"
               "      --root DIR        Read /proc and /sys below DIR instead of /\n"
               "      --xml FILE        topology, check, plan: read an hwloc XML export\n"
               "      --synthetic DESC  topology, check, plan: use an hwloc synthetic description\n"
               "      --caps FILE       check, plan: another host's kernel probe (its topoctl status --json)\n"
               "      --strict          check: warnings are errors\n"
               "      --offline         check: no warnings against this machine\n"
               "      --check           plan: print the drift only; exit 1 on any (skipped items are not)\n"
               "      --samples N       classify, plan: scans after the first (default: window + dwell)\n"
               "      --interval TIME   classify: time between scans (default: sample_interval)\n"
               "      --pid PID         classify: only this process or thread\n"
               "      --all             classify: kernel threads too\n"
               "      --events          classify: list proc-connector events seen meanwhile\n"
               "      --config FILE     classify, plan: topod.conf to read (default " TOPOD_CONFIG_PATH ")\n"
               "      --policies PATH   classify, plan: policies to match (default: the config's policies_dir,\n"
               "                        else the layers of policies.d; see topod.policy(5))\n"
               "      --state-dir DIR   explain, status, reload, plan, reset, metrics: where topod's\n"
               "                        socket and journal are (default run/topod below the root)\n"
               "A verb given an option it does not take is a usage error.\n"
               "  -h, --help            Show this help\n"
               "      --version         Show the version\n"
               "\n"
               "Exit status: 0 success, 1 failure, 2 usage error. See topoctl(8).\n");
}

static int verb_topology(const Args *a) {
        _cleanup_(topology_freep) Topology *t = NULL;
        TopologySource src = { .kind = TOPOLOGY_SOURCE_ROOT, .arg = a->root };
        int k;

        if (a->argc > 0)
                return usage_error("topology takes no arguments, got '%s'", a->argv[0]);
        if (!!a->xml + !!a->synthetic + !!a->root > 1)
                return usage_error("%s", "--xml, --synthetic and --root exclude each other");
        if (a->xml)
                src = (TopologySource) { .kind = TOPOLOGY_SOURCE_XML, .arg = a->xml };
        else if (a->synthetic)
                src = (TopologySource) { .kind = TOPOLOGY_SOURCE_SYNTHETIC, .arg = a->synthetic };

        if (src.kind == TOPOLOGY_SOURCE_ROOT && a->root) {
                /* Fail on a missing directory here, with a clear message,
                 * rather than letting hwloc fall back to something else. */
                _cleanup_(root_freep) Root *r = NULL;

                k = root_open(a->root, &r);
                if (k < 0) {
                        fprintf(stderr, "topoctl: cannot open root %s: %s\n", a->root, strerror(-k));
                        return EXIT_FAILURE;
                }
        }

        k = topology_load(&src, &t);
        if (k < 0) {
                fprintf(stderr, "topoctl: cannot load the topology from %s%s%s: %s\n",
                        src.kind == TOPOLOGY_SOURCE_XML ? "XML " : src.kind == TOPOLOGY_SOURCE_SYNTHETIC ? "synthetic " : "",
                        src.arg ?: "the live machine", src.kind == TOPOLOGY_SOURCE_SYNTHETIC ? " (bad description?)" : "",
                        strerror(-k));
                return EXIT_FAILURE;
        }
        if (a->json) {
                _cleanup_(json_freep) Json *j = json_new(stdout, true);

                if (!j)
                        return EXIT_FAILURE;
                k = topology_print_json(j, t);
        } else
                k = topology_print_text(stdout, t);
        if (k < 0) {
                fprintf(stderr, "topoctl: cannot print the topology: %s\n", strerror(-k));
                return EXIT_FAILURE;
        }
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* Ask the running topod; print the reply. Returns the exit status, or -1
 * when no daemon listens (reason in *ret_reason) so the caller can fall
 * back or say so. A daemon that may run but cannot be reached (a full
 * backlog, no permission) is a failure, never a reason to act without it. */
static int ask_daemon(const Args *a, BusMethod method, pid_t pid, char **ret_reason) {
        _cleanup_(client_freep) Client *c = NULL;
        _cleanup_free_ char *text = NULL, *name = NULL, *message = NULL;
        int k;

        k = client_open(a->root, a->state_dir, &c, ret_reason);
        if (k == -ENOENT || k == -ECONNREFUSED)
                return -1;
        if (k < 0) {
                fprintf(stderr, "topoctl: %s\n", *ret_reason ?: strerror(-k));
                return EXIT_FAILURE;
        }
        k = client_call(c, method, pid, a->json, &text, &name, &message);
        if (k < 0 && a->json && method == BUS_METHOD_RELOAD && message && message[0] == '{') {
                /* A refused reload answers JSON too: on stdout, exit 1. */
                fputs(message, stdout);
                (void) fflush(stdout);
                return EXIT_FAILURE;
        }
        if (k < 0) {
                /* A refused reload's message is the file:line list. */
                fprintf(stderr, "%s%s", message ?: strerror(-k),
                        message && *message && message[strlen(message) - 1] == '\n' ? "" : "\n");
                if (name && !strstr(name, BUS_ERROR_PREFIX) && !(message && strstr(message, name)))
                        fprintf(stderr, "topoctl: %s failed: %s\n", bus_method_to_string(method), name);
                return EXIT_FAILURE;
        }
        fputs(text, stdout);
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* For the verbs that need the daemon: one line, exit 1. */
static int need_daemon(const Args *a, BusMethod method, pid_t pid) {
        _cleanup_free_ char *reason = NULL;
        int r = ask_daemon(a, method, pid, &reason);

        if (r >= 0)
                return r;
        fprintf(stderr, "topoctl: %s\n", reason ?: "topod is not running");
        return EXIT_FAILURE;
}

static int verb_explain(const Args *a) {
        char *end;
        long v;

        if (a->argc != 1)
                return usage_error("%s", "explain takes one process or thread id");
        errno = 0;
        v = strtol(a->argv[0], &end, 10);
        if (errno || *end || end == a->argv[0] || v <= 0 || v > INT32_MAX)
                return usage_error("explain takes a process or thread id, got '%s'", a->argv[0]);
        return need_daemon(a, BUS_METHOD_EXPLAIN, (pid_t) v);
}

static int verb_reload(const Args *a) {
        if (a->argc > 0)
                return usage_error("reload takes no arguments, got '%s'", a->argv[0]);
        return need_daemon(a, BUS_METHOD_RELOAD, 0);
}

static int verb_metrics(const Args *a) {
        if (a->argc > 0)
                return usage_error("metrics takes no arguments, got '%s'", a->argv[0]);
        return need_daemon(a, BUS_METHOD_METRICS, 0);
}

static int verb_status(const Args *a) {
        _cleanup_(kernelcaps_freep) KernelCaps *c = NULL;
        _cleanup_(root_freep) Root *r = NULL;
        bool not_running = false;
        int k;

        if (a->argc > 0)
                return usage_error("status takes no arguments, got '%s'", a->argv[0]);
        {
                _cleanup_free_ char *reason = NULL;
                int d = ask_daemon(a, BUS_METHOD_STATUS, 0, &reason);

                if (d >= 0)
                        return d;
                /* No daemon: say so, and still print what the kernel
                 * offers — the first thing to look at when it won't start. */
                fprintf(stderr, "topoctl: %s\n", reason ?: "topod is not running");
                not_running = true;
        }
        k = root_open(a->root, &r);
        if (k < 0) {
                fprintf(stderr, "topoctl: cannot open root %s: %s\n", a->root ?: "/", strerror(-k));
                return EXIT_FAILURE;
        }
        k = kernelcaps_probe(r, NULL, &c);
        if (k < 0) {
                fprintf(stderr, "topoctl: kernel capability probe failed: %s\n", strerror(-k));
                return EXIT_FAILURE;
        }
        if (a->json) {
                _cleanup_(json_freep) Json *j = json_new(stdout, true);

                if (!j)
                        return EXIT_FAILURE;
                k = kernelcaps_print_json(j, c, root_path(r));
        } else
                k = kernelcaps_print_text(stdout, c, root_path(r));
        if (k < 0)
                return EXIT_FAILURE;
        return fflush(stdout) == 0 && !not_running ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* check and plan for another host class: --xml or --synthetic, --caps. */
static int other_host_usage(const Args *a) {
        if (a->xml && a->synthetic)
                return usage_error("%s", "--xml and --synthetic exclude each other");
        if (a->offline && (a->xml || a->synthetic || a->caps))
                return usage_error("%s", "--offline checks no machine: it excludes --xml, --synthetic and --caps");
        if (a->check && (a->xml || a->synthetic || a->caps))
                return usage_error("%s", "--check compares with this machine: it excludes --xml, --synthetic and --caps");
        return 0;
}

static int verb_check(const Args *a) {
        CheckHost host = { .xml = a->xml, .synthetic = a->synthetic, .caps = a->caps };
        int u = other_host_usage(a);

        if (u)
                return u;
        return topoctl_check_host(NULL, a->argv, (size_t) a->argc, a->strict, a->offline, a->json, a->root, &host);
}

static int verb_classify(const Args *a) {
        ClassifyVerbArgs c = a->classify;

        if (a->argc > 0)
                return usage_error("classify takes no arguments, got '%s'", a->argv[0]);
        c.root = a->root;
        c.json = a->json;
        return topoctl_classify(&c);
}

static int verb_plan(const Args *a) {
        PlanVerbArgs p = {
                .root = a->root,
                .config = a->classify.config,
                .policies = a->classify.policies,
                .samples = a->classify.samples,
                .json = a->json,
                .check = a->check,
                .xml = a->xml,
                .synthetic = a->synthetic,
                .caps = a->caps,
        };
        int u = other_host_usage(a);

        if (u)
                return u;
        if (a->argc > 0)
                return usage_error("plan takes no arguments, got '%s'", a->argv[0]);
        if (!a->classify.config && !a->classify.policies && !a->classify.samples && !a->xml && !a->synthetic && !a->caps) {
                _cleanup_free_ char *reason = NULL;
                int d = a->check ? topoctl_plan_check_daemon(a->root, a->state_dir, a->json, &reason)
                                 : ask_daemon(a, BUS_METHOD_PLAN, 0, &reason);

                if (d >= 0)
                        return d;
                fprintf(stderr, "topoctl: %s; computing the plan here\n", reason ?: "topod is not running");
        }
        return topoctl_plan(&p);
}

static int verb_reset(const Args *a) {
        if (a->argc > 0)
                return usage_error("reset takes no arguments, got '%s'", a->argv[0]);
        {
                _cleanup_free_ char *reason = NULL;
                int d = ask_daemon(a, BUS_METHOD_RESET, 0, &reason);

                if (d >= 0)
                        return d;
        }
        /* No daemon: restore from the journal it left, here. */
        return topoctl_restore(a->root, a->state_dir, a->json);
}

#define OPT_DAEMON (OPT(ARG_JSON) | OPT(ARG_ROOT) | OPT(ARG_STATE_DIR))
#define OPT_RULES (OPT(ARG_CONFIG) | OPT(ARG_POLICIES) | OPT(ARG_SAMPLES))

static const struct {
        const char *name;
        int (*run)(const Args *a);
        unsigned takes; /* OPT() of the options it uses */
} verbs[] = {
        { "explain", verb_explain, OPT_DAEMON },
        { "status", verb_status, OPT_DAEMON },
        { "reload", verb_reload, OPT_DAEMON },
        { "topology", verb_topology, OPT(ARG_JSON) | OPT(ARG_ROOT) | OPT(ARG_XML) | OPT(ARG_SYNTHETIC) },
        { "check", verb_check,
          OPT(ARG_JSON) | OPT(ARG_ROOT) | OPT(ARG_STRICT) | OPT(ARG_OFFLINE) | OPT(ARG_XML) | OPT(ARG_SYNTHETIC) | OPT(ARG_CAPS) },
        { "classify", verb_classify,
          OPT(ARG_JSON) | OPT(ARG_ROOT) | OPT_RULES | OPT(ARG_INTERVAL) | OPT(ARG_PID) | OPT(ARG_ALL) | OPT(ARG_EVENTS) },
        { "plan", verb_plan, OPT_DAEMON | OPT_RULES | OPT(ARG_CHECK) | OPT(ARG_XML) | OPT(ARG_SYNTHETIC) | OPT(ARG_CAPS) },
        { "reset", verb_reset, OPT_DAEMON },
        { "metrics", verb_metrics, OPT_DAEMON },
};

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "json", no_argument, NULL, ARG_JSON },
                { "root", required_argument, NULL, ARG_ROOT },
                { "xml", required_argument, NULL, ARG_XML },
                { "synthetic", required_argument, NULL, ARG_SYNTHETIC },
                { "strict", no_argument, NULL, ARG_STRICT },
                { "offline", no_argument, NULL, ARG_OFFLINE },
                { "samples", required_argument, NULL, ARG_SAMPLES },
                { "interval", required_argument, NULL, ARG_INTERVAL },
                { "pid", required_argument, NULL, ARG_PID },
                { "all", no_argument, NULL, ARG_ALL },
                { "events", no_argument, NULL, ARG_EVENTS },
                { "config", required_argument, NULL, ARG_CONFIG },
                { "policies", required_argument, NULL, ARG_POLICIES },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                { "check", no_argument, NULL, ARG_CHECK },
                { "caps", required_argument, NULL, ARG_CAPS },
                {},
        };
        Args a = {};
        int c;

        /* Snapshots of every thread are large arrays, replaced every
         * sample: keep them mmap()ed so freeing one gives the memory back,
         * rather than letting glibc raise its threshold and keep them. */
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);

        opterr = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                if (c >= ARG_JSON && c < _ARG_MAX)
                        a.given |= OPT(c);
                switch (c) {
                case 'h':
                        help();
                        return EXIT_SUCCESS;
                case ARG_VERSION:
                        puts("topoctl " TOPOD_VERSION);
                        return EXIT_SUCCESS;
                case ARG_JSON:
                        a.json = true;
                        break;
                case ARG_ROOT:
                        a.root = optarg;
                        break;
                case ARG_XML:
                        a.xml = optarg;
                        break;
                case ARG_SYNTHETIC:
                        a.synthetic = optarg;
                        break;
                case ARG_STRICT:
                        a.strict = true;
                        break;
                case ARG_OFFLINE:
                        a.offline = true;
                        break;
                case ARG_SAMPLES: {
                        char *end;
                        unsigned long v;

                        errno = 0;
                        v = strtoul(optarg, &end, 10);
                        if (errno || *end || end == optarg || v < 1 || v > 3600)
                                return usage_error("--samples takes a number from 1 to 3600, got '%s'", optarg);
                        a.classify.samples = (unsigned) v;
                        break;
                }
                case ARG_INTERVAL:
                        if (config_parse_duration(optarg, &a.classify.interval_usec) < 0 ||
                            a.classify.interval_usec < 10000 || a.classify.interval_usec > 3600000000u)
                                return usage_error("--interval takes a time from 10ms to 1h (e.g. 500ms, 2s), got '%s'",
                                                   optarg);
                        break;
                case ARG_PID: {
                        char *end;
                        long v;

                        errno = 0;
                        v = strtol(optarg, &end, 10);
                        if (errno || *end || end == optarg || v <= 0 || v > INT32_MAX)
                                return usage_error("--pid takes a process or thread id, got '%s'", optarg);
                        a.classify.pid = (pid_t) v;
                        break;
                }
                case ARG_ALL:
                        a.classify.all = true;
                        break;
                case ARG_EVENTS:
                        a.classify.events = true;
                        break;
                case ARG_CONFIG:
                        a.classify.config = optarg;
                        break;
                case ARG_POLICIES:
                        a.classify.policies = optarg;
                        break;
                case ARG_STATE_DIR:
                        a.state_dir = optarg;
                        break;
                case ARG_CHECK:
                        a.check = true;
                        break;
                case ARG_CAPS:
                        a.caps = optarg;
                        break;
                case '?':
                        if (optopt)
                                return usage_error("option '-%c' is unknown or needs an argument", optopt);
                        return usage_error("option '%s' is unknown or needs an argument", argv[optind - 1]);
                default:
                        return usage_error("%s", "internal option parsing error");
                }
        }

        if (optind >= argc)
                return usage_error("%s", "missing verb");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(argv[optind], verbs[i].name)) {
                        unsigned extra = a.given & ~verbs[i].takes;

                        for (size_t o = 0; extra && options[o].name; o++)
                                if (options[o].val >= ARG_JSON && options[o].val < _ARG_MAX &&
                                    (extra & OPT(options[o].val)))
                                        return usage_error("%s does not take --%s", verbs[i].name, options[o].name);
                        a.argc = argc - optind - 1;
                        a.argv = argv + optind + 1;
                        return verbs[i].run(&a);
                }
        return usage_error("unknown verb '%s'", argv[optind]);
}
