/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The journal: every original value topod changes, recorded before the
 * change, so that stop restores it and a crash is recovered from on the next
 * start.
 *
 * Use: journal_record_*() the original, journal_commit(), and only then
 * change the machine. The first original recorded for a thing wins: setting
 * a feature twice keeps the value from before the first change.
 *
 * On disk it is one text file, JOURNAL_FILE_NAME in a directory the caller
 * gives (production: /run/topod), replaced atomically (temporary file in the
 * same directory, then rename; not flushed to the disk: it must outlive
 * topod, not the machine, whose crash resets what it covers). The format is
 * line-based and versioned; every line is "KIND FIELD…" separated by single
 * spaces:
 *
 *     topod-journal 3
 *     boot 3f9c0d1e-8a2b-4c55-9e0a-6b7d1f2e3a4c
 *     feature TTWU_QUEUE on
 *     cgroup_mode concur
 *     setting llc_balancing/enabled 1
 *     task 1234 567890 /system.slice/foo.service
 *     task 1300 pidfs:88213 /user.slice
 *     cookie 1234 567890
 *     cgroup /topod/llc1
 *     unit topod-latency.slice
 *     unitprop crunch.service AllowedCPUs - 0-1
 *     end 9
 *
 * Next to it, JOURNAL_LOG_NAME holds what journal_commit_append() added
 * since the file was last written whole: the fast path's way to commit a
 * few entries with a copy into memory (no system call, no flush: see
 * journal_commit_append()) instead of rewriting every entry, whose cost
 * grows with the number of processes placed. Its first line binds it to
 * the journal file it extends (inode and size: a log left over from an
 * older file is ignored), then blocks of entry lines, each closed by
 * "end N" (N: the entries of that block):
 *
 *     topod-journal-log 2 1234567 4096
 *     task 1300 567990 /user.slice
 *     cookie 1300 567990
 *     end 2
 *
 * The log file is allocated ahead (JOURNAL_LOG_SLACK past the size at
 * which it is folded into the file) and its unwritten rest is NUL bytes:
 * the text ends at the first NUL at a line's start. A block's first byte
 * is copied last, so a block cut short by a crash starts with a NUL and is
 * not text: the changes it was to cover had not been made. A block with
 * its first byte and without its "end" had that line damaged: read, the
 * damage reported (journal_load()). journal_commit() folds the log into
 * the file and removes it.
 * The files under the directory are topod's while it runs: a log cut
 * short by hand under a running topod kills it (SIGBUS on its mapping).
 *
 * A thread is named by its tid and its start time (clock ticks after boot),
 * or, for a process the fast path pinned where pidfds are pidfs inodes, by
 * "pidfs:INODE", its pidfd's inode number (version 2; a file or a log
 * without such names is written as version 1, readable by a topod before
 * them; a name of that kind for a log of version 1 makes the commit a
 * whole one, which removes the log). In memory that is a start_time of
 * PIDREF_IDENT_PIDFS | INODE (apply/pidref.h).
 *
 * "setting FILE VALUE" is one of the scheduler's other debugfs settings
 * (base/sched-settings.h): FILE its path under sched/ on this kernel (the
 * name it has here, which restore writes), VALUE the text it read
 * (a number, 1/0, or a word). A journal with settings is version 3 (a
 * topod before them refuses it rather than drop them); settings never go
 * to the log: recording one makes the next commit a whole one.
 *
 * Under the systemd driver (apply/unit.h) two kinds more, version 4 (a
 * topod before them refuses the file rather than drop them; like settings
 * they never go to the log):
 *   "unit NAME": a transient unit topod created (its slices, the scopes it
 *     moved processes into), in creation order; restore stops them, last
 *     first, once they hold no process;
 *   "unitprop UNIT PROPERTY ORIGINAL WRITTEN": a property topod set on a
 *     unit it did not create (AllowedCPUs, AllowedMemoryNodes, CPUWeight),
 *     with the value before, as systemd reported it, and the value topod
 *     wrote; "-" stands for "not set" (an empty list, no weight). Restore
 *     writes ORIGINAL back only while the unit still holds WRITTEN. An
 *     ORIGINAL of "released" (JOURNAL_UNIT_RELEASED) marks one someone
 *     else changed since: WRITTEN is the value found then, which topod
 *     leaves alone, and restore forgets.
 *
 * "boot" is optional (the kernel's boot_id when the journal was written).
 * "cgroup_root PATH" (optional, one per line, after "boot") names the
 * cgroup_root of a tree topod made: restore removes only the cgroups of
 * "cgroup" lines at, below or on the path to one of these or to the
 * configuration's cgroup_root, and leaves the others alone (a damaged or
 * edited line naming /system.slice is reported, never removed). Recorded
 * in the file rather than read from topod.conf alone, so that a changed
 * topod.conf does not strand the tree made under the old one. Like "boot"
 * it is no entry (not counted by "end") and a topod that does not know it
 * skips it as a damaged line.
 * Paths are cgroup paths as /proc/<pid>/cgroup shows them (relative to the
 * cgroup2 mount, starting with '/'); bytes <= 0x20, 0x7f and '\' are written
 * as \xHH. "end N" closes the file and counts the entries before it: a file
 * without it is incomplete and refused. Entries are grouped by kind in the
 * order above; within a kind, in the order recorded. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/macro.h"

