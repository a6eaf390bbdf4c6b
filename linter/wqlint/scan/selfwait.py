"""A work that waits for itself: a flush, drain or destroy of the queue it runs on, or a flush,
cancel_*_sync() or disable_*_sync() of its own work item, in its function or in a function
it calls (api.SELF_WAITS). The fourth kind of site, judged by the rules that READ "wait".

Found from the waits to the works their argument names, then down: each wait of the scanned
files names a queue or a work item by its last word (`&priv->reset_work`, `priv->wq`). The
work functions that may wait for it are those the work model (scan.work) binds to a work
item of that name, or to the items it sees queued on a queue of that name, in the wait's
subsystem; a wait of a parameter or a local is the function's own when it is itself bound to
a work item, or what the local was given. A wait with no such work costs a look at its line.
From each of those work functions the functions it may call are followed by their text
(scan.calls, the graph the work model reads for its flushes), up to MAX_WAIT_DEPTH calls; one
that reaches the function holding the wait is a candidate. A candidate is then parsed along
the path: the calls made on it (scan.guards: the `if`s around each call with the constants
the path passes, a current_work() test, a return or a call that never returns before it),
the waited item or queue resolved as scan.work resolves a flush's (a local holding it is
followed to what it was given; the work function's own parameter is its work item), and
matched against the work's binding (and the struct tag of both, when known) or the calls
that queue it.
"""
from __future__ import annotations

import gc
import re
from typing import Optional

from wqlint import api
from wqlint.finding import Step
from wqlint.scan import conditions, guards, parser
from wqlint.scan.calls import MAX_DEPTH, dirs_near
from wqlint.scan.assumed import assumed
from wqlint.scan.ctext import short, split_args
from wqlint.scan.items import BIND_RE, args_text, last_word, rebound
from wqlint.scan.scope import Scope, scope_of
from wqlint.scan.site import SelfWait
from wqlint.scan.suppress import suppressed
from wqlint.scan.work import MAX_TEXT_ROUNDS, Key, WorkModel

MAX_ROUNDS = 8  # rounds of the tree index's searches
MAX_WAIT_DEPTH = 4  # calls from a work function to the function that waits, looked through
MAX_REACHED = 400  # functions looked at from one work function
MAX_PATHS = 3  # ways to one function kept
MAX_QUEUED = 3  # calls queueing the work shown in the chain

_WAIT_RE = re.compile(r"\b(" + "|".join(sorted(api.SELF_WAITS, key=len, reverse=True)) + r")\s*\(")
# A line that may start a function's definition, up to the body's '{' (scan.calls reads the
# same shape).
_DEF_RE = re.compile(rb"(?m)^(?:[A-Za-z_][\w \t\*]*?[\s\*])?([A-Za-z_]\w*)\s*\([^;{}]*\)\s*\{")
# An argument that is a name alone (a parameter or a local), or to_delayed_work() of one.
_LOCAL_RE = re.compile(r"(?:&?\s*to_\w+_work\s*\(\s*)?([A-Za-z_]\w*)(?:\s*\))?")  # of stripped text




def self_waits(index, model: WorkModel, wanted) -> list:
    """The SelfWaits of the waits in the files for which wanted(rel) holds, the tree index
    and the subsystems' text searched round by round."""
    model.prime("waits")
    finder = SelfWaits(index, model, wanted)
    enabled = gc.isenabled()
    gc.freeze()  # (as for scan.work's flows: many small objects kept to the end)
    gc.disable()

    def rounds() -> list:
        out: list = []
        for _ in range(MAX_ROUNDS):
            misses = index.misses
            out = finder.find()
            # (a round that ran out of text searches goes on, with or without new names)
            if (index.misses == misses or not index.fetch_pending()) and not model.text.wanting():
                break
        return out
    try:
        return model.record("waits", rounds)
    finally:
        if enabled:
            gc.enable()
        gc.unfreeze()


