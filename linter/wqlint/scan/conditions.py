"""The conditions that guard a call in its function, as a chain's step shows them, so that a
call made on every path reads apart from one made in a rare branch.

Read from the call's tree, nearest first, at most MAX_GUARDS of them:
- an `if` around it: "only if COND" (its branch), "only if not (COND)" (its else);
  `c ? f() : g()` and `a && f()`, `a || f()` the same way;
- a loop around it: "inside while (COND)", "inside for (...)", "inside do ... while (COND)",
  and a loop macro's block (`list_for_each_entry(...) { ... }`): "inside list_for_each_entry(...)";
- a `switch` case: "in case X" (with the empty cases that fall into it: "in case X, Y"),
  "in default";
- an error path: "on the error path after label err_x", when the call follows the label in
  its block and the way there is only by goto: the statement before the first label of that
  stretch returns or jumps away (no falling in), and every goto to its labels comes before
  them (a goto back is a loop, not an unwinding);
- an early exit before it, in its block or a block around it: `if (COND) return ...;`, a goto
  to a label after the call, a break or continue (or a block whose last statement is one of
  these), so the call runs only when COND was false: "only if not (COND)" ("only if X" for
  `!X`). Not an `if` with an else, nor one in a block around no call, nor one before a label
  that comes before the call (a goto there passes it by), nor a break or continue that is the
  whole body of a loop macro (`list_for_each_entry(...) if (x) break;`: it leaves the macro's
  loop, not the call's), nor one whose test reads a name set between it and the call
  (`if (ret) goto err;` ... `ret = f();`: it says nothing of the call);
- a preprocessor conditional in the body: "only with CONFIG_X" in `#ifdef CONFIG_X` or
  `#if IS_ENABLED(CONFIG_X)`, "only without CONFIG_X" in `#ifndef` or an `#else`, with the
  branches before for an `#elif` ("only with B, without A").
A call in a condition itself (`if (f())`, `while (f())`) is guarded by nothing there. A
condition is shown as written, comments dropped, white space collapsed, cut at MAX_WIDTH.
"""
from __future__ import annotations

import re

from wqlint.scan import parser
from wqlint.scan.ctext import short
from wqlint.scan.scope import step_of

MAX_GUARDS = 3  # the nearest guards shown
MAX_WIDTH = 60  # characters of one condition
MAX_UP = 200  # nodes walked up from the call (a deeply nested expression is not read to its top)
_COMMENT_RE = re.compile(r"/\*.*?(\*/|$)|//[^\n]*", re.S)
_PLAIN_RE = re.compile(r"\w+(\([\w, ]*\))?$")  # a name, or a macro of names: shown negated without parentheses
_LOOPS = ("while_statement", "for_statement", "do_statement")
_NAME_RE = re.compile(r"\b([A-Za-z_]\w*)\b(?!\s*\()")  # a name read, not called
_SET = rb"\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|\b\s*(?:\+\+|--)"  # after a name: it is set there
_PREPROC_IFS = ("preproc_if", "preproc_ifdef", "preproc_elif", "preproc_elifdef")
_PREPROC = _PREPROC_IFS + ("preproc_else",)
# What holds statements one after the other: where an exit before a statement guards it.
_STATEMENT_LISTS = ("compound_statement", "case_statement") + _PREPROC


def with_guards(note: str, node) -> str:
    """note with the conditions guarding node (a call) in its function: "f() calls g() (only
    if x; inside while (y))"; note itself when nothing guards it."""
    got = guards_of(node)
    return f"{note} ({'; '.join(got)})" if got else note


def guarded_step(scope, call, note: str):
    """The Step of call's line in scope, its note with_guards()."""
    return step_of(scope, call, with_guards(note, call))


