"""The edits: how each kind named in rules.yaml (fix.targets ... edit) changes one call.

A call is read back from the file at the finding's location (the name's line and column) and
modelled as a name and its argument texts. The edit kinds change the model; the call is then
written back: edited arguments in place, or a call whose name changes written anew, then the
statement laid out as Coccinelle lays it out (fix.layout), or wqlint's own way where that
would not pass checkpatch (render). An edit that cannot be made safely raises NoEdit with the reason, which is
shown to the user instead of a diff.
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
ALLOCATORS = api.PUBLIC_FUNCTIONS  # calls that make the queue where they stand
# Lower precedence than '|': such a flags expression is parenthesised before '| WQ_PERCPU'.
_LOW_PRECEDENCE = ("conditional_expression", "assignment_expression", "comma_expression")
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
    for m in re.finditer(r"^\s*#\s*define\s+(create_\w*workqueue)\s*\(\s*(\w+)\s*\)\s*(\w+)\s*\((.*)\)\s*$",
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
    # What each edit did, as data for the semantic patch: tuples whose first item names it.
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


# -- the edit kinds -----------------------------------------------------------------------

def add_percpu(call: Call, finding: Finding, facts: TreeFacts) -> None:
    if not facts.has_percpu:
        raise NoEdit("this tree does not define WQ_PERCPU")
    if finding.hints.flags_conditional:
        raise NoEdit("some values of the flags already have WQ_UNBOUND or WQ_PERCPU: decide per value")
    i = finding.flags_arg
    if i < 0 or i >= len(call.args):
        raise NoEdit(f"the flags are set inside {_inner(call)}, not at this call")
    _add_flags(call, i, "WQ_PERCPU")


def drop_percpu(call: Call, finding: Finding, facts: TreeFacts) -> None:
    """WQ_PERCPU taken out of flags that also have WQ_UNBOUND: what the kernel does."""
    if finding.hints.flags_conditional:
        raise NoEdit("some values of the flags lack WQ_UNBOUND: decide per value")
    i = finding.flags_arg
    if i < 0 or i >= len(call.args):
        raise NoEdit(f"the flags are set inside {_inner(call)}, not at this call")
    node = call.arg_nodes[i]
    if node is not None and (node.type in _LOW_PRECEDENCE or "||" in call.args[i] or "&&" in call.args[i]):
        raise NoEdit("the flags are a condition: drop WQ_PERCPU from the value that has it")
    operands = [layout.normalize(o) for o in layout.split_top(_unparen(call.args[i]), "|")]
    if operands.count("WQ_PERCPU") != 1:
        raise NoEdit("WQ_PERCPU is not written at this call")
    rest = [o for o in operands if o != "WQ_PERCPU"]
    call.set_arg(i, " | ".join(rest) or "0")
    call.ops.append(("arg", call.name, i, call.args[i]))


def replace_system_queue(call: Call, finding: Finding, facts: TreeFacts) -> None:
    """A deprecated system queue passed to a queueing call becomes its replacement
    (api.DEPRECATED_SYSTEM_QUEUES), where the argument is the name itself."""
    i = finding.hints.queue_arg if finding.hints.queue_arg is not None else -1
    if i < 0 or i >= len(call.args):
        raise NoEdit("the queue is not an argument of this call")
    old = _unparen(call.args[i])
    new = api.DEPRECATED_SYSTEM_QUEUES.get(old)
    if new is None:
        raise NoEdit("the queue is chosen by a condition: change the branch that names it")
    call.set_arg(i, new)
    call.ops.append(("queue", call.name, i, old, new))


_LOOPS = ("for_statement", "while_statement", "do_statement")


def add_reclaim(call: Call, finding: Finding, facts: TreeFacts) -> None:
    """WQ_MEM_RECLAIM added to the flags of the queue a reclaim queue's work waits for, at its
    one allocation (the hints of reclaim-flush-dependency say where and which argument)."""
    reason = _reclaim_refusal(finding)
    if reason is not None:
        raise NoEdit(reason)
    i = finding.hints.edit_arg if finding.hints.edit_arg is not None else -1
    if i < 0 or i >= len(call.args):
        raise NoEdit(f"the flags are set inside {_inner(call)}, not at this call")
    node = call.node.parent
    while node is not None and node.type != "function_definition":
        if node.type in _LOOPS:
            raise NoEdit("the flushed queue is allocated in a loop, one queue per iteration: WQ_MEM_RECLAIM "
                         "would give each a rescuer thread; decide by hand")
        node = node.parent
    if i in call.changed and api.RESCUER_FLAG in _operands(call.args[i]):
        return  # another finding's fix gives the same queue WQ_MEM_RECLAIM
    _add_flags(call, i, api.RESCUER_FLAG)


def move_flag(call: Call, finding: Finding, facts: TreeFacts) -> None:
    """flag-as-max-active: the flags written as max_active moved into the flags (after any
    another fix adds there) and max_active 0, the default, in one edit of the two arguments,
    as upstream fixed drm/xe's (aa39abc08e77)."""
    fi, mi = finding.flags_arg, finding.max_active_arg
    if fi < 0 or mi != fi + 1 or mi >= len(call.args):
        raise NoEdit(f"the flags and max_active are set inside {_inner(call)}, not at this call")
    written = _operands(call.args[mi])
    if not written or not all(o in api.FLAG_NAMES for o in written):
        raise NoEdit("max_active is not written as flags at this call: move the flag where it is set")
    if mi in call.changed:
        raise NoEdit("another fix of this call already changes max_active")
    missing = " | ".join(o for o in written if o not in _operands(call.args[fi]))
    variant = _with_flags(call, fi, missing) if missing else "keep"
    call.set_arg(mi, "0")
    call.ops.append(("move-flag", call.name, fi, missing, variant))


