"""The per-tree index kept between runs (wqlint.scan.store): never stale, optional, safe.

Every case scans a small tree of its own twice or more with the index, changing the tree in
between, and compares each result with a scan without the index of the same tree as it is
then: the findings, their lines and chains must be the same.
"""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from wqlint import catalogue
from wqlint.scan import engine, store

REPO = Path(__file__).resolve().parents[1]

SUPER_C = """\
#include <linux/workqueue.h>
#include "foo.h"

int foo_start(struct foo_info *info)
{
	info->wq = alloc_workqueue("foo", WQ_UNBOUND, info->nthreads);
	return info->wq ? 0 : -ENOMEM;
}
"""
FOO_H = """\
struct foo_info {
	struct workqueue_struct *wq;
	int nthreads;
};
"""
INIT_C = """\
#include "foo.h"

void foo_init(struct foo_info *info)
{
	info->nthreads = num_online_cpus();
}
"""


@pytest.fixture(scope="module")
def cat():
    return catalogue.load(REPO / "rules.yaml")


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "linux"
    (root / "include" / "linux").mkdir(parents=True)
    (root / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\n")
    write(root, "fs/foo/foo.h", FOO_H)
    write(root, "fs/foo/super.c", SUPER_C)
    write(root, "fs/foo/init.c", INIT_C)
    return root


_STAMPS = iter(range(10**18, 2 * 10**18, 10**9))


def write(root: Path, rel: str, text: str) -> None:
    """Write a file and give it a distinct mtime long past: a stamp recorded within two
    seconds of a scan is not trusted (the file is read again), which would hide a change
    that the stamps should show."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    stamp = next(_STAMPS)
    os.utime(path, ns=(stamp, stamp))


def shape(report) -> list:
    return [(f.rule_id, f.path, f.line, f.col, [(s.path, s.line, s.note) for s in f.chain])
            for f in report.findings]


def both(root: Path, cat, target: str = "") -> tuple:
    """(scan with the index, scan without it) of root (or of root/target)."""
    path = str(root / target) if target else str(root)
    cached = engine.scan([path], cat, cache=True)
    fresh = engine.scan([path], cat, cache=False)
    assert shape(cached) == shape(fresh)
    assert [str(e) for e in cached.errors] == [str(e) for e in fresh.errors]
    return cached, fresh


def cpu_findings(report) -> list:
    return [(f.path, f.line, [s.path for s in f.chain]) for f in report.findings
            if f.rule_id == "unbound-max-active-cpu-count"]


def test_edit_a_file_the_chain_goes_through(tree, cat):
    first, _ = both(tree, cat)
    assert cpu_findings(first) == [("fs/foo/super.c", 6, ["fs/foo/super.c", "fs/foo/super.c",
                                                           "fs/foo/init.c", "fs/foo/init.c"])]
    write(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "4"))
    second, _ = both(tree, cat)
    assert cpu_findings(second) == []
    assert second.grep_rounds == 0, "resolved again from the index, without searching the tree"
    write(tree, "fs/foo/init.c", INIT_C)
    third, _ = both(tree, cat)
    assert shape(third) == shape(first)


def test_edit_a_file_the_scan_never_read(tree, cat):
    write(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "4"))
    first, _ = both(tree, cat)
    assert cpu_findings(first) == []
    # A file that did not mention any name the scan asked for now assigns the field.
    write(tree, "fs/foo/other.c", "int x;\n")
    both(tree, cat)
    write(tree, "fs/foo/other.c", "#include \"foo.h\"\nvoid o(struct foo_info *i)\n{\n"
                                  "\ti->nthreads = nr_cpu_ids * 2;\n}\n")
    got, _ = both(tree, cat)
    assert cpu_findings(got) == [("fs/foo/super.c", 6, ["fs/foo/super.c", "fs/foo/super.c",
                                                         "fs/foo/other.c", "fs/foo/other.c"])]


def test_add_a_file(tree, cat):
    both(tree, cat)
    write(tree, "fs/foo/more.c", "void m(void)\n{\n\tq = alloc_workqueue(\"m\", WQ_UNBOUND, num_possible_cpus());\n}\n")
    got, _ = both(tree, cat)
    assert ("fs/foo/more.c", 3, ["fs/foo/more.c", "fs/foo/more.c"]) in cpu_findings(got)


def test_delete_a_file(tree, cat):
    first, _ = both(tree, cat)
    assert cpu_findings(first)
    (tree / "fs/foo/init.c").unlink()
    got, _ = both(tree, cat)
    assert cpu_findings(got) == []


def test_rename_a_file(tree, cat):
    both(tree, cat)
    (tree / "fs/foo/init.c").rename(tree / "fs/foo/setup.c")
    got, _ = both(tree, cat)
    assert cpu_findings(got) == [("fs/foo/super.c", 6, ["fs/foo/super.c", "fs/foo/super.c",
                                                         "fs/foo/setup.c", "fs/foo/setup.c"])]


def test_touch_keeps_the_result(tree, cat):
    first, _ = both(tree, cat)
    os.utime(tree / "fs/foo/init.c", ns=(1, 1))
    os.utime(tree / "fs/foo/super.c", ns=(1, 1))
    got = engine.scan([str(tree)], cat, cache=True)
    assert shape(got) == shape(first)
    assert got.grep_rounds == 0


def test_switch_git_branch(tree, cat):
    def git(*args):
        subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True,
                       env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                                GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t"))
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "cpu count")
    git("checkout", "-q", "-b", "fixed")
    write(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "8"))
    git("commit", "-q", "-am", "constant")
    fixed, _ = both(tree, cat)
    assert cpu_findings(fixed) == []
    git("checkout", "-q", "main")
    main, _ = both(tree, cat)
    assert len(cpu_findings(main)) == 1
    git("checkout", "-q", "fixed")
    again, _ = both(tree, cat)
    assert cpu_findings(again) == []


def test_scan_of_a_directory_then_the_tree(tree, cat):
    write(tree, "drivers/x/x.c", "void x(void)\n{\n\tq = alloc_workqueue(\"x\", 0, nr_cpu_ids);\n}\n")
    sub, _ = both(tree, cat, "fs/foo")
    assert {f.path for f in sub.findings} == {"fs/foo/super.c"}
    whole, _ = both(tree, cat)
    assert {f.path for f in whole.findings} == {"fs/foo/super.c", "drivers/x/x.c"}
    again = engine.scan([str(tree / "fs/foo")], cat, cache=True)
    assert shape(again) == shape(sub) and again.grep_rounds == 0


def test_unwritable_cache_dir_still_works(tree, cat, monkeypatch, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    got, fresh = both(tree, cat)
    assert cpu_findings(got)
    assert blocker.read_text() == ""


def test_broken_index_file_is_ignored(tree, cat):
    first, _ = both(tree, cat)
    path = store.Store(tree).path
    assert path.is_file()
    path.write_bytes(b"not a pickle")
    got, _ = both(tree, cat)
    assert shape(got) == shape(first)
    data = pickle.loads(path.read_bytes())
    assert data["root"] == str(tree)


def test_scans_kept_by_other_code_are_not_read(tree, cat):
    """A checkout or upgrade of wqlint that keeps its version number: the sites the other
    code resolved are dropped, the searches kept."""
    first = engine.scan([str(tree)], cat, cache=True)
    assert cpu_findings(first)
    path = store.Store(tree).path

    def rewrite(code):
        data = pickle.loads(path.read_bytes())
        for payload in data["scans"].values():
            payload["sites"] = []  # what code that resolved no site would have kept
        data["code"] = code
        path.write_bytes(pickle.dumps(data))

    rewrite(store.code_id())
    assert cpu_findings(engine.scan([str(tree)], cat, cache=True)) == []  # kept scans are read
    rewrite("other code")
    got = engine.scan([str(tree)], cat, cache=True)
    assert shape(got) == shape(first) and got.grep_rounds == 0


def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "wqlint", *args], capture_output=True, text=True,
                          env=env or os.environ.copy())


def test_no_cache_writes_nothing(tree, tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    proc = cli("scan", "--no-cache", "--format", "json", str(tree), env=env)
    assert proc.returncode == 1, proc.stderr
    assert not (tmp_path / "xdg").exists()
    plain = proc.stdout
    proc = cli("scan", "--format", "json", str(tree), env=env)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == plain
    assert [p.name for p in (tmp_path / "xdg" / "wqlint" / "index").glob("*.pickle")] == [store.Store(tree).path.name], \
        "on by default"


@pytest.mark.parametrize("how", ["a file", "read-only"])
def test_unusable_cache_dir_on_the_command_line(tree, tmp_path, monkeypatch, how):
    """The default run with a cache directory it cannot use: the same output and exit
    status as --no-cache, nothing on stderr, nothing written."""
    import builtins
    import errno
    from helpers import run
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    plain = run("scan", "--no-cache", "--format", "json", tree)
    if how == "a file":
        xdg.write_text("")
    else:  # a read-only mount: EROFS on every write under it (root ignores mode bits)
        (xdg / "wqlint" / "index").mkdir(parents=True)

        def read_only(path, mode="r", *args, **kw):
            if str(path).startswith(str(xdg)) and set(mode) & set("wax+"):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
            return builtins.open(path, mode, *args, **kw)
        monkeypatch.setattr(store, "open", read_only, raising=False)
        lock = store.safeio.open_lock

        def read_only_lock(path):
            if str(path).startswith(str(xdg)):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
            return lock(path)
        monkeypatch.setattr(store.safeio, "open_lock", read_only_lock)
    for _ in range(2):
        proc = run("scan", "--format", "json", tree)
        assert (proc.exit_code, proc.stdout, proc.stderr) == (1, plain.stdout, "")
    assert xdg.is_file() or [p.name for p in xdg.rglob("*")] == ["wqlint", "index"]


def test_concurrent_runs(tree, tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    procs = [subprocess.Popen([sys.executable, "-m", "wqlint", "scan", "--format", "json", str(tree)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(4)]
    outs = [p.communicate()[0] for p in procs]
    assert all(p.returncode == 1 for p in procs)
    results = [json.loads(o)["findings"] for o in outs]
    assert all(r == results[0] for r in results)
    assert not list((tmp_path / "xdg" / "wqlint" / "index").glob("*.tmp"))
    again = json.loads(cli("scan", "--format", "json", str(tree), env=env).stdout)["findings"]
    assert again == results[0]


def test_review_uses_the_index(tree, cat):
    from wqlint import mail, review
    write(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "4"))
    patch = ("From: a <a@b>\nSubject: [PATCH] foo: a thread per CPU\n\n---\n"
             "diff --git a/fs/foo/init.c b/fs/foo/init.c\n--- a/fs/foo/init.c\n+++ b/fs/foo/init.c\n"
             "@@ -2,5 +2,5 @@\n \n void foo_init(struct foo_info *info)\n {\n"
             "-\tinfo->nthreads = 4;\n+\tinfo->nthreads = num_online_cpus();\n }\n")
    series = mail.parse_series(patch.encode(), "p.patch")
    plain = review.review(series, cat, tree=str(tree), cache=False)
    assert [(c.path, c.line, c.finding.rule_id) for c in plain.comments] == \
        [("fs/foo/init.c", 5, "unbound-max-active-cpu-count")]
    first = review.review(series, cat, tree=str(tree), cache=True)
    second = review.review(series, cat, tree=str(tree), cache=True)
    for got in (first, second):
        assert [(c.path, c.line, c.finding.rule_id, [(s.path, s.line) for s in c.finding.chain])
                for c in got.comments] == \
            [(c.path, c.line, c.finding.rule_id, [(s.path, s.line) for s in c.finding.chain])
             for c in plain.comments]
    # The index holds the tree's own copy of init.c, not the patched one.
    scanned = engine.scan([str(tree)], cat, cache=True)
    assert cpu_findings(scanned) == []



def test_review_after_an_edit_does_not_keep_a_stale_scan(tree, cat):
    """A review brings the answers up to date without resolving the whole tree again: the
    scans resolved from the old answers must not survive it."""
    from wqlint import mail, review
    first, _ = both(tree, cat)
    assert cpu_findings(first)
    write(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "4"))
    patch = ("From: a <a@b>\nSubject: [PATCH] foo: comment\n\n---\n"
             "diff --git a/fs/foo/super.c b/fs/foo/super.c\n--- a/fs/foo/super.c\n+++ b/fs/foo/super.c\n"
             "@@ -1,3 +1,4 @@\n #include <linux/workqueue.h>\n+/* foo */\n #include \"foo.h\"\n \n")
    review.review(mail.parse_series(patch.encode(), "p.patch"), cat, tree=str(tree), cache=True)
    got, _ = both(tree, cat)
    assert cpu_findings(got) == []



def test_review_of_a_shared_header_keeps_no_patched_scan(tree, cat):
    """A change under include/ is reviewed against the whole tree (no focus): the scan of the
    patched tree must not be kept as the tree's."""
    from wqlint import mail, review
    write(tree, "include/linux/foo_defs.h", "#define FOO_THREADS 4\n")
    write(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "FOO_THREADS"))
    first, _ = both(tree, cat)
    assert cpu_findings(first) == []
    patch = ("From: a <a@b>\nSubject: [PATCH] foo: a thread per CPU\n\n---\n"
             "diff --git a/include/linux/foo_defs.h b/include/linux/foo_defs.h\n"
             "--- a/include/linux/foo_defs.h\n+++ b/include/linux/foo_defs.h\n"
             "@@ -1 +1 @@\n-#define FOO_THREADS 4\n+#define FOO_THREADS num_online_cpus()\n")
    got = review.review(mail.parse_series(patch.encode(), "p.patch"), cat, tree=str(tree), cache=True)
    assert [(c.path, c.finding.rule_id) for c in got.comments] == \
        [("include/linux/foo_defs.h", "unbound-max-active-cpu-count")]
    again, _ = both(tree, cat)
    assert cpu_findings(again) == []


