"""`wqlint review` on patches as `git format-patch` writes them, one small repository per case.

The repositories start from fixtures/review/tree/ (drivers/demo/demo.c has one old finding:
demo_old, WQ_UNBOUND with max_active num_possible_cpus(), line 18); each case commits one
change and reviews the patch against the unchanged fixture tree.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, rule_fixture
from helpers import run
from patchrepo import Repo

TREE = FIXTURES / "review" / "tree"
DEMO = "drivers/demo/demo.c"
OLD_FINDING = "drivers/demo/demo.c:18:16: warning: WQ_UNBOUND workqueue with max_active derived from a CPU count"


def review(patch, *args, tree=TREE):
    return run("review", patch, "--tree", tree, "-j", "1", *args)


@pytest.fixture
def repo(tmp_path):
    return Repo(tmp_path / "repo", TREE)


def one_patch(repo, tmp_path, msgid):
    (patch,) = repo.format_patch(tmp_path / "out", msgid)
    return patch


# -- renames, copies, deletions, modes ----------------------------------------------------------
def test_rename_keeps_the_findings_under_the_new_path(repo, tmp_path):
    repo.git("mv", DEMO, "drivers/demo/core.c")
    repo.edit("drivers/demo/core.c", "/* one work item per CPU */", "/* one work item per possible CPU */")
    repo.commit("demo: rename demo.c to core.c")
    patch = one_patch(repo, tmp_path, "rename")
    assert "rename from drivers/demo/demo.c" in patch.read_text()
    result = review(patch)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    everything = review(patch, "--all").stdout.splitlines()
    heads = [ln for ln in everything if not ln.startswith(" ")]
    assert heads == [OLD_FINDING.replace("demo.c", "core.c", 1) + heads[0][len(OLD_FINDING):]]
    assert everything[-1] == "    pre-existing"


def test_deleting_a_file_fixes_its_findings(repo, tmp_path):
    repo.git("rm", "-q", DEMO)
    repo.commit("demo: remove the driver")
    result = review(one_patch(repo, tmp_path, "delete"))
    assert result.exit_code == 0, result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith("drivers/demo/demo.c:18:16: fixed: WQ_UNBOUND workqueue")
    assert line.endswith("[unbound-max-active-cpu-count]")


def test_mode_change_alone_changes_nothing(repo, tmp_path):
    (repo.path / DEMO).chmod(0o755)
    repo.commit("demo: make demo.c executable")
    patch = one_patch(repo, tmp_path, "mode")
    assert "new mode 100755" in patch.read_text()
    result = review(patch)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert review(patch, "--all").stdout.splitlines()[-1] == "    pre-existing"


def test_copy_is_not_blamed_for_the_lines_it_copies(repo, tmp_path):
    shutil.copy(repo.path / DEMO, repo.path / "drivers/demo/copy.c")
    repo.edit("drivers/demo/copy.c", '"demo_io"', '"copy_io"')
    repo.commit("demo: start a second driver from the first")
    patch = one_patch(repo, tmp_path, "copy")
    assert "copy from drivers/demo/demo.c" in patch.read_text()
    result = review(patch)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    lines = review(patch, "--all").stdout.splitlines()
    assert lines[0].startswith("drivers/demo/copy.c:18:16: warning: WQ_UNBOUND")
    assert "    new, but on no line the series adds" in lines
    assert lines[-1] == "    pre-existing"


def test_rename_then_delete_in_a_series(repo, tmp_path):
    repo.git("mv", DEMO, "drivers/demo/core.c")
    repo.commit("demo: rename demo.c to core.c")
    repo.git("rm", "-q", "drivers/demo/core.c")
    repo.commit("demo: remove the driver")
    patches = repo.format_patch(tmp_path / "out", "series", "-2")
    result = run("review", *patches, "--tree", TREE, "-j", "1")
    assert result.exit_code == 0, result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith("drivers/demo/demo.c:18:16: fixed: ")


def test_git_range_with_a_rename(repo, tmp_path):
    repo.git("mv", DEMO, "drivers/demo/core.c")
    repo.commit("demo: rename demo.c to core.c")
    result = run("review", "--git", "HEAD~1..HEAD", "--tree", repo.path, "-j", "1")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


def test_rename_and_delete_without_a_tree(repo, tmp_path):
    repo.git("mv", DEMO, "drivers/demo/core.c")
    repo.commit("demo: rename demo.c to core.c")
    repo.git("rm", "-q", "fs/pool/queue.c")
    repo.commit("pool: remove the queue")
    patches = repo.format_patch(tmp_path / "out", "series", "-2")
    result = run("review", *patches, "--kernel-version", "6.12", "-j", "1")
    assert (result.exit_code, result.stdout) == (0, ""), result.stderr


# -- identity -----------------------------------------------------------------------------------
def test_unrelated_flag_on_the_line_of_an_old_finding_is_neither_introduced_nor_fixed(repo, tmp_path):
    repo.edit(DEMO, 'alloc_workqueue("demo_old", WQ_UNBOUND, num_possible_cpus());',
              'alloc_workqueue("demo_old", WQ_UNBOUND | WQ_FREEZABLE,\n\t\t\t\t      num_possible_cpus());')
    repo.commit("demo: freeze the old queue on suspend")
    patch = one_patch(repo, tmp_path, "freezable")
    result = review(patch)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    lines = review(patch, "--all").stdout.splitlines()
    assert lines[0].startswith(OLD_FINDING)
    assert lines[-1] == "    pre-existing"
    assert not any(": fixed: " in ln for ln in lines)
    # The same identity in SARIF: the scan of the tree before and the review after agree.
    before = json.loads(run("scan", TREE / DEMO, "--format", "sarif").stdout)["runs"][0]["results"]
    after = json.loads(review(patch, "--all", "--format", "sarif").stdout)["runs"][0]["results"]
    assert [r["partialFingerprints"] for r in before] == [r["partialFingerprints"] for r in after]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in after] == [18]


def test_identity_is_rule_function_queue_and_role():
    data = json.loads(run("scan", TREE / DEMO, "--format", "json").stdout)
    (f,) = data["findings"]
    assert f["identity"] == {"function": "demo_init_queues", "queue": '"demo_old"', "role": "max_active"}


# -- blame: what the series changes -------------------------------------------------------------
SCAN_C = """\
// SPDX-License-Identifier: GPL-2.0
/* Scanning queues of the demo driver. */
#include <linux/cpumask.h>
#include <linux/workqueue.h>