def guards_of(node) -> list:
    """The texts of the conditions around node, nearest first (the module's docstring)."""
    out: list = []
    labelled = False
    fence = None
    cur = node
    for _ in range(MAX_UP):
        parent = cur.parent if cur is not None else None
        if parent is None or cur.type == "function_definition" or len(out) >= MAX_GUARDS:
            break
        got = ""
        kind = parent.type
        if kind in ("if_statement", "conditional_expression"):
            cond = parent.child_by_field_name("condition")
            if cur == parent.child_by_field_name("consequence"):
                got = "only if " + _text(cond)
            elif cur == parent.child_by_field_name("alternative"):
                got = "only if " + _negated(cond)
        elif kind == "binary_expression" and cur == parent.child_by_field_name("right"):
            op = parser.text(parent.child_by_field_name("operator"))
            left = parent.child_by_field_name("left")
            got = "only if " + _text(left) if op == "&&" else ("only if " + _negated(left) if op == "||" else "")
        elif kind in _LOOPS and cur == parent.child_by_field_name("body"):
            got = "inside " + _loop(parent)
        elif kind == "case_statement" and cur.type != "comment" and cur != parent.child_by_field_name("value"):
            got = _case(parent)
        elif kind == "compound_statement":
            got = _macro_loop(parent, cur)
            if not got and not labelled:
                label = _error_label(parent, cur)
                labelled = bool(label)
                got = f"on the error path after label {label}" if label else ""
        elif kind in _PREPROC:
            got = _preproc(parent, cur)
        if kind in _STATEMENT_LISTS and cur != parent.child_by_field_name("alternative"):
            for start, exit_guard in _exits(parent, cur, node):
                fence = _fence(node) if fence is None else fence
                if start < fence or len(out) >= MAX_GUARDS:
                    break
                if exit_guard not in out:  # `if (ret) goto err_x;` again and again: said once
                    out.append(exit_guard)
        if got and len(out) < MAX_GUARDS:
            out.append(got)
        cur = parent
    return out


def _clean(text: str) -> str:
    return short(_COMMENT_RE.sub(" ", text), MAX_WIDTH)


def _text(cond) -> str:
    """A condition's text without the parentheses an `if` puts around it."""
    cond = _unwrapped(cond)
    return _clean(parser.text(cond)) if cond is not None else "?"


def _negated(cond) -> str:
    """The text of not cond: `!x` reads x, anything else not (cond)."""
    inner = _unwrapped(cond)
    if inner is not None and inner.type == "unary_expression" \
            and parser.text(inner.child_by_field_name("operator")) == "!":
        return _text(inner.child_by_field_name("argument"))
    return f"not ({_text(cond)})"


def _unwrapped(node):
    while node is not None and node.type == "parenthesized_expression":
        inner = [c for c in node.named_children if c.type != "comment"]
        if len(inner) != 1:
            break
        node = inner[0]
    return node


def _loop(node) -> str:
    """What a loop statement shows: while (COND), for (HEAD), do ... while (COND)."""
    if node.type == "for_statement":
        body = node.child_by_field_name("body")
        end = body.start_byte if body is not None else node.end_byte
        head = node.text[:end - node.start_byte].decode("utf-8", "replace")
        return "for " + _clean(head[len("for"):].strip())
    cond = _text(node.child_by_field_name("condition"))
    return f"while ({cond})" if node.type == "while_statement" else f"do ... while ({cond})"


def _case(node) -> str:
    """"in case X" for a case_statement, with the empty cases just before it that fall in."""
    values = []
    cur = node
    while cur is not None and cur.type == "case_statement":
        value = cur.child_by_field_name("value")
        values.append(_clean(parser.text(value)) if value is not None else "default")
        cur = cur.prev_named_sibling
        if cur is None or cur.type != "case_statement" or any(
                c.type != "comment" and c != cur.child_by_field_name("value") for c in cur.named_children):
            break
    values.reverse()
    return "in default" if values == ["default"] else "in case " + ", ".join(values)


def _macro_loop(block, cur) -> str:
    """"inside name(...)" when block is the body of a loop macro (`list_for_each_entry(pos,
    head, member) { ... }`, which tree-sitter reads as a call missing its ';' before a block)."""
    if block.parent is None or block.parent.type == "function_definition":
        return ""
    head = _before(block)
    return "inside " + _clean(parser.text(head.named_children[0])) if _loop_head(head) else ""


