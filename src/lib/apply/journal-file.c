/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The journal's files on disk: writing the file whole and atomically,
 * appending to its log through a shared mapping, loading both, and removing
 * them. The text they hold is journal-format.c's; the entries
 * journal.c's. */
#include "journal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "apply/journal-internal.h"
#include "base/root.h"
#include "base/util.h"

#define JOURNAL_TMP_NAME ".journal.tmp"

static int write_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t w = write(fd, p, n);

                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                p += w;
                n -= (size_t) w;
        }
        return 0;
}

static int open_dir(const char *dir, bool create) {
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd >= 0 || errno != ENOENT || !create)
                return fd >= 0 ? fd : negative_errno();
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd >= 0 ? fd : negative_errno();
}

/* The entries on disk are all those in memory now. */
static void note_committed(Journal *j) {
        j->committed[0] = j->n_features;
        j->committed[1] = j->n_tasks;
        j->committed[2] = j->n_cookies;
        j->committed[3] = j->n_cgroups;
        j->committed_mode = j->cgroup_mode != NULL;
}

static void note_seen(Journal *j, const struct stat *st) {
        j->seen = true;
        j->seen_ino = (uint64_t) st->st_ino;
        j->seen_size = (uint64_t) st->st_size;
        j->seen_mtime_ns = (int64_t) st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* What differs between a file as seen (inode, size, modification time) and
 * st, in words. */
static int describe_change(uint64_t ino, uint64_t size, int64_t mtime_ns, const struct stat *st, char **ret) {
        int64_t mtime = (int64_t) st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;

        if ((uint64_t) st->st_ino != ino)
                return asprintf(ret, "replaced by another file (inode %" PRIu64 ", topod wrote %" PRIu64 ")",
                                (uint64_t) st->st_ino, ino) < 0 ? -ENOMEM : 0;
        if ((uint64_t) st->st_size != size)
                return asprintf(ret, "edited (%" PRIu64 " bytes, topod wrote %" PRIu64 ")", (uint64_t) st->st_size,
                                size) < 0 ? -ENOMEM : 0;
        return asprintf(ret, "edited (modified %.3f s after topod wrote it)", (double) (mtime - mtime_ns) / 1e9) < 0 ?
                       -ENOMEM :
                       0;
}

static bool same_stat(uint64_t ino, uint64_t size, int64_t mtime_ns, const struct stat *st) {
        return (uint64_t) st->st_ino == ino && (uint64_t) st->st_size == size &&
               (int64_t) st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec == mtime_ns;
}

/* Another writer's file name moved aside as prefix<seconds>.<ns>, kept for
 * whoever wrote it; *what (the change, in words) says where it went. */
static int move_aside(const Journal *j, int dfd, const char *name, const char *prefix, char **what) {
        _cleanup_free_ char *aside = NULL, *change = *what;
        struct timespec now;
        int k;

        *what = NULL;
        (void) clock_gettime(CLOCK_REALTIME, &now);
        if (asprintf(&aside, "%s%lld.%09ld", prefix, (long long) now.tv_sec, now.tv_nsec) < 0)
                return -ENOMEM;
        if (renameat(dfd, name, dfd, aside) < 0)
                k = asprintf(what, "%s; cannot move it aside (%s): overwritten", change, strerror(errno));
        else
                k = asprintf(what, "%s; moved aside as %s/%s", change, j->dir, aside);
        return k < 0 ? -ENOMEM : 0;
}

int journal_check_file(Journal *j, char **ret_what) {
        _cleanup_close_ int dfd = -EBADF;
        _cleanup_free_ char *what = NULL;
        struct stat st;
        int k;

        if (!j->dir || !j->seen)
                return 0;
        dfd = open_dir(j->dir, false);
        if (dfd < 0 && dfd != -ENOENT)
                return dfd;
        if (dfd < 0 || fstatat(dfd, JOURNAL_FILE_NAME, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (dfd >= 0 && errno != ENOENT)
                        return negative_errno();
                /* Nothing of another writer to lose. Entries on disk no
                 * more are written again; an empty journal (removed after
                 * a restore) or one being committed needs nothing. */
                j->seen = false;
                if (journal_is_empty(j) || j->dirty)
                        return 0;
                if (!(what = strdup("removed: written again")))
                        return -ENOMEM;
                goto changed;
        }
        if (same_stat(j->seen_ino, j->seen_size, j->seen_mtime_ns, &st))
                return 0;
        if ((k = describe_change(j->seen_ino, j->seen_size, j->seen_mtime_ns, &st, &what)) < 0)
                return k;
        /* Kept for whoever wrote it; ours goes back in its place. */
        if ((k = move_aside(j, dfd, JOURNAL_FILE_NAME, JOURNAL_FOREIGN_PREFIX, &what)) < 0)
                return k;

changed:
        j->seen = false;
        j->dirty = j->need_rewrite = true;
        if (ret_what)
                *ret_what = TAKE_PTR(what);
        return 1;
}

/* The log's text hash (FNV-1a), kept as blocks are copied. */
#define LOG_HASH_INIT UINT64_C(0xcbf29ce484222325)
static uint64_t log_hash(uint64_t h, const char *p, size_t n) {
        for (size_t i = 0; i < n; i++) {
                h ^= (unsigned char) p[i];
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

/* Whether the mapped log holds what this journal copied into it, and NULs
 * after. Called only while the file has its allocated size (no fault). */
static bool log_map_intact(const Journal *j) {
        if (log_hash(LOG_HASH_INIT, j->log_map, j->log_size) != j->log_hash)
                return false;
        for (size_t i = j->log_size; i < j->log_cap; i++)
                if (j->log_map[i] != '\0')
                        return false;
        return true;
}

int journal_check_log(Journal *j, char **ret_what) {
        _cleanup_close_ int dfd = -EBADF;
        _cleanup_free_ char *what = NULL;
        struct stat st;
        bool there;
        int k;

        /* Nothing to compare with: no file of ours for a log to extend. */
        if (!j->dir || (!j->seen && !j->log_map && !j->log_seen))
                return 0;
        dfd = open_dir(j->dir, false);
        if (dfd < 0)
                return dfd == -ENOENT ? 0 : dfd;
        there = fstatat(dfd, JOURNAL_LOG_NAME, &st, AT_SYMLINK_NOFOLLOW) >= 0;
        if (!there && errno != ENOENT)
                return negative_errno();

        if (j->log_map) {
                if (!there)
                        k = asprintf(&what, "removed: its entries written into %s", JOURNAL_FILE_NAME);
                else if ((uint64_t) st.st_ino != j->log_ino)
                        k = asprintf(&what, "replaced by another file (inode %" PRIu64 ", topod wrote %" PRIu64 ")",
                                     (uint64_t) st.st_ino, j->log_ino);
                else if ((uint64_t) st.st_size != j->log_cap)
                        k = asprintf(&what, "%s (%" PRIu64 " bytes, topod allocated %zu)",
                                     (uint64_t) st.st_size < j->log_cap ? "cut short" : "extended",
                                     (uint64_t) st.st_size, j->log_cap);
                else if (!log_map_intact(j))
                        k = asprintf(&what, "edited (its text is not what topod wrote)");
                else
                        return 0;
        } else if (j->log_seen) {
                if (!there) {
                        /* Its entries are in memory: the next commit
                         * writes them into the file. */
                        j->log_seen = false;
                        j->dirty = j->need_rewrite = true;
                        return 0;
                }
                if (same_stat(j->log_seen_ino, j->log_seen_size, j->log_seen_mtime_ns, &st))
                        return 0;
                k = describe_change(j->log_seen_ino, j->log_seen_size, j->log_seen_mtime_ns, &st, &what);
        } else if (there)
                k = asprintf(&what, "created by another writer (%" PRIu64 " bytes)", (uint64_t) st.st_size);
        else
                return 0;
        if (k < 0)
                return -ENOMEM;
        if (there && (k = move_aside(j, dfd, JOURNAL_LOG_NAME, JOURNAL_LOG_FOREIGN_PREFIX, &what)) < 0)
                return k;
        /* No store of ours into another's file, nor past the end of one
         * cut short: the entries are in memory, the next commit writes
         * them all into the file. */
        journal_log_unmap(j);
        j->log_size = 0;
        j->log_seen = false;
        j->dirty = j->need_rewrite = true;
        if (ret_what)
                *ret_what = TAKE_PTR(what);
        return 1;
}

int journal_commit(Journal *j) {
        _cleanup_close_ int dfd = -EBADF, fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        struct stat st;
        size_t len;
        int k;

        if (!j->dir)
                return -EINVAL;
        if (!j->dirty)
                return 0;
        /* Never over another writer's file unnoticed, nor its log
         * removed. */
        if (j->seen) {
                _cleanup_free_ char *what = NULL;

                k = journal_check_file(j, &what);
                if (k < 0)
                        return k;
                if (k > 0) {
                        free(j->foreign);
                        j->foreign = TAKE_PTR(what);
                }
        }
        {
                _cleanup_free_ char *what = NULL;

                k = journal_check_log(j, &what);
                if (k < 0)
                        return k;
                if (k > 0) {
                        free(j->foreign_log);
                        j->foreign_log = TAKE_PTR(what);
                }
        }
        k = journal_format(j, &text, &len);
        if (k < 0)
                return k;
        dfd = open_dir(j->dir, true);
        if (dfd < 0)
                return dfd;

        /* One writer (the daemon) at a time: a fixed temporary name, so a
         * crash between open and rename leaves one stale file that the next
         * commit truncates, never a growing number of them. */
        fd = openat(dfd, JOURNAL_TMP_NAME, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        /* Written and renamed, not flushed to the disk: as the log below,
         * the journal must outlive topod, not the machine (what it covers
         * lives in the kernel, and a journal of an earlier boot is
         * discarded). The rename is atomic whatever reaches the disk: a
         * topod killed at any point leaves the old file or the new one. */
        k = write_all(fd, text, len);
        if (k >= 0 && fstat(fd, &st) < 0)
                k = negative_errno();
        if (k >= 0) {
                k = close(TAKE_FD(fd)) < 0 ? negative_errno() : 0;
        }
        if (k >= 0 && renameat(dfd, JOURNAL_TMP_NAME, dfd, JOURNAL_FILE_NAME) < 0)
                k = negative_errno();
        if (k < 0) {
                (void) unlinkat(dfd, JOURNAL_TMP_NAME, 0);
                return k;
        }
        /* The file holds the log's entries now. Should the removal not reach
         * the disk, the log names the file it extended: ignored. */
        (void) unlinkat(dfd, JOURNAL_LOG_NAME, 0);
        journal_log_unmap(j);
        j->log_seen = false;
        j->dirty = false;
        j->need_rewrite = false;
        note_committed(j);
        note_seen(j, &st);
        j->file_ino = (uint64_t) st.st_ino;
        j->file_size = len;
        j->log_size = 0;
        return 0;
}

/* Below this the log may grow whatever the file's size. */
#define JOURNAL_LOG_MIN (64u * 1024u)
/* The log's space past that size, allocated with it: a block larger than
 * what is left is a whole commit instead. */
#define JOURNAL_LOG_SLACK (64u * 1024u)
/* After a log could not be made (no space, a file system that cannot map
 * it): whole commits, this many, before the next try. */
#define JOURNAL_LOG_BACKOFF 64u

/* A new log, empty, its space allocated (posix_fallocate(): where the file
 * system cannot, glibc writes the zeros) and mapped shared. -EEXIST: one
 * is there already, not ours (left by another run, or by us before a
 * failure): the caller writes the file whole, which removes it. */
static int log_create(Journal *j) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t page = (size_t) sysconf(_SC_PAGESIZE), cap;
        struct stat st;
        void *map;
        int k;

        /* Where the log is folded in, and the slack; within what a load
         * reads. */
        cap = (size_t) MAX(j->file_size, (uint64_t) JOURNAL_LOG_MIN) + JOURNAL_LOG_SLACK;
        cap = MIN((cap + page - 1) / page * page, (size_t) JOURNAL_SIZE_MAX);
        if (asprintf(&path, "%s/%s", j->dir, JOURNAL_LOG_NAME) < 0)
                return -ENOMEM;
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        /* Allocated now, so that a full /run is this error, not a SIGBUS
         * at a copy into the mapping. The failed file is removed here, so
         * that no check takes it for another writer's. */
        k = posix_fallocate(fd, 0, (off_t) cap);
        if (k == 0 && fstat(fd, &st) < 0)
                k = errno;
        map = k == 0 ? mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
        if (k == 0 && map == MAP_FAILED)
                k = errno;
        if (k != 0) {
                (void) unlink(path);
                return -k;
        }
        j->log_map = map;
        j->log_cap = cap;
        j->log_ino = (uint64_t) st.st_ino;
        j->log_hash = LOG_HASH_INIT;
        return 0;
}

/* Whether the entries since the last commit cannot go to the log: a log
 * only adds, to a file this journal wrote, up to the file's size. */
static bool log_cannot_take(const Journal *j) {
        return j->need_rewrite || j->file_ino == 0 || j->log_size >= MAX(j->file_size, (uint64_t) JOURNAL_LOG_MIN) ||
               (j->committed_mode && !j->cgroup_mode) || j->committed[0] > j->n_features ||
               j->committed[1] > j->n_tasks || j->committed[2] > j->n_cookies || j->committed[3] > j->n_cgroups;
}

/* The log mapped for appending: 0, or negative when the caller makes a
 * whole commit instead. Not open: a new log, as there is none after a
 * whole commit (or one we did not write). One that could not be made is
 * not tried again at every placement. */
static int log_open(Journal *j) {
        int k;

        if (j->log_map)
                return 0;
        if (j->log_size > 0 || j->log_backoff > 0) {
                j->log_backoff -= j->log_backoff > 0;
                return -EAGAIN;
        }
        k = log_create(j);
        if (k < 0 && k != -EEXIST)
                j->log_backoff = JOURNAL_LOG_BACKOFF;
        return k;
}

/* A block of len bytes at the log's end.
 *
 * A copy into the page cache, no flush: the journal must outlive
 * topod, not the machine. What it covers (cgroup moves, cookies)
 * lives in the kernel, which a machine crash resets, and a journal
 * of an earlier boot is discarded (boot id); for topod's own death
 * the page cache is enough, and its mapping's stores are in it
 * once made. On a disk-backed state directory this is the
 * difference between a placement of tens of microseconds and one
 * of a disk flush; on /run, it spares the placer a write() per
 * placement.
 *
 * The block's first byte goes last: until then the block starts
 * with a NUL, where a reader's text ends. topod killed in the
 * middle of the copy leaves the log as it was. */
static void log_copy(Journal *j, const char *buf, size_t len) {
        char *dst = j->log_map + j->log_size;

        memcpy(dst + 1, buf + 1, len - 1);
        __atomic_store_n(dst, buf[0], __ATOMIC_RELEASE);
        j->log_size += len;
        j->log_hash = log_hash(j->log_hash, buf, len);
}

int journal_commit_append(Journal *j) {
        _cleanup_free_ char *buf = NULL;
        unsigned version;
        size_t len;
        int k;

        /* Whatever the log cannot take is a whole commit's, which also
         * answers for a journal without a directory (-EINVAL) or with
         * nothing to commit (0). */
        if (!j->dir || !j->dirty || log_cannot_take(j) || log_open(j) < 0)
                return journal_commit(j);

        version = journal_entries_version(j, j->committed);
        if (j->log_size > 0 && version > j->log_version)
                return journal_commit(j); /* not in a log that says version 1 */
        if (j->log_size == 0)
                j->log_version = version;
        k = journal_format_log_block(j, j->log_size == 0, version, &buf, &len);
        if (k < 0)
                return k;
        if (len > j->log_cap - j->log_size)
                return journal_commit(j);

        log_copy(j, buf, len);
        j->dirty = false;
        note_committed(j);
        return 0;
}

static int load_log(Journal *j, int dfd, uint64_t ino, uint64_t size, JournalError *e) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        size_t len;
        int k;

        struct stat st;

        e->log = true;
        fd = openat(dfd, JOURNAL_LOG_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
                return 0;
        if (fd < 0)
                return journal_parse_error(e, 0, negative_errno(), "cannot open the log");
        if (fstat(fd, &st) < 0)
                return journal_parse_error(e, 0, negative_errno(), "cannot stat the log");
        k = read_full_fd(fd, JOURNAL_SIZE_MAX, &text, &len);
        if (k < 0)
                return journal_parse_error(e, 0, k, k == -EFBIG ? "too large" : "cannot read the log");
        k = journal_parse_log(j, text, len, ino, size, e);
        if (k < 0)
                return k;
        /* Seen, for journal_check_log() until a commit folds it in. */
        j->log_seen = true;
        j->log_seen_ino = (uint64_t) st.st_ino;
        j->log_seen_size = (uint64_t) st.st_size;
        j->log_seen_mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        return 0;
}

int journal_load(const char *dir, Journal **ret, JournalError *ret_error) {
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_close_ int dfd = -EBADF, fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        struct stat st;
        size_t len;
        int k;

        dfd = open_dir(dir, false);
        if (dfd == -ENOENT)
                goto empty;
        if (dfd < 0)
                return journal_parse_error(ret_error, 0, dfd, "cannot open the directory");
        fd = openat(dfd, JOURNAL_FILE_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
                goto empty;
        if (fd < 0)
                return journal_parse_error(ret_error, 0, negative_errno(), "cannot open the journal");
        if (fstat(fd, &st) < 0)
                return journal_parse_error(ret_error, 0, negative_errno(), "cannot stat the journal");
        if (!S_ISREG(st.st_mode))
                return journal_parse_error(ret_error, 0, -EBADMSG, "not a regular file");
        if ((uint64_t) st.st_size > JOURNAL_SIZE_MAX)
                return journal_parse_error(ret_error, 0, -EFBIG, "larger than %u bytes", JOURNAL_SIZE_MAX);
        k = read_full_fd(fd, JOURNAL_SIZE_MAX, &text, &len);
        if (k < 0)
                return journal_parse_error(ret_error, 0, k, k == -EFBIG ? "too large" : "cannot read the journal");
        k = journal_parse_salvage(text, len, &j, ret_error);
        if (k < 0)
                return k;
        {
                /* The log's own: ret_error keeps the file's first damage. */
                JournalError le = {};

                k = load_log(j, dfd, (uint64_t) st.st_ino, len, &le);
                if (k < 0) {
                        if (ret_error)
                                *ret_error = le;
                        return k;
                }
        }
        j->dirty = false;
        j->need_rewrite = true; /* the next commit folds the log in */
        note_seen(j, &st);
        j->dir = strdup(dir);
        if (!j->dir)
                return -ENOMEM;
        *ret = TAKE_PTR(j);
        return 1;

empty:
        k = journal_new(dir, &j);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(j);
        return 0;
}

int journal_remove(const char *dir) {
        _cleanup_close_ int dfd = -EBADF;

        dfd = open_dir(dir, false);
        if (dfd == -ENOENT)
                return 0;
        if (dfd < 0)
                return dfd;
        if (unlinkat(dfd, JOURNAL_FILE_NAME, 0) < 0 && errno != ENOENT)
                return negative_errno();
        (void) unlinkat(dfd, JOURNAL_LOG_NAME, 0);
        (void) unlinkat(dfd, JOURNAL_TMP_NAME, 0);
        if (fsync(dfd) < 0)
                return negative_errno();
        return 0;
}
