"""What wqlint writes (issue 34): a symbolic link another user planted in a sticky
world-writable directory is not followed, a reply is recorded as sent only once written,
fix --apply removes only its own temporary files and keeps a file's line endings, the JSON
formats are well-formed UTF-8 whatever the file names hold, and fix --diff quotes names as
git does."""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO
from helpers import run
from test_robust import DRIVER, cli, error_lines, no_traceback, tiny_tree, tree_hash
from wqlint import safeio

OTHER = 4242  # a uid that is not this process's
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a link to another user (os.lchown)")


# -- links in sticky world-writable directories ----------------------------------------------

@pytest.fixture
def sticky(tmp_path):
    """(a sticky world-writable directory like /tmp, the victim's file a link there may point to)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    home = tmp_path / "home"
    home.mkdir()
    victim = home / ".bashrc"
    victim.write_text("# the victim's\n")
    return shared, victim


def _link(at: Path, to: Path, uid: int) -> Path:
    at.symlink_to(to)
    os.lchown(at, uid, uid)
    return at


@as_root
def test_write_atomic_refuses_another_users_link_in_a_sticky_directory(sticky):
    shared, victim = sticky
    link = _link(shared / "out.txt", victim, OTHER)
    with pytest.raises(safeio.OutputRefused, match=f"{link} is a symbolic link of another user"):
        safeio.write_atomic(link, "tree strings\n")
    with pytest.raises(safeio.OutputRefused, match="sticky world-writable directory"):
        safeio.check_output(link)
    staged = safeio.Staged()
    with pytest.raises(safeio.OutputRefused, match="not followed"):
        staged.add(link, b"tree strings\n", victim.read_bytes())
    staged.discard()
    # a link to a directory on the way is one too
    (victim.parent / "sub").mkdir()
    through = _link(shared / "dir", victim.parent / "sub", OTHER)
    with pytest.raises(safeio.OutputRefused, match=f"{through} is a symbolic link"):
        safeio.write_atomic(through / "out.txt", "x")
    assert victim.read_text() == "# the victim's\n"
    assert os.listdir(victim.parent / "sub") == [] and sorted(os.listdir(victim.parent)) == [".bashrc", "sub"]


@as_root
@pytest.mark.parametrize("owner", ["the user", "the directory's owner"])
def test_a_link_of_the_user_or_of_the_directorys_owner_is_followed(sticky, owner):
    shared, victim = sticky
    if owner == "the user":
        link = _link(shared / "out.txt", victim, os.geteuid())
    else:
        os.chown(shared, OTHER, OTHER)
        link = _link(shared / "out.txt", victim, OTHER)
    safeio.write_atomic(link, "written\n")
    assert victim.read_text() == "written\n" and link.is_symlink()


@as_root
def test_scan_output_through_another_users_link_is_refused(sticky, tmp_path):
    shared, victim = sticky
    root = tiny_tree(tmp_path)
    link = _link(shared / "scan.json", victim, OTHER)
    got = cli("scan", root, "--format", "json", "-o", link)
    no_traceback(got)
    assert got.returncode != 0
    [line] = error_lines(got.stderr)
    assert str(link) in line and "not followed" in line
    assert victim.read_text() == "# the victim's\n"
    mine = _link(shared / "mine.json", victim, os.geteuid())
    got = cli("scan", root, "--format", "json", "-o", mine)
    assert got.returncode == 1, got.stderr
    assert json.loads(victim.read_text())["findings"]


@as_root
def test_update_reported_through_another_users_link_is_refused(sticky):
    shared, victim = sticky
    link = _link(shared / "reported", victim, OTHER)
    got = run("review", FIXTURES / "review" / "add-queue.patch", "--tree", FIXTURES / "review" / "tree",
              "--reported", link, "--update-reported", "-j", "1")
    assert got.exit_code != 0
    [line] = error_lines(got.stderr)
    assert str(link) in line and "not followed" in line
    assert victim.read_text() == "# the victim's\n"


@as_root
def test_bulk_out_through_another_users_link_is_refused(sticky, tmp_path):
    shared, victim = sticky
    root = tiny_tree(tmp_path)
    link = _link(shared / "out", victim.parent, OTHER)
    got = run("bulk", root, "--target", "mainline", "--out", link)
    assert got.exit_code != 0
    [line] = error_lines(got.stderr)
    assert str(link) in line and "not followed" in line
    assert sorted(os.listdir(victim.parent)) == [".bashrc"]


@as_root
def test_fix_apply_through_another_users_link_to_the_tree_is_refused(sticky, tmp_path):
    shared, _victim = sticky
    root = tiny_tree(tmp_path)
    link = _link(shared / "tree", root, OTHER)
    before = tree_hash(root)
    got = run("fix", link, "--target", "mainline", "--apply")
    assert got.exit_code != 0
    [line] = error_lines(got.stderr)
    assert line.startswith("Error: drivers/demo/demo.c: ") and "not followed; nothing written" in line
    assert tree_hash(root) == before


# -- the reply is written before it is recorded as sent ----------------------------------------

def _review(*args):
    return run("review", FIXTURES / "review" / "add-queue.patch", "--tree", FIXTURES / "review" / "tree",
               "-j", "1", *args)


def test_reported_is_not_updated_when_the_reply_cannot_be_written(tmp_path, monkeypatch):
    seen, out = tmp_path / "reported", tmp_path / "reply.txt"
    seen.write_text("# seen\n")
    real_replace = os.replace

    def full(src, dst, *a, **kw):
        if str(dst) == str(out):
            raise OSError(errno.ENOSPC, "No space left on device", str(src))
        return real_replace(src, dst, *a, **kw)

    monkeypatch.setattr(safeio.os, "replace", full)
    got = _review("--reported", seen, "--update-reported", "-o", out)
    monkeypatch.undo()
    assert got.exit_code == 3
    assert error_lines(got.stderr) == [f"Error: {out}: No space left on device"]
    assert seen.read_text() == "# seen\n" and not out.exists()
    got = _review("--reported", seen, "--update-reported", "-o", out)
    assert got.exit_code == 1 and out.read_text()
    assert len(seen.read_text().splitlines()) == 2  # recorded once it was written


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_reported_is_not_updated_when_stdout_cannot_be_written(tmp_path):
    seen = tmp_path / "reported"
    with open("/dev/full", "w") as full:
        got = subprocess.run([sys.executable, "-m", "wqlint", "review", str(FIXTURES / "review" / "add-queue.patch"),
                              "--tree", str(FIXTURES / "review" / "tree"), "-j", "1", "--reported", str(seen),
                              "--update-reported"], stdout=full, stderr=subprocess.PIPE, text=True, timeout=300,
                             env=dict(os.environ, PYTHONPATH=str(REPO / "linter")))
    no_traceback(got)
    assert got.returncode == 3
    assert error_lines(got.stderr) == ["Error: stdout: No space left on device"]
    assert not seen.exists()


# -- fix --apply and --diff keep a file's line endings ----------------------------------------

CPU_DRIVER = DRIVER.replace('alloc_workqueue("demo",\n\t\t\t     WQ_MEM_RECLAIM, 0)',
                            'alloc_workqueue("demo", WQ_UNBOUND, num_online_cpus())')


def _git(root: Path, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", GIT_CONFIG_NOSYSTEM="1", HOME=str(root.parent))
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, env=env, check=False)


def test_fix_keeps_crlf_line_endings(tmp_path):
    """The reference fix rewrites the call and adds a line after the NULL check: in a CRLF
    file both end with CRLF, in --apply and in --diff alike."""
    root = tiny_tree(tmp_path)
    demo = root / "drivers" / "demo" / "demo.c"
    demo.write_bytes(CPU_DRIVER.replace("\n", "\r\n").encode())
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    diff = run("fix", root, "--target", "reference", "--diff")
    assert diff.exit_code == 0, diff.stderr
    text = diff.stdout_bytes.decode()  # (.stdout: click's runner turns CRLF into LF)
    added = [ln for ln in text.split("\n") if ln.startswith("+") and not ln.startswith("+++")]
    assert len(added) == 2 and all(ln.endswith("\r") for ln in added), added
    got = run("fix", root, "--target", "reference", "--apply")
    assert got.exit_code == 0, got.stderr
    data = demo.read_bytes()
    assert b"workqueue_set_global_max_active_cpus(wq, 1, 1);\r\n" in data
    assert data.count(b"\n") == data.count(b"\r\n")
    (copy / "fix.diff").write_bytes(diff.stdout_bytes)
    applied = subprocess.run(["git", "apply", "--unsafe-paths", "fix.diff"], cwd=copy, capture_output=True)
    assert applied.returncode == 0, applied.stderr
    assert (copy / "drivers/demo/demo.c").read_bytes() == data


def test_fix_of_an_lf_file_writes_lf():
    from wqlint.fix.model import with_line_endings

    assert with_line_endings("a\nb\n", "a\nx\nb\n") == "a\nx\nb\n"
    # the lines the edit wrote take the file's ending; a line of another kind it kept stays
    assert with_line_endings("a\r\nb\r\nc\n", "a\r\nx\nb\r\nc\n") == "a\r\nx\r\nb\r\nc\n"
    assert with_line_endings("a\r\nb\r\n", "a\r\nb\r\nz") == "a\r\nb\r\nz"


# -- well-formed JSON whatever the names hold -------------------------------------------------

def _strict(data: bytes):
    """The document data holds, read as a strict reader reads it: UTF-8, and no lone surrogate
    (Python's json accepts the escape \\udcff, RFC 8259 readers need not)."""
    doc = json.loads(data.decode("utf-8", "strict"))

    def walk(value):
        if isinstance(value, str):
            value.encode("utf-8", "strict")
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
    walk(doc)
    return doc


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_json_of_a_name_that_is_not_utf8_is_well_formed(tmp_path, fmt):
    root = tiny_tree(tmp_path)
    shutil.copy(root / "drivers/demo/demo.c", os.fsencode(root / "drivers/demo") + b"/\xffbad.c")
    out = tmp_path / f"scan.{fmt}"
    got = cli("scan", root, "--format", fmt, "-o", out)
    assert got.returncode == 1, got.stderr
    doc = _strict(out.read_bytes())
    if fmt == "json":
        assert "drivers/demo/\\xffbad.c" in {f["path"] for f in doc["findings"]}
    stdout = subprocess.run([sys.executable, "-m", "wqlint", "scan", str(root), "--format", fmt],
                            capture_output=True, env=dict(os.environ, PYTHONPATH=str(REPO / "linter")))
    assert _strict(stdout.stdout) == doc


def test_json_formats_write_through_jsondoc():
    """Every JSON format writes its document through formatters.jsondoc (no json.dumps of its
    own), so none can write a lone surrogate."""
    formatters = REPO / "linter" / "wqlint" / "formatters"
    own = [p.relative_to(formatters) for p in formatters.rglob("*.py")
           if "json.dumps(" in p.read_text() and p.name != "jsondoc.py"]
    assert own == []


def test_jsondoc_escapes_names_as_the_text_formats_do():
    from wqlint.finding import name_bytes, printable
    from wqlint.formatters import jsondoc

    name = "drivers/a\udcffb\udc80.c"
    assert json.loads(jsondoc.dumps({name: [name]})) == {printable(name): [printable(name)]}
    assert name_bytes(printable(name)) == name


# -- fix --diff: names quoted as git quotes them --------------------------------------------

@pytest.mark.skipif(shutil.which("git") is None, reason="git missing")
@pytest.mark.parametrize("raw", [b"new\nline.c", b"sp ace.c", b"\xffbad.c", "caf\u00e9.c".encode(), b'q"uo\\te.c'])
def test_fix_diff_names_are_quoted_as_git_quotes_them(tmp_path, raw):
    root = tiny_tree(tmp_path)
    name = os.fsencode(root / "drivers/demo") + b"/" + raw
    shutil.copy(root / "drivers/demo/demo.c", name)
    os.unlink(root / "drivers/demo/demo.c")
    assert _git(root, "init", "-q").returncode == 0
    _git(root, "add", "-A")
    assert _git(root, "commit", "-qm", "init").returncode == 0
    got = run("fix", root, "--target", "mainline", "--diff")
    assert got.exit_code == 0, got.stderr
    (tmp_path / "fix.diff").write_text(got.stdout, "utf-8", "surrogateescape")
    header = got.stdout.split("\n", 1)[0]
    assert header.count("diff --git") == 1 and len(got.stdout.split("\n")[1:3]) == 2
    check = _git(root, "apply", "--check", str(tmp_path / "fix.diff"))
    assert check.returncode == 0, check.stderr
    assert _git(root, "apply", str(tmp_path / "fix.diff")).returncode == 0
    assert b"WQ_MEM_RECLAIM | WQ_PERCPU" in Path(os.fsdecode(name)).read_bytes()
    # git's own diff of the change names the file the same way
    ours = [ln for ln in got.stdout.split("\n") if ln.startswith(("diff --git", "--- ", "+++ "))]
    theirs = [ln for ln in _git(root, "-c", "core.quotePath=true", "diff").stdout.decode("utf-8", "surrogateescape")
              .split("\n") if ln.startswith(("diff --git", "--- ", "+++ "))]
    assert ours == theirs
