"""The per-tree index kept between runs (wqlint.scan.store): never stale, optional, safe.

Every case scans a small tree of its own twice or more with the index, changing the tree in
between, and compares each result with a scan without the index of the same tree as it is
then: the findings, their lines and chains must be the same.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wqlint import catalogue, lint
from wqlint.scan import store
from wqlint.scan.options import ScanOptions

REPO = Path(__file__).resolve().parents[1]
CACHED = ScanOptions(store=True)  # with the index kept between runs

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
    cached = lint.scan([path], cat, CACHED)
    fresh = lint.scan([path], cat)
    assert shape(cached) == shape(fresh)
    assert [str(e) for e in cached.errors] == [str(e) for e in fresh.errors]
    return cached, fresh


def stored(root: Path) -> dict:
    """The index file of root, parsed (its header checked): its first line, and the two
    lines of each scan (Kept, Analysis)."""
    head, _, body = store.Store(root).path.read_bytes().partition(b"\n")
    assert head == b"wqlint-index %d %s" % (store.FORMAT, hashlib.blake2b(body, digest_size=32).hexdigest().encode())
    lines = [json.loads(line) for line in body.split(b"\n")]
    return {"first": lines[0], "scans": [lines[n:n + 2] for n in range(1, len(lines), 2)]}


def restore(root: Path, doc: dict) -> None:
    """Write doc (see stored()) as root's index file, with the header that makes it valid."""
    body = b"\n".join(json.dumps(x).encode() for x in [doc["first"]] + [x for pair in doc["scans"] for x in pair])
    store.Store(root).path.write_bytes(
        b"wqlint-index %d %s\n" % (store.FORMAT, hashlib.blake2b(body, digest_size=32).hexdigest().encode()) + body)


def stamped(doc: dict) -> tuple:
    """(files with a stamp, files without) of an index."""
    return tuple(doc["first"][k].split("\0") for k in ("files", "unknown"))


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
    got = lint.scan([str(tree)], cat, CACHED)
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
    again = lint.scan([str(tree / "fs/foo")], cat, CACHED)
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
    path.write_bytes(b"not an index")
    got, _ = both(tree, cat)
    assert shape(got) == shape(first)
    assert stored(tree)["first"]["root"] == str(tree)


def test_scans_kept_by_other_code_are_not_read(tree, cat):
    """A checkout or upgrade of wqlint that keeps its version number: the sites the other
    code resolved are dropped, the searches kept."""
    first = lint.scan([str(tree)], cat, CACHED)
    assert cpu_findings(first)

    def rewrite(code):
        data = stored(tree)
        for _kept, analysis in data["scans"]:
            analysis["value"][1] = []  # the sites: what code that resolved none would keep
        data["first"]["code"] = code
        restore(tree, data)

    rewrite(store.code_id())
    assert cpu_findings(lint.scan([str(tree)], cat, CACHED)) == []  # kept scans are read
    rewrite("other code")
    got = lint.scan([str(tree)], cat, CACHED)
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
    index = store.Store(tree).path
    assert sorted(p.name for p in (tmp_path / "xdg" / "wqlint" / "index").iterdir()) == \
        [index.stem + ".description", index.name], "on by default (the index, the tree's description kept beside it)"


@pytest.mark.parametrize("how", ["a file", "read-only"])
def test_unusable_cache_dir_on_the_command_line(tree, tmp_path, monkeypatch, how):
    """The default run with a cache directory it cannot use: the same output and exit
    status as --no-cache, nothing on stderr, nothing written."""
    import errno
    from helpers import run
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    plain = run("scan", "--no-cache", "--format", "json", tree)
    if how == "a file":
        xdg.write_text("")
    else:  # a read-only mount: EROFS on every write under it (root ignores mode bits)
        (xdg / "wqlint" / "index").mkdir(parents=True)

        real = os.open

        def read_only(path, flags, *args, **kw):
            if str(path).startswith(str(xdg)) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
            return real(path, flags, *args, **kw)
        monkeypatch.setattr(os, "open", read_only)
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
    index = store.Store(tree).path
    assert sorted(p.name for p in (tmp_path / "xdg" / "wqlint" / "index").iterdir()) == \
        [index.stem + ".description", index.name]
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
    scanned = lint.scan([str(tree)], cat, CACHED)
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
    wrap = ("#include <linux/workqueue.h>\n\nstruct workqueue_struct *{name}(int n)\n{{\n"
            "\treturn alloc_workqueue(\"wrap\", WQ_UNBOUND, n);\n}}\n")
    write(tree, "drivers/wrap/wrap.c", wrap.format(name="bar_alloc"))
    write(tree, "drivers/user/user.c", USER_C)
    assert _user_comments(tree, cat, True) == _user_comments(tree, cat, False) == []
    write(tree, "drivers/wrap/wrap.c", wrap.format(name="foo_alloc"))
    want = _user_comments(tree, cat, False)
    assert [c[:3] for c in want] == [("drivers/user/user.c", 3, "unbound-max-active-cpu-count")]
    assert _user_comments(tree, cat, True) == want
    assert _user_comments(tree, cat, True) == want


USER_C = "void user_init(void)\n{\n\tq = foo_alloc(4);\n}\n"


def _user_comments(root: Path, cat, cache: bool) -> list:
    """The comments of a review of root with a patch making USER_C's foo_alloc() a thread
    per CPU: (path, line, rule, [(path, line) of its chain])."""
    from wqlint import mail, review
    patch = ("From: a <a@b>\nSubject: [PATCH] user: a thread per CPU\n\n---\n"
             "diff --git a/drivers/user/user.c b/drivers/user/user.c\n"
             "--- a/drivers/user/user.c\n+++ b/drivers/user/user.c\n"
             "@@ -1,4 +1,4 @@\n void user_init(void)\n {\n-\tq = foo_alloc(4);\n"
             "+\tq = foo_alloc(num_online_cpus());\n }\n")
    got = review.review(mail.parse_series(patch.encode(), "p.patch"), cat, tree=str(root), cache=cache)
    return [(c.path, c.line, c.finding.rule_id, [(s.path, s.line) for s in c.finding.chain]) for c in got.comments]


