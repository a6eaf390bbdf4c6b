"""The call graph of scan.work: where a function called by name is defined (in the caller's
file, its subsystem's files, or, for a function of another subsystem, a file of the tree that
flushes), and how few calls it is from a flush, by the text of its body and its callees'.

Everything is looked for through scan.subtext's searches of the directories asked about; an
answer that takes a search not made yet is _PENDING, asked again in the next round. A callee
defined in another subsystem is looked for among the non-static functions of the tree's files
that flush, followed when exactly one of them defines it.
"""
from __future__ import annotations

import re
from typing import Optional

from wqlint import api
from wqlint.finding import Step
from wqlint.scan import parser
from wqlint.scan.description import Description
from wqlint.scan.steps import ALL_STEPS, TABLE, WIDE, after, exhausted, step_out
from wqlint.scan.tablecalls import calls_of, declared_type, holder_of
from wqlint.scan.search import covering
from wqlint.scan.scope import Scope, declarator_name, function_declarator, scope_of
from wqlint.scan.source import is_c_source
from wqlint.scan.subtext import SubsystemText

MAX_DEPTH = 8  # calls from the work function to the flush (the work function is depth 0)
MAX_POINTER_TARGETS = 3  # a member called through more initialisers than this is too generic
MAX_NEAR_FILES = 600  # files of a subsystem searched for a callee's definition
MAX_TEXT_FUNCTIONS = 4000  # definitions looked at by their text from one function
MAX_FAR_FILES = 5000  # files that flush, searched for the callees of other subsystems
# A call through a member of a table of functions whose type is known (`file->f_op->fsync()`)
# is followed into every function the tree's tables of that type set the member to, up to this
# many (file_operations.fsync has about a hundred); more is too generic to follow.
MAX_TABLE_TARGETS = 128
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
_WAIT_NAMES = tuple(n.encode() for n in covering(list(api.SELF_WAITS)))
_WAIT_RE = re.compile(rb"\b(?:" + "|".join(api.SELF_WAITS).encode() + rb")\s*\(")
_PENDING = object()  # an answer that takes a search not made yet
_FAR = 1 << 30  # no flush within reach


def far_files(index, found: Optional[dict] = None) -> Optional[tuple]:
    """The .c files of the tree that make a flush (api.FLUSH_CALLS by name), whose functions
    are Calls.far_heads(); None while the index has not searched for every flush. found:
    {name of a flush: its files}, kept by the caller while one is not searched yet (each
    name's files are then worked out once, though asked for again for every body)."""
    found = {} if found is None else found
    for name in _FLUSH_NAME_LIST:
        if name not in found:
            occ = index.occurrences(name)
            if occ is not None:
                found[name] = {rel for rel, _line in occ if rel.endswith(".c") and not rel.startswith("<")}
    if len(found) < len(_FLUSH_NAME_LIST):
        return None
    return tuple(sorted(set().union(*found.values()))[:MAX_FAR_FILES])


