"""The call a fix edits: read back, modelled, and written back.

A call is read back from the file at the finding's location (the name's line and column) and
modelled as a name and its argument texts. The edit kinds (fix.edit_kinds) change the model,
reading the code around the call with the helpers at the end; the call is then written
back: edited arguments in place, or a call whose name changes written anew, then the
statement laid out as Coccinelle lays it out (fix.layout), or wqlint's own way where that
would not pass checkpatch (render). An edit that cannot be made safely raises NoEdit with
the reason, which is shown to the user instead of a diff.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from tree_sitter import Node

from wqlint import api
from wqlint.finding import Finding
from wqlint.fix import layout
from wqlint.fix.model import Edit
from wqlint.scan import parser
from wqlint.scan.source import SourceFile

CPU_COUNT_CALLS = api.CPU_COUNT_CALLS
CPU_COUNT_NAMES = api.CPU_COUNT_NAMES
_NULL_CHECK = ("!{x}", "{x} == NULL", "NULL == {x}", "unlikely(!{x})", "!({x})")


class NoEdit(Exception):
    """The finding's fix cannot be written as an edit here; str() says why."""


@dataclass
class TreeFacts:
    """What the edits need to know of the tree being fixed."""

    has_percpu: bool  # include/linux/workqueue.h defines WQ_PERCPU
    legacy: dict  # create_*workqueue name -> (callee, fmt, flags operands, [max_active])
    has_reference_api: bool  # the reference series' workqueue_set_global_max_active_cpus()


def tree_facts(api_header_text: str) -> TreeFacts:
    text = api_header_text.replace("\\\n", " ")
    legacy = {}
    for m in re.finditer(r"^[^\S\n]*#\s*define\s+(create_\w*workqueue)\s*\(\s*(\w+)\s*\)\s*(\w+)\s*\((.*)\)\s*$",
                         text, re.M):
        name, param, callee, body = m.groups()
        args = [a.strip() for a in layout.split_top(body, ",")]
        if callee not in ("alloc_workqueue", "alloc_ordered_workqueue") or len(args) < 3:
            continue
        operands = [o.strip() for o in layout.split_top(args[1], "|")]
        rest = args[2:]
        if _unparen(rest[-1]) != param:
            continue
        legacy[name] = (callee, args[0], [o for o in operands if o != "__WQ_LEGACY"], rest[:-1])
    return TreeFacts(has_percpu=bool(re.search(r"\bWQ_PERCPU\s*=", text)), legacy=legacy,
                     has_reference_api="workqueue_set_global_max_active_cpus" in text)


_unparen = parser.unparen


@dataclass
class Call:
    """One call in a file, as the edits change it."""

    src: SourceFile
    node: Node  # the call_expression
    base: int  # file offset of the chunk the node was parsed in
    name: str
    args: list  # argument texts; None for a removed argument
    arg_nodes: list
    inserts: list = field(default_factory=list)  # of Edit: statements added after the call's
    changed: set = field(default_factory=set)  # indices of arguments whose text changed
    # What each edit did, as data for the semantic patch: fix.edit_kinds.EditKind instances.
    ops: list = field(default_factory=list)

    @property
    def start(self) -> int:
        return self.base + self.node.start_byte

    @property
    def end(self) -> int:
        return self.base + self.node.end_byte

    def snapshot(self) -> dict:
        """The state an edit changes, to put back when the edit cannot be made."""
        return {"name": self.name, "args": list(self.args), "arg_nodes": list(self.arg_nodes),
                "inserts": list(self.inserts), "changed": set(self.changed), "ops": list(self.ops)}

    def restore(self, saved: dict) -> None:
        for key, value in saved.items():
            setattr(self, key, value)

    def set_arg(self, i: int, text: str) -> None:
        if i in self.changed:
            raise NoEdit("another fix of this call already changes that argument")
        self.args[i] = text
        self.changed.add(i)

    def remove_arg(self, i: int) -> None:
        if i in self.changed:
            raise NoEdit("another fix of this call already changes that argument")
        self.args[i] = None
        self.changed.add(i)


