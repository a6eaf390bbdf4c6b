"""b4's per-patch check command (`prep-perpatch-check-cmd`, `am-perpatch-check-cmd`).

b4 (b4/__init__.py, LoreMessage.run_local_check) pipes one patch mail to the command, in the
repository's top directory, and reads its output the way it reads `checkpatch.pl -q --terse
--no-summary --mailback`: every stdout line is one report, 'fail' when it holds 'ERROR:', else
'warning'; every stderr line is a 'fail'; no output at all is 'success' with exit status 0
and a failure otherwise. So: one `file:line: ERROR|WARNING|CHECK: message [rule]` line per
introduced finding, on the changed line it is blamed on, and nothing when there is none (the
notes other formats print on stderr are left out).
"""
from __future__ import annotations

from wqlint.finding import printable
from wqlint.formatters.review.mail import sentence

LEVEL = {"error": "ERROR", "warning": "WARNING", "note": "CHECK"}  # checkpatch's words
QUIET = True  # no notes on stderr: b4 would count each as a failure


def format(review, catalogue) -> str:
    out = []
    for c in review.comments:
        f = c.finding
        what = sentence(c.what) + " " if c.what else ""
        where = "" if c.in_call else f" (the queue allocated at {f.path}:{f.line})"
        out.append(printable(f"{c.path}:{c.line}: {LEVEL[f.severity]}: {what}{f.message}{where} [{f.rule_id}]"))
    return "\n".join(out) + ("\n" if out else "")
