#!/usr/bin/env python3
"""vm-drift: `topoctl plan --check` against the running topod on a real
kernel, and a reload that moves cgroup_root.

The apply test's ping-pong policy (tests/vm/data/apply/20-pingpong.ini:
cpus 8-15, weight 300, a cookie per process, TTWU_QUEUE off) under the
apply test's topod.conf (cgroup_root /topod.slice).

  1. topod places the pair; `plan --check` exits 0 (text and --json: no
     drift, nothing skipped: this guest has every mechanism).
  2. Drift by hand: the group's cpuset.cpus written behind topod's back
     (0-3) while topod is stopped (SIGSTOP: its next pass would put it
     back), and the plan computed by topoctl (--config): --check exits 1
     and names it ("differs cgroup /topod.slice/pingpong cpuset.cpus:
     planned 8-15, now 0-3"); --json says drift. topod continued puts it
     back; its --check exits 0 again.
  3. A reload that changes cgroup_root to /topod-b.slice: the pair is
     moved to /topod-b.slice/pingpong with its cpuset, the old tree
     /topod.slice is removed (topod made it), a directory the operator
     made in the old tree beforehand (/topod.slice/keep, not topod's) is
     kept, and --check exits 0. topod stops: the new tree goes, the pair
     is back in /.
  4. The cpu controller bound to a cgroup v1 hierarchy (this kernel has no
     v1 cpuset): the cgroup2 mount lacks it. topod again: --check exits 0
     and lists cpu.weight as skipped, "cpu controller not available on the
     cgroup2 mount (bound to cgroup v1)"; explain says weight skipped.

Exit 0 pass, 1 fail, 77 skip."""

import argparse
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vmlib  # noqa: E402

APPLY = os.path.join(HERE, "data", "apply")
CONF = "--config /etc/topod-test/topod.conf"
PP = "PP=$(sed -n 's/^pp=//p' /tmp/pids); "

START = "workload pingpong & echo pp=$! > /tmp/pids; sleep 1.5"


def up(root, n):
    """topod started, its n-th ready seen and the pair in root's group
    with the planned cpuset (60 s at most: TCG)."""
    return ("topod " + CONF + " >> /tmp/topod.log 2>&1 & echo $! > /tmp/topod.pid; " + PP +
            "for i in $(seq 600); do [ $(grep -c ready /tmp/topod.log) -ge %d ] && "
            "grep -q %s/pingpong /proc/$PP/cgroup && exit 0; sleep 0.1; done; exit 1" % (n, root))


# --check, waiting past the plan reply's cache (1 s) first.
CHECK = "sleep 1.2; topoctl plan --check; echo rc=$?"
CHECK_JSON = "sleep 1.2; topoctl plan --check --json; echo rc=$? >&2"
# The running topod puts a difference back at its next pass (the busy
# pair keeps it passing every sample interval): stopped meanwhile, and the
# plan computed here (--config: not asked of topod) against the machine.
HERE_CHECK = "topoctl plan --check " + CONF
DRIFT = ("kill -STOP $(cat /tmp/topod.pid); echo 0-3 > /sys/fs/cgroup/topod.slice/pingpong/cpuset.cpus; "
         "cat /sys/fs/cgroup/topod.slice/pingpong/cpuset.cpus; " + HERE_CHECK + "; echo rc=$?")
DRIFT_JSON = HERE_CHECK + " --json; echo rc=$? >&2; kill -CONT $(cat /tmp/topod.pid)"
# topod's next pass (a timer pass finds the difference) puts it back.
HEAL = ("for i in $(seq 600); do [ \"$(cat /sys/fs/cgroup/topod.slice/pingpong/cpuset.cpus)\" = 8-15 ] && break; "
        "kill -HUP $(cat /tmp/topod.pid); sleep 0.5; done; cat /sys/fs/cgroup/topod.slice/pingpong/cpuset.cpus; " + CHECK)
MOVE_ROOT = ("mkdir /sys/fs/cgroup/topod.slice/keep; "
             "sed -i 's|^cgroup_root = /topod.slice|cgroup_root = /topod-b.slice|' /etc/topod-test/topod.conf; "
             "topoctl reload; echo reload=$?; " + PP +
             "for i in $(seq 600); do grep -q topod-b.slice/pingpong /proc/$PP/cgroup && break; sleep 0.1; done; "
             "cat /proc/$PP/cgroup; cat /sys/fs/cgroup/topod-b.slice/pingpong/cpuset.cpus; "
             "ls /sys/fs/cgroup/topod.slice/ | grep -v '^cgroup\\.\\|^cpu\\|^memory\\|^io\\.\\|^pids\\.' ; "
             "[ -d /sys/fs/cgroup/topod.slice/pingpong ] && echo old-group-left; " + CHECK)
STOP = ("T=$(cat /tmp/topod.pid); kill -TERM $T; "
        "for i in $(seq 300); do [ -d /proc/$T ] || break; sleep 0.1; done; " + PP +
        "cat /proc/$PP/cgroup; ls -d /sys/fs/cgroup/topod-b.slice 2>&1; ls /run/topod")
