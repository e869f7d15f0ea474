#!/usr/bin/env python3
"""vm-apply: topod applies a plan on a real kernel and puts everything back.

Explicit rules (tests/vm/data/apply/): processes named crunch-* share one
core-scheduling cookie and are spread over LLCs; the ping-pong pair gets a
cookie per process, CPUs 8-15, weight 300, and TTWU_QUEUE off. A bystander
is left alone. `topod --oneshot` applies (journaling originals), a second
run finds everything already so, `topod --restore` puts back features,
cgroups and cookies and removes the journal. With --nosmt the same policies
on a nosmt guest: no cookies (reported, not failed), the rest applied.
Then an exclusive group inside the ping-pong group's CPUs (a valid
partition, the others' CPUs as planned), and the same policies with
hierarchy = nested (node and LLC directories, the groups below).
Exit 0 pass, 1 fail, 77 skip."""

import argparse
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmlib  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "apply")
CONF = "--config /etc/topod-test/topod.conf"

START = ("workload idle crunch-1 & echo c1=$! > /tmp/pids; "
         "workload idle crunch-2 & echo c2=$! >> /tmp/pids; "
         "workload pingpong & echo pp=$! >> /tmp/pids; "
         "workload idle & echo by=$! >> /tmp/pids; "
         # the renames happen after 1 s (and the pair's second thread): 20 s at most
         "for i in $(seq 200); do C1=$(sed -n 's/^c1=//p' /tmp/pids); C2=$(sed -n 's/^c2=//p' /tmp/pids); "
         "PP=$(sed -n 's/^pp=//p' /tmp/pids); "
         "[ \"$(cat /proc/$C1/comm)\" = crunch-1 ] && [ \"$(cat /proc/$C2/comm)\" = crunch-2 ] && [ $(ls /proc/$PP/task | wc -l) -ge 2 ] && break; sleep 0.1; done; "
         "sleep 0.1")
LOOK = "topoctl classify --samples 1 --interval 100ms --json " + CONF
CGROUPS = ("for d in /sys/fs/cgroup/topod.slice/*/; do "
           "echo $(basename $d) $(cat $d/cpuset.cpus.effective) $(cat $d/cpu.weight); done")


def threads_by_tgid(look, pids):
    out = {}
    for t in (look or {}).get("threads", []):
        for name, pid in pids.items():
            if t.get("tgid") == pid:
                out.setdefault(name, []).append(t)
    return out


# An exclusive group on CPUs 8-9, inside the ping-pong group's 8-15 (and
# maybe a crunch LLC group's): the kernel makes a partition valid only when
# no sibling's cpuset.cpus overlaps it, so the plan takes 8-9 from the
# others. The partition reads "root", and every group's effective CPUs are
# its planned ones.
EXCLUSIVE = ("printf '[policy]\\nname = vm-pinned\\npriority = 400\\n[match]\\ncomm = pinned\\n"
             "[place]\\ngroup = pinned\\ncpus = 8-9\\nexclusive = yes\\ncookie = none\\n' "
             "> /etc/topod-test/policies.d/30-pinned.ini; workload idle pinned & P=$!; "
             "for i in $(seq 200); do [ \"$(cat /proc/$P/comm)\" = pinned ] && break; sleep 0.1; done; "
             "topod --oneshot --json " + CONF + "; echo rc=$?; rm /etc/topod-test/policies.d/30-pinned.ini")

# The same policies with hierarchy = nested: the planner's tree, node and
# LLC directories with their cpusets, the groups below them.
NESTED = ("sed 's/^hierarchy = flat/hierarchy = nested/' /etc/topod-test/topod.conf > /etc/topod-test/nested.conf; "
          "topod --oneshot --config /etc/topod-test/nested.conf > /dev/null; echo rc=$?; "
          "cd /sys/fs/cgroup/topod.slice && find . -mindepth 1 -type d | sort | while read d; do "
          "echo ${d#./} $(cat $d/cpuset.cpus.effective) $(cat $d/cpu.weight); done")


