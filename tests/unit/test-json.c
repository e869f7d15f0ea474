/* SPDX-License-Identifier: LGPL-2.1-or-later */
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

        ASSERT_STREQ(s, "{\"s\":\"a\\\"b\\\\c\\nd\\te\\u0001\\u00c3\\u00a9\",\"neg\":-5,"
                        "\"big\":18446744073709551615,\"t\":true,\"n\":null,\"empty\":[],\"list\":[1,{}]}\n");
}

static void test_pretty(void) {
        _cleanup_free_ char *s = render(true, doc);

        ASSERT_STR_CONTAINS(s, "{\n  \"s\": ");
        ASSERT_STR_CONTAINS(s, "\"empty\": [],\n");
        ASSERT_STR_CONTAINS(s, "\"list\": [\n    1,\n    {}\n  ]\n}\n");
}

int main(void) {
        RUN(test_compact);
        RUN(test_pretty);
        return 0;
}