def _error_label(block, cur) -> str:
    """The label of block that cur follows on an error path (the module's docstring), or ''."""
    stmts = [c for c in block.named_children if c.type != "comment"]
    if cur not in stmts:
        return ""
    at = stmts.index(cur)
    names: list = []
    for i in range(at, -1, -1):
        stmt = stmts[i]
        if stmt.type != "labeled_statement":
            continue
        names += _labels(stmt)
        if i == 0:
            return ""  # the block's way in falls into it
        if not _jumps(stmts[i - 1]):
            continue  # falls in from the statement before: on to the label before that
        gotos = [g for g in parser.of_kind(_function_of(block), "goto_statement")
                 if g.named_children and parser.text(g.named_children[0]) in names]
        if not gotos or any(g.start_byte > stmt.start_byte for g in gotos):
            return ""
        return names[0]
    return ""


def _labels(stmt) -> list:
    """The names of a labeled_statement's labels (`a: b: stmt`)."""
    out = []
    while stmt is not None and stmt.type == "labeled_statement":
        label = stmt.child_by_field_name("label")
        if label is None and stmt.named_children and stmt.named_children[0].type == "statement_identifier":
            label = stmt.named_children[0]
        if label is not None:
            out.append(parser.text(label))
        stmt = _labelled(stmt)
    return out


def _labelled(stmt):
    """The statement a labeled_statement marks."""
    inner = [c for c in stmt.named_children if c.type not in ("statement_identifier", "comment")]
    return inner[-1] if inner else None


def _jumps(stmt) -> bool:
    """Does a statement end with a return or a goto, so that nothing falls through it?"""
    while stmt is not None and stmt.type in ("labeled_statement", "compound_statement"):
        if stmt.type == "labeled_statement":
            stmt = _labelled(stmt)
        else:
            inner = [c for c in stmt.named_children if c.type != "comment"]
            stmt = inner[-1] if inner else None
    return stmt is not None and stmt.type in ("return_statement", "goto_statement")


def _function_of(node):
    """The function_definition around node (or the top of its tree)."""
    while node.parent is not None and node.type != "function_definition":
        node = node.parent
    return node


def _exits(block, cur, call):
    """(start, "only if not (COND)") of each early exit before cur in block, nearest first
    (the module's docstring); the caller stops at a label between one and the call."""
    stmts = [c for c in block.named_children if c.type != "comment"]
    if cur not in stmts:
        return
    for i in range(stmts.index(cur) - 1, -1, -1):
        stmt = stmts[i]
        inner = stmt
        while inner is not None and inner.type == "labeled_statement":
            inner = _labelled(inner)  # a label before the exit: a goto to it passes the exit too
        # (has_error: text tree-sitter mended, a loop macro's head missing its ';' too)
        if inner is None or inner.type != "if_statement" or inner.has_error \
                or inner.child_by_field_name("alternative") is not None \
                or (i > 0 and _loop_head(stmts[i - 1])):
            continue
        cond = inner.child_by_field_name("condition")
        if _leaves(inner.child_by_field_name("consequence"), inner, call) and not _changed(cond, inner, call):
            yield stmt.start_byte, "only if " + _negated(cond)


def _changed(cond, head, call) -> bool:
    """May a name cond reads be set between the if head and call (`ret = f();`, `i++`,
    `g(&x)`)? Then what cond said no longer holds at the call: `if (ret) goto err;` before
    `ret = h(); if (ret) ... call` says nothing of the call."""
    names = {m.group(1) for m in _NAME_RE.finditer(parser.text(cond))}
    if not names:
        return False
    top = _function_of(call)
    between = top.text[head.end_byte - top.start_byte:max(call.start_byte - top.start_byte, 0)]
    alt = b"|".join(re.escape(n.encode()) for n in sorted(names))
    return re.search(rb"\b(?:" + alt + rb")(?:" + _SET + rb")|(?:\+\+|--|&)\s*(?:" + alt
                     + rb")\b(?!\s*(?:->|\.))", between) is not None


def _leaves(branch, head, call) -> bool:
    """Does branch (of the if head) end by leaving the way to call: a return, a goto to a
    label after call, a break or a continue?"""
    while branch is not None and branch.type == "compound_statement":
        inner = [c for c in branch.named_children if c.type != "comment"]
        branch = inner[-1] if inner else None
    if branch is None:
        return False
    if branch.type == "return_statement":
        return True
    if branch.type in ("break_statement", "continue_statement"):
        return _in_loop(head, branch.type == "break_statement")
    if branch.type == "goto_statement" and branch.named_children:
        return _forward(head, parser.text(branch.named_children[0]), call)
    return False


