#!/usr/bin/env python3
"""vm-daemon: the long-running topod on a real kernel.

The apply test's policies (tests/vm/data/apply/). topod starts, applies,
places a process started after it (found through the proc connector: its
cookie joins its group's), and on SIGTERM puts everything back. Then a
kill -9 leaves the journal behind, and the next start recovers from it
first. SIGHUP reloads: an edited policy takes effect, a broken one is
refused with file:line and the running policy stays. Exit 0 pass, 1 fail,
77 skip."""

import argparse
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmlib  # noqa: E402
from test_apply import CONF, DATA, LOOK, threads_by_tgid  # noqa: E402

START = ("workload idle crunch-1 & echo c1=$! > /tmp/pids; "
         "workload pingpong & echo pp=$! >> /tmp/pids; "
         "workload idle & echo by=$! >> /tmp/pids; sleep 1.5")


def up(n):
    """Start topod and wait (at most 30 s) for its n-th "ready" in the log
    and the ping-pong process placed."""
    return ("topod " + CONF + " >> /tmp/topod.log 2>&1 & echo $! > /tmp/topod.pid; "
            "PP=$(sed -n 's/^pp=//p' /tmp/pids); "
            "for i in $(seq 300); do [ $(grep -c ready /tmp/topod.log) -ge %d ] && "
            "grep -q topod.slice /proc/$PP/cgroup && exit 0; sleep 0.1; done; exit 1" % n)


LATE = ("workload idle crunch-2 & echo c2=$! >> /tmp/pids; C2=$!; "
        "for i in $(seq 300); do grep -q topod.slice /proc/$C2/cgroup && exit 0; sleep 0.1; done; exit 1")
STOP = ("T=$(cat /tmp/topod.pid); kill -TERM $T; "
        "for i in $(seq 300); do [ -d /proc/$T ] || exit 0; sleep 0.1; done; exit 1")
CRASH = "kill -9 $(cat /tmp/topod.pid); sleep 0.3; cat /run/topod/journal | head -3"
# Reload: an edit moves the ping-pong group to CPUs 0-7; a broken file is
# refused with file:line and the running policy stays.
RELOAD_GOOD = ("sed -i 's/^cpus = 8-15/cpus = 0-7/' /etc/topod-test/policies.d/20-pingpong.ini; "
               "kill -HUP $(cat /tmp/topod.pid); "
               "for i in $(seq 300); do grep -q reloaded /tmp/topod.log && "
               "[ \"$(cat /sys/fs/cgroup/topod.slice/pingpong/cpuset.cpus)\" = 0-7 ] && break; sleep 0.1; done; "
               "cat /sys/fs/cgroup/topod.slice/pingpong/cpuset.cpus")
# The bad reload also carries a good edit (back to 8-15): all or nothing
# means that edit must not take effect either.
RELOAD_BAD = ("sed -i 's/^cpus = 0-7/cpus = 8-15/' /etc/topod-test/policies.d/20-pingpong.ini; "
              "printf '[policy]\\nname = broken\\n[match]\\nclas = avx\\n' > /etc/topod-test/policies.d/30-broken.ini; "
              "kill -HUP $(cat /tmp/topod.pid); "
              "for i in $(seq 300); do grep -q 'reload refused' /tmp/topod.log && break; sleep 0.1; done; sleep 2; "
              "cat /sys/fs/cgroup/topod.slice/pingpong/cpuset.cpus; grep -E '30-broken.ini:[0-9]+: error' /tmp/topod.log")


