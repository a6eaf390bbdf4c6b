"""Read `// ruleid: a, b` / `// ok: a` marks from fixture files.

A mark applies to the next line that is not a comment: the line of the call.
"""
from __future__ import annotations

import re
from pathlib import Path

MARK_RE = re.compile(r"^\s*//\s*(ruleid|ok|todoruleid):\s*(.+?)\s*$")


def marks(root: Path):
    """(expected, forbidden): sets of (relpath, line, rule_id), of the files under root or of
    the one file root (whose relpath is its name, as a scan of it names it)."""
    expected, forbidden = set(), set()
    for path in [root] if root.is_file() else sorted(root.rglob("*.[ch]")):
        rel = path.relative_to(root.parent if root.is_file() else root).as_posix()
        pending = []
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = MARK_RE.match(line)
            if m:
                pending.append((m.group(1), [r.strip() for r in m.group(2).split(",")]))
                continue
            if re.match(r"^\s*(/\*.*\*/|//.*)?\s*$", line) and pending:
                continue
            for kind, rules in pending:
                for rule in rules:
                    if kind == "ruleid":
                        expected.add((rel, lineno, rule))
                    elif kind == "ok":
                        forbidden.add((rel, lineno, rule))
            pending = []
    return expected, forbidden