class SelfWaits:
    def __init__(self, index, model: WorkModel, wanted):
        self.index = index
        self.model = model
        self.text = model.text
        self.calls = model.calls
        self.wanted = wanted
        self._bound: dict = {}  # (function, rel) -> [(work's text, rel, line)] of its bindings
        self._works: dict = {}  # (what, Key, rel) -> _works_of()
        self._reached: dict = {}  # (function, rel) -> _reach()
        self._spans: dict = {}  # (function, rel) -> its lines (scan.calls)
        self._waits: dict = {}  # (rel, line, call) -> _at()
        self._texts: dict = {}  # (rel, line, call) -> _calls_at()
        self._facts: dict = {}  # (rel, line, work function) -> _assumed()

    def _misses(self) -> tuple:
        return self.index.misses, self.text.misses

    # -- rounds ------------------------------------------------------------------------------
    def find(self) -> list:
        out = self._find()
        for _ in range(MAX_TEXT_ROUNDS):
            if not self.text.fetch():
                break
            out = self._find()
        return out

    def _find(self) -> list:
        out, seen = [], set()
        for name in api.SELF_WAITS:
            occ = self.index.occurrences(name)
            for rel, line in occ or ():
                if not self.wanted(rel):
                    continue
                got = self._waits.get((rel, line, name))
                if got is None:
                    misses = self._misses()
                    got = self._at(rel, line, name)
                    if misses == self._misses():
                        self._waits[(rel, line, name)] = got
                for wait in got:
                    ident = (wait.path, wait.line, wait.col, wait.function)
                    if ident not in seen:
                        seen.add(ident)
                        out.append(wait)
        return sorted(out, key=lambda w: (w.path, w.line, w.col, w.function))

    # -- by the text: the works that may reach a wait ----------------------------------------
    def _at(self, rel: str, line: int, name: str) -> list:
        what = api.SELF_WAITS[name][0]
        out: list = []
        for arg, word, local, fn, given in self._calls_at(rel, line, name):
            works = [] if "(" in arg else list(self._works_of(what, arg, word, rel))
            if local:
                # A name alone: a global, or a parameter or a local: the function's own work
                # item when it is a work function, or what the local was given.
                if fn is None:
                    continue
                works += [(fn[2], brel, bline) for _work, brel, bline in self._bound_to(fn[2], rel) or ()]
                if given is not None and not _LOCAL_RE.fullmatch(given.strip()) and last_word(given):
                    works += self._works_of(what, given, last_word(given), rel)
            for work_fn, brel, bline in dict.fromkeys(works):
                for path in self._paths(work_fn, brel, rel, line):
                    got = self._judge(rel, line, name, work_fn, brel, path, bline)
                    out += got
                    if got:
                        break  # the first way that waits for itself is shown
        return out

    def _calls_at(self, rel: str, line: int, name: str) -> list:
        """[(argument, its last word, a name alone?, _function_at() when it is, what the
        name was given when it is a local)] of the calls of the wait name on rel's line, read
        from its text once: a wait that waits for answers is looked at again in each round."""
        key = (rel, line, name)
        got = self._texts.get(key)
        if got is not None:
            return got
        got = self._texts[key] = []
        src = self.index.look(rel)
        if src is None:
            return got
        text = src.slice(line, min(line + 2, src.nlines)).decode("utf-8", "replace")
        first = len(src.line_text(line))
        for m in _WAIT_RE.finditer(text):
            if m.start() > first or m.group(1) != name:
                continue
            arg = _first_arg(text[m.end():])
            if arg is None or "struct " in arg:
                continue  # a declaration, or a call this look does not read
            word = last_word(arg)
            if not word:
                continue
            local = _LOCAL_RE.fullmatch(arg.strip())
            fn = self._function_at(rel, line) if local is not None else None
            given = _given_text(src, fn, local.group(1), line) if local is not None and fn is not None else None
            got.append((arg, word, local is not None, fn, given))
        return got

    def _works_of(self, what: str, arg: str, word: str, rel: str) -> list:
        """[(work function, rel, line of its binding)] of the work items a wait of arg (word:
        its last word) may wait for, as the work model binds them: the item of that name, or
        those it sees queued on the queue of that name, near rel."""
        key = Key("member" if re.search(r"->|\.", arg) else "var", word)
        memo = (what, key, rel.rsplit("/", 1)[0] if "/" in rel else "")
        got = self._works.get(memo)
        if got is not None:
            return got
        misses = self._misses()
        if what == "work":
            items = [(key, rel)]
        else:
            items, wrapped = self._queued_by_text(word, rel)
            if wrapped:  # a wrapper given the work item: the model reads its callers
                items += [(wk, step.path) for step, wk in self.model.queued_on(key, rel)]
        out = []
        for wk, near in dict.fromkeys(items):
            out += [(fn, brel, step.line) for step, fn, brel in self.model.every_binding(wk, near)]
        if misses == self._misses():
            self._works[memo] = out
        return out

    def _queued_by_text(self, queue: str, rel: str) -> tuple:
        """([(work Key, rel)] of the items the API's calls near rel put on a queue of that
        last word, by the text of their lines; whether one of them is put there by a
        wrapper, given the item as a parameter)."""
        files = set(self.calls.files_near(rel)) | {rel}
        out, wrapped = [], False
        for reldir in dirs_near(rel):
            words = self.text.calls(reldir)
            if words is None:
                continue
            for qrel, line in words.get(queue, ()):
                if qrel not in files:
                    continue
                text = self.index.peek(qrel, line).decode("utf-8", "replace")
                for m in re.finditer(r"\b(\w+)\s*\(", text):
                    spec = api.QUEUE_CALLS_BY_NAME.get(m.group(1))
                    if spec is None or not spec.queues:
                        continue
                    args = args_text(text[m.end():]) or split_args(text[m.end():])
                    if len(args) <= spec.queue_arg + 1 or last_word(args[spec.queue_arg]) != queue:
                        continue
                    work = args[spec.queue_arg + 1].strip()
                    word = last_word(work)
                    if re.fullmatch(r"[A-Za-z_]\w*", work):
                        wrapped = True  # (or a global item: looked up by its name too)
                    if word:
                        out.append((Key("member" if re.search(r"->|\.", work) else "var", word), qrel))
        return out, wrapped

    def _reach(self, fn: str, rel: str) -> dict:
        """{file: [(function it defines, [(callee, the file defining it)] of the calls from
        fn to it)]} of fn (as rel's subsystem defines it) and the functions it may call, up
        to MAX_WAIT_DEPTH calls, by their text (scan.calls); searched again until its
        subsystem's text is."""
        got = self._reached.get((fn, rel))
        if got is not None:
            return got
        misses = self._misses()
        root = self.calls.defined_in(fn, rel)
        found: dict = {}  # function -> its paths
        if root is not None and self.calls.distance(fn, root, MAX_WAIT_DEPTH, waits=True) <= MAX_WAIT_DEPTH:
            found[(fn, root)] = [[]]
            level = [(fn, root)]
            for depth in range(MAX_WAIT_DEPTH):
                nxt = []
                left = MAX_WAIT_DEPTH - depth - 1  # calls left to a callee
                for caller in level:
                    for callee in self.calls.callees(caller[0], caller[1]) or ():
                        # Only a callee that may still reach a wait (by the text) is followed;
                        # one reached again gets the other ways there too (up to MAX_PATHS),
                        # its own callees reached along its first.
                        paths = found.get(callee)
                        if paths is None:
                            if len(found) >= MAX_REACHED or \
                                    self.calls.distance(callee[0], callee[1], left, waits=True) > left:
                                continue
                            paths = found[callee] = []
                            nxt.append(callee)
                        for path in found[caller]:
                            if len(paths) < MAX_PATHS and callee not in path:
                                paths.append(path + [callee])
                level = nxt
        by_file: dict = {}
        for (name, frel), paths in found.items():
            by_file.setdefault(frel, []).append((name, paths))
        if misses == self._misses():
            self._reached[(fn, rel)] = by_file
        return by_file

    def _paths(self, fn: str, rel: str, at: str, line: int) -> list:
        """The paths (_reach()) from work function fn (as rel's subsystem defines it) to the
        function whose body holds line of file at."""
        for name, paths in self._reach(fn, rel).get(at, ()):
            span = self._spans.get((name, at))
            if span is None:
                span = self._spans[(name, at)] = self.calls.lines_of(name, at) or (0, 0)
            if span[0] <= line <= span[1]:
                return paths
        return []

    def _function_at(self, rel: str, line: int):
        """(first line, last line, name, static) of the function whose body holds line, by
        the text of the top-level block around it (scan.source)."""
        src = self.index.look(rel)
        if src is None:
            return None
        chunk = src.chunk_at(line)
        text = src.slice(chunk.first_line, line)
        m = _DEF_RE.search(text)
        if m is None:
            return None
        head = text[text.rfind(b"\n", 0, max(text.rfind(b"\n", 0, m.start(1)), 0)) + 1:m.start(1)]
        return chunk.first_line, chunk.last_line, m.group(1).decode(), re.search(rb"\bstatic\b", head) is not None

    def _bound_to(self, fn: str, rel: str) -> Optional[list]:
        """[(work item's text, rel, line)] of the bindings of work items to fn in the files
        near rel (by the text of the API's calls); None until searched."""
        key = (fn, rel)
        got = self._bound.get(key)
        if got is not None:
            return got
        files = set(self.calls.files_near(rel)) | {rel}
        out = []
        for reldir in dirs_near(rel):
            words = self.text.calls(reldir)
            if words is None:
                return None
            for brel, line in words.get(fn, ()):
                if brel not in files:
                    continue
                src = self.index.look(brel)
                if src is None:
                    continue
                text = src.slice(line, min(line + 2, src.nlines)).decode("utf-8", "replace")
                for m in BIND_RE.finditer(text):
                    if m.start() > len(src.line_text(line)):
                        break
                    args = args_text(text[m.end():])
                    wi, fi = api.WORK_BINDERS[m.group(1)]
                    if args is not None and max(wi, fi) < len(args) and args[fi].strip().lstrip("&").strip() == fn:
                        out.append((args[wi], brel, line))
        self._bound[key] = out
        return out

    # -- by the parse: the path and what is waited for ---------------------------------------
    def _judge(self, rel, line, name, fn, brel, path, bline) -> list:
        """The SelfWaits of the wait call name at rel:line reached from work function fn
        (bound at brel:bline) along path ([(callee, the file defining it)])."""
        start = self.calls.function(fn, brel)
        if start is None:
            return []
        # [(scope, facts, [(call node, scope)])] of the ways down the path so far
        ways: list = [(start, self._assumed(brel, bline, fn), [])]
        for callee, callee_rel in path:
            nxt = []
            for scope, facts, hops in ways:
                inner = self.calls.function(callee, callee_rel)
                if inner is None:
                    continue
                for call in _calls_named(scope, callee):
                    known = guards.facts_before(call, scope.node, facts)
                    if not guards.on_path(call, scope.node, known):
                        continue
                    nxt.append((inner, guards.passed(call, inner.params, known), hops + [(call, scope)]))
                    break  # one call of callee on the path is enough
            ways = nxt[:4]
        out = []
        for scope, facts, hops in ways:
            for call in _calls_named(scope, name):
                cl = scope.chunk.line_of(call)
                if not (cl <= line <= cl + call.end_point[0] - call.start_point[0]):
                    continue
                if not guards.on_path(call, scope.node, guards.facts_before(call, scope.node, facts)):
                    continue
                got = self._self(call, scope, name, hops, start, brel, bline)
                if got is not None:
                    out.append(got)
        return out

    def _self(self, call, scope: Scope, name: str, hops: list, start: Scope, brel: str, bline: int):
        """The SelfWait of a wait call (in scope, reached along hops from the work function
        start, bound at brel:bline) when it waits for that work item or a queue it is put on."""
        what, argi = api.SELF_WAITS[name]
        args = parser.args(call)
        binding = self._binding(brel, bline, start.name)
        if argi >= len(args) or binding is None:
            return None
        work, bound = binding
        node, where = self._origin(args[argi], scope, hops)
        if node is None:
            return None
        key = work if node == "self" else self.model.key_of(node, where)
        if key is None:
            return None
        # The object waited for must be the work's own (or a global), not one of its kind.
        obj = self._object(args[argi], scope, hops)
        if obj is None:
            return None
        if what == "work":
            if obj[0] == "work":
                same = not obj[2]
            elif obj[0] == "container":
                same = _norm(obj[1]) == _norm(obj[2])
            else:
                same = key.kind == work.kind and key.matches(work)
            if not same:
                return None
        bsrc = self.index.source(brel)
        near = Scope(bsrc, bsrc.chunk_at(bline)) if bsrc is not None else where
        if what == "queue" and key.kind != "var" and not key.tag:
            return None  # a member of a struct not known: another struct's queue of that name
        if what == "queue" and _replaced(args[argi], [(call, scope)] + hops[::-1]):
            return None  # the path stores another queue where the wait reads it
        if what == "work":
            target = self.model.target_of(api.FLUSH_CALLS_BY_NAME["flush_work"], work, near)
            queued = list(target.queued) if target is not None else []
            queues = _queue_names(target)
            sites = tuple(target.sites) if target is not None else ()
        else:
            # The queued item must be the work's by name and struct (an unknown tag would let
            # another struct's member of the same name stand for it).
            on = [step for step, wk in self.model.queued_on(key, where.src.rel) if wk == work
                  and (wk.kind == "var" or wk.tag) and not rebound(self.index, step, work.name, start.name)]
            if not on:
                return None
            queued = on
            target = self.model.target_of(api.FLUSH_CALLS_BY_NAME["flush_workqueue"], key, where)
            queues = _queue_names(target) or (key.show(),)
            sites = tuple(target.sites) if target is not None else ()
        src = scope.src
        cl = scope.chunk.line_of(call)
        fn = call.child_by_field_name("function")
        return SelfWait(path=src.rel, line=cl, col=scope.chunk.col_of(fn), end_col=scope.chunk.end_col_of(fn),
                        call=name, what=what, waited=short(parser.text(args[argi]), 40), function=start.name,
                        bound=bound, queued=tuple(queued[:MAX_QUEUED]), queues=tuple(queues), sites=sites,
                        calls=self._steps(hops),
                        wait=Step(src.rel, cl, src.line_text(cl).strip(),
                                  conditions.with_guards(f"{scope.name}() calls {name}()", call)),
                        suppressed=suppressed(src, cl))

    def _assumed(self, brel: str, bline: int, fn: str) -> dict:
        """scan.assumed's facts for work function fn bound at brel:bline, once per work."""
        got = self._facts.get((brel, bline, fn))
        if got is None:
            misses = self._misses()
            got = assumed(self.index, self.model, self._binding(brel, bline, fn), brel, bline, fn)
            if misses == self._misses():
                self._facts[(brel, bline, fn)] = got
        return dict(got)

    @staticmethod
    def _steps(hops: list) -> tuple:
        out = []
        for call, scope in hops:
            cl = scope.chunk.line_of(call)
            fn = call.child_by_field_name("function")
            out.append(Step(scope.src.rel, cl, scope.src.line_text(cl).strip(),
                            conditions.with_guards(f"{scope.name}() calls {parser.text(fn)}()", call)))
        return tuple(out)

    def _origin(self, node, scope: Scope, hops: list):
        """(expression, Scope) of what an argument holds: itself, what the caller passed for
        a parameter (up the path), what a local was given; ("self", scope) for the work
        function's own work_struct parameter (through to_delayed_work() and the like)."""
        for _ in range(MAX_DEPTH + 4):
            node = guards.bare(node)
            if node is None:
                return None, scope
            if node.type == "pointer_expression" and parser.text(node).startswith("&"):
                inner = guards.bare(node.child_by_field_name("argument"))
                if inner is not None and inner.type == "field_expression" and \
                        parser.text(inner.child_by_field_name("field")) == "work":
                    obj = guards.bare(inner.child_by_field_name("argument"))
                    if obj is not None and obj.type == "call_expression" and parser.callee(obj).startswith("to_"):
                        node = obj
                        continue
                return node, scope
            if node.type == "call_expression" and re.fullmatch(r"to_\w+_work", parser.callee(node)):
                args = parser.args(node)
                if len(args) != 1:
                    return None, scope
                node = args[0]
                continue
            if node.type != "identifier" or scope.kind != "function":
                return node, scope
            name = parser.text(node)
            index = scope.param_index(name)
            if index >= 0:
                if not hops:  # the work function's: its first is the work item
                    return ("self", scope) if index == 0 else (None, scope)
                call, caller = hops[-1]
                args = parser.args(call)
                if index >= len(args):
                    return None, scope
                node, scope, hops = args[index], caller, hops[:-1]
                continue
            given = _given(node, scope)
            if given is None:
                return node, scope  # a variable the model names
            node = given
        return None, scope

    def _object(self, node, scope: Scope, hops: list):
        """Where the object an argument names comes from, followed up the path to the work
        function: ("work", (), members) from its own work_struct parameter (to_delayed_work()
        of it is the same item), ("container", members container_of() names, members) from
        the struct container_of() gives of it, ("global", name, members) from a variable
        that is no local; None when it is anything else (a loop's cursor, what a call
        returns). members: those named after it (`&d->reset` of d: ("reset",))."""
        path: tuple = ()
        for _ in range(4 * MAX_DEPTH):
            node = guards.bare(node)
            if node is None:
                return None
            kind = node.type
            if kind == "pointer_expression":
                node = node.child_by_field_name("argument")
                continue
            if kind == "field_expression":
                path = (parser.text(node.child_by_field_name("field")),) + path
                node = node.child_by_field_name("argument")
                continue
            if kind == "subscript_expression":
                inner = guards.bare(node.child_by_field_name("argument"))
                if inner is None or inner.type != "field_expression":
                    return None
                path = (parser.text(inner.child_by_field_name("field")) + "[]",) + path
                node = inner.child_by_field_name("argument")
                continue
            if kind == "call_expression":
                fn, args = parser.callee(node), parser.args(node)
                if re.fullmatch(r"to_\w+_work", fn) and len(args) == 1:
                    node = args[0]
                    continue
                # container_of(ptr, type, member), from_work(var, ptr, member): the member is
                # the last argument (the type may not parse as one).
                first = {"container_of": 0, "container_of_const": 0, "from_work": 1}.get(fn)
                if first is None or len(args) < first + 2:
                    return None
                got = self._object(args[first], scope, hops)
                if got is None or got[0] != "work" or got[2]:
                    return None
                return "container", tuple(re.sub(r"\s+", "", parser.text(args[-1])).split(".")), path
            if kind != "identifier" or scope.kind != "function":
                return None
            name = parser.text(node)
            index = scope.param_index(name)
            if index >= 0:
                if not hops:
                    return ("work", (), path) if index == 0 else None
                call, caller = hops[-1]
                cargs = parser.args(call)
                if index >= len(cargs):
                    return None
                node, scope, hops = cargs[index], caller, hops[:-1]
                continue
            if name not in scope.local_decls():
                return "global", name, path
            node = _given(node, scope)
            if node is None:
                return None
        return None

    def _binding(self, rel: str, line: int, fn: str):
        """(Key, Step) of the work item a binding of fn at rel:line names, with its struct's
        tag when its declarations tell it; None when the line binds no item to fn."""
        src = self.index.source(rel)
        if src is None:
            return None
        chunk = src.chunk_at(line)
        for _, caps in parser.matches("calls", chunk.root):
            macro = parser.text(caps["call.name"])
            if macro not in api.WORK_BINDERS or chunk.line_of(caps["call"]) != line:
                continue
            args = parser.args(caps["call"])
            wi, fi = api.WORK_BINDERS[macro]
            if max(wi, fi) >= len(args) or parser.text(args[fi]).lstrip("&").strip() != fn:
                continue
            key = self.model.key_of(args[wi], scope_of(chunk, caps["call"]))
            if key is not None:
                return key, Step(rel, line, src.line_text(line).strip(),
                                 f"{macro}() binds {short(parser.text(args[wi]), 40)} to {fn}()")
        # A DECLARE_*() at file level, which the parser does not read as a call.
        text = src.line_text(line)
        m = BIND_RE.search(text)
        given = args_text(text[m.end():]) if m else None
        if m is None or not given or len(given) < 2 or given[1].strip().lstrip("&").strip() != fn:
            return None
        word = last_word(given[0])
        if not word or not m.group(1).startswith("DECLARE"):
            return None
        return Key("var", word), Step(rel, line, text.strip(), f"{m.group(1)}() binds {given[0].strip()} to {fn}()")


