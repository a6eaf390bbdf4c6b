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
scope.py, nearness.py and ctext.py hold what they share. Nothing here knows the name of any
subsystem, file, field or wrapper: every fact comes from the C being read.
"""
from __future__ import annotations

from typing import Optional

from wqlint import api
from wqlint.scan import parser
from wqlint.scan.cpp import Decider
from wqlint.scan.ctext import c_string, parse_int, short
from wqlint.scan.fields import Fields
from wqlint.scan.flow import Flow, Keys
from wqlint.scan.functions import Functions
from wqlint.scan.index import TreeIndex
from wqlint.scan.locals import Locals
from wqlint.scan.macros import Macros
from wqlint.scan.scope import Scope, step_of
from wqlint.scan.structs import Structs
from wqlint.scan.symbols import Symbols
from wqlint.scan.values import Alt, Cond, Const, CpuCount, Mark, Op, Param, Str, Unknown, Value

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

    def __init__(self, index: TreeIndex):
        self.index = index
        self.structs = Structs(index)
        self.macros = Macros(self)
        self.functions = Functions(self)
        self.locals = Locals(self)
        self.symbols = Symbols(self)
        self.fields = Fields(self)
        self._keys: dict = {}
        self.budget = SITE_BUDGET
        self.home = ""  # the file of the allocation being resolved
        self.cpp: Optional[Decider] = None  # definitions in branches not compiled are not used
        self.conditional_steps: set = set()  # steps of definitions chosen by a decided #if
        # While a queue's name is resolved: a local that ++ or -- changes (a loop counter) is
        # not the value of its assignments, which is all flow.Flow sees; a struct field is not
        # followed (its assignments in the tree miss what snprintf() or strscpy() wrote, and
        # searching the tree for every field a name prints would cost much for nothing).
        self.naming = False

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
            self.budget -= 1
            if self.budget < 0:
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
        key, yes, no, shown = self.keys(scope).decision(cond_node)
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

    # -- helpers ---------------------------------------------------------------------------
    def keys(self, scope: Scope) -> Keys:
        """The identity of the decisions in scope's body (see values.Cond)."""
        node = scope.node
        if node is None:
            return Keys(None, (scope.src.rel, "file"))
        fn = (scope.src.rel, scope.chunk.first_line, node.start_byte)
        got = self._keys.get(fn)
        if got is None:
            got = self._keys[fn] = Keys(node.child_by_field_name("body"), fn)
        return got

    def flow(self, scope: Scope, use, is_target, declares) -> Optional[list]:
        """The assignments reaching use along each path through scope's body (flow.Flow)."""
        body = scope.node.child_by_field_name("body") if scope.node is not None else None
        if body is None:
            return None
        dead = None
        cpp = self.cpp
        if cpp is not None:
            dead = lambda n: cpp.state(scope.src, scope.chunk.line_of(n))[0]
        return Flow(body, use, is_target, declares, lambda n, note: step_of(scope, n, note),
                    self.keys(scope), dead).run()

    def from_states(self, states, label, scope, depth, seen, expand_params, unset) -> Value:
        """The value of an lvalue from the paths reaching its use: one option per path,
        each told apart by the decisions that lead there."""
        memo: dict = {}
        options = []
        # In the order of the text, as the assignments were listed before paths were told apart.
        states = sorted(states, key=lambda st: st.defs[-1].node.start_byte if st.defs else -1)
        for st in states:
            v: Optional[Value] = None
            for d in st.defs:
                if d.node.id not in memo:
                    memo[d.node.id] = self.resolve(d.rhs, scope, depth + 1, seen, expand_params)
                rhs = memo[d.node.id]
                if d.op in ("<=", "<"):  # a condition on the way caps it (flow.Flow.bounds)
                    cap = rhs if d.op == "<=" else Op(None, "-", (rhs, Const(None, 1)))
                    how = "at most" if d.op == "<=" else "below"
                    v = Alt(step_of(scope, d.node, f"{label} is {how} '{short(parser.text(d.rhs))}' here"),
                            (Op(None, "min", (v, cap)),), "", mark=Mark.ASSIGNMENT)
                    continue
                if d.op != "=":
                    rhs = Op(None, d.op[:-1], (v if v is not None else unset(d.node), rhs))
                v = Alt(step_of(scope, d.node, f"{label} = '{short(parser.text(d.rhs))}'"), (rhs,), "",
                        mark=Mark.ASSIGNMENT)
            assert v is not None, "Flow.run() keeps only the paths with an assignment"
            options.append(v)
        if len(options) == 1:
            return options[0]
        guards = tuple(st.guards for st in states) if any(st.guards for st in states) else ()
        return Alt(None, tuple(options), f"{len(options)} assignments to {label.split(' ', 1)[-1]}", guards)

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
