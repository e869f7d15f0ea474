#!/usr/bin/env python3
"""vmlib -- boot a CONFIG_SCHED_CORE kernel under qemu TCG and run commands in it.

The real-kernel test tier (meson suite 'vm').  Standard library only.

    result = vmlib.run_guest(["topoctl status --json"],
                             binaries={"topoctl": "/path/to/topoctl"})
    status = result.json(0)

Each command runs in the guest as root (busybox sh, cwd /), its stdout,
stderr and exit status land in the 9p share (<run dir>/out/<n>.out/.err/.rc);
the guest's overall status comes back on the serial console as a marker line
``TOPOD-VM-DONE rc=N``.  A missing marker (panic, hang, timeout) is a failure.

Exit codes of the test scripts (see main()): 0 pass, 1 fail, 77 skip.

The tier runs on a matrix of kernels (KERNELS: 6.12 and 7.3); a test given
``--kernel 7.3`` boots the 7.3 kernel and names its run directory
``<test>@7.3``.  Without --kernel a script boots TOPOD_VM_KERNEL (or the
newest cached kernel), as before the matrix.

Environment:
    TOPOD_VM_KERNEL_6_12, TOPOD_VM_KERNEL_7_3
                      the bzImage for that kernel of the matrix
    TOPOD_VM_KERNELS  bzImages separated by ':', each used for the matrix
                      kernel its version falls to (read from its header)
    TOPOD_VM_KERNEL   one bzImage, used the same way (and by a script run
                      without --kernel); else the cache of tests/vm/build-kernel
    TOPOD_VM_LOGDIR   where run directories (console log, outputs) go
    TOPOD_VM_VERBOSE  1 = copy the guest console to stdout after each run
    TOPOD_VM_QEMU     qemu binary (default: qemu-system-x86_64 on PATH)
    TOPOD_VM_REQUIRED 1 = a skip is a failure (CI sets it: the tier must run)

Run it directly for ad-hoc experiments:
    TOPOD_VM_KERNEL=... python3 tests/vm/vmlib.py [--bin name=PATH]... \
        [--append nosmt] -- 'cat /sys/devices/system/cpu/smt/active' 'nproc'
"""

import argparse
import glob
import gzip
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
FRAGMENT = os.path.join(HERE, "kernel-fragment.config")
BUILD_KERNEL = os.path.join(HERE, "build-kernel")

SKIP = 77

# The kernel matrix: tests/vm/meson.build registers each test once per
# kernel it applies to (name@VERSION). A kernel is taken for the newest
# entry at or below its version: 7.3 and later for "7.3", anything older
# for "6.12". What each carries that the other does not decides what the
# tests expect to find (tests/vm/README.md, ../shared/vm/README.md).
KERNELS = ("6.12", "7.3")
KERNEL_MECHANISMS = {
    "6.12": frozenset(),
    # sched/cgroup_mode (the flattened-pick modes) and sched/llc_balancing/
    # (CONFIG_SCHED_CACHE) are mainline since 7.3.
    "7.3": frozenset({"cgroup_mode", "llc_balancing"}),
}
MARK_DONE = "TOPOD-VM-DONE"
MARK_CMD = "TOPOD-VM-CMD"
MARK_SETUP_FAIL = "TOPOD-VM-SETUP-FAIL"
MARK_BOOTED = "TOPOD-VM-BOOTED"
# The guest's init says it booted within seconds (4-6 s, 20 s on a loaded
# host). A guest that has printed nothing by this time is stuck before its
# init ran: nothing of the test has run yet, so it is started again, once,
# and said so; a second such boot fails.
BOOT_LIMIT = 120

# Measured on the build machines (see /work/shared/vm/README.md): TCG only,
# single-threaded (thread=multi oopses at random); Intel model for one L3 per
# die and SMT siblings; 2 sockets x 2 dies x 2 cores x 2 threads = 16 CPUs,
# two NUMA nodes at distance 20.
QEMU_MACHINE = [
    "-accel", "tcg,thread=single",
    "-cpu", "max,vendor=GenuineIntel",
    "-smp", "16,sockets=2,dies=2,cores=2,threads=2",
    "-m", "2048",
    "-object", "memory-backend-ram,id=m0,size=1024M",
    "-numa", "node,nodeid=0,cpus=0-7,memdev=m0",
    "-object", "memory-backend-ram,id=m1,size=1024M",
    "-numa", "node,nodeid=1,cpus=8-15,memdev=m1",
    "-numa", "dist,src=0,dst=1,val=20",
]
# RCU's stall report (a Call Trace) after 120 s, not the kernel's 21: the
# 16 vCPUs take turns on one emulating host thread, which a busy 2-core
# host can starve that long without anything being wrong in the guest.
BASE_APPEND = "console=ttyS0 panic=-1 quiet rcupdate.rcu_cpu_stall_timeout=120"