def test_a_review_after_a_scan_reads_no_file_to_skip_it(tree, cat, monkeypatch, tmp_path):
    """A scan keeps the function around each allocation line and each call of a wrapper, as
    a review's first look at a line outside its series finds it (SiteFinder.reachable()):
    the first review after the scan reads none of those files for it, and says what a review
    with no scan before it says."""
    from wqlint.scan import sites
    write(tree, "drivers/wrap/wrap.c", "#include <linux/workqueue.h>\n\nstruct workqueue_struct *foo_alloc(int n)\n"
                                       "{\n\treturn alloc_workqueue(\"wrap\", WQ_UNBOUND, n);\n}\n")
    write(tree, "drivers/user/user.c", USER_C)
    write(tree, "drivers/other/other.c", "void other_init(void)\n{\n\tq = foo_alloc(2);\n"
                                         "\tr = alloc_workqueue(\"other\", WQ_UNBOUND, 1);\n}\n")
    monkeypatch.setattr(store, "RACY_NS", 300_000_000)  # (the files' ctime is now)
    alone = tmp_path / "alone"
    shutil.copytree(tree, alone)
    time.sleep(0.4)
    want = _user_comments(alone, cat, True)  # (no scan before it: it finds the functions itself)
    assert [c[:3] for c in want] == [("drivers/user/user.c", 3, "unbound-max-active-cpu-count")]
    found = store.Store(alone).open().enclosing
    assert ("drivers/other/other.c", b"\tq = foo_alloc(2);") in found
    assert ("drivers/other/other.c", b'\tr = alloc_workqueue("other", WQ_UNBOUND, 1);') in found
    lint.scan([str(tree)], cat, CACHED)
    kept = store.Store(tree).open().enclosing
    assert {k: kept.get(k) for k in found} == found

    def never(path, line_text):
        raise AssertionError(f"{path} read again")
    monkeypatch.setattr(sites, "_enclosing_name", never)
    assert _user_comments(tree, cat, True) == want


def test_a_file_rewritten_in_the_same_tick_is_looked_at_again(tree, cat, monkeypatch):
    """The first run walks the tree beside its first search: a file whose stamp is that
    recent is not trusted, so the same size and mtime with other bytes is still seen."""
    monkeypatch.setattr(store, "RACY_NS", 300_000_000)  # the tree's other files are older than that
    time.sleep(0.4)
    init = tree / "fs/foo/init.c"
    init.write_text(INIT_C.replace("num_online_cpus()", "nr_cpu_ids"))
    stamp = init.stat().st_mtime_ns
    first, _ = both(tree, cat)
    assert cpu_findings(first)
    files, unknown = stamped(stored(tree))
    assert "fs/foo/init.c" in unknown
    assert "fs/foo/super.c" in files
    init.write_text(INIT_C.replace("num_online_cpus()", "1234567890"))
    os.utime(init, ns=(stamp, stamp))
    assert cpu_findings(lint.scan([str(tree)], cat, CACHED)) == []


def test_an_unchanged_index_is_not_written_again(tree, cat):
    lint.scan([str(tree)], cat, CACHED)
    path = store.Store(tree).path
    before = path.stat()
    got = lint.scan([str(tree)], cat, CACHED)
    assert cpu_findings(got)
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    write(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "4"))
    assert cpu_findings(lint.scan([str(tree)], cat, CACHED)) == []
    assert path.stat().st_ino != before.st_ino


@pytest.mark.kernel
def test_whole_linux_6_12_same_with_and_without_the_index(linux_6_12, linux_6_12_scan, tmp_path):
    """The JSON of a whole-tree scan: building the index (the shared session scan), without
    it, and reusing it; byte for byte."""
    built, xdg = linux_6_12_scan
    assert list((xdg / "wqlint" / "index").glob("*.json"))

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


# -- the index is data, in a place only its user can write (issue: code from the cache) ----

