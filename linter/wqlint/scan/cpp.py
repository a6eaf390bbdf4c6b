"""Preprocessor conditions around a line, decided where the target kernel decides them.

A module that builds for several kernels keeps compat blocks: `#if LINUX_VERSION_CODE <
KERNEL_VERSION(6, 6, 0)`, a flags macro defined once per version, `#ifdef` of a macro some
kernels define. For the kernel being scanned (its version; its headers and the module's own
files for what is defined) such a condition is true or false, and code in a false branch is
not compiled: a call there is not reported, a definition there is not used. What cannot be
decided stays as it is today, both branches: a Kconfig CONFIG_ symbol (its value is the
build's, not the source's), a macro the compiler or Kbuild predefines (MODULE, __KERNEL__),
any other name a #if reads. A macro that neither the scanned files nor the kernel's headers
define, nor the module's Kbuild passes with -D, is not decided either (the code may be enabled
with a -D from elsewhere), but the finding says so.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Optional

_DIRECTIVE_RE = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif|define)\b[ \t]*(.*)$")
_UNDECIDABLE_RE = re.compile(r"^(CONFIG_|__|MODULE$|KBUILD_)")


@dataclass(frozen=True)
class Cond:
    """One condition a line depends on: expr must be true (positive) or false."""
    line: int  # the directive that states it
    text: str  # the directive as written, e.g. '#ifdef WQDEMO_TRACE'
    expr: str  # as a #if expression: 'defined(WQDEMO_TRACE)'
    positive: bool
    taken: bool = True  # the directive's own branch (False: a later #elif or #else)


@dataclass
class _Frame:
    """An open #if: the conditions outside it, the conditions its branches so far state
    (line, text, expr, positive), whether it is an include guard, the conditions in force."""
    outer: tuple
    prior: list
    guard: bool
    conds: tuple


def directives(data: bytes) -> tuple:
    """(lines, conds): the line of every conditional directive, and the conditions in force
    after it (include guards left out)."""
    lines: list[int] = []
    out: list[tuple] = []
    stack: list[_Frame] = []
    lineno, counted = 1, 0
    # The directives are found at C speed: most lines of a file are not one.
    for found in _CONDITIONAL_RE.finditer(data):
        pos = found.start()
        if data.endswith(b"\\\n", 0, pos):
            continue  # a line continued from the one before it: not a directive of its own
        lineno += data.count(b"\n", counted, pos)
        counted = pos
        end = _logical_end(data, pos)
        text = data[pos:end].replace(b"\\\n", b" ")
        m = _DIRECTIVE_RE.match(text)
        if not m:
            continue
        kind = m.group(1).decode()
        rest = re.sub(r"/\*.*?\*/|//.*$", "", m.group(2).decode("utf-8", "replace")).strip()
        shown = (f"#{kind} {rest}").strip()
        outer = stack[-1].conds if stack else ()
        if kind in ("if", "ifdef", "ifndef"):
            if kind == "if":
                expr = rest
            else:
                name = rest.split()[0] if rest.split() else ""
                expr = f"defined({name})"
            positive = kind != "ifndef"
            guard = kind == "ifndef" and _next_defines(data, end, rest.split()[0] if rest.split() else "")
            conds = outer if guard else outer + (Cond(lineno, shown, expr, positive),)
            stack.append(_Frame(outer, [(lineno, shown, expr, positive)], guard, conds))
        elif kind in ("elif", "else") and stack:
            frame = stack[-1]
            negated = tuple(Cond(ln, sh, ex, not pos, False) for ln, sh, ex, pos in frame.prior)
            if kind == "elif":
                frame.prior.append((lineno, shown, rest, True))
                frame.conds = frame.outer + negated + (Cond(lineno, shown, rest, True),)
            else:
                frame.conds = frame.outer if frame.guard else frame.outer + negated
        elif kind == "endif" and stack:
            stack.pop()
        else:
            continue
        lines.append(lineno)
        out.append(stack[-1].conds if stack else ())
    return lines, out


_CONDITIONAL_RE = re.compile(rb"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|else|endif)\b", re.M)


def _logical_end(data: bytes, pos: int) -> int:
    """The offset of the newline that ends the logical line starting at pos (continuation
    lines joined), or the end of data."""
    end = data.find(b"\n", pos)
    while end > 0 and data.endswith(b"\\", 0, end):
        end = data.find(b"\n", end + 1)
    return len(data) if end < 0 else end


def _next_defines(data: bytes, end: int, name: str) -> bool:
    """Is the next non-blank line after offset end '#define name' (an include guard)?"""
    if not name:
        return False
    blank = rb"[ \t\r\f\v]"
    guard = re.compile(rb"(?:%s*\n)*%s*#%s*define%s+%s\b" % (blank, blank, blank, blank, re.escape(name.encode())))
    return guard.match(data, end + 1) is not None


def conditions_at(src, line: int) -> tuple:
    """The conditions line of src is compiled under (cached on src)."""
    got = getattr(src, "_cpp_directives", None)
    if got is None:
        got = directives(src.data)
        src._cpp_directives = got
    lines, conds = got
    i = bisect.bisect_left(lines, line)
    return conds[i - 1] if i > 0 else ()


# -- evaluating a #if expression -------------------------------------------------------------
_TOKEN_RE = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|\d+)[uUlL]*|([A-Za-z_]\w*)"
                       r"|(&&|\|\||<<|>>|<=|>=|==|!=|[-+*/%<>&|^!~?:(),]))")


class _Unknown(Exception):
    pass


def evaluate(expr: str, version: tuple, defined) -> Optional[bool]:
    """True, False, or None when expr depends on something that cannot be decided here.
    defined(name) -> True/False/None; LINUX_VERSION_CODE and KERNEL_VERSION() are version's."""
    tokens: list[tuple[str, int | str]] = []
    pos = 0
    expr = expr.strip()
    while pos < len(expr):
        m = _TOKEN_RE.match(expr, pos)
        if not m or m.end() == pos:
            return None
        pos = m.end()
        if m.group(1):
            digits = m.group(1)  # C: 0x hexadecimal, a leading 0 octal
            base = 16 if digits[:2] in ("0x", "0X") else 8 if digits.startswith("0") else 10
            try:
                tokens.append(("num", int(digits, base)))
            except ValueError:  # 08: not a C number
                return None
        elif m.group(2):
            tokens.append(("id", m.group(2)))
        elif m.group(3):
            tokens.append(("op", m.group(3)))
        if expr[pos:].strip() == "":
            break
    code = (version[0] << 16) + (version[1] << 8) + min(version[2], 255)
    parser = _Parser(tokens, code, defined)
    try:
        value = parser.ternary()
        if parser.i != len(tokens):
            return None
    except (_Unknown, IndexError, ZeroDivisionError):
        return None
    return None if value is None else bool(value)


