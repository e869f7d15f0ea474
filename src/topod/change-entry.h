/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One change topod made or undid, as the journal gets it: structured
 * fields (TOPOD_POLICY=, TOPOD_GROUP=, TOPOD_PID=, TOPOD_ACTION=,
 * TOPOD_RESULT=, TOPOD_UNIT=, …) and a MESSAGE= for people. Pure: the
 * daemon (changes.c) fills the entry from what apply reported, this builds
 * the text, log.c sends it. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "apply/reconcile.h"

/* TOPOD_ACTION=: what was changed, or, for what was undone, how. */
typedef enum ChangeAction {
        CHANGE_MOVE,     /* a process into a group */
        CHANGE_COOKIE,   /* a cookie given */
        CHANGE_PROPERTY, /* a cgroup attribute or unit property set */
        CHANGE_CREATE,   /* a cgroup made, a unit started */
        CHANGE_REMOVE,   /* a cgroup removed, a unit stopped */
        CHANGE_FEATURE,  /* a sched_feat switch */
        CHANGE_SETTING,  /* cgroup_mode, a sched/ setting */
        CHANGE_RESTORE,  /* put back on stop or reset (TOPOD_KIND= says what) */
        CHANGE_RELEASE,  /* let go while running: no policy wants it any longer */
        _CHANGE_ACTION_MAX,
} ChangeAction;

typedef struct ChangeEntry {
        ReconcileKind kind;     /* not NONE */
        bool undo;              /* put back, or let go */
        bool restoring;         /* undone by a restore (else: let go) */
        ReconcileStatus result;
        const char *policy;     /* the policy's name, NULL: none known */
        const char *group;      /* topod's group (its cgroup path), NULL */
        const char *cgroup;     /* the cgroup moved to or written, or the unit name; NULL */
        const char *unit;       /* the systemd unit involved, NULL: derived from cgroup */
        pid_t pid;              /* 0: none */
        const char *comm;       /* NULL: not known */
        const char *what;       /* the report's text of the item */
        const char *reason;     /* NULL */
        int error;              /* negative errno, 0 */
} ChangeEntry;

ChangeAction change_action(const ChangeEntry *e);
/* "move", "cookie", …, "restore", "release". */
const char *change_action_to_string(ChangeAction a);
/* "moves", "cookies", …: for the rate limit's count. */
const char *change_action_plural(ChangeAction a);
/* The priority an entry is logged at: LOG_INFO for a change done or
 * failed, LOG_DEBUG for what was already so, skipped or gone. */
int change_priority(const ChangeEntry *e);

/* The unit a cgroup path or name is about: its last component when that
 * is a unit name (crunch.service, topod-x.slice, lab.scope), else NULL.
 * Points into cgroup. */
const char *change_unit_of(const char *cgroup);

#define CHANGE_FIELDS_MAX 16

/* The journal fields, "NAME=value" each (MESSAGE= among them), and the
 * message alone (what stderr gets). */
typedef struct ChangeFields {
        char *fields[CHANGE_FIELDS_MAX];
        size_t n;
        char *message; /* points into the MESSAGE= field */
} ChangeFields;

/* 0, or -ENOMEM (ret emptied). */
int change_fields_build(const ChangeEntry *e, ChangeFields *ret);
/* The summary a rate limit says after holding back n about action
 * ("suppressed 532 messages about moves in the last 10 s"). */
int change_fields_suppressed(ChangeAction a, unsigned n, unsigned interval_sec, ChangeFields *ret);
void change_fields_done(ChangeFields *f);