# Console lines that mean the kernel itself went wrong.
KERNEL_TROUBLE = re.compile(
    r"Kernel panic|BUG: |Oops: |general protection fault|"
    r"WARNING: CPU: |Call Trace:|RIP: 00|watchdog: BUG|rcu_sched self-detected|"
    r"INFO: task .* blocked for more than")


class Skip(Exception):
    """The tier cannot run here (missing kernel/qemu/busybox): exit 77."""


class VMFailure(Exception):
    """The guest run itself went wrong: exit 1."""


# --------------------------------------------------------------------------
# messages

def loud(title, lines):
    """Print a boxed message to both stderr and stdout (meson shows either)."""
    bar = "*" * 76
    text = "\n".join([bar, "* " + title] + ["*   " + l for l in lines] + [bar]) + "\n"
    sys.stdout.write(text)
    sys.stdout.flush()
    sys.stderr.write(text)
    sys.stderr.flush()


def info(msg):
    print("vm: " + msg, flush=True)


# --------------------------------------------------------------------------
# finding the pieces

def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(base, "topod", "vm")


def fragment_hash():
    with open(FRAGMENT, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:12]


def cached_kernel(slot=None):
    """Newest bzImage-<linux-source version>-<fragment hash> in the cache
    (for slot: one whose version starts with it)."""
    pattern = os.path.join(cache_dir(), "bzImage-%s*-%s" % (
        (slot + ".") if slot else "", fragment_hash()))
    found = [p for p in glob.glob(pattern) if os.path.isfile(p)]
    if not found:
        return None, pattern
    return max(found, key=os.path.getmtime), pattern


def bzimage_version(path):
    """The kernel release a bzImage carries ("7.3.4-topod"), read from its
    setup header (boot protocol 2.00+: "HdrS" at 0x202, the offset of the
    version string less 0x200 at 0x20e); None when it has none."""
    try:
        with open(path, "rb") as f:
            head = f.read(0x8000)
    except OSError:
        return None
    if len(head) < 0x210 or head[0x202:0x206] != b"HdrS":
        return None
    off = struct.unpack_from("<H", head, 0x20e)[0] + 0x200
    if off == 0x200 or off >= len(head):
        return None
    text = head[off:off + 128].split(b"\0")[0].decode("ascii", "replace")
    return text.split(" ")[0] or None


