/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The policy model: the *.ini files of policies.d as plain C values.
 *
 * One file holds one policy. A PolicySet holds all of them sorted by
 * precedence: priority (higher first), then file name (byte order, the
 * first name wins a tie), then the full path. The classifier and planner
 * walk it in that order: a task gets the [place] of the first policy that
 * is in force and matches it; when that policy leaves force the task falls
 * to the next one that matches, or to no policy (topod lets go of it).
 * Kernel-wide settings ([kernel] cgroup_mode and the scheduler settings of
 * base/sched-settings.h, [features]) of every in-force
 * policy apply; where two set the same thing differently, the one earlier in
 * precedence wins and the loser is recorded (policy_set_resolve_kernel()).
 *
 * Everything here is pure: text in, values and diagnostics out. Reading
 * files lives in policy-read.h. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bitmap.h"
#include "base/macro.h"
#include "base/sched-settings.h"
#include "diag.h"
#include "initext.h"
#include "scope.h"

/* Limits on what an outsider controls. Exceeding one is an error. */
#define POLICY_FILE_SIZE_MAX   (64u * 1024u) /* bytes per policy file */
#define POLICY_COUNT_MAX       4096u         /* policies (files) per set */
#define POLICY_RULES_MAX       64u           /* [match] patterns per policy, all keys together */
#define POLICY_WHEN_MAX        16u           /* [when] lines per policy */
#define POLICY_FEATURES_MAX    64u           /* [features] lines per policy */
#define POLICY_VENDORS_MAX     8u            /* words in [when] vendor */
#define POLICY_NAME_MAX        64u           /* name, group, cgroup_mode, feature names */
#define POLICY_STRING_MAX      160u          /* description, match patterns */
#define POLICY_PRIORITY_MIN    0
#define POLICY_PRIORITY_MAX    1000
#define POLICY_PRIORITY_DEFAULT 100
#define POLICY_WEIGHT_MIN      1u
#define POLICY_WEIGHT_MAX      10000u
#define POLICY_WEIGHT_DEFAULT  100u
#define POLICY_LOAD_MAX        1000u         /* percent; load counts runnable threads per PU */
#define TASK_COMM_MAX          15u           /* TASK_COMM_LEN - 1 */

typedef enum PolicyCmp {
        POLICY_CMP_EQ,
        POLICY_CMP_NE,
        POLICY_CMP_LT,
        POLICY_CMP_LE,
        POLICY_CMP_GT,
        POLICY_CMP_GE,
        _POLICY_CMP_MAX,
} PolicyCmp;

/* What a [when] line compares. Counts are of the machine's topology. */
typedef enum PolicyWhenKind {
        POLICY_WHEN_LLCS,
        POLICY_WHEN_NODES,
        POLICY_WHEN_PACKAGES,
        POLICY_WHEN_CPUS,
        POLICY_WHEN_KERNEL, /* value is a version: major << 32 | minor << 16 | patch */
        _POLICY_WHEN_KIND_MAX,
} PolicyWhenKind;

typedef struct PolicyCondition {
        PolicyWhenKind kind;
        PolicyCmp cmp;
        uint64_t value;
        unsigned line;
} PolicyCondition;

typedef enum PolicySmt {
        POLICY_SMT_ANY,
        POLICY_SMT_ON,
        POLICY_SMT_OFF,
} PolicySmt;

typedef struct PolicyWhen {
        PolicySmt smt;
        unsigned smt_line;
        PolicyCondition *conditions; /* all must hold */
        size_t n_conditions;
        char **vendors;              /* NULL = any; else one must equal the CPU vendor */
        unsigned vendor_line;
        bool has_load;
        unsigned load_low, load_high; /* percent, inclusive */
        unsigned load_line;
        /* The share of its groups' CPU time their SMT siblings were kept
         * idle (observe/forced-idle.h), a band over time as load is. */
        bool has_forced_idle;
        unsigned forced_idle_low, forced_idle_high; /* percent, inclusive */
        unsigned forced_idle_line;
} PolicyWhen;

typedef enum PolicyClass {
        POLICY_CLASS_AVX,
        POLICY_CLASS_LATENCY,
        POLICY_CLASS_THROUGHPUT,
        POLICY_CLASS_OTHER,
        _POLICY_CLASS_MAX,
} PolicyClass;

typedef enum PolicyMatchField {
        POLICY_MATCH_COMM,
        POLICY_MATCH_EXE,
        POLICY_MATCH_CMDLINE,
        POLICY_MATCH_CGROUP,
        POLICY_MATCH_USER,
        POLICY_MATCH_PARENT,
        POLICY_MATCH_UNIT, /* unit-name globs against every unit along the cgroup path */
        _POLICY_MATCH_FIELD_MAX,
} PolicyMatchField;

