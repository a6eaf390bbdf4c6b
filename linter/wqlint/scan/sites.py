"""Allocation sites: every call of a function that really creates a queue (api.SINKS), its
flags, max_active and name resolved, followed out through wrappers.

Only the sinks are known by name. Every other entry point (alloc_ordered_workqueue(), the
create_*() macros, a subsystem's own helper, a variadic `#define f(...) alloc_hooks(g(__VA_ARGS__))`)
is found as a *wrapper*: a function or macro that forwards one of its parameters into flags or
max_active. The site then moves to each call of the wrapper, where the parameter has a value.
"""
from __future__ import annotations

import bisect
import re
from collections import Counter
from pathlib import Path
from typing import Optional

from wqlint import api, safeio
from wqlint.finding import InputError, InternalError, Origin, Step, Via
from wqlint.scan import parser
from wqlint.scan.ctext import short as _short
from wqlint.scan.scope import Scope, calls_named, only_in_comments, scope_of
from wqlint.scan.site import NameArgs, Site
from wqlint.scan.source import MAX_FILE_BYTES
from wqlint.scan.suppress import suppressed
from wqlint.scan.values import Alt, Param, params, substitute, walk

SINKS = api.SINKS  # name -> (index of flags, index of max_active)
NAME_ARGS = api.NAME_ARGS  # name -> (index of the name's format, of its first argument)
MAX_CALLS_PER_FILE = 400  # allocation calls in one file (the kernel's most: a few dozen)
MAX_WRAPPER_DEPTH = 6


