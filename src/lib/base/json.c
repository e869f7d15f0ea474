/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "json.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"

struct Json {
        FILE *f;
        bool pretty;
        unsigned depth;
        bool after_key;
        bool has_items[JSON_MAX_DEPTH + 1];
};

Json *json_new(FILE *f, bool pretty) {
        Json *j = calloc(1, sizeof(Json));

        if (!j)
                return NULL;
        j->f = f;
        j->pretty = pretty;
        return j;
}

Json *json_free(Json *j) {
        if (!j)
                return NULL;
        fputc('\n', j->f);
        free(j);
        return NULL;
}

static void newline(Json *j) {
        if (!j->pretty)
                return;
        fputc('\n', j->f);
        for (unsigned i = 0; i < j->depth; i++)
                fputs("  ", j->f);
}

/* Called before every value and every key. */
static void separate(Json *j) {
        if (j->after_key) {
                j->after_key = false;
                return;
        }
        if (j->has_items[j->depth])
                fputc(',', j->f);
        if (j->depth > 0)
                newline(j);
        j->has_items[j->depth] = true;
}

static void open_container(Json *j, char c) {
        separate(j);
        fputc(c, j->f);
        assert(j->depth < JSON_MAX_DEPTH);
        j->depth++;
        j->has_items[j->depth] = false;
}

static void close_container(Json *j, char c) {
        bool had = j->has_items[j->depth];

        assert(j->depth > 0);
        j->depth--;
        if (had)
                newline(j);
        fputc(c, j->f);
}

void json_object_begin(Json *j) {
        open_container(j, '{');
}
void json_object_end(Json *j) {
        close_container(j, '}');
}
void json_array_begin(Json *j) {
        open_container(j, '[');
}
void json_array_end(Json *j) {
        close_container(j, ']');
}

/* Valid UTF-8 is written as it is (once: no \u escape per byte); a byte
 * that is not valid UTF-8 becomes the text \xHH, as escape.h spells it
 * everywhere (in JSON: "\\xHH"); control characters are JSON escapes. */
void json_write_escaped(FILE *f, const char *s) {
        const unsigned char *p = (const unsigned char *) s;
        size_t n = strlen(s);

        fputc('"', f);
        for (size_t i = 0; i < n;) {
                unsigned cp;
                size_t l = utf8_sequence(p + i, n - i, &cp);

                if (l == 0) {
                        fprintf(f, "\\\\x%02x", p[i]);
                        i++;
                        continue;
                }
                i += l;
                switch (cp) {
                case '"':
                        fputs("\\\"", f);
                        break;
                case '\\':
                        fputs("\\\\", f);
                        break;
                case '\n':
                        fputs("\\n", f);
                        break;
                case '\t':
                        fputs("\\t", f);
                        break;
                case '\r':
                        fputs("\\r", f);
                        break;
                default:
                        if (cp < 0x20 || cp == 0x7f)
                                fprintf(f, "\\u%04x", cp);
                        else
                                fwrite(p + i - l, 1, l, f);
                }
        }
        fputc('"', f);
}

void json_key(Json *j, const char *key) {
        separate(j);
        json_write_escaped(j->f, key);
        fputs(j->pretty ? ": " : ":", j->f);
        j->after_key = true;
}

void json_string(Json *j, const char *s) {
        if (!s) {
                json_null(j);
                return;
        }
        separate(j);
        json_write_escaped(j->f, s);
}

void json_int(Json *j, int64_t v) {
        separate(j);
        fprintf(j->f, "%" PRId64, v);
}

void json_uint(Json *j, uint64_t v) {
        separate(j);
        fprintf(j->f, "%" PRIu64, v);
}

void json_bool(Json *j, bool v) {
        separate(j);
        fputs(v ? "true" : "false", j->f);
}

void json_null(Json *j) {
        separate(j);
        fputs("null", j->f);
}

void json_kv_string(Json *j, const char *key, const char *s) {
        json_key(j, key);
        json_string(j, s);
}
void json_kv_int(Json *j, const char *key, int64_t v) {
        json_key(j, key);
        json_int(j, v);
}
void json_kv_uint(Json *j, const char *key, uint64_t v) {
        json_key(j, key);
        json_uint(j, v);
}
void json_kv_bool(Json *j, const char *key, bool v) {
        json_key(j, key);
        json_bool(j, v);
}
