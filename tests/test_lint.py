"""The package passes ruff (rules in pyproject.toml), run with every test run so that a
landing that breaks it is seen before it lands."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")


@pytest.mark.skipif(RUFF is None, reason="ruff missing: scripts/setup installs the test extra")
def test_ruff_is_clean_on_the_package():
    got = subprocess.run([RUFF, "check", "--no-cache", "--output-format", "concise", "linter/wqlint"],
                         cwd=REPO, capture_output=True, text=True)
    assert got.returncode == 0, got.stdout + got.stderr
