#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""other-host: `topoctl check` and `topoctl plan` for another host class.

One policy (tests/data/policies/other-host.ini) wants CPUs 40-47 and a
cookie per process. Against the recorded 2-CPU host (--root
tests/data/sysfs/host-2cpu) check warns of the CPUs; with the topology of
a bigger host (--synthetic "pack:2 l3:4 core:8 pu:2", 128 PUs; --xml
tests/data/topologies/uneven-llc.xml) it does not. The core-scheduling
warning follows the kernel probe given with --caps (recorded by the vm
tier: tests/data/caps/guest-2s-4llc-6.12.json, core scheduling usable;
guest-2s-4llc-6.12-nosmt.json, booted nosmt: unusable, and why), not this
kernel. `plan` with them plans for that host (cookie groups with the guest's
probe, none with the nosmt one's) and compares nothing with this machine.
Bad input: a malformed probe is an error naming file and line; --xml with
--synthetic, or --check, --offline with them, are usage errors (exit 2).

Usage: test-other-host.py TOPOCTL SRCDIR"""

import json
import os
import subprocess
import sys

failed = []


def check(cond, what, detail=""):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failed.append(what)
        if detail:
            print("      " + detail.replace("\n", "\n      "))


def main():
    topoctl, src = sys.argv[1:3]
    pol = os.path.join(src, "tests/data/policies/other-host.ini")
    root = os.path.join(src, "tests/data/sysfs/host-2cpu")
    synth = "pack:2 l3:4 core:8 pu:2"
    xml = os.path.join(src, "tests/data/topologies/uneven-llc.xml")
    guest = os.path.join(src, "tests/data/caps/guest-2s-4llc-6.12.json")
    nosmt = os.path.join(src, "tests/data/caps/guest-2s-4llc-6.12-nosmt.json")

    def run(*args):
        return subprocess.run([topoctl] + list(args), capture_output=True, text=True, timeout=60)

    r = run("check", "--root", root, "--caps", guest, pol)
    check(r.returncode == 0 and "CPUs this machine does not have (it has 0-1)" in r.stdout,
          "2-CPU host: check warns of CPUs 40-47", r.stdout + r.stderr)
    check("core scheduling" not in r.stdout, "guest probe: no core-scheduling warning", r.stdout)

    r = run("check", "--strict", "--root", root, "--synthetic", synth, "--caps", guest, pol)
    check(r.returncode == 0 and ": warning:" not in r.stdout and "0 warnings" in r.stdout + r.stderr,
          "--synthetic 128 PUs and the guest's probe: clean, even --strict",
          r.stdout + r.stderr)
    r = run("check", "--strict", "--xml", xml, "--caps", guest, pol)
    with open(xml) as f:
        has_47 = 'os_index="47"' in f.read()
    check((r.returncode == 0) == has_47, "--xml: the CPUs judged against the XML's (%s CPU 47)" %
          ("has" if has_47 else "lacks"), r.stdout + r.stderr)

    r = run("check", "--synthetic", synth, "--caps", nosmt, pol)
    line = [l for l in r.stdout.splitlines() if "cookie = process cannot apply" in l]
    check(line and "other-host.ini:" in line[0] and "SMT" in line[0],
          "nosmt probe: the cookie warning names file:line and SMT as the reason", r.stdout)
    r = run("check", "--json", "--synthetic", synth, "--caps", nosmt, pol)
    j = json.loads(r.stdout)
    check(any(d["severity"] == "warning" and d["line"] > 0 for d in j["diagnostics"]),
          "check --json with another host: the warning with its line", r.stdout)

    r = run("plan", "--json", "--synthetic", synth, "--caps", guest, "--policies", pol)
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(r.returncode == 0 and "differences" not in j and j.get("host", {}).get("synthetic") == synth,
          "plan --json for another host: the plan and the host, no comparison", r.stdout + r.stderr)
    check(j.get("plan", {}).get("cookie_groups") not in (None, []) and j["plan"].get("tasks"),
          "plan with the guest's probe: this test's process placed, with a cookie group", r.stdout[-1500:])
    r = run("plan", "--json", "--synthetic", synth, "--caps", nosmt, "--policies", pol)
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(r.returncode == 0 and j.get("plan", {}).get("cookie_groups") == [] and j["plan"].get("tasks"),
          "plan with the nosmt probe: placed, no cookie group", r.stdout[-1500:])
    r = run("plan", "--synthetic", synth, "--caps", guest, "--policies", pol)
    check(r.returncode == 0 and "not compared with this machine" in r.stdout and "to change" not in r.stdout,
          "plan (text) for another host says it compares nothing", r.stdout + r.stderr)

    r = run("check", "--caps", os.path.join(src, "tests/data/caps/README.md"), pol)
    check(r.returncode == 1 and "README.md: line 1: not valid JSON" in r.stderr,
          "a malformed probe: exit 1, file and line named", r.stderr)
    r = run("plan", "--caps", os.path.join(src, "tests/data/caps/README.md"), "--policies", pol)
    check(r.returncode == 1 and "README.md: line 1: not valid JSON" in r.stderr,
          "plan with a malformed probe: exit 1, file and line named", r.stderr)
    r = run("check", "--synthetic", "bogus", pol)
    check(r.returncode == 1 and "bogus" in r.stderr, "a bad synthetic description: exit 1", r.stderr)
    for args in (["check", "--xml", xml, "--synthetic", synth, pol], ["check", "--offline", "--caps", guest, pol],
                 ["plan", "--check", "--synthetic", synth]):
        r = run(*args)
        check(r.returncode == 2 and "Try 'topoctl --help'" in r.stderr, "usage error: " + " ".join(args[:3]),
              r.stderr)
    if failed:
        print("%d check(s) FAILED" % len(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
