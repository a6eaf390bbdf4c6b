"""Suppression comments: `/* wqlint: ignore[rule-id, ...] reason */` on a call's line, or on
a line of its own above it, hides what the rules find at that call; the reason is the
justification SARIF's suppressions carry."""
from __future__ import annotations

import re
from dataclasses import replace

# `wqlint: ignore[rule-id, ...] reason`, or `wqlint: ignore rule-id, ... reason` (words shaped as
# rule ids are: lower case, with a hyphen), or `wqlint: ignore reason` (all rules).
_ID = r"[a-z0-9]+(?:-[a-z0-9]+)+"
_SUPPRESS_RE = re.compile(rf"wqlint:\s*ignore(?:\[([\w\s,-]*)\]|\s+({_ID}(?:\s*,\s*{_ID})*)(?![\w-]))?")


def _suppression(src, ln: int, line: int):
    """The suppression comment on line ln for a call on line: on the call's line, or on a
    line of its own above it (not the trailing comment of the statement above)."""
    text = src.line_text(ln)
    if ln != line and not text.lstrip().startswith(("/*", "//", "*")):
        return None
    return _SUPPRESS_RE.search(text)


def suppressed(src, line) -> frozenset:
    """The rule ids the comments of a call on line suppress ('*': every rule)."""
    ids: set[str] = set()
    for ln in (line - 1, line):
        m = _suppression(src, ln, line)
        if m:
            listed = m.group(1) or m.group(2)
            if listed is None:
                return frozenset({"*"})
            ids.update(x.strip() for x in listed.split(",") if x.strip())
    return frozenset(ids)


def justification(src, line) -> str:
    """The words after a suppression comment's rule list, up to the end of the comment."""
    for ln in (line - 1, line):
        text = src.line_text(ln)
        m = _suppression(src, ln, line)
        if m:
            rest = text[m.end():].split("*/", 1)[0]
            return " ".join(rest.strip().lstrip(":-").split())
    return ""


def suppressions(sites, judge, context, index) -> list:
    """(finding, justification) of what suppression comments hide at these judged sites:
    `/* wqlint: ignore[rule] reason */` gives 'reason' (SARIF's suppressions). index: where
    the sites' files are read (scan.index.TreeIndex)."""
    out = []
    for site in sites:
        if not site.suppressed:
            continue
        src = index.source(site.path)
        why = justification(src, site.line) if src is not None else ""
        for f in judge([replace(site, suppressed=frozenset())], context):
            if "*" in site.suppressed or f.rule_id in site.suppressed:
                out.append((f, why))
    return out
