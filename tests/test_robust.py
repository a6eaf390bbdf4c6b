"""Hostile and broken input (issue 16): every reproducer gives its exit status and one
`Error:` line, and nothing changes that was not asked for (the tree is hashed before and after).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO
from helpers import run
from wqlint import safeio
from wqlint.fix import apply as apply_mod
from wqlint.fix import verify as verify_mod

HEADER = FIXTURES / "fix" / "tree" / "include" / "linux" / "workqueue.h"
WQLINT = [sys.executable, "-m", "wqlint"]

DRIVER = """\
// SPDX-License-Identifier: GPL-2.0
#include <linux/workqueue.h>

static struct workqueue_struct *wq;

int demo_init(void)
{
\twq = alloc_workqueue("demo",
\t\t\t     WQ_MEM_RECLAIM, 0);
\tif (!wq)
\t\treturn -1;
\treturn 0;
}
"""


def tiny_tree(base: Path, name: str = "tree") -> Path:
    """A Makefile, the fixture's include/linux/workqueue.h and one driver file."""
    root = base / name
    (root / "include" / "linux").mkdir(parents=True)
    shutil.copy(HEADER, root / "include" / "linux" / "workqueue.h")
    (root / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\n")
    (root / "drivers" / "demo").mkdir(parents=True)
    (root / "drivers" / "demo" / "demo.c").write_text(DRIVER)
    return root


def tree_hash(root: Path) -> str:
    """Names, kinds, modes, owners and contents of everything under root."""
    h = hashlib.sha256()
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            p = Path(dirpath, name)
            st = os.lstat(p)
            h.update(os.fsencode(p.relative_to(root)) + f"\0{st.st_mode:o}\0{st.st_uid}\0{st.st_gid}\0".encode())
            if stat.S_ISREG(st.st_mode):
                h.update(p.read_bytes())
            elif stat.S_ISLNK(st.st_mode):
                h.update(os.readlink(p).encode())
    return h.hexdigest()


def cli(*args, cwd=None, user=None, stdin=None, timeout=120):
    """The installed command in a process of its own (as user, when root runs the suite)."""
    cmd = WQLINT + [str(a) for a in args]
    if user:
        cmd = [sys.executable, str(Path(__file__).with_name("as_user.py")), user] + [str(a) for a in args]
    env = dict(os.environ, PYTHONPATH=str(REPO / "linter"))
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace",
                          timeout=timeout, env=env, stdin=stdin)


def error_lines(stderr: str) -> list:
    return [ln for ln in stderr.splitlines() if ln.startswith("Error:")]


def no_traceback(got) -> None:
    assert "Traceback" not in got.stderr, got.stderr


# -- bulk never writes the tree ----------------------------------------------------------

def test_bulk_verify_into_the_tree_itself_is_refused(tmp_path):
    out = tmp_path / "out"
    root = tiny_tree(out / "verify")  # the tree is OUT/verify/tree: --verify would rmtree it
    before = tree_hash(root)
    got = run("bulk", root, "--target", "mainline", "--out", out, "--verify")
    assert got.exit_code == 2
    assert error_lines(got.stderr) == [f"Error: --out {out} overlaps the tree {root}: give a directory outside it"]
    assert tree_hash(root) == before


@pytest.mark.parametrize("where", ["root", "inside", "build-dir"])
def test_bulk_out_overlapping_the_tree_is_refused(tmp_path, where):
    root = tiny_tree(tmp_path)
    before = tree_hash(root)
    args = ["bulk", root, "--target", "mainline"]
    if where == "root":
        args += ["--out", root]
        expect = f"Error: --out {root} overlaps the tree {root}: give a directory outside it"
    elif where == "inside":
        args += ["--out", root / "drivers" / "out"]
        expect = f"Error: --out {root / 'drivers' / 'out'} overlaps the tree {root}: give a directory outside it"
    else:
        args += ["--out", tmp_path / "out", "--verify", "--build-dir", root / "drivers"]
        expect = (f"Error: --build-dir {root / 'drivers'} overlaps the tree {root}: "
                  "give a directory outside it")
    got = run(*args)
    assert got.exit_code == 2
    assert error_lines(got.stderr) == [expect]
    assert tree_hash(root) == before
    assert not (tmp_path / "out").exists()


def test_scratch_copy_refuses_a_link_to_the_tree(tmp_path):
    from wqlint.fix import verify

    root = tiny_tree(tmp_path)
    before = tree_hash(root)
    (tmp_path / "verify").mkdir()
    (tmp_path / "verify" / "tree").symlink_to(root)
    with pytest.raises(verify.VerifyError, match="overlaps the tree"):
        verify.scratch_copy(root, tmp_path / "verify" / "tree")
    assert tree_hash(root) == before



