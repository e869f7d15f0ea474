/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Build small fake /proc and /sys trees in a temporary directory. */

#define _GNU_SOURCE 1
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests.h"

static inline char *fake_root_new(void) {
        char tmpl[] = "/tmp/topod-fake-root-XXXXXX";
        char *d = mkdtemp(tmpl);

        if (!d)
                TEST_FAIL("mkdtemp: %s", strerror(errno));
        return strdup(d);
}

static inline void mkdir_parents(const char *path) {
        char buf[PATH_MAX];

        snprintf(buf, sizeof(buf), "%s", path);
        for (char *p = buf + 1; *p; p++)
                if (*p == '/') {
                        *p = '\0';
                        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                                TEST_FAIL("mkdir %s: %s", buf, strerror(errno));
                        *p = '/';
                }
}

static inline void fake_write_n(const char *root, const char *rel, const char *content, size_t len) {
        char path[PATH_MAX];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", root, rel);
        mkdir_parents(path);
        f = fopen(path, "we");
        if (!f)
                TEST_FAIL("fopen %s: %s", path, strerror(errno));
        if (len > 0 && fwrite(content, 1, len, f) != len)
                TEST_FAIL("write %s: %s", path, strerror(errno));
        fclose(f);
}

static inline void fake_write(const char *root, const char *rel, const char *content) {
        fake_write_n(root, rel, content, strlen(content));
}

static inline void fake_mkdir(const char *root, const char *rel) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/%s/", root, rel);
        mkdir_parents(path);
}

static inline int fake_rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(p) < 0 ? -1 : 0;
}

static inline void fake_root_remove(char *root) {
        if (root)
                nftw(root, fake_rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(root);
}