def version_key(release):
    """(major, minor) of "7.3.4-topod"; None for text that is no version."""
    m = re.match(r"(\d+)\.(\d+)", release or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def slot_of(release):
    """The matrix kernel a release falls to: the newest at or below it, the
    oldest for a release older than all; None for no version."""
    key = version_key(release)
    if key is None:
        return None
    slot = KERNELS[0]
    for k in KERNELS:
        if version_key(k) <= key:
            slot = k
    return slot


def slot_env(slot):
    return "TOPOD_VM_KERNEL_" + slot.replace(".", "_")


def _explicit_file(var, path):
    if not os.path.isfile(path):
        # An explicit setting that is wrong is a mistake, not a skip.
        loud("topod VM test FAILED: %s does not name a file" % var, [
            "%s=%s" % (var, path),
            "Fix: point it at a bzImage built with CONFIG_SCHED_CORE=y,",
            "     or unset it and run tests/vm/build-kernel."])
        raise VMFailure("%s=%s: no such file" % (var, path))
    return os.path.abspath(path)


def _slot_kernel(slot):
    var = slot_env(slot)
    if os.environ.get(var):
        path = _explicit_file(var, os.environ[var])
        # A kernel of another version under this one's name would run
        # this kernel's tests on the wrong kernel, and pass.
        found = bzimage_version(path)
        if slot_of(found) != slot:
            loud("topod VM test FAILED: %s names a kernel of another version" % var, [
                "%s=%s" % (var, path),
                "its header says %s, not %s" % (found or "no version", slot)])
            raise VMFailure("%s=%s: version %s, not %s" % (var, path, found or "unknown", slot))
        return path
    # One kernel named alone wins over a list (.ci/run gives the list of
    # ../shared/vm when none is set).
    given = [("TOPOD_VM_KERNEL", os.environ["TOPOD_VM_KERNEL"])] if os.environ.get("TOPOD_VM_KERNEL") else []
    given += [("TOPOD_VM_KERNELS", p) for p in os.environ.get("TOPOD_VM_KERNELS", "").split(":") if p]
    for source, p in given:
        path = _explicit_file(source, p)
        if slot_of(bzimage_version(path)) == slot:
            return path
    path, pattern = cached_kernel(slot)
    if path:
        return path
    seen = ["  %s: %s (%s)" % (source, p, bzimage_version(p) or "no version in its header")
            for source, p in given]
    raise Skip(("no %s guest kernel" % slot, [
        "None of %s, TOPOD_VM_KERNELS or TOPOD_VM_KERNEL names a %s kernel%s" % (
            var, slot, ":" if seen else ",")] + seen + [
        "and there is no cached kernel matching",
        "  " + pattern,
        "(the hash is of tests/vm/kernel-fragment.config).",
        "Fix, either:",
        "  export %s=/path/to/bzImage   (x86_64, CONFIG_SCHED_CORE=y," % var,
        "        9p/virtio built in; e.g. /work/shared/vm/bzImage-%s-topod)" % (
            "7.3.4" if slot == "7.3" else "6.12.95"),
        "  or run once:  %s --version %s   (%s)" % (BUILD_KERNEL, slot,
            "~50 min on 2 cores" if slot == "7.3" else "~11 min on 2 cores"),
    ]))


def find_kernel(slot=None):
    """The bzImage to boot: the matrix kernel slot's (default: the one this
    script was given with --kernel), or, without one, TOPOD_VM_KERNEL or
    the newest cached kernel."""
    slot = slot or _kernel_arg
    if slot:
        return _slot_kernel(slot)
    env = os.environ.get("TOPOD_VM_KERNEL")
    if env:
        return _explicit_file("TOPOD_VM_KERNEL", env)
    path, pattern = cached_kernel()
    if path:
        return path
    raise Skip(("no guest kernel", [
        "TOPOD_VM_KERNEL is not set, and there is no cached kernel matching",
        "  " + pattern,
        "(the hash is of tests/vm/kernel-fragment.config).",
        "Fix, either:",
        "  export TOPOD_VM_KERNEL=/path/to/bzImage   (x86_64, CONFIG_SCHED_CORE=y,",
        "        9p/virtio built in; e.g. /work/shared/vm/bzImage-6.12.95-topod)",
        "  or run once:  " + BUILD_KERNEL +
        "   (apt-get installs linux-source-6.12 etc.; ~11 min on 2 cores)",
    ]))


def kernel_slot():
    """The matrix kernel this run is for ("6.12", "7.3"), or None (a script
    run by hand without --kernel)."""
    return _kernel_arg


def kernel_has(mechanism):
    """Whether this run's matrix kernel carries a mechanism ("cgroup_mode",
    "llc_balancing"): True or False, so that a test fails where the kernel
    should have it and it is not found; None without --kernel (the test
    then goes by what it finds)."""
    if _kernel_arg is None:
        return None
    return mechanism in KERNEL_MECHANISMS[_kernel_arg]


def find_qemu():
    env = os.environ.get("TOPOD_VM_QEMU")
    q = env or shutil.which("qemu-system-x86_64")
    if not q or not os.access(q, os.X_OK):
        raise Skip(("qemu-system-x86_64 not found" + (
            " (TOPOD_VM_QEMU=%s is not executable)" % env if env else " on PATH"), [
            "Fix: apt-get install qemu-system-x86   (or set TOPOD_VM_QEMU=PATH)"]))
    return q


def find_busybox():
    for p in ("/bin/busybox", "/usr/bin/busybox", shutil.which("busybox")):
        if p and os.access(p, os.X_OK):
            return p
    raise Skip(("busybox not found", ["Fix: apt-get install busybox-static"]))


LDD_ARROW = re.compile(r"^\s*(\S+)\s+=>\s+(\S+)\s+\(0x[0-9a-f]+\)\s*$")
LDD_PLAIN = re.compile(r"^\s*(/\S+)\s+\(0x[0-9a-f]+\)\s*$")


def ldd(path):
    """Host paths of the shared libraries (and loader) that `path` needs."""
    p = subprocess.run(["ldd", path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if "not a dynamic executable" in p.stdout or "statically linked" in p.stdout:
        return []
    if p.returncode != 0:
        raise VMFailure("ldd %s failed:\n%s" % (path, p.stdout))
    libs = []
    for line in p.stdout.splitlines():
        m = LDD_ARROW.match(line)
        if m:
            if m.group(2) == "not":
                raise VMFailure("ldd %s: %s not found" % (path, m.group(1)))
            libs.append(m.group(2))
            continue
        m = LDD_PLAIN.match(line)
        if m:
            libs.append(m.group(1))
        elif "=> not found" in line:
            raise VMFailure("ldd %s: %s" % (path, line.strip()))
    return libs


# --------------------------------------------------------------------------
# initramfs (newc cpio, written here, gzip'ed)

class Initramfs:
    def __init__(self):
        self.entries = {}           # guest path -> (kind, payload, mode)

    def _parents(self, path):
        parts = path.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/" + "/".join(parts[:i])
            if d not in self.entries:
                self.entries[d] = ("dir", None, 0o755)

    def dir(self, path, mode=0o755):
        self._parents(path)
        self.entries[path] = ("dir", None, mode)

    def file(self, path, host_path=None, data=None, mode=None):
        self._parents(path)
        if host_path is not None:
            st = os.stat(host_path)          # follows symlinks: real content
            if mode is None:
                mode = stat.S_IMODE(st.st_mode)
            self.entries[path] = ("file", host_path, mode)
        else:
            if isinstance(data, str):
                data = data.encode()
            self.entries[path] = ("data", data, 0o644 if mode is None else mode)

    def symlink(self, path, target):
        self._parents(path)
        self.entries[path] = ("link", target, 0o777)

    def chardev(self, path, major, minor, mode=0o600):
        self._parents(path)
        self.entries[path] = ("chr", (major, minor), mode)

    def write(self, out_path, level=1):
        """Write a gzip'ed newc archive; return its size in bytes."""
        with open(out_path, "wb") as raw:
            gz = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=level,
                               mtime=0) if level else raw
            buf = io.BufferedWriter(gz, 1 << 20) if level else raw
            ino = 1000
            for path in sorted(self.entries):
                kind, payload, perm = self.entries[path]
                ino += 1
                rdev = (0, 0)
                if kind == "dir":
                    mode, data, nlink = stat.S_IFDIR | perm, b"", 2
                elif kind == "link":
                    mode, data, nlink = stat.S_IFLNK | 0o777, payload.encode(), 1
                elif kind == "chr":
                    mode, data, nlink, rdev = stat.S_IFCHR | perm, b"", 1, payload
                elif kind == "data":
                    mode, data, nlink = stat.S_IFREG | perm, payload, 1
                else:
                    with open(payload, "rb") as f:
                        data = f.read()
                    mode, nlink = stat.S_IFREG | perm, 1
                self._entry(buf, path.lstrip("/"), ino, mode, nlink, data, rdev)
            self._entry(buf, "TRAILER!!!", 0, 0, 1, b"", (0, 0))
            buf.flush()
            if level:
                gz.close()
        return os.path.getsize(out_path)

    @staticmethod
    def _entry(out, name, ino, mode, nlink, data, rdev):
        nameb = name.encode() + b"\0"
        hdr = "070701" + "".join("%08x" % v for v in (
            ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rdev[0], rdev[1],
            len(nameb), 0))
        out.write(hdr.encode())
        out.write(nameb)
        out.write(b"\0" * (-(110 + len(nameb)) % 4))
        out.write(data)
        out.write(b"\0" * (-len(data) % 4))


# --------------------------------------------------------------------------
# the guest's /init

INIT_HEAD = r"""#!/bin/sh
# generated by tests/vm/vmlib.py
export PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
export HOME=/root
%(ld_library_path)s
setup_fail=0
fail() { echo; echo "%(setup_fail)s $*"; setup_fail=$((setup_fail + 1)); }
mnt() { # fstype source target [options]
    mkdir -p "$3"
    if grep -q " $3 $1 " /proc/mounts 2>/dev/null; then return 0; fi
    if [ -n "$4" ]; then err=$(mount -t "$1" -o "$4" "$2" "$3" 2>&1)
    else err=$(mount -t "$1" "$2" "$3" 2>&1); fi || fail "mount -t $1 $3: $err"
}
mnt proc proc /proc
mnt sysfs sysfs /sys
mnt devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mnt devpts devpts /dev/pts
mnt tmpfs tmpfs /dev/shm
mnt tmpfs tmpfs /run mode=0755
mnt debugfs debugfs /sys/kernel/debug
mnt cgroup2 cgroup2 /sys/fs/cgroup
mnt 9p host /host trans=virtio,version=9p2000.L,msize=262144
OUT=/host/out
if ! mkdir -p "$OUT" 2>/dev/null || ! touch "$OUT/.probe" 2>/dev/null; then
    fail "9p share not writable"; OUT=/tmp/out; mkdir -p "$OUT"
fi
rm -f "$OUT/.probe"
echo "%(booted)s uptime=$(cut -d' ' -f1 /proc/uptime)"
"""

INIT_CMD = r"""
echo "%(mark)s %(n)d start"
( cd / && %(timeout)s sh /cmds/%(n)d.sh ) >"$OUT/%(n)d.out" 2>"$OUT/%(n)d.err" </dev/null
rc=$?
echo "$rc" >"$OUT/%(n)d.rc"
echo "%(mark)s %(n)d rc=$rc"
"""

INIT_TAIL = r"""
dmesg >"$OUT/dmesg.txt" 2>&1
sync
echo
echo "%(done)s rc=$setup_fail uptime=$(cut -d' ' -f1 /proc/uptime)"
poweroff -f
sleep 5
echo "poweroff failed"
"""


# --------------------------------------------------------------------------
# results

class CommandResult:
    def __init__(self, index, command, stdout, stderr, rc):
        self.index, self.command = index, command
        self.stdout, self.stderr, self.rc = stdout, stderr, rc

    def describe(self):
        return "command %d `%s`: rc=%s\n--- stdout ---\n%s--- stderr ---\n%s" % (
            self.index, self.command, self.rc, _tail(self.stdout, 60),
            _tail(self.stderr, 60))


class GuestResult:
    def __init__(self, commands, console, console_path, run_dir, done_rc,
                 elapsed, setup_failures, kernel_trouble):
        self.commands = commands        # list[CommandResult]
        self.console = console          # str, whole serial log (\r removed)
        self.console_path = console_path
        self.run_dir = run_dir
        self.done_rc = done_rc
        self.elapsed = elapsed
        self.setup_failures = setup_failures
        self.kernel_trouble = kernel_trouble

    def __getitem__(self, i):
        return self.commands[i]

    def stdout(self, i):
        return self.commands[i].stdout

    def stderr(self, i):
        return self.commands[i].stderr

    def rc(self, i):
        return self.commands[i].rc

    def json(self, i, require_rc0=True):
        """Parse command i's stdout as JSON; VMFailure (with output) if not."""
        c = self.commands[i]
        if require_rc0 and c.rc != 0:
            raise VMFailure("expected exit status 0\n" + c.describe())
        try:
            return json.loads(c.stdout)
        except ValueError as e:
            raise VMFailure("stdout is not JSON (%s)\n%s" % (e, c.describe()))


def _tail(text, n):
    lines = text.splitlines()
    if len(lines) > n:
        lines = ["[... %d lines cut ...]" % (len(lines) - n)] + lines[-n:]
    return "".join(l + "\n" for l in lines)


ANSI = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|c)")


# --------------------------------------------------------------------------
# running

def default_logdir():
    return os.environ.get("TOPOD_VM_LOGDIR") or _logdir_arg or os.path.join(
        tempfile.gettempdir(), "topod-vm-logs")


_logdir_arg = None
_kernel_arg = None


def _run_qemu(argv, console_path, timeout, marker=MARK_BOOTED, limit=BOOT_LIMIT):
    """Run qemu with its console into console_path: (exit status, killed at
    the timeout, killed as stuck before the guest printed marker (its
    init's MARK_BOOTED) within limit seconds)."""
    t0 = time.monotonic()
    booted = False
    with open(console_path, "wb") as con:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=con,
                                stderr=subprocess.STDOUT)
        while True:
            try:
                return proc.wait(timeout=1), False, False
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic() - t0
            if not booted:
                with open(console_path, "rb") as f:
                    booted = marker.encode() in f.read()
                if not booted and now > min(limit, timeout):
                    proc.kill()
                    return proc.wait(), True, True
            if now > timeout:
                proc.kill()
                return proc.wait(), True, False


