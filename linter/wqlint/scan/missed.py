"""The work a flush of a system queue cannot wait for once the schedule helpers
(api.SCHEDULE_HELPERS) queue on another queue: a work item the flushing code queues with a
helper, or has queued for it, before the flush (the evidence of a flush of a queue the work is
not on).

It is looked for where the code before the flush puts it, nearest first: a helper's call in
the flushing function before the flush; then what the calls made before the flush do, call
by call (the fewest calls first), including the function of a work item the function waits
for before the flush (flush_work(), cancel_work_sync()... run it to its end, and what it
queues is queued before the flush); then the helpers' calls elsewhere in the file. A work item
the function already waits for before the flush is never the answer: that wait does not
depend on the flush. Callees are found in the flushing file, the tree's files a definition
search covers, and, for a module scanned with --kernel-tree, the whole kernel tree (where
fput() and the like queue their own work)."""
from __future__ import annotations

import re
from typing import Optional

from wqlint import api
from wqlint.finding import Step
from wqlint.scan import conditions, parser
from wqlint.scan.scope import declarator_name, function_declarator
from wqlint.scan.site import Missed

MAX_DEPTH = 10  # calls from the flushing function to the helper's call
MAX_BODIES = 500  # definitions read from one flush
MAX_DEFINITIONS = 3  # definitions of one name followed (#ifdef variants of a header's inline)
MAX_ROUNDS = 3  # searches of the tree for the names of one depth
_WAITS = tuple(name for name, (what, _arg) in api.SELF_WAITS.items() if what == "work")
_API = frozenset(api.QUEUE_CALLS_BY_NAME) | frozenset(api.SELF_WAITS) | frozenset(api.WORK_BINDERS) \
    | frozenset(api.SCHEDULE_HELPERS) | frozenset(api.FLUSH_CALLS_BY_NAME) | {api.FLUSH_SCHEDULED}
_MEMBER = re.compile(r"(\.|->)work$")  # a delayed_work's own work_struct


def item_text(node) -> str:
    """The work item an argument names, as comparable text: no spaces, no '&' or parentheses
    around it."""
    text = re.sub(r"\s+", "", parser.text(node))
    while True:
        stripped = text[1:] if text.startswith("&") else text
        if stripped.startswith("(") and stripped.endswith(")"):
            stripped = stripped[1:-1]
        if stripped == text:
            return text
        text = stripped


def same_item(a: str, b: str) -> bool:
    """Do a and b name one item (a delayed_work and its work member count as one)?"""
    return a == b or _MEMBER.sub("", a) == _MEMBER.sub("", b)


def function_node(src, line: int, name: str = ""):
    """(chunk, function_definition node) around line (or, with name, the definition of name
    that starts in line's chunk), or None."""
    chunk = src.chunk_at(line)
    for node in _definitions_in(chunk.root):
        if name:
            fdecl = function_declarator(node)
            got = declarator_name(fdecl.child_by_field_name("declarator")) if fdecl is not None else None
            if got == name:
                return chunk, node
        elif chunk.line_of(node) <= line <= chunk.line_of(node) + node.end_point[0] - node.start_point[0]:
            return chunk, node
    return None


def _definitions_in(node) -> list:
    """The function_definition nodes at the top of node, in #if blocks too (a chunk may start
    inside one)."""
    out = []
    for child in node.children:
        if child.type == "function_definition":
            out.append(child)
        elif child.type.startswith("preproc_") or child.type == "ERROR":
            out.extend(_definitions_in(child))
    return out


def _calls(node) -> list:
    """(name, call node) of the calls of plain names in node, in the order of the text."""
    return [(parser.text(caps["call.name"]), caps["call"]) for _, caps in parser.matches("calls", node)]


def _waited(calls: list) -> list:
    """The items that the waits for one work item among calls [(name, call)] name."""
    return [item_text(parser.args(call)[0]) for name, call in calls if name in _WAITS and parser.args(call)]


def _followed(name: str) -> bool:
    """Is a call of name followed to its definition? Not the workqueue API's own calls (a wait
    or a queueing is what it is, not what its implementation does), nor a macro's
    upper-case name."""
    return name not in _API and not name.isupper()


