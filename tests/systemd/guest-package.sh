# guest-package.sh - sd-package in the guest (test_package.py reads what it
# writes into out/ and checks each step).
#
# topod installed from its Debian package (payload/topod.deb) with apt-get,
# enabled and started; crunch.service (sdlib.CRUNCH: a main process and two
# workers) named by a policy the test writes in /etc/topod/policies.d; the
# policy edited and `systemctl reload topod`; then `apt-get remove topod`
# and `apt-get purge topod`.
#
# One function a step, run in the order of STEPS at the end. Each writes
# out/STEP.kv (KEY=VALUE: state read from the kernel's cgroup files, systemd
# and dpkg) and, where the host compares whole-system state, out/STEP.procs,
# .props, .cookies (snap). A new check of a step's state (a metrics file, a
# journal field) records what it reads into out/STEP.* here and reads it in
# the step's function in test_package.py.
. /host/payload/guest-lib.sh
set -u

POLICY=/etc/topod/policies.d/50-pkg-crunch.ini
# node_exporter's textfile directory, the one the shipped topod.conf names
# (commented out) and the unit may write (ReadWritePaths=-...: it must
# exist when topod starts)
PROM_DIR=/var/lib/prometheus/node-exporter
PROM=$PROM_DIR/topod.prom

# topod's change entries about the test's policy, as an operator asks for
# them: JSON lines in out/NAME.fields.json
fields() { # NAME
	journalctl --sync 2>/dev/null
	journalctl -b -u topod TOPOD_POLICY=pkg-crunch -o json --no-pager > "$OUT/$1.fields.json" 2>&1
}
CG=/sys/fs/cgroup/system.slice/crunch.service

crunch_pids() { pgrep -x 'crunch(-w[12])?' | sort -n | tr '\n' ' '; }

# KEY=VALUE: crunch's unit cgroup, its unit properties, topod's unit and
# what of topod's is on the machine.
state() {
	echo "pids=$(crunch_pids)"
	unitcg /system.slice/crunch.service | sed 's/^/crunch./'
	# shellcheck disable=SC2046
	sdsnap cookies $(crunch_pids) | awk '{print "ck." $1 "=" $3}'
	systemctl show -p AllowedCPUs -p CPUWeight -p NRestarts -p MainPID -p ActiveState crunch.service |
		sed 's/^/crunch./'
	systemctl show -p LoadState -p ActiveState -p UnitFileState -p FragmentPath -p MainPID topod.service |
		sed 's/^/topod./'
	echo "wants=$(cd /etc/systemd/system && ls -d -- */topod.service 2>/dev/null | tr '\n' ' ')"
	echo "topod.procs=$(pgrep -x topod | tr '\n' ' ')"
	echo "topod.units=$(topod_units | tr '\n' ' ')"
	echo "topod.slice=$([ -d /sys/fs/cgroup/topod.slice ] && echo present || echo absent)"
	echo "dpkg.status=$(dpkg-query -W -f='${db:Status-Abbrev}' topod 2>/dev/null)"
	local f
	for f in /usr/sbin/topod /usr/bin/topoctl /etc/topod/topod.conf "$POLICY"; do
		echo "file.$f=$([ -e "$f" ] && echo present || echo absent)"
	done
}

# Placed as the policy says: CPUS WEIGHT in crunch's unit cgroup (the kernel's files).
placed() {
	[ "$(cat $CG/cpuset.cpus.effective 2>/dev/null)" = "$1" ] &&
		[ "$(cat $CG/cpu.weight 2>/dev/null)" = "$2" ]
}

wait_placed() { # NAME CPUS WEIGHT: wait, record how long
	local t0=$SECONDS rc
	wait_for 30 placed "$2" "$3"
	rc=$?
	echo "$1.rc=$rc after $((SECONDS - t0)) s" >> "$OUT/waits.kv"
}

step_before() { # crunch running, topod not installed
	systemctl start crunch
	wait_for 30 pgrep -x crunch-w2
	sleep 1
	state > "$OUT/before.kv" 2>&1
	snap before
}

