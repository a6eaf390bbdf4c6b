"""A POSIX extended regular expression (what bash's `=~` takes, and so dkms's
BUILD_EXCLUSIVE_KERNEL) searched in time linear in the text, whatever the pattern.

Python's re backtracks: `(.*.*.*.*.*)*Z` takes time exponential in the text it is tried on.
Here the pattern becomes a Thompson automaton and the text is read once, through every state
the automaton may be in at each character (the sets are remembered, as a lazy DFA does):
no pattern costs more than len(text) x its size. Backreferences and look-arounds, which no
such automaton can follow, and Python's other `(?` forms are refused, as is a pattern
larger than the bounds below (Pattern.error, with the reason).

Beyond POSIX, the escapes a pattern written for Python's re may use are read as re does:
`\\d \\w \\s` (and `\\D \\W \\S`), `(?:...)`, a lazy `*?` (the same for a search).
"""
from __future__ import annotations

from typing import Optional

from wqlint.errors import WqlintError

MAX_LENGTH = 1024  # characters of a pattern (so the parser's nesting is bounded too)
MAX_STATES = 1024  # instructions once {m,n} is written out
MAX_REPEAT = 255  # RE_DUP_MAX
MAX_NESTING = 64  # groups within groups
MAX_CACHED = 4096  # state sets remembered before starting afresh

_CLASSES = {
    "alpha": str.isalpha, "digit": lambda c: "0" <= c <= "9", "alnum": str.isalnum,
    "upper": str.isupper, "lower": str.islower, "space": str.isspace,
    "xdigit": lambda c: c in "0123456789abcdefABCDEF", "punct": lambda c: c.isprintable()
    and not c.isalnum() and not c.isspace(), "print": str.isprintable,
    "blank": lambda c: c in " \t", "cntrl": lambda c: ord(c) < 32 or ord(c) == 127,
    "graph": lambda c: c.isprintable() and not c.isspace(),
}
_ESCAPES = {"d": "digit", "s": "space", "w": "alnum"}

# instructions: (op, arg); CHAR consumes a character its test accepts, SPLIT goes on at both
# targets, JMP at its target, BOL/EOL hold only at the start/end of the text.
CHAR, SPLIT, JMP, BOL, EOL, MATCH = range(6)


class PatternError(WqlintError):
    """A pattern that is not a valid ERE, or not one this matcher follows."""


class _Set:
    """A bracket expression or an escape: the characters, ranges and classes it accepts."""

    def __init__(self, chars: str = "", ranges: tuple = (), classes: tuple = (), negated: bool = False):
        self.chars, self.ranges, self.classes, self.negated = frozenset(chars), ranges, classes, negated

    def __call__(self, c: str) -> bool:
        got = c in self.chars or any(lo <= c <= hi for lo, hi in self.ranges) or \
            any(_CLASSES[k](c) for k in self.classes)
        return got != self.negated