def run_guest(commands, binaries=None, append_extra="", timeout=300,
              name=None, files=None, cmd_timeout=None, allow_setup_failure=False,
              allow_kernel_trouble=False):
    """Boot the standard 16-CPU guest, run `commands`, return a GuestResult.

    commands     list of shell command strings, run in order by busybox sh
    binaries     {name: host path}; each lands at /usr/bin/<name> in the guest,
                 with every shared library ldd lists (at the same path)
    append_extra extra kernel command line words, e.g. "nosmt"
    timeout      seconds for the whole boot-run-poweroff
    name         run directory name under the log dir (default: script name)
    files        {guest path: host path (str) or content (bytes)}; executables
                 get their ldd libraries too
    cmd_timeout  per-command limit in the guest (busybox timeout -s KILL)

    Raises Skip when the tier cannot run here, VMFailure when the guest run
    fails (no done marker, setup failure, kernel oops, ...).
    """
    kernel = find_kernel()
    qemu = find_qemu()
    busybox = find_busybox()
    binaries = dict(binaries or {})
    files = dict(files or {})
    if name is None:
        name = os.path.splitext(os.path.basename(sys.argv[0]))[0] or "vm"
    if _kernel_arg:
        name += "@" + _kernel_arg

    run_dir = os.path.abspath(os.path.join(default_logdir(), name))
    if os.path.isdir(run_dir):
        shutil.rmtree(run_dir)
    os.makedirs(os.path.join(run_dir, "out"))
    console_path = os.path.join(run_dir, "console.log")

    t0 = time.monotonic()
    ird = Initramfs()
    for d in ("/bin", "/sbin", "/usr/bin", "/usr/sbin", "/etc", "/proc", "/sys",
              "/dev", "/tmp", "/run", "/root", "/host", "/var", "/lib", "/lib64"):
        ird.dir(d)
    ird.dir("/tmp", 0o1777)
    ird.symlink("/var/run", "../run")
    ird.chardev("/dev/console", 5, 1)
    ird.chardev("/dev/null", 1, 3, 0o666)
    ird.file("/etc/passwd", data="root:x:0:0:root:/root:/bin/sh\n")
    ird.file("/etc/group", data="root:x:0:\n")
    ird.file("/bin/busybox", busybox, mode=0o755)
    applets = subprocess.run([busybox, "--list-full"], stdout=subprocess.PIPE,
                             text=True, check=True).stdout.split()
    for a in applets:
        if a != "bin/busybox":
            ird.symlink("/" + a, "/bin/busybox")
    libs = set(ldd(busybox))
    for bname, host in binaries.items():
        if not os.path.isfile(host):
            raise VMFailure("binary %s: %s does not exist (not built?)" % (bname, host))
        ird.file("/usr/bin/" + bname, host, mode=0o755)
        libs.update(ldd(host))
    for gpath, src in files.items():
        if isinstance(src, bytes):
            ird.file(gpath, data=src)
        else:
            if not os.path.isfile(src):
                raise VMFailure("file for guest %s: %s does not exist" % (gpath, src))
            ird.file(gpath, src)
            if os.access(src, os.X_OK):
                libs.update(ldd(src))
    libdirs = []
    for lib in sorted(libs):
        ird.file(lib, lib)
        d = os.path.dirname(lib)
        if d not in libdirs:
            libdirs.append(d)

    init = INIT_HEAD % {
        "setup_fail": MARK_SETUP_FAIL, "booted": MARK_BOOTED,
        "ld_library_path": ("export LD_LIBRARY_PATH=" + ":".join(libdirs)) if libdirs else ""}
    for n, cmd in enumerate(commands):
        ird.file("/cmds/%d.sh" % n, data=cmd + "\n", mode=0o755)
        init += INIT_CMD % {
            "mark": MARK_CMD, "n": n,
            "timeout": ("timeout -s KILL %d" % cmd_timeout) if cmd_timeout else ""}
    init += INIT_TAIL % {"done": MARK_DONE}
    ird.file("/init", data=init, mode=0o755)
    with open(os.path.join(run_dir, "init.sh"), "w") as f:
        f.write(init)
    with open(os.path.join(run_dir, "commands.txt"), "w") as f:
        for n, cmd in enumerate(commands):
            f.write("%d: %s\n" % (n, cmd))

    tmp = tempfile.mkdtemp(prefix="topod-vm-")
    try:
        initrd = os.path.join(tmp, "initramfs.cpio.gz")
        size = ird.write(initrd)
        t_build = time.monotonic() - t0
        append = BASE_APPEND + (" " + append_extra if append_extra else "")
        argv = [qemu] + QEMU_MACHINE + [
            # -nodefaults: no NIC (iPXE ROM), no VGA, no monitor on stdio
            "-nodefaults", "-display", "none", "-serial", "stdio", "-no-reboot",
            "-kernel", kernel, "-initrd", initrd, "-append", append,
            "-virtfs", "local,path=%s,mount_tag=host,security_model=none" % run_dir,
        ]
        with open(os.path.join(run_dir, "qemu-cmdline.txt"), "w") as f:
            f.write(" ".join(shlex.quote(a) for a in argv) + "\n")
        info("kernel %s (%s%s)" % (kernel, bzimage_version(kernel) or "version unknown",
                                    ", for the %s runs" % _kernel_arg if _kernel_arg else ""))
        info("initramfs %.1f MiB built in %.2fs; append '%s'" % (
            size / 1048576.0, t_build, append))
        for attempt in (1, 2):
            t1 = time.monotonic()
            qrc, timed_out, stuck = _run_qemu(argv, console_path, timeout)
            elapsed = time.monotonic() - t1
            if not stuck:
                break
            stuck_path = os.path.join(run_dir, "console-stuck-%d.log" % attempt)
            os.replace(console_path, stuck_path)
            loud("topod VM: the guest did not reach its init within %ds (boot %d of 2)" % (
                BOOT_LIMIT, attempt), [
                "no %s line on the console: stuck before any test command ran" % MARK_BOOTED,
                "its console: %s" % stuck_path,
                "started again" if attempt == 1 else "not started again: this run fails"])
            if attempt == 2:
                raise VMFailure("the guest did not reach its init within %ds, twice (%s)" % (
                    BOOT_LIMIT, run_dir))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    with open(console_path, "rb") as f:
        console = f.read().decode("utf-8", "replace").replace("\r", "")
    clean = ANSI.sub("", console)
    info("console log: %s" % console_path)
    if os.environ.get("TOPOD_VM_VERBOSE") == "1":
        sys.stdout.write("----- guest console -----\n" + clean + "\n-----\n")

    done_rc, console_rcs, setup_failures, trouble = None, {}, [], []
    for line in clean.splitlines():
        m = re.search(MARK_DONE + r" rc=(\d+)", line)
        if m:
            done_rc = int(m.group(1))
        m = re.search(MARK_CMD + r" (\d+) rc=(\d+)", line)
        if m:
            console_rcs[int(m.group(1))] = int(m.group(2))
        if MARK_SETUP_FAIL in line:
            setup_failures.append(line.strip())
        if KERNEL_TROUBLE.search(line):
            trouble.append(line.strip())

    results = []
    outdir = os.path.join(run_dir, "out")
    for n, cmd in enumerate(commands):
        def rd(ext):
            try:
                with open(os.path.join(outdir, "%d.%s" % (n, ext)), "rb") as f:
                    return f.read().decode("utf-8", "replace")
            except OSError:
                return None
        rc_text = rd("rc")
        rc = int(rc_text) if rc_text and rc_text.strip().isdigit() else console_rcs.get(n)
        results.append(CommandResult(n, cmd, rd("out") or "", rd("err") or "", rc))

    res = GuestResult(results, console, console_path, run_dir, done_rc, elapsed,
                      setup_failures, trouble)
    info("guest ran %.1fs (qemu exit %s), done marker rc=%s" % (elapsed, qrc, done_rc))

    problems = []
    if timed_out:
        problems.append("qemu did not finish within %ds (killed)" % timeout)
    if done_rc is None:
        problems.append("no '%s' marker on the console (panic, hang or crash)" % MARK_DONE)
    if setup_failures and not allow_setup_failure:
        problems.append("guest setup failed:\n  " + "\n  ".join(setup_failures))
    if trouble and not allow_kernel_trouble:
        problems.append("kernel trouble on the console:\n  " + "\n  ".join(trouble[:20]))
    if problems:
        raise VMFailure("\n".join(problems) + "\n--- console tail (%s) ---\n%s"
                        "--- per-command outputs so far: %s/out/\n" % (
                            console_path, _tail(clean, 60), run_dir))
    return res


