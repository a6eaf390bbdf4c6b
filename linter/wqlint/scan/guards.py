"""Whether a call in a function is made on a path, as far as its text tells: the `if`s around
it and the statements before it, with what is known of the path that called the function.

What is known (Facts): the constants the callers passed as the function's parameters (a
number, true, false, NULL, an upper-case name of a macro or an enumerator), a struct member
or a bit a function before it on the path set to a constant (`x->resetting = true;`,
set_bit(FOO_RESET, &x->flags), or an early `if (!test_bit(FOO_RESET, ...)) return;`), as the
names `->member` and `bit:FOO_RESET`. A condition is true, false, or not known; only a known
one decides, the left side of && and || too. A test of current_work() is taken as the guard
it is (the path it guards is not this work's own); a call of a function that never returns
(panic(), BUG()) or a return before the call ends the path. At a label, what is known is
what every way there agrees on: the gotos to it and the statement before it falling through.
"""
from __future__ import annotations

import re
from typing import Optional

from wqlint import api
from wqlint.scan import parser
from wqlint.scan.ctext import parse_int
from wqlint.scan.scope import Scope

# Functions that never return: a path through one of them ends there.
NORETURN = frozenset({"panic", "BUG", "do_exit", "make_task_dead", "kthread_exit", "kthread_complete_and_exit",
                      "module_put_and_kthread_exit", "machine_halt", "machine_power_off", "emergency_restart",
                      "__stack_chk_fail"})
_CAPS_RE = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_SET_BITS = {"set_bit": 1, "__set_bit": 1, "clear_bit": 0, "__clear_bit": 0}
_TEST_AND_SET = {"test_and_set_bit": 1, "test_and_clear_bit": 0}
_TEST_BITS = ("test_bit", "variable_test_bit", "constant_test_bit")
_TRANSPARENT = ("likely", "unlikely", "READ_ONCE", "data_race")
_ATOMIC_READS = ("atomic_read", "atomic_long_read", "atomic64_read")  # of &x->member
_ATOMIC_SETS = ("atomic_set", "atomic_long_set", "atomic64_set")
NOT = "!="  # a fact (NOT, v): the member holds anything but v
# A state a name says the device is in while it is suspended (`suspended`, `->is_suspended`,
# `->suspending`), not a callback (`->suspend`).
_SUSPENDED_RE = re.compile(r"suspend(?:ed|ing)$", re.I)
Facts = dict  # name -> int, an upper-case name, or a frozenset of them OR-ed
# What the whole path assumes, carried into every callee (passed()):
LAST_REF = "path:last-reference"  # 0: no call on the path drops the last reference (api.LAST_REFERENCE)
SUSPENDED = "path:suspended"  # 0: the work cannot run while the system is suspended (api.FREEZABLE_FLAG)


def on_path(node, top, facts: Facts) -> bool:
    """Can node (in the function whose body holds it, top: its function_definition) be
    reached with facts? False when an `if` around it is known to go the other way or tests
    current_work(), or a statement before it ends the path."""
    cur = node
    while cur is not None and cur != top:
        parent = cur.parent
        if parent is None:
            break
        if parent.type in ("if_statement", "conditional_expression"):
            cond = parent.child_by_field_name("condition")
            branch = "then" if parent.child_by_field_name("consequence") == cur else (
                "else" if parent.child_by_field_name("alternative") == cur else "")
            if branch and cond is not None:
                if _tests_current_work(cond) or (branch == "then" and _warns(cond)):
                    return False
                value = truth(cond, facts)
                if value is not None and value != (branch == "then"):
                    return False
        elif parent.type == "compound_statement":
            for stmt in _before(parent, cur):
                if ends(stmt, facts):
                    return False
        elif parent.type == "binary_expression" and parent.child_by_field_name("right") == cur:
            # `tx && cancel_work_sync(...)`: not evaluated when the left side decides.
            op = parser.text(parent.child_by_field_name("operator"))
            left = truth(parent.child_by_field_name("left"), facts) if op in ("&&", "||") else None
            if left is not None and left == (op == "||"):
                return False
        cur = parent
    return True


