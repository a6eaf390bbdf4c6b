"""A JSON document of a review: the patches, each introduced finding with the patch, hunk
line and fingerprint it belongs to, and (with --all) the findings that were there before.

Every finding is what `wqlint scan --format json` writes (with "stable_fingerprint", which
survives a rebase, a v2 and a moved function: what --reported reads), and:
"introduced" {"patch", "message_id", "subject", "path", "line", "what"} for the findings
the series introduces (and "chain", the path of the work it is blamed on, when that is not
the finding's chain: another of its works), "state" introduced | pre-existing | new-elsewhere | fixed.
"""
from __future__ import annotations

from wqlint import kversion
from wqlint.formatters import jsondoc


def patch_dict(patch) -> dict:
    return {"number": patch.number, "subject": patch.subject, "message_id": patch.message_id,
            "author": patch.author, "author_address": patch.author_address}


def finding_dict(review, f, state: str, comment=None) -> dict:
    d = f.to_dict()
    d["stable_fingerprint"] = review.fingerprint(f)
    d["state"] = state
    if comment is not None:
        patch = review.patches[comment.origin.patch - 1]
        d["introduced"] = {"patch": patch.number, "message_id": patch.message_id,
                           "subject": patch.subject, "path": comment.path, "line": comment.line,
                           "what": comment.what}
        if comment.chain and comment.chain != f.chain:  # the path of another work than the first
            d["introduced"]["chain"] = [s.to_dict() for s in comment.chain]
    return d


def format(review, catalogue) -> str:
    findings = [finding_dict(review, c.finding, "introduced", c) for c in review.comments]
    findings += [finding_dict(review, f, "new-elsewhere") for f in review.unanchored]
    findings += [finding_dict(review, f, "pre-existing") for f in review.preexisting]
    doc = {
        "root": review.root,
        "tree": review.tree is not None,
        "kernel_version": kversion.show(review.kernel_version),
        "kernel_version_source": review.kernel_version_source,
        "patches": [patch_dict(p) for p in review.patches],
        "findings": findings,
        "fixed": [finding_dict(review, f, "fixed") for f in review.fixed],
        "already_reported": [review.fingerprint(c.finding) for c in review.already_reported],
        "notes": list(review.notes),
        "errors": [{"path": e.path, "problem": e.problem} for e in review.errors],
    }
    return jsondoc.dumps(doc, indent=2) + "\n"