#define JOURNAL_FILE_NAME "journal"
#define JOURNAL_LOG_NAME "journal.log"
#define JOURNAL_VERSION 4u /* 4: "unit" and "unitprop" entries; 3: "setting" entries; 2: "pidfs:INODE" identities; 1 (neither) is read and
                            * written too: a file says the oldest version that holds what it holds */

/* Limits on what a journal file (an outside input after a crash) can make us
 * hold: the whole file, the number of entries, one name and one path. */
#define JOURNAL_SIZE_MAX (16u * 1024u * 1024u)
#define JOURNAL_ENTRIES_MAX 65536u
#define JOURNAL_NAME_MAX 64u   /* feature, cgroup_mode and boot id, including NUL */
#define JOURNAL_PATH_MAX 4096u /* unescaped, including NUL */

typedef struct JournalFeature {
        char *name; /* as the kernel lists it, without NO_ */
        bool on;    /* the original value */
} JournalFeature;

typedef struct JournalSetting {
        char *file;  /* path under sched/, as this kernel names it */
        char *value; /* the original, as read (sched-settings.h) */
} JournalSetting;

typedef struct JournalTask {
        pid_t tid;
        uint64_t start_time; /* /proc/<tid>/stat field 22, or PIDREF_IDENT_PIDFS | the
                              * inode of its pidfd: tells a reused tid apart */
        char *cgroup;        /* original cgroup path */
} JournalTask;

/* A property of a unit topod did not create, as it was and as topod set
 * it; "" is "not set". */
typedef struct JournalUnitProp {
        char *unit;
        char *property;
        char *original;
        char *written;
} JournalUnitProp;

typedef struct JournalCookie {
        pid_t tid;
        uint64_t start_time; /* as JournalTask's: a start time, or PIDREF_IDENT_PIDFS | an inode */
} JournalCookie;

