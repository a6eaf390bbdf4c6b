"""A signal that ends wqlint (a timeout, a cancelled CI job, a closed terminal) ends every
program wqlint started, and the programs those started, removes every temporary file and
directory it made, and ends wqlint as the signal asked. Each case puts a program of its own
in the place of one wqlint runs (ripgrep, spatch, the tree's get_maintainer.pl, make): it
starts a child that sleeps, writes both process ids down, and waits."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_robust import tiny_tree
from test_signals import at_default

SLEEPER = """#!/bin/sh
{trap}/bin/sleep 300 &
echo "$$ $!" >> {marks}
wait
"""
# get_maintainer.pl is run by perl: the same program in perl.
PERL_SLEEPER = """#!/usr/bin/perl
my $child = fork();
if ($child == 0) {{ exec("/bin/sleep", "300"); }}
open(my $fh, ">>", "{marks}"); print $fh "$$ $child\\n"; close($fh);
waitpid($child, 0);
"""
MAINTAINERS = "THE REST\nM:\tA <a@example.org>\nL:\tl@example.org\nS:\tBuggy\nF:\t*\nF:\t*/\n"


def sig_name(sig: signal.Signals) -> str:
    return sig.name


def sleeper(path: Path, marks: Path, ignore_term: bool = False) -> Path:
    """An executable at path that starts a sleeping child and records both pids in marks;
    ignore_term: both ignore SIGTERM (only SIGKILL ends them)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SLEEPER.format(trap="trap '' TERM\n" if ignore_term else "", marks=marks))
    path.chmod(0o755)
    return path


def gone(pid: int) -> bool:
    """Has the process ended? (A zombie has: nothing may reap an orphan in a container.)"""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def pids(marks: Path) -> list:
    return [int(p) for line in marks.read_text().splitlines() for p in line.split()] if marks.exists() else []


class Run:
    """wqlint started on args with the fake programs of bin_dir first in PATH, a TMPDIR and a
    cache of its own."""

    def __init__(self, tmp_path: Path, args: list, env: dict | None = None, preexec=at_default):
        self.tmp = tmp_path / "tmp"
        self.tmp.mkdir()
        self.marks = tmp_path / "marks"
        self.env = dict(os.environ, PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
                        TMPDIR=str(self.tmp), XDG_CACHE_HOME=str(tmp_path / "cache"), **(env or {}))
        self.proc = subprocess.Popen([sys.executable, "-m", "wqlint", *map(str, args)], env=self.env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=preexec)

    def started(self, count: int = 2) -> list:
        """The pids of the programs and their children, once count of them are written down."""
        deadline = time.monotonic() + 120
        while len(pids(self.marks)) < count:
            if self.proc.poll() is not None:
                out, err = self.proc.communicate()
                pytest.fail(f"wqlint ended ({self.proc.returncode}) before its program started: {out!r} {err!r}")
            assert time.monotonic() < deadline, "the program never started"
            time.sleep(0.05)
        return pids(self.marks)

    def end(self, sig: int) -> None:
        self.proc.send_signal(sig)
        _out, err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == -sig, err
        assert "Traceback" not in err.decode(), err

    def assert_nothing_left(self, started: list) -> None:
        deadline = time.monotonic() + 10
        while not all(gone(pid) for pid in started) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [pid for pid in started if not gone(pid)] == []
        assert sorted(os.listdir(self.tmp)) == []


@pytest.fixture
def kill_leftovers():
    """Whatever a failing case leaves running is killed after it."""
    runs: list = []
    yield runs.append
    for run in runs:
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.communicate()
        for pid in pids(run.marks):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT], ids=sig_name)
def test_a_signal_ends_the_search_of_a_scan(tmp_path, kill_leftovers, sig):
    root = tiny_tree(tmp_path)
    sleeper(tmp_path / "bin" / "rg", tmp_path / "marks")
    run = Run(tmp_path, ["scan", root, "-j", "2"])
    kill_leftovers(run)
    started = run.started()
    run.end(sig)
    run.assert_nothing_left(started)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=sig_name)
