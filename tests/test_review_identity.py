"""A finding keeps its identity while its call stays: a queue renamed on the call, a function
moved to another file and renamed, a rebase, a v2 of the series. What a bot relies on to
comment once per finding: the stable fingerprint and `review --reported FILE`."""
from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from helpers import run
from patchrepo import Repo

TREE = FIXTURES / "review" / "tree"
DEMO = "drivers/demo/demo.c"
INIT = '''static int demo_init_queues(struct demo_dev *dev)
{
	dev->io_wq = alloc_workqueue("demo_io", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!dev->io_wq)
		return -ENOMEM;

	/* one work item per CPU */
	dev->old_wq = alloc_workqueue("demo_old", WQ_UNBOUND, num_possible_cpus());
	if (!dev->old_wq)
		return -ENOMEM;
	return 0;
}
'''
NEW_QUEUE = '''
static struct workqueue_struct *demo_poll_wq;

static int demo_init_poll(void)
{
	demo_poll_wq = alloc_workqueue("demo_poll", WQ_UNBOUND, num_online_cpus());
	return demo_poll_wq ? 0 : -ENOMEM;
}
'''


@pytest.fixture
def repo(tmp_path):
    return Repo(tmp_path / "repo", TREE)


def review(*args, tree=TREE):
    return run("review", *args, "--tree", tree, "-j", "1")


def stable(result) -> list:
    assert result.exit_code in (0, 1), result.stderr
    return [(f["rule"], f["path"], f["line"], f["stable_fingerprint"]) for f in json.loads(result.stdout)["findings"]]


def test_queue_renamed_on_an_existing_call_is_the_same_finding(repo, tmp_path):
    repo.edit(DEMO, 'alloc_workqueue("demo_old", WQ_UNBOUND, num_possible_cpus());',
              'alloc_workqueue("demo_legacy", WQ_UNBOUND, num_possible_cpus());')
    repo.commit("demo: call the old queue the legacy queue")
    (patch,) = repo.format_patch(tmp_path / "out", "rename-queue")
    result = review(patch)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    lines = review(patch, "--all").stdout.splitlines()
    assert lines[0].startswith("drivers/demo/demo.c:18:16: warning: WQ_UNBOUND workqueue with max_active")
    assert lines[-1] == "    pre-existing"
    assert not any(": fixed: " in ln for ln in lines)


def test_function_moved_to_another_file_and_renamed_is_the_same_finding(repo, tmp_path):
    text = (repo.path / DEMO).read_text()
    (repo.path / DEMO).write_text(text.replace(INIT, "int demo_setup_queues(struct demo_dev *dev);\n"))
    head = text.split("struct demo_dev {")[0]
    repo.write("drivers/demo/queues.c", head + "struct demo_dev {\n\tstruct workqueue_struct *io_wq;\n"
               "\tstruct workqueue_struct *old_wq;\n};\n\n" + INIT.replace("static int demo_init_queues",
                                                                          "int demo_setup_queues"))
    repo.commit("demo: move the queues' set-up into queues.c")
    (patch,) = repo.format_patch(tmp_path / "out", "move")
    result = review(patch)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    lines = review(patch, "--all").stdout.splitlines()
    assert lines[0].startswith("drivers/demo/queues.c:18:16: warning: WQ_UNBOUND workqueue with max_active")
    assert lines[-1] == "    pre-existing"
    # the stable fingerprint is the one the tree had before the move
    before = json.loads(run("scan", TREE / DEMO, "--format", "json").stdout)["findings"]
    after = json.loads(review(patch, "--all", "--format", "json").stdout)["findings"]
    assert [f["stable_fingerprint"] for f in before] == [f["stable_fingerprint"] for f in after]
    assert [f["fingerprint"] for f in before] != [f["fingerprint"] for f in after]  # (it names the file)


def _v1_v2_rebased(repo, tmp_path):
    """v1 adds demo_poll; v2 also edits another hunk; v3 is v2 rebased on a base that gained
    lines above it."""
    text = (repo.path / DEMO).read_text()
    repo.write(DEMO, text.replace("\nstatic void demo_exit_queues", NEW_QUEUE + "\nstatic void demo_exit_queues"))
    repo.commit("demo: poll the device from its own queue")
    (v1,) = repo.format_patch(tmp_path / "v1", "v1")
    repo.edit(DEMO, "/* one work item per CPU */", "/* one work item per possible CPU */")
    repo.git("commit", "-q", "--amend", "-a", "--no-edit")
    (v2,) = repo.format_patch(tmp_path / "v2", "v2")
    rebased = tmp_path / "rebased"
    rebased_repo = Repo(rebased, TREE)
    rebased_repo.edit(DEMO, "#include <linux/workqueue.h>\n", "#include <linux/workqueue.h>\n#include <linux/slab.h>\n"
                      "#include <linux/module.h>\n")
    rebased_repo.commit("demo: include what it uses")
    return v1, v2, rebased


def test_fingerprint_survives_a_v2_and_a_rebase(repo, tmp_path):
    v1, v2, rebased = _v1_v2_rebased(repo, tmp_path)
    (first,) = stable(review(v1, "--format", "json"))
    (second,) = stable(review(v2, "--format", "json"))
    (third,) = stable(review(v2, "--format", "json", tree=rebased))
    assert first[:2] == second[:2] == third[:2] == ("unbound-max-active-cpu-count", DEMO)
    assert (first[2], third[2]) == (28, 30)  # the lines differ ...
    assert first[3] == second[3] == third[3]  # ... the fingerprint does not


