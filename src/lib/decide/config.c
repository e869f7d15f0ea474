/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <ctype.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/unit-name.h"
#include "base/util.h"
#include "decide/classify.h"

static const char *const hierarchy_names[_CONFIG_HIERARCHY_MAX + 1] = { "auto", "flat", "nested", NULL };
static const char *const seccomp_names[_CONFIG_SECCOMP_MAX + 1] = { "off", "log", "enforce", NULL };
/* [cgroup] driver */
static const char *const cgroup_driver_names[_CONFIG_CGROUP_DRIVER_MAX + 1] = { "auto", "systemd", "cgroupfs", NULL };
const char *config_cgroup_driver_to_string(ConfigCgroupDriver d) {
        return d >= 0 && d < _CONFIG_CGROUP_DRIVER_MAX ? cgroup_driver_names[d] : "?";
}

static const char *const log_level_names[] = { "err", "warning", "notice", "info", "debug", NULL };

const char *config_hierarchy_to_string(ConfigHierarchy h) {
        return h >= 0 && h < _CONFIG_HIERARCHY_MAX ? hierarchy_names[h] : "?";
}
const char *config_seccomp_to_string(ConfigSeccomp s) {
        return s >= 0 && s < _CONFIG_SECCOMP_MAX ? seccomp_names[s] : "?";
}
const char *config_log_level_to_string(ConfigLogLevel l) {
        return l >= CONFIG_LOG_ERR && l <= CONFIG_LOG_DEBUG ? log_level_names[l - CONFIG_LOG_ERR] : "?";
}

