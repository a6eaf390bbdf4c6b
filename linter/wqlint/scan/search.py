"""What the searches of the tree share (the index's, scan.index, and the work model's reading
of subsystems, scan.subtext): their bounds, the records of their output, and what a line must
look like to define a name."""
from __future__ import annotations

import os
import re

from wqlint import errors

# The identifiers of a line.
IDENT_RE = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
# A search of the whole tree takes seconds; one that takes this long is stuck (a FIFO).
SEARCH_TIMEOUT = 900
# What one search may print: the lines of a kernel tree naming the most common names searched
# are a few MiB; a tree of files full of them (each file's lines are printed whatever its size)
# would otherwise be held whole.
MAX_SEARCH_OUTPUT = 256 * 1024 * 1024


def covering(tokens: list) -> list:
    """The tokens that hold none of the others: a line holding any token holds one of them."""
    kept: list[str] = []
    for t in sorted(set(tokens), key=lambda t: (len(t), t)):
        if not any(k in t for k in kept):
            kept.append(t)
    return sorted(kept)


# ripgrep 13 (its regex crate) finds a set of strings with one SIMD pass when they add up to
# at most 250 bytes; past that it cuts them itself into short prefixes and checks each place
# one of them is found with the regex. On linux-source-7.3 the API's 17 names (311 bytes)
# took 3.1 s of CPU, the first 12 of them (241 bytes) 0.8 s, the 17 cut to 14 characters
# (199 bytes) 1.0 s for 7% more lines.
LITERAL_BYTES = 240
MIN_PREFIX = 10  # shorter prefixes of identifiers find too many lines of other names


def literals(tokens: list) -> list:
    """The strings to search for so as to find every line holding one of tokens: covering()
    of them, each cut to the longest prefix that makes them add up to LITERAL_BYTES at most
    (when one of MIN_PREFIX characters or more does; else uncut). A line found is one that
    may hold a token: which token it names is for the caller to decide."""
    whole = covering(tokens)
    if sum(map(len, whole)) <= LITERAL_BYTES:
        return whole
    for cut in range(max(map(len, whole)) - 1, MIN_PREFIX - 1, -1):
        got = covering([t[:cut] for t in whole])
        if sum(map(len, got)) <= LITERAL_BYTES:
            return got
    return whole


class SearchOutputError(errors.WqlintError):
    """A search printed something that is not a record or a note; str() says what."""


def records(out: bytes, other=lambda line: None):
    """(name, line number, content) of `--null` search output: NAME NUL NUM ':' CONTENT LF.
    A file name may hold a newline, so records are cut at the NULs, not at newlines; a
    line without a NUL between records (a 'binary file matches' note) goes to other().
    Anything else is SearchOutputError: output of another shape (colours, JSON, counts, a
    file list) must not read as "no lines found"."""
    chunks = out.split(b"\0")
    name = chunks[0]
    for chunk in chunks[1:]:
        while b"\n" in name:  # notes before the name: whole lines that say what they are
            first, _, after = name.partition(b"\n")
            if not re.match(rb".*: binary file matches", first):
                break
            other(first)
            name = after
        record, _, rest = chunk.partition(b"\n")
        num, colon, content = record.partition(b":")
        if not (num.isdigit() and colon):
            raise SearchOutputError(f"output not in the form asked for: {(name + b' ' + record)[:80]!r}")
        yield name, int(num), content
        name = rest
    for line in name.split(b"\n"):
        if line and not re.match(rb".*: binary file matches", line):
            raise SearchOutputError(f"output not in the form asked for: {line[:80]!r}")
        other(line)


def rel_name(name: bytes) -> str:
    """The path of a file as a search run in the tree's top directory prints it."""
    rel = os.fsdecode(name)
    return rel[2:] if rel.startswith("./") else rel


_DEFINES: dict = {}


def defines(token: str, content: bytes) -> bool:
    """May this line define token (definition_regex for that name alone)?"""
    rx = _DEFINES.get(token)
    if rx is None:
        if len(_DEFINES) > 4096:  # (the names of one tree: not kept without end by a process)
            _DEFINES.clear()
        rx = _DEFINES[token] = re.compile(definition_regex([token], python=True).encode())
    return rx.search(content) is not None


def definition_regex(tokens: list, start: str = "^", python: bool = False) -> str:
    """One extended regex (GNU grep -E, ripgrep, Python) for lines that may define a token;
    start: what a line's start is (LINE_START for the records of a search's output). python:
    for Python's re, which backtracks: a module_param line is looked at from its first
    `module_param` only (a lookahead does not give back what it took), not from each."""
    t = "(" + "|".join(re.escape(x) for x in tokens) + ")"
    param = r"^(?=(?P<param>.*?module_param))(?P=param)" if python else "module_param"
    return "|".join([
        start + r"\s*#\s*define\s+" + t + r"\b",          # macro
        start + r"[A-Za-z_].*\b" + t + r"\s*\(",             # function header (or prototype)
        start + r"\s*" + t + r"\s*(=|,|$|/\*)",             # enumerator
        r"\b" + t + r"\s*(\[[^]]*\]\s*)?[|+]?=[^=]",  # assignment or initialised declaration
        param + r".*\b" + t + r"\b",           # module parameter
        start + r"\s*(typedef\s+)?(struct|union)\s+" + t + r"\s*(\{|$)",  # struct definition
        start + r"\s*\}\s*" + t + r"\s*;",                   # end of a typedef'd struct
    ])


# The start of a line's content in a record of `--null -n` search output: NAME NUL NUM ':'.
LINE_START = r"^[^\x00]*\x00[0-9]+:"
