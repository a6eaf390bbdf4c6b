"""`review` without --tree: only what the hunks show is known. A call the hunks show only in
part is not judged (said in a note), the rest is, and exit status 3 stays for input that
cannot be read."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from helpers import run
from patchrepo import Repo

TREE = FIXTURES / "review" / "tree"
DEMO = "drivers/demo/demo.c"
NOTE = ("wqlint: drivers/demo/demo.c: line 18: cannot parse the call to alloc_workqueue(): not judged "
        "(without --tree only the lines the hunks show are known)")


@pytest.fixture
def split_call(tmp_path):
    """The tree with demo_old's call over three lines."""
    repo = Repo(tmp_path / "repo", TREE)
    repo.edit(DEMO, 'dev->old_wq = alloc_workqueue("demo_old", WQ_UNBOUND, num_possible_cpus());',
              'dev->old_wq = alloc_workqueue("demo_old",\n\t\t\t\t      WQ_UNBOUND,\n'
              '\t\t\t\t      num_possible_cpus());')
    repo.commit("demo: one argument a line")
    return repo


def review(patch, *args):
    return run("review", patch, "--kernel-version", "6.12", "-j", "1", *args)


def test_hunk_context_ending_inside_an_unchanged_call(split_call, tmp_path):
    split_call.edit(DEMO, "/* one work item per CPU */", "/* one work item per possible CPU */")
    split_call.commit("demo: say which CPUs")
    short = tmp_path / "u1.patch"  # one line of context, as `git format-patch -U1` writes it
    short.write_bytes(split_call.git("format-patch", "-U1", "--stdout", "-1"))
    hunk = short.read_text().split("@@ -16,3 +16,3 @@")[1].split("\n-- \n")[0]
    assert hunk.splitlines()[-1] == ' \tdev->old_wq = alloc_workqueue("demo_old",'  # the context ends in the call
    result = review(short)
    assert (result.exit_code, result.stdout) == (0, "")
    assert NOTE in result.stderr.splitlines()
    assert not any(ln.startswith("Error:") for ln in result.stderr.splitlines())
    for fmt in ("b4", "b4-review", "patchwork"):
        assert review(short, "--format", fmt).exit_code == 0, fmt


def test_the_rest_of_the_patch_is_still_judged(split_call, tmp_path):
    split_call.edit(DEMO, "/* one work item per CPU */", "/* one work item per possible CPU */")
    split_call.edit(DEMO, "static void demo_exit_queues(struct demo_dev *dev)\n{\n",
                    "static void demo_exit_queues(struct demo_dev *dev)\n{\n"
                    "\tstruct workqueue_struct *tmp = alloc_workqueue(\"demo_tmp\", WQ_UNBOUND, num_online_cpus());\n\n"
                    "\tdestroy_workqueue(tmp);\n")
    split_call.commit("demo: a scratch queue on exit")
    short = tmp_path / "u1.patch"
    short.write_bytes(split_call.git("format-patch", "-U1", "--stdout", "-1"))
    result = review(short, "--format", "b4")
    assert result.exit_code == 1, result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith("drivers/demo/demo.c:28: WARNING: WQ_UNBOUND workqueue with max_active derived from a "
                           "CPU count")
    assert review(short).stderr.splitlines().count(NOTE) == 1


def test_a_patch_that_cannot_be_read_still_exits_3(tmp_path):
    bad = tmp_path / "bad.patch"
    bad.write_text("diff --git a/x.c b/x.c\n--- a/x.c\n+++ b/x.c\n@@ -1,3 +1,3 @@\n-a\n")
    result = review(bad)
    assert result.exit_code == 3 and result.stderr.startswith("Error: ")
