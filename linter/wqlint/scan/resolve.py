"""Resolution of a C expression to a symbolic Value, following the value wherever it travels.

The Resolver walks an expression's structure (parentheses, casts, operators, ?:) and hands
each name to the part of the resolution that knows it:
  locals.py     locals (the assignments that reach the use, path by path),
  functions.py  calls (return values, min/max/clamp, CPU counts) and parameters (every caller),
  symbols.py    globals, module parameters, enumerators and #defines (the file's, then the
                tree's headers),
  fields.py     struct fields (every assignment in the subsystem to a field of the same name
                on a compatible type), with structs.py telling the types,
  macros.py     function-like macros (their bodies with the arguments bound).
The parts see asking.py's Asking (what the allocation being resolved asks: its file, its
budget, whether a name is resolved, the #if decider, and resolve() for the names a value is
made of), never the Resolver. reaching.py follows the assignments reaching a use, path by path;
scope.py, nearness.py and ctext.py hold what they share. Nothing here knows the name of any
subsystem, file, field or wrapper: every fact comes from the C being read.
"""
from __future__ import annotations

from contextlib import contextmanager

from typing import Optional

from wqlint import api
from wqlint.scan import parser
from wqlint.scan.cpp import Decider
from wqlint.scan.asking import Asking
from wqlint.scan.ctext import c_string, parse_int, short
from wqlint.scan.fields import Fields
from wqlint.scan.functions import Functions
from wqlint.scan.index import TreeIndex
from wqlint.scan.locals import Locals
from wqlint.scan.macros import Macros
from wqlint.scan.reaching import Reaching
from wqlint.scan.scope import Scope, step_of
from wqlint.scan.structs import Structs
from wqlint.scan.symbols import Symbols
from wqlint.scan.values import Alt, Cond, Const, CpuCount, Op, Param, Str, Unknown, Value

CPU_COUNT_NAMES = frozenset(api.CPU_COUNT_NAMES)
CPU_COUNT_STATIC = api.CPU_COUNT_STATIC
BINOPS = {"+", "-", "*", "/", "%", "<<", ">>", "|", "&", "^"}
MAX_DEPTH = 14
MAX_NESTING = 200  # operators around one value; deeper is Unknown (Values stay shallow)
SITE_BUDGET = 20000  # expressions one allocation site may visit

_OPERATORS = frozenset({"unary_expression", "binary_expression", "conditional_expression"})


def _structure(node):
    """The operand nodes of an expression whose Value is made from theirs (parentheses,
    casts, unary and binary operators wqlint evaluates, ?:, comma), or None for a leaf."""
    t = node.type
    if t == "parenthesized_expression":
        return [c for c in node.named_children if c.type != "comment"][:1]
    if t == "cast_expression":
        return [node.child_by_field_name("value")]
    if t == "unary_expression":
        return [node.child_by_field_name("argument")]
    if t == "binary_expression":
        if parser.text(node.child_by_field_name("operator")) not in BINOPS:
            return None
        return [node.child_by_field_name("left"), node.child_by_field_name("right")]
    if t == "conditional_expression":
        return [node.child_by_field_name("consequence"), node.child_by_field_name("alternative")]
    if t == "comma_expression":
        return [node.child_by_field_name("right")]
    return None


