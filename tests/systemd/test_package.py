#!/usr/bin/env python3
"""sd-package: topod installed from its Debian package in a guest with
systemd 252 as PID 1 (one boot), placing a service by policy, reloaded
after an edit, and removed with everything it changed put back.

The package is the .deb .ci/build-deb builds (dpkg-buildpackage from this
tree): TOPOD_DEB=/path/to/topod_*.deb, else the one in <builddir>/deb.
The guest has no network: the image holds the package's dependencies
(rootfs-packages), so `apt-get install ./topod_*.deb` resolves them from
what is installed. guest-package.sh runs the steps below in order and
writes out/STEP.*; each step's checks are one function here (STEPS):

- before:  crunch.service (a main process and two workers) running, not at
           the policy's CPUs; no topod on the machine;
- install: a policy naming crunch.service (CPUs 2-3, weight 300) in
           /etc/topod/policies.d, then `apt-get install ./topod_*.deb`
           (apt's status 0), `systemctl enable --now topod`: the package's
           files where the brief of debian/ puts them (/usr/sbin/topod,
           /usr/bin/topoctl, the unit, man pages, bash completion,
           /etc/topod/topod.conf a conffile), topod enabled and running as
           its unit (started by the package's postinst);
- placed:  crunch's unit cgroup at the policy's CPUs and weight, read back
           from cpuset.cpus.effective and cpu.weight, and systemd's
           AllowedCPUs / CPUWeight; one cookie on every crunch thread;
- placed:  also topod's journal entries for the policy (`journalctl -u
           topod TOPOD_POLICY=pkg-crunch`): crunch's unit properties set
           and its cookies given, as done;
- reload:  the policy edited (CPUs 0-1, weight 120) and the shipped
           topod.conf's metrics_file line uncommented, `systemctl reload
           topod` (status 0): the new values in the same files; the
           metrics file written where node_exporter reads it, mode 0644,
           accepted by `promtool check metrics` (on the host), counting
           the policy's tasks and the reload;
- remove:  `apt-get remove topod`: no topod process, its unit gone,
           its transient units and /topod.slice gone, crunch running
           (same processes, no restart) with its unit properties and cgroup
           files as before the install, every process in the cgroup it was
           in before, no process in a cgroup that held none, no cookie; the
           restore in topod's journal (0 failed) and its entries with
           TOPOD_ACTION=restore for the properties and cookies; the metrics
           file removed; topod.conf kept;
- purge:   `apt-get purge topod`: the package's configuration gone, the
           test's own policy file kept, no enablement left.
A check to add (a metrics file, a journal field) goes into the step whose
state it reads: the guest script records it into out/STEP.*, the step's
function here reads and checks it. Exit 0 pass, 1 fail, 77 skip."""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdlib  # noqa: E402
import test_services  # noqa: E402  (check_reconciled: the same comparison as a stop)

vmlib = sdlib.vmlib

POLICY = """# crunch.service's processes: CPUs {cpus}, weight {weight}, one cookie
[policy]
name = pkg-crunch
priority = 300

[match]
unit = crunch.service

[place]
group = crunch
cookie = group
cpus = {cpus}
weight = {weight}
"""
FIRST = {"cpus": "2-3", "weight": "300"}
EDITED = {"cpus": "0-1", "weight": "120"}
CRUNCH_CG = "/system.slice/crunch.service"


def find_deb(args):
    """The .deb to install: TOPOD_DEB, else the newest topod_*.deb in --deb-dir."""
    deb = os.environ.get("TOPOD_DEB")
    if deb:
        if not os.path.isfile(deb):
            raise vmlib.VMFailure("TOPOD_DEB=%s does not exist" % deb)
        return deb
    debs = sorted(glob.glob(os.path.join(args.deb_dir, "topod_*.deb")), key=os.path.getmtime)
    if not debs:
        raise vmlib.Skip(("no topod Debian package to install", [
            "none in %s and TOPOD_DEB is not set;" % args.deb_dir,
            "Fix: .ci/build-deb %s (dpkg-buildpackage from a copy of the tree;" % args.deb_dir,
            "     .ci/test does it), or TOPOD_DEB=/path/to/topod_VERSION_ARCH.deb"]))
    return debs[-1]


