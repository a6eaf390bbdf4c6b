"""The assignments reaching a use in a function body, path by path (flow.Flow), and the Value
they give: what locals.py and fields.py share, and the identity of a body's decisions, which
the Resolver's ?: shares too (see values.Cond)."""
from __future__ import annotations

from typing import Optional

from wqlint.scan import parser
from wqlint.scan.asking import Asking
from wqlint.scan.ctext import short
from wqlint.scan.flow import Flow, Keys
from wqlint.scan.scope import Scope, step_of
from wqlint.scan.values import Alt, Const, Mark, Op, Value


class Reaching:
    """The paths through function bodies, for one Resolver; caches each body's Keys."""

    def __init__(self, ask: Asking):
        self.ask = ask
        self._keys: dict = {}

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
        cpp = self.ask.cpp
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
                    memo[d.node.id] = self.ask.resolve(d.rhs, scope, depth + 1, seen, expand_params)
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
