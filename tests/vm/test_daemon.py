#!/usr/bin/env python3
"""vm-daemon: the long-running topod on a real kernel.

The apply test's policies (tests/vm/data/apply/). topod starts, applies,
places a process started after it (found through the proc connector: its
cookie joins its group's), and on SIGTERM puts everything back. Then a
kill -9 leaves the journal behind, and the next start recovers from it
first. SIGHUP reloads: an edited policy takes effect, a broken one is
refused with file:line and the running policy stays. Last, a sched_ext
scheduler "loaded" and "unloaded" while topod runs (see SCX_ON): the
cookies and the worker's keep-alive go and come back.

Processes named plain-* (a policy of their own, no cookie) are started in a
cgroup "orig" once topod runs: the first through a pass (its group is new),
the second, after a restart, by the fast path at its exec, which, where
pidfds are pidfs inodes (6.9+; topod's status says so), journals it by its
pidfd's inode ("pidfs:N") until the next pass names it by its start time;
the recovery after kill -9 and the stops put both back into "orig". (That
the fast path writes "pidfs:N" is shown by test-fastpath, test-cgroup and,
on the host's kernel, test-cookie: here a pass may rename it first.) Exit 0 pass, 1 fail, 77 skip."""

import argparse
import json
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmlib  # noqa: E402
from test_apply import CONF, DATA, LOOK, threads_by_tgid  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

START = ("mkdir -p /sys/fs/cgroup/orig; ln -sf $(command -v workload) /tmp/plain-1; "
         "ln -sf $(command -v workload) /tmp/plain-2; uname -r > /tmp/release; "
         "workload idle crunch-1 & echo c1=$! > /tmp/pids; "
         "workload pingpong & echo pp=$! >> /tmp/pids; "
         "workload idle & echo by=$! >> /tmp/pids; sleep 1.5")


def up(n):
    """Start topod and wait (at most 30 s) for its n-th "ready" in the log
    and the ping-pong process placed."""
    return ("topod " + CONF + " >> /tmp/topod.log 2>&1 & echo $! > /tmp/topod.pid; "
            "PP=$(sed -n 's/^pp=//p' /tmp/pids); "
            "for i in $(seq 300); do [ $(grep -c ready /tmp/topod.log) -ge %d ] && "
            "grep -q topod.slice /proc/$PP/cgroup && exit 0; sleep 0.1; done; exit 1" % n)


# A process exec'd from /tmp/plain-N is called plain-N from its exec on:
# the fast path's to place, not a rename after the exec that a pass places.
def plain(n):
    """Start plain-n in /orig, wait for it to be placed, print its journal
    entry (the file and the fast path's log)."""
    return ("sh -c 'echo $$ > /sys/fs/cgroup/orig/cgroup.procs; exec /tmp/plain-%d idle' & "
            "echo p%d=$! >> /tmp/pids; P=$!; "
            "for i in $(seq 300); do grep -q topod.slice /proc/$P/cgroup && break; sleep 0.1; done; "
            "cat /proc/$P/cgroup; cat /run/topod/journal /run/topod/journal.log 2>/dev/null | tr -d '\\000' | grep \"^task $P \"; "
            "topoctl status --json > /tmp/status.json; "
            "grep -q topod.slice /proc/$P/cgroup" % (n, n))


LATE = ("workload idle crunch-2 & echo c2=$! >> /tmp/pids; C2=$!; "
        "for i in $(seq 300); do grep -q topod.slice /proc/$C2/cgroup && break; sleep 0.1; done; "
        + plain(1) + " && grep -q topod.slice /proc/$C2/cgroup")
STOP = ("T=$(cat /tmp/topod.pid); kill -TERM $T; "
        "for i in $(seq 300); do [ -d /proc/$T ] || exit 0; sleep 0.1; done; exit 1")
CRASH = (plain(2) + "; T=$(cat /tmp/topod.pid); kill -9 $T; "
         "for i in $(seq 300); do [ -d /proc/$T ] || break; sleep 0.1; done; cat /run/topod/journal | head -3")
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

