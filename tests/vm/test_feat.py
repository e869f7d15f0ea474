#!/usr/bin/env python3
"""vm-feat: sched features written, read back and restored on a real kernel
(6.12 and 7.3, CONFIG_SCHED_CORE), with the journal of originals:

  * read the features; flip TTWU_QUEUE off with journaling: the kernel's
    file shows NO_TTWU_QUEUE, the journal holds the original (on);
    flipping again is 'already', the original is kept;
  * restore from the journal: TTWU_QUEUE is back, the journal is removed;
  * crash: the helper flips the feature and is killed with SIGKILL; the
    journal stays behind; the helper started again in restore mode puts
    the feature back and removes the journal;
  * sched/cgroup_mode: before 7.3 it does not exist, and is reported
    cleanly as absent, nothing written, nothing journaled; on 7.3 and later
    it is set to max with its original journaled, read back, and restored
    (run for a kernel of the matrix, --kernel, the kernel must be the one
    or the other: a 7.3 run without the file fails);
  * an unknown feature: EINVAL, nothing journaled.

Exit 0 pass, 1 fail, 77 skip (no kernel/qemu)."""

import argparse
import os
import sys

sys.dont_write_bytecode = True        # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmlib  # noqa: E402

FEATURES = "/sys/kernel/debug/sched/features"
JDIR = "/run/topod"
JFILE = JDIR + "/journal"
MODE = "/sys/kernel/debug/sched/cgroup_mode"

COMMANDS = [
    # 0: what the library reads
    "feattool read",
    # 1: flip off, journaled
    "feattool set --journal %s TTWU_QUEUE off" % JDIR,
    # 2: the kernel's own file, and the journal file
    "cat %s; echo ---; cat %s" % (FEATURES, JFILE),
    # 3: again: already so, nothing written, the original (on) kept
    "feattool set --journal %s TTWU_QUEUE off; echo ---; cat %s" % (JDIR, JFILE),
    # 4: restore (stop)
    "feattool restore --journal %s" % JDIR,
    # 5: read back; the journal is gone
    "cat %s; echo ---; ls -A %s" % (FEATURES, JDIR),
    # 6: crash: flip, then SIGKILL while it holds
    "rm -f /tmp/flipped\n"
    "feattool set --journal %s --hold /tmp/flipped TTWU_QUEUE off >/tmp/hold.out &\n"
    "pid=$!\n"
    "n=0; while [ ! -e /tmp/flipped ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n+1)); done\n"
    "kill -9 $pid; wait $pid; echo \"killed rc=$?\"\n"
    "echo ---; cat %s; echo ---; cat %s" % (JDIR, FEATURES, JFILE),
    # 7: the next start recovers
    "feattool restore --journal %s" % JDIR,
    # 8: read back; nothing left behind
    "cat %s; echo ---; ls -A %s" % (FEATURES, JDIR),
    # 9: cgroup_mode: absent before 7.3, reported cleanly
    "feattool mode",
    # 10: setting it: before 7.3 a clean failure, nothing journaled; from
    # 7.3 written, read back, journaled, restored
    "feattool mode --journal %s max; echo \"rc=$?\"; echo ---; cat %s 2>&1; echo ---; cat %s 2>&1; echo ---; "
    "feattool restore --journal %s > /dev/null; cat %s 2>&1; echo ---; ls -A %s"
    % (JDIR, MODE, JFILE, JDIR, MODE, JDIR),
    # 11: unknown feature: EINVAL, nothing written or journaled
    "feattool set --journal %s NOT_A_FEATURE on; echo \"rc=$?\"; ls -A %s" % (JDIR, JDIR),
    # 12: restore with nothing to restore
    "feattool restore --journal %s" % JDIR,
]


def split(text):
    return [part.strip() for part in text.split("---")]