def ends(stmt, facts: Facts) -> bool:
    """Does the statement end every path through it (return, goto, a call that never
    returns, an `if` known to be taken, or testing current_work(), whose branch ends)?"""
    if stmt.type in ("return_statement", "goto_statement"):
        return True
    if stmt.type == "expression_statement":
        expr = next((c for c in stmt.named_children if c.type != "comment"), None)
        return expr is not None and expr.type == "call_expression" and parser.callee(expr) in NORETURN
    if stmt.type == "if_statement":
        cond = stmt.child_by_field_name("condition")
        then = stmt.child_by_field_name("consequence")
        if cond is None or then is None or stmt.child_by_field_name("alternative") is not None:
            return False
        if not (_tests_current_work(cond) or truth(cond, facts) is True):
            return False
        last = then
        while last is not None and last.type == "compound_statement":
            inner = [c for c in last.named_children if c.type != "comment"]
            last = inner[-1] if inner else None
        return last is not None and ends(last, facts)
    return False


def facts_before(node, top, facts: Facts) -> Facts:
    """facts with what the statements before node (in the blocks around it, not in a branch)
    set: `x->member = constant;`, `x.member = constant;`, WRITE_ONCE(x->member, constant),
    set_bit(NAME, ...) and clear_bit(NAME, ...)."""
    out = dict(facts)
    blocks = []
    cur = node
    while cur is not None and cur != top and cur.parent is not None:
        if cur.parent.type == "compound_statement":
            blocks.append((cur.parent, cur))
        cur = cur.parent
    for block, inner in reversed(blocks):
        # Every statement before; at a label, only what every way there agrees on: the
        # statement before it falling through (unless it ends the path) and the gotos of
        # the block to it (each with what was known before its statement).
        at_goto: list = []  # (statement, facts before it) of the block's statements holding a goto
        prev = None
        for stmt in [c for c in block.named_children if c.start_byte <= inner.start_byte]:
            if stmt.type == "labeled_statement":
                out = _at_label(stmt, out, at_goto, prev, block)
            if stmt == inner:
                break
            prev = stmt
            if parser.of_kind(stmt, "goto_statement"):
                at_goto.append((stmt, dict(out)))
            while stmt.type == "labeled_statement":
                stmt = next((c for c in reversed(stmt.named_children) if c.type != "statement_identifier"), stmt)
                if stmt.type == "labeled_statement" and stmt.named_child_count < 2:
                    break
            if stmt.type == "if_statement" and stmt.child_by_field_name("alternative") is None \
                    and _branch_ends(stmt.child_by_field_name("consequence")):
                # `if (!test_bit(NAME, ...)) return;`: the bit is set after it (clear for
                # `if (test_bit(NAME, ...)) return;`).
                cond = bare(stmt.child_by_field_name("condition"))
                negated = cond is not None and cond.type == "unary_expression" and \
                    parser.text(cond.child_by_field_name("operator")) == "!"
                test = bare(cond.child_by_field_name("argument")) if negated else cond
                if test is not None and test.type == "call_expression" and parser.callee(test) in _TEST_BITS:
                    args = parser.args(test)
                    if args and _CAPS_RE.match(parser.text(args[0])):
                        out["bit:" + parser.text(args[0])] = 1 if negated else 0
            if stmt.type in ("if_statement", "while_statement"):
                # `if (test_and_set_bit(NAME, ...)) return;`, `while (test_and_set_bit(NAME,
                # ...)) msleep(1);`: the bit is set after it.
                cond = bare(stmt.child_by_field_name("condition"))
                if cond is not None and cond.type == "unary_expression":
                    cond = bare(cond.child_by_field_name("argument"))
                if cond is not None and cond.type == "call_expression" and parser.callee(cond) in _TEST_AND_SET:
                    args = parser.args(cond)
                    if args and _CAPS_RE.match(parser.text(args[0])):
                        out["bit:" + parser.text(args[0])] = _TEST_AND_SET[parser.callee(cond)]
                continue
            if stmt.type != "expression_statement":
                continue
            expr = next((c for c in stmt.named_children if c.type != "comment"), None)
            if expr is None:
                continue
            if expr.type == "assignment_expression" and parser.text(expr.child_by_field_name("operator")) == "=":
                left = bare(expr.child_by_field_name("left"))
                name = _member(left) or ("=" + parser.text(left)
                                         if left is not None and left.type == "identifier" else "")
                value = constant(expr.child_by_field_name("right"), out)
                if name:
                    if value is None:
                        out.pop(name, None)
                    else:
                        out[name] = value
            elif expr.type == "call_expression":
                fn, args = parser.callee(expr), parser.args(expr)
                if fn in _SET_BITS and args and _CAPS_RE.match(parser.text(args[0])):
                    out["bit:" + parser.text(args[0])] = _SET_BITS[fn]
                elif (fn == "WRITE_ONCE" or fn in _ATOMIC_SETS) and len(args) == 2 \
                        and _member(_address_of(args[0])):
                    member = _member(_address_of(args[0]))
                    value = constant(args[1], out)
                    if value is None:
                        out.pop(member, None)
                    else:
                        out[member] = value
    return out


