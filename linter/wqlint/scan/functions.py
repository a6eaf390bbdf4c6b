"""Functions: a call resolved to what the function returns (arguments bound to its parameters),
the CPU counts and min/max/clamp the kernel defines, where a function is defined, its call
sites, and a parameter resolved to the arguments of every caller in the subsystem."""
from __future__ import annotations

import re
from typing import Optional

from wqlint import api
from wqlint.finding import Origin, Via
from wqlint.scan import parser
from wqlint.scan.asking import Asking
from wqlint.scan.ctext import short
from wqlint.scan.index import TreeIndex
from wqlint.scan.macros import Macros
from wqlint.scan.nearness import related, subsystem_occurrences
from wqlint.scan.scope import Scope, calls_named, declarator_name, function_declarator, scope_of, step_of
from wqlint.scan.source import SourceFile
from wqlint.scan.values import (
    MAX_OPTIONS, Alt, Const, CpuCount, Op, Param, Unknown, Value, cpu_path, substitute,
)

CPU_COUNT_CALLS = frozenset(api.CPU_COUNT_CALLS)
CPU_MASK_COUNT = frozenset(api.CPU_MASK_COUNT)
MINMAX = {
    "min": ("min", 0), "max": ("max", 0), "min_t": ("min", 1), "max_t": ("max", 1),
    "umin": ("min", 0), "umax": ("max", 0), "min3": ("min", 0), "max3": ("max", 0),
    "min_not_zero": ("min", 0), "clamp": ("clamp", 0), "clamp_t": ("clamp", 1),
    "clamp_val": ("clamp", 0),
}


