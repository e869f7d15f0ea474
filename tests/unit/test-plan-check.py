#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""plan-check: `topoctl plan --check` on a host class whose cgroup2 mount
has neither the cpu nor the cpuset controller (cgroup v1 hybrid, cgroup2
at /sys/fs/cgroup/unified, cpu and cpuset bound to v1).

The fake root is tests/data/sysfs/host-2cpu (its /sys and /proc files),
with a /proc/self/mountinfo and /proc/cgroups of such a host, an empty
cgroup2 directory, and one process: this test's own `sleep` child, its
/proc files copied from the live ones (so the pid names a living process
of ours), its cgroup file written by this test. One policy places it
(no cookie).

  0. Before a pass, --check exits 1 and names the task (the move to make).
  1. `topod --oneshot` applies a pass: nothing fails, no cpuset or cpu
     file is written (the kernel's side, the group's files a cgroup2
     mkdir makes and the child's proc/PID/cgroup in the planned group,
     is played by this test).
  2. `topoctl plan --check`, text and --json, exits 0: the move is as
     planned, and cpuset.cpus, cpuset.mems and cpu.weight are listed as
     skipped with the reason (the controller not available on the cgroup2
     mount), never counted as drift; the plan names the task with its comm.
  3. The child moved back behind topod's back: --check exits 1 and names
     the task with its comm; --json says drift and the item differs.
  4. The running topod on the same root: --check (text, --json) asks it
     and exits 0 with the skipped items; explain lists cpuset and weight
     as skipped with the reason; after `topoctl reset` status says
     nothing is managed, and --check exits 1 (paused: not in force).

Needs root (topod's writes under the fake root are as root's); 77
otherwise. Usage: test-plan-check.py TOPOD TOPOCTL SRCDIR"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

COMM = "topod-drift-t"


def fail(msg, *outs):
    print("FAIL: " + msg)
    for o in outs:
        sys.stdout.write(o if isinstance(o, str) else o.decode(errors="replace"))
        sys.stdout.write("\n")
    sys.exit(1)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def fake_process(root, pid, cgroup):
    """proc/PID (and its one thread) from the live files; cgroup ours."""
    base = os.path.join(root, "proc", str(pid))
    for d in (base, os.path.join(base, "task", str(pid))):
        os.makedirs(d, exist_ok=True)
        for name in ("stat", "status", "cmdline", "comm", "schedstat"):
            with open("/proc/%d/%s" % (pid, name), "rb") as src, open(os.path.join(d, name), "wb") as dst:
                dst.write(src.read())
        write(os.path.join(d, "cgroup"), "0::%s\n" % cgroup)
    if not os.path.lexists(os.path.join(base, "exe")):
        os.symlink(os.readlink("/proc/%d/exe" % pid), os.path.join(base, "exe"))


def set_cgroup(root, pid, cgroup):
    base = os.path.join(root, "proc", str(pid))
    for d in (base, os.path.join(base, "task", str(pid))):
        write(os.path.join(d, "cgroup"), "0::%s\n" % cgroup)