def _norm(members: tuple) -> tuple:
    """Members naming a work item, without the work_struct of a delayed_work or an rcu_work
    (`dw.work` is dw)."""
    return members[:-1] if len(members) > 1 and members[-1] == "work" else members


def _queue_names(target) -> tuple:
    if target is None:
        return ()
    names = [s.queue.strip('"') if s.queue.startswith('"') else s.queue for s in target.sites if s.queue]
    return tuple(dict.fromkeys(names)) or ((target.system,) if target.system else ())


def _given(node, scope: Scope):
    """What a local variable was last given before node: its initialiser, or the right side
    of the last `name = ...;` before node in the function; None when it is not a local."""
    name = parser.text(node)
    decl = scope.local_decls().get(name)
    if decl is None:
        return None
    best = None
    if decl[0].type == "init_declarator":
        best = decl[0].child_by_field_name("value")
    body = scope.node
    stack = [body] if body is not None else []
    last = None
    while stack:
        cur = stack.pop()
        if cur.start_byte >= node.start_byte:
            continue
        if cur.type == "assignment_expression" and parser.text(cur.child_by_field_name("left")) == name \
                and parser.text(cur.child_by_field_name("operator")) == "=":
            if last is None or cur.start_byte > last.start_byte:
                last = cur
        stack.extend(cur.named_children)
    if last is not None:
        best = last.child_by_field_name("right")
    return best


