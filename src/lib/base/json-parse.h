/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A small JSON reader for documents topod's own tools wrote (another host's
 * `topoctl status --json`): a tree of values. Bounded: JSON_PARSE_DEPTH_MAX
 * levels, JSON_PARSE_VALUES_MAX values; strings are UTF-8 as given, with
 * \u escapes decoded (a NUL one refused). */

#include <stdbool.h>
#include <stddef.h>

#include "base/macro.h"

#define JSON_PARSE_DEPTH_MAX 64u
#define JSON_PARSE_VALUES_MAX 100000u

typedef enum JsonKind {
        JSON_NULL,
        JSON_BOOL,
        JSON_NUMBER,
        JSON_STRING,
        JSON_ARRAY,
        JSON_OBJECT,
} JsonKind;

typedef struct JsonValue {
        JsonKind kind;
        bool boolean;
        double number;
        char *string;             /* JSON_STRING */
        struct JsonValue *items;  /* JSON_ARRAY, JSON_OBJECT: n_items values */
        char **keys;              /* JSON_OBJECT: their keys */
        size_t n_items;
} JsonValue;

/* Parse text (len bytes; a NUL inside is an error). 0 and *ret, or
 * -EBADMSG with *ret_line the line of the fault (1-based), -E2BIG past the
 * bounds, -ENOMEM. */
int json_parse(const char *text, size_t len, JsonValue **ret, unsigned *ret_line);
JsonValue *json_value_free(JsonValue *v);
DEFINE_TRIVIAL_CLEANUP_FUNC(JsonValue *, json_value_free);

/* Member key of object o, or NULL (o NULL or not an object, no such key). */
const JsonValue *json_value_get(const JsonValue *o, const char *key);
/* Its string, or NULL when absent or not a string. */
const char *json_value_get_string(const JsonValue *o, const char *key);
/* Its boolean, or def when absent or not a boolean. */
bool json_value_get_bool(const JsonValue *o, const char *key, bool def);