typedef struct PolicyPattern {
        char *glob;   /* fnmatch(3) pattern */
        unsigned line;
        bool literal; /* policy_glob_is_literal(glob): compared, not fnmatch()ed */
} PolicyPattern;

/* A pattern without '*', '?', '[' or a backslash matches exactly the string it is:
 * a plain name, as most rules give (comm = postgres). */
bool policy_glob_is_literal(const char *glob);

typedef struct PolicyPatterns {
        PolicyPattern *items; /* any one may match (a repeated key is OR) */
        size_t n;
} PolicyPatterns;

typedef struct PolicyMatch {
        unsigned classes; /* bit (1u << PolicyClass) per allowed class; 0 = any */
        unsigned class_line;
        PolicyPatterns fields[_POLICY_MATCH_FIELD_MAX]; /* every non-empty field must match */
        ScopePatterns exclude; /* [match] exclude: a match means the policy does not apply (scope.h) */
        unsigned exclude_line;
} PolicyMatch;

/* Does the policy name what it matches: has it an identity key (comm,
 * exe, cmdline, cgroup, parent, unit)? class and user alone name nothing;
 * such a policy acts only inside [scope] include (scope.h). */
bool policy_match_names(const PolicyMatch *m);

typedef enum PolicyCookie {
        POLICY_COOKIE_NONE,
        POLICY_COOKIE_GROUP,   /* one core-scheduling cookie shared by the whole group */
        POLICY_COOKIE_PROCESS, /* one cookie per process (thread group) */
        _POLICY_COOKIE_MAX,
} PolicyCookie;

typedef enum PolicyCpus {
        POLICY_CPUS_LLC,
        POLICY_CPUS_NODE,
        POLICY_CPUS_PACKAGE,
        POLICY_CPUS_ALL,
        POLICY_CPUS_EXPLICIT,
        _POLICY_CPUS_MAX,
} PolicyCpus;

typedef enum PolicySpread {
        POLICY_SPREAD_PACK,
        POLICY_SPREAD_SPREAD,
        _POLICY_SPREAD_MAX,
} PolicySpread;

typedef struct PolicyPlace {
        bool present;      /* the file has a [place] section */
        unsigned line;     /* of the [place] header */
        char *group;       /* cgroup directory name below topod's root; default: the policy name */
        unsigned group_line;
        PolicyCookie cookie;
        unsigned cookie_line;
        PolicyCpus cpus;
        Bitmap *cpu_list;  /* POLICY_CPUS_EXPLICIT only */
        unsigned cpus_line;
        PolicySpread spread;
        unsigned spread_line;
        bool exclusive;
        unsigned exclusive_line;
        unsigned weight;
        unsigned weight_line;
} PolicyPlace;

typedef struct PolicyFeature {
        char *name; /* as the kernel lists it, without NO_ */
        bool on;
        unsigned line;
} PolicyFeature;

/* A [kernel] line that sets one of the scheduler's debugfs settings. */
typedef struct PolicySetting {
        const SchedSettingInfo *info;        /* the catalog's entry (the key may be an alias) */
        char value[SCHED_SETTING_VALUE_MAX]; /* the text written (sched_setting_value_parse()) */
        unsigned line;
} PolicySetting;

typedef struct Policy {
        char *file;           /* path as given */
        const char *file_name; /* points into file: the part after the last '/' */
        const char *layer;    /* "runtime", "local", "vendor" (policy-read.h); NULL: read from a path given */
        unsigned policy_line; /* of the [policy] header */

        char *name;
        unsigned name_line;
        int priority;
        unsigned priority_line;
        char *description;
        bool enabled;
        unsigned enabled_line;

        bool has_when, has_match;
        unsigned when_line, match_line;
        PolicyWhen when;
        PolicyMatch match;
        PolicyPlace place;

        char *cgroup_mode; /* NULL = keep */
        unsigned cgroup_mode_line;
        PolicyFeature *features;
        size_t n_features;
        PolicySetting *settings; /* [kernel] lines other than cgroup_mode, one per setting */
        size_t n_settings;
} Policy;

Policy *policy_free(Policy *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Policy *, policy_free);

/* Parse one policy file's text (need not be NUL-terminated). Findings go to
 * d. Returns 0 and the policy; -EINVAL when the text had errors (they are in
 * d); -EFBIG past POLICY_FILE_SIZE_MAX; -ENOMEM. */
