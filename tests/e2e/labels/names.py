"""Candidates for workqueue-name-too-long in a kernel tree, found without wqlint's scanner.

    python tests/e2e/labels/names.py TREE [MIN]

Every call of an allocation entry point callers write (and of a function that passes one of
its parameters into the name of such a call: a wrapper) in every *.c/*.h file is cut out by
matching parentheses, its name argument split at top-level commas. A name written as string
literals (adjacent ones joined) is measured: the bytes of its literal text once conversions
are taken out, and the conversions. Printed, one per line, TAB-separated: path:line:col of
the called name, the call, the literal bytes, the conversions, the name as written and its
arguments; only calls whose literal bytes are at least MIN (default 16), and every call whose
name is not a literal, with the literal bytes '-'. Each candidate is then read by hand
(tests/e2e/labels/NOTES.md).
"""
from __future__ import annotations

import os
import re
import sys

ENTRIES = {  # callers' names: index of the name's format, of its first argument
    "alloc_workqueue": (0, 3), "alloc_workqueue_lockdep_map": (0, 4), "devm_alloc_workqueue": (1, 4),
    "alloc_ordered_workqueue": (0, 2), "alloc_ordered_workqueue_lockdep_map": (0, 3),
    "devm_alloc_ordered_workqueue": (1, 3), "drmm_alloc_ordered_workqueue": (1, 3),
    "create_workqueue": (0, -1), "create_singlethread_workqueue": (0, -1),
    "create_freezable_workqueue": (0, -1),
}
SPEC = re.compile(r"%[-+ #0]*(\d+|\*)?(\.(\d*|\*))?(hh|h|ll|l|z|t|j)?[a-zA-Z%]")
LITERAL = re.compile(r'^(\s*"(?:[^"\\]|\\.)*"\s*)+$')


def strip_comments(text: str) -> str:
    """Comments replaced by spaces (newlines kept), strings left alone."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def split_args(text: str, start: int):
    """(args, end) of the argument list whose '(' is at start."""
    depth, i, cur, args = 0, start, start + 1, []
    while i < len(text):
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[cur:i].strip())
                return args, i
        elif c == "," and depth == 1:
            args.append(text[cur:i].strip())
            cur = i + 1
        i += 1
    return None, len(text)


def literal_text(arg: str):
    """The bytes of a name written as adjacent string literals, else None."""
    if not LITERAL.match(arg):
        return None
    body = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', arg))
    return body.encode().decode("unicode_escape").encode("latin-1")


def measure(fmt: bytes):
    text = fmt.decode("latin-1")
    convs = [m.group(0) for m in SPEC.finditer(text) if m.group(0) != "%%"]
    bare = SPEC.sub(lambda m: "%" if m.group(0) == "%%" else "", text)
    return len(bare.encode("latin-1")), convs


def calls(text: str, names):
    pat = re.compile(r"\b(" + "|".join(sorted(names, key=len, reverse=True)) + r")\s*\(")
    for m in pat.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if re.match(r"\s*#\s*define\b", text[line_start:m.start()]):
            continue  # a macro's own definition (the API's, or a wrapper's)
        args, _ = split_args(text, m.end() - 1)
        if args is None:
            continue
        line = text.count("\n", 0, m.start()) + 1
        col = m.start() - line_start + 1
        yield m.group(1), args, line, col


def enclosing_params(text: str, at: int):
    """(function name, [parameter names]) of the function definition around offset at."""
    start = text.rfind("\n{", 0, at)
    if start < 0:
        return None
    head = text[max(0, start - 400):start]
    m = re.search(r"\b([A-Za-z_]\w*)\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)\s*$", head)
    if m is None:
        return None
    params = [re.findall(r"[A-Za-z_]\w*", p)[-1] for p in m.group(2).split(",")
              if re.findall(r"[A-Za-z_]\w*", p)]
    return m.group(1), params


def main(tree: str, minimum: int = 16) -> None:
    files = []
    for dirpath, dirs, names in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        files += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith((".c", ".h"))]
    texts = {}
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as handle:
            raw = handle.read()
        if any(n in raw for n in ENTRIES):
            texts[os.path.relpath(path, tree)] = strip_comments(raw)
    entries = dict(ENTRIES)
    # Wrappers: a function whose name argument (or an argument formatted into it) is one of
    # its parameters, passed on as is. Found in rounds, so a wrapper of a wrapper counts too.
    for _ in range(3):
        found = {}
        for text in texts.values():
            for name, args, line, _col in calls(text, entries):
                ni, ai = entries[name]
                offset = sum(len(x) + 1 for x in text.split("\n")[:line - 1])
                fn = enclosing_params(text, offset)
                if fn is None or fn[0] in entries or ni >= len(args):
                    continue
                fname, params = fn
                name_part = [args[ni]] + (args[ai:] if ai >= 0 else [])
                for a in name_part:
                    if a in params:
                        found[fname] = (params.index(a), -1)
                        break
        new = {k: v for k, v in found.items() if k not in entries}
        if not new:
            break
        entries.update(new)
        # Files calling the new wrappers.
        for path in files:
            rel = os.path.relpath(path, tree)
            if rel in texts:
                continue
            with open(path, encoding="utf-8", errors="replace") as handle:
                raw = handle.read()
            if any(n in raw for n in new):
                texts[rel] = strip_comments(raw)
    for rel in sorted(texts):
        for name, args, line, col in calls(texts[rel], entries):
            ni, ai = entries[name]
            if ni >= len(args):
                continue
            lit = literal_text(args[ni])
            if lit is None:
                print(f"{rel}:{line}:{col}\t{name}\t-\t\t{args[ni]}\t{' | '.join(args[ai:] if ai >= 0 else [])}")
                continue
            size, convs = measure(lit)
            if size >= minimum:
                print(f"{rel}:{line}:{col}\t{name}\t{size}\t{' '.join(convs)}\t{args[ni]}\t"
                      f"{' | '.join(args[ai:] if ai >= 0 else [])}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 16)
