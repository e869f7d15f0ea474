/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The journal's text: formatting the file and the log's blocks, and parsing
 * them back (the format is described in journal.h). Pure: text in, a
 * Journal out, and the other way; the files themselves are
 * journal-file.c's. It is a file of its own as the parser of outside
 * input (a file left by a crash) that the fuzzer builds without them. */
#include "journal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply/journal-internal.h"
#include "apply/pidref.h"
#include "base/util.h"

/* A path escapes to at most four bytes per byte; the rest of a line is short. */
#define JOURNAL_LINE_MAX (128u + 4u * JOURNAL_PATH_MAX)
#define JOURNAL_HEADER "topod-journal"
#define JOURNAL_LOG_HEADER "topod-journal-log"
#define JOURNAL_LOG_VERSION 2u /* 2: "pidfs:INODE" identities; 1 (none) is read and written too */

/* ---- formatting --------------------------------------------------------- */

static bool must_escape(unsigned char c) {
        return c <= 0x20 || c == 0x7f || c == '\\';
}

/* The text of a file or a log block, built by hand rather than through
 * stdio (a memstream and fprintf): the fast path formats a block at every
 * placement, and for lines this simple stdio's overhead would be a large
 * share of what a placement costs. */
typedef struct Text {
        char *buf;
        size_t len, cap;
        bool oom;
} Text;

static void text_put(Text *t, const char *s, size_t n) {
        if (t->oom)
                return;
        if (t->len + n + 1 > t->cap) {
                size_t cap = MAX(t->cap * 2, t->len + n + 1);
                char *b = realloc(t->buf, MAX(cap, (size_t) 256));

                if (!b) {
                        t->oom = true;
                        return;
                }
                t->buf = b;
                t->cap = MAX(cap, (size_t) 256);
        }
        memcpy(t->buf + t->len, s, n);
        t->len += n;
        t->buf[t->len] = '\0';
}

static void text_str(Text *t, const char *s) {
        text_put(t, s, strlen(s));
}

static void text_u64(Text *t, uint64_t v) {
        char d[20];
        size_t i = sizeof(d);

        do
                d[--i] = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        text_put(t, d + i, sizeof(d) - i);
}

static void text_i64(Text *t, int64_t v) {
        if (v < 0) {
                text_put(t, "-", 1);
                text_u64(t, (uint64_t) -(v + 1) + 1);
        } else
                text_u64(t, (uint64_t) v);
}

/* Runs of plain bytes are copied whole. */
static void put_escaped(Text *t, const char *s) {
        static const char hex[] = "0123456789abcdef";
        const unsigned char *c = (const unsigned char *) s;

        while (*c) {
                const unsigned char *run = c;

                while (*c && !must_escape(*c))
                        c++;
                if (c > run)
                        text_put(t, (const char *) run, (size_t) (c - run));
                if (*c) {
                        char e[4] = { '\\', 'x', hex[*c >> 4], hex[*c & 15] };

                        text_put(t, e, sizeof(e));
                        c++;
                }
        }
}

/* Who a thread is: its start time, or "pidfs:INODE" (pidref.h). */
static void put_ident(Text *t, uint64_t start_time) {
        if (pidref_ident_is_pidfs(start_time)) {
                text_str(t, "pidfs:");
                start_time &= ~PIDREF_IDENT_PIDFS;
        }
        text_u64(t, start_time);
}

/* "KIND TID IDENT", the start of a task or cookie line. */
static void put_thread(Text *t, const char *kind, pid_t tid, uint64_t start_time) {
        text_str(t, kind);
        text_i64(t, tid);
        text_put(t, " ", 1);
        put_ident(t, start_time);
}

/* The entries from the given positions on (the whole journal: all zero),
 * in the file's order. Returns how many. */