# A sched_ext scheduler loaded and unloaded while topod runs. This guest
# has no BPF scheduler to load, so a file bind-mounted over
# /sys/kernel/sched_ext/state says "enabled", then "disabled"; what topod
# does about it is real: the cookies of the ping-pong pair and its cookie
# worker's keep-alive cookie, read back with PR_SCHED_CORE_GET. COOKIES
# prints "pp TID COOKIE" for each ping-pong thread and "keepalive TID
# COOKIE" for topod's cookie worker.
COOKIES = ("cookies() { T=$(cat /tmp/topod.pid); PP=$(sed -n 's/^pp=//p' /tmp/pids); "
           "for t in /proc/$PP/task/*; do echo pp $(workload cookie ${t##*/}); done; "
           "for t in /proc/$T/task/*; do [ \"$(cat $t/comm)\" = topod-cookie ] && "
           "echo keepalive $(workload cookie ${t##*/}); done; "
           "[ -z \"$EARLY\" ] || echo early $(workload cookie $(cat /tmp/early-child)); }; ")
# With EARLY set, the child of crunch-8 (forked before: fork_child()) too.
SCX_ON = (COOKIES + "EARLY=1; echo enabled > /tmp/scx-state; mount -o bind /tmp/scx-state /sys/kernel/sched_ext/state; "
          "for i in $(seq 300); do cookies > /tmp/ck; grep -qv ' 0$' /tmp/ck || break; sleep 0.1; done; "
          "cat /tmp/ck; grep -o 'sched_ext scheduler (unnamed) is now enabled' /tmp/topod.log")
SCX_OFF = (COOKIES + "echo disabled > /tmp/scx-state; "
           "for i in $(seq 300); do cookies > /tmp/ck; grep -q ' 0$' /tmp/ck || break; sleep 0.1; done; "
           "cat /tmp/ck; grep -o 'cookies are given' /tmp/topod.log")


# A load band entered and left while topod runs: heavy-1 matches vm-heavy
# ([when] load = 400-1000%), which the guest's load never reaches, so it is
# left alone; a /proc/loadavg of 80 (500% of 16 CPUs) bind-mounted over the
# real one puts the policy in force and heavy-1 in its group; taken away,
# the policy leaves force and topod lets go of heavy-1: back where it came
# from. [load] dwell = 0 in the test's topod.conf. heavy-2 and heavy-3 are
# processes whose main thread exited while another thread lives (the
# kernel moves only the live one and leaves the exited one's
# /proc/PID/cgroup where it was): heavy-2's before it was placed, heavy-3's
# after. Each prints "NAME CGROUP", NAME's live thread's cgroup.
HEAVY = ("live() { for t in /proc/$1/task/*; do [ ${t##*/} = $1 ] || { cat $t/cgroup; return; }; done; }; "
         "heavies() { for h in 1 2 3; do P=$(sed -n \"s/^h$h=//p\" /tmp/pids); "
         "if [ $h = 1 ]; then echo $1 heavy-1 $(cat /proc/$P/cgroup); else echo $1 heavy-$h $(live $P); fi; done; }; "
         "placed() { heavies x | grep -c topod.slice/heavy; }; ")
LOAD_ON = (HEAVY + "workload idle heavy-1 & echo h1=$! >> /tmp/pids; workload orphan heavy-2 & echo h2=$! >> /tmp/pids; "
           "workload orphan heavy-3 /tmp/h3-exit & echo h3=$! >> /tmp/pids; sleep 3; heavies before; "
           "echo '80.00 80.00 80.00 1/100 999' > /tmp/loadavg; mount --bind /tmp/loadavg /proc/loadavg; "
           "END=$(($(date +%s) + 60)); while [ $(date +%s) -lt $END ]; do "
           "[ $(placed) = 3 ] && break; sleep 0.2; done; "
           "touch /tmp/h3-exit; H3=$(sed -n 's/^h3=//p' /tmp/pids); "
           "for i in $(seq 100); do [ \"$(awk '{print $3}' /proc/$H3/stat)\" = Z ] && break; sleep 0.1; done; "
           "heavies after; "
           "echo states $(for h in 2 3; do awk '{print $3}' /proc/$(sed -n \"s/^h$h=//p\" /tmp/pids)/stat; done); "
           "grep -o 'policy vm-heavy.*' /tmp/topod.log")
LOAD_OFF = (HEAVY + "umount /proc/loadavg; "
            "END=$(($(date +%s) + 60)); while [ $(date +%s) -lt $END ]; do "
            "[ $(placed) = 0 ] && break; sleep 0.2; done; sleep 2; "
            "heavies after; grep -o 'policy vm-heavy.*' /tmp/topod.log; "
            "for h in 1 2 3; do grep \"process $(sed -n \"s/^h$h=//p\" /tmp/pids) .*moved, but\" /tmp/topod.log; done")


