"""The checks a bot POSTs to patchwork (/api/patches/ID/checks/), one JSON object per patch of
the series, one per line, in the series' order.

patchwork's CheckSerializer writes state, target_url, context and description: state is one
of pending, success, warning, fail (a bot posts pending itself before the review runs), context
a slug, target_url a URL or absent. A patch is 'fail' when it introduces an error, 'warning'
when it introduces anything else, 'success' otherwise.

Each line also names its patch, so a caller need not rely on the order: "msgid" (the
Message-ID without angle brackets, as patchwork's /api/patches/?msgid= takes it), "subject",
"patch" (its number in the series) and "fingerprints" (of the findings it introduces, as
`--reported` reads them). patchwork ignores fields its serializer does not know, so the line
is still the body to POST.
"""
from __future__ import annotations

from wqlint.formatters import jsondoc


CONTEXT = "wqlint"


def _state(comments) -> str:
    if any(c.finding.severity == "error" for c in comments):
        return "fail"
    return "warning" if comments else "success"


def _description(comments) -> str:
    if not comments:
        return "no workqueue problem introduced"
    n = len(comments)
    listed = "; ".join(f"{c.path}:{c.line}: {c.finding.rule_id}" for c in comments)
    return f"{n} workqueue problem{'s' if n != 1 else ''} introduced: {listed}"


def format(review, catalogue, target_url: str = "") -> str:
    out = []
    for patch in review.patches:
        comments = [c for c in review.comments if c.origin.patch == patch.number]
        check = {"state": _state(comments), "context": CONTEXT, "description": _description(comments),
                 "msgid": patch.message_id.strip("<>"), "subject": patch.subject, "patch": patch.number,
                 "fingerprints": [review.fingerprint(c.finding) for c in comments]}
        if target_url:
            check["target_url"] = target_url
        out.append(jsondoc.dumps(check, sort_keys=True))
    return "\n".join(out) + ("\n" if out else "")