def test_review_sees_a_wrapper_renamed_between_runs(tree, cat):
    """A review looks at an allocation outside the patched files' subsystems only inside a
    function the patched files name; the index keeps which function each such line is in,
    for the file as it was: renaming the function must be seen."""
    from wqlint import mail, review
    wrap = ("#include <linux/workqueue.h>\n\nstruct workqueue_struct *{name}(int n)\n{{\n"
            "\treturn alloc_workqueue(\"wrap\", WQ_UNBOUND, n);\n}}\n")
    write(tree, "drivers/wrap/wrap.c", wrap.format(name="bar_alloc"))
    user = "void user_init(void)\n{\n\tq = foo_alloc(4);\n}\n"
    write(tree, "drivers/user/user.c", user)
    patch = ("From: a <a@b>\nSubject: [PATCH] user: a thread per CPU\n\n---\n"
             "diff --git a/drivers/user/user.c b/drivers/user/user.c\n"
             "--- a/drivers/user/user.c\n+++ b/drivers/user/user.c\n"
             "@@ -1,4 +1,4 @@\n void user_init(void)\n {\n-\tq = foo_alloc(4);\n"
             "+\tq = foo_alloc(num_online_cpus());\n }\n")
    series = mail.parse_series(patch.encode(), "p.patch")

    def comments(cache):
        got = review.review(series, cat, tree=str(tree), cache=cache)
        return [(c.path, c.line, c.finding.rule_id, [(s.path, s.line) for s in c.finding.chain])
                for c in got.comments]
    assert comments(True) == comments(False) == []
    write(tree, "drivers/wrap/wrap.c", wrap.format(name="foo_alloc"))
    want = comments(False)
    assert [c[:3] for c in want] == [("drivers/user/user.c", 3, "unbound-max-active-cpu-count")]
    assert comments(True) == want
    assert comments(True) == want


