set -u
out=/host/out/gather
cp_f() { mkdir -p "$out$(dirname "$1")"; cat "$1" > "$out$1" 2>/dev/null || rm -f "$out$1"; }
for f in /sys/devices/system/cpu/online /sys/devices/system/cpu/possible /sys/devices/system/cpu/present /sys/devices/system/cpu/kernel_max /sys/devices/system/cpu/smt/active /sys/devices/system/cpu/smt/control /sys/devices/system/node/online /sys/devices/system/node/possible /sys/devices/system/node/has_cpu /sys/devices/system/node/has_memory /sys/devices/system/node/has_normal_memory; do cp_f $f; done
for c in /sys/devices/system/cpu/cpu[0-9]*; do
  cp_f $c/online
  for f in $c/topology/*; do cp_f $f; done
  for i in $c/cache/index*; do for f in $i/level $i/type $i/size $i/shared_cpu_map $i/shared_cpu_list $i/coherency_line_size $i/ways_of_associativity $i/number_of_sets $i/physical_line_partition $i/id; do cp_f $f; done; done
done
for n in /sys/devices/system/node/node[0-9]*; do for f in cpumap cpulist meminfo distance; do cp_f $n/$f; done; done
mkdir -p $out/sys/bus/cpu/devices $out/sys/bus/node/devices $out/proc/self
for c in /sys/devices/system/cpu/cpu[0-9]*; do ln -s ../../../devices/system/cpu/$(basename $c) $out/sys/bus/cpu/devices/$(basename $c); done
for n in /sys/devices/system/node/node[0-9]*; do ln -s ../../../devices/system/node/$(basename $n) $out/sys/bus/node/devices/$(basename $n); done
cat /proc/cpuinfo > $out/proc/cpuinfo
cat /proc/meminfo > $out/proc/meminfo
cat /proc/self/mountinfo > $out/proc/self/mountinfo
echo done
