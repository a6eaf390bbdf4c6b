"""Every regular expression of the package that reads untrusted text takes time linear in it.

Python's re backtracks: a pattern with nested repeats, two repeats that can take the same
characters one after the other, or an alternation whose branches overlap under a repeat,
takes time polynomial or exponential in a crafted text, and one under re.M that starts with
`^\\s*` is tried from every line start across the lines that follow. The patterns are found
in the source (every re.compile/search/match/fullmatch/finditer/findall/sub/subn/split call,
its flags and what its pattern is made of) and held to two checks: (a) a static one of the
shapes above, each failure naming the pattern's module:line; (b) texts of growing length
(1k, 4k, 16k, 64k) built from the pattern's own characters, each within a time bound linear
in its length. A name put into a pattern (re.escape(name), an identifier of the tree) is
tried as `name`. A pattern that reads only trusted text is listed in TRUSTED with the reason.
"""
from __future__ import annotations

import ast
import itertools
import re
import re._constants as sre_c  # type: ignore[import-not-found]
import re._parser as sre_parse  # type: ignore[import-not-found]
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO
from wqlint.scan import assumed
from wqlint.scan.search import definition_regex

PACKAGE = REPO / "linter" / "wqlint"
FUNCS = {"compile": 1, "search": 2, "match": 2, "fullmatch": 2, "finditer": 2, "findall": 2, "sub": 4,
         "subn": 4, "split": 3}
SIZES = (1_000, 4_000, 16_000, 64_000)


def bound(n: int) -> float:
    """Seconds a text of n characters may take: linear, with room for a loaded machine."""
    return 0.05 + n * 4e-6


# module:source of the pattern argument -> why the text it reads is trusted (or not a text)
TRUSTED = {
    "fix/maintainers.py:text": "a MAINTAINERS F: glob made a regex, matched against a path of the tree; "
                               "bulk runs the tree's own get_maintainer.pl, which reads them too (docs/trust.md)",
    "fix/maintainers.py:value": "a MAINTAINERS N: regex of the tree, as get_maintainer.pl takes it (as above)",
}
PYTHON_DEFINITION = definition_regex(["name"], python=True).encode()
# module:source -> the pattern it stands for, where the source names it through a variable
RESOLVED = {
    # facts.mention_re() and _QUEUES, one alternation
    "check/checker.py:mention.pattern + '|' + _QUEUES.pattern": (r"\b(?:name|other)\s*\(|\b(?:system_wq|name)\b",),
    "scan/search.py:definition_regex([token], python=True).encode()": (PYTHON_DEFINITION,),
    "scan/store.py:definition_regex([token], python=True).encode()": (PYTHON_DEFINITION,),
    "scan/assumed.py:wait_then_store(item)": (assumed.wait_then_store("name"),),
    "scan/assumed.py:wait_then_store(None)": (assumed.wait_then_store(None),),
    "scan/assumed.py:store_of(member)": (assumed.store_of("name"),),
    "scan/kerneltree.py:pattern": (r'UTS_RELEASE\s+"(\d+)\.(\d+)(?:\.(\d+))?', r"^(\d+)\.(\d+)(?:\.(\d+))?"),
}


@dataclass
class Found:
    where: str  # module:line
    key: str  # module:source of the pattern argument
    patterns: tuple  # str or bytes each (several where the source chooses)
    flags: int
    how: str  # match, fullmatch or search (every match: finditer)


class _Name:
    """A value the test cannot know: a name from the tree (an identifier)."""


