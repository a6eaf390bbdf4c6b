"""fix judges every call again from the bytes it is about to edit: a saved finding, or one a
stale index gave, is a request, not a verdict; a file reached under two names is one file."""
from __future__ import annotations

import json
import os
from pathlib import Path

from helpers import run
from test_robust import tiny_tree

TWO_CALLS = """\
// SPDX-License-Identifier: GPL-2.0
#include <linux/workqueue.h>

static struct workqueue_struct *a, *b;

int demo_init(void)
{
\ta = alloc_workqueue("a", WQ_MEM_RECLAIM, 0);
\tb = alloc_workqueue("b", WQ_HIGHPRI, 0);
\treturn a && b ? 0 : -1;
}
"""

UNBOUND = """\
// SPDX-License-Identifier: GPL-2.0
#include <linux/workqueue.h>

static struct workqueue_struct *a, *u;

int demo_init(void)
{
\ta = alloc_workqueue("a", WQ_MEM_RECLAIM, 0);
\tu = alloc_workqueue("u", WQ_UNBOUND, 0);
\treturn a && u ? 0 : -1;
}
"""


def _tree(tmp_path: Path, text: str) -> Path:
    root = tiny_tree(tmp_path)
    (root / "drivers/demo/demo.c").write_text(text)
    return root


def _saved(tmp_path: Path, root: Path) -> tuple:
    saved = tmp_path / "scan.json"
    got = run("scan", root, "--format", "json", "--no-cache", "-o", saved)
    assert got.exit_code == 1, got.stderr
    return saved, json.loads(saved.read_text())


def test_one_file_under_two_names_gets_both_fixes(tmp_path):
    """demo.c and link.c (a link to it in the tree): a finding saved under each name; both
    calls are fixed, in the one file, and the count says so."""
    root = _tree(tmp_path, TWO_CALLS)
    saved, doc = _saved(tmp_path, root)
    (root / "drivers/demo/link.c").symlink_to("demo.c")
    found = [f for f in doc["findings"] if f["rule"] == "missing-affinity-flag"]
    assert [f["line"] for f in found] == [8, 9]
    found[1]["path"] = "drivers/demo/link.c"
    doc["findings"] = found
    saved.write_text(json.dumps(doc))
    got = run("fix", root, "--target", "mainline", "--findings", saved, "--apply")
    assert got.exit_code == 0, got.stderr
    text = (root / "drivers/demo/demo.c").read_text()
    assert '\ta = alloc_workqueue("a", WQ_MEM_RECLAIM | WQ_PERCPU, 0);' in text
    assert '\tb = alloc_workqueue("b", WQ_HIGHPRI | WQ_PERCPU, 0);' in text
    assert (root / "drivers/demo/link.c").is_symlink()
    assert got.stderr.splitlines()[-1].startswith("wqlint: 2 finding(s) fixed in 1 file(s)")


def test_a_saved_finding_moved_onto_another_call_is_not_made(tmp_path):
    """A missing-affinity-flag finding moved onto a WQ_UNBOUND call, with that call's valid
    hash: the call is judged again, has its flag, and is left alone."""
    from wqlint.scan.source import SourceFile, call_digest

    root = _tree(tmp_path, UNBOUND)
    saved, doc = _saved(tmp_path, root)
    [f] = [f for f in doc["findings"] if f["rule"] == "missing-affinity-flag"]
    assert f["line"] == 8
    data = (root / "drivers/demo/demo.c").read_bytes()
    f["line"] = 9
    f["call_sha256"] = call_digest(SourceFile("drivers/demo/demo.c", data), 9, f["column"])
    assert f["call_sha256"]
    doc["findings"] = [f]
    saved.write_text(json.dumps(doc))
    got = run("fix", root, "--target", "mainline", "--findings", saved, "--apply")
    assert got.exit_code == 0, got.stderr
    assert (root / "drivers/demo/demo.c").read_bytes() == data
    assert "WQ_UNBOUND | WQ_PERCPU" not in (root / "drivers/demo/demo.c").read_text()
    assert got.stderr.splitlines()[-3:] == [
        "not fixed [missing-affinity-flag] (1): not found again in the file as it is now (judged afresh "
        "from its bytes): scan again",
        "  drivers/demo/demo.c:9:6",
        "wqlint: 0 finding(s) fixed in 0 file(s) (target mainline, v6.12); 1 not fixed"]


