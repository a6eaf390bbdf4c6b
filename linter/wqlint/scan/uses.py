"""The second kind of site: a queue named at a call that takes one (QueueUse), when the
queue is one of the system queues the API deprecates (api.DEPRECATED_SYSTEM_QUEUES). Such a
use has no chain to follow: it is found from the search's occurrences of the names, in the
targets only."""
from __future__ import annotations

import dataclasses
import re
from typing import Optional

from wqlint import api
from wqlint.finding import Step
from wqlint.scan import parser
from wqlint.scan.cpp import block_text
from wqlint.scan.missed import WorkFinder
from wqlint.scan.scope import only_in_comments, scope_of
from wqlint.scan.site import QueueUse
from wqlint.scan.suppress import suppressed


class QueueUses:
    """The uses of deprecated system queues in the targets. index, macros, cpp: the scan's
    (scan.index.TreeIndex, the resolver's scan.macros.Macros, scan.cpp.Decider); targets:
    scan.targets.Targets; focus: scan.targets.Focus."""

    def __init__(self, index, macros, cpp, targets, focus, helper_queues: Optional[dict] = None):
        self.index = index
        self.macros = macros
        self.cpp = cpp
        self.targets = targets
        self.focus = focus
        # scan.treeapi.helper_queues() of the API header: where the helpers' work goes
        self.helper_queues = helper_queues or {}

    def find(self, rounds: int) -> list:
        """Calls whose queue argument (api.QUEUE_CALLS) is one of the names the API lists in
        DEPRECATED_SYSTEM_QUEUES, each a QueueUse; at most rounds searches of the tree."""
        if [n for n in api.DEPRECATED_SYSTEM_QUEUES if self.index.occurrences(n) is None]:
            self.index.fetch_pending()  # (every name asked for first: one search for all)
        out: list = []
        for _ in range(rounds):
            misses = self.index.misses
            out = self._once()
            # The #if conditions around a use may name macros still to look up.
            if self.index.misses == misses or not self.index.fetch_pending():
                break
        missed = WorkFinder(self.index)
        return [dataclasses.replace(use, missed=missed.find(use.path, use.line, use.col, use.scheduled))
                if self._mismatched(use) else use for use in out]

    def _mismatched(self, use: QueueUse) -> bool:
        """Is use a flush of a deprecated system queue, in a file that queues work with the
        helpers, while the helpers queue on the queue that replaces it (the work the flush
        cannot wait for is then worth finding)?"""
        got = self.helper_queues.get("schedule_work")
        return bool(use.scheduled) and use.within != api.FLUSH_SCHEDULED and got is not None \
            and got[0] != use.queue and api.DEPRECATED_SYSTEM_QUEUES.get(use.queue) == got[0]

    def _once(self) -> list:
        out, seen = [], set()
        for name in api.DEPRECATED_SYSTEM_QUEUES:
            for rel, line in self.index.occurrences(name) or ():
                if not self.targets.holds(rel) or self.focus.outside(rel):
                    continue
                src = self.index.source(rel)
                if src is None:
                    continue
                text = src.line_bytes(line)
                if re.match(rb"\s*(\*|//)", text):
                    continue  # a comment
                span = src.define_span(line)  # a use inside a macro's body counts too
                chunk = self.macros.chunk(src, *span) if span else src.chunk_at(line)
                if chunk is None:
                    continue
                for ident in _identifiers(chunk.root, name):
                    if chunk.line_of(ident) != line:
                        continue
                    use = self._use_at(ident, name, chunk)
                    if use is not None and (use.path, use.line, use.col, use.queue) not in seen:
                        seen.add((use.path, use.line, use.col, use.queue))
                        out.append(use)
        return out

    def _use_at(self, node, name: str, chunk) -> Optional[QueueUse]:
        """The call node is the queue argument of, through parentheses and the branches of
        a conditional; None when it is anything else."""
        if node is None or node.type != "identifier" or parser.text(node) != name:
            return None
        arg = node
        while arg.parent is not None and (arg.parent.type == "parenthesized_expression" or (
                arg.parent.type == "conditional_expression"
                and arg.parent.child_by_field_name("condition") != arg)):
            arg = arg.parent
        args = arg.parent
        if args is None or args.type != "argument_list" or args.parent is None \
                or args.parent.type != "call_expression":
            return None
        call = args.parent
        fn = call.child_by_field_name("function")
        spec = api.QUEUE_CALLS_BY_NAME.get(parser.text(fn)) if fn is not None else None
        listed = [a for a in args.named_children if a.type != "comment"]
        if spec is None or spec.queue_arg >= len(listed) or listed[spec.queue_arg] != arg:
            return None
        src = chunk.source
        line = chunk.line_of(fn)
        dead, conds = self.cpp.state(src, line)
        if dead:  # in a branch not compiled for this kernel (a compat block)
            return None
        scope = scope_of(chunk, call)
        col, end_col = chunk.col_of(fn), chunk.end_col_of(fn)
        if getattr(chunk, "macro_kind", None) == "macro":
            # A macro's head is rewritten for parsing: take the column from the file's line.
            at = re.search(r"\b" + spec.name + r"\s*\(", src.line_text(line))
            if at is not None:
                col, end_col = at.start() + 1, at.start() + len(spec.name)
        return QueueUse(
            call=spec.name, queue=name, arg=spec.queue_arg, path=src.rel, line=line,
            col=col, end_col=end_col,
            step=Step(src.rel, line, src.line_text(line).strip(),
                      f"{spec.name}() on {name} (argument {spec.queue_arg + 1})"),
            function=scope.name if scope.kind == "function" else "",
            suppressed=suppressed(src, line), conditions=tuple(self.cpp.steps(src, conds)),
            **_compat_pair(src, conds, api.DEPRECATED_SYSTEM_QUEUES.get(name, "")),
            within=scope.name if scope.kind != "file" else "",
            scheduled=() if spec.queues else _helper_calls(src))


