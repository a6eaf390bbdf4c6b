#!/bin/bash
# Apply the kernel/stable-6.12/ backport of the reference series to Debian's
# linux-source-6.12, checkpatch it and run its KUnit suite under qemu on two
# SMP topologies with SMT.
#
# Usage: kernel/stable-6.12/test.sh
#
# Environment:
#   WQLINT_CACHE    cache root (default: $HOME/.cache/wqlint); the tree and
#                   the build live in $WQLINT_CACHE/kernel-series/
#   JOBS            parallel make jobs (default: nproc)
#   KUNIT_TIMEOUT   seconds allowed per qemu run (default: 900)
#   KUNIT_BOOT_TIMEOUT seconds allowed until the suite starts; a boot that hangs
#                   before it is tried again, three times at most (default: 300)
#   QEMU_ACCEL      qemu accelerator (default: tcg; KVM hung the guest before)
#   NO_APT=1        don't try to install missing packages
#
# Exit status: 0 if the series applies, checkpatch reports no error and no
# warning, and every KUnit case passes on both topologies with no kernel
# warning on the console but those of wq_test_misuse; 1 otherwise.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$(dirname "$here")")
cache=${WQLINT_CACHE:-$HOME/.cache/wqlint}/kernel-series
tree=$cache/linux
build=$cache/build
results=$cache/results
jobs=${JOBS:-$(nproc)}
timeout=${KUNIT_TIMEOUT:-900}

# qemu topologies: 16 CPUs as one LLC of 8 SMT cores, and as two LLCs
# (sockets) of 4 SMT cores. qemu's default CPU model refuses SMT, hence -cpu.
topologies=(
	"1llc:-smp 16,sockets=1,cores=8,threads=2"
	"2llc:-smp 16,sockets=2,cores=4,threads=2"
)
# boot-time shard size used for the live cache_shard checks
boot_args="workqueue.cache_shard_size=4"

# shellcheck source=kernel/lib.sh
. "$here/../lib.sh"

# --- packages -----------------------------------------------------------
# python3-ply and python3-git let checkpatch validate SPDX tags
need_packages linux-source-6.12 build-essential flex bison bc libelf-dev libssl-dev \
	python3 python3-ply python3-git perl git xz-utils qemu-system-x86

# --- tree: unpack once, commit as base, apply the series ---------------------
prepare_tree 6.12

# --- checkpatch ------------------------------------------------------------
checkpatch_series '^total: 0 errors, 0 warnings'

# --- KUnit ------------------------------------------------------------------
kunit_fail=0
log "KUnit build"
if ! kunit build --arch=x86_64 --build_dir="$build" --kunitconfig=kernel/workqueue.kunitconfig \
		--jobs="$jobs" > "$results/build.out" 2>&1; then
	tail -50 "$results/build.out"
	die "KUnit build failed"
fi
# a topology not run this time must not show the last run's results
rm -f "$results"/*.out "$results"/*.json "$results"/*.log "$results"/*.reports
for t in "${topologies[@]}"; do
	name=${t%%:*}
	smp=${t#*:}
	# shellcheck disable=SC2086
	run_topology "$name" $smp -cpu Skylake-Server -accel "${QEMU_ACCEL:-tcg}" || { kunit_fail=1; continue; }
	# A kernel warning or crash report while the suite runs fails it even when every
	# case passed, except the warnings wq_test_misuse must trigger (6.12's KUnit can't
	# suppress them): those sit before its result line.
	awk '/^KTAP version/ { f = 1 } !f { next }
		/^(WARNING|BUG):|Oops:|^Kernel panic/ { pending++ }
		/^ *(ok|not ok) [0-9]+ / { if ($0 !~ / wq_test_misuse$/) bad += pending; pending = 0 }
		END { print bad + pending }' "$results/$name.log" > "$results/$name.reports"
	if [ "$(cat "$results/$name.reports")" != 0 ]; then
		log "KUnit FAILED on $name: kernel reports on the console outside wq_test_misuse"
		echo "every report of the run, and the result lines:"
		grep -E '^(WARNING|BUG):|Oops:|^Kernel panic|^ *(ok|not ok) [0-9]+ ' \
			"$results/$name.log" | head -80
		kunit_fail=1
	fi
	log "topology and pod counts seen by the suite on $name"
	grep -oE '(topology: .*|cache_shard_size=[0-9]+: [0-9]+ pods)' \
		"$results/$name.log" | awk '!seen[$0]++' || true
done

# --- summary ---------------------------------------------------------------
log "summary"
for t in "${topologies[@]}"; do
	summary_line "${t%%:*}"
done
[ $cp_fail = 0 ] && echo "checkpatch: clean" || echo "checkpatch: FAILED"
if [ $cp_fail != 0 ] || [ $kunit_fail != 0 ]; then
	exit 1
fi
echo "kernel series: OK"
