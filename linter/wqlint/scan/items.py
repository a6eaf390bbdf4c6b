"""The work items a call's text names: its arguments, the name an argument ends with, and
whether a queueing call queues the function the item was bound to last before it."""
from __future__ import annotations

import re
from typing import Optional

from wqlint import api
from wqlint.finding import Step
from wqlint.scan.ctext import split_args

_TOKEN_RE = re.compile(r"[A-Za-z_]\w*|->|\.")  # the names and member operators of an argument
# A call that binds a work item to a function (api.WORK_BINDERS).
BIND_RE = re.compile(r"\b(" + "|".join(sorted(api.WORK_BINDERS, key=len, reverse=True)) + r")\s*\(")


def args_text(text: str) -> Optional[list]:
    """The arguments of a call whose text starts after its '(', or None when it does not
    close there."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return split_args(text[:i])
            depth -= 1
    return None


def last_word(text: str) -> str:
    """The name an argument's text ends with: `&priv->reset_work` reset_work, `&d->dw.work`
    dw, `to_delayed_work(work)` work, `x->wq` wq, `x->q[i]` q."""
    text = text.strip().rstrip(")").strip()
    if text.endswith("]") and "[" in text:  # one subscript
        text = text[:text.rindex("[")].rstrip()
    tokens = _TOKEN_RE.findall(text)
    if len(tokens) >= 5 and tokens[-1] == "work" and tokens[-2] in (".", "->") and tokens[-4] in (".", "->") \
            and _is_name(tokens[-3]):
        return tokens[-3]  # the delayed_work holding .work
    return tokens[-1] if tokens and _is_name(tokens[-1]) and text.endswith(tokens[-1]) else ""


def rebound(index, step: Step, item: str, fn: str) -> bool:
    """Does the function of the queueing call at step bind item to a function other than fn
    before it (`INIT_WORK(&w->work, load_fn); queue_work(w->wq, &w->work);`)? Then that call
    queues the other function, whatever binds the item elsewhere."""
    src = index.source(step.path)
    if src is None:
        return False
    chunk = src.chunk_at(step.line)
    bound = None
    for line in range(chunk.first_line, step.line):
        text = src.line_text(line)
        m = BIND_RE.search(text) if item in text else None
        given = args_text(text[m.end():]) if m else None
        if given and len(given) >= 2 and last_word(given[0]) == item:
            bound = given[1].strip().lstrip("&").strip()
    return bound is not None and bound != fn


def _is_name(token: str) -> bool:
    return token[:1].isalpha() or token[:1] == "_"
