"""The package passes ruff and mypy (rules and settings in pyproject.toml), run with every test
run so that a landing that breaks them is seen before it lands."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
MYPY = shutil.which("mypy", path=str(Path(sys.executable).parent)) or shutil.which("mypy")


@pytest.mark.skipif(RUFF is None, reason="ruff missing: scripts/setup installs the test extra")
def test_ruff_is_clean_on_the_package():
    got = subprocess.run([RUFF, "check", "--no-cache", "--output-format", "concise", "linter/wqlint"],
                         cwd=REPO, capture_output=True, text=True)
    assert got.returncode == 0, got.stdout + got.stderr


@pytest.mark.skipif(MYPY is None, reason="mypy missing: scripts/setup installs the test extra")
def test_mypy_is_clean_on_the_package():
    # The files and settings are pyproject's [tool.mypy]; the packages are this interpreter's
    # (tree-sitter's own types, the PyYAML stubs), whichever mypy was found. No cache: the
    # verdict is the one a fresh machine gives, and nothing is written into the repository.
    got = subprocess.run([MYPY, "--cache-dir", os.devnull, "--python-executable", sys.executable],
                         cwd=REPO, capture_output=True, text=True)
    errors = [line for line in got.stdout.splitlines() if ": error:" in line]
    assert got.returncode == 0 and not errors, got.stdout + got.stderr
