/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* base/unit-name: systemd unit names in cgroup paths and topod's slices. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/unit-name.h"
#include "tests.h"

static void test_type(void) {
        ASSERT_EQ(unit_name_type("foo.service", 11), UNIT_TYPE_SERVICE);
        ASSERT_EQ(unit_name_type("session-3.scope", 15), UNIT_TYPE_SCOPE);
        ASSERT_EQ(unit_name_type("user-1000.slice", 15), UNIT_TYPE_SLICE);
        ASSERT_EQ(unit_name_type("user@1000.service", 17), UNIT_TYPE_SERVICE);
        ASSERT_EQ(unit_name_type("-.slice", 7), UNIT_TYPE_SLICE);
        ASSERT_EQ(unit_name_type(".service", 8), UNIT_TYPE_INVALID); /* no prefix */
        ASSERT_EQ(unit_name_type("foo.socket", 10), UNIT_TYPE_INVALID); /* owns no cgroup of its own here */
        ASSERT_EQ(unit_name_type("a b.service", 11), UNIT_TYPE_INVALID);
        ASSERT_EQ(unit_name_type("node0", 5), UNIT_TYPE_INVALID);
        ASSERT_FALSE(unit_name_is_valid("", 0));
}

static void test_path_units(void) {
        UnitRef u[8];
        size_t n = unit_path_units("/user.slice/user-0.slice/session-1.scope", u, 8);

        ASSERT_EQ(n, 3u);
        ASSERT_EQ(u[2].len, strlen("session-1.scope"));
        ASSERT_EQ(memcmp(u[2].name, "session-1.scope", u[2].len), 0);
        ASSERT_EQ(u[0].type, UNIT_TYPE_SLICE);
        /* a unit's own sub-cgroups are not units; a path of none has none */
        ASSERT_EQ(unit_path_units("/system.slice/foo.service/payload", u, 8), 2u);
        ASSERT_EQ(unit_path_units("/", u, 8), 0u);
        ASSERT_EQ(unit_path_units("/topod.slice/latency", u, 8), 1u);
        /* at most max */
        ASSERT_EQ(unit_path_units("/a.slice/a-b.slice/a-b-c.slice", u, 2), 2u);
}

static void test_from_cgroup(void) {
        UnitRef u;

        ASSERT_OK(unit_from_cgroup("/system.slice/crunch.service", &u));
        ASSERT_EQ(u.type, UNIT_TYPE_SERVICE);
        ASSERT_EQ(u.len, strlen("crunch.service"));
        ASSERT_OK(unit_from_cgroup("/system.slice/docker.service/payload/x.scope", &u));
        ASSERT_EQ(memcmp(u.name, "docker.service", u.len), 0);
        ASSERT_OK(unit_from_cgroup("/init.scope", &u));
        ASSERT_EQ(u.type, UNIT_TYPE_SCOPE);
        ASSERT_OK(unit_from_cgroup("/user.slice/user-0.slice", &u));
        ASSERT_EQ(memcmp(u.name, "user-0.slice", u.len), 0);
        ASSERT_ERROR(unit_from_cgroup("/", &u), ENXIO);
        ASSERT_ERROR(unit_from_cgroup("/lab/x.service", &u), ENXIO); /* not systemd's tree */
        ASSERT_ERROR(unit_from_cgroup(NULL, &u), ENXIO);
}

static void test_slice_path(void) {
        char *p = NULL;

        ASSERT_OK(unit_slice_cgroup_path("topod-latency-llc0.slice", &p));
        ASSERT_STREQ(p, "/topod.slice/topod-latency.slice/topod-latency-llc0.slice");
        free(p);
        ASSERT_OK(unit_slice_cgroup_path("topod.slice", &p));
        ASSERT_STREQ(p, "/topod.slice");
        free(p);
        ASSERT_OK(unit_slice_cgroup_path("-.slice", &p));
        ASSERT_STREQ(p, "/");
        free(p);
        ASSERT_OK(unit_slice_cgroup_path("topod-latency\\x2dservices.slice", &p));
        ASSERT_STREQ(p, "/topod.slice/topod-latency\\x2dservices.slice");
        free(p);
        ASSERT_ERROR(unit_slice_cgroup_path("a--b.slice", &p), EINVAL);
        ASSERT_ERROR(unit_slice_cgroup_path("-a.slice", &p), EINVAL);
        ASSERT_ERROR(unit_slice_cgroup_path("a-.slice", &p), EINVAL);
        ASSERT_ERROR(unit_slice_cgroup_path("a.service", &p), EINVAL);
}

static void test_escape(void) {
        char *e = unit_name_escape_part("latency-services");

        ASSERT_STREQ(e, "latency\\x2dservices");
        free(e);
        e = unit_name_escape_part(".hidden/x y");
        ASSERT_STREQ(e, "\\x2ehidden\\x2fx\\x20y");
        free(e);
        e = unit_name_escape_part("avx_512:a.b");
        ASSERT_STREQ(e, "avx_512:a.b");
        free(e);
}

int main(void) {
        RUN(test_type);
        RUN(test_path_units);
        RUN(test_from_cgroup);
        RUN(test_slice_path);
        RUN(test_escape);
        return 0;
}
