/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Minimal test helpers: each ASSERT prints file:line and both values, then
 * aborts the test program (exit 1). test_skip() exits 77, which meson counts
 * as skipped, and always says why. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_FAIL(...)                                                   \
        do {                                                             \
                fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);    \
                fprintf(stderr, __VA_ARGS__);                            \
                fputc('\n', stderr);                                     \
                exit(EXIT_FAILURE);                                      \
        } while (0)

#define ASSERT_TRUE(expr)                                                \
        do {                                                             \
                if (!(expr))                                             \
                        TEST_FAIL("expected true: %s", #expr);           \
        } while (0)

#define ASSERT_FALSE(expr) ASSERT_TRUE(!(expr))

#define ASSERT_EQ(a, b)                                                                        \
        do {                                                                                   \
                intmax_t _a = (intmax_t) (a), _b = (intmax_t) (b);                             \
                if (_a != _b)                                                                  \
                        TEST_FAIL("%s == %s: %jd != %jd", #a, #b, _a, _b);                     \
        } while (0)

#define ASSERT_STREQ(a, b)                                                                     \
        do {                                                                                   \
                const char *_a = (a), *_b = (b);                                               \
                if (!_a || !_b || strcmp(_a, _b) != 0)                                         \
                        TEST_FAIL("%s == %s: \"%s\" != \"%s\"", #a, #b, _a ?: "(null)",        \
                                  _b ?: "(null)");                                             \
        } while (0)

#define ASSERT_NULL(p)                                                                         \
        do {                                                                                   \
                if ((p) != NULL)                                                               \
                        TEST_FAIL("expected NULL: %s", #p);                                    \
        } while (0)

/* expr returns >= 0 on success, negative errno on failure. */
#define ASSERT_OK(expr)                                                                        \
        do {                                                                                   \
                intmax_t _r = (intmax_t) (expr);                                               \
                if (_r < 0)                                                                    \
                        TEST_FAIL("%s failed: %jd (%s)", #expr, _r, strerror((int) -_r));      \
        } while (0)

#define ASSERT_ERROR(expr, err)                                                                \
        do {                                                                                   \
                intmax_t _r = (intmax_t) (expr);                                               \
                if (_r != -(intmax_t) (err))                                                   \
                        TEST_FAIL("%s: expected -%s, got %jd (%s)", #expr, #err, _r,           \
                                  _r < 0 ? strerror((int) -_r) : "success");                   \
        } while (0)

#define test_skip(...)                                                   \
        do {                                                             \
                printf("SKIP: ");                                        \
                printf(__VA_ARGS__);                                     \
                putchar('\n');                                           \
                exit(77);                                                \
        } while (0)

/* Run one test function, announcing it. */
#define RUN(fn)                                     \
        do {                                        \
                printf("== %s\n", #fn);             \
                fflush(stdout);                     \
                fn();                               \
        } while (0)

/* The whole of a small file, or NULL. */
static inline char *test_read_all(const char *path) {
        FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t len = 0;
        FILE *m;
        int c;

        if (!f)
                return NULL;
        m = open_memstream(&buf, &len);
        if (!m) {
                fclose(f);
                return NULL;
        }
        while ((c = fgetc(f)) != EOF)
                fputc(c, m);
        fclose(m);
        fclose(f);
        return buf;
}

/* Compare output with a committed golden file (paths relative to the source
 * tree, where these tests run). TOPOD_UPDATE_GOLDEN=1 rewrites the file
 * first, after a deliberate change. */
static inline void test_golden(const char *path, const char *got) {
        char *expected;

        if (getenv("TOPOD_UPDATE_GOLDEN")) {
                FILE *f = fopen(path, "we");
                if (!f)
                        TEST_FAIL("cannot write %s: %s", path, strerror(errno));
                fputs(got, f);
                fclose(f);
        }
        expected = test_read_all(path);
        if (!expected)
                TEST_FAIL("cannot read %s: %s (cwd must be the source tree)", path, strerror(errno));
        if (strcmp(got, expected) != 0)
                TEST_FAIL("output differs from %s; got:\n%s", path, got);
        free(expected);
}