class _Run:
    """Unpickling this runs a command: what an index file of the old format could do."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_in_place_of_the_index_is_never_run(tree, cat, tmp_path):
    import pickle
    marker = tmp_path / "ran"
    path = store.Store(tree).path
    path.parent.mkdir(parents=True, mode=0o700)
    os.chmod(path.parent.parent, 0o700)
    for name in (path.name, path.with_suffix(".pickle").name):
        (path.parent / name).write_bytes(pickle.dumps({"format": 5, "x": _Run(marker)}))
    got, _ = both(tree, cat)
    assert cpu_findings(got)
    assert not marker.exists()


def _refuse(what: str, tree: Path) -> None:
    path = store.Store(tree).path
    if what == "file of another user":
        os.chown(path, 65534, 65534)
    elif what == "file writable by others":
        os.chmod(path, 0o666)
    elif what == "directory of another user":
        os.chown(path.parent, 65534, 65534)
    elif what == "directory writable by its group":
        os.chmod(path.parent, 0o770)
    elif what == "parent directory writable by others":
        os.chmod(path.parent.parent, 0o777)
    elif what == "cache home writable by all, not sticky":
        os.chmod(path.parent.parent.parent, 0o777)
    elif what == "index directory a symbolic link":
        real = path.parent.with_name("elsewhere")
        path.parent.rename(real)
        path.parent.symlink_to(real)


REFUSED = ["file of another user", "file writable by others", "directory of another user",
           "directory writable by its group", "parent directory writable by others",
           "cache home writable by all, not sticky", "index directory a symbolic link"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the index to another user")
@pytest.mark.parametrize("what", REFUSED)
def test_an_index_others_could_have_written_is_not_read(tree, cat, what):
    """As ssh with its files: an index another user owns or may write, or that sits in such
    a directory, is not read (nor written): the scan searches the tree."""
    first, _ = both(tree, cat)
    assert first.grep_rounds > 0
    write(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "4"))
    assert lint.scan([str(tree)], cat, CACHED).grep_rounds == 0  # the index answers
    _refuse(what, tree)
    path = store.Store(tree).path
    before = path.read_bytes()
    write(tree, "fs/foo/init.c", INIT_C)
    got, _ = both(tree, cat)
    assert got.grep_rounds > 0
    assert cpu_findings(got) == cpu_findings(first)
    assert path.read_bytes() == before


def test_a_sticky_cache_home_is_used(tree, cat, monkeypatch, tmp_path):
    """A cache under a directory all may write to but not rename in (/tmp): the index's own
    directories are the user's and private."""
    home = tmp_path / "shared"
    home.mkdir()
    os.chmod(home, 0o1777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    both(tree, cat)
    for d in (home / "wqlint", home / "wqlint" / "index"):
        assert os.stat(d).st_mode & 0o777 == 0o700
    assert lint.scan([str(tree)], cat, CACHED).grep_rounds == 0


def _doc_edits():
    """Ways to damage an index whose header stays valid: each must be caught by its types.
    (Those in a scan's Analysis are found when the scan is used: that scan is dropped.)"""
    def site(doc):
        return doc["scans"][0][1]["shared"]["Site"][doc["scans"][0][1]["value"][1][0]]

    def first(doc):
        return doc["first"]
    return {
        "no answers": lambda d: first(d).pop("answers"),
        "a site's line a string": lambda d: site(d).__setitem__(3, "6"),
        "a site's line a bool": lambda d: site(d).__setitem__(3, True),
        "a site's field missing": lambda d: site(d).pop(),
        "a class that is not a value": lambda d: site(d).__setitem__(6, ["Site"] + site(d)[1:]),
        "a class name that names code": lambda d: site(d).__setitem__(6, ["os.system", "touch x"]),
        "a step out of the table": lambda d: site(d)[8].append(10**6),
        "stamps out of step": lambda d: first(d).__setitem__("stamps", first(d)["stamps"][:-8]),
        "stamps not base64": lambda d: first(d).__setitem__("stamps", "*" + first(d)["stamps"][1:]),
        "another tree's": lambda d: first(d).__setitem__("root", "/elsewhere"),
        "lines not bytes": lambda d: first(d)["answers"]["value"][4].__setitem__(0, [["fs/foo/x.c", 1], "\u20ac"]),
        "a path that is no file name": lambda d: first(d).__setitem__("files", "\ud800.c" + first(d)["files"][3:]),
        "a scan key of another shape": lambda d: d["scans"][0][0]["value"].__setitem__(1, ["scan"]),
        "a scan's files read of another shape": lambda d: d["scans"][0][0]["value"].__setitem__(4, {"x": 1}),
        "garbage for a scan": lambda d: d["scans"][0].__setitem__(1, {"x": 1}),
        "an extra key": lambda d: first(d).__setitem__("extra", 1),
    }


@pytest.mark.parametrize("edit", sorted(_doc_edits()))
def test_an_index_of_the_wrong_shape_is_not_used(tree, cat, edit, monkeypatch):
    """An index whose digest holds but whose data is not what the types say: the scan
    starts from nothing (or, for a scan's Analysis, resolves that scan again), with the
    same result, and writes a good index."""
    monkeypatch.setattr(store, "RACY_NS", 0)  # stamps of files written just now are kept
    first, _ = both(tree, cat)
    doc = stored(tree)
    assert doc["scans"] and doc["first"]["answers"]["value"][4]
    _doc_edits()[edit](doc)
    restore(tree, doc)
    got, _ = both(tree, cat)
    # (The answers are read when first asked for: this scan's is kept and asks none.)
    assert got.grep_rounds > 0 or edit.startswith(("a site", "a class", "a step", "garbage for a scan", "lines"))
    assert shape(got) == shape(first)
    assert stored(tree)["first"]["root"] == str(tree)
    assert lint.scan([str(tree)], cat, CACHED).grep_rounds == 0


def test_answers_not_what_their_types_say_are_dropped_when_first_asked_for(tree, cat, monkeypatch):
    """The answers are decoded when a scan first asks for one: a scan kept in the index whose
    files are as they were asks none, and gives its result without a search; the first scan
    that asks finds them bad, searches the tree as if there were no index (with the same
    result as without one) and writes good ones, which the next scan uses."""
    monkeypatch.setattr(store, "RACY_NS", 0)  # stamps of files written just now are kept
    first, _ = both(tree, cat)
    doc = stored(tree)
    doc["first"]["answers"]["value"][4][0][1] = 7  # a line's bytes a number
    restore(tree, doc)
    kept = lint.scan([str(tree)], cat, CACHED)
    assert kept.grep_rounds == 0 and shape(kept) == shape(first)
    assert stored(tree)["first"]["answers"] == doc["first"]["answers"], "nothing asked, nothing written"
    sub, fresh = both(tree, cat, "fs/foo")
    assert sub.grep_rounds > 0 and shape(sub) == shape(fresh)
    store._codec(store.Answers).decode(stored(tree)["first"]["answers"])  # good ones written
    assert lint.scan([str(tree / "fs" / "foo")], cat, CACHED).grep_rounds == 0


@pytest.mark.parametrize("damage", ["truncated", "a byte changed", "empty", "a directory", "a FIFO",
                                    "another format", "JSON nested deep"])
def test_a_damaged_index_file_means_starting_from_nothing(tree, cat, damage):
    first, _ = both(tree, cat)
    path = store.Store(tree).path
    raw = path.read_bytes()
    path.unlink()
    if damage == "truncated":
        path.write_bytes(raw[: len(raw) * 2 // 3])
    elif damage == "a byte changed":
        at = raw.index(b'fs/foo/init.c') + 5
        path.write_bytes(raw[:at] + b"g" + raw[at + 1:])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "a directory":
        path.mkdir()
    elif damage == "a FIFO":
        os.mkfifo(path)
    elif damage == "another format":
        path.write_bytes(raw.replace(b"wqlint-index %d " % store.FORMAT, b"wqlint-index 99 ", 1))
    else:
        body = b"[" * 100_000 + b"]" * 100_000
        path.write_bytes(b"wqlint-index %d %s\n" % (store.FORMAT, hashlib.blake2b(body, digest_size=32)
                                                    .hexdigest().encode()) + body)
    got, _ = both(tree, cat)
    assert got.grep_rounds > 0
    assert shape(got) == shape(first)


def _cli_same_as_no_cache(tree: Path, env: dict, preexec_fn=None) -> None:
    plain = cli("scan", "--no-cache", "--format", "json", str(tree), env=env)
    assert plain.returncode == 1, plain.stderr
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-m", "wqlint", "scan", "--format", "json", str(tree)],
                              capture_output=True, text=True, env=env, preexec_fn=preexec_fn)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, plain.stdout, "")


def test_a_cache_that_cannot_take_the_file_size(tree, tmp_path):
    """EFBIG (a file size limit): the run carries on without saving."""
    import resource
    import signal

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))
    xdg = tmp_path / "xdg"
    _cli_same_as_no_cache(tree, dict(os.environ, XDG_CACHE_HOME=str(xdg)), limit)
    assert [p.name for p in xdg.rglob("*")] == ["wqlint", "index"]


@pytest.mark.parametrize("where", ["a name too long", "under /proc", "a file"])
def test_a_cache_directory_that_cannot_be_made(tree, tmp_path, where):
    xdg = {"a name too long": str(tmp_path / ("x" * 300)), "under /proc": "/proc/self/wqlint-cache",
           "a file": str(tmp_path / "file")}[where]
    if where == "a file":
        Path(xdg).write_text("")
    _cli_same_as_no_cache(tree, dict(os.environ, XDG_CACHE_HOME=xdg))


def test_a_full_disk_leaves_no_index_and_no_litter(tree, cat, monkeypatch):
    """ENOSPC while the index is written: no index, no temporary file, the same result."""
    import errno
    import io
    real = os.fdopen

    class Full(io.RawIOBase):
        def writable(self):
            return True

        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def fdopen(fd, *args, **kw):
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(store.index_dir())):
            os.close(fd)
            return io.BufferedWriter(Full())
        return real(fd, *args, **kw)
    monkeypatch.setattr(os, "fdopen", fdopen)
    got, _ = both(tree, cat)
    assert cpu_findings(got)
    assert list(store.index_dir().iterdir()) == []