def _operands(text: str) -> list:
    """The operands of flags written as a | b | c."""
    return [layout.normalize(o) for o in layout.split_top(_unparen(text), "|")]


def _add_flags(call: Call, i: int, flags: str) -> None:
    """flags (one, or several joined by |) added to argument i: _with_flags(), as an add-flag."""
    variant = _with_flags(call, i, flags)
    call.ops.append(("add-flag", call.name, i, flags, variant))


def _with_flags(call: Call, i: int, flags: str) -> str:
    """flags added to argument i, after what another fix of the same call added there (never
    over another kind of change); the form of the edit for the semantic patch: zero (the
    argument was 0), paren or plain."""
    old = call.args[i]
    if i in call.changed:
        if not any(op[0] == "add-flag" and op[2] == i for op in call.ops):
            raise NoEdit("another fix of this call already changes that argument")
        call.args[i] = with_flag(old, None, flags)
    else:
        call.set_arg(i, with_flag(old, call.arg_nodes[i], flags))
    return "zero" if old.strip() == "0" else "paren" if call.args[i].startswith("(") else "plain"


def _reclaim_refusal(finding: Finding) -> Optional[str]:
    """Why the check found no allocation to edit (hints.no_fix): the finding's own advice says
    it (rules.yaml, the migration case of that reason)."""
    if finding.hints.no_fix is None:
        return None
    return finding.migration or "no single allocation to give WQ_MEM_RECLAIM"


def with_flag(text: str, node, flag: str) -> str:
    if text.strip() == "0":
        return flag
    if "||" not in text and re.search(r"\S\||\|\S", text):
        # The line changes anyway: space the operators as checkpatch asks.
        text = " | ".join(layout.normalize(o) for o in layout.split_top(text, "|"))
    low = node is not None and (node.type in _LOW_PRECEDENCE or (
        node.type == "binary_expression" and parser.text(node.child_by_field_name("operator")) in ("||", "&&")))
    return f"({text}) | {flag}" if low else f"{text} | {flag}"