def test(args):
    r = vmlib.run_guest(
        [START,                                                        # 0
         up(1),                                                        # 1
         LOOK,                                                         # 2
         LATE,                                                         # 3
         LOOK,                                                         # 4
         STOP,                                                         # 5
         LOOK,                                                         # 6
         "ls /sys/fs/cgroup/topod.slice 2>&1; ls -A /run/topod; grep -o NO_TTWU_QUEUE /sys/kernel/debug/sched/features",  # 7
         up(2),                                                        # 8
         CRASH,                                                        # 9
         up(3),                                                        # 10
         STOP,                                                         # 11
         LOOK,                                                         # 12
         "ls /sys/fs/cgroup/topod.slice 2>&1; ls -A /run/topod",      # 13
         "cat /tmp/pids; cat /tmp/topod.log",                          # 14
         up(4),                                                        # 15
         RELOAD_GOOD,                                                  # 16
         RELOAD_BAD,                                                   # 17
         STOP],                                                        # 18
        binaries={"topod": args.topod, "topoctl": args.topoctl, "workload": args.workload},
        files={"/etc/topod-test/topod.conf": os.path.join(DATA, "topod.conf"),
               "/etc/topod-test/policies.d/10-crunch.ini": os.path.join(DATA, "10-crunch.ini"),
               "/etc/topod-test/policies.d/20-pingpong.ini": os.path.join(DATA, "20-pingpong.ini")})
    c = vmlib.Checks()
    lines = r.stdout(14).splitlines()
    pids = {k: int(v) for k, v in (l.split("=", 1) for l in lines if "=" in l and l.split("=")[0] in
                                    ("c1", "c2", "pp", "by"))}
    print("  topod log:\n    " + "\n    ".join(l for l in lines if l.startswith("topod")))

    c.eq(r.rc(1), 0, "topod started and placed the ping-pong process")
    look = threads_by_tgid(c.json(r, 2, "classify while running"), pids)
    ck = {k: sorted({t.get("cookie") for t in v}) for k, v in look.items()}
    c.true(len(ck.get("pp", [])) == 1 and ck["pp"][0] not in (0, None), "ping-pong has a cookie", str(ck))
    c.eq(ck.get("by"), [0], "bystander: no cookie")

    c.eq(r.rc(3), 0, "a process started later is placed (proc connector)")
    look = threads_by_tgid(c.json(r, 4, "classify after the late process"), pids)
    ck = {k: sorted({t.get("cookie") for t in v}) for k, v in look.items()}
    c.true(ck.get("c1") == ck.get("c2") and ck.get("c1") and ck["c1"][0] not in (0, None),
           "the late crunch-2 shares crunch-1's group cookie", str(ck))

    c.eq(r.rc(5), 0, "SIGTERM: topod stopped")
    look = threads_by_tgid(c.json(r, 6, "classify after stop"), pids)
    c.eq({k: sorted({t.get("cookie") for t in v}) for k, v in look.items()}, {k: [0] for k in look},
         "after stop: every cookie cleared")
    c.true(all(not t.get("cgroup", "").startswith("/topod.slice") for v in look.values() for t in v),
           "after stop: tasks out of topod's cgroups")
    out7 = r.stdout(7)
    c.true("No such file" in out7 and "NO_TTWU_QUEUE" not in out7 and "journal" not in out7,
           "after stop: topod.slice gone, journal removed, TTWU_QUEUE back on", out7)

    c.eq(r.rc(8), 0, "started again")
    c.true("topod-journal" in r.stdout(9), "kill -9 leaves the journal", r.stdout(9))
    c.eq(r.rc(10), 0, "restarted after the crash: recovered and placed again")
    c.true(any("recovering the journal" in l for l in lines), "the restart recovered the journal first")
    c.eq(r.rc(11), 0, "stopped again")
    look = threads_by_tgid(c.json(r, 12, "classify at the end"), pids)
    c.eq({k: sorted({t.get("cookie") for t in v}) for k, v in look.items()}, {k: [0] for k in look},
         "at the end: every cookie cleared")
    out13 = r.stdout(13)
    c.true("No such file" in out13 and out13.strip().endswith("directory"), "at the end: nothing left behind", out13)

    c.eq(r.rc(15), 0, "started a fourth time")
    c.eq(r.stdout(16).split(), ["0-7"], "SIGHUP with an edited policy: the group moves to CPUs 0-7")
    out17 = r.stdout(17).splitlines()
    c.eq(out17[:1], ["0-7"], "SIGHUP with a broken policy: nothing of the new files applies")
    c.true(any("30-broken.ini:4: error" in l for l in out17), "the refusal names file:line", r.stdout(17))
    c.eq(r.rc(18), 0, "stopped at the end")

    if c.failed:
        print("outputs: %s/out/" % r.run_dir)
    return c.finish()


if __name__ == "__main__":
    p = vmlib.add_common_args(argparse.ArgumentParser(description=__doc__))
    p.add_argument("--topod", required=True)
    p.add_argument("--topoctl", required=True)
    p.add_argument("--workload", required=True)
    vmlib.main(test, p.parse_args())