# -- never stale: the index gives what --no-cache gives ------------------------------------

def test_an_edit_of_the_same_size_with_the_mtime_put_back(tree, cat, monkeypatch):
    """Same size, same mtime, other bytes (an editor or a tool that keeps the mtime): the
    change of ctime shows it."""
    monkeypatch.setattr(store, "RACY_NS", 0)
    first, _ = both(tree, cat)
    assert cpu_findings(first)
    init = tree / "fs/foo/init.c"
    st = init.stat()
    edited = INIT_C.replace("num_online_cpus()", "1234567890 + 4 ~0")
    assert len(edited) == len(INIT_C)
    init.write_text(edited)
    os.utime(init, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (init.stat().st_size, init.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    got, _ = both(tree, cat)
    assert cpu_findings(got) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run wqlint as a user who cannot read a file")
def test_a_file_made_unreadable_with_the_mtime_kept(tmp_path):
    """chmod 000 keeps the mtime and the size: the scan with the index reports the file as
    --no-cache does (an Error line, exit 3), and neither keeps an index of that tree."""
    import tempfile
    base = Path(tempfile.mkdtemp(prefix="wqlint-store-"))
    try:
        root = base / "linux"
        (root / "include" / "linux").mkdir(parents=True)
        (root / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\n")
        for rel, text in (("fs/foo/foo.h", FOO_H), ("fs/foo/super.c", SUPER_C), ("fs/foo/init.c", INIT_C)):
            write(root, rel, text)
        xdg = base / "xdg"
        xdg.mkdir(mode=0o700)
        subprocess.run(["chown", "-R", "nobody", str(base)], check=True)
        os.chmod(base, 0o755)
        env = dict(os.environ, XDG_CACHE_HOME=str(xdg), PYTHONPATH=str(REPO / "linter"))

        def scan(*extra):
            return subprocess.run([sys.executable, str(REPO / "tests" / "as_user.py"), "nobody", "scan", *extra,
                                   "--format", "json", str(root)], capture_output=True, text=True, env=env)
        time.sleep(store.RACY_NS / 1e9 + 0.1)  # every stamp is kept: only the ctime tells
        first = scan()
        assert first.returncode == 1, first.stderr
        assert list((xdg / "wqlint" / "index").glob("*.json"))
        os.chmod(root / "fs/foo/init.c", 0)
        plain = scan("--no-cache")
        assert plain.returncode == 3 and "Error: fs/foo/init.c: permission denied" in plain.stderr, plain.stderr
        for _ in range(2):
            got = scan()
            assert (got.returncode, got.stdout, got.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    finally:
        subprocess.run(["rm", "-rf", str(base)])


# -- bounds: scans and names, least recently used out --------------------------------------

def _kept_targets(root: Path) -> list:
    return sorted(kept["value"][1][1][0] if kept["value"][1][1] else "" for kept, _ in stored(root)["scans"])


def _dirs_tree(root: Path, n: int) -> list:
    out = []
    for i in range(n):
        rel = f"drivers/d{i:02d}"
        write(root, f"{rel}/d.c",
              f"void d{i}(void)\n{{\n\tq = alloc_workqueue(\"d{i}\", WQ_UNBOUND, nr_cpu_ids);\n}}\n")
        out.append(rel)
    return out


def test_the_index_keeps_the_scans_used_last(tree, cat):
    dirs = _dirs_tree(tree, 11)
    for d in dirs[:8]:
        both(tree, cat, d)
    assert _kept_targets(tree) == dirs[:8]
    again = lint.scan([str(tree / dirs[0])], cat, CACHED)  # used again: kept longest
    assert again.grep_rounds == 0
    for d in dirs[8:]:
        both(tree, cat, d)
    assert len(_kept_targets(tree)) == store.MAX_SCANS
    assert _kept_targets(tree) == [dirs[0]] + dirs[4:]
    for d in (dirs[0], dirs[10]):
        got = lint.scan([str(tree / d)], cat, CACHED)
        assert got.grep_rounds == 0 and [f.path for f in got.findings] == [d + "/d.c"]


def test_the_index_stays_within_its_size(tree, cat, monkeypatch):
    dirs = _dirs_tree(tree, 6)
    both(tree, cat, dirs[0])
    size = store.Store(tree).path.stat().st_size
    monkeypatch.setattr(store, "MAX_INDEX_BYTES", size + 1000)  # room for one scan, not two
    for d in dirs:
        got, _ = both(tree, cat, d)
        assert [f.path for f in got.findings] == [d + "/d.c"]
        assert store.Store(tree).path.stat().st_size <= store.MAX_INDEX_BYTES
    assert _kept_targets(tree) == [dirs[-1]]
    stored_before = stored(tree)
    monkeypatch.setattr(store, "MAX_INDEX_BYTES", 1000)  # the stamps and a few names
    write(tree, "fs/foo/other.c", "int x;\n")
    both(tree, cat)
    doc = stored(tree)
    assert store.Store(tree).path.stat().st_size <= 1000
    assert doc["scans"] == [] and \
        len(doc["first"]["answers"]["value"][1]) < len(stored_before["first"]["answers"]["value"][1])
    monkeypatch.setattr(store, "MAX_INDEX_BYTES", 100)  # not even those: not written
    write(tree, "fs/foo/other.c", "int y;\n")
    both(tree, cat)
    assert stored(tree) == doc


def test_the_index_keeps_the_names_used_last(tree, cat, monkeypatch):
    """Past MAX_NAMES names, those used least recently go, with the scans resolved from
    them; what is left still tells every change."""
    monkeypatch.setattr(store, "RACY_NS", 0)
    first, _ = both(tree, cat)
    n = len({k if isinstance(k, str) else k[1] for k in store.Store(tree).open().found})
    monkeypatch.setattr(store, "MAX_NAMES", n - 1)
    dirs = _dirs_tree(tree, 2)
    both(tree, cat, dirs[0])
    doc = stored(tree)
    names = set(doc["first"]["answers"]["value"][1]) | set(doc["first"]["answers"]["value"][2])
    assert len(names) <= n - 1
    write(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "4"))
    got, _ = both(tree, cat, "fs")
    assert cpu_findings(got) == []
    write(tree, "fs/foo/init.c", INIT_C)
    got, _ = both(tree, cat, "fs")
    assert shape(got) == shape(first)


def test_a_line_that_changes_what_it_is_on_the_same_line(tree, cat):
    """A definition found on a line that is not a #define is passed over without reading its
    file; the same line made a #define must be seen, though the lines found are the same."""
    write(tree, "include/linux/foo_n.h", "int FOO_N = 2;\n")
    write(tree, "fs/foo/super.c", SUPER_C.replace("info->nthreads", "FOO_N"))
    first, _ = both(tree, cat)
    assert cpu_findings(first) == []
    write(tree, "include/linux/foo_n.h", "#define FOO_N num_online_cpus()\n")
    got, _ = both(tree, cat)
    assert [f[0] for f in cpu_findings(got)] == ["fs/foo/super.c"]


def test_fix_and_bulk_without_the_index(tree, tmp_path):
    """--no-cache on fix and bulk as on scan: the same output, no index read or written."""
    (tree / "Makefile").write_text("VERSION = 7\nPATCHLEVEL = 0\nSUBLEVEL = 0\n")
    write(tree, "fs/foo/super.c", SUPER_C.replace("WQ_UNBOUND", "0"))  # missing-affinity-flag
    xdg = tmp_path / "xdg"
    env = dict(os.environ, XDG_CACHE_HOME=str(xdg))
    for name in ("fix", "bulk"):
        outs = []
        for cache in ("--no-cache", "--cache"):
            extra = ["--diff"] if name == "fix" else ["--out", str(tmp_path / "out")]
            proc = cli(name, "--target", "mainline", *extra, cache, str(tree), env=env)
            outs.append((proc.returncode, proc.stdout, proc.stderr))
            if cache == "--no-cache":
                assert not xdg.exists()
        assert outs[0] == outs[1]
        # (bulk stops at the tree's missing MAINTAINERS, after the scan)
        assert outs[0][0] == 0 and "+\tinfo->wq = alloc_workqueue(\"foo\", WQ_PERCPU," in outs[0][1] \
            if name == "fix" else outs[0][0] == 3 and "MAINTAINERS: not found" in outs[0][2]
        assert list((xdg / "wqlint" / "index").iterdir())
        shutil.rmtree(xdg)


def test_a_changed_file_too_large_to_read_means_starting_from_nothing_once(tree, cat, monkeypatch):
    """The index reads a changed file to search it again, up to MAX_FILE_BYTES; past that the
    run starts from nothing (the tree search reads it), and writes an index that the next
    run uses."""
    monkeypatch.setattr(store, "MAX_FILE_BYTES", 4096)
    monkeypatch.setattr(store, "RACY_NS", 0)
    big = "#define FOO_THREADS 4\n" + "/* padding */\n" * 400
    write(tree, "include/linux/foo_defs.h", big)
    write(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "FOO_THREADS"))
    first, _ = both(tree, cat)
    assert cpu_findings(first) == []
    write(tree, "include/linux/foo_defs.h", big.replace("4", "num_online_cpus()"))
    got, _ = both(tree, cat)
    assert [f[0] for f in cpu_findings(got)] == ["fs/foo/super.c"]
    again = lint.scan([str(tree)], cat, CACHED)
    assert again.grep_rounds == 0 and shape(again) == shape(got)


def test_what_a_killed_save_left_is_removed_by_the_next(tree, cat):
    """SIGKILL while the index is written leaves its temporary file (no handler runs): the
    next save removes such files once they are an hour old, and leaves a younger one (another
    run may be writing it) and anything not shaped like one."""
    lint.scan([str(tree)], cat, CACHED)
    path = store.Store(tree).path
    old, young, other = (path.parent / f".{path.name}.{x}" for x in ("k1ll3d.wqlint", "wr1t1ng.wqlint", "k1ll3d.txt"))
    for f in (old, young, other):
        f.write_bytes(b"partial")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    write(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "4"))  # so that the index is saved again
    lint.scan([str(tree)], cat, CACHED)
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, young.name, other.name])


