"""One limit per kind of input, whichever way it comes, and corners that were silent or
crashed: each a reproducer run as a user runs wqlint (tests/bounded.py: a process of its own,
a time limit and an address-space limit)."""
from __future__ import annotations

import os
import json
import shutil
import subprocess

import pytest

from bounded import bounded, error_lines
from test_robust import DRIVER, tiny_tree


def _git(root, *args):
    subprocess.run(["git", "-C", str(root), "-c", "user.name=A U Thor", "-c", "user.email=a@example.org",
                    *args], check=True, capture_output=True)


def test_review_git_takes_no_larger_series_than_a_patch_file(tmp_path):
    """A patch file over 32 MiB is refused; the same series from git was read whole (a 40 MB
    commit: 740 MB of memory)."""
    root = tiny_tree(tmp_path)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    with open(root / "drivers" / "demo" / "table.c", "w") as handle:
        for i in range(400_000):
            handle.write(f"int v{i} = {i}; /* {'x' * 80} */\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "a table")
    patch = tmp_path / "big.patch"
    with open(patch, "wb") as handle:
        subprocess.run(["git", "-C", str(root), "format-patch", "--stdout", "HEAD~1..HEAD"], stdout=handle,
                       check=True)
    from_file = bounded(["review", patch, "--tree", root], memory=400)
    assert (from_file.returncode, error_lines(from_file.stderr)) == (
        3, [f"Error: {patch}: larger than 32 MiB, not read"])
    from_git = bounded(["review", "--git", "HEAD~1..HEAD"], cwd=root, memory=400)
    assert (from_git.returncode, error_lines(from_git.stderr)) == (
        3, ["Error: --git HEAD~1..HEAD: git format-patch: more than 32 MiB of output, not read"])
    assert os.path.getsize(patch) > 32 * 1024 * 1024


def test_check_says_what_scan_says_of_a_file_with_too_many_allocations(tmp_path):
    """scan refuses a file with more than 400 allocation lines (Error, exit 3); check skipped
    it with exit 0 and no word."""
    root = tiny_tree(tmp_path)
    calls = "".join(f'\tw[{i}] = alloc_workqueue("q{i}", WQ_UNBOUND, m);\n' for i in range(450))
    many = root / "drivers" / "demo" / "many.c"
    many.write_text("#include <linux/workqueue.h>\nstatic struct workqueue_struct *w[450];\n"
                    f"int many_init(void)\n{{\n\tint m = num_online_cpus();\n\n{calls}\treturn 0;\n}}\n")
    problem = "more than 400 lines name alloc_workqueue(), the most wqlint analyses in one file; not analysed"
    scanned = bounded(["scan", many])
    assert (scanned.returncode, error_lines(scanned.stderr)) == (3, [f"Error: drivers/demo/many.c: {problem}"])
    checked = bounded(["check", "-I", root / "include", "-D__KERNEL__", many], cwd=root, timeout=300)
    assert checked.returncode == 1, checked.stderr
    assert checked.stderr.splitlines() == [f"wqlint check: {many}: {problem}"]


def _catalogue_with(tmp_path, old: str, new: str):
    from conftest import REPO
    text = (REPO / "rules.yaml").read_text()
    assert text.count(old) == 1
    bad = tmp_path / "rules.yaml"
    bad.write_text(text.replace(old, new))
    return bad, 1 + text[:text.index(old)].count("\n")


def test_an_unknown_placeholder_in_the_catalogue_is_refused_when_it_is_loaded(tmp_path):
    """A {placeholder} the code does not fill in passed validation and failed later: an
    internal error in scan, a traceback in check, for the first finding of that rule."""
    root = tiny_tree(tmp_path)
    demo = root / "drivers" / "demo" / "demo.c"
    old = "Replace {entry}() by the call"
    bad, line = _catalogue_with(tmp_path, old, old.replace("{entry}", "{entyr}"))
    line -= 1  # a block scalar: its node starts on the key's line
    want = [f"Error: {bad}:{line}: migration: unknown placeholder {{entyr}} (known: {{cancel}}, {{cancel_at}}, "
            "{cancel_in}, {entry}, {new}, {old}, {queue}, {target})"]
    for cmd in (["rules"], ["explain", "legacy-create-workqueue"], ["scan", root]):
        got = bounded([*cmd, "--rules", bad])
        assert (got.returncode, got.stderr.splitlines()) == (2, want), got.stderr
    got = bounded(["check", "--rules", bad, "-I", root / "include", "-D__KERNEL__", demo], cwd=root)
    assert (got.returncode, got.stderr.splitlines()) == (2, want), got.stderr


@pytest.mark.parametrize("old,new,problem", [
    ("drops WQ_UNBOUND: max_active = {max_active} becomes", "drops WQ_UNBOUND: max_active = {max_active.real} becomes",
     "introduced-by.drops WQ_UNBOUND: unknown placeholder {max_active.real} (known: {max_active}, {version}, {work})"),
    ("Pass {new}: a queue", "Pass {new: a queue",
     "migration: unmatched '{' in format spec (write {{ or }} for a brace)"),
])
def test_placeholders_are_plain_known_fields(tmp_path, old, new, problem):
    bad, line = _catalogue_with(tmp_path, old, new)
    got = bounded(["rules", "--rules", bad])
    assert (got.returncode, got.stderr.splitlines()) == (2, [f"Error: {bad}:{line}: {problem}"])


@pytest.mark.parametrize("command", [["rules"], ["explain", "missing-affinity-flag"]])
def test_a_catalogue_nested_without_end_is_one_line(tmp_path, command):
    bad = tmp_path / "rules.yaml"
    bad.write_text("rules:\n  - " + "[" * 100_000 + "]" * 100_000 + "\n")
    got = bounded([*command, "--rules", bad])
    assert (got.returncode, got.stderr.splitlines()) == (2, [f"Error: {bad}:1: not valid YAML: nested too deeply"])


@pytest.mark.skipif(shutil.which("spatch") is None, reason="needs spatch (Debian: coccinelle)")
def test_coccinelle_in_a_directory_whose_name_spatch_cannot_take(tmp_path):
    """A module in 'mod:5:x/' made every spatch run fail ('int_of_string': a name with ':N:'
    is a file and a line to spatch); a link out of the tree is refused, not read."""
    root = tiny_tree(tmp_path, "mod:5:x")
    (tmp_path / "secret.c").write_text(DRIVER.replace("demo", "secret"))
    (root / "drivers" / "demo" / "link.c").symlink_to(tmp_path / "secret.c")
    got = bounded(["scan", "--engine", "coccinelle", "-j", "1", root, "--format", "json"], timeout=300)
    assert got.returncode == 3, got.stderr
    assert error_lines(got.stderr) == [f"Error: drivers/demo/link.c: a symbolic link out of the tree {root}, not read"]
    found = [(f["rule"], f["path"], f["line"]) for f in json.loads(got.stdout)["findings"]]
    assert found == [("missing-affinity-flag", "drivers/demo/demo.c", 8)]


@pytest.mark.parametrize("content", ["sparse", "lines"])
def test_a_named_file_over_the_bound_is_one_error(tmp_path, content):
    """A file named on the command line and refused was reported again by the search (as a
    binary file, or as a file with too many allocation lines); check handed it to cpp (3 GB)."""
    root = tiny_tree(tmp_path)
    big = root / "drivers" / "demo" / "big.c"
    with open(big, "wb") as handle:
        if content == "sparse":
            handle.write(b"int x = alloc_workqueue(\"x\", 0, 0);\n")
            handle.truncate(3 << 30)
        else:
            line = b"static int v = sizeof(alloc_workqueue);\n"
            handle.write(line * ((8 * 1024 * 1024) // len(line) + 1))
    for args in (["--no-cache"], [], []):
        got = bounded(["scan", big, *args])
        assert (got.returncode, error_lines(got.stderr)) == (3, [f"Error: {big}: larger than 8 MiB, not read"])
    got = bounded(["check", "-I", root / "include", "-D__KERNEL__", big], cwd=root)
    assert (got.returncode, got.stderr.splitlines()) == (1, [f"wqlint check: {big}: larger than 8 MiB, not read"])


def test_a_search_that_prints_without_end_is_an_error_not_memory(tmp_path, monkeypatch):
    """Every line naming a searched name is printed, whatever the size of its file: a tree of
    files full of them was held whole. Past the bound the search is an error naming the tree."""
    from pathlib import Path

    from wqlint.scan import index as index_mod

    root = tiny_tree(tmp_path)
    line = b"static int v = sizeof(alloc_workqueue);\n"
    (root / "drivers" / "demo" / "many.c").write_bytes(line * (3 * 1024 * 1024 // len(line)))
    monkeypatch.setattr(index_mod, "MAX_SEARCH_OUTPUT", 1024 * 1024)
    idx = index_mod.TreeIndex(Path(root))
    idx.fetch(["alloc_workqueue"])
    assert [str(e) for e in idx.errors] == [f"Error: {root}: ripgrep: more than 1 MiB of output, not read"]