def test_a_file_rewritten_in_the_same_tick_is_looked_at_again(tree, cat):
    """The first run walks the tree beside its first search: a file whose stamp is that
    recent is not trusted, so the same size and mtime with other bytes is still seen."""
    init = tree / "fs/foo/init.c"
    init.write_text(INIT_C.replace("num_online_cpus()", "nr_cpu_ids"))
    stamp = init.stat().st_mtime_ns
    first, _ = both(tree, cat)
    assert cpu_findings(first)
    data = pickle.loads(store.Store(tree).path.read_bytes())
    assert data["stamps"]["fs/foo/init.c"] is None
    assert data["stamps"]["fs/foo/super.c"] is not None
    init.write_text(INIT_C.replace("num_online_cpus()", "1234567890"))
    os.utime(init, ns=(stamp, stamp))
    assert cpu_findings(engine.scan([str(tree)], cat, cache=True)) == []


def test_an_unchanged_index_is_not_written_again(tree, cat):
    engine.scan([str(tree)], cat, cache=True)
    path = store.Store(tree).path
    before = path.stat()
    got = engine.scan([str(tree)], cat, cache=True)
    assert cpu_findings(got)
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    write(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "4"))
    assert cpu_findings(engine.scan([str(tree)], cat, cache=True)) == []
    assert path.stat().st_ino != before.st_ino


@pytest.mark.kernel
def test_whole_linux_6_12_same_with_and_without_the_index(linux_6_12, linux_6_12_scan, tmp_path):
    """The JSON of a whole-tree scan: building the index (the shared session scan), without
    it, and reusing it; byte for byte."""
    built, xdg = linux_6_12_scan
    assert list((xdg / "wqlint" / "index").glob("*.pickle"))

    def run(*extra, cache_home):
        proc = cli("scan", "--format", "json", "--jobs", "2", *extra, str(linux_6_12),
                   env=dict(os.environ, XDG_CACHE_HOME=str(cache_home)))
        assert proc.returncode == 1, proc.stderr[-2000:]
        return proc.stdout
    plain = run("--no-cache", cache_home=tmp_path / "none")
    assert not (tmp_path / "none").exists()
    assert json.loads(plain)["findings"]
    assert built == plain
    assert run(cache_home=xdg) == plain