def test_a_same_size_edit_that_keeps_the_mtime_is_not_fixed_twice(tmp_path):
    """The index's answer for a file edited since without a change of size or mtime: fix
    judges the bytes it edits, so the flag the edit added is not added again."""
    root = _tree(tmp_path, UNBOUND)
    path = root / "drivers/demo/demo.c"
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    assert run("scan", root, env=env).exit_code == 1  # the index now holds the file
    st = os.stat(path)
    text = path.read_text()
    edited = text.replace('alloc_workqueue("a", WQ_MEM_RECLAIM, 0)', 'alloc_workqueue("a", WQ_PERCPU,      0)')
    assert len(edited) == len(text) and edited != text
    path.write_text(edited)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    got = run("fix", root, "--target", "mainline", "--apply", env=env)
    assert got.exit_code == 0, got.stderr
    assert path.read_text() == edited
    assert "WQ_PERCPU | WQ_PERCPU" not in path.read_text()


def _counting_rejudge(monkeypatch) -> list:
    """The calls fix makes of plan.rejudge() (each judges files again), recorded."""
    from wqlint.fix import plan

    calls: list = []
    real = plan.rejudge

    def counted(root, catalogue, version, contents, options):
        calls.append(sorted(contents))
        return real(root, catalogue, version, contents, options)

    monkeypatch.setattr(plan, "rejudge", counted)
    return calls


def test_the_findings_of_the_scan_fix_just_made_are_not_judged_twice(tmp_path, monkeypatch):
    """With the index and without: the scan judged the bytes fix edits, so fix does not judge
    them again (on a whole tree that second judging cost as much as the scan)."""
    for cache in ("--cache", "--no-cache"):
        root = _tree(tmp_path / cache, TWO_CALLS)
        calls = _counting_rejudge(monkeypatch)
        got = run("fix", root, "--target", "mainline", cache, "--apply")
        assert got.exit_code == 0, got.stderr
        assert calls == []
        text = (root / "drivers/demo/demo.c").read_text()
        assert '\ta = alloc_workqueue("a", WQ_MEM_RECLAIM | WQ_PERCPU, 0);' in text
        assert '\tb = alloc_workqueue("b", WQ_HIGHPRI | WQ_PERCPU, 0);' in text


def test_a_file_changed_after_the_scan_is_judged_again(tmp_path, monkeypatch):
    """The file gets its flag on one call between fix's scan and its plan: with the index's
    digests and without, fix judges the file again and fixes only the other call."""
    from wqlint import lint

    real = lint.run
    for cache in ("--cache", "--no-cache"):
        root = _tree(tmp_path / cache, TWO_CALLS)
        path = root / "drivers/demo/demo.c"

        def scan_then_edit(*args, path=path, **kw):
            got = real(*args, **kw)
            path.write_text(TWO_CALLS.replace("WQ_MEM_RECLAIM, 0", "WQ_MEM_RECLAIM | WQ_PERCPU, 0"))
            return got

        monkeypatch.setattr(lint, "run", scan_then_edit)
        calls = _counting_rejudge(monkeypatch)
        got = run("fix", root, "--target", "mainline", cache, "--apply")
        assert got.exit_code == 0, got.stderr
        assert calls == [["drivers/demo/demo.c"]]
        text = path.read_text()
        assert '\ta = alloc_workqueue("a", WQ_MEM_RECLAIM | WQ_PERCPU, 0);' in text
        assert '\tb = alloc_workqueue("b", WQ_HIGHPRI | WQ_PERCPU, 0);' in text
        assert got.stderr.splitlines()[-1].startswith("wqlint: 1 finding(s) fixed in 1 file(s)")


def test_a_scan_that_does_not_say_what_it_read_is_judged_again(tmp_path, monkeypatch):
    """A scan's findings stand as fix's judgement only where it says which bytes it judged: a
    result made without that (lint.Linted's default) has fix judge the files again, and fix
    still fixes both calls."""
    from wqlint import lint

    real = lint.run
    monkeypatch.setattr(lint, "run", lambda *a, **kw: (lambda got: lint.Linted(got.report, got.config,
                                                                              got.config_error))(real(*a, **kw)))
    root = _tree(tmp_path, TWO_CALLS)
    calls = _counting_rejudge(monkeypatch)
    got = run("fix", root, "--target", "mainline", "--apply")
    assert got.exit_code == 0, got.stderr
    assert calls == [["drivers/demo/demo.c"]]
    text = (root / "drivers/demo/demo.c").read_text()
    assert '\ta = alloc_workqueue("a", WQ_MEM_RECLAIM | WQ_PERCPU, 0);' in text
    assert '\tb = alloc_workqueue("b", WQ_HIGHPRI | WQ_PERCPU, 0);' in text
