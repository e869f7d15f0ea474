/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* systemd unit names in cgroup paths (unit-name.h): their own file because
 * the scope, the policy matcher and the systemd driver all read them, and
 * none of them owns the rules. */

#include "unit-name.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const unit_suffix[_UNIT_TYPE_MAX] = {
        [UNIT_TYPE_SERVICE] = ".service",
        [UNIT_TYPE_SCOPE] = ".scope",
        [UNIT_TYPE_SLICE] = ".slice",
};

static bool unit_char_ok(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ':' ||
               c == '_' || c == '.' || c == '\\' || c == '-' || c == '@';
}

UnitType unit_name_type(const char *name, size_t len) {
        if (!name || len == 0 || len > UNIT_NAME_MAX)
                return UNIT_TYPE_INVALID;
        for (size_t i = 0; i < len; i++)
                if (!unit_char_ok(name[i]))
                        return UNIT_TYPE_INVALID;
        for (int t = 0; t < _UNIT_TYPE_MAX; t++) {
                size_t sl = strlen(unit_suffix[t]);
                /* a prefix of at least one character before the suffix */
                if (len > sl && memcmp(name + len - sl, unit_suffix[t], sl) == 0)
                        return (UnitType) t;
        }
        return UNIT_TYPE_INVALID;
}

bool unit_name_is_valid(const char *name, size_t len) {
        return unit_name_type(name, len) != UNIT_TYPE_INVALID;
}

size_t unit_path_units(const char *path, UnitRef *ret, size_t max) {
        size_t n = 0;

        if (!path)
                return 0;
        for (const char *p = path; *p && n < max;) {
                while (*p == '/')
                        p++;
                size_t len = strcspn(p, "/");
                if (len == 0)
                        break;
                UnitType t = unit_name_type(p, len);
                if (t != UNIT_TYPE_INVALID)
                        ret[n++] = (UnitRef) { .name = p, .len = len, .type = t };
                p += len;
        }
        return n;
}

int unit_from_cgroup(const char *path, UnitRef *ret) {
        UnitRef last_slice = {};
        bool have_slice = false;

        if (!path)
                return -ENXIO;
        for (const char *p = path; *p;) {
                while (*p == '/')
                        p++;
                size_t len = strcspn(p, "/");
                if (len == 0)
                        break;
                UnitType t = unit_name_type(p, len);
                if (t == UNIT_TYPE_INVALID)
                        break; /* below the units: a unit's own sub-cgroup, or not systemd's */
                if (t != UNIT_TYPE_SLICE) {
                        *ret = (UnitRef) { .name = p, .len = len, .type = t };
                        return 0;
                }
                last_slice = (UnitRef) { .name = p, .len = len, .type = t };
                have_slice = true;
                p += len;
        }
        if (!have_slice)
                return -ENXIO;
        *ret = last_slice;
        return 0;
}

int unit_slice_cgroup_path(const char *slice, char **ret) {
        size_t len, plen;

        if (!slice)
                return -EINVAL;
        len = strlen(slice);
        if (unit_name_type(slice, len) != UNIT_TYPE_SLICE)
                return -EINVAL;
        if (strcmp(slice, "-.slice") == 0) {
                char *s = strdup("/");
                if (!s)
                        return -ENOMEM;
                *ret = s;
                return 0;
        }
        plen = len - strlen(".slice");
        if (slice[0] == '-' || slice[plen - 1] == '-')
                return -EINVAL;
        /* every prefix up to a '-' is a level: "/a.slice" "/a-b.slice" ... */
        size_t levels = 1;
        for (size_t i = 0; i < plen; i++)
                if (slice[i] == '-') {
                        if (slice[i + 1] == '-')
                                return -EINVAL;
                        levels++;
                }
        /* each level: '/' + its prefix + ".slice"; at most levels * (len + 1) */
        char *s = malloc(levels * (len + 1) + 1);
        if (!s)
                return -ENOMEM;
        char *w = s;
        for (size_t i = 0; i <= plen; i++)
                if (i == plen || slice[i] == '-') {
                        *w++ = '/';
                        memcpy(w, slice, i);
                        w += i;
                        memcpy(w, ".slice", 6);
                        w += 6;
                }
        *w = '\0';
        *ret = s;
        return 0;
}

char *unit_name_escape_part(const char *s) {
        static const char hex[] = "0123456789abcdef";
        size_t len = strlen(s);
        char *r = malloc(len * 4 + 1), *w = r;

        if (!r)
                return NULL;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char) s[i];
                bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                             c == ':' || c == '_' || (c == '.' && i > 0);
                if (plain)
                        *w++ = (char) c;
                else {
                        *w++ = '\\';
                        *w++ = 'x';
                        *w++ = hex[c >> 4];
                        *w++ = hex[c & 15];
                }
        }
        *w = '\0';
        return r;
}