/* Read the fields; change them only through the functions below. */
typedef struct Journal {
        char *dir;     /* where journal_commit() writes; NULL after journal_parse() */
        char *boot_id; /* NULL when not recorded */
        /* The cgroup_root of each tree topod made under (a reload may move
         * it while the old tree is still there), oldest first: restore
         * removes only the cgroups at, below or on the path to one of them
         * (or to the running configuration's), whatever else the "cgroup"
         * lines name. Not entries: not counted, never in the log. */
        char **cgroup_roots;
        size_t n_cgroup_roots;

        JournalFeature *features;
        size_t n_features;
        char *cgroup_mode; /* original active mode, NULL when not changed */
        JournalSetting *settings; /* in the order recorded; few, so not indexed */
        size_t n_settings;
        JournalTask *tasks;
        size_t n_tasks;
        JournalCookie *cookies;
        size_t n_cookies;
        char **cgroups; /* cgroups topod created, in creation order */
        size_t n_cgroups;
        char **units;   /* transient units topod created (systemd driver), in creation order */
        size_t n_units;
        JournalUnitProp *unit_props; /* in the order recorded; few (one per unit and property) */
        size_t n_unit_props;

        bool dirty; /* changed since the last commit or load */
        /* Lines journal_load() skipped as damaged (a torn write, a disk
         * error, an edit): the entries on the other lines are restored;
         * the first such line is in damage. */
        unsigned n_damaged;
        struct JournalError *damage;
        /* The same for the log (JOURNAL_LOG_NAME) beside it. */
        unsigned n_log_damaged;
        struct JournalError *log_damage;

        /* Private: index for first-original-wins lookups. */
        struct JournalIndexSlot *index;
        size_t index_size;

        /* Private: what the files hold, for journal_commit_append(). */
        bool need_rewrite;        /* changed other than by additions since the last commit */
        size_t committed[4];      /* entries on disk: features, tasks, cookies, cgroups */
        bool committed_mode;
        uint64_t file_ino, file_size; /* the file the log extends; file_ino 0: none written by us */
        uint64_t log_size;        /* bytes in the log; 0: none */
        unsigned log_version;     /* its header's: 2 once a block had pidfs names */
        char *log_map;            /* the log, mapped shared for appending; NULL: not open */
        size_t log_cap;           /* its mapped (and allocated) size */
        unsigned log_backoff;     /* whole commits before trying a log again after it failed */
        /* Private: the file as this journal last wrote or read it, to
         * notice another writer (journal_check_file()). */
        bool seen;
        uint64_t seen_ino, seen_size;
        int64_t seen_mtime_ns;
        /* Private: the log as this journal last wrote or read it, to
         * notice another writer (journal_check_log()): the one it maps,
         * by inode and the hash of the text it copied (its own stores
         * change its modification time), or the one a load read and no
         * commit has folded in yet, by inode, size and modification time. */
        uint64_t log_ino, log_hash;
        bool log_seen;
        uint64_t log_seen_ino, log_seen_size;
        int64_t log_seen_mtime_ns;
        /* What the last whole commit found changed under it (see
         * journal_check_file() and journal_check_log()), for the caller
         * to report; NULL: nothing. */
        char *foreign;
        char *foreign_log;
} Journal;

/* Where a parse stopped and why, for one line of message. */
typedef struct JournalError {
        unsigned line; /* 1-based; 0 when the error is about the whole file */
        bool log;      /* about the log (JOURNAL_LOG_NAME), not the file: journal_load() */
        char message[160];
} JournalError;

/* An empty journal that commits into dir. */
int journal_new(const char *dir, Journal **ret);
Journal *journal_free(Journal *j);
DEFINE_TRIVIAL_CLEANUP_FUNC(Journal *, journal_free);

/* Total entries (each feature, the mode, each setting, task, cookie and cgroup). */
size_t journal_n_entries(const Journal *j);
bool journal_is_empty(const Journal *j);

/* Record an original. 1 when recorded, 0 when an original was already there
 * (it is kept), -EINVAL for a bad name or path, -E2BIG past
 * JOURNAL_ENTRIES_MAX, -ENOMEM. */
int journal_record_feature(Journal *j, const char *name, bool on);
int journal_record_cgroup_mode(Journal *j, const char *mode);
int journal_record_setting(Journal *j, const char *file, const char *value);
int journal_record_task(Journal *j, pid_t tid, uint64_t start_time, const char *cgroup);
int journal_record_cookie(Journal *j, pid_t tid, uint64_t start_time);
int journal_record_cgroup(Journal *j, const char *path);
int journal_set_boot_id(Journal *j, const char *boot_id);
/* Note that topod makes its tree under root (an absolute cgroup path, not
 * "/"): 1 when added, 0 when known. While no "cgroup" entry is left, the
 * roots noted before are dropped (nothing remains under them). -EINVAL
 * for a bad path, -E2BIG past JOURNAL_CGROUP_ROOTS_MAX. */
