/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* uid → user name from the root's etc/passwd, for [match] user = NAME. Read
 * directly (not through NSS) so a fake root works and no lookups hit the
 * network; users only in LDAP match by number. */

#include <sys/types.h>

#include "base/macro.h"
#include "base/root.h"

#define USERS_FILE_MAX (4u * 1024u * 1024u)

typedef struct UserTable UserTable;

/* A missing passwd file gives an empty table. */
int users_load(const Root *root, UserTable **ret);
UserTable *users_free(UserTable *u);
DEFINE_TRIVIAL_CLEANUP_FUNC(UserTable *, users_free);
/* NULL when unknown. */
const char *users_name(const UserTable *u, uid_t uid);

/* Pure: parse passwd(5) text. */
int users_parse(const char *text, UserTable **ret);
