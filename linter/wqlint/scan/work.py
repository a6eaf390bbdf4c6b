"""Work items between calls: where an allocated queue is kept, the calls that put work items
on it, the functions the items are bound to, and a bounded call graph from those functions
to the flushes they make.

Built on demand, as values are: only the queues asked about are followed, and a function is
parsed only when the text of its body and its callees' shows a flush within the calls left
(_distance()).

A place that holds a queue or a work item is a Key: a variable, or a struct member (with the
struct's tag when the declarations tell it). Everything is looked for in the directory of the
file asking and in its parent (when that is more than two levels deep), through one search
per round of every directory asked about (scan.subtext): a file is read only when it names
what is asked, or holds the definition of a function that is followed. A callee defined in
another subsystem is looked for among the non-static functions of the tree's files that
flush, followed when exactly one of them defines it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Optional

from wqlint import api
from wqlint.finding import Step
from wqlint.scan import parser
from wqlint.scan.nearness import related
from wqlint.scan.ctext import short as _short
from wqlint.scan.index import covering
from wqlint.scan.scope import Scope, declarator_name, function_declarator, scope_of
from wqlint.scan.structs import struct_type_name
from wqlint.scan.subtext import SubsystemText
from wqlint.scan.site import Site
from wqlint.scan.source import call_at, is_c_source

MAX_DEPTH = 8  # calls from the work function to the flush (the work function is depth 0)
MAX_FUNCTIONS = 400  # functions looked at from one work function
MAX_POINTER_TARGETS = 3  # a member called through more initialisers than this is too generic
MAX_OCCURRENCES = 3000  # lines naming a member that are looked at for one question
MAX_FLUSHES = 16  # flushes reached from one function
MAX_NEAR_FILES = 600  # files of a subsystem searched for a callee's definition
MAX_TEXT_FUNCTIONS = 4000  # definitions looked at by their text from one function
MAX_TEXT_ROUNDS = 16  # searches of the subsystems' text for one round of the engine
MAX_FAR_FILES = 5000  # files that flush, searched for the callees of other subsystems
# A function's definition from its header's first line: the name before the parameters, then
# the body's '{'.
_DEF_AT = re.compile(rb"(?:[A-Za-z_][\w \t\*]*?[\s\*])?([A-Za-z_]\w*)\s*\([^;{}]*\)\s*\{")
_FLUSH_NAME_LIST = tuple(c.name for c in api.FLUSH_CALLS)
_FLUSH_NAMES = tuple(n.encode() for n in covering([c.name for c in api.FLUSH_CALLS]))
# The longest piece of text every flush's name holds: a body without it is passed over in one
# look, not one for each name (tens of thousands of bodies are looked at).
_FLUSH_COMMON = max((n[i:j] for n in _FLUSH_NAMES[:1] for i in range(len(n)) for j in range(i + 1, len(n) + 1)
                     if all(n[i:j] in m for m in _FLUSH_NAMES)), key=len, default=b"")
_FLUSH_RE = re.compile(rb"\b(?:" + "|".join(c.name for c in api.FLUSH_CALLS).encode() + rb")\s*\(")
_WORD_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"
_PENDING = object()  # an answer that takes a search not made yet
_FAR = 1 << 30  # no flush within reach

_QUEUEING = {c.name: c for c in api.QUEUE_CALLS if c.queues}
_QUEUEING_B = tuple(n.encode() for n in covering(list(_QUEUEING)))
_QUEUEING_CALL_RE = re.compile(r"\b(" + "|".join(sorted(_QUEUEING, key=len, reverse=True)) + r")\s*\(")


@dataclass(frozen=True)
class Key:
    """Where a queue or a work item is kept: a variable, or a member of a struct."""

    kind: str  # "var" | "member"
    name: str
    tag: str = ""  # the struct's tag, when known

    def matches(self, other: "Key") -> bool:
        return (self.kind == other.kind and self.name == other.name
                and (not self.tag or not other.tag or self.tag == other.tag))

    def show(self) -> str:
        if self.kind == "var":
            return self.name
        return f"{'struct ' + self.tag if self.tag else ''}.{self.name}" if self.tag else f".{self.name}"


@dataclass(frozen=True)
class Target:
    """What a flush waits for, and the queues that is: allocation sites, or a system queue."""

    what: str  # "queue" | "work"
    key: Optional[Key]
    sites: tuple[Site, ...] = ()  # allocation Sites of the queue(s) waited for
    system: str = ""  # a system queue's name (api.SYSTEM_QUEUES) when no site is known
    queued: tuple[Step, ...] = ()  # Steps putting the flushed work item on those queues
    complete: bool = True  # every queue the work item goes to is known
    func: str = ""  # the function the flushed work item is bound to, when one is known
    holders: tuple[Optional[Key], ...] = ()  # where each of sites keeps its queue (queue_key())


@dataclass
class Flow:
    """A work item on a queue whose work function reaches a flush: the third kind of site,
    judged by the rules that READ "flow"."""

    site: Site  # the allocation of the queue the work runs on
    queue: Key
    queued: Step  # the call putting the work item on it
    bound: Step  # the binding of the work item to its function
    function: str  # the work function
    calls: tuple[Step, ...]  # the calls from the work function to the function that flushes
    flush: Step  # the flush
    call: str  # the flushing function (api.FLUSH_CALLS)
    target: Target
    path: str = ""  # where the finding is reported: the flush
    line: int = 0
    col: int = 0
    end_col: int = 0
    suppressed: frozenset[str] = frozenset()
    # The flush is outside the paths scanned (another subsystem's), the work inside:
    # reported to the work's maintainer, with no edit of the other subsystem's queue.
    elsewhere: bool = False


class WorkModel:
    def __init__(self, engine, sites: list, helper_queues: dict):
        self.engine = engine
        self.index = engine.index
        self.resolver = engine.resolver
        self.sites = sites
        self.helpers = helper_queues  # {helper: (queue, Step)}
        self.text = SubsystemText(self.index, _API_NAMES)
        self._keys: dict = {}  # id(site) -> Key | None
        self._fn_memo: dict = {}
        self._dir_defs: dict = {}  # directory -> _near_defs() of its files
        self._kept: dict = {}  # directory -> the files of _near_defs() that count, when not all do
        self._defined: dict = {}  # (name, file asking) -> _definition()
        self._candidates: dict = {}  # (name, directory) -> the lines that may start its definition there
        self._dir_defined: dict = {}  # (name, directory) -> _verified() of them
        self._scopes: dict = {}  # ((rel, line), name) -> Scope of the definition, or None
        self._related: dict = {}  # rel -> set of the files of its subsystem
        self._statics: dict = {}  # (rel, name) -> does rel declare a static called name
        self._by_name: Optional[dict] = None  # name of a queue's Key -> [(Site, Key)]
        self._dir_files: dict = {}  # directory -> the files of its subsystem searched
        self._dist: dict = {}  # a definition -> (calls from it to a flush by its text, calls looked through)
        self._callees: dict = {}  # (rel, line) of a definition -> [(rel, line)] it may call
        self._pointers: dict = {}  # (member, directory) -> _pointer_names()
        self._lines_memo: dict = {}  # (name, directory) -> _lines()
        self._chunk_calls: dict = {}  # (rel, first line of a chunk) -> {name: its calls of name}
        self._answers: dict = {}  # (question, Key, directory) -> answer
        self._far = None  # _far_heads()
        self._far_files: Optional[tuple] = None  # the files it is of
        self._far_defined: dict = {}  # name -> _far_definition()

    # -- asking ------------------------------------------------------------------------------
    def flows(self, wanted) -> list:
        """The Flows of the allocation sites for which wanted(site) holds, the subsystems'
        text searched round by round (scan.subtext)."""
        self._far_heads()  # (asked with the first round's searches)
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
                    for flow in self._reach(site, key, queued, bound, fn, near):
                        ident = (flow.path, flow.line, flow.col, id(site), flow.function)
                        if ident not in seen:
                            seen.add(ident)
                            out.append(flow)
        return out

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
        for node in _descendants(scope.node, "assignment_expression"):
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
            return Key("member", member, _declared_tag(obj, scope))
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
        macros = self.resolver.macros
        for src, first, last in macros.definitions(name, scope.src)[:2]:
            chunk = macros.chunk(src, first, last)
            if chunk is None or not chunk.macro_is_function:
                continue
            expr, mscope = macros.value_node(chunk)
            while expr is not None and expr.type == "parenthesized_expression":
                expr = next((c for c in expr.named_children if c.type != "comment"), None)
            if expr is not None and expr.type == "field_expression":
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
            files = set(self._files_near(near))
            found = [self.text.calls(reldir) for reldir in _dirs_near(near)]
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
            for call, spec, chunk in self._calls_around(rel, line, _QUEUEING):
                args = _args(call)
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
            found = [self.text.words(reldir, name) for reldir in _dirs_near(scope.src.rel)]
            near = set(self._files_near(scope.src.rel)) | {scope.src.rel}
            lines = []
            for occ in found:
                if occ is None:
                    return []
                lines += [o for o in occ if o[0] in near]
            lines = lines[:MAX_OCCURRENCES]
        out = []
        for rel, line in lines:
            for call, _spec, chunk in self._calls_around(rel, line, {name: None}):
                args = _args(call)
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
            args = _split(text[m.end():])
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

    def _calls_around(self, rel: str, line: int, names) -> list:
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

    def _bindings(self, work: Key, near: str) -> list:
        out = []
        binders = api.WORK_BINDERS
        for rel, line in self._lines(work, near):
            text = self._peek(rel, line)
            if not any(b.encode() in text for b in binders):
                continue
            src = self.index.source(rel)
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
                args = _split(text[m.end():])
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
        # A binding in the file that queues the item wins over those of its neighbours.
        own = [b for b in out if b[2] == near]
        return own or out

    # -- what the work function reaches ------------------------------------------------------
    def _reach(self, site, key, queued, bound, fn, near) -> list:
        if self._distance(fn, near) >= MAX_DEPTH:
            return []
        start = self.function(fn, near)
        if start is None:
            return []
        out = []
        for calls, flush, spec, target, call, scope in self._flushes(start, fn, MAX_DEPTH, frozenset()):
            if isinstance(target, int):
                continue  # the work function's own parameter: its work item
            out.append(self._flow(site, key, queued, bound, fn, calls, flush, spec, target, call, scope))
        return out

    def _flushes(self, scope: Scope, name: str, depth: int, stack: frozenset) -> list:
        """(call Steps, flush Step, FlushCall, Target, call node, Scope) of the flushes name
        makes itself or through the functions of its subsystem it calls, up to depth calls
        deep (worked out once per function, with the depth left at its first visit). A
        callee is parsed and followed only when its text may reach a flush in time."""
        ident = (scope.src.rel, name)
        memo = self._fn_memo.get(ident)
        if memo is not None:
            return [r for r in memo if len(r[0]) < depth]
        misses = self._misses()
        out = []
        for call, callee, via in self._calls_in(scope):
            if _unlikely(call, scope):
                continue
            cline = scope.chunk.line_of(call)
            spec = api.FLUSH_CALLS_BY_NAME.get(callee)
            if spec is None and (depth <= 1 or callee in _NOT_FOLLOWED
                                 or self._distance(callee, scope.src.rel, depth - 2) > depth - 2):
                continue
            step = Step(scope.src.rel, cline, scope.src.line_text(cline).strip(), f"{name}() calls {callee}(){via}")
            if spec is not None:
                # A flush of what a parameter holds is the caller's to name (a wrapper).
                param = _param_of(spec, call, scope)
                target = param if param >= 0 else self.target(spec, call, scope)
                if target is not None:
                    out.append(((), step, spec, target, call, scope))
                continue
            inner = self.function(callee, scope.src.rel)
            if inner is None or (inner.src.rel, callee) in stack or (inner.src.rel, callee) == ident:
                continue
            for calls, flush, fspec, target, fcall, fscope in self._flushes(inner, callee, depth - 1,
                                                                             stack | {ident}):
                if isinstance(target, int):  # the callee flushes its parameter: this call's argument
                    args = _args(call)
                    if target >= len(args):
                        continue
                    param = _param_node(args[target], scope)
                    target = param if param >= 0 else self.target_of(fspec, self.key_of(args[target], scope), scope)
                    if target is None:
                        continue
                out.append(((step,) + calls, flush, fspec, target, fcall, fscope))
            if len(out) >= MAX_FLUSHES:
                break
        if self._misses() == misses:
            self._fn_memo[ident] = out
        return out

    def function(self, name: str, near: str) -> Optional[Scope]:
        """The definition of function name: in near's file, else in its subsystem's files
        (_files_near()), nearest first; None when it is defined elsewhere or nowhere."""
        at = self._definition(name, near)
        if at is None or at is _PENDING:
            return None
        key = (at, name)
        if key in self._scopes:
            return self._scopes[key]
        found = None
        src = self.index.source(at[0])
        chunk = src.chunk_at(at[1])
        for node in chunk.root.children:
            if node.type == "function_definition":
                fdecl = function_declarator(node)
                if fdecl is not None and declarator_name(fdecl.child_by_field_name("declarator")) == name:
                    found = scope_of(chunk, node.child_by_field_name("body"))
                    break
        self._scopes[key] = found
        return found

    def _definition(self, name: str, near: str):
        """(rel, line) of the header of function name's definition in near's file, else in
        its subsystem's files, nearest first; None when there is none there, _PENDING until
        the subsystem's text is searched."""
        key = (name, near)
        got = self._defined.get(key)
        if got is not None:
            return got or None
        heads = self._near_defs(near)
        if heads is None:
            return _PENDING
        # near's own file first, then the subsystem's in order: the latter the same for every
        # file of near's directory, worked out once for them.
        here = near.rsplit("/", 1)[0] if "/" in near else ""
        dir_key = (name, here)
        ats = self._candidates.get(dir_key)
        if ats is None:
            kept = self._kept.get(here)
            ats = self._candidates[dir_key] = tuple(
                at for h in heads for at in h.definitions(name) if kept is None or at[0] in kept) or ()
        found: "tuple | bool" = False
        if ats:
            found = self._verified(name, [at for at in ats if at[0] == near])
            if not found:
                if dir_key not in self._dir_defined:
                    self._dir_defined[dir_key] = self._verified(name, ats)
                found = self._dir_defined[dir_key]
        if not found:
            # Not in the caller's subsystem: a function of another one that flushes.
            far = self._far_definition(name)
            if far is _PENDING:
                return _PENDING
            found = far or False
        self._defined[key] = found
        return found or None

    def _verified(self, name: str, ats) -> "tuple | bool":
        """(rel, line, end of the header) of the first of ats, (rel, line, offset) of lines
        that may start name's definition, that does; False when none does."""
        for rel, line, offset in ats:
            data = self.index.text(rel)
            if data is None:
                continue
            m = _DEF_AT.match(data, offset)
            if m is not None and m.group(1).decode() == name:
                return (rel, line, m.end())
        return False

    # -- callees of other subsystems ---------------------------------------------------------
    def _far_heads(self):
        """The scan.subtext.Heads of the function headers of the tree's .c files that make a
        flush (api.FLUSH_CALLS by name): where a callee that its caller's
        subsystem does not define is looked for (a transport's, a core helper's). Only those
        files: a function of another subsystem is followed when its own file waits for a
        queue, so that reaching across subsystems stays a few files. None until searched."""
        if self._far is not None:
            return self._far
        if self._far_files is None:  # worked out once: every body looked at asks
            files, pending = set(), False
            for name in _FLUSH_NAME_LIST:
                occ = self.index.occurrences(name)
                if occ is None:
                    pending = True
                    continue
                files.update(rel for rel, _line in occ if rel.endswith(".c") and not rel.startswith("<"))
            if pending:
                return None
            self._far_files = tuple(sorted(files)[:MAX_FAR_FILES])
        found = self.text.files_heads(self._far_files)
        if found is None:
            return None
        self._far = found
        return found

    def _far_definition(self, name: str):
        """(rel, line, end of the header) of the definition of name with external linkage
        in the files of _far_heads(); None when there is none, or when several files define
        it (which one links is the build's choice); _PENDING until searched."""
        got = self._far_defined.get(name)
        if got is not None:
            return got or None
        heads = self._far_heads()
        if heads is None:
            return _PENDING
        chosen = []
        for rel, line, offset, static in heads.headers(name):
            data = self.index.text(rel) if not static else None
            if data is None:
                continue
            if data[offset:offset + len(name)] == name.encode() and line > 1 \
                    and re.search(rb"\bstatic\b", data[data.rfind(b"\n", 0, offset - 1) + 1:offset - 1]):
                continue  # `static void\nname(...)`
            m = _DEF_AT.match(data, offset)
            if m is not None and m.group(1).decode() == name:
                chosen.append((rel, line, m.end()))
        found = chosen[0] if chosen and len({c[0] for c in chosen}) == 1 else False
        self._far_defined[name] = found
        return found or None

    def _distance(self, name: str, near: str, radius: int = MAX_DEPTH - 1) -> int:
        """The fewest calls (at most radius) from function name, as near's subsystem defines
        it, to a flush, by a look at the text of its body and of the functions it may call
        (by name, or through a member initialised to a function); _FAR when there is none
        that near or it is not known yet. Only as far as the caller asks: a callee's
        question is as far as the calls left to it reach, not as far as a work function's."""
        at = self._definition(name, near)
        if at is None or at is _PENDING:
            return _FAR
        known = self._dist.get(at)
        if known is not None and (known[0] <= known[1] or known[1] >= radius):
            return known[0] if known[0] <= radius else _FAR
        # The definitions within radius calls (breadth first: each at its fewest calls), and
        # what each may call; one whose distance is known as far as needed is not looked into.
        level = {at: 0}
        order, graph, pending = [at], {}, False
        for cur in order:
            k = level[cur]
            known = self._dist.get(cur)
            if cur != at and known is not None and (known[0] <= known[1] or known[1] >= radius - k):
                continue
            # At the last level only a flush of its own counts (a path through its callees
            # is longer than radius): its callees are not worked out, nor its subsystem searched.
            got = self._callees_of(cur) if k < radius or cur in self._callees else ((), self._body_flushes(cur))
            if got is _PENDING:
                pending = True
                continue
            graph[cur] = got
            if k < radius and len(order) < MAX_TEXT_FUNCTIONS:
                for c in got[0]:
                    if c not in level:
                        level[c] = k + 1
                        order.append(c)

        def told(n) -> int:
            known = self._dist.get(n)
            return known[0] if known is not None and known[0] <= known[1] else _FAR
        # Each definition's fewest calls to a flush: its own, or one more than a callee's (as
        # told when that was not looked into now), shortest first, as far as radius (beyond
        # it, a distance counts as none).
        dist = {n: 0 if flushes else _FAR for n, (_callees, flushes) in graph.items()}
        callers: dict = {}
        for n, (callees, _flushes) in graph.items():
            for c in callees:
                if c in dist:
                    callers.setdefault(c, []).append(n)
                elif 1 + told(c) < dist[n]:
                    dist[n] = 1 + told(c)
        at_distance: list = [[] for _ in range(radius + 1)]
        for n, d in dist.items():
            if d <= radius:
                at_distance[d].append(n)
        for d in range(radius):
            for n in at_distance[d]:
                if dist[n] == d:
                    for caller in callers.get(n, ()):
                        if d + 1 < dist[caller]:
                            dist[caller] = d + 1
                            at_distance[d + 1].append(caller)
        if not pending:
            # Each exactly as far as it was looked into: (distance, calls looked through).
            self._dist.update((n, (d, radius - level[n])) for n, d in dist.items())
        got = dist.get(at, _FAR)
        return got if got <= radius else _FAR

    def _callees_of(self, at: tuple):
        """([definitions it may call], whether it calls a flush) of the function whose
        definition is at, by its text; _PENDING until its subsystem's text is searched."""
        got = self._callees.get(at)
        if got is not None:
            return got
        body = self._body(at)
        if body is None:
            return (), False
        rel = at[0]
        heads = self._near_defs(rel)
        if heads is None:
            return _PENDING
        # Every name called that the subsystem defines, and the members called through
        # (their names count as called too: this only decides what is parsed).
        called, through = _called(body)
        far = self._far_heads()
        if far is None:
            return _PENDING
        # and those another subsystem defines in a file that flushes (_far_definition()).
        names = {n.decode() for n in called if n in far or any(n in h for h in heads)} - _NOT_FOLLOWED
        for member in through:
            names.update(self._pointer_names(member.decode(), rel))
        callees = []
        for name in sorted(names):
            d = self._definition(name, rel)
            if d is not None and d is not _PENDING and d != at:
                callees.append(d)
        got = self._callees[at] = (tuple(callees), _flushes_in(body))
        return got

    def _body(self, at: tuple) -> Optional[bytes]:
        """The text of the body of the function whose definition is at, to its first '}' at
        column 0; None when its file cannot be read."""
        rel, _line, start = at
        data = self.index.text(rel)
        if data is None:
            return None
        end = data.find(b"\n}", start)
        return data[start:end if end >= 0 else len(data)]

    def _body_flushes(self, at: tuple) -> bool:
        body = self._body(at)
        return body is not None and _flushes_in(body)

    def _near_defs(self, rel: str) -> Optional[list]:
        """The headers of the files of rel's directory and of its parent (when that is more
        than two levels deep), its own directory's first: [scan.subtext.Heads], of which
        only those in the files of self._kept[rel's directory] count when it has them; None
        until their text is searched."""
        here = rel.rsplit("/", 1)[0] if "/" in rel else ""
        got = self._dir_defs.get(here)
        if got is None:
            asked = [self.text.heads(d) for d in _dirs_near(rel)]
            heads = [h for h in asked if h is not None]
            if len(heads) < len(asked):
                # A flush reached there is judged by the API's calls of the same directories:
                # asked with the headers, not in a round of their own.
                for d in _dirs_near(rel):
                    self.text.calls(d)
                return None
            files = self._files_near(rel)
            if sum(len(self.index.dir_files(d, recursive=False)) for d in _dirs_near(rel)) > len(files):
                # More files than a subsystem is searched in: only the nearest count.
                self._kept[here] = set(files)
            got = self._dir_defs[here] = heads
        return got

    def _files_near(self, rel: str) -> list:
        """The .c and .h files of rel's directory and of its parent (when that is more than two
        levels deep), those of its own directory first."""
        here = rel.rsplit("/", 1)[0] if "/" in rel else ""
        got = self._dir_files.get(here)
        if got is None:
            files = []
            for reldir in _dirs_near(rel):
                files += self.index.dir_files(reldir, recursive=False)
            files = sorted((r for r in files if is_c_source(r)),
                           key=lambda r: ((r.rsplit("/", 1)[0] if "/" in r else "") != here, r))
            got = self._dir_files[here] = files[:MAX_NEAR_FILES]
        return got

    def _calls_in(self, scope: Scope) -> list:
        """(call node, callee name, how) of the calls in a function: by name, or through a
        member initialised to a known function in the subsystem (`ops->fsync(...)`)."""
        if scope.node is None:
            return []
        out = []
        for _, caps in parser.matches("work_calls", scope.node):
            call, fn = caps["call"], caps["call.fn"]
            if fn.type == "identifier":
                out.append((call, parser.text(fn), ""))
            elif fn.type == "field_expression":
                member = parser.text(fn.child_by_field_name("field"))
                for target, step in self.pointer_targets(member, scope.src.rel):
                    out.append((call, target, f" through .{member} ({step.path}:{step.line})"))
        return out

    def _pointer_names(self, member: str, near: str) -> tuple:
        """The functions of pointer_targets(), without their steps (their files only looked at)."""
        here = near.rsplit("/", 1)[0] if "/" in near else ""
        got = self._pointers.get((member, here))
        if got is None:
            got = self._pointers[(member, here)] = tuple(
                fn for fn, (rel, _line) in self._initialisers(member, near).items() if self.index.text(rel) is not None)
        return got

    def pointer_targets(self, member: str, near: str) -> list:
        """[(function, Step)] of the initialisers `.member = function` in near's subsystem;
        none when there are more than MAX_POINTER_TARGETS (a member too generic to follow)."""
        steps = []
        for fn, (rel, line) in self._initialisers(member, near).items():
            src = self.index.source(rel)
            if src is not None:
                steps.append((fn, Step(rel, line, src.line_text(line).strip(), f".{member} = {fn}")))
        return steps

    def _initialisers(self, member: str, near: str) -> dict:
        """{function: (rel, line)} of pointer_targets()."""
        heads = self._near_defs(near)
        if heads is None:
            return {}
        out: dict = {}
        kept = self._kept.get(near.rsplit("/", 1)[0] if "/" in near else "")
        for fn, rel, line in (f for h in heads for f in h.initialisers(member) if kept is None or f[1] in kept):
            if fn not in out:
                out[fn] = (rel, line)
                if len(out) > MAX_POINTER_TARGETS:
                    return {}
        return out

    # -- what a flush waits for --------------------------------------------------------------
    def target(self, spec, call, scope: Scope) -> Optional[Target]:
        if spec.waits_for == "helper":
            got = self.helpers.get(spec.name) or self.helpers.get("schedule_work")
            return Target("queue", Key("var", got[0]), tuple(self._sites_of(Key("var", got[0]), scope.src.rel)),
                          got[0]) if got else None
        args = _args(call)
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
            for qcall, qspec, chunk in self._calls_around(rel, line, {**_QUEUEING, **_SCHEDULING}):
                qargs = _args(qcall)
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
                        near_set = self._related[near] = set(self._files_near(near)) | {near}
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
        return Flow(site=site, queue=key, queued=queued, bound=bound, function=fn, calls=calls, flush=flush,
                    call=spec.name, target=target, path=src.rel, line=flush.line,
                    col=scope.chunk.col_of(name), end_col=scope.chunk.end_col_of(name),
                    suppressed=self.engine._suppressed(src, flush.line))


