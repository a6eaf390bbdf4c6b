"""Preprocessor conditions around a line, decided where the target kernel decides them.

A module that builds for several kernels keeps compat blocks: `#if LINUX_VERSION_CODE <
KERNEL_VERSION(6, 6, 0)`, a flags macro defined once per version, `#ifdef` of a macro some
kernels define, a version test of its own (`#if RTLNX_VER_MIN(2,6,13)`, the macro defined
as a LINUX_VERSION_CODE comparison). For the kernel being scanned (its version; its headers
and the module's own files for what is defined) such a condition is true or false, and code
in a false branch is not compiled: a call there is not reported, a definition there is not
used. A name or call in a #if is decided by evaluating the definitions it may have there,
with the arguments put in, when they agree; nothing is decided by a macro's name.

What cannot be decided stays as it is today, both branches: a Kconfig CONFIG_ symbol (its
value is the build's, not the source's), a macro the compiler or Kbuild predefines (MODULE,
__KERNEL__, __x86_64__), a macro whose definitions disagree. The chain says so where that
is worth a word: a macro that neither the scanned files nor the kernel's headers define, nor
the module's Kbuild passes with -D (the code may be enabled or disabled with a -D from
elsewhere); a macro the package's configure step writes (listed in a shipped *.h.in whose
header was not generated); a function-like macro that cannot be evaluated.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Optional

from wqlint import safeio
from wqlint.finding import Step

_DIRECTIVE_RE = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif|define)\b[ \t]*(.*)$")
_UNDECIDABLE_RE = re.compile(r"^(CONFIG_|MODULE$|KBUILD_)")
# What the compiler predefines (GCC and Clang: their version, the target's architecture, ABI
# and sizes, the language) and what Kbuild passes on every command line: never decided from
# source. A name of the form __X__ that is none of these (a vendor's __QDMA_VF__) is looked
# up like any other, and said to be defined nowhere when nothing defines it.
_PREDEFINED_RE = re.compile(
    r"^__(GNUC|GNUG|clang|STDC|cplusplus|OPTIMIZE|NO_INLINE|SIZEOF|CHAR_BIT|BYTE_ORDER|ORDER|"
    r"FLOAT_WORD_ORDER|LP64|ILP32|INT|UINT|LONG|SCHAR|SHRT|WCHAR|WINT|PTRDIFF|SIZE|INTMAX|"
    r"UINTMAX|INTPTR|UINTPTR|BIGGEST|FLT|DBL|LDBL|DEC|GCC|VERSION|ELF|PIC|pic|PIE|pie|"
    r"SANITIZE|SSP|has_|builtin|COUNTER|FILE|LINE|DATE|TIME|TIMESTAMP|BASE_FILE|INCLUDE_LEVEL|"
    r"ASSEMBLER|ASSEMBLY|KERNEL|CHECKER|GENKSYMS|DISABLE_EXPORTS|linux|gnu_linux|unix|"
    r"x86_64|amd64|i[3-6]86|x86|SSE|AVX|MMX|aarch64|arm|ARM|thumb|powerpc|PPC|ppc|riscv|mips|"
    r"MIPS|s390|sparc|alpha|hppa|ia64|loongarch|m68k|sh|xtensa|arc|csky|hexagon|microblaze|"
    r"nios2|or1k|OR1K|parisc|um|BIG_ENDIAN|LITTLE_ENDIAN|ARMEB|ARMEL|AARCH64EB|MIPSEB|MIPSEL|"
    r"CHAR_UNSIGNED|REGISTER_PREFIX|USER_LABEL_PREFIX|EXCEPTIONS|NEXT_RUNTIME|ATOMIC|"
    r"HAVE_|SEG_|CET|code_model|tune|k8|znver|SEH|nonnull|STRICT_ANSI|BPF|bpf|CUDA|"
    r"FINITE_MATH|NO_MATH|FAST_MATH|FP_|RECIPROCAL|NO_FORTIFY|KASAN|KMSAN|ANDROID|"
    # other targets' systems and CPUs, which code shared with them tests
    r"FreeBSD|NetBSD|OpenBSD|DragonFly|APPLE|MACH|WIN|MINGW|CYGWIN|sun|SVR4|OBJC|mc68|tile|nds32|vax|"
    r"ILLUMOS|illumos|QNX|HAIKU|EMSCRIPTEN|wasm)")


def predefined(name: str) -> bool:
    """Is name one the compiler or Kbuild predefines (or may, for some target): a name of
    the implementation's that only its own reserved form '__X' can be."""
    if not name.startswith("__"):
        return False
    if not (name.endswith("__") and len(name) > 4):
        return True  # __X (no closing __): the implementation's and the kernel's own use
    return bool(_PREDEFINED_RE.match(name))


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


