#!/bin/bash
# build-rootfs.sh - the systemd tier's guest: a small Debian 12 (bookworm)
# root filesystem with systemd as PID 1, as a raw ext4 image. sdlib.py runs
# it when the cached image for this script and rootfs-packages is missing;
# it follows the measured recipe of ../shared/vm/systemd-guest.
#
# usage: build-rootfs.sh -o IMAGE [-s SIZE] [-m MIRROR]
#   -o IMAGE   output image (sdlib.py: ~/.cache/topod/systemd-guest/rootfs-<hash>.img)
#   -s SIZE    ext4 image size         default 1G (sparse file)
#   -m MIRROR  Debian mirror           default: the first URIs/deb line of this machine's apt sources
#
# The packages are rootfs-packages (beside this script). Needs root and the
# Debian packages mmdebstrap and e2fsprogs (mke2fs -d); writes only IMAGE,
# IMAGE.packages and a temporary tree under $TMPDIR. About a minute here
# (downloads ~60 MB).
#
# What is in the image:
#   * mmdebstrap --variant=minbase with rootfs-packages
#   * /etc/fstab: /dev/vda as /, 9p tags "rig" -> /rig and "host" -> /host (nofail)
#   * rig-run.service + rig.target (the default target): after multi-user.target
#     it runs /rig/cmd with bash in /host, writes /rig/out.log and /rig/rc, and
#     powers the guest off.
#   * timers that only make noise in a throw-away guest are masked (apt-daily*,
#     dpkg-db-backup, e2scrub_all, fstrim), and systemd-firstboot; a fixed
#     machine-id so no boot is a "first boot"; a volatile journal, no rate limit.
set -euo pipefail
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
IMG=
SIZE=1G
# the mirror this machine's apt already uses (deb822 sources first, then sources.list)
MIRROR=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
[ -n "$MIRROR" ] || MIRROR=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
while getopts "o:s:m:h" o; do
  case $o in
    o) IMG=$OPTARG ;; s) SIZE=$OPTARG ;; m) MIRROR=$OPTARG ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
  esac
done
[ -n "$IMG" ] || { echo "build-rootfs: -o IMAGE is required" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "build-rootfs: needs root" >&2; exit 2; }
[ -n "$MIRROR" ] || { echo "build-rootfs: no Debian mirror found in the apt sources; give -m MIRROR" >&2; exit 2; }
for t in mmdebstrap mke2fs; do
  command -v $t >/dev/null || { echo "build-rootfs: $t missing (apt-get install mmdebstrap e2fsprogs)" >&2; exit 2; }
done

PKGS=$(sed 's/#.*//' "$HERE/rootfs-packages" | tr -s ' \t\n' ' ')
[ -n "${PKGS// /}" ] || { echo "build-rootfs: no packages in $HERE/rootfs-packages" >&2; exit 2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sg-rootfs.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
ROOT=$WORK/root

T0=$(date +%s)
mmdebstrap --variant=minbase --include="$(echo $PKGS | tr ' ' ',')" \
  bookworm "$ROOT" "$MIRROR"

# ---- configuration ---------------------------------------------------------
echo systemd-guest > "$ROOT/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tsystemd-guest\n' > "$ROOT/etc/hosts"
# a fixed machine-id: with "uninitialized" or an empty file every boot of the
# (snapshot) image would be a first boot (ConditionFirstBoot units run)
printf '%s\n' "$(head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$ROOT/etc/machine-id"
chroot "$ROOT" passwd -d root >/dev/null
cat > "$ROOT/etc/fstab" <<'EOF'
/dev/vda  /      ext4  rw,relatime                                   0 1
rig       /rig   9p    trans=virtio,version=9p2000.L,msize=524288,nofail  0 0
host      /host  9p    trans=virtio,version=9p2000.L,msize=524288,nofail  0 0
EOF
mkdir -p "$ROOT/rig" "$ROOT/host"

cat > "$ROOT/usr/local/sbin/rig-run" <<'EOF'
#!/bin/bash
# Runs /rig/cmd (written by run.sh on the host) in /host, output to the
# console and /rig/out.log, status to /rig/rc, then powers off.
up() { cut -d' ' -f1 /proc/uptime; }
{
  echo "uptime_at_cmd=$(up)"
  systemctl show -p KernelTimestampMonotonic -p UserspaceTimestampMonotonic \
    -p FinishTimestampMonotonic
  systemctl show multi-user.target -p ActiveEnterTimestampMonotonic
  systemctl --failed --no-legend --plain
} > /rig/boot.txt 2>&1
cd /host 2>/dev/null || cd /
export HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
bash /rig/cmd 2>&1 | tee /rig/out.log
rc=${PIPESTATUS[0]}
echo "uptime_at_end=$(up)" >> /rig/boot.txt
echo "$rc" > /rig/rc
sync
echo "@@RIG-EXIT=$rc@@"
[ -e /rig/keep ] || systemctl --no-block poweroff
EOF
chmod 755 "$ROOT/usr/local/sbin/rig-run"

cat > "$ROOT/etc/systemd/system/rig-run.service" <<'EOF'
[Unit]
Description=rig: run /rig/cmd, then power off
After=multi-user.target
RequiresMountsFor=/rig
ConditionPathExists=/rig/cmd

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/rig-run
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity
EOF
cat > "$ROOT/etc/systemd/system/rig.target" <<'EOF'
[Unit]
Description=rig: multi-user.target, then rig-run.service
Requires=multi-user.target
Wants=rig-run.service
After=multi-user.target
AllowIsolate=yes
EOF
ln -sf rig.target "$ROOT/etc/systemd/system/default.target"

# root on ttyS0 without a password prompt (interactive boots)
mkdir -p "$ROOT/etc/systemd/system/serial-getty@ttyS0.service.d"
cat > "$ROOT/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf" <<'EOF'
[Service]
ExecStart=
ExecStart=-/sbin/agetty -o '-p -f -- \\u' --keep-baud --autologin root 115200,57600,38400,9600 - $TERM
EOF

for u in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer \
         e2scrub_reap.service fstrim.timer systemd-firstboot.service; do
  ln -sf /dev/null "$ROOT/etc/systemd/system/$u"
done
# less journal on a throw-away guest: volatile, no rate limit (we want every line)
mkdir -p "$ROOT/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\nRateLimitBurst=0\n' > "$ROOT/etc/systemd/journald.conf.d/rig.conf"

# record what went in
mkdir -p "$(dirname "$IMG")"
chroot "$ROOT" dpkg-query -W -f '${Package}\t${Version}\n' > "$IMG.packages.new"
rm -rf "$ROOT/var/cache/apt/archives/"*.deb "$ROOT/var/lib/apt/lists/"* 2>/dev/null || true
USED=$(du -sm "$ROOT" | cut -f1)

# ---- image ------------------------------------------------------------------
mkdir -p "$(dirname "$IMG")"
rm -f "$IMG.new"
mke2fs -q -t ext4 -L sg-root -d "$ROOT" "$IMG.new" "$SIZE"
mv "$IMG.packages.new" "$IMG.packages"
mv "$IMG.new" "$IMG"
T1=$(date +%s)
echo "build-rootfs: $IMG: tree ${USED} MiB, image $(du -h --apparent-size "$IMG" | cut -f1) apparent," \
     "$(du -h "$IMG" | cut -f1) on disk, $(wc -l < "$IMG.packages") packages, $((T1-T0)) s"