class SiteFinder:
    """The allocation sites of one scan, a round of searches at a time (find()).

    index, resolver, cpp: the scan's (scan.index.TreeIndex, scan.resolve.Resolver,
    scan.cpp.Decider); targets, focus: scan.targets.Targets and Focus; store: the tree's
    index kept between runs, or None; api_header: the API header's rel. Input errors go to
    targets.errors; a call that cannot be parsed to parse_errors ({rel: problem}, of the
    last round); files defining an entry point of the API to api_files."""

    def __init__(self, index, resolver, cpp, targets, focus, store, api_header: str):
        self.index = index
        self.resolver = resolver
        self.cpp = cpp
        self.targets = targets
        self.focus = focus
        self.store = store
        self.api_header = api_header
        self.errors: list = targets.errors
        self.parse_errors: dict = {}
        self.api_files: set = set()  # files that define an entry point of the API
        self._memo: dict = {}

    def find(self) -> list:
        """Every allocation site reachable from the targets, with what the index knows now
        (the names it still lacks are asked for: see TreeIndex.fetch_pending)."""
        self.parse_errors = {}
        out = []
        for sink, (fi, mi) in SINKS.items():
            occ = self.index.occurrences(sink)
            if occ is None:
                continue
            pat = re.compile(rb"\b" + sink.encode() + rb"\s*(\(|\\?$)")
            define = re.compile(rb"\s*#\s*define\s+" + sink.encode() + rb"\b")
            crowded = self._crowded(sink, occ)
            for rel, line in occ:
                if rel in crowded:
                    continue
                outside = self.focus.outside(rel)
                if outside and not self.reachable(rel, self.index.peek(rel, line)):
                    continue
                src = self.index.source(rel)
                if src is None:
                    continue
                if not outside:
                    self._keep_enclosing(rel, self.index.peek(rel, line), src)
                text = src.line_bytes(line)
                if not pat.search(text) or re.match(rb"\s*(\*|//)", text) or define.match(text):
                    continue  # a comment, or the API's own macro (v6.17's alloc_hooks() form)
                span = src.define_span(line)
                chunk = self.resolver.macros.chunk(src, *span) if span else src.chunk_at(line)
                if chunk is None:
                    continue
                calls = calls_named(chunk, sink, line)
                if not calls:
                    if _is_declaration(chunk, sink, line) or only_in_comments(chunk, sink, line):
                        continue
                    self.parse_errors.setdefault(rel, f"line {line}: cannot parse the call to {sink}()")
                    continue
                for call in calls:
                    memo_key = (rel, chunk.first_line, call.start_byte)
                    if memo_key in self._memo:
                        out.extend(self._memo[memo_key])
                        continue
                    misses = self.index.misses
                    dead, conds = self.cpp.state(src, line)
                    if dead:  # not compiled for this kernel
                        if self.index.misses == misses:
                            self._memo[memo_key] = []
                        continue
                    args = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
                    scope = scope_of(chunk, call)
                    if scope.name in SINKS:
                        self.api_files.add(rel)  # an entry point calling another: the API's own code
                        continue
                    if outside and scope.name not in self.focus.words:
                        continue  # neither near the focus nor a wrapper it calls
                    spread = _variadic_forward(args, scope, chunk)
                    if len(args) <= mi and spread is None:
                        self.parse_errors.setdefault(rel, f"line {line}: {sink}() with {len(args)} arguments")
                        continue
                    self.resolver.start(rel)
                    try:
                        flags = self._argument(args, fi, scope, spread, line, src)
                        max_active = self._argument(args, mi, scope, spread, line, src)
                        with self.resolver.naming():
                            name = self._name(sink, args, scope, spread, line, src)
                        step = Step(rel, line, src.line_text(line).strip(),
                                    f"{sink}(flags '{_arg_text(args, fi, spread)}', "
                                    f"max_active '{_arg_text(args, mi, spread)}')")
                        # The #if branches that chose the flags' definitions, named for every rule.
                        chosen = [v.step for v in walk(flags) if v.step in self.resolver.conditional_steps]
                        found = self._expand(sink, call, chunk, scope, flags, max_active,
                                             [step] + self.cpp.steps(src, conds) + list(dict.fromkeys(chosen)),
                                             [], 0, (fi, mi), name)
                    except Exception as exc:  # a bug must cost this call, not the run
                        self.errors.append(InternalError.of(f"{rel}:{line}", exc))
                        continue
                    if self.index.misses == misses:
                        self._memo[memo_key] = found
                    out.extend(found)
        return out

    def _crowded(self, sink: str, occ) -> set:
        """Files with more lines naming sink than MAX_CALLS_PER_FILE: each call's resolution
        looks through its function, so thousands in one function cost minutes and gigabytes.
        Reported once as not analysed (exit 3), never silently cut short."""
        crowded = {rel for rel, n in Counter(rel for rel, _ in occ).items() if n > MAX_CALLS_PER_FILE}
        for rel in sorted(crowded):
            if self.targets.holds(rel):
                self.errors.append(InputError(rel, f"more than {MAX_CALLS_PER_FILE} lines name {sink}(), "
                                                   "the most wqlint analyses in one file; not analysed"))
        return crowded

    def reachable(self, rel: str, line_text: bytes) -> bool:
        """A cheap first look: is this line near the focus, or in a function it calls?"""
        if not self.focus.outside(rel):
            return True
        if self.store is not None and not self.index.shadowed(rel):
            # Kept in the index for the file as it is on disk: a review reads none of them again.
            name = self.store.enclosing_name(rel, line_text,
                                             lambda r, t: _enclosing_name(self.index.root / r, t))
        else:
            name = _enclosing_name(self.index.root / rel, line_text)
        return name in self.focus.words

    def _noted(self, rel: str, line_text: bytes) -> bool:
        """keep= of the callers of a wrapper in a scan without a focus: every one, each
        line's function kept in the index (_keep_enclosing())."""
        src = self.index.source(rel) if self.store is not None else None
        if src is not None:
            self._keep_enclosing(rel, line_text, src)
        return True

    def _keep_enclosing(self, rel: str, line_text: bytes, src) -> None:
        """What reachable() tells of a line of a file on disk, kept in the index while the
        scan holds the file: a later review reads none of these files again (on
        linux-source-7.3 they took the first review after a scan 0.13-0.17 s)."""
        if self.store is not None and not self.index.shadowed(rel) and rel not in self.index.preloaded:
            self.store.enclosing_name(rel, line_text, lambda _rel, text: _enclosing_in(src.data, text))

    # -- the values at a call --------------------------------------------------------------
    def _argument(self, args, i, scope: Scope, spread, line, src):
        """The value of argument i of a call; inside a variadic macro whose __VA_ARGS__ covers
        it, the macro's own parameter at the matching position."""
        if spread is not None and i >= spread:
            index = len(scope.params) - 1 + (i - spread)
            name = _arg_text(args, i, spread)
            return Param(Step(src.rel, line, src.line_text(line).strip(),
                              f"argument {i + 1} is argument {index + 1} of {scope.name}() "
                              f"through {name.split('[')[0]}"), scope.name, index, name)
        return self.resolver.resolve(args[i], scope)

    def _name(self, sink, args, scope: Scope, spread, line, src) -> Optional[NameArgs]:
        """The queue's name at a call of sink: its format and the arguments after it
        (api.NAME_ARGS), those a variadic macro spreads still to come from its callers."""
        ni, ai = NAME_ARGS[sink]
        if spread is None and ni >= len(args):
            return None
        fmt = self._argument(args, ni, scope, spread, line, src)
        values, rest = [], None
        if ai >= 0:
            if spread is None:
                values = [self.resolver.resolve(a, scope) for a in args[ai:]]
            else:
                values = [self._argument(args, i, scope, spread, line, src) for i in range(ai, spread)]
                first = len(scope.params) - 1 + max(ai - spread, 0)
                rest = Param(Step(src.rel, line, src.line_text(line).strip(),
                                  f"the name's arguments are those of {scope.name}() from argument {first + 1}"),
                             scope.name, first, scope.params[-1])
        step = Step(src.rel, line, src.line_text(line).strip(), f"{sink}() name '{_arg_text(args, ni, spread)}'")
        return NameArgs(fmt, tuple(values), rest, step)

    # -- wrappers --------------------------------------------------------------------------
    def _expand(self, entry, call, chunk, scope: Scope, flags, max_active, prefix, via, depth, args_at,
                name=None) -> list:
        """Sites for one call: here, or at each caller when it forwards parameters.

        args_at: the indices of the arguments of this call that carry flags and max_active."""
        mine = [p for p in params(flags) + params(max_active) if p.function == scope.name]
        named = [p for p in _name_params(name) if p.function == scope.name]
        # A function that forwards only the name: flags and max_active are known here, the
        # name at each caller.
        name_only = not mine and bool(named) and scope.kind == "function"
        # A macro expands where it is used, so its call sites are the allocations even when
        # it forwards nothing into flags or max_active (create_freezable_workqueue()).
        if (not mine and not name_only and scope.kind != "macro") or not scope.name or scope.kind == "file" \
                or depth >= MAX_WRAPPER_DEPTH:
            return [_site(entry, call, chunk, flags, max_active, prefix, via, args_at, scope, name)]
        keep = self.reachable if self.focus.files is not None else self._noted
        callers = self.resolver.functions.call_sites(scope.name, scope.src, scope.static and scope.kind == "function",
                                                     keep=keep)
        out = []
        flags_here = scope.kind == "function" and not any(p.function == scope.name for p in params(flags))
        # The parts decided in this function: a site here has them (rules reading only those
        # are judged once, here, not per caller), the callers' sites have the rest.
        here_parts = frozenset(("flags",) if flags_here else ()) | \
            frozenset(("name",) if scope.kind == "function" and not named else ())
        if name_only:
            here_parts = frozenset({"flags", "max_active"})
        if here_parts and callers:
            here = _site(entry, call, chunk, flags, max_active, prefix, via, args_at, scope, name)
            here.parts = here_parts
            out.append(here)
        outer_at = (_forwarded_index(flags, scope.name), _direct_param_index(max_active, scope.name))
        for ccall, cscope in callers:
            rel = cscope.src.rel
            cargs = [a for a in ccall.child_by_field_name("arguments").named_children if a.type != "comment"]
            if not self.targets.holds(rel) and cscope.kind != "macro" and not _forwards(cargs, cscope, mine + named):
                continue
            if self.focus.outside(rel) and cscope.name not in self.focus.words:
                continue
            if any(p.index >= len(cargs) for p in mine):
                continue
            cline = cscope.chunk.line_of(ccall)
            dead, conds = self.cpp.state(cscope.src, cline)
            if dead:  # a call of the wrapper that is not compiled for this kernel
                continue
            bound: dict[int, Alt] = {}

            def bind(p: Param, cargs=cargs, cscope=cscope, cline=cline, bound=bound, rel=rel):
                if p.function != scope.name or p.index >= len(cargs):
                    return p
                key = p.index
                if key not in bound:
                    arg = cargs[key]
                    bound[key] = Alt(Step(rel, cline, cscope.src.line_text(cline).strip(),
                                          f"'{p.name}' <- argument {key + 1} '{_short(parser.text(arg), 50)}' "
                                          f"of {scope.name}()", binds=(scope.name, key),
                                          origin=Origin(Via.ARGUMENT, p.name)),
                                     (self.resolver.resolve(arg, cscope),), "")
                return Alt(p.step, (bound[key],), "")
            # The caller is where the queue is allocated: its subsystem is the one whose
            # helpers its arguments may go through (a macro of the API's header has none).
            with self.resolver.homed(rel):
                nflags = substitute(flags, bind)
                nmax = substitute(max_active, bind)
                with self.resolver.naming():
                    nname = _bind_name(name, bind, scope, cargs, cscope)
            step = Step(rel, cline, cscope.src.line_text(cline).strip(), f"calls {scope.name}()")
            for site in self._expand(scope.name, ccall, cscope.chunk, cscope, nflags, nmax,
                                     [step] + self.cpp.steps(cscope.src, conds) + prefix,
                                     [scope.name] + via, depth + 1, outer_at, nname):
                if name_only:
                    site.parts = frozenset({"name"}) if site.parts is None else site.parts & {"name"}
                else:
                    site.parts_elsewhere = site.parts_elsewhere | here_parts
                out.append(site)
        if not callers:
            if scope.src.rel == self.api_header:
                return []  # the API header's own macro (create_workqueue()) that nothing uses: no queue
            return [_site(entry, call, chunk, flags, max_active, prefix, via, args_at, scope, name)]
        return out


