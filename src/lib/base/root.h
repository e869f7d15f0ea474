/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The root prefix.
 *
 * Every read or write of the kernel's files goes through a Root: a directory
 * handle that is "/" on a live machine and a fake tree in tests
 * (`--root tests/data/roots/...`). Paths given to these functions are
 * relative to the root ("proc/self/mountinfo"); a leading '/' is ignored, so
 * a path read from mountinfo can be passed as it is. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "macro.h"

/* Largest kernel text file we read in one piece. Files under /proc and /sys
 * that we read are far smaller; a fake tree cannot make us allocate more. */
#define ROOT_READ_MAX (4u * 1024u * 1024u)

typedef struct Root Root;

int root_open(const char *path, Root **ret);
Root *root_free(Root *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(Root *, root_free);

/* "/" for the live machine, else the directory given. */
const char *root_path(const Root *r);
bool root_is_host(const Root *r);
int root_fd(const Root *r);

/* The absolute host path of a path inside the root, for messages and for
 * libraries that only take paths (hwloc). */
int root_host_path(const Root *r, const char *rel, char **ret);

/* openat() relative to the root; O_CLOEXEC is always added. Returns an fd or
 * a negative errno. */
int root_openat(const Root *r, const char *rel, int flags);

/* Whole file, NUL-terminated. -EFBIG when larger than max. */
int root_read_file(const Root *r, const char *rel, size_t max, char **ret, size_t *ret_len);

/* First line of a file, without the newline (sysfs attribute files). */
int root_read_line(const Root *r, const char *rel, char **ret);

/* Write a kernel attribute (cgroupfs, debugfs) in ONE write(): the kernel
 * parses each write as one value, so it must never be split. 0, or negative
 * errno (EINVAL: the kernel refused the value; EPERM: lockdown, …). */
int root_write_value(const Root *r, const char *rel, const char *value);

/* Does the path exist (any type)? 1 yes, 0 no, negative errno on other errors. */
int root_exists(const Root *r, const char *rel);

/* Read from an open fd until EOF, up to max bytes. */
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len);

/* Read until EOF or until buf holds size - 1 bytes; NUL-terminates. The
 * length, or negative errno. */
ssize_t read_into(int fd, char *buf, size_t size);

/* As read_into(), for a file the kernel makes whole in one go (a /proc/PID
 * file shown by one call: stat, status, cgroup, comm, cmdline; a regular
 * file): a read that stops short is the end, so the read of nothing that
 * read_into() ends with is saved. Not for files of many records (a
 * cgroup.procs, /proc/PID/maps), which the kernel hands out a page at a
 * time. */
ssize_t read_record(int fd, char *buf, size_t size);
