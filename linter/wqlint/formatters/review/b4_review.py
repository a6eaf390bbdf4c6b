"""b4 review's check commands (b4 0.16: `b4.review-perpatch-check-cmd`,
`b4.review-series-check-cmd`).

b4 (b4/review/checks.py, _run_external_cmd) pipes one message to the command in the
repository's top directory: a patch for the per-patch command, the cover letter (or the only
patch) for the series command. It reads stdout as JSON, a list of {tool, status, summary,
url, details} with status pass | warn | fail, whatever the exit status; empty stdout is no
result with exit status 0 and a failure otherwise. It caches the results by message-id and
tool, and shows `details` that parse as a JSON list as one line per entry ({status,
description}, as its own checkpatch check writes them).

So: one result, tool 'wqlint': fail when the series introduces an error, warn when it
introduces anything else, pass when nothing; the summary counts them, the details list each
finding on the changed line it is blamed on, with its fingerprint and patch.
"""
from __future__ import annotations

from wqlint.finding import printable
from wqlint.formatters import jsondoc
from wqlint.formatters.review.b4 import LEVEL
from wqlint.formatters.review.mail import sentence

TOOL = "wqlint"
STATUS = {"error": "fail", "warning": "warn", "note": "warn"}


def result(status: str, summary: str, details: list | None = None) -> str:
    entry = {"tool": TOOL, "status": status, "summary": summary}
    if details:
        entry["details"] = jsondoc.dumps(details)
    return jsondoc.dumps([entry]) + "\n"


def format(review, catalogue) -> str:
    comments = review.comments
    if not comments:
        what = "no workqueue problem introduced"
        if review.already_reported:
            what += f" that was not reported before ({len(review.already_reported)} already reported)"
        return result("pass", what)
    counts: dict = {}
    details = []
    several = len(review.patches) > 1
    for c in comments:
        f = c.finding
        counts[f.severity] = counts.get(f.severity, 0) + 1
        what = sentence(c.what) + " " if c.what else ""
        where = "" if c.in_call else f" (the queue allocated at {f.path}:{f.line})"
        patch = review.patches[c.origin.patch - 1]
        prefix = f"patch {patch.number}: " if several else ""
        details.append({"status": STATUS[f.severity],
                        "description": printable(f"{prefix}{c.path}:{c.line}: {LEVEL[f.severity]}: {what}"
                                                 f"{f.message}{where} [{f.rule_id}]"),
                        "fingerprint": review.fingerprint(f),
                        **({"message_id": patch.message_id} if patch.message_id else {})})
    words = {"error": "error", "warning": "warning", "note": "note"}
    summary = ", ".join(f"{n} {words[s]}{'s' if n != 1 else ''}" for s in ("error", "warning", "note")
                        for n in [counts.get(s, 0)] if n)
    rules = sorted({c.finding.rule_id for c in comments})
    status = "fail" if counts.get("error") else "warn"
    return result(status, f"{summary} introduced: {', '.join(rules)}", details)