def main():
    if len(sys.argv) != 4:
        print("usage: test-plan-check.py TOPOD TOPOCTL SRCDIR")
        return 2
    topod, topoctl, srcdir = sys.argv[1:]
    if os.geteuid() != 0:
        print("SKIP: needs root (topod writes the fake root's files as root)")
        return 77

    tmp = tempfile.mkdtemp(prefix="topod-plan-check-")
    child = daemon = None
    try:
        root = os.path.join(tmp, "root")
        shutil.copytree(os.path.join(srcdir, "tests/data/sysfs/host-2cpu"), root, symlinks=True)
        shutil.rmtree(os.path.join(root, "proc/self"))
        write(os.path.join(root, "proc/self/mountinfo"),
              "22 1 0:20 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
              "23 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
              "31 22 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
              "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
              "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
              "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n")
        write(os.path.join(root, "proc/self/cgroup"), "3:cpuset:/\n1:cpu:/\n0::/\n")
        write(os.path.join(root, "proc/cgroups"),
              "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t3\t1\t1\ncpu\t1\t1\t1\n")
        unified = os.path.join(root, "sys/fs/cgroup/unified")
        # The kernel's files of the mount and of the policy's group (a
        # cgroup2 mkdir makes them; a plain directory has none).
        for d in ("", "topod.slice", "topod.slice/drift"):
            for name in ("cgroup.controllers", "cgroup.subtree_control", "cgroup.procs"):
                write(os.path.join(unified, d, name), "")
        pd = os.path.join(root, "etc/topod/policies.d")
        write(os.path.join(pd, "10-drift.ini"),
              "[policy]\nname = drift\n\n[match]\ncomm = %s\n\n[place]\ncpus = 1\n" % COMM)

        # The child, living while we test; its comm in the copies is ours.
        child = subprocess.Popen(["sleep", "600"])
        fake_process(root, child.pid, "/")
        for d in (os.path.join(root, "proc", str(child.pid)), os.path.join(root, "proc", str(child.pid), "task",
                                                                            str(child.pid))):
            write(os.path.join(d, "comm"), COMM + "\n")
            with open(os.path.join(d, "stat")) as f:
                st = f.read()
            head, tail = st.split(" (", 1)
            write(os.path.join(d, "stat"), "%s (%s) %s" % (head, COMM, tail.rsplit(") ", 1)[1]))
            with open(os.path.join(d, "status")) as f:
                lines = f.read().splitlines()
            write(os.path.join(d, "status"),
                  "\n".join("Name:\t" + COMM if l.startswith("Name:") else l for l in lines) + "\n")

        state = os.path.join(tmp, "state")
        base = [topoctl, "--root", root, "--state-dir", state]

        # Before any pass: the move is drift.
        r = subprocess.run(base[:3] + ["plan", "--check", "--policies", pd], capture_output=True, timeout=60)
        if r.returncode != 1 or ("(%s)" % COMM).encode() not in r.stdout:
            fail("before a pass: plan --check exits 1 and names the task (rc %d)" % r.returncode, r.stdout, r.stderr)
        print("ok: before a pass, --check exits 1 and names tid %d (%s)" % (child.pid, COMM))

        # 1. A pass. The kernel's side of the move (topod reads
        # proc/PID/cgroup back after writing cgroup.procs) is played
        # beforehand: the child is where the plan puts it.
        set_cgroup(root, child.pid, "/topod.slice/drift")
        r = subprocess.run([topod, "--root", root, "--state-dir", state, "--oneshot", "--policies", pd],
                           capture_output=True, timeout=120)
        if r.returncode != 0:
            fail("topod --oneshot failed (rc %d)" % r.returncode, r.stdout, r.stderr)
        out = r.stdout.decode()
        if "no cpuset controller" not in out or "no cpu controller" not in out:
            fail("the pass reports the controllers it skipped", out)
        for name in ("cpuset.cpus", "cpuset.mems", "cpu.weight"):
            if os.path.exists(os.path.join(unified, "topod.slice/drift", name)):
                fail("the pass wrote %s without the controller" % name)
        print("ok: a pass: nothing failed, the cpuset and cpu controllers reported skipped, no file of theirs written")

        # 2. In sync apart from what cannot be applied here.
        r = subprocess.run(base[:3] + ["plan", "--check", "--policies", pd], capture_output=True, timeout=60)
        out = r.stdout.decode()
        if r.returncode != 0:
            fail("after the pass: plan --check exits 0, not %d" % r.returncode, r.stdout, r.stderr)
        for attr, ctl in (("cpuset.cpus", "cpuset"), ("cpuset.mems", "cpuset"), ("cpu.weight", "cpu")):
            line = [l for l in out.splitlines() if l.startswith("skipped") and attr in l]
            if not line or ("%s controller not available on the cgroup2 mount" % ctl) not in line[0]:
                fail("after the pass: %s listed as skipped with the reason" % attr, out)
        if "differs" in out or not out.rstrip().splitlines()[-1].startswith("0 to change"):
            fail("after the pass: no drift listed", out)
        print("ok: after the pass, --check exits 0; cpuset.cpus, cpuset.mems, cpu.weight skipped with the reason")

        r = subprocess.run(base[:3] + ["plan", "--check", "--json", "--policies", pd], capture_output=True, timeout=60)
        j = json.loads(r.stdout)
        skipped = [d for d in j["differences"] if d["state"] == "skipped"]
        if r.returncode != 0 or j["drift"] or j["counts"]["differs"] != 0 or j["counts"]["skipped"] != 3 or \
                not all("not available on the cgroup2 mount" in d["reason"] for d in skipped):
            fail("after the pass: --check --json exits 0, drift false, 3 skipped with reasons (rc %d)" % r.returncode,
                 r.stdout)
        if not any(t.get("comm") == COMM for t in j["plan"]["tasks"]):
            fail("the plan's tasks carry their comm", json.dumps(j["plan"]["tasks"]))
        print("ok: --check --json: drift false, 3 skipped with reasons, the task's comm in the plan")
        r = subprocess.run(base[:3] + ["plan", "--policies", pd], capture_output=True, timeout=60)
        want = "task %d (%s, process %d, other): drift" % (child.pid, COMM, child.pid)
        if r.returncode != 0 or want.encode() not in r.stdout:
            fail("plan's text names the task with its comm: %r" % want, r.stdout)
        print("ok: plan's text names the task with its comm")

        # 3. Moved back behind topod's back.
        set_cgroup(root, child.pid, "/")
        r = subprocess.run(base[:3] + ["plan", "--check", "--policies", pd], capture_output=True, timeout=60)
        out = r.stdout.decode()
        want = "tid %d (%s) cgroup: planned /topod.slice/drift, now /" % (child.pid, COMM)
        if r.returncode != 1 or want not in out:
            fail("moved back: --check exits 1 and names it (rc %d)" % r.returncode, out)
        r = subprocess.run(base[:3] + ["plan", "--check", "--json", "--policies", pd], capture_output=True, timeout=60)
        j = json.loads(r.stdout)
        if r.returncode != 1 or not j["drift"] or not any(d["state"] == "differs" and d["kind"] == "task"
                                                          for d in j["differences"]):
            fail("moved back: --check --json exits 1, drift true", r.stdout)
        print("ok: moved back behind topod's back: --check exits 1 and names tid %d (%s)" % (child.pid, COMM))

        # 4. The running topod: --check asks it; explain and status.
        set_cgroup(root, child.pid, "/topod.slice/drift")
        dstate = os.path.join(tmp, "dstate")
        log = open(os.path.join(tmp, "topod.log"), "w")
        daemon = subprocess.Popen([topod, "--root", root, "--state-dir", dstate, "--policies", pd],
                                  stdout=log, stderr=subprocess.STDOUT)
        dbase = [topoctl, "--root", root, "--state-dir", dstate]
        for _ in range(300):
            if os.path.exists(os.path.join(dstate, "bus")):
                r = subprocess.run(dbase + ["plan", "--check"], capture_output=True, timeout=30)
                if b"not running" not in r.stderr and b"first pass" not in r.stderr:
                    break
            if daemon.poll() is not None:
                log.flush()
                fail("topod exited (%s)" % daemon.returncode, open(log.name).read()[-3000:])
            time.sleep(0.1)
        out = r.stdout.decode()
        if r.returncode != 0 or "cpuset controller not available on the cgroup2 mount" not in out or \
                "computing the plan here" in r.stderr.decode():
            fail("topod: plan --check exits 0 with the skipped items (rc %d)" % r.returncode, out, r.stderr)
        print("ok: topod's plan --check exits 0, the skipped items listed")
        r = subprocess.run(dbase + ["plan", "--check", "--json"], capture_output=True, timeout=30)
        j = json.loads(r.stdout)
        if r.returncode != 0 or j["drift"] or j["counts"]["skipped"] != 3:
            fail("topod: plan --check --json exits 0, drift false, 3 skipped", r.stdout)
        r = subprocess.run(dbase + ["explain", str(child.pid)], capture_output=True, timeout=30)
        out = r.stdout.decode()
        if r.returncode != 0 or "cpuset    skipped: cpuset controller not available on the cgroup2 mount" not in out \
                or "weight    skipped: cpu controller not available on the cgroup2 mount" not in out:
            fail("explain lists cpuset and weight as skipped with the reason", out, r.stderr)
        r = subprocess.run(dbase + ["explain", "--json", str(child.pid)], capture_output=True, timeout=30)
        if sorted(s["what"] for t in json.loads(r.stdout)["threads"] for s in t["skipped"]) != ["cpuset", "weight"]:
            fail("explain --json lists cpuset and weight as skipped", r.stdout)
        print("ok: explain says cpuset and weight are skipped, and why")
        r = subprocess.run(dbase + ["status", "--json"], capture_output=True, timeout=30)
        if json.loads(r.stdout)["tasks_managed"] != 1:
            fail("status: 1 task managed", r.stdout)
        subprocess.run(dbase + ["reset"], capture_output=True, timeout=60)
        r = subprocess.run(dbase + ["status", "--json"], capture_output=True, timeout=30)
        st = json.loads(r.stdout)
        rt = subprocess.run(dbase + ["status"], capture_output=True, timeout=30)
        if st["state"] != "paused" or st["tasks_managed"] != 0 or st["groups"] != 0 or \
                b"managed: nothing, paused" not in rt.stdout:
            fail("after reset, status says nothing is managed", r.stdout, rt.stdout)
        print("ok: after reset, status says nothing is managed (paused)")
        r = subprocess.run(dbase + ["plan", "--check"], capture_output=True, timeout=30)
        if r.returncode != 1 or b"paused" not in r.stdout:
            fail("paused: plan --check exits 1, saying so", r.stdout, r.stderr)
        print("ok: paused: plan --check exits 1 and says so")
        return 0
    finally:
        if daemon:
            daemon.terminate()
            daemon.wait(timeout=30)
        if child:
            child.kill()
            child.wait()
        if not os.environ.get("KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
