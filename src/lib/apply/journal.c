/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The journal's model: its entries in memory, the index that makes "the
 * first original wins" a lookup, the checks a name or path must pass, and
 * recording and forgetting entries. Its text is journal-format.c's, its
 * files on disk journal-file.c's: this part neither formats nor does I/O
 * (the log's mapping, which the struct owns, is only released here). */
#include "journal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "apply/journal-internal.h"
#include "base/sched-settings.h"
#include "base/util.h"

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
        return path_components_safe(p + 1);
}

/* ---- construction ------------------------------------------------------- */

/* The log's mapping, gone (the file stays: journal_commit() removes it). */
void journal_log_unmap(Journal *j) {
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
        free(j->damage);
        free(j->log_damage);
        free(j->foreign);
        free(j->foreign_log);
        for (size_t i = 0; i < j->n_cgroup_roots; i++)
                free(j->cgroup_roots[i]);
        free(j->cgroup_roots);
        for (size_t i = 0; i < j->n_features; i++)
                free(j->features[i].name);
        free(j->features);
        free(j->cgroup_mode);
        for (size_t i = 0; i < j->n_settings; i++) {
                free(j->settings[i].file);
                free(j->settings[i].value);
        }
        free(j->settings);
        for (size_t i = 0; i < j->n_tasks; i++)
                free(j->tasks[i].cgroup);
        free(j->tasks);
        free(j->cookies);
        for (size_t i = 0; i < j->n_cgroups; i++)
                free(j->cgroups[i]);
        free(j->cgroups);
        journal_units_free(j);
        free(j->index);
        journal_log_unmap(j);
        free(j);
        return NULL;
}

size_t journal_n_entries(const Journal *j) {
        return n_indexed(j) + (j->cgroup_mode ? 1 : 0) + j->n_settings + j->n_units + j->n_unit_props;
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

static ssize_t find_setting(const Journal *j, const char *file) {
        for (size_t i = 0; i < j->n_settings; i++)
                if (streq(j->settings[i].file, file))
                        return (ssize_t) i;
        return -1;
}

int journal_record_setting(Journal *j, const char *file, const char *value) {
        _cleanup_free_ char *f = NULL, *v = NULL;
        int k;

        if (!sched_setting_file_valid(file) || !sched_setting_value_valid(value))
                return -EINVAL;
        if (find_setting(j, file) >= 0)
                return 0;
        if (journal_n_entries(j) >= JOURNAL_ENTRIES_MAX)
                return -E2BIG;
        if ((k = grow((void **) &j->settings, j->n_settings, sizeof(JournalSetting))) < 0)
                return k;
        f = strdup(file);
        v = strdup(value);
        if (!f || !v)
                return -ENOMEM;
        j->settings[j->n_settings++] = (JournalSetting) { .file = TAKE_PTR(f), .value = TAKE_PTR(v) };
        j->dirty = true;
        j->need_rewrite = true; /* the log holds no settings: the file does */
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

int journal_add_cgroup_root(Journal *j, const char *root) {
        char **m, *s;

        if (!cgroup_path_valid(root) || streq(root, "/"))
                return -EINVAL;
        for (size_t i = 0; i < j->n_cgroup_roots; i++)
                if (streq(j->cgroup_roots[i], root))
                        return 0;
        if (j->n_cgroup_roots >= JOURNAL_CGROUP_ROOTS_MAX)
                return -E2BIG;
        s = strdup(root);
        m = s ? realloc(j->cgroup_roots, (j->n_cgroup_roots + 1) * sizeof(char *)) : NULL;
        if (!m) {
                free(s);
                return -ENOMEM;
        }
        j->cgroup_roots = m;
        j->cgroup_roots[j->n_cgroup_roots++] = s;
        j->dirty = true;
        j->need_rewrite = true;
        return 1;
}

int journal_record_cgroup_root(Journal *j, const char *root) {
        if (j->n_cgroups == 0 && j->n_cgroup_roots > 0 &&
            !(j->n_cgroup_roots == 1 && streq(j->cgroup_roots[0], root))) {
                /* Nothing is left under the earlier ones. */
                for (size_t i = 0; i < j->n_cgroup_roots; i++)
                        free(j->cgroup_roots[i]);
                j->n_cgroup_roots = 0;
                j->dirty = j->need_rewrite = true;
        }
        return journal_add_cgroup_root(j, root);
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
 * slots of the entries after it, which moved down one, told so. A rebuild
 * would cost a hash of every entry and an allocation of the whole table
 * for each one forgotten (a placement whose process vanished, in a journal
 * of thousands); this is a walk over the slots. hash: the removed
 * entry's. */
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

int journal_forget_setting(Journal *j, const char *file) {
        ssize_t pos = find_setting(j, file);

        if (pos < 0)
                return 0;
        free(j->settings[pos].file);
        free(j->settings[pos].value);
        memmove(j->settings + pos, j->settings + pos + 1, (j->n_settings - (size_t) pos - 1) * sizeof(JournalSetting));
        j->n_settings--;
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

const JournalSetting *journal_get_setting(const Journal *j, const char *file) {
        ssize_t pos = find_setting(j, file);

        return pos < 0 ? NULL : &j->settings[pos];
}

const JournalTask *journal_get_task(const Journal *j, pid_t tid, uint64_t start_time) {
        ssize_t pos = find_any(j, INDEX_TASK, NULL, tid, start_time);

        return pos < 0 ? NULL : &j->tasks[pos];
}
