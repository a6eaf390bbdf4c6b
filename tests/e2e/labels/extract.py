#!/usr/bin/env python3
"""List the candidate sites of every rule in a kernel tree, independently of wqlint.

The labels in this folder were made by reading the C at each line this prints (NOTES.md):
this script only finds the text to read. It knows nothing of wqlint: comments and string
literals are blanked, parentheses matched, arguments split at top-level commas.

    tests/e2e/labels/extract.py TREE > candidates.tsv

One TAB-separated line per candidate:
    kind  path:line:col  name  where  args (" ;; " between them) or the enclosing call and argument index
kind is `alloc` (a call of an allocation name), `sysq` (a use of system_wq or
system_unbound_wq), `internal` (a __WQ_* flag) or `affinity` (WQ_PERCPU or WQ_UNBOUND written
outside an allocation call's parentheses: flags kept in a variable or a macro); where is `code` or `macro NAME` when the
text sits in the body of a #define.
"""
from __future__ import annotations

import os
import re
import sys

# The names callers write to allocate a queue (include/linux/workqueue.h and
# include/drm/drm_managed.h of the trees labelled), matched as whole words before "(".
ALLOC = re.compile(r"(?<![\w.>])((?:devm_|drmm_)?alloc_(?:ordered_)?workqueue(?:_lockdep_map)?"
                   r"|create_(?:freezable_|singlethread_)?workqueue)\s*\(")
SYSQ = re.compile(r"(?<![\w.>])(system_wq|system_unbound_wq)(?!\w)")
INTERNAL = re.compile(r"(?<![\w.>])(__WQ_[A-Z_]+)(?!\w)")
AFFINITY = re.compile(r"(?<![\w.>])(WQ_PERCPU|WQ_UNBOUND)(?!\w)")
IDENT = re.compile(r"[A-Za-z_]\w*\s*$")


def mask(text: str) -> str:
    """text with comments and the insides of string and char literals blanked (newlines kept,
    so offsets and line numbers stay)."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            while j > 0 and text[j - 1] == "\\" and j < n:  # a // comment continued by \
                j = text.find("\n", j + 1)
                j = n if j < 0 else j
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                if out[k] != "\n":
                    out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def close_paren(m: str, at: int) -> int:
    """Offset of the ")" matching the "(" at offset at, or -1."""
    depth = 0
    for j in range(at, len(m)):
        if m[j] in "([{":
            depth += 1
        elif m[j] in ")]}":
            depth -= 1
            if depth == 0:
                return j
    return -1


def split_args(text: str, m: str, lo: int, hi: int) -> list:
    """The arguments between offsets lo and hi (exclusive), cut at top-level commas."""
    args, depth, start = [], 0, lo
    for j in range(lo, hi):
        if m[j] in "([{":
            depth += 1
        elif m[j] in ")]}":
            depth -= 1
        elif m[j] == "," and depth == 0:
            args.append(text[start:j])
            start = j + 1
    args.append(text[start:hi])
    return [" ".join(a.replace("\\\n", " ").split()) for a in args]


def where(text: str, at: int) -> str:
    """'macro NAME' when offset at is in the body of a #define (continued lines too)."""
    line_start = text.rfind("\n", 0, at) + 1
    while True:
        line = text[line_start:text.find("\n", line_start)]
        mdef = re.match(r"\s*#\s*define\s+(\w+)", line)
        if mdef:
            return "macro " + mdef.group(1)
        prev_end = line_start - 1
        if prev_end <= 0 or text[prev_end - 1] != "\\":
            return "code"
        line_start = text.rfind("\n", 0, prev_end) + 1


def enclosing_call(text: str, m: str, at: int) -> str:
    """'NAME arg I' of the innermost call whose parentheses hold offset at, or 'none'."""
    depth, j = 0, at - 1
    while j >= 0:
        ch = m[j]
        if ch in ")]}":
            depth += 1
        elif ch in "([{":
            if depth == 0:
                if ch != "(":
                    return "none"
                name = IDENT.search(m, 0, j)
                if not name:
                    return "none"
                index = len(split_args(text, m, j + 1, at)) - 1
                line, col = position(text, name.start())
                return f"{name.group(0).strip()} arg {index} at {line}:{col}"
            depth -= 1
        elif ch == ";" and depth == 0:
            return "none"
        j -= 1
    return "none"


def position(text: str, at: int) -> tuple:
    line = text.count("\n", 0, at) + 1
    return line, at - (text.rfind("\n", 0, at) + 1) + 1


def scan_file(root: str, rel: str, out) -> None:
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        text = f.read()
    if not any(word in text for word in ("workqueue", "__WQ_", "system_wq", "system_unbound_wq")):
        return
    m = mask(text)
    for hit in ALLOC.finditer(m):
        name, open_at = hit.group(1), m.index("(", hit.end(1))
        end = close_paren(m, open_at)
        line, col = position(text, hit.start(1))
        args = split_args(text, m, open_at + 1, end) if end > 0 else ["<unbalanced>"]
        out.write(f"alloc\t{rel}:{line}:{col}\t{name}\t{where(text, hit.start())}\t{' ;; '.join(args)}\n")
    for kind, pattern in (("sysq", SYSQ), ("internal", INTERNAL), ("affinity", AFFINITY)):
        for hit in pattern.finditer(m):
            call = enclosing_call(text, m, hit.start())
            if kind == "affinity" and ALLOC.match(call.split(" arg ")[0] + "("):
                continue  # written in an allocation call: its line above says so
            line, col = position(text, hit.start(1))
            out.write(f"{kind}\t{rel}:{line}:{col}\t{hit.group(1)}\t{where(text, hit.start())}\t"
                      f"{call}\n")


def main(root: str) -> None:
    paths = []
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            if name.endswith((".c", ".h")):
                paths.append(os.path.relpath(os.path.join(top, name), root))
    for rel in sorted(paths):
        scan_file(root, rel, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
