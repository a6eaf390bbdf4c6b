"""Kernel-style layout of a rewritten call: tabs, continuation lines aligned with the open
parenthesis, lines filled up to 80 columns (100 at most, as checkpatch allows)."""
from __future__ import annotations

TAB = 8
FILL = 80


def width(text: str) -> int:
    """Display width of a line with tabs expanded to 8 columns."""
    col = 0
    for ch in text:
        col = (col // TAB + 1) * TAB if ch == "\t" else col + 1
    return col


def indent_to(col: int) -> str:
    return "\t" * (col // TAB) + " " * (col % TAB)


def line_indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def render_call(prefix: str, name: str, args: list, suffix: str, limit: int = FILL) -> str:
    """name(args...) after prefix (the text before it on its line) and before suffix (the text
    after the closing parenthesis on its line), greedily filled; the result excludes prefix.

    args are argument texts; an argument with top-level ' | ' may be split after a '|'."""
    head = f"{name}("
    open_col = width(prefix + head)
    cont = indent_to(open_col)
    lines = [prefix + head]
    fresh = True  # nothing after the open parenthesis yet

    def put(piece: str) -> None:
        nonlocal fresh
        cand = lines[-1] + ("" if fresh else " ") + piece
        if fresh or width(cand) <= limit:
            lines[-1] = cand
        else:
            lines.append(cont + piece)
        fresh = False

    args = [normalize(a) for a in args]
    for i, arg in enumerate(args):
        end = ")" + suffix if i == len(args) - 1 else ","
        whole = arg + end
        if fresh or width(lines[-1] + " " + whole) <= limit or width(cont + whole) <= limit:
            put(whole)
            continue
        parts = split_top(arg, " | ")
        for j, part in enumerate(parts):
            put(part + (" |" if j < len(parts) - 1 else end))
    text = "\n".join(lines)
    return text[len(prefix):]


def split_top(text: str, sep: str) -> list:
    """text split at sep where sep is outside parentheses, brackets and literals."""
    parts, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i + len(sep)
            i = start
            continue
        i += 1
    parts.append(text[start:])
    return parts


def normalize(text: str) -> str:
    """Runs of white space outside literals as one space (an argument laid out again)."""
    out, quote, i, space = [], "", 0, False
    while i < len(text):
        ch = text[i]
        if quote:
            out.append(ch)
            if ch == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in " \t\n":
            space = True
        else:
            if space and out:
                out.append(" ")
            space = False
            if ch in "\"'":
                quote = ch
            out.append(ch)
        i += 1
    return "".join(out)


def fill_operands(text: str, start_col: int, align_col: int, limit: int = FILL) -> str:
    """An 'a | b | c' expression starting at start_col, broken after '|' where it would pass
    limit, continuation lines aligned at align_col (the column after the open parenthesis)."""
    parts = split_top(normalize(text), " | ")
    lines, col = [parts[0]], start_col + width(parts[0])
    for part in parts[1:]:
        if col + len(" | " + part) <= limit:
            lines[-1] += " | " + part
            col += len(" | " + part)
        else:
            lines[-1] += " |"
            lines.append(indent_to(align_col) + part)
            col = align_col + len(part)
    return "\n".join(lines)
