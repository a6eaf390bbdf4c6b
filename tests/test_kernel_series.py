"""The reference patch series: kernel/ on linux-source-7.3 and its backport kernel/stable-6.12/
on linux-source-6.12. Each test.sh applies its series with git am, checkpatches it and runs the
KUnit suite under qemu; 7.3's also builds the touched objects with W=1 and sparse. From nothing on 2 cores
the 6.12 one took about 15 minutes; the 7.3 one took over an hour on a loaded machine (its KUnit
build), about 10 minutes warm. These tests hold them to their summary lines."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from conftest import REPO


def _series(d):
    return sorted(p.name for p in d.glob("[0-9][0-9][0-9][0-9]-*.patch") if not p.name.startswith("0000-"))


def _run(script, **env):
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, errors="replace",
                          timeout=5400, env={**os.environ, **env})
    return proc.returncode, proc.stdout + proc.stderr


# test.sh's summary note for a topology whose guest hung before the suite, then passed
HUNG = (" (after 1 boot(s) that hung before the suite)", " (after 2 boot(s) that hung before the suite)")
# test.sh's report_re: a kernel warning or crash report
REPORT = r"^(WARNING|BUG):|Oops:|^Kernel panic"


def _no_reports_in_hung_boots(series_dir):
    """A boot that TCG hung before the suite was tried again (16-24 vCPUs on 2 host CPUs): what
    it printed must hold no kernel warning or crash report either."""
    from conftest import CACHE
    for hung in sorted((CACHE / series_dir / "results").glob("*.hung-*.log")):
        console = hung.read_text(errors="replace")
        assert not re.search(REPORT, console, re.M), (hung.name, console[-3000:])


def _summaries(out):
    # test.sh ends with one summary line per topology: "1llc  [time] Testing complete. ..."
    return re.findall(r"^(\w+)\s+\[[^]]*\] Testing complete\. Ran (\d+) tests: passed: (\d+)(.*)$",
                      out, re.M)


@pytest.mark.kernel
def test_series_on_7_3_applies_is_clean_and_passes_kunit_on_three_topologies(linux_7_3):
    series = _series(REPO / "kernel")
    code, out = _run(REPO / "kernel" / "test.sh")
    assert code == 0, out[-4000:]
    totals = re.findall(r"^(\S+\.patch)\s+total: (\d+) errors, (\d+) warnings, (\d+) checks,", out, re.M)
    assert [t[0] for t in totals] == series and len(series) == 12, totals
    assert all(t[1:] == ("0", "0", "0") for t in totals), totals
    # every object the series touches is built (the KUnit file is part of workqueue.o)
    built = re.findall(r"^built (\S+)$", out, re.M)
    assert built == ["block/blk-crypto-fallback.o", "drivers/block/zloop.o", "drivers/crypto/hisilicon/qm.o",
                     "drivers/md/dm-crypt.o", "fs/btrfs/async-thread.o", "fs/btrfs/disk-io.o", "fs/btrfs/scrub.o", "fs/btrfs/super.o",
                     "fs/erofs/zdata.o", "fs/f2fs/data.o", "fs/verity/verify.o", "kernel/workqueue.o"], built
    # sparse: one that 7.3's scripts/checker-valid.sh accepts (bookworm's 0.6.4 is refused, so
    # scripts/kernel-sparse builds Debian's newer source package), on every touched object
    assert re.search(r"^sparse: \S+ \S+$", out, re.M)
    assert re.search(r"^W=1 C=2: \d+ warnings in the touched objects, 0 on added lines$", out, re.M)
    summaries = _summaries(out)
    assert [s[0] for s in summaries] == ["1llc", "2llc", "split"], summaries
    # every case passed, kunit.py found nothing to complain of in the console, and the console
    # has no kernel warning (the suite suppresses and counts the ones misuse must trigger)
    assert all(s[1] == s[2] == "9" and s[3] in ("", *HUNG) for s in summaries), summaries
    _no_reports_in_hung_boots("kernel-series-7.3")
    # upstream's cache_shard at its default size of 8 cores: one pod per LLC of up to 11 cores,
    # two for the LLC of 12 cores
    pods = re.findall(r"topology: (\d+) cpus, (\d+) cores, (\d+) LLCs, cache_shard_size=8, (\d+) cache_shard pods",
                      out)
    assert pods == [("16", "8", "1", "1"), ("16", "8", "2", "2"), ("24", "12", "1", "2")], pods
    assert "checkpatch: clean" in out and re.search(r"^W=1 C=2: clean$", out, re.M) and "kernel series: OK" in out


@pytest.mark.kernel
def test_7_3_boot_that_never_reaches_the_suite_is_tried_three_times_then_fails(linux_7_3):
    """No guest reaches "KTAP version" in 1 s (a boot takes 6-25 s): each topology is booted
    three times, the two first consoles kept, and test.sh fails naming the topology. Each
    topology's console file first holds a console that reached the suite, as a run before
    leaves it: it must not count for these boots."""
    from conftest import CACHE

    results = CACHE / "kernel-series-7.3" / "results"
    results.mkdir(parents=True, exist_ok=True)
    for name in ("1llc", "2llc", "split"):
        (results / f"{name}.log").write_text("KTAP version 1\n1..1\n")
    code, out = _run(REPO / "kernel" / "test.sh", KUNIT_BOOT_TIMEOUT="1")
    assert code == 1, out[-4000:]
    for name in ("1llc", "2llc", "split"):
        tries = re.findall(rf"^== qemu did not reach KUnit within 1s on {name} \(attempt (\d) of 3\)", out, re.M)
        assert tries == ["1", "2", "3"], (name, out[-4000:])
        assert f"== KUnit FAILED on {name} (exit 124), output:" in out
        assert re.search(rf"^{name}\s+\[[^]]*\] Testing complete\. Ran 0 tests: errors: 1 "
                         rf"\(after 2 boot\(s\) that hung before the suite\)$", out, re.M), out[-2000:]
    assert "kernel series: OK" not in out


@pytest.mark.kernel
def test_stable_6_12_backport_applies_is_checkpatch_clean_and_passes_kunit_on_both_topologies():
    if not os.path.exists("/usr/src/linux-source-6.12.tar.xz"):
        pytest.skip("Debian's linux-source-6.12 is not installed (scripts/setup installs it)")
    series = _series(REPO / "kernel" / "stable-6.12")
    code, out = _run(REPO / "kernel" / "stable-6.12" / "test.sh")
    assert code == 0, out[-4000:]
    totals = re.findall(r"total: (\d+) errors, (\d+) warnings", out)
    assert len(totals) == len(series) == 7, totals
    assert all(t == ("0", "0") for t in totals), totals
    summaries = _summaries(out)
    # every case passed, and no kernel warning on the console but those of wq_test_misuse
    # (nor in a console that hung before the suite, which was booted again)
    assert [s[:3] for s in summaries] == [("1llc", "16", "16"), ("2llc", "16", "16")], summaries
    assert all(s[3] in ("", *HUNG) for s in summaries), summaries
    _no_reports_in_hung_boots("kernel-series")
    assert "checkpatch: clean" in out and "kernel series: OK" in out


def test_a_boot_waits_for_its_own_suite_not_an_earlier_console(tmp_path):
    """kernel/lib.sh's boot() waits until the console shows "KTAP version". The console file
    of the run before holds that line: it must not count for a guest that never reaches the
    suite (boot() returns 125, "tried again"), whenever the guest's shell gets to truncate the
    file. boot() alone, with a qemu that prints nothing, and no time to boot: twenty boots, so
    that a race the parent wins one time in a few cannot pass."""
    script = (REPO / "kernel" / "lib.sh").read_text()
    boot = re.search(r"^boot\(\) \{\n.*?^\}\n", script, re.M | re.S).group(0)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    qemu = bindir / "qemu-system-x86_64"
    qemu.write_text("#!/bin/sh\nsleep 1\n")
    qemu.chmod(0o755)
    (tmp_path / "tree" / "tools" / "testing" / "kunit").mkdir(parents=True)
    console = tmp_path / "console.log"
    earlier = "[    5.1] KTAP version 1\nKTAP version 1\n1..1\nok 1 workqueue\n"
    loop = (f"for n in $(seq 20); do printf '%s' '{earlier}' > {console}; status=0; "
            f"boot {console} || status=$?; echo \"status=$status\"; done")
    got = subprocess.run(["bash", "-c", f"set -euo pipefail\ntree={tmp_path / 'tree'} build={tmp_path} "
                          f"timeout=60 boot_timeout=0 stall_args= boot_args=\n{boot}\n{loop}"],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}"))
    assert got.stdout.split() == ["status=125"] * 20, got.stdout + got.stderr
