/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "base/escape.h"
#include "base/json.h"
#include "tests.h"

static char *render(bool pretty, void (*fn)(Json *j)) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        Json *j;

        ASSERT_NOT_NULL(f);
        j = json_new(f, pretty);
        ASSERT_NOT_NULL(j);
        fn(j);
        json_free(j);
        fclose(f);
        return buf;
}

static void doc(Json *j) {
        json_object_begin(j);
        json_kv_string(j, "s", "a\"b\\c\nd\te\x01\xc3\xa9");
        json_kv_int(j, "neg", -5);
        json_kv_uint(j, "big", UINT64_MAX);
        json_kv_bool(j, "t", true);
        json_kv_string(j, "n", NULL);
        json_key(j, "empty");
        json_array_begin(j);
        json_array_end(j);
        json_key(j, "list");
        json_array_begin(j);
        json_int(j, 1);
        json_object_begin(j);
        json_object_end(j);
        json_array_end(j);
        json_object_end(j);
}

static void test_compact(void) {
        _cleanup_free_ char *s = render(false, doc);

        ASSERT_STREQ(s, "{\"s\":\"a\\\"b\\\\c\\nd\\te\\u0001\xc3\xa9\",\"neg\":-5,"
                        "\"big\":18446744073709551615,\"t\":true,\"n\":null,\"empty\":[],\"list\":[1,{}]}\n");
}

static void test_pretty(void) {
        _cleanup_free_ char *s = render(true, doc);

        ASSERT_STR_CONTAINS(s, "{\n  \"s\": ");
        ASSERT_STR_CONTAINS(s, "\"empty\": [],\n");
        ASSERT_STR_CONTAINS(s, "\"list\": [\n    1,\n    {}\n  ]\n}\n");
}

static void utf8_doc(Json *j) {
        json_object_begin(j);
        json_kv_string(j, "e", "caf\xc3\xa9");        /* é: written once, as is */
        json_kv_string(j, "bad", "a\xff\xc3(\xe2\x82");  /* invalid bytes: \xHH */
        json_kv_string(j, "over", "\xc0\xaf\xed\xa0\x80"); /* overlong, surrogate */
        json_kv_string(j, "esc", "\x1b]0;x\x7f");
        json_kv_string(j, "emoji", "\xf0\x9f\x98\x80");
        json_object_end(j);
}

/* UTF-8 is encoded once; what is not UTF-8 becomes \xHH (the text
 * output's form), and the result is valid UTF-8 JSON. */
static void test_utf8(void) {
        _cleanup_free_ char *s = render(false, utf8_doc);

        ASSERT_STREQ(s, "{\"e\":\"caf\xc3\xa9\",\"bad\":\"a\\\\xff\\\\xc3(\\\\xe2\\\\x82\","
                        "\"over\":\"\\\\xc0\\\\xaf\\\\xed\\\\xa0\\\\x80\","
                        "\"esc\":\"\\u001b]0;x\\u007f\",\"emoji\":\"\xf0\x9f\x98\x80\"}\n");
        ASSERT_TRUE(utf8_valid(s, strlen(s), NULL));
}

int main(void) {
        RUN(test_compact);
        RUN(test_utf8);
        RUN(test_pretty);
        return 0;
}