def find_call(src: SourceFile, finding: Finding) -> Call:
    """The call whose name starts at the finding's line and column."""
    if src.define_span(finding.line):
        raise NoEdit(f"the call at {finding.path}:{finding.line} is in the body of a #define: "
                     "wqlint does not rewrite macros, edit it by hand")
    chunk = src.chunk_at(finding.line)
    line = src.line_text(finding.line)
    byte_col = len(line[: finding.col - 1].encode("utf-8"))
    row = finding.line - chunk.first_line
    base = src._starts[chunk.first_line - 1]
    node = chunk.root.descendant_for_point_range((row, byte_col), (row, byte_col))
    while node is not None and node.type != "call_expression":
        node = node.parent
    if node is None:
        raise NoEdit(f"no call at {finding.path}:{finding.line}:{finding.col} (the file changed?)")
    fn = node.child_by_field_name("function")
    if fn is None or fn.start_point != (row, byte_col):
        raise NoEdit(f"no call named at {finding.path}:{finding.line}:{finding.col} (the file changed?)")
    arg_list = node.child_by_field_name("arguments")
    nodes = [a for a in arg_list.named_children if a.type != "comment"]
    if any(c.type == "comment" for c in arg_list.named_children) or node.has_error:
        raise NoEdit("the call has comments or macro text wqlint cannot rewrite")
    return Call(src, node, base, parser.text(fn), [parser.text(a) for a in nodes], nodes)


def edit_at(finding: Finding) -> tuple:
    """(path, line, column) of the call a fix of finding edits: the reported call, or the one
    its hints name (edit_at: the allocation of a queue the reported flush waits for)."""
    at = finding.hints.edit_at
    return (finding.path, finding.line, finding.col) if at is None else (at.path, at.line, at.col)


# -- writing the call back -----------------------------------------------------------------

@dataclass
class Rewrite:
    """What writing a changed call back replaces: the statement's byte range [start, end),
    the call's edited pieces in it (start, end, new text, opaque: see layout.coccinelle),
    the call itself (start, end, name, argument texts) and statements added after it."""

    start: int
    end: int
    pieces: list
    call: tuple
    inserts: list


def rewrite(call: Call) -> Rewrite:
    """An edited argument is written in place, on one line; a call whose name or arguments
    change as a whole is written anew."""
    start, end = _statement_span(call)
    original_name = parser.text(call.node.child_by_field_name("function"))
    args = [a for a in call.args if a is not None]
    if call.name == original_name and len(args) == len(call.args):
        pieces = [(call.base + call.arg_nodes[i].start_byte, call.base + call.arg_nodes[i].end_byte,
                   layout.normalize(call.args[i]), False) for i in sorted(call.changed)]
    else:
        pieces = [(call.start, call.end, f"{call.name}({', '.join(layout.normalize(a) for a in args)})", False)]
    return Rewrite(start, end, pieces, (call.start, call.end, call.name, args), list(call.inserts))


def render(data: bytes, rewrites: list) -> tuple:
    """(Edits, {call start: text}) for a file's rewrites. The calls of one statement are laid
    out together as Coccinelle lays them out. A call whose lines would then not pass
    checkpatch is written by wqlint instead (its operands broken after '|' in place, or
    the whole call laid out again within 80 columns) and its text is returned, for the
    semantic patch to write as is."""
    edits: list[Edit] = []
    merged: list[list] = []  # [start, end, [Rewrite...]] of the statements rewritten together
    raw: dict[int, str] = {}
    for rw in sorted(rewrites, key=lambda r: (r.start, r.end)):
        edits.extend(rw.inserts)
        if merged and rw.start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], rw.end)
            merged[-1][2].append(rw)
        else:
            merged.append([rw.start, rw.end, [rw]])
    for start, end, group in merged:
        old = data[start:end].decode("utf-8")
        pieces = []
        for rw in group:
            # A call with statements added after it keeps Coccinelle's layout: its semantic
            # patch rule writes those statements too, which a call written as text would lose.
            if rw.inserts or layout.checkpatch_clean(old, _laid_out(data, start, end, rw.pieces)):
                pieces += rw.pieces
                continue
            texts = [t for t in (_filled(data, rw), _relaid(data, rw.call)) if t is not None]
            text = next((t for t in texts if layout.checkpatch_clean(
                old, _laid_out(data, start, end, [(rw.call[0], rw.call[1], t, True)]))), texts[-1])
            pieces.append((rw.call[0], rw.call[1], text, True))
            raw[rw.call[0]] = text
        edits.append(Edit(start, end, _laid_out(data, start, end, pieces)))
    return edits, raw