# A process topod gave a cookie forks a child that no policy matches: the
# child inherits the cookie (and the cgroup) without topod placing it.
# crunch-8's child, forked before sched_ext "loads", is cleared with the
# others then; crunch-9's, forked after, by the stop (found in topod's
# cgroup by the value, both times).
KIDS = ("kids() { awk -v p=$1 '/^PPid:/ && $2 == p { split(FILENAME, f, \"/\"); print f[3] }' "
        "/proc/[0-9]*/status 2>/dev/null; }; ")


def fork_child(name, key):
    return (KIDS + "workload forker %s /tmp/fork-%s & F=$!; echo %s=$F >> /tmp/pids; "
            "for i in $(seq 300); do grep -q topod.slice /proc/$F/cgroup && "
            "workload cookie $F | grep -qv ' 0$' && break; sleep 0.1; done; touch /tmp/fork-%s; "
            "for i in $(seq 100); do C=$(kids $F); [ -n \"$C\" ] && break; sleep 0.1; done; "
            "sleep 0.3; echo $C > /tmp/%s-child; echo parent $(workload cookie $F); echo child $(workload cookie $C)"
            % (name, key, key, key, key))


def heavies(text, when):
    """{"heavy-N": cgroup} from HEAVY's lines that start with when."""
    return {f[1]: f[2] for f in (l.split() for l in text.splitlines()) if len(f) == 3 and f[0] == when and
            f[1].startswith("heavy-")}


def cookie_lines(text):
    """{"pp": [cookies], "keepalive": [cookies]} from COOKIES' lines."""
    out = {}
    for l in text.splitlines():
        f = l.split()
        if len(f) == 3 and f[0] in ("pp", "keepalive", "early") and f[2].isdigit():
            out.setdefault(f[0], []).append(int(f[2]))
    return out


