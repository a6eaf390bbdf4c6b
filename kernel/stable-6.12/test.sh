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
#   QEMU_ACCEL      qemu accelerator (default: tcg)
#   NO_APT=1        don't try to install missing packages
#
# Exit status: 0 if the series applies, checkpatch reports no error and no
# warning, and every KUnit case passes on both topologies with no kernel
# warning on the console but those of wq_test_misuse; 1 otherwise.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${WQLINT_CACHE:-$HOME/.cache/wqlint}/kernel-series
tree=$cache/linux
build=$cache/build
results=$cache/results
tarball=/usr/src/linux-source-6.12.tar.xz
jobs=${JOBS:-$(nproc)}
timeout=${KUNIT_TIMEOUT:-900}

# qemu topologies: 16 CPUs as one LLC of 8 SMT cores, and as two LLCs
# (sockets) of 4 SMT cores. qemu's default CPU model refuses SMT, hence -cpu.
topologies=(
	"1llc:-smp 16,sockets=1,cores=8,threads=2"
	"2llc:-smp 16,sockets=2,cores=4,threads=2"
)
# boot-time shard size used for the live cache_shard checks
kernel_args="workqueue.cache_shard_size=4"

log() { printf '== %s\n' "$*"; }
die() { printf 'test.sh: %s\n' "$*" >&2; exit 1; }

mapfile -t patches < <(find "$here" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' \
			! -name '0000-cover-letter.patch' | sort)
[ ${#patches[@]} -gt 0 ] || die "no patches in $here"

# --- packages -----------------------------------------------------------
# python3-ply and python3-git let checkpatch validate SPDX tags
pkgs=(linux-source-6.12 build-essential flex bison bc libelf-dev libssl-dev
      python3 python3-ply python3-git perl git xz-utils qemu-system-x86)
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
[ -r "$tarball" ] || die "$tarball not found"

# --- tree: unpack once, commit as base, apply the series ---------------------
series_id=$(cat "${patches[@]}" | sha256sum | cut -d' ' -f1)
git_id=(-c user.name="wqlint test" -c user.email="wqlint-test@localhost"
	-c commit.gpgsign=false)

mkdir -p "$cache" "$results"
if [ ! -d "$tree/.git" ] || ! git -C "$tree" rev-parse -q --verify base >/dev/null; then
	log "unpacking $tarball into $tree"
	rm -rf "$tree" "$cache/linux-source-6.12"
	tar -xf "$tarball" -C "$cache"
	mv "$cache/linux-source-6.12" "$tree"
	git -C "$tree" init -q
	# Debian's tree has a .gitignore of /*
	git -C "$tree" add -A -f
	git -C "$tree" "${git_id[@]}" commit -q -m "Debian linux-source-6.12 (base)"
	git -C "$tree" tag base
fi

if [ "$(cat "$cache/series-id" 2>/dev/null)" = "$series_id" ] &&
   [ -z "$(git -C "$tree" status --porcelain --untracked-files=no)" ]; then
	log "series already applied (reusing $tree and $build)"
else
	log "applying ${#patches[@]} patches with git am"
	rm -f "$cache/series-id"
	git -C "$tree" am --abort >/dev/null 2>&1 || true
	git -C "$tree" reset -q --hard base
	git -C "$tree" clean -q -fdx
	git -C "$tree" "${git_id[@]}" am -q "${patches[@]}" ||
		die "the series does not apply"
	echo "$series_id" > "$cache/series-id"
fi
git -C "$tree" log --oneline base..HEAD

# --- checkpatch ------------------------------------------------------------
log "checkpatch --strict --no-signoff"
cp_fail=0
for p in "${patches[@]}"; do
	out=$(cd "$tree" && PATH="/usr/bin:$PATH" perl scripts/checkpatch.pl --strict --no-signoff "$p" 2>&1) || true
	total=$(printf '%s\n' "$out" | grep '^total:' || echo "total: ? errors, ? warnings")
	printf '%-72s %s\n' "$(basename "$p")" "$total"
	if ! printf '%s\n' "$total" | grep -q '^total: 0 errors, 0 warnings'; then
		printf '%s\n' "$out"
		cp_fail=1
	fi
done

# --- KUnit ------------------------------------------------------------------
# TCG by default: the suite boots in seconds under it, and KVM with a CPU
# model the host doesn't fully support (Skylake-Server on an AMD host) can
# hang the guest.
accel="-accel ${QEMU_ACCEL:-tcg}"
kunit() {
	(cd "$tree" && PYTHONDONTWRITEBYTECODE=1 python3 tools/testing/kunit/kunit.py "$@" \
		--arch=x86_64 --build_dir="$build" \
		--kunitconfig=kernel/workqueue.kunitconfig)
}

kunit_fail=0
first=1
# a topology not run this time must not show the last run's results
rm -f "$results"/*.out "$results"/*.json "$results"/*.log "$results"/*.reports
for t in "${topologies[@]}"; do
	name=${t%%:*}
	smp=${t#*:}
	qemu_args="$smp -cpu Skylake-Server $accel"
	# build once with "run", then only boot the same kernel with "exec"
	if [ $first = 1 ]; then
		log "KUnit build + run ($name: $qemu_args)"
		cmd=(run --jobs="$jobs")
	else
		log "KUnit run without rebuild ($name: $qemu_args)"
		cmd=(exec)
	fi
	first=0
	status=0
	kunit "${cmd[@]}" --timeout="$timeout" --kernel_args="$kernel_args" \
		--qemu_args="$qemu_args" --json="$results/$name.json" \
		> "$results/$name.out" 2>&1 || status=$?
	cp "$build/test.log" "$results/$name.log" 2>/dev/null || true
	grep -E '\[(PASSED|FAILED|SKIPPED|CRASHED)\]|Testing complete|Elapsed time' \
		"$results/$name.out" || true
	# "Testing complete. Ran N tests: passed: N" lists only non-zero counts;
	# a skipped case counts as a failure here.
	if [ $status != 0 ] ||
	   ! grep -qE 'Testing complete\. Ran [1-9][0-9]* tests: passed: [1-9][0-9]*$' \
			"$results/$name.out"; then
		log "KUnit FAILED on $name (exit $status), full output:"
		cat "$results/$name.out"
		kunit_fail=1
		[ $status = 0 ] || break
	fi
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
	name=${t%%:*}
	reports=$(cat "$results/$name.reports" 2>/dev/null || echo 0)
	printf '%-5s %s%s\n' "$name" \
		"$(grep -h 'Testing complete' "$results/$name.out" 2>/dev/null || echo 'not run')" \
		"$([ "$reports" = 0 ] || echo " ($reports kernel reports on the console)")"
done
[ $cp_fail = 0 ] && echo "checkpatch: clean" || echo "checkpatch: FAILED"
if [ $cp_fail != 0 ] || [ $kunit_fail != 0 ]; then
	exit 1
fi
echo "kernel series: OK"
