"""-j: the scan's parts that go over the works one at a time spread over worker processes
(scan.shares, wqlint.tools.forked) give the report one process gives, byte for byte, and a
signal that ends wqlint ends its workers."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest


from helpers import run
from test_ending import gone
from test_signals import at_default

RULES = Path(__file__).resolve().parent / "rules"


def _tree(tmp_path: Path) -> Path:
    """Works waiting for themselves in three subsystems (three directories), and works
    reaching flushes in two, in a tree of their own."""
    root = tmp_path / "tree"
    for sub in ("drivers/a", "drivers/b", "fs/c"):
        (root / sub).mkdir(parents=True)
        shutil.copy(RULES / "self-flush-deadlock.c", root / sub / "self.c")
    shutil.copy(RULES / "reclaim-flush-dependency.c", root / "drivers/a" / "reclaim.c")
    shutil.copy(RULES / "reclaim-flush-dependency.c", root / "fs/c" / "reclaim.c")
    return root


def _json(root: Path, jobs: int, tmp_path: Path) -> str:
    result = run("scan", "--format", "json", "--no-cache", "--kernel-version", "7.3", "-j", jobs, root,
                 env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert result.exit_code == 1, result.stderr[-2000:]
    return result.stdout


def test_four_jobs_report_what_one_does_byte_for_byte(tmp_path, monkeypatch):
    from wqlint import tools

    root = _tree(tmp_path)
    forks: list = []
    forked = tools.forked
    monkeypatch.setattr(tools, "forked", lambda task, shares, meanwhile=None: forks.append(len(shares))
                        or forked(task, shares, meanwhile))
    one = _json(root, 1, tmp_path)
    assert forks == []  # -j 1: no worker
    two = _json(root, 2, tmp_path)
    # The waits in a worker of their own, the flows in the scan itself.
    assert forks == [1]
    four = _json(root, 4, tmp_path)
    # The waits in a worker, the flows of the second subsystem with a reclaim queue in
    # another (of the three jobs left to them), those of the first in the scan itself.
    assert forks == [1, 2]
    assert one == two == four
    assert {f'"path": "{sub}/self.c"' in one for sub in ("drivers/a", "drivers/b", "fs/c")} == {True}
    assert {f'"path": "{sub}/reclaim.c"' in one for sub in ("drivers/a", "fs/c")} == {True}


def test_parts_are_balanced_and_the_same_for_the_same_weights():
    from wqlint.scan.shares import parts

    weights = {"a": 5, "b": 4, "c": 3, "d": 3, "e": 1}
    got = parts(weights, 2)
    assert got == parts(dict(reversed(list(weights.items()))), 2)
    assert sorted(sum(weights[k] for k in p) for p in got) == [8, 8]
    assert parts(weights, 9) == [frozenset(k) for k in "abcde"]
    assert parts({}, 4) == []


def test_a_worker_that_fails_gives_no_answer():
    from wqlint import tools

    def task(share):
        if share == 2:
            raise ValueError("no")
        return b"%d" % share
    assert tools.forked(task, [1, 3]) == [b"1", b"3"]
    own: list = []
    assert tools.forked(task, [3], lambda: own.append(task(1))) == [b"3"] and own == [b"1"]
    assert tools.forked(task, [1, 2, 3]) is None


WORKERS = """
import os, sys, time
from wqlint import tools
tools.end_on_signals()
def task(share):
    with open(sys.argv[1], "a") as marks:
        marks.write(f"{os.getpid()}\\n")
    time.sleep(300)
    return b""