class Functions:
    """Calls, definitions and callers of functions, for one Resolver."""

    def __init__(self, index: TreeIndex, ask: Asking, macros: Macros):
        self.index = index
        self.ask = ask
        self.macros = macros

    def call(self, node, scope, depth, seen, expand_params) -> Value:
        fn = node.child_by_field_name("function")
        args = [a for a in node.child_by_field_name("arguments").named_children if a.type != "comment"]
        name = parser.text(fn) if fn is not None and fn.type == "identifier" else ""
        r = lambda n: self.ask.resolve(n, scope, depth + 1, seen, expand_params)
        if name in CPU_COUNT_CALLS:
            return CpuCount(step_of(scope, node, f"CPU count {name}()"), f"{name}()")
        if name in CPU_MASK_COUNT and args:
            mask = parser.text(args[0])
            return CpuCount(step_of(scope, node, f"CPU count {name}({mask})"), f"{name}({mask})")
        if name in MINMAX:
            op, typed = MINMAX[name]
            # min_t(type, a, b): the type is not an expression and may parse as several
            # nodes (unsigned long), so take the value arguments from the end.
            want = (3 if op == "clamp" else 2) if typed else len(args)
            vals = tuple(r(a) for a in args[len(args) - want:])
            if op == "clamp" and len(vals) != 3:
                return Unknown(None, f"{name} with {len(vals)} arguments")
            if op in ("min", "max") and len(vals) > 2:
                acc = vals[0]
                for v in vals[1:]:
                    acc = Op(None, op, (acc, v))
                return acc
            return Op(None, op, vals)
        if name == "DIV_ROUND_UP" and len(args) == 2:
            a, b = r(args[0]), r(args[1])
            return Op(None, "/", (Op(None, "-", (Op(None, "+", (a, b)), Const(None, 1))), b))
        if not name:
            return Unknown(None, f"call through '{short(parser.text(fn))}'")
        key = ("fn", name)
        if key in seen:
            return Unknown(None, f"recursion through {name}()")
        # A helper of the subsystem may compute the limit (foo_nr_workers()); a library
        # function only matters when it transforms a CPU count passed to it. Following every
        # readl() or kzalloc() back into the core kernel would cost much and find nothing.
        if not self.defined_nearby(name, scope.src):
            bound = [r(a) for a in args]
            if not any(cpu_path(b) for b in bound):
                return Unknown(None, f"call to {name}()")
        ret = self.function_returns(name, scope, depth + 1, seen | {key})
        if ret is None:
            macro = self.macros.call(name, args, scope, depth + 1, seen | {key}, expand_params)
            if macro is not None:
                return macro
            return Unknown(None, f"call to {name}()")
        ret_value, fscope = ret
        bound = [r(a) for a in args]

        def bind(p: Param) -> Value:
            if p.function == name and 0 <= p.index < len(bound):
                return Alt(step_of(scope, node, f"{fscope.params[p.index]} <- argument "
                                   f"{p.index + 1} '{short(parser.text(args[p.index]))}' of {name}()",
                                   Origin(Via.ARGUMENT, fscope.params[p.index])),
                           (bound[p.index],), "")
            return p
        return Alt(step_of(scope, node, f"return value of {name}()"), (substitute(ret_value, bind),), "")

    def defined_nearby(self, name: str, src: SourceFile) -> bool:
        """Is name defined (function or macro) in src or in the allocation's subsystem?"""
        pat = re.compile(rb"^\s*#\s*define\s+" + re.escape(name.encode()) + rb"\b|^[A-Za-z_].*\b"
                         + re.escape(name.encode()) + rb"\s*\(")
        if any(pat.search(src.line_bytes(ln)) for ln in src.word_lines(name)):
            return True
        return any(pat.search(self.index.peek(rel, ln))
                   for rel, ln in subsystem_occurrences(self.index, self.ask.home, name, src.rel))

    def function_returns(self, name, scope, depth, seen):
        """(Alt of the return values of function name, its Scope), or None if not found."""
        for fscope in self.function_scopes(name, scope.src):
            rets = []
            for _, caps in parser.matches("returns", fscope.node):
                val = caps.get("return.value")
                inner = self.ask.resolve(val, fscope, depth, seen, expand_params=False)
                rets.append(Alt(step_of(fscope, val, f"{name}() returns '{short(parser.text(val))}'"),
                                (inner,), ""))
            if rets:
                return Alt(None, tuple(rets[:MAX_OPTIONS]), "returns"), fscope
        return None

    def function_scopes(self, name: str, near: SourceFile) -> list:
        """Definitions of function name: in near's file if there, else in the tree."""
        found = self._definitions_in(name, near, [(near.rel, ln) for ln in near.word_lines(name)])
        if found:
            return found
        occ = self.index.occurrences(name, defs=True, near=near.rel)
        if occ is None:
            return []
        lines = [(rel, ln) for rel, ln in occ if rel != near.rel]
        return self._definitions_in(name, near, lines)

    def _definitions_in(self, name, near, occs) -> list:
        out = []
        for rel, line in occs[:400]:
            text = near.line_bytes(line) if rel == near.rel else self.index.peek(rel, line)
            if (name.encode() + b"(") not in text.replace(b" (", b"("):
                continue
            if text[:1] in (b" ", b"\t") and not text.lstrip().startswith(name.encode()):
                continue  # a call inside a body, not a definition header
            src = near if rel == near.rel else self.index.source(rel)
            if src is None:
                continue
            chunk = src.chunk_at(line)
            for _, caps in parser.matches("functions", chunk.root):
                fn = caps["fn"]
                fdecl = function_declarator(fn)
                if fdecl is None:
                    continue
                if declarator_name(fdecl.child_by_field_name("declarator")) == name:
                    out.append(scope_of(chunk, fn.child_by_field_name("body")))
            if out:
                break
        return out

    def expand_param(self, param: Param, scope: Scope, depth, seen) -> Value:
        """A parameter of a function that is not the allocation's own: every caller's argument."""
        key = ("param", scope.src.rel, param.function, param.index)
        if key in seen:
            return Unknown(param.step, f"parameter '{param.name}' depends on itself")
        seen = seen | {key}
        options = []
        for call, cscope in self.call_sites(param.function, scope.src, scope.static, subsystem=True):
            args = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
            if param.index >= len(args):
                continue
            if not (related(cscope.src.rel, self.ask.home) or related(cscope.src.rel, scope.src.rel)):
                continue  # a caller in an unrelated subsystem of a shared helper
            arg = args[param.index]
            val = self.ask.resolve(arg, cscope, depth + 1, seen, expand_params=True)
            options.append(Alt(step_of(cscope, call, f"{param.function}() called with "
                                       f"'{param.name}' = '{short(parser.text(arg))}'"),
                               (val,), ""))
            if len(options) >= MAX_OPTIONS:
                break
        if not options:
            return Unknown(param.step, f"no caller of {param.function}() found")
        return Alt(param.step, tuple(options), f"{len(options)} callers of {param.function}()")

    def call_sites(self, name: str, near: SourceFile, static: bool, subsystem: bool = False,
                   keep=None) -> list:
        """[(call node, Scope)] of calls to name: in near's file when static, else in the tree."""
        occs: Optional[list]
        if static:
            occs = [(near.rel, ln) for ln in near.word_lines(name)]
        elif subsystem:
            occs = subsystem_occurrences(self.index, self.ask.home, name, near.rel)
        else:
            occs = self.index.occurrences(name)
            if occs is None:
                return []
        out = []
        done = set()
        call_pat = re.compile(rb"\b" + re.escape(name.encode()) + rb"\s*\(")
        for rel, line in occs:
            text = near.line_bytes(line) if rel == near.rel else self.index.peek(rel, line)
            if not call_pat.search(text) or (keep is not None and not keep(rel, text)):
                continue
            src = near if rel == near.rel else self.index.source(rel)
            if src is None:
                continue
            if src.define_span(line):
                chunk = self.macros.chunk(src, *src.define_span(line))
                if chunk is None:
                    continue
            else:
                chunk = src.chunk_at(line)
            for call in calls_named(chunk, name, line):
                if (rel, call.start_byte, chunk.first_line) in done:
                    continue
                done.add((rel, call.start_byte, chunk.first_line))
                out.append((call, scope_of(chunk, call)))
        return out
