"""A preprocessed translation unit and where each of its lines came from.

cpp's `# N "file"` markers lead each line of the unit back to the file and line it was written
at; with -dD, each #define and #undef stays where it was, so the definition of a macro live at
a use, and each CONFIG_ option of the build, can be read from the unit.
"""
from __future__ import annotations

import bisect
import re

_MARKER = re.compile(r'\n# (\d+) "([^"\\\n]*(?:\\.[^"\\\n]*)*)"[^\n]*')
_NEXT_MARKER = re.compile(r'\n# \d+ "')
_DEFINED_NAME = re.compile(r"\n#define ([A-Za-z_]\w*)")
_DIRECTIVE = re.compile(r"\n#[^\n]*")


_ESCAPE = re.compile(r"\\([0-7]{1,3}|.)", re.S)
_C_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def _unquote(quoted: str) -> str:
    """A file name as cpp's line markers quote it (backslash, double quote, and a newline as
    \\n; octal for other bytes)."""
    def one(m):
        c = m.group(1)
        if c[0] in "01234567":
            return chr(int(c, 8))
        return _C_ESCAPES.get(c, c)
    return _ESCAPE.sub(one, quoted)


def _quote(name: str) -> str:
    return name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Unit:
    """A preprocessed translation unit: the code the scanner reads (line markers and
    directives blanked, so that line numbers do not move) and, for each of its lines, the
    (file, line) it came from."""

    def __init__(self, text: str, directives: bool = True):
        self.raw = "\n" + text  # every directive, the first one too, follows a newline
        self.directives = directives
        self._markers: bool | None = None
        self._spans_for: dict = {}  # file predicate -> [(first original line, first, last unit line)]
        self._names: set[str] | None = None  # the names the unit #defines somewhere

    @property
    def code(self) -> str:
        return _DIRECTIVE.sub("\n", self.raw)[1:]

    def _parse_markers(self) -> None:
        if self._markers is not None:
            return
        self._markers = True
        raw = self.raw
        hits = [(m.start(), m.end(), m.group(1), m.group(2)) for m in _MARKER.finditer(raw)]
        self._mline = []  # each marker's own line in the unit (1-based)
        count, pos, newlines = 0, 0, raw.count
        for start, _, _, _ in hits:
            count += newlines("\n", pos, start + 1)
            pos = start + 1
            self._mline.append(count)
        self._mpos = [h[1] for h in hits]
        self._morig = [int(h[2]) for h in hits]
        self._mfile = [h[3] if "\\" not in h[3] else _unquote(h[3]) for h in hits]
        self._nlines = raw.count("\n")

    def files(self) -> list:
        self._parse_markers()
        return self._mfile

    def own_text(self, name: str) -> str:
        """The unit's text that came from the file cpp was given as name (the checked file):
        found by its markers alone, without parsing the others."""
        quoted = _quote(name)
        parts = []
        for m in re.finditer(r'\n# \d+ "' + re.escape(quoted) + r'"[^\n]*', self.raw):
            nxt = _NEXT_MARKER.search(self.raw, m.end())
            parts.append(self.raw[m.end():nxt.start() if nxt else len(self.raw)])
        return "".join(parts)

    def where(self, n: int):
        """(file, line) unit line n came from; None for a marker line."""
        self._parse_markers()
        i = bisect.bisect_right(self._mline, n) - 1
        if i < 0 or self._mline[i] == n:
            return None
        return self._mfile[i], self._morig[i] + (n - self._mline[i] - 1)

    def lines_of(self, is_file, line: int) -> list:
        """The unit lines that came from line of a file for which is_file(name) holds."""
        self._parse_markers()
        spans = self._spans_for.get(is_file)
        if spans is None:
            names = {n for n in set(self._mfile) if is_file(n)}
            mline, mfile, morig = self._mline, self._mfile, self._morig
            spans = []
            for i, name in enumerate(mfile):
                if name in names:
                    last = mline[i + 1] - 1 if i + 1 < len(mline) else self._nlines
                    if last > mline[i]:
                        spans.append((morig[i], mline[i] + 1, last))
            self._spans_for[is_file] = spans
        return [first + line - orig for orig, first, last in spans if orig <= line <= orig + (last - first)]

    def _pos_of_line(self, n: int) -> int:
        """Offset in raw of the newline that starts unit line n."""
        self._parse_markers()
        i = bisect.bisect_right(self._mline, n) - 1
        if i < 0:
            pos, k = 0, n - 1
        else:
            pos, k = self._mpos[i], n - self._mline[i] - 1
        while k > 0 and pos >= 0:
            pos = self.raw.find("\n", pos + 1)
            k -= 1
        return pos if pos >= 0 else len(self.raw)

    def _line_of_pos(self, pos: int) -> int:
        """The unit line whose starting newline is at offset pos of raw."""
        self._parse_markers()
        i = bisect.bisect_right(self._mpos, pos) - 1
        if i < 0:
            return self.raw.count("\n", 0, pos + 1)
        return self._mline[i] + self.raw.count("\n", self._mpos[i], pos + 1)

    def _last(self, directive: str, name: str, limit: int) -> int:
        """Offset of the last `#directive name` before limit, or -1."""
        needle = f"\n#{directive} {name}"
        at = self.raw.rfind(needle, 0, limit)
        while at >= 0:
            nxt = self.raw[at + len(needle):at + len(needle) + 1]
            if nxt in ("", " ", "(", "\n"):
                return at
            at = self.raw.rfind(needle, 0, at)
        return -1

    def defines(self, name: str) -> bool:
        """Does the unit #define name anywhere? Most names on a line are not macros: one pass
        over the unit lists the names it defines, and only those are looked for."""
        if self._names is None:
            self._names = set(_DEFINED_NAME.findall(self.raw))
        return name in self._names

    def definitions(self, wanted: dict) -> dict:
        """{name: (unit line, body)} of the macros in wanted ({name: unit line of the use})
        that are defined there."""
        out = {}
        for name, before in wanted.items():
            got = self.definition(name, before)
            if got is not None:
                out[name] = got
        return out

    def definition(self, name: str, before: int = 0):
        """(unit line, body) of the definition of macro name live at unit line `before` (at
        the end of the unit when 0), or None when it is not a macro there. cpp -dD leaves each
        #define and #undef where it was: the last one before the use decides."""
        if not self.defines(name):
            return None
        limit = self._pos_of_line(before) if before else len(self.raw)
        at = self._last("define", name, limit)
        if at < 0 or self._last("undef", name, limit) > at:
            return None
        end = self.raw.find("\n", at + 1)
        body = self.raw[at + len("\n#define ") + len(name):end if end >= 0 else len(self.raw)]
        return self._line_of_pos(at), body

    def config(self, name: str) -> str:
        """'NAME=y', 'NAME=m', 'NAME=value' or 'NAME not set', as this build has it."""
        base = name[:-len("_MODULE")] if name.endswith("_MODULE") else name
        got = self.definition(base)
        if got is not None:
            body = got[1].strip()
            return f"{base}={'y' if body == '1' else body}"
        if self.definition(base + "_MODULE") is not None:
            return f"{base}=m"
        return f"{base} not set"