def _loop_head(stmt) -> bool:
    """Is stmt a loop macro's head (`list_for_each_entry(...)`, a call missing its ';'), so
    that the statement after it is its body?"""
    return stmt is not None and stmt.type == "expression_statement" and bool(stmt.children) \
        and stmt.children[-1].type == ";" and stmt.children[-1].is_missing \
        and bool(stmt.named_children) and stmt.named_children[0].type == "call_expression"


def _in_loop(node, or_switch: bool) -> bool:
    """Is node inside a loop (a loop macro's block too), or a switch when or_switch, of its
    function: what a continue, or a break, leaves?"""
    cur = node
    while cur.parent is not None and cur.type != "function_definition":
        cur = cur.parent
        if cur.type in _LOOPS or (or_switch and cur.type == "switch_statement") \
                or (cur.type == "compound_statement" and _loop_head(_before(cur))):
            return True
    return False


def _before(node):
    """The named sibling before node, comments skipped."""
    prev = node.prev_named_sibling
    while prev is not None and prev.type == "comment":
        prev = prev.prev_named_sibling
    return prev


def _forward(head, name: str, call) -> bool:
    """Does a goto name in the if head jump past call: to a label after it, in a block around
    head (so not into a loop the way back could reach call from)?"""
    for stmt in _labelled_in(_function_of(head)):
        if name not in _labels(stmt):
            continue
        while stmt.parent is not None and stmt.parent.type == "labeled_statement":
            stmt = stmt.parent
        around = head
        while around is not None and around != stmt.parent:
            around = around.parent
        return stmt.start_byte >= call.end_byte and around is not None
    return False


def _fence(call) -> int:
    """Where the last label before call in its function starts (-1 when none): an exit
    before it guards nothing, since a goto to the label passes it by."""
    starts = [s.start_byte for s in _labelled_in(_function_of(call)) if s.start_byte < call.start_byte]
    return max(starts, default=-1)


def _labelled_in(top) -> list:
    """The labeled_statements of a function, in the order of its text (read once for every
    exit and call of the function a chain passes)."""
    return parser.of_kind_kept(top, "labeled_statement")


def _preproc(branch, cur) -> str:
    """"only with X, without Y" for cur in a branch of a #if, #ifdef, #elif or #else: the
    branch's own condition, then the branches before it in their chain, negated."""
    if cur.type == "comment" or cur.type in _PREPROC or any(
            cur == branch.child_by_field_name(f) for f in ("condition", "name")):
        return ""
    conds = [_directive(branch)] if branch.type != "preproc_else" else []
    link = branch
    while link.type in ("preproc_elif", "preproc_elifdef", "preproc_else") \
            and link.parent is not None and link.parent.type in _PREPROC_IFS:
        link = link.parent
        text, positive = _directive(link)
        conds.append((text, not positive))
    shown = ", ".join("with " + text if positive else "without " + (text if _PLAIN_RE.match(text) else f"({text})")
                      for text, positive in conds)
    return "only " + shown if shown else ""


def _directive(node) -> tuple:
    """(text, positive) of a #if, #ifdef, #elif: `#ifndef X` and `#if !defined(X)` are
    (X, False), `#if IS_ENABLED(X)` (IS_ENABLED(X), True)."""
    first = node.children[0].type if node.children else ""
    if node.type in ("preproc_ifdef", "preproc_elifdef"):
        return _clean(parser.text(node.child_by_field_name("name"))), first not in ("#ifndef", "#elifndef")
    cond, positive = _unwrapped(node.child_by_field_name("condition")), True
    while cond is not None and cond.type == "unary_expression" \
            and parser.text(cond.child_by_field_name("operator")) == "!":
        cond, positive = _unwrapped(cond.child_by_field_name("argument")), not positive
    if cond is not None and cond.type == "preproc_defined":
        names = [c for c in cond.named_children if c.type == "identifier"]
        cond = names[0] if names else cond
    return (_clean(parser.text(cond).replace("\\\n", " ")) if cond is not None else "?"), positive