def test_bulk_verify_follows_no_link_out_of_its_output(tmp_path):
    """OUT/verify a symbolic link to another directory: its tree/ is not removed, nothing is
    copied there, and the run stops with one error line."""
    root = tiny_tree(tmp_path)
    (root / "MAINTAINERS").write_text("DEMO\nM:\tA <a@example.org>\nS:\tMaintained\nF:\tdrivers/demo/\n")
    (root / "scripts").mkdir()
    (root / "scripts/get_maintainer.pl").write_text('print "A <a\\@example.org> (maintainer:DEMO)\\n";\n')
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "tree").mkdir(parents=True)
    (elsewhere / "tree" / "keep.txt").write_text("mine\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "verify").symlink_to(elsewhere)
    before = tree_hash(elsewhere)
    got = run("bulk", root, "--target", "mainline", "--out", out, "--verify")
    no_traceback(got)
    assert got.exit_code == 3
    assert error_lines(got.stderr) == [f"Error: {out / 'verify' / 'tree'}: verify is a symbolic link, "
                                       "not followed; nothing removed"]
    assert tree_hash(elsewhere) == before


def test_removing_a_scratch_tree_follows_no_link(tmp_path):
    """Links inside the old copy, and the copy itself a link: nothing outside is removed."""
    root = tiny_tree(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "sub").mkdir(parents=True)
    (elsewhere / "sub" / "keep.txt").write_text("mine\n")
    before = tree_hash(elsewhere)
    out = tmp_path / "out"
    (out / "verify" / "tree").mkdir(parents=True)
    (out / "verify" / "tree" / "dir-link").symlink_to(elsewhere / "sub")
    (out / "verify" / "tree" / "file-link").symlink_to(elsewhere / "sub" / "keep.txt")
    verify_mod.scratch_copy(root, out / "verify" / "tree", base=out)
    assert tree_hash(elsewhere) == before
    assert tree_hash(out / "verify" / "tree") == tree_hash(root)
    (out / "verify" / "tree2").symlink_to(elsewhere)
    with pytest.raises(verify_mod.VerifyError, match="tree2 is a symbolic link, not followed"):
        verify_mod.scratch_copy(root, out / "verify" / "tree2" / "sub", base=out)
    assert tree_hash(elsewhere) == before

# -- fix --apply --------------------------------------------------------------------------

def test_saved_findings_applied_twice_fix_once(tmp_path):
    root = tiny_tree(tmp_path)
    saved = tmp_path / "scan.json"
    got = run("scan", root, "--format", "json", "-o", saved)
    assert got.exit_code == 1
    first = run("fix", root, "--target", "mainline", "--findings", saved, "--apply")
    assert first.exit_code == 0, first.stderr
    fixed = (root / "drivers/demo/demo.c").read_text()
    assert "WQ_MEM_RECLAIM | WQ_PERCPU, 0);" in fixed
    again = run("fix", root, "--target", "mainline", "--findings", saved, "--apply")
    assert again.exit_code == 3
    assert error_lines(again.stderr) == [f"Error: drivers/demo/demo.c:8: changed since the scan ({saved}); scan again"]
    assert (root / "drivers/demo/demo.c").read_text() == fixed
    assert fixed.count("WQ_PERCPU") == 1


def _two_file_tree(tmp_path):
    root = tiny_tree(tmp_path)
    (root / "drivers" / "demo" / "other.c").write_text(DRIVER.replace("demo", "other"))
    return root


def test_apply_is_all_or_nothing_when_a_rename_fails(tmp_path, monkeypatch):
    root = _two_file_tree(tmp_path)
    before = tree_hash(root)
    real_replace = os.replace
    calls = []

    def failing(src, dst, *a, **kw):
        if not str(dst).startswith(str(root)):  # the index kept between runs, not the tree
            return real_replace(src, dst, *a, **kw)
        calls.append(dst)
        if len(calls) == 2:
            raise PermissionError(1, "Operation not permitted", str(src), None, str(dst))
        return real_replace(src, dst, *a, **kw)

    monkeypatch.setattr(safeio.os, "replace", failing)
    got = run("fix", root, "--target", "mainline", "--apply")
    monkeypatch.undo()
    assert got.exit_code == 1
    assert error_lines(got.stderr) == ["Error: drivers/demo/other.c: cannot replace: Operation not permitted; "
                                       "nothing written"]
    assert tree_hash(root) == before  # the first file, already renamed, was put back
    assert not [p for p in root.rglob("*.wqlint")]


def test_apply_refuses_a_file_changed_after_the_check(tmp_path, monkeypatch):
    """A file edited while the fixes are being staged (as during `git status`) is not
    overwritten, and no other file is written either."""
    root = _two_file_tree(tmp_path)
    real_add = safeio.Staged.add
    victim = root / "drivers" / "demo" / "demo.c"

    def add_then_edit(self, path, data, before, root=None):
        real_add(self, path, data, before, root)
        if not victim.read_text().startswith("// edited"):
            victim.write_text("// edited by the user\n" + DRIVER)

    monkeypatch.setattr(safeio.Staged, "add", add_then_edit)
    got = run("fix", root, "--target", "mainline", "--apply")
    monkeypatch.undo()
    assert got.exit_code == 1
    assert error_lines(got.stderr) == ["Error: drivers/demo/demo.c: changed while the fixes were written; "
                                       "nothing written, scan again"]
    assert victim.read_text() == "// edited by the user\n" + DRIVER
    assert (root / "drivers/demo/other.c").read_text() == DRIVER.replace("demo", "other")
    assert not [p for p in root.rglob("*.wqlint")]


def test_apply_removes_only_its_own_temporary_files(tmp_path):
    """A file named like a staged copy (what SIGKILL between staging and renaming would
    leave) may be anyone's: --apply removes only the copies it made itself, however old the
    others are."""
    import time

    root = tiny_tree(tmp_path)
    directory = root / "drivers" / "demo"
    old, young = (directory / f".demo.c.{x}.wqlint" for x in ("abc", "wr1t1ng"))
    for f in (old, young):
        f.write_text("someone's")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    got = run("fix", root, "--target", "mainline", "--apply")
    assert got.exit_code == 0, got.stderr
    assert "WQ_PERCPU" in (directory / "demo.c").read_text()
    assert sorted(p.name for p in directory.glob(".*.wqlint")) == sorted([old.name, young.name])
    assert old.read_text() == "someone's"


@pytest.fixture
def open_tmp(tmp_path):
    """A directory other users can reach (pytest's own is root's alone)."""
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="wqlint-robust-"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_apply_keeps_mode_and_refuses_unwritable_files(open_tmp):
    tmp_path = open_tmp
    root = _two_file_tree(tmp_path)
    os.chmod(root / "drivers/demo/demo.c", 0o640)
    os.chmod(root / "drivers/demo/other.c", 0o444)
    before = tree_hash(root)
    if os.geteuid() == 0:
        shutil.chown(tmp_path, "nobody")
        for p in [root, *root.rglob("*")]:
            shutil.chown(p, "nobody")
        before = tree_hash(root)
        got = cli("fix", root, "--target", "mainline", "--apply", user="nobody")
    else:
        got = cli("fix", root, "--target", "mainline", "--apply")
    no_traceback(got)
    assert got.returncode == 1
    assert error_lines(got.stderr) == ["Error: drivers/demo/other.c: not writable; nothing written"]
    assert tree_hash(root) == before
    os.chmod(root / "drivers/demo/other.c", 0o644)
    got = cli("fix", root, "--target", "mainline", "--apply")
    assert got.returncode == 0, got.stderr
    st = os.stat(root / "drivers/demo/demo.c")
    assert stat.S_IMODE(st.st_mode) == 0o640
    if os.geteuid() == 0:
        assert st.st_uid == os.stat(root).st_uid  # nobody's file stays nobody's


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the tree to another user")
def test_dubious_ownership_keeps_the_uncommitted_work_protection(tmp_path):
    root = tiny_tree(tmp_path)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", HOME=str(tmp_path))
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "base"]):
        subprocess.run(cmd, cwd=root, check=True, env=env)
    (root / "drivers/demo/demo.c").write_text(DRIVER + "/* work in progress */\n")
    subprocess.run(["chown", "-R", "nobody", str(root)], check=True)
    before = tree_hash(root)
    got = cli("fix", root, "--target", "mainline", "--apply")  # as root: git refuses the repository
    no_traceback(got)
    assert got.returncode == 1
    [line] = error_lines(got.stderr)
    assert line.startswith(f"Error: {root}: in a git work tree, but git cannot tell which files have "
                           "uncommitted changes: fatal: detected dubious ownership in repository")
    assert line.endswith("; use --force to write anyway")
    assert tree_hash(root) == before
    got = cli("fix", root, "--target", "mainline", "--apply", "--force")
    assert got.returncode == 0, got.stderr
    st = os.stat(root / "drivers/demo/demo.c")
    assert st.st_uid != 0 and stat.S_IMODE(st.st_mode) == 0o644


