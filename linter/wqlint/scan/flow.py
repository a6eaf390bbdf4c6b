"""Which assignments reach a use, path by path, and which decisions lead there.

A walk over the statements of one function body, in order: if/else, switch (fall-through,
break, default), loops (run once or not at all), goto to a label further down, return,
#ifdef inside the body. Each state is one way of getting to the current point: the
assignments to the tracked lvalue since its last plain '=', and the arms of the decisions
taken that matter for it. States that reach the same value through every live arm of a
decision are merged, so a decision that changes nothing for the value leaves no trace, and
one whose other arm returns is implied by getting here at all.

The walk gives up (None) where the order of execution is not the order of the text: a goto
back to a label above it, too many distinct states. The caller then falls back to taking
every assignment before the use.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from wqlint.scan import parser
from wqlint.scan.ctext import short
from wqlint.scan.values import Cond

MAX_STATES = 32


@dataclass(frozen=True)
class Def:
    node: object  # the assignment or init_declarator
    rhs: object
    op: str  # "=", "|=", "+=", ...


@dataclass(frozen=True)
class State:
    guards: tuple  # of Cond, in the order the decisions were taken
    defs: tuple  # of Def since the last plain assignment; () when none on this path


class GiveUp(Exception):
    pass


class _Found(Exception):
    pass


_LOOPS = ("for_statement", "while_statement", "do_statement")


class Flow:
    """Reaching assignments of one lvalue at one use in one function body.

    is_target(left) says whether an assignment's left side is the tracked lvalue;
    declares(init_declarator) whether a declaration initialises it; step(node, note) makes
    the Step of a decision.
    """

    def __init__(self, body, use, is_target: Callable, declares: Callable, step: Callable,
                 keys: "Keys", dead: Optional[Callable] = None):
        self.dead = dead or (lambda node: False)  # is node in an #if branch not compiled?
        self.body = body
        self.use = use
        self.is_target = is_target
        self.declares = declares
        self.step = step
        self.keys = keys
        self.found: Optional[list] = None
        self.active = True  # False while walking a loop body once, without the use
        self.breaks: list = []  # stack of lists of states leaving a switch or loop by break
        self.continues: list = []
        self.pending: dict = {}  # label -> states jumping there
        self.seen_labels: set = set()
        self.alive: dict = {}  # decision key -> arms from which some state may reach the use
        self.labels_after_use: set = set()
        self.backward = False
        self._scan_labels()

    # -- entry ---------------------------------------------------------------------------
    def run(self) -> Optional[list]:
        """[State] at the use, or None when the walk cannot be trusted."""
        if self.backward:
            return None
        try:
            self.stmt(self.body, [State((), ())])
        except _Found:
            pass
        except (GiveUp, RecursionError):
            return None
        # A path on which the lvalue is never assigned (declared without a value, or set
        # through a pointer wqlint does not follow) says nothing about its value.
        found = [s for s in (self.found or []) if s.defs]
        if not found:
            return None
        return self.simplify_final(found)

    def _scan_labels(self) -> None:
        labels, gotos = {}, []
        for n in parser.descendants(self.body):
            if n.type == "labeled_statement":
                labels[parser.text(n.child_by_field_name("label"))] = n.start_byte
            elif n.type == "goto_statement":
                gotos.append((parser.text(n.child_by_field_name("label")), n.start_byte))
        self.labels_after_use = {name for name, at in labels.items() if at > self.use.start_byte}
        # A jump back to a label above the use: execution order is not the order of the text.
        self.backward = any(name in labels and labels[name] < at and labels[name] <= self.use.start_byte
                            for name, at in gotos)

    # -- statements ------------------------------------------------------------------------
    def contains_use(self, node) -> bool:
        return self.active and node.start_byte <= self.use.start_byte < node.end_byte

    def stmt(self, node, states: list) -> list:
        if not states and not self.contains_use(node) and node.type != "labeled_statement" \
                and not _has_label(node):
            return []
        t = node.type
        if t == "compound_statement" or t == "translation_unit":
            for child in node.named_children:
                states = self.stmt(child, states)
            return states
        if t == "if_statement":
            return self.if_stmt(node, states)
        if t == "switch_statement":
            return self.switch_stmt(node, states)
        if t in _LOOPS:
            return self.loop(node, states)
        if t in ("preproc_if", "preproc_ifdef", "preproc_elif"):
            return self.preproc(node, states)
        if t == "preproc_else":
            for child in node.named_children:
                states = self.stmt(child, states)
            return states
        if t == "labeled_statement":
            name = parser.text(node.child_by_field_name("label"))
            self.seen_labels.add(name)
            states = self.merge(states + self.pending.pop(name, []))
            for child in node.named_children:
                if child.type != "statement_identifier":
                    states = self.stmt(child, states)
            return states
        if t == "return_statement":
            self.expr(node, states)
            return []
        if t == "goto_statement":
            name = parser.text(node.child_by_field_name("label"))
            if name in self.seen_labels:
                raise GiveUp()
            if name not in self.labels_after_use:
                self.pending.setdefault(name, []).extend(states)
            return []
        if t == "break_statement":
            if self.breaks:
                self.breaks[-1].extend(states)
            return []
        if t == "continue_statement":
            if self.continues:
                self.continues[-1].extend(states)
            return []
        if t in ("comment", "preproc_call", "preproc_def", "preproc_function_def", "preproc_include",
                 "type_definition", "empty_statement"):
            return states
        if t == "declaration":
            return self.declaration(node, states)
        if t == "expression_statement":
            return self.expr(node, states)
        if t == "attributed_statement":
            for child in node.named_children:
                if child.type != "attribute_declaration":
                    states = self.stmt(child, states)
            return states
        # Anything else (an ERROR node, a statement tree-sitter did not recognise): only
        # safe when it neither holds the use nor assigns the lvalue.
        if self.contains_use(node) or self.assigns_in(node):
            raise GiveUp()
        return states

    def declaration(self, node, states):
        if self.contains_use(node):
            self.reach(states)
        for child in node.children_by_field_name("declarator"):
            if child.type == "init_declarator" and self.declares(child):
                states = self.merge([State(s.guards, (Def(child, child.child_by_field_name("value"), "="),))
                                     for s in states])
            elif child.type != "init_declarator" and self.declares(child):
                states = [State(s.guards, ()) for s in states]
        return states

    def expr(self, node, states):
        """Assignments to the lvalue inside an expression, in order; the use, if there."""
        for assign in self.assignments(node):
            if self.contains_use(node) and assign.start_byte >= self.use.start_byte:
                break
            if _under_branching(assign, node):
                raise GiveUp()  # an assignment in only some evaluations of the expression
            op = parser.text(assign.child_by_field_name("operator"))
            d = Def(assign, assign.child_by_field_name("right"), op)
            states = [State(s.guards, (d,) if op == "=" else s.defs + (d,)) for s in states]
            if op == "=":
                states = self.merge(states)  # the paths that led here no longer matter
        if self.contains_use(node):
            self.reach(states)
        return states

    def assignments(self, node) -> list:
        out = []
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == "assignment_expression" and self.is_target(n.child_by_field_name("left")):
                out.append(n)
            stack.extend(reversed(n.named_children))
        out.sort(key=lambda n: n.start_byte)
        return out

    def assigns_in(self, node) -> bool:
        return bool(self.assignments(node))

    def reach(self, states) -> None:
        if self.active:
            self.found = list(states)
            raise _Found()

    # -- decisions -------------------------------------------------------------------------
    def branch(self, node, key: tuple, arms: list, states: list, bounds: Optional[dict] = None) -> list:
        """Run each arm (name, statement or None, step) from states; merge what comes out.
        bounds: arm -> Def that holds on entering it, on the paths the lvalue was set on."""
        outs = []
        live = self.alive.setdefault(key, set())
        through = False  # does an arm without a bound let the lvalue through unchanged?
        for arm, body, step in arms:
            entry = _take(states, Cond(key, arm, step))
            bound = (bounds or {}).get(arm)
            if bound is not None:
                entry = [State(s.guards, s.defs + (bound,)) if s.defs else s for s in entry]
            before = self._jumps()
            out = self.stmt(body, entry) if body is not None else entry
            if out or self._jumps() > before:
                live.add(arm)
            if bounds and bound is None:
                through = through or any(s.defs == e.defs for s in out for e in states)
            outs.extend(out)
        if through and bounds:  # not a cap ('if (n > 64) pr_warn(...)'): the bound says nothing new
            bound_defs = set(map(id, bounds.values()))
            outs = [State(s.guards, tuple(d for d in s.defs if id(d) not in bound_defs)) for s in outs]
        return self.merge(outs)

    def _jumps(self) -> int:
        return (sum(len(v) for v in self.pending.values()) + sum(len(b) for b in self.breaks)
                + sum(len(c) for c in self.continues))

    def if_stmt(self, node, states):
        cond = node.child_by_field_name("condition")
        states = self.expr(cond, states)
        alt = node.child_by_field_name("alternative")
        if alt is not None and alt.type == "else_clause":
            alt = next((c for c in alt.named_children if c.type != "comment"), None)
        key, yes, no, shown = self.keys.decision(cond)
        return self.branch(node, key, [
            (yes, node.child_by_field_name("consequence"), self.step(node, f"'{shown}' is true")),
            (no, alt, self.step(node, f"'{shown}' is false")),
        ], states, self.bounds(cond, yes, no))

    def bounds(self, cond, yes: str, no: str) -> dict:
        """arm -> Def bounding the lvalue from above on that arm, for a condition comparing
        the lvalue itself with an expression ('if (n > 64) n = 64;': on the arm where it is
        false, n is at most 64). The Def's op is '<=' or '<' and its rhs the bound."""
        inner = cond
        while inner.type == "parenthesized_expression" and inner.named_children:
            inner = inner.named_children[0]
        if inner.type == "unary_expression":  # '!(n > 64)': the arms are swapped already
            inner = inner.child_by_field_name("argument")
            while inner is not None and inner.type == "parenthesized_expression" and inner.named_children:
                inner = inner.named_children[0]
        if inner is None or inner.type != "binary_expression":
            return {}
        op = parser.text(inner.child_by_field_name("operator"))
        left, right = inner.child_by_field_name("left"), inner.child_by_field_name("right")
        if op not in ("<", "<=", ">", ">="):
            return {}
        if self.is_target(right) and not self.is_target(left):  # 'E < n' is 'n > E'
            left, right = right, left
            op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
        if not self.is_target(left) or self.is_target(right) or any(
                n.type in ("call_expression", "assignment_expression", "update_expression")
                or self.is_target(n) for n in parser.descendants(right)):
            return {}
        # n > E false, n < E true: n <= E; n >= E false, n < E true: n < E.
        arm, bound = {">": (no, "<="), ">=": (no, "<"), "<": (yes, "<"), "<=": (yes, "<=")}[op]
        return {arm: Def(inner, right, bound)}

    def switch_stmt(self, node, states) -> list:
        cond = node.child_by_field_name("condition")
        states = self.expr(cond, states)
        body = node.child_by_field_name("body")
        shown = short(parser.text(cond).strip("() \t\n"))
        key = self.keys.cond("switch", cond)
        live = self.alive.setdefault(key, set())
        cases = [c for c in (body.named_children if body is not None else []) if c.type == "case_statement"]
        self.breaks.append([])
        carry: list = []
        has_default = False
        for case in cases:
            value = case.child_by_field_name("value")
            if value is None:
                has_default = True
                arm, note = "default", f"'{shown}' matches no case (default)"
            else:
                arm, note = _norm(parser.text(value)), f"'{shown}' is '{short(parser.text(value))}'"
            entry = self.merge(_take(states, Cond(key, arm, self.step(case, note))) + carry)
            before = self._jumps()
            for child in case.named_children:
                if child == value:
                    continue
                entry = self.stmt(child, entry)
            if entry or self._jumps() > before:
                live.add(arm)
            carry = entry
        out = carry + self.breaks.pop()
        if not has_default:
            out += _take(states, Cond(key, "none", self.step(node, f"'{shown}' matches no case")))
            if states:
                live.add("none")
        return self.merge(out)

    def loop(self, node, states):
        body = node.child_by_field_name("body")
        cond = node.child_by_field_name("condition")
        if node.type == "for_statement":
            init = node.child_by_field_name("initializer")
            if init is not None:
                states = self.stmt(init, states) if init.type == "declaration" else self.expr(init, states)
            update = node.child_by_field_name("update")
            if update is not None and (self.contains_use(update) or self.assigns_in(update)):
                raise GiveUp()
        do = node.type == "do_statement"
        endless = cond is None or _norm(parser.text(cond)) in ("1", "true")
        key = ("loop", self.keys.fn, "at", node.start_byte)
        head = parser.text(node).split("\n", 1)[0].strip()
        run = Cond(key, "entered", self.step(node, f"'{short(head)}' runs its body"))
        skip = Cond(key, "skipped", self.step(node, f"'{short(head)}' does not run its body"))
        if self.contains_use(node):
            # Assignments later in the body reach the use on the next iteration: walk the
            # body once without looking for the use, then again from both ways in.
            saved = (set(self.seen_labels), {k: list(v) for k, v in self.pending.items()})
            self.active = False
            self.breaks.append([])
            self.continues.append([])
            first = states if do or cond is None else self.expr(cond, states)
            once = self.stmt(body, _take(first, run))
            self.breaks.pop()
            once += self.continues.pop()
            self.active = True
            self.seen_labels, self.pending = saved
            around = self.merge(states + once)
            if cond is not None and self.contains_use(cond):
                self.expr(cond, around)
            self.breaks.append([])
            self.continues.append([])
            entry = around if do or cond is None else self.expr(cond, around)
            self.stmt(body, entry)
            raise GiveUp()  # the use is neither in the condition nor in the body
        if not do and cond is not None:
            states = self.expr(cond, states)
        self.breaks.append([])
        self.continues.append([])
        out = self.stmt(body, _take(states, run))
        out += self.continues.pop()
        if do and cond is not None:
            out = self.expr(cond, out)
        out += self.breaks.pop()
        live = self.alive.setdefault(key, set())
        if out:
            live.add("entered")
        if not endless and not do:
            live.add("skipped")
            out += _take(states, skip)
        return self.merge(out)

    def preproc(self, node, states):
        name = node.child_by_field_name("name")
        cond = node.child_by_field_name("condition")
        if node.type == "preproc_ifdef":
            directive = parser.text(node.children[0]).replace(" ", "")
            text = f"{directive[1:]} {parser.text(name)}"
        else:
            text = f"#if {parser.text(cond)}" if node.type == "preproc_if" else f"#elif {parser.text(cond)}"
        key = ("pp", _norm(text))
        alt = node.child_by_field_name("alternative")
        body = [c for c in node.named_children if c not in (name, cond, alt)]
        shown = short(text)
        outs = []
        live = self.alive.setdefault(key, set())
        else_body = [c for c in alt.named_children if c.type != "comment"] if alt is not None \
            and alt.type == "preproc_else" else ([alt] if alt is not None else [])
        for arm, stmts, note in (("true", body, f"'{shown}' holds"),
                                 ("false", else_body, f"'{shown}' does not hold")):
            first = next((st for st in stmts if st.type not in ("comment", "preproc_elif")), None)
            if first is not None and self.dead(first):
                continue  # a branch not compiled for the target kernel (scan.cpp)
            cur = _take(states, Cond(key, arm, self.step(node, note)))
            before = self._jumps()
            for st in stmts:
                cur = self.stmt(st, cur)
            if cur or self._jumps() > before:
                live.add(arm)
            outs.extend(cur)
        return self.merge(outs)

    # -- merging ---------------------------------------------------------------------------
    def merge(self, states: list) -> list:
        """One state per way of getting here that matters: a decision whose every live arm
        gives the same value with the same other decisions is dropped."""
        changed = True
        states = _unique(states)
        while changed:
            changed = False
            keys = []
            for s in states:
                for c in s.guards:
                    if c.key not in keys:
                        keys.append(c.key)
            for key in keys:
                live = self.alive.get(key)
                groups: dict = {}
                for s in states:
                    arm = next((c.arm for c in s.guards if c.key == key), None)
                    rest = tuple(c for c in s.guards if c.key != key)
                    groups.setdefault((s.defs, rest), []).append(arm)
                new = []
                for (defs, rest), arms in groups.items():
                    if None in arms or (live and set(arms) >= live):
                        new.append(State(rest, defs))
                    else:
                        for s in states:
                            if s.defs == defs and tuple(c for c in s.guards if c.key != key) == rest:
                                new.append(s)
                new = _unique(new)
                if len(new) != len(states) or set(new) != set(states):
                    states = new
                    changed = True
                    break
        if len(states) > MAX_STATES:
            raise GiveUp()
        return states

    def simplify_final(self, states: list) -> list:
        """At the use: a decision whose arm is the same on every state is implied by getting
        here, not a condition of one value over another."""
        states = self.merge(states)
        keys: dict[tuple, set] = {}
        for s in states:
            for c in s.guards:
                keys.setdefault(c.key, set()).add(c.arm)
        if len(states) > 1:
            drop = {k for k, arms in keys.items() if len(arms) == 1
                    and all(any(c.key == k for c in s.guards) for s in states)}
        else:
            drop = set(keys)
        out = [State(tuple(c for c in s.guards if c.key not in drop), s.defs) for s in states]
        return _unique(out)


