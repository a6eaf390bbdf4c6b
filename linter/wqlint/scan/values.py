"""Symbolic values for flags and max_active, and their evaluation.

A resolved argument is a small expression tree. Leaves are constants, CPU counts, parameters
of an enclosing wrapper, and unknowns; inner nodes are arithmetic, min/max/clamp, and
alternatives (several assignments reach the call, a ternary, #ifdef twins). Each node may
carry the Step that explains where it came from, so a finding can show the chain from the
call back to the CPU count.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Optional

from wqlint.finding import Step

MAX_SET = 64  # alternatives kept when evaluating; more means "too many to say"


@dataclass(frozen=True)
class Value:
    step: Optional[Step]


@dataclass(frozen=True)
class Const(Value):
    value: int


@dataclass(frozen=True)
class CpuCount(Value):
    kind: str  # e.g. "num_online_cpus()"
    static_max: Optional[int] = None  # NR_CPUS-like: a compile-time bound, not a count


@dataclass(frozen=True)
class Unknown(Value):
    why: str


@dataclass(frozen=True)
class Param(Value):
    function: str
    index: int  # position of the parameter (for macros: of the macro parameter)
    name: str


@dataclass(frozen=True)
class Tunable(Value):
    default: Value
    how: str  # "module parameter 'x'" ...


@dataclass(frozen=True)
class Op(Value):
    op: str  # + - * / % << >> | & ^ ~ neg ! min max clamp
    args: tuple


@dataclass(frozen=True)
class Alt(Value):
    options: tuple
    why: str  # "2 assignments", "ternary", ...


def with_step(value: Value, step: Optional[Step]) -> Value:
    """Wrap value so that step is recorded above it in the chain (Alt of one option)."""
    if step is None:
        return value
    return Alt(step, (value,), "")


def _apply(op: str, xs: tuple) -> Optional[int]:
    try:
        if op == "min":
            return min(xs)
        if op == "max":
            return max(xs)
        if op == "clamp":
            return max(xs[1], min(xs[0], xs[2]))
        if op == "~":
            return ~xs[0]
        if op == "neg":
            return -xs[0]
        if op == "!":
            return int(not xs[0])
        a, b = xs
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return int(a / b) if b else None
        if op == "%":
            return a % b if b else None
        if op == "<<":
            return a << b if 0 <= b < 64 else None
        if op == ">>":
            return a >> b if 0 <= b < 64 else None
        if op == "|":
            return a | b
        if op == "&":
            return a & b
        if op == "^":
            return a ^ b
    except (TypeError, ValueError):
        return None
    return None


def evaluate(value: Value, ncpus: int) -> tuple:
    """(set of possible ints, complete) on a machine with ncpus CPUs.

    complete is False when some alternative could not be evaluated (unknown, parameter).
    Walked with an explicit stack: a Value may be as deep as the expression it came from.
    """
    results: list = []
    todo = [(value, False)]
    while todo:
        v, combine = todo.pop()
        kids = children(v)
        if not combine:
            if isinstance(v, Const):
                results.append(({v.value}, True))
            elif isinstance(v, CpuCount):
                results.append(({v.static_max if v.static_max is not None else ncpus}, True))
            elif isinstance(v, (Alt, Op, Tunable)):
                todo.append((v, True))
                todo.extend((k, False) for k in reversed(kids))
            else:  # Unknown, Param
                results.append((set(), False))
            continue
        got = results[len(results) - len(kids):]
        del results[len(results) - len(kids):]
        results.append(_combine(v, got))
    return results[0]


def _combine(value: Value, got: list) -> tuple:
    """evaluate() of an inner node from its children's (set, complete)."""
    if isinstance(value, Tunable):
        return got[0]
    if isinstance(value, Alt):
        out, complete = set(), True
        for vals, ok in got:
            out |= vals
            complete = complete and ok
        return out, complete
    sets, complete = [], True
    for vals, ok in got:
        complete = complete and ok
        if not vals:
            return set(), False
        sets.append(sorted(vals)[:MAX_SET])
    out = set()
    for combo in itertools.product(*sets):
        r = _apply(value.op, combo)
        if r is None:
            complete = False
        else:
            out.add(r)
        if len(out) > MAX_SET:
            break
    return out, complete


