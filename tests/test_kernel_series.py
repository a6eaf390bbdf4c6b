"""The reference patch series' backport kernel/stable-6.12/ on linux-source-6.12: its test.sh
applies it with git am, checkpatches it and runs the KUnit suite under qemu (about 15 minutes
from nothing on 2 cores, about a minute with a warm cache); this test holds it to its summary
lines."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from conftest import REPO


def _series(d):
    return sorted(p.name for p in d.glob("[0-9][0-9][0-9][0-9]-*.patch") if not p.name.startswith("0000-"))


def _run(script):
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, errors="replace",
                          timeout=5400)
    return proc.returncode, proc.stdout + proc.stderr


def _summaries(out):
    # test.sh ends with one summary line per topology: "1llc  [time] Testing complete. ..."
    return re.findall(r"^(\w+)\s+\[[^]]*\] Testing complete\. Ran (\d+) tests: passed: (\d+)(.*)$",
                      out, re.M)


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
    assert [s[:3] for s in summaries] == [("1llc", "15", "15"), ("2llc", "15", "15")], summaries
    assert all("fail" not in s[3] for s in summaries)
    assert "checkpatch: clean" in out and "kernel series: OK" in out
