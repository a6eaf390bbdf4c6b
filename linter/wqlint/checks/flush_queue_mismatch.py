"""flush-queue-mismatch: a flush or drain of a queue that the work it means to wait for is
not queued on.

Since the system queue split (128ea9f6ccfb, v6.17; Debian's 6.12.117 has it too)
schedule_work() and its kin queue on system_percpu_wq, a queue apart from system_wq, so a
flush of system_wq (or a flush_scheduled_work() of the module's own that flushes system_wq)
returns without waiting for them. Which queue the helpers use is read from the scanned
tree's include/linux/workqueue.h (CheckContext.helper_queues); what the flush means to wait
for is the helpers' work: the flush is in a definition of flush_scheduled_work(), or its file
queues work with the helpers. The evidence is the work item the flush misses, found by
scan.missed (QueueUse.missed): the message names it, or says that none was found."""
from __future__ import annotations

import dataclasses

from wqlint import api, kversion
from wqlint.checks.common import applies, use_finding
from wqlint.checks.context import CheckContext
from wqlint.finding import Hints
from wqlint.scan.site import QueueUse

RULE = "flush-queue-mismatch"
READS = frozenset({"queue"})
MAX_SHOWN = 3  # helper calls shown in the chain
MAX_HOPS = 5  # calls named in the message on the way to the work's queueing (the chain has all)


def check(use: QueueUse, ctx: CheckContext) -> list:
    if not isinstance(use, QueueUse) or not applies(use, ctx, RULE):
        return []
    missed = mismatch(use, ctx)
    if missed is None:
        return []
    helper, queue, defined = missed
    if use.within == api.FLUSH_SCHEDULED:
        evidence = f"this is a definition of {api.FLUSH_SCHEDULED}(), which is to wait for schedule_work() items"
        shown = []
    elif use.missed is not None:
        evidence, shown = _named(use), list(use.missed.steps)
    else:
        shown = [step for _, step in use.scheduled[:MAX_SHOWN]]
        evidence = (f"this file queues work with {helper}() (line {shown[0].line}), but no work this flush "
                    "misses was found: each item the file queues with the helpers is waited for before it, "
                    "and no call made before it was found to queue one")
    does = "flushes" if helper == api.FLUSH_SCHEDULED else "queues on"
    detail = (f"{use.call}({use.queue}) waits only for work queued on {use.queue} by name; on "
              f"{kversion.show(ctx.version)} {helper}() {does} {queue}; {evidence}")
    f = use_finding(use, ctx, RULE, detail, hints=Hints(queue_arg=use.arg), new=queue,
                    old=use.queue)
    return [dataclasses.replace(f, chain=tuple([use.step, *use.conditions, defined] + shown))]


def _named(use: QueueUse) -> str:
    """The evidence: the work item the flush cannot wait for, where it is queued, and how the
    code before the flush gets there."""
    missed = use.missed
    assert missed is not None
    call = missed.steps[-1]
    where = f"line {call.line}" if call.path == use.path else f"{call.path}:{call.line}"
    hops = [f"{name}()" for name in missed.through]
    if len(hops) > MAX_HOPS:
        hops = hops[:2] + ["..."] + hops[-2:]
    how = f", reached through {' -> '.join(hops)} before the flush" if hops else ""
    return f"it does not wait for {missed.item}, which {missed.helper}() queues there ({where}{how})"


def mismatch(use: QueueUse, ctx: CheckContext):
    """(helper, its queue, Step of the header line naming it) when use flushes or drains the
    queue the helpers used before the split while the tree's helpers queue on another, and
    the flush means to wait for the helpers' work; else None."""
    if api.QUEUE_CALLS_BY_NAME[use.call].queues:
        return None
    if use.within == api.FLUSH_SCHEDULED:
        helper = api.FLUSH_SCHEDULED
    elif use.missed is not None:
        helper = use.missed.helper
    elif use.scheduled:
        helper = use.scheduled[0][0]
    else:
        return None
    got = ctx.helper_queues.get(helper) or ctx.helper_queues.get("schedule_work")
    if got is None:
        return None
    queue, step = got
    if queue == use.queue or api.DEPRECATED_SYSTEM_QUEUES.get(use.queue) != queue:
        return None
    return helper, queue, step