_SCHEDULING = dict(api.SCHEDULE_WORK_ARG)
# Calls never followed: the API's own (queueing, cancelling, binding) and the kernel's
# primitives every function makes, whose bodies never flush a queue.
_NOT_FOLLOWED = frozenset(set(_QUEUEING) | set(api.FROM_CANCEL) | set(api.WORK_BINDERS) | set(api.SCHEDULE_HELPERS)
                          | {e.name for e in api.ENTRIES}  # (the allocation's own error exit destroys what it made)
                          | {"container_of", "to_delayed_work", "to_rcu_work", "list_for_each_entry"})


# The calls whose lines scan.subtext indexes by the words of their text.
_API_NAMES = covering(list(_QUEUEING) + list(_SCHEDULING) + list(api.WORK_BINDERS))


def _dirs_near(rel: str) -> list:
    """rel's directory, and its parent when that is more than two levels deep."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts)] + (["/".join(parts[:-1])] if len(parts) > 2 else [])


def _span(chunk) -> tuple:
    return chunk.first_line, chunk.last_line


def _declared_tag(obj, scope: Scope) -> str:
    """The struct tag of an object as its own declaration says (a local, a parameter, a
    cast, container_of()); '' when it takes a lookup elsewhere."""
    while obj is not None and obj.type in ("parenthesized_expression", "pointer_expression"):
        obj = obj.child_by_field_name("argument") if obj.type == "pointer_expression" else \
            next((c for c in obj.named_children if c.type != "comment"), None)
    if obj is None:
        return ""
    if obj.type == "identifier" and scope.kind == "function":
        name = parser.text(obj)
        decl = scope.local_decls().get(name)
        text = decl[1] if decl else scope.param_types().get(name, "")
        return struct_type_name(text) or "" if text else ""
    if obj.type == "cast_expression":
        return struct_type_name(parser.text(obj.child_by_field_name("type"))) or ""
    if obj.type == "call_expression" and parser.text(obj.child_by_field_name("function")) == "container_of":
        args = _split(parser.text(obj.child_by_field_name("arguments"))[1:] )
        return (struct_type_name(args[1]) or "") if args and len(args) == 3 else ""
    return ""


def _param_of(spec, call, scope: Scope) -> int:
    """The index of the parameter of scope's function that a flush call is given as what it
    waits for (a wrapper of the flush), or -1."""
    if spec.waits_for == "helper":
        return -1
    args = _args(call)
    return _param_node(args[spec.arg], scope) if spec.arg < len(args) else -1


def _param_node(node, scope: Scope) -> int:
    """The index of the parameter an argument is, as it is (in parentheses or a cast), or -1."""
    while node is not None and node.type in ("parenthesized_expression", "cast_expression"):
        node = node.child_by_field_name("value") if node.type == "cast_expression" else \
            next((c for c in node.named_children if c.type != "comment"), None)
    if node is None or node.type != "identifier" or scope.kind != "function":
        return -1
    return scope.param_index(parser.text(node))


def _called(body: bytes) -> tuple:
    """({names called}, {members called through}) of a function's text: the word before each
    '(' (`name(`, `(name)(`), a member's when `->` or `.` comes before it. By the ends of the
    text between parentheses, at C speed: a regex over every word took most of the look."""
    names, members = set(), set()
    for piece in body.split(b"(")[:-1]:
        text = piece.rstrip()
        if text.endswith(b")"):
            text = text[:-1].rstrip()
        rest = text.rstrip(_WORD_BYTES)
        name = text[len(rest):]
        if not name or name[:1].isdigit():
            continue
        names.add(name)
        rest = rest.rstrip()
        if rest.endswith(b"->") or rest.endswith(b"."):
            members.add(name)
    return names, members


def _flushes_in(body: bytes) -> bool:
    """Does a function's text call a flush (api.FLUSH_CALLS)?"""
    return _FLUSH_COMMON in body and any(n in body for n in _FLUSH_NAMES) and _FLUSH_RE.search(body) is not None


def _unlikely(call, scope: Scope) -> bool:
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


def _descendants(node, kind: str) -> list:
    out, stack = [], [node]
    while stack:
        cur = stack.pop()
        if cur.type == kind:
            out.append(cur)
        stack.extend(reversed(cur.named_children))
    return out


def _args(call) -> list:
    lst = call.child_by_field_name("arguments")
    return [a for a in lst.named_children if a.type != "comment"] if lst is not None else []


def _split(text: str) -> Optional[list]:
    """The arguments of a call whose text starts after its '(' (on one line), or None."""
    depth = 0
    cur: list = []
    out: list = []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                out.append("".join(cur))
                return out
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    return None


def _names_key(text: str, key: Key, declares: bool) -> bool:
    """Does an argument's text name key (its last member, or a variable)?"""
    text = text.strip().lstrip("&").strip()
    if declares or key.kind == "var":
        return key.kind == "var" and re.sub(r"\s*\[[^\]]*\]$", "", text.strip("() ")) == key.name
    m = re.search(r"(?:->|\.)\s*(\w+)\s*(?:\[[^\]]*\]\s*)?(?:\.\s*work\s*)?\)?$", text)
    return m is not None and m.group(1) == key.name