static size_t format_entries(Text *t, const Journal *j, const size_t from[4], bool mode, bool settings) {
        size_t n = 0;

        for (size_t i = from[0]; i < j->n_features; i++, n++) {
                text_str(t, "feature ");
                text_str(t, j->features[i].name);
                text_str(t, j->features[i].on ? " on\n" : " off\n");
        }
        if (mode && j->cgroup_mode) {
                text_str(t, "cgroup_mode ");
                text_str(t, j->cgroup_mode);
                text_put(t, "\n", 1);
                n++;
        }
        for (size_t i = 0; settings && i < j->n_settings; i++, n++) {
                text_str(t, "setting ");
                text_str(t, j->settings[i].file);
                text_put(t, " ", 1);
                text_str(t, j->settings[i].value);
                text_put(t, "\n", 1);
        }
        for (size_t i = from[1]; i < j->n_tasks; i++, n++) {
                put_thread(t, "task ", j->tasks[i].tid, j->tasks[i].start_time);
                text_put(t, " ", 1);
                put_escaped(t, j->tasks[i].cgroup);
                text_put(t, "\n", 1);
        }
        for (size_t i = from[2]; i < j->n_cookies; i++, n++) {
                put_thread(t, "cookie ", j->cookies[i].tid, j->cookies[i].start_time);
                text_put(t, "\n", 1);
        }
        for (size_t i = from[3]; i < j->n_cgroups; i++, n++) {
                text_str(t, "cgroup ");
                put_escaped(t, j->cgroups[i]);
                text_put(t, "\n", 1);
        }
        /* The systemd driver's, with settings: in the file alone. */
        for (size_t i = 0; settings && i < j->n_units; i++, n++) {
                text_str(t, "unit ");
                put_escaped(t, j->units[i]);
                text_put(t, "\n", 1);
        }
        for (size_t i = 0; settings && i < j->n_unit_props; i++, n++) {
                const JournalUnitProp *p = &j->unit_props[i];

                text_str(t, "unitprop ");
                put_escaped(t, p->unit);
                text_put(t, " ", 1);
                text_str(t, p->property);
                text_put(t, " ", 1);
                text_str(t, *p->original ? p->original : "-");
                text_put(t, " ", 1);
                text_str(t, *p->written ? p->written : "-");
                text_put(t, "\n", 1);
        }
        return n;
}

/* The oldest version that says what the entries from the given positions
 * on say: 2 only with pidfs names, so that a journal without them stays
 * readable by a topod before them. */
unsigned journal_entries_version(const Journal *j, const size_t from[4]) {
        for (size_t i = from[1]; i < j->n_tasks; i++)
                if (pidref_ident_is_pidfs(j->tasks[i].start_time))
                        return 2;
        for (size_t i = from[2]; i < j->n_cookies; i++)
                if (pidref_ident_is_pidfs(j->cookies[i].start_time))
                        return 2;
        return 1;
}

static void put_end(Text *t, size_t n) {
        text_str(t, "end ");
        text_u64(t, n);
        text_put(t, "\n", 1);
}

int journal_format(const Journal *j, char **ret, size_t *ret_len) {
        static const size_t all[4] = {};
        _cleanup_free_ char *buf = NULL;
        Text t = {};

        text_str(&t, JOURNAL_HEADER " ");
        /* Settings (3) only here: the log never holds them. */
        text_u64(&t, j->n_units > 0 || j->n_unit_props > 0 ? 4
                     : j->n_settings > 0                   ? 3
                                                           : journal_entries_version(j, all));
        text_put(&t, "\n", 1);
        if (j->boot_id) {
                text_str(&t, "boot ");
                text_str(&t, j->boot_id);
                text_put(&t, "\n", 1);
        }
        for (size_t i = 0; i < j->n_cgroup_roots; i++) {
                text_str(&t, "cgroup_root ");
                put_escaped(&t, j->cgroup_roots[i]);
                text_put(&t, "\n", 1);
        }
        (void) format_entries(&t, j, all, true, true);
        put_end(&t, journal_n_entries(j));
        buf = t.buf;
        if (t.oom)
                return -ENOMEM;
        if (t.len > JOURNAL_SIZE_MAX)
                return -EFBIG;
        *ret = TAKE_PTR(buf);
        if (ret_len)
                *ret_len = t.len;
        return 0;
}

