"""Work items between calls: where an allocated queue is kept, the calls that put work items
on it, the functions the items are bound to, and a bounded call graph from those functions
to the flushes they make.

Built on demand, as values are: only the queues asked about are followed, and a function is
parsed only when the text of its body and its callees' shows a flush within the calls left
(scan.calls, which finds where each callee is defined).

A place that holds a queue or a work item is a Key: a variable, or a struct member (with the
struct's tag when the declarations tell it). Everything is looked for in the directory of the
file asking and in its parent (when that is more than two levels deep), through one search
per round of every directory asked about (scan.subtext): a file is read only when it names
what is asked, or holds the definition of a function that is followed.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Optional

from wqlint import api
from wqlint.finding import Step
from wqlint.scan import parser
from wqlint.scan.calls import MAX_DEPTH, Calls, dirs_near
from wqlint.scan.items import rebound
from wqlint.scan.steps import ALL_STEPS, exhausted
from wqlint.scan.nearness import related
from wqlint.scan.ctext import short as _short
from wqlint.scan.search import covering
from wqlint.scan.scope import Scope, scope_of
from wqlint.scan.tags import declared_tag, split_call
from wqlint.scan.subtext import SubsystemText
from wqlint.scan import conditions, guards
from wqlint.scan.suppress import suppressed
from wqlint.scan.site import Flow, Key, Site, Target
from wqlint.scan.source import call_at

MAX_FUNCTIONS = 400  # functions looked at from one work function
MAX_OCCURRENCES = 3000  # lines naming a member that are looked at for one question
MAX_FLUSHES = 16  # flushes reached from one function
MAX_TEXT_ROUNDS = 16  # searches of the subsystems' text for one round of the engine

_QUEUEING = api.QUEUEING
_QUEUEING_B = tuple(n.encode() for n in covering(list(_QUEUEING)))
_QUEUEING_CALL_RE = re.compile(r"\b(" + "|".join(sorted(_QUEUEING, key=len, reverse=True)) + r")\s*\(")


class WorkModel:
    def __init__(self, engine, sites: list, helper_queues: dict, questions: Optional[dict] = None):
        """questions: {part: [question]} that each part (flows, waits) asked of the subsystems'
        text in a scan of the tree before (scan.subtext.questions_of()), answered when the
        part starts (prime())."""
        self.engine = engine
        self.index = engine.index
        self.resolver = engine.resolver
        self.sites = sites
        self.helpers = helper_queues  # {helper: (queue, Step)}
        self.text = SubsystemText(self.index, _API_NAMES)
        self.calls = Calls(self.index, self.text, _NOT_FOLLOWED, engine.description)
        self._keys: dict = {}  # id(site) -> Key | None
        self._fn_memo: dict = {}
        self._related: dict = {}  # rel -> set of the files of its subsystem
        self._statics: dict = {}  # (rel, name) -> does rel declare a static called name
        self._by_name: Optional[dict] = None  # name of a queue's Key -> [(Site, Key)]
        self._lines_memo: dict = {}  # (name, directory) -> _lines()
        self._chunk_calls: dict = {}  # (rel, first line of a chunk) -> {name: its calls of name}
        self._answers: dict = {}  # (question, Key, directory) -> answer
        self._rebinds: dict = {}  # (path, line of a queueing call, item, function) -> _rebound()
        self.after_waits: dict = {}  # rel -> scan.assumed's waits then stores in it
        self._reached: dict = {}  # (id(site), Key, queued, bound, function, near) -> _reach(), once known
        self.questions = questions or {}
        self._primed: set = set()  # the parts prime() answered the questions of, in this process

    def prime(self, part: str) -> None:
        """Answer at once what part asked of the subsystems' text in the scan before, once in
        a process (before it forks the workers of a part split over several, in each that
        works out a part alone): scan.subtext.SubsystemText.prefetch()."""
        if part not in self._primed:
            self._primed.add(part)
            self.text.prefetch(self.questions.get(part, ()))

    def record(self, part: str, run):
        """run(), its questions of the subsystems' text told to the index as part's (kept
        with the scan: scan.engine), in a worker as in this process (scan.shares)."""
        self.text.asked = set()
        try:
            return run()
        finally:
            self.index.asked.setdefault(part, set()).update(self.text.asked)

    def paths_done(self) -> None:
        """Let go of what following the works' paths took (the subsystems' text, the
        callees of each body, the flushes and waits each function reaches, the calls of each
        chunk): the cancels of the flows need none of it, and it holds parse trees of files
        the index let go of."""
        self.text = SubsystemText(self.index, _API_NAMES)
        self.calls = Calls(self.index, self.text, _NOT_FOLLOWED, self.engine.description)
        self._fn_memo, self._reached, self._lines_memo, self._chunk_calls = {}, {}, {}, {}
        self.after_waits = {}

    # -- asking ------------------------------------------------------------------------------
    def flows(self, wanted) -> list:
        """The Flows of the allocation sites for which wanted(site) holds, the subsystems'
        text searched round by round (scan.subtext)."""
        self.prime("flows")
        return self.record("flows", lambda: self._rounds(wanted))

    def _rounds(self, wanted) -> list:
        self.calls.far_heads()  # (asked with the first round's searches)
        out = self._flows(wanted)
        for _ in range(MAX_TEXT_ROUNDS):
            if not self.text.fetch():
                break
            out = self._flows(wanted)
        return out

    def _misses(self) -> tuple:
        return self.index.misses, self.text.misses

    def _flows(self, wanted) -> list:
        out, seen = [], set()
        for site in self.sites:
            if not wanted(site):
                continue
            key = self.queue_key(site)
            if key is None:
                continue
            for queued, work in self.queued_on(key, site.path):
                for bound, fn, near in self.bindings(work, queued.path):
                    if self._rebound(queued, work.name, fn):
                        continue  # the queueing call's function binds the item to another first
                    for flow in self._reach(site, key, queued, bound, fn, near):
                        ident = (flow.path, flow.line, flow.col, id(site), flow.function)
                        if ident not in seen:
                            seen.add(ident)
                            out.append(flow)
        return out

    def _rebound(self, queued, item: str, fn: str) -> bool:
        """scan.items.rebound(), once per queueing call, item and function."""
        key = (queued.path, queued.line, item, fn)
        if key not in self._rebinds:
            self._rebinds[key] = rebound(self.index, queued, item, fn)
        return self._rebinds[key]

    # -- where a queue is kept ---------------------------------------------------------------
    def queue_key(self, site: Site) -> Optional[Key]:
        got = self._keys.get(id(site), False)
        if got is not False:
            return got
        src = self.index.source(site.path)
        key = None
        if src is not None:
            found = call_at(src, site.line, site.col)
            if found is not None:
                chunk, call = found
                key = self._stored_in(call, chunk)
        self._keys[id(site)] = key
        return key

    def _stored_in(self, node, chunk) -> Optional[Key]:
        """The Key an expression's value is assigned to or initialises."""
        cur = node
        while cur.parent is not None and cur.parent.type in ("parenthesized_expression", "cast_expression"):
            cur = cur.parent
        parent = cur.parent
        if parent is None:
            return None
        scope = scope_of(chunk, node)
        if parent.type == "assignment_expression" and parent.child_by_field_name("right") == cur:
            left = parent.child_by_field_name("left")
            key = self.key_of(left, scope)
            if key is not None and key.kind == "var" and self._is_local(left, scope):
                return self._local_stored(parser.text(left), scope)
            return key
        if parent.type == "init_declarator":
            decl = parent.child_by_field_name("declarator")
            name = parser.text(decl).lstrip("*").strip()
            if scope.kind == "function" and name in scope.local_decls():
                return self._local_stored(name, scope)
            return Key("var", name) if re.fullmatch(r"\w+", name) else None
        return None

    def _local_stored(self, name: str, scope: Scope) -> Optional[Key]:
        """A local holding a new queue is stored somewhere later: `x->wq = wq;`."""
        if scope.node is None:
            return None
        for node in parser.of_kind(scope.node, "assignment_expression"):
            right = node.child_by_field_name("right")
            if right is not None and right.type == "identifier" and parser.text(right) == name:
                key = self.key_of(node.child_by_field_name("left"), scope)
                if key is not None and not (key.kind == "var" and self._is_local(
                        node.child_by_field_name("left"), scope)):
                    return key
        return None

    @staticmethod
    def _is_local(node, scope: Scope) -> bool:
        name = parser.text(node)
        return scope.kind == "function" and (name in scope.local_decls() or scope.param_index(name) >= 0)

    def key_of(self, node, scope: Scope) -> Optional[Key]:
        """The Key an expression names: `&x->work`, `x->wq`, `foo_wq`, `&d->dwork.work`."""
        while node is not None and node.type in ("parenthesized_expression", "cast_expression",
                                                 "pointer_expression"):
            if node.type == "pointer_expression" and not parser.text(node).startswith("&"):
                return None
            node = node.child_by_field_name("value") if node.type == "cast_expression" else (
                node.child_by_field_name("argument") if node.type == "pointer_expression"
                else next((c for c in node.named_children if c.type != "comment"), None))
        if node is None:
            return None
        if node.type == "identifier":
            name = parser.text(node)
            if scope.kind == "function" and (scope.param_index(name) >= 0):
                return None  # the caller's: not followed
            return Key("var", name)
        if node.type == "field_expression":
            member = parser.text(node.child_by_field_name("field"))
            obj = node.child_by_field_name("argument")
            # A delayed_work's or rcu_work's own work_struct: the item is the outer member.
            if member == "work" and obj is not None and obj.type == "field_expression":
                return self.key_of(obj, scope)
            if member == "work" and obj is not None and obj.type == "identifier" \
                    and parser.text(node.children[1]) == ".":
                return self.key_of(obj, scope)
            return Key("member", member, declared_tag(obj, scope, self.calls.ops.pointee))
        if node.type == "call_expression":
            fn = node.child_by_field_name("function")
            if fn is not None and fn.type == "identifier":
                return self._accessor_key(parser.text(fn), scope)
        if node.type == "subscript_expression":  # an element of an array: kept in the array
            return self.key_of(node.child_by_field_name("argument"), scope)
        return None

    def _accessor_key(self, name: str, scope: Scope) -> Optional[Key]:
        """The member a function-like macro used as an accessor names: `#define
        host_wq(x) (((struct host_attrs *)(x)->data)->wq)` holds its queue in struct
        host_attrs' member wq, whatever object it is given."""
        for expr, mscope in self.resolver.macros.accessor_values(name, scope.src):
            if expr.type == "field_expression":
                return self.key_of(expr, mscope)
        return None

    # -- where work is put on a queue --------------------------------------------------------
    def _lines(self, key: Key, near: str) -> list:
        """(rel, line) of the calls of the API (queueing, scheduling, binding) naming key in
        the files near near (_files_near(): the files the model reads for the definitions of
        callees too), its own directory first."""
        here = near.rsplit("/", 1)[0] if "/" in near else ""
        got = self._lines_memo.get((key.name, here))
        if got is None:
            got = []
            files = set(self.calls.files_near(near))
            found = [self.text.calls(reldir) for reldir in dirs_near(near)]
            for words in found:
                if words is None:
                    return []
                got.extend(o for o in words.get(key.name, ()) if o[0] in files)
            got = self._lines_memo[(key.name, here)] = got[:MAX_OCCURRENCES]
        return got

    def _peek(self, rel: str, line: int) -> bytes:
        got = self.text.lines.get((rel, line))
        return got if got is not None else self.index.peek(rel, line)

    def queued_on(self, key: Key, near: str) -> list:
        """[(Step, work Key)] of the calls that put a work item on the queue key."""
        return self._memo("queued", key, near, self._queued_on)

    def _memo(self, what, key, near, compute):
        here = near.rsplit("/", 1)[0] if "/" in near else ""
        got = self._answers.get((what, key, here))
        if got is None:
            misses = self._misses()
            got = compute(key, near)
            if self._misses() == misses:
                self._answers[(what, key, here)] = got
        return got

    def _queued_on(self, key: Key, near: str) -> list:
        out = []
        for rel, line in self._lines(key, near):
            if not self._near_call(rel, line, _QUEUEING_B) or self._not_queued_on(rel, line, key):
                continue
            for call, spec, chunk in self.calls_around(rel, line, _QUEUEING):
                args = parser.args(call)
                if spec.queue_arg + 1 >= len(args):
                    continue
                scope = scope_of(chunk, call)
                qkey = self.key_of(args[spec.queue_arg], scope)
                if qkey is None or not qkey.matches(key):
                    continue
                cline = chunk.line_of(call)
                src = chunk.source
                work = self.key_of(args[spec.queue_arg + 1], scope)
                if work is None:
                    # A wrapper given the work item: its callers name it.
                    param = _param_node(args[spec.queue_arg + 1], scope)
                    if param >= 0:
                        out += self._queued_through(scope, param, f"{_short(parser.text(args[spec.queue_arg]), 40)} "
                                                    f"through {spec.name}() ({src.rel}:{cline})")
                    continue
                out.append((Step(src.rel, cline, src.line_text(cline).strip(),
                                 f"{spec.name}() puts {_short(parser.text(args[spec.queue_arg + 1]), 40)} "
                                 f"on {_short(parser.text(args[spec.queue_arg]), 40)}"), work))
        return out

    def _queued_through(self, scope: Scope, param: int, how: str) -> list:
        """[(Step, work Key)] of the calls of scope's function, a wrapper that puts the work
        item its parameter param holds on a queue (how: which, and where), in its file when
        it is static, else in its subsystem's files."""
        name = scope.name
        if not name or scope.kind != "function":
            return []
        if scope.static:
            lines = [(scope.src.rel, ln) for ln in scope.src.word_lines(name)]
        else:
            found = [self.text.words(reldir, name) for reldir in dirs_near(scope.src.rel)]
            near = set(self.calls.files_near(scope.src.rel)) | {scope.src.rel}
            lines = []
            for occ in found:
                if occ is None:
                    return []
                lines += [o for o in occ if o[0] in near]
            lines = lines[:MAX_OCCURRENCES]
        out = []
        for rel, line in lines:
            for call, _spec, chunk in self.calls_around(rel, line, {name: None}):
                args = parser.args(call)
                if param >= len(args):
                    continue
                work = self.key_of(args[param], scope_of(chunk, call))
                if work is None:
                    continue
                cline = chunk.line_of(call)
                src = chunk.source
                out.append((Step(rel, cline, src.line_text(cline).strip(),
                                 f"{name}() puts {_short(parser.text(args[param]), 40)} on {how}"), work))
        return out

    def _not_queued_on(self, rel: str, line: int, key: Key) -> bool:
        """Does the text of the queueing calls starting on line (with the two lines after
        it) show that none of them puts work on key? Then its function is not parsed."""
        src = self.index.source(rel)
        if src is None:
            return False
        text = src.slice(line, min(line + 2, src.nlines)).decode("utf-8", "replace")
        found = False
        for m in _QUEUEING_CALL_RE.finditer(text):
            args = split_call(text[m.end():])
            spec = _QUEUEING[m.group(1)]
            if args is None or spec.queue_arg >= len(args):
                return False
            if _names_key(args[spec.queue_arg], key, False):
                return False
            found = True
        return found

    def _near_call(self, rel: str, line: int, names: tuple) -> bool:
        """Does the line, or one of the two before it (a call's arguments wrapped), name one
        of names? Only then is its function parsed."""
        text = self._peek(rel, line)
        if any(n in text for n in names):
            return True
        src = self.index.source(rel)
        return src is not None and any(n in src.slice(max(1, line - 2), line) for n in names)

    def calls_around(self, rel: str, line: int, names) -> list:
        """(call node, spec, chunk) of the calls of names that a line is part of."""
        src = self.index.source(rel)
        if src is None:
            return []
        dead, _ = self.engine.cpp.state(src, line)
        if dead:
            return []
        chunk = src.chunk_at(line)
        calls = self._chunk_calls.get((rel, chunk.first_line))
        if calls is None:  # {name: [call node]}
            calls = {}
            for _, caps in parser.matches("calls", chunk.root):
                calls.setdefault(parser.text(caps["call.name"]), []).append(caps["call"])
            self._chunk_calls[(rel, chunk.first_line)] = calls
        out = []
        for name in names.keys() & calls.keys():
            for call in calls[name]:
                first = chunk.line_of(call)
                if first <= line <= first + call.end_point[0] - call.start_point[0]:
                    out.append((call, names[name], chunk))
        return sorted(out, key=lambda c: c[0].start_byte)

    # -- which function a work item runs -----------------------------------------------------
    def bindings(self, work: Key, near: str) -> list:
        """[(Step, function name, rel of the binding)] of the bindings of work to a function."""
        return self._memo("bound", work, near, self._bindings)

    def every_binding(self, work: Key, near: str) -> list:
        """bindings() in each file near near, not only in near's own when it has one."""
        return self._memo("bound-anywhere", work, near, self._every_binding)

    def _bindings(self, work: Key, near: str) -> list:
        out = self._every_binding(work, near)
        return [b for b in out if b[2] == near] or out  # the queueing file's own wins

    def _every_binding(self, work: Key, near: str) -> list:
        out = []
        binders = api.WORK_BINDERS
        for rel, line in self._lines(work, near):
            text = self._peek(rel, line)
            if not any(b.encode() in text for b in binders):
                continue
            src = self.index.look(rel)
            if src is None:
                continue
            first = src.line_text(line)
            # A binding whose arguments go on over the next lines (INIT_WORK(&x->work,\n fn)).
            text = first if first.count("(") <= first.count(")") else \
                src.slice(line, min(line + 2, src.nlines)).decode("utf-8", "replace").replace("\n", " ")
            for m in re.finditer(r"\b(" + "|".join(binders) + r")\s*\(", text):
                if m.start() >= len(first):
                    break  # a call of the next lines: their own
                macro = m.group(1)
                wi, fi = binders[macro]
                args = split_call(text[m.end():])
                if args is None or fi >= len(args):
                    continue
                fn = args[fi].strip().lstrip("&").strip()
                if not re.fullmatch(r"[A-Za-z_]\w*", fn):
                    continue
                target = args[wi].strip()
                if not _names_key(target, work, macro.startswith("DECLARE")):
                    continue
                if work.tag and work.kind == "member" and not re.search(
                        rb"\bstruct\s+" + re.escape(work.tag.encode()) + rb"\b", src.slice(*_span(src.chunk_at(line)))):
                    continue  # a member of that name in another struct
                out.append((Step(rel, line, src.line_text(line).strip(), f"{macro}() binds {target} to {fn}()"),
                            fn, rel))
        return out

    # -- what the work function reaches ------------------------------------------------------
    def _reach(self, site, key, queued, bound, fn, near) -> list:
        """The Flows of work function fn (bound to its item at bound, queued at queued on the
        queue of site): worked out again in each round only while an answer it met was not
        known yet (a search of a name or a subsystem's text still to make), as _flushes()."""
        ident = (id(site), key, queued, bound, fn, near)
        got = self._reached.get(ident)
        if got is None:
            misses = self._misses()
            got = self._reach_now(site, key, queued, bound, fn, near)
            if self._misses() == misses:
                self._reached[ident] = got
        return got

    def _reach_now(self, site, key, queued, bound, fn, near) -> list:
        if self.calls.distance(fn, near, budget=ALL_STEPS) >= MAX_DEPTH:
            return []
        start = self.calls.function(fn, near)
        if start is None:
            return []
        out = []
        for calls, flush, spec, target, call, scope, tables in self._flushes(start, fn, MAX_DEPTH, frozenset(),
                                                                             ALL_STEPS):
            if isinstance(target, int):
                continue  # the work function's own parameter: its work item
            if any(not self._any_table(start.src.rel, *table) for table in tables):
                continue
            out.append(self._flow(site, key, queued, bound, fn, calls, flush, spec, target, call, scope))
        return out

    def _any_table(self, origin: str, ttype: str, irel: str, crel: str) -> bool:
        """May a table of type ttype called in file crel be one set in irel, on a path from a
        work function of file origin? Not when origin itself calls it (the object is the work's
        own, whose table the code chooses), nor when origin's subsystem sets tables of that
        type itself and irel is not of them (the table is its own)."""
        if crel == origin:
            return False
        own = set(self.calls.files_near(origin))
        return irel in own or ttype not in self.calls.ops.types_in(own)

    def _flushes(self, scope: Scope, name: str, depth: int, stack: frozenset, budget: int = 0) -> list:
        """(call Steps, flush Step, FlushCall, Target, call node, Scope, tables) of the flushes
        name makes itself or through the functions it calls, up to depth calls deep (worked
        out once per function and budget, with the depth left at its first visit): those of
        its subsystem, and the steps out of it that budget allows (scan.calls.distance());
        tables: (type, file setting the function, file calling) of each call through a table
        of several functions on the way, for the work function's file to judge (_any_table()).
        A callee is parsed and followed only when its text may reach a flush in time."""
        ident = (scope.src.rel, name)
        memo_key = (ident, budget)
        memo = self._fn_memo.get(memo_key)
        if memo is not None and memo[0] >= depth:
            return [r for r in memo[1] if len(r[0]) < depth]
        misses = self._misses()
        out = []
        for call, callee, via, near, left, table in self.calls.calls_in(scope, budget):
            if guards.unlikely(call, scope):
                continue
            spec = api.FLUSH_CALLS_BY_NAME.get(callee)
            if spec is None and (depth <= 1 or callee in _NOT_FOLLOWED or exhausted(budget)
                                 or self.calls.distance(callee, near, depth - 2, budget=left) > depth - 2):
                continue
            if spec is not None:
                if guards.fresh(spec, call, scope):
                    continue  # nothing was queued on it yet: the flush returns at once
                # A flush of what a parameter holds is the caller's to name (a wrapper).
                param = _param_of(spec, call, scope)
                target = param if param >= 0 else self.target(spec, call, scope)
                if target is not None:
                    step = conditions.guarded_step(scope, call, f"{name}() calls {callee}(){via}")
                    out.append(((), step, spec, target, call, scope, ()))
                continue
            inner, step = self.calls.function(callee, near), None  # (its step made for a flush it leads to)
            if inner is None or (inner.src.rel, callee) in stack or (inner.src.rel, callee) == ident:
                continue
            for calls, flush, fspec, target, fcall, fscope, tables in self._flushes(inner, callee, depth - 1,
                                                                                     stack | {ident}, left):
                if isinstance(target, int):  # the callee flushes its parameter: this call's argument
                    args = parser.args(call)
                    if target >= len(args):
                        continue
                    param = _param_node(args[target], scope)
                    target = param if param >= 0 else self.target_of(fspec, self.key_of(args[target], scope), scope)
                    if target is None:
                        continue
                step = step or conditions.guarded_step(scope, call, f"{name}() calls {callee}(){via}")
                out.append(((step,) + calls, flush, fspec, target, fcall, fscope,
                            tables + ((table + (scope.src.rel,),) if table else ())))
            if sum(not r[6] for r in out) >= MAX_FLUSHES or len(out) >= 2 * MAX_FLUSHES:
                break  # (those through a table are judged per work: they do not crowd the others out)
        if self._misses() == misses:
            self._fn_memo[memo_key] = (depth, out)
        return out

    # -- what a flush waits for --------------------------------------------------------------
    def target(self, spec, call, scope: Scope) -> Optional[Target]:
        if spec.waits_for == "helper":
            got = self.helpers.get(spec.name) or self.helpers.get("schedule_work")
            return Target("queue", Key("var", got[0]), tuple(self._sites_of(Key("var", got[0]), scope.src.rel)),
                          got[0]) if got else None
        args = parser.args(call)
        if spec.arg >= len(args):
            return None
        arg = args[spec.arg]
        if arg.type == "identifier" and scope.kind == "function" and parser.text(arg) in scope.local_decls():
            return None  # a local: what it holds is not followed (a variable of that name elsewhere is another)
        return self.target_of(spec, self.key_of(arg, scope), scope)

    def target_of(self, spec, key: Optional[Key], scope: Scope) -> Optional[Target]:
        """What a flush of key (named in scope) waits for."""
        if key is None:
            return None
        if spec.waits_for == "queue":
            sites = self._sites_of(key, scope.src.rel)
            system = key.name if key.kind == "var" and key.name in api.SYSTEM_QUEUES else ""
            if not sites and not system:
                return None
            return Target("queue", key, tuple(sites), system)
        # A work item: the queues it is put on in the subsystem.
        sites, queued, complete, system = [], [], True, ""
        for rel, line in self._lines(key, scope.src.rel):
            text = self._peek(rel, line)
            if b"queue" not in text and b"schedule" not in text:
                continue
            for qcall, qspec, chunk in self.calls_around(rel, line, {**_QUEUEING, **_SCHEDULING}):
                qargs = parser.args(qcall)
                wi = qspec.queue_arg + 1 if isinstance(qspec, api.QueueCall) else qspec
                if wi >= len(qargs):
                    continue
                qscope = scope_of(chunk, qcall)
                wkey = self.key_of(qargs[wi], qscope)
                if wkey is None or not wkey.matches(key):
                    continue
                qline = chunk.line_of(qcall)
                name = parser.text(qcall.child_by_field_name("function"))
                queued.append(Step(chunk.source.rel, qline, chunk.source.line_text(qline).strip(),
                                   f"{name}() puts {_short(parser.text(qargs[wi]), 40)} on "
                                   + (_short(parser.text(qargs[qspec.queue_arg]), 40)
                                      if isinstance(qspec, api.QueueCall) else self._helper_queue(name))))
                if not isinstance(qspec, api.QueueCall):
                    queue = self._helper_queue(name)
                    if not queue:
                        complete = False
                    elif system and system != queue:
                        complete = False
                    else:
                        system = queue
                        # its allocation, where the tree has it: the name the kernel prints
                        sites.extend(s for s in self._sites_of(Key("var", queue), chunk.source.rel)
                                     if s not in sites)
                    continue
                qkey = self.key_of(qargs[qspec.queue_arg], qscope)
                found = self._sites_of(qkey, chunk.source.rel) if qkey is not None else []
                if not found and qkey is not None and qkey.kind == "var" and qkey.name in api.SYSTEM_QUEUES:
                    if system and system != qkey.name:
                        complete = False
                    system = qkey.name
                elif not found:
                    complete = False
                sites.extend(s for s in found if s not in sites)
        if not queued:
            return None
        funcs = sorted({fn for _step, fn, _rel in self.bindings(key, scope.src.rel)})
        return Target("work", key, tuple(sites), system, tuple(queued), complete,
                      funcs[0] if len(funcs) == 1 else "")

    def _helper_queue(self, helper: str) -> str:
        got = self.helpers.get(helper)
        return got[0] if got else ""

    def _sites_of(self, key: Key, near: str) -> list:
        """The allocation sites stored in key: variables anywhere, members in near's subsystem."""
        if self._by_name is None:
            self._by_name = {}
            for site in self.sites:
                got = self.queue_key(site)
                if got is not None:
                    self._by_name.setdefault(got.name, []).append((site, got))
        near_set = None
        out = []
        for site, got in self._by_name.get(key.name, ()):
            if not got.matches(key):
                continue
            if key.kind == "member":
                if near_set is None:
                    near_set = self._related.get(near)
                    if near_set is None:
                        near_set = self._related[near] = set(self.calls.files_near(near)) | {near}
                if site.path not in near_set:
                    continue
            if site not in out:
                out.append(site)
        if key.kind == "var" and key.name not in api.SYSTEM_QUEUES:
            # A variable allocated in another subsystem is the one flushed only when it is
            # shared: a static of that name, in the allocating file or in the flushing one, is
            # another variable (a common one: wq).
            out = [s for s in out if s.path == near or related(s.path, near)
                   or not (self._file_static(s.path, key.name) or self._file_static(near, key.name))]
        return out

    def _file_static(self, rel: str, name: str) -> bool:
        """Does rel declare a static variable called name (at file scope or in a function)?"""
        got = self._statics.get((rel, name))
        if got is None:
            data = self.index.text(rel) or b""
            pattern = rb"(?m)^[ \t]*static\b[^;(]*\b" + re.escape(name.encode()) + rb"\b"
            got = self._statics[(rel, name)] = re.search(pattern, data) is not None
        return got

    def _flow(self, site, key, queued, bound, fn, calls, flush, spec, target, call, scope) -> Flow:
        src = scope.src
        name = call.child_by_field_name("function")
        target = replace(target, holders=tuple(self.queue_key(s) for s in target.sites))
        args = parser.args(call)
        waited = _short(parser.text(args[spec.arg]), 60) if 0 <= spec.arg < len(args) else ""
        return Flow(site=site, queue=key, queued=queued, bound=bound, function=fn, calls=calls, flush=flush,
                    call=spec.name, target=target, path=src.rel, line=flush.line,
                    col=scope.chunk.col_of(name), end_col=scope.chunk.end_col_of(name),
                    suppressed=suppressed(src, flush.line), waited=waited, within=scope.name)


