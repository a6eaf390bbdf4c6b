# kernel/lib.sh: what kernel/test.sh and kernel/stable-6.12/test.sh share. Sourced by them,
# after they set: here (their directory), repo, cache, tree, build, results, timeout.

log() { printf '== %s\n' "$*"; }
die() { printf 'test.sh: %s\n' "$*" >&2; exit 1; }

# The series: every NNNN-*.patch of $here but the cover letter, in order.
mapfile -t patches < <(find "$here" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' \
			! -name '0000-cover-letter.patch' | sort)
[ ${#patches[@]} -gt 0 ] || die "no patches in $here"
series_id=$(cat "${patches[@]}" | sha256sum | cut -d' ' -f1)
mkdir -p "$cache" "$results"

# Install the Debian packages named that are missing (as root, unless NO_APT=1).
need_packages() {
	local p missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	[ "${NO_APT:-0}" != 1 ] && [ "$(id -u)" = 0 ] ||
		die "missing packages: ${missing[*]}"
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Debian's linux-source-$1 in $tree: unpacked once and committed as "base", then the series
# applied with git am unless it is applied already. A file the series leaves as the previous
# series had it keeps its mtime, so that make does not rebuild every object including it.
git_id=(-c user.name="wqlint test" -c user.email="wqlint-test@localhost" -c commit.gpgsign=false)
prepare_tree() {
	local series=$1 tarball
	if [ ! -d "$tree/.git" ] || ! git -C "$tree" rev-parse -q --verify base >/dev/null; then
		tarball=$("$repo/scripts/kernel-source" "$series") || die "cannot fetch linux-source-$series"
		log "unpacking $tarball into $tree"
		rm -rf "$tree" "$cache/linux-source-$series"
		tar -xf "$tarball" -C "$cache"
		mv "$cache/linux-source-$series" "$tree"
		git -C "$tree" init -q
		# Debian's tree has a .gitignore of /*
		git -C "$tree" add -A -f
		git -C "$tree" "${git_id[@]}" commit -q -m "Debian linux-source-$series (base)"
		git -C "$tree" tag base
	fi
	if [ "$(cat "$cache/series-id" 2>/dev/null)" = "$series_id" ] &&
	   [ -z "$(git -C "$tree" status --porcelain --untracked-files=no)" ]; then
		log "series already applied (reusing $tree and the builds)"
	else
		log "applying ${#patches[@]} patches with git am"
		rm -f "$cache/series-id"
		git -C "$tree" am --abort >/dev/null 2>&1 || true
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
}

# checkpatch --strict on each patch; cp_fail=1 unless its total line matches $1.
checkpatch_series() {
	local want=$1 p out total
	log "checkpatch --strict --no-signoff"
	cp_fail=0
	for p in "${patches[@]}"; do
		out=$(cd "$tree" && PATH="/usr/bin:$PATH" perl scripts/checkpatch.pl --strict --no-signoff "$p" 2>&1) || true
		total=$(printf '%s\n' "$out" | grep '^total:' || echo "total: ? errors, ? warnings, ? checks")
		printf '%-72s %s\n' "$(basename "$p")" "$total"
		if ! printf '%s\n' "$total" | grep -q "$want"; then
			printf '%s\n' "$out"
			cp_fail=1
		fi
	done
}

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
# the console checks); on a loaded 2-CPU host TCG can hold a vCPU past the
# default 21 s, which says nothing about the suite: allow the maximum.
boot_timeout=${KUNIT_BOOT_TIMEOUT:-300}
boot_attempts=3
stall_args='rcupdate.rcu_cpu_stall_timeout=300'
boot_args=${boot_args:-}
boot() {
	local out=$1 pid waited=0
	shift
	# Empty before the guest starts: the poll below must not read the console of the
	# boot before (qemu's shell truncates it only when it gets to run).
	: > "$out"
	(cd "$tree/tools/testing/kunit" && exec timeout "$timeout" nice -n 10 qemu-system-x86_64 \
		-nodefaults -m 1024 -kernel "$build/arch/x86/boot/bzImage" \
		-append "kunit.enable=1 console=ttyS0 kunit_shutdown=reboot $stall_args $boot_args" -no-reboot \
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

# Run the suite on topology $1 (qemu arguments after it): boot, tried again when the guest
# hangs before the suite (its console kept as $1.hung-N.log), then "kunit.py parse" into
# $1.out and $1.json. Returns non-zero unless the guest ran the suite and every case passed
# ("Testing complete. Ran N tests: passed: N" lists only non-zero counts; a skipped case
# counts as a failure here), after printing what failed.
run_topology() {
	local name=$1 attempt status
	shift
	log "KUnit run ($name: $*)"
	for attempt in $(seq "$boot_attempts"); do
		status=0
		boot "$results/$name.log" "$@" || status=$?
		[ "$status" = 125 ] || break
		log "qemu did not reach KUnit within ${boot_timeout}s on $name (attempt $attempt of $boot_attempts), console:"
		grep -v '^qemu-system-x86_64: warning' "$results/$name.log" | tail -5 || true
		status=124
		[ "$attempt" = "$boot_attempts" ] || mv "$results/$name.log" "$results/$name.hung-$attempt.log"
	done
	# the serial console ends its lines with CR LF: a check anchored at the end of a line
	# must not see the CR
	sed -i 's/\r$//' "$results/$name.log"
	kunit parse --json="$results/$name.json" "$results/$name.log" \
		> "$results/$name.out" 2>&1 || { [ "$status" != 0 ] || status=1; }
	grep -E '\[(PASSED|FAILED|SKIPPED|CRASHED)\]|Testing complete|Elapsed time' \
		"$results/$name.out" || true
	if [ "$status" != 0 ] ||
	   ! grep -qE 'Testing complete\. Ran [1-9][0-9]* tests: passed: [1-9][0-9]*$' \
			"$results/$name.out"; then
		log "KUnit FAILED on $name (exit $status), output:"
		cat "$results/$name.out"
		grep -v '^qemu-system-x86_64: warning' "$results/$name.log" | tail -40
		return 1
	fi
}

# The summary line of topology $1: its result, kernel reports, boots that hung.
summary_line() {
	local name=$1 hung reports
	hung=$(find "$results" -maxdepth 1 -name "$name.hung-*.log" | wc -l)
	reports=$(cat "$results/$name.reports" 2>/dev/null || echo 0)
	printf '%-5s %s%s%s\n' "$name" \
		"$(grep -h 'Testing complete' "$results/$name.out" 2>/dev/null || echo 'not run')" \
		"$([ "$reports" = 0 ] || echo " ($reports kernel reports on the console)")" \
		"$([ "$hung" = 0 ] || echo " (after $hung boot(s) that hung before the suite)")"
}
