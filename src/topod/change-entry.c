/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "change-entry.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

ChangeAction change_action(const ChangeEntry *e) {
        if (e->undo)
                return e->restoring ? CHANGE_RESTORE : CHANGE_RELEASE;
        switch (e->kind) {
        case RECONCILE_KIND_COOKIE:
                return CHANGE_COOKIE;
        case RECONCILE_KIND_PROPERTY:
                return CHANGE_PROPERTY;
        case RECONCILE_KIND_CREATE:
                return CHANGE_CREATE;
        case RECONCILE_KIND_REMOVE:
                return CHANGE_REMOVE;
        case RECONCILE_KIND_FEATURE:
                return CHANGE_FEATURE;
        case RECONCILE_KIND_SETTING:
                return CHANGE_SETTING;
        default:
                return CHANGE_MOVE;
        }
}

const char *change_action_to_string(ChangeAction a) {
        static const char *const names[_CHANGE_ACTION_MAX] = {
                [CHANGE_MOVE] = "move",       [CHANGE_COOKIE] = "cookie",   [CHANGE_PROPERTY] = "property",
                [CHANGE_CREATE] = "create",   [CHANGE_REMOVE] = "remove",   [CHANGE_FEATURE] = "feature",
                [CHANGE_SETTING] = "setting", [CHANGE_RESTORE] = "restore", [CHANGE_RELEASE] = "release",
        };
        return (unsigned) a < _CHANGE_ACTION_MAX ? names[a] : "?";
}

const char *change_action_plural(ChangeAction a) {
        static const char *const names[_CHANGE_ACTION_MAX] = {
                [CHANGE_MOVE] = "moves",       [CHANGE_COOKIE] = "cookies",   [CHANGE_PROPERTY] = "properties",
                [CHANGE_CREATE] = "creations", [CHANGE_REMOVE] = "removals",  [CHANGE_FEATURE] = "features",
                [CHANGE_SETTING] = "settings", [CHANGE_RESTORE] = "restores", [CHANGE_RELEASE] = "releases",
        };
        return (unsigned) a < _CHANGE_ACTION_MAX ? names[a] : "?";
}

static const char *kind_name(ReconcileKind k) {
        static const char *const names[_RECONCILE_KIND_MAX] = {
                [RECONCILE_KIND_NONE] = "none",       [RECONCILE_KIND_MOVE] = "move",
                [RECONCILE_KIND_COOKIE] = "cookie",   [RECONCILE_KIND_PROPERTY] = "property",
                [RECONCILE_KIND_CREATE] = "create",   [RECONCILE_KIND_REMOVE] = "remove",
                [RECONCILE_KIND_FEATURE] = "feature", [RECONCILE_KIND_SETTING] = "setting",
        };
        return (unsigned) k < _RECONCILE_KIND_MAX ? names[k] : "?";
}

static const char *result_name(ReconcileStatus s) {
        static const char *const names[_RECONCILE_STATUS_MAX] = {
                [RECONCILE_DONE] = "done",       [RECONCILE_ALREADY] = "already", [RECONCILE_VANISHED] = "vanished",
                [RECONCILE_SKIPPED] = "skipped", [RECONCILE_FAILED] = "failed",
        };
        return (unsigned) s < _RECONCILE_STATUS_MAX ? names[s] : "?";
}

int change_priority(const ChangeEntry *e) {
        return e->result == RECONCILE_DONE || e->result == RECONCILE_FAILED ? LOG_INFO : LOG_DEBUG;
}

const char *change_unit_of(const char *cgroup) {
        static const char *const suffixes[] = { ".service", ".scope", ".slice", ".socket", ".mount", ".swap" };
        const char *last, *slash;
        size_t n;

        if (!cgroup)
                return NULL;
        slash = strrchr(cgroup, '/');
        last = slash ? slash + 1 : cgroup;
        n = strlen(last);
        for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
                size_t m = strlen(suffixes[i]);

                if (n > m && strcmp(last + n - m, suffixes[i]) == 0)
                        return last;
        }
        return NULL;
}