def _value(node, consts: dict):
    """The str/bytes node evaluates to, _Name for an identifier, or None (unknown)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = [_value(v.value if isinstance(v, ast.FormattedValue) else v, consts) for v in node.values]
        return "".join("name" if isinstance(p, _Name) or p is None else str(p) for p in parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _value(node.left, consts), _value(node.right, consts)
        if left is None or right is None:
            return None
        if isinstance(left, _Name) and isinstance(right, _Name):
            return _Name()
        kind = bytes if isinstance(left, bytes) or isinstance(right, bytes) else str
        name = b"name" if kind is bytes else "name"
        return (name if isinstance(left, _Name) else left) + (name if isinstance(right, _Name) else right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        fmt = _value(node.left, consts)
        items = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        args = [_value(e, consts) for e in items]
        if not isinstance(fmt, (str, bytes)) or any(a is None for a in args):
            return None
        name = b"name" if isinstance(fmt, bytes) else "name"
        return fmt % tuple(name if isinstance(a, _Name) else a for a in args)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        attr = node.func.attr
        inner = _value(node.func.value, consts)
        if attr == "escape" or (attr == "encode" and isinstance(inner, _Name)):
            arg = node.args[0] if attr == "escape" else node.func.value
            got = _value(arg, consts)
            plain = got.decode("latin-1") if isinstance(got, bytes) else got
            return got if isinstance(plain, str) and plain.isidentifier() else \
                (b"name" if attr == "encode" or isinstance(got, bytes) or _encoded(arg) else _Name())
        if attr == "encode" and isinstance(inner, str):
            return inner.encode()
        if attr == "join" and isinstance(inner, (str, bytes)):
            return inner.join([b"name", b"other"] if isinstance(inner, bytes) else ["name", "other"])
        if attr == "pattern":
            return None
    if isinstance(node, ast.Attribute) and node.attr == "pattern":
        return None
    if isinstance(node, ast.Name):
        got = consts.get(node.id)
        return got if got is not None else _Name()
    if isinstance(node, (ast.Attribute, ast.Subscript)):
        return _Name()
    return None


def _encoded(node) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "encode"


def _flags(node) -> int:
    if node is None:
        return 0
    names = [n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)]
    out = 0
    for n in names:
        out |= int(getattr(re, n, 0))
    return out


def _methods(source: str, name: str) -> set:
    return set(re.findall(r"\b" + re.escape(name) + r"\.(\w+)\(", source))


def collect() -> list:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text()
        tree = ast.parse(source)
        module = path.relative_to(PACKAGE).as_posix()
        consts: dict = {}
        for node in tree.body:  # module constants a pattern is made of
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                got = _value(node.value, consts)
                if isinstance(got, (str, bytes)):
                    consts[node.targets[0].id] = got
        assigned = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and len(node.targets) == 1:
                target = node.targets[0]
                name = target.id if isinstance(target, ast.Name) else \
                    target.attr if isinstance(target, ast.Attribute) else None
                if name:
                    assigned[id(node.value)] = name
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                    and node.func.attr in FUNCS and node.args):
                continue
            func = node.func.attr
            arg = node.args[0]
            key = f"{module}:{ast.unparse(arg)}"
            flag_node = node.args[FUNCS[func]] if len(node.args) > FUNCS[func] else \
                next((k.value for k in node.keywords if k.arg == "flags"), None)
            how = func if func in ("match", "fullmatch") else "search"
            if func == "compile" and id(node) in assigned:
                used = _methods(source, assigned[id(node)])
                if used and used <= {"match", "fullmatch"}:
                    how = "match"
            if key in TRUSTED:
                continue
            if key in RESOLVED:
                patterns = RESOLVED[key]
            else:
                got = _value(arg, consts)
                if isinstance(got, _Name):
                    got = "name"
                assert isinstance(got, (str, bytes)), f"{module}:{node.lineno}: a pattern the test cannot " \
                    f"read ({ast.unparse(arg)}): add it to RESOLVED or TRUSTED"
                patterns = (got,)
            out.append(Found(f"{module}:{node.lineno}", key, patterns, _flags(flag_node), how))
    return out


FOUND = collect()


# -- (a) the shapes ---------------------------------------------------------------------

PROBE = [chr(c) for c in range(128)] + ["\u00e9"]


def _charset(op, av, flags: int) -> set:
    """The probe characters one single-character item takes (empty: not one)."""
    if op == sre_c.LITERAL:
        return {chr(av)}
    if op == sre_c.NOT_LITERAL:
        return set(PROBE) - {chr(av)}
    if op == sre_c.ANY:
        return set(PROBE) if flags & re.S else set(PROBE) - {"\n"}
    if op == sre_c.IN:
        pos, neg = set(), False
        for iop, iav in av:
            if iop == sre_c.NEGATE:
                neg = True
            elif iop == sre_c.LITERAL:
                pos.add(chr(iav))
            elif iop == sre_c.RANGE:
                pos |= {c for c in PROBE if iav[0] <= ord(c) <= iav[1]}
            elif iop == sre_c.CATEGORY:
                pos |= {c for c in PROBE if re.fullmatch(_CATEGORY[iav], c)}
        return set(PROBE) - pos if neg else pos
    return set()


_CATEGORY = {sre_c.CATEGORY_DIGIT: r"\d", sre_c.CATEGORY_NOT_DIGIT: r"\D", sre_c.CATEGORY_SPACE: r"\s",
             sre_c.CATEGORY_NOT_SPACE: r"\S", sre_c.CATEGORY_WORD: r"\w", sre_c.CATEGORY_NOT_WORD: r"\W"}
REPEATS = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT)


def _nullable(items, flags) -> bool:
    for op, av in items:
        if op in REPEATS:
            if av[0] > 0 and not _nullable(av[2], flags):
                return False
        elif op == sre_c.SUBPATTERN:
            if not _nullable(av[3], flags):
                return False
        elif op == sre_c.BRANCH:
            if not any(_nullable(b, flags) for b in av[1]):
                return False
        elif op in (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT):
            continue
        else:
            return False
    return True


def _first(items, flags, end: bool = False) -> set:
    """The characters a match of items can start with (end: end with)."""
    out: set = set()
    for op, av in (reversed(list(items)) if end else items):
        if op in REPEATS:
            out |= _first(av[2], flags, end)
            if av[0] > 0 and not _nullable(av[2], flags):
                return out
        elif op == sre_c.SUBPATTERN:
            out |= _first(av[3], flags, end)
            if not _nullable(av[3], flags):
                return out
        elif op == sre_c.BRANCH:
            for b in av[1]:
                out |= _first(b, flags, end)
            if not any(_nullable(b, flags) for b in av[1]):
                return out
        elif op in (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT):
            continue
        else:
            got = _charset(op, av, flags)
            return out | (got or set(PROBE))
    return out


def _repeated_sets(items, flags) -> list:
    """The character sets of the single-character items repeated (max > 1) within items."""
    out = []
    for op, av in items:
        if op in REPEATS:
            if av[1] > 1:
                out.append(_first(av[2], flags))
            out += _repeated_sets(av[2], flags)
        elif op == sre_c.SUBPATTERN:
            out += _repeated_sets(av[3], flags)
        elif op == sre_c.BRANCH:
            for b in av[1]:
                out += _repeated_sets(b, flags)
    return out


def _separator(items, flags, inner: list) -> bool:
    """Does every pass of items take a character no repeat inside it can take? (Then the
    passes cannot share characters: a repeat of them is not ambiguous.)"""
    taken = set().union(*inner) if inner else set()
    for op, av in items:
        if op == sre_c.SUBPATTERN:
            if _separator(av[3], flags, inner):
                return True
            continue
        if op in REPEATS or op in (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT):
            continue
        got = _charset(op, av, flags)
        if got and not got & taken:
            return True
    return False


def _delimited(body, flags) -> bool:
    """Is body a run of single characters and repeats of them, each taking characters the one
    before it cannot, and ending with characters it cannot start with? Then each pass of a
    repeat of body splits one way only ([\\w*]+\\s+)."""
    flat = _flat(body)
    sets = []
    for op, av in flat:
        if op in REPEATS:
            if any(o in REPEATS or o in (sre_c.SUBPATTERN, sre_c.BRANCH) for o, _ in av[2]):
                return False
            sets.append(_first(av[2], flags))
        elif op in (sre_c.BRANCH, sre_c.ASSERT, sre_c.ASSERT_NOT, sre_c.AT):
            return False
        else:
            sets.append(_charset(op, av, flags))
    return bool(sets) and not _nullable(flat, flags) and not sets[0] & sets[-1] \
        and all(not a & b for a, b in zip(sets, sets[1:]))


def _always_ends(rest, repeat, flags) -> bool:
    """Does a match that reached the last repeat of the pattern end there (nothing after it,
    or `$` after `.*`)? Then the repeats before it are not tried again. (Without re.M, a `$`
    after `.*` fails on a newline inside a text: the texts of (b) have them.)"""
    if not rest:
        return True
    taken = _first(repeat[2], flags)
    return rest == [(sre_c.AT, sre_c.AT_END)] and taken >= set(PROBE) - {"\n"}


def _flat(items) -> list:
    """items with their groups opened: what follows a repeat, whatever group it closes."""
    out = []
    for op, av in items:
        out += _flat(av[3]) if op == sre_c.SUBPATTERN else [(op, av)]
    return out


def shapes(pattern, flags: int) -> list:
    """What makes pattern super-linear under backtracking, in words (empty: none found)."""
    parsed = sre_parse.parse(pattern, flags)
    flags |= parsed.state.flags
    problems = []

    def walk(items, top=False):
        items = list(items)
        flat = _flat(items)
        for k, (op, av) in enumerate(flat):
            if op in REPEATS and av[1] >= 16:
                mine = _first(av[2], flags, end=True)
                for j, (lop, lav) in enumerate(flat[k + 1:], k + 1):
                    if lop in REPEATS and lav[1] >= 16 and mine & _first(lav[2], flags) \
                            and not (top and _always_ends(flat[j + 1:], lav, flags)):
                        problems.append("two repeats that take the same characters, with nothing "
                                        "between them that must match")
                        break
                    if not _nullable([(lop, lav)], flags):
                        break
        for k, (op, av) in enumerate(items):
            if op in REPEATS and av[1] > 1:
                body = list(av[2])
                inner = _repeated_sets(body, flags)
                if inner and not _separator(body, flags, inner) and not _delimited(body, flags):
                    problems.append("a repeat of a repeat (nested quantifiers)")
                for bop, bav in body if len(body) == 1 and body[0][0] != sre_c.SUBPATTERN else \
                        (body[0][1][3] if body and body[0][0] == sre_c.SUBPATTERN else body):
                    if bop == sre_c.BRANCH:
                        firsts = [_first(b, flags) for b in bav[1]]
                        if any(a & b for a, b in itertools.combinations(firsts, 2)):
                            problems.append("an alternation whose branches overlap, under a repeat")
            if op == sre_c.AT and av in (sre_c.AT_BEGINNING, sre_c.AT_BEGINNING_LINE) and flags & re.M \
                    and k + 1 < len(items) and items[k + 1][0] in REPEATS and items[k + 1][1][1] > 1 \
                    and "\n" in _first(items[k + 1][1][2], flags):
                problems.append("^ then a repeat that takes newlines, under re.M: tried from each line start "
                                "over the lines that follow")
            if op in REPEATS:
                walk(av[2])
            elif op == sre_c.SUBPATTERN:
                walk(av[3])
            elif op == sre_c.BRANCH:
                for b in av[1]:
                    walk(b)
            elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
                walk(av[1])

    walk(parsed.data, True)
    return sorted(set(problems))


@pytest.mark.parametrize("found", FOUND, ids=[f.where for f in FOUND])
def test_no_super_linear_shape(found):
    for pattern in found.patterns:
        problems = shapes(pattern, found.flags)
        assert not problems, f"{found.where}: {pattern!r}: " + "; ".join(problems)


@pytest.mark.parametrize("pattern,flags,problem", [
    (r"(a+)+b", 0, "a repeat of a repeat"),
    (r"(.*.*.*)*Z", 0, "a repeat of a repeat"),
    (r"(?:a+b|a+c)*d", 0, "an alternation whose branches overlap"),
    (r"x\s*\w*\s*y", 0, "two repeats that take the same characters"),
    (r'"?([^"\n]*)"?\s*$', 0, "two repeats that take the same characters"),
    (r"^\s*KEY", re.M, "^ then a repeat that takes newlines"),
    (rb"(?m)^\s*#", 0, "^ then a repeat that takes newlines"),
])
def test_the_shapes_are_seen(pattern, flags, problem):
    assert any(p.startswith(problem) for p in shapes(pattern, flags)), shapes(pattern, flags)


@pytest.mark.parametrize("pattern,flags", [
    (r"(?:\s*,\s*\w+)*", 0), (r"^(?:config)\s+(\w+)[ \t]*\n((?:(?:[ \t][^\n]*)?\n)*)", re.M),
    (r"KERNEL_VERSION\s*\(\s*(\d+)\s*,", 0), (r"^(?:[\w*]+\s+)*\w+\s*\(", 0),
    (r"^[ \t]*#[ \t]*define", re.M), (r"(?:[^\"\\]|\\.)*", 0),
])
def test_linear_shapes_pass(pattern, flags):
    assert shapes(pattern, flags) == []


# -- (b) the time ----------------------------------------------------------------------

def _inputs(pattern, flags: int) -> list:
    """Texts (as functions of a length) built from the pattern's own characters: each repeated
    character alone and in pairs, and each run of literal characters with them."""
    parsed = sre_parse.parse(pattern, flags)
    flags |= parsed.state.flags
    reps: list = []
    literals: list = []

    def walk(items, repeated: bool):
        run = ""
        for op, av in items:
            if op == sre_c.LITERAL:
                run += chr(av)
                continue
            if len(run) > 1:
                literals.append(run)
            run = ""
            if op in REPEATS:
                walk(av[2], repeated or av[1] > 1)
            elif op == sre_c.SUBPATTERN:
                walk(av[3], repeated)
            elif op == sre_c.BRANCH:
                for b in av[1]:
                    walk(b, repeated)
            elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
                walk(av[1], repeated)
            elif repeated:
                got = _charset(op, av, flags)
                pick = [c for c in " \t\n_a0(,=*" if c in got] or sorted(got)[:1]
                reps.extend(pick[:3])
        if len(run) > 1:
            literals.append(run)

    walk(parsed.data, False)
    first = parsed.data[0] if parsed.data else None
    lead = chr(first[1]) if first is not None and first[0] == sre_c.LITERAL else ""
    chars = list(dict.fromkeys(reps + [" ", "\n"]))[:8]
    texts = [lambda n, c=c: c * n + "\x01" for c in chars]
    texts += [lambda n, a=a, b=b: (a + b) * (n // 2) + "\x01" for a, b in itertools.combinations(chars, 2)]
    for lit in list(dict.fromkeys(literals))[:4]:
        texts += [lambda n, lit=lit, c=c: lit + c * n + "\x01" for c in chars[:3]]
        texts += [lambda n, lit=lit, c=c: lead + (lit + c) * (n // (len(lit) + 1)) for c in chars[:2]]
    return texts


def _took(regex, how: str, text) -> float:
    start = time.perf_counter()
    if how == "match":
        regex.match(text)
    elif how == "fullmatch":
        regex.fullmatch(text)
    else:
        for _ in regex.finditer(text):
            pass
    return time.perf_counter() - start


@pytest.mark.parametrize("found", FOUND, ids=[f.where for f in FOUND])
def test_time_linear_in_the_text(found):
    for pattern in found.patterns:
        regex = re.compile(pattern, found.flags)
        for make in _inputs(pattern, found.flags):
            for n in SIZES:
                text = make(n)
                data = text.encode("utf-8") if isinstance(pattern, bytes) else text
                took = _took(regex, found.how, data)
                if took > bound(n):
                    took = min(took, _took(regex, found.how, data))  # (once more: the machine is shared)
                assert took <= bound(n), f"{found.where}: {pattern!r} on {text[:40]!r}... ({n} characters): " \
                                         f"{took:.2f} s, over {bound(n):.2f} s"


def test_every_pattern_is_found():
    """The walk sees the package's patterns: module-level ones, in calls, bytes and str."""
    where = {f.where.split(":")[0] for f in FOUND}
    assert {"fix/compat.py", "scan/search.py", "mail.py", "inbox.py"} <= where
    assert len(FOUND) > 150
    assert any(isinstance(p, bytes) for f in FOUND for p in f.patterns)


__all__ = ["Path"]