def block_text(src, line: int) -> bytes:
    """The text of the #if ... #endif block whose #if (or #ifdef, #ifndef) is at line of src:
    all its branches."""
    depth = 0
    for ln in range(line, src.nlines + 1):
        m = _DIRECTIVE_RE.match(src.line_bytes(ln))
        if m is None:
            continue
        kind = m.group(1)
        if kind in (b"if", b"ifdef", b"ifndef"):
            depth += 1
        elif kind == b"endif":
            depth -= 1
            if depth == 0:
                return src.slice(line, ln)
    return src.slice(line, src.nlines)


# -- evaluating a #if expression -------------------------------------------------------------
_TOKEN_RE = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|\d+)[uUlL]*|([A-Za-z_]\w*)"
                       r"|(&&|\|\||<<|>>|<=|>=|==|!=|[-+*/%<>&|^!~?:(),]))")


class _Unknown(Exception):
    pass


def evaluate(expr: str, version: tuple, defined, macros=None) -> Optional[bool]:
    """True, False, or None when expr depends on something that cannot be decided here.
    defined(name) -> True/False/None; LINUX_VERSION_CODE and KERNEL_VERSION() are version's.
    macros(name, arity) -> the bodies a macro may have here (see Decider.macro), so that a
    name or call whose definition is a version test decides like the test."""
    tokens = tokenize(expr)
    if tokens is None:
        return None
    code = (version[0] << 16) + (version[1] << 8) + min(version[2], 255)
    parser = _Parser(tokens, code, defined, macros)
    try:
        value = parser.ternary()
        if parser.i != len(tokens):
            return None
    except (_Unknown, IndexError, ZeroDivisionError, RecursionError):
        return None
    return None if value is None else bool(value)


def tokenize(expr: str) -> Optional[list]:
    """The tokens of a #if expression, None when it holds one this evaluator does not read
    (a string, a character constant, # or ##)."""
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
    return tokens


MAX_EXPANSION_DEPTH = 8  # macros expanding macros in one #if (the kernel's deepest: 3)
MAX_EXPANSIONS = 256  # bodies evaluated for one #if: macros with many definitions nest