#define JOURNAL_CGROUP_ROOTS_MAX 16u
int journal_record_cgroup_root(Journal *j, const char *root);
/* The systemd driver's (journal-unit.c): a unit name must be a valid one
 * (base/unit-name.h), a property one of the three, values "" or without
 * spaces and control characters. The first record of (unit, property)
 * wins: a second keeps the original and returns 0. */
int journal_record_unit(Journal *j, const char *name);
int journal_record_unit_prop(Journal *j, const char *unit, const char *property, const char *original,
                             const char *written);
#define JOURNAL_UNIT_RELEASED "released"
/* Released to someone else's change: original "released", written the
 * value the unit holds now (see above). */
int journal_release_unit_prop(Journal *j, const char *unit, const char *property, const char *found);
/* The value topod writes now to a property it recorded (the original stays). */
int journal_update_unit_prop(Journal *j, const char *unit, const char *property, const char *written);
int journal_forget_unit(Journal *j, const char *name);
int journal_forget_unit_prop(Journal *j, const char *unit, const char *property);
const JournalUnitProp *journal_get_unit_prop(const Journal *j, const char *unit, const char *property);
bool journal_has_unit(const Journal *j, const char *name);

/* Drop an entry once it is restored (or moot: the task exited). 1 when it
 * was there, 0 when not. */
int journal_forget_feature(Journal *j, const char *name);
int journal_forget_cgroup_mode(Journal *j);
int journal_forget_setting(Journal *j, const char *file);
int journal_forget_task(Journal *j, pid_t tid, uint64_t start_time);
int journal_forget_cookie(Journal *j, pid_t tid, uint64_t start_time);
int journal_forget_cgroup(Journal *j, const char *path);
/* Drop the task entries i with drop[i] (drop has n_tasks elements), in one
 * sweep: a prune of many costs one pass over the entries, not one each.
 * The number dropped. */
size_t journal_forget_tasks(Journal *j, const bool *drop);
/* Name task entry i by start_time[i] from now on where that is not 0 (an
 * entry known by its pidfd's inode, once its start time is known). An
 * entry that then names the same thread as an earlier one is dropped: the
 * earlier original wins. A cookie entry under a renamed task entry's old
 * name is renamed with it (the same thread). The number renamed (task
 * entries and cookie entries). */
size_t journal_name_tasks(Journal *j, const uint64_t *start_time);
/* Cookie entry from[i] (tid and name) is named to[i] from now on, or
 * forgotten where to[i] is 0; an entry not there is skipped, and one that
 * then names the same thread as an earlier one is dropped (the earlier
 * original wins). In one sweep, whatever n. The number renamed or
 * forgotten. */
size_t journal_rename_cookies(Journal *j, const JournalCookie *from, const uint64_t *to, size_t n);

/* Lookups; NULL when not recorded. */
const JournalFeature *journal_get_feature(const Journal *j, const char *name);
const JournalSetting *journal_get_setting(const Journal *j, const char *file);
const JournalTask *journal_get_task(const Journal *j, pid_t tid, uint64_t start_time);

/* The file's text. -EFBIG when it would exceed JOURNAL_SIZE_MAX. */
int journal_format(const Journal *j, char **ret, size_t *ret_len);

/* Pure parser: text need not be NUL-terminated. -EBADMSG for malformed
 * text, -EPROTONOSUPPORT for another version, -EFBIG past JOURNAL_SIZE_MAX,
 * -E2BIG past JOURNAL_ENTRIES_MAX, -ENOMEM. ret_error (may be NULL) is
 * filled in on those failures. The journal returned has no dir. */
