#!/usr/bin/env python3
"""sdlib -- the systemd tier: boot a Debian 12 guest with systemd as PID 1
and run one test script in it, topod installed as a systemd unit.

    r = sdlib.boot("sd-services", args, "guest-services.sh",
                   policies={"50-crunch.ini": "..."})
    text = r.out("placed.procs")

The guest (tests/systemd/build-rootfs.sh, cached under
~/.cache/topod/systemd-guest/rootfs-<hash>.img, the hash of that script and
rootfs-packages: a change to either builds a new image) boots the 6.12
guest kernel under qemu TCG, 4 CPUs in 2 LLCs of one SMT core each. After
multi-user.target its rig-run.service runs `bash /rig/cmd` inside a unit;
that command runs guest-lib.sh's install (topod and topoctl at the paths the
build's units/topod.service names, that unit in /etc/systemd/system as
built, topod.conf, the policies) and then the test's guest script, which
writes what it saw into /host/out (the run directory's out/, over 9p). The
host reads those files and checks them with vmlib.Checks.

Skips (exit 77, or a failure with TOPOD_VM_REQUIRED=1): no 6.12 kernel (found
as vmlib finds it), no qemu, and, when the image has to be built, no
mmdebstrap or mke2fs or not root. Standard library only.
"""

import fcntl
import glob
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "vm"))
import vmlib  # noqa: E402

BUILD_SCRIPT = os.path.join(HERE, "build-rootfs.sh")
PACKAGES = os.path.join(HERE, "rootfs-packages")
GUEST_LIB = os.path.join(HERE, "guest-lib.sh")
KERNEL = "6.12"
# 2 LLCs ({0,1}, {2,3}) of one SMT core each: cpus = llc has two domains,
# and core scheduling has siblings to keep apart.
SMP = "4,sockets=1,dies=2,cores=1,threads=2"
MEM = 1024
APPEND = ("root=/dev/vda rw console=ttyS0 panic=-1 systemd.unified_cgroup_hierarchy=1 quiet "
          "systemd.mask=serial-getty@ttyS0.service rcupdate.rcu_cpu_stall_timeout=120")
# The test script prints this first: a guest that has not within BOOT_LIMIT
# seconds is stuck in its boot; it is booted again once (as vmlib does).
MARK_STARTED = "TOPOD-SD-STARTED"
BOOT_LIMIT = 240


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "topod", "systemd-guest")


def rootfs_key():
    h = hashlib.sha256()
    for p in (BUILD_SCRIPT, PACKAGES):
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:12]


