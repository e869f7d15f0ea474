#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The include rules of src/, read from the sources.

    src/topod and src/topoctl  neither reaches into the other's folder;
                               what both need is in src/common
    src/common                 nothing of either program
    src/lib                    nothing of src/common, src/topod, src/topoctl
    src/lib/decide             of observe, apply and pipeline only the plain
                               value types named in DECIDE_ALLOWED

Checked: every #include "…" in src/**/*.[ch], resolved the way the build
resolves it (the including file's folder, then the include directories the
meson files give), and every path named in a files(), include_directories()
or as a source in src/**/meson.build. Each violation is printed as
file:line: message; the last line says how it went, and the exit status is
1 when anything broke a rule.

Usage: test-layout.py [SRC_DIR]   (default: ../../src from this file)
"""

import os
import re
import sys

# Where a quoted #include is looked for, after the including file's own
# folder: src/lib (the library's "base/…", "observe/…" form) and src/ (the
# "common/…" form); then the folders the programs and tests add one by one.
SEARCH = ["lib", ".", "common", "topod", "topoctl"]

# decide is pure: from observe it takes the values it decides over, as it
# does today, and nothing else of observe, apply or pipeline.
DECIDE_ALLOWED = {
    "lib/observe/kernelcaps.h",  # KernelCaps: what the kernel offers
    "lib/observe/tasks.h",       # TaskFacts: what a thread is
    "lib/observe/topology.h",    # Topology: the machine's CPUs
}

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
CALL = re.compile(r"\b(files|include_directories)\s*\(")
STRING = re.compile(r"'((?:[^'\\]|\\.)*)'")
SOURCE = re.compile(r"'([^']*\.[ch])'")


def area(rel):
    """The part of src/ a path (relative to src/) is in."""
    parts = rel.split("/")
    if parts[0] == "lib":
        if len(parts) > 1 and parts[1] in ("decide", "observe", "apply", "pipeline"):
            return "lib/" + parts[1]
        return "lib"
    if parts[0] in ("common", "topod", "topoctl"):
        return parts[0]
    return None  # src/ itself, or outside it


def rule(src_area, dst_rel):
    """Why src_area may not reach dst_rel, or None."""
    dst = area(dst_rel)
    if dst is None or dst == src_area:
        return None
    if src_area == "topod" and dst == "topoctl":
        return "src/topod reaches into src/topoctl (what both need goes to src/common)"
    if src_area == "topoctl" and dst == "topod":
        return "src/topoctl reaches into src/topod (what both need goes to src/common)"
    if src_area == "common" and dst in ("topod", "topoctl"):
        return "src/common reaches into src/%s (common code serves both programs)" % dst
    if src_area.startswith("lib") and dst in ("common", "topod", "topoctl"):
        return "src/lib reaches into src/%s (the library serves the programs, not the other way)" % dst
    if src_area == "lib/decide" and dst in ("lib/observe", "lib/apply", "lib/pipeline") \
            and dst_rel not in DECIDE_ALLOWED:
        return "src/lib/decide reaches into src/%s beyond the value types it may use (%s)" % (
            dst_rel, ", ".join(sorted(DECIDE_ALLOWED)))
    return None


def rel_to(src, path):
    """path (absolute) relative to src, with '/' separators; None outside."""
    r = os.path.relpath(os.path.normpath(path), src)
    if r == ".." or r.startswith("../"):
        return r  # outside src: area() gives None
    return r.replace(os.sep, "/")


def resolve(src, including_dir, name):
    for d in [including_dir] + [os.path.join(src, s) for s in SEARCH]:
        p = os.path.join(d, name)
        if os.path.isfile(p):
            return rel_to(src, p)
    return None


def check_includes(src, path, rel, violations, counts):
    me = area(rel)
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            counts["includes"] += 1
            target = resolve(src, os.path.dirname(path), m.group(1))
            if target is None:
                continue  # a generated or system header: not ours
            why = rule(me, target) if me else None
            if why:
                violations.append('src/%s:%d: #include "%s" (%s): %s' % (rel, n, m.group(1), target, why))


def meson_paths(text):
    """(line, path) of each path in files(), include_directories() and each
    quoted .c/.h name (a source given as a plain string)."""
    seen = set()
    for m in CALL.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        for s in STRING.finditer(text, m.end(), i):
            seen.add(s.start())
            yield text.count("\n", 0, s.start()) + 1, s.group(1)
    for s in SOURCE.finditer(text):
        if s.start() not in seen:
            yield text.count("\n", 0, s.start()) + 1, s.group(1)


def check_meson(src, path, rel, violations, counts):
    me = area(rel)
    here = os.path.dirname(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    # Comments name paths too ("see ../topoctl"): not what is built.
    text = re.sub(r"#[^\n]*", lambda m: " " * len(m.group(0)), text)
    for n, p in meson_paths(text):
        counts["meson"] += 1
        target = rel_to(src, os.path.join(here, p))
        why = rule(me, target) if me else None
        if why:
            violations.append("src/%s:%d: '%s' (%s): %s" % (rel, n, p, target, why))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "src"))
    violations = []
    counts = {"files": 0, "includes": 0, "meson": 0}
    areas = set()

    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = rel_to(src, path)
            if name.endswith((".c", ".h")):
                counts["files"] += 1
                areas.add(area(rel))
                check_includes(src, path, rel, violations, counts)
            elif name == "meson.build":
                check_meson(src, path, rel, violations, counts)

    # A moved or renamed folder must not make the rules check nothing.
    missing = {"lib/decide", "lib/observe", "common", "topod", "topoctl"} - areas
    for a in sorted(missing):
        violations.append("src/%s: no sources found: the rules name a folder that is not there" % a)

    for v in violations:
        print(v)
    if violations:
        print("test-layout: FAIL: %d violation%s of the include rules (%d files, %d includes, %d meson paths read)"
              % (len(violations), "" if len(violations) == 1 else "s", counts["files"], counts["includes"],
                 counts["meson"]))
        return 1
    print("test-layout: OK: %d files, %d includes, %d meson paths follow the include rules"
          % (counts["files"], counts["includes"], counts["meson"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