def deb_field(deb, field):
    return subprocess.run(["dpkg-deb", "-f", deb, field], stdout=subprocess.PIPE, text=True).stdout.strip()


def cookies_of(kv):
    return {k[3:]: v for k, v in kv.items() if k.startswith("ck.")}


def check_crunch_at(c, name, kv, want):
    c.eq((kv.get("crunch.cpuset.cpus.effective"), kv.get("crunch.cpu.weight")), (want["cpus"], want["weight"]),
         "%s: crunch.service's cgroup cpuset.cpus.effective, cpu.weight" % name)
    c.eq((kv.get("crunch.AllowedCPUs"), kv.get("crunch.CPUWeight")), (want["cpus"], want["weight"]),
         "%s: systemctl show crunch AllowedCPUs, CPUWeight" % name)


# --------------------------------------------------------------------------
# the steps, in guest-package.sh's order: (c, r, kv) where kv is
# {step: out/STEP.kv as a dict}

def step_before(c, r, kv):
    b = kv["before"]
    c.eq(len(b.get("pids", "").split()), 3, "before: crunch runs its main process and two workers")
    c.true(b.get("crunch.cpuset.cpus.effective") not in (FIRST["cpus"], EDITED["cpus"]) and
           b.get("crunch.cpu.weight") not in (FIRST["weight"], EDITED["weight"]),
           "before: crunch is at neither policy's CPUs and weight (the checks below can fail)",
           "%r %r" % (b.get("crunch.cpuset.cpus.effective"), b.get("crunch.cpu.weight")))
    c.eq((b.get("topod.LoadState"), b.get("topod.procs"), b.get("dpkg.status", "")),
         ("not-found", "", ""), "before: no topod unit, process or package")


def step_install(c, r, kv):
    i = kv["install"]
    c.eq(i.get("apt_rc"), "0", "apt-get install ./topod_*.deb succeeded offline (its dependencies in the image)")
    c.eq(i.get("dpkg.status"), "ii ", "dpkg: topod installed")
    files = set(r.out("install.files").split())
    for f in ("/usr/sbin/topod", "/usr/bin/topoctl", "/etc/topod/topod.conf",
              "/usr/share/bash-completion/completions/topoctl", "/usr/share/bash-completion/completions/topod",
              "/usr/share/man/man8/topod.8.gz", "/usr/share/man/man8/topoctl.8.gz",
              "/usr/share/man/man5/topod.conf.5.gz", "/usr/share/man/man5/topod.policy.5.gz",
              "/usr/share/doc/topod/copyright"):
        c.true(f in files, "dpkg -L topod: %s" % f)
    units = [f for f in files if f.endswith("/systemd/system/topod.service")]
    c.true(len(units) == 1, "dpkg -L topod: the unit topod.service", " ".join(sorted(files)))
    c.eq(i.get("topod.FragmentPath"), units[0] if units else "?", "systemd loads topod.service from the package")
    c.true("/etc/topod/topod.conf" in i.get("conffiles", "").split(), "/etc/topod/topod.conf is a conffile",
           i.get("conffiles"))
    c.eq((i.get("topod.UnitFileState"), i.get("topod.ActiveState")), ("enabled", "active"),
         "after the install, before systemctl: topod enabled and started by the package")
    c.eq((i.get("enable_rc"), i.get("active_after_enable")), ("0", "active"), "systemctl enable --now topod")
    c.eq(i.get("wants", "").split(), ["multi-user.target.wants/topod.service"],
         "the package's postinst enabled topod.service (WantedBy=multi-user.target)")
    c.eq(len(i.get("topod.procs", "").split()), 1, "one topod process")


