"""End to end on Debian's kernel source trees, against hand-labelled lists of real sites.

tests/e2e/labels/linux-*.tsv were written by reading the C of each tree (see the header of
each file and NOTES.md there), independently of the scanner.
"""
from __future__ import annotations

import json

import pytest

from conftest import REPO
from helpers import scan_json

LABELS = REPO / "tests" / "e2e" / "labels"
CPU_RULES = {"unbound-max-active-cpu-count", "percpu-max-active-cpu-count"}


def labels(name):
    out = {}
    for line in (LABELS / name).read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        loc, rule, origin = line.split("\t")[:3]
        out[loc] = (rule, origin)
    return out


def check_tree(tree, label_file, version, doc=None):
    if doc is None:
        doc, _ = scan_json(tree, "--jobs", "2")
    assert doc["kernel_version"] == version
    want = labels(label_file)
    got = {f"{f['path']}:{f['line']}:{f['column']}": f for f in doc["findings"] if f["rule"] in CPU_RULES}
    assert sorted(got) == sorted(want), (
        f"missed: {sorted(set(want) - set(got))}; not labelled: {sorted(set(got) - set(want))}")
    for loc, (rule, origin) in want.items():
        f = got[loc]
        assert f["rule"] == rule, loc
        chain = [f"{s['path']}:{s['line']}" for s in f["chain"]]
        assert chain[0] == loc.rsplit(":", 1)[0], (loc, chain)
        assert origin in chain, (loc, origin, chain)
        assert f["chain"][-1]["note"].startswith("CPU count "), (loc, f["chain"][-1])
    return doc


@pytest.mark.kernel
def test_linux_6_12_cpu_count_sites(linux_6_12, linux_6_12_scan):
    doc = check_tree(linux_6_12, "linux-6.12.tsv", "v6.12.117", json.loads(linux_6_12_scan[0]))
    by_rule = {}
    for f in doc["findings"]:
        by_rule.setdefault(f["rule"], []).append(f)
    # The create_*() macros are found as wrappers of alloc_workqueue(), at their call sites.
    assert len(by_rule["legacy-create-workqueue"]) > 100
    assert all(not f["path"].startswith("include/linux/workqueue.h") for f in doc["findings"])


@pytest.mark.kernel
def test_linux_6_1_cpu_count_sites(linux_6_1, whole_scan):
    doc = check_tree(linux_6_1, "linux-6.1.tsv", "v6.1." + doc_sublevel(linux_6_1), json.loads(whole_scan("6.1")[0]))
    assert not [f for f in doc["findings"] if f["rule"] == "missing-affinity-flag"]  # no WQ_PERCPU in 6.1


def doc_sublevel(tree):
    import re
    return re.search(r"^SUBLEVEL = (\d+)", (tree / "Makefile").read_text(), re.M).group(1)


@pytest.fixture(scope="module")
def scan_7_2(linux_7_2, whole_scan):
    return check_tree(linux_7_2, "linux-7.2.tsv", "v7.2." + doc_sublevel(linux_7_2), json.loads(whole_scan("7.2")[0]))