/* Appends one field; the caller checks f->n against the bound. */
static int add(ChangeFields *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int add(ChangeFields *f, const char *fmt, ...) {
        va_list ap;
        int k;

        if (f->n >= CHANGE_FIELDS_MAX)
                return -E2BIG;
        va_start(ap, fmt);
        k = vasprintf(&f->fields[f->n], fmt, ap);
        va_end(ap);
        if (k < 0) {
                f->fields[f->n] = NULL;
                return -ENOMEM;
        }
        f->n++;
        return 0;
}

void change_fields_done(ChangeFields *f) {
        for (size_t i = 0; i < f->n; i++)
                free(f->fields[i]);
        *f = (ChangeFields) {};
}

/* A name as a line may show it: control characters (a comm may hold a
 * newline) as '?', at most 63 bytes. */
static void printable(const char *s, char buf[static 64]) {
        size_t i = 0;

        for (; s && s[i] && i < 63; i++)
                buf[i] = (unsigned char) s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
        buf[i] = 0;
}

static const char *no_slash(const char *path) {
        return path && path[0] == '/' && path[1] ? path + 1 : path ?: "?";
}

static char *message(const ChangeEntry *e) {
        char comm[64], who[96], pol[160], tail[512];
        const char *grp = no_slash(e->group ?: e->cgroup), *dest = no_slash(e->cgroup);
        ReconcileStatus s = e->result;
        char *m = NULL;
        int k = -1;

        printable(e->comm, comm);
        if (comm[0])
                snprintf(who, sizeof(who), "%d (%s)", (int) e->pid, comm);
        else
                snprintf(who, sizeof(who), "%d", (int) e->pid);
        snprintf(pol, sizeof(pol), "%s%s%s", e->policy ? " [" : "", e->policy ?: "", e->policy ? "]" : "");
        if (s == RECONCILE_FAILED || s == RECONCILE_SKIPPED)
                snprintf(tail, sizeof(tail), "%s%s%s%s", e->reason || e->error ? ": " : "", e->reason ?: "",
                         e->reason && e->error ? ": " : "", e->error ? strerror(-e->error) : "");
        else
                tail[0] = 0;

        if (e->kind == RECONCILE_KIND_MOVE && !e->undo) {
                /* "<a><who><b><group><policy><why>" */
                static const char *const a[_RECONCILE_STATUS_MAX] = {
                        [RECONCILE_DONE] = "moved ", [RECONCILE_SKIPPED] = "left ",
                        [RECONCILE_FAILED] = "could not move ",
                };
                static const char *const b[_RECONCILE_STATUS_MAX] = {
                        [RECONCILE_DONE] = " to ",           [RECONCILE_ALREADY] = " already in ",
                        [RECONCILE_VANISHED] = " exited before its move to ", [RECONCILE_SKIPPED] = " out of ",
                        [RECONCILE_FAILED] = " to ",
                };
                k = asprintf(&m, "%s%s%s%s%s%s", a[s] ?: "", who, b[s], grp, pol, tail);
        } else if (e->kind == RECONCILE_KIND_MOVE) {
                static const char *const a[_RECONCILE_STATUS_MAX] = {
                        [RECONCILE_DONE] = "moved ", [RECONCILE_SKIPPED] = "left ",
                        [RECONCILE_FAILED] = "could not move ",
                };
                static const char *const b[_RECONCILE_STATUS_MAX] = {
                        [RECONCILE_DONE] = " back to ",           [RECONCILE_ALREADY] = " already back in ",
                        [RECONCILE_VANISHED] = " exited before its move back to ",
                        [RECONCILE_SKIPPED] = " where it is, not moved back to ", [RECONCILE_FAILED] = " back to ",
                };
                k = asprintf(&m, "%s%s%s%s%s%s%s%s", a[s] ?: "", who, b[s], dest,
                             s == RECONCILE_DONE && e->group ? " from " : "", s == RECONCILE_DONE && e->group ? grp : "",
                             pol, tail);
        } else if (e->kind == RECONCILE_KIND_COOKIE) {
                /* "<a><who><b><policy><why>" */
                static const char *const give_a[_RECONCILE_STATUS_MAX] = {
                        [RECONCILE_DONE] = "gave ", [RECONCILE_SKIPPED] = "gave ",
                        [RECONCILE_FAILED] = "could not give ",
                };
                static const char *const give_b[_RECONCILE_STATUS_MAX] = {
                        [RECONCILE_DONE] = " a core-scheduling cookie",
                        [RECONCILE_ALREADY] = " already has its core-scheduling cookie",
                        [RECONCILE_VANISHED] = " exited before it got its core-scheduling cookie",
                        [RECONCILE_SKIPPED] = " no core-scheduling cookie",
                        [RECONCILE_FAILED] = " a core-scheduling cookie",
                };
                static const char *const clear_a[_RECONCILE_STATUS_MAX] = {
                        [RECONCILE_DONE] = "cleared the core-scheduling cookie of ",
                        [RECONCILE_SKIPPED] = "left the core-scheduling cookie of ",
                        [RECONCILE_FAILED] = "could not clear the core-scheduling cookie of ",
                };
                static const char *const clear_b[_RECONCILE_STATUS_MAX] = {
                        [RECONCILE_ALREADY] = " has no core-scheduling cookie already",
                        [RECONCILE_VANISHED] = " exited before its core-scheduling cookie was cleared",
                };
                k = asprintf(&m, "%s%s%s%s%s", (e->undo ? clear_a : give_a)[s] ?: "", who,
                             (e->undo ? clear_b : give_b)[s] ?: "", pol, tail);
        } else {
                static const char *const how[_RECONCILE_STATUS_MAX] = {
                        [RECONCILE_ALREADY] = "already so",
                        [RECONCILE_VANISHED] = "gone",
                        [RECONCILE_SKIPPED] = "skipped",
                        [RECONCILE_FAILED] = "could not change",
                };
                const char *verb = how[s];

                if (s == RECONCILE_DONE)
                        verb = e->undo ? (e->restoring ? "put back" : "let go")
                               : e->kind == RECONCILE_KIND_CREATE ? "created"
                               : e->kind == RECONCILE_KIND_REMOVE ? "removed"
                               : e->kind == RECONCILE_KIND_PROPERTY ? "set"
                                                                    : "switched";
                const char *w = e->what ?: "?";
                int n = (int) strlen(w);

                while (n > 0 && w[n - 1] == ' ') /* "unit x: back CPUWeight " with no value */
                        n--;
                k = asprintf(&m, "%s: %.*s%s%s", verb, n, w, pol, tail);
        }
        return k < 0 ? NULL : m;
}

int change_fields_build(const ChangeEntry *e, ChangeFields *ret) {
        ChangeFields f = {};
        const char *unit = e->unit ?: change_unit_of(e->cgroup);
        char comm[64];
        char *m;
        int k = 0;

        if ((unsigned) e->result >= _RECONCILE_STATUS_MAX)
                return -EINVAL;
        m = message(e);
        if (!m)
                return -ENOMEM;
        printable(e->comm, comm);
        if (asprintf(&f.fields[f.n], "MESSAGE=%s", m) < 0) {
                free(m);
                return -ENOMEM;
        }
        free(m);
        f.message = f.fields[f.n++] + strlen("MESSAGE=");
        if ((k = add(&f, "TOPOD_ACTION=%s", change_action_to_string(change_action(e)))) < 0 ||
            (k = add(&f, "TOPOD_KIND=%s", kind_name(e->kind))) < 0 ||
            (k = add(&f, "TOPOD_RESULT=%s", result_name(e->result))) < 0 ||
            (e->policy && (k = add(&f, "TOPOD_POLICY=%s", e->policy)) < 0) ||
            (e->group && (k = add(&f, "TOPOD_GROUP=%s", e->group)) < 0) ||
            (e->pid > 0 && (k = add(&f, "TOPOD_PID=%d", (int) e->pid)) < 0) ||
            (comm[0] && (k = add(&f, "TOPOD_COMM=%s", comm)) < 0) ||
            (unit && (k = add(&f, "TOPOD_UNIT=%s", unit)) < 0) ||
            (e->cgroup && e->cgroup[0] == '/' && (k = add(&f, "TOPOD_CGROUP=%s", e->cgroup)) < 0) ||
            (e->what && (k = add(&f, "TOPOD_WHAT=%s", e->what)) < 0) ||
            (e->reason && (k = add(&f, "TOPOD_REASON=%s", e->reason)) < 0) ||
            (e->error < 0 && (k = add(&f, "ERRNO=%d", -e->error)) < 0)) {
                change_fields_done(&f);
                return k;
        }
        *ret = f;
        return 0;
}

int change_fields_suppressed(ChangeAction a, unsigned n, unsigned interval_sec, ChangeFields *ret) {
        ChangeFields f = {};
        int k;

        if ((k = add(&f, "MESSAGE=suppressed %u messages about %s in the last %u s", n, change_action_plural(a),
                     interval_sec)) < 0)
                return k;
        f.message = f.fields[0] + strlen("MESSAGE=");
        if ((k = add(&f, "TOPOD_ACTION=%s", change_action_to_string(a))) < 0 ||
            (k = add(&f, "TOPOD_SUPPRESSED=%u", n)) < 0) {
                change_fields_done(&f);
                return k;
        }
        *ret = f;
        return 0;
}