int policy_parse(const char *text, size_t len, const char *file, Diagnostics *d, Policy **ret);

/* A policy in force that lost a kernel-wide setting to one ahead of it. */
typedef struct PolicyConflict {
        char *what;    /* "cgroup_mode", "feature TTWU_QUEUE" or "setting base_slice_ns" */
        size_t winner; /* indexes into PolicySet.policies */
        size_t loser;
} PolicyConflict;

typedef struct PolicySet {
        Policy **policies; /* precedence order once finalized */
        size_t n;
} PolicySet;

PolicySet *policy_set_new(void);
PolicySet *policy_set_free(PolicySet *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(PolicySet *, policy_set_free);

/* Takes ownership of p, also on failure. -E2BIG past POLICY_COUNT_MAX. */
int policy_set_add(PolicySet *s, Policy *p);
/* Sort into precedence order and report duplicate names (an error at each
 * later definition). Returns 0, or -EINVAL when names clash. */
int policy_set_finalize(PolicySet *s, Diagnostics *d);

/* Parse several files into a finalized set. Files with errors are left out
 * of the set; their errors are in d. Returns 0 when everything parsed
 * cleanly, -EINVAL when some file had errors (the set is still returned
 * with the good ones), -E2BIG when there are too many, -ENOMEM. *ret is set
 * for 0 and -EINVAL. */
int policy_set_parse(const IniSource *texts, size_t n, Diagnostics *d, PolicySet **ret);

/* Precedence: < 0 when a comes first. */
int policy_compare(const Policy *a, const Policy *b);

/* ── Evaluation helpers for the classifier and planner (pure) ── */

/* What a [when] needs to know of the machine and the moment. */
typedef struct PolicyMachine {
        bool smt;                  /* SMT present and active */
        unsigned n_llcs, n_nodes, n_packages, n_cpus;
        const char *vendor;        /* NULL when unknown */
        uint64_t kernel;           /* POLICY_KERNEL_VERSION(); 0 when unknown */
        bool has_load;
        unsigned load;             /* percent */
} PolicyMachine;

#define POLICY_KERNEL_VERSION(a, b, c) (((uint64_t) (a) << 32) | ((uint64_t) (b) << 16) | (uint64_t) (c))

/* Parse "6.6", "6.6.12", "6.8.0-31-generic" (suffix ignored). */
int policy_parse_kernel_version(const char *s, uint64_t *ret);

bool policy_cmp_holds(PolicyCmp cmp, uint64_t lhs, uint64_t rhs);

/* Does every [when] line hold? Unknown facts (vendor NULL, kernel 0,
 * has_load false) make the lines about them fail. Load is the raw band
 * test; hysteresis and dwell time are the planner's (topod.conf [load]). */
bool policy_when_holds(const PolicyWhen *w, const PolicyMachine *m);
/* Every line but the load band, which a running topod holds with
 * hysteresis and dwell (PolicyLoadBand). */
bool policy_when_holds_but_load(const PolicyWhen *w, const PolicyMachine *m);

/* A [when] load band over time (topod.conf [load]): a band that holds
 * stays held until the load has been more than `hysteresis` points outside
 * it for `dwell`; one that does not hold is entered once the load has been
 * inside it for `dwell`. The first reading decides at once: a topod
 * started (or reloaded) does not wait a dwell to put its policies in
 * force. */
typedef struct PolicyLoadBand {
        bool holds;
        bool started;       /* a reading has been seen */
        bool pending;       /* the load is on the other side, since since_usec */
        uint64_t since_usec;
} PolicyLoadBand;

/* Take a value (percent) read at now_usec into a band [low, high];
 * whether it holds. The load band and the forced idle band both. */
bool policy_band_update(PolicyLoadBand *b, unsigned low, unsigned high, unsigned value, unsigned hysteresis,
                        uint64_t dwell_usec, uint64_t now_usec);

/* Take the load (percent) read at now_usec; whether the band holds. */
bool policy_load_band_update(PolicyLoadBand *b, const PolicyWhen *w, unsigned load, unsigned hysteresis,
                             uint64_t dwell_usec, uint64_t now_usec);

/* The facts of one task that [match] looks at. NULL strings never match a
 * pattern for them. cgroup is where the process is judged from: its
 * original cgroup when topod moved it (cgroup =, unit = and the scope all
 * see that one, not topod's group). */
typedef struct PolicyTask {
        PolicyClass class;
        const char *comm, *exe, *cmdline, *cgroup, *user, *parent;
        uint32_t uid;
        pid_t tgid; /* PID 1 and topod itself are never taken (scope.h); 0: unknown */
} PolicyTask;

bool policy_match_task(const PolicyMatch *m, const PolicyTask *t);

/* Does the policy take the task: its [match] does and the scope lets it
 * act there (scope_admits())? Every selection of a policy asks this. */
bool policy_takes(const Policy *p, const Scope *scope, const PolicyTask *t);

/* The first policy in precedence order that is in force (in_force[i]) and
 * has a [place] and takes the task (policy_takes()); -1 when none. */
int policy_set_select(const PolicySet *s, const bool *in_force, const Scope *scope, const PolicyTask *t);

/* The policies of a set that may match a task of a given comm, in set
 * order, without a look at the others: those whose comm patterns are all
 * plain names or a plain start and a final '*' ("postgres", "java*") are
 * found by the comm (sorted indexes), the rest (another glob, or no comm
 * pattern) come in order between them. A fleet's rule set names most of
 * its programs, most of which a given host does not run: a task then
 * costs what the few policies that could take it cost. Made over the
 * policies take[i] says (NULL: all), for as long as the set lives. */
typedef struct PolicyIndex PolicyIndex;

int policy_index_new(const PolicySet *s, const bool *take, PolicyIndex **ret);
PolicyIndex *policy_index_free(PolicyIndex *x);
DEFINE_TRIVIAL_CLEANUP_FUNC(PolicyIndex *, policy_index_free);

typedef struct PolicyIndexKey {
        const char *key; /* the policy's pattern: a name, or a start (len bytes, then '*') */
        size_t len;
        size_t policy;
} PolicyIndexKey;

/* The names (one range) and the starts (one range per length) a walk
 * follows: a kernel's comm has 15 characters, so 16 starts and the name.
 * A longer string that hits more walks every policy the index was made
 * over instead. */
#define POLICY_WALK_RANGES 17u

/* A walk over the candidates (policy_index_walk(), then
 * policy_walk_next() until false). Plain data: no cleanup. */
typedef struct PolicyWalk {
        struct {
                const PolicyIndexKey *at; /* sorted by policy */
                size_t n;
        } range[POLICY_WALK_RANGES];
        size_t n_ranges;
        const size_t *unnamed; /* ascending */
        size_t n_unnamed;
        size_t last; /* the last given, SIZE_MAX before the first */
} PolicyWalk;

/* comm NULL (not known): every policy the index was made over. */
PolicyWalk policy_index_walk(const PolicyIndex *x, const char *comm);
bool policy_walk_next(PolicyWalk *w, size_t *ret);

/* The kernel-wide outcome of the in-force policies. */
typedef struct PolicyKernelPlan {
        const char *cgroup_mode;    /* NULL = keep; points into the winning policy */
        int cgroup_mode_policy;     /* index, -1 */
        PolicyFeature *features;    /* winners, in first-seen order; names point into policies */
        int *feature_policy;        /* index of the policy that set each */
        size_t n_features;
        PolicySetting *settings;    /* winners, in first-seen order (copies) */
        int *setting_policy;        /* index of the policy that set each */
        size_t n_settings;
        PolicyConflict *conflicts;
        size_t n_conflicts;
} PolicyKernelPlan;

PolicyKernelPlan *policy_kernel_plan_free(PolicyKernelPlan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(PolicyKernelPlan *, policy_kernel_plan_free);

int policy_set_resolve_kernel(const PolicySet *s, const bool *in_force, PolicyKernelPlan **ret);

/* Two [when]s that can hold at the same time, as far as their lines tell. */
bool policy_when_may_overlap(const PolicyWhen *a, const PolicyWhen *b);
/* Can a [when] hold at all (no contradiction between its own lines)? */
bool policy_when_satisfiable(const PolicyWhen *w);
/* Same tasks: equal classes and equal pattern sets per field. */
bool policy_match_equal(const PolicyMatch *a, const PolicyMatch *b);

/* Names for printing and parsing. */
const char *policy_cmp_to_string(PolicyCmp c);
const char *policy_when_kind_to_string(PolicyWhenKind k);
const char *policy_class_to_string(PolicyClass c);
const char *policy_match_field_to_string(PolicyMatchField f);
const char *policy_cookie_to_string(PolicyCookie c);
const char *policy_cpus_to_string(PolicyCpus c);
const char *policy_spread_to_string(PolicySpread s);

/* cgroup_mode words topod knows of (the kernel's list decides; see
 * policy-check.h). NULL-terminated. */
extern const char *const policy_known_cgroup_modes[];
