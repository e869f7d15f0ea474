/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the policy files share and nobody else uses. Everything else uses
 * policy.h. */

#include "decide/policy.h"

/* The names that policy.c prints values by and policy-parse.c parses them
 * by: each NULL-terminated, indexed by the enum. */
extern const char *const policy_when_kind_names[_POLICY_WHEN_KIND_MAX + 1];
extern const char *const policy_class_names[_POLICY_CLASS_MAX + 1];
extern const char *const policy_field_names[_POLICY_MATCH_FIELD_MAX + 1];
extern const char *const policy_cookie_names[_POLICY_COOKIE_MAX + 1];
extern const char *const policy_spread_names[_POLICY_SPREAD_MAX + 1];

/* Is every pattern of a one of b's (the same glob)? policy-match.c's test
 * of equal [match]es, and policy-check.c's of one covering another. */
bool policy_patterns_subset(const PolicyPatterns *a, const PolicyPatterns *b);
