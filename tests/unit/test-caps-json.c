/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The JSON reader (base/json-parse.h) and another host's kernel probe read
 * from its `topoctl status --json` (tests/data/caps/, recorded in the vm
 * tier's guest): the values the checker and the planner use, and a probe
 * printed again the same as the file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json-parse.h"
#include "base/json.h"
#include "observe/kernelcaps.h"
#include "observe/observe-print.h"
#include "tests.h"

#define GUEST "tests/data/caps/guest-2s-4llc-6.12.json"

static void test_parse(void) {
        _cleanup_(json_value_freep) JsonValue *v = NULL;
        const char *doc = "{\"a\": [1, -2.5e1, true, false, null], \"s\": \"x\\\"\\n\\u00e9\\ud83d\\ude00\", \"o\": {}}";
        const JsonValue *a;

        ASSERT_OK(json_parse(doc, strlen(doc), &v, NULL));
        ASSERT_EQ(v->kind, JSON_OBJECT);
        a = json_value_get(v, "a");
        ASSERT_NOT_NULL(a);
        ASSERT_EQ(a->n_items, 5u);
        ASSERT_TRUE(a->items[0].number == 1.0);
        ASSERT_TRUE(a->items[1].number == -25.0);
        ASSERT_TRUE(a->items[2].boolean);
        ASSERT_EQ(a->items[4].kind, JSON_NULL);
        ASSERT_STREQ(json_value_get_string(v, "s"), "x\"\n\xc3\xa9\xf0\x9f\x98\x80");
        ASSERT_EQ(json_value_get(v, "o")->kind, JSON_OBJECT);
        ASSERT_NULL(json_value_get(v, "missing"));
        ASSERT_TRUE(json_value_get_bool(v, "missing", true));
}

static void test_parse_bad(void) {
        static const struct {
                const char *text;
                int error;
                unsigned line;
        } bad[] = {
                { "", -EBADMSG, 1 },
                { "{", -EBADMSG, 1 },
                { "{\"a\" 1}", -EBADMSG, 1 },
                { "[1,]", -EBADMSG, 1 },
                { "{\n\"a\":\n tru}", -EBADMSG, 3 },
                { "\"\\u0000\"", -EBADMSG, 1 },
                { "\"\\ud800\"", -EBADMSG, 1 },
                { "\"a\x01\"", -EBADMSG, 1 },
                { "[1] 2", -EBADMSG, 1 },
        };
        char deep[JSON_PARSE_DEPTH_MAX + 3];

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                JsonValue *v = NULL;
                unsigned line = 0;

                ASSERT_EQ(json_parse(bad[i].text, strlen(bad[i].text), &v, &line), bad[i].error);
                ASSERT_NULL(v);
                ASSERT_EQ(line, bad[i].line);
        }
        memset(deep, '[', sizeof(deep) - 1);
        deep[sizeof(deep) - 1] = '\0';
        {
                JsonValue *v = NULL;

                ASSERT_EQ(json_parse(deep, strlen(deep), &v, NULL), -E2BIG);
        }
        {
                /* a NUL inside */
                JsonValue *v = NULL;

                ASSERT_EQ(json_parse("[1]\0", 4, &v, NULL), -EBADMSG);
        }
}

static char *slurp(const char *path, size_t *ret_len) {
        FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t n = 0;

        ASSERT_NOT_NULL(f);
        ASSERT_EQ(getdelim(&buf, &n, '\0', f) > 0, true);
        *ret_len = strlen(buf);
        fclose(f);
        return buf;
}

static void test_guest_caps(void) {
        _cleanup_(kernelcaps_freep) KernelCaps *c = NULL;
        _cleanup_free_ char *why = NULL, *text = NULL, *again = NULL;
        const KernelSetting *ks;
        size_t len, n = 0;
        FILE *f;

        ASSERT_OK(kernelcaps_load_json_file(GUEST, &c, &why));
        ASSERT_NULL(why);
        ASSERT_TRUE(c->core_sched.available);
        ASSERT_TRUE(c->smt.available);
        ASSERT_TRUE(c->smt_active);
        ASSERT_STREQ(c->cgroup2_mount, "/sys/fs/cgroup");
        ASSERT_TRUE(strv_contains(c->cgroup2_controllers, "cpuset"));
        ASSERT_TRUE(strv_contains(c->cgroup2_controllers, "cpu"));
        ASSERT_TRUE(c->features_writable);
        ASSERT_TRUE(strv_contains(c->features, "TTWU_QUEUE"));
        ASSERT_FALSE(c->cgroup_mode.available);
        ASSERT_FALSE(c->syscalls_from_host);
        ASSERT_EQ(c->n_settings, sched_settings_count);
        ks = kernelcaps_setting(c, &sched_settings[0]);
        ASSERT_NOT_NULL(ks);
        ASSERT_TRUE(kernelcaps_core_sched_built(c));

        /* Printed again: the file's capabilities, byte for byte. */
        text = slurp(GUEST, &len);
        f = open_memstream(&again, &n);
        ASSERT_NOT_NULL(f);
        {
                Json *j = json_new(f, true);

                ASSERT_NOT_NULL(j);
                ASSERT_OK(kernelcaps_print_json(j, c, "/"));
                json_free(j);
        }
        fclose(f);
        ASSERT_STREQ(again, text);
}

static void test_caps_bad(void) {
        KernelCaps *c = NULL;
        _cleanup_free_ char *why = NULL, *why2 = NULL, *why3 = NULL;

        ASSERT_EQ(kernelcaps_from_json("{\"capabilities\": 3}", 19, &c, &why), -EINVAL);
        ASSERT_NULL(c);
        ASSERT_STR_CONTAINS(why, "capabilities");
        ASSERT_EQ(kernelcaps_from_json("{\n\"kernel\": {\n", 14, &c, &why2), -EINVAL);
        ASSERT_STR_PREFIX(why2, "line 3:");
        ASSERT_EQ(kernelcaps_load_json_file("tests/data/caps/no-such-file.json", &c, &why3), -ENOENT);
        ASSERT_STR_CONTAINS(why3, "no-such-file.json");
}

static void test_status_wrapped(void) {
        /* A running topod's status holds the probe as "kernel". */
        _cleanup_(kernelcaps_freep) KernelCaps *c = NULL;
        _cleanup_free_ char *why = NULL;
        const char *doc = "{\"state\": \"running\", \"kernel\": {\"lockdown\": \"integrity\", \"capabilities\": "
                          "{\"core_scheduling\": {\"available\": false, \"error\": \"ENODEV\", \"reason\": \"no SMT\"},"
                          " \"cgroup2\": {\"available\": true, \"mount\": \"/sys/fs/cgroup\", \"controllers\": [\"cpu\"]}}}}";

        ASSERT_OK(kernelcaps_from_json(doc, strlen(doc), &c, &why));
        ASSERT_FALSE(c->core_sched.available);
        ASSERT_EQ(c->core_sched.error, -ENODEV);
        ASSERT_STREQ(c->core_sched.reason, "no SMT");
        ASSERT_STREQ(c->lockdown, "integrity");
        ASSERT_TRUE(strv_contains(c->cgroup2_controllers, "cpu"));
        ASSERT_FALSE(strv_contains(c->cgroup2_controllers, "cpuset"));
        ASSERT_NOT_NULL(c->sched_features.reason); /* absent: a reason all the same */
}

int main(void) {
        RUN(test_parse);
        RUN(test_parse_bad);
        RUN(test_guest_caps);
        RUN(test_caps_bad);
        RUN(test_status_wrapped);
        return 0;
}