class _Parser:
    """Precedence climbing over #if tokens; None stands for a value that cannot be known,
    and && / || / ?: still decide when the known side settles them."""

    LEVELS = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
              ("<<", ">>"), ("+", "-"), ("*", "/", "%")]

    def __init__(self, tokens, code, defined):
        self.t, self.i, self.code, self.defined = tokens, 0, code, defined

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else (None, None)

    def take(self, op=None):
        tok = self.t[self.i]
        if op is not None and tok != ("op", op):
            raise _Unknown()
        self.i += 1
        return tok

    def ternary(self):
        cond = self.binary(0)
        if self.peek() == ("op", "?"):
            self.take()
            a = self.ternary()
            self.take(":")
            b = self.ternary()
            if cond is None:
                return a if a == b and a is not None else None
            return a if cond else b
        return cond

    def binary(self, level):
        if level == len(self.LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in self.LEVELS[level]:
            op = self.take()[1]
            right = self.binary(level + 1)
            left = _apply(op, left, right)
        return left

    def unary(self):
        kind, val = self.peek()
        if kind == "op" and val in ("!", "~", "-", "+"):
            self.take()
            x = self.unary()
            if x is None:
                return None
            return {"!": lambda: int(not x), "~": lambda: ~x, "-": lambda: -x, "+": lambda: x}[val]()
        if kind == "op" and val == "(":
            self.take()
            x = self.ternary()
            self.take(")")
            return x
        if kind == "num":
            self.take()
            return val
        if kind == "id":
            self.take()
            if val == "defined":
                paren = self.peek() == ("op", "(")
                if paren:
                    self.take()
                name = self.take()
                if name[0] != "id":
                    raise _Unknown()
                if paren:
                    self.take(")")
                got = self.defined(name[1])
                return None if got is None else int(got)
            if val == "LINUX_VERSION_CODE":
                return self.code
            if val == "KERNEL_VERSION" and self.peek() == ("op", "("):
                self.take()
                parts = [self.ternary()]
                while self.peek() == ("op", ","):
                    self.take()
                    parts.append(self.ternary())
                self.take(")")
                if len(parts) != 3 or None in parts:
                    return None
                return (parts[0] << 16) + (parts[1] << 8) + min(parts[2], 255)
            if self.peek() == ("op", "("):  # IS_ENABLED(CONFIG_X) and such: skip the arguments
                depth = 0
                while True:
                    tok = self.take()
                    depth += {("op", "("): 1, ("op", ")"): -1}.get(tok, 0)
                    if depth == 0:
                        break
            return None
        raise _Unknown()


def _apply(op, a, b):
    if op == "&&":
        if a == 0 or b == 0:
            return 0
        return None if a is None or b is None else 1
    if op == "||":
        if (a is not None and a != 0) or (b is not None and b != 0):
            return 1
        return None if a is None or b is None else 0
    if a is None or b is None:
        return None
    return {"|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b, "==": lambda: int(a == b),
            "!=": lambda: int(a != b), "<": lambda: int(a < b), "<=": lambda: int(a <= b),
            ">": lambda: int(a > b), ">=": lambda: int(a >= b), "<<": lambda: a << b, ">>": lambda: a >> b,
            "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a // b,
            "%": lambda: a % b}[op]()


def undecidable(name: str) -> bool:
    """Kconfig symbols and what the compiler or Kbuild define: never decided from source."""
    return bool(_UNDECIDABLE_RE.match(name))


# -- deciding, against a tree and a version ----------------------------------------------------
class Decider:
    """Decides the conditions of lines of the scanned files (and the kernel's headers) for
    one kernel version, looking up through the index which macros are defined."""

    def __init__(self, index, version: tuple):
        self.index = index
        self.version = version
        self._defined: dict = {}
        self._build_flags: dict = {}

    def state(self, src, line: int) -> tuple:
        """(dead, [(Cond, truth, nowhere names)]) for line: dead when a condition is false
        for this kernel; the others with their truth (None: not decided)."""
        out = []
        for cond in conditions_at(src, line):
            nowhere: list[str] = []
            truth = evaluate(cond.expr, self.version, lambda n, nowhere=nowhere: self.defined(n, src, nowhere))
            if truth is not None and not cond.positive:
                truth = not truth
            if truth is False:
                return True, []
            out.append((cond, truth, tuple(nowhere)))
        return False, out

    def notes(self, decided: list) -> list:
        """Chain notes for the conditions a line is compiled under: a version check or a
        defined() decided for this kernel, and a macro defined nowhere."""
        from wqlint import kversion

        out = []
        for cond, truth, nowhere in decided:
            where = f"'{cond.text}'" if cond.taken else f"the #else of '{cond.text}'"
            if truth and ("LINUX_VERSION_CODE" in cond.expr or "defined" in cond.expr):
                out.append((cond, f"under {where}: taken for {kversion.show(self.version)}"))
            elif nowhere:
                names = ", ".join(nowhere)
                out.append((cond, f"under {where}: {names} is defined nowhere in the scanned files, the "
                                  "kernel's headers or the Kbuild file (only a -D on the compiler's "
                                  "command line enables this code)"))
        return out

    def defined(self, name: str, near, nowhere: list) -> Optional[bool]:
        if undecidable(name):
            return None
        key = (name, near.rel)
        if key in self._defined:
            got = self._defined[key]
            if got == "nowhere":
                nowhere.append(name)
                return None
            return got
        pat = re.compile(rb"^\s*#\s*define\s+" + re.escape(name.encode()) + rb"\b")
        defs = [(near, ln) for ln in near.word_lines(name) if pat.match(near.line_bytes(ln))]
        if not defs:
            occ = self.index.occurrences(name, defs=True, near=near.rel)
            if occ is None:
                return None  # looked up in the next round
            for rel, ln in occ:
                if pat.match(self.index.peek(rel, ln)):
                    src = self.index.source(rel)
                    if src is not None:
                        defs.append((src, ln))
        if not defs:
            got = None if self._passed_by_build(name, near.rel) else "nowhere"
        else:
            got = False
            for src, ln in defs:
                truths = [evaluate(c.expr, self.version, lambda n: None) for c in conditions_at(src, ln)]
                truths = [t if t is None or c.positive else not t
                          for t, c in zip(truths, conditions_at(src, ln))]
                if all(t is True for t in truths):
                    got = True
                    break
                if False not in truths:
                    got = None
        self._defined[key] = got
        if got == "nowhere":
            nowhere.append(name)
            return None
        return got

    def _passed_by_build(self, name: str, rel: str) -> bool:
        """Does a Kbuild file or Makefile of the module (its top, or rel's directory) pass -Dname?"""
        dirs = {""}
        if "/" in rel and not rel.startswith("<"):
            dirs.add(rel.rsplit("/", 1)[0])
        for d in dirs:
            for f in ("Kbuild", "Makefile"):
                path = self.index.root / d / f if d else self.index.root / f
                text = self._build_flags.get(path)
                if text is None:
                    try:  # (a regular file only: a FIFO named Makefile would never end)
                        text = path.read_text(encoding="utf-8", errors="replace")[:65536] \
                            if path.is_file() else ""
                    except OSError:
                        text = ""
                    self._build_flags[path] = text
                if re.search(r"-D\s*" + re.escape(name) + r"\b", text):
                    return True
        return False