def test_reported_file_prints_each_finding_once(repo, tmp_path):
    v1, v2, rebased = _v1_v2_rebased(repo, tmp_path)
    seen = tmp_path / "reported"
    first = review(v1, "--reported", seen, "--update-reported")
    assert first.exit_code == 1
    assert first.stdout.startswith("drivers/demo/demo.c:28:17: warning: WQ_UNBOUND workqueue")
    (fingerprint,) = seen.read_text().splitlines()
    assert fingerprint == stable(review(v1, "--format", "json"))[0][3]
    again = review(v2, "--reported", seen, "--update-reported", tree=rebased)
    assert (again.exit_code, again.stdout) == (0, "")
    assert again.stderr == ("wqlint: 1 introduced finding already reported (their fingerprints are in the "
                            "--reported file): not printed again\n")
    assert seen.read_text() == fingerprint + "\n"
    patchwork = review(v2, "--reported", seen, "--format", "patchwork")
    assert json.loads(patchwork.stdout)["state"] == "success"


def test_reported_file_must_hold_fingerprints(tmp_path):
    bad = tmp_path / "reported"
    bad.write_text("# seen on the list\nnot-a-fingerprint\n")
    result = review(FIXTURES / "review" / "add-queue.patch", "--reported", bad)
    assert result.exit_code == 2
    assert result.stderr == f"Error: {bad}:2: not a wqlint fingerprint (32 hex digits)\n"
    assert review(FIXTURES / "review" / "add-queue.patch", "--update-reported").exit_code == 2


def test_a_finding_a_later_patch_fixes_is_not_introduced_by_the_series(repo, tmp_path):
    text = (repo.path / DEMO).read_text()
    repo.write(DEMO, text.replace("\nstatic void demo_exit_queues", NEW_QUEUE + "\nstatic void demo_exit_queues"))
    repo.commit("demo: poll the device from its own queue")
    repo.edit(DEMO, 'alloc_workqueue("demo_poll", WQ_UNBOUND, num_online_cpus());',
              'alloc_workqueue("demo_poll", WQ_UNBOUND, 0);')
    repo.commit("demo: the default limit is enough for polling")
    patches = repo.format_patch(tmp_path / "out", "later-fix", "-2")
    result = review(*patches)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    for fmt in ("json", "patchwork", "b4-review"):
        got = review(*patches, "--format", fmt)
        assert got.exit_code == 0, (fmt, got.stderr)
    assert json.loads(review(*patches, "--format", "json").stdout)["findings"] == []


# -- review --git from anywhere in the checkout ---------------------------------------------------
@pytest.fixture
def changed(repo):
    repo.edit(DEMO, '"demo_io", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);',
              '"demo_io", WQ_UNBOUND | WQ_MEM_RECLAIM, num_online_cpus());')
    repo.commit("demo: one io item per CPU")
    return repo


B4_LINE = ("drivers/demo/demo.c:13: WARNING: This patch changes max_active to num_online_cpus(): it now follows "
           "the CPU count. WQ_UNBOUND workqueue with max_active derived from a CPU count: say whether a global or "
           "a per-scope limit is meant (on v6.12 max_active of an unbound queue is system-wide (5797b1c18919) but "
           "fixed at the num_online_cpus() seen at allocation, not updated on CPU hotplug; with 96 CPUs up to 96 "
           "in-flight items) [unbound-max-active-cpu-count]\n")


@pytest.mark.parametrize("where, tree", [(".", None), ("drivers", None), ("drivers/demo", "."), (".", "drivers"),
                                         (".", "fs/pool")])
def test_git_range_paths_are_the_trees_wherever_it_runs(changed, monkeypatch, where, tree):
    monkeypatch.chdir(changed.path / where)
    result = run("review", "--git", "HEAD~1..HEAD", *(["--tree", tree] if tree else []), "-j", "1",
                 "--format", "b4")
    assert (result.exit_code, result.stdout, result.stderr) == (1, B4_LINE, "")
    sarif = json.loads(run("review", "--git", "HEAD~1..HEAD", *(["--tree", tree] if tree else []), "-j", "1",
                           "--format", "sarif").stdout)
    (res,) = sarif["runs"][0]["results"]
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == DEMO
    assert sarif["runs"][0]["originalUriBaseIds"]["SRCROOT"]["uri"] == f"file://{changed.path}/"


def test_git_revision_forms(changed, monkeypatch):
    monkeypatch.chdir(changed.path)
    for revs in ("HEAD^!", "HEAD~1", "HEAD~1..HEAD"):
        result = run("review", "--git", revs, "-j", "1", "--format", "b4")
        assert (result.exit_code, result.stdout) == (1, B4_LINE), revs
    empty = run("review", "--git", "HEAD", "-j", "1")
    assert (empty.exit_code, empty.stdout, empty.stderr) == (0, "", "wqlint: no commits in HEAD\n")


def test_bad_revision_keeps_gits_fatal_line(changed, monkeypatch):
    monkeypatch.chdir(changed.path)
    result = run("review", "--git", "nosuch..HEAD", "-j", "1")
    assert (result.exit_code, result.stdout) == (3, "")
    assert result.stderr == "Error: --git nosuch..HEAD: fatal: bad revision 'nosuch..HEAD'\n"
    assert run("review", "--git", "--output=x", "-j", "1").exit_code == 3


def test_mailed_patch_with_tree_naming_a_subdirectory():
    """git writes a patch's paths from the top of the tree: --tree drivers/ reviews it there."""
    patch = FIXTURES / "review" / "add-queue.patch"
    result = run("review", patch, "--tree", TREE / "drivers", "-j", "1", "--format", "b4")
    assert result.exit_code == 1, result.stderr
    assert result.stdout.startswith("drivers/demo/demo.c:23: WARNING: WQ_UNBOUND workqueue")
    assert result.stdout == run("review", patch, "--tree", TREE, "-j", "1", "--format", "b4").stdout
