/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/json-parse.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

typedef struct Parser {
        const char *p, *end;
        unsigned line;
        size_t values;
} Parser;

static void value_clear(JsonValue *v) {
        free(v->string);
        for (size_t i = 0; i < v->n_items; i++) {
                value_clear(&v->items[i]);
                if (v->keys)
                        free(v->keys[i]);
        }
        free(v->items);
        free(v->keys);
        *v = (JsonValue) {};
}

JsonValue *json_value_free(JsonValue *v) {
        if (!v)
                return NULL;
        value_clear(v);
        free(v);
        return NULL;
}

static void skip_ws(Parser *ps) {
        for (; ps->p < ps->end; ps->p++) {
                if (*ps->p == '\n')
                        ps->line++;
                else if (*ps->p != ' ' && *ps->p != '\t' && *ps->p != '\r')
                        return;
        }
}

static bool literal(Parser *ps, const char *word) {
        size_t n = strlen(word);

        if ((size_t) (ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
                return false;
        ps->p += n;
        return true;
}

static int hex4(Parser *ps, uint32_t *ret) {
        uint32_t v = 0;

        if (ps->end - ps->p < 4)
                return -EBADMSG;
        for (int i = 0; i < 4; i++) {
                char c = *ps->p++;

                v <<= 4;
                if (c >= '0' && c <= '9')
                        v |= (uint32_t) (c - '0');
                else if (c >= 'a' && c <= 'f')
                        v |= (uint32_t) (c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        v |= (uint32_t) (c - 'A' + 10);
                else
                        return -EBADMSG;
        }
        *ret = v;
        return 0;
}

static size_t put_utf8(char *out, uint32_t c) {
        if (c < 0x80) {
                out[0] = (char) c;
                return 1;
        }
        if (c < 0x800) {
                out[0] = (char) (0xc0 | (c >> 6));
                out[1] = (char) (0x80 | (c & 0x3f));
                return 2;
        }
        if (c < 0x10000) {
                out[0] = (char) (0xe0 | (c >> 12));
                out[1] = (char) (0x80 | ((c >> 6) & 0x3f));
                out[2] = (char) (0x80 | (c & 0x3f));
                return 3;
        }
        out[0] = (char) (0xf0 | (c >> 18));
        out[1] = (char) (0x80 | ((c >> 12) & 0x3f));
        out[2] = (char) (0x80 | ((c >> 6) & 0x3f));
        out[3] = (char) (0x80 | (c & 0x3f));
        return 4;
}

/* At the opening quote. The decoded text is never longer than the source. */
static int parse_string(Parser *ps, char **ret) {
        const char *start = ++ps->p;
        _cleanup_free_ char *s = NULL;
        size_t n = 0;

        while (ps->p < ps->end && *ps->p != '"')
                ps->p += *ps->p == '\\' && ps->p + 1 < ps->end ? 2 : 1;
        if (ps->p >= ps->end)
                return -EBADMSG;
        s = malloc((size_t) (ps->p - start) + 1);
        if (!s)
                return -ENOMEM;
        ps->p = start;
        while (*ps->p != '"') {
                unsigned char c = (unsigned char) *ps->p++;
                uint32_t u, lo;

                if (c < 0x20)
                        return -EBADMSG;
                if (c != '\\') {
                        s[n++] = (char) c;
                        continue;
                }
                switch (*ps->p++) {
                case '"': s[n++] = '"'; break;
                case '\\': s[n++] = '\\'; break;
                case '/': s[n++] = '/'; break;
                case 'b': s[n++] = '\b'; break;
                case 'f': s[n++] = '\f'; break;
                case 'n': s[n++] = '\n'; break;
                case 'r': s[n++] = '\r'; break;
                case 't': s[n++] = '\t'; break;
                case 'u':
                        if (hex4(ps, &u) < 0 || u == 0)
                                return -EBADMSG;
                        if (u >= 0xd800 && u < 0xdc00) {
                                if (!literal(ps, "\\u") || hex4(ps, &lo) < 0 || lo < 0xdc00 || lo >= 0xe000)
                                        return -EBADMSG;
                                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                        } else if (u >= 0xdc00 && u < 0xe000)
                                return -EBADMSG;
                        n += put_utf8(s + n, u); /* \uXXXX is 6 bytes, at most 4 out */
                        break;
                default:
                        return -EBADMSG;
                }
        }
        ps->p++;
        s[n] = '\0';
        *ret = TAKE_PTR(s);
        return 0;
}

static int parse_value(Parser *ps, JsonValue *v, unsigned depth);

static int parse_container(Parser *ps, JsonValue *v, unsigned depth, bool object) {
        size_t allocated = 0;
        char close = object ? '}' : ']';
        int k;

        v->kind = object ? JSON_OBJECT : JSON_ARRAY;
        ps->p++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == close) {
                ps->p++;
                return 0;
        }
        for (;;) {
                _cleanup_free_ char *key = NULL;

                skip_ws(ps);
                if (object) {
                        if (ps->p >= ps->end || *ps->p != '"')
                                return -EBADMSG;
                        if ((k = parse_string(ps, &key)) < 0)
                                return k;
                        skip_ws(ps);
                        if (ps->p >= ps->end || *ps->p != ':')
                                return -EBADMSG;
                        ps->p++;
                }
                if (v->n_items == allocated) {
                        size_t m = allocated ? allocated * 2 : 8;
                        JsonValue *items = realloc(v->items, m * sizeof(JsonValue));
                        char **keys;

                        if (!items)
                                return -ENOMEM;
                        v->items = items;
                        if (object) {
                                keys = realloc(v->keys, m * sizeof(char *));
                                if (!keys)
                                        return -ENOMEM;
                                v->keys = keys;
                        }
                        allocated = m;
                }
                v->items[v->n_items] = (JsonValue) {};
                if (object)
                        v->keys[v->n_items] = NULL;
                v->n_items++;
                k = parse_value(ps, &v->items[v->n_items - 1], depth + 1);
                if (object)
                        v->keys[v->n_items - 1] = TAKE_PTR(key);
                if (k < 0)
                        return k;
                skip_ws(ps);
                if (ps->p < ps->end && *ps->p == ',') {
                        ps->p++;
                        continue;
                }
                if (ps->p < ps->end && *ps->p == close) {
                        ps->p++;
                        return 0;
                }
                return -EBADMSG;
        }
}

static int parse_value(Parser *ps, JsonValue *v, unsigned depth) {
        if (depth > JSON_PARSE_DEPTH_MAX || ++ps->values > JSON_PARSE_VALUES_MAX)
                return -E2BIG;
        skip_ws(ps);
        if (ps->p >= ps->end)
                return -EBADMSG;
        switch (*ps->p) {
        case '{':
                return parse_container(ps, v, depth, true);
        case '[':
                return parse_container(ps, v, depth, false);
        case '"':
                v->kind = JSON_STRING;
                return parse_string(ps, &v->string);
        case 't':
        case 'f':
                v->kind = JSON_BOOL;
                v->boolean = *ps->p == 't';
                return literal(ps, v->boolean ? "true" : "false") ? 0 : -EBADMSG;
        case 'n':
                v->kind = JSON_NULL;
                return literal(ps, "null") ? 0 : -EBADMSG;
        default: {
                char buf[64], *e;
                size_t n = 0;

                while (ps->p + n < ps->end && n < sizeof(buf) - 1 && strchr("+-0123456789.eE", ps->p[n]))
                        n++;
                if (n == 0 || n == sizeof(buf) - 1)
                        return -EBADMSG;
                memcpy(buf, ps->p, n);
                buf[n] = '\0';
                v->kind = JSON_NUMBER;
                v->number = strtod(buf, &e);
                if (*e)
                        return -EBADMSG;
                ps->p += n;
                return 0;
        }
        }
}

int json_parse(const char *text, size_t len, JsonValue **ret, unsigned *ret_line) {
        _cleanup_(json_value_freep) JsonValue *v = calloc(1, sizeof(JsonValue));
        Parser ps = { .p = text, .end = text + len, .line = 1 };
        int k;

        if (!v)
                return -ENOMEM;
        if (memchr(text, '\0', len))
                k = -EBADMSG;
        else
                k = parse_value(&ps, v, 0);
        if (k >= 0) {
                skip_ws(&ps);
                if (ps.p != ps.end)
                        k = -EBADMSG;
        }
        if (k < 0) {
                if (ret_line)
                        *ret_line = ps.line;
                return k;
        }
        *ret = TAKE_PTR(v);
        return 0;
}

const JsonValue *json_value_get(const JsonValue *o, const char *key) {
        if (!o || o->kind != JSON_OBJECT)
                return NULL;
        for (size_t i = 0; i < o->n_items; i++)
                if (o->keys[i] && streq(o->keys[i], key))
                        return &o->items[i];
        return NULL;
}

const char *json_value_get_string(const JsonValue *o, const char *key) {
        const JsonValue *v = json_value_get(o, key);

        return v && v->kind == JSON_STRING ? v->string : NULL;
}

bool json_value_get_bool(const JsonValue *o, const char *key, bool def) {
        const JsonValue *v = json_value_get(o, key);

        return v && v->kind == JSON_BOOL ? v->boolean : def;
}
