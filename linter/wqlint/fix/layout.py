"""Layout of rewritten code, as Coccinelle lays out what a semantic patch adds, so that
`wqlint fix` and the generated fix.cocci write the same bytes: an edited argument on one
line; a line that passes 78 columns broken after the last comma before it, the new line
aligned with the open parenthesis (or indented like the line above it); the line after an
added one indented to the parenthesis when it was indented less. Only commas of the
outermost parentheses of a statement break a line (coccinelle parsing_c/unparse_c.ml,
add_newlines). Where that layout would not pass checkpatch (checkpatch_clean), wqlint
lays the call out its own way (fill_operands, render_call), within 80 columns."""
from __future__ import annotations

import re
from dataclasses import dataclass

TAB = 8
MAX_WIDTH = 78  # spatch --max-width default
FILL = 80  # kernel coding style
LONG = 100  # checkpatch's line length limit


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
    """name(args...) after prefix (the text before it on its line) and before suffix (the
    text after the closing parenthesis on its line), greedily filled; the result excludes
    prefix. Used where Coccinelle's layout would not pass checkpatch.

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
        # Split after '|': on lines of its own, as the line so far already has an argument.
        parts = split_top(arg, " | ")
        pieces = [part + " |" for part in parts[:-1]] + [parts[-1] + end]
        lines.append(cont + pieces[0])
        for piece in pieces[1:]:
            put(piece)
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


_TOKEN = re.compile(r"""\n[ \t]*|[ \t]+|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|/\*.*?(?:\*/|\Z)|//[^\n]*"""
                    r"|\w+|\\\n|.", re.S)


@dataclass
class _Tok:
    text: str
    cocci: bool  # added by the edit (Coccinelle: a token of the semantic patch's + code)

    @property
    def newline(self) -> bool:
        return self.text.startswith("\n")


def _length(text: str, count: int = 0) -> int:
    """Coccinelle's string_length: a tab counts 8, a newline starts again at 0."""
    for ch in text:
        count = 0 if ch == "\n" else count + (TAB if ch == "\t" else 1)
    return count


def coccinelle(text: str, added: list, max_width: int = MAX_WIDTH) -> str:
    """text (whole lines from the start of a statement) with the line breaks and
    indentation Coccinelle gives it when the ranges in added, (start, end, opaque), are
    + code; an opaque range is one token (an identifier a semantic patch makes of it)."""
    if "\\\n" in text:
        return text  # a macro definition: Coccinelle adds no newline there
    toks, at = [], 0
    for a, b, opaque in sorted(added):
        toks += [_Tok(m.group(), False) for m in _TOKEN.finditer(text[:a], at)]
        toks += [_Tok(text[a:b], True)] if opaque else [_Tok(m.group(), True) for m in _TOKEN.finditer(text[:b], a)]
        at = b
    toks += [_Tok(m.group(), False) for m in _TOKEN.finditer(text, at)]
    out: list = []
    stack: list = []  # [indent count, indent text or None] per open parenthesis, innermost first
    space_cell = None  # (column after the space, index in out) of the last top-level comma
    count, seen = 0, False

    def update(count: int, s: str) -> int:
        count += len(s)
        if len(stack) == 1 and space_cell is not None:
            start, idx = space_cell
            if count > max_width:
                indent, tu = stack[0]
                out[idx] = "\n" + (tu if tu is not None else indent_to(indent))
                return count - start + indent
        return count

    def get_indent(nl: _Tok, seen: bool, rest: list) -> tuple:
        indent_count, indent_text = stack[0]
        before, _, new = nl.text.rpartition("\n")
        n = _length(new)
        if n == 0:
            return indent_count, nl.text, False
        ender = bool(rest) and rest[0].text in (")", "}")
        if seen and not ender:
            if indent_text is not None:
                return indent_count, before + "\n" + indent_text, n != indent_count
            if n >= indent_count:
                stack[0] = [n, new]
                return n, nl.text, False
            stack[0] = [indent_count, indent_to(indent_count)]
            return indent_count, before + "\n" + stack[0][1], True
        stack[0] = [n, new]
        return n, nl.text, False

    i = 0
    while i < len(toks):
        t = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if t.text == "," and stack and nxt is not None and nxt.newline:
            now_seen = seen or t.cocci or nxt.cocci
            # The new line's indentation first: a break before it is indented the same way.
            new_count, nl_text, seen = get_indent(nxt, now_seen, toks[i + 2:i + 3])
            if len(stack) == 1 and now_seen:
                update(count, ",")
            count = new_count
            out += [",", nl_text]
            space_cell = None
            i += 2
            continue
        if t.text == "," and stack:
            seen = seen or t.cocci or (nxt is not None and nxt.text == " " and nxt.cocci)
            count = update(count, ",") if (seen and len(stack) == 1) else count + 1
            out.append(",")
            if nxt is not None and nxt.text == " ":
                if len(stack) == 1:
                    space_cell = (count + 1, len(out))
                out.append(" ")
                count += 1
                i += 2
                continue
            if len(stack) == 1:
                space_cell = (count, len(out))
                out.append("")
            i += 1
            continue
        if t.newline and stack:
            now_seen = seen or t.cocci
            new_count, nl_text, seen = get_indent(t, now_seen, toks[i + 1:i + 2])
            if len(stack) == 1 and now_seen:
                update(count, "")
            count = new_count
            out.append(nl_text)
            space_cell = None
            i += 1
            continue
        if t.text == "(":
            count += 1
            stack.insert(0, [count, None])
        elif t.text == ")" and len(stack) == 1:
            count = update(count, ")") if seen else count + 1
            stack, space_cell, seen = [], None, False
        elif t.text == ")" and stack:
            stack.pop(0)
            count += 1
        else:
            count = _length(t.text, count)
            seen = seen or (t.cocci and bool(stack))
        out.append(t.text)
        i += 1
    return "".join(out)


def fill_operands(text: str, start_col: int, align_col: int, limit: int = FILL) -> str:
    """An 'a | b | c' expression starting at start_col, broken after '|' where it would pass
    limit, continuation lines aligned at align_col."""
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


_CALL_LINE = re.compile(r"^[ \t]*(?:(?:if|while|for|switch)\s*|(?:[\w*]+\s+)*\w+\s*|\(\s*\*\s*\w+\)\s*"
                        r"|(?:\*\s*)*[\w.\->\[\]]+\s*=\s*\w+\s*)\(.*(?:&&|\|\||,)\s*$")


def checkpatch_clean(old: str, new: str) -> bool:
    """Would the lines of new that are not in old pass checkpatch --strict: 100 columns at
    most, and a line after one that leaves a call's parenthesis open aligned with it?"""
    left = old.split("\n")
    added = []
    for line in new.split("\n"):
        if line in left:
            left.remove(line)
            added.append(False)
        else:
            added.append(True)
    lines = new.split("\n")
    for k, line in enumerate(lines):
        if added[k] and width(line) > LONG:
            return False
        if added[k] and k + 1 < len(lines) and _CALL_LINE.match(line):
            col = _open_paren_column(line)
            if col is not None and width(line_indent(lines[k + 1])) != col:
                return False
    return True


def _open_paren_column(line: str):
    """The column after the last parenthesis line leaves open, or None."""
    opens, quote = [], ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote and line[i - 1] != "\\" else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "(":
            opens.append(i)
        elif ch == ")" and opens:
            opens.pop()
    return width(line[: opens[-1]]) + 1 if opens else None