def children(value: Value) -> tuple:
    if isinstance(value, Op):
        return value.args
    if isinstance(value, Alt):
        return value.options
    if isinstance(value, Tunable):
        return (value.default,)
    return ()


def walk(value: Value):
    """Every node of value, parents before children, in order."""
    todo = [value]
    while todo:
        v = todo.pop()
        yield v
        todo.extend(reversed(children(v)))


def find_path(value: Value, pred) -> Optional[list]:
    """Shortest list of nodes from value down to a node matching pred, or None."""
    best = None
    stack = [(value, [value])]
    while stack:
        node, path = stack.pop()
        if pred(node):
            if best is None or len(path) < len(best):
                best = path
            continue
        for child in children(node):
            stack.append((child, path + [child]))
    return best


def cpu_path(value: Value) -> Optional[list]:
    """The path to the CPU count this value is derived from, if any.

    A CPU count that only feeds a comparison or a mask does not make the value CPU-derived;
    arithmetic, min/max/clamp and alternatives do.
    """
    return find_path(value, lambda v: isinstance(v, CpuCount))


def tunables(value: Value) -> list:
    return [v for v in walk(value) if isinstance(v, Tunable)]


def params(value: Value) -> list:
    return [v for v in walk(value) if isinstance(v, Param)]


def has_unknown(value: Value) -> bool:
    return any(isinstance(v, (Unknown, Param)) for v in walk(value))


def substitute(value: Value, bind) -> Value:
    """Replace Param leaves by bind(param) (a Value), rebuilding the tree."""
    return _rebuild(value, lambda v: bind(v) if isinstance(v, Param) else None, lambda v, kids: kids)


def _rebuild(value: Value, leaf, pick) -> Value:
    """value rebuilt bottom-up with an explicit stack: leaf(v) replaces a node outright (None:
    keep going), pick(v, children) chooses which children of an Alt to keep."""
    results: list = []
    todo = [(value, False)]
    while todo:
        v, combine = todo.pop()
        if not combine:
            got = leaf(v)
            if got is not None:
                results.append(got)
            elif isinstance(v, (Op, Alt, Tunable)):
                kids = pick(v, children(v)) if isinstance(v, Alt) else children(v)
                todo.append((v, True))
                todo.extend((k, False) for k in reversed(kids))
            else:
                results.append(v)
            continue
        n = len(pick(v, children(v))) if isinstance(v, Alt) else len(children(v))
        kids = tuple(results[len(results) - n:])
        del results[len(results) - n:]
        if isinstance(v, Op):
            results.append(Op(v.step, v.op, kids))
        elif isinstance(v, Alt):
            results.append(Alt(v.step, kids, v.why))
        else:
            results.append(Tunable(v.step, kids[0], v.how))
    return results[0]


def steps_in(value: Value) -> list:
    """Every step recorded anywhere in value, each once, from the call towards the origins."""
    out, seen = [], set()
    for node in walk(value):
        if node.step is not None and node.step not in seen:
            seen.add(node.step)
            out.append(node.step)
    return out


def steps_along(path: list) -> list:
    """Steps recorded on a path, without repeating the same step twice in a row."""
    out = []
    for node in path:
        step = node.step
        if step is None:
            continue
        if out and out[-1] == step:
            continue
        out.append(step)
    return out


def project(value: Value, path: list) -> Value:
    """value with every alternative on path narrowed to the option path goes through.

    The chain to a CPU count is one way the value is made; other assignments (a mount option
    set at run time, another caller) are not what the message should quantify.
    """
    on_path = {id(n) for n in path}

    def keep(v: Value, options: tuple) -> tuple:
        return tuple(o for o in options if id(o) in on_path) or options
    return _rebuild(value, lambda v: None, keep)