def rootfs():
    """The cached guest image for this build script and package list;
    built first when missing (about a minute; one builder at a time)."""
    img = os.path.join(cache_dir(), "rootfs-%s.img" % rootfs_key())
    if os.path.isfile(img):
        return img
    missing = [t for t in ("mmdebstrap", "mke2fs") if not shutil.which(t)]
    if missing or os.geteuid() != 0:
        raise vmlib.Skip(("no systemd guest image, and it cannot be built here", [
            "%s is missing;" % img,
            ("building it needs %s" % " and ".join(missing)) if missing else "building it needs root",
            "Fix: apt-get install mmdebstrap e2fsprogs (.ci/deps does), as root, then run",
            "     the test again (it builds the image: about a minute, ~60 MB downloaded),",
            "     or by hand: %s -o %s" % (BUILD_SCRIPT, img)]))
    os.makedirs(cache_dir(), exist_ok=True)
    with open(os.path.join(cache_dir(), ".build.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(img):
            return img
        vmlib.info("building the systemd guest image %s (mmdebstrap; about a minute)" % img)
        t0 = time.monotonic()
        p = subprocess.run([BUILD_SCRIPT, "-o", img], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0 or not os.path.isfile(img):
            raise vmlib.VMFailure("build-rootfs.sh failed (rc %d):\n%s" % (
                p.returncode, vmlib._tail(p.stdout, 40)))
        vmlib.info("built in %.0fs: %s" % (time.monotonic() - t0, p.stdout.strip().splitlines()[-1]))
        # Older images (other hashes) are left for a branch that still
        # builds them; they are 300 MB each: say so.
        old = [f for f in os.listdir(cache_dir()) if f.startswith("rootfs-") and f.endswith(".img")
               and f != os.path.basename(img)]
        if old:
            vmlib.info("older guest images in %s (removable): %s" % (cache_dir(), " ".join(sorted(old))))
    return img


def add_args(parser):
    vmlib.add_common_args(parser)
    parser.add_argument("--topod", required=True)
    parser.add_argument("--topoctl", required=True)
    parser.add_argument("--unit", required=True, help="the build's units/topod.service")
    parser.add_argument("--conf", required=True, help="the shipped conf/topod.conf")
    parser.add_argument("--workload", required=True, help="tests/vm/workload")
    parser.add_argument("--sdsnap", required=True, help="tests/systemd/sdsnap")
    parser.add_argument("--ticker", required=True, help="tests/systemd/ticker")
    parser.add_argument("--policies-dir", required=True, help="the shipped policies/ (its *.ini)")
    parser.add_argument("--sysconfdir", default="/etc", help="the build's sysconfdir: where topod reads topod/")
    return parser


class SdResult:
    def __init__(self, run_dir, rc, console, elapsed, boot):
        self.run_dir, self.rc, self.console = run_dir, rc, console
        self.elapsed, self.boot = elapsed, boot

    def out(self, name):
        """The guest's /host/out/NAME; "" when it never wrote it."""
        try:
            with open(os.path.join(self.run_dir, "out", name), "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def has(self, name):
        return os.path.exists(os.path.join(self.run_dir, "out", name))


def _qemu_argv(qemu, kernel, img, rig, host):
    return [qemu, "-accel", "tcg,thread=single", "-cpu", "max,vendor=GenuineIntel",
            "-m", "%dM" % MEM, "-smp", SMP,
            "-nodefaults", "-no-user-config", "-display", "none", "-monitor", "none",
            "-serial", "stdio", "-no-reboot",
            "-kernel", kernel, "-append", APPEND,
            "-drive", "file=%s,if=virtio,format=raw,snapshot=on" % img,
            "-virtfs", "local,path=%s,mount_tag=rig,security_model=none,id=rig0" % rig,
            "-virtfs", "local,path=%s,mount_tag=host,security_model=none,id=host0" % host]


# crunch.service: Type=simple, Restart=always; its main process (a bash
# script, comm "crunch") forks two workers, crunch-w1 and crunch-w2
# (tests/vm/workload idle, renamed after a second), and waits.
CRUNCH = {
    "/usr/local/bin/crunch": ("#!/bin/bash\nworkload idle crunch-w1 &\nworkload idle crunch-w2 &\nwait\n", 0o755),
    "/etc/systemd/system/crunch.service": (
        "[Unit]\nDescription=crunch: a Restart=always service that forks two workers\n"
        "[Service]\nType=simple\nRestart=always\nRestartSec=1\nExecStart=/usr/local/bin/crunch\n", 0o644),
}


def boot(name, args, script, policies=None, shipped=False, files=None, timeout=600, install=True, payload_files=None):
    """Boot the guest once: install topod from the build (args), the
    policies ({file name: text}, into SYSCONFDIR/topod/policies.d, with the
    shipped policies/*.ini too when shipped), files ({guest path: (text,
    mode)}, before the install's daemon-reload), run tests/systemd/SCRIPT.
    With install=False only the test's tools and files are installed: the
    script installs topod itself and touches out/installed when it did
    (its out/install.log says how it went). payload_files: {name: host file}
    copied to /host/payload/NAME. Returns an SdResult; raises Skip /
    VMFailure as vmlib does."""
    run_dir = os.path.abspath(os.path.join(vmlib.default_logdir(), "%s@%s" % (name, KERNEL)))
    if os.environ.get("TOPOD_SD_RECHECK") == "1" and os.path.isdir(os.path.join(run_dir, "out")):
        # Check the last run's outputs again, without a boot (editing the checks).
        vmlib.info("TOPOD_SD_RECHECK=1: the outputs of the last run in %s, no boot" % run_dir)
        with open(os.path.join(run_dir, "console.log"), "rb") as f:
            console = f.read().decode("utf-8", "replace")
        with open(os.path.join(run_dir, "rig", "rc")) as f:
            return SdResult(run_dir, int(f.read().strip() or -1), console, 0.0, "")
    kernel = vmlib.find_kernel(KERNEL)
    qemu = vmlib.find_qemu()
    for p in (args.topod, args.topoctl, args.unit, args.conf, args.workload, args.sdsnap, args.ticker):
        if not os.path.isfile(p):
            raise vmlib.VMFailure("%s does not exist (not built?)" % p)
    img = rootfs()

    if os.path.isdir(run_dir):
        shutil.rmtree(run_dir)
    payload = os.path.join(run_dir, "payload")
    rig = os.path.join(run_dir, "rig")
    for d in (payload, os.path.join(payload, "policies"), rig, os.path.join(run_dir, "out")):
        os.makedirs(d)
    for src, dst in ((args.topod, "topod"), (args.topoctl, "topoctl"), (args.unit, "topod.service"),
                     (args.conf, "topod.conf"), (args.workload, "workload"), (args.sdsnap, "sdsnap"), (args.ticker, "ticker"),
                     (GUEST_LIB, "guest-lib.sh"), (os.path.join(HERE, script), "test.sh")):
        shutil.copy(src, os.path.join(payload, dst))
    for dst, src in (payload_files or {}).items():
        shutil.copy(src, os.path.join(payload, dst))
    if shipped:
        for p in sorted(glob.glob(os.path.join(args.policies_dir, "*.ini"))):
            shutil.copy(p, os.path.join(payload, "policies", os.path.basename(p)))
    # where the topod built reads its topod.conf and policies.d
    with open(os.path.join(payload, "paths.sh"), "w") as f:
        f.write("SYSCONFDIR='%s'\n" % args.sysconfdir)
    for gpath, (text, mode) in (files or {}).items():
        host = os.path.join(payload, "root", gpath.lstrip("/"))
        os.makedirs(os.path.dirname(host), exist_ok=True)
        with open(host, "w") as f:
            f.write(text)
        os.chmod(host, mode)
    for fname, text in (policies or {}).items():
        with open(os.path.join(payload, "policies", fname), "w") as f:
            f.write(text)
    with open(os.path.join(rig, "cmd"), "w") as f:
        f.write("echo %s; cd /host && bash payload/guest-lib.sh %s && "
                "bash payload/test.sh > out/test.log 2>&1; rc=$?; "
                "bash payload/guest-lib.sh collect; exit $rc\n" % (MARK_STARTED, "install" if install else "helpers"))

    argv = _qemu_argv(qemu, kernel, img, rig, run_dir)
    with open(os.path.join(run_dir, "qemu-cmdline.txt"), "w") as f:
        f.write(" ".join(shlex.quote(a) for a in argv) + "\n")
    console_path = os.path.join(run_dir, "console.log")
    vmlib.info("kernel %s (%s), image %s" % (kernel, vmlib.bzimage_version(kernel), img))
    for attempt in (1, 2):
        t0 = time.monotonic()
        qrc, timed_out, stuck = vmlib._run_qemu(argv, console_path, timeout, MARK_STARTED, BOOT_LIMIT)
        elapsed = time.monotonic() - t0
        if not stuck:
            break
        os.replace(console_path, os.path.join(run_dir, "console-stuck-%d.log" % attempt))
        vmlib.loud("topod systemd tier: the guest did not start the test within %ds (boot %d of 2)" % (
            BOOT_LIMIT, attempt), ["its console: %s/console-stuck-%d.log" % (run_dir, attempt),
                                    "started again" if attempt == 1 else "not again: this run fails"])
        if attempt == 2:
            raise vmlib.VMFailure("the guest did not start the test within %ds, twice" % BOOT_LIMIT)

    with open(console_path, "rb") as f:
        console = vmlib.ANSI.sub("", f.read().decode("utf-8", "replace").replace("\r", ""))
    rc_text = ""
    try:
        with open(os.path.join(rig, "rc")) as f:
            rc_text = f.read().strip()
    except OSError:
        pass
    boot_line = ""
    try:
        with open(os.path.join(rig, "boot.txt")) as f:
            bt = f.read()
        us = re.search(r"^UserspaceTimestampMonotonic=(\d+)", bt, re.M)
        mu = re.search(r"^ActiveEnterTimestampMonotonic=(\d+)", bt, re.M)
        if us and mu:
            boot_line = "kernel %.1fs + userspace %.1fs = multi-user.target at %.1fs (guest time)" % (
                int(us.group(1)) / 1e6, (int(mu.group(1)) - int(us.group(1))) / 1e6, int(mu.group(1)) / 1e6)
    except OSError:
        pass
    r = SdResult(run_dir, int(rc_text) if rc_text.isdigit() else None, console, elapsed, boot_line)
    vmlib.info("guest ran %.1fs wall (qemu exit %s), test script rc=%s; %s" % (
        elapsed, qrc, r.rc, boot_line or "no boot timestamps"))
    vmlib.info("run directory: %s (console.log, out/)" % run_dir)
    problems = []
    if timed_out:
        problems.append("qemu did not finish within %ds (killed)" % timeout)
    if r.rc is None:
        problems.append("the guest never reported the test script's status (boot failure, panic, hang)")
    trouble = [l for l in console.splitlines() if vmlib.KERNEL_TROUBLE.search(l)]
    if trouble:
        problems.append("kernel trouble on the console:\n  " + "\n  ".join(trouble[:20]))
    if not r.has("installed"):
        problems.append("topod was not installed in the guest:\n" + r.out("install.log"))
    if problems:
        raise vmlib.VMFailure("\n".join(problems) + "\n--- console tail (%s) ---\n%s" % (
            console_path, vmlib._tail(console, 60)) + logs(r))
    return r


def logs(r):
    """topod's journal and the end of the test's own log, for a failure."""
    return ("--- journalctl -u topod (%s/out/journal-topod.txt) ---\n%s"
            "--- test.log (guest script) ---\n%s" % (
                r.run_dir, vmlib._tail(r.out("journal-topod.txt"), 80), vmlib._tail(r.out("test.log"), 40)))


# --------------------------------------------------------------------------
# reading what the guest wrote (formats: guest-lib.sh)

def procs(text):
    """{pid: (comm, cgroup)} from a snap_procs file ("PID CGROUP COMM")."""
    out = {}
    for l in text.splitlines():
        f = l.split(" ", 2)
        if len(f) == 3 and f[0].isdigit():
            out[int(f[0])] = (f[2], f[1])
    return out


def props(text):
    """{unit: {property: value}} from a snap_props file (systemctl show
    blocks separated by blank lines, each with an Id=)."""
    out = {}
    for block in re.split(r"\n\s*\n", text):
        d = dict(l.split("=", 1) for l in block.splitlines() if "=" in l)
        if d.get("Id"):
            out[d.pop("Id")] = d
    return out


def cookies(text):
    """{tid: (tgid, cookie)} from a snap_cookies file ("TID TGID COOKIE")."""
    out = {}
    for l in text.splitlines():
        f = l.split()
        if len(f) == 3 and all(x.isdigit() for x in f):
            out[int(f[0])] = (int(f[1]), int(f[2]))
    return out


def kv(text):
    """{key: value} from KEY=VALUE lines (the last one wins)."""
    return dict(l.split("=", 1) for l in text.splitlines() if "=" in l)


def finish(r, c):
    """Checks.finish(), with topod's journal and the test log when a check failed."""
    rc = c.finish()
    if rc:
        print(logs(r) + "--- console: %s/console.log\n" % r.run_dir)
    return rc
