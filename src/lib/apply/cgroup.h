/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The cgroup writer: the Plan's tree under topod's root on the cgroup2
 * mount, its cpusets and weights, and the tasks moved into it; restore puts
 * everything back from the journal.
 *
 * Everything goes through the Root: paths are "<cgroup2 mount><cgroup
 * path>/<file>" relative to it ("sys/fs/cgroup/topod.slice/node0/cpu.weight"),
 * the mount being the one KernelCaps found. Cgroup paths are written as
 * /proc/<pid>/cgroup shows them: relative to the mount, starting with '/'.
 *
 * Why plain cgroupfs files and not libcgroup (Debian 12's 2.0.2). libcgroup
 * would do create / set values / attach on v2, but:
 *   - it finds the hierarchy itself by reading the real /proc/mounts in
 *     cgroup_init() and builds absolute paths from it: it cannot go through
 *     our Root, so neither the unit tests' fake tree nor `--root DIR` could
 *     use it, and the code the tests run would not be the code the daemon runs;
 *   - cgroup_create_cgroup() writes every value of a cgroup in one call and
 *     returns one code: no per-item done / already / failed and no read-back
 *     of each value, which apply must report; on v2 it also enables the
 *     controllers in the parents' cgroup.subtree_control by itself, including
 *     parents topod did not create, without telling us what it enabled, so
 *     that could not be journaled and undone;
 *   - it needs +cpu +cpuset enabled at the mount's root before it works at
 *     all (create fails 50016 "No such file or directory", attach says
 *     "Cgroup is not mounted", 50001): we have to write that file ourselves;
 *   - cgroup_delete_cgroup() removes a v2 directory and still returns
 *     ENOENT (50016; it tries once per controller on the same directory);
 *   - its errors are its own numbers (500xx) with the errno kept aside.
 * What is left for it — mkdir, one write per file, rmdir — is no shorter
 * through it. So: plain files, one open+write per value, every value read
 * back, and the library does not link libcgroup (dep_cgroup).
 *
 * What topod writes, and where:
 *   - Its own root (Plan.cgroup_root, e.g. /topod.slice) and everything under
 *     it: created by topod (each directory recorded in the journal before the
 *     mkdir), every attribute written there.
 *   - The path from the mount to its root: the ancestors topod did not create
 *     (the mount's root cgroup, a systemd slice) get +cpuset +cpu in their
 *     cgroup.subtree_control when missing, and nothing else. That is needed:
 *     the controllers must be enabled on every level above a cgroup for its
 *     cpuset.* / cpu.* files to exist. Each controller enabled in a cgroup
 *     topod did not create is recorded in the journal first and disabled
 *     again on restore. No other attribute of a cgroup topod did not create
 *     is ever written.
 *   - The journal has no kind for "controller enabled"; until it has one, such
 *     an entry is a journal "cgroup" entry "<cgroup>/cgroup.subtree_control/
 *     <controller>" (e.g. "/cgroup.subtree_control/cpu"). That cannot be a
 *     created cgroup: no cgroup can be named cgroup.subtree_control, the file
 *     of that name exists in every cgroup directory. Only this module reads
 *     "cgroup" entries.
 *
 * Tasks. topod's groups are domain cgroups and the tasks come from domain
 * cgroups topod does not own (systemd's); cgroup v2 moves only whole
 * processes between domain cgroups (cgroup.threads moves threads only within
 * one threaded subtree, and turning the source cgroups threaded is writing
 * attributes of cgroups topod did not create). So a process is moved with
 * cgroup.procs, never cgroup.threads. The Plan places threads; a process goes
 * to the group where most of its planned threads are planned; on a tie, the
 * group of its main thread (tid == tgid) if that is among the tied ones,
 * else the group of the lowest tid among them. The number written to
 * cgroup.procs is the tid of one planned thread of that group (the main
 * thread first): writing any tid of a process moves its whole thread group,
 * and that thread is the one whose identity was checked with a PidRef
 * (tid + start time) just before the write and whose survival after it tells
 * the write reached the process meant.
 *
 * Journal: before the first move of a batch, the original cgroup of every
 * process about to move is recorded (as "task <tgid> <main thread's start
 * time> <path>") and committed once; a process found already in topod's
 * tree is not recorded (its original is in the journal or lost). A process
 * that exited is reported vanished, not failed, and its entry forgotten.
 *
 * Restore moves each journaled process back to its original cgroup, or to
 * the nearest ancestor of it that still exists; moves processes topod did
 * not journal out of topod's groups (children forked after the move, tasks
 * other placers put there) into the nearest ancestor topod did not create;
 * removes the cgroups topod created, children first; disables the
 * controllers it enabled; and forgets each journal entry once it is restored
 * (or moot), committing the journal at the end.
 *
 * Library code: nothing is printed; every item is reported. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "apply/journal.h"
#include "apply/pidref.h"
#include "base/macro.h"
#include "base/root.h"
#include "base/yield.h"
#include "decide/plan.h"
/* Where a process is (/proc/<pid>/cgroup): read by observe, for the writer
 * and its callers. */
#include "observe/proc-cgroup.h"

/* Bounds on what the machine can make us read: one attribute file, a
 * cgroup.procs list (a /proc/<pid>/cgroup: PROC_CGROUP_MAX). */
#define CGROUP_ATTR_MAX (64u * 1024u)
#define CGROUP_PROCS_MAX (4u * 1024u * 1024u)

/* How changes reach the kernel: paths are relative to the Root. Tests stand
 * in for the kernel's rules (no internal processes, controllers needed in
 * the parent, EBUSY on rmdir of a busy cgroup). Reads go to the files. Each
 * returns 0 or a negative errno. */
typedef struct CgroupOps {
        int (*mkdir)(void *userdata, const Root *root, const char *path);
        int (*rmdir)(void *userdata, const Root *root, const char *path);
        /* One write() of the whole value, as cgroupfs wants it. */
        int (*write)(void *userdata, const Root *root, const char *path, const char *value);
        void *userdata;
} CgroupOps;

extern const CgroupOps cgroup_ops_kernel;

/* What moves keep between two passes:
 *
 * - The cgroup.procs files of the groups processes are moved into, held
 *   open: opening one (a walk of the whole path) is most of what a move
 *   costs. Only files on a cgroup2 mount are held (a plain file of a fake
 *   tree would be appended to), only with the kernel's ops, and a held file
 *   whose cgroup went away (ENODEV) is dropped and its path opened again. A
 *   cgroup can be removed while its files are open.
 *
 * - The cgroups processes were found in, by the kernel's id of the cgroup
 *   (PidRefOps.pidfd_cgroup_id, 6.13): where a process is, the original the
 *   journal records, is then one ioctl on the pinned process's pidfd, and
 *   proc/PID/cgroup (a dear first read of a new process, a line per
 *   hierarchy on a hybrid host) is read only for a cgroup not seen since the
 *   last time they were forgotten, at the start of every pass (which then
 *   reads each cgroup once, afresh). An id is never reused while the
 *   system runs; a path can change (rename(2) of a cgroup directory), so a
 *   path remembered is at most one pass old: a process in a cgroup renamed
 *   meanwhile is journaled by the old path, and restored to whatever is at
 *   that path then, or, if nothing is, to the nearest ancestor that
 *   lives. */
typedef struct CgroupHeld CgroupHeld;

int cgroup_held_new(CgroupHeld **ret);
/* Close the files (after a pass: the new plan may not have their groups). */
void cgroup_held_close_files(CgroupHeld *f);
/* Forget the cgroups remembered by id (before a pass). */
void cgroup_held_forget_origins(CgroupHeld *f);
/* Both (before a restore). */
void cgroup_held_clear(CgroupHeld *f);
CgroupHeld *cgroup_held_free(CgroupHeld *f);
DEFINE_TRIVIAL_CLEANUP_FUNC(CgroupHeld *, cgroup_held_free);
/* How many cgroups are remembered by id; reads of proc/PID/cgroup (misses,
 * or without ids) and finds by id (hits) since cgroup_held_new(). */
typedef struct CgroupHeldStats {
        size_t origins;
        uint64_t reads, hits;
} CgroupHeldStats;
CgroupHeldStats cgroup_held_stats(const CgroupHeld *f);

/* Where and how: the Root, the cgroup2 mount as KernelCaps found it
 * ("/sys/fs/cgroup"), and the ops (NULL: the kernel, pidref_ops_host). */
typedef struct CgroupEnv {
        const Root *root;
        const char *mount;
        /* The mount's cgroup.controllers (NULL-terminated), or NULL: not
         * known, use cpu and cpuset. Without one (a hybrid v1+v2 host binds
         * them to v1) the tree is still made and tasks still moved, and
         * what needs the controller (cpusets, partitions, weights) is
         * reported skipped, once. */
        char *const *controllers;
        const CgroupOps *ops;
        const PidRefOps *pidref;
        CgroupHeld *held; /* NULL: cgroup.procs opened for every move */
        /* A pass's moves let another thread in between processes, and
         * leave alone those that changed since the scan (base/yield.h);
         * NULL: never. */
        const YieldHooks *yield;
        /* NULL, or where the fast path's moves put the descriptors they are
         * done with (the /proc/PID/cgroup read, the handles let go of), to
         * be closed together by their caller (fd_bin_empty()) */
        FdBin *bin;
        /* The running configuration's cgroup_root, or NULL. cgroup_restore()
         * removes only the cgroups at, below or on the path to it or to one
         * of the roots the journal recorded (journal.h). */
        const char *cgroup_root;
} CgroupEnv;

typedef enum CgroupItemKind {
        CGROUP_ITEM_CONTROLLER, /* value "+cpu" / "-cpu" in path's cgroup.subtree_control */
        CGROUP_ITEM_MKDIR,
        CGROUP_ITEM_CPUS,       /* cpuset.cpus */
        CGROUP_ITEM_MEMS,       /* cpuset.mems */
        CGROUP_ITEM_WEIGHT,     /* cpu.weight */
        CGROUP_ITEM_PARTITION,  /* cpuset.cpus.partition */
        CGROUP_ITEM_EXCLUSIVE,  /* cpuset.cpus.exclusive (6.7): what a partition below may take */
        CGROUP_ITEM_EFFECTIVE,  /* read-back: cpuset.cpus.effective against the plan */
        CGROUP_ITEM_MOVE,       /* a process into path (apply) or back (restore) */
        CGROUP_ITEM_RMDIR,
        _CGROUP_ITEM_MAX,
} CgroupItemKind;

typedef enum CgroupOutcome {
        CGROUP_DONE,     /* changed and read back (EFFECTIVE: matches) */
        CGROUP_ALREADY,  /* was so: nothing written */
        CGROUP_SKIPPED,  /* deliberately not written; reason says why (cpu.idle set) */
        CGROUP_VANISHED, /* the task exited, or its tid names another task: not a failure */
        CGROUP_FAILED,   /* error and reason say why */
        _CGROUP_OUTCOME_MAX,
} CgroupOutcome;

typedef struct CgroupResult {
        CgroupItemKind kind;
        char *path;  /* the cgroup ("/topod.slice/node0") */
        char *value; /* what was asked ("4-7", "300", "+cpu", "root"; MOVE: NULL) */
        char *found; /* what was there before, or what the read-back showed on failure */
        pid_t pid;   /* MOVE: the tid written (its process moves) */
        pid_t tgid;  /* MOVE */
        char *from;  /* MOVE: the cgroup it was in */
        bool back;   /* MOVE: to where it came from (a restore, or let go) */
        bool journaled; /* an original was recorded and committed for this change */
        CgroupOutcome outcome;
        int error;    /* negative errno when failed, else 0 */
        char *reason; /* NULL unless failed or skipped; for a partition the kernel's own text */
} CgroupResult;

typedef struct CgroupReport {
        CgroupResult *items;
        size_t n, allocated;
} CgroupReport;

int cgroup_report_new(CgroupReport **ret);
CgroupReport *cgroup_report_free(CgroupReport *r);
/* Free what it holds, not r: it is empty again (one on the stack). */
void cgroup_report_clear(CgroupReport *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(CgroupReport *, cgroup_report_free);
size_t cgroup_report_count(const CgroupReport *r, CgroupOutcome o);

const char *cgroup_outcome_to_string(CgroupOutcome o);
const char *cgroup_item_kind_to_string(CgroupItemKind k);

/* Failures, sorted:
 *   temporary (retry on the next reconcile): EBUSY (rmdir of a cgroup that
 *     still has tasks or children; disabling a controller a child still
 *     uses; "no internal processes" while tasks sit in an inner cgroup),
 *     EAGAIN, EINTR, ENOMEM, EMFILE/ENFILE, and anything unknown;
 *   permanent until the machine or the policy changes: EACCES/EPERM (not
 *     root, or a delegated tree we may not write), ENOENT (no cgroup2 mount,
 *     or a controller not available in the parent), EINVAL (a value the
 *     kernel refuses: CPUs or nodes outside the parent's, cpu.weight while
 *     cpu.idle is set), EOPNOTSUPP (a threaded cgroup in the way), EROFS. */
bool cgroup_error_is_temporary(int error);

/* Pure: is path the cgroup 'top' or below it? ("/a/b" is below "/a", "/ab" is not.) */
bool cgroup_path_is_below(const char *path, const char *top);

/* One process as the writer moves it. */
typedef struct CgroupProcess {
        pid_t tgid;
        int group;       /* index into Plan.groups */
        size_t *tasks;   /* indices into Plan.tasks planned into group: main thread first, then by tid */
        size_t n_tasks;
        unsigned n_planned; /* threads of the process the plan places anywhere */
} CgroupProcess;

/* Pure: the plan's placed threads grouped by process, each process with its
 * group chosen as described above, in tgid order. */
int cgroup_plan_processes(const Plan *plan, CgroupProcess **ret, size_t *ret_n);
void cgroup_processes_free(CgroupProcess *p, size_t n);

/* The tree: topod's root (creating it and enabling +cpuset +cpu on the path
 * from the mount as needed), then each PlanGroup parents first — mkdir,
 * controllers for inner directories, cpuset.cpus, cpuset.mems, cpu.weight
 * (skipped while cpu.idle is 1), cpuset.cpus.partition (root for exclusive
 * groups; member otherwise, only when it is not member already) — and
 * finally cpuset.cpus.effective read back against the plan. Results are
 * appended to report. journal may be NULL (nothing recorded). Returns the
 * number of failed items (0: all done or already so), or a negative errno
 * when it could not run: -ENOENT no cgroup2 mount, -EINVAL a cgroup_root
 * that is not an absolute path below the mount, -ENOMEM. */
int cgroup_apply_tree(const CgroupEnv *env, const Plan *plan, Journal *journal, CgroupReport *report);

/* Move each process of the plan into its group (see above). Returns the
 * number of failed items, or a negative errno as cgroup_apply_tree(); a
 * journal that cannot be committed is -errno, with nothing moved. */
int cgroup_apply_tasks(const CgroupEnv *env, const Plan *plan, Journal *journal, CgroupReport *report);

/* Both, tree first. */
int cgroup_apply(const CgroupEnv *env, const Plan *plan, Journal *journal, CgroupReport *report);

/* Put back what the journal's "task" and "cgroup" entries record (see
 * above), forgetting each entry once restored or moot, then commit the
 * journal when it has a directory. Returns the number of failed items
 * (their entries stay), or a negative errno when it could not run or the
 * journal could not be committed (the report holds what was done). */
int cgroup_restore(const CgroupEnv *env, Journal *journal, CgroupReport *report);

/* After cgroup_root changed (a reload) and a pass built the new tree: the
 * old tree goes, journal-driven, as a restore would take it: what still
 * sits in its cgroups is moved out (a forked child back with its parent's
 * original, else to the nearest cgroup topod did not create), the cgroups
 * topod created there are removed, children first, and the controllers it
 * enabled there disabled; cgroups it did not create stay, and so do those
 * on the path down to the new root (env->cgroup_root). Their entries are
 * forgotten and the journal committed. The number of items that failed,
 * or a negative errno; 0 when old_root is the new one. */
int cgroup_retire_root(const CgroupEnv *env, Journal *journal, const char *old_root, CgroupReport *report);

/* The threads now in the cgroups topod created (the journal's "cgroup"
 * entries: their cgroup.threads), sorted, each once: for what they may
 * have inherited from a process topod placed. A cgroup gone meanwhile
 * has none. 0, or negative errno (*ret NULL). */
int cgroup_created_threads(const CgroupEnv *env, const Journal *journal, pid_t **ret, size_t *ret_n);

/* ── The fast path: a few processes into groups that exist ──
 *
 * For the processes topod places between two passes (decide/place.h): into
 * leaf groups of the last plan, which the last reconcile created. Nothing of
 * the tree is created or written here; a group that has gone fails the move
 * (ENOENT) and the next pass rebuilds it. Two steps around ONE journal
 * commit for a whole batch:
 *   cgroup_move_prepare  takes a handle on each process's main thread
 *                        (tgid + start time, as for the plan's moves), reads
 *                        where it is, and records the original cgroup of
 *                        each one that will move (not committed);
 *   (the caller records anything else, such as cookies, and commits once)
 *   cgroup_move_finish   writes each tgid to its group's cgroup.procs and
 *                        lets go of the handles (but those kept for the
 *                        caller: keep_ref). A move is done when the
 *                        kernel took the write and the thread lived
 *                        throughout (checked right after, or, check_later,
 *                        by the caller after its next act on the thread:
 *                        cgroup_move_settle()); the read-back of proc/<pid>/cgroup is
 *                        left to the next pass, which checks every process. An entry recorded for a process
 *                        that did not move is forgotten but not committed
 *                        (on disk it is harmless: restoring it finds the
 *                        process gone or where it already is).
 * Each move is one CGROUP_ITEM_MOVE in the report. */
typedef struct CgroupMove {
        pid_t tgid;
        uint64_t start_time; /* of its main thread; 0: whatever process holds tgid now
                              * (set by cgroup_move_prepare() once its handle is taken:
                              * its start time, or where the pidref ops make pidfs
                              * identities, PIDREF_IDENT_PIDFS | its pidfd's inode) */
        const char *group;   /* the Plan group's path, below cgroup_root */
        bool by_start_time;  /* learn the start time even where pidfs identities are made */
        bool keep_ref;       /* cgroup_move_finish() leaves the handle taken (ref, if any)
                              * to the caller, who releases it (cgroup_moves_release()) */
        bool check_later;    /* with keep_ref: the caller acts on the kept handle next and
                              * checks it alive after that act, which tells for this move
                              * too (one check, not two): cgroup_move_finish() reports a
                              * write the kernel took as done, unchecked, and the caller
                              * settles it (cgroup_move_settle()) */

        /* Set by cgroup_move_prepare(), for cgroup_move_finish(). */
        size_t item;         /* its result in the report */
        bool pending;        /* to be written */
        bool recorded;       /* a journal entry was made for it by this batch */
        bool unchecked;      /* set by cgroup_move_finish(): written, not yet checked
                              * (check_later) */
        PidRef ref;
} CgroupMove;

/* Returns the number of failed items, or a negative errno when it could not
 * run (-ENOENT no cgroup2 mount, -EINVAL a bad cgroup_root, -ENOMEM); then
 * the handles taken so far are released by cgroup_move_finish() all the
 * same (call it with journal_error < 0), but those kept (keep_ref), which
 * cgroup_moves_release() lets go of. */
int cgroup_move_prepare(const CgroupEnv *env, const char *cgroup_root, CgroupMove *moves, size_t n, Journal *journal,
                        CgroupReport *report);
/* journal_error: the commit's result; when negative nothing is written and
 * every pending move fails with it. Returns the number of failed items (a
 * move left unchecked is not one of them: cgroup_move_settle() tells), or
 * -ENOMEM. Releases every handle but those kept (keep_ref) of processes
 * that were moved or found there already. */
int cgroup_move_finish(const CgroupEnv *env, CgroupMove *moves, size_t n, Journal *journal, int journal_error,
                       CgroupReport *report);
/* A move cgroup_move_finish() left unchecked (CgroupMove.unchecked) settled
 * by the caller's check after its own act on the kept handle: alive 1 (it
 * lived then, so throughout the move), 0 (gone: the move's outcome is
 * CGROUP_VANISHED), or negative when the caller made no such check (its act
 * failed or never came): then the handle is checked here. Returns the move's
 * outcome; for a move not left unchecked, the outcome it has. */
CgroupOutcome cgroup_move_settle(const CgroupEnv *env, CgroupMove *m, int alive, CgroupReport *report);
/* Release every handle left (keep_ref), on any path. */
void cgroup_moves_release(CgroupMove *moves, size_t n, FdBin *bin);

/* Forget the "task" entries of processes that have exited, so that the
 * journal (rewritten whole on each commit) holds the living and does not
 * grow with every process that ever passed through topod's groups. A
 * process the plan places with the same main-thread start time lives; for
 * the others proc/<tgid>/task/<tgid>/stat is read (past 32 of them, a
 * listing of /proc first: a number not listed is gone, unread). One that
 * has exited and waits for its parent (a zombie, no thread left) is gone
 * too. An entry known by its
 * pidfd's inode (the fast path's, pidref.h) is pinned by it: gone, it is
 * forgotten; alive, it is named by its start time from then on, so that it
 * is found planned by the next prune. An entry of a process the yield
 * hooks know changed since the scan, or left by it (yield_known_changed()),
 * waits for the next prune. The cookie entries under the names of the
 * task entries forgotten go with them, and, past 32 of them, the cookie
 * entries named by a pidfd's inode (main threads) whose tid /proc does not
 * list. Not committed. Returns the number of task entries forgotten. */
int cgroup_journal_prune(const CgroupEnv *env, const Plan *plan, Journal *journal);

/* Let go of the journaled processes the plan no longer places whose group
 * it no longer has either (their policy left force, or a reload removed
 * it): each goes back where it came from (or the nearest live cgroup above
 * that topod did not make), as a restore does, and its entry is forgotten.
 * Left alone: processes the plan places (by any thread), those in one of
 * its groups (a group of a policy in force stays while empty, so a class
 * that flickers or a process the scan could not read is not let go),
 * those outside topod's cgroups, entries named by a pidfd's inode (the
 * next prune names them), and processes changed since the scan (the
 * conservative yield_changed()). Call after cgroup_journal_prune(). Not
 * committed. */
int cgroup_release_unplanned(const CgroupEnv *env, const Plan *plan, Journal *journal, CgroupReport *report);