RECLAIM_C = """\
#include <linux/workqueue.h>

static struct workqueue_struct *demo_wq;
static struct work_struct demo_work;

static void demo_fn(struct work_struct *work)
{
}

int demo_init(void)
{
	demo_wq = alloc_workqueue("demo", WQ_MEM_RECLAIM,
				  4096);
	INIT_WORK(&demo_work, demo_fn);
	queue_work(demo_wq, &demo_work);
	return 0;
}
"""


def test_a_file_changed_between_the_sites_and_the_work_model_is_not_kept_as_judged(tree, cat, monkeypatch):
    """The scan lets go of files it read whole once the allocation sites are resolved, and the
    work model reads again those it needs. A file whose bytes changed in between (its
    names and the lines naming them the same: only a number on a line of its own) was judged from two versions: the index does not keep the
    second as judged, and the next scan judges the file again rather than report the site of
    bytes no longer there."""
    from wqlint.scan.index import TreeIndex

    write(tree, "drivers/demo/demo.c", RECLAIM_C)
    release = TreeIndex.release_sources

    def release_then_edit(self):
        release(self)  # every file, the queue's own too
        write(tree, "drivers/demo/demo.c", RECLAIM_C.replace("4096", "16"))
    monkeypatch.setattr(TreeIndex, "release_sources", release_then_edit)
    first = lint.scan([str(tree)], cat, CACHED)
    assert [(f.rule_id, f.line) for f in first.findings if f.path == "drivers/demo/demo.c"] == [
        ("max-active-over-limit", 12)]
    monkeypatch.setattr(TreeIndex, "release_sources", release)
    again, fresh = both(tree, cat)
    assert [f for f in again.findings if f.path == "drivers/demo/demo.c"] == []


def _found_around(tree, cat, monkeypatch) -> bytes:
    """A scan kept, and the function around a line of fs/foo/super.c found ("foo_start") and
    kept with the index: that line's bytes."""
    monkeypatch.setattr(store, "RACY_NS", 300_000_000)  # (the files' ctime is now)
    time.sleep(0.4)
    lint.scan([str(tree)], cat, CACHED)
    line = SUPER_C.splitlines()[5].encode()
    first = store.Store(tree).open()
    assert first.enclosing_name("fs/foo/super.c", line, lambda rel, text: "foo_start") == "foo_start"
    assert first.save()
    return line


def _never(rel, text):
    raise AssertionError(f"{rel} parsed again")


def test_a_file_rewritten_with_the_same_bytes_keeps_the_functions_of_its_lines(tree, cat, monkeypatch):
    """The function around a line (Store.enclosing_name(), kept for a review's sites
    outside the series) is found again only when the file's bytes changed: a file written
    again as it was (a stamp that moved, or one too recent to trust) keeps its answers."""
    line = _found_around(tree, cat, monkeypatch)
    write(tree, "fs/foo/super.c", SUPER_C)  # the same bytes, another stamp
    time.sleep(0.4)
    again = store.Store(tree).open()
    assert again.changed == {"fs/foo/super.c"} and again.live()
    assert again.enclosing_name("fs/foo/super.c", line, _never) == "foo_start"
    assert again.save()
    write(tree, "fs/foo/super.c", SUPER_C.replace("info->nthreads", "info->nthreads + 1"))
    edited = store.Store(tree).open()
    assert edited.live() == []
    assert edited.enclosing_name("fs/foo/super.c", line, lambda rel, text: "found again") == "found again"