int config_new(Config **ret) {
        _cleanup_(config_freep) Config *c = calloc(1, sizeof(Config));

        if (!c)
                return -ENOMEM;
        *c = (Config) {
                .sample_interval_usec = 1 * USEC_PER_SEC,
                .rescan_interval_usec = 60 * USEC_PER_SEC,
                .restore_on_exit = true,
                .log_level = CONFIG_LOG_INFO,
                .seccomp = CONFIG_SECCOMP_ENFORCE,
                .cgroup_root = strdup("/topod.slice"),
                .hierarchy = CONFIG_HIERARCHY_AUTO,
                .load_hysteresis = 5,
                .load_dwell_usec = 30 * USEC_PER_SEC,
        };
        if (!c->cgroup_root)
                return -ENOMEM;
        {
                char error[160];
                int k = scope_patterns_parse(SCOPE_DEFAULT_EXCLUDE, &c->scope.exclude, error, sizeof error);

                if (k < 0)
                        return k;
        }
        {
                /* One source for the classifier's defaults. */
                ClassifyParams p;

                classify_params_default(&p);
                c->avx512_recent_usec = p.avx_recent_ms * USEC_PER_MSEC;
                c->latency_voluntary_min = p.latency_voluntary_min_pct;
                c->latency_cpu_max = p.latency_cpu_max_pct;
                c->throughput_cpu_min = p.throughput_cpu_min_pct;
                c->classify_window_usec = p.window_usec;
                c->min_task_age_usec = p.min_age_usec;
                c->classify_dwell_usec = p.dwell_usec;
                c->classify_majority = p.majority_pct;
                c->classify_min_samples = p.min_samples;
                c->avx_busy_min = p.avx_busy_min_pct;
                c->avx512_ops_min = (unsigned) p.avx512_ops_min;
                c->latency_wakeups_min = p.latency_wakeups_min;
                c->latency_burst_max_usec = p.latency_burst_max_usec;
                c->throughput_burst_min_usec = p.throughput_burst_min_usec;
                c->throughput_voluntary_max = p.throughput_voluntary_max_pct;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

Config *config_free(Config *c) {
        if (!c)
                return NULL;
        free(c->policies_dir);
        free(c->cgroup_root);
        scope_done(&c->scope);
        free(c);
        return NULL;
}

int config_parse_duration(const char *s, uint64_t *ret) {
        static const struct {
                const char *suffix;
                uint64_t usec;
        } units[] = {
                { "us", 1 }, { "ms", USEC_PER_MSEC }, { "s", USEC_PER_SEC }, { "sec", USEC_PER_SEC },
                { "min", 60 * USEC_PER_SEC }, { "m", 60 * USEC_PER_SEC }, { "h", 3600 * USEC_PER_SEC },
                { "", USEC_PER_SEC },
        };
        uint64_t v = 0;

        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        for (; isdigit((unsigned char) *s); s++) {
                if (v > 1000000000u)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*s - '0');
        }
        while (isspace((unsigned char) *s))
                s++;
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (streq(s, units[i].suffix)) {
                        *ret = v * units[i].usec; /* v <= 1e9+9, usec <= 3.6e9: fits */
                        return 0;
                }
        return -EINVAL;
}

typedef enum KeyType {
        KEY_PATH,
        KEY_DURATION,
        KEY_BOOL,
        KEY_PERCENT,
        KEY_ENUM,
        KEY_UINT,
        KEY_PATTERNS, /* scope.h: a space-separated list, "" the empty one */
} KeyType;

typedef struct KeyDef {
        const char *section;
        const char *key;
        KeyType type;
        size_t offset;
        uint64_t min, max;                 /* durations (usec) and percents */
        const char *const *names;          /* enums */
        int base;                          /* enum value of names[0] */
} KeyDef;

#define OFF(f) offsetof(Config, f)

static const KeyDef keys[] = {
        { "daemon", "policies_dir", KEY_PATH, OFF(policies_dir), 0, 0, NULL, 0 },
        { "daemon", "sample_interval", KEY_DURATION, OFF(sample_interval_usec), 100 * USEC_PER_MSEC, 3600 * USEC_PER_SEC, NULL, 0 },
        { "daemon", "rescan_interval", KEY_DURATION, OFF(rescan_interval_usec), 1 * USEC_PER_SEC, 86400 * USEC_PER_SEC, NULL, 0 },
        { "daemon", "restore_on_exit", KEY_BOOL, OFF(restore_on_exit), 0, 0, NULL, 0 },
        { "daemon", "log_level", KEY_ENUM, OFF(log_level), 0, 0, log_level_names, CONFIG_LOG_ERR },
        { "daemon", "seccomp", KEY_ENUM, OFF(seccomp), 0, 0, seccomp_names, 0 },
        { "cgroup", "cgroup_root", KEY_PATH, OFF(cgroup_root), 0, 0, NULL, 0 },
        { "cgroup", "hierarchy", KEY_ENUM, OFF(hierarchy), 0, 0, hierarchy_names, 0 },
        { "cgroup", "driver", KEY_ENUM, OFF(cgroup_driver), 0, 0, cgroup_driver_names, 0 },
        { "classifier", "avx512_recent", KEY_DURATION, OFF(avx512_recent_usec), 1 * USEC_PER_MSEC, 3600 * USEC_PER_SEC, NULL, 0 },
        { "classifier", "latency_voluntary_min", KEY_PERCENT, OFF(latency_voluntary_min), 0, 100, NULL, 0 },
        { "classifier", "latency_cpu_max", KEY_PERCENT, OFF(latency_cpu_max), 0, 100, NULL, 0 },
        { "classifier", "throughput_cpu_min", KEY_PERCENT, OFF(throughput_cpu_min), 0, 100, NULL, 0 },
        { "classifier", "window", KEY_DURATION, OFF(classify_window_usec), 100 * USEC_PER_MSEC, 3600 * USEC_PER_SEC, NULL, 0 },
        { "classifier", "min_task_age", KEY_DURATION, OFF(min_task_age_usec), 0, 3600 * USEC_PER_SEC, NULL, 0 },
        { "classifier", "dwell", KEY_DURATION, OFF(classify_dwell_usec), 0, 3600 * USEC_PER_SEC, NULL, 0 },
        { "classifier", "majority", KEY_PERCENT, OFF(classify_majority), 1, 100, NULL, 0 },
        { "classifier", "min_samples", KEY_UINT, OFF(classify_min_samples), 1, CLASSIFY_RING_MAX, NULL, 0 },
        { "classifier", "avx_busy_min", KEY_PERCENT, OFF(avx_busy_min), 0, 100, NULL, 0 },
        { "classifier", "avx512_ops_min", KEY_UINT, OFF(avx512_ops_min), 1, 4000000000u, NULL, 0 },
        { "classifier", "latency_wakeups_min", KEY_UINT, OFF(latency_wakeups_min), 0, 1000000, NULL, 0 },
        { "classifier", "latency_burst_max", KEY_DURATION, OFF(latency_burst_max_usec), 1, 3600 * USEC_PER_SEC, NULL, 0 },
        { "classifier", "throughput_burst_min", KEY_DURATION, OFF(throughput_burst_min_usec), 0, 3600 * USEC_PER_SEC, NULL, 0 },
        { "classifier", "throughput_voluntary_max", KEY_PERCENT, OFF(throughput_voluntary_max), 0, 100, NULL, 0 },
        { "scope", "include", KEY_PATTERNS, OFF(scope.include), 0, 0, NULL, 0 },
        { "scope", "exclude", KEY_PATTERNS, OFF(scope.exclude), 0, 0, NULL, 0 },
        { "scope", "protect", KEY_PATTERNS, OFF(scope.protect), 0, 0, NULL, 0 },
        { "load", "hysteresis", KEY_PERCENT, OFF(load_hysteresis), 0, 50, NULL, 0 },
        { "load", "dwell", KEY_DURATION, OFF(load_dwell_usec), 0, 3600 * USEC_PER_SEC, NULL, 0 },
};

static const char *const section_names[] = { "daemon", "cgroup", "classifier", "load", "scope", NULL };

typedef struct ConfigParser {
        Config *c;
        Diagnostics *d;
        const char *file;
        const char *section; /* NULL: none yet; "" unknown */
        unsigned seen[ELEMENTSOF(keys)];
        size_t errors_before;
} ConfigParser;

/* An error at a line of the file being parsed. */
#define cerr(cp, line, id, ...) diag_add((cp)->d, DIAG_ERROR, (cp)->file, (line), (id), __VA_ARGS__)

static int on_section(void *userdata, const char *name, unsigned line) {
        ConfigParser *cp = userdata;
        const char *close;

        for (size_t i = 0; section_names[i]; i++)
                if (streq(section_names[i], name)) {
                        cp->section = section_names[i];
                        return 0;
                }
        cp->section = "";
        close = diag_closest(name, section_names);
        if (close)
                return cerr(cp, line, "unknown-section", "unknown section [%s]; did you mean [%s]?", name, close);
        return cerr(cp, line, "unknown-section", "unknown section [%s]; expected [daemon], [cgroup], [classifier], [load] or [scope]",
                    name);
}

static int set_path(ConfigParser *cp, const KeyDef *kd, const char *value, unsigned line) {
        char **field = (char **) ((uint8_t *) cp->c + kd->offset);
        size_t n = strlen(value);
        char *v;

        if (value[0] != '/')
                return cerr(cp, line, "bad-value", "%s '%s' must be an absolute path", kd->key, value);
        if (n > CONFIG_PATH_MAX)
                return cerr(cp, line, "limit", "%s is %zu characters long, longer than the limit of %u", kd->key, n,
                            CONFIG_PATH_MAX);
        for (const char *s = value; *s; s++)
                if ((unsigned char) *s < 0x20 || *s == 0x7f)
                        return cerr(cp, line, "bad-value", "%s contains a control character", kd->key);
        if (strstr(value, "/../") || (n >= 3 && streq(value + n - 3, "/..")))
                return cerr(cp, line, "bad-value", "%s '%s' must not contain '..'", kd->key, value);
        v = strdup(value);
        if (!v)
                return -ENOMEM;
        /* "/topod.slice/" and "/topod.slice" are the same directory. */
        while (n > 1 && v[n - 1] == '/')
                v[--n] = '\0';
        free(*field);
        *field = v;
        return 0;
}

/* The key of the current section named key: *ret, and the line it is set
 * at remembered; an error (and *ret NULL) when set twice, or unknown. */
static int find_key(ConfigParser *cp, const char *key, unsigned line, const KeyDef **ret) {
        const KeyDef *kd = NULL;
        const char *candidates[ELEMENTSOF(keys) + 1];
        size_t n_candidates = 0;

        *ret = NULL;
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                if (streq(keys[i].section, cp->section)) {
                        if (streq(keys[i].key, key)) {
                                kd = &keys[i];
                                if (cp->seen[i])
                                        return cerr(cp, line, "duplicate-key", "'%s' is set twice in [%s] (first at line %u)",
                                                    key, cp->section, cp->seen[i]);
                                cp->seen[i] = line;
                        }
                        candidates[n_candidates++] = keys[i].key;
                }
        candidates[n_candidates] = NULL;
        if (!kd) {
                const char *close = diag_closest(key, candidates);

                for (size_t i = 0; !close && i < ELEMENTSOF(keys); i++)
                        if (streq(keys[i].key, key))
                                return cerr(cp, line, "unknown-key", "unknown key '%s' in [%s]; it belongs in [%s]", key,
                                            cp->section, keys[i].section);
                if (close)
                        return cerr(cp, line, "unknown-key", "unknown key '%s' in [%s]; did you mean '%s'?", key,
                                    cp->section, close);
                return cerr(cp, line, "unknown-key", "unknown key '%s' in [%s]", key, cp->section);
        }
        *ret = kd;
        return 0;
}

static int set_duration(ConfigParser *cp, const KeyDef *kd, const char *value, unsigned line) {
        uint64_t u;
        int k;

        k = config_parse_duration(value, &u);
        if (k < 0)
                return cerr(cp, line, "bad-value", "invalid %s '%s': expected a duration such as 500ms, 2s or 1min",
                            kd->key, value);
        if (u < kd->min || u > kd->max)
                return cerr(cp, line, "out-of-range", "%s '%s' is out of range (%" PRIu64 "ms to %" PRIu64 "s)",
                            kd->key, value, kd->min / USEC_PER_MSEC, kd->max / USEC_PER_SEC);
        *(uint64_t *) ((uint8_t *) cp->c + kd->offset) = u;
        return 0;
}

static int set_bool(ConfigParser *cp, const KeyDef *kd, const char *value, unsigned line) {
        if (strcasecmp(value, "yes") == 0 || strcasecmp(value, "true") == 0 || strcasecmp(value, "on") == 0 ||
            streq(value, "1"))
                *(bool *) ((uint8_t *) cp->c + kd->offset) = true;
        else if (strcasecmp(value, "no") == 0 || strcasecmp(value, "false") == 0 || strcasecmp(value, "off") == 0 ||
                 streq(value, "0"))
                *(bool *) ((uint8_t *) cp->c + kd->offset) = false;
        else
                return cerr(cp, line, "bad-value", "invalid %s '%s': expected yes or no", kd->key, value);
        return 0;
}

/* A percentage ("80%", the sign optional) or a whole number, within the
 * key's range. The digits are read up to a cap, past which the value is
 * no percentage (1000) or out of the number's range (its maximum). */
static int set_number(ConfigParser *cp, const KeyDef *kd, const char *value, unsigned line) {
        bool percent = kd->type == KEY_PERCENT;
        const char *expected = percent ? "a percentage such as 80%" : "a whole number", *unit = percent ? "%" : "";
        uint64_t cap = percent ? 1000 : kd->max, u = 0;
        const char *s = value;

        if (!isdigit((unsigned char) *s))
                return cerr(cp, line, "bad-value", "invalid %s '%s': expected %s", kd->key, value, expected);
        for (; isdigit((unsigned char) *s) && u <= cap; s++)
                u = u * 10 + (uint64_t) (*s - '0');
        if (percent && *s == '%')
                s++;
        if (*s && (percent || !isdigit((unsigned char) *s)))
                return cerr(cp, line, "bad-value", "invalid %s '%s': expected %s", kd->key, value, expected);
        if (u < kd->min || u > kd->max)
                return cerr(cp, line, "out-of-range", "%s '%s' is out of range (%" PRIu64 "%s to %" PRIu64 "%s)",
                            kd->key, value, kd->min, unit, kd->max, unit);
        *(unsigned *) ((uint8_t *) cp->c + kd->offset) = (unsigned) u;
        return 0;
}

static int set_enum(ConfigParser *cp, const KeyDef *kd, const char *value, unsigned line) {
        _cleanup_free_ char *list = NULL;
        const char *close;
        int k;

        for (size_t i = 0; kd->names[i]; i++)
                if (streq(kd->names[i], value)) {
                        *(int *) ((uint8_t *) cp->c + kd->offset) = kd->base + (int) i;
                        return 0;
                }
        close = diag_closest(value, kd->names);
        if ((k = strv_join((char *const *) kd->names, ", ", &list)) < 0)
                return k;
        if (close)
                return cerr(cp, line, "bad-value", "invalid %s '%s': expected one of %s; did you mean '%s'?", kd->key,
                            value, list, close);
        return cerr(cp, line, "bad-value", "invalid %s '%s': expected one of %s", kd->key, value, list);
}

/* A [scope] list: replaces the one before (a later file's too). */
static int set_patterns(ConfigParser *cp, const KeyDef *kd, const char *value, unsigned line) {
        ScopePatterns *field = (ScopePatterns *) ((uint8_t *) cp->c + kd->offset);
        char error[200];
        int k;

        k = scope_patterns_parse(value, field, error, sizeof error);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return cerr(cp, line, k == -E2BIG ? "limit" : "bad-value", "invalid %s: %s", kd->key, error);
        return 0;
}

/* How a value of each type is read into its field. */
typedef int (*KeySetter)(ConfigParser *cp, const KeyDef *kd, const char *value, unsigned line);

static const KeySetter setters[] = {
        [KEY_PATH] = set_path,      [KEY_DURATION] = set_duration, [KEY_BOOL] = set_bool,
        [KEY_PERCENT] = set_number, [KEY_ENUM] = set_enum,         [KEY_UINT] = set_number,
        [KEY_PATTERNS] = set_patterns,
};

static int on_key(void *userdata, const char *section, const char *key, const char *value, unsigned line) {
        ConfigParser *cp = userdata;
        const KeyDef *kd;
        int k;

        (void) section;
        if (!cp->section)
                return cerr(cp, line, "syntax", "'%s' is outside any section; start with [daemon]", key);
        if (!*cp->section)
                return 0;
        k = find_key(cp, key, line, &kd);
        if (!kd)
                return k;
        if (!*value && kd->type != KEY_PATTERNS)
                return cerr(cp, line, "bad-value", "'%s' needs a value", key);
        if (kd->offset == OFF(cgroup_root) && value[0] == '/') {
                const char *why = config_cgroup_root_problem(value);

                if (why)
                        return cerr(cp, line, "bad-value", "cgroup_root '%s' %s", value, why);
        }

        return setters[kd->type](cp, kd, value, line);
}

int config_parse(Config *c, const char *text, size_t len, const char *file, Diagnostics *d) {
        static const IniTextCallbacks cb = { .section = on_section, .key = on_key };
        ConfigParser cp = { .c = c, .d = d, .file = file ?: "<input>", .errors_before = d->n_errors };
        int k;

        if (len > CONFIG_FILE_SIZE_MAX) {
                k = diag_add(d, DIAG_ERROR, cp.file, 0, "limit", "file is %zu bytes, larger than the limit of %u", len,
                             CONFIG_FILE_SIZE_MAX);
                return k < 0 ? k : -EFBIG;
        }
        k = initext_parse(text, len, cp.file, d, &cb, &cp);
        if (k < 0)
                return k;
        return d->n_errors != cp.errors_before ? -EINVAL : 0;
}

static const char *file_name(const char *path) {
        const char *s = strrchr(path, '/');

        return s ? s + 1 : path;
}

int config_dropin_compare(const char *a, const char *b) {
        int c = strcmp(file_name(a), file_name(b));

        return c != 0 ? c : strcmp(a, b);
}

static int source_compare(const void *a, const void *b) {
        return config_dropin_compare((*(const IniSource *const *) a)->file, (*(const IniSource *const *) b)->file);
}

int config_parse_all(const IniSource *main_file, const IniSource *dropins, size_t n_dropins, Diagnostics *d,
                     Config **ret) {
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_free_ const IniSource **order = NULL;
        bool bad = false;
        int k;

        if (n_dropins > CONFIG_DROPINS_MAX) {
                k = diag_add(d, DIAG_ERROR, dropins[CONFIG_DROPINS_MAX].file, 0, "limit",
                             "%zu drop-in files, more than the limit of %u", n_dropins, CONFIG_DROPINS_MAX);
                return k < 0 ? k : -E2BIG;
        }
        k = config_new(&c);
        if (k < 0)
                return k;
        if (main_file) {
                k = config_parse(c, main_file->text, main_file->len, main_file->file, d);
                if (k == -ENOMEM)
                        return k;
                bad = bad || k < 0;
        }
        order = calloc(n_dropins + 1, sizeof(IniSource *));
        if (!order)
                return -ENOMEM;
        for (size_t i = 0; i < n_dropins; i++)
                order[i] = &dropins[i];
        if (n_dropins > 1)
                qsort(order, n_dropins, sizeof(IniSource *), source_compare);
        for (size_t i = 0; i < n_dropins; i++) {
                k = config_parse(c, order[i]->text, order[i]->len, order[i]->file, d);
                if (k == -ENOMEM)
                        return k;
                bad = bad || k < 0;
        }
        *ret = TAKE_PTR(c);
        return bad ? -EINVAL : 0;
}

const char *config_cgroup_root_problem(const char *path) {
        static const char own_unit[] = "topod.service";
        UnitRef units[64];
        size_t n;
        const char *rest;

        if (path[strspn(path, "/")] == '\0')
                return "is the root cgroup: topod would write the controllers and move processes at the top of "
                       "the tree";
        n = unit_path_units(path, units, ELEMENTSOF(units));
        for (size_t i = 0; i < n; i++)
                if (units[i].len == sizeof own_unit - 1 && memcmp(units[i].name, own_unit, units[i].len) == 0) {
                        rest = units[i].name + units[i].len;
                        /* Delegated to topod's own unit: below its cgroup, never the
                         * cgroup topod itself runs in. */
                        return rest[strspn(rest, "/")] ? NULL
                                                       : "is the cgroup topod.service itself runs in: give a cgroup "
                                                         "below it (with Delegate=yes)";
                }
        for (size_t i = 0; i < n; i++)
                if (units[i].type != UNIT_TYPE_SLICE)
                        return "is inside a service or scope unit that systemd owns";
        for (size_t i = 0; i < n; i++) {
                if (!(units[i].len == 11 && memcmp(units[i].name, "topod.slice", 11) == 0) &&
                    !(units[i].len > 6 && memcmp(units[i].name, "topod-", 6) == 0))
                        return "is inside a slice that systemd owns (topod's own are topod.slice and topod-*.slice)";
        }
        return NULL;
}