class Resolver:
    """Resolves expressions to Values against a TreeIndex. One per run; caches lookups."""

    def __init__(self, index: TreeIndex, cpp: Optional[Decider] = None):
        self.index = index
        self.ask = Asking(self.resolve, cpp)
        self.ask.start("", SITE_BUDGET)
        self.reaching = Reaching(self.ask)
        self.structs = Structs(index)
        self.macros = Macros(index, self.ask)
        self.functions = Functions(index, self.ask, self.macros)
        self.locals = Locals(self.ask, self.reaching)
        self.symbols = Symbols(index, self.ask, self.macros)
        self.fields = Fields(index, self.ask, self.structs, self.reaching)

    def start(self, home: str) -> None:
        """A new allocation, in the file home: a full budget of expressions to visit."""
        self.ask.start(home, SITE_BUDGET)

    @contextmanager
    def naming(self):
        """While the name of a queue is resolved: a buffer's printf format is kept
        (asking.Asking.naming)."""
        self.ask.naming = True
        try:
            yield
        finally:
            self.ask.naming = False

    @contextmanager
    def homed(self, home: str):
        """While the arguments of a wrapper's call in the file home are resolved: that is the
        subsystem whose helpers they may go through."""
        was, self.ask.home = self.ask.home, home
        try:
            yield
        finally:
            self.ask.home = was

    @property
    def conditional_steps(self) -> set:
        """The steps of definitions chosen by a decided #if."""
        return self.symbols.conditional_steps

    def new_round(self) -> None:
        """Forget answers that were given before their names had been looked up."""
        self.symbols.forget_pending()
        self.fields.forget_pending()

    # -- entry -------------------------------------------------------------------------
    def resolve(self, node, scope: Scope, depth: int = 0, seen: frozenset = frozenset(),
                expand_params: bool = False) -> Value:
        """The Value of expression node. Its structure (parentheses, casts, operators, ?:) is
        walked with an explicit stack, so any nesting the parser accepts is safe; only names
        (calls, identifiers, fields) recurse, at most MAX_DEPTH deep."""
        if node is None:
            return Unknown(None, "missing expression")
        if depth > MAX_DEPTH:
            return Unknown(None, "chain too long")
        ask = self.ask
        results: list = []
        todo = [(node, False, 0)]
        while todo:
            n, combine, level = todo.pop()
            if combine:
                k = len(_structure(n))
                args = results[len(results) - k:]
                del results[len(results) - k:]
                results.append(self._combine(n, args, scope))
                continue
            ask.budget -= 1
            if ask.budget < 0:
                results.append(Unknown(None, "too many paths to follow"))
                continue
            if n is None:
                results.append(Unknown(None, "missing expression"))
                continue
            kids = _structure(n)
            if kids is None:
                results.append(self._leaf(n, scope, depth, seen, expand_params))
            elif level >= MAX_NESTING:
                results.append(Unknown(None, f"expression nested more than {MAX_NESTING} levels"))
            else:
                todo.append((n, True, level))
                # parentheses, casts and commas add no node to the Value: not counted
                deeper = level + (n.type in _OPERATORS)
                todo.extend((k, False, deeper) for k in reversed(kids))
        return results[0]

    def _combine(self, node, args: list, scope: Scope) -> Value:
        """The Value of a structural node from the Values of its _structure() children."""
        t = node.type
        if t == "parenthesized_expression":
            return args[0] if args else Unknown(None, "empty parentheses")
        if t in ("cast_expression", "comma_expression"):
            return args[0]
        if t == "unary_expression":
            op = parser.text(node.child_by_field_name("operator"))
            arg = args[0]
            return {"-": lambda: Op(None, "neg", (arg,)), "~": lambda: Op(None, "~", (arg,)),
                    "!": lambda: Op(None, "!", (arg,)), "+": lambda: arg}.get(op, lambda: Unknown(None, op))()
        if t == "binary_expression":
            return Op(None, parser.text(node.child_by_field_name("operator")), (args[0], args[1]))
        # conditional_expression: each option is told apart by the condition (see values.Cond)
        cond_node = node.child_by_field_name("condition")
        cond = parser.text(cond_node)
        key, yes, no, shown = self.reaching.keys(scope).decision(cond_node)
        guards = ((Cond(key, yes, step_of(scope, node, f"'{shown}' is true")),),
                  (Cond(key, no, step_of(scope, node, f"'{shown}' is false")),))
        return Alt(step_of(scope, node, f"conditional on '{short(cond)}'"), (args[0], args[1]), "ternary",
                   guards)

    def _leaf(self, node, scope: Scope, depth: int, seen: frozenset, expand_params: bool) -> Value:
        t = node.type
        if t == "number_literal":
            v = parse_int(parser.text(node))
            return Const(None, v) if v is not None else Unknown(None, f"literal {parser.text(node)}")
        if t == "binary_expression":  # an operator wqlint does not evaluate
            return Unknown(None, f"'{parser.text(node.child_by_field_name('operator'))}' expression")
        if t == "call_expression":
            return self.functions.call(node, scope, depth, seen, expand_params)
        if t == "identifier":
            return self._identifier(node, scope, depth, seen, expand_params)
        if t == "field_expression":
            return self.fields.field(node, scope, depth, seen, expand_params)
        if t in ("sizeof_expression", "alignof_expression"):
            return Unknown(None, "sizeof")
        if t == "string_literal":
            text = c_string(parser.text(node))
            return Str(None, text) if text is not None else Unknown(None, f"literal {short(parser.text(node))}")
        if t == "concatenated_string":  # "a" "b", or DRV_NAME "_wq": joined at compile time
            parts = tuple(self.resolve(c, scope, depth, seen, expand_params) for c in node.named_children
                          if c.type != "comment")
            return Op(None, "cat", parts)
        return Unknown(None, f"{t.replace('_', ' ')} '{short(parser.text(node))}'")

    # -- identifiers -------------------------------------------------------------------------
    def _identifier(self, node, scope: Scope, depth, seen, expand_params) -> Value:
        name = parser.text(node)
        if name in CPU_COUNT_NAMES:
            return CpuCount(step_of(scope, node, f"CPU count {name}"), name)
        if name in CPU_COUNT_STATIC:
            return CpuCount(step_of(scope, node, f"CPU count {name} (CONFIG_NR_CPUS, "
                                    f"{CPU_COUNT_STATIC[name]} on distribution kernels)"),
                            name, CPU_COUNT_STATIC[name])
        if scope.kind in ("function", "macro"):
            idx = scope.param_index(name)
            if idx >= 0:
                param = Param(step_of(scope, node, f"'{name}' is parameter {idx + 1} of {scope.name}()"),
                              scope.name, idx, name)
                if expand_params and scope.kind == "function":
                    return self.functions.expand_param(param, scope, depth + 1, seen)
                return param
            if name in scope.local_decls():
                return self.locals.local(name, node, scope, depth, seen, expand_params)
        return self.symbols.symbol(name, scope, depth + 1, seen)
