/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"

/* "EINVAL" for EINVAL or -EINVAL; never NULL. */
const char *errno_name(int err);

/* NULL-terminated string vectors. */
char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)
size_t strv_length(char *const *l);
bool strv_contains(char *const *l, const char *s);
/* Takes ownership of s (freed on failure too). */
int strv_consume(char ***l, char *s);
int strv_push_dup(char ***l, const char *s);
/* Split on whitespace. At most max_items items, else -E2BIG. */
int strv_split_ws(const char *s, size_t max_items, char ***ret);
/* Join with a separator. */
int strv_join(char *const *l, const char *sep, char **ret);

/* The strings up to the NULL in one new string (NULL: out of memory): the
 * hot paths' paths, without asprintf()'s format parsing. */
char *strjoin_internal(const char *first, ...);
#define strjoin(...) strjoin_internal(__VA_ARGS__, NULL)
/* The same into buf of size bytes: the length, or -ENAMETOOLONG when it
 * does not fit (buf is then "", if size > 0). A placement's paths, on
 * the stack, without snprintf()'s format parsing. */
int strjoin_buf_internal(char *buf, size_t size, const char *first, ...);
#define strjoin_buf(buf, size, ...) strjoin_buf_internal(buf, size, __VA_ARGS__, NULL)
/* v in decimal at buf, NUL-terminated; returns the length. */
size_t format_u64(char buf[static 21], uint64_t v);

/* Decimal without sign or leading zeros ("0" alone is zero), at most max:
 * true and *ret, else false and *ret untouched. For text written by
 * machines (a journal, a kernel's number), where anything else is wrong. */
bool parse_u64_decimal(const char *s, uint64_t max, uint64_t *ret);

/* Every '/'-separated component of p (relative: no leading '/') is
 * neither empty, "." nor "..": a path that stays below the folder it is
 * taken from. */
bool path_components_safe(const char *p);

/* Remove leading and trailing whitespace in place; returns s. */
char *strstrip(char *s);

/* qsort()/bsearch() comparators: pid_t, uint64_t. */
int compare_pid(const void *a, const void *b);
int compare_u64(const void *a, const void *b);
bool startswith(const char *s, const char *prefix);

/* Descriptors to close later, together: close_range() over each run of
 * consecutive numbers, where a close() each costs a system call each. The
 * fast path opens a process's comm, its pidfd and (before 6.13) its cgroup
 * file one after the other: consecutive numbers, most often, closed in one
 * call once a dozen placements' are held (FASTPATH_FDS_CLOSE_AT; and the
 * comm's close is not before the move). */
#define FD_BIN_MAX 64u
typedef struct FdBin {
        int fd[FD_BIN_MAX];
        size_t n;
} FdBin;

/* Takes fd (if >= 0): into bin, or closed now when bin is NULL or full. */
void fd_bin_put(FdBin *bin, int fd);
/* Closes what bin holds. close_range() closes every number of a run, so a
 * run is only what bin holds: numbers bin does not hold end it. */
void fd_bin_empty(FdBin *bin);
