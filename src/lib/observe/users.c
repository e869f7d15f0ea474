/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "users.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct User {
        uid_t uid;
        size_t order; /* line order, so the first name of a uid wins */
        char *name;
} User;

struct UserTable {
        User *users; /* sorted by uid; the first name of a uid wins */
        size_t n;
};

UserTable *users_free(UserTable *u) {
        if (!u)
                return NULL;
        for (size_t i = 0; i < u->n; i++)
                free(u->users[i].name);
        free(u->users);
        free(u);
        return NULL;
}

static int compare_user(const void *a, const void *b) {
        const User *x = a, *y = b;

        return (x->uid > y->uid) - (x->uid < y->uid);
}

static int compare_user_order(const void *a, const void *b) {
        const User *x = a, *y = b;
        int c = compare_user(a, b);

        return c ? c : (x->order > y->order) - (x->order < y->order);
}

int users_parse(const char *text, UserTable **ret) {
        _cleanup_(users_freep) UserTable *u = calloc(1, sizeof(UserTable));
        size_t cap = 0;

        if (!u)
                return -ENOMEM;
        for (const char *line = text; *line;) {
                const char *nl = strchr(line, '\n');
                const char *end = nl ? nl : line + strlen(line);
                const char *c1 = memchr(line, ':', (size_t) (end - line));
                const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t) (end - c1 - 1)) : NULL;
                unsigned long uid = 0;
                bool ok = c2 && c1 > line && c1 - line <= 256;

                if (ok) {
                        const char *p = c2 + 1;

                        if (p >= end || *p < '0' || *p > '9')
                                ok = false;
                        for (; ok && p < end && *p != ':'; p++) {
                                if (*p < '0' || *p > '9' || uid > UINT32_MAX / 10) {
                                        ok = false;
                                        break;
                                }
                                uid = uid * 10 + (unsigned long) (*p - '0');
                        }
                }
                if (ok && line[0] != '#' && line[0] != '+' && line[0] != '-') {
                        if (u->n == cap) {
                                size_t ncap = cap ? cap * 2 : 64;
                                User *nu = realloc(u->users, ncap * sizeof(User));

                                if (!nu)
                                        return -ENOMEM;
                                u->users = nu;
                                cap = ncap;
                        }
                        u->users[u->n].uid = (uid_t) uid;
                        u->users[u->n].order = u->n;
                        u->users[u->n].name = strndup(line, (size_t) (c1 - line));
                        if (!u->users[u->n].name)
                                return -ENOMEM;
                        u->n++;
                }
                line = nl ? nl + 1 : end;
        }
        /* Stable order for equal uids: keep the first entry of each. */
        if (u->n > 1) {
                size_t w = 0;

                qsort(u->users, u->n, sizeof(User), compare_user_order);
                for (size_t i = 0; i < u->n; i++) {
                        if (w > 0 && u->users[w - 1].uid == u->users[i].uid) {
                                free(u->users[i].name);
                                continue;
                        }
                        u->users[w++] = u->users[i];
                }
                u->n = w;
        }
        *ret = TAKE_PTR(u);
        return 0;
}

int users_load(const Root *root, UserTable **ret) {
        _cleanup_free_ char *text = NULL;
        int k = root_read_file(root, "etc/passwd", USERS_FILE_MAX, &text, NULL);

        if (k == -ENOENT)
                return users_parse("", ret);
        if (k < 0)
                return k;
        return users_parse(text, ret);
}

const char *users_name(const UserTable *u, uid_t uid) {
        User key = { .uid = uid };
        const User *f = u->n ? bsearch(&key, u->users, u->n, sizeof(User), compare_user) : NULL;

        return f ? f->name : NULL;
}
