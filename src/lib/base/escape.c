/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Escaping strings from outside for output (see escape.h). */
#include "escape.h"

#include <stdlib.h>
#include <string.h>

size_t utf8_sequence(const unsigned char *s, size_t n, unsigned *ret_cp) {
        unsigned cp, min;
        size_t len;

        if (n == 0)
                return 0;
        if (s[0] < 0x80) {
                *ret_cp = s[0];
                return 1;
        }
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                len = 2, cp = s[0] & 0x1f, min = 0x80;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                len = 3, cp = s[0] & 0x0f, min = 0x800;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                len = 4, cp = s[0] & 0x07, min = 0x10000;
        else
                return 0;
        if (n < len)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        *ret_cp = cp;
        return len;
}

bool utf8_valid(const char *s, size_t n, size_t *ret_bad) {
        const unsigned char *p = (const unsigned char *) s;

        for (size_t i = 0; i < n;) {
                unsigned cp;
                size_t l = utf8_sequence(p + i, n - i, &cp);

                if (l == 0 || cp == 0) {
                        if (ret_bad)
                                *ret_bad = i;
                        return false;
                }
                i += l;
        }
        return true;
}

static bool is_control(unsigned cp, EscapeFlags flags) {
        if (!(flags & ESCAPE_CONTROL))
                return false;
        if ((flags & ESCAPE_KEEP_NEWLINE) && (cp == '\n' || cp == '\t'))
                return false;
        return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f);
}

void escape_write(FILE *f, const char *s, EscapeFlags flags) {
        const unsigned char *p = (const unsigned char *) s;
        size_t n = strlen(s);

        for (size_t i = 0; i < n;) {
                unsigned cp;
                size_t l = utf8_sequence(p + i, n - i, &cp);

                if (l == 0) {
                        fprintf(f, "\\x%02x", p[i]);
                        i++;
                        continue;
                }
                if (is_control(cp, flags)) {
                        /* U+0080..U+009F are two bytes: each shown */
                        for (size_t b = 0; b < l; b++)
                                fprintf(f, "\\x%02x", p[i + b]);
                } else
                        fwrite(p + i, 1, l, f);
                i += l;
        }
}

char *escape_string(const char *s, EscapeFlags flags) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f;

        if (!s)
                return NULL;
        f = open_memstream(&buf, &len);
        if (!f)
                return NULL;
        escape_write(f, s, flags);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}