def test_an_edit_undone_keeps_the_functions_of_its_lines(tree, cat, monkeypatch):
    """The functions found around the lines of a file (for a review) are put aside with the
    scan when the file is edited, and are the file's again when the edit is undone: the
    first review after an undo does not look for them again."""
    line = _found_around(tree, cat, monkeypatch)
    settled(tree, "fs/foo/super.c", SUPER_C.replace("info->nthreads", "info->nthreads + 1"))
    edited = store.Store(tree).open()
    assert edited.live() == []
    assert edited.enclosing_name("fs/foo/super.c", line, lambda rel, text: "found in the edit") == "found in the edit"
    assert edited.save()
    settled(tree, "fs/foo/super.c", SUPER_C)
    back = store.Store(tree).open()
    assert back.live()
    assert back.enclosing_name("fs/foo/super.c", line, _never) == "foo_start"
    assert back.save()
    assert store.Store(tree).open().enclosing_name("fs/foo/super.c", line, _never) == "foo_start"


def test_a_kept_scan_is_written_back_as_it_was_read(tree, cat, monkeypatch):
    """Saving the index after a stamp moved writes each kept scan's lines as they were read,
    without encoding them again (on a kernel tree the list of files a scan read is some
    15,000 digests)."""
    monkeypatch.setattr(store, "RACY_NS", 300_000_000)  # (the files' ctime is now)
    time.sleep(0.4)
    lint.scan([str(tree)], cat, CACHED)
    before = store.Store(tree).path.read_bytes().split(b"\n")[2:]
    assert len(before) == 2  # the scan's Kept, its Analysis
    plain = store._codec

    class NoKept:
        def __init__(self, kind):
            self.got = plain(kind)
            self.kind = kind

        def encode(self, obj):
            assert self.kind is not store.Kept, "a kept scan encoded again"
            return self.got.encode(obj)

        def decode(self, doc):
            return self.got.decode(doc)
    monkeypatch.setattr(store, "_codec", NoKept)
    write(tree, "fs/foo/init.c", INIT_C)  # the same bytes, another stamp
    time.sleep(0.4)
    again = store.Store(tree).open()
    assert again.changed == {"fs/foo/init.c"} and again.unsaved
    assert again.save()
    assert store.Store(tree).path.read_bytes().split(b"\n")[2:] == before


EFS_C = """\
#include <linux/fs.h>
#include <linux/workqueue.h>

static struct workqueue_struct *efs_wq;

int efs_fsync(struct file *file, int datasync)
{
	flush_workqueue(efs_wq);
	return 0;
}

int efs_init(void)
{
	efs_wq = alloc_workqueue("efs", WQ_UNBOUND, 0);
	return efs_wq ? 0 : -ENOMEM;
}
"""
GFS_C = """\
#include <linux/fs.h>

int efs_fsync(struct file *file, int datasync);

const struct file_operations gfs_file_operations = {
	.llseek		= generic_file_llseek,
};
"""


@pytest.fixture
def tables(tmp_path, monkeypatch):
    """The tables fixture in a kernel tree (a reclaim work of drivers/tgt reaching afs's
    fsync through file_operations), its files' stamps trusted 0.3 s after they are written."""
    from conftest import FIXTURES
    root = tmp_path / "tables"
    shutil.copytree(FIXTURES / "tables", root)
    for rel in ("Makefile", "include/linux/workqueue.h", "kernel/workqueue.c"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / "mainline" / rel, root / rel)
    monkeypatch.setattr(store, "RACY_NS", 300_000_000)
    return root


def flows_of(report) -> list:
    return sorted((f.path, f.line, len(f.works)) for f in report.findings if f.rule_id == "reclaim-flush-dependency")


def settled(root: Path, rel: str, text: str) -> None:
    """Write a file, and wait until its stamp is one the index trusts."""
    write(root, rel, text)
    time.sleep(0.4)


def test_a_file_stamped_since_with_the_bytes_last_seen_costs_one_read(tree, cat, monkeypatch):
    """A file scanned at once after it was written has no stamp in the index, only the digest
    of the bytes its answers are of (seen). The next run that finds it stamped with those
    bytes decodes no answer and writes no index: there is nothing to bring up to date; the
    stamp is written with the next change. Other bytes there are a change, as ever."""
    monkeypatch.setattr(store, "RACY_NS", 300_000_000)  # (the files' ctime is now)
    time.sleep(0.4)
    lint.scan([str(tree)], cat, CACHED)
    edited = SUPER_C.replace("info->nthreads", "info->nthreads + 1")
    (tree / "fs/foo/super.c").write_text(edited)  # (scanned at once: too recent a stamp)
    first = lint.scan([str(tree)], cat, CACHED)
    doc = stored(tree)
    assert "fs/foo/super.c" in stamped(doc)[1]
    assert doc["first"]["seen"] == "fs/foo/super.c//" + store.digest(edited.encode())
    written = store.Store(tree).path.read_bytes()
    time.sleep(0.4)
    later = store.Store(tree).open()
    assert later.changed == set() and later._undecoded and not later.unsaved
    assert shape(kept_only(monkeypatch, tree, cat)) == shape(first)
    assert store.Store(tree).path.read_bytes() == written
    write(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "4"))  # (another change: written)
    assert shape(lint.scan([str(tree)], cat, CACHED)) == shape(lint.scan([str(tree)], cat))
    doc = stored(tree)
    assert "fs/foo/super.c" in stamped(doc)[0] and "fs/foo/super.c" not in doc["first"]["seen"]
    assert doc["first"]["seen"] == "fs/foo/init.c//" + store.digest(INIT_C.replace("num_online_cpus()", "4").encode())
    (tree / "fs/foo/super.c").write_text(SUPER_C)
    lint.scan([str(tree)], cat, CACHED)
    (tree / "fs/foo/super.c").write_text(edited.replace("+ 1", "+ 2"))  # (the same stamp, other bytes)
    time.sleep(0.4)
    again = store.Store(tree).open()
    assert again.changed == {"fs/foo/super.c"}
    assert shape(lint.scan([str(tree)], cat, CACHED)) == shape(lint.scan([str(tree)], cat))
    (tree / "lib/other").mkdir(parents=True)
    (tree / "lib/other/other.c").write_text("int other;\n")  # (no kept scan reads it)
    lint.scan([str(tree)], cat, CACHED)
    assert "lib/other/other.c//" in stored(tree)["first"]["seen"]
    time.sleep(0.4)
    assert store.Store(tree).open().changed == {"lib/other/other.c"}  # (the description's to tell)


