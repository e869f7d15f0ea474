#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The bash completion of topoctl and topod against the programs themselves.

What the programs accept is read from them, not written down here:
  - the verbs and options: from `topoctl --help` and `topod --help`;
  - which options a topoctl verb takes: each option is given to each verb,
    with --root at a directory that does not exist (so a verb that takes
    it fails harmlessly before it reads or changes anything), and the verb
    takes it unless topoctl answers "VERB does not take --OPTION";
  - which options go with a topod mode (--oneshot, --restore, --check): the
    same way, an option the mode refuses is a usage error (exit 2);
  - the log levels: from topod --help's line for --log-level.
The completion (completion/*.bash, sourced into bash as bash-completion
would, once with bash-completion's helpers loaded when they are installed
and once without them) must offer exactly the verbs, every option before a
verb, after a verb or mode exactly what the program accepts there (and
--help), the log levels, PIDs, files and directories where those are
arguments. Each check prints ok or FAIL with what differed; exit 1 on any
FAIL, 77 when bash is missing.

Usage: test-completion.py --topoctl EXE --topod EXE --dir COMPLETION_DIR
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

NOWHERE = "/nonexistent-topod-completion-root"
# A valid value for each option that takes one (the probes must get past
# option parsing to the verb's or mode's check).
VALUES = {"--samples": "1", "--interval": "1s", "--pid": "1", "--synthetic": "core:1",
          "--log-level": "info"}
BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"

failures = 0


def check(ok, what, detail=""):
    global failures
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures += 1
        if detail:
            print("        " + str(detail).replace("\n", "\n        "))


def run(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def help_sections(exe):
    """{section title: text} of EXE --help ("Verbs:", "Options:")."""
    rc, out, err = run([exe, "--help"])
    if rc != 0:
        sys.exit("%s --help failed (%d): %s" % (exe, rc, err))
    sections, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"^(\w[\w ]*):$", line)
        if m:
            cur = m.group(1)
            sections[cur] = ""
        elif cur:
            sections[cur] += line + "\n"
    return out, sections


def options_of(text):
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", text))


def takes_value(help_text, opt):
    """--opt NAME in the help: the option takes a value."""
    return re.search(r"(?<![\w-])%s [A-Z]" % re.escape(opt), help_text) is not None


def probe_argv(opt, help_text):
    return [opt] + ([VALUES.get(opt, NOWHERE)] if takes_value(help_text, opt) else [])


class Completer:
    """Completions from the scripts in DIR, sourced into a fresh bash each
    time (with bash-completion's helpers when with_helpers)."""

    SCRIPT = r'''
if [ "$1" = with ]; then . "$2" || exit 3; fi
shift 2
dir=$1
shift
# only the command's own file, as bash-completion loads it on first use
. "$dir/$1.bash" || exit 3
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
# the line as typed: no blanks around the '=' of --option=value
COMP_LINE=$1
for ((i = 1; i < ${#COMP_WORDS[@]}; i++)); do
    w=${COMP_WORDS[i]}
    if [ "$w" = = ] || [ "${COMP_WORDS[i - 1]}" = = ]; then COMP_LINE+=$w; else COMP_LINE+=" $w"; fi
done
COMP_POINT=${#COMP_LINE}
COMPREPLY=()
"_${COMP_WORDS[0]}" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\n' "${COMPREPLY[@]}"
'''

    def __init__(self, bash, directory, with_helpers):
        self.bash, self.dir, self.with_helpers = bash, directory, with_helpers
        self.label = "with bash-completion's helpers" if with_helpers else "without bash-completion"

    def __call__(self, words, cwd=None):
        """The completions of the last of WORDS (as readline splits the
        line: '--root=/x' is '--root', '=', '/x')."""
        p = subprocess.run([self.bash, "--norc", "--noprofile", "-c", self.SCRIPT, "bash",
                            "with" if self.with_helpers else "without", BASH_COMPLETION, self.dir] + words,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30, cwd=cwd,
                           stdin=subprocess.DEVNULL)
        if p.returncode != 0 or p.stderr.strip():
            check(False, "%s: bash ran the completion of %r cleanly" % (self.label, words),
                  "rc %d: %s" % (p.returncode, p.stderr.strip()))
        return {w.rstrip("/") for w in p.stdout.splitlines() if w}


def diff(got, want):
    return "missing %s; not expected %s" % (sorted(want - got) or "none", sorted(got - want) or "none")


def test_topoctl(exe, comp, tmp):
    text, sec = help_sections(exe)
    verbs = {l.split()[0] for l in sec.get("Verbs", "").splitlines() if l.strip()}
    options = options_of(sec.get("Options", ""))
    check(len(verbs) >= 5 and len(options) >= 10, "topoctl --help lists verbs and options",
          "%s %s" % (sorted(verbs), sorted(options)))
    special = {"--help", "--version"}

    got = comp(["topoctl", ""])
    check(got == verbs, "%s: topoctl <TAB>: every verb" % comp.label, diff(got, verbs))
    got = comp(["topoctl", "--"])
    check(got == options, "%s: topoctl --<TAB>: every option" % comp.label, diff(got, options))

    for verb in sorted(verbs):
        takes = set()
        for opt in sorted(options - special):
            rc, out, err = run([exe, "--root", NOWHERE, verb] + probe_argv(opt, text))
            if "does not take --%s" % opt[2:] not in err:
                takes.add(opt)
        if not takes:
            check(False, "topoctl %s: takes some option (probed with --root %s)" % (verb, NOWHERE))
        want = takes | {"--help"}
        for words in ([verb], ["--json", verb] if "--json" in takes else [verb],
                      ["--root", "/x", verb], ["--root", "=", "/x", verb]):
            got = comp(["topoctl"] + words + ["--"])
            check(got == want, "%s: topoctl %s --<TAB>: the options %s takes" % (comp.label, " ".join(words), verb),
                  diff(got, want))

    pid = str(os.getpid())
    check(pid in comp(["topoctl", "explain", ""]), "%s: topoctl explain <TAB>: PIDs (this one, %s)" % (comp.label, pid))
    check(comp(["topoctl", "explain", pid, ""]) == set(), "%s: topoctl explain PID <TAB>: nothing more" % comp.label)
    check(pid in comp(["topoctl", "classify", "--pid", ""]), "%s: topoctl classify --pid <TAB>: PIDs" % comp.label)
    for words, want, not_want in (
            (["check", ""], "a.ini", None),
            (["check", "a.ini", ""], "a.ini", None),
            (["--root", ""], "d", "a.ini"),
            (["--root", "=", ""], "d", "a.ini"),
            (["status", "--state-dir", ""], "d", "a.ini"),
            (["topology", "--xml", ""], "a.ini", None),
            (["plan", "--config", ""], "a.ini", None),
            (["classify", "--policies", ""], "d", None)):
        got = comp(["topoctl"] + words, cwd=tmp)
        check(want in got and not_want not in got, "%s: topoctl %s<TAB>: %s%s" % (
            comp.label, " ".join(words), "directories" if not_want else "files", "" if not_want else ""), sorted(got))


def test_topod(exe, comp, tmp):
    text, sec = help_sections(exe)
    options = options_of(sec.get("Options", ""))
    check(len(options) >= 10, "topod --help lists options", sorted(options))
    got = comp(["topod", "--"])
    check(got == options, "%s: topod --<TAB>: every option" % comp.label, diff(got, options))
    special = {"--help", "--version"}
    for mode in ("--oneshot", "--restore", "--check"):
        takes = set()
        for opt in sorted(options - special - {mode}):
            rc, out, err = run([exe, mode, "--root", NOWHERE] + probe_argv(opt, text))
            if rc != 2:
                takes.add(opt)
        want = takes | {"--help"}
        got = comp(["topod", mode, "--"])
        check(got == want, "%s: topod %s --<TAB>: the options that go with %s" % (comp.label, mode, mode),
              diff(got, want))
        got = comp(["topod", "--root", "=", "/x", mode, "--"])
        check(got == want, "%s: topod --root=/x %s --<TAB>: the same" % (comp.label, mode), diff(got, want))
    m = re.search(r"--log-level \w+\s+(.*?)\(", text)
    levels = set(re.findall(r"[a-z]+", m.group(1))) - {"or"} if m else set()
    check(len(levels) >= 3, "topod --help names the log levels", m.group(0) if m else text)
    got = comp(["topod", "--log-level", ""])
    check(got == levels, "%s: topod --log-level <TAB>: the levels" % comp.label, diff(got, levels))
    got = comp(["topod", "--check", ""], cwd=tmp)
    check("a.ini" in got, "%s: topod --check <TAB>: files" % comp.label, sorted(got))
    got = comp(["topod", "--state-dir", ""], cwd=tmp)
    check("d" in got and "a.ini" not in got, "%s: topod --state-dir <TAB>: directories" % comp.label, sorted(got))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topoctl", required=True)
    ap.add_argument("--topod", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    bash = shutil.which("bash")
    if not bash:
        print("SKIP: no bash here: the completion cannot be run")
        return 77
    modes = [False]
    if os.path.isfile(BASH_COMPLETION):
        modes.append(True)
    else:
        print("note: %s missing (Debian package bash-completion): checked without its helpers only" %
              BASH_COMPLETION)
    with tempfile.TemporaryDirectory() as tmp:
        os.mkdir(os.path.join(tmp, "d"))
        open(os.path.join(tmp, "a.ini"), "w").close()
        for with_helpers in modes:
            comp = Completer(bash, os.path.abspath(a.dir), with_helpers)
            test_topoctl(a.topoctl, comp, tmp)
            test_topod(a.topod, comp, tmp)
    print("completion: %d check(s) failed" % failures if failures else "completion: all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