# --------------------------------------------------------------------------
# checks and the test entry point

class Missing:
    """What Checks.get returns for an absent key: equal to nothing."""

    def __init__(self, path):
        self.path = path

    def __repr__(self):
        return "<missing: %s>" % self.path

    def __eq__(self, other):
        return False

    def __bool__(self):
        return False

    __hash__ = None


class Checks:
    """Soft assertions: record every mismatch, report them all, exit 0/1."""

    def __init__(self):
        self.failed = []
        self.passed = 0

    def _ok(self, what):
        self.passed += 1
        print("ok    " + what, flush=True)

    def _fail(self, what, detail):
        self.failed.append(what)
        print("FAIL  %s\n      %s" % (what, detail.replace("\n", "\n      ")), flush=True)

    def eq(self, actual, expected, what):
        if actual == expected:
            self._ok("%s == %r" % (what, expected))
        else:
            self._fail(what, "expected: %r\nactual:   %r" % (expected, actual))
        return actual == expected

    def true(self, cond, what, detail=""):
        if cond:
            self._ok(what)
        else:
            self._fail(what, detail or "condition is false")
        return bool(cond)

    def contains(self, container, item, what):
        try:
            ok = item in container
        except TypeError:
            ok = False
        if ok:
            self._ok("%s contains %r" % (what, item))
        else:
            self._fail(what, "expected to contain: %r\nactual: %r" % (item, container))
        return ok

    def get(self, obj, path):
        """obj['a']['b'][0] for path 'a.b.0', or a Missing that fails checks."""
        cur = obj
        for part in path.split("."):
            try:
                cur = cur[int(part)] if isinstance(cur, list) else cur[part]
            except (KeyError, IndexError, ValueError, TypeError):
                return Missing(path)
        return cur

    def json(self, result, i, what=None):
        """Command i's stdout as JSON (rc 0 required); {} and a failure if not."""
        try:
            return result.json(i)
        except VMFailure as e:
            self._fail(what or "command %d output" % i, str(e))
            return {}

    def finish(self):
        if not self.failed and self.passed == 0:
            print("no check ran: a test that checks nothing fails")
            return 1
        if self.failed:
            print("%d check(s) FAILED, %d passed:" % (len(self.failed), self.passed))
            for f in self.failed:
                print("  - " + f)
            return 1
        print("all %d checks passed" % self.passed)
        return 0