def _site(entry, call, chunk, flags, max_active, prefix, via, args_at, scope, name_args=None) -> Site:
    name = call.child_by_field_name("function")
    src = chunk.source
    line = chunk.line_of(name)
    args = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
    named = next((a for a in args if a.type in ("string_literal", "concatenated_string")),
                 args[0] if args else None)
    return Site(entry=entry, path=src.rel, line=line, col=chunk.col_of(name),
                end_col=chunk.end_col_of(name), flags=flags, max_active=max_active,
                prefix=prefix, via=via, suppressed=suppressed(src, line),
                flags_arg=args_at[0], max_active_arg=args_at[1],
                function=scope.name if scope.kind == "function" else "",
                queue=" ".join(parser.text(named).split()) if named is not None else "",
                end_line=line + call.end_point[0] - name.start_point[0],
                arg_texts=tuple(" ".join(parser.text(a).split()) for a in args), name=name_args)


def _bind_name(name, bind, scope: Scope, cargs, cscope: Scope) -> Optional[NameArgs]:
    """The name at a caller of the wrapper scope: its parameters bound to the caller's
    arguments, and the variable arguments it spreads taken from the call."""
    if name is None:
        return None
    values = [substitute(v, bind) for v in name.args]
    rest = name.rest
    if rest is not None and rest.function == scope.name:
        cspread = _variadic_forward(cargs, cscope, cscope.chunk)
        first, rest = rest, None
        for k in range(first.index, len(cargs)):
            if cspread is not None and k >= cspread:
                rest = Param(first.step, cscope.name, len(cscope.params) - 1 + (k - cspread),
                             cscope.params[-1])
                break
            values.append(bind(Param(first.step, scope.name, k, f"{first.name}[{k - first.index}]")))
    return NameArgs(substitute(name.fmt, bind), tuple(values), rest, name.step)


