"""Where a command's time and memory go, phase by phase (`--phases FILE` of scan and review).

PHASES are the parts of a scan: setup (everything not in another phase: the catalogue and the
tree's configuration, its files walked and compared with the index, the kernel's API header
and version, the index read and kept), search (the searches of the tree, ripgrep or grep, and
the reading of their output: scan.index, scan.subtext), description (the tree-wide
description of tables of functions and exported functions read: scan.description), resolution (the
allocation sites and the uses of system queues, scan.sites, scan.uses), work model (the work
items reaching a flush and the works waiting for themselves, scan.work, scan.selfwait),
judging (the rules, wqlint.checks.judge) and output (the report formatted and written).

Each second is counted once, in the innermost phase open: a search asked for by the work
model is the search's, not the model's, so the phases add up to the whole. Only the thread
and the process that started recording are followed; what another thread does (the scan of
the tree before a review's series, run beside the one after it) is counted where the
recording thread is at the time, in wall time as in CPU time, which is the process's.

Nothing is recorded unless record() was called: phase() and timed() are then a test of one
global, no clock is read.
"""
from __future__ import annotations

import functools
import os
import resource
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, TypeVar

PHASES = ("setup", "search", "description", "resolution", "work model", "judging", "output")
BASE = "setup"  # where the time outside every other phase goes

F = TypeVar("F", bound=Callable[..., Any])


def _cpu() -> float:
    """User + system seconds of the process and of the programs it ran and waited for
    (ripgrep, grep): RUSAGE_SELF + RUSAGE_CHILDREN."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def _peak_kib() -> int:
    """The process's largest resident size so far, KiB (Linux's ru_maxrss)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


class Recorder:
    """The phases of one command, as they are entered and left."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.pid = os.getpid()
        self.wall = dict.fromkeys(PHASES, 0.0)
        self.cpu = dict.fromkeys(PHASES, 0.0)
        self.peak = dict.fromkeys(PHASES, 0)  # KiB when the phase was last left
        self.entered = dict.fromkeys(PHASES, 0)
        self.stack = [BASE]
        self.started = self.mark = time.perf_counter()
        self.cpu_started = self.cpu_mark = _cpu()

    def ours(self) -> bool:
        return threading.get_ident() == self.thread and os.getpid() == self.pid

    def _charge(self) -> None:
        """What passed since the last mark goes to the innermost phase open."""
        now, cpu = time.perf_counter(), _cpu()
        top = self.stack[-1]
        self.wall[top] += now - self.mark
        self.cpu[top] += cpu - self.cpu_mark
        self.mark, self.cpu_mark = now, cpu

    def enter(self, name: str) -> None:
        if name not in self.wall:
            raise ValueError(f"unknown phase {name!r} (known: {', '.join(PHASES)})")
        self._charge()
        self.stack.append(name)
        self.entered[name] += 1

    def leave(self) -> None:
        self._charge()
        name = self.stack.pop()
        self.peak[name] = _peak_kib()

    def figures(self) -> dict:
        """The phases and the whole so far, as the --phases file holds them."""
        self._charge()
        self.peak[self.stack[-1]] = _peak_kib()
        return {
            "phases": [{"name": n, "wall_s": round(self.wall[n], 6), "cpu_s": round(self.cpu[n], 6),
                        "peak_rss_kib": self.peak[n], "entered": self.entered[n]} for n in PHASES],
            "total": {"wall_s": round(self.mark - self.started, 6), "cpu_s": round(self.cpu_mark - self.cpu_started, 6),
                      "peak_rss_kib": _peak_kib()},
            "cpu": "user+sys of the process and of the programs it ran and waited for (RUSAGE_SELF + RUSAGE_CHILDREN)",
        }


_current: Optional[Recorder] = None


def record() -> Recorder:
    """Start recording the phases of this process (its calling thread)."""
    global _current
    _current = Recorder()
    return _current


def stop() -> Optional[Recorder]:
    """Stop recording; the recorder, if one was recording."""
    global _current
    rec, _current = _current, None
    return rec


@contextmanager
def phase(name: str) -> Iterator[None]:
    """The block's time and memory counted in phase name (one of PHASES)."""
    rec = _current
    if rec is None or not rec.ours():
        yield
        return
    rec.enter(name)
    try:
        yield
    finally:
        rec.leave()


def timed(name: str) -> Callable[[F], F]:
    """A function whose calls are counted in phase name (phase() around each call)."""
    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def run(*args, **kwargs):
            if _current is None:
                return fn(*args, **kwargs)
            with phase(name):
                return fn(*args, **kwargs)
        return run  # type: ignore[return-value]
    return wrap