def kept_only(monkeypatch, root: Path, cat):
    """A scan with the index that must take the scan it keeps: no site is resolved again."""
    from wqlint.scan.sites import SiteFinder

    def never(self):
        raise AssertionError("the sites were resolved again")
    with monkeypatch.context() as m:
        m.setattr(SiteFinder, "find", never)
        return lint.scan([str(root)], cat, CACHED)


def test_a_table_set_in_a_file_no_scan_read(tables, cat, monkeypatch):
    """A file that the kept scan never read (it names nothing the scan asked for) now sets a
    file_operations' fsync to a function that waits for a queue without a rescuer: the
    reclaim work reaching file->f_op->fsync reaches it. The kept scan is not used, for what
    the file says of the tree's tables (scan.described) is not what it said; touching the
    file without a change keeps it."""
    settled(tables, "fs/efs/file.c", EFS_C)
    settled(tables, "fs/gfs/file.c", GFS_C)
    first, _ = both(tables, cat)
    assert flows_of(first) == [("fs/afs/file.c", 16, 2)]
    settled(tables, "fs/gfs/file.c", GFS_C)
    assert shape(kept_only(monkeypatch, tables, cat)) == shape(first)
    settled(tables, "fs/gfs/file.c", GFS_C.replace("llseek,\n", "llseek,\n\t.fsync\t\t= efs_fsync,\n"))
    got, _ = both(tables, cat)
    assert flows_of(got) == [("fs/afs/file.c", 16, 2), ("fs/efs/file.c", 8, 2)]


def _helper_work(root: Path) -> None:
    """A reclaim work of drivers/tgt calling tgt_helper(), defined nowhere yet, and
    afs_sync_all(), a function of fs/afs that waits for afs's queue (without a rescuer)."""
    write(root, "fs/afs/file.c", (root / "fs/afs/file.c").read_text()
          + "\nvoid afs_sync_all(void)\n{\n\tflush_workqueue(afs_wq);\n}\n")
    io = (root / "drivers/tgt/io.c").read_text()
    io = io.replace("static void tgt_own_fn", "void tgt_helper(void);\n\nstatic void tgt_x_fn(struct work_struct *work)"
                    "\n{\n\ttgt_helper();\n}\n\nstatic void tgt_own_fn")
    io = io.replace("\tINIT_WORK(&req->own_work, tgt_own_fn);\n", "\tINIT_WORK(&req->own_work, tgt_own_fn);\n"
                    "\tINIT_WORK(&req->x_work, tgt_x_fn);\n\tqueue_work(tgt_wq, &req->x_work);\n")
    write(root, "drivers/tgt/io.c", io.replace("\tstruct work_struct own_work;\n",
                                                "\tstruct work_struct own_work;\n\tstruct work_struct x_work;\n"))


def test_a_function_defined_in_a_file_the_scan_searched_but_never_read(tables, cat, monkeypatch):
    """A reclaim work calls tgt_helper(), defined nowhere: its path ends there. A file of the
    work's own directory, which the search of the subsystem went through but the scan never
    read (no function of it is called), now defines tgt_helper() calling a function of
    another subsystem that flushes. The index kept the file's digest with the scan's, so the
    kept scan is not used; touching the file without a change keeps it."""
    _helper_work(tables)
    helper = "int tgt_count(int a)\n{\n\treturn a + 1;\n}\n"
    settled(tables, "drivers/tgt/helper.c", helper)
    first, _ = both(tables, cat)
    assert flows_of(first) == [("fs/afs/file.c", 16, 2)]
    settled(tables, "drivers/tgt/helper.c", helper)
    assert shape(kept_only(monkeypatch, tables, cat)) == shape(first)
    settled(tables, "drivers/tgt/helper.c", "void afs_sync_all(void);\n\n" + helper
            + "\nvoid tgt_helper(void)\n{\n\tafs_sync_all();\n}\n")
    got, _ = both(tables, cat)
    assert flows_of(got) == [("fs/afs/file.c", 16, 2), ("fs/afs/file.c", 35, 1)]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_scan_after_an_edit_answers_at_once_what_the_scan_before_asked(tables, cat, monkeypatch, jobs):
    """A scan keeps what each part of its work model asked of the subsystems' text (the
    flows', and the waits' found in a worker of their own with two jobs). The scan after an
    edit of a file it read answers those questions before the model starts: the flows are
    then followed once, where the scan before went round after round as each answer came,
    and found as a scan without the index finds them. So after a file is added, which
    drops the kept scan rather than put it aside."""
    from wqlint.scan import subtext, work

    time.sleep(0.4)  # (the files' stamps trusted: the edit alone changes the tree)
    passes: list = []
    follow = work.WorkModel._flows

    def counted(self, wanted):
        passes.append(self.text.rounds)
        return follow(self, wanted)
    monkeypatch.setattr(work.WorkModel, "_flows", counted)
    options = ScanOptions(store=True, jobs=jobs)
    first = lint.scan([str(tables)], cat, options)
    assert flows_of(first) == [("fs/afs/file.c", 16, 2)]
    assert len(passes) > 1
    (kept,) = store.Store(tables).open().kept.values()
    asked = subtext.questions_of(kept.questions)
    assert ("h", "drivers/tgt") in asked["flows"] and ("h", "fs/afs") in asked["flows"]
    assert ("c", "fs/afs") in asked["waits"]  # (with two jobs, told by its worker)
    # A file added: the kept scan is dropped, not put aside (it never read that file).
    settled(tables, "fs/new/new.c", "int new_count(int a)\n{\n\treturn a;\n}\n")
    passes.clear()
    got = lint.scan([str(tables)], cat, options)
    assert passes == [passes[0]] and passes[0] > 0  # (answered before the first pass)
    assert shape(got) == shape(lint.scan([str(tables)], cat)) and flows_of(got) == flows_of(first)
    # A file it read edited: the kept scan is put aside.
    settled(tables, "drivers/tgt/io.c", "/* edited */\n" + (tables / "drivers/tgt/io.c").read_text())
    passes.clear()
    got = lint.scan([str(tables)], cat, options)
    assert passes == [passes[0]] and passes[0] > 0
    assert shape(got) == shape(lint.scan([str(tables)], cat)) and flows_of(got) == flows_of(first)
    passes.clear()
    monkeypatch.setattr(subtext.SubsystemText, "prefetch", lambda self, questions: None)
    settled(tables, "drivers/tgt/io.c", "/* again */\n" + (tables / "drivers/tgt/io.c").read_text())
    assert shape(lint.scan([str(tables)], cat, options)) == shape(lint.scan([str(tables)], cat))
    assert len(passes) > 1  # (without them, round after round)


