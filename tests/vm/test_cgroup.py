#!/usr/bin/env python3
"""vm-cgroup: the cgroup writer on a real kernel (6.12, pure cgroup v2),
with the journal of originals:

  * three workloads (busy, pingpong with two threads, idle) start in a
    cgroup /work of their own; cgrouptool applies a hand-built nested plan
    under /topod.slice: node0 {0-7} / llc0 {0-3} w200 / llc1 {4-7} w300,
    node1 {8-15} / llc2 {8-11} w400 / llc3 {12-15} w500 exclusive;
  * the tree exists with that shape, cpuset.cpus.effective equals the
    LLC/node CPUs, weights as planned, the root's subtree_control got
    cpuset and cpu (journaled); the exclusive llc3 becomes a partition of
    its own (a remote partition, 6.7+: cpuset.cpus.exclusive 12-15 in
    /topod.slice, node1 and llc3, written top-down), so node1's effective
    CPUs are 8-11; on a kernel without cpuset.cpus.exclusive it cannot be a
    partition root under a member parent: reported failed with the
    kernel's own reason, not fatal;
  * processes moved whole: pingpong's threads are planned into llc1 (ping,
    the main thread) and llc2 (pong): a tie, so the main thread's group;
    /proc/<pid>/cgroup reads the new path; a pid that is not there is
    reported vanished;
  * apply again: everything already so; with cpu.idle set, cpu.weight is
    skipped, not failed;
  * restore: tasks back in /work, /topod.slice gone, the root's
    subtree_control as before, the journal removed;
  * crash: apply with one process moved, kill -9; restore from the journal
    left behind: nothing left.

Exit 0 pass, 1 fail, 77 skip (no kernel/qemu)."""

import argparse
import json
import os
import sys

sys.dont_write_bytecode = True        # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmlib  # noqa: E402

CG = "/sys/fs/cgroup"
JDIR = "/run/topod"
JFILE = JDIR + "/journal"
GROUPS = {
    "node0": ("0-7", "100"), "node0/llc0": ("0-3", "200"), "node0/llc1": ("4-7", "300"),
    "node1": ("8-15", "100"), "node1/llc2": ("8-11", "400"), "node1/llc3": ("12-15", "500"),
}

# Shell snippets shared by the commands. $busy $pp $pong $idle come from /tmp.
LOAD = ("busy=$(cat /tmp/busy); pp=$(cat /tmp/pp); idle=$(cat /tmp/idle); "
        "pong=$(ls /proc/$pp/task | grep -v \"^$pp\\$\" | head -n1)\n")
SPECS = ("$busy=node0/llc0 $pp:$pp=node0/llc1 $pp:$pong=node1/llc2 $idle=node1/llc2 "
         "99999=node0/llc0")
STATE = (LOAD +
         "echo \"root_subtree=$(cat %(cg)s/cgroup.subtree_control | tr ' ' ,)\"\n"
         "if [ -d %(cg)s/topod.slice ]; then cd %(cg)s; for d in $(find topod.slice -type d); do "
         "echo \"dir $d eff=$(cat $d/cpuset.cpus.effective) w=$(cat $d/cpu.weight) "
         "part=$(cat $d/cpuset.cpus.partition | tr ' ' _) sub=$(cat $d/cgroup.subtree_control | tr ' ' ,) "
         "x=$(if [ -e $d/cpuset.cpus.exclusive ]; then cat $d/cpuset.cpus.exclusive; else echo none; fi) "
         "procs=$(cat $d/cgroup.procs | tr '\\n' ,)\"; done; cd /; fi\n"
         "for t in busy:$busy pp:$pp idle:$idle; do n=${t%%%%:*}; p=${t#*:}; "
         "echo \"task $n $(cut -d: -f3 /proc/$p/cgroup)\"; done\n"
         "echo \"task pong $(cut -d: -f3 /proc/$pp/task/$pong/cgroup)\"\n"
         "echo \"journal_dir $(ls -A %(jdir)s 2>/dev/null | tr '\\n' ,)\"\n") % {"cg": CG, "jdir": JDIR}

