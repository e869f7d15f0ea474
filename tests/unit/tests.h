/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Test helpers shared by every unit test. Each ASSERT prints file:line, the
 * expressions and their values, then ends the test program (exit 1).
 * test_skip() exits 77, which meson counts as skipped, and always says why.
 *
 * Integer comparisons (ASSERT_EQ/NE/LT/LE/GT/GE) take any integer types:
 * each operand is read once, keeping its exact value and its signedness,
 * and the two are compared as numbers, so -1 is below UINT64_MAX and a
 * uint64_t above INT64_MAX prints as itself. Where C's own
 * comparison would convert a negative operand to unsigned it compares the
 * values instead; -Werror=sign-compare rejects such a comparison written in
 * C, so for every comparison that compiles as C the two agree. A pointer, a
 * floating-point operand or (with gcc) a bit-field wider than int does not
 * compile: pointers have ASSERT_PTR_EQ/NE, ASSERT_NULL and ASSERT_NOT_NULL;
 * strings ASSERT_STREQ/STRNE and the prefix and substring forms. */

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <limits.h>
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

#define ASSERT_FALSE(expr)                                               \
        do {                                                             \
                if (expr)                                                \
                        TEST_FAIL("expected false: %s", #expr);          \
        } while (0)

/* ---- integers ---- */

/* An integer operand is kept as its value converted to uintmax_t (which
 * converts back exactly) and whether its type is signed. The unary plus
 * promotes bool, char, short and narrow bit-fields to int, so the six types
 * below are all an operand can be; an enum is the integer type it is
 * compatible with. Anything else (a pointer, a double) fails to compile. */
#define TEST_IS_SIGNED(x)                                                \
        _Generic(+(x),                                                   \
                int: true,                                               \
                long: true,                                              \
                long long: true,                                         \
                unsigned: false,                                         \
                unsigned long: false,                                    \
                unsigned long long: false)

static inline bool test_int_negative(bool is_signed, uintmax_t v) {
        return is_signed && (intmax_t) v < 0;
}

/* -1, 0 or 1 as a is below, equal to or above b, as numbers. */
static inline int test_int_cmp(bool a_signed, uintmax_t a, bool b_signed, uintmax_t b) {
        bool a_neg = test_int_negative(a_signed, a), b_neg = test_int_negative(b_signed, b);

        if (a_neg != b_neg)
                return a_neg ? -1 : 1;
        if (a_neg) /* both negative */
                return ((intmax_t) a > (intmax_t) b) - ((intmax_t) a < (intmax_t) b);
        return (a > b) - (a < b);
}

static inline void test_int_print(FILE *f, bool is_signed, uintmax_t v) {
        if (is_signed)
                fprintf(f, "%jd", (intmax_t) v);
        else
                fprintf(f, "%ju", v);
}

/* "expected a < b, got 7 > 5": the relation asked for, and the one found.
 * The ASSERT_* wrappers stringify their own arguments, so that a macro in an
 * operand prints as written, not expanded. */
static inline _Noreturn void test_fail_cmp(const char *file, int line, const char *ea, const char *op,
                                           const char *eb, bool a_signed, uintmax_t a, bool b_signed,
                                           uintmax_t b) {
        int c = test_int_cmp(a_signed, a, b_signed, b);

        fprintf(stderr, "%s:%d: FAIL: expected %s %s %s, got ", file, line, ea, op, eb);
        test_int_print(stderr, a_signed, a);
        fprintf(stderr, " %s ", c < 0 ? "<" : c > 0 ? ">" : "==");
        test_int_print(stderr, b_signed, b);
        fputc('\n', stderr);
        exit(EXIT_FAILURE);
}

/* Operands of one signedness (known at compile time) compare directly, so
 * that the compiler learns the operands' ranges from a passed assert as it
 * would from an if; mixed ones by value. */
#define TEST_CMP_HOLDS(as, av, op, bs, bv)                                                     \
        ((as) == (bs) ? ((as) ? (intmax_t) (av) op (intmax_t) (bv) : (av) op (bv))             \
                      : test_int_cmp(as, av, bs, bv) op 0)

#define TEST_ASSERT_CMP(a, op, b, ea, eb)                                                      \
        do {                                                                                   \
                const bool _as = TEST_IS_SIGNED(a), _bs = TEST_IS_SIGNED(b);                   \
                const uintmax_t _av = (uintmax_t) (a), _bv = (uintmax_t) (b);                  \
                if (!TEST_CMP_HOLDS(_as, _av, op, _bs, _bv))                                   \
                        test_fail_cmp(__FILE__, __LINE__, ea, #op, eb, _as, _av, _bs, _bv);    \
        } while (0)

#define ASSERT_EQ(a, b) TEST_ASSERT_CMP(a, ==, b, #a, #b)
#define ASSERT_NE(a, b) TEST_ASSERT_CMP(a, !=, b, #a, #b)
#define ASSERT_LT(a, b) TEST_ASSERT_CMP(a, <, b, #a, #b)
#define ASSERT_LE(a, b) TEST_ASSERT_CMP(a, <=, b, #a, #b)
#define ASSERT_GT(a, b) TEST_ASSERT_CMP(a, >, b, #a, #b)
#define ASSERT_GE(a, b) TEST_ASSERT_CMP(a, >=, b, #a, #b)

/* ---- strings ---- */

/* A NULL operand fails every string form: the test meant a string. */
static inline _Noreturn void test_fail_str(const char *file, int line, const char *what, const char *ea,
                                           const char *eb, const char *a, const char *b) {
        fprintf(stderr, "%s:%d: FAIL: expected %s %s %s, got ", file, line, ea, what, eb);
        if (a)
                fprintf(stderr, "\"%s\"", a);
        else
                fputs("NULL", stderr);
        fputs(" and ", stderr);
        if (b)
                fprintf(stderr, "\"%s\"", b);
        else
                fputs("NULL", stderr);
        fputc('\n', stderr);
        exit(EXIT_FAILURE);
}

#define TEST_ASSERT_STR(a, b, ea, eb, what, holds)                                             \
        do {                                                                                   \
                const char *_sa = (a), *_sb = (b);                                             \
                if (!_sa || !_sb || !(holds))                                                  \
                        test_fail_str(__FILE__, __LINE__, what, ea, eb, _sa, _sb);             \
        } while (0)

#define ASSERT_STREQ(a, b) TEST_ASSERT_STR(a, b, #a, #b, "==", strcmp(_sa, _sb) == 0)
#define ASSERT_STRNE(a, b) TEST_ASSERT_STR(a, b, #a, #b, "!=", strcmp(_sa, _sb) != 0)
/* s starts with prefix. */
#define ASSERT_STR_PREFIX(s, prefix) \
        TEST_ASSERT_STR(s, prefix, #s, #prefix, "to start with", strncmp(_sa, _sb, strlen(_sb)) == 0)
/* haystack holds needle. */
#define ASSERT_STR_CONTAINS(haystack, needle) \
        TEST_ASSERT_STR(haystack, needle, #haystack, #needle, "to contain", strstr(_sa, _sb))
#define ASSERT_STR_NOT_CONTAINS(haystack, needle) \
        TEST_ASSERT_STR(haystack, needle, #haystack, #needle, "not to contain", !strstr(_sa, _sb))

/* ---- pointers ---- */

#define TEST_ASSERT_PTR(a, op, b, ea, eb)                                                      \
        do {                                                                                   \
                const void *_pa = (a), *_pb = (b);                                             \
                if (!(_pa op _pb))                                                             \
                        TEST_FAIL("expected %s %s %s, got %p and %p", ea, #op, eb, _pa, _pb);  \
        } while (0)

#define ASSERT_PTR_EQ(a, b) TEST_ASSERT_PTR(a, ==, b, #a, #b)
#define ASSERT_PTR_NE(a, b) TEST_ASSERT_PTR(a, !=, b, #a, #b)

#define ASSERT_NULL(p)                                                                         \
        do {                                                                                   \
                const void *_p = (p);                                                          \
                if (_p)                                                                        \
                        TEST_FAIL("expected %s == NULL, got %p", #p, _p);                      \
        } while (0)

#define ASSERT_NOT_NULL(p)                                                                     \
        do {                                                                                   \
                const void *_p = (p);                                                          \
                if (!_p)                                                                       \
                        TEST_FAIL("expected %s != NULL", #p);                                  \
        } while (0)

/* ---- errno returns ---- */

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

/* Write (or append) text to dir/name. */
static inline void test_write_file(const char *dir, const char *name, const char *text, bool append) {
        char path[PATH_MAX];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, append ? "ae" : "we");
        ASSERT_NOT_NULL(f);
        ASSERT_TRUE(fputs(text, f) >= 0);
        ASSERT_EQ(fclose(f), 0);
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

/* ---- diagnostics (the policy and config readers' Diag) ---- */

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
                        fprintf(stderr, "%s:%d: FAIL: expected one %s '%s' at line %u, found %zu (last at line %u):\n", \
                                __FILE__, __LINE__, (sev) == DIAG_ERROR ? "error" : "warning", (id_),       \
                                (unsigned) (line_), _n, _line);                                              \
                        DUMP_DIAG(d);                                                                        \
                        exit(EXIT_FAILURE);                                                                  \
                }                                                                                            \
        } while (0)
