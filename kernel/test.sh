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
boot_timeout=${KUNIT_BOOT_TIMEOUT:-300}
boot_attempts=3

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

log() { printf '== %s\n' "$*"; }
die() { printf 'test.sh: %s\n' "$*" >&2; exit 1; }

mapfile -t patches < <(find "$here" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' \
			! -name '0000-cover-letter.patch' | sort)
[ ${#patches[@]} -gt 0 ] || die "no patches in $here"

# --- packages -----------------------------------------------------------
# python3-ply and python3-git let checkpatch validate SPDX tags
pkgs=(build-essential flex bison bc libelf-dev libssl-dev python3 python3-ply
      python3-git perl git xz-utils qemu-system-x86 sparse ccache)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	[ "${NO_APT:-0}" != 1 ] && [ "$(id -u)" = 0 ] ||
		die "missing packages: ${missing[*]}"
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# ccache keeps compiled objects across series versions and lost build dirs
export CCACHE_DIR=$cache/ccache
cc="ccache gcc"

# --- tree: unpack once, commit as base, apply the series ---------------------
series_id=$(cat "${patches[@]}" | sha256sum | cut -d' ' -f1)
git_id=(-c user.name="wqlint test" -c user.email="wqlint-test@localhost"
	-c commit.gpgsign=false)

mkdir -p "$cache" "$results"
if [ ! -d "$tree/.git" ] || ! git -C "$tree" rev-parse -q --verify base >/dev/null; then
	tarball=$("$repo/scripts/kernel-source" 7.3) || die "cannot fetch linux-source-7.3"
	log "unpacking $tarball into $tree"
	rm -rf "$tree" "$cache/linux-source-7.3"
	tar -xf "$tarball" -C "$cache"
	mv "$cache/linux-source-7.3" "$tree"
	git -C "$tree" init -q
	# Debian's tree has a .gitignore of /*
	git -C "$tree" add -A -f
	git -C "$tree" "${git_id[@]}" commit -q -m "Debian linux-source-7.3 (base)"
	git -C "$tree" tag base
fi

if [ "$(cat "$cache/series-id" 2>/dev/null)" = "$series_id" ] &&
   [ -z "$(git -C "$tree" status --porcelain --untracked-files=no)" ]; then
	log "series already applied (reusing $tree and the builds)"
else
	log "applying ${#patches[@]} patches with git am"
	rm -f "$cache/series-id"
	git -C "$tree" am --abort >/dev/null 2>&1 || true
	# Remember the files the previous series changed, so that those it
	# leaves as they were keep their mtime and make doesn't rebuild every
	# object that includes them.
	(cd "$tree" && git diff --name-only base HEAD 2>/dev/null |
		while read -r f; do
			[ -f "$f" ] && printf '%s %s %s\n' "$(git hash-object "$f")" \
				"$(stat -c %Y "$f")" "$f"
		done) > "$cache/previous-files"
	git -C "$tree" reset -q --hard base
	git -C "$tree" clean -q -fdx
	git -C "$tree" "${git_id[@]}" am -q "${patches[@]}" ||
		die "the series does not apply"
	(cd "$tree" && while read -r blob mtime f; do
		[ -f "$f" ] && [ "$(git hash-object "$f")" = "$blob" ] && touch -d "@$mtime" "$f"
	done < "$cache/previous-files")
	echo "$series_id" > "$cache/series-id"
fi
git -C "$tree" log --oneline base..HEAD

# --- checkpatch ------------------------------------------------------------
log "checkpatch --strict --no-signoff"
cp_fail=0
for p in "${patches[@]}"; do
	out=$(cd "$tree" && PATH="/usr/bin:$PATH" perl scripts/checkpatch.pl --strict --no-signoff "$p" 2>&1) || true
	total=$(printf '%s\n' "$out" | grep '^total:' || echo "total: ? errors, ? warnings, ? checks")
	printf '%-72s %s\n' "$(basename "$p")" "$total"
	if ! printf '%s\n' "$total" | grep -q '^total: 0 errors, 0 warnings, 0 checks,'; then
		printf '%s\n' "$out"
		cp_fail=1
	fi
done

# --- KUnit ------------------------------------------------------------------
# kunit.py builds the kernel. It would boot it with "-accel kvm -accel hvf
# -accel tcg", which takes KVM wherever /dev/kvm exists, and KVM with a CPU
# model the host doesn't fully support (Skylake-Server on an AMD host) hangs
# the guest. So qemu is run here, under TCG by default, with the command line
# kunit.py uses, and its console is handed to "kunit.py parse".
kunit() {
	(cd "$tree" && PYTHONDONTWRITEBYTECODE=1 nice -n 10 python3 tools/testing/kunit/kunit.py "$@")
}

# Boot the KUnit kernel with qemu's arguments, console to $1. Exit status 125
# when the guest printed no "KTAP version" within $boot_timeout seconds: with
# 16-24 vCPUs on a 2-CPU host, TCG has hung a guest's early boot (seen once, in
# the stop_machine() of the switch to tsc-early), which says nothing about the
# suite; such a boot is tried again, a failing suite never is.
# An RCU stall report, like a warning, puts the console in emergency mode (see
# the console check below); on a loaded 2-CPU host TCG can hold a vCPU past
# the default 21 s, which says nothing about the suite: allow the maximum.
stall_args='rcupdate.rcu_cpu_stall_timeout=300'
boot() {
	local out=$1 pid waited=0
	shift
	# Empty before the guest starts: the poll below must not read the console of the
	# boot before (qemu's shell truncates it only when it gets to run).
	: > "$out"
	(cd "$tree/tools/testing/kunit" && exec timeout "$timeout" nice -n 10 qemu-system-x86_64 \
		-nodefaults -m 1024 -kernel "$build/arch/x86/boot/bzImage" \
		-append "kunit.enable=1 console=ttyS0 kunit_shutdown=reboot $stall_args" -no-reboot \
		-nographic -serial stdio -bios qboot.rom "$@" \
		< /dev/null > "$out" 2>&1) &
	pid=$!
	while kill -0 "$pid" 2>/dev/null && ! grep -q '^KTAP version' "$out" 2>/dev/null; do
		if [ "$waited" -ge "$boot_timeout" ]; then
			kill -TERM "$pid" 2>/dev/null || true
			wait "$pid" || true
			return 125
		fi
		sleep 2
		waited=$((waited + 2))
	done
	wait "$pid"
}

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
	qemu_args=($smp -cpu Skylake-Server -accel "${QEMU_ACCEL:-tcg}")
	log "KUnit run ($name: ${qemu_args[*]})"
	for attempt in $(seq "$boot_attempts"); do
		status=0
		boot "$results/$name.log" "${qemu_args[@]}" || status=$?
		[ "$status" = 125 ] || break
		log "qemu did not reach KUnit within ${boot_timeout}s on $name (attempt $attempt of $boot_attempts), console:"
		grep -v '^qemu-system-x86_64: warning' "$results/$name.log" | tail -5 || true
		status=124
		[ "$attempt" = "$boot_attempts" ] || mv "$results/$name.log" "$results/$name.hung-$attempt.log"
	done
	kunit parse --json="$results/$name.json" "$results/$name.log" \
		> "$results/$name.out" 2>&1 || { [ "$status" != 0 ] || status=1; }
	grep -E '\[(PASSED|FAILED|SKIPPED|CRASHED)\]|Testing complete|Elapsed time' \
		"$results/$name.out" || true
	# "Testing complete. Ran N tests: passed: N" lists only non-zero counts;
	# a skipped case counts as a failure here.
	if [ "$status" != 0 ] ||
	   ! grep -qE 'Testing complete\. Ran [1-9][0-9]* tests: passed: [1-9][0-9]*$' \
			"$results/$name.out"; then
		log "KUnit FAILED on $name (exit $status), output:"
		cat "$results/$name.out"
		grep -v '^qemu-system-x86_64: warning' "$results/$name.log" | tail -40
		kunit_fail=1
		continue
	fi
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
	name=${t%%:*}
	hung=$(find "$results" -maxdepth 1 -name "$name.hung-*.log" | wc -l)
	reports=$(cat "$results/$name.reports" 2>/dev/null || echo 0)
	printf '%-5s %s%s%s\n' "$name" \
		"$(grep -h 'Testing complete' "$results/$name.out" 2>/dev/null || echo 'not run')" \
		"$([ "$reports" = 0 ] || echo " ($reports kernel reports on the console)")" \
		"$([ "$hung" = 0 ] || echo " (after $hung boot(s) that hung before the suite)")"
done
[ $cp_fail = 0 ] && echo "checkpatch: clean" || echo "checkpatch: FAILED"
[ $check_fail = 0 ] && echo "W=1 C=$checksrc: clean" || echo "W=1 C=$checksrc: FAILED"
if [ $cp_fail != 0 ] || [ $check_fail != 0 ] || [ $kunit_fail != 0 ]; then
	exit 1
fi
echo "kernel series: OK"