def _at_label(stmt, out: Facts, at_goto: list, prev, block) -> Facts:
    """The facts known at a label: those the ways there agree on (facts_before()). A goto
    back to it from after keeps only what the statements after the label leave alone or
    set to the same constant."""
    label = stmt.named_children[0] if stmt.named_children else None
    name = parser.text(label) if label is not None and label.type == "statement_identifier" else ""

    def goes_to(holder) -> bool:
        return any(g.named_children and parser.text(g.named_children[0]) == name
                   for g in parser.of_kind(holder, "goto_statement"))
    ways = [facts for holder, facts in at_goto if goes_to(holder)]
    if prev is None or not _branch_ends(prev):
        ways.append(out)
    if not ways:
        return out
    got = {k: v for k, v in ways[0].items() if all(w.get(k) == v for w in ways[1:])}
    after = [c for c in block.named_children if c.start_byte >= stmt.start_byte]
    if any(goes_to(c) for c in after):
        for c in after:
            for key, value in _sets(c):
                if key in got and got[key] != value:
                    del got[key]
    return got


def _sets(node) -> list:
    """(fact, constant or None) of what the statements under node set (facts_before())."""
    out = []
    for expr in parser.of_kind(node, "assignment_expression"):
        left = bare(expr.child_by_field_name("left"))
        name = _member(left) or ("=" + parser.text(left) if left is not None and left.type == "identifier" else "")
        if name:
            value = constant(expr.child_by_field_name("right"), {}) \
                if parser.text(expr.child_by_field_name("operator")) == "=" else None
            out.append((name, value))
    for call in parser.of_kind(node, "call_expression"):
        fn, args = parser.callee(call), parser.args(call)
        if args and _CAPS_RE.match(parser.text(args[0])) and (fn in _SET_BITS or fn in _TEST_AND_SET):
            out.append(("bit:" + parser.text(args[0]), _SET_BITS.get(fn, _TEST_AND_SET.get(fn))))
    return out


def _branch_ends(stmt) -> bool:
    """Does a statement end the path unconditionally (a return, a goto, a block whose last
    statement does)?"""
    while stmt is not None and stmt.type == "compound_statement":
        inner = [c for c in stmt.named_children if c.type != "comment"]
        stmt = inner[-1] if inner else None
    return stmt is not None and ends(stmt, {})



def passed(call, callee_params: list, facts: Facts) -> Facts:
    """The facts a callee starts with: its parameters bound to the constants the call
    passes, and the members and bits known at the call."""
    out = {k: v for k, v in facts.items() if k.startswith(("->", "bit:", "=", "path:"))}
    for name, arg in zip(callee_params, parser.args(call)):
        value = constant(arg, facts)
        if name and value is not None:
            out[name] = value
    return out