tools.forked(task, [1, 2])
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_ends_the_workers(tmp_path, sig):
    marks = tmp_path / "marks"
    script = tmp_path / "workers.py"
    script.write_text(textwrap.dedent(WORKERS))
    proc = subprocess.Popen([sys.executable, str(script), str(marks)], preexec_fn=at_default,
                            env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1] / "linter")))
    try:
        deadline = time.monotonic() + 60
        while (not marks.exists() or len(marks.read_text().split()) < 2) and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = [int(p) for p in marks.read_text().split()]
        assert len(workers) == 2
        proc.send_signal(sig)
        assert proc.wait(30) == -sig
        deadline = time.monotonic() + 10
        while not all(gone(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(gone(p) for p in workers)
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in [int(p) for p in marks.read_text().split()] if marks.exists() else []:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


@pytest.mark.kernel
@pytest.mark.parametrize("tree", ["linux_6_12", "linux_7_3"])
def test_whole_tree_reports_of_one_and_four_jobs_are_the_same(tree, request, tmp_path):
    root = request.getfixturevalue(tree)
    got = [run("scan", "--format", "json", "--no-cache", "-j", jobs, root,
               env={"XDG_CACHE_HOME": str(tmp_path / "cache")}) for jobs in (1, 4)]
    assert [r.exit_code for r in got] == [1, 1], got[0].stderr[-2000:] + got[1].stderr[-2000:]
    assert got[0].stdout == got[1].stdout


def test_no_worker_is_forked_while_the_searches_of_the_trees_description_run(tmp_path, monkeypatch):
    """A scan of a whole tree starts the searches of its description (scan.description)
    before it resolves the allocation sites. A worker forked while one of them ran would
    wait for it forever when it asks the description (the thread is not in the child), or
    for a lock that thread held. Here the searches take seconds and the works of three
    subsystems wait for themselves: the waits are split over workers, never before the
    searches have ended; the report is one process's."""
    from wqlint import tools
    from wqlint.scan import description

    root = tmp_path / "tree"
    for sub in ("drivers/a", "drivers/b", "fs/c"):
        (root / sub).mkdir(parents=True)
        shutil.copy(RULES / "self-flush-deadlock.c", root / sub / "self.c")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "rg").write_text(  # (the description's: --heading over the whole tree)
        f'#!/bin/sh\ncase "$*" in *--max-depth*) ;; *--heading*) sleep 6;; esac\nexec {tools.which("rg")} "$@"\n')
    (bin_dir / "rg").chmod(0o755)
    started: list = []
    start = description.Description.start
    monkeypatch.setattr(description.Description, "start", lambda self: started.append(self) or start(self))
    running_at_fork: list = []
    forked = tools.forked

    def watched(task, shares, meanwhile=None):
        running_at_fork.append([not f.done() for d in started for f in (d._started or ())])
        return forked(task, shares, meanwhile)
    monkeypatch.setattr(tools, "forked", watched)
    one = _json(root, 1, tmp_path)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    four = _json(root, 4, tmp_path)
    assert started and running_at_fork and not any(any(r) for r in running_at_fork), running_at_fork
    assert one == four


def test_the_trees_description_is_read_once_and_only_where_a_scan_reads_it(tmp_path, monkeypatch):
    """With -j 2, a scan reads the tree's description in one process, itself: the scan of a
    whole tree before its worker for the waits starts (the worker shares it), the scan of one
    directory when its flows ask, as with -j 1, and its waits after them. Split by kind, the
    flows and the waits of a directory each searched the whole tree and read it (on
    linux-source-6.12, fs/btrfs took 13 s instead of 10.5; fs/ext4, whose works never ask,
    10 s instead of 5.5 when it was read before the split)."""
    import os as _os

    from wqlint.scan import description

    root = _tree(tmp_path)
    marks = tmp_path / "reads"
    read_tree = description.Description._read_tree

    def reading(self):
        with open(marks, "a") as out:
            out.write(f"{_os.getpid()}\n")
        return read_tree(self)
    monkeypatch.setattr(description.Description, "_read_tree", reading)
    one = run("scan", "--format", "json", "--no-cache", "--kernel-version", "7.3", "-j", 1, root / "drivers/a",
              env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert marks.read_text().split() == [str(_os.getpid())]  # (its reclaim work's path leaves drivers/a)
    marks.unlink()
    two = run("scan", "--format", "json", "--no-cache", "--kernel-version", "7.3", "-j", 2, root / "drivers/a",
              env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert one.exit_code == two.exit_code == 1 and one.stdout == two.stdout
    assert '"rule": "self-flush-deadlock"' in two.stdout and '"rule": "reclaim-flush-dependency"' in two.stdout
    assert marks.read_text().split() == [str(_os.getpid())]
    marks.unlink()
    _json(root, 2, tmp_path)
    assert marks.read_text().split() == [str(_os.getpid())]
