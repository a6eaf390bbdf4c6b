"""C text read without a parser: integer and string literals, the parts of an argument list,
the value a #define gives, and the short form of an expression shown in a chain."""
from __future__ import annotations

import re
from typing import Optional

from wqlint.scan.source import SourceFile

_INT_RE = re.compile(r"^(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)[uUlL]*$")


def parse_int(text: str) -> Optional[int]:
    m = _INT_RE.match(text.strip())
    if not m:
        return None
    digits = m.group(1)
    if digits.lower().startswith("0x"):
        return int(digits, 16)
    if digits.startswith("0") and len(digits) > 1:
        return int(digits, 8)
    return int(digits)


_ESCAPES = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11, "\\": 92, "'": 39, '"': 34,
            "?": 63, "e": 27}


def c_string(text: str) -> Optional[bytes]:
    """The bytes of a C string literal as written ("..." with escapes); None for a wide or
    other prefixed literal, or an escape wqlint does not know."""
    if len(text) < 2 or not text.startswith('"') or not text.endswith('"'):
        return None
    body, out, i = text[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode("utf-8")
            i += 1
            continue
        nxt = body[i + 1:i + 2]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt == "x":
            m = re.match(r"[0-9a-fA-F]+", body[i + 2:])
            if m is None:
                return None
            out.append(int(m.group(0), 16) & 0xFF)
            i += 2 + len(m.group(0))
        elif nxt.isdigit():
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            if m is None:
                return None
            out.append(int(m.group(0), 8) & 0xFF)
            i += 1 + len(m.group(0))
        else:
            return None
    return bytes(out)


def define_re(name: str) -> re.Pattern:
    """The pattern of a line (bytes) that starts '#define name'."""
    return re.compile(rb"^\s*#\s*define\s+" + re.escape(name.encode()) + rb"\b")


def split_args(text: str) -> list:
    """Top-level comma-separated parts of an argument list's text."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch in "([{"
        depth -= ch in ")]}"
        cur += ch
    out.append(cur.strip())
    return out


def is_static_decl(src: SourceFile, line: int, name: str) -> bool:
    return bool(re.match(rb"\s*static\b.*\b" + re.escape(name.encode()) + rb"\b", src.line_bytes(line)))


def define_value(src, first, last) -> str:
    raw = src.slice(first, last).decode("utf-8", "replace")
    raw = re.sub(r"\\\n", " ", raw)
    m = re.match(r"\s*#\s*define\s+[A-Za-z_]\w*(\([^)]*\))?", raw)
    return raw[m.end():].strip() if m else raw.strip()


def norm(text: str) -> str:
    return re.sub(r"\s+", "", text)


def short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."