COMMANDS = [
    # 0: workloads in a cgroup of their own
    "mkdir -p %s/work\n"
    "workload busy >/dev/null 2>&1 & echo $! >/tmp/busy\n"
    "workload pingpong >/dev/null 2>&1 & echo $! >/tmp/pp\n"
    "workload idle >/dev/null 2>&1 & echo $! >/tmp/idle\n"
    "sleep 1\n"
    "for f in busy pp idle; do cat /tmp/$f > %s/work/cgroup.procs; done\n" % (CG, CG) + STATE,
    # 1: apply, journaled
    LOAD + "cgrouptool apply --journal %s %s" % (JDIR, SPECS),
    # 2: the machine after it, and the journal
    STATE + "echo ---\ncat %s" % JFILE,
    # 3: again: everything already so
    LOAD + "cgrouptool apply --journal %s %s" % (JDIR, SPECS),
    # 4: cpu.idle set on llc2: its weight is skipped
    LOAD + "echo 1 > %s/topod.slice/node1/llc2/cpu.idle\n"
    "cgrouptool apply --journal %s %s\n"
    "echo 0 > %s/topod.slice/node1/llc2/cpu.idle" % (CG, JDIR, SPECS, CG),
    # 5: restore
    "cgrouptool restore --journal %s" % JDIR,
    # 6: the machine after it
    STATE,
    # 7: crash: a partial apply, then SIGKILL while it holds
    LOAD + "rm -f /tmp/held\n"
    "cgrouptool apply --journal %s --moves 1 --hold /tmp/held %s >/tmp/crash.out &\n"
    "pid=$!\n"
    "n=0; while [ ! -e /tmp/held ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done\n"
    "kill -9 $pid; wait $pid; echo \"killed rc=$?\"\n" % (JDIR, SPECS) + STATE + "echo ---\ncat %s" % JFILE,
    # 8: the next start recovers
    "cgrouptool restore --journal %s" % JDIR,
    # 9: nothing left behind
    STATE,
]


def parse_state(text):
    st = {"dirs": {}, "tasks": {}, "root_subtree": None, "journal_dir": None}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0].startswith("root_subtree="):
            st["root_subtree"] = parts[0].split("=", 1)[1]
        elif parts[0] == "dir" and len(parts) >= 2:
            st["dirs"][parts[1]] = dict(p.split("=", 1) for p in parts[2:] if "=" in p)
        elif parts[0] == "task" and len(parts) >= 2:
            st["tasks"][parts[1]] = parts[2] if len(parts) > 2 else ""
        elif parts[0] == "journal_dir":
            st["journal_dir"] = parts[1] if len(parts) > 1 else ""
    return st


def items(rep, kind=None, path=None):
    out = []
    for it in rep.get("items", []) if isinstance(rep, dict) else []:
        if (kind is None or it.get("kind") == kind) and (path is None or it.get("path") == path):
            out.append(it)
    return out


def load(r, i, c, what):
    try:
        return json.loads(r.stdout(i))
    except ValueError as e:
        c.true(False, what + ": JSON (%s)" % e, r[i].describe())
        return {}