def _helper_calls(src) -> tuple:
    """(helper, Step) of the calls of api.SCHEDULE_HELPERS in src (not comments, not
    definitions), in line order."""
    out = []
    for helper in api.SCHEDULE_HELPERS:
        pat = re.compile(r"\b" + helper + r"\s*\(")
        for ln in src.word_lines(helper):
            text = src.line_text(ln)
            if not pat.search(text) or re.match(r"\s*(\*|//|#\s*define)", text) \
                    or re.search(r"\bbool\s+" + helper, text):
                continue
            chunk = src.chunk_at(ln)
            if chunk is not None and not only_in_comments(chunk, helper, ln):
                out.append((helper, Step(src.rel, ln, text.strip(), f"{helper}() queues work here")))
    return tuple(sorted(out, key=lambda hs: hs[1].line))


def _compat_pair(src, conds, new: str) -> dict:
    """QueueUse's compat_pair and compat_undecided: the text of the innermost #if whose
    other branch already uses new (the replacement of what this line uses), which makes
    this line the module's code for kernels without it, and whether that #if is left
    undecided (a configure-generated HAVE_*) rather than taken for a kernel that has the
    replacement before the version the module tests (a backport). {} when none."""
    if not new:
        return {}
    word = re.compile(rb"\b" + new.encode() + rb"\b")
    for cond, truth, _nowhere, _why in reversed(conds):
        if word.search(block_text(src, cond.line)):
            return {"compat_pair": cond.text, "compat_undecided": truth is None}
    return {}


def _identifiers(node, name: str) -> list:
    """The identifiers spelled name under node."""
    out, stack = [], [node]
    while stack:
        cur = stack.pop()
        if cur.type == "identifier" and parser.text(cur) == name:
            out.append(cur)
        stack.extend(cur.named_children)
    return out
