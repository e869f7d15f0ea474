/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "journal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apply/pidref.h"
#include "base/root.h"
#include "base/util.h"

/* A path escapes to at most four bytes per byte; the rest of a line is short. */
#define JOURNAL_LINE_MAX (128u + 4u * JOURNAL_PATH_MAX)
#define JOURNAL_TMP_NAME ".journal.tmp"
#define JOURNAL_HEADER "topod-journal"
#define JOURNAL_LOG_HEADER "topod-journal-log"
#define JOURNAL_LOG_VERSION 2u /* 2: "pidfs:INODE" identities; 1 (none) is read and written too */

/* ---- index: first-original-wins lookups in O(1) ------------------------ */

typedef enum IndexKind {
        INDEX_FEATURE = 1,
        INDEX_TASK,
        INDEX_COOKIE,
        INDEX_CGROUP,
} IndexKind;

typedef struct JournalIndexSlot {
        uint64_t hash;
        uint32_t pos;  /* index into the kind's array */
        uint8_t kind;  /* 0 = empty */
} JournalIndexSlot;

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
        const unsigned char *b = p;

        for (size_t i = 0; i < n; i++) {
                h ^= b[i];
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

static uint64_t hash_name(IndexKind kind, const char *s) {
        uint8_t k = (uint8_t) kind;

        return fnv1a(fnv1a(UINT64_C(0xcbf29ce484222325), &k, 1), s, strlen(s));
}

static uint64_t hash_task(IndexKind kind, pid_t tid, uint64_t start_time) {
        uint8_t k = (uint8_t) kind;
        uint64_t h = fnv1a(UINT64_C(0xcbf29ce484222325), &k, 1);
        int32_t t = (int32_t) tid;

        h = fnv1a(h, &t, sizeof(t));
        return fnv1a(h, &start_time, sizeof(start_time));
}

static bool slot_matches(const Journal *j, const JournalIndexSlot *s, IndexKind kind, const char *name, pid_t tid,
                         uint64_t start_time) {
        if (s->kind != kind)
                return false;
        switch (kind) {
        case INDEX_FEATURE:
                return streq(j->features[s->pos].name, name);
        case INDEX_CGROUP:
                return streq(j->cgroups[s->pos], name);
        case INDEX_TASK:
                return j->tasks[s->pos].tid == tid && j->tasks[s->pos].start_time == start_time;
        case INDEX_COOKIE:
                return j->cookies[s->pos].tid == tid && j->cookies[s->pos].start_time == start_time;
        }
        return false;
}

/* The position in the kind's array, or -1. */
static ssize_t index_find(const Journal *j, IndexKind kind, uint64_t hash, const char *name, pid_t tid,
                          uint64_t start_time) {
        if (j->index_size == 0)
                return -1;
        for (size_t i = hash & (j->index_size - 1);; i = (i + 1) & (j->index_size - 1)) {
                const JournalIndexSlot *s = &j->index[i];

                if (s->kind == 0)
                        return -1;
                if (s->hash == hash && slot_matches(j, s, kind, name, tid, start_time))
                        return (ssize_t) s->pos;
        }
}

static void index_put(JournalIndexSlot *table, size_t size, IndexKind kind, uint64_t hash, size_t pos) {
        size_t i = hash & (size - 1);

        while (table[i].kind != 0)
                i = (i + 1) & (size - 1);
        table[i] = (JournalIndexSlot) { .hash = hash, .pos = (uint32_t) pos, .kind = (uint8_t) kind };
}

/* Build the table from the arrays, at least twice as large as the entries
 * plus one more, so probing always ends at an empty slot. */
static int index_rebuild(Journal *j, size_t want_entries) {
        JournalIndexSlot *t;
        size_t size = 16;

        while (size < 2 * (want_entries + 1))
                size *= 2;
        t = calloc(size, sizeof(*t));
        if (!t)
                return -ENOMEM;
        for (size_t i = 0; i < j->n_features; i++)
                index_put(t, size, INDEX_FEATURE, hash_name(INDEX_FEATURE, j->features[i].name), i);
        for (size_t i = 0; i < j->n_cgroups; i++)
                index_put(t, size, INDEX_CGROUP, hash_name(INDEX_CGROUP, j->cgroups[i]), i);
        for (size_t i = 0; i < j->n_tasks; i++)
                index_put(t, size, INDEX_TASK, hash_task(INDEX_TASK, j->tasks[i].tid, j->tasks[i].start_time), i);
        for (size_t i = 0; i < j->n_cookies; i++)
                index_put(t, size, INDEX_COOKIE, hash_task(INDEX_COOKIE, j->cookies[i].tid, j->cookies[i].start_time),
                          i);
        free(j->index);
        j->index = t;
        j->index_size = size;
        return 0;
}

static size_t n_indexed(const Journal *j) {
        return j->n_features + j->n_tasks + j->n_cookies + j->n_cgroups;
}

/* Room for one more entry: the entry limit, then the index's load factor. */
static int make_room(Journal *j) {
        if (journal_n_entries(j) >= JOURNAL_ENTRIES_MAX)
                return -E2BIG;
        if (2 * (n_indexed(j) + 2) > j->index_size)
                return index_rebuild(j, n_indexed(j) + 1);
        return 0;
}

/* After a failed rebuild the index is gone: find by scanning. */
static ssize_t find_any(const Journal *j, IndexKind kind, const char *name, pid_t tid, uint64_t start_time) {
        uint64_t h = name ? hash_name(kind, name) : hash_task(kind, tid, start_time);
        size_t n = kind == INDEX_FEATURE ? j->n_features :
                   kind == INDEX_CGROUP  ? j->n_cgroups :
                   kind == INDEX_TASK    ? j->n_tasks :
                                           j->n_cookies;

        if (j->index_size > 0)
                return index_find(j, kind, h, name, tid, start_time);
        for (size_t i = 0; i < n; i++) {
                JournalIndexSlot s = { .kind = (uint8_t) kind, .pos = (uint32_t) i };

                if (slot_matches(j, &s, kind, name, tid, start_time))
                        return (ssize_t) i;
        }
        return -1;
}

/* ---- validation --------------------------------------------------------- */

static bool name_valid(const char *s, bool upper) {
        size_t n = strlen(s);

        if (n == 0 || n >= JOURNAL_NAME_MAX)
                return false;
        for (const char *c = s; *c; c++) {
                bool ok = (*c >= '0' && *c <= '9') || *c == '_' ||
                          (upper ? (*c >= 'A' && *c <= 'Z') : ((*c >= 'a' && *c <= 'z') || *c == '-'));
                if (!ok)
                        return false;
        }
        return true;
}

static bool feature_name_valid(const char *s) {
        /* "NO_" is the kernel's prefix for clearing: no feature can be named so. */
        return name_valid(s, true) && !startswith(s, "NO_");
}

/* An absolute cgroup path without empty, "." or ".." components (the
 * journal is read back after a crash: a path must not leave the tree). */
static bool cgroup_path_valid(const char *p) {
        size_t n = strlen(p);

        if (n == 0 || n >= JOURNAL_PATH_MAX || p[0] != '/')
                return false;
        if (n == 1)
                return true;
        for (const char *c = p + 1;;) {
                size_t len = strcspn(c, "/");

                if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (!c[len])
                        return true;
                c += len + 1;
        }
}

/* ---- construction ------------------------------------------------------- */

/* The log's mapping, gone (the file stays: journal_commit() removes it). */
static void log_unmap(Journal *j) {
        if (j->log_map)
                (void) munmap(j->log_map, j->log_cap);
        j->log_map = NULL;
        j->log_cap = 0;
}

int journal_new(const char *dir, Journal **ret) {
        _cleanup_(journal_freep) Journal *j = calloc(1, sizeof(Journal));

        if (!j)
                return -ENOMEM;
        if (dir) {
                j->dir = strdup(dir);
                if (!j->dir)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(j);
        return 0;
}

Journal *journal_free(Journal *j) {
        if (!j)
                return NULL;
        free(j->dir);
        free(j->boot_id);
        for (size_t i = 0; i < j->n_features; i++)
                free(j->features[i].name);
        free(j->features);
        free(j->cgroup_mode);
        for (size_t i = 0; i < j->n_tasks; i++)
                free(j->tasks[i].cgroup);
        free(j->tasks);
        free(j->cookies);
        for (size_t i = 0; i < j->n_cgroups; i++)
                free(j->cgroups[i]);
        free(j->cgroups);
        free(j->index);
        log_unmap(j);
        free(j);
        return NULL;
}

size_t journal_n_entries(const Journal *j) {
        return n_indexed(j) + (j->cgroup_mode ? 1 : 0);
}

bool journal_is_empty(const Journal *j) {
        return journal_n_entries(j) == 0;
}

/* The elements an array of n has room for: n rounded up to a power of
 * two, 16 at least. */
static size_t room_for(size_t n) {
        size_t c = 16;

        while (c < n)
                c *= 2;
        return c;
}

/* Room for one element more in an array of n. Every array here is grown
 * by this alone (entries are removed in place), so it holds room_for(n)
 * at least: a realloc() at each power of two, not at every entry (the
 * fast path records one a placement, into arrays of thousands during an
 * exec storm, which a realloc() may have to copy). */
static int grow(void **array, size_t n, size_t elem) {
        void *p;

        if (*array && n + 1 <= room_for(n))
                return 0;
        p = realloc(*array, room_for(n + 1) * elem);
        if (!p)
                return -ENOMEM;
        *array = p;
        return 0;
}

int journal_record_feature(Journal *j, const char *name, bool on) {
        uint64_t h;
        char *s;
        int k;

        if (!feature_name_valid(name))
                return -EINVAL;
        h = hash_name(INDEX_FEATURE, name);
        if (find_any(j, INDEX_FEATURE, name, 0, 0) >= 0)
                return 0;
        if ((k = make_room(j)) < 0 || (k = grow((void **) &j->features, j->n_features, sizeof(JournalFeature))) < 0)
                return k;
        s = strdup(name);
        if (!s)
                return -ENOMEM;
        j->features[j->n_features] = (JournalFeature) { .name = s, .on = on };
        index_put(j->index, j->index_size, INDEX_FEATURE, h, j->n_features++);
        j->dirty = true;
        return 1;
}

int journal_record_cgroup_mode(Journal *j, const char *mode) {
        if (!name_valid(mode, false))
                return -EINVAL;
        if (j->cgroup_mode)
                return 0;
        if (journal_n_entries(j) >= JOURNAL_ENTRIES_MAX)
                return -E2BIG;
        j->cgroup_mode = strdup(mode);
        if (!j->cgroup_mode)
                return -ENOMEM;
        j->dirty = true;
        return 1;
}

int journal_record_task(Journal *j, pid_t tid, uint64_t start_time, const char *cgroup) {
        uint64_t h;
        char *s;
        int k;

        if (tid <= 0 || !cgroup_path_valid(cgroup))
                return -EINVAL;
        h = hash_task(INDEX_TASK, tid, start_time);
        if (find_any(j, INDEX_TASK, NULL, tid, start_time) >= 0)
                return 0;
        if ((k = make_room(j)) < 0 || (k = grow((void **) &j->tasks, j->n_tasks, sizeof(JournalTask))) < 0)
                return k;
        s = strdup(cgroup);
        if (!s)
                return -ENOMEM;
        j->tasks[j->n_tasks] = (JournalTask) { .tid = tid, .start_time = start_time, .cgroup = s };
        index_put(j->index, j->index_size, INDEX_TASK, h, j->n_tasks++);
        j->dirty = true;
        return 1;
}

int journal_record_cookie(Journal *j, pid_t tid, uint64_t start_time) {
        uint64_t h;
        int k;

        if (tid <= 0)
                return -EINVAL;
        h = hash_task(INDEX_COOKIE, tid, start_time);
        if (find_any(j, INDEX_COOKIE, NULL, tid, start_time) >= 0)
                return 0;
        if ((k = make_room(j)) < 0 || (k = grow((void **) &j->cookies, j->n_cookies, sizeof(JournalCookie))) < 0)
                return k;
        j->cookies[j->n_cookies] = (JournalCookie) { .tid = tid, .start_time = start_time };
        index_put(j->index, j->index_size, INDEX_COOKIE, h, j->n_cookies++);
        j->dirty = true;
        return 1;
}

int journal_record_cgroup(Journal *j, const char *path) {
        uint64_t h;
        char *s;
        int k;

        if (!cgroup_path_valid(path) || streq(path, "/"))
                return -EINVAL;
        h = hash_name(INDEX_CGROUP, path);
        if (find_any(j, INDEX_CGROUP, path, 0, 0) >= 0)
                return 0;
        if ((k = make_room(j)) < 0 || (k = grow((void **) &j->cgroups, j->n_cgroups, sizeof(char *))) < 0)
                return k;
        s = strdup(path);
        if (!s)
                return -ENOMEM;
        j->cgroups[j->n_cgroups] = s;
        index_put(j->index, j->index_size, INDEX_CGROUP, h, j->n_cgroups++);
        j->dirty = true;
        return 1;
}

int journal_set_boot_id(Journal *j, const char *boot_id) {
        char *s;

        for (const char *c = boot_id; *c; c++)
                if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') || *c == '-'))
                        return -EINVAL;
        if (!*boot_id || strlen(boot_id) >= JOURNAL_NAME_MAX)
                return -EINVAL;
        if (j->boot_id && streq(j->boot_id, boot_id))
                return 0;
        s = strdup(boot_id);
        if (!s)
                return -ENOMEM;
        free(j->boot_id);
        j->boot_id = s;
        j->dirty = true;
        j->need_rewrite = true;
        return 1;
}

/* ---- forgetting --------------------------------------------------------- */

/* Remove element pos of an array, keeping the order, and rebuild the index
 * (positions after it moved). Rebuilding at the current size cannot fail
 * for lack of room, but can for lack of memory: then the index is dropped
 * and rebuilt on the next record. */

/* The index slot of the kind's entry at pos (hash its key's), or NULL. */
static JournalIndexSlot *index_slot_of(Journal *j, IndexKind kind, uint64_t hash, size_t pos) {
        if (j->index_size == 0)
                return NULL;
        for (size_t i = hash & (j->index_size - 1);; i = (i + 1) & (j->index_size - 1)) {
                JournalIndexSlot *s = &j->index[i];

                if (s->kind == 0)
                        return NULL;
                if (s->kind == kind && s->pos == pos)
                        return s;
        }
}

/* Empty slot s, pulling back each later slot of its probe run that may
 * sit in the hole (linear probing without tombstones). */
static void index_delete(Journal *j, JournalIndexSlot *s) {
        size_t mask = j->index_size - 1, i = (size_t) (s - j->index), k = i;

        for (;;) {
                size_t home;

                j->index[i].kind = 0;
                for (;;) {
                        k = (k + 1) & mask;
                        if (j->index[k].kind == 0)
                                return;
                        home = j->index[k].hash & mask;
                        /* Stays when its home is cyclically in (i, k]. */
                        if (i <= k ? (i < home && home <= k) : (i < home || home <= k))
                                continue;
                        break;
                }
                j->index[i] = j->index[k];
                i = k;
        }
}

/* Entry pos of a kind's array out, the order of the rest kept (the
 * earlier original wins where two name one thread: journal_name_tasks()).
 * The index follows without a rebuild: the entry's slot emptied, and the
 * slots of the entries after it, which moved down one, told so. Rebuilt
 * for each one forgotten, a journal of thousands cost thousands of hashes
 * and an allocation of the whole table for a placement whose process
 * vanished; this is a walk over the slots. hash: the removed entry's. */
static void remove_at(Journal *j, IndexKind kind, uint64_t hash, void *array, size_t *n, size_t elem, size_t pos) {
        char *a = array;
        JournalIndexSlot *s = index_slot_of(j, kind, hash, pos);

        if (s)
                index_delete(j, s);
        memmove(a + pos * elem, a + (pos + 1) * elem, (*n - pos - 1) * elem);
        (*n)--;
        for (size_t i = 0; i < j->index_size; i++)
                if (j->index[i].kind == kind && j->index[i].pos > pos)
                        j->index[i].pos--;
        j->dirty = true;
        j->need_rewrite = true; /* a log can only add */
}

int journal_forget_feature(Journal *j, const char *name) {
        ssize_t pos = find_any(j, INDEX_FEATURE, name, 0, 0);

        char *owned;

        if (pos < 0)
                return 0;
        owned = j->features[pos].name; /* name may be it */
        remove_at(j, INDEX_FEATURE, hash_name(INDEX_FEATURE, name), j->features, &j->n_features, sizeof(JournalFeature),
                  (size_t) pos);
        free(owned);
        return 1;
}

int journal_forget_cgroup_mode(Journal *j) {
        if (!j->cgroup_mode)
                return 0;
        j->cgroup_mode = mfree(j->cgroup_mode);
        j->dirty = true;
        j->need_rewrite = true;
        return 1;
}

int journal_forget_task(Journal *j, pid_t tid, uint64_t start_time) {
        ssize_t pos = find_any(j, INDEX_TASK, NULL, tid, start_time);

        if (pos < 0)
                return 0;
        free(j->tasks[pos].cgroup);
        remove_at(j, INDEX_TASK, hash_task(INDEX_TASK, tid, start_time), j->tasks, &j->n_tasks, sizeof(JournalTask),
                  (size_t) pos);
        return 1;
}

size_t journal_forget_tasks(Journal *j, const bool *drop) {
        size_t u = 0, n = j->n_tasks;

        for (size_t i = 0; i < n; i++) {
                if (drop[i]) {
                        free(j->tasks[i].cgroup);
                        continue;
                }
                j->tasks[u++] = j->tasks[i];
        }
        if (u == n)
                return 0;
        j->n_tasks = u;
        j->dirty = true;
        j->need_rewrite = true; /* a log can only add */
        if (index_rebuild(j, n_indexed(j)) < 0) {
                j->index = mfree(j->index);
                j->index_size = 0;
        }
        return n - u;
}

/* Name the task entries by task_names[i] and the cookie entries by
 * cookie_names[i] where not 0 (either array may be NULL: that kind stays
 * as it is). The index is made again, entry by entry in the file's order:
 * one that names a thread an earlier one of its kind names goes (first
 * original wins). Without an index (out of memory) find_any() scans. */
static size_t rename_threads(Journal *j, const uint64_t *task_names, const uint64_t *cookie_names) {
        size_t changed = 0, n_tasks = j->n_tasks, n_cookies = j->n_cookies;

        for (size_t i = 0; task_names && i < n_tasks; i++)
                changed += task_names[i] != 0 && task_names[i] != j->tasks[i].start_time;
        for (size_t i = 0; cookie_names && i < n_cookies; i++)
                changed += cookie_names[i] != 0 && cookie_names[i] != j->cookies[i].start_time;
        if (changed == 0)
                return 0;
        if (task_names)
                j->n_tasks = 0;
        if (cookie_names)
                j->n_cookies = 0;
        if (index_rebuild(j, n_indexed(j) + (task_names ? n_tasks : 0) + (cookie_names ? n_cookies : 0)) < 0) {
                j->index = mfree(j->index);
                j->index_size = 0;
        }
        for (size_t i = 0, u = 0; task_names && i < n_tasks; i++) {
                JournalTask t = j->tasks[i];

                if (task_names[i] != 0)
                        t.start_time = task_names[i];
                if (find_any(j, INDEX_TASK, NULL, t.tid, t.start_time) >= 0) {
                        free(t.cgroup);
                        continue;
                }
                j->tasks[u] = t;
                if (j->index_size > 0)
                        index_put(j->index, j->index_size, INDEX_TASK, hash_task(INDEX_TASK, t.tid, t.start_time), u);
                j->n_tasks = ++u;
        }
        for (size_t i = 0, u = 0; cookie_names && i < n_cookies; i++) {
                JournalCookie c = j->cookies[i];

                if (cookie_names[i] != 0)
                        c.start_time = cookie_names[i];
                if (find_any(j, INDEX_COOKIE, NULL, c.tid, c.start_time) >= 0)
                        continue;
                j->cookies[u] = c;
                if (j->index_size > 0)
                        index_put(j->index, j->index_size, INDEX_COOKIE, hash_task(INDEX_COOKIE, c.tid, c.start_time),
                                  u);
                j->n_cookies = ++u;
        }
        j->dirty = true;
        j->need_rewrite = true; /* a log can only add */
        return changed;
}

size_t journal_name_tasks(Journal *j, const uint64_t *start_time) {
        _cleanup_free_ uint64_t *cookie_names = NULL;

        /* A cookie entry under a renamed task's old name is the same
         * thread's: renamed with it (by a lookup under the old names,
         * before anything changes). */
        if (j->n_cookies > 0 && (cookie_names = calloc(j->n_cookies, sizeof(uint64_t))))
                for (size_t i = 0; i < j->n_tasks; i++) {
                        ssize_t c;

                        if (start_time[i] == 0 || start_time[i] == j->tasks[i].start_time)
                                continue;
                        c = find_any(j, INDEX_COOKIE, NULL, j->tasks[i].tid, j->tasks[i].start_time);
                        if (c >= 0)
                                cookie_names[c] = start_time[i];
                }
        return rename_threads(j, start_time, cookie_names);
}

size_t journal_rename_cookies(Journal *j, const JournalCookie *from, const uint64_t *to, size_t n) {
        _cleanup_free_ uint64_t *names = NULL;
        size_t changed = 0, u = 0, total = j->n_cookies;
        bool dropped = false;

        if (n == 0 || total == 0)
                return 0;
        names = calloc(total, sizeof(uint64_t));
        if (!names)
                return 0; /* renamed another time; nothing lost */
        for (size_t i = 0; i < n; i++) {
                ssize_t pos = find_any(j, INDEX_COOKIE, NULL, from[i].tid, from[i].start_time);

                if (pos < 0 || to[i] == from[i].start_time)
                        continue;
                /* UINT64_MAX: a slot to drop (no name is that). */
                names[pos] = to[i] != 0 ? to[i] : UINT64_MAX;
                changed++;
        }
        if (changed == 0)
                return 0;
        /* The forgotten out, in one sweep, the names along. */
        for (size_t i = 0; i < total; i++) {
                if (names[i] == UINT64_MAX) {
                        dropped = true;
                        continue;
                }
                j->cookies[u] = j->cookies[i];
                names[u++] = names[i];
        }
        j->n_cookies = u;
        if (rename_threads(j, NULL, names) == 0 && dropped) {
                j->dirty = true;
                j->need_rewrite = true; /* a log can only add */
                if (index_rebuild(j, n_indexed(j)) < 0) {
                        j->index = mfree(j->index);
                        j->index_size = 0;
                }
        }
        return changed;
}

int journal_forget_cookie(Journal *j, pid_t tid, uint64_t start_time) {
        ssize_t pos = find_any(j, INDEX_COOKIE, NULL, tid, start_time);

        if (pos < 0)
                return 0;
        remove_at(j, INDEX_COOKIE, hash_task(INDEX_COOKIE, tid, start_time), j->cookies, &j->n_cookies,
                  sizeof(JournalCookie), (size_t) pos);
        return 1;
}

int journal_forget_cgroup(Journal *j, const char *path) {
        ssize_t pos = find_any(j, INDEX_CGROUP, path, 0, 0);
        char *owned;

        if (pos < 0)
                return 0;
        owned = j->cgroups[pos]; /* path may be it */
        remove_at(j, INDEX_CGROUP, hash_name(INDEX_CGROUP, path), j->cgroups, &j->n_cgroups, sizeof(char *), (size_t) pos);
        free(owned);
        return 1;
}

const JournalFeature *journal_get_feature(const Journal *j, const char *name) {
        ssize_t pos = find_any(j, INDEX_FEATURE, name, 0, 0);

        return pos < 0 ? NULL : &j->features[pos];
}

const JournalTask *journal_get_task(const Journal *j, pid_t tid, uint64_t start_time) {
        ssize_t pos = find_any(j, INDEX_TASK, NULL, tid, start_time);

        return pos < 0 ? NULL : &j->tasks[pos];
}

/* ---- formatting --------------------------------------------------------- */

static bool must_escape(unsigned char c) {
        return c <= 0x20 || c == 0x7f || c == '\\';
}

/* The text of a file or a log block, built by hand: through stdio (a
 * memstream and fprintf) formatting was about a tenth of what a fast-path
 * placement cost, for lines this simple. */
typedef struct Text {
        char *buf;
        size_t len, cap;
        bool oom;
} Text;

static void text_put(Text *t, const char *s, size_t n) {
        if (t->oom)
                return;
        if (t->len + n + 1 > t->cap) {
                size_t cap = MAX(t->cap * 2, t->len + n + 1);
                char *b = realloc(t->buf, MAX(cap, (size_t) 256));

                if (!b) {
                        t->oom = true;
                        return;
                }
                t->buf = b;
                t->cap = MAX(cap, (size_t) 256);
        }
        memcpy(t->buf + t->len, s, n);
        t->len += n;
        t->buf[t->len] = '\0';
}

static void text_str(Text *t, const char *s) {
        text_put(t, s, strlen(s));
}

static void text_u64(Text *t, uint64_t v) {
        char d[20];
        size_t i = sizeof(d);

        do
                d[--i] = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        text_put(t, d + i, sizeof(d) - i);
}

static void text_i64(Text *t, int64_t v) {
        if (v < 0) {
                text_put(t, "-", 1);
                text_u64(t, (uint64_t) -(v + 1) + 1);
        } else
                text_u64(t, (uint64_t) v);
}

/* Runs of plain bytes are copied whole. */
static void put_escaped(Text *t, const char *s) {
        static const char hex[] = "0123456789abcdef";
        const unsigned char *c = (const unsigned char *) s;

        while (*c) {
                const unsigned char *run = c;

                while (*c && !must_escape(*c))
                        c++;
                if (c > run)
                        text_put(t, (const char *) run, (size_t) (c - run));
                if (*c) {
                        char e[4] = { '\\', 'x', hex[*c >> 4], hex[*c & 15] };

                        text_put(t, e, sizeof(e));
                        c++;
                }
        }
}

/* Who a thread is: its start time, or "pidfs:INODE" (pidref.h). */
static void put_ident(Text *t, uint64_t start_time) {
        if (pidref_ident_is_pidfs(start_time)) {
                text_str(t, "pidfs:");
                start_time &= ~PIDREF_IDENT_PIDFS;
        }
        text_u64(t, start_time);
}

/* The entries from the given positions on (the whole journal: all zero),
 * in the file's order. Returns how many. */
static size_t format_entries(Text *t, const Journal *j, const size_t from[4], bool mode) {
        size_t n = 0;

        for (size_t i = from[0]; i < j->n_features; i++, n++) {
                text_str(t, "feature ");
                text_str(t, j->features[i].name);
                text_str(t, j->features[i].on ? " on\n" : " off\n");
        }
        if (mode && j->cgroup_mode) {
                text_str(t, "cgroup_mode ");
                text_str(t, j->cgroup_mode);
                text_put(t, "\n", 1);
                n++;
        }
        for (size_t i = from[1]; i < j->n_tasks; i++, n++) {
                text_str(t, "task ");
                text_i64(t, j->tasks[i].tid);
                text_put(t, " ", 1);
                put_ident(t, j->tasks[i].start_time);
                text_put(t, " ", 1);
                put_escaped(t, j->tasks[i].cgroup);
                text_put(t, "\n", 1);
        }
        for (size_t i = from[2]; i < j->n_cookies; i++, n++) {
                text_str(t, "cookie ");
                text_i64(t, j->cookies[i].tid);
                text_put(t, " ", 1);
                put_ident(t, j->cookies[i].start_time);
                text_put(t, "\n", 1);
        }
        for (size_t i = from[3]; i < j->n_cgroups; i++, n++) {
                text_str(t, "cgroup ");
                put_escaped(t, j->cgroups[i]);
                text_put(t, "\n", 1);
        }
        return n;
}

/* The oldest version that says what the entries from the given positions
 * on say: 2 only with pidfs names, so that a journal without them stays
 * readable by a topod before them. */
static unsigned entries_version(const Journal *j, const size_t from[4]) {
        for (size_t i = from[1]; i < j->n_tasks; i++)
                if (pidref_ident_is_pidfs(j->tasks[i].start_time))
                        return 2;
        for (size_t i = from[2]; i < j->n_cookies; i++)
                if (pidref_ident_is_pidfs(j->cookies[i].start_time))
                        return 2;
        return 1;
}

static void put_end(Text *t, size_t n) {
        text_str(t, "end ");
        text_u64(t, n);
        text_put(t, "\n", 1);
}

int journal_format(const Journal *j, char **ret, size_t *ret_len) {
        static const size_t all[4] = {};
        _cleanup_free_ char *buf = NULL;
        Text t = {};

        text_str(&t, JOURNAL_HEADER " ");
        text_u64(&t, entries_version(j, all));
        text_put(&t, "\n", 1);
        if (j->boot_id) {
                text_str(&t, "boot ");
                text_str(&t, j->boot_id);
                text_put(&t, "\n", 1);
        }
        (void) format_entries(&t, j, all, true);
        put_end(&t, journal_n_entries(j));
        buf = t.buf;
        if (t.oom)
                return -ENOMEM;
        if (t.len > JOURNAL_SIZE_MAX)
                return -EFBIG;
        *ret = TAKE_PTR(buf);
        if (ret_len)
                *ret_len = t.len;
        return 0;
}

/* ---- parsing ------------------------------------------------------------ */

_printf_(4, 5) static int parse_error(JournalError *e, unsigned line, int err, const char *fmt, ...) {
        va_list ap;

        if (e) {
                e->line = line;
                va_start(ap, fmt);
                vsnprintf(e->message, sizeof(e->message), fmt, ap);
                va_end(ap);
        }
        return err;
}

/* Decimal without sign or leading zeros, at most max. */
static bool parse_u64(const char *s, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;

        if (!*s || (s[0] == '0' && s[1]))
                return false;
        for (const char *c = s; *c; c++) {
                if (*c < '0' || *c > '9')
                        return false;
                if (v > (max - (uint64_t) (*c - '0')) / 10)
                        return false;
                v = v * 10 + (uint64_t) (*c - '0');
        }
        *ret = v;
        return true;
}

static int hexval(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Undo \xHH in place. false on a bad or NUL escape. */
static bool unescape(char *s) {
        char *w = s;

        for (const char *r = s; *r; r++) {
                if (*r != '\\') {
                        *w++ = *r;
                        continue;
                }
                int hi, lo;
                if (r[1] != 'x' || (hi = hexval(r[2])) < 0 || (lo = hexval(r[3])) < 0 || (hi == 0 && lo == 0))
                        return false;
                *w++ = (char) (hi * 16 + lo);
                r += 3;
        }
        *w = '\0';
        return true;
}

#define TOKENS_MAX 5

/* Split a line (NUL-terminated, no newline) on single spaces. -1 when a
 * token is empty, a byte is a control character, or there are too many. */
static int split_line(char *line, char *tok[TOKENS_MAX]) {
        int n = 0;

        for (char *c = line; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        return -1;
        for (char *p = line;;) {
                char *sp = strchr(p, ' ');

                if (n == TOKENS_MAX || (sp ? sp == p : !*p))
                        return -1;
                tok[n++] = p;
                if (!sp)
                        return n;
                *sp = '\0';
                p = sp + 1;
        }
}

static int parse_tid(const char *s, pid_t *ret) {
        uint64_t v;

        if (!parse_u64(s, INT32_MAX, &v) || v == 0)
                return -1;
        *ret = (pid_t) v;
        return 0;
}

/* A start time, or "pidfs:INODE" (version 2). */
static bool parse_ident(const char *s, uint64_t *ret) {
        uint64_t v;

        if (startswith(s, "pidfs:")) {
                if (!parse_u64(s + strlen("pidfs:"), PIDREF_IDENT_PIDFS - 1, &v) || v == 0)
                        return false;
                *ret = PIDREF_IDENT_PIDFS | v;
                return true;
        }
        return parse_u64(s, PIDREF_IDENT_PIDFS - 1, ret);
}

static const char *record_what(int k) {
        return k == -E2BIG ? "too many entries" : k == -ENOMEM ? "out of memory" : "invalid value";
}

/* One entry line into j. */
static int parse_entry(Journal *j, char **tok, int n, unsigned lineno, JournalError *e) {
        const char *kind = tok[0];
        uint64_t start;
        pid_t tid;
        int k;

        if (streq(kind, "feature")) {
                if (n != 3 || !(streq(tok[2], "on") || streq(tok[2], "off")))
                        return parse_error(e, lineno, -EBADMSG, "expected \"feature NAME on|off\"");
                k = journal_record_feature(j, tok[1], streq(tok[2], "on"));
        } else if (streq(kind, "cgroup_mode")) {
                if (n != 2)
                        return parse_error(e, lineno, -EBADMSG, "expected \"cgroup_mode MODE\"");
                k = journal_record_cgroup_mode(j, tok[1]);
        } else if (streq(kind, "task") || streq(kind, "cookie")) {
                bool task = streq(kind, "task");

                if (n != (task ? 4 : 3))
                        return parse_error(e, lineno, -EBADMSG, task ? "expected \"task TID START_TIME PATH\"" :
                                                                       "expected \"cookie TID START_TIME\"");
                if (parse_tid(tok[1], &tid) < 0)
                        return parse_error(e, lineno, -EBADMSG, "invalid thread id");
                if (!parse_ident(tok[2], &start))
                        return parse_error(e, lineno, -EBADMSG, "invalid start time");
                if (task) {
                        if (!unescape(tok[3]))
                                return parse_error(e, lineno, -EBADMSG, "invalid escape in path");
                        k = journal_record_task(j, tid, start, tok[3]);
                } else
                        k = journal_record_cookie(j, tid, start);
        } else if (streq(kind, "cgroup")) {
                if (n != 2)
                        return parse_error(e, lineno, -EBADMSG, "expected \"cgroup PATH\"");
                if (!unescape(tok[1]))
                        return parse_error(e, lineno, -EBADMSG, "invalid escape in path");
                k = journal_record_cgroup(j, tok[1]);
        } else if (streq(kind, "boot")) {
                if (n != 2 || j->boot_id)
                        return parse_error(e, lineno, -EBADMSG, "expected one \"boot ID\"");
                k = journal_set_boot_id(j, tok[1]);
        } else
                return parse_error(e, lineno, -EBADMSG, "unknown entry \"%.32s\"", kind);

        if (k == 0)
                return parse_error(e, lineno, -EBADMSG, "duplicate %s entry", kind);
        if (k < 0)
                return parse_error(e, lineno, k == -EINVAL ? -EBADMSG : k, "%s: %s", kind, record_what(k));
        return 0;
}

int journal_parse(const char *text, size_t len, Journal **ret, JournalError *ret_error) {
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_free_ char *line = NULL;
        unsigned lineno = 0;
        bool ended = false;
        size_t pos = 0;
        int k;

        if (len > JOURNAL_SIZE_MAX)
                return parse_error(ret_error, 0, -EFBIG, "larger than %u bytes", JOURNAL_SIZE_MAX);
        if (len == 0)
                return parse_error(ret_error, 0, -EBADMSG, "empty");
        if (memchr(text, '\0', len))
                return parse_error(ret_error, 0, -EBADMSG, "contains a NUL byte");
        if (text[len - 1] != '\n')
                return parse_error(ret_error, 0, -EBADMSG, "incomplete: does not end with a newline");

        k = journal_new(NULL, &j);
        if (k < 0)
                return k;
        line = malloc(JOURNAL_LINE_MAX + 1);
        if (!line)
                return -ENOMEM;

        while (pos < len) {
                const char *nl = memchr(text + pos, '\n', len - pos);
                size_t n = (size_t) (nl - (text + pos)); /* nl exists: the text ends with one */
                char *tok[TOKENS_MAX];
                int ntok;

                lineno++;
                if (ended)
                        return parse_error(ret_error, lineno, -EBADMSG, "text after \"end\"");
                if (n > JOURNAL_LINE_MAX)
                        return parse_error(ret_error, lineno, -EBADMSG, "line longer than %u bytes",
                                           JOURNAL_LINE_MAX);
                memcpy(line, text + pos, n);
                line[n] = '\0';
                pos += n + 1;

                ntok = split_line(line, tok);
                if (ntok < 0)
                        return parse_error(ret_error, lineno, -EBADMSG,
                                           "malformed line (empty field, control character or too many fields)");

                if (lineno == 1) {
                        uint64_t v;

                        if (ntok != 2 || !streq(tok[0], JOURNAL_HEADER) || !parse_u64(tok[1], UINT32_MAX, &v))
                                return parse_error(ret_error, lineno, -EBADMSG, "not a topod journal (no \"%s N\" header)",
                                                   JOURNAL_HEADER);
                        if (v < 1 || v > JOURNAL_VERSION)
                                return parse_error(ret_error, lineno, -EPROTONOSUPPORT,
                                                   "journal version %" PRIu64 ", this topod reads versions 1 to %u", v,
                                                   JOURNAL_VERSION);
                        continue;
                }
                if (streq(tok[0], "end")) {
                        uint64_t count;

                        if (ntok != 2 || !parse_u64(tok[1], UINT64_MAX, &count))
                                return parse_error(ret_error, lineno, -EBADMSG, "expected \"end N\"");
                        if (count != journal_n_entries(j))
                                return parse_error(ret_error, lineno, -EBADMSG,
                                                   "\"end\" counts %" PRIu64 " entries, the file has %zu", count,
                                                   journal_n_entries(j));
                        ended = true;
                        continue;
                }
                k = parse_entry(j, tok, ntok, lineno, ret_error);
                if (k < 0)
                        return k;
        }
        if (!ended)
                return parse_error(ret_error, lineno, -EBADMSG, "incomplete: no \"end\" line");
        j->dirty = false;
        *ret = TAKE_PTR(j);
        return 0;
}

/* ---- files -------------------------------------------------------------- */

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
        log_unmap(j);
        j->dirty = false;
        j->need_rewrite = false;
        j->committed[0] = j->n_features;
        j->committed[1] = j->n_tasks;
        j->committed[2] = j->n_cookies;
        j->committed[3] = j->n_cgroups;
        j->committed_mode = j->cgroup_mode != NULL;
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
         * at a copy into the mapping. The failed file is removed by the
         * caller's whole commit. */
        k = posix_fallocate(fd, 0, (off_t) cap);
        if (k != 0)
                return -k;
        map = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
                return negative_errno();
        j->log_map = map;
        j->log_cap = cap;
        return 0;
}

int journal_commit_append(Journal *j) {
        _cleanup_free_ char *buf = NULL;
        unsigned version;
        size_t len, n;
        char *dst;
        Text t = {};

        if (!j->dir)
                return -EINVAL;
        if (!j->dirty)
                return 0;
        if (j->need_rewrite || j->file_ino == 0 || j->log_size >= MAX(j->file_size, (uint64_t) JOURNAL_LOG_MIN) ||
            (j->committed_mode && !j->cgroup_mode) || j->committed[0] > j->n_features ||
            j->committed[1] > j->n_tasks || j->committed[2] > j->n_cookies || j->committed[3] > j->n_cgroups)
                return journal_commit(j);
        /* Not open: a new log, as there is none after a whole commit (or
         * one we did not write). One that could not be made is not tried
         * again at every placement. */
        if (!j->log_map) {
                int k;

                if (j->log_size > 0 || j->log_backoff > 0) {
                        j->log_backoff -= j->log_backoff > 0;
                        return journal_commit(j);
                }
                k = log_create(j);
                if (k < 0) {
                        if (k != -EEXIST)
                                j->log_backoff = JOURNAL_LOG_BACKOFF;
                        return journal_commit(j);
                }
        }

        version = entries_version(j, j->committed);
        if (j->log_size > 0 && version > j->log_version)
                return journal_commit(j); /* not in a log that says version 1 */
        if (j->log_size == 0) {
                j->log_version = version;
                text_str(&t, JOURNAL_LOG_HEADER " ");
                text_u64(&t, version);
                text_put(&t, " ", 1);
                text_u64(&t, j->file_ino);
                text_put(&t, " ", 1);
                text_u64(&t, j->file_size);
                text_put(&t, "\n", 1);
        }
        n = format_entries(&t, j, j->committed, !j->committed_mode);
        put_end(&t, n);
        buf = t.buf;
        if (t.oom)
                return -ENOMEM;
        len = t.len;
        if (len > j->log_cap - j->log_size)
                return journal_commit(j);

        /* A copy into the page cache, no flush: the journal must outlive
         * topod, not the machine. What it covers (cgroup moves, cookies)
         * lives in the kernel, which a machine crash resets, and a journal
         * of an earlier boot is discarded (boot id); for topod's own death
         * the page cache is enough, and its mapping's stores are in it
         * once made. On a disk-backed state directory this is the
         * difference between a placement of tens of microseconds and one
         * of a disk flush; on /run, a write() less per placement (measured
         * on the 2-core VM: 5% of the placer's CPU).
         *
         * The block's first byte goes last: until then the block starts
         * with a NUL, where a reader's text ends. topod killed in the
         * middle of the copy leaves the log as it was. */
        dst = j->log_map + j->log_size;
        memcpy(dst + 1, buf + 1, len - 1);
        __atomic_store_n(dst, buf[0], __ATOMIC_RELEASE);
        j->dirty = false;
        j->committed[0] = j->n_features;
        j->committed[1] = j->n_tasks;
        j->committed[2] = j->n_cookies;
        j->committed[3] = j->n_cgroups;
        j->committed_mode = j->cgroup_mode != NULL;
        j->log_size += len;
        return 0;
}

/* The log's blocks into j. Only complete blocks count: the text is cut
 * after the last "end" line; a block without one was being written when
 * the writer stopped, before the changes it covers. A log for another file
 * than the one loaded (ino, size) is a leftover: ignored. */
static int parse_log(Journal *j, const char *text, size_t len, uint64_t ino, uint64_t size, JournalError *e) {
        _cleanup_free_ char *line = malloc(JOURNAL_LINE_MAX + 1);
        size_t pos = 0, cut = 0, block = 0;
        unsigned lineno = 0;
        int k;

        if (!line)
                return -ENOMEM;
        /* The text ends at the first NUL: the log's space past it is
         * allocated, not written (a block being written starts with one). */
        len = strnlen(text, len);
        /* Where the complete blocks end. */
        for (size_t p = 0; p < len;) {
                const char *nl = memchr(text + p, '\n', len - p);

                if (!nl)
                        break; /* a torn last line */
                if (len - p >= 4 && memcmp(text + p, "end ", 4) == 0)
                        cut = (size_t) (nl - text) + 1;
                p = (size_t) (nl - text) + 1;
        }
        while (pos < cut) {
                const char *nl = memchr(text + pos, '\n', cut - pos);
                size_t n = (size_t) (nl - (text + pos));
                char *tok[TOKENS_MAX];
                int ntok;

                lineno++;
                if (n > JOURNAL_LINE_MAX)
                        return parse_error(e, lineno, -EBADMSG, "log: line longer than %u bytes", JOURNAL_LINE_MAX);
                memcpy(line, text + pos, n);
                line[n] = '\0';
                pos += n + 1;
                ntok = split_line(line, tok);
                if (ntok < 0)
                        return parse_error(e, lineno, -EBADMSG, "log: malformed line");
                if (lineno == 1) {
                        uint64_t v, i, sz;

                        if (ntok != 4 || !streq(tok[0], JOURNAL_LOG_HEADER) || !parse_u64(tok[1], UINT32_MAX, &v) ||
                            !parse_u64(tok[2], UINT64_MAX, &i) || !parse_u64(tok[3], UINT64_MAX, &sz))
                                return parse_error(e, lineno, -EBADMSG, "log: no \"%s N INODE SIZE\" header",
                                                   JOURNAL_LOG_HEADER);
                        if (v < 1 || v > JOURNAL_LOG_VERSION)
                                return parse_error(e, lineno, -EPROTONOSUPPORT, "log: version %" PRIu64, v);
                        if (i != ino || sz != size)
                                return 0; /* extends an older file */
                        continue;
                }
                if (streq(tok[0], "end")) {
                        uint64_t count;

                        if (ntok != 2 || !parse_u64(tok[1], UINT64_MAX, &count) || count != block)
                                return parse_error(e, lineno, -EBADMSG, "log: \"end\" does not count its block (%zu)",
                                                   block);
                        block = 0;
                        continue;
                }
                if (streq(tok[0], "boot"))
                        return parse_error(e, lineno, -EBADMSG, "log: \"boot\" belongs in the file");
                k = parse_entry(j, tok, ntok, lineno, e);
                if (k < 0)
                        return k;
                block++;
        }
        return 0;
}

static int load_log(Journal *j, int dfd, uint64_t ino, uint64_t size, JournalError *e) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        size_t len;
        int k;

        fd = openat(dfd, JOURNAL_LOG_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : parse_error(e, 0, negative_errno(), "cannot open the log");
        k = read_full_fd(fd, JOURNAL_SIZE_MAX, &text, &len);
        if (k < 0)
                return parse_error(e, 0, k, k == -EFBIG ? "log: too large" : "cannot read the log");
        return parse_log(j, text, len, ino, size, e);
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
                return parse_error(ret_error, 0, dfd, "cannot open the directory");
        fd = openat(dfd, JOURNAL_FILE_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
                goto empty;
        if (fd < 0)
                return parse_error(ret_error, 0, negative_errno(), "cannot open the journal");
        if (fstat(fd, &st) < 0)
                return parse_error(ret_error, 0, negative_errno(), "cannot stat the journal");
        if (!S_ISREG(st.st_mode))
                return parse_error(ret_error, 0, -EBADMSG, "not a regular file");
        if ((uint64_t) st.st_size > JOURNAL_SIZE_MAX)
                return parse_error(ret_error, 0, -EFBIG, "larger than %u bytes", JOURNAL_SIZE_MAX);
        k = read_full_fd(fd, JOURNAL_SIZE_MAX, &text, &len);
        if (k < 0)
                return parse_error(ret_error, 0, k, k == -EFBIG ? "too large" : "cannot read the journal");
        k = journal_parse(text, len, &j, ret_error);
        if (k < 0)
                return k;
        k = load_log(j, dfd, (uint64_t) st.st_ino, len, ret_error);
        if (k < 0)
                return k;
        j->dirty = false;
        j->need_rewrite = true; /* the next commit folds the log in */
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
