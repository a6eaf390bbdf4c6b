"""Run wqlint as a user would, in a process of its own with a time limit and an address-space
limit (RLIMIT_AS): a test of hostile input then fails on a hang or on memory without bound,
instead of hanging the suite or the machine."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

# What a scan of a small tree needs, with room: Python, tree-sitter, the threads' stacks.
MEMORY_MIB = 1024
TIMEOUT = 90


def error_lines(stderr: str) -> list:
    return [ln for ln in stderr.splitlines() if ln.startswith("Error:")]


def bounded(args, env: dict | None = None, cwd=None, timeout: float = TIMEOUT, memory: int = MEMORY_MIB,
            stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """`wqlint ARGS` (env: variables to set, on top of the test's) within timeout seconds and
    memory MiB of address space; a run that takes longer fails the test, naming the command."""
    limit = memory * 1024 * 1024

    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    full = dict(os.environ, PYTHONPATH=str(REPO / "linter"),
                # glibc keeps an arena of 64 MiB of address space per thread: the limit is on
                # what is used, not on how many threads ran
                MALLOC_ARENA_MAX="2", **(env or {}))
    cmd = [sys.executable, "-m", "wqlint", *map(str, args)]
    try:
        got = subprocess.run(cmd, cwd=cwd, env=full, capture_output=True, text=True, errors="replace",
                             timeout=timeout, preexec_fn=limits, stdin=stdin)
    except subprocess.TimeoutExpired:
        pytest.fail(f"wqlint {' '.join(map(str, args))}: still running after {timeout} s")
    assert "Traceback" not in got.stderr, got.stderr
    assert "MemoryError" not in got.stderr, got.stderr
    return got


__all__ = ["Path", "bounded", "error_lines"]