def add_common_args(parser):
    parser.add_argument("--logdir", help="run directories go here "
                        "(env TOPOD_VM_LOGDIR wins)")
    parser.add_argument("--kernel", choices=KERNELS,
                        help="the matrix kernel to boot (default: TOPOD_VM_KERNEL)")
    return parser


def main(fn, args=None):
    """Run fn(args) -> 0/1 and exit with 0 pass / 1 fail / 77 skip."""
    global _logdir_arg, _kernel_arg
    if args is not None and getattr(args, "logdir", None):
        _logdir_arg = args.logdir
    if args is not None and getattr(args, "kernel", None):
        _kernel_arg = args.kernel
    try:
        rc = fn(args)
    except Skip as e:
        title, lines = e.args[0] if e.args and isinstance(e.args[0], tuple) else (str(e), [])
        if os.environ.get("TOPOD_VM_REQUIRED") == "1":
            # CI promises this tier runs: a skip there is a failure.
            loud("topod VM test FAILED: TOPOD_VM_REQUIRED=1 but the tier cannot run: " + title, lines)
            sys.exit(1)
        loud("topod VM test SKIPPED (exit 77): " + title, lines)
        sys.exit(SKIP)
    except VMFailure as e:
        print("FAIL  guest run: %s" % e, flush=True)
        sys.exit(1)
    except Exception:
        traceback.print_exc()
        print("FAIL  test script raised an exception", flush=True)
        sys.exit(1)
    sys.exit(1 if rc else 0)


