"""Struct types: the struct (or typedef) an expression's object is, the member types of a
struct definition found nearest in the tree, and whether two type names are one type. What
needs a definition not yet looked up in the index is PENDING (asked again next round)."""
from __future__ import annotations

import re
from typing import Optional

from wqlint.scan import parser
from wqlint.scan.ctext import split_args
from wqlint.scan.index import TreeIndex
from wqlint.scan.nearness import nearest
from wqlint.scan.scope import Scope, declarator_name
from wqlint.scan.source import SourceFile

PENDING = type("Pending", (), {"__repr__": lambda self: "PENDING"})()


def struct_type_name(type_text: str) -> Optional[str]:
    m = re.search(r"\b(struct|union)\s+([A-Za-z_]\w*)", type_text)
    if m:
        return m.group(2)
    words = re.findall(r"[A-Za-z_]\w*", type_text)
    words = [w for w in words if w not in ("const", "volatile", "static", "extern", "unsigned",
                                            "signed", "register", "inline")]
    return words[-1] if words else None


_FILE_TAGS: dict = {}  # (rel, name, hash of the file's bytes) -> file_struct_tag()
MAX_FILE_TAGS = 8192


def file_struct_tag(src: SourceFile, name: str) -> str:
    """The struct tag of the variable name as its file declares it at file scope
    (`static struct foo *p;`, `struct foo x = {...};`, or `static struct foo { ... } x;`);
    '' when the file declares no such variable or declares it with different structs (a
    branch of #if each)."""
    key = (src.rel, name, hash(src.data))
    got = _FILE_TAGS.get(key)
    if got is None:
        if len(_FILE_TAGS) >= MAX_FILE_TAGS:
            _FILE_TAGS.clear()
        got = _FILE_TAGS[key] = _file_struct_tag(src.data, name.encode())
    return got


# `static struct foo {` at column 0: the struct a `} x;` closing the definition declares x of
_OPENED_RE = re.compile(rb"(?m)^(?:static[ \t]+)?(?:const[ \t]+)?(?:struct|union)[ \t]+([A-Za-z_]\w*)[ \t]*\{")


def _file_struct_tag(data: bytes, name: bytes) -> str:
    if name not in data:
        return ""
    word = re.escape(name)
    tags = {m.group(1) for m in re.finditer(
        rb"(?m)^(?:static[ \t]+|extern[ \t]+)?(?:const[ \t]+)?(?:struct|union)[ \t]+([A-Za-z_]\w*)[ \t]+(?:\*[ \t]*)*"
        + word + rb"[ \t]*(?:\[[^\]\n]*\][ \t]*)?[;=,]", data)}
    for m in re.finditer(rb"(?m)^\}[ \t]*" + word + rb"[ \t]*(?:\[[^\]\n]*\][ \t]*)?[;=]", data):
        opened = list(_OPENED_RE.finditer(data, 0, m.start()))
        if opened:
            tags.add(opened[-1].group(1))
    return tags.pop().decode() if len(tags) == 1 else ""