def test(args):
    nosmt = args.nosmt
    r = vmlib.run_guest(
        [START,
         "topod --oneshot --json " + CONF,                                   # 1
         LOOK,                                                               # 2
         "cat /sys/kernel/debug/sched/features",                            # 3
         CGROUPS,                                                            # 4
         "cat /run/topod/journal",                                           # 5
         "topod --oneshot --json " + CONF,                                   # 6
         "topoctl reset --json",                                             # 7
         LOOK,                                                               # 8
         "cat /sys/kernel/debug/sched/features",                            # 9
         "ls /sys/fs/cgroup/topod.slice 2>&1; ls -A /run/topod",            # 10
         "cat /tmp/pids",                                                    # 11
         "topod --oneshot " + CONF + " > /dev/null; topoctl plan --json " + CONF,     # 12
         "topoctl reset > /dev/null; topoctl plan --json " + CONF,                    # 13
         EXCLUSIVE,                                                                   # 14
         "for d in /sys/fs/cgroup/topod.slice/*/; do echo $(basename $d) $(cat $d/cpuset.cpus) "
         "$(cat $d/cpuset.cpus.effective) $(cat $d/cpuset.cpus.partition); done",    # 15
         "topoctl reset > /dev/null; echo rc=$?; ls /sys/fs/cgroup/topod.slice 2>&1",  # 16
         NESTED,                                                                      # 17
         "topoctl reset > /dev/null; echo rc=$?; ls /sys/fs/cgroup/topod.slice 2>&1"],  # 18
        binaries={"topod": args.topod, "topoctl": args.topoctl, "workload": args.workload},
        files={"/etc/topod-test/topod.conf": os.path.join(DATA, "topod.conf"),
               "/etc/topod-test/policies.d/10-crunch.ini": os.path.join(DATA, "10-crunch.ini"),
               "/etc/topod-test/policies.d/20-pingpong.ini": os.path.join(DATA, "20-pingpong.ini")},
        append_extra="nosmt" if nosmt else "",
        name="test_apply_nosmt" if nosmt else "test_apply")
    c = vmlib.Checks()
    pids = {k: int(v) for k, v in (line.split("=", 1) for line in r.stdout(11).split())}

    rep = c.json(r, 1, "topod --oneshot (apply)")
    counts = c.get(rep, "counts") or {}
    failed = [i for i in c.get(rep, "items") or [] if i.get("status") == "failed"]
    c.eq(failed, [], "apply: no failed items")
    c.true(counts.get("done", 0) > 0, "apply: changes were made", str(counts))

    look = threads_by_tgid(c.json(r, 2, "classify after apply"), pids)
    cookies = {k: sorted({t.get("cookie") for t in v}) for k, v in look.items()}
    cg = {k: sorted({t.get("cgroup") for t in v}) for k, v in look.items()}
    print("  cookies after apply:", cookies)
    print("  cgroups after apply:", cg)
    if nosmt:
        for k in ("c1", "c2", "pp", "by"):
            c.eq(cookies.get(k), [None], "%s: no cookie reading on nosmt (ENODEV)" % k)
        skipped = [i for i in c.get(rep, "items") or [] if i.get("status") == "skipped"
                   and "cookie" in (i.get("reason") or "")]
        c.true(len(skipped) > 0, "nosmt: cookie items reported skipped")
    else:
        c.true(cookies.get("c1") == cookies.get("c2") and len(cookies.get("c1", [])) == 1
               and cookies["c1"][0] not in (0, None), "crunch-1 and crunch-2 share one cookie",
               str(cookies))
        c.true(len(cookies.get("pp", [])) == 1 and cookies["pp"][0] not in (0, None)
               and cookies["pp"] != cookies.get("c1"), "ping-pong: one cookie of its own", str(cookies))
        c.eq(cookies.get("by"), [0], "bystander: no cookie")
    c.eq(sorted(cg.get("c1", []) + cg.get("c2", [])), ["/topod.slice/crunch-llc0", "/topod.slice/crunch-llc1"],
         "crunch processes spread over two LLC groups")
    c.eq(cg.get("pp"), ["/topod.slice/pingpong"], "ping-pong group")
    c.true(cg.get("by") and not cg["by"][0].startswith("/topod.slice"), "bystander not moved", str(cg.get("by")))

    c.contains(r.stdout(3).split(), "NO_TTWU_QUEUE", "feature TTWU_QUEUE off after apply")
    groups = {line.split()[0]: line.split()[1:] for line in r.stdout(4).splitlines() if line.strip()}
    # With nosmt the odd CPUs (the second siblings) are offline: the
    # effective cpuset is the planned one's online part.
    want = {"crunch-llc0": "0,2" if nosmt else "0-3", "crunch-llc1": "4,6" if nosmt else "4-7",
            "pingpong": "8,10,12,14" if nosmt else "8-15"}
    c.eq(groups.get("crunch-llc0"), [want["crunch-llc0"], "100"], "crunch-llc0: effective cpuset and weight")
    c.eq(groups.get("crunch-llc1"), [want["crunch-llc1"], "100"], "crunch-llc1: effective cpuset and weight")
    c.eq(groups.get("pingpong"), [want["pingpong"], "300"], "pingpong: effective cpuset, weight 300")
    c.true("feature TTWU_QUEUE on" in r.stdout(5), "journal holds the original TTWU_QUEUE", r.stdout(5))

    rep2 = c.json(r, 6, "topod --oneshot again")
    c.eq((c.get(rep2, "counts") or {}).get("done"), 0, "second apply: nothing to change")
    c.eq((c.get(rep2, "counts") or {}).get("failed"), 0, "second apply: nothing failed")

    rest = c.json(r, 7, "topod --restore")
    c.eq((c.get(rest, "counts") or {}).get("failed"), 0, "restore: nothing failed")
    look = threads_by_tgid(c.json(r, 8, "classify after restore"), pids)
    after_cookies = {k: sorted({t.get("cookie") for t in v}) for k, v in look.items()}
    after_cg = {k: sorted({t.get("cgroup") for t in v}) for k, v in look.items()}
    if not nosmt:
        c.eq(after_cookies, {k: [0] for k in look}, "restore: every cookie cleared")
    c.true(all(not g.startswith("/topod.slice") for v in after_cg.values() for g in v),
           "restore: tasks back out of topod's cgroups", str(after_cg))
    c.eq(after_cg.get("c1"), cg.get("by"), "restore: crunch-1 back where the bystander is (its original)")
    c.contains(r.stdout(9).split(), "TTWU_QUEUE", "restore: TTWU_QUEUE on again")
    c.true("No such file" in r.stdout(10) and r.stdout(10).strip().endswith("directory"),
           "restore: topod.slice gone and the journal removed", r.stdout(10))

    # topoctl plan: nothing to change right after an apply, the whole plan
    # to do again after a reset.
    applied = c.json(r, 12, "topoctl plan after apply")
    c.eq((c.get(applied, "counts") or {}).get("differs"), 0, "plan after apply: nothing differs")
    c.true((c.get(applied, "counts") or {}).get("same", 0) > 0, "plan after apply: items compared")
    reset = c.json(r, 13, "topoctl plan after reset")
    c.true((c.get(reset, "counts") or {}).get("differs", 0) > 0, "plan after reset: changes to make",
           str(c.get(reset, "counts")))

    out14 = r.stdout(14)
    c.true(out14.rstrip().endswith("rc=0"), "an exclusive group inside another's CPUs: applied, nothing failed",
           out14[-2000:])
    groups = {f[0]: f[1:] for f in (l.split(None, 3) for l in r.stdout(15).splitlines()) if len(f) >= 3}
    # nosmt: the odd CPUs are offline, and plans hold the online ones.
    pinned, rest = ("8", "10,12,14") if nosmt else ("8-9", "10-15")
    c.eq((groups.get("pinned") or [None] * 3)[1:3], [pinned, "root"],
         "the exclusive group: CPUs %s, a valid partition" % pinned)
    c.eq((groups.get("pingpong") or [None])[0], rest, "the ping-pong group gave them up (planned 8-15)")
    bad = {g: v for g, v in groups.items() if g != "pinned" and (len(v) < 2 or v[0] != v[1])}
    c.eq(bad, {}, "every other group's effective CPUs are its planned ones")
    c.true("rc=0" in r.stdout(16) and "No such file" in r.stdout(16), "reset after it: topod.slice gone",
           r.stdout(16))

    out17 = r.stdout(17).splitlines()
    c.eq(out17[:1], ["rc=0"], "hierarchy = nested: applied, nothing failed")
    tree = {l.split()[0]: l.split()[1:] for l in out17[1:] if l.strip()}
    llc = lambda a, b: "%d,%d" % (a, a + 2) if nosmt else "%d-%d" % (a, b)
    want = {"node0": ["0,2,4,6" if nosmt else "0-7", "100"],
            "node0/llc0": [llc(0, 3), "100"], "node0/llc0/crunch": [llc(0, 3), "100"],
            "node0/llc1": [llc(4, 7), "100"], "node0/llc1/crunch": [llc(4, 7), "100"],
            "pingpong": ["8,10,12,14" if nosmt else "8-15", "300"]}
    c.eq(tree, want, "hierarchy = nested: node and LLC directories with their CPUs, the groups below")
    c.true("rc=0" in r.stdout(18) and "No such file" in r.stdout(18), "reset after it: topod.slice gone",
           r.stdout(18))

    if c.failed:
        print("outputs: %s/out/" % r.run_dir)
    return c.finish()


if __name__ == "__main__":
    p = vmlib.add_common_args(argparse.ArgumentParser(description=__doc__))
    p.add_argument("--topod", required=True)
    p.add_argument("--topoctl", required=True)
    p.add_argument("--workload", required=True)
    p.add_argument("--nosmt", action="store_true")
    vmlib.main(test, p.parse_args())