def constant(node, facts: Facts):
    """The constant an expression is, as far as facts tell: an int, or an upper-case name
    (a macro or an enumerator, compared by name); None when not known."""
    node = bare(node)
    if node is None:
        return None
    kind = node.type
    if kind == "number_literal":
        return parse_int(parser.text(node))
    if kind in ("true", "false", "null"):
        return {"true": 1, "false": 0, "null": 0}[kind]
    if kind == "identifier":
        name = parser.text(node)
        if name in facts:
            return facts[name]
        if "=" + name in facts:
            return facts["=" + name]
        if name in ("true", "false", "NULL"):
            return 0 if name != "true" else 1
        return name if _CAPS_RE.match(name) else None
    if kind == "field_expression":
        return facts.get(_member(node) or "")
    if kind == "unary_expression" and parser.text(node.child_by_field_name("operator")) == "!":
        value = truth(node.child_by_field_name("argument"), facts)
        return None if value is None else int(not value)
    if kind == "binary_expression" and parser.text(node.child_by_field_name("operator")) == "|":
        a = constant(node.child_by_field_name("left"), facts)
        b = constant(node.child_by_field_name("right"), facts)
        sets = [frozenset([v]) if isinstance(v, str) else v for v in (a, b)]
        return sets[0] | sets[1] if all(isinstance(v, frozenset) for v in sets) else None
    if kind == "call_expression" and parser.callee(node) in _ATOMIC_READS and len(parser.args(node)) == 1:
        return facts.get(_member(_address_of(parser.args(node)[0])) or "")
    if kind in ("unary_expression", "binary_expression", "call_expression"):
        value = truth(node, facts)
        return None if value is None else int(value)
    return None


def _address_of(node):
    """x->member of &x->member."""
    node = bare(node)
    if node is not None and node.type == "pointer_expression" and parser.text(node).startswith("&"):
        return node.child_by_field_name("argument")
    return node


def _holds(value) -> Optional[bool]:
    """Is a known value true: an int, a set of named flags (never empty), or (NOT, 0)."""
    if isinstance(value, tuple):
        return True if value[1] == 0 else None
    if value is None or isinstance(value, str):
        return None
    return bool(value)


def truth(node, facts: Facts) -> Optional[bool]:
    """Whether a condition holds, as far as facts tell; None when not known."""
    node = bare(node)
    if node is None:
        return None
    kind = node.type
    if kind == "unary_expression" and parser.text(node.child_by_field_name("operator")) == "!":
        value = truth(node.child_by_field_name("argument"), facts)
        return None if value is None else not value
    if kind == "binary_expression":
        op = parser.text(node.child_by_field_name("operator"))
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if op in ("&&", "||"):
            a, b = truth(left, facts), truth(right, facts)
            if op == "&&":
                return False if a is False or b is False else (True if a and b else None)
            return True if a is True or b is True else (False if a is False and b is False else None)
        if op == "&":
            a, b = constant(left, facts), constant(right, facts)
            names = frozenset([a]) if isinstance(a, str) else a
            if isinstance(names, frozenset) and isinstance(b, str):
                return b in names  # named flags of one set: distinct bits
            return None
        if op in ("==", "!="):
            a, b = constant(left, facts), constant(right, facts)
            marked = [v for v in (a, b) if isinstance(v, tuple)]
            if marked:  # (NOT, v) against v: unequal
                return (op == "!=") if marked[0][1] == (b if isinstance(a, tuple) else a) else None
            if isinstance(a, frozenset) or isinstance(b, frozenset):
                return None
            if a is None or b is None or isinstance(a, str) != isinstance(b, str):
                return None
            return (a == b) == (op == "==")
        return None
    if kind == "call_expression":
        fn, args = parser.callee(node), parser.args(node)
        if fn in _TRANSPARENT and len(args) == 1:
            return truth(args[0], facts)
        if fn in _TEST_BITS and args:
            got = facts.get("bit:" + parser.text(args[0]))
            return None if got is None else bool(got)
        if fn in api.LAST_REFERENCE:
            got = facts.get(LAST_REF)
            return None if got is None else bool(got)
        if fn in _ATOMIC_READS:
            return _holds(constant(node, facts))
        return None
    if kind in ("identifier", "field_expression") and SUSPENDED in facts \
            and _SUSPENDED_RE.search(_member(node) if kind == "field_expression" else parser.text(node)):
        return bool(facts[SUSPENDED])
    return _holds(constant(node, facts) if kind in ("number_literal", "true", "false", "null", "identifier",
                                                    "field_expression") else None)