@pytest.mark.kernel
def test_linux_7_2_scans_whole_with_the_sites_read_in_it(scan_7_2):
    """v7.2, where alloc_workqueue() starts to WARN_ONCE about a queue with neither affinity flag:
    the CPU-count sites are linux-7.2.tsv's (check_tree); the other rules that judge one call
    find the sites read at their lines (the same code as 7.3's but where said)."""
    assert scan_7_2["errors"] == []
    got: dict = {}
    for f in scan_7_2["findings"]:
        got.setdefault(f["rule"], []).append(f"{f['path']}:{f['line']}:{f['column']}")
    # rvu.c reads as in 7.3 (the same file): WQ_UNBOUND on one branch of an if only.
    assert got["missing-affinity-flag"] == ["drivers/net/ethernet/marvell/octeontx2/af/rvu.c:3373:16"]
    # zloop's nr_queues * queue_depth, 128 per queue: over WQ_MAX_ACTIVE (2048) from 17 CPUs.
    assert got["max-active-over-limit"] == ["drivers/block/zloop.c:1261:19"]
    # create_singlethread_workqueue("hdmi_frl_status_polling_workqueue"): 33 bytes, cut to 31
    # (WQ_NAME_LEN 32) with a pr_warn_once; the queue is gone in 7.3.
    assert got["workqueue-name-too-long"] == ["drivers/gpu/drm/amd/display/amdgpu_dm/amdgpu_dm.c:2327:4"]
    assert sorted(got["internal-workqueue-flag"]) == [
        "drivers/cpufreq/tegra194-cpufreq.c:753:21", "drivers/scsi/hosts.c:301:19", "drivers/scsi/libiscsi.c:2914:18"]
    assert "conflicting-affinity-flags" not in got and "ordered-workqueue-sysfs" not in got
    assert "flag-as-max-active" not in got


@pytest.fixture(scope="module")
def scan_7_3(linux_7_3, whole_scan):
    return check_tree(linux_7_3, "linux-7.3.tsv", "v7.3." + doc_sublevel(linux_7_3), json.loads(whole_scan("7.3")[0]))


@pytest.mark.kernel
def test_linux_7_3_scans_whole_with_cpu_count_sites_labelled(scan_7_3):
    """v7.3: alloc_workqueue() is an alloc_hooks() macro (v6.17); the tree scans with no error
    line, and the CPU-count sites are exactly the labelled ones with their chains."""
    assert scan_7_3["errors"] == []
    assert all(not f["path"].startswith("include/linux/workqueue.h") for f in scan_7_3["findings"])


@pytest.mark.kernel
def test_linux_7_3_missing_affinity_flag_only_where_a_path_lacks_it(scan_7_3):
    """Read from the C (tests/e2e/labels/NOTES.md): every other allocation of 7.3 says WQ_PERCPU
    or WQ_UNBOUND on every path; nvme-tcp sets one of them in each branch of an if."""
    got = sorted(f"{f['path']}:{f['line']}:{f['column']}" for f in scan_7_3["findings"]
                 if f["rule"] == "missing-affinity-flag")
    assert got == ["drivers/net/ethernet/marvell/octeontx2/af/rvu.c:3373:16"]


@pytest.mark.kernel
def test_linux_7_3_every_rule_finds_exactly_the_labelled_sites(scan_7_3):
    """Per rule, the findings are the sites labelled by reading the C (linux-7.3.tsv for the
    CPU-count rules, linux-7.3-rules.tsv for the others; NOTES.md): no miss, no false alarm,
    and nothing for the two rules read to have no site."""
    want: dict = {}
    for loc, (rule, _origin) in labels("linux-7.3.tsv").items():
        want.setdefault(rule, set()).add(loc)
    for line in (LABELS / "linux-7.3-rules.tsv").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            loc, rule = line.split("\t")[:2]
            want.setdefault(rule, set()).add(loc)
    got: dict = {}
    for f in scan_7_3["findings"]:
        got.setdefault(f["rule"], set()).add(f"{f['path']}:{f['line']}:{f['column']}")
    # Read and found to have no site on 7.3 (NOTES.md). workqueue-name-too-long came later and
    # is not labelled here.
    for rule in sorted(set(want) | {"conflicting-affinity-flags", "ordered-workqueue-sysfs"}):
        missed, extra = want.get(rule, set()) - got.get(rule, set()), got.get(rule, set()) - want.get(rule, set())
        assert not missed and not extra, (rule, f"missed: {sorted(missed)}; not labelled: {sorted(extra)}")
    assert {r: len(s) for r, s in want.items()} == {
        "legacy-create-workqueue": 242, "unbound-max-active-one": 17, "unbound-max-active-cpu-count": 18,
        "deprecated-system-workqueue": 16, "internal-workqueue-flag": 3, "percpu-max-active-cpu-count": 1,
        "missing-affinity-flag": 1, "max-active-over-limit": 1}
    for f in scan_7_3["findings"]:  # every chain starts at the reported call
        if f["rule"] in want:
            assert (f["chain"][0]["path"], f["chain"][0]["line"]) == (f["path"], f["line"]), f