step_install() { # the policy, then apt-get install ./topod.deb; systemctl enable --now
	mkdir -p "${POLICY%/*}" "$PROM_DIR"
	cp "$P/policies/crunch.ini" "$POLICY"
	# under its own name, where apt's unprivileged user can read it
	local deb
	deb=/tmp/$(dpkg-deb -f "$P/topod.deb" Package)_$(dpkg-deb -f "$P/topod.deb" Version)_$(dpkg-deb -f "$P/topod.deb" Architecture).deb
	install -m 644 "$P/topod.deb" "$deb"
	{
		echo "deb=$deb"
		dpkg-deb -f "$deb" Package Version Depends
		echo "--- apt-get install $deb"
		DEBIAN_FRONTEND=noninteractive apt-get install -y "$deb"
		echo "apt_rc=$?"
	} > "$OUT/install.log" 2>&1
	local apt_rc
	apt_rc=$(sed -n 's/^apt_rc=//p' "$OUT/install.log")
	if [ "$apt_rc" != 0 ]; then
		# apt unusable here: dpkg, so that the later steps still run (the
		# check of apt's status fails)
		{ echo "--- dpkg -i $deb"; dpkg -i "$deb"; echo "dpkg_rc=$?"; } >> "$OUT/install.log" 2>&1
	fi
	dpkg-query -W topod >/dev/null 2>&1 && [ -x /usr/sbin/topod ] && touch "$OUT/installed"
	{
		echo "apt_rc=$apt_rc"
		state
		echo "conffiles=$(dpkg-query -W -f='${Conffiles}' topod | awk '{print $1}' | tr '\n' ' ')"
		systemctl enable --now topod
		echo "enable_rc=$?"
		echo "active_after_enable=$(systemctl is-active topod)"
	} > "$OUT/install.kv" 2>&1
	dpkg -L topod > "$OUT/install.files" 2>&1
	systemctl cat topod.service > "$OUT/install.unit" 2>&1
}

step_placed() { # crunch where the policy puts it
	wait_placed placed 2-3 300
	sleep 2
	state > "$OUT/placed.kv" 2>&1
	topoctl status --json > "$OUT/placed.status.json" 2> "$OUT/placed.status.err"
	topoctl explain "$(systemctl show -p MainPID --value crunch)" > "$OUT/placed.explain" 2>&1
	fields placed
}

step_reload() { # the policy edited, the metrics file turned on, systemctl reload topod
	cat "$P/policies/crunch-edited.ini" > "$POLICY"
	sed -i 's|^#metrics_file = |metrics_file = |' /etc/topod/topod.conf
	grep '^metrics_file' /etc/topod/topod.conf > "$OUT/reload.conf" 2>&1
	{
		systemctl reload topod
		echo "reload_rc=$?"
	} > "$OUT/reload.kv" 2>&1
	wait_placed reloaded 0-1 120
	wait_for 30 test -s "$PROM"
	sleep 2
	state >> "$OUT/reload.kv" 2>&1
	{ cat "$PROM" || echo "no $PROM"; } > "$OUT/reload.prom" 2>&1
	stat -c 'prom.mode=%a' "$PROM" >> "$OUT/reload.kv" 2>&1
}

step_remove() { # apt-get remove topod: its prerm stops it, which puts everything back
	{
		DEBIAN_FRONTEND=noninteractive apt-get remove -y topod
		echo "remove_rc=$?"
	} > "$OUT/remove.log" 2>&1
	sleep 1
	{
		sed -n 's/^remove_rc=/remove_rc=/p' "$OUT/remove.log"
		state
		echo "prom=$([ -e "$PROM" ] && echo present || echo absent)"
	} > "$OUT/remove.kv" 2>&1
	fields remove
	snap removed
}

step_purge() { # apt-get purge topod: its configuration gone, the test's policy kept
	{
		DEBIAN_FRONTEND=noninteractive apt-get purge -y topod
		echo "purge_rc=$?"
	} > "$OUT/purge.log" 2>&1
	{
		sed -n 's/^purge_rc=/purge_rc=/p' "$OUT/purge.log"
		state
		echo "etc_topod=$(find /etc/topod -type f 2>/dev/null | sort | tr '\n' ' ')"
	} > "$OUT/purge.kv" 2>&1
}

STEPS="before install placed reload remove purge"
for s in $STEPS; do
	log "step $s"
	"step_$s"
done
log "done"