def step_placed(c, r, kv):
    p = kv["placed"]
    waits = sdlib.kv(r.out("waits.kv"))
    c.eq(waits.get("placed.rc", "").split()[:1], ["0"], "placed within 30 s of the start")
    check_crunch_at(c, "placed", p, FIRST)
    ck = cookies_of(p)
    c.true(len(ck) >= 3 and len(set(ck.values())) == 1 and "0" not in ck.values(),
           "placed: every crunch thread has one and the same cookie", str(ck))
    c.eq(p.get("pids"), kv["before"].get("pids"), "placed: the same crunch processes as before (none restarted)")
    c.contains(r.out("placed.explain"), "pkg-crunch", "topoctl explain MAINPID names the policy")
    es = test_services.entries(r.out("placed.fields.json"))
    c.true(es and all(e.get("_SYSTEMD_UNIT") == "topod.service" for e in es),
           "journalctl -u topod TOPOD_POLICY=pkg-crunch: topod's entries (%d)" % len(es))
    test_services.check_fields(c, "placed", es, {"TOPOD_POLICY": "pkg-crunch", "TOPOD_ACTION": "property",
                                                 "TOPOD_RESULT": "done", "TOPOD_UNIT": "crunch.service"})
    test_services.check_fields(c, "placed", es, {"TOPOD_POLICY": "pkg-crunch", "TOPOD_ACTION": "cookie",
                                                 "TOPOD_RESULT": "done", "TOPOD_PID": p.get("crunch.MainPID")})