def test(args):
    r = vmlib.run_guest(COMMANDS, binaries={"feattool": args.feattool},
                        cmd_timeout=120)
    c = vmlib.Checks()

    # 0: features read through the Root, under the debugfs mount found
    rd = c.json(r, 0, "feattool read")
    c.eq(c.get(rd, "debugfs"), "/sys/kernel/debug", "read: debugfs mount")
    feats = c.get(rd, "features")
    c.eq(c.get(feats, "TTWU_QUEUE"), True, "read: TTWU_QUEUE on by default")
    c.eq(c.get(feats, "NEXT_BUDDY"), False, "read: NEXT_BUDDY off by default")
    c.true(isinstance(feats, dict) and len(feats) >= 20,
           "read: the 6.12 list (%s)" % (len(feats) if isinstance(feats, dict) else feats))

    # 1: flipped with journaling
    s = c.json(r, 1, "set TTWU_QUEUE off")
    c.eq(c.get(s, "outcome"), "done", "set off: outcome")
    c.eq(c.get(s, "was_on"), True, "set off: was on")
    c.eq(c.get(s, "journaled"), True, "set off: journaled before the write")

    # 2: the kernel's file and the journal
    kfile, jtext = (split(r.stdout(2)) + ["", ""])[:2]
    c.contains(kfile.split(), "NO_TTWU_QUEUE", "kernel features after set off")
    c.true("TTWU_QUEUE" not in kfile.split(), "kernel features: TTWU_QUEUE no longer on")
    c.eq(jtext.splitlines(), ["topod-journal 1", "feature TTWU_QUEUE on", "end 1"],
         "journal file after set off")

    # 3: idempotent
    parts = split(r.stdout(3))
    c.eq(r.rc(3), 0, "set off again: exit status")
    c.true('"outcome": "already"' in parts[0], "set off again: already so",
           parts[0])
    c.eq(parts[-1].splitlines(), ["topod-journal 1", "feature TTWU_QUEUE on", "end 1"],
         "journal after set off again: first original kept")

    # 4, 5: restore
    rs = c.json(r, 4, "restore")
    c.eq(c.get(rs, "journal_found"), True, "restore: journal found")
    c.eq(c.get(rs, "results.0.name"), "TTWU_QUEUE", "restore: item")
    c.eq(c.get(rs, "results.0.outcome"), "done", "restore: TTWU_QUEUE put back")
    c.eq(c.get(rs, "failed"), 0, "restore: nothing failed")
    c.eq(c.get(rs, "journal_removed"), True, "restore: journal removed")
    kfile, ls = (split(r.stdout(5)) + ["", ""])[:2]
    c.contains(kfile.split(), "TTWU_QUEUE", "kernel features after restore")
    c.eq(ls, "", "journal directory empty after restore")

    # 6: crash
    killed, kfile, jtext = (split(r.stdout(6)) + ["", "", ""])[:3]
    c.eq(killed, "killed rc=137", "crash: helper killed by SIGKILL while holding")
    c.contains(kfile.split(), "NO_TTWU_QUEUE", "crash: feature left flipped")
    c.eq(jtext.splitlines(), ["topod-journal 1", "feature TTWU_QUEUE on", "end 1"],
         "crash: journal left behind")

    # 7, 8: recovery on the next start
    rs = c.json(r, 7, "restore after crash")
    c.eq(c.get(rs, "journal_found"), True, "recovery: journal found")
    c.eq(c.get(rs, "results.0.outcome"), "done", "recovery: TTWU_QUEUE put back")
    c.eq(c.get(rs, "journal_removed"), True, "recovery: journal removed")
    kfile, ls = (split(r.stdout(8)) + ["", ""])[:2]
    c.contains(kfile.split(), "TTWU_QUEUE", "kernel features after recovery")
    c.true("NO_TTWU_QUEUE" not in kfile.split(), "kernel features: not left off")
    c.eq(ls, "", "nothing left in the journal directory")

    # 9, 10: cgroup_mode
    md = c.json(r, 9, "feattool mode")
    setout, kmode, jtext, kafter, ls = (split(r.stdout(10)) + [""] * 5)[:5]
    # Run for a kernel of the matrix, the file must be there on 7.3 and
    # absent on 6.12: neither half passes where the kernel has the other.
    present = c.get(md, "cgroup_mode.present") is True
    expected = vmlib.kernel_has("cgroup_mode")
    if expected is not None:
        c.eq(present, expected, "sched/cgroup_mode present on the %s kernel" % vmlib.kernel_slot())
        present = expected
    if present:
        # 7.3 and later: the real file
        active = c.get(md, "cgroup_mode.active")
        c.true(active in ("up", "smp", "concur", "max", "tasks") and "max" in (c.get(md, "cgroup_mode.modes") or []),
               "cgroup_mode: present, its modes and the active one read", str(md))
        if active == "max":
            c.true(False, "cgroup_mode: the guest starts in max, so setting max tests nothing", str(md))
        c.true('"outcome": "done"' in setout and '"journaled": true' in setout and setout.endswith("rc=0"),
               "set cgroup_mode max: done, journaled first", setout)
        c.true("(max)" in kmode.split(), "the kernel's cgroup_mode reads (max)", kmode)
        c.true(("cgroup_mode %s" % active) in jtext.splitlines(), "the journal holds the original mode", jtext)
        c.true(("(%s)" % active) in kafter.split(), "restore: cgroup_mode back to %s" % active, kafter)
        c.eq(ls, "", "restore: journal removed")
    else:
        c.eq(c.get(md, "cgroup_mode.present"), False, "cgroup_mode: absent")
        c.eq(c.get(md, "cgroup_mode.error"), "ENOENT", "cgroup_mode: ENOENT")
        c.true("absent" in str(c.get(md, "cgroup_mode.caps_reason")),
               "cgroup_mode: the caps say why", str(c.get(md, "cgroup_mode.caps_reason")))
        c.true('"outcome": "failed"' in setout and '"error": "ENOENT"' in setout and "absent" in setout,
               "set cgroup_mode: failed cleanly as absent", setout)
        c.true('"journaled": false' in setout, "set cgroup_mode: nothing journaled", setout)
        c.true(setout.endswith("rc=1"), "set cgroup_mode: exit status 1, no crash", setout)
        c.eq(ls, "", "set cgroup_mode: journal directory empty")

    # 11: unknown feature
    out = r.stdout(11)
    c.true('"error": "EINVAL"' in out and '"journaled": false' in out,
           "unknown feature: EINVAL, not journaled", out)
    c.true(out.rstrip().endswith("rc=1"), "unknown feature: exit status 1, journal dir empty", out)

    # 12: nothing to recover
    rs = c.json(r, 12, "restore with no journal")
    c.eq(c.get(rs, "journal_found"), False, "restore: no journal found")
    c.eq(c.get(rs, "results"), [], "restore: nothing to do")

    if c.failed:
        print("outputs: %s/out/  (see commands.txt there)" % r.run_dir)
    return c.finish()


if __name__ == "__main__":
    p = vmlib.add_common_args(argparse.ArgumentParser(description=__doc__))
    p.add_argument("--feattool", required=True, help="path to the feattool binary")
    vmlib.main(test, p.parse_args())