def _take(states: list, cond: Cond) -> list:
    """The states that can take an arm of a decision, having taken it. A state that took
    another arm of the same decision earlier (the same condition, unchanged) cannot."""
    out = []
    for s in states:
        before = next((c for c in s.guards if c.key == cond.key), None)
        if before is None:
            out.append(State(s.guards + (cond,), s.defs))
        elif before.arm == cond.arm:
            out.append(s)
    return out


def _unique(states: list) -> list:
    out, seen = [], set()
    for s in states:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def _has_label(node) -> bool:
    return any(n.type == "labeled_statement" for n in parser.descendants(node))


def _under_branching(assign, top) -> bool:
    """Is the assignment evaluated only on some paths through the expression top?"""
    cur = assign.parent
    while cur is not None and cur != top:
        if cur.type == "conditional_expression":
            return True
        if cur.type == "binary_expression" and parser.text(cur.child_by_field_name("operator")) in ("&&", "||"):
            return True
        cur = cur.parent
    return False


def _norm(text: str) -> str:
    return parser.unparen(re.sub(r"\s+", "", text))


class Keys:
    """The identity of decisions in one function body (see Cond.key)."""

    def __init__(self, body, fn: tuple):
        self.body = body
        self.fn = fn
        self._assigned: Optional[dict] = None

    def decision(self, cond) -> tuple:
        """(key, arm when cond holds, arm when it does not, cond as shown) of a two-way
        decision; '!x' is the decision on 'x' with its arms swapped."""
        inner = cond
        while inner.type == "parenthesized_expression" and inner.named_children:
            inner = inner.named_children[0]
        negated = inner.type == "unary_expression" and parser.text(inner.child_by_field_name("operator")) == "!"
        key = self.cond("if", inner.child_by_field_name("argument") if negated else inner)
        yes, no = ("false", "true") if negated else ("true", "false")
        return key, yes, no, short(parser.text(inner))

    def cond(self, kind: str, cond_node) -> tuple:
        """Two decisions on the same condition text agree when none of its variables is
        assigned between them; a condition with a call or an assignment is its own."""
        text = _norm(parser.text(cond_node))
        nodes = list(parser.descendants(cond_node))
        if any(n.type in ("call_expression", "assignment_expression", "update_expression") for n in nodes):
            return (kind, self.fn, "at", cond_node.start_byte)
        idents = sorted({parser.text(n) for n in nodes if n.type == "identifier"})
        return (kind, self.fn, text, tuple(self.last_assignment(i, cond_node.start_byte) for i in idents))

    def last_assignment(self, name: str, before: int) -> int:
        if self._assigned is None:
            pos: dict = {}
            for n in parser.descendants(self.body):
                if n.type in ("assignment_expression", "update_expression"):
                    left = n.child_by_field_name("left") or n.child_by_field_name("argument")
                    if left is not None and left.type == "identifier":
                        pos.setdefault(parser.text(left), []).append(n.start_byte)
            self._assigned = pos
        return max((p for p in self._assigned.get(name, []) if p < before), default=-1)