class _Parser:
    """Pattern text -> tree: ("alt", [seq...]), ("seq", [node...]), ("rep", node, lo, hi|None),
    ("char", test), ("bol",), ("eol",)."""

    def __init__(self, text: str):
        self.s, self.i, self.depth = text, 0, 0

    def fail(self, why: str):
        raise PatternError(f"{why} at offset {self.i}")

    def peek(self) -> Optional[str]:
        return self.s[self.i] if self.i < len(self.s) else None

    def alt(self) -> tuple:
        branches = [self.seq()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.seq())
        return ("alt", branches)

    def seq(self) -> tuple:
        items: list = []
        while self.peek() not in (None, "|", ")"):
            atom = self.atom()
            for _ in range(4):
                bound = self.quantifier()
                if bound is None:
                    break
                if atom[0] in ("bol", "eol"):
                    self.fail("a repeated anchor")
                atom = ("rep", atom, *bound)
                if self.peek() == "?":  # lazy, as for re: for a search, the same
                    self.i += 1
                elif self.peek() == "+":
                    self.fail("a possessive repeat")
            else:
                self.fail("a repeat of a repeat of a repeat...")
            items.append(atom)
        return ("seq", items)

    def quantifier(self) -> Optional[tuple]:
        c = self.peek()
        if c in ("*", "+", "?"):
            self.i += 1
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        if c == "{":
            close = self.s.find("}", self.i)
            body = self.s[self.i + 1:close] if close > 0 else ""
            lo, comma, hi = body.partition(",")
            if not (lo.isdigit() or (comma and not lo)) or (hi and not hi.isdigit()):
                return None  # a literal brace, as for re
            low = int(lo or 0)
            high = (int(hi) if hi else None) if comma else low
            if low > MAX_REPEAT or (high is not None and (high > MAX_REPEAT or high < low)):
                self.fail("a bound over 255 or reversed")
            self.i = close + 1
            return (low, high)
        return None

    def atom(self) -> tuple:
        c = self.s[self.i]
        self.i += 1
        if c == "(":
            if self.s.startswith("?:", self.i):
                self.i += 2
            elif self.peek() == "?":
                self.fail("a (? form")
            self.depth += 1
            if self.depth > MAX_NESTING:
                self.fail(f"more than {MAX_NESTING} groups within groups")
            inner = self.alt()
            if self.peek() != ")":
                self.fail("an unclosed (")
            self.i += 1
            self.depth -= 1
            return inner
        if c in "*+?":
            self.fail("nothing to repeat")
        if c == "^":
            return ("bol",)
        if c == "$":
            return ("eol",)
        if c == ".":
            return ("char", _Set(negated=True))
        if c == "[":
            return ("char", self.bracket())
        if c == "\\":
            return ("char", self.escape())
        return ("char", _Set(c))

    def escape(self) -> _Set:
        c = self.peek()
        if c is None:
            self.fail("a trailing backslash")
        assert c is not None
        self.i += 1
        if c.lower() in _ESCAPES:
            extra = "_" if c.lower() == "w" else ""
            return _Set(extra, classes=(_ESCAPES[c.lower()],), negated=c.isupper())
        if c.isalnum():
            self.fail(f"\\{c} (a backreference or an escape this matcher does not follow)")
        return _Set(c)

    def bracket(self) -> _Set:
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        chars: list = []
        ranges: list = []
        classes: list = []
        first = True
        while True:
            c = self.peek()
            if c is None:
                self.fail("an unclosed [")
            assert c is not None
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if self.s.startswith("[:", self.i):
                end = self.s.find(":]", self.i + 2)
                name = self.s[self.i + 2:end] if end > 0 else ""
                if name not in _CLASSES:
                    self.fail("an unknown [:class:]")
                classes.append(name)
                self.i = end + 2
                continue
            self.i += 1
            if c == "\\" and self.peek() is not None:  # as re reads it (POSIX: a backslash)
                d = self.s[self.i]
                self.i += 1
                if d.lower() in _ESCAPES:
                    if d.isupper():
                        self.fail(f"\\{d} in a bracket expression")
                    classes.append(_ESCAPES[d.lower()])
                    chars.extend("_" if d.lower() == "w" else "")
                    continue
                c = d
            if self.s.startswith("-", self.i) and self.s[self.i + 1:self.i + 2] not in ("]", ""):
                hi = self.s[self.i + 1]
                if hi == "\\" and self.i + 2 < len(self.s):
                    hi = self.s[self.i + 2]
                    self.i += 1
                self.i += 2
                if hi < c:
                    self.fail("a reversed range")
                ranges.append((c, hi))
            else:
                chars.append(c)
        return _Set("".join(chars), tuple(ranges), tuple(classes), negated)


