/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A small streaming JSON writer: it places commas, indents and escapes, so
 * callers only say what comes next. Output is valid UTF-8: valid UTF-8 is
 * written once, as given; control characters are JSON escapes (\u00XX);
 * a byte that is not valid UTF-8 becomes the text \xHH (escape.h), so the
 * value reads the same as topod's text output. */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "macro.h"

#define JSON_MAX_DEPTH 32

typedef struct Json Json;

Json *json_new(FILE *f, bool pretty);
/* Ends the output with a newline; returns NULL. */
Json *json_free(Json *j);
DEFINE_TRIVIAL_CLEANUP_FUNC(Json *, json_free);

void json_object_begin(Json *j);
void json_object_end(Json *j);
void json_array_begin(Json *j);
void json_array_end(Json *j);
void json_key(Json *j, const char *key);

void json_string(Json *j, const char *s); /* NULL prints null */
void json_int(Json *j, int64_t v);
void json_uint(Json *j, uint64_t v);
void json_bool(Json *j, bool v);
void json_null(Json *j);

/* key + value in one call, inside an object. */
void json_kv_string(Json *j, const char *key, const char *s);
void json_kv_int(Json *j, const char *key, int64_t v);
void json_kv_uint(Json *j, const char *key, uint64_t v);
void json_kv_bool(Json *j, const char *key, bool v);

/* Escape s as a JSON string literal (with quotes) onto f. */
void json_write_escaped(FILE *f, const char *s);
