#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""metrics-daemon: the real topod writes its metrics file.

topod runs on a fake root (tests/data/sysfs/host-2cpu's /sys, the host's
/proc through a symbolic link, an empty cgroup directory) with
metrics_file set below the root and seccomp = enforce (the filter must
allow the file's calls; off in a sanitizer build), and one policy that matches a process this test
starts (a copy of sleep named topod-mt-sleep, no cookie), so it changes
nothing on the host but the cgroup files of the fake root. Checked:

  - the file appears, mode 0644, nothing left beside it, and
    `promtool check metrics` accepts it;
  - every sample's family has HELP and TYPE, every name starts topod_;
  - topod_passes_total counts passes, the policy's task is counted;
  - a second sleeper exec'd later is placed by the fast path, and its
    time from the exec event's timestamp counted (under 5 s), in the
    file too by the next tick;
  - `topoctl metrics` prints the same families, `--json` parses;
  - a reload refused (a broken policy) shows in the file within 3 s;
  - the file is gone once topod stops.

Needs root (exit 77 otherwise); promtool (Debian package prometheus) for
its check: without it the rest runs, then exit 77.

Usage: test-metrics-daemon.py TOPOD TOPOCTL SRCDIR"""

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

METRICS_REL = "var/lib/prometheus/node-exporter/topod.prom"
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')


def fail(why, log=None):
    print("FAIL: " + why)
    if log:
        log.flush()
        with open(log.name) as f:
            sys.stderr.write(f.read()[-3000:])
    sys.exit(1)


def parse(text):
    """{family: type}, [(name, labels, value)]; fails on a line of no known form."""
    types, helps, samples = {}, set(), []
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP "):
            helps.add(line.split()[2])
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            types[name] = kind
        else:
            m = SAMPLE.match(line)
            if not m:
                fail("line %d is not a sample: %r" % (n, line))
            samples.append((m.group(1), m.group(2) or "", float(m.group(3))))
    for name, _, _ in samples:
        family = re.sub(r"_(bucket|sum|count)$", "", name) if name not in types else name
        if family not in types or family not in helps:
            fail("%s has no HELP or TYPE" % name)
        if not name.startswith("topod_"):
            fail("%s: not prefixed topod_" % name)
    return types, samples


def value(samples, name, labels=""):
    for n, l, v in samples:
        if n == name and l == labels:
            return v
    return None


def wait_for(what, pred, seconds, log):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        r = pred()
        if r:
            return r
        time.sleep(0.1)
    fail("%s within %s s" % (what, seconds), log)


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (topod's proc connector and its cookie prctl)")
        return 77
    topod, topoctl, srcdir = sys.argv[1:4]
    tmp = tempfile.mkdtemp(prefix="topod-metrics-")
    root = os.path.join(tmp, "root")
    shutil.copytree(os.path.join(srcdir, "tests/data/sysfs/host-2cpu/sys"), os.path.join(root, "sys"), symlinks=True)
    os.makedirs(os.path.join(root, "sys/fs/cgroup"), exist_ok=True)
    # The policy's group, as the kernel would show it to topod: a
    # cgroup.procs to write to, where cgroup2 is mounted on a pure and on a
    # hybrid host (the mount table is the host's). A move is then a write
    # to a plain file: the host's processes stay where they are.
    for mount in ("sys/fs/cgroup", "sys/fs/cgroup/unified"):
        os.makedirs(os.path.join(root, mount, "topod.slice/mt"), exist_ok=True)
        for f in ("topod.slice/cgroup.procs", "topod.slice/mt/cgroup.procs"):
            open(os.path.join(root, mount, f), "w").close()
    os.symlink("/proc", os.path.join(root, "proc"))
    os.makedirs(os.path.join(root, os.path.dirname(METRICS_REL)))
    pd = os.path.join(root, "run/topod/policies.d")  # the /run layer: the same for every prefix
    os.makedirs(pd)
    # Under the sanitizers the filter stays off (LeakSanitizer's exit
    # check needs ptrace, which no filter of topod's allows).
    sanitized = b"libasan" in subprocess.run(["ldd", topod], capture_output=True).stdout
    # named by --config: where a build reads topod.conf depends on its prefix
    conf = os.path.join(root, "etc/topod/topod.conf")
    os.makedirs(os.path.dirname(conf))
    with open(conf, "w") as f:
        f.write("[daemon]\nmetrics_file = /%s\nseccomp = %s\nlog_level = info\nsample_interval = 500ms\n" %
                (METRICS_REL, "off" if sanitized else "enforce"))
    with open(os.path.join(pd, "10-mt.ini"), "w") as f:
        f.write("[policy]\nname = mt\n\n[match]\ncomm = topod-mt-sleep\n\n[place]\ncpus = 0\ncookie = none\n")
    sleeper = os.path.join(tmp, "topod-mt-sleep")
    shutil.copy(shutil.which("sleep"), sleeper)
    child = subprocess.Popen([sleeper, "120"])
    state = os.path.join(tmp, "state")
    path = os.path.join(root, METRICS_REL)
    log = open(os.path.join(tmp, "topod.log"), "w")
    proc = subprocess.Popen([topod, "--root", root, "--state-dir", state, "--config", conf], stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        text = wait_for("the metrics file", lambda: read(path), 15, log)
        st = os.stat(path)
        if stat.S_IMODE(st.st_mode) != 0o644:
            fail("mode %o, not 644" % stat.S_IMODE(st.st_mode), log)
        if os.path.exists(path + ".tmp"):
            fail("the temporary file is left beside it", log)
        types, samples = parse(text)
        for name, kind in (("topod_passes_total", "counter"), ("topod_pass_duration_seconds", "histogram"),
                           ("topod_tasks_managed", "gauge"), ("topod_exec_to_placed_seconds", "histogram"),
                           ("topod_apply_results_total", "counter"), ("topod_reloads_refused_total", "counter")):
            if types.get(name) != kind:
                fail("%s: TYPE %s, expected %s" % (name, types.get(name), kind), log)

        # passes go on, and the file follows them
        def passes():
            s = parse(read(path) or "")[1]
            v = value(s, "topod_passes_total")
            return s if v is not None and v >= 2 else None
        samples = wait_for("two passes in the file", passes, 15, log)
        if value(samples, "topod_pass_duration_seconds_count") != value(samples, "topod_passes_total"):
            fail("pass_duration_seconds_count differs from passes_total", log)
        # the policy's task (the sleeper), in some group of policy mt
        managed = wait_for("the sleeper counted under policy mt",
                           lambda: sum(v for n, l, v in parse(read(path) or "")[1]
                                       if n == "topod_tasks_managed" and 'policy="mt"' in l), 15, log)
        print("  managed under mt: %d" % managed)
        # the apply went through the sleeper's items (moved into the fake
        # root's group, or said why not): summed, by result
        applied = {l: v for n, l, v in parse(read(path))[1] if n == "topod_apply_results_total"}
        print("  apply results: %s" % ", ".join("%s %d" % (l[9:-2], v) for l, v in applied.items()))
        if len(applied) != 5 or sum(applied.values()) < 1:
            fail("apply results: %r" % applied, log)

        # a second sleeper, exec'd now that its group exists: the fast path
        # places it at its exec (the host's proc connector), and its
        # latency from the event's timestamp is counted
        def metrics():
            r = subprocess.run([topoctl, "--state-dir", state, "metrics"], capture_output=True, text=True, timeout=30)
            if r.returncode != 0:
                fail("topoctl metrics: %s" % r.stderr, log)
            return r
        st = subprocess.run([topoctl, "--state-dir", state, "status", "--json"], capture_output=True, text=True, timeout=30)
        if not json.loads(st.stdout).get("proc_connector"):
            print("  exec -> placed: not checked, this host gives topod no proc connector events")
        else:
            late = subprocess.Popen([sleeper, "120"])
            try:
                def placed():
                    s = parse(metrics().stdout)[1]
                    return s if (value(s, "topod_exec_to_placed_seconds_count") or 0) >= 1 else None
                s = wait_for("the exec placed by the fast path", placed, 15, log)
            finally:
                late.kill()
                late.wait()
            n, total = value(s, "topod_exec_to_placed_seconds_count"), value(s, "topod_exec_to_placed_seconds_sum")
            print("  exec -> placed: %d placements, %.3f ms mean" % (n, 1e3 * total / n))
            if value(s, "topod_fast_path_placements_total") < n or not 0 < total / n < 5:
                fail("exec -> placed: %d placements of %s, %s s in all" %
                     (n, value(s, "topod_fast_path_placements_total"), total), log)
            # and in the file by the next tick (500 ms), whichever thread placed it
            wait_for("the placement in the file",
                     lambda: (value(parse(read(path) or "")[1], "topod_exec_to_placed_seconds_count") or 0) >= n, 3, log)
        r = metrics()
        if set(parse(r.stdout)[0]) != set(types):
            fail("topoctl metrics' families differ from the file's", log)
        r = subprocess.run([topoctl, "--state-dir", state, "metrics", "--json"], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            fail("topoctl metrics --json: %s" % r.stderr, log)
        j = json.loads(r.stdout)
        if j["passes"] < 2 or "exec_to_placed" not in j or "apply_results" not in j:
            fail("topoctl metrics --json: %r" % r.stdout[:300], log)

        # a refused reload, without a pass after it: on change, within the bound
        with open(os.path.join(pd, "20-broken.ini"), "w") as f:
            f.write("[policy]\nname = broken\n[place]\ncpus = nonsense\n")
        proc.send_signal(signal.SIGHUP)
        wait_for("the refused reload in the file",
                 lambda: value(parse(read(path) or "")[1], "topod_reloads_refused_total") == 1, 3, log)

        if shutil.which("promtool"):
            with open(path) as f:
                p = subprocess.run(["promtool", "check", "metrics"], stdin=f, capture_output=True, text=True)
            if p.returncode != 0 or p.stdout.strip() or p.stderr.strip():
                fail("promtool check metrics: %s%s" % (p.stdout, p.stderr), log)
            checked = True
        else:
            checked = False

        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        if proc.returncode != 0:
            fail("topod exited %s" % proc.returncode, log)
        if os.path.exists(path):
            fail("the metrics file is left after topod stopped", log)
        log.flush()
        with open(log.name) as f:
            if not sanitized and not re.search(r"seccomp = enforce: \d+ system calls allowed", f.read()):
                fail("topod did not say it enforces its seccomp filter", log)
    finally:
        if proc.poll() is None:
            proc.kill()
        child.kill()
        child.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    if not checked:
        print("SKIP: promtool not found (Debian package prometheus): the file was not checked by it")
        return 77
    print("metrics-daemon: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