int journal_parse(const char *text, size_t len, Journal **ret, JournalError *ret_error);
/* The same, keeping what is good: a damaged line (an entry that does not
 * parse, a NUL byte in it, a torn last line, a missing or wrong "end") is
 * skipped and counted in ->n_damaged, the first in ->damage. Only what makes
 * the whole text unreadable (no header, a version it does not know, over
 * the size limit) fails it. journal_load() reads this way: one bad line
 * must not leave every cgroup and cookie topod made behind. */
int journal_parse_salvage(const char *text, size_t len, Journal **ret, JournalError *ret_error);

/* Write atomically into j->dir (created, mode 0700, when missing; its parent
 * must exist), folding in and removing the log. Nothing is written when the
 * journal is not dirty. */
int journal_commit(Journal *j);

/* Commit, the cheap way when it can: the entries added since the last
 * commit are copied into the log through a shared mapping of it, not
 * flushed: they must outlive topod, which the page cache does, not the
 * machine, whose crash resets what they cover (and a journal of another
 * boot is discarded). The log's space is allocated when it is created, so
 * that on tmpfs (where the state directory belongs) a full file system is
 * an error then, not a fault at the copy. It is a
 * journal_commit() instead when something was forgotten or the boot id set
 * since, when this journal has not written its file yet, when the log has
 * grown to the size of the file, or when the entries do not fit in the
 * log's space, and for a while after the log could not be made (a full
 * file system: JOURNAL_LOG_BACKOFF commits). Either way the entries are in
 * the files when it returns 0. */
int journal_commit_append(Journal *j);

/* Load dir's journal, with its log: 1 and the journal when a file was there
 * (a crash or a stop that did not finish restoring), 0 and an empty journal
 * bound to dir when there was none; negative errno as journal_parse(), or
 * from reading. Both are read as journal_parse_salvage() reads: the damaged
 * lines of the file are in ->n_damaged and ->damage, the log's in
 * ->n_log_damaged and ->log_damage, and every other entry is loaded. Of
 * the log only what cannot be read at all (an unknown version, a read
 * error) fails the load; ret_error->log says the error is the log's. */
int journal_load(const char *dir, Journal **ret, JournalError *ret_error);

/* Whether the file is still the one this journal last wrote or read
 * (inode, size, modification time): 0 when it is (or none was yet), 1 when
 * someone else replaced, edited or removed it, with *ret_what (may be NULL)
 * saying what changed. The journal in memory is what topod did, so it is
 * kept: a changed file is moved aside as JOURNAL_FOREIGN_PREFIX<seconds>.<ns>
 * (never read, never removed by topod: for the administrator) and the
 * journal is marked for a whole rewrite, which the caller's next commit
 * makes. journal_commit() checks the same way before it writes, leaving
 * what it found in j->foreign, so that a change is never overwritten
 * unnoticed; the log's appends do not (no system call per placement): the
 * caller checks at each pass. */
#define JOURNAL_FOREIGN_PREFIX "journal.foreign-"
int journal_check_file(Journal *j, char **ret_what);
/* The same for the log: 0 when it is the one this journal maps (same
 * inode, its allocated size, the text it copied and NULs after it) or
 * read at load, or when there is none and none was made; 1 when someone
 * else replaced, cut, extended, edited, removed or created it, with
 * *ret_what. A changed log is moved aside as
 * JOURNAL_LOG_FOREIGN_PREFIX<seconds>.<ns>, its mapping dropped (no store
 * of topod's lands in another's file, nor past the end of one cut short),
 * and the journal marked for a whole rewrite, which holds every entry the
 * log did. journal_commit() checks it too (->foreign_log). */
#define JOURNAL_LOG_FOREIGN_PREFIX "journal.log.foreign-"
int journal_check_log(Journal *j, char **ret_what);

/* Remove the file (and the log) after a complete restore. 0 also when there
 * was none. */
int journal_remove(const char *dir);