def test_apply_refuses_a_target_that_is_not_a_regular_file(tmp_path):
    root = tiny_tree(tmp_path)

    class Change:
        path = "drivers/demo/fifo.c"
        before = ""
        after = "x"

    os.mkfifo(root / Change.path)
    before = tree_hash(root)
    with pytest.raises(apply_mod.ApplyError, match="drivers/demo/fifo.c: cannot read: is a FIFO"):
        apply_mod.apply(root, [Change()], force=True)
    assert tree_hash(root) == before


# -- -o -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["device", "fifo", "missing-dir"])
def test_output_that_cannot_be_a_file_is_a_usage_error_before_any_work(tmp_path, kind):
    root = tiny_tree(tmp_path)
    if kind == "device":
        out, problem = Path("/dev/zero"), "is a device, not a regular file, not replaced"
    elif kind == "fifo":
        out, problem = tmp_path / "fifo", "is a FIFO, not a regular file, not replaced"
        os.mkfifo(out)
    else:
        out, problem = tmp_path / "nowhere" / "x.json", f"directory {tmp_path / 'nowhere'} does not exist"
    before = tree_hash(tmp_path)
    got = cli("scan", root, "-o", out, "--format", "json")
    no_traceback(got)
    assert got.returncode == 2
    assert error_lines(got.stderr) == [f"Error: -o {out}: {problem}"]
    assert tree_hash(tmp_path) == before
    assert stat.S_ISCHR(os.stat("/dev/zero").st_mode)


