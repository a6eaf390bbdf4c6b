"""Where an expression sits: declarators, the Scope (function, macro body or file level) around
a node, the calls of a name in a chunk, and the Step that shows a line of a scope in a chain."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from tree_sitter import Node

from wqlint.finding import Origin, Step
from wqlint.scan import parser
from wqlint.scan.source import Chunk, SourceFile


def declarator_name(node) -> Optional[str]:
    """The identifier a (possibly nested) declarator declares."""
    while node is not None:
        if node.type in ("identifier", "field_identifier"):
            return parser.text(node)
        inner = node.child_by_field_name("declarator")
        if inner is None:
            for child in node.named_children:
                if child.type in ("identifier", "pointer_declarator", "array_declarator",
                                  "parenthesized_declarator", "function_declarator",
                                  "init_declarator", "attributed_declarator"):
                    inner = child
                    break
        node = inner
    return None


def function_declarator(fn_node):
    node = fn_node.child_by_field_name("declarator")
    while node is not None and node.type != "function_declarator":
        node = node.child_by_field_name("declarator")
    return node


@dataclass
class Scope:
    """Where an expression sits: a function, a macro body, or file level."""

    src: SourceFile
    chunk: Chunk
    node: Optional[Node] = None  # function_definition node, or the macro's synthetic function
    name: str = ""
    kind: str = "file"  # function | macro | file
    params: list = field(default_factory=list)
    static: bool = False
    _decls: Optional[dict] = None

    def param_index(self, name: str) -> int:
        try:
            return self.params.index(name)
        except ValueError:
            return -1

    def local_decls(self) -> dict:
        """name -> (declaration node, type text) of the locals of this function."""
        if self._decls is None:
            self._decls = {}
            if self.node is not None:
                body = self.node.child_by_field_name("body")
                if body is not None:
                    for _, caps in parser.matches("declarations", body):
                        decl = caps.get("declaration")
                        if decl is None:
                            continue
                        type_text = parser.text(caps.get("decl.type"))
                        for child in decl.children_by_field_name("declarator"):
                            name = declarator_name(child)
                            if name:
                                ptr = "*" if "pointer" in child.type or (
                                    child.type == "init_declarator"
                                    and "pointer" in (child.child_by_field_name("declarator").type)) else ""
                                self._decls.setdefault(name, (child, type_text + ptr))
        return self._decls

    def param_types(self) -> dict:
        out = {}
        if self.kind == "function" and self.node is not None:
            fdecl = function_declarator(self.node)
            plist = fdecl.child_by_field_name("parameters") if fdecl is not None else None
            for p in (plist.named_children if plist is not None else []):
                if p.type == "parameter_declaration":
                    name = declarator_name(p.child_by_field_name("declarator"))
                    if name:
                        out[name] = parser.text(p.child_by_field_name("type"))
        return out


def macro_param(p: str) -> str:
    """A macro parameter's name: `...` is __VA_ARGS__ (spelt __va in a parsed body), `args...`
    is args."""
    return "__va" if p == "..." else (p[:-3].strip() if p.endswith("...") else p)


def scope_of(chunk: Chunk, node) -> Scope:
    """The function (or macro) around node."""
    src = chunk.source
    cur = node
    while cur is not None and cur.type != "function_definition":
        cur = cur.parent
    if cur is None:
        return Scope(src, chunk)
    fdecl = function_declarator(cur)
    name = declarator_name(fdecl.child_by_field_name("declarator")) if fdecl is not None else ""
    params = []
    plist = fdecl.child_by_field_name("parameters") if fdecl is not None else None
    for p in (plist.named_children if plist is not None else []):
        if p.type in ("parameter_declaration", "variadic_parameter"):
            params.append(declarator_name(p.child_by_field_name("declarator")) or "")
        elif p.type == "identifier":  # macro parameters
            params.append(parser.text(p))
    head = parser.text(cur)[:200]
    kind = getattr(chunk, "macro_kind", None) or "function"
    return Scope(src, chunk, cur, name or "", kind, params, static=bool(re.match(r"\s*static\b", head)))


def step_of(scope: Scope, node, note: str, origin: Optional[Origin] = None) -> Step:
    """The Step of node's line in scope, with note."""
    return step_at(scope.src, scope.chunk.line_of(node), note, origin)


def step_at(src: SourceFile, line: int, note: str, origin: Optional[Origin] = None) -> Step:
    return Step(src.rel, line, src.line_text(line).strip(), note, origin=origin)


def calls_named(chunk: Chunk, name: str, line: Optional[int] = None) -> list:
    out = []
    for _, caps in parser.matches("calls", chunk.root):
        if parser.text(caps["call.name"]) != name:
            continue
        if line is not None and chunk.line_of(caps["call.name"]) != line:
            continue
        out.append(caps["call"])
    return out


def only_in_comments(chunk: Chunk, name: str, line: int) -> bool:
    """Is every mention of name on line inside a comment or a string?"""
    src = chunk.source
    text = src.line_bytes(line)
    row = line - chunk.first_line
    for m in re.finditer(rb"\b" + re.escape(name.encode()) + rb"\b", text):
        node = chunk.root.descendant_for_point_range((row, m.start()), (row, m.end()))
        while node is not None and node.type not in ("comment", "string_literal", "system_lib_string",
                                                      "char_literal"):
            node = node.parent
        if node is None:
            return False
    return True