def _is_declaration(chunk, sink, line) -> bool:
    text = chunk.source.line_text(line)
    # A prototype or a definition: its first parameter starts with a type.
    return bool(re.search(r"^\s*(extern\s+)?(struct\s+workqueue_struct\s*\*\s*)?" + sink
                          + r"\s*\(\s*(const|struct|unsigned|int|char|void)\b", text)
                or re.search(r"\*\s*" + sink + r"\s*\(", text) and "const char" in text)


def _forwards(cargs, cscope: Scope, mine) -> bool:
    """Does a call outside the targets pass its own parameters on (a wrapper of a wrapper)?"""
    names = set(cscope.params)
    for p in mine:
        if p.index < len(cargs):
            idents = set(re.findall(r"[A-Za-z_]\w*", parser.text(cargs[p.index])))
            if idents & names:
                return True
    return False


_DEFINE_AT = re.compile(rb"#\s*define\s+([A-Za-z_]\w*)")
_CALL_AT = re.compile(rb"(?<!\w)([A-Za-z_]\w*)\s*\(")
_STOP = re.compile(rb"[;{}=#]")


def _last_header(text: bytes) -> bytes:
    r"""The name in the last match of (?m)^(?:#\s*define\s+(NAME)|[A-Za-z_][^;{}=#]*?\b(NAME)\s*\()
    in text, b'' for none, found in time linear in text: that pattern itself, tried from each
    line start, reads on to the next ;{}=# from each (quadratic in lines that have none). A
    line that starts a word matches up to the first `word(` after it before a ;{}=#."""
    calls = [(m.start(), m.end(), m.group(1)) for m in _CALL_AT.finditer(text)]
    starts = [c[0] for c in calls]
    stops = [m.start() for m in _STOP.finditer(text)]
    name, pos, size = b"", 0, len(text)
    while pos < size:
        line = pos if pos == 0 or text[pos - 1] == 10 else text.find(b"\n", pos) + 1
        if line == 0 < pos or line >= size:
            break
        first = text[line:line + 1]
        pos = line + 1
        if first == b"#":
            m = _DEFINE_AT.match(text, line)
            if m:
                name, pos = m.group(1), m.end()
        elif first.isalpha() or first == b"_":
            k, j = bisect.bisect_right(starts, line), bisect.bisect_right(stops, line)
            if k < len(calls) and calls[k][0] < (stops[j] if j < len(stops) else size):
                name, pos = calls[k][2], calls[k][1]
    return name


