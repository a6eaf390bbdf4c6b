"""Globals, enumerators and object-like macros: the definition of a name nearest its use (the
file's, then the tree's), the #if branches compiled for the target kernel, assignments to a
global, and module parameters (a default that can change at load time)."""
from __future__ import annotations

import re
from typing import Optional

from wqlint.finding import Origin, Via
from wqlint.scan import parser
from wqlint.scan.asking import Asking
from wqlint.scan.ctext import define_re, define_value, is_static_decl, short
from wqlint.scan.index import TreeIndex
from wqlint.scan.macros import Macros
from wqlint.scan.nearness import nearest, ranked
from wqlint.scan.scope import Scope, declarator_name, scope_of, step_at
from wqlint.scan.values import MAX_OPTIONS, Alt, Const, Op, Tunable, Unknown, Value, has_pending


class Symbols:
    """Names defined outside functions, for one Resolver; caches the values found."""

    def __init__(self, index: TreeIndex, ask: Asking, macros: Macros):
        self.index = index
        self.ask = ask
        self.macros = macros
        self._symbol_cache: dict = {}
        self.conditional_steps: set = set()  # steps of definitions chosen by a decided #if

    def forget_pending(self) -> None:
        """Forget the values found before a name they depend on had been looked up."""
        cache = self._symbol_cache
        for key in [k for k, v in cache.items() if has_pending(v)]:
            del cache[key]

    def symbol(self, name: str, scope: Scope, depth, seen) -> Value:
        key = ("sym", name)
        if key in seen:
            return Unknown(None, f"'{name}' depends on itself")
        local = scope.src.word_lines(name)
        ckey = (scope.src.rel if local else "", name)
        cached = self._symbol_cache.get(ckey)
        if cached is not None:
            return cached
        seen = seen | {key}
        value = self._symbol_in(name, scope.src, [(scope.src.rel, ln, scope.src.line_bytes(ln)) for ln in local],
                                depth, seen, scope)
        if value is None:
            occ = self.index.occurrences(name, defs=True, near=scope.src.rel)
            if occ is None:
                return Unknown(None, f"'{name}' not looked up yet", pending=True)
            cands = [(rel, line, self.index.peek(rel, line)) for rel, line in occ if rel != scope.src.rel]
            value = self._symbol_in(name, scope.src, cands, depth, seen, scope, tree_wide=True)
        if value is None:
            value = Unknown(None, f"'{name}' not defined in the tree")
        if not self.ask.naming:  # a name's reading of fields and counters is for names only
            self._symbol_cache[ckey] = value
        return value

    def _symbol_in(self, name, near, cands, depth, seen, use_scope, tree_wide=False) -> Optional[Value]:
        nb = re.escape(name.encode())
        define = define_re(name)
        enum_re = re.compile(rb"^\s*" + nb + rb"\s*(=|,|$|/\*)")
        assign_re = re.compile(rb"(?<![.>\w])" + nb + rb"\s*(?:(\[[^\]]*\])\s*)?(=(?!=)|\|=|\+=)")
        param_re = re.compile(rb"\bmodule_param(_named)?\s*\(\s*(" + nb + rb"\s*,|\w+\s*,\s*" + nb + rb"\s*,)")
        defines, enums, assigns, tunable = [], [], [], None
        for rel, line, text in cands:
            if not (define.match(text) or param_re.search(text) or enum_re.match(text)
                    or assign_re.search(text)):
                continue
            src = self.index.source(rel) if rel != near.rel else near
            if src is None:
                continue
            if define.match(text):
                defines.append((src, line))
            elif param_re.search(text):
                tunable = (src, line)
            elif enum_re.match(text) or assign_re.search(text):
                if enum_re.match(text):
                    enums.append((src, line))
                if assign_re.search(text):
                    assigns.append((src, line))
        # A line starting with the name may be an enumerator or just a continuation line of
        # an expression: try candidates nearest first until one parses as an enumerator.
        for src, line, _ in ranked([(s, ln, ln) for s, ln in enums], near.rel)[:64]:
            val = self._enumerator(name, src, line, depth, seen)
            if val is not None:
                return val
        if defines:
            spans, conds = self._compiled([(s, *s.define_span(ln)) for s, ln in defines])
            for src, first, last in nearest(spans, near.rel)[:1]:
                chunk = self.macros.chunk(src, first, last)
                if chunk is None or chunk.macro_is_function:
                    continue
                expr, mscope = self.macros.value_node(chunk)
                step = step_at(src, first, f"macro {name} = '{short(define_value(src, first, last))}'"
                               + conds.get((src.rel, first), ""), Origin(Via.MACRO, name))
                if (src.rel, first) in conds:
                    self.conditional_steps.add(step)
                if expr is None:
                    return Unknown(step, f"macro {name} is not an expression")
                val = self.ask.resolve(expr, mscope, depth, seen)
                return Alt(step, (val,), "")
        if not assigns:
            return None
        options = []
        for src, line in assigns:
            if tree_wide and is_static_decl(src, line, name):
                continue
            for _node, rhs, where in self._global_defs(name, src, line):
                val = self.ask.resolve(rhs, where, depth, seen, expand_params=True)
                options.append(Alt(step_at(src, line, f"'{name}' = '{short(parser.text(rhs))}'",
                                           Origin(Via.GLOBAL, name)),
                                   (val,), ""))
        if not options:
            return None
        value = options[0] if len(options) == 1 else \
            Alt(None, tuple(options[:MAX_OPTIONS]), f"{len(options)} assignments to '{name}'")
        if tunable:
            src, line = tunable
            return Tunable(step_at(src, line, f"'{name}' is a module parameter: the default can be "
                                   "changed at load time"),
                           value, f"module parameter '{name}'")
        return value

    def _compiled(self, spans) -> tuple:
        """(the definitions among spans [(src, first, last)] that are compiled for the target
        kernel, {(rel, first): ' (under ...)'} naming the conditions decided for it)."""
        cpp = self.ask.cpp
        if cpp is None:
            return spans, {}
        kept, notes = [], {}
        for span in spans:
            dead, conds = cpp.state(span[0], span[1])
            if dead:
                continue
            kept.append(span)
            said = [note for _, note in cpp.notes(conds)]
            if said:
                notes[(span[0].rel, span[1])] = " (" + "; ".join(said) + ")"
        return kept, notes

    def _enumerator(self, name, src, line, depth, seen) -> Optional[Value]:
        chunk = src.chunk_at(line)
        for _, caps in parser.matches("defines", chunk.root):
            if "enum" not in caps or parser.text(caps["enum.name"]) != name:
                continue
            enum = caps["enum"]
            if chunk.line_of(enum) != line:
                continue
            val_node = caps.get("enum.value")
            step = step_at(src, line, f"enumerator {name}", Origin(Via.ENUMERATOR, name))
            if val_node is not None:
                return Alt(step, (self.ask.resolve(val_node, Scope(src, chunk), depth, seen),), "")
            prev = enum.prev_named_sibling
            while prev is not None and prev.type != "enumerator":
                prev = prev.prev_named_sibling
            if prev is None:
                return Alt(step, (Const(None, 0),), "")
            pname = parser.text(prev.child_by_field_name("name"))
            return Alt(step, (Op(None, "+", (self._enumerator(pname, src, chunk.line_of(prev), depth + 1, seen)
                                             or Unknown(None, pname), Const(None, 1))),), "")
        return None

    def _global_defs(self, name, src, line):
        chunk = src.chunk_at(line)
        for _, caps in parser.matches("assignments", chunk.root):
            if "assign" in caps:
                left = caps["assign.left"]
                if left.type == "identifier" and parser.text(left) == name and chunk.line_of(left) == line:
                    yield caps["assign"], caps["assign.right"], scope_of(chunk, left)
            elif "decl" in caps:
                d = caps["decl.declarator"]
                if declarator_name(d) == name and chunk.line_of(d) == line:
                    sc = scope_of(chunk, d)
                    if sc.kind == "file":
                        yield caps["decl"], caps["decl.value"], sc
