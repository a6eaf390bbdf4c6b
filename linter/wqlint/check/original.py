"""The original sources, read on demand: their lines, and the #if groups around each line."""
from __future__ import annotations

import re

from wqlint import safeio

_PP_COND = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b(.*)$")


class Original:
    """The original sources, read on demand: their lines, and the #if around each line."""

    def __init__(self):
        self._lines = {}
        self._conds = {}

    def lines(self, path: str) -> list:
        if path not in self._lines:
            try:
                self._lines[path] = safeio.read_bytes(path, safeio.MAX_SOURCE_BYTES).decode(
                    "utf-8", "replace").split("\n")
            except safeio.InputRefused:
                self._lines[path] = []
        return self._lines[path]

    def line(self, path: str, n: int) -> str:
        lines = self.lines(path)
        return lines[n - 1] if 0 < n <= len(lines) else ""

    def conditionals(self, path: str, n: int) -> list:
        """The #if groups line n is inside, outermost first: [(line of the #if, [directive
        texts of the group up to the branch n is in])]."""
        events = self._conds.get(path)
        if events is None:
            events = []
            lines = self.lines(path)
            i = 0
            while i < len(lines):
                m = _PP_COND.match(lines[i])
                if m:
                    text, first = lines[i], i
                    while text.endswith("\\") and i + 1 < len(lines):
                        i += 1
                        text = text[:-1] + " " + lines[i].strip()
                    events.append((first + 1, m.group(1), " ".join(text.split())))
                i += 1
            self._conds[path] = events
        stack = []
        for ln, kind, text in events:
            if ln >= n:
                break
            if kind.startswith("if"):
                stack.append((ln, [text]))
            elif kind == "endif":
                if stack:
                    stack.pop()
            elif stack:
                stack[-1][1].append(text)
        return stack

