/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "initext.h"

#include <ctype.h>
#include <ini.h>
#include <stdbool.h>
#include <string.h>

typedef struct IniText {
        const char *text;
        size_t len, pos;
        const char *file;
        unsigned line;  /* the line last handed to inih */
        unsigned error_line; /* last line we reported a syntax error for */
        Diagnostics *d;
        const IniTextCallbacks *cb;
        void *userdata;
        char section[128];
        int error; /* first negative errno from a callback or diag_add */
} IniText;

static void note(IniText *t, int k) {
        if (k < 0 && t->error == 0)
                t->error = k;
}

/* As inih does: the first of chars, or of an inline ';' comment (a ';'
 * at the start or after whitespace), or the end. */
static const char *find_chars_or_comment(const char *s, const char *chars) {
        bool was_space = false;

        while (*s && (!chars || !strchr(chars, *s)) && !(was_space && *s == ';')) {
                was_space = isspace((unsigned char) *s);
                s++;
        }
        return s;
}

static void syntax_error(IniText *t, const char *what, const char *got) {
        t->error_line = t->line;
        if (got)
                note(t, diag_add(t->d, DIAG_ERROR, t->file, t->line, "syntax", "%s, got '%s'%s", what, got,
                                 strpbrk(got, "<>") ? " (write comparisons as 'llcs >= 4' or 'llcs = > 4')" : ""));
        else
                note(t, diag_add(t->d, DIAG_ERROR, t->file, t->line, "syntax", "%s", what));
}

/* Look at one line (NUL-terminated, without the newline, leading blanks
 * removed) the way inih will, and report what it would reject. */
static void inspect_line(IniText *t, const char *s) {
        const char *e;

        if (!*s || *s == ';' || *s == '#')
                return;
        if (*s == '[') {
                size_t n;
                char name[sizeof t->section];

                e = find_chars_or_comment(s + 1, "]");
                if (*e != ']') {
                        syntax_error(t, "section header without a closing ']'", NULL);
                        strcpy(t->section, "\x01"); /* keys below belong to no valid section */
                        return;
                }
                s++;
                while (s < e && isspace((unsigned char) *s))
                        s++;
                while (e > s && isspace((unsigned char) e[-1]))
                        e--;
                n = (size_t) (e - s);
                if (n >= sizeof name)
                        n = sizeof name - 1;
                memcpy(name, s, n);
                name[n] = '\0';
                strcpy(t->section, name);
                if (t->cb->section)
                        note(t, t->cb->section(t->userdata, name, t->line));
                return;
        }
        e = find_chars_or_comment(s, "=:");
        if (*e != '=' && *e != ':') {
                syntax_error(t, "expected 'key = value'", s);
        }
}

/* fgets() for inih: one physical line per call, or an empty line standing
 * in for a line we already reported. */
static char *reader(char *buf, int num, void *stream) {
        IniText *t = stream;
        const char *start, *nl;
        size_t n, max;

        if (t->pos >= t->len || num < 4)
                return NULL;
        start = t->text + t->pos;
        nl = memchr(start, '\n', t->len - t->pos);
        n = nl ? (size_t) (nl - start) : t->len - t->pos;
        t->pos += n + (nl ? 1 : 0);
        t->line++;

        /* A byte order mark on the first line; inih would skip it too. */
        if (t->line == 1 && n >= 3 && memcmp(start, "\xEF\xBB\xBF", 3) == 0) {
                start += 3;
                n -= 3;
        }
        while (n > 0 && (*start == ' ' || *start == '\t' || *start == '\r' || *start == '\f' || *start == '\v')) {
                start++;
                n--;
        }

        /* Leave room for "\r\n\0", as inih's buffer rule says. */
        max = (size_t) num - 3;
        if (memchr(start, '\0', n)) {
                syntax_error(t, "line contains a NUL byte", NULL);
                strcpy(buf, "\n");
                return buf;
        }
        if (n > max) {
                t->error_line = t->line;
                note(t, diag_add(t->d, DIAG_ERROR, t->file, t->line, "limit",
                                 "line is %zu characters long, longer than the limit of %zu", n, max));
                strcpy(buf, "\n");
                return buf;
        }
        memcpy(buf, start, n);
        buf[n] = '\0';
        inspect_line(t, buf);
        buf[n] = '\n';
        buf[n + 1] = '\0';
        return buf;
}

static int handler(void *user, const char *section, const char *name, const char *value) {
        IniText *t = user;

        (void) section; /* ours is stripped and knows about broken headers */
        if (streq(t->section, "\x01"))
                return 1;
        if (t->error < 0)
                return 1;
        if (!*name) {
                t->error_line = t->line;
                note(t, diag_add(t->d, DIAG_ERROR, t->file, t->line, "syntax", "%s", "missing key name before '='"));
                return 1;
        }
        if (t->cb->key)
                note(t, t->cb->key(t->userdata, t->section, name, value ?: "", t->line));
        return 1;
}

int initext_parse(const char *text, size_t len, const char *file, Diagnostics *d, const IniTextCallbacks *cb,
                  void *userdata) {
        IniText t = {
                .text = text ?: "",
                .len = text ? len : 0,
                .file = file,
                .d = d,
                .cb = cb,
                .userdata = userdata,
        };
        int r;

        r = ini_parse_stream(reader, &t, handler, &t);
        if (t.error < 0)
                return t.error;
        if (r == -2)
                return -ENOMEM;
        if (r < 0)
                return -EIO;
        if (r > 0 && (unsigned) r != t.error_line && !diag_has_line(d, file, (unsigned) r))
                /* inih disagreed with our reading of a line; say so rather
                 * than passing it silently. */
                note(&t, diag_add(d, DIAG_ERROR, file, (unsigned) r, "syntax", "%s", "line cannot be parsed"));
        return t.error;
}