class WorkFinder:
    """Finds the evidence of one scan's flushes. index: scan.index.TreeIndex."""

    def __init__(self, index):
        self.index = index
        self._defs: dict = {}  # (name, file asking) -> [(rel, line)] of its definitions

    def find(self, rel: str, line: int, col: int, in_file: tuple) -> Optional[Missed]:
        """The work the flush at rel:line (column col) cannot wait for, or None when none was
        found. in_file: (helper, Step) of the helpers' calls of the file (QueueUse.scheduled)."""
        src = self.index.source(rel)
        found = function_node(src, line) if src is not None else None
        if found is None:
            return None
        chunk, fn = found
        before = [(name, call) for name, call in _calls(fn)
                  if (chunk.line_of(call), chunk.col_of(call)) < (line, col)]
        waited = _waited(before)
        for name, call in reversed(before):  # queued in the function itself, the nearest first
            got = self._queued(name, call, chunk, waited, ())
            if got is not None:
                return got
        frontier = [(name, rel, (name,), (self._step(chunk, call, f"calls {name}()"),)) for name, call in before
                    if _followed(name)]
        frontier += self._waited_functions(chunk, fn, waited)
        got = self._reach(frontier, waited)
        if got is not None:
            return got
        last = chunk.line_of(fn) + fn.end_point[0] - fn.start_point[0]
        for helper, step in in_file:  # the helpers' calls elsewhere in the file (not after the flush)
            if line <= step.line <= last:
                continue
            at = self._call_at(src, step.line, helper)
            got = self._queued(helper, at[1], at[0], waited, ()) if at is not None else None
            if got is not None:
                return got
        return None

    def _queued(self, name: str, call, chunk, waited: list, path: tuple) -> Optional[Missed]:
        """The Missed of call, at the end of path ((functions, Steps) on the way), when it is a
        helper's call queuing an item not in waited."""
        if name not in api.SCHEDULE_HELPERS:
            return None
        args = parser.args(call)
        at = api.SCHEDULE_WORK_ARG[name]
        if at >= len(args):
            return None
        item = item_text(args[at])
        if any(same_item(item, w) for w in waited):
            return None
        through, steps = path or ((), ())
        return Missed(item, name, through, steps + (self._step(chunk, call, f"{name}() queues {item} here"),))

    def _waited_functions(self, chunk, fn, waited: list) -> list:
        """Frontier entries for the functions bound to the items waited for before the flush:
        their binding in the flushing function (or its file) names the function that runs."""
        out = []
        places = [(chunk, fn)] + [(chunk, n) for n in _definitions_in(chunk.root) if n is not fn]
        for where, node in places:
            for name, call in _calls(node):
                spec = api.WORK_BINDERS.get(name)
                args = parser.args(call)
                if spec is None or len(args) <= max(spec) or args[spec[1]].type != "identifier":
                    continue
                if any(same_item(item_text(args[spec[0]]), w) for w in waited):
                    bound = parser.text(args[spec[1]])
                    step = self._step(where, call, f"{name}() binds {bound}() to an item waited for before the "
                                                   "flush: it runs, and queues what it queues, first")
                    out.append((bound, where.source.rel, (bound,), (step,)))
            if out:
                break
        return out

    def _reach(self, frontier: list, waited: list) -> Optional[Missed]:
        """Breadth first from frontier [(name, file calling it, functions so far, Steps so
        far)]: the first helper call met, None when none within MAX_DEPTH calls and
        MAX_BODIES bodies."""
        seen = {name for name, *_ in frontier}
        bodies = 0
        for _depth in range(MAX_DEPTH):
            if not frontier:
                return None
            for _ in range(MAX_ROUNDS):
                wanting = [name for name, rel, *_ in frontier if self._definitions(name, rel) is None]
                if not wanting or not self.index.fetch_pending():
                    break
            nxt = []
            for name, rel, through, steps in frontier:
                for drel, dline in self._definitions(name, rel) or ():
                    bodies += 1
                    if bodies > MAX_BODIES:
                        return None
                    dsrc = self.index.source(drel)
                    got = function_node(dsrc, dline, name) if dsrc is not None else None
                    if got is None:
                        continue
                    chunk, node = got
                    calls = _calls(node)
                    here = waited + _waited(calls)  # a body that queues and waits itself
                    for cname, call in calls:
                        missed = self._queued(cname, call, chunk, here, (through, steps))
                        if missed is not None:
                            return missed
                    for cname, call in calls:
                        if cname not in seen and _followed(cname):
                            seen.add(cname)
                            nxt.append((cname, drel, through + (cname,),
                                        steps + (self._step(chunk, call, f"calls {cname}()"),)))
            frontier = nxt
        return None

    def _definitions(self, name: str, rel: str) -> Optional[list]:
        """[(rel, line)] of at most MAX_DEFINITIONS bodies of function name as seen from rel:
        its file's own, else those a definition search finds; None until searched."""
        key = (name, rel)
        got = self._defs.get(key)
        if got is not None:
            return got
        src = self.index.source(rel)
        own = [] if src is None else [(rel, ln) for ln in src.word_lines(name)
                                      if not re.match(r"\s*(\*|//|#)", src.line_text(ln))
                                      and self._defines(rel, ln, name)]
        if own:
            got = own[:1]
        else:
            lines = self.index.occurrences(name, defs=True, near=rel, where=self.index.wide_scope(rel))
            if lines is None:
                return None
            got = [(r, ln) for r, ln in lines if r != rel and self._defines(r, ln, name)][:MAX_DEFINITIONS]
        self._defs[key] = got
        return got

    def _defines(self, rel: str, line: int, name: str) -> bool:
        """Does a definition of function name start on rel's line?"""
        src = self.index.source(rel)
        if src is None or not re.search(r"\b" + re.escape(name) + r"\s*\(", src.line_text(line)) \
                or src.line_text(line).rstrip().endswith(";"):
            return False
        got = function_node(src, line, name)
        return got is not None and got[0].line_of(got[1]) <= line <= got[0].line_of(got[1].child_by_field_name(
            "body") or got[1])

    def _call_at(self, src, line: int, name: str):
        """(chunk, call node) of the call of name on line, or None."""
        chunk = src.chunk_at(line)
        for cname, call in _calls(chunk.root):
            if cname == name and chunk.line_of(call) == line:
                return chunk, call
        return None

    @staticmethod
    def _step(chunk, node, note: str) -> Step:
        src = chunk.source
        line = chunk.line_of(node)
        return Step(src.rel, line, src.line_text(line).strip(), conditions.with_guards(note, node))
