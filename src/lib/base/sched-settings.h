/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The scheduler's debugfs settings topod manages beyond sched/features and
 * sched/cgroup_mode: a catalog of what each is, the file names it has had
 * across kernel versions, and the text of its values. Pure data and pure
 * functions: the probe that finds them (observe/kernelcaps.h), the policy
 * parser and checker (decide/) and the writer (apply/feat.h) share it, so
 * it sits below all three.
 *
 * A setting is named in a policy by its path under <debugfs>/sched/ on the
 * newest kernel that has it ("base_slice_ns", "llc_balancing/enabled").
 * Where the kernel renamed its file, the catalog lists every name, newest
 * first, with the version and the source of each change; the probe uses the
 * first the running kernel has, so one policy serves a fleet of kernels.
 * The older names, and the sysctl names tuned profiles use
 * ("sched_min_granularity_ns"), are accepted as aliases. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCHED_SETTING_NAME_MAX 64u  /* a name or path under sched/, including NUL */
#define SCHED_SETTING_VALUE_MAX 64u /* a value's text, including NUL */
#define SCHED_SETTING_FILES_MAX 3u  /* names one setting has had */

typedef enum SchedSettingKind {
        SCHED_SETTING_NUMBER, /* a decimal number (the kernel's u32 files) */
        SCHED_SETTING_SWITCH, /* 1 or 0; a policy says on or off */
        SCHED_SETTING_CHOICE, /* one word of those the file lists, the active one in
                               * parentheses ("none (voluntary) full"); written as the word */
        _SCHED_SETTING_KIND_MAX,
} SchedSettingKind;

/* One name a setting's file has had under sched/, and from which kernel. */
typedef struct SchedSettingFile {
        const char *name;
        const char *since; /* mainline version that gave it this name */
        const char *until; /* the version that renamed or removed it; NULL: current */
} SchedSettingFile;

typedef struct SchedSettingInfo {
        const char *name; /* the policy key: its file on the newest kernel that has one */
        SchedSettingKind kind;
        SchedSettingFile files[SCHED_SETTING_FILES_MAX]; /* newest first; the first is name */
        size_t n_files;
        const char *const *aliases; /* other policy keys for it (older names, sysctl names); NULL-terminated or NULL */
        const char *absent;         /* why a kernel lacks it, one line that stands alone ("not on this
                                     * kernel: …"): the versions, the config option, or its removal */
        bool removed;               /* no current kernel has it */
        const char *what;           /* one line: what it is */
        uint32_t min, max;          /* NUMBER: the values a policy may give; max 0 means UINT32_MAX.
                                     * Where a value in range of the u32 breaks the scheduler
                                     * (nr_migrate 0 moves no task) */
} SchedSettingInfo;

/* The catalog, in a fixed order (status and journal listings follow it). */
extern const SchedSettingInfo sched_settings[];
extern const size_t sched_settings_count;

/* Every name a policy may give (each setting's name, then the aliases), for
 * "did you mean". NULL-terminated. */
extern const char *const sched_setting_keys[];

/* The setting a policy key names (its name or an alias); NULL when none. */
const SchedSettingInfo *sched_setting_lookup(const char *key);
/* The setting a file under sched/ is (any name it has had); NULL when none. */
const SchedSettingInfo *sched_setting_by_file(const char *file);
/* The largest value a policy may give a NUMBER setting. */
uint32_t sched_setting_max(const SchedSettingInfo *info);
/* Is a NUMBER's value (as sched_setting_value_parse() gives it) from
 * info->min to sched_setting_max()? true for the other kinds. Only a
 * policy's value is held to it: an original topod found is put back as it
 * was. */
bool sched_setting_in_range(const SchedSettingInfo *info, const char *value);
/* Its position in sched_settings[]. */
size_t sched_setting_index(const SchedSettingInfo *info);

const char *sched_setting_kind_to_string(SchedSettingKind k);

/* The names it has had, for messages: "base_slice_ns from 6.6,
 * min_granularity_ns from 5.13 until 6.6". -ENOMEM. */
int sched_setting_history(const SchedSettingInfo *info, char **ret);

/* A policy's value as the text that is written: a number without sign or
 * leading zeros, at most UINT32_MAX (NUMBER); "1" or "0" from on/off,
 * yes/no, true/false, 1/0 (SWITCH); one word of [a-z0-9_-] (CHOICE).
 * -EINVAL with nothing written to ret for anything else. ret holds
 * SCHED_SETTING_VALUE_MAX bytes. */
int sched_setting_value_parse(SchedSettingKind kind, const char *text, char *ret);

/* The file's text (what a read gives) as a value in the same form, and for
 * CHOICE the words listed (ret_choices may be NULL; freed with strv_free):
 * a number stripped of blanks; Y/N or 1/0 for a SWITCH (debugfs booleans
 * read Y or N); the parenthesised word. -EBADMSG for text of another
 * format, -ENODATA for a CHOICE file that marks no word. */
int sched_setting_text_parse(SchedSettingKind kind, const char *text, char *ret_value, char ***ret_choices);

/* Is this a name the journal may hold: [a-z0-9_] components separated by
 * single '/', not starting or ending with one, shorter than
 * SCHED_SETTING_NAME_MAX? (A journal is read back after a crash: a path
 * must not leave sched/.) */
bool sched_setting_file_valid(const char *file);
/* Is this a value's text the journal may hold: [a-z0-9_-], not empty,
 * shorter than SCHED_SETTING_VALUE_MAX? */
bool sched_setting_value_valid(const char *value);