def _enclosing_name(path: Path, line_text: bytes) -> str:
    """The function or macro a line sits in, by a cheap look at the text before it (the last
    column-0 header after the last column-0 '}'); '' when unsure. Only used to skip work."""
    try:
        data = safeio.read_bytes(path, MAX_FILE_BYTES)
    except safeio.InputRefused:
        return ""
    return _enclosing_in(data, line_text)


def _enclosing_in(data: bytes, line_text: bytes) -> str:
    """_enclosing_name() of a file's bytes."""
    at = data.find(line_text) if line_text else -1
    if at < 0:
        return ""
    start = data.rfind(b"\n}", 0, at) + 1
    return _last_header(data[start:at]).decode("ascii", "replace")


def _arg_text(args, i, spread) -> str:
    if spread is not None and i >= spread:
        name = parser.text(args[spread])
        return f"{'__VA_ARGS__' if name == '__va' else name}[{i - spread}]"
    return _short(parser.text(args[i]), 50)


def _variadic_forward(args, scope: Scope, chunk):
    """Where a variadic macro spreads its variable arguments into this call (the position of
    `__VA_ARGS__` or `args` of `args...` when it is the call's last argument), else None."""
    if scope.kind != "macro" or not getattr(chunk, "macro_variadic", False) or not scope.params:
        return None
    if args and args[-1].type == "identifier" and parser.text(args[-1]) == scope.params[-1]:
        return len(args) - 1
    return None


def _name_params(name) -> list:
    """The parameters of wrappers a queue's name still depends on."""
    if name is None:
        return []
    out = params(name.fmt) + [p for v in name.args for p in params(v)]
    return out + ([name.rest] if name.rest is not None else [])


def _forwarded_index(flags, function: str) -> int:
    """The parameter of function that flows into flags (OR-ed in or passed as is), or -1."""
    found = {p.index for p in params(flags) if p.function == function}
    return found.pop() if len(found) == 1 else -1


def _direct_param_index(value, function: str) -> int:
    """The parameter of function that value is, unchanged, or -1."""
    while isinstance(value, Alt) and len(value.options) == 1:
        value = value.options[0]
    return value.index if isinstance(value, Param) and value.function == function else -1
