/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The scope: what topod may touch (topod.conf [scope], a policy's [match]
 * exclude), and the one rule that says whether a policy that matched a
 * process may act on it. Its own module because the planner, the fast
 * path, explain and check all ask the same question and must get the same
 * answer.
 *
 * A pattern list is space-separated, at most SCOPE_PATTERNS_MAX. A pattern
 * with a '/' is a cgroup-path glob (fnmatch(3), '*' crosses '/') matching
 * that cgroup and everything below it ("/user.slice", or "/lab/" followed by a star); one
 * without is a unit-name glob matched against every unit along the
 * cgroup path (unit_path_units()): "system.slice" covers everything below
 * it, "user@*.service" every user manager.
 *
 * The rule (topod.conf(5), topod.policy(5)), for a policy whose [match]
 * took a process, judged at the cgroup the process came from:
 *   1. protect matches: no policy applies;
 *   2. the policy's own [match] exclude matches: it does not apply;
 *   3. a policy that names the process (an identity key of its [match]
 *      took it: comm, exe, cmdline, cgroup, parent, unit) applies;
 *   4. one that names nothing (class and user only) applies only inside
 *      include and outside exclude.
 * PID 1 and topod itself are never touched, whatever the lists say
 * (kernel threads are left out before any policy is asked). */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/macro.h"

#define SCOPE_PATTERNS_MAX 64u
#define SCOPE_PATTERN_LEN_MAX 256u

/* The default of [scope] exclude: systemd's own and system services,
 * containers and pods, user managers. */
#define SCOPE_DEFAULT_EXCLUDE                                                                     \
        "init.scope system.slice machine.slice kubepods*.slice user@*.service docker-*.scope " \
        "libpod-*.scope crio-*.scope cri-containerd-*.scope"

typedef struct ScopePattern {
        char *glob;
        bool path; /* has a '/': a cgroup-path glob; else a unit-name glob */
} ScopePattern;

typedef struct ScopePatterns {
        ScopePattern *items;
        size_t n;
} ScopePatterns;

typedef struct Scope {
        ScopePatterns include, exclude, protect;
        pid_t self; /* topod's own pid: never touched; 0 when not known */
} Scope;

void scope_patterns_done(ScopePatterns *p);
void scope_done(Scope *s);

/* Parse a space-separated list into *ret (replacing what it held, only on
 * success); "" is the empty list. -EINVAL with a reason in error (a
 * pattern too long, a control character, a unit glob that can match no
 * unit name, a path glob not starting with '/'), -E2BIG past
 * SCOPE_PATTERNS_MAX (reason in error too), -ENOMEM. */
int scope_patterns_parse(const char *value, ScopePatterns *ret, char *error, size_t error_size);
int scope_patterns_copy(const ScopePatterns *from, ScopePatterns *ret);
bool scope_patterns_equal(const ScopePatterns *a, const ScopePatterns *b);

/* Does any pattern match the cgroup path (NULL never matches)? */
bool scope_patterns_match(const ScopePatterns *p, const char *cgroup);

/* The rule above. tgid: the process; names: the policy took it by an
 * identity key; policy_exclude: its [match] exclude (NULL: none); cgroup:
 * where it is judged from (its original cgroup when topod moved it). */
bool scope_admits(const Scope *s, pid_t tgid, bool names, const ScopePatterns *policy_exclude, const char *cgroup);

/* Why scope_admits() said no, for explain: a short phrase. */
const char *scope_refusal(const Scope *s, pid_t tgid, bool names, const ScopePatterns *policy_exclude,
                          const char *cgroup);

/* The space-separated text of a list (for printing): a new string or NULL. */
char *scope_patterns_format(const ScopePatterns *p);