def test_output_to_dev_null_is_thrown_away(tmp_path):
    """-o /dev/null: the exit status alone is wanted; /dev/null stays the device it is."""
    root = tiny_tree(tmp_path)
    before = tree_hash(tmp_path)
    for fmt in ("json", "text", "sarif"):
        got = cli("scan", root, "-o", os.devnull, "--format", fmt)
        no_traceback(got)
        assert (got.returncode, got.stdout) == (1, "")
    assert tree_hash(tmp_path) == before
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_output_keeps_the_mode_of_what_it_replaces_and_new_files_follow_the_umask(tmp_path):
    root = tiny_tree(tmp_path)
    old = tmp_path / "old.json"
    old.write_text("{}")
    os.chmod(old, 0o664)
    assert cli("scan", root, "-o", old).returncode == 1
    assert stat.S_IMODE(os.stat(old).st_mode) == 0o664
    new = tmp_path / "new.json"
    mask = os.umask(0o022)
    try:
        assert cli("scan", root, "-o", new).returncode == 1
    finally:
        os.umask(mask)
    assert stat.S_IMODE(os.stat(new).st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.json", "old.json", "tree"]


# -- inputs that are not regular files ----------------------------------------------------

def _special(root: Path, kind: str, tmp_path: Path) -> Path:
    p = root / "drivers" / "demo" / f"{kind}.c"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(p))
        s.close()
    elif kind == "devzero":
        p.symlink_to("/dev/zero")
    elif kind == "outside":
        (tmp_path / "secret.c").write_text(DRIVER)
        p.symlink_to(tmp_path / "secret.c")
    return p


@pytest.mark.parametrize("kind,problem", [
    ("fifo", "is a FIFO, not a regular file"),
    ("socket", "not a regular file"),
    ("devzero", "a symbolic link out of the tree {root}, not read"),
    ("outside", "a symbolic link out of the tree {root}, not read"),
])
def test_named_file_that_is_not_a_regular_file_in_the_tree(tmp_path, kind, problem):
    root = tiny_tree(tmp_path)
    p = _special(root, kind, tmp_path)
    before = tree_hash(tmp_path)
    got = cli("scan", p, timeout=60)
    no_traceback(got)
    assert got.returncode == 3
    assert error_lines(got.stderr) == [f"Error: {p}: " + problem.format(root=root)]
    assert tree_hash(tmp_path) == before


@pytest.mark.parametrize("kind", ["fifo", "devzero"])
def test_makefile_that_never_ends(tmp_path, kind):
    root = tiny_tree(tmp_path)
    (root / "Makefile").unlink()
    if kind == "fifo":
        os.mkfifo(root / "Makefile")
    else:
        (root / "Makefile").symlink_to("/dev/zero")
    got = cli("scan", root, timeout=60)
    no_traceback(got)
    assert got.returncode == 1
    assert got.stderr.splitlines() == [f"wqlint: no kernel version in {root / 'Makefile'}: assuming v7.3 "
                                       "semantics (use --kernel-version)"]


def test_facts_cache_that_is_a_fifo_or_mangled_is_rebuilt(tmp_path):
    from wqlint.check import facts

    root = tiny_tree(tmp_path)
    build = tmp_path / "build"
    build.mkdir()
    os.mkfifo(build / facts.FACTS_NAME)
    assert facts._read(str(build / facts.FACTS_NAME)) is None
    os.unlink(build / facts.FACTS_NAME)
    (build / facts.FACTS_NAME).write_text(json.dumps({
        "format": facts.FORMAT, "wqlint": facts.__version__, "root": str(root),
        "deps": [1, 2], "sites": {"a.c": 3}, "wrappers": 7}))
    got = facts.obtain(str(root), str(build))
    assert got.built and isinstance(got.wrappers, frozenset)


def test_facts_derived_by_other_code_are_rebuilt(tmp_path):
    """A checkout of wqlint that keeps __version__ must not reuse facts its old code derived."""
    from wqlint.check import facts

    root = tiny_tree(tmp_path)
    build = tmp_path / "build"
    build.mkdir()
    assert facts.obtain(str(root), str(build)).built
    assert not facts.obtain(str(root), str(build)).built  # same code, same tree: reused
    path = build / facts.FACTS_NAME
    data = json.loads(path.read_text())
    data["code"] = "other code"
    path.write_text(json.dumps(data))
    assert facts.obtain(str(root), str(build)).built


# -- --findings JSON ---------------------------------------------------------------------

