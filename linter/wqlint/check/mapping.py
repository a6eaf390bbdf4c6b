"""From the unit back to the original sources: lines, chain steps, values, and the name the
original line calls where the unit shows what it expands to.

After cpp a call is what its macros make of it: `create_workqueue(name)` is
`alloc_workqueue(...)` (v6.12), and on v6.17+ (fda6add92438) `alloc_workqueue(...)` itself is
`alloc_hooks(alloc_workqueue_noprof(...))`. The unit's line maps back to the line the call was
written on; the name written there is found among that line's macros as the unit defines them
(cpp -dD): the one whose expansion reaches the called function.
"""
from __future__ import annotations

import os
import re
from typing import NamedTuple

from wqlint.check import names

_IDENT = re.compile(r"[A-Za-z_]\w*")
MACRO_DEPTH = 6


class Written(NamedTuple):
    """The name an original line calls for a call of the unit."""

    name: str  # as written on the line
    col: int  # 1-based
    # The macros from the written name down to the API's entry point, each as (name, path and
    # line of its #define): the wrappers a scan of the sources sees.
    wrappers: tuple
    entry: str  # the API's entry point reached (alloc_workqueue), or the unit's called name


def same_file(name: str, target: str, cache: dict) -> bool:
    got = cache.get(name)
    if got is None:
        got = cache[name] = name == target or (
            not name.startswith("<") and os.path.basename(name) == os.path.basename(target)
            and os.path.realpath(name) == os.path.realpath(target))
    return got


def column(unit_line: str, col: int, original: str) -> int:
    """The column in the original line of the name the unit's line has at col."""
    m = _IDENT.match(unit_line, max(col - 1, 0))
    if m:
        found = re.search(r"\b" + re.escape(m.group(0)) + r"\b", original)
        if found:
            return found.start() + 1
    stripped = len(original) - len(original.lstrip())
    return stripped + 1


class Mapping:
    def __init__(self, unit, orig, file: str, unit_rel: str):
        self.unit = unit
        self.orig = orig  # original.Original
        self.file = file  # the checked file, as cpp was given it
        self.unit_rel = unit_rel  # the unit's path in the scan
        self._same: dict = {}
        self._mapped: dict = {}
        self._reach: dict = {}
        self._written: dict = {}

    def is_main(self, name: str) -> bool:
        return same_file(name, self.file, self._same)

    def back(self, rel: str, n: int):
        """(file, line) line n of rel came from, for a line of the unit; else None."""
        if rel != self.unit_rel:
            return None
        return self.unit.where(n)

    def step(self, step):
        from dataclasses import replace
        if step is None:
            return None
        at = self.back(step.path, step.line)
        if at is None:
            return step
        return replace(step, path=os.path.normpath(at[0]), line=at[1])

    def value(self, value):
        """value with every step of the unit pointing at the original file and line."""
        from wqlint.scan.values import Alt, Cond, fold, rebuilt

        def node(v, kids=()):
            if isinstance(v, Alt):
                return Alt(self.step(v.step), tuple(kids), v.why,
                           tuple(tuple(Cond(c.key, c.arm, self.step(c.step)) for c in g) for g in v.guards),
                           v.mark)
            return rebuilt(v, self.step(v.step), tuple(kids))
        # (a node met again, in this value or an earlier one, is mapped once: _mapped)
        return fold(value, node, node, self._mapped)

    # -- the name written on the original line --------------------------------------------------
    def written(self, path: str, line: int, unit_line: int, called: str) -> list:
        """Each name on the original line (path, line) whose use is a call of `called` on
        unit line unit_line: `called` itself, or a macro that expands to a call of it."""
        key = (path, line, unit_line, called)
        if key not in self._written:
            self._written[key] = self._find_written(path, line, unit_line, called)
        return self._written[key]

    def _find_written(self, path: str, line: int, unit_line: int, called: str) -> list:
        text = self.orig.line(path, line)
        out = []
        if re.search(r"\b" + re.escape(called) + r"\s*\(", text):
            # Written as the unit calls it (alloc_workqueue() up to v6.16, a wrapper
            # function): no macro on the line needs looking up.
            return [Written(called, m.start() + 1, (), called)
                    for m in re.finditer(r"\b" + re.escape(called) + r"\b", text)]
        for m in _IDENT.finditer(text):
            name = m.group(0)
            if name == called:
                out.append(Written(name, m.start() + 1, (), called))
                continue
            chain = self._reaches(name, called, unit_line, MACRO_DEPTH)
            if chain is not None:
                wrappers = []
                entry = called
                for i, (macro, at) in enumerate(chain):
                    if macro in names.ENTRY_POINTS:
                        entry = macro
                        break
                    inner = chain[i + 1][0] if i + 1 < len(chain) else called
                    wrappers.append((macro, self._calling(at, inner)))
                out.append(Written(name, m.start() + 1, tuple(wrappers), entry))
        return out

    def _calling(self, define, callee: str):
        """(path, line) of the line of a #define, continued over backslashes, that calls
        callee; the #define's own line when none does."""
        path, line = define
        lines = self.orig.lines(path)
        n = line
        while 0 < n <= len(lines):
            if re.search(r"\b" + re.escape(callee) + r"\s*\(", lines[n - 1]):
                return path, n
            if not lines[n - 1].rstrip().endswith("\\"):
                break
            n += 1
        return define

    def _reaches(self, name: str, called: str, before: int, depth: int):
        """[(macro, (path, line) of its #define)] from name down to a macro whose body calls
        `called`, following the definitions live at unit line before; None if it does not."""
        # Not keyed by the use: a macro defined again further down to expand otherwise is
        # not worth a search of the unit per line.
        key = (name, called)
        if key in self._reach:
            return self._reach[key]
        self._reach[key] = None  # a macro that names itself is not expanded again
        got = self.unit.definition(name, before) if depth > 0 else None
        found = None
        if got is not None:
            uline, body = got
            at = self.unit.where(uline)
            here = (os.path.normpath(at[0]), at[1]) if at else ("", 0)
            if re.search(r"\b" + re.escape(called) + r"\s*\(", body):
                found = [(name, here)]
            else:
                for inner in dict.fromkeys(_IDENT.findall(body)):
                    if inner == name:
                        continue
                    below = self._reaches(inner, called, before, depth - 1)
                    if below is not None:
                        found = [(name, here)] + below
                        break
        self._reach[key] = found
        return found
