/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The root prefix: paths resolve below it, reads are bounded. */

#include "base/root.h"
#include "fake-root.h"

static void check_size(const char *d, size_t size, size_t max, int expect) {
        _cleanup_(root_freep) Root *r = NULL;
        _cleanup_free_ char *content = malloc(size + 1), *got = NULL;
        size_t len = 0;

        ASSERT_NOT_NULL(content);
        for (size_t i = 0; i < size; i++)
                content[i] = (char) ('a' + i % 26);
        content[size] = '\0';
        fake_write_n(d, "f", content, size);
        ASSERT_OK(root_open(d, &r));
        if (expect < 0) {
                ASSERT_ERROR(root_read_file(r, "f", max, &got, &len), -expect);
                ASSERT_NULL(got);
                return;
        }
        ASSERT_OK(root_read_file(r, "/f", max, &got, &len));
        ASSERT_EQ(len, size);
        ASSERT_EQ(memcmp(got, content, size), 0);
        ASSERT_EQ(got[size], '\0');
}

static void test_read_bounds(void) {
        char *d = fake_root_new();

        check_size(d, 0, 10, 0);
        check_size(d, 10, 10, 0);
        check_size(d, 11, 10, -EFBIG);
        check_size(d, 4096, 100000, 0);
        check_size(d, 4097, 100000, 0);
        check_size(d, 9000, 100000, 0);
        check_size(d, 100000, 100000, 0);
        check_size(d, 100001, 100000, -EFBIG);
        fake_root_remove(d);
}

static void test_paths(void) {
        char *d = fake_root_new();
        _cleanup_(root_freep) Root *r = NULL, *host = NULL;
        _cleanup_free_ char *p = NULL, *q = NULL, *line = NULL;
        char buf[8];
        int fd;

        fake_write(d, "proc/x", "first line\nsecond\n");
        ASSERT_OK(root_open(d, &r));
        ASSERT_OK(root_read_line(r, "proc/x", &line));
        ASSERT_STREQ(line, "first line");
        ASSERT_EQ(root_exists(r, "/proc/x"), 1);
        ASSERT_EQ(root_exists(r, "proc/nope"), 0);
        ASSERT_OK(root_host_path(r, "/proc/x", &p));
        ASSERT_STR_CONTAINS(p, "/proc/x");
        ASSERT_STR_PREFIX(p, d);
        ASSERT_OK(root_open("/", &host));
        ASSERT_TRUE(root_is_host(host));
        ASSERT_OK(root_host_path(host, "proc/self", &q));
        ASSERT_STREQ(q, "/proc/self");
        ASSERT_ERROR(root_open("/nonexistent-root", &r), ENOENT);

        fd = root_openat(r, "proc/x", O_RDONLY);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(read_into(fd, buf, sizeof(buf)), 7); /* cut at size - 1 */
        ASSERT_STREQ(buf, "first l");
        close(fd);
        fake_root_remove(d);
}

int main(void) {
        RUN(test_read_bounds);
        RUN(test_paths);
        return 0;
}