int journal_format_log_block(const Journal *j, bool header, unsigned version, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t n;
        Text t = {};

        if (header) {
                text_str(&t, JOURNAL_LOG_HEADER " ");
                text_u64(&t, version);
                text_put(&t, " ", 1);
                text_u64(&t, j->file_ino);
                text_put(&t, " ", 1);
                text_u64(&t, j->file_size);
                text_put(&t, "\n", 1);
        }
        n = format_entries(&t, j, j->committed, !j->committed_mode, false);
        put_end(&t, n);
        buf = t.buf;
        if (t.oom)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        *ret_len = t.len;
        return 0;
}

/* ---- parsing ------------------------------------------------------------ */

int journal_parse_error(JournalError *e, unsigned line, int err, const char *fmt, ...) {
        va_list ap;

        if (e) {
                e->line = line;
                va_start(ap, fmt);
                vsnprintf(e->message, sizeof(e->message), fmt, ap);
                va_end(ap);
        }
        return err;
}

static int hexval(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Undo \xHH in place. false on a bad or NUL escape. */
static bool unescape(char *s) {
        char *w = s;

        for (const char *r = s; *r; r++) {
                if (*r != '\\') {
                        *w++ = *r;
                        continue;
                }
                int hi, lo;
                if (r[1] != 'x' || (hi = hexval(r[2])) < 0 || (lo = hexval(r[3])) < 0 || (hi == 0 && lo == 0))
                        return false;
                *w++ = (char) (hi * 16 + lo);
                r += 3;
        }
        *w = '\0';
        return true;
}

#define TOKENS_MAX 5

/* Split a line (NUL-terminated, no newline) on single spaces. -1 when a
 * token is empty, a byte is a control character, or there are too many. */
static int split_line(char *line, char *tok[TOKENS_MAX]) {
        int n = 0;

        for (char *c = line; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        return -1;
        for (char *p = line;;) {
                char *sp = strchr(p, ' ');

                if (n == TOKENS_MAX || (sp ? sp == p : !*p))
                        return -1;
                tok[n++] = p;
                if (!sp)
                        return n;
                *sp = '\0';
                p = sp + 1;
        }
}

/* Line by line through text[*pos, end), which ends with a newline: the
 * next line copied into line (JOURNAL_LINE_MAX + 1 bytes) and split into
 * tok. The number of tokens; -E2BIG for a line longer than
 * JOURNAL_LINE_MAX, -EBADMSG for one split_line() refuses. */
static int next_line(const char *text, size_t end, size_t *pos, char *line, char *tok[TOKENS_MAX]) {
        const char *nl = memchr(text + *pos, '\n', end - *pos);
        size_t n = (size_t) (nl - (text + *pos)); /* nl exists: the text ends with one */
        int ntok;

        if (n > JOURNAL_LINE_MAX)
                return -E2BIG;
        memcpy(line, text + *pos, n);
        line[n] = '\0';
        *pos += n + 1;
        ntok = split_line(line, tok);
        return ntok < 0 ? -EBADMSG : ntok;
}

static int parse_tid(const char *s, pid_t *ret) {
        uint64_t v;

        if (!parse_u64_decimal(s, INT32_MAX, &v) || v == 0)
                return -1;
        *ret = (pid_t) v;
        return 0;
}

/* A start time, or "pidfs:INODE" (version 2). */
static bool parse_ident(const char *s, uint64_t *ret) {
        uint64_t v;

        if (startswith(s, "pidfs:")) {
                if (!parse_u64_decimal(s + strlen("pidfs:"), PIDREF_IDENT_PIDFS - 1, &v) || v == 0)
                        return false;
                *ret = PIDREF_IDENT_PIDFS | v;
                return true;
        }
        return parse_u64_decimal(s, PIDREF_IDENT_PIDFS - 1, ret);
}

static const char *record_what(int k) {
        return k == -E2BIG ? "too many entries" : k == -ENOMEM ? "out of memory" : "invalid value";
}

/* One entry line into j. */
static int parse_entry(Journal *j, char **tok, int n, unsigned lineno, JournalError *e) {
        const char *kind = tok[0];
        uint64_t start;
        pid_t tid;
        int k;

        if (streq(kind, "feature")) {
                if (n != 3 || !(streq(tok[2], "on") || streq(tok[2], "off")))
                        return journal_parse_error(e, lineno, -EBADMSG, "expected \"feature NAME on|off\"");
                k = journal_record_feature(j, tok[1], streq(tok[2], "on"));
        } else if (streq(kind, "cgroup_mode")) {
                if (n != 2)
                        return journal_parse_error(e, lineno, -EBADMSG, "expected \"cgroup_mode MODE\"");
                k = journal_record_cgroup_mode(j, tok[1]);
        } else if (streq(kind, "setting")) {
                if (n != 3)
                        return journal_parse_error(e, lineno, -EBADMSG, "expected \"setting FILE VALUE\"");
                k = journal_record_setting(j, tok[1], tok[2]);
        } else if (streq(kind, "task") || streq(kind, "cookie")) {
                bool task = streq(kind, "task");

                if (n != (task ? 4 : 3))
                        return journal_parse_error(e, lineno, -EBADMSG, task ? "expected \"task TID START_TIME PATH\"" :
                                                                               "expected \"cookie TID START_TIME\"");
                if (parse_tid(tok[1], &tid) < 0)
                        return journal_parse_error(e, lineno, -EBADMSG, "invalid thread id");
                if (!parse_ident(tok[2], &start))
                        return journal_parse_error(e, lineno, -EBADMSG, "invalid start time");
                if (task) {
                        if (!unescape(tok[3]))
                                return journal_parse_error(e, lineno, -EBADMSG, "invalid escape in path");
                        k = journal_record_task(j, tid, start, tok[3]);
                } else
                        k = journal_record_cookie(j, tid, start);
        } else if (streq(kind, "cgroup")) {
                if (n != 2)
                        return journal_parse_error(e, lineno, -EBADMSG, "expected \"cgroup PATH\"");
                if (!unescape(tok[1]))
                        return journal_parse_error(e, lineno, -EBADMSG, "invalid escape in path");
                k = journal_record_cgroup(j, tok[1]);
        } else if (streq(kind, "unit")) {
                if (n != 2)
                        return journal_parse_error(e, lineno, -EBADMSG, "expected \"unit NAME\"");
                if (!unescape(tok[1]))
                        return journal_parse_error(e, lineno, -EBADMSG, "invalid escape in unit name");
                k = journal_record_unit(j, tok[1]);
        } else if (streq(kind, "unitprop")) {
                if (n != 5)
                        return journal_parse_error(e, lineno, -EBADMSG,
                                                   "expected \"unitprop UNIT PROPERTY ORIGINAL WRITTEN\"");
                if (!unescape(tok[1]))
                        return journal_parse_error(e, lineno, -EBADMSG, "invalid escape in unit name");
                k = journal_record_unit_prop(j, tok[1], tok[2], streq(tok[3], "-") ? "" : tok[3],
                                             streq(tok[4], "-") ? "" : tok[4]);
        } else if (streq(kind, "boot")) {
                if (n != 2 || j->boot_id)
                        return journal_parse_error(e, lineno, -EBADMSG, "expected one \"boot ID\"");
                k = journal_set_boot_id(j, tok[1]);
        } else if (streq(kind, "cgroup_root")) {
                if (n != 2)
                        return journal_parse_error(e, lineno, -EBADMSG, "expected \"cgroup_root PATH\"");
                if (!unescape(tok[1]))
                        return journal_parse_error(e, lineno, -EBADMSG, "invalid escape in path");
                k = journal_add_cgroup_root(j, tok[1]);
        } else
                return journal_parse_error(e, lineno, -EBADMSG, "unknown entry \"%.32s\"", kind);

        if (k == 0)
                return journal_parse_error(e, lineno, -EBADMSG, "duplicate %s entry", kind);
        if (k < 0)
                return journal_parse_error(e, lineno, k == -EINVAL ? -EBADMSG : k, "%s: %s", kind, record_what(k));
        return 0;
}

/* The file's first line, "topod-journal N". */
static int parse_header(char **tok, int ntok, JournalError *e) {
        uint64_t v;

        if (ntok != 2 || !streq(tok[0], JOURNAL_HEADER) || !parse_u64_decimal(tok[1], UINT32_MAX, &v))
                return journal_parse_error(e, 1, -EBADMSG, "not a topod journal (no \"%s N\" header)", JOURNAL_HEADER);
        if (v < 1 || v > JOURNAL_VERSION)
                return journal_parse_error(e, 1, -EPROTONOSUPPORT,
                                           "journal version %" PRIu64 ", this topod reads versions 1 to %u", v,
                                           JOURNAL_VERSION);
        return 0;
}

/* The file's "end N": N must count the entries before it. */
static int parse_end(const Journal *j, char **tok, int ntok, unsigned lineno, JournalError *e) {
        uint64_t count;

        if (ntok != 2 || !parse_u64_decimal(tok[1], UINT64_MAX, &count))
                return journal_parse_error(e, lineno, -EBADMSG, "expected \"end N\"");
        if (count != journal_n_entries(j))
                return journal_parse_error(e, lineno, -EBADMSG, "\"end\" counts %" PRIu64 " entries, the file has %zu",
                                           count, journal_n_entries(j));
        return 0;
}

/* A damaged line in salvage mode: counted, the first one kept; 0 to go
 * on, or k (the strict parse's answer) when not salvaging. */
static int damaged(Journal *j, bool salvage, int k, const JournalError *e) {
        if (!salvage || k == -ENOMEM || k == -EPROTONOSUPPORT || (e && e->line <= 1))
                return k;
        if (j->n_damaged++ == 0 && e) {
                j->damage = malloc(sizeof(*j->damage));
                if (!j->damage)
                        return -ENOMEM;
                *j->damage = *e;
        }
        return 0;
}

static int parse_text(const char *text, size_t len, bool salvage, Journal **ret, JournalError *ret_error) {
        _cleanup_(journal_freep) Journal *j = NULL;
        _cleanup_free_ char *line = NULL;
        JournalError local = {}, *e = ret_error ?: &local;
        unsigned lineno = 0;
        bool ended = false, torn = false;
        size_t pos = 0;
        int k;

        if (len > JOURNAL_SIZE_MAX)
                return journal_parse_error(ret_error, 0, -EFBIG, "larger than %u bytes", JOURNAL_SIZE_MAX);
        if (len == 0)
                return journal_parse_error(ret_error, 0, -EBADMSG, "empty");
        if (!salvage && memchr(text, '\0', len))
                return journal_parse_error(ret_error, 0, -EBADMSG, "contains a NUL byte");
        if (text[len - 1] != '\n') {
                const char *nl = memrchr(text, '\n', len);

                if (!salvage || !nl)
                        return journal_parse_error(ret_error, 0, -EBADMSG, "incomplete: does not end with a newline");
                len = (size_t) (nl - text) + 1; /* a torn last line: dropped */
                torn = true;
        }

        k = journal_new(NULL, &j);
        if (k < 0)
                return k;
        line = malloc(JOURNAL_LINE_MAX + 1);
        if (!line)
                return -ENOMEM;

        while (pos < len) {
                char *tok[TOKENS_MAX];
                const char *nl = memchr(text + pos, '\n', len - pos);
                int ntok;

                lineno++;
                if (ended) {
                        k = journal_parse_error(e, lineno, -EBADMSG, "text after \"end\"");
                        pos = (size_t) (nl - text) + 1;
                } else if (salvage && memchr(text + pos, '\0', (size_t) (nl - (text + pos)))) {
                        k = journal_parse_error(e, lineno, -EBADMSG, "contains a NUL byte");
                        pos = (size_t) (nl - text) + 1;
                } else if ((ntok = next_line(text, len, &pos, line, tok)) == -E2BIG) {
                        k = journal_parse_error(e, lineno, -EBADMSG, "line longer than %u bytes", JOURNAL_LINE_MAX);
                        pos = (size_t) (nl - text) + 1;
                } else if (ntok < 0)
                        k = journal_parse_error(e, lineno, -EBADMSG,
                                                "malformed line (empty field, control character or too many fields)");
                else if (lineno == 1)
                        k = parse_header(tok, ntok, e);
                else if (streq(tok[0], "end")) {
                        k = parse_end(j, tok, ntok, lineno, e);
                        ended = true;
                } else
                        k = parse_entry(j, tok, ntok, lineno, e);
                if (k < 0 && (k = damaged(j, salvage, k, e)) < 0)
                        return k;
        }
        if (!ended || torn) {
                k = journal_parse_error(e, lineno, -EBADMSG, "incomplete: no \"end\" line");
                if ((k = damaged(j, salvage, k, e)) < 0)
                        return k;
        }
        if (j->n_damaged > 0 && ret_error)
                *ret_error = *j->damage;
        j->dirty = false;
        *ret = TAKE_PTR(j);
        return 0;
}

int journal_parse(const char *text, size_t len, Journal **ret, JournalError *ret_error) {
        return parse_text(text, len, false, ret, ret_error);
}

int journal_parse_salvage(const char *text, size_t len, Journal **ret, JournalError *ret_error) {
        return parse_text(text, len, true, ret, ret_error);
}

/* The log's text: up to its first NUL at the start of a line. The log's
 * space past its text is allocated, not written, and a block being
 * written starts with a NUL (its first byte is copied last): what follows
 * such a NUL was never committed. A NUL inside a line is damage. */
static size_t log_text_len(const char *text, size_t len) {
        for (size_t p = 0; p < len;) {
                const char *nul = memchr(text + p, '\0', len - p);
                size_t at;

                if (!nul)
                        return len;
                at = (size_t) (nul - text);
                if (at == 0 || text[at - 1] == '\n')
                        return at;
                p = at + 1;
        }
        return len;
}

/* The log's first line, "topod-journal-log N INODE SIZE": 1 when it
 * extends the file (ino, size), 0 when another (an older one). */
static int parse_log_header(char **tok, int ntok, uint64_t ino, uint64_t size, JournalError *e) {
        uint64_t v, i, sz;

        if (ntok != 4 || !streq(tok[0], JOURNAL_LOG_HEADER) || !parse_u64_decimal(tok[1], UINT32_MAX, &v) ||
            !parse_u64_decimal(tok[2], UINT64_MAX, &i) || !parse_u64_decimal(tok[3], UINT64_MAX, &sz))
                return journal_parse_error(e, 1, -EBADMSG, "no \"%s N INODE SIZE\" header", JOURNAL_LOG_HEADER);
        if (v < 1 || v > JOURNAL_LOG_VERSION)
                return journal_parse_error(e, 1, -EPROTONOSUPPORT, "log version %" PRIu64 ", this topod reads 1 to %u",
                                           v, JOURNAL_LOG_VERSION);
        return i == ino && sz == size;
}

/* A damaged line of the log: counted, the first one kept. */
static int log_damaged(Journal *j, const JournalError *e) {
        if (j->n_log_damaged++ == 0) {
                j->log_damage = malloc(sizeof(*j->log_damage));
                if (!j->log_damage)
                        return -ENOMEM;
                *j->log_damage = *e;
        }
        return 0;
}

/* The log's blocks into j, keeping what is good as journal_load() does
 * with the file: a damaged line (one that does not parse, a NUL byte in
 * it, a torn last line, an "end" that miscounts or is missing) is skipped
 * and counted in ->n_log_damaged, the first in ->log_damage; every other
 * entry is read. A block being written when its writer stopped is not
 * text (see log_text_len()); so a block without its "end" is one whose
 * "end" line was damaged, its entries committed: they are read. A log for
 * another file than the one loaded (ino, size) is a leftover: ignored. A
 * damaged header cannot say which file it extends: its entries are read
 * (restoring one twice is harmless, leaving one behind is not). Only a
 * log of a version this topod does not know is refused. */
int journal_parse_log(Journal *j, const char *text, size_t len, uint64_t ino, uint64_t size, JournalError *e) {
        _cleanup_free_ char *line = malloc(JOURNAL_LINE_MAX + 1);
        JournalError local = {}, *err = e ?: &local;
        size_t pos = 0, block = 0, block_lines = 0;
        unsigned lineno = 0;
        int k;

        if (!line)
                return -ENOMEM;
        len = log_text_len(text, len);
        while (pos < len) {
                const char *nl = memchr(text + pos, '\n', len - pos);
                size_t eol = nl ? (size_t) (nl - text) : len;
                char *tok[TOKENS_MAX];
                int ntok;

                lineno++;
                /* A line that is no "end" belongs to a block, damaged or not. */
                if (lineno > 1 && !(eol - pos >= 3 && memcmp(text + pos, "end", 3) == 0 && (eol - pos == 3 || text[pos + 3] == ' ')))
                        block_lines++;
                k = 0;
                if (!nl) {
                        k = journal_parse_error(err, lineno, -EBADMSG, "incomplete last line (no newline)");
                        pos = len;
                } else if (memchr(text + pos, '\0', eol - pos)) {
                        k = journal_parse_error(err, lineno, -EBADMSG, "contains a NUL byte");
                        pos = eol + 1;
                } else if ((ntok = next_line(text, len, &pos, line, tok)) == -E2BIG) {
                        k = journal_parse_error(err, lineno, -EBADMSG, "line longer than %u bytes", JOURNAL_LINE_MAX);
                        pos = eol + 1;
                } else if (ntok < 0)
                        k = journal_parse_error(err, lineno, -EBADMSG,
                                                "malformed line (empty field, control character or too many fields)");
                else if (lineno == 1) {
                        k = parse_log_header(tok, ntok, ino, size, err);
                        if (k == 0 || k == -EPROTONOSUPPORT)
                                return k; /* 0: extends an older file */
                        if (k > 0)
                                continue;
                } else if (streq(tok[0], "end")) {
                        uint64_t count;

                        if (ntok != 2 || !parse_u64_decimal(tok[1], UINT64_MAX, &count))
                                k = journal_parse_error(err, lineno, -EBADMSG, "expected \"end N\"");
                        else if (count != block)
                                k = journal_parse_error(err, lineno, -EBADMSG,
                                                        "\"end\" counts %" PRIu64 " entries, its block has %zu", count,
                                                        block);
                        block = block_lines = 0;
                } else if (streq(tok[0], "boot") || streq(tok[0], "cgroup_root"))
                        k = journal_parse_error(err, lineno, -EBADMSG, "\"%s\" belongs in the journal file", tok[0]);
                else {
                        k = parse_entry(j, tok, ntok, lineno, err);
                        block += k >= 0;
                }
                if (k == -ENOMEM)
                        return k;
                if (k < 0 && (k = log_damaged(j, err)) < 0)
                        return k;
        }
        if (block_lines > 0) {
                k = journal_parse_error(err, lineno, -EBADMSG, "incomplete: its last block has no \"end\" line");
                if ((k = log_damaged(j, err)) < 0)
                        return k;
        }
        if (j->n_log_damaged > 0 && e)
                *e = *j->log_damage;
        return 0;
}
