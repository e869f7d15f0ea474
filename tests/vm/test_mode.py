#!/usr/bin/env python3
"""vm-mode: sched/cgroup_mode (and llc_balancing/enabled) through the running
topod's reloads and stop, on a kernel that has them (7.3 and later; not
registered for 6.12, where the mode is emulated: vm-concur@6.12).

Policies: data/settings/20-mode.ini (cgroup_mode = smp) and
10-llc-pinned.ini (llc_balancing/enabled = off, base_slice_ns).

  * started: the mode reads (smp), llc_balancing/enabled 0, the journal
    holds the originals (concur, 1);
  * SIGHUP with cgroup_mode = max: (max), the journal keeps concur (the
    first original);
  * SIGHUP with neither line: no policy sets them any longer, so both go
    back (concur, 1) and out of the journal; base_slice_ns, still set,
    stays;
  * SIGHUP with cgroup_mode = tasks: (tasks), journaled again;
  * SIGTERM: (concur), base_slice_ns back, the journal gone.
Exit 0 pass, 1 fail, 77 skip."""

import argparse
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vmlib  # noqa: E402
from test_settings import CONF, DATA, JOURNAL, STOP, journal_lines  # noqa: E402

PD = "/etc/topod-test/policies.d"
MODE = "/sys/kernel/debug/sched/cgroup_mode"
LLC = "/sys/kernel/debug/sched/llc_balancing/enabled"
SLICE = "/sys/kernel/debug/sched/base_slice_ns"
SHOW = ("echo \"mode $(cat %s | tr -d '\\n') llc $(cat %s) slice $(cat %s)\"; " % (MODE, LLC, SLICE)) + JOURNAL


def reload(edit, want):
    """Edit the policies, SIGHUP, wait (30 s at most) for the mode to read (want)."""
    return (edit + "; kill -HUP $(cat /tmp/topod.pid); "
            "for i in $(seq 300); do grep -q '(%s)' %s && break; sleep 0.1; done; sleep 1; " % (want, MODE) + SHOW)


COMMANDS = [
    # 0: the originals, a process the policies match, topod
    SHOW + "; workload idle & echo $! > /tmp/w; sleep 1; "
    "topod " + CONF + " >> /tmp/topod.log 2>&1 & echo $! > /tmp/topod.pid; W=$(cat /tmp/w); "
    "for i in $(seq 300); do grep -q 'ready:' /tmp/topod.log && grep -q topod.slice /proc/$W/cgroup && break; "
    "sleep 0.1; done",
    # 1: applied
    "sleep 1; " + SHOW,
    # 2: another mode
    reload("sed -i 's/^cgroup_mode = .*/cgroup_mode = max/' %s/20-mode.ini" % PD, "max"),
    # 3: neither set any longer
    reload("sed -i '/^cgroup_mode/d' %s/20-mode.ini; sed -i '/^llc_balancing/d' %s/10-llc-pinned.ini" % (PD, PD),
           "concur"),
    # 4: a mode again
    reload("echo 'cgroup_mode = tasks' >> %s/20-mode.ini" % PD, "tasks"),
    # 5: SIGTERM
    STOP + " && { " + SHOW + "; }",
    # 6: the log
    "cat /tmp/topod.log",
]


def active(mode_text):
    for w in (mode_text or "").split():
        if w.startswith("("):
            return w.strip("()")
    return None


def parse(text):
    """SHOW's output: ({"mode": the active one, "llc": ..., "slice": ...},
    journal lines); its first line is "mode up smp (concur) max tasks llc 1
    slice N"."""
    words = (text.splitlines()[0] if text else "").split()
    if "llc" not in words or len(words) < words.index("llc") + 4:
        return {}, []
    li = words.index("llc")
    return ({"mode": active(" ".join(words[1:li])), "llc": words[li + 1], "slice": words[li + 3]},
            journal_lines(text))


def test(args):
    r = vmlib.run_guest(
        COMMANDS,
        binaries={"topod": args.topod, "topoctl": args.topoctl, "workload": args.workload},
        files={"/etc/topod-test/topod.conf": os.path.join(DATA, "topod.conf"),
               PD + "/10-llc-pinned.ini": os.path.join(DATA, "10-llc-pinned.ini"),
               PD + "/20-mode.ini": os.path.join(DATA, "20-mode.ini")},
        timeout=600, cmd_timeout=120)
    c = vmlib.Checks()
    orig, _ = parse(r.stdout(0))
    if not orig.get("mode") or not orig.get("llc", "").isdigit():
        c.true(False, "this kernel has sched/cgroup_mode and llc_balancing (vm-mode is 7.3's)",
               r.stdout(0) + r.stderr(0))
        return c.finish()
    c.eq(orig.get("mode"), "concur", "the guest starts in concur")
    c.eq(orig.get("llc"), "1", "llc_balancing/enabled starts on")

    now, j = parse(r.stdout(1))
    c.eq(now.get("mode"), "smp", "started: the mode reads (smp)")
    c.eq(now.get("llc"), "0", "started: llc_balancing/enabled reads 0")
    c.eq(now.get("slice"), "3000000", "started: base_slice_ns reads 3000000")
    c.contains(j, "cgroup_mode concur", "started: the journal holds the mode's original")
    c.contains(j, "setting llc_balancing/enabled 1", "started: the journal holds llc_balancing's original")

    now, j = parse(r.stdout(2))
    c.eq(now.get("mode"), "max", "reload to max: the mode reads (max)")
    c.contains(j, "cgroup_mode concur", "reload to max: the journal keeps the first original")
    c.true("cgroup_mode smp" not in j, "reload to max: not the value topod had set", "\n".join(j))

    now, j = parse(r.stdout(3))
    c.eq(now.get("mode"), "concur", "reload without cgroup_mode: back to (concur)")
    c.eq(now.get("llc"), "1", "reload without llc_balancing: back to 1")
    c.eq(now.get("slice"), "3000000", "reload: base_slice_ns, still set, stays")
    c.true(not any(l.startswith("cgroup_mode") for l in j), "reload: the mode is out of the journal", "\n".join(j))
    c.true(not any("llc_balancing" in l for l in j), "reload: llc_balancing is out of the journal", "\n".join(j))
    c.contains(j, "setting base_slice_ns %s" % orig.get("slice"), "reload: base_slice_ns's original stays")

    now, j = parse(r.stdout(4))
    c.eq(now.get("mode"), "tasks", "reload to tasks: the mode reads (tasks)")
    c.contains(j, "cgroup_mode concur", "reload to tasks: the original journaled again")

    c.eq(r.rc(5), 0, "SIGTERM: topod stopped")
    now, _ = parse(r.stdout(5))
    c.eq(now, orig, "SIGTERM: mode, llc_balancing and base_slice_ns back")
    c.true("No such file" in r.stdout(5), "SIGTERM: the journal is gone", r.stdout(5))
    log = r.stdout(6)
    c.true(log.count("reloaded") >= 3 or log.count("reload") >= 3, "three reloads taken", log[-1500:])
    if c.failed:
        print(log[-3000:])
        print("outputs: %s/out/" % r.run_dir)
    return c.finish()


if __name__ == "__main__":
    p = vmlib.add_common_args(argparse.ArgumentParser(description=__doc__))
    p.add_argument("--topod", required=True)
    p.add_argument("--topoctl", required=True)
    p.add_argument("--workload", required=True)
    vmlib.main(test, p.parse_args())
