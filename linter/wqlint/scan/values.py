"""Symbolic values for flags and max_active, and their evaluation.

A resolved argument is a small expression tree. Leaves are constants, CPU counts, parameters
of an enclosing wrapper, and unknowns; inner nodes are arithmetic, min/max/clamp, and
alternatives (several assignments reach the call, a ternary, #ifdef twins). Each node may
carry the Step that explains where it came from, so a finding can show the chain from the
call back to the CPU count.
"""
from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field, replace
from typing import Optional, Union

from wqlint.finding import Step

MAX_SET = 64  # alternatives kept when evaluating; more means "too many to say"
MAX_OPTIONS = 48  # assignments, callers or returns kept as the options of one Alt


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
    # Unknown only because a name has not been looked up in the index yet: a later round,
    # after the lookup, may know it (resolve.Resolver.new_round forgets such answers).
    pending: bool = field(default=False, compare=False)
    # A local buffer a snprintf()-like call fills: the format it prints from. Not the
    # buffer's value (the arguments are formatted into it); what shows a queue named from it
    # as the kernel's warnings show a format ("zfcp_q_%s").
    printed: Optional[Value] = field(default=None, compare=False)
    printed_args: tuple[Value, ...] = field(default=(), compare=False)  # the Values its format prints


@dataclass(frozen=True)
class Str(Value):
    """The bytes of a C string literal, escapes decoded (a workqueue's name). Adjacent
    literals and macros are joined by Op "cat"; evaluate() knows no strings: they are read by
    strings_of()."""

    text: bytes


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
    args: tuple[Optional[Value], ...]  # (None: a bound met before any assignment, resolve.py)


@dataclass(frozen=True)
class Cond:
    """One arm of a decision in the C: an if, a switch, a ternary, a loop, an #ifdef.

    key names the decision: two decisions with the same key always take the same arm
    (the same condition text, with none of its variables assigned in between).
    """

    key: tuple[Union[str, int, tuple[Union[str, int], ...]], ...]
    arm: str  # "true", "false", a case label, "default", "none", "entered", "skipped"
    step: Step  # the decision's line, the note naming the arm taken


class Mark(enum.Enum):
    """What an Alt of one option stands for in a chain, where code asks (Alt.why says it to
    a reader)."""

    CONDITION = "condition"  # a decision narrow() took: its step names the arm
    ASSIGNMENT = "assignment"  # an assignment, or a bound, on a path through a function (resolve.py)


@dataclass(frozen=True)
class Alt(Value):
    options: tuple[Value, ...]
    why: str  # "2 assignments", "ternary", ...
    # Per option, the arms (tuple of Cond) of the decisions that lead to it; () when the
    # options are not told apart by any decision of the C (several assignments to a field).
    guards: tuple[tuple[Cond, ...], ...] = ()
    mark: Optional[Mark] = None


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
    def leaf(v: Value) -> tuple:
        if isinstance(v, Const):
            return {v.value}, True
        if isinstance(v, CpuCount):
            return {v.static_max if v.static_max is not None else ncpus}, True
        return set(), False  # Unknown, Param

    return fold(value, leaf, _combine)


def fold(value: Optional[Value], leaf, inner, memo: Optional[dict] = None):
    """The one walk over the kinds of Value: leaf(v) for a node without parts (a None among
    Op.args too), inner(v, [the results of its parts]) for a node of INNER, bottom-up with an
    explicit stack, as a Value may be as deep as the expression it came from. With memo (a
    dict), a node met again (shared by several parents) is not walked again: its result is
    reused. What each kind of node is made of is said by children() and rebuilt() alone."""
    results: list = []
    todo = [(value, False)]
    while todo:
        v, combine = todo.pop()
        if combine:
            n = len(children(v))
            got = results[len(results) - n:]
            del results[len(results) - n:]
            r = inner(v, got)
        elif memo is not None and id(v) in memo:
            r = memo[id(v)][1]
        elif isinstance(v, INNER):
            todo.append((v, True))
            todo.extend((k, False) for k in reversed(children(v)))
            continue
        else:
            r = leaf(v)
        if memo is not None:
            memo[id(v)] = (v, r)  # v kept: its id is not reused while memo lives
        results.append(r)
    return results[0]


def _combine(value: Value, got: list) -> tuple:
    """evaluate() of an inner node from its children's (set, complete)."""
    if isinstance(value, Tunable):
        return got[0]
    if isinstance(value, Alt):
        return _either(got)
    assert isinstance(value, Op)
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


def _either(got: list) -> tuple:
    """(set, complete) of an alternative from its options' (set, complete)."""
    out, complete = set(), True
    for vals, ok in got:
        out |= vals
        complete = complete and ok
    return out, complete