def _size(node: tuple) -> int:
    """How many instructions node compiles to (at most MAX_STATES + 1: past it, it is refused)."""
    kind = node[0]
    if kind == "alt":
        got = sum(_size(b) for b in node[1]) + 2 * (len(node[1]) - 1)
    elif kind == "seq":
        got = sum(_size(n) for n in node[1])
    elif kind == "rep":
        _, inner, lo, hi = node
        one = _size(inner)
        got = lo * one + ((hi - lo) * (one + 1) if hi is not None else one + 2)
    else:
        got = 1
    return min(got, MAX_STATES + 1)


class _Compiler:
    def __init__(self):
        self.prog: list = []

    def emit(self, op: int, arg=None) -> int:
        self.prog.append([op, arg])
        return len(self.prog) - 1

    def node(self, node: tuple) -> None:
        kind = node[0]
        if kind == "char":
            self.emit(CHAR, node[1])
        elif kind == "bol":
            self.emit(BOL)
        elif kind == "eol":
            self.emit(EOL)
        elif kind == "seq":
            for n in node[1]:
                self.node(n)
        elif kind == "alt":
            jumps = []
            for k, branch in enumerate(node[1]):
                if k + 1 < len(node[1]):
                    split = self.emit(SPLIT)
                    self.node(branch)
                    jumps.append(self.emit(JMP))
                    self.prog[split][1] = (split + 1, len(self.prog))
                else:
                    self.node(branch)
            for j in jumps:
                self.prog[j][1] = len(self.prog)
        else:
            self.repeat(node[1], node[2], node[3])

    def repeat(self, inner: tuple, lo: int, hi: Optional[int]) -> None:
        for _ in range(lo):
            self.node(inner)
        if hi is None:  # L: split(body, out); body; jmp L
            split = self.emit(SPLIT)
            self.node(inner)
            self.emit(JMP, split)
            self.prog[split][1] = (split + 1, len(self.prog))
            return
        splits = []
        for _ in range(hi - lo):  # each optional copy may be skipped to the end
            splits.append(self.emit(SPLIT))
            self.node(inner)
        for s in splits:
            self.prog[s][1] = (s + 1, len(self.prog))


class Pattern:
    """A compiled ERE; search(text): does it match anywhere in text (bash's =~)?"""

    def __init__(self, text: str):
        if len(text) > MAX_LENGTH:
            raise PatternError(f"longer than {MAX_LENGTH} characters")
        parser = _Parser(text)
        tree = parser.alt()
        if parser.i != len(text):
            parser.fail("an unmatched )")
        if _size(tree) > MAX_STATES:
            raise PatternError(f"more than {MAX_STATES} states once its repeats are written out")
        compiler = _Compiler()
        compiler.node(tree)
        compiler.emit(MATCH)
        assert len(compiler.prog) <= MAX_STATES + 1
        self.prog = compiler.prog
        self._steps: dict = {}

    def _closure(self, pcs, at_start: bool, at_end: bool) -> tuple:
        """(the CHAR and EOL instructions reached from pcs without reading, MATCH reached?)"""
        seen: set = set()
        out = []
        stack = list(pcs)
        matched = False
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op, arg = self.prog[pc]
            if op == CHAR:
                out.append(pc)
            elif op == MATCH:
                matched = True
            elif op == JMP:
                stack.append(arg)
            elif op == SPLIT:
                stack.extend(arg)
            elif op == BOL:
                if at_start:
                    stack.append(pc + 1)
            elif at_end:  # EOL
                stack.append(pc + 1)
            else:
                out.append(pc)
        return frozenset(out), matched

    def search(self, text: str) -> bool:
        if len(self._steps) > MAX_CACHED:
            self._steps.clear()
        current, matched = self._closure([0], True, not text)
        if matched:
            return True
        for k, c in enumerate(text):
            key = (current, c)
            step = self._steps.get(key)
            if step is None:
                moved = [pc + 1 for pc in current if self.prog[pc][0] == CHAR and self.prog[pc][1](c)]
                step = self._steps[key] = self._closure(moved + [0], False, False)
            current, matched = step
            if matched:
                return True
            if k + 1 == len(text):
                return self._closure(current, False, True)[1]
        return False