def expand_legacy(call: Call, finding: Finding, facts: TreeFacts) -> None:
    spec = facts.legacy.get(call.name)
    if spec is None or len(call.args) != 1:
        raise NoEdit(f"{call.name}() is not a create_*workqueue(name) macro of this tree")
    callee, fmt, operands, middle = spec
    operands = list(operands)
    if facts.has_percpu and callee == "alloc_workqueue" and "WQ_UNBOUND" not in operands \
            and "WQ_PERCPU" not in operands:
        operands.append("WQ_PERCPU")  # what missing-affinity-flag would ask of the result
    name = call.args[0]
    literal = re.fullmatch(r'"(?:[^"\\%]|\\.)*"', name.strip())
    tail = [] if literal and fmt == '"%s"' else [name]
    call.ops.append(("legacy", call.name, callee, not tail, " | ".join(operands) or "0", tuple(middle), fmt))
    call.name = callee
    call.args = [name.strip() if tail == [] else fmt, " | ".join(operands) or "0", *middle, *tail]
    call.arg_nodes = [None] * len(call.args)
    call.changed = set(range(len(call.args)))


def ordered(call: Call, finding: Finding, facts: TreeFacts) -> None:
    if call.name != "alloc_workqueue":
        raise NoEdit(f"the queue is made inside {_inner(call)}: convert it there")
    if finding.hints.sysfs:
        raise NoEdit("WQ_SYSFS is set, which ordered queues refuse before v7.1")
    fi, mi = finding.flags_arg, finding.max_active_arg
    if fi != 1 or mi != 2 or call.args[mi].strip() != "1":
        raise NoEdit("max_active 1 is not written at this call")
    operands = [o.strip() for o in layout.split_top(call.args[fi], "|")]
    if "WQ_UNBOUND" not in operands:
        raise NoEdit("WQ_UNBOUND is not written at this call")
    rest = [o for o in operands if o != "WQ_UNBOUND"]
    call.name = "alloc_ordered_workqueue"
    call.set_arg(fi, " | ".join(rest) or "0")
    call.remove_arg(mi)
    call.ops.append(("ordered", fi, mi, call.args[fi]))


def percpu_default(call: Call, finding: Finding, facts: TreeFacts) -> None:
    i = _max_active_here(call, finding)
    call.set_arg(i, "0")
    call.ops.append(("arg", call.name, i, "0"))


def clamp(call: Call, finding: Finding, facts: TreeFacts) -> None:
    i = _max_active_here(call, finding)
    call.set_arg(i, f"min_t(int, {call.args[i]}, WQ_MAX_ACTIVE)")
    call.ops.append(("arg", call.name, i, call.args[i]))


