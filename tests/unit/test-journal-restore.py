#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""journal-restore: `topod --restore` with a damaged journal.log.

A fake root (tests/data/sysfs/host-2cpu's /sys, the host's /proc, no
cgroup2 mount) and a state directory holding a journal and the log that
extends it, one line of the log garbage. The restore must report that
line as journal.log:LINE with why and the count, act on every other entry
of both files, and remove them. Needs root (exit 77 otherwise).

Usage: test-journal-restore.py TOPOD SRCDIR"""

import os
import shutil
import subprocess
import sys
import tempfile


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root")
        return 77
    topod, srcdir = sys.argv[1:3]
    tmp = tempfile.mkdtemp(prefix="topod-restore-")
    try:
        root, state = os.path.join(tmp, "root"), os.path.join(tmp, "state")
        shutil.copytree(os.path.join(srcdir, "tests/data/sysfs/host-2cpu/sys"), os.path.join(root, "sys"),
                        symlinks=True)
        os.symlink("/proc", os.path.join(root, "proc"))
        os.makedirs(state, mode=0o700)
        journal = os.path.join(state, "journal")
        with open(journal, "w") as f:
            f.write("topod-journal 1\ncgroup_root /topod.slice\ncgroup /topod.slice\nend 1\n")
        st = os.stat(journal)
        with open(os.path.join(state, "journal.log"), "wb") as f:
            f.write(b"topod-journal-log 1 %d %d\n" % (st.st_ino, st.st_size) +
                    b"cgroup /topod.slice/a\n\x01garbage\nend 2\n"
                    b"cgroup /topod.slice/b\nend 1\n" + b"\0" * 4096)
        r = subprocess.run([topod, "--root", root, "--state-dir", state, "--restore"], capture_output=True,
                           text=True, timeout=60)
        print(r.stdout + r.stderr)
        ok = True
        for what, cond in (
                ("exit status 0", r.returncode == 0),
                ("the damaged line named as journal.log:3", "/journal.log:3: " in r.stderr),
                ("why", "malformed line" in r.stderr),
                ("the count", "2 damaged lines skipped" in r.stderr),
                ("the log's entry before it restored", "/topod.slice/a" in r.stdout),
                ("the log's entry after it restored", "/topod.slice/b" in r.stdout),
                ("the file's entry restored", "cgroup /topod.slice:" in r.stdout),
                ("the journal removed", not os.path.exists(journal)),
                ("the log removed", not os.path.exists(os.path.join(state, "journal.log")))):
            print("%s: %s" % ("ok" if cond else "FAIL", what))
            ok = ok and cond
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