def test_an_edit_undone_takes_the_scan_kept_before_it(tree, cat, monkeypatch):
    """The scan of the tree before an edit is put aside when the edit makes it stale, and
    taken again, without resolving anything, once the file has its bytes again and no other
    file changed (an edit undone, a branch checked out again); of those put aside, the one
    used last is kept."""
    monkeypatch.setattr(store, "RACY_NS", 300_000_000)
    time.sleep(0.4)
    first, _ = both(tree, cat)
    assert cpu_findings(first)
    settled(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "4"))
    edited, _ = both(tree, cat)
    assert cpu_findings(edited) == []
    settled(tree, "fs/foo/init.c", INIT_C)
    assert shape(kept_only(monkeypatch, tree, cat)) == shape(first)
    settled(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "4"))
    assert shape(kept_only(monkeypatch, tree, cat)) == shape(edited)
    settled(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "nr_cpu_ids"))
    other, _ = both(tree, cat)
    settled(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "4"))
    assert shape(kept_only(monkeypatch, tree, cat)) == shape(edited) != shape(other)
    settled(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "nr_cpu_ids"))
    assert shape(kept_only(monkeypatch, tree, cat)) == shape(other)
    settled(tree, "fs/foo/init.c", INIT_C)  # the first tree's scan, used least recently, was let go
    assert store.MAX_ASIDE == 1 and store.Store(tree).open().live() == []


def test_an_edit_undone_at_once_takes_the_scan_kept_before_it(tree, cat, monkeypatch):
    """As above, with each scan run as soon as the file is written: its stamp is too recent to
    trust, in the index as in the walk, so that no stamp tells the index has something new.
    Taking back the scan put aside is written down all the same: the next edit then puts
    aside the scan used last, and undoing that edit takes it again."""
    monkeypatch.setattr(store, "RACY_NS", 300_000_000)
    time.sleep(0.4)
    first, _ = both(tree, cat)
    assert cpu_findings(first)
    for value in ("4", "8", "4"):
        write(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", value))
        edited, _ = both(tree, cat)
        assert cpu_findings(edited) == []
        write(tree, "fs/foo/init.c", INIT_C)
        assert shape(kept_only(monkeypatch, tree, cat)) == shape(first)


def test_an_edit_undone_after_a_touch_scanned_at_once_takes_the_scan_kept_before_it(tree, cat, monkeypatch):
    """A file touched and scanned at once has no stamp in the index; the next run finds it
    stamped with the bytes seen, and an edit of another file in that run puts the scan aside:
    undoing the edit takes it again (the touched file is one of those it waits for, with
    its bytes, not with the stamp it had none of)."""
    monkeypatch.setattr(store, "RACY_NS", 300_000_000)
    time.sleep(0.4)
    first, _ = both(tree, cat)
    os.utime(tree / "fs/foo/super.c")
    assert shape(kept_only(monkeypatch, tree, cat)) == shape(first)
    assert "fs/foo/super.c" in stamped(stored(tree))[1]
    time.sleep(0.4)
    write(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "4"))
    edited, _ = both(tree, cat)
    assert cpu_findings(edited) == []
    write(tree, "fs/foo/init.c", INIT_C)
    assert shape(kept_only(monkeypatch, tree, cat)) == shape(first)


@pytest.mark.parametrize("meanwhile", ["edited", "added"])
def test_an_edit_undone_while_another_file_changed_is_resolved_again(tree, cat, monkeypatch, meanwhile):
    """The scan put aside is of the tree as it was: undoing the edit while another file was
    edited, or added, is not that tree."""
    monkeypatch.setattr(store, "RACY_NS", 300_000_000)
    time.sleep(0.4)
    both(tree, cat)
    settled(tree, "fs/foo/init.c", INIT_C.replace("num_online_cpus()", "4"))
    both(tree, cat)
    if meanwhile == "edited":
        write(tree, "fs/foo/super.c", SUPER_C.replace("WQ_UNBOUND", "0"))
    else:
        write(tree, "fs/foo/more.c", "void m(void)\n{\n\tq = alloc_workqueue(\"m\", WQ_UNBOUND, nr_cpu_ids);\n}\n")
    settled(tree, "fs/foo/init.c", INIT_C)
    assert store.Store(tree).open().live() == []
    got, _ = both(tree, cat)
    assert got.findings


def _toggle(root: Path, rel: str, old: str, new: str) -> None:
    """rel with old replaced by new, or new by old when it has new."""
    text = (root / rel).read_text()
    write(root, rel, text.replace(new, old, 1) if new in text else text.replace(old, new, 1))


# Edits of the tables tree that change what the work model finds, in files the scan reads
# and in files it does not (a table, a definition in a directory searched, a queue's flags).
_EDITS = {
    "a table's fsync": lambda r: _toggle(r, "fs/gfs/file.c", "llseek,\n", "llseek,\n\t.fsync\t\t= efs_fsync,\n"),
    "a helper defined": lambda r: _toggle(r, "drivers/tgt/helper.c", "int tgt_count",
                                          "void tgt_helper(void)\n{\n\tafs_sync_all();\n}\n\nint tgt_count"),
    "the afs queue's rescuer": lambda r: _toggle(r, "fs/afs/file.c", '"afs_commit", WQ_UNBOUND',
                                                 '"afs_commit", WQ_UNBOUND | WQ_MEM_RECLAIM'),
    "the tgt queue's rescuer": lambda r: _toggle(r, "drivers/tgt/io.c", "WQ_MEM_RECLAIM | WQ_UNBOUND, 0",
                                                 "WQ_UNBOUND, 0"),
    "a filesystem added": lambda r: (r / "fs/hfs/file.c").unlink() if (r / "fs/hfs/file.c").exists() else write(
        r, "fs/hfs/file.c", EFS_C.replace("efs", "hfs") + "\nconst struct file_operations hfs_fops = {\n"
        "\t.fsync\t\t= hfs_fsync,\n};\n"),
    "a file touched": lambda r: write(r, "fs/gfs/file.c", (r / "fs/gfs/file.c").read_text()),
}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_edits_in_any_order_give_what_a_scan_without_the_index_gives(tables, cat, monkeypatch, seed):
    """A run of edits, each followed by a scan with the index and one without: the same
    findings, chains and works every time (edits undone included, when a scan put aside is
    taken again)."""
    import random
    settled(tables, "fs/efs/file.c", EFS_C)
    settled(tables, "fs/gfs/file.c", GFS_C)
    _helper_work(tables)
    settled(tables, "drivers/tgt/helper.c", "void afs_sync_all(void);\n\nint tgt_count(int a)\n{\n\treturn a;\n}\n")
    rng = random.Random(seed)
    seen = set()
    for name in [rng.choice(sorted(_EDITS)) for _ in range(8)]:
        _EDITS[name](tables)
        time.sleep(0.4)
        cached, fresh = both(tables, cat)
        assert flows_of(cached) == flows_of(fresh), name
        seen.add(tuple(flows_of(fresh)))
    assert len(seen) > 1  # (the edits changed what is found)
