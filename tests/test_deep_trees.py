"""A tree far deeper than Python's recursion limit: every walk of directories is a loop, so
the rest of the tree is still scanned and fixed, cold or from the cache, and the exit status
is the one a tree of normal depth gives."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from bounded import bounded, error_lines
from test_robust import DRIVER, tiny_tree
from wqlint import safeio
from wqlint.scan import treewalk

DEPTH = 1200  # Python's recursion limit is 1000


@pytest.fixture
def deep():
    """deep(top): top/d/d/.../d (DEPTH of them) holding deep.c, a driver of its own; removed
    afterwards (os.makedirs and shutil.rmtree recurse too)."""
    made = []

    def make(top: Path) -> Path:
        bottom = top
        for _ in range(DEPTH):
            bottom = bottom / "d"
            bottom.mkdir(parents=bottom.parent == top)
        (bottom / "deep.c").write_text(DRIVER.replace("demo", "deep"))
        made.append(bottom)
        return bottom

    yield make
    for bottom in made:
        for path in bottom.iterdir():
            path.unlink()
        for _ in range(DEPTH):
            bottom.rmdir()
            bottom = bottom.parent


def _found(got) -> set:
    return {(f["path"].rsplit("/", 1)[-1], f["rule"]) for f in json.loads(got.stdout)["findings"]}


@pytest.mark.parametrize("how", [["--no-cache"], [], ["--engine", "coccinelle"]])
def test_a_deep_tree_is_scanned_whole(deep, how, tmp_path):
    deep_tree = tiny_tree(tmp_path)
    deep(deep_tree / "drivers" / "deep")
    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    runs = 1 if how else 2  # with the cache: cold, then from the index
    if how == ["--engine", "coccinelle"] and shutil.which("spatch") is None:
        pytest.skip("spatch missing")
    for _ in range(runs):
        got = bounded(["scan", deep_tree, "--format", "json", *how], env=cache)
        assert got.returncode == 1 and not error_lines(got.stderr), got.stderr
        assert {("demo.c", "missing-affinity-flag"), ("deep.c", "missing-affinity-flag")} <= _found(got)


def test_a_deep_module_is_fixed(deep, tmp_path):
    """A module outside a kernel tree: its files, its links and its version tests are read
    through the same walk."""
    mod = tmp_path / "mod"
    mod.mkdir()
    (mod / "top.c").write_text(DRIVER)
    deep(mod)
    got = bounded(["fix", "--diff", "--target", "mainline", "--kernel-version", "7.3", mod])
    assert got.returncode == 0 and not error_lines(got.stderr), got.stderr
    assert [ln.rsplit("/", 1)[-1] for ln in got.stdout.splitlines() if ln.startswith("+++ ")] == ["deep.c", "top.c"]


def test_the_walks_keep_os_walks_order(tmp_path):
    for rel in ("b/x.c", "a/y.h", "a/c/z.c", ".hidden/w.c", "a/.h2/v.c", "top.c"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    (tmp_path / "link").symlink_to("a")
    assert list(safeio.walk(tmp_path)) == list(os.walk(tmp_path))
    hidden: list = []
    files, whole = treewalk.walk(tmp_path, hidden)
    assert whole and sorted(files) == ["a/c/z.c", "a/y.h", "b/x.c", "top.c"] and sorted(hidden) == [".hidden", "a/.h2"]


def test_a_walk_has_no_depth_limit(deep, tmp_path):
    bottom = deep(tmp_path)
    assert sum(len(files) for _, _, files in safeio.walk(tmp_path)) == 1
    rel = bottom.relative_to(tmp_path).as_posix() + "/deep.c"
    assert list(treewalk.walk(tmp_path, stamps=False)[0]) == [rel]


def test_bulk_verify_copies_and_removes_a_deep_tree(deep, tmp_path):
    """The scratch copy bulk --verify makes when `cp -al` cannot (another file system), and
    its removal, which opens no more than two directories at a time."""
    from wqlint.fix import verify

    src = tmp_path / "src"
    src.mkdir()
    deep(src)
    (src / "link").symlink_to("d")
    out = tmp_path / "out"
    out.mkdir()
    verify._copy_tree(src, out / "tree")
    assert (out / "tree" / "link").is_symlink()
    assert [files for _, _, files in safeio.walk(out / "tree") if files] == [["deep.c"]]
    safeio.remove_tree(out, "tree")
    assert not (out / "tree").exists()