def _laid_out(data: bytes, start: int, end: int, pieces: list) -> str:
    """data[start:end] with pieces (start, end, text, opaque) replaced, laid out."""
    text, added, at = [], [], start
    for a, b, new, opaque in sorted(pieces):
        text.append(data[at:a].decode("utf-8"))
        pos = sum(len(t) for t in text)
        added.append((pos, pos + len(new), opaque))
        text.append(new)
        at = b
    text.append(data[at:end].decode("utf-8"))
    return layout.coccinelle("".join(text), added)


def _filled(data: bytes, rw: Rewrite):
    """The call with its edited arguments broken after '|' where they pass 80 columns, the
    rest as written; None where an edited argument does not start its line."""
    start, end = rw.call[0], rw.call[1]
    out, at = [], start
    for a, b, new, _ in sorted(rw.pieces):
        if a < start or b > end or (a, b) == (start, end):
            return None
        line_start = data.rfind(b"\n", 0, a) + 1
        before = data[line_start:a].decode("utf-8")
        if before.strip():
            return None
        col = layout.width(before)
        out += [data[at:a].decode("utf-8"), layout.fill_operands(new, col, col)]
        at = b
    return "".join(out) + data[at:end].decode("utf-8")


def _relaid(data: bytes, call: tuple) -> str:
    """The call laid out again: filled to 80 columns, continuation lines aligned with its
    parenthesis, an argument split after a '|' where it must."""
    start, end, name, args = call
    line_start = data.rfind(b"\n", 0, start) + 1
    line_end = data.find(b"\n", end)
    suffix = data[end:line_end if line_end >= 0 else len(data)].decode("utf-8")
    text = layout.render_call(data[line_start:start].decode("utf-8"), name, args, suffix)
    return text[: len(text) - len(suffix)] if suffix else text


def _statement_span(call: Call) -> tuple:
    """Bytes from the start of the line of the statement (or condition) the call is in to
    the statement's end."""
    node = call.node
    while node.parent is not None and node.type not in _STATEMENTS:
        if node.parent.type in ("if_statement", "while_statement", "switch_statement", "do_statement") \
                and node.type == "parenthesized_expression":
            break
        node = node.parent
    src = call.src
    start = src._starts[src.line_at(call.base + node.start_byte) - 1]
    return start, max(call.base + node.end_byte, call.end)


_STATEMENTS = ("expression_statement", "declaration", "return_statement", "for_statement",
               "field_declaration", "preproc_def", "preproc_function_def")


def apply_edits(data: bytes, edits: list) -> bytes:
    """data with edits (non-overlapping, offsets in the original) applied."""
    for e in sorted(edits, key=lambda e: -e.start):
        data = data[: e.start] + e.text.encode("utf-8") + data[e.end:]
    return data


def _function_node(node):
    """The outermost function definition node sits in, or None. Outermost: a macro loop
    such as for_each_possible_cpu(cpu) f(cpu)->x = y; can read as a definition inside one."""
    found = None
    while node is not None:
        if node.type == "function_definition":
            found = node
        node = node.parent
    return found


def enclosing_function(node) -> str:
    """The name of the function definition node sits in, or ''."""
    node = _function_node(node)
    decl = node.child_by_field_name("declarator") if node is not None else None
    while decl is not None and decl.type not in ("identifier", "field_identifier"):
        decl = decl.child_by_field_name("declarator")
    return parser.text(decl) if decl is not None else ""