class Calls:
    """The functions of a tree as scan.work follows them from a work function to a flush."""

    def __init__(self, index, text: SubsystemText, not_followed: frozenset, ops: Optional[Description] = None):
        self.index = index
        self.text = text
        self.not_followed = not_followed  # names never followed (the API's own calls)
        self._dir_defs: dict = {}  # directory -> _near_defs() of its files
        self._kept: dict = {}  # directory -> the files of _near_defs() that count, when not all do
        self._defined: dict = {}  # (name, file asking) -> _definition()
        self._candidates: dict = {}  # (name, directory) -> the lines that may start its definition there
        self._dir_defined: dict = {}  # (name, directory) -> _verified() of them
        self._headers: dict = {}  # (rel, offset) -> _header_at()
        self._own: dict = {}  # (definition, waits) -> _body_waits()
        self._scopes: dict = {}  # ((rel, line), name) -> Scope of the definition, or None
        self._dir_files: dict = {}  # directory -> the files of its subsystem searched
        self._dist: dict = {}  # a definition -> (calls from it to a flush by its text, calls looked through)
        self._callees: dict = {}  # (rel, line) of a definition -> [(rel, line)] it may call
        self._pointers: dict = {}  # (member, directory) -> _pointer_names()
        self._far = None  # far_heads()
        self._far_files: Optional[tuple] = None  # the files it is of
        self._far_found: dict = {}  # name of a flush -> the .c files that call it, once searched
        self._far_defined: dict = {}  # name -> _far_definition()
        self._names: dict = {}  # a definition -> the function's name
        self._wait_dist: dict = {}  # _dist of distance(waits=True)
        # (start, radius, waits) -> (searches made, answer, misses it counted) of an answer
        # that waits for a search: the same until the next search, so worked out once per round.
        self._provisional: dict = {}
        # the tree's tables of functions, read when first asked (the engine's, when it started their searches)
        self.ops = ops if ops is not None else Description(index)
        self._tables: dict = {}  # (member, holder, base, type of base) -> _table_targets()
        self._wide: dict = {}  # name -> wide_definition()
        self._steps: dict = {}  # a definition -> _stepsstep_out()
        self._read_calls: dict = {}  # a definition -> _calls_of()
        self._step_parts: dict = {}  # a definition -> _step_parts_of(), until _stepsstep_out() is known

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
            head = self._header_at(rel, offset)
            if head is not None and head[0] == name:
                found = (rel, line, head[1])
                self._names[found] = name
                return found
        return False

    def _header_at(self, rel: str, offset: int) -> Optional[tuple]:
        """(name, end) of the function header that starts at offset of rel (_DEF_AT); None
        when none does or rel cannot be read. Read once: every caller's subsystem asks again."""
        key = (rel, offset)
        if key in self._headers:
            return self._headers[key]
        data = self.index.text(rel)
        m = _DEF_AT.match(data, offset) if data is not None else None
        got = self._headers[key] = (m.group(1).decode(), m.end()) if m is not None else None
        return got

    # -- callees of other subsystems ---------------------------------------------------------
    def far_heads(self):
        """The scan.subtext.Heads of the function headers of the tree's .c files that make a
        flush (api.FLUSH_CALLS by name): where a callee that its caller's
        subsystem does not define is looked for (a transport's, a core helper's). Only those
        files: a function of another subsystem is followed when its own file waits for a
        queue, so that reaching across subsystems stays a few files. None until searched."""
        if self._far is not None:
            return self._far
        if self._far_files is None:  # worked out once: every body looked at asks
            self._far_files = far_files(self.index, self._far_found)
            if self._far_files is None:
                return None
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
        heads = self.far_heads()
        if heads is None:
            return _PENDING
        found = self._linked(name, [(rel, line, offset) for rel, line, offset, static in heads.headers(name)
                                    if not static])
        self._far_defined[name] = found
        return found or None

    def _linked(self, name: str, ats: list) -> "tuple | bool":
        """(rel, line, end of the header) of the definition of name with external linkage
        among the lines ats [(rel, line, offset)] that may start it; False when none does, or
        when several files define it (which one links is the build's choice)."""
        chosen = []
        for rel, line, offset in ats:
            data = self.index.text(rel)
            if data is None:
                continue
            if data[offset:offset + len(name)] == name.encode() and line > 1 \
                    and re.search(rb"\bstatic\b", data[data.rfind(b"\n", 0, offset - 1) + 1:offset - 1]):
                continue  # `static void\nname(...)`
            head = self._header_at(rel, offset)
            if head is not None and head[0] == name:
                chosen.append((rel, line, head[1]))
        found = chosen[0] if chosen and len({c[0] for c in chosen}) == 1 else False
        if found:
            self._names[found] = name
        return found

    def wide_definition(self, name: str):
        """(rel, line, end of the header) of the one definition of name with external linkage
        in the tree's .c files (Description.exported()): a callee defined in another
        subsystem, in a file that waits for no queue itself. None when there is none, or when
        several files define it (which one links is the build's choice). Its own callees are
        looked for near it, not again in the whole tree."""
        got = self._wide.get(name)
        if got is not None:
            return got or None
        found = self._wide[name] = self._linked(name, self.ops.exported(name))
        return found or None

    def distance(self, name: str, near: str, radius: int = MAX_DEPTH - 1, waits: bool = False,
                 budget: int = 0) -> int:
        """The fewest calls (at most radius) from function name, as near's subsystem defines
        it, to a flush, by a look at the text of its body and of the functions it may call
        (by name, or through a member initialised to a function); _FAR when there is none
        that near or it is not known yet. Only as far as the caller asks: a callee's
        question is as far as the calls left to it reach, not as far as a work function's.
        budget: the steps out of a subsystem a path may still take (WIDE: a call of a
        function of another subsystem, wide_definition(); TABLE: a call through a table of
        several functions, table_targets()), each at most once on a path.
        waits: to a call that waits for a queue or a work item (api.SELF_WAITS) instead
        (no step out)."""
        memo = self._wait_dist if waits else self._dist
        at = self._definition(name, near)
        if at is None or at is _PENDING:
            return _FAR
        start = (at, 0 if waits else budget)
        known = memo.get(start)
        if known is not None and (known[0] <= known[1] or known[1] >= radius):
            return known[0] if known[0] <= radius else _FAR
        searched = (self.index.grep_rounds, self.text.rounds)
        before = (self.index.misses, self.text.misses)
        was = self._provisional.get((start, radius, waits))
        if was is not None and was[0] == searched:
            self.index.misses += was[2][0]  # the answer is as provisional as when worked out
            self.text.misses += was[2][1]
            return was[1]
        # The definitions within radius calls (breadth first: each at its fewest calls), and
        # what each may call; one whose distance is known as far as needed is not looked into.
        level = {start: 0}
        order, graph, pending = [start], {}, []
        for cur in order:
            k = level[cur]
            known = memo.get(cur)
            if cur != start and known is not None and (known[0] <= known[1] or known[1] >= radius - k):
                continue
            # At the last level only a flush of its own counts (a path through its callees
            # is longer than radius): its callees are not worked out, nor its subsystem searched.
            cat, left = cur
            got = self._callees_of(cat) if k < radius or cat in self._callees else ((), self._body_waits(cat, False))
            if got is _PENDING:
                pending.append(cur)
                continue
            if exhausted(left):
                got = ((), got[1])
            nxt = [(c, after(left)) for c in got[0]]
            if left & ALL_STEPS and not exhausted(left) and k < radius:
                out = self._stepsstep_out(cat)
                if out is _PENDING:
                    pending.append(cur)
                    continue
                if left & WIDE:
                    nxt += [(c, step_out(left, WIDE)) for c in out[0]]
                if left & TABLE:
                    nxt += [(c, step_out(left, TABLE)) for c in out[1]]
            if waits:
                got = (got[0], self._body_waits(cat, True))
            graph[cur] = (nxt, got[1])
            if k < radius and len(order) < MAX_TEXT_FUNCTIONS:
                for c in nxt:
                    if c not in level:
                        level[c] = k + 1
                        order.append(c)

        def told(n) -> int:
            known = memo.get(n)
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
                else:
                    if 1 + told(c) < dist[n]:
                        dist[n] = 1 + told(c)
                    if pending:
                        callers.setdefault(c, []).append(n)
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
        got = dist.get(start, _FAR)
        got = got if got <= radius else _FAR
        # Each exactly as far as it was looked into: (distance, calls looked through); not one
        # that may call, within what was looked into, a definition whose text waits for a search.
        unsure = set(pending)
        for n in pending:  # (the list grows: those calling them)
            for caller in callers.get(n, ()):
                if caller not in unsure:
                    unsure.add(caller)
                    pending.append(caller)
        memo.update((n, (d, radius - level[n])) for n, d in dist.items() if n not in unsure)
        if unsure:
            self._provisional[(start, radius, waits)] = (
                searched, got, (self.index.misses - before[0], self.text.misses - before[1]))
        return got

    def defined_in(self, name: str, near: str) -> Optional[str]:
        """The file holding function name's definition, as function() finds it; None when
        there is none or the subsystem's text is not searched yet."""
        at = self._definition(name, near)
        return None if at is None or at is _PENDING else at[0]

    def lines_of(self, name: str, near: str) -> Optional[tuple]:
        """(first line, last line) of function name's definition, as function() finds it:
        from its header to the '}' that ends its body at column 0; None when there is none."""
        at = self._definition(name, near)
        if at is None or at is _PENDING:
            return None
        body = self._body(at)
        src = self.index.source(at[0])
        return (at[1], src.line_at(at[2] + len(body) + 1)) if body is not None and src is not None else None

    def callees(self, name: str, near: str) -> Optional[list]:
        """[(callee, the file defining it)] of the functions that function name, as near's
        subsystem defines it, may call by the text of its body (as distance() reads it); []
        when it is not defined there, None until the subsystem's text is searched."""
        at = self._definition(name, near)
        if at is _PENDING:
            return None
        if at is None:
            return []
        got = self._callees_of(at)
        if got is _PENDING:
            return None
        return [(self._names[d], d[0]) for d in got[0] if d in self._names]

    def _callees_of(self, at: tuple):
        """([definitions it may call], whether it calls a flush) of the function whose
        definition is at, by its text; _PENDING until its subsystem's text is searched."""
        got = self._callees.get(at)
        if got is not None:
            return got
        rel = at[0]
        heads = self._near_defs(rel)
        if heads is None:
            return _PENDING
        far = self.far_heads()
        if far is None:
            return _PENDING
        body = self._body(at)
        if body is None:
            return (), False
        # Every name called that the subsystem defines, and the members called through
        # (their names count as called too: this only decides what is parsed).
        called, through, members = self._calls_of(at, body)
        # and those another subsystem defines in a file that flushes (_far_definition()).
        names = {n.decode() for n in called if n in far or any(n in h for h in heads)} - self.not_followed
        types: dict = {}  # member -> the types of the tables it is called through (each a set)
        if through:
            decls = self._declarations(at)
            for member, holder, base in members:
                types.setdefault(member, set()).add(self.table_types(member, holder, base, decls))
        for member in through:
            names.update(self._pointer_names(member.decode(), rel, types.get(member, {frozenset()})))
        callees = []
        for name in sorted(names):
            d = self._definition(name, rel)
            if d is not None and d is not _PENDING and d != at:
                callees.append(d)
        got = self._callees[at] = (tuple(callees), _flushes_in(body))
        return got

    def _stepsstep_out(self, at: tuple):
        """([definitions it may call in another subsystem (wide_definition())], [definitions
        the tree's tables set a member it calls through to (table_targets())]) of the function
        whose definition is at, not among _callees_of()'s; _PENDING until the subsystems of
        the tables' functions are searched. A table whose one function is set is a call by
        name (not a step out)."""
        got = self._steps.get(at)
        if got is not None:
            return got
        plain = self._callees_of(at)
        if plain is _PENDING:
            return plain
        # What does not change from round to round once plain is known, worked out once: the
        # wide steps, and the tables' functions (in order) whose definitions are looked up.
        parts = self._step_parts.get(at)
        if parts is None:
            body = self._body(at)
            if body is None:
                return ((), ())
            parts = self._step_parts[at] = self._step_parts_of(at, body, plain[0])
        wide, targets = parts
        fan = []
        for fn, irel in targets:
            d = self._definition(fn, irel)
            if d is _PENDING:
                return _PENDING
            if d is not None and d != at and d not in plain[0] and d not in fan:
                fan.append(d)
        self._read_calls.pop(at, None)  # (its last reader)
        self._step_parts.pop(at, None)
        got = self._steps[at] = (wide, tuple(fan))
        return got

    def _step_parts_of(self, at: tuple, body: bytes, plain: tuple) -> tuple:
        """(the wide steps, [(function, file setting it)] of the tables' functions) of
        _stepsstep_out(), for a function whose _callees_of() is known."""
        rel = at[0]
        heads = self._near_defs(rel) or []
        far = self.far_heads() or ()
        wide = []
        called, _through, members = self._calls_of(at, body)
        for n in sorted(called):
            name = n.decode()
            if name in self.not_followed or n in far or any(n in h for h in heads):
                continue
            d = self.wide_definition(name)
            if d is not None and d != at and d not in plain and d not in wide:
                wide.append(d)
        decls = self._declarations(at)
        targets = []
        for member, holder, base in sorted(members):
            types = self.table_types(member, holder, base, decls)
            targets += [(fn, irel) for fn, irel, _line, _type in self.table_targets(member, types)]
        return tuple(wide), targets

    def _calls_of(self, at: tuple, body: bytes) -> tuple:
        """tablecalls.calls_of() of the function whose definition is at, read once for
        _callees_of() and _stepsstep_out()."""
        got = self._read_calls.get(at)
        if got is None:
            got = self._read_calls[at] = calls_of(body)
        return got

    def _declarations(self, at: tuple) -> bytes:
        """The text that declares the names a function's body uses: from the end of the
        function before it (its parameters, the file's variables) to the end of its body."""
        data = self.index.text(at[0]) or b""
        body = self._body(at) or b""
        start = data.rfind(b"\n}", 0, at[2])
        return data[start + 1 if start >= 0 else 0:at[2] + len(body)]

    def table_types(self, member: bytes, holder: bytes, base: bytes, decls: bytes) -> frozenset:
        """The struct types the table a call through member may be of (`holder->member(...)`,
        holder a variable when base is b'', else a member of base: `base->holder->member(...)`):
        the type a declaration in decls gives holder, or that the type of base (declared in
        decls, or the only type any struct declares a member called base to point to)
        declares holder to point to; else the types with an initialiser of member that
        structs declare a member called holder to point to. Empty when not known so."""
        if not holder or holder[:1].isdigit():
            return frozenset()
        btype = declared_type(decls, base) if base else declared_type(decls, holder)
        key = (member, holder, base, btype)
        got = self._tables.get(key)
        if got is None:
            if not base:
                got = frozenset([btype] if btype else [])
            else:
                if not btype and base != b"?":
                    bases = self.ops.member_types(base.decode())
                    btype = next(iter(bases)) if len(bases) == 1 else None
                ftype = self.ops.field_type(btype, holder.decode()) if btype else None
                if ftype:
                    got = frozenset([ftype])
                else:
                    inits = self.ops.initialisers(member.decode())
                    got = frozenset(t for t in self.ops.member_types(holder.decode()) if t in inits)
            self._tables[key] = got
        return got

    def table_targets(self, member: bytes, types: frozenset) -> list:
        """[(function, rel, line, type)] of the initialisers that set member in the tree's
        tables of the one type of types (table_types()); none when types are not one, or more
        than MAX_TABLE_TARGETS functions are set."""
        if len(types) != 1:
            return []
        ttype = next(iter(types))
        got = self.ops.initialisers(member.decode()).get(ttype, [])
        return [(fn, rel, line, ttype) for fn, rel, line in got] if len(got) <= MAX_TABLE_TARGETS else []

    def _of_type(self, member: str, types: frozenset, at: tuple) -> bool:
        """Is the initialiser of member at (rel, line) one of a table of one of types (any,
        when they are not known), or of a type not known?"""
        ttype = self.ops.initialiser_type(member, at[0], at[1])
        return not types or not ttype or ttype in types

    def _body(self, at: tuple) -> Optional[bytes]:
        """The text of the body of the function whose definition is at, to its first '}' at
        column 0; None when its file cannot be read."""
        rel, _line, start = at
        data = self.index.text(rel)
        if data is None:
            return None
        end = data.find(b"\n}", start)
        return data[start:end if end >= 0 else len(data)]

    def _body_waits(self, at: tuple, waits: bool) -> bool:
        """Does the body of the function whose definition is at make a flush (a wait of
        api.SELF_WAITS when waits)? Read once: distance() asks again each round."""
        key = (at, waits)
        got = self._own.get(key)
        if got is None:
            body = self._body(at)
            got = self._own[key] = body is not None and (_waits_in(body) if waits else _flushes_in(body))
        return got

    def _near_defs(self, rel: str) -> Optional[list]:
        """The headers of the files of rel's directory and of its parent (when that is more
        than two levels deep), its own directory's first: [scan.subtext.Heads], of which
        only those in the files of self._kept[rel's directory] count when it has them; None
        until their text is searched."""
        here = rel.rsplit("/", 1)[0] if "/" in rel else ""
        got = self._dir_defs.get(here)
        if got is None:
            asked = [self.text.heads(d) for d in dirs_near(rel)]
            heads = [h for h in asked if h is not None]
            if len(heads) < len(asked):
                # A flush reached there is judged by the API's calls of the same directories:
                # asked with the headers, not in a round of their own.
                for d in dirs_near(rel):
                    self.text.calls(d)
                return None
            files = self.files_near(rel)
            if sum(len(self.index.dir_files(d, recursive=False)) for d in dirs_near(rel)) > len(files):
                # More files than a subsystem is searched in: only the nearest count.
                self._kept[here] = set(files)
            got = self._dir_defs[here] = heads
        return got

    def files_near(self, rel: str) -> list:
        """The .c and .h files of rel's directory and of its parent (when that is more than two
        levels deep), those of its own directory first."""
        here = rel.rsplit("/", 1)[0] if "/" in rel else ""
        got = self._dir_files.get(here)
        if got is None:
            files = []
            for reldir in dirs_near(rel):
                files += self.index.dir_files(reldir, recursive=False)
            files = sorted((r for r in files if is_c_source(r)),
                           key=lambda r: ((r.rsplit("/", 1)[0] if "/" in r else "") != here, r))
            got = self._dir_files[here] = files[:MAX_NEAR_FILES]
        return got

    def calls_in(self, scope: Scope, budget: int = 0) -> list:
        """(call node, callee name, how, the file near which the callee is defined, the budget
        left to its path, the table) of the calls in a function: by name, or through a member
        initialised to a known function in the subsystem (`ops->fsync(...)`); and, as budget
        allows (distance()), a function of another subsystem (wide_definition()) or, by the
        type of the table, a function set in one of the tree's tables (`file->f_op->fsync(...)`:
        table_targets(); the table: (its type, the file setting the function), else None)."""
        if scope.node is None:
            return []
        out: list = []
        rel = scope.src.rel
        decls: Optional[bytes] = None
        for _, caps in parser.matches("work_calls", scope.node):
            call, fn = caps["call"], caps["call.fn"]
            if fn.type == "identifier":
                name = parser.text(fn)
                if budget & WIDE and name not in self.not_followed and self._definition(name, rel) is None:
                    wide = self.wide_definition(name)
                    if wide is not None:
                        out.append((call, name, "", wide[0], step_out(budget, WIDE), None))
                        continue
                out.append((call, name, "", rel, after(budget), None))
            elif fn.type == "field_expression":
                member = parser.text(fn.child_by_field_name("field"))
                holder, base = holder_of(fn.child_by_field_name("argument"))
                if decls is None:  # the function's parameters and locals
                    decls = (scope.node.text or b"") if scope.kind == "function" else b""
                types = self.table_types(member.encode(), holder, base, decls)
                seen = set()
                for target, step in self.pointer_targets(member, rel):
                    if not self._of_type(member, types, (step.path, step.line)):
                        continue  # a table of another type
                    seen.add(target)
                    out.append((call, target, f" through .{member} ({step.path}:{step.line})", rel, after(budget),
                                None))
                if not budget & TABLE:
                    continue
                for target, irel, line, ttype in self.table_targets(member.encode(), types):
                    if target not in seen:
                        out.append((call, target, f" through {ttype}.{member} = {target} ({irel}:{line})", irel,
                                    step_out(budget, TABLE), (ttype, irel)))
        return out

    def _pointer_names(self, member: str, near: str, types: set) -> tuple:
        """The functions of pointer_targets() of a table of a type one of the calls may be
        through (types: of each call, table_types()), without their steps (their files only
        looked at)."""
        here = near.rsplit("/", 1)[0] if "/" in near else ""
        got = self._pointers.get((member, here))
        if got is None:
            got = self._pointers[(member, here)] = tuple(
                (fn, at) for fn, at in self._initialisers(member, near).items() if self.index.text(at[0]) is not None)
        return tuple(fn for fn, at in got if any(self._of_type(member, t, at) for t in types))

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


def dirs_near(rel: str) -> list:
    """rel's directory, and its parent when that is more than two levels deep."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts)] + (["/".join(parts[:-1])] if len(parts) > 2 else [])


def _waits_in(body: bytes) -> bool:
    """Does a function's text call one of api.SELF_WAITS?"""
    return any(n in body for n in _WAIT_NAMES) and _WAIT_RE.search(body) is not None


def _flushes_in(body: bytes) -> bool:
    """Does a function's text call a flush (api.FLUSH_CALLS)?"""
    return _FLUSH_COMMON in body and any(n in body for n in _FLUSH_NAMES) and _FLUSH_RE.search(body) is not None