def strings_of(value: Optional[Value], distrust=lambda v: False) -> tuple:
    """(set of the byte strings value can be, complete): Str leaves, alternatives and "cat"
    joins. complete is False when a part is no string wqlint knows (a parameter, an unknown,
    a number) or a node distrust(node) rejects."""
    def leaf(v) -> tuple:
        if isinstance(v, Str) and not distrust(v):
            return {v.text}, True
        return set(), False

    def inner(v: Value, got: list) -> tuple:
        if distrust(v):
            return set(), False
        if isinstance(v, Alt):
            return _either(got)
        if isinstance(v, Op) and v.op == "cat":
            acc, complete = {b""}, True
            for vals, ok in got:
                if not vals:
                    return set(), False
                complete = complete and ok
                acc = {a + b for a in acc for b in vals}
                if len(acc) > MAX_SET:
                    return set(), False
            return acc, complete
        return set(), False
    return fold(value, leaf, inner)


# -- the kinds of Value, by what they are made of -------------------------------------------
# The nodes made of other Values. children() and rebuilt() are the only places that say what
# each is made of: fold() and walk() visit every kind through them, so a new kind is added
# here (and given its meaning where one is asked of it: evaluate(), strings_of()...).
INNER = (Alt, Op, Tunable)


def children(value: Optional[Value]) -> tuple:
    """The parts of value, in order: () for a leaf."""
    if isinstance(value, Op):
        return value.args
    if isinstance(value, Alt):
        return value.options
    if isinstance(value, Tunable):
        return (value.default,)
    return ()


def rebuilt(value: Value, step: Optional[Step], kids: tuple) -> Value:
    """A node of value's kind with step and kids (one for each of children(value)) in place
    of its own; a leaf with step. An Alt keeps its why and guards: kids are its options."""
    if isinstance(value, Op):
        return Op(step, value.op, kids)
    if isinstance(value, Alt):
        return Alt(step, kids, value.why, value.guards, value.mark)
    if isinstance(value, Tunable):
        return Tunable(step, kids[0], value.how)
    return value if step is value.step else replace(value, step=step)


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


_CALLS = {"min", "max", "clamp"}
_PREFIX = {"neg": "-", "~": "~", "!": "!"}


def show(value: Value, limit: int = 60) -> Optional[str]:
    """The expression value stands for, written as C ('num_online_cpus() + 2', 'min(
    num_online_cpus(), 8)'), or None when it holds what is not an expression of constants
    and CPU counts (a parameter, an unknown, alternatives) or is longer than limit."""
    def leaf(v: Optional[Value]) -> Optional[str]:
        if isinstance(v, Const):
            return str(v.value)
        if isinstance(v, CpuCount):
            return v.kind
        return None

    def text(v: Value, args: list) -> Optional[str]:
        if isinstance(v, Alt) and len(v.options) == 1:
            return args[0]
        if isinstance(v, Op):
            if any(a is None for a in args):
                return None
            if v.op in _CALLS:
                return f"{v.op}({', '.join(args)})"
            if v.op in _PREFIX and len(args) == 1:
                return f"{_PREFIX[v.op]}{args[0]}"
            if len(args) == 2:
                return f"{args[0]} {v.op} {args[1]}"
        return None
    got = fold(value, leaf, text)
    return got if got is not None and len(got) <= limit else None


def tunables(value: Value) -> list:
    return [v for v in walk(value) if isinstance(v, Tunable)]


def params(value: Value) -> list:
    return [v for v in walk(value) if isinstance(v, Param)]


def has_unknown(value: Value) -> bool:
    return any(isinstance(v, (Unknown, Param)) for v in walk(value))


def has_pending(value: Value) -> bool:
    """Is some part of value unknown only because a name has not been looked up yet?"""
    return any(isinstance(v, Unknown) and v.pending for v in walk(value))


def substitute(value: Value, bind) -> Value:
    """Replace Param leaves by bind(param) (a Value), rebuilding the tree."""
    return _rebuild(value, lambda v: bind(v) if isinstance(v, Param) else v, lambda v: range(len(v.options)))


def _rebuild(value: Value, leaf, pick) -> Value:
    """value rebuilt bottom-up: leaf(v) for each leaf, pick(alt) the positions of the options
    of an Alt to keep."""
    def inner(v: Value, kids: list) -> Value:
        if not isinstance(v, Alt):
            return rebuilt(v, v.step, tuple(kids))
        at = pick(v)
        guards: tuple = ()
        if v.guards:  # the decisions of the options kept (an option met twice: its last)
            last = {id(o): i for i, o in enumerate(v.options)}
            guards = tuple(v.guards[last[id(v.options[i])]] for i in at)
        return Alt(v.step, tuple(kids[i] for i in at), v.why, guards, v.mark)
    return fold(value, leaf, inner)


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
    out: list = []
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

    def keep(v: Alt) -> list:
        return [i for i, o in enumerate(v.options) if id(o) in on_path] or list(range(len(v.options)))
    return _rebuild(value, lambda v: v, keep)


def known_bound(value: Value) -> Value:
    """value as far as it is known, for asking how large it can get: an alternative that
    cannot be evaluated (a mount option, another caller's argument) is left out when others
    can be; min() and clamp() are bounded by their known arguments (min(token,
    num_online_cpus()) is at most the CPU count, whatever token is), max() is at least its
    known ones. Anything else unknown stays unknown."""
    return fold(value, lambda v: v, _bound_of)


