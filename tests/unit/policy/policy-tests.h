/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Small assertions for the policy tests: on failure print file:line, the
 * expression and both values, and exit 1. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ASSERT_TRUE(expr)                                                                          \
        do {                                                                                       \
                if (!(expr)) {                                                                     \
                        fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #expr); \
                        exit(EXIT_FAILURE);                                                        \
                }                                                                                  \
        } while (0)

#define ASSERT_FALSE(expr) ASSERT_TRUE(!(expr))

#define ASSERT_EQ(a, b)                                                                                     \
        do {                                                                                                \
                intmax_t _a = (intmax_t) (a), _b = (intmax_t) (b);                                          \
                if (_a != _b) {                                                                             \
                        fprintf(stderr, "%s:%d: %s == %s failed: %jd != %jd\n", __FILE__, __LINE__, #a, #b, _a, _b); \
                        exit(EXIT_FAILURE);                                                                 \
                }                                                                                           \
        } while (0)

#define ASSERT_OK(expr)                                                                                    \
        do {                                                                                               \
                intmax_t _r = (intmax_t) (expr);                                                           \
                if (_r < 0) {                                                                              \
                        fprintf(stderr, "%s:%d: %s failed: %jd (%s)\n", __FILE__, __LINE__, #expr, _r,     \
                                strerror((int) -_r));                                                      \
                        exit(EXIT_FAILURE);                                                                \
                }                                                                                          \
        } while (0)

#define ASSERT_STREQ(a, b)                                                                                   \
        do {                                                                                                 \
                const char *_a = (a), *_b = (b);                                                             \
                if (!_a || !_b || strcmp(_a, _b) != 0) {                                                     \
                        fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__, #a, #b, \
                                _a ?: "(null)", _b ?: "(null)");                                             \
                        exit(EXIT_FAILURE);                                                                  \
                }                                                                                            \
        } while (0)

#define ASSERT_NULL(p)                                                                                       \
        do {                                                                                                 \
                const void *_p = (p);                                                                        \
                if (_p) {                                                                                    \
                        fprintf(stderr, "%s:%d: %s is not NULL\n", __FILE__, __LINE__, #p);                 \
                        exit(EXIT_FAILURE);                                                                  \
                }                                                                                            \
        } while (0)

/* Print the diagnostics (for a failing test's context). */
#define DUMP_DIAG(d)                                                                                         \
        do {                                                                                                 \
                for (size_t _i = 0; _i < (d)->n; _i++)                                                       \
                        fprintf(stderr, "  %s:%u: %s [%s] %s\n", (d)->items[_i].file, (d)->items[_i].line,  \
                                (d)->items[_i].severity == DIAG_ERROR ? "error" : "warning", (d)->items[_i].id, \
                                (d)->items[_i].message);                                                     \
        } while (0)

/* The diagnostics hold exactly one finding with this id, at this line. */
#define ASSERT_DIAG(d, sev, id_, line_)                                                                      \
        do {                                                                                                 \
                size_t _n = 0;                                                                               \
                unsigned _line = 0;                                                                          \
                for (size_t _i = 0; _i < (d)->n; _i++)                                                       \
                        if (strcmp((d)->items[_i].id, (id_)) == 0 && (int) (d)->items[_i].severity == (sev)) { \
                                _n++;                                                                        \
                                _line = (d)->items[_i].line;                                                 \
                        }                                                                                    \
                if (_n != 1 || _line != (unsigned) (line_)) {                                                \
                        fprintf(stderr, "%s:%d: expected one %s '%s' at line %u, found %zu (last at line %u):\n", \
                                __FILE__, __LINE__, (sev) == DIAG_ERROR ? "error" : "warning", (id_),       \
                                (unsigned) (line_), _n, _line);                                              \
                        DUMP_DIAG(d);                                                                        \
                        exit(EXIT_FAILURE);                                                                  \
                }                                                                                            \
        } while (0)

#define TEST(name) static void test_##name(void)
#define RUN(name)                                    \
        do {                                         \
                fprintf(stderr, "== %s\n", #name);   \
                test_##name();                       \
        } while (0)
