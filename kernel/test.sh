#!/bin/bash
# Apply the kernel/ patch series to Debian's linux-source-7.3, checkpatch it,
# build what it touches with W=1 and sparse, and run its KUnit suite under
# qemu on three SMP topologies with SMT.
#
# Usage: kernel/test.sh
#
# Environment:
#   WQLINT_CACHE    cache root (default: $HOME/.cache/wqlint); the tree and
#                   the builds live in $WQLINT_CACHE/kernel-series-7.3/
#   JOBS            parallel make jobs (default: nproc)
#   KUNIT_TIMEOUT   seconds allowed per qemu run (default: 900)
#   KUNIT_BOOT_TIMEOUT seconds allowed until the suite starts; a boot that hangs
#                   before it is tried again, three times at most (default: 300)
#   QEMU_ACCEL      qemu accelerator (default: tcg; KVM hung the guest before)
#   NO_APT=1        don't try to install missing packages
#
# Exit status: 0 if the series applies, checkpatch --strict reports nothing,
# W=1 and sparse report nothing on the lines the series adds, every touched
# object builds, and every KUnit case passes on every topology with no kernel
# warning or crash report on the console; 1 otherwise.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
cache=${WQLINT_CACHE:-$HOME/.cache/wqlint}/kernel-series-7.3
tree=$cache/linux
build=$cache/build          # KUnit kernel (kunit.py --build_dir)
check=$cache/build-check    # defconfig + the touched subsystems, W=1 and sparse
results=$cache/results
jobs=${JOBS:-$(nproc)}
timeout=${KUNIT_TIMEOUT:-900}

# qemu topologies: 16 CPUs as one LLC of 8 SMT cores (one cache_shard pod at
# the default shard size of 8 cores), as two LLCs (sockets) of 4 SMT cores, and
# 24 CPUs as one LLC of 12 SMT cores, which upstream's cache_shard splits into
# two shards of 6 cores. qemu's default CPU model refuses SMT, hence -cpu.
topologies=(
	"1llc:-smp 16,sockets=1,cores=8,threads=2"
	"2llc:-smp 16,sockets=2,cores=4,threads=2"
	"split:-smp 24,sockets=1,cores=12,threads=2"
)

# options that build the objects the conversions touch on x86_64
check_config=(
	KUNIT WQ_KUNIT_TEST BLOCK BLK_INLINE_ENCRYPTION BLK_INLINE_ENCRYPTION_FALLBACK
	F2FS_FS F2FS_FS_COMPRESSION EROFS_FS EROFS_FS_ZIP FS_VERITY BTRFS_FS
	MD BLK_DEV_DM DM_CRYPT COMPILE_TEST PCI PCI_MSI ACPI CRYPTO_HW CRYPTO_DEV_HISI_ZIP
	CRYPTO_DEV_HISI_QM BLK_DEV_ZONED BLK_DEV_ZONED_LOOP
)

# shellcheck source=kernel/lib.sh
. "$here/lib.sh"

# --- packages -----------------------------------------------------------
# python3-ply and python3-git let checkpatch validate SPDX tags
need_packages build-essential flex bison bc libelf-dev libssl-dev python3 python3-ply \
	python3-git perl git xz-utils qemu-system-x86 sparse ccache
# ccache keeps compiled objects across series versions and lost build dirs
export CCACHE_DIR=$cache/ccache
cc="ccache gcc"

# --- tree: unpack once, commit as base, apply the series ---------------------
prepare_tree 7.3

# --- checkpatch ------------------------------------------------------------
checkpatch_series '^total: 0 errors, 0 warnings, 0 checks,'

# --- KUnit ------------------------------------------------------------------
kunit_fail=0
log "KUnit build"
if ! kunit build --arch=x86_64 --build_dir="$build" --kunitconfig=kernel/workqueue.kunitconfig \
		--jobs="$jobs" --make_options "CC=$cc" > "$results/build.out" 2>&1; then
	tail -50 "$results/build.out"
	die "KUnit build failed"
