"""The calls through a member in a function's text (`file->f_op->fsync(...)`), and the struct
type a declaration gives a name, for scan.calls to tell the table a call is made through."""
from __future__ import annotations

import re
from typing import Optional

from wqlint.scan import parser

WORD_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"  # what a C name is made of


def calls_of(body: bytes) -> tuple:
    """({names called}, {members called through}, {(member, holder, base)}) of a function's
    text, in one pass over it: the word before each '(' (`name(`, `(name)(`), a member's when
    `->` or `.` comes before it, and for a member the name it is called through:
    `holder->member(` (base b''), `base->holder->member(` or `base.holder.member(` (base b'?'
    when not a name), as scan.calls reads them. By the ends of the text between parentheses,
    at C speed: a regex over every word took most of the look."""
    names, members, through = set(), set(), set()
    for piece in body.split(b"(")[:-1]:
        text = piece.rstrip()
        if text.endswith(b")"):
            text = text[:-1].rstrip()
        rest = text.rstrip(WORD_BYTES)
        name = text[len(rest):]
        if not name or name[:1].isdigit():
            continue
        names.add(name)
        rest = rest.rstrip()
        op = 2 if rest.endswith(b"->") else 1 if rest.endswith(b".") else 0
        if not op:
            continue
        members.add(name)
        rest = rest[:-op].rstrip()
        before = rest.rstrip(WORD_BYTES)
        holder = rest[len(before):]
        if not holder:
            continue
        before = before.rstrip()
        op = 2 if before.endswith(b"->") else 1 if before.endswith(b".") else 0
        base = b""
        if op:
            left = before[:-op].rstrip()
            base = left[len(left.rstrip(WORD_BYTES)):] or b"?"
        through.add((name, holder, base))
    return names, members, through


def holder_of(node) -> tuple:
    """(holder, base) of the expression a member is called through, as through() gives them."""
    if node is None:
        return b"", b""
    if node.type == "identifier":
        return parser.text(node).encode(), b""
    if node.type == "field_expression":
        field, arg = node.child_by_field_name("field"), node.child_by_field_name("argument")
        base = parser.text(arg).encode() if arg is not None and arg.type == "identifier" else b"?"
        return (parser.text(field).encode() if field is not None else b""), base
    return b"", b""


_DECLARED: dict = {}


def declared_type(decls: bytes, name: bytes) -> Optional[str]:
    """The struct type the last declaration of name in decls gives it (`struct T *name`,
    `const struct T name`), or None."""
    if name == b"?":
        return None
    rx = _DECLARED.get(name)
    if rx is None:
        if len(_DECLARED) > 4096:
            _DECLARED.clear()
        rx = _DECLARED[name] = re.compile(rb"\bstruct[ \t\n]+([A-Za-z_]\w*)(?:[ \t\n]*\*[ \t\n]*|[ \t\n]+)"
                                          rb"(?:const[ \t\n]+)?" + re.escape(name) + rb"\b")
    found = None
    for m in rx.finditer(decls):
        found = m.group(1).decode()
    return found