@pytest.mark.parametrize("doc,problem", [
    ("[" * 100000 + "]" * 100000, "(nested too deeply)"),
    ('{"findings": [1]}', "(finding 1: not an object)"),
    ('{"findings": [{"rule": "a", "severity": "w", "path": "x.c", "line": "1", "column": 1, '
     '"message": "m"}]}', "(finding 1: 'line' missing or not a int)"),
    ('{"findings": [{"rule": "a", "severity": "w", "path": "x.c", "line": 1, "column": 1, '
     '"message": "m", "chain": [[]]}]}', "(finding 1: 'chain' is not a list of steps)"),
    ('{"findings": [{"rule": "no-such-rule", "severity": "w", "path": "x.c", "line": 1, "column": 1, '
     '"message": "m"}]}', "(finding 1: rule 'no-such-rule' is not in the catalogue)"),
    ('{"findings": {}}', "(no list of findings)"),
    ('"x"', "(no list of findings)"),
])
def test_crafted_findings_json(tmp_path, doc, problem):
    root = tiny_tree(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text(doc)
    before = tree_hash(root)
    got = cli("fix", root, "--target", "mainline", "--findings", bad, "--apply")
    no_traceback(got)
    assert got.returncode == 3
    assert error_lines(got.stderr) == [f"Error: {bad}: not a `wqlint scan --format json` document {problem}"]
    assert tree_hash(root) == before


def test_findings_json_that_is_a_fifo(tmp_path):
    root = tiny_tree(tmp_path)
    os.mkfifo(tmp_path / "scan.json")
    got = cli("fix", root, "--target", "mainline", "--findings", tmp_path / "scan.json", "--diff", timeout=60)
    assert got.returncode == 3
    assert error_lines(got.stderr) == [f"Error: {tmp_path / 'scan.json'}: cannot read: is a FIFO, not a regular file"]


# -- deep expressions ---------------------------------------------------------------------

def _deep(kind: str, n: int = 600) -> str:
    if kind == "parens":
        return "(" * n + "num_online_cpus()" + ")" * n
    if kind == "ternary":
        return "a ? " * n + "num_online_cpus()" + " : 2" * n
    if kind == "plus":
        return "1 + " * n + "num_online_cpus()"
    if kind == "minmax":
        return "min(" * n + "num_online_cpus()" + ", 8)" * n
    return "-(" * n + "num_online_cpus()" + ")" * n


DEEP = """\
#include <linux/workqueue.h>

static struct workqueue_struct *deep_wq;

int deep_init(int a)
{{
\tint m = {expr};

\tdeep_wq = alloc_workqueue("deep", WQ_UNBOUND, m);
\treturn deep_wq ? 0 : -1;
}}
"""


@pytest.mark.parametrize("kind", ["parens", "ternary", "plus", "minmax", "unary"])
def test_deeply_nested_expressions_do_not_stop_the_scan(tmp_path, kind):
    root = tiny_tree(tmp_path)
    (root / "drivers" / "demo" / "deep.c").write_text(DEEP.format(expr=_deep(kind)))
    before = tree_hash(root)
    whole = cli("scan", root, "--format", "json")
    no_traceback(whole)
    assert whole.returncode == 1, whole.stderr
    found = {(f["path"], f["rule"]) for f in json.loads(whole.stdout)["findings"]}
    assert ("drivers/demo/demo.c", "missing-affinity-flag") in found
    # the deep file itself: its max_active is past what wqlint follows, the call is still seen
    assert not error_lines(whole.stderr)
    one = cli("scan", root / "drivers/demo/demo.c")
    assert one.returncode == 1 and not error_lines(one.stderr)
    assert tree_hash(root) == before


UNBOUND_PATCH = """\
--- a/drivers/demo/demo.c
+++ b/drivers/demo/demo.c
@@ -8,3 +8,3 @@ int demo_init(void)
 \twq = alloc_workqueue("demo",
-\t\t\t     WQ_MEM_RECLAIM, 0);
+\t\t\t     WQ_MEM_RECLAIM | WQ_UNBOUND, num_online_cpus());
 \tif (!wq)
"""


@pytest.mark.parametrize("kind", ["parens", "ternary"])
def test_deeply_nested_expressions_do_not_stop_a_review(tmp_path, kind):
    """A patch to another file of the tree is reviewed as if the deep file were not there."""
    root = tiny_tree(tmp_path)
    (root / "drivers" / "demo" / "deep.c").write_text(DEEP.format(expr=_deep(kind)))
    patch = tmp_path / "unbound.patch"
    patch.write_text(UNBOUND_PATCH)
    before = tree_hash(root)
    got = cli("review", patch, "--tree", root, "-j", "1")
    no_traceback(got)
    assert got.returncode == 1 and not error_lines(got.stderr), got.stderr
    heads = [ln for ln in got.stdout.splitlines() if not ln.startswith(" ")]
    assert [h.split(": ")[0] + " " + h.rsplit(" ", 1)[-1] for h in heads] == [
        "drivers/demo/demo.c:8:7 [unbound-max-active-cpu-count]", "drivers/demo/demo.c:8:7 [missing-affinity-flag]"]
    assert "    introduced at drivers/demo/demo.c:9" in got.stdout.splitlines()
    assert tree_hash(root) == before


def test_nesting_within_the_limit_is_still_followed(tmp_path):
    root = tiny_tree(tmp_path)
    (root / "drivers" / "demo" / "deep.c").write_text(DEEP.format(expr="(" * 700 + _deep("plus", 150) + ")" * 700))
    got = cli("scan", root / "drivers/demo/deep.c", "--format", "json", "--cpus", "4")
    assert got.returncode == 1, got.stderr
    [f] = [f for f in json.loads(got.stdout)["findings"] if f["rule"] == "max-active-over-limit"]
    assert f["line"] == 9


def test_an_internal_error_costs_one_call_not_the_run(tmp_path, monkeypatch):
    from wqlint.scan import resolve

    root = tiny_tree(tmp_path)
    (root / "drivers" / "demo" / "bad.c").write_text(DRIVER.replace("demo", "bad"))
    real = resolve.Resolver.resolve

    def buggy(self, node, scope, *a, **kw):
        if scope.src.rel.endswith("bad.c"):
            raise RuntimeError("boom\nsecond line")
        return real(self, node, scope, *a, **kw)

    monkeypatch.setattr(resolve.Resolver, "resolve", buggy)
    got = run("scan", root, "--format", "json")
    assert got.exit_code == 3
    assert error_lines(got.stderr) == ["Error: internal error in drivers/demo/bad.c:8: RuntimeError: boom second line"]
    doc = json.loads(got.stdout)
    assert [(f["path"], f["rule"]) for f in doc["findings"] if f["path"].startswith("drivers/")] == \
        [("drivers/demo/demo.c", "missing-affinity-flag")]
    assert doc["errors"] == [{"path": "drivers/demo/bad.c:8", "problem": "RuntimeError: boom second line"}]


def test_an_unexpected_exception_is_one_error_line(tmp_path, monkeypatch):
    from wqlint.fix import plan

    root = tiny_tree(tmp_path)
    before = tree_hash(root)

    def broken(*a, **kw):
        raise KeyError("x")

    monkeypatch.setattr(plan, "plan", broken)
    got = run("fix", root, "--target", "mainline", "--apply")
    assert got.exit_code == 3
    assert got.stderr.splitlines()[-1] == f"Error: internal error in {root}: KeyError: 'x'"
    assert tree_hash(root) == before


# -- review input -------------------------------------------------------------------------

REVIEW = FIXTURES / "review"
ADD_QUEUE = (REVIEW / "add-queue.patch").read_text()


def _review(tmp_path, patch: str, *args):
    p = tmp_path / "in.patch"
    p.write_bytes(patch.encode("utf-8", "surrogateescape"))
    tree_before = tree_hash(REVIEW / "tree")
    got = cli("review", p, "--tree", REVIEW / "tree", "-j", "1", *args, timeout=120)
    no_traceback(got)
    assert tree_hash(REVIEW / "tree") == tree_before
    return got, p


@pytest.mark.parametrize("header", ["From: =?utf-8?q?Jane=0D=0ABcc=3A_x=40evil?= <jane@example.org>",
                                    "To: =?utf-8?q?list=0D=0ABcc=3A_x=40evil?= <l@example.org>"])
def test_encoded_cr_lf_in_address_headers_do_not_reach_the_reply(tmp_path, header):
    key = header.split(":")[0]
    patch = "\n".join(header if ln.startswith(key + ":") else ln for ln in ADD_QUEUE.split("\n"))
    got, _ = _review(tmp_path, patch, "--format", "mail")
    assert got.returncode == 1, got.stderr
    head = got.stdout.split("\n\n")[0]
    assert "\r" not in got.stdout
    assert not any(ln.startswith("Bcc:") for ln in head.split("\n"))
    if key == "From":
        assert 'To: "Jane Bcc: x@evil" <jane@example.org>' in head
    else:
        assert 'Cc: "list Bcc: x@evil" <l@example.org>,' in head


def test_escape_sequences_in_a_subject_do_not_reach_the_terminal(tmp_path):
    patch = ADD_QUEUE.replace("Subject: [PATCH] demo:", "Subject: [PATCH] \x1b]0;owned\x07\x1b[2Jdemo:")
    got, _ = _review(tmp_path, patch, "--format", "mail")
    assert got.returncode == 1
    assert "\x1b" not in got.stdout and "\x07" not in got.stdout
    assert "Subject: Re: [PATCH] ]0;owned [2Jdemo: flush the device from its own queue" in got.stdout


def test_escape_sequences_in_a_file_name_do_not_reach_the_terminal(tmp_path):
    root = tiny_tree(tmp_path)
    os.rename(root / "drivers/demo/demo.c", root / "drivers/demo/\x1b[2Jdemo.c")
    got = cli("scan", root)
    assert got.returncode == 1
    assert "\x1b" not in got.stdout and "drivers/demo/\\x1b[2Jdemo.c:8:7: note:" in got.stdout


@pytest.mark.parametrize("case,error", [
    ("nested-multipart", "Error: {p}: more than 64 multipart containers, not read"),
    ("quoted-path", "Error: {p}: refusing path '\"a/x\\\\09.c\"': malformed octal escape \\09."),
    ("huge-hunk", "Error: {p}: drivers/demo/demo.c: hunk #1: line numbers past 1,000,000 in "
                  "'@@ -100000000,1 +100000000,2 @@', not read"),
    ("digits-hunk", "Error: {p}: drivers/demo/demo.c: hunk #1: line numbers past 1,000,000 in its header, "
                    "not read"),
    ("many-addresses", "Error: {p}: more than 1000 addresses in To, not read"),
])
def test_hostile_patches_are_one_error_line(tmp_path, case, error):
    if case == "nested-multipart":
        head, _, body = ADD_QUEUE.partition("\n\n")
        nest = "".join(f'Content-Type: multipart/mixed; boundary="b{i}"\n\n--b{i}\n' for i in range(1000))
        patch = head + "\nMIME-Version: 1.0\n" + nest + "Content-Type: text/plain\n\n" + body + \
            "".join(f"\n--b{i}--\n" for i in reversed(range(1000)))
    elif case == "quoted-path":
        patch = ADD_QUEUE.replace("diff --git a/drivers/demo/demo.c b/drivers/demo/demo.c",
                                  'diff --git "a/x\\09.c" "b/x\\09.c"')
    elif case == "huge-hunk":
        patch = ("--- a/drivers/demo/demo.c\n+++ b/drivers/demo/demo.c\n"
                 "@@ -100000000,1 +100000000,2 @@\n }\n+/* x */\n")
    elif case == "digits-hunk":  # more digits than int() reads
        patch = f"--- a/drivers/demo/demo.c\n+++ b/drivers/demo/demo.c\n@@ -1,{'1' * 5000} +1,2 @@\n }}\n+/* x */\n"
    else:
        patch = ADD_QUEUE.replace("To: linux-demo@vger.example.org",
                                  "To: " + ", ".join(f"u{i}@example.org" for i in range(200_000)))
    got, p = _review(tmp_path, patch)
    assert got.returncode == 3
    assert error_lines(got.stderr) == [error.format(p=p)]
    # and without a tree, where the hunks alone are the files
    alone = cli("review", p, "-j", "1", timeout=120)
    no_traceback(alone)
    assert alone.returncode == 3 and error_lines(alone.stderr) == [error.format(p=p)]


def test_a_hunk_far_past_the_end_of_the_file_does_not_apply_quickly(tmp_path):
    patch = ("--- a/drivers/demo/demo.c\n+++ b/drivers/demo/demo.c\n"
             "@@ -900000,1 +900000,2 @@\n no such line\n+/* x */\n")
    got, p = _review(tmp_path, patch)
    assert got.returncode == 3
    [line] = error_lines(got.stderr)
    assert line.startswith(f"Error: {p}: drivers/demo/demo.c: hunk #1 (@@ -900000,1 +900000,2 @@) does not apply")


def test_a_catalogue_without_a_rule_the_checks_report_is_a_catalogue_error(tmp_path):
    text = (REPO / "rules.yaml").read_text()
    start = text.index("  - id: missing-affinity-flag")
    end = text.find("\n  - id: ", start + 1)
    bad = tmp_path / "rules.yaml"
    bad.write_text(text[:start] + (text[end + 1:] if end >= 0 else ""))
    line = 1 + text[:text.index("rules:")].count("\n")
    root = tiny_tree(tmp_path)
    for cmd in (["scan", root], ["fix", root, "--target", "mainline", "--diff"], ["rules"]):
        got = cli(*cmd, "--rules", bad)
        no_traceback(got)
        assert got.returncode == 2
        assert got.stderr.splitlines() == [f"Error: {bad}:{line}: no rule 'missing-affinity-flag', "
                                           "which wqlint's checks report"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make files another user cannot read")
def test_unreadable_files_and_directories_are_reported_not_skipped(open_tmp):
    root = tiny_tree(open_tmp)
    for p in [open_tmp, *root.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    (root / "drivers" / "secret").mkdir()
    (root / "drivers" / "secret" / "s.c").write_text(DRIVER.replace("demo", "secret"))
    (root / "drivers" / "demo" / "locked.c").write_text(DRIVER.replace("demo", "locked"))
    os.chmod(root / "drivers" / "secret", 0)
    os.chmod(root / "drivers" / "demo" / "locked.c", 0)
    before = tree_hash(root)
    got = cli("scan", root, user="nobody")
    no_traceback(got)
    assert got.returncode == 3
    assert sorted(error_lines(got.stderr)) == ["Error: drivers/demo/locked.c: permission denied",
                                               "Error: drivers/secret: permission denied"]
    assert "drivers/demo/demo.c:8:7:" in got.stdout
    assert tree_hash(root) == before


# -- file names ---------------------------------------------------------------------------

def _odd_names(root: Path) -> dict:
    """Copies of the driver under names that are not plain: rel (as wqlint shows it) -> bytes."""
    names = {b"\xffbad.c": "drivers/demo/\udcffbad.c", b"new\nline.c": "drivers/demo/new\nline.c",
             b'sp ace "q" <x>.c': 'drivers/demo/sp ace "q" <x>.c', b"a:5:b.c": "drivers/demo/a:5:b.c"}
    for raw in names:
        shutil.copy(root / "drivers/demo/demo.c", os.fsencode(root / "drivers/demo") + b"/" + raw)
    return names


def test_odd_file_names_in_json_and_sarif(tmp_path):
    root = tiny_tree(tmp_path)
    names = _odd_names(root)
    before = tree_hash(root)
    got = cli("scan", root, "--format", "json")
    no_traceback(got)
    assert got.returncode == 1 and not error_lines(got.stderr), got.stderr
    doc = json.loads(got.stdout)
    paths = {f["path"] for f in doc["findings"] if f["rule"] == "missing-affinity-flag"}
    # the byte that is not UTF-8 as the text formats print it: no lone surrogate in the JSON
    assert paths == {n.replace("\udcff", "\\xff") for n in names.values()} | {"drivers/demo/demo.c"}
    sarif = cli("scan", root, "--format", "sarif")
    assert sarif.returncode == 1
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in json.loads(sarif.stdout)["runs"][0]["results"] if r["ruleId"] == "missing-affinity-flag"}
    assert uris == {"drivers/demo/%FFbad.c", "drivers/demo/new%0Aline.c",
                    "drivers/demo/sp%20ace%20%22q%22%20%3Cx%3E.c", "drivers/demo/a%3A5%3Ab.c", "drivers/demo/demo.c"}
    # a saved scan with such names is a usable --findings input
    saved = tmp_path / "scan.json"
    saved.write_text(got.stdout)
    diff = cli("fix", root, "--target", "mainline", "--findings", saved, "--diff")
    assert diff.returncode == 0, diff.stderr
    assert diff.stdout.count("+\t\t\t     WQ_MEM_RECLAIM | WQ_PERCPU, 0);") == 5
    assert tree_hash(root) == before


def test_sarif_uri_of_wqlints_own_header_is_percent_encoded(tmp_path):
    """A loose file's chain goes through wqlint's built-in workqueue.h, named <wqlint>/...:
    '<' and '>' may not stand in a URI."""
    (tmp_path / "q.c").write_text(DRIVER.replace('alloc_workqueue("demo",\n\t\t\t     WQ_MEM_RECLAIM, 0)',
                                                 'alloc_ordered_workqueue("demo_queue_with_a_name_past_the_limit", 0)'))
    got = cli("scan", "q.c", "--kernel-version", "7.3", "--format", "sarif", cwd=tmp_path)
    assert got.returncode == 1, got.stderr
    [result] = json.loads(got.stdout)["runs"][0]["results"]
    steps = [(s["location"]["physicalLocation"]["artifactLocation"]["uri"],
              s["location"]["physicalLocation"]["region"]["startLine"])
             for s in result["codeFlows"][0]["threadFlows"][0]["locations"]]
    assert steps[:2] == [("q.c", 8), ("%3Cwqlint%3E/include/linux/workqueue.h", 41)]
    assert {u for u, _ in steps} == {"q.c", "%3Cwqlint%3E/include/linux/workqueue.h"}


@pytest.mark.skipif(shutil.which("spatch") is None, reason="spatch missing")
def test_coccinelle_engine_keeps_every_rule_with_odd_file_names(tmp_path):
    root = tiny_tree(tmp_path)
    names = _odd_names(root)
    got = cli("scan", root, "--engine", "coccinelle", "--format", "json", "-j", "1", timeout=600)
    no_traceback(got)
    assert got.returncode == 1 and not error_lines(got.stderr), got.stderr
    found = {(f["rule"], f["path"]) for f in json.loads(got.stdout)["findings"]}
    assert {p for r, p in found if r == "missing-affinity-flag"} == \
        {n.replace("\udcff", "\\xff") for n in names.values()} | {"drivers/demo/demo.c"}


def test_thousands_of_allocations_in_one_function_are_refused_not_ground_through(tmp_path):
    root = tiny_tree(tmp_path)
    calls = "".join(f'\tw[{i}] = alloc_workqueue("q{i}", WQ_UNBOUND, m);\n' for i in range(8000))
    (root / "drivers" / "demo" / "many.c").write_text(
        "#include <linux/workqueue.h>\nstatic struct workqueue_struct *w[8000];\n"
        f"int many_init(void)\n{{\n\tint m = num_online_cpus();\n\n{calls}\treturn 0;\n}}\n")
    got = cli("scan", root, "--format", "json", timeout=300)
    no_traceback(got)
    assert got.returncode == 3
    assert error_lines(got.stderr) == ["Error: drivers/demo/many.c: more than 400 lines name alloc_workqueue(), "
                                       "the most wqlint analyses in one file; not analysed"]
    assert {f["path"] for f in json.loads(got.stdout)["findings"]} >= {"drivers/demo/demo.c"}


def test_hidden_directories_are_named_once(tmp_path):
    root = tiny_tree(tmp_path)
    for d in (".vendor", "drivers/.tmp", "drivers/demo/.cache", ".git"):
        (root / d).mkdir(parents=True)
        (root / d / "h.c").write_text(DRIVER)
    (root / "drivers" / ".link").symlink_to(root / "drivers" / "demo")
    for cache in ("--no-cache", "--cache", "--cache"):  # (the index's walk names them too)
        got = cli("scan", cache, root)
        assert got.returncode == 1
        assert got.stderr.splitlines() == ["wqlint: hidden directories are not searched: .vendor, drivers/.link, "
                                           "drivers/.tmp and 1 more"]
        got = cli("scan", cache, root / "drivers" / "demo")
        assert got.stderr.splitlines() == ["wqlint: hidden directories are not searched: drivers/demo/.cache"]
