"""reviewdog's Diagnostic JSON (rdjson): one diagnostic per reported finding.

An introduced finding sits on the added line it is blamed on, so reviewdog's diff filter keeps
it; its call site and chain are related locations.
"""
from __future__ import annotations

from wqlint import review_paths as paths
from wqlint.formatters import jsondoc
from wqlint.formatters.review.mail import sentence

SEVERITY = {"error": "ERROR", "warning": "WARNING", "note": "INFO"}
URL = "https://docs.kernel.org/core-api/workqueue.html"


def _location(path, line, col=None, end_col=None) -> dict:
    rng = {"start": {"line": line}}
    if col:
        rng["start"]["column"] = col
        if end_col and end_col >= col:
            rng["end"] = {"line": line, "column": end_col + 1}
    return {"path": path, "range": rng}


def _diagnostic(f, at=None) -> dict:
    if at is not None:
        f = paths.shown(f, at.chain)  # the path of the work it is blamed on
    message = f.message + (f"\nFix: {f.migration}" if f.migration else "")
    if at is not None and at.what:
        message = sentence(at.what) + "\n" + message
    if at is not None and not at.at_call:
        loc = _location(at.path, at.line)
        message = f"{f.path}:{f.line}: {message}"
    else:
        loc = _location(f.path, f.line, f.col, f.end_col)
    diag = {"message": message, "location": loc, "severity": SEVERITY.get(f.severity, "WARNING"),
            "code": {"value": f.rule_id, "url": URL}}
    # Steps in wqlint's own description of the API ('<wqlint>/...') are no file of the tree.
    related = [{"message": s.note, "location": _location(s.path, s.line)} for s in f.chain
               if not s.path.startswith("<")]
    if related:
        diag["related_locations"] = related
    return diag


def format(review, catalogue) -> str:
    blamed = {id(c.finding): c for c in review.comments}
    doc = {
        "source": {"name": "wqlint", "url": URL},
        "severity": "WARNING",
        "diagnostics": [_diagnostic(f, blamed.get(id(f))) for f in review.findings()],
    }
    return jsondoc.dumps(doc, indent=2) + "\n"