class _Parser:
    """Precedence climbing over #if tokens; None stands for a value that cannot be known,
    and && / || / ?: still decide when the known side settles them."""

    LEVELS = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
              ("<<", ">>"), ("+", "-"), ("*", "/", "%")]

    def __init__(self, tokens, code, defined, macros=None, depth=0, spent=None):
        self.t, self.i, self.code, self.defined = tokens, 0, code, defined
        self.macros, self.depth = macros, depth
        self.spent = spent if spent is not None else [0]  # bodies evaluated, shared by the nested parsers

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
            args = self.arguments() if self.peek() == ("op", "(") else None
            return self.expand(val, args)
        raise _Unknown()

    def arguments(self) -> list:
        """The token lists of the arguments of the call whose '(' is next."""
        self.take("(")
        args: list[list] = [[]]
        depth = 0
        while True:
            tok = self.take()
            if tok == ("op", ")") and depth == 0:
                break
            if tok == ("op", ",") and depth == 0:
                args.append([])
                continue
            depth += {("op", "("): 1, ("op", ")"): -1}.get(tok, 0)
            args[-1].append(tok)
        return [] if args == [[]] else args

    def expand(self, name: str, args: Optional[list]):
        """The value of a macro (args None) or of a call of a function-like macro: the value
        its body has with the arguments put in, when every definition the macro may have here
        gives the same; None otherwise (or when the macro is not one of the module's)."""
        if self.macros is None or self.depth >= MAX_EXPANSION_DEPTH:
            return None
        if args is not None and any(t[0] == "id" and undecidable(t[1]) for a in args for t in a):
            return None  # IS_ENABLED(CONFIG_X): the build's configuration
        bodies = self.macros(name, None if args is None else len(args))
        if not bodies:
            return None
        values = set()
        for params, body in bodies:
            self.spent[0] += 1
            if self.spent[0] > MAX_EXPANSIONS:
                return None
            tokens = tokenize(body)
            if tokens is None:
                return None
            if params:
                bound = dict(zip(params, args or ()))
                tokens = [t for tok in tokens
                          for t in ([("op", "(")] + bound[tok[1]] + [("op", ")")]
                                    if tok[0] == "id" and tok[1] in bound else [tok])]
            sub = _Parser(tokens, self.code, self.defined, self.macros, self.depth + 1, self.spent)
            try:
                value = sub.ternary()
            except (_Unknown, IndexError):
                return None
            if sub.i != len(tokens) or value is None:
                return None
            values.add(value)
        return values.pop() if len(values) == 1 else None


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
        self._templates: Optional[list] = None
        self.build_dirs: list = []  # the module directories given (rel to the root): their Kbuild too

    def state(self, src, line: int) -> tuple:
        """(dead, [(Cond, truth, nowhere names, words)]) for line: dead when a condition is
        false for this kernel; the others with their truth (None: not decided) and words:
        for one not decided, what left it so when that is worth saying; for one decided,
        the macros it was decided through."""
        out = []
        for cond in conditions_at(src, line):
            nowhere: list[str] = []
            why: list[str] = []
            used: list[str] = []
            truth = evaluate(cond.expr, self.version,
                             lambda n, nowhere=nowhere: self.defined(n, src, nowhere),
                             lambda n, arity, why=why, used=used, nowhere=nowhere:
                                 self.macro(n, arity, src, why, used, nowhere))
            if truth is not None and not cond.positive:
                truth = not truth
            if truth is False:
                return True, []
            out.append((cond, truth, tuple(nowhere), tuple(why) if truth is None else tuple(used)))
        return False, out

    def steps(self, src, decided: list) -> list:
        """Chain steps naming the conditions a line of src is compiled under (notes())."""
        return [Step(src.rel, cond.line, src.line_text(cond.line).strip(), note)
                for cond, note in self.notes(decided)]

    def notes(self, decided: list) -> list:
        """Chain notes for the conditions a line is compiled under: a version check or a
        defined() decided for this kernel, a macro defined nowhere, a macro the package's
        own build generates, a condition left undecided for another reason worth saying."""
        from wqlint import kversion

        out = []
        shown = kversion.show(self.version)
        for cond, truth, nowhere, why in decided:
            where = f"'{cond.text}'" if cond.taken else f"the #else of '{cond.text}'"
            generated = [(n, t) for n, t in (self._generated(n) for n in nowhere) if t]
            nowhere = tuple(n for n in nowhere if n not in dict(generated))
            if truth and why:
                out.append((cond, f"under {where}: taken for {shown} ({', '.join(why)} "
                                  "evaluated from its definition)"))
            elif truth and ("LINUX_VERSION_CODE" in cond.expr or "defined" in cond.expr):
                out.append((cond, f"under {where}: taken for {shown}"))
            elif generated:
                names = ", ".join(n for n, _ in generated)
                templates = ", ".join(sorted({t for _, t in generated}))
                gen = {n for n, _ in generated}
                truth_if = evaluate(cond.expr, self.version, lambda n, gen=gen: True if n in gen else None)
                when = "decides it" if truth_if is None else \
                    "defines it" if truth_if == cond.positive else "leaves it undefined"
                out.append((cond, f"under {where}: {names} is set by the package's configure step "
                                  f"({templates} lists it; configure has not been run): this branch is "
                                  f"judged as compiled for {shown}, but the build compiles it only where "
                                  f"configure {when}"))
            elif nowhere:
                names = ", ".join(nowhere)
                # (an identifier no #define names is 0 in a #if, as defined() of it is false)
                absent = evaluate(cond.expr, self.version, lambda n, nowhere=nowhere: False if n in nowhere else None,
                                  lambda n, arity, nowhere=nowhere: [(None, "0")]
                                  if arity is None and n in nowhere else None)
                effect = ("a -D on the compiler's command line disables this code"
                          if absent is not None and absent == cond.positive
                          else "only a -D on the compiler's command line enables this code")
                out.append((cond, f"under {where}: {names} is defined nowhere in the scanned files, the "
                                  f"kernel's headers or the Kbuild file ({effect})"))
            elif truth is None and why:
                out.append((cond, f"under {where}: not decided for {shown} ({'; '.join(why)}), so "
                                  "this branch is judged as compiled"))
        return out

    def _definitions(self, name: str, near):
        """The #define lines of name that may be in force at near: near's own, else the
        scanned files' and the kernel's headers'; [(src, line)], or None while the index
        still has to look the name up."""
        pat = re.compile(rb"^\s*#\s*define\s+" + re.escape(name.encode()) + rb"\b")
        defs = [(near, ln) for ln in near.word_lines(name) if pat.match(near.line_bytes(ln))]
        if defs:
            return defs
        occ = self.index.occurrences(name, defs=True, near=near.rel)
        if occ is None:
            return None
        for rel, ln in occ:
            if pat.match(self.index.peek(rel, ln)):
                src = self.index.source(rel)
                if src is not None:
                    defs.append((src, ln))
        return defs

    def _in_force(self, src, ln) -> Optional[bool]:
        """Is the line compiled for this kernel: True, False, None (not decided)? Its
        conditions are decided on the version alone (no lookups: a definition's own
        conditions would otherwise cost a search each)."""
        truths = [evaluate(c.expr, self.version, lambda n: None) for c in conditions_at(src, ln)]
        truths = [t if t is None or c.positive else not t for t, c in zip(truths, conditions_at(src, ln))]
        if False in truths:
            return False
        return True if all(t is True for t in truths) else None

    def macro(self, name: str, arity, near, why: list, used: list, nowhere: Optional[list] = None):
        """[(parameters or None, body)] of the definitions name may have at near that are
        not excluded for this kernel (arity: the number of arguments it is called with, None
        for a plain name). None when it has none usable: not a macro (a plain name is left to
        defined()), a definition this evaluator cannot read; why gets a word on a call of a
        function-like macro that cannot be decided."""
        if undecidable(name) or predefined(name) or name in ("defined", "LINUX_VERSION_CODE"):
            return None
        key = ("macro", name, arity, near.rel)
        if key in self._defined:
            got, known = self._defined[key]
            why.extend(w for w in known if w not in why)
            if got:
                used.append(name + ("()" if arity is not None else ""))
            elif arity is None and nowhere is not None and known == ["nowhere"]:
                nowhere.append(name)
            return got
        defs = self._definitions(name, near)
        if defs is None:
            return None  # looked up in the next round
        said: list[str] = []
        bodies: list = []
        for src, ln in defs:
            if self._in_force(src, ln) is False:
                continue
            parsed = _parse_define(src, ln)
            if parsed is None or (parsed[0] is None) != (arity is None) \
                    or (arity is not None and len(parsed[0]) != arity):
                bodies = []
                break
            bodies.append(parsed)
        if arity is None and not defs and not self._passed_by_build(name, near.rel):
            said.append("nowhere")  # a plain name: said as a macro defined nowhere (notes())
        elif arity is not None and not defs:
            said.append(f"{name}() is defined nowhere in the scanned files or the kernel's headers")
        elif arity is not None and not bodies:
            said.append(f"{name}() has no definition wqlint can evaluate here")
        got = bodies or None
        self._defined[key] = (got, said)
        if said == ["nowhere"]:
            if nowhere is not None:
                nowhere.append(name)
            return None
        why.extend(w for w in said if w not in why)
        if got:
            used.append(name + ("()" if arity is not None else ""))
        return got

    def defined(self, name: str, near, nowhere: list) -> Optional[bool]:
        if undecidable(name) or predefined(name):
            return None
        key = (name, near.rel)
        if key in self._defined:
            got = self._defined[key]
            if got == "nowhere":
                nowhere.append(name)
                return None
            return got
        defs = self._definitions(name, near)
        if defs is None:
            return None  # looked up in the next round
        if not defs:
            got = None if self._passed_by_build(name, near.rel) else "nowhere"
        else:
            got = False
            for src, ln in defs:
                truth = self._in_force(src, ln)
                if truth is True:
                    got = True
                    break
                if truth is None:
                    got = None
        self._defined[key] = got
        if got == "nowhere":
            nowhere.append(name)
            return None
        return got

    def _generated(self, name: str) -> tuple:
        """(name, the template that lists it) when name is a macro the package's configure
        step writes into a header it generates from a shipped template (config.h.in with
        '#undef NAME'), else (name, '')."""
        if self._templates is None:
            self._templates = []
            for pattern in ("*.h.in", "*/*.h.in"):
                for path in sorted(self.index.root.glob(pattern))[:8]:
                    if path.with_suffix("").exists():
                        continue  # configure has run: its header is searched as any other
                    try:
                        text = safeio.read_bytes(path, 4 << 20, self.index.root)
                    except safeio.InputRefused:
                        continue
                    names = set(re.findall(rb"^[ \t]*#[ \t]*undef[ \t]+(\w+)", text, re.M))
                    self._templates.append((path.relative_to(self.index.root).as_posix(), names))
        for rel, names in self._templates:
            if name.encode() in names:
                return name, rel
        return name, ""

    def _passed_by_build(self, name: str, rel: str) -> bool:
        """Does a Kbuild file or Makefile of the module (its top, or rel's directory) pass -Dname?"""
        dirs = {"", *self.build_dirs}
        if "/" in rel and not rel.startswith("<"):
            dirs.add(rel.rsplit("/", 1)[0])
        for d in dirs:
            for f in ("Kbuild", "Makefile"):
                path = self.index.root / d / f if d else self.index.root / f
                text = self._build_flags.get(path)
                if text is None:
                    try:
                        text = safeio.read_head(path, 65536, self.index.root).decode("utf-8", "replace")
                    except safeio.InputRefused:
                        text = ""
                    self._build_flags[path] = text
                if re.search(r"-D\s*" + re.escape(name) + r"\b", text):
                    return True
        return False


_DEFINE_HEAD_RE = re.compile(r"^\s*#\s*define\s+(\w+)(\(([^)]*)\))?(.*)$", re.S)


def _parse_define(src, line: int) -> Optional[tuple]:
    """(parameters, or None for an object-like macro; body) of the #define at line of src,
    continuation lines joined and comments dropped; None for a variadic macro."""
    span = src.define_span(line)
    if span is None:
        return None
    text = src.slice(span[0], span[1]).decode("utf-8", "replace").replace("\\\n", " ")
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
    m = _DEFINE_HEAD_RE.match(text)
    if m is None:
        return None
    if m.group(2) is None:
        return None, m.group(4).strip()
    params = [p.strip() for p in m.group(3).split(",")] if m.group(3).strip() else []
    if any(not re.fullmatch(r"[A-Za-z_]\w*", p) for p in params):
        return None  # '...' or a named variadic parameter
    return params, m.group(4).strip()