HYBRID = ("rmdir /sys/fs/cgroup/topod.slice/keep /sys/fs/cgroup/topod.slice 2>/dev/null; "
          "sed -i 's|^cgroup_root = /topod-b.slice|cgroup_root = /topod.slice|' /etc/topod-test/topod.conf; "
          "cat /sys/fs/cgroup/cgroup.subtree_control; mkdir -p /tmp/v1cpu; "
          "mount -t cgroup -o cpu cgv1 /tmp/v1cpu; echo mount=$?; cat /sys/fs/cgroup/cgroup.controllers")
EXPLAIN = PP + "topoctl explain $PP"


def test(args):
    r = vmlib.run_guest(
        [START,                      # 0
         up("/topod.slice", 1),      # 1
         CHECK,                      # 2
         CHECK_JSON,                 # 3
         DRIFT,                      # 4
         DRIFT_JSON,                 # 5
         HEAL,                       # 6
         MOVE_ROOT,                  # 7
         STOP,                       # 8
         HYBRID,                     # 9
         up("/topod.slice", 2),      # 10
         CHECK,                      # 11
         EXPLAIN,                    # 12
         STOP],                      # 13
        binaries={"topod": args.topod, "topoctl": args.topoctl, "workload": args.workload},
        files={"/etc/topod-test/topod.conf": os.path.join(APPLY, "topod.conf"),
               "/etc/topod-test/policies.d/20-pingpong.ini": os.path.join(APPLY, "20-pingpong.ini")},
        timeout=900)
    c = vmlib.Checks()
    c.eq(r.rc(1), 0, "topod started and placed the ping-pong pair")

    out = r.stdout(2)
    c.true(out.rstrip().endswith("rc=0"), "after the pass: plan --check exits 0", out)
    c.true("skipped" not in out.split("rc=")[0].replace("0 skipped", ""), "after the pass: nothing skipped here", out)
    j = c.json(r, 3, "plan --check --json after the pass")
    c.eq(c.get(j, "drift"), False, "--json after the pass: no drift")
    c.eq((c.get(j, "counts") or {}).get("differs"), 0, "--json after the pass: nothing differs")
    c.true("rc=0" in r.stderr(3), "--check --json after the pass exits 0", r.stderr(3))

    out = r.stdout(4)
    c.true(out.startswith("0-3"), "drift made by hand: cpuset.cpus reads 0-3", out)
    c.true("differs  cgroup   /topod.slice/pingpong cpuset.cpus: planned 8-15, now 0-3" in out,
           "--check names the drifted cpuset.cpus", out)
    c.true(out.rstrip().endswith("rc=1"), "--check exits 1 on the drift", out)
    j = c.json(r, 5, "plan --check --json with the drift", )
    c.eq(c.get(j, "drift"), True, "--json with the drift: drift true")
    c.true(any(d.get("state") == "differs" and d.get("what") == "/topod.slice/pingpong cpuset.cpus"
               for d in (c.get(j, "differences") or [])), "--json names the drifted item", str(c.get(j, "differences")))
    c.true("rc=1" in r.stderr(5), "--check --json with the drift exits 1", r.stderr(5))

    out = r.stdout(6)
    c.true(out.startswith("8-15") and out.rstrip().endswith("rc=0"), "topod put it back: --check exits 0 again", out)

    out = r.stdout(7)
    c.true("reload=0" in out, "reload with a new cgroup_root: exit 0", out + r.stderr(7))
    c.true("0::/topod-b.slice/pingpong" in out, "the pair moved to the new tree", out)
    c.true("\n8-15\n" in out, "the new group's cpuset.cpus is the plan's", out)
    c.true("keep" in out.split() and "pingpong" not in out.split() and "old-group-left" not in out,
           "the old tree: topod's group removed, the operator's directory kept", out)
    c.true(out.rstrip().endswith("rc=0"), "after the move: plan --check exits 0", out)

    out = r.stdout(8)
    c.true(out.startswith("0::/\n"), "stop: the pair back in /", out)
    c.true("No such file" in out, "stop: the new tree removed", out + r.stderr(8))

    out = r.stdout(9)
    c.true("mount=0" in out and "cpu" not in out.split("mount=0")[1].split(),
           "the cpu controller bound to v1: not in cgroup2's cgroup.controllers", out + r.stderr(9))
    c.eq(r.rc(10), 0, "topod again, the pair placed")
    out = r.stdout(11)
    c.true(out.rstrip().endswith("rc=0"), "hybrid: plan --check exits 0", out)
    c.true("skipped  cgroup   /topod.slice/pingpong cpu.weight: planned 300, not applied here: cpu controller "
           "not available on the cgroup2 mount (bound to cgroup v1)" in out, "hybrid: cpu.weight skipped, and why", out)
    c.true("same" not in out and "differs" not in out, "hybrid: no drift listed", out)
    c.true("weight    skipped: cpu controller not available on the cgroup2 mount (bound to cgroup v1)" in r.stdout(12),
           "hybrid: explain says weight is skipped, and why", r.stdout(12))
    return c.finish()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--topod", required=True)
    ap.add_argument("--topoctl", required=True)
    ap.add_argument("--workload", required=True)
    vmlib.add_common_args(ap)
    args = ap.parse_args()
    vmlib.main(test, args)


if __name__ == "__main__":
    main()