def test(args):
    r = vmlib.run_guest(
        [START,                                                        # 0
         up(1),                                                        # 1
         LOOK + "; T=$(cat /tmp/topod.pid); for t in /proc/$T/task/*; do "
         "[ \"$(cat $t/comm)\" = topod-placer ] && echo placer-slice=$(workload slice ${t##*/}) >&2; done",  # 2
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
         "cat /tmp/pids /tmp/release; cat /tmp/topod.log",             # 14
         up(4),                                                        # 15
         RELOAD_GOOD,                                                  # 16
         RELOAD_BAD,                                                   # 17
         STOP,                                                         # 18
         "cat /proc/$(sed -n 's/^p1=//p' /tmp/pids)/cgroup /proc/$(sed -n 's/^p2=//p' /tmp/pids)/cgroup; "
         "cat /tmp/status.json",                                       # 19
         "rm /etc/topod-test/policies.d/30-broken.ini; " + up(5),      # 20
         "sleep 2; topoctl plan --json",                               # 21
         COOKIES + "cookies",                                          # 22
         fork_child("crunch-8", "early"),                              # 23
         SCX_ON,                                                       # 24
         SCX_OFF,                                                      # 25
         fork_child("crunch-9", "late"),                               # 26
         LOAD_ON,                                                      # 27
         LOAD_OFF,                                                     # 28
         STOP,                                                         # 29
         COOKIES.replace("T=$(cat /tmp/topod.pid); ", "T=0; ") + "cookies; umount /sys/kernel/sched_ext/state; "
         "echo child $(workload cookie $(cat /tmp/late-child)); ls /sys/fs/cgroup/topod.slice 2>&1"],  # 30
        binaries={"topod": args.topod, "topoctl": args.topoctl, "workload": args.workload},
        files={"/etc/topod-test/topod.conf": os.path.join(DATA, "topod.conf"),
               "/etc/topod-test/policies.d/10-crunch.ini": os.path.join(DATA, "10-crunch.ini"),
               "/etc/topod-test/policies.d/20-pingpong.ini": os.path.join(DATA, "20-pingpong.ini"),
               "/etc/topod-test/policies.d/25-plain.ini": os.path.join(HERE, "data", "daemon", "25-plain.ini"),
               "/etc/topod-test/policies.d/26-heavy.ini": os.path.join(HERE, "data", "daemon", "26-heavy.ini")})
    c = vmlib.Checks()
    lines = r.stdout(14).splitlines()
    pids = {k: int(v) for k, v in (l.split("=", 1) for l in lines if "=" in l and l.split("=")[0] in
                                    ("c1", "c2", "pp", "by", "p1", "p2"))}
    release = next((l for l in lines if re.match(r"^\d+\.\d+", l)), "0.0")
    pidfs = tuple(int(x) for x in re.match(r"^(\d+)\.(\d+)", release).groups()) >= (6, 9)
    print("  topod log:\n    " + "\n    ".join(l for l in lines if l.startswith("topod")))

    c.eq(r.rc(1), 0, "topod started and placed the ping-pong process")
    # The placer's scheduler slice, read back from the kernel (6.12 takes
    # a slice request; before, none is kept and topod says so).
    m = re.search(r"placer-slice=(\d+)", r.stderr(2))
    six12 = tuple(int(x) for x in re.match(r"^(\d+)\.(\d+)", release).groups()) >= (6, 12)
    c.eq(int(m.group(1)) if m else None, 100000 if six12 else 0, "the placer's scheduler slice (ns)")
    c.true(not six12 or any("placer: scheduler slice 100 us" in l for l in lines),
           "topod says which slice its placer has", "\n".join(l for l in lines if "placer" in l))
    look = threads_by_tgid(c.json(r, 2, "classify while running"), pids)
    ck = {k: sorted({t.get("cookie") for t in v}) for k, v in look.items()}
    c.true(len(ck.get("pp", [])) == 1 and ck["pp"][0] not in (0, None), "ping-pong has a cookie", str(ck))
    c.eq(ck.get("by"), [0], "bystander: no cookie")

    c.eq(r.rc(3), 0, "processes started later are placed (proc connector)")
    # plain-1, the first of its policy, is placed by a pass (its group is
    # not in the plan yet) and journaled by its start time; plain-2, after
    # the restart (the group exists), by the fast path: by its pidfd's inode
    # where the kernel has pidfs, until the next pass names it by its start
    # time (which may come before the journal is read here: either name).
    ident = r"(pidfs:)?\d+"
    entries = [re.search(r"^task %d %s /orig$" % (pids.get(p, 0), ident), r.stdout(i), re.M)
               for p, i in (("p1", 3), ("p2", 9))]
    c.true(all(entries), "plain-1 and plain-2 journaled with their original /orig", r.stdout(3) + r.stdout(9))
    out19 = r.stdout(19).splitlines()
    status = {}
    try:
        status = json.loads("\n".join(out19[2:]) or "{}")
    except ValueError:
        pass
    caps = status.get("kernel", {}).get("capabilities", {})
    c.true(not pidfs or caps.get("pidfs", {}).get("available") is True,
           "kernel %s: pidfds are pidfs inodes, and topod names the processes it pins by them" % release,
           str(caps.get("pidfs")))
    # vm-plain has [when] load = 0-1000%: in force by the guest's own
    # /proc/loadavg (plain-1 and plain-2 were placed by it, above).
    load = status.get("load_percent")
    plain_force = [p.get("in_force") for p in status.get("policies", []) if p.get("name") == "vm-plain"]
    c.true(isinstance(load, int) and 0 <= load <= 1000 and plain_force == [True],
           "topod's status: the load it read, and vm-plain ([when] load = 0-1000%) in force",
           "load_percent %r, vm-plain in_force %r" % (load, plain_force))
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
    c.eq(sorted({t.get("cgroup") for t in look.get("p1", [])}), ["/orig"], "after stop: plain-1 back in /orig")
    out7 = r.stdout(7)
    c.true("No such file" in out7 and "NO_TTWU_QUEUE" not in out7 and "journal" not in out7,
           "after stop: topod.slice gone, journal removed, TTWU_QUEUE back on", out7)

    c.eq(r.rc(8), 0, "started again")
    c.true("topod-journal" in r.stdout(9), "kill -9 leaves the journal", r.stdout(9))
    rec = [l for l in lines if "recovering the journal" in l]
    c.true(rec and re.search(r"\b0 failed", rec[0]) is not None, "the recovery restored all of it", "\n".join(rec))
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
    c.eq(out19[:2], ["0::/orig", "0::/orig"], "at the end: plain-1 and plain-2 back in /orig")

    # sched_ext loaded (a file says so) while topod runs: its cookies and
    # its keep-alive go, so that the kernel can switch core scheduling off;
    # unloaded, they come back.
    c.eq(r.rc(20), 0, "started a fifth time")
    plan = c.json(r, 21, "topoctl plan --json from the running topod")
    counts = (plan or {}).get("counts") or {}
    c.true(counts.get("differs") == 0 and counts.get("same", 0) > 0,
           "the running topod's plan compared with the machine: nothing differs", str(counts))
    c.true(any(d.get("kind") == "task" and d.get("state") == "same" for d in (plan or {}).get("differences", [])),
           "its comparison covers the managed tasks")
    before = cookie_lines(r.stdout(22))
    c.true(len(before.get("pp", [])) == 2 and 0 not in before["pp"] and len(set(before["pp"])) == 1 and
           before.get("keepalive", [0])[0] != 0,
           "before: the ping-pong pair shares a cookie, the worker holds its keep-alive", r.stdout(22))
    early = {l.split()[0]: l.split()[-1] for l in r.stdout(23).splitlines() if len(l.split()) == 3}
    c.true(early.get("parent", "0") != "0" and early.get("child") == early.get("parent"),
           "a child forked by crunch-8 (which has the crunch cookie) inherited it", r.stdout(23))
    during = cookie_lines(r.stdout(24))
    c.true(during.get("pp") == [0, 0] and during.get("keepalive") == [0],
           "sched_ext loaded: the pair's cookies and the keep-alive cleared", r.stdout(24))
    c.eq(during.get("early"), [0], "sched_ext loaded: the cookie crunch-8's child inherited cleared too")
    c.true("now enabled" in r.stdout(24), "topod says why it cleared them", r.stdout(24))
    after = cookie_lines(r.stdout(25))
    c.true(len(after.get("pp", [])) == 2 and 0 not in after["pp"] and len(set(after["pp"])) == 1 and
           after.get("keepalive", [0])[0] not in (0, after["pp"][0]),
           "sched_ext unloaded: the pair's cookie and the keep-alive are back", r.stdout(25))
    fork = {l.split()[0]: l.split()[-1] for l in r.stdout(26).splitlines() if len(l.split()) == 3}
    c.true(fork.get("parent", "0") != "0" and fork.get("child") == fork.get("parent"),
           "a child forked by crunch-9 (which has the crunch cookie) inherited it", r.stdout(26))
    on, off = r.stdout(27), r.stdout(28)
    before, placed, back = heavies(on, "before"), heavies(on, "after"), heavies(off, "after")
    names = ["heavy-1", "heavy-2", "heavy-3"]
    c.true(sorted(before) == names and all(v.startswith("0::/") and "topod.slice" not in v for v in before.values()),
           "vm-heavy out of force at the guest's real load: heavy-1, -2, -3 left alone", on)
    c.true("policy vm-heavy" in on and "enters force" in on and
           all(placed.get(n) == "0::/topod.slice/heavy" for n in names),
           "a load of 500% read from /proc/loadavg: vm-heavy enters force, heavy-1 and the live threads of "
           "heavy-2 and -3 placed", on)
    c.true(re.search(r"^states Z Z$", on, re.M) is not None,
           "heavy-2's and heavy-3's main threads have exited (heavy-3's after it was placed)", on)
    c.true("leaves force" in off, "the load back: vm-heavy leaves force", off)
    c.true(sorted(back) == names and all(back[n] == before[n] for n in names),
           "no policy places them now: topod lets go of heavy-1 and of the live threads of heavy-2 and -3, "
           "back where they came from", on + off)
    c.true("moved, but" not in off, "letting go of them read back as done (no failed read-back logged)", off)
    c.eq(r.rc(29), 0, "stopped the fifth time")
    c.eq(cookie_lines(r.stdout(30)).get("pp"), [0, 0], "after the stop: the pair's cookies cleared")
    c.true(re.search(r"^child \d+ 0$", r.stdout(30), re.M) is not None,
           "after the stop: the child's inherited cookie cleared too (it was never journaled)", r.stdout(30))
    c.true("No such file" in r.stdout(30), "after the fifth stop: topod's cgroups gone", r.stdout(30))

    if c.failed:
        print("outputs: %s/out/" % r.run_dir)
    return c.finish()


if __name__ == "__main__":
    p = vmlib.add_common_args(argparse.ArgumentParser(description=__doc__))
    p.add_argument("--topod", required=True)
    p.add_argument("--topoctl", required=True)
    p.add_argument("--workload", required=True)
    vmlib.main(test, p.parse_args())