@pytest.mark.kernel
def test_linux_7_3_zloop_max_active_over_the_limit_from_17_cpus(scan_7_3):
    """nr_queues= is capped by num_online_cpus(), queue_depth is 128 by default: 17 queues of
    128 are 2176, over WQ_MAX_ACTIVE (2048) of v7.3."""
    f, = [f for f in scan_7_3["findings"] if f["rule"] == "max-active-over-limit"]
    assert "from 17 CPUs on it can reach 2176, over WQ_MAX_ACTIVE (2048) on v7.3" in f["message"]
    assert [(s["path"], s["line"]) for s in f["chain"]] == [
        ("drivers/block/zloop.c", 1274), ("drivers/block/zloop.c", 1275), ("drivers/block/zloop.c", 1604),
        ("drivers/block/zloop.c", 1604), ("drivers/block/zloop.c", 1275), ("drivers/block/zloop.c", 1501),
        ("drivers/block/zloop.c", 67)]
    assert f["chain"][3]["note"] == "CPU count num_online_cpus()"
    assert f["chain"][-1]["note"] == "macro ZLOOP_DEF_QUEUE_DEPTH = '128'"


# -- workqueue-name-too-long: names labelled from the C (tests/e2e/labels/names-*.tsv) -------
NAME_RULE = "workqueue-name-too-long"


def name_labels(name):
    out = {}
    for line in (LABELS / name).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            loc, severity, size, shown = line.split("\t")[:4]
            out[loc] = (severity, int(size), shown)
    return out


@pytest.mark.kernel
def test_linux_6_1_names_cut_silently_to_23_bytes(linux_6_1):
    """6.1 keeps 23 bytes of a name and says nothing: the labelled calls, scanned file by file
    (the rest of the tree is covered by the reading in NOTES.md, not by a whole-tree scan)."""
    want = name_labels("names-6.1.tsv")
    files = sorted({loc.split(":")[0] for loc in want})
    doc, _ = scan_json(*[linux_6_1 / f for f in files], "--jobs", "2")
    got = {f"{f['path']}:{f['line']}:{f['column']}": f for f in doc["findings"] if f["rule"] == NAME_RULE}
    assert sorted(got) == sorted(want)
    for loc, (severity, size, shown) in want.items():
        f = got[loc]
        assert f["severity"] == severity
        assert "cuts it silently" in f["message"]
        assert f"is {size} bytes, WQ_NAME_LEN 24 keeps 23: named '{shown}'" in f["message"], f["message"]
        assert (f["chain"][0]["path"], f["chain"][0]["line"]) == (f["path"], f["line"])
        assert (f["chain"][-1]["path"], f["chain"][-1]["note"]) == (
            "kernel/workqueue.c", "WQ_NAME_LEN = 24: wq->name keeps 23 bytes; a longer name is cut silently")


@pytest.mark.kernel
def test_linux_6_12_names_that_just_fit_are_not_reported(linux_6_12):
    """6.12 keeps 31 bytes and warns; its longest literal names (31, 30 and 28 bytes) fit."""
    files = ["drivers/gpu/drm/xe/xe_gt_pagefault.c", "kernel/workqueue.c", "fs/bcachefs/super.c"]
    doc, _ = scan_json(*[linux_6_12 / f for f in files], "--jobs", "2")
    assert [f for f in doc["findings"] if f["rule"] == NAME_RULE] == []
    assert name_labels("names-6.12.tsv") == {}