def global_limit(call: Call, finding: Finding, facts: TreeFacts) -> None:
    """max_active becomes 0 and the limit is set system-wide after the NULL check:
    CPU count * m / d through workqueue_set_global_max_active_cpus(), which follows CPU
    hotplug; any other expression of a CPU count (a cap) through workqueue_set_global_max_active()."""
    if call.name not in ALLOCATORS:
        raise NoEdit(f"the queue is made inside {_inner(call)}: set the limit where the value is chosen")
    i = _max_active_here(call, finding)
    node = call.arg_nodes[i]
    ratio = cpu_ratio(node)
    if ratio is None and not _mentions_cpu_count(node):
        raise NoEdit("the CPU count is not written at this call: state the limit where it is computed")
    target, stmt = _assigned_to(call.node)
    if target is None:
        raise NoEdit("the new queue is not stored in a variable or field at this call")
    if ratio:
        setter = ("workqueue_set_global_max_active_cpus", [target, str(ratio[0]), str(ratio[1])])
    else:
        setter = ("workqueue_set_global_max_active", [target, call.args[i]])
    call.set_arg(i, "0")
    indent = layout.line_indent(call.src.line_text(call.src.line_at(call.base + stmt.start_byte)))
    check = _null_check_after(stmt, target)
    call.ops.append(("global", call.name, i, target, setter[0], tuple(setter[1]),
                     parser.text(check.child_by_field_name("condition")) if check is not None else None))
    statement = f"{setter[0]}({', '.join(layout.normalize(a) for a in setter[1])});"
    if check is not None:
        at = call.base + check.end_byte
        call.inserts.append(Edit(at, at, "\n" + _added_line(indent, statement)))
    else:
        at = call.base + stmt.end_byte
        added = f"\n{indent}if ({target})\n" + _added_line(indent + "\t", statement)
        if stmt.parent is not None and stmt.parent.type in _BODY_OF:
            # The body of an if, else or loop without braces becomes a block, as Coccinelle
            # writes it: "else {" ... "}" at the indentation of the line before.
            before = call.base + stmt.prev_sibling.end_byte
            outer = layout.line_indent(call.src.line_text(call.src.line_at(before - 1)))
            call.inserts.append(Edit(before, before, " {"))
            added += f"\n{outer}}}"
        call.inserts.append(Edit(at, at, added))


_BODY_OF = ("if_statement", "else_clause", "while_statement", "for_statement", "do_statement")


def _added_line(indent: str, statement: str) -> str:
    """A statement the fix adds on a line of its own, laid out as Coccinelle adds it."""
    return layout.coccinelle(indent + statement, [(len(indent), len(indent) + len(statement), False)])


def refusal(edit: str, finding: Finding) -> Optional[str]:
    """Why edit cannot fix finding, when its facts already tell (before any file is read)."""
    check = _REFUSALS.get(edit)
    return check(finding) if check is not None else None


def edit_at(finding: Finding) -> tuple:
    """(path, line, column) of the call a fix of finding edits: the reported call, or the one
    its hints name (edit_at: the allocation of a queue the reported flush waits for)."""
    at = finding.hints.edit_at
    return (finding.path, finding.line, finding.col) if at is None else (at.path, at.line, at.col)


_REFUSALS = {"add-reclaim": _reclaim_refusal}


# When several findings share a call, the edits are tried in this order: the ones that
# rewrite the whole call first, a clamp last (a global limit makes it moot).
EDITS = {
    "expand-legacy": expand_legacy, "ordered": ordered, "global-limit": global_limit,
    "percpu-default": percpu_default, "add-percpu": add_percpu, "drop-percpu": drop_percpu,
    "move-flag": move_flag, "clamp": clamp, "replace-system-queue": replace_system_queue, "add-reclaim": add_reclaim,
}


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


# -- helpers ------------------------------------------------------------------------------

def _inner(call: Call) -> str:
    return f"{call.name}()" if call.name not in ALLOCATORS else "a variable or wrapper"


def _max_active_here(call: Call, finding: Finding) -> int:
    i = finding.max_active_arg
    if i < 0 or i >= len(call.args):
        raise NoEdit(f"max_active is set inside {_inner(call)}, not at this call")
    return i


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


def _mentions_cpu_count(node) -> bool:
    todo = [node]
    while todo:
        n = todo.pop()
        if _is_cpu_count(n):
            return True
        todo.extend(n.named_children)
    return False


def _assigned_to(call_node):
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


def _null_check_after(stmt, target: str):
    """The `if (!target) ...` right after stmt (without an else), or None."""
    nxt = stmt.next_named_sibling
    while nxt is not None and nxt.type == "comment":
        nxt = nxt.next_named_sibling
    if nxt is None or nxt.type != "if_statement" or nxt.child_by_field_name("alternative") is not None:
        return None
    cond = parser.text(nxt.child_by_field_name("condition"))
    inner = " ".join(cond.strip()[1:-1].split())
    return nxt if inner in {c.format(x=target) for c in _NULL_CHECK} else None