def promtool_check(c, text):
    """`promtool check metrics` (Debian's prometheus package) on the host."""
    promtool = shutil.which("promtool")
    if not promtool:
        c.true(False, "promtool on the host to check the exposition (.ci/deps installs prometheus)")
        return
    with tempfile.TemporaryFile("w+") as f:
        f.write(text)
        f.seek(0)
        p = subprocess.run([promtool, "check", "metrics"], stdin=f, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    c.true(p.returncode == 0, "promtool check metrics accepts the metrics file", p.stdout)


def step_reload(c, r, kv):
    q = kv["reload"]
    c.eq(q.get("reload_rc"), "0", "systemctl reload topod after the policy's edit")
    waits = sdlib.kv(r.out("waits.kv"))
    c.eq(waits.get("reloaded.rc", "").split()[:1], ["0"], "the edit in force within 30 s of the reload")
    check_crunch_at(c, "reloaded", q, EDITED)
    c.eq(q.get("topod.MainPID"), kv["placed"].get("topod.MainPID"), "reloaded: the same topod process (no restart)")
    c.contains(r.out("reload.conf"), "metrics_file = /var/lib/prometheus/node-exporter/topod.prom",
               "the shipped topod.conf names node_exporter's textfile directory (uncommented by the test)")
    prom = r.out("reload.prom")
    c.eq(q.get("prom.mode"), "644", "the metrics file is readable by node_exporter (mode 0644)")
    samples = {}
    for line in prom.splitlines():
        if line and not line.startswith("#") and " " in line:
            name, value = line.rsplit(" ", 1)
            samples[name] = value
    managed = [n for n in samples if n.startswith("topod_tasks_managed{") and 'policy="pkg-crunch"' in n]
    c.true(managed and sum(float(samples[n]) for n in managed) >= 3,
           "metrics: topod_tasks_managed counts crunch's threads for pkg-crunch", "\n".join(managed) or prom[:2000])
    c.true(float(samples.get("topod_reloads_total", "0")) >= 1 and samples.get("topod_reloads_refused_total") == "0",
           "metrics: the reload counted, none refused",
           "%r %r" % (samples.get("topod_reloads_total"), samples.get("topod_reloads_refused_total")))
    c.true(float(samples.get("topod_passes_total", "0")) >= 1, "metrics: passes counted")
    promtool_check(c, prom)


def step_remove(c, r, kv):
    b, m = kv["before"], kv["remove"]
    c.eq(m.get("remove_rc"), "0", "apt-get remove topod")
    c.eq(m.get("dpkg.status"), "rc ", "dpkg: topod removed, its configuration kept")
    c.eq((m.get("topod.procs"), m.get("topod.LoadState"), m.get("topod.ActiveState")), ("", "not-found", "inactive"),
         "after the remove: no topod process, topod.service gone")
    c.eq((m.get("file./usr/sbin/topod"), m.get("file./usr/bin/topoctl"), m.get("file./etc/topod/topod.conf")),
         ("absent", "absent", "present"), "after the remove: the programs gone, topod.conf kept (a conffile)")
    c.eq((m.get("topod.units", "").split(), m.get("topod.slice")), ([], "absent"),
         "after the remove: topod's transient units and /topod.slice gone")
    c.eq((m.get("pids"), m.get("crunch.MainPID"), m.get("crunch.NRestarts"), m.get("crunch.ActiveState")),
         (b.get("pids"), b.get("crunch.MainPID"), b.get("crunch.NRestarts"), "active"),
         "after the remove: crunch running, the same processes, no restart")
    same = ("crunch.cpuset.cpus.effective", "crunch.cpuset.mems.effective", "crunch.cpu.weight",
            "crunch.AllowedCPUs", "crunch.CPUWeight")
    c.eq({k: m.get(k) for k in same}, {k: b.get(k) for k in same},
         "after the remove: crunch's cgroup files and unit properties as before the install")
    c.eq(set(cookies_of(m).values()), {"0"}, "after the remove: no crunch thread has a cookie")
    # every unit's properties, every process's cgroup, every thread's cookie
    # as before the install (the comparison sd-services makes after a stop)
    # (its first check, "systemctl stop topod succeeded", is the remove's
    # status here: the stop is the package's prerm's)
    test_services.check_reconciled(c, r, "apt-get remove (the prerm's stop)", "before", "removed",
                                   {"stop_rc": m.get("remove_rc")})
    jr = r.out("journal-topod.txt")
    restored = [l for l in jr.splitlines() if "restored (" in l]
    c.true(restored and " 0 failed)" in restored[-1] and " 0 done," not in restored[-1],
           "topod's journal: the stop the package's prerm made restored what it had changed, none failed",
           "\n".join(restored) or "(no 'restored' line)")
    es = test_services.entries(r.out("remove.fields.json"))
    test_services.check_fields(c, "removed", es, {"TOPOD_POLICY": "pkg-crunch", "TOPOD_ACTION": "restore",
                                                  "TOPOD_KIND": "property", "TOPOD_RESULT": "done",
                                                  "TOPOD_UNIT": "crunch.service"})
    test_services.check_fields(c, "removed", es, {"TOPOD_POLICY": "pkg-crunch", "TOPOD_ACTION": "restore",
                                                  "TOPOD_KIND": "cookie", "TOPOD_RESULT": "done"})
    c.eq(m.get("prom"), "absent", "after the remove: the metrics file removed by topod's stop")


def step_purge(c, r, kv):
    p = kv["purge"]
    c.eq(p.get("purge_rc"), "0", "apt-get purge topod")
    c.eq(p.get("dpkg.status"), "", "dpkg: topod unknown after the purge")
    c.eq(p.get("etc_topod", "").split(), ["/etc/topod/policies.d/50-pkg-crunch.ini"],
         "after the purge: of /etc/topod only the test's own policy is left")
    c.eq((p.get("wants", "").split(), p.get("topod.LoadState")), ([], "not-found"),
         "after the purge: no enablement of topod.service left, the unit unknown")


STEPS = [step_before, step_install, step_placed, step_reload, step_remove, step_purge]


def test(args):
    deb = find_deb(args)
    vmlib.info("package %s (%s %s)" % (deb, deb_field(deb, "Package"), deb_field(deb, "Version")))
    if deb_field(deb, "Version") != args.version:
        vmlib.info("note: the package's version %s is not the tree's %s (an older .deb?)" % (
            deb_field(deb, "Version"), args.version))
    policies = {"crunch.ini": POLICY.format(**FIRST), "crunch-edited.ini": POLICY.format(**EDITED)}
    r = sdlib.boot("sd-package", args, "guest-package.sh", policies=policies, files=sdlib.CRUNCH,
                   install=False, payload_files={"topod.deb": deb})
    c = vmlib.Checks()
    c.eq(r.rc, 0, "the guest script ran to its end")
    kv = {n: sdlib.kv(r.out(n + ".kv")) for n in ("before", "install", "placed", "reload", "remove", "purge")}
    print("  waits: " + "; ".join("%s %s" % w for w in sdlib.kv(r.out("waits.kv")).items()))
    for step in STEPS:
        step(c, r, kv)
    return sdlib.finish(r, c)


if __name__ == "__main__":
    ap = sdlib.add_args(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    ap.add_argument("--deb-dir", required=True, help="where .ci/build-deb put the package (<builddir>/deb)")
    ap.add_argument("--version", required=True, help="the tree's version (meson's project version)")
    vmlib.main(test, ap.parse_args())
