/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "base/bitmap.h"
#include "tests.h"

static void roundtrip(const char *in, const char *out) {
        _cleanup_(bitmap_freep) Bitmap *b = NULL;
        _cleanup_free_ char *s = NULL;

        ASSERT_OK(bitmap_parse_list(in, &b));
        ASSERT_OK(bitmap_format_list(b, &s));
        ASSERT_STREQ(s, out);
}

static void test_parse_format(void) {
        roundtrip("", "");
        roundtrip("\n", "");
        roundtrip("0", "0");
        roundtrip("0-3", "0-3");
        roundtrip("0-3,8-11\n", "0-3,8-11");
        roundtrip("3,2,1,0", "0-3");
        roundtrip("0,2,4", "0,2,4");
        roundtrip("63-64", "63-64");
        roundtrip("127,128", "127-128");
        roundtrip("5-5", "5");
        roundtrip("65535", "65535");
}

static void test_parse_errors(void) {
        Bitmap *b = NULL;

        ASSERT_ERROR(bitmap_parse_list("a", &b), EINVAL);
        ASSERT_ERROR(bitmap_parse_list("3-1", &b), EINVAL);
        ASSERT_ERROR(bitmap_parse_list("1,", &b), EINVAL);
        ASSERT_ERROR(bitmap_parse_list(",1", &b), EINVAL);
        ASSERT_ERROR(bitmap_parse_list("1-", &b), EINVAL);
        ASSERT_ERROR(bitmap_parse_list("1 2", &b), EINVAL);
        ASSERT_ERROR(bitmap_parse_list("-1", &b), EINVAL);
        ASSERT_ERROR(bitmap_parse_list("65536", &b), ERANGE);
        ASSERT_ERROR(bitmap_parse_list("0-99999999999999999999", &b), ERANGE);
        ASSERT_NULL(b); /* untouched on failure */
}

static void test_set_ops(void) {
        _cleanup_(bitmap_freep) Bitmap *a = NULL, *b = NULL, *c = NULL;

        ASSERT_OK(bitmap_parse_list("0-7", &a));
        ASSERT_OK(bitmap_parse_list("4-5", &b));
        ASSERT_OK(bitmap_parse_list("8-200", &c));
        ASSERT_EQ(bitmap_count(a), 8);
        ASSERT_EQ(bitmap_count(c), 193);
        ASSERT_TRUE(bitmap_is_subset(b, a));
        ASSERT_FALSE(bitmap_is_subset(a, b));
        ASSERT_TRUE(bitmap_intersects(a, b));
        ASSERT_FALSE(bitmap_intersects(a, c));
        ASSERT_EQ(bitmap_next(c, 0), 8);
        ASSERT_EQ(bitmap_next(c, 64), 64);
        ASSERT_EQ(bitmap_next(c, 201), -1);
        ASSERT_OK(bitmap_or(a, c));
        ASSERT_EQ(bitmap_count(a), 201);
        bitmap_clear(a, 100);
        ASSERT_FALSE(bitmap_isset(a, 100));
        ASSERT_TRUE(bitmap_isset(a, 200));
        ASSERT_FALSE(bitmap_isset(a, 100000));

        /* Equality ignores trailing zero words. */
        {
                _cleanup_(bitmap_freep) Bitmap *x = NULL, *y = NULL;

                ASSERT_OK(bitmap_parse_list("1", &x));
                ASSERT_OK(bitmap_parse_list("1,300", &y));
                bitmap_clear(y, 300);
                ASSERT_TRUE(bitmap_equal(x, y));
                ASSERT_FALSE(bitmap_is_empty(c));
        }
}

int main(void) {
        RUN(test_parse_format);
        RUN(test_parse_errors);
        RUN(test_set_ops);
        return 0;
}
