"""--phases FILE: where a scan's or a review's time and memory go, phase by phase. No timing
thresholds here: how fast a phase is, is scripts/bench's to say; these check the names, that the
phases add up to the whole, and how the file is written."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from conftest import FIXTURES, REPO
from helpers import run
from wqlint import safeio
from wqlint.scan import phases

DEMO = REPO / "examples" / "demo-tree"
NAMES = ["setup", "search", "description", "resolution", "work model", "judging", "output"]


def _adds_up(got: dict) -> None:
    assert [p["name"] for p in got["phases"]] == NAMES
    total = got["total"]
    assert total["wall_s"] > 0 and total["peak_rss_kib"] > 0
    # Each second is counted in one phase: the sum is the whole (rounding aside).
    assert abs(sum(p["wall_s"] for p in got["phases"]) - total["wall_s"]) <= 1e-3 + 0.01 * total["wall_s"]
    assert abs(sum(p["cpu_s"] for p in got["phases"]) - total["cpu_s"]) <= 1e-3 + 0.01 * total["cpu_s"]
    for p in got["phases"]:
        assert p["wall_s"] >= 0 and p["cpu_s"] >= 0 and 0 <= p["peak_rss_kib"] <= total["peak_rss_kib"]


def test_a_scan_reports_each_phase_and_they_add_up_to_the_whole(tmp_path):
    out = tmp_path / "phases.json"
    result = run("scan", DEMO, "--format", "json", "--no-cache", "-j", "1", "--phases", out)
    assert result.exit_code == 1, result.stderr
    got = json.loads(out.read_text())
    assert got["command"] == "scan"
    _adds_up(got)
    entered = {p["name"]: p["entered"] for p in got["phases"]}
    # The demo tree has allocations and work items: every phase is passed through.
    assert all(entered[n] > 0 for n in NAMES if n not in ("setup", "description")), entered
    assert phases.stop() is None  # nothing is recorded once the command is done


def test_a_review_reports_the_same_phases(tmp_path):
    out = tmp_path / "phases.json"
    here = FIXTURES / "review"
    result = run("review", "--tree", here / "tree", here / "add-queue.patch", "-j", "1", "--phases", out)
    assert result.exit_code in (0, 1), result.stderr
    got = json.loads(out.read_text())
    assert got["command"] == "review"
    _adds_up(got)


@pytest.mark.parametrize("option", ["--phases", "-o"])
def test_an_output_named_like_an_option_is_refused_before_any_work(tmp_path, monkeypatch, option):
    """`--phases --format json`: the option's value forgotten, '--format' taken as the file.
    It is refused (exit 2, one line naming it) and nothing is written; ./--format is a file."""
    monkeypatch.chdir(tmp_path)
    result = run("scan", DEMO, "--no-cache", option, "--format", "json")
    assert result.exit_code == 2
    assert "--format: reads as an option, not a file name" in result.stderr
    assert "Traceback" not in result.stderr and os.listdir(tmp_path) == []
    result = run("scan", DEMO, "--no-cache", "-j", "1", option, "./--format")
    assert result.exit_code == 1, result.stderr
    assert os.listdir(tmp_path) == ["--format"]


def test_a_search_inside_another_phase_is_the_search_s():
    """Nested phases: the time of the inner one is not the outer one's too."""
    rec = phases.record()
    try:
        with phases.phase("work model"):
            time.sleep(0.02)
            with phases.phase("search"):
                time.sleep(0.05)
    finally:
        assert phases.stop() is rec
    got = rec.figures()
    walls = {p["name"]: p["wall_s"] for p in got["phases"]}
    assert walls["search"] >= 0.05
    assert walls["work model"] < walls["search"]  # (0.02 s and a little, not 0.07)
    assert abs(sum(walls.values()) - got["total"]["wall_s"]) < 1e-3


def test_nothing_is_recorded_unless_asked():
    assert phases.stop() is None
    with phases.phase("search"):
        pass
    assert phases.timed("judging")(lambda x: x + 1)(1) == 2
    assert phases.stop() is None


def test_the_file_is_written_atomically(tmp_path, monkeypatch):
    """Through safeio.write_atomic, the one atomic writer: a file there is replaced whole
    (a new inode, renamed over it), nothing else is left in the directory."""
    out = tmp_path / "phases.json"
    out.write_text("old\n")
    before = os.stat(out).st_ino
    writes = []
    real = safeio.write_atomic
    monkeypatch.setattr(safeio, "write_atomic", lambda path, data, *a: (writes.append(str(path)), real(path, data, *a)))
    result = run("scan", DEMO / "fs" / "cryptfs", "--no-cache", "-j", "1", "--phases", out)
    assert result.exit_code == 1
    assert writes == [str(out)]
    assert os.stat(out).st_ino != before
    assert [p.name for p in tmp_path.iterdir()] == ["phases.json"]
    _adds_up(json.loads(out.read_text()))


@pytest.mark.parametrize("command", ["scan", "review"])
def test_a_bad_path_is_one_error_line_before_any_work(tmp_path, command):
    bad = tmp_path / "nowhere" / "phases.json"
    args = [str(DEMO)] if command == "scan" else ["--tree", str(FIXTURES / "review" / "tree"),
                                                  str(FIXTURES / "review" / "add-queue.patch")]
    got = subprocess.run([sys.executable, "-m", "wqlint", command, *args, "--phases", str(bad)],
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO / "linter")))
    assert got.returncode == 2
    assert "Traceback" not in got.stderr
    assert [ln for ln in got.stderr.splitlines() if ln.startswith("Error:")] == [
        f"Error: --phases {bad}: directory {bad.parent} does not exist"]
    assert got.stdout == "" and not bad.parent.exists()


def test_a_file_that_cannot_be_written_at_the_end_is_one_error_line(tmp_path, monkeypatch):
    out = tmp_path / "phases.json"

    def refused(path, data, *a):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(safeio, "write_atomic", refused)
    result = run("scan", DEMO / "fs" / "cryptfs", "--no-cache", "-j", "1", "--phases", out)
    assert result.exit_code == 3
    assert [ln for ln in result.stderr.splitlines() if ln.startswith("Error:")] == [
        f"Error: {out}: No space left on device"]


def test_the_description_is_its_own_phase(tmp_path):
    """Reading the tree's description is counted as `description`, nothing else is: a tree
    whose work reaches a flush through a table of functions in another subsystem reads it, the
    demo tree (whose works stay in their files) does not, and then the phase has no time."""
    from test_work import _tables_tree

    got = {}
    for name, tree in (("tables", _tables_tree(tmp_path)), ("demo", DEMO)):
        out = tmp_path / f"{name}.json"
        result = run("scan", tree, "--format", "json", "--no-cache", "-j", "1", "--phases", out)
        assert result.exit_code in (0, 1), result.stderr
        got[name] = {p["name"]: p for p in json.loads(out.read_text())["phases"]}
    assert got["tables"]["description"]["entered"] == 1 and got["tables"]["description"]["wall_s"] > 0
    assert got["demo"]["description"]["entered"] == 0 and got["demo"]["description"]["wall_s"] == 0
    assert got["demo"]["setup"]["entered"] == 0 and got["demo"]["setup"]["wall_s"] > 0


@pytest.mark.parametrize("command", ["scan", "review"])
def test_the_help_names_every_phase_the_file_holds(command):
    """`--help` lists the phases in the order the file gives them, setup first."""
    result = run(command, "--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert f"phase by phase ({', '.join(NAMES)}: wall" in text
