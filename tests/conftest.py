"""Shared test fixtures.

Tests marked ``kernel`` need a real kernel tree: Debian's linux-source-6.12, -6.1, -7.2 and
-7.3, unpacked once into $WQLINT_CACHE (default ~/.cache/wqlint) and reused.
scripts/kernel-source finds each package's tarball (installing nothing: 6.12 and 6.1 come from
scripts/setup, 7.2 and 7.3 are fetched from sid and trixie-backports through a private apt
configuration in the cache); a quick local run skips these tests with ``-m 'not kernel'``; CI
runs them all.
"""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
RULES = Path(__file__).resolve().parent / "rules"  # each rule's fixture: <rule-id>.c (tests/test_fixtures.py)
CACHE = Path(os.environ.get("WQLINT_CACHE", Path.home() / ".cache" / "wqlint"))
# The SARIF 2.1.0 schema, in the shared folder that sits beside the checkout (or beside the
# folder of worktrees a checkout may be one of).
SARIF_SCHEMA = next((p / "shared" / "schemas" / "sarif-schema-2.1.0.json" for p in (REPO.parent, REPO.parent.parent)
                     if (p / "shared" / "schemas" / "sarif-schema-2.1.0.json").is_file()),
                    REPO.parent / "shared" / "schemas" / "sarif-schema-2.1.0.json")


_ALONE: dict = {}


def rule_fixture(name: str) -> Path:
    """tests/rules/NAME, copied once into a directory of its own: a scan of one file searches
    its directory (the fields assigned, the functions defined), where the other rules'
    fixtures and the fix twins would answer too. Findings name it as a scan of the original
    does (by its name)."""
    got = _ALONE.get(name)
    if got is None:
        directory = tempfile.mkdtemp(prefix="wqlint-rule-")
        atexit.register(shutil.rmtree, directory, True)
        got = _ALONE[name] = Path(directory) / name
        shutil.copyfile(RULES / name, got)
    return got


@pytest.fixture(autouse=True)
def _own_cache_home(tmp_path_factory, monkeypatch):
    """wqlint keeps a per-tree index in $XDG_CACHE_HOME/wqlint (wqlint.scan.store), on by
    default: each test gets a cache directory of its own, so tests neither read nor fill the
    user's, and no test sees an index another one left."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


def unpacked_kernel(series: str) -> Path:
    """The tree of Debian's linux-source-SERIES, unpacked once into the cache."""
    tree = CACHE / "trees" / f"linux-source-{series}"
    if (tree / "Makefile").is_file() and (tree / ".wqlint-unpacked").is_file():
        return tree
    found = subprocess.run([str(REPO / "scripts" / "kernel-source"), series],
                           capture_output=True, text=True)
    tarball = Path(found.stdout.strip())
    if found.returncode or not tarball.is_file():
        pytest.fail(f"linux-source-{series}: {found.stderr.strip() or 'no tarball'}")
    tree.parent.mkdir(parents=True, exist_ok=True)
    tmp = tree.parent / f".unpack-{series}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    subprocess.run(["tar", "-xJf", str(tarball), "-C", str(tmp)], check=True)
    shutil.rmtree(tree, ignore_errors=True)
    (tmp / f"linux-source-{series}").rename(tree)
    tmp.rmdir()
    (tree / ".wqlint-unpacked").write_text("unpacked from " + str(tarball) + "\n")
    return tree


def debian_module(package: str) -> Path:
    """The source of the out-of-tree module Debian's PACKAGE (a *-dkms) carries in usr/src/,
    unpacked once into the cache by scripts/debian-package."""
    found = subprocess.run([str(REPO / "scripts" / "debian-package"), package], capture_output=True, text=True)
    sources = sorted(Path(found.stdout.strip() or "/nonexistent", "usr", "src").glob("*/"))
    if found.returncode or len(sources) != 1:
        pytest.fail(f"{package}: {found.stderr.strip() or 'not one directory in usr/src'}")
    return sources[0]


@pytest.fixture(scope="session")
def linux_6_12() -> Path:
    return unpacked_kernel("6.12")


@pytest.fixture(scope="session")
def linux_6_1() -> Path:
    return unpacked_kernel("6.1")


@pytest.fixture(scope="session")
def linux_7_3() -> Path:
    return unpacked_kernel("7.3")


@pytest.fixture(scope="session")
def linux_7_2() -> Path:
    return unpacked_kernel("7.2")


@pytest.fixture(scope="session")
def whole_scan(tmp_path_factory):
    """whole_scan(series) -> (the JSON text of `wqlint scan --format json --jobs 2` of the
    whole linux-source-SERIES tree, the cache directory ($XDG_CACHE_HOME) whose index that
    scan built): one whole-tree scan per tree, shared by the tests that need one."""
    from helpers import run
    done: dict = {}

    def scan(series: str) -> tuple:
        if series not in done:
            xdg = tmp_path_factory.mktemp(f"xdg-{series}")
            result = run("scan", "--format", "json", "--jobs", "2", unpacked_kernel(series),
                         env={"XDG_CACHE_HOME": str(xdg)})
            assert result.exit_code == 1, result.stderr[-2000:]
            done[series] = (result.stdout, xdg)
        return done[series]
    return scan


@pytest.fixture(scope="session")
def linux_6_12_scan(whole_scan):
    """whole_scan("6.12")."""
    return whole_scan("6.12")
