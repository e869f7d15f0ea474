/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* topod.conf: the daemon's own settings as plain values.
 *
 * TOPOD_CONFIG_PATH (base/paths.h: /etc/topod/topod.conf in a build for
 * prefix /usr) is read first, then the *.conf files of topod.conf.d in file-name
 * order (byte order of the name, not the path); a key set in a later file
 * overrides the earlier value. A bad value is an error and leaves the value
 * before it in place. Every key and default is in topod.conf(5). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/macro.h"
#include "base/paths.h"
#include "diag.h"
#include "initext.h"
#include "scope.h"

#define CONFIG_FILE_SIZE_MAX (64u * 1024u)
#define CONFIG_DROPINS_MAX 128u
#define CONFIG_PATH_MAX 1024u

#define USEC_PER_MSEC UINT64_C(1000)
#define USEC_PER_SEC UINT64_C(1000000)

#define CONFIG_DEFAULT_PATH TOPOD_CONFIG_PATH

typedef enum ConfigHierarchy {
        CONFIG_HIERARCHY_AUTO,   /* nested where cgroup v2 delegation allows, else flat */
        CONFIG_HIERARCHY_FLAT,   /* one level: <cgroup_root>/<group> */
        CONFIG_HIERARCHY_NESTED, /* <cgroup_root>/<policy>/<group>, domains below */
        _CONFIG_HIERARCHY_MAX,
} ConfigHierarchy;

/* [cgroup] driver: who makes topod's groups and moves processes. */
typedef enum ConfigCgroupDriver {
        CONFIG_CGROUP_DRIVER_AUTO,     /* systemd where PID 1 is systemd on a pure cgroup2 host */
        CONFIG_CGROUP_DRIVER_SYSTEMD,  /* transient units over the system bus (apply/unit.h) */
        CONFIG_CGROUP_DRIVER_CGROUPFS, /* topod's own writes to cgroupfs (apply/cgroup.h) */
        _CONFIG_CGROUP_DRIVER_MAX,
} ConfigCgroupDriver;

typedef enum ConfigSeccomp {
        CONFIG_SECCOMP_OFF,
        CONFIG_SECCOMP_LOG,     /* report syscalls outside the allow-list, kill nothing */
        CONFIG_SECCOMP_ENFORCE,
        _CONFIG_SECCOMP_MAX,
} ConfigSeccomp;

typedef enum ConfigLogLevel { /* syslog(3) priorities */
        CONFIG_LOG_ERR = 3,
        CONFIG_LOG_WARNING = 4,
        CONFIG_LOG_NOTICE = 5,
        CONFIG_LOG_INFO = 6,
        CONFIG_LOG_DEBUG = 7,
} ConfigLogLevel;

typedef struct Config {
        /* [daemon] */
        char *policies_dir; /* NULL: the layered search (policy-read.h); set: that directory alone */
        uint64_t sample_interval_usec;
        uint64_t rescan_interval_usec;
        bool restore_on_exit;
        ConfigLogLevel log_level;
        ConfigSeccomp seccomp;

        /* [cgroup] */
        char *cgroup_root;
        ConfigHierarchy hierarchy;
        ConfigCgroupDriver cgroup_driver;

        /* [scope]: include, exclude, protect (scope.h; self is left 0 here) */
        Scope scope;

        /* [classifier] */
        uint64_t avx512_recent_usec;      /* AVX-512 used within this: class avx */
        unsigned latency_voluntary_min;   /* percent of switches voluntary: latency ... */
        unsigned latency_cpu_max;         /* ... and at most this share of a CPU */
        unsigned throughput_cpu_min;      /* at least this share of a CPU: throughput */
        uint64_t classify_window_usec;
        uint64_t min_task_age_usec;       /* tasks seen for less than this are not classified yet */
        uint64_t classify_dwell_usec;     /* a new class must hold this long */
        unsigned classify_majority;       /* percent of the window's samples that decide */
        unsigned classify_min_samples;
        unsigned avx_busy_min;            /* percent of a CPU alongside AVX-512 use */
        unsigned avx512_ops_min;          /* AVX-512 FP operations per second, where counters tell */
        unsigned latency_wakeups_min;     /* voluntary switches per second */
        uint64_t latency_burst_max_usec;
        uint64_t throughput_burst_min_usec;
        unsigned throughput_voluntary_max; /* percent */

        /* [load] */
        unsigned load_hysteresis;         /* percent points beyond a band edge before leaving it */
        uint64_t load_dwell_usec;         /* a band must hold this long to enter or leave force */
} Config;

int config_new(Config **ret); /* the defaults */
Config *config_free(Config *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Config *, config_free);

/* Apply one file's keys over c. Returns 0; -EINVAL when the text had errors
 * (in d; the keys that were fine are applied); -EFBIG past
 * CONFIG_FILE_SIZE_MAX; -ENOMEM. */
int config_parse(Config *c, const char *text, size_t len, const char *file, Diagnostics *d);

/* The main file (may be NULL: defaults) and its drop-ins, in file-name
 * order whatever the order given. Returns 0, -EINVAL when some file had
 * errors (*ret still set), -E2BIG past CONFIG_DROPINS_MAX, -ENOMEM. */
int config_parse_all(const IniSource *main_file, const IniSource *dropins, size_t n_dropins, Diagnostics *d,
                     Config **ret);

/* Byte-order comparison of the file-name parts of two paths. */
int config_dropin_compare(const char *a, const char *b);

/* "500ms", "2s", "1min", "1h", "250us"; a bare number is seconds. */
int config_parse_duration(const char *s, uint64_t *ret);

const char *config_hierarchy_to_string(ConfigHierarchy h);
const char *config_seccomp_to_string(ConfigSeccomp s);
const char *config_cgroup_driver_to_string(ConfigCgroupDriver d);
const char *config_log_level_to_string(ConfigLogLevel l);

/* What is wrong with a cgroup_root, or NULL: "/" itself, or a cgroup
 * inside a unit systemd owns (below a .service or .scope component, or in
 * a slice that is not topod's own: topod.slice, topod-*.slice), other than
 * a subtree delegated to topod's own unit (below topod.service). */
const char *config_cgroup_root_problem(const char *path);
