"""The JSON body of a GitHub pull-request review (POST /repos/{owner}/{repo}/pulls/{n}/reviews).

One comment per introduced finding, on the added line it is blamed on (side RIGHT): GitHub
accepts review comments only on lines of the diff, so pre-existing findings are not sent.
"""
from __future__ import annotations

from wqlint import review_paths as paths
from wqlint.formatters import jsondoc
from wqlint.formatters.review.mail import flag_steps, sentence


def _body(comment) -> str:
    f = paths.shown(comment.finding, comment.chain)
    parts = [sentence(comment.what)] if comment.what else []
    parts.append(f"**wqlint {f.severity}** (`{f.rule_id}`): {f.message}")
    if not comment.in_call:
        parts.append(f"This line is a step of the path to the wait at `{f.path}:{f.line}`." if comment.chain
                     else f"This line reaches the workqueue allocated at `{f.path}:{f.line}`.")
    if f.chain:
        steps = "\n".join(f"{s.path}:{s.line}: {s.note}" for s in f.chain)
        heading = "The path, step by step" if comment.chain else "How the value gets there"
        parts.append(f"{heading}:\n```\n" + steps + "\n```")
    flags = flag_steps(comment)
    if flags:
        parts.append("The flags:\n```\n" + "\n".join(f"{s.path}:{s.line}: {s.note}" for s in flags) + "\n```")
    if f.migration:
        parts.append(f"**Suggested migration:** {f.migration}")
    parts.append(f"Details: `wqlint explain {f.rule_id}`")
    return "\n\n".join(parts)


def format(review, catalogue) -> str:
    n = len(review.comments)
    summary = (f"wqlint: {n} workqueue problem{'s' if n != 1 else ''} introduced by this change."
               if n else "wqlint: no workqueue problem introduced by this change.")
    if review.fixed:
        summary += f" It fixes {len(review.fixed)}."
    doc = {
        "body": summary,
        "event": "COMMENT",
        "comments": [{"path": c.path, "line": c.line, "side": "RIGHT", "body": _body(c)}
                     for c in review.comments],
    }
    return jsondoc.dumps(doc, indent=2) + "\n"