static struct workqueue_struct *scan_wq;
static struct workqueue_struct *event_wq;

int demo_scan_init(bool reclaim)
{
	unsigned int flags = WQ_UNBOUND;

	if (reclaim)
		flags |= WQ_MEM_RECLAIM;
	scan_wq = alloc_workqueue("demo_scan",
				  WQ_UNBOUND | WQ_MEM_RECLAIM,
				  num_online_cpus());
	if (!scan_wq)
		return -ENOMEM;
	event_wq = alloc_workqueue("demo_event", flags, num_online_cpus());
	if (!event_wq)
		return -ENOMEM;
	return 0;
}
"""
EXPECTED = FIXTURES / "review" / "expected"
FORMATS = {"text": "txt", "mail": "mail", "github": "github.json", "rdjson": "rdjson", "sarif": "sarif",
           "b4": "b4", "patchwork": "patchwork.jsonl", "json": "json", "b4-review": "b4-review.json"}


@pytest.fixture(scope="module")
def scan_repo(tmp_path_factory):
    """A tree with drivers/demo/scan.c (two unbound queues, max_active num_online_cpus()),
    and the patches of the flags cases made from it."""
    top = tmp_path_factory.mktemp("flags")
    repo = Repo(top / "repo", TREE)
    repo.write("drivers/demo/scan.c", SCAN_C)
    repo.commit("demo: scanning queues")
    base = top / "tree"
    shutil.copytree(repo.path, base, ignore=shutil.ignore_patterns(".git"))
    patches = {}
    repo.edit("drivers/demo/scan.c", "\t\t\t\t  WQ_UNBOUND | WQ_MEM_RECLAIM,", "\t\t\t\t  WQ_MEM_RECLAIM,")
    repo.commit("demo: keep scanning on the submitting CPU")
    (patches["flags-line"],) = repo.format_patch(top / "out", "flags-line")
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.edit("drivers/demo/scan.c", "unsigned int flags = WQ_UNBOUND;", "unsigned int flags = 0;")
    repo.commit("demo: keep events on the submitting CPU")
    (patches["flags-local"],) = repo.format_patch(top / "out", "flags-local")
    return base, patches


def _golden(name: str, got: str, root: Path) -> None:
    got = got.replace(f"file://{root}/", "file://TREE/").replace(f'"root": "{root}"', '"root": "TREE"')
    if name.endswith(".sarif"):
        # The rules' metadata and a result's index into it are the catalogue's (test_cli.py
        # checks them): left out, so that editing rules.yaml changes no review's golden output.
        doc = json.loads(got)
        driver = doc["runs"][0]["tool"]["driver"]
        ids = [r["id"] for r in driver.pop("rules")]
        for result in doc["runs"][0]["results"]:
            assert ids[result.pop("ruleIndex")] == result["ruleId"]
        driver["version"] = "VERSION"
        got = json.dumps(doc, indent=2) + "\n"
    path = EXPECTED / name
    if os.environ.get("WQLINT_UPDATE_GOLDEN"):
        path.write_text(got, encoding="utf-8")
    assert got == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_flags_dropped_on_another_line_of_the_call(scan_repo, fmt):
    base, patches = scan_repo
    result = review(patches["flags-line"], "--format", fmt, tree=base)
    assert result.exit_code == 1, result.stderr
    _golden(f"flags-line.{FORMATS[fmt]}", result.stdout, base)


def test_flags_line_comment_is_on_the_changed_line_and_nothing_is_fixed(scan_repo):
    base, patches = scan_repo
    lines = review(patches["flags-line"], tree=base).stdout.splitlines()
    assert lines[0].startswith("drivers/demo/scan.c:15:12: warning: per-CPU workqueue")
    assert lines[-2:] == ["    introduced at drivers/demo/scan.c:16",
                          "    this patch drops WQ_UNBOUND: max_active = num_online_cpus() becomes a per-CPU limit"]
    assert not any(": fixed: " in ln for ln in lines)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_flags_dropped_in_the_local_they_come_from(scan_repo, fmt):
    base, patches = scan_repo
    result = review(patches["flags-local"], "--format", fmt, tree=base)
    assert result.exit_code == 1, result.stderr
    _golden(f"flags-local.{FORMATS[fmt]}", result.stdout, base)


def test_flags_local_comment_is_on_the_assignment(scan_repo):
    base, patches = scan_repo
    lines = review(patches["flags-local"], tree=base).stdout.splitlines()
    assert lines[0].startswith("drivers/demo/scan.c:20:13: warning: per-CPU workqueue")
    assert lines[-2:] == ["    introduced at drivers/demo/scan.c:11",
                          "    this patch drops WQ_UNBOUND: max_active = num_online_cpus() becomes a per-CPU limit"]


# -- conversions judged by version, internal flags -----------------------------------------------
CFG_C = """\
// SPDX-License-Identifier: GPL-2.0
/* Configuration queues of the demo driver. */
#include <linux/workqueue.h>