def _bound_of(v: Value, got: list) -> Value:
    """known_bound() of an inner node from its parts' bounds."""
    parts = tuple(got)
    known = [k for k in parts if not has_unknown(k)]
    if isinstance(v, Alt):
        at = [i for i, k in enumerate(parts) if not has_unknown(k)]
        if not at or len(at) == len(parts):
            at = list(range(len(parts)))
        guards = tuple(v.guards[i] for i in at) if v.guards else ()
        return Alt(v.step, tuple(parts[i] for i in at), v.why, guards, v.mark)
    if isinstance(v, Op) and v.op in ("min", "max") and known and len(known) < len(parts):
        return known[0] if len(known) == 1 else Op(v.step, v.op, tuple(known))
    if isinstance(v, Op) and v.op == "clamp" and len(parts) == 3 and has_unknown(parts[0]) \
            and not has_unknown(parts[1]) and not has_unknown(parts[2]):
        return Op(v.step, "max", (parts[1], parts[2]))  # clamp(x, lo, hi) reaches hi
    return rebuilt(v, v.step, parts)


# -- paths ----------------------------------------------------------------------------------
MAX_CASES = 64  # combinations of decision arms judged one by one; more: judged together


def decision_arms(value: Value) -> dict:
    """key -> arms seen, for every decision that tells options of value apart."""
    out: dict = {}
    for v in walk(value):
        if isinstance(v, Alt) and v.guards:
            for guard in v.guards:
                for cond in guard:
                    arms = out.setdefault(cond.key, [])
                    if cond.arm not in arms:
                        arms.append(cond.arm)
    return out


def narrow(value: Value, choice: dict, mark: bool = True) -> Optional[Value]:
    """value on the paths where each decision in choice takes its arm; None when no such
    path reaches it. With mark, each decision passed is recorded as a step of the chain.
    (A node shared by several parents is narrowed once.)"""
    def inner(v: Value, got: list) -> Optional[Value]:
        if not isinstance(v, Alt):
            return None if any(k is None for k in got) else rebuilt(v, v.step, tuple(got))
        opts, guards = [], []
        for i, n in enumerate(got):
            guard = v.guards[i] if v.guards else ()
            if any(c.key in choice and choice[c.key] != c.arm for c in guard):
                continue
            if n is None:
                continue
            if mark:
                for c in reversed(guard):
                    if c.key in choice:
                        n = Alt(c.step, (n,), "", mark=Mark.CONDITION)
            opts.append(n)
            guards.append(tuple(c for c in guard if c.key not in choice))
        return Alt(v.step, tuple(opts), v.why, tuple(guards) if any(guards) else (), v.mark) if opts else None
    return fold(value, lambda v: v, inner, {})


def cases(values: tuple, keys=None, mark: bool = True, dedupe: bool = True) -> list:
    """[(choice, narrowed values)]: the values on each combination of the arms of the
    decisions in keys (default: every decision telling options apart), leaving out the
    combinations no path takes. One case, the values unchanged, when there is nothing to
    tell apart or too much."""
    arms: dict = {}
    for v in values:
        for k, a in decision_arms(v).items():
            have = arms.setdefault(k, [])
            have.extend(x for x in a if x not in have)
    if keys is not None:
        arms = {k: a for k, a in arms.items() if k in keys}
    if not arms:
        return [({}, tuple(values))]
    total = 1
    for a in arms.values():
        total *= len(a)
    if total > MAX_CASES:
        return [({}, tuple(values))]
    out, seen = [], set()
    names = list(arms)
    for combo in itertools.product(*(arms[k] for k in names)):
        choice = dict(zip(names, combo))
        narrowed = tuple(n for n in (narrow(v, choice, mark) for v in values) if n is not None)
        if len(narrowed) < len(values):  # a value impossible under this choice
            continue
        # Decisions that change nothing for these values give the same case twice.
        if dedupe:
            sig = tuple(_shape(n) for n in narrowed)
            if sig in seen:
                continue
            seen.add(sig)
        out.append((choice, narrowed))
    return out or [({}, tuple(values))]


def _shape(value: Value):
    """A comparable form of value without the steps of decisions (for deduplication): the
    leaves themselves; an inner node its kind, what it is besides its step and parts (the
    operator, an alternative's step) and its parts' forms."""
    def inner(v: Value, got: list):
        if isinstance(v, Alt):
            if v.mark is Mark.CONDITION and len(v.options) == 1:
                return got[0]
            return ("a", v.step, tuple(got))
        if isinstance(v, Op):
            return ("o", v.op, tuple(got))
        return (type(v).__name__, tuple(got))
    return fold(value, lambda v: v, inner)


def condition_steps(value: Value) -> list:
    """The decisions (marked by narrow) and the assignments on the way to value's leaves."""
    out = []
    for v in walk(value):
        if isinstance(v, Alt) and v.step is not None and v.mark is not None:
            if v.step not in out:
                out.append(v.step)
    return out


def decisions_taken(value: Value) -> list:
    """The steps of the decisions narrow() recorded in value."""
    return [v.step for v in walk(value) if isinstance(v, Alt) and v.mark is Mark.CONDITION]
