"""Like `wqlint scan`: path:line:col: warning: message [rule-id], the chain (of a finding about
several works' paths, the path of the work it is blamed on), the fix; then where a finding is
blamed when that is not its call line, and what the series fixes."""
from __future__ import annotations

from wqlint import review_paths as paths
from wqlint.formatters import text as scan_text
from wqlint.finding import Report, printable


def format(review, catalogue) -> str:
    blamed = {id(c.finding): c for c in review.comments}
    out = []
    for f in review.findings():
        comment = blamed.get(id(f))
        shown = paths.shown(f, comment.chain) if comment is not None else f  # the path blamed
        out.append(scan_text.format(Report(root=review.root, findings=[shown]), catalogue).rstrip("\n"))
        if comment is None:
            out.append("    pre-existing" if f in review.preexisting else
                       "    new, but on no line the series adds")
        elif not comment.at_call or len(review.patches) > 1 or comment.what:
            patch = review.patches[comment.origin.patch - 1]
            out.append(printable(f"    introduced at {comment.path}:{comment.line}"
                                 + (f" by patch {patch.number}: {patch.subject}" if len(review.patches) > 1 else "")))
            if comment.what:
                out.append(f"    {printable(comment.what)}")
    for f in review.fixed:
        f = f.shown()
        out.append(f"{f.path}:{f.line}:{f.col}: fixed: {f.message} [{f.rule_id}]")
    return "\n".join(out) + ("\n" if out else "")