def test_a_signal_ends_spatch_and_removes_its_directory(tmp_path, kill_leftovers, sig):
    root = tiny_tree(tmp_path)
    spatch = sleeper(tmp_path / "spatch" / "spatch", tmp_path / "marks")
    run = Run(tmp_path, ["scan", root, "--engine", "coccinelle", "-j", "1"], env={"SPATCH": str(spatch)})
    kill_leftovers(run)
    started = run.started()
    assert [p.name[:13] for p in run.tmp.iterdir()] == ["wqlint-cocci-"]  # (what must go)
    run.end(sig)
    run.assert_nothing_left(started)


def test_a_program_that_ignores_sigterm_is_killed(tmp_path, kill_leftovers):
    """SIGTERM first (make removes the object it was writing), SIGKILL for what is still
    there ENDING_GRACE seconds later."""
    root = tiny_tree(tmp_path)
    spatch = sleeper(tmp_path / "spatch" / "spatch", tmp_path / "marks", ignore_term=True)
    run = Run(tmp_path, ["scan", root, "--engine", "coccinelle", "-j", "1"], env={"SPATCH": str(spatch)})
    kill_leftovers(run)
    started = run.started()
    begun = time.monotonic()
    run.end(signal.SIGTERM)
    assert time.monotonic() - begun >= 1.5  # (it waited for the program to end on SIGTERM)
    run.assert_nothing_left(started)


def _bulk_tree(tmp_path: Path) -> Path:
    root = tiny_tree(tmp_path)
    (root / "MAINTAINERS").write_text(MAINTAINERS)
    (root / "scripts").mkdir()
    (root / "scripts" / "get_maintainer.pl").write_text(
        '#!/usr/bin/perl\nprint "A <a\\@example.org> (maintainer:THE REST)\\n";\n')
    return root


@pytest.mark.skipif(shutil.which("perl") is None, reason="perl runs the tree's get_maintainer.pl")
def test_a_signal_ends_get_maintainer_in_the_threads_that_run_it(tmp_path, kill_leftovers):
    root = _bulk_tree(tmp_path)
    for n in range(3):  # three files, three subsystems: three get_maintainer.pl at once (-j 3)
        d = root / "drivers" / f"demo{n}"
        d.mkdir()
        (d / "demo.c").write_text((root / "drivers" / "demo" / "demo.c").read_text())
        with open(root / "MAINTAINERS", "a") as handle:
            handle.write(f"\nDEMO{n} DRIVER\nM:\tD <d{n}@example.org>\nS:\tMaintained\nF:\tdrivers/demo{n}/\n")
    (root / "scripts" / "get_maintainer.pl").write_text(PERL_SLEEPER.format(marks=tmp_path / "marks"))
    run = Run(tmp_path, ["bulk", root, "--target", "mainline", "--out", tmp_path / "out", "-j", "3"])
    kill_leftovers(run)
    started = run.started(4)
    run.end(signal.SIGTERM)
    run.assert_nothing_left(pids(run.marks) or started)


@pytest.mark.skipif(shutil.which("perl") is None or shutil.which("patch") is None,
                    reason="bulk --verify runs perl and patch before make")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=sig_name)
def test_a_signal_ends_the_build_of_bulk_verify(tmp_path, kill_leftovers, sig):
    root = _bulk_tree(tmp_path)
    sleeper(tmp_path / "bin" / "make", tmp_path / "marks")
    run = Run(tmp_path, ["bulk", root, "--target", "mainline", "--out", tmp_path / "out", "--verify", "-j", "1"])
    kill_leftovers(run)
    started = run.started()
    run.end(sig)
    run.assert_nothing_left(started)


def test_a_signal_ignored_by_the_parent_stays_ignored(tmp_path, kill_leftovers):
    """nohup: SIGHUP ignored when wqlint starts changes nothing; SIGTERM still ends it all."""
    def nohup():
        at_default()
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    root = tiny_tree(tmp_path)
    sleeper(tmp_path / "bin" / "rg", tmp_path / "marks")
    run = Run(tmp_path, ["scan", root], preexec=nohup)
    kill_leftovers(run)
    started = run.started()
    run.proc.send_signal(signal.SIGHUP)
    time.sleep(1)
    assert run.proc.poll() is None and not any(gone(pid) for pid in started)
    run.end(signal.SIGTERM)
    run.assert_nothing_left(started)
