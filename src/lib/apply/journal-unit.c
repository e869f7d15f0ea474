/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The journal's entries of the systemd driver: the transient units topod
 * created and the properties it set on units it did not create (journal.h
 * describes both). Its own file: journal.c's indexed kinds are the many
 * entries of the fast path; these are few (a unit each), searched
 * linearly, and always written to the file whole, never to the log. */
#include "journal.h"

#include <stdlib.h>
#include <string.h>

#include "apply/journal-internal.h"
#include "base/unit-name.h"
#include "base/util.h"

static bool prop_valid(const char *p) {
        return streq(p, "AllowedCPUs") || streq(p, "AllowedMemoryNodes") || streq(p, "CPUWeight");
}

/* "" or a token of the file: no space, no control character, no "-"
 * alone (the file's "not set"), bounded. */
static bool value_valid(const char *v) {
        size_t n = strlen(v);

        if (n >= JOURNAL_NAME_MAX * 16 || streq(v, "-"))
                return false;
        for (const char *c = v; *c; c++)
                if ((unsigned char) *c <= 0x20 || *c == 0x7f)
                        return false;
        return true;
}

static ssize_t find_unit(const Journal *j, const char *name) {
        for (size_t i = 0; i < j->n_units; i++)
                if (streq(j->units[i], name))
                        return (ssize_t) i;
        return -1;
}

static ssize_t find_prop(const Journal *j, const char *unit, const char *property) {
        for (size_t i = 0; i < j->n_unit_props; i++)
                if (streq(j->unit_props[i].unit, unit) && streq(j->unit_props[i].property, property))
                        return (ssize_t) i;
        return -1;
}

static void prop_done(JournalUnitProp *p) {
        free(p->unit);
        free(p->property);
        free(p->original);
        free(p->written);
}

bool journal_has_unit(const Journal *j, const char *name) {
        return find_unit(j, name) >= 0;
}

int journal_record_unit(Journal *j, const char *name) {
        char **n;
        char *s;

        if (!unit_name_is_valid(name, strlen(name)))
                return -EINVAL;
        if (find_unit(j, name) >= 0)
                return 0;
        if (journal_n_entries(j) >= JOURNAL_ENTRIES_MAX)
                return -E2BIG;
        n = realloc(j->units, (j->n_units + 1) * sizeof(char *));
        if (!n)
                return -ENOMEM;
        j->units = n;
        if (!(s = strdup(name)))
                return -ENOMEM;
        j->units[j->n_units++] = s;
        j->dirty = true;
        j->need_rewrite = true; /* the log holds none: the file does */
        return 1;
}

int journal_record_unit_prop(Journal *j, const char *unit, const char *property, const char *original,
                             const char *written) {
        JournalUnitProp p = {};
        JournalUnitProp *n;

        if (!unit_name_is_valid(unit, strlen(unit)) || !prop_valid(property) || !value_valid(original) ||
            !value_valid(written))
                return -EINVAL;
        if (find_prop(j, unit, property) >= 0)
                return 0;
        if (journal_n_entries(j) >= JOURNAL_ENTRIES_MAX)
                return -E2BIG;
        n = realloc(j->unit_props, (j->n_unit_props + 1) * sizeof(JournalUnitProp));
        if (!n)
                return -ENOMEM;
        j->unit_props = n;
        p.unit = strdup(unit);
        p.property = strdup(property);
        p.original = strdup(original);
        p.written = strdup(written);
        if (!p.unit || !p.property || !p.original || !p.written) {
                prop_done(&p);
                return -ENOMEM;
        }
        j->unit_props[j->n_unit_props++] = p;
        j->dirty = true;
        j->need_rewrite = true;
        return 1;
}

int journal_update_unit_prop(Journal *j, const char *unit, const char *property, const char *written) {
        ssize_t pos = find_prop(j, unit, property);
        char *w;

        if (pos < 0)
                return 0;
        if (!value_valid(written))
                return -EINVAL;
        if (streq(j->unit_props[pos].written, written))
                return 1;
        if (!(w = strdup(written)))
                return -ENOMEM;
        free(j->unit_props[pos].written);
        j->unit_props[pos].written = w;
        j->dirty = true;
        j->need_rewrite = true;
        return 1;
}

int journal_release_unit_prop(Journal *j, const char *unit, const char *property, const char *found) {
        ssize_t pos = find_prop(j, unit, property);
        char *o;
        int k;

        if (pos < 0)
                return 0;
        if ((k = journal_update_unit_prop(j, unit, property, found)) < 0)
                return k;
        if (!(o = strdup(JOURNAL_UNIT_RELEASED)))
                return -ENOMEM;
        free(j->unit_props[pos].original);
        j->unit_props[pos].original = o;
        j->dirty = true;
        j->need_rewrite = true;
        return 1;
}

int journal_forget_unit(Journal *j, const char *name) {
        ssize_t pos = find_unit(j, name);

        if (pos < 0)
                return 0;
        free(j->units[pos]);
        memmove(j->units + pos, j->units + pos + 1, (j->n_units - (size_t) pos - 1) * sizeof(char *));
        j->n_units--;
        j->dirty = true;
        j->need_rewrite = true;
        return 1;
}

int journal_forget_unit_prop(Journal *j, const char *unit, const char *property) {
        ssize_t pos = find_prop(j, unit, property);
        JournalUnitProp *p;

        if (pos < 0)
                return 0;
        p = &j->unit_props[pos];
        prop_done(p);
        memmove(p, p + 1, (j->n_unit_props - (size_t) pos - 1) * sizeof(JournalUnitProp));
        j->n_unit_props--;
        j->dirty = true;
        j->need_rewrite = true;
        return 1;
}

const JournalUnitProp *journal_get_unit_prop(const Journal *j, const char *unit, const char *property) {
        ssize_t pos = find_prop(j, unit, property);

        return pos < 0 ? NULL : &j->unit_props[pos];
}

void journal_units_free(Journal *j) {
        for (size_t i = 0; i < j->n_units; i++)
                free(j->units[i]);
        free(j->units);
        for (size_t i = 0; i < j->n_unit_props; i++)
                prop_done(&j->unit_props[i]);
        free(j->unit_props);
}
