"""The struct an object of the work model's keys is of (scan.work's Key tags), and the
arguments of a call read from its text."""
from __future__ import annotations

from typing import Callable, Optional

from wqlint.scan import parser
from wqlint.scan.scope import Scope
from wqlint.scan.structs import file_struct_tag, struct_type_name


def declared_tag(obj, scope: Scope, pointee: Optional[Callable] = None) -> str:
    """The struct tag of an object as its own declaration says (a local, a parameter, a
    variable of its file, a cast, container_of()), or, for a member of another object, the
    one struct pointee(name) says a member of that name points to (the tree's headers:
    scan.description); '' when it takes a lookup elsewhere."""
    obj = parser.inner(obj)
    if obj is None:
        return ""
    if obj.type == "identifier" and scope.kind == "function":
        name = parser.text(obj)
        decl = scope.local_decls().get(name)
        text = decl[1] if decl else scope.param_types().get(name, "")
        return struct_type_name(text) or "" if text else file_struct_tag(scope.src, name)
    if obj.type == "cast_expression":
        return struct_type_name(parser.text(obj.child_by_field_name("type"))) or ""
    if obj.type == "call_expression" and parser.text(obj.child_by_field_name("function")) == "container_of":
        args = split_call(parser.text(obj.child_by_field_name("arguments"))[1:] )
        return (struct_type_name(args[1]) or "") if args and len(args) == 3 else ""
    if obj.type == "field_expression" and pointee is not None:
        return pointee(parser.text(obj.child_by_field_name("field")))
    return ""


def split_call(text: str) -> Optional[list]:
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