def site_text(text: str) -> str:
    """An argument's text as the semantic patch compares it: no comments, no white space."""
    return re.sub(r"\s+", "", re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S))


def count_alike(call: Call, callee: str, args: tuple) -> int:
    """How many calls of callee in the function around call have these argument texts
    (site_text), call included."""
    scope = _function_node(call.node)
    if scope is None:
        scope = call.node
        while scope.parent is not None:
            scope = scope.parent
    count, stack = 0, [scope]
    while stack:
        node = stack.pop()
        stack.extend(node.named_children)
        if node.type != "call_expression" or parser.text(node.child_by_field_name("function")) != callee:
            continue
        got = [site_text(parser.text(a)) for a in node.child_by_field_name("arguments").named_children
               if a.type != "comment"]
        count += tuple(got) == args
    return count


# -- the code around a call ---------------------------------------------------------------

def _unparen_node(node):
    """node without the parentheses around it (a loop: they may be nested deeply)."""
    while node is not None and node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def cpu_ratio(node, depth: int = 0) -> Optional[tuple]:
    """(mult, div) when node is a CPU count, k * count, count * k, count / k; else None."""
    node = _unparen_node(node)
    if node is None or depth > 8:
        return None
    if _is_cpu_count(node):
        return (1, 1)
    if node.type != "binary_expression":
        return None
    op = parser.text(node.child_by_field_name("operator"))
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    num = lambda n: n.type == "number_literal" and re.fullmatch(r"[1-9]\d*[uUlL]*", parser.text(n))
    val = lambda n: int(parser.text(n).rstrip("uUlL"))  # of a number num() accepts
    if op == "*":
        if num(left) and cpu_ratio(right, depth + 1) == (1, 1):
            return (val(left), 1)
        if num(right) and cpu_ratio(left, depth + 1) == (1, 1):
            return (val(right), 1)
    if op == "/" and num(right) and cpu_ratio(left, depth + 1) == (1, 1):
        return (1, val(right))
    return None


def _is_cpu_count(node) -> bool:
    if node.type == "identifier":
        return parser.text(node) in CPU_COUNT_NAMES
    if node.type == "call_expression":
        fn = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        return parser.text(fn) in CPU_COUNT_CALLS and args is not None and args.named_child_count == 0
    return False


def mentions_cpu_count(node) -> bool:
    todo = [node]
    while todo:
        n = todo.pop()
        if _is_cpu_count(n):
            return True
        todo.extend(n.named_children)
    return False


def assigned_to(call_node):
    """(text of what the call's result is stored in, the statement), or (None, None)."""
    parent = call_node.parent
    while parent is not None and parent.type in ("parenthesized_expression", "cast_expression"):
        parent = parent.parent
    if parent is None:
        return None, None
    if parent.type == "assignment_expression" and parser.text(parent.child_by_field_name("operator")) == "=":
        stmt = parent.parent
        if stmt is not None and stmt.type == "expression_statement":
            return parser.text(parent.child_by_field_name("left")), stmt
    if parent.type == "init_declarator":
        decl = parent.parent
        target = parent.child_by_field_name("declarator")
        while target is not None and target.type == "pointer_declarator":
            target = target.child_by_field_name("declarator")
        if decl is not None and decl.type == "declaration" and target is not None:
            return parser.text(target), decl
    return None, None


def null_check_after(stmt, target: str):
    """The `if (!target) ...` right after stmt (without an else), or None."""
    nxt = stmt.next_named_sibling
    while nxt is not None and nxt.type == "comment":
        nxt = nxt.next_named_sibling
    if nxt is None or nxt.type != "if_statement" or nxt.child_by_field_name("alternative") is not None:
        return None
    cond = parser.text(nxt.child_by_field_name("condition"))
    inner = " ".join(cond.strip()[1:-1].split())
    return nxt if inner in {c.format(x=target) for c in _NULL_CHECK} else None