_SCHEDULING = dict(api.SCHEDULE_WORK_ARG)
# Calls never followed: the API's own (queueing, cancelling, binding) and the kernel's
# primitives every function makes, whose bodies never flush a queue.
_NOT_FOLLOWED = frozenset(set(_QUEUEING) | set(api.FROM_CANCEL) | set(api.WORK_BINDERS) | set(api.SCHEDULE_HELPERS)
                          | {e.name for e in api.ENTRIES}  # (the allocation's own error exit destroys what it made)
                          | {"container_of", "to_delayed_work", "to_rcu_work", "list_for_each_entry"})


# The calls whose lines scan.subtext indexes by the words of their text.
_API_NAMES = covering(list(_QUEUEING) + list(_SCHEDULING) + list(api.WORK_BINDERS))


def _span(chunk) -> tuple:
    return chunk.first_line, chunk.last_line


def _param_of(spec, call, scope: Scope) -> int:
    """The index of the parameter of scope's function that a flush call is given as what it
    waits for (a wrapper of the flush), or -1."""
    if spec.waits_for == "helper":
        return -1
    args = parser.args(call)
    return _param_node(args[spec.arg], scope) if spec.arg < len(args) else -1


def _param_node(node, scope: Scope) -> int:
    """The index of the parameter an argument is, as it is (in parentheses or a cast), or -1."""
    while node is not None and node.type in ("parenthesized_expression", "cast_expression"):
        node = node.child_by_field_name("value") if node.type == "cast_expression" else \
            next((c for c in node.named_children if c.type != "comment"), None)
    if node is None or node.type != "identifier" or scope.kind != "function":
        return -1
    return scope.param_index(parser.text(node))


def _names_key(text: str, key: Key, declares: bool) -> bool:
    """Does an argument's text name key (its last member, or a variable)?"""
    text = text.strip().lstrip("&").strip()
    if declares or key.kind == "var":
        return key.kind == "var" and re.sub(r"(?<!\s)\s*\[[^\]]*\]$", "", text.strip("() ")) == key.name
    m = re.search(r"(?:->|\.)\s*(\w+)\s*(?:\[[^\]]*\]\s*)?(?:\.\s*work\s*)?\)?$", text)
    return m is not None and m.group(1) == key.name