def test(args):
    r = vmlib.run_guest(COMMANDS, binaries={"cgrouptool": args.cgrouptool,
                                            "workload": args.workload},
                        cmd_timeout=240, timeout=900)
    c = vmlib.Checks()

    # 0: the starting point
    s0 = parse_state(r.stdout(0))
    for t in ("busy", "pp", "idle", "pong"):
        c.eq(s0["tasks"].get(t), "/work", "before: %s in /work" % t)
    c.eq(s0["root_subtree"], "", "before: the root's subtree_control is empty")
    c.eq(s0["dirs"], {}, "before: no /topod.slice")

    # 1: apply
    a = load(r, 1, c, "apply")
    text2 = r.stdout(2).split("---")
    s2 = parse_state(text2[0])
    # 6.7+: cpuset.cpus.exclusive makes the exclusive llc3 a remote partition.
    remote = s2["dirs"].get("topod.slice", {}).get("x", "none") != "none"
    part = items(a, "cpuset.cpus.partition", "/topod.slice/node1/llc3")
    if remote:
        c.eq(r.rc(1), 0, "apply: exit 0 (llc3 a partition of its own)")
        c.eq(c.get(a, "failed"), 0, "apply: nothing failed")
        c.true(len(part) == 1 and part[0]["outcome"] == "done", "apply: llc3 partition root done",
               json.dumps(part))
        excl = [(it["path"], it["value"], it["outcome"]) for it in items(a, "cpuset.cpus.exclusive")]
        c.eq(excl, [("/topod.slice", "12-15", "done"), ("/topod.slice/node1", "12-15", "done"),
                    ("/topod.slice/node1/llc3", "12-15", "done")],
             "apply: cpuset.cpus.exclusive down to llc3, top-down")
    else:
        c.eq(r.rc(1), 1, "apply: exit 1 (the invalid partition is a failure)")
        c.eq(c.get(a, "failed"), 1, "apply: exactly one item failed")
        c.true(len(part) == 1 and part[0]["outcome"] == "failed" and
               str(part[0]["reason"]).startswith("root invalid ("),
               "apply: llc3 partition failed with the kernel's reason", json.dumps(part))
    for kind in ("mkdir", "cpuset.cpus", "cpuset.mems", "cpu.weight", "cpuset.cpus.effective"):
        bad = [it for it in items(a, kind) if it["outcome"] not in ("done", "already")]
        c.eq(bad, [], "apply: every %s item done or already" % kind)
    ctl = [(it["path"], it["value"], it["outcome"], it["journaled"])
           for it in items(a, "controller", "/")]
    c.eq(ctl, [("/", "+cpuset", "done", True), ("/", "+cpu", "done", True)],
         "apply: cpuset and cpu enabled at the root, journaled")
    moves = {it["tgid"]: it for it in items(a, "move")}
    vanished = moves.get(99999, {})
    c.eq(vanished.get("outcome"), "vanished", "apply: a pid that is not there is vanished")
    c.eq(vanished.get("error"), None, "apply: vanished is not an error")
    done_moves = [it for it in items(a, "move") if it["outcome"] == "done"]
    c.eq(len(done_moves), 3, "apply: three processes moved")
    c.true(all(it["from"] == "/work" and it["journaled"] for it in done_moves),
           "apply: moved from /work, journaled", json.dumps(done_moves))

    # 2: the machine
    c.eq(sorted(s2["dirs"]), sorted(["topod.slice"] + ["topod.slice/" + g for g in GROUPS]),
         "after apply: the tree's shape")
    for g, (cpus, w) in GROUPS.items():
        d = s2["dirs"].get("topod.slice/" + g, {})
        if remote and g == "node1":
            cpus = "8-11"  # 12-15 are llc3's alone
        c.eq(d.get("eff"), cpus, "after apply: %s cpuset.cpus.effective" % g)
        c.eq(d.get("w"), w, "after apply: %s cpu.weight" % g)
    for inner in ("topod.slice", "topod.slice/node0", "topod.slice/node1"):
        c.eq(s2["dirs"].get(inner, {}).get("sub"), "cpuset,cpu", "after apply: %s enables cpuset,cpu" % inner)
    llc3 = s2["dirs"].get("topod.slice/node1/llc3", {})
    if remote:
        c.eq(llc3.get("part"), "root", "after apply: llc3 is a valid partition root")
        c.eq([s2["dirs"].get("topod.slice/" + g, {}).get("x") for g in ("node0", "node0/llc0", "node1/llc2")],
             ["", "", ""], "after apply: no exclusive CPUs outside llc3's line")
    else:
        c.true(llc3.get("part", "").startswith("root_invalid"), "after apply: llc3 partition reads root invalid",
               str(llc3))
    c.eq(s2["root_subtree"], "cpuset,cpu", "after apply: the root's subtree_control")
    c.eq(s2["tasks"].get("busy"), "/topod.slice/node0/llc0", "after apply: busy in llc0")
    c.eq(s2["tasks"].get("pp"), "/topod.slice/node0/llc1", "after apply: pingpong in llc1 (main thread's group on a tie)")
    c.eq(s2["tasks"].get("pong"), "/topod.slice/node0/llc1", "after apply: pong moved with its process")
    c.eq(s2["tasks"].get("idle"), "/topod.slice/node1/llc2", "after apply: idle in llc2")
    jl = text2[1].strip().splitlines() if len(text2) > 1 else []
    c.eq(jl[:1], ["topod-journal 1"], "journal: header")
    c.eq(len([l for l in jl if l.startswith("task ") and l.endswith(" /work")]), 3,
         "journal: three tasks with original /work")
    c.true("cgroup /cgroup.subtree_control/cpuset" in jl and "cgroup /topod.slice" in jl,
           "journal: the root's controller and the created cgroups", "\n".join(jl))

    # 3: idempotent
    a3 = load(r, 3, c, "apply again")
    changed = [it for it in items(a3) if it["outcome"] == "done" and it["kind"] != "cpuset.cpus.effective"]
    c.eq(changed, [], "apply again: nothing done (all already)")
    c.eq(c.get(a3, "failed"), 0 if remote else 1,
         "apply again: nothing fails" if remote else "apply again: only the invalid partition fails again")
    c.eq(c.get(a3, "counts.already") > 20 if isinstance(c.get(a3, "counts.already"), int) else False, True,
         "apply again: items already so")

    # 4: cpu.idle
    a4 = load(r, 4, c, "apply with cpu.idle")
    w = items(a4, "cpu.weight", "/topod.slice/node1/llc2")
    c.true(len(w) == 1 and w[0]["outcome"] == "skipped" and "cpu.idle" in str(w[0]["reason"]),
           "cpu.idle: the weight is skipped with a reason", json.dumps(w))

    # 5, 6: restore
    rs = load(r, 5, c, "restore")
    c.eq(r.rc(5), 0, "restore: exit 0")
    c.eq(c.get(rs, "failed"), 0, "restore: nothing failed")
    c.eq(c.get(rs, "journal_removed"), True, "restore: journal removed")
    s6 = parse_state(r.stdout(6))
    for t in ("busy", "pp", "idle", "pong"):
        c.eq(s6["tasks"].get(t), "/work", "after restore: %s back in /work" % t)
    c.eq(s6["dirs"], {}, "after restore: /topod.slice gone")
    c.eq(s6["root_subtree"], "", "after restore: the root's subtree_control as before")
    c.eq(s6["journal_dir"], "", "after restore: the journal directory is empty")

    # 7: crash
    parts = r.stdout(7).split("---")
    c.true(parts[0].startswith("killed rc=137"), "crash: killed by SIGKILL while holding", parts[0][:200])
    s7 = parse_state(parts[0])
    c.eq(s7["tasks"].get("busy"), "/topod.slice/node0/llc0", "crash: the first process was moved")
    c.eq(s7["tasks"].get("idle"), "/work", "crash: the others were not")
    c.true("topod.slice" in s7["dirs"], "crash: the tree is left behind")
    jl7 = parts[1].strip().splitlines() if len(parts) > 1 else []
    c.true(any(l.startswith("task ") for l in jl7) and jl7[-1:] and jl7[-1].startswith("end "),
           "crash: a complete journal left behind", "\n".join(jl7))

    # 8, 9: recovery
    rs = load(r, 8, c, "restore after crash")
    c.eq(c.get(rs, "journal_found"), True, "recovery: journal found")
    c.eq(c.get(rs, "failed"), 0, "recovery: nothing failed")
    c.eq(c.get(rs, "journal_removed"), True, "recovery: journal removed")
    s9 = parse_state(r.stdout(9))
    for t in ("busy", "pp", "idle", "pong"):
        c.eq(s9["tasks"].get(t), "/work", "after recovery: %s in /work" % t)
    c.eq(s9["dirs"], {}, "after recovery: /topod.slice gone")
    c.eq(s9["root_subtree"], "", "after recovery: the root's subtree_control as before")
    c.eq(s9["journal_dir"], "", "after recovery: nothing left in the journal directory")

    if c.failed:
        print("outputs: %s/out/  (see commands.txt there)" % r.run_dir)
    return c.finish()


if __name__ == "__main__":
    p = vmlib.add_common_args(argparse.ArgumentParser(description=__doc__))
    p.add_argument("--cgrouptool", required=True, help="path to the cgrouptool binary")
    p.add_argument("--workload", required=True, help="path to the workload binary")
    vmlib.main(test, p.parse_args())