def _find_kernel_cli(slot):
    """--find-kernel VERSION: print the bzImage the runs for that matrix
    kernel boot; exit 77 (with why on stderr) when there is none."""
    try:
        print(find_kernel(slot))
    except Skip as e:
        title, lines = e.args[0]
        sys.stderr.write("vmlib: %s\n" % title + "".join("  %s\n" % l for l in lines))
        sys.exit(SKIP)
    except VMFailure as e:
        sys.stderr.write("vmlib: %s\n" % e)
        sys.exit(1)
    sys.exit(0)


def _cli():
    if len(sys.argv) == 3 and sys.argv[1] == "--find-kernel":
        _find_kernel_cli(sys.argv[2])
    p = argparse.ArgumentParser(description="run commands in the topod test guest "
                                "(or: vmlib.py --find-kernel VERSION)")
    add_common_args(p)
    p.add_argument("--bin", action="append", default=[], metavar="NAME=PATH")
    p.add_argument("--append", default="", help="extra kernel command line")
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("--name", default="adhoc")
    p.add_argument("commands", nargs="+")
    args = p.parse_args()

    def go(a):
        bins = dict(b.split("=", 1) for b in a.bin)
        r = run_guest(a.commands, bins, a.append, a.timeout, name=a.name,
                      allow_setup_failure=True, allow_kernel_trouble=True)
        bad = 0
        for c in r.commands:
            print("==== %d: %s  (rc=%s)" % (c.index, c.command, c.rc))
            sys.stdout.write(c.stdout)
            if c.stderr:
                sys.stdout.write("---- stderr\n" + c.stderr)
            bad |= c.rc != 0
        for l in r.setup_failures + r.kernel_trouble:
            print("!! " + l)
        return bad
    main(go, args)


if __name__ == "__main__":
    _cli()