static struct workqueue_struct *cfg_wq;
static struct workqueue_struct *evt_wq;

int demo_cfg_init(void)
{
	cfg_wq = alloc_workqueue("demo_cfg", WQ_UNBOUND | WQ_SYSFS, 1);
	if (!cfg_wq)
		return -ENOMEM;
	evt_wq = create_singlethread_workqueue("demo_evt");
	if (!evt_wq)
		return -ENOMEM;
	return 0;
}
"""


@pytest.fixture(scope="module")
def cfg_repo(tmp_path_factory):
    """drivers/demo/cfg.c in a v6.12 tree and in a v7.3 one (ordered queues may have WQ_SYSFS
    from v7.1, a4aa8d94f243), and the conversions made from it."""
    top = tmp_path_factory.mktemp("cfg")
    repo = Repo(top / "repo", TREE)
    repo.write("drivers/demo/cfg.c", CFG_C)
    repo.commit("demo: configuration queues")
    trees = {}
    for version in ("6.12", "7.3"):
        trees[version] = top / f"tree-{version}"
        shutil.copytree(repo.path, trees[version], ignore=shutil.ignore_patterns(".git"))
        major, minor = version.split(".")
        (trees[version] / "Makefile").write_text(
            f"# SPDX-License-Identifier: GPL-2.0\nVERSION = {major}\nPATCHLEVEL = {minor}\nSUBLEVEL = 0\n")
    patches = {}
    repo.edit("drivers/demo/cfg.c", 'alloc_workqueue("demo_cfg", WQ_UNBOUND | WQ_SYSFS, 1);',
              'alloc_ordered_workqueue("demo_cfg", WQ_SYSFS);')
    repo.commit("demo: make the configuration queue ordered")
    (patches["ordered-sysfs"],) = repo.format_patch(top / "out", "ordered-sysfs")
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.edit("drivers/demo/cfg.c", 'create_singlethread_workqueue("demo_evt");',
              'alloc_ordered_workqueue("demo_evt", __WQ_LEGACY | WQ_MEM_RECLAIM);')
    repo.commit("demo: replace create_singlethread_workqueue()")
    (patches["legacy"],) = repo.format_patch(top / "out", "legacy")
    return trees, patches


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_ordered_sysfs_conversion_before_v7_1(cfg_repo, fmt):
    trees, patches = cfg_repo
    result = review(patches["ordered-sysfs"], "--format", fmt, tree=trees["6.12"])
    assert result.exit_code == 1, result.stderr
    _golden(f"ordered-sysfs.{FORMATS[fmt]}", result.stdout, trees["6.12"])


def test_ordered_sysfs_conversion_comment(cfg_repo):
    trees, patches = cfg_repo
    lines = review(patches["ordered-sysfs"], tree=trees["6.12"]).stdout.splitlines()
    heads = [ln for ln in lines if not ln.startswith(" ")]
    assert heads[0].startswith("drivers/demo/cfg.c:10:11: error: ordered workqueue with WQ_SYSFS: "
                               "workqueue_sysfs_register() refuses it")
    assert heads[0].endswith("(on v6.12 through alloc_ordered_workqueue()) [ordered-workqueue-sysfs]")
    assert "    this patch adds __WQ_ORDERED: an ordered queue with WQ_SYSFS is refused by " \
           "workqueue_sysfs_register() on v6.12: the allocation fails at boot" in lines
    assert heads[1].startswith("drivers/demo/cfg.c:10:11: fixed: ")
    assert heads[1].endswith("[unbound-max-active-one]")


def test_ordered_sysfs_conversion_from_v7_1_is_fine(cfg_repo):
    trees, patches = cfg_repo
    result = review(patches["ordered-sysfs"], tree=trees["7.3"])
    assert result.exit_code == 0, result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith("drivers/demo/cfg.c:10:11: fixed: ") and line.endswith("[unbound-max-active-one]")


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_hand_written_wq_legacy(cfg_repo, fmt):
    trees, patches = cfg_repo
    result = review(patches["legacy"], "--format", fmt, tree=trees["6.12"])
    assert result.exit_code == 1, result.stderr
    _golden(f"legacy-by-hand.{FORMATS[fmt]}", result.stdout, trees["6.12"])


def test_hand_written_wq_legacy_is_not_called_create_workqueue(cfg_repo):
    trees, patches = cfg_repo
    lines = review(patches["legacy"], tree=trees["6.12"]).stdout.splitlines()
    heads = [ln for ln in lines if not ln.startswith(" ")]
    assert heads == [
        "drivers/demo/cfg.c:13:11: warning: internal __WQ_* flag written by the caller: only the "
        "workqueue API's own macros and kernel/workqueue.c set these (__WQ_LEGACY written by the "
        "caller) [internal-workqueue-flag]"]
    # __WQ_LEGACY is still there, written by hand now: the create_*() finding is replaced on
    # the same flags of the same queue, not fixed, and never repeated for the new call.
    assert not any("legacy-create-workqueue" in ln for ln in lines)


# -- the rules' fixture, judged on both sides of v7.1 ---------------------------------------------
def test_ordered_sysfs_and_internal_flag_marks():
    from annotations import marks
    fixture = rule_fixture("ordered-workqueue-sysfs.c")
    mine = ("ordered-workqueue-sysfs", "internal-workqueue-flag", "legacy-create-workqueue")
    expected, forbidden = marks(fixture)
    for version in ("6.12", "7.3"):
        doc = json.loads(run("scan", fixture, "--kernel-version", version, "--format", "json").stdout)
        got = {(f["path"], f["line"], f["rule"]) for f in doc["findings"] if f["rule"] in mine}
        want = {m for m in expected if m[2] in mine
                and (version == "6.12" or m[2] != "ordered-workqueue-sysfs")}
        assert got == want, version
        assert not (got & forbidden)


# -- golden outputs of the cases that blame nothing ------------------------------------------------
@pytest.fixture(scope="module")
def quiet_patches(tmp_path_factory):
    """rename, delete, mode, copy, and an unrelated flag on the line of an old finding."""
    top = tmp_path_factory.mktemp("quiet")
    repo = Repo(top / "repo", TREE)
    made = {}

    def patch(name):
        (made[name],) = repo.format_patch(top / "out", name)
        repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.git("mv", DEMO, "drivers/demo/core.c")
    repo.commit("demo: rename demo.c to core.c")
    patch("rename")
    repo.git("rm", "-q", DEMO)
    repo.commit("demo: remove the driver")
    patch("delete")
    (repo.path / DEMO).chmod(0o755)
    repo.commit("demo: make demo.c executable")
    patch("mode")
    shutil.copy(repo.path / DEMO, repo.path / "drivers/demo/copy.c")
    repo.edit("drivers/demo/copy.c", '"demo_io"', '"copy_io"')
    repo.commit("demo: start a second driver from the first")
    patch("copy")
    repo.edit(DEMO, 'alloc_workqueue("demo_old", WQ_UNBOUND, num_possible_cpus());',
              'alloc_workqueue("demo_old", WQ_UNBOUND | WQ_FREEZABLE,\n\t\t\t\t      num_possible_cpus());')
    repo.commit("demo: freeze the old queue on suspend")
    patch("freezable")
    return made


@pytest.mark.parametrize("case", ["rename", "delete", "mode", "copy", "freezable"])
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_golden_outputs_of_patches_that_introduce_nothing(quiet_patches, case, fmt):
    result = review(quiet_patches[case], "--format", fmt)
    assert result.exit_code == 0, result.stderr
    _golden(f"{case}.{FORMATS[fmt]}", result.stdout, TREE)


def test_a_flag_moved_into_max_active_is_introduced(repo, tmp_path):
    """The shape of drm/xe's 60df57e496e4, fixed by aa39abc08e77: WQ_MEM_RECLAIM written as the
    max_active argument. The review blames the call and says what the queue gets."""
    repo.edit(DEMO, 'alloc_workqueue("demo_io", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);',
              'alloc_workqueue("demo_io", WQ_UNBOUND, WQ_MEM_RECLAIM);')
    repo.commit("demo: mark the I/O queue for memory reclaim")
    result = review(one_patch(repo, tmp_path, "reclaim-as-max-active"))
    assert result.exit_code == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == ("drivers/demo/demo.c:13:15: error: a WQ_* flag is passed as max_active: the queue does "
                        "not get the flag, and the flag's bit value becomes its limit of work items in flight "
                        "(WQ_MEM_RECLAIM passed as max_active: the queue gets max_active 8, and lacks "
                        "WQ_MEM_RECLAIM) [flag-as-max-active]")
    assert "    introduced at drivers/demo/demo.c:13" in lines
    assert lines[-1] == ("    this patch changes max_active to WQ_MEM_RECLAIM: a flag, which the queue does not "
                         "get; its bit value becomes the queue's limit of work items in flight")
