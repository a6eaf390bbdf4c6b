"""Review of the findings about a work's path to a wait (reclaim-flush-dependency,
self-flush-deadlock, flush-queue-mismatch: the rules whose `introduced-by` in rules.yaml has
"adds a step").

Such a finding is reported at the wait, and its chain is the path that gets there: the
allocation of the queue the work runs on, the queueing, the binding, each call, the wait,
then what it waits for (its queueing, its allocation). A finding that stands for several
works (Finding.works) has a path for each; the chain is the first one's. A new finding is
blamed on the first changed line of the wait, else of any work's path in order (an
allocation with all the lines of its call); a finding that was there before, on a line of
the path of a work that did not reach it before (the series opens one more path to the
same wait). The comment shows the whole path of the work it is blamed on, and says what the
line did: the wait, a step of the path, a flag it adds to or drops from an allocation on
the path.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

from wqlint.catalogue import fill
from wqlint.finding import Finding
from wqlint.patched import Origin


@dataclass(frozen=True)
class Blame:
    """Where a path finding is blamed, the path shown, and what the line did."""

    path: str
    line: int
    origin: Origin
    chain: tuple  # of Step: the whole path of the work blamed
    what: str


def is_path(finding: Finding, catalogue) -> bool:
    """Is finding about a work's path to a wait?"""
    return catalogue[finding.rule_id].change_text("adds a step") is not None


def _paths(finding: Finding) -> list:
    """(work, chain) for each path of finding, the one its chain shows first; work is how the
    rule's texts name it ('pa_reset_fn() on pa', else the function)."""
    if finding.works:
        return [(w.name, w.chain) for w in finding.works]
    return [(f"{finding.function}()" if finding.function else "the work", finding.chain)]


def blame(finding: Finding, added: dict, catalogue, lines_of: Callable, changes: Callable,
          before: Optional[Finding] = None) -> Optional[Blame]:
    """The blame of a path finding, or None when no step of a path it is new on changed.

    added: path -> {line: Origin} of the lines the series adds; lines_of(path, line): the
    lines of the allocation call starting there (just the line for any other step);
    changes(path, line): what the series did to the flags of that allocation ("drops
    WQ_MEM_RECLAIM"...); before: the same finding before the series, when it was there (only
    the paths of works it did not have are blamed then)."""
    call = range(finding.line, max(finding.line, finding.end_line) + 1)
    known = {name for name, _ in _paths(before)} if before is not None else set()
    for work, chain in _paths(finding):
        if work in known:
            continue
        places = [(finding.path, n, None) for n in call]
        places += [(s.path, n, s) for s in chain for n in lines_of(s.path, s.line)]
        if before is not None:  # the wait was there: the path is new by another step
            places = [p for p in places if not (p[0] == finding.path and p[1] in call)]
        for path, line, step in places:
            origin = added.get(path, {}).get(line)
            if origin is not None:
                what = _what(finding, work, step, changes, catalogue, before is not None)
                return Blame(path, line, origin, tuple(chain), what)
    return None


def _what(finding: Finding, work: str, step, changes: Callable, catalogue, joined: bool) -> str:
    """'this patch adds a step to the path (pa_stop() calls pa_quiesce()): pa_reset_fn() on
    pa now reaches the wait, for a queue without WQ_MEM_RECLAIM'."""
    rule = catalogue[finding.rule_id]
    note = ""
    if step is None or (step.path, step.line) == (finding.path, finding.line):
        change = said = "adds the wait"
    else:
        flags = [c for c in changes(step.path, step.line) if rule.change_text(c)] if not joined else []
        if flags:  # an allocation on the path, which the line gives a flag or takes one from
            change = said = flags[0]
        else:
            change = "adds a path" if joined else "adds a step"
            said = "adds a path to the wait" if joined else "adds a step to the path"
            note = f" ({step.note})"
    text = rule.change_text(change) or rule.change_text("adds a step") or ""
    return f"this patch {said}{note}: " + fill(text, work=work)


def shown(finding: Finding, chain: tuple) -> Finding:
    """finding as a comment shows it: with chain, the path of the work it is blamed on, and
    that work first among its works."""
    if not chain or chain == finding.chain:
        return finding
    works = sorted(finding.works, key=lambda w: w.chain != chain)
    return replace(finding, chain=chain, works=tuple(works))
