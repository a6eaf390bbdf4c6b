"""Macros: the #define of a name nearest the use, a #define parsed as a function whose body is
its replacement text (rows and columns kept), and a function-like macro used in an
expression resolved with its arguments bound."""
from __future__ import annotations

import re
from typing import Iterator, Optional

from wqlint.finding import Origin, Via
from wqlint.scan import parser
from wqlint.scan.asking import Asking
from wqlint.scan.ctext import define_re, short
from wqlint.scan.index import TreeIndex
from wqlint.scan.nearness import nearest
from wqlint.scan.scope import Scope, macro_param, scope_of, step_at
from wqlint.scan.source import Chunk, SourceFile
from wqlint.scan.values import Alt, Param, Value, substitute


class Macros:
    """The macros of the tree, for one Resolver; caches the parsed bodies."""

    def __init__(self, index: TreeIndex, ask: Asking):
        self.index = index
        self.ask = ask
        self._macro_chunks: dict = {}

    def definitions(self, name: str, near: SourceFile) -> list:
        """[(SourceFile, first_line, last_line)] of '#define name', nearest first."""
        local = [(near, ln) for ln in near.word_lines(name)]
        defs = self._defines(name, local)
        if defs:
            return defs
        occ = self.index.occurrences(name, defs=True, near=near.rel)
        if occ is None:
            return []
        pat = define_re(name)
        cands = []
        for rel, line in occ:
            if pat.match(self.index.peek(rel, line)):
                src = self.index.source(rel)
                if src is not None:
                    cands.append((src, line))
        defs = self._defines(name, cands)
        return nearest(defs, near.rel)

    def _defines(self, name, cands) -> list:
        pat = define_re(name)
        out = []
        for src, line in cands:
            if pat.match(src.line_bytes(line)):
                span = src.define_span(line)
                if span:
                    out.append((src, span[0], span[1]))
        return out

    def chunk(self, src: SourceFile, first: int, last: int):
        """A #define parsed as a function whose body is the macro's replacement text.

        The '#define NAME(params)' head becomes 'void NAME(params){' padded to the same width and
        every continuation backslash a blank, so rows and columns still match the file.
        """
        key = (src.rel, first)
        got = self._macro_chunks.get(key)
        if got is not None:
            return got
        raw = src.slice(first, last).decode("utf-8", "replace")
        m = re.match(r"(\s*#\s*define\s+)([A-Za-z_]\w*)(\(([^)]*)\))?", raw)
        if not m:
            return None
        name, params = m.group(2), m.group(4)
        plist = [p.strip() for p in params.split(",")] if params is not None else None
        names = [macro_param(p) for p in (plist or []) if p]
        cparams = ", ".join("long " + p for p in names) or "void"
        head = f"void {name}({cparams}){{"
        body = raw[m.end():]
        body = re.sub(r"\\\n", " \n", body).replace("##", "  ").replace("__VA_ARGS__", "__va       ")
        width = m.end()
        if len(head) < width:
            head = head + " " * (width - len(head))
        synthetic = (head + body.rstrip("\n") + "\n;}\n").encode()
        chunk = Chunk(src, first, last)
        chunk.tree = parser.parse(synthetic)
        chunk.macro_kind = "macro"
        chunk.macro_params = [macro_param(p) for p in (plist or [])]
        chunk.macro_is_function = plist is not None
        chunk.macro_variadic = plist is not None and len(plist) > 0 and plist[-1].endswith("...")
        self._macro_chunks[key] = chunk
        return chunk

    def body_scope(self, chunk) -> Optional[Scope]:
        for _, caps in parser.matches("functions", chunk.root):
            return scope_of(chunk, caps["fn"].child_by_field_name("body"))
        return None

    def value_node(self, chunk):
        """The replacement text of an object-like or function-like macro as one expression."""
        scope = self.body_scope(chunk)
        if scope is None:
            return None, None
        body = scope.node.child_by_field_name("body")
        stmts = [c for c in body.named_children if c.type != "comment"]
        if stmts and stmts[0].type == "expression_statement" and stmts[0].named_children:
            return stmts[0].named_children[0], scope
        return None, scope

    def accessor_values(self, name: str, src) -> Iterator[tuple]:
        """(value node without its parentheses, its Scope) of the function-like macro name,
        for the first two of its definitions seen from src: what an accessor macro
        (`#define HFS_SB(sb) ((struct hfs_sb_info *)(sb)->s_fs_info)`) stands for."""
        for msrc, first, last in self.definitions(name, src)[:2]:
            chunk = self.chunk(msrc, first, last)
            if chunk is None or not chunk.macro_is_function:
                continue
            expr, mscope = self.value_node(chunk)
            expr = parser.inner(expr, ("parenthesized_expression",))
            if expr is not None:
                yield expr, mscope

    def call(self, name, args, scope, depth, seen, expand_params) -> Optional[Value]:
        """A function-like macro used in an expression: its body with arguments bound."""
        for src, first, last in self.definitions(name, scope.src)[:4]:
            chunk = self.chunk(src, first, last)
            if chunk is None or not chunk.macro_is_function:
                continue
            expr, mscope = self.value_node(chunk)
            if expr is None:
                continue
            inner = self.ask.resolve(expr, mscope, depth, seen, expand_params=False)
            bound = [self.ask.resolve(a, scope, depth, seen, expand_params) for a in args]

            def bind(p: Param, bound=bound) -> Value:
                if p.function == name and 0 <= p.index < len(bound):
                    return bound[p.index]
                return p
            step = step_at(src, first, f"macro {name}() expands to '{short(parser.text(expr))}'",
                           Origin(Via.MACRO, name))
            return Alt(step, (substitute(inner, bind),), "")
        return None
