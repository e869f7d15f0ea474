/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the files of the cgroup writer share and nobody outside needs: the
 * cgroupfs files as the writer reaches them (cgroup-fs.c), the report's
 * items (cgroup-report.c), the held cgroup.procs files and the cgroups
 * processes were found in (cgroup-held.c), one value written and read back
 * (cgroup-tree.c), the exclusive CPUs (cgroup-exclusive.c) and one process
 * moved (cgroup-move.c). The public API is apply/cgroup.h. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>

#include "apply/cgroup.h"
#include "base/bitmap.h"
#include "base/util.h"

/* Marks a journal "cgroup" entry as "controller enabled here" (see cgroup.h). */
#define CGROUP_SUBTREE_MARK "/cgroup.subtree_control/"

/* Walk each step; only out-of-memory stops the walk. */
#define CGROUP_STEP(expr)                       \
        do {                                    \
                int _k = (expr);                \
                if (_k == -ENOMEM)              \
                        return _k;              \
        } while (0)

/* ── cgroup-fs.c: paths, attribute files, process lists ── */

int cgroup_path_join(const char *a, const char *b, char **ret);
int cgroup_path_parent(const char *path, char **ret);
/* cg as it follows the mount in a path: the root cgroup ("/") adds nothing. */
static inline const char *cgroup_path_below_mount(const char *cg) {
        return streq(cg, "/") ? "" : cg;
}
int cgroup_fs_path(const CgroupEnv *env, const char *cg, const char *file, char **ret);
bool cgroup_rel_path_valid(const char *p);
bool cgroup_root_path_valid(const char *p);
bool cgroup_plan_has(const Plan *plan, const char *cg);

int cgroup_read_attr(const CgroupEnv *env, const char *cg, const char *file, char **ret);
int cgroup_write_attr(const CgroupEnv *env, const char *cg, const char *file, const char *value);
int cgroup_exists(const CgroupEnv *env, const char *cg);
bool cgroup_word_listed(const char *text, const char *word);

bool cgroup_owned(const Journal *j, const char *cg);
int cgroup_journal_commit(Journal *j);

int cgroup_env_check(const CgroupEnv *env, const Plan *plan, CgroupEnv *ret);

/* The processes in cg now, from its cgroup.procs, sorted. None when it
 * cannot be read, or when cg is not a plain domain cgroup (cgroup.type): a
 * threaded domain's cgroup.procs lists every process with its main thread
 * anywhere in its threaded subtree. Then every process is looked at one by
 * one. */
typedef struct CgroupMembers {
        bool read;
        pid_t *pids;
        size_t n;
} CgroupMembers;

bool cgroup_parse_procs_line(const char *line, pid_t *ret);
int cgroup_members_read(const CgroupEnv *env, const char *cg, CgroupMembers *m);
int cgroup_members_read_proc(const CgroupEnv *env, CgroupMembers *m);
bool cgroup_members_has(const CgroupMembers *m, pid_t pid);
void cgroup_members_free(CgroupMembers *m, size_t n);

/* ── cgroup-report.c: the items of a report ── */

CgroupResult *cgroup_item_new_take(CgroupReport *r, CgroupItemKind kind, char **path, const char *value);
CgroupResult *cgroup_item_new(CgroupReport *r, CgroupItemKind kind, const char *path, const char *value);
void cgroup_set_str(char **field, const char *s);
_printf_(3, 4) int cgroup_item_fail(CgroupResult *it, int error, const char *fmt, ...);
int cgroup_item_ok(CgroupResult *it, CgroupOutcome o);
const char *cgroup_errno_reason(int err);
size_t cgroup_report_failed_since(const CgroupReport *r, size_t from);

/* ── cgroup-held.c: held cgroup.procs files, cgroups found by id ── */

int cgroup_write_procs(const CgroupEnv *env, const char *cg, const char *num);
int cgroup_of_pinned(const CgroupEnv *env, const PidRef *ref, char **ret);

/* ── cgroup-tree.c: one value written unless so, and read back ── */

typedef bool (*CgroupValueEqual)(const char *cur, const char *want);

bool cgroup_bitmap_text_equal(const char *a, const char *b);
int cgroup_set_attr(const CgroupEnv *env, CgroupReport *r, CgroupItemKind kind, const char *cg, const char *file,
                    const char *want, CgroupValueEqual eq);
int cgroup_set_partition(const CgroupEnv *env, CgroupReport *r, const char *cg, bool exclusive);

/* ── cgroup-exclusive.c: cpuset.cpus.exclusive for remote partitions ── */

int cgroup_exclusive_under(const Plan *plan, const char *path, Bitmap **ret);
int cgroup_set_exclusive(const CgroupEnv *env, CgroupReport *r, const char *cg, const Bitmap *want, bool shrink);
int cgroup_exclusive_prepare(const CgroupEnv *env, const Plan *plan, Journal *journal, CgroupReport *r,
                             bool chain_owned, bool *ret_exclusive);
int cgroup_exclusive_taken_below(const CgroupEnv *env, const Plan *plan, size_t g, Bitmap *want);

/* ── cgroup-move.c: one process into a cgroup ── */

typedef enum CgroupMoveCheck {
        CGROUP_MOVE_CHECK_ALIVE,     /* the thread lived after the write: it moved */
        CGROUP_MOVE_CHECK_READ_BACK, /* and proc/<tid>/cgroup names cg now */
        CGROUP_MOVE_CHECK_LATER,     /* neither: the caller's check after its own act tells
                                      * (CgroupMove.check_later) */
} CgroupMoveCheck;

int cgroup_moved_outcome(CgroupResult *it, int alive);
int cgroup_move_process(const CgroupEnv *env, CgroupResult *it, const PidRef *ref, const char *cg,
                        CgroupMoveCheck check, bool *ret_written);

/* cg is at, below or on the path to the configuration's cgroup_root
 * (env->cgroup_root) or one the journal recorded: where topod makes its
 * tree, and all a restore may remove (cgroup-restore.c, unit-restore.c). */
bool cgroup_restore_path_is_topods(const CgroupEnv *env, const Journal *j, const char *cg);
/* An entry of that kind left alone for it, reported skipped. -ENOMEM. */
int cgroup_report_foreign(CgroupReport *r, CgroupItemKind kind, const char *name);