fi
rm -f "$results"/*.hung-*.log "$results"/*.reports "$results"/*.suite.log
report_re='^(WARNING|BUG):|Oops:|^Kernel panic'  # a kernel warning or crash report
for t in "${topologies[@]}"; do
	name=${t%%:*}
	smp=${t#*:}
	# shellcheck disable=SC2086
	run_topology "$name" $smp -cpu Skylake-Server -accel "${QEMU_ACCEL:-tcg}" || { kunit_fail=1; continue; }
	# A kernel warning or crash report while the suite runs fails it even when every
	# case passed: the suite suppresses and counts the warnings it expects. (Each one
	# also puts the nbcon console in emergency mode, whose takeover reprints the
	# record being printed: a duplicated "ok 1" line made kunit.py count 8 errors.)
	awk '/^KTAP version/ { f = 1 } f' "$results/$name.log" > "$results/$name.suite.log"
	grep -cE "$report_re" "$results/$name.suite.log" > "$results/$name.reports" || true
	if [ "$(cat "$results/$name.reports")" != 0 ]; then
		log "KUnit FAILED on $name: kernel reports on the console while the suite ran:"
		grep -E -A14 "$report_re" "$results/$name.suite.log" | head -80
		kunit_fail=1
		continue
	fi
	log "topology, pods and in-flight peaks seen by the suite on $name"
	grep -oE '(topology: .*|LLC [0-9]+ \(.*|cache_shard_size=[0-9]+: [0-9]+ pods|inflight: .*)' \
		"$results/$name.log" | awk '!seen[$0]++' || true
done

# --- W=1 and sparse on the touched objects -----------------------------------
# Every .c file the series changes that its directory's Makefile builds (the
# KUnit file is #included by kernel/workqueue.c) is compiled with W=1 and
# checked with sparse; a warning counts when it points at a line the series
# adds. The result is kept per series, so a rerun doesn't rebuild.
check_fail=0
# 7.3's scripts/checker-valid.sh wants a sparse that knows __typeof_unqual__
# (bookworm's 0.6.4 doesn't); scripts/kernel-sparse builds one from Debian's
# source package when the machine's sparse is refused. C=2: sparse even on
# objects that are up to date.
sparse=$("$repo/scripts/kernel-sparse" "$tree") || die "no sparse that this tree accepts"
checksrc=2
echo "sparse: $sparse $("$sparse" --version)"
if [ "$(cat "$results/check.id" 2>/dev/null)" = "$series_id $checksrc" ]; then
	log "W=1 and sparse: reusing the result for this series"
else
	log "W=1 and sparse on the touched objects"
	rm -f "$results/check.id"
	objs=()
	for f in $(git -C "$tree" diff --name-only --diff-filter=AM base..HEAD -- '*.c'); do
		o=$(basename "${f%.c}.o")
		grep -qsw "$o" "$tree/$(dirname "$f")/Makefile" "$tree/$(dirname "$f")/Kbuild" &&
			objs+=("${f%.c}.o")
	done
	[ -f "$check/.config" ] ||
		nice -n 10 make -s -C "$tree" O="$check" CC="$cc" defconfig >/dev/null
	# enabled again when the list grew since the directory was configured
	for c in "${check_config[@]}"; do
		grep -q "^CONFIG_$c=y" "$check/.config" && continue
		args=()
		for c in "${check_config[@]}"; do args+=(-e "$c"); done
		"$tree/scripts/config" --file "$check/.config" "${args[@]}"
		nice -n 10 make -s -C "$tree" O="$check" CC="$cc" olddefconfig >/dev/null
		break
	done
	for c in "${check_config[@]}"; do
		grep -q "^CONFIG_$c=y" "$check/.config" ||
			{ echo "CONFIG_$c is not set in $check/.config"; check_fail=1; }
	done
	nice -n 10 make -s -C "$tree" O="$check" CC="$cc" -j"$jobs" prepare >/dev/null 2>&1 ||
		die "make prepare failed in $check"
	# added lines, as file:line
	git -C "$tree" diff -U0 base..HEAD | awk '
		/^\+\+\+ b\// { file = substr($0, 7) }
		/^@@/ { split($3, a, ","); line = substr(a[1], 2); n = (a[2] == "") ? 1 : a[2];
			for (i = 0; i < n; i++) print file ":" line + i }' > "$results/added-lines"
	: > "$results/check.log"
	for o in "${objs[@]}"; do
		# rebuilt, so that its W=1 warnings are printed again (ccache replays
		# them); C=2: sparse even when the object is up to date
		rm -f "$check/$o"
		if ! nice -n 10 make -C "$tree" O="$check" CC="$cc" W=1 C=$checksrc CHECK="$sparse" "$o" \
			>> "$results/check.log" 2>&1; then
			echo "build failed: $o"
			check_fail=1
		fi
		printf 'built %s\n' "$o" >> "$results/check.log"
	done
	grep -oE '^[^ :]+:[0-9]+:[0-9]+: (warning|error)' "$results/check.log" |
		sed -E "s|^$tree/||; s|^\\.\\./linux/||; s/:[0-9]+: (warning|error)\$//" | sort -u > "$results/warned-lines" || true
	grep -Fxf "$results/added-lines" "$results/warned-lines" > "$results/added-warnings" || true
	[ $check_fail = 0 ] && echo "$series_id $checksrc" > "$results/check.id"
fi
grep '^built ' "$results/check.log" || true
n_warn=$(grep -cE ': (warning|error):' "$results/check.log" || true)
n_added=$(wc -l < "$results/added-warnings")
printf 'W=1 C=%s: %s warnings in the touched objects, %s on added lines\n' "$checksrc" \
	"$n_warn" "$n_added"
if [ "$n_added" != 0 ]; then
	grep -F -f "$results/added-warnings" "$results/check.log" || true
	check_fail=1
	rm -f "$results/check.id"
fi

# --- summary ---------------------------------------------------------------
log "summary"
for t in "${topologies[@]}"; do
	summary_line "${t%%:*}"
done
[ $cp_fail = 0 ] && echo "checkpatch: clean" || echo "checkpatch: FAILED"
[ $check_fail = 0 ] && echo "W=1 C=$checksrc: clean" || echo "W=1 C=$checksrc: FAILED"
if [ $cp_fail != 0 ] || [ $check_fail != 0 ] || [ $kunit_fail != 0 ]; then
	exit 1
fi
echo "kernel series: OK"