class Structs:
    """Type lookups against a TreeIndex; caches the struct definitions found."""

    def __init__(self, index: TreeIndex):
        self.index = index
        self._struct_cache: dict = {}

    def type_of(self, obj, scope: Scope, depth: int = 0):
        """The struct (or typedef) name of the object of a field access, None when it cannot
        be told, PENDING while a struct definition it needs has not been looked up yet.

        Declared locals, parameters and globals of the file; '->' and '.' chains through the
        members of the struct definitions; subscripts, '*' and '&'; casts; container_of()."""
        if obj is None or depth > 8:
            return None
        t = obj.type
        if t == "identifier":
            name = parser.text(obj)
            decl = scope.local_decls().get(name)
            if decl:
                return struct_type_name(decl[1])
            ptypes = scope.param_types()
            if name in ptypes:
                return struct_type_name(ptypes[name])
            if scope.param_index(name) >= 0:
                return None  # a macro parameter: any type
            return self._global_type(name, scope.src)
        if t in ("parenthesized_expression", "pointer_expression", "subscript_expression"):
            inner = obj.child_by_field_name("argument") if t != "parenthesized_expression" else \
                next((c for c in obj.named_children if c.type != "comment"), None)
            return self.type_of(inner, scope, depth + 1)
        if t == "cast_expression":
            return struct_type_name(parser.text(obj.child_by_field_name("type")))
        if t == "field_expression":
            outer = self.type_of(obj.child_by_field_name("argument"), scope, depth + 1)
            if outer is None or outer is PENDING:
                return outer
            return self.member_type(outer, parser.text(obj.child_by_field_name("field")), scope.src)
        if t == "call_expression":
            fn = parser.text(obj.child_by_field_name("function"))
            # container_of(ptr, type, member): a type is no expression, so read the text.
            args = split_args(parser.text(obj.child_by_field_name("arguments"))[1:-1])
            if fn.startswith("container_of") and len(args) == 3:
                return struct_type_name(args[1])
        return None

    def _global_type(self, name: str, src: SourceFile) -> Optional[str]:
        """The type of a variable declared at file level in src."""
        for line in src.word_lines(name):
            text = src.line_bytes(line)
            if text[:1] in (b" ", b"\t") or b"(" in text.split(name.encode())[0]:
                continue
            chunk = src.chunk_at(line)
            for _, caps in parser.matches("declarations", chunk.root):
                decl = caps.get("declaration")
                if decl is None or decl.parent is None or decl.parent.type != "translation_unit":
                    continue
                for child in decl.children_by_field_name("declarator"):
                    if declarator_name(child) == name:
                        return struct_type_name(parser.text(caps.get("decl.type")))
        return None

    def struct_body(self, tag: str, near: SourceFile):
        """The field_declaration_list of 'struct tag { ... }' (or of a typedef named tag), the
        definition nearest to near; None when there is none, PENDING until looked up."""
        key = ("struct", tag, near.rel)
        if key in self._struct_cache:
            return self._struct_cache[key]
        cands = [(near, ln) for ln in near.word_lines(tag)]
        found = self._struct_in(tag, cands)
        if found is None:
            occ = self.index.occurrences(tag, defs=True, near=near.rel)
            if occ is None:
                return PENDING
            pat = re.compile(rb"^\s*(typedef\s+)?(struct|union)\s+" + re.escape(tag.encode()) + rb"\b|^\s*\}\s*"
                             + re.escape(tag.encode()) + rb"\s*;")
            more = []
            for rel, line in occ:
                if rel != near.rel and pat.search(self.index.peek(rel, line)):
                    src = self.index.source(rel)
                    if src is not None:
                        more.append((src, line))
            ranked = nearest([(src, line) for src, line in more], near.rel)
            found = self._struct_in(tag, ranked)
        self._struct_cache[key] = found
        return found

    def _struct_in(self, tag: str, cands):
        walked = set()
        for src, line in cands:
            chunk = src.chunk_at(line)
            if id(chunk) in walked:
                continue  # several lines of one chunk name the tag: its nodes were seen
            walked.add(id(chunk))
            for node in parser.descendants(chunk.root):
                if node.type not in ("struct_specifier", "union_specifier"):
                    continue
                body = node.child_by_field_name("body")
                if body is None:
                    continue
                name = node.child_by_field_name("name")
                if name is not None and parser.text(name) == tag:
                    return body
                parent = node.parent
                if name is None and parent is not None and parent.type == "type_definition" and any(
                        declarator_name(d) == tag for d in parent.children_by_field_name("declarator")):
                    return body
        return None

    def member_type(self, tag: str, member: str, near: SourceFile):
        """The struct name of member of struct tag; None when not a struct or not found."""
        body = self.struct_body(tag, near)
        if body is None or body is PENDING:
            return body
        found = _member_decl(body, member)
        return struct_type_name(found) if found is not None else None

    def same_type(self, a: str, b: str, near: SourceFile):
        """Are two struct or typedef names the same type? PENDING while unknown."""
        if a == b:
            return True
        ca, cb = self._canonical(a, near), self._canonical(b, near)
        if ca is PENDING or cb is PENDING:
            return PENDING
        return ca == cb

    def _canonical(self, name: str, near: SourceFile):
        """A typedef name as the tag of the struct it names ('typedef struct foo foo_t')."""
        body = self.struct_body(name, near)
        if body is None or body is PENDING:
            return name if body is None else PENDING
        tag = body.parent.child_by_field_name("name")
        return parser.text(tag) if tag is not None else name

    def initializer_type(self, pair, scope: Scope, depth: int = 0):
        """The struct type an initializer_pair '.field = value' initialises a field of."""
        return self._list_type(pair.parent, scope, depth)

    def _list_type(self, lst, scope: Scope, depth: int):
        if lst is None or depth > 8:
            return None
        parent = lst.parent
        if parent is None:
            return None
        if parent.type == "init_declarator":
            decl = parent.parent
            t = decl.child_by_field_name("type") if decl is not None else None
            return struct_type_name(parser.text(t)) if t is not None else None
        if parent.type == "compound_literal_expression":
            return struct_type_name(parser.text(parent.child_by_field_name("type")))
        if parent.type == "initializer_list":  # an element of an array of structs
            return self._list_type(parent, scope, depth + 1)
        if parent.type == "initializer_pair":
            outer = self._list_type(parent.parent, scope, depth + 1)
            designator = parent.child_by_field_name("designator")
            if outer is None or outer is PENDING or designator is None:
                return outer
            if designator.type != "field_designator":
                return outer  # [i] = { ... }: an element
            field = next((c for c in designator.named_children if c.type == "field_identifier"), None)
            return self.member_type(outer, parser.text(field), scope.src) if field is not None else None
        return None




def _member_decl(body, member: str) -> Optional[str]:
    """The type text of member in a struct body (through anonymous structs and #ifdefs)."""
    for child in body.named_children:
        if child.type == "field_declaration":
            decls = child.children_by_field_name("declarator")
            typ = child.child_by_field_name("type")
            for d in decls:
                if declarator_name(d) == member:
                    return parser.text(typ)
            if not decls and typ is not None and typ.type in ("struct_specifier", "union_specifier") \
                    and typ.child_by_field_name("body") is not None and typ.child_by_field_name("name") is None:
                found = _member_decl(typ.child_by_field_name("body"), member)
                if found is not None:
                    return found
        elif child.type.startswith("preproc_"):
            found = _member_decl(child, member)
            if found is not None:
                return found
    return None
