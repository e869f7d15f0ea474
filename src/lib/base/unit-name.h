/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* systemd unit names, as they appear in cgroup paths: which units a cgroup
 * path passes through, the unit a process belongs to, and the slice names
 * (and their cgroup paths) of topod's own groups. Pure string work, shared
 * by the scope (what topod may touch), the match key `unit =` and the
 * systemd driver.
 *
 * Rules, as systemd(1) and systemd.slice(5) give them:
 *   - a unit name is "<prefix>.<type>", the prefix of the characters
 *     [A-Za-z0-9:_.\\-@], at most UNIT_NAME_MAX bytes in all;
 *   - a slice's cgroup sits below its parents: "a-b.slice" is at
 *     "/a.slice/a-b.slice"; "-.slice" is the root cgroup "/";
 *   - the unit of a cgroup path is its first component below the slices
 *     that is a unit name (".../foo.service/sub" belongs to foo.service);
 *     a path of slices alone belongs to its last slice. */

#include <stdbool.h>
#include <stddef.h>

#define UNIT_NAME_MAX 255u

typedef enum UnitType {
        UNIT_TYPE_SERVICE,
        UNIT_TYPE_SCOPE,
        UNIT_TYPE_SLICE,
        _UNIT_TYPE_MAX,
        UNIT_TYPE_INVALID = -1,
} UnitType;

/* The type of a valid unit name of one of the kinds that own cgroups, or
 * UNIT_TYPE_INVALID (not a valid name, or another type). */
UnitType unit_name_type(const char *name, size_t len);
bool unit_name_is_valid(const char *name, size_t len);

/* The units along a cgroup path (components that are valid unit names of a
 * cgroup-owning type), from the top down, at most max: their number. Each
 * item points into path (ret[i].name, ret[i].len: not NUL-terminated). */
typedef struct UnitRef {
        const char *name;
        size_t len;
        UnitType type;
} UnitRef;
size_t unit_path_units(const char *path, UnitRef *ret, size_t max);

/* The unit a process in the cgroup path belongs to (see above): 0 and *ret
 * set, or -ENXIO when the path passes through no unit ("/", a cgroup not
 * made by systemd). */
int unit_from_cgroup(const char *path, UnitRef *ret);

/* A slice's cgroup path: "a-b-c.slice" → "/a.slice/a-b.slice/a-b-c.slice",
 * "-.slice" → "/". -EINVAL for a name that is not a valid slice name (an
 * empty part: "a--b.slice", "-a.slice"); -ENOMEM. */
int unit_slice_cgroup_path(const char *slice, char **ret);

/* One part of a slice name, escaped the way systemd-escape does (every
 * byte outside [A-Za-z0-9:_.] and a leading '.' as "\xNN"; '-' too, since
 * in a slice name it divides the levels): "latency-services" →
 * "latency\x2dservices". Returns a new string or NULL (out of memory). */
char *unit_name_escape_part(const char *s);