def _warns(cond) -> bool:
    """Is the condition a WARN_ON() (or _ONCE) of its own: a branch taken only when the
    kernel warns of a bug is not a path the code means to take."""
    cond = bare(cond)
    return cond is not None and cond.type == "call_expression" and parser.callee(cond) in (
        "WARN_ON", "WARN_ON_ONCE", "WARN", "WARN_ONCE")


def _tests_current_work(cond) -> bool:
    return "current_work" in parser.text(cond)


def _before(block, inner) -> list:
    """The statements of block before inner, back to the nearest label (a goto may enter
    there: what comes before a label does not decide the path after it)."""
    out: list = []
    if inner.type == "labeled_statement":
        return out  # (inner is the label)
    for child in block.named_children:
        if child == inner or child.start_byte >= inner.start_byte:
            break
        if child.type == "labeled_statement":
            # A goto may enter there: only the statement the label marks counts.
            out = [c for c in child.named_children if c.type != "statement_identifier"][-1:]
            continue
        out.append(child)
    return out


def bare(node):
    """node without the parentheses and casts around it."""
    while node is not None and node.type in ("parenthesized_expression", "cast_expression"):
        node = node.child_by_field_name("value") if node.type == "cast_expression" else \
            next((c for c in node.named_children if c.type != "comment"), None)
    return node


def _member(node) -> str:
    node = bare(node)
    if node is not None and node.type == "field_expression":
        field = node.child_by_field_name("field")
        return "->" + parser.text(field) if field is not None else ""
    return ""




_ALLOCATORS = frozenset(e.name for e in api.ENTRIES)


def fresh(spec, call, scope) -> bool:
    """Is the queue a flush (call, of api.FlushCall spec, in scope) waits for allocated
    earlier in the same function, with no call of that function queueing on it in between
    (the error exit of a setup: `q->wq = alloc_workqueue(...); ... destroy_workqueue(q->wq);`)?
    Then the queue holds nothing: __flush_workqueue() returns at "nothing to flush" before
    check_flush_dependency(), and no work of it can be waited for."""
    given = parser.args(call)
    if spec.waits_for != "queue" or scope.kind != "function" or spec.arg >= len(given):
        return False
    top = scope.node
    held = parser.text(given[spec.arg]).replace(" ", "")
    stores = [node for node in parser.of_kind(top, "assignment_expression") if node.start_byte < call.start_byte
              and parser.text(node.child_by_field_name("left")).replace(" ", "") == held]
    allocated = max(stores, key=lambda n: n.start_byte, default=None)
    if allocated is None:
        return False
    right = bare(allocated.child_by_field_name("right"))
    if right is None or right.type != "call_expression" or parser.callee(right) not in _ALLOCATORS:
        return False
    for node in parser.of_kind(top, "call_expression"):
        if allocated.start_byte < node.start_byte < call.start_byte:
            spec = api.QUEUEING.get(parser.callee(node))
            args = parser.args(node)
            if spec is not None and spec.queue_arg < len(args) \
                    and parser.text(args[spec.queue_arg]).replace(" ", "") == held:
                return False
    return True


def unlikely(call, scope: Scope) -> bool:
    """Is the call made only on a path its function marks rare: in the branch of an
    `if (unlikely(...))` (vfree()'s `if (unlikely(vm->flags & VM_FLUSH_RESET_PERMS))
    vm_reset_perms(vm);`)? Such a path hangs on state the function's callers do not show; it
    is not followed, nor reported when it flushes."""
    cur = call
    while cur is not None and cur != scope.node:
        parent = cur.parent
        if parent is not None and parent.type == "if_statement" and parent.child_by_field_name("consequence") == cur:
            cond = parent.child_by_field_name("condition")
            text = parser.text(cond).lstrip("( \t\n") if cond is not None else ""
            if text.startswith("unlikely") and text[len("unlikely"):].lstrip().startswith("("):
                return True
        cur = parent
    return False