def _given_text(src, fn: tuple, name: str, line: int) -> Optional[str]:
    """The text of what a local was last given before line in the function fn spans
    (_function_at()): `name = value;` or its initialiser; None when there is none."""
    body = src.slice(fn[0], line).decode("utf-8", "replace")
    got = None
    for m in re.finditer(r"(?<![\w.>])" + re.escape(name) + r"\s*=(?!=)([^;]+);", body):
        got = m.group(1).lstrip()
    return got


def _replaced(arg, calls: list) -> bool:
    """Is what arg reads (a member, or a global: `x->wq`, `foo_wq`) assigned before any of
    calls [(call node, Scope of its function)] in its function? Then the wait reads what
    the path put there (a queue allocated again), not what the work was queued on. A
    local or a parameter is what it was given: not looked at."""
    node = guards.bare(arg)
    if node is None:
        return False
    if node.type == "field_expression":
        name, member = parser.text(node.child_by_field_name("field")), True
    elif node.type == "identifier":
        name, member = parser.text(node), False
        scope = calls[0][1]
        if scope.kind == "function" and (name in scope.local_decls() or scope.param_index(name) >= 0):
            return False
    else:
        return False
    for call, scope in calls:
        if scope.node is None:
            continue
        stack = [scope.node]
        while stack:
            cur = stack.pop()
            if cur.start_byte >= call.start_byte:
                continue
            if cur.type == "assignment_expression" and parser.text(cur.child_by_field_name("operator")) == "=":
                left = guards.bare(cur.child_by_field_name("left"))
                if left is not None and ((member and left.type == "field_expression"
                                          and parser.text(left.child_by_field_name("field")) == name)
                                         or (not member and left.type == "identifier"
                                             and parser.text(left) == name)):
                    return True
            stack.extend(cur.named_children)
    return False


def _calls_named(scope: Scope, name: str) -> list:
    if scope.node is None:
        return []
    return sorted((caps["call"] for _, caps in parser.matches("calls", scope.node)
                   if parser.text(caps["call.name"]) == name), key=lambda c: c.start_byte)




def _first_arg(text: str) -> Optional[str]:
    args = args_text(text)
    return args[0] if args else None
