"""deprecated-system-workqueue: system_wq or system_unbound_wq handed to a queueing call.

The engine collects the uses (QueueUse: a name the API lists in DEPRECATED_SYSTEM_QUEUES
as the queue argument of a call in QUEUE_CALLS); this rule judges them where the tree
declares the replacement."""
from __future__ import annotations

from wqlint import api
from wqlint.checks.common import applies, use_finding
from wqlint.checks.context import CheckContext
from wqlint.finding import Hints
from wqlint.scan.site import QueueUse

RULE = "deprecated-system-workqueue"
READS = frozenset({"queue"})


def check(use: QueueUse, ctx: CheckContext) -> list:
    if not isinstance(use, QueueUse) or not applies(use, ctx, RULE):
        return []
    new = api.DEPRECATED_SYSTEM_QUEUES.get(use.queue)
    if new is None or new not in ctx.declared:
        return []
    if use.compat_undecided:
        # One branch of an #if the module's configure step decides names the replacement, this
        # one the old queue: on a kernel with the replacement the module builds the other.
        return []
    call = api.QUEUE_CALLS_BY_NAME[use.call]
    parts = [f"{use.queue} -> {new}"]
    if not call.queues:
        waits = (f"{use.call}() queues nothing, so it does not warn; it waits only for work queued on "
                 f"{use.queue} by name")
        helper = ctx.helper_queues.get("schedule_work")
        if helper is not None and helper[0] == new:
            waits += f", not for schedule_work() items, which go to {new}"
        parts.append(waits)
    if use.compat_pair:
        # The module takes this branch on the scanned kernel (its version test predates a
        # backport of the replacement), whose other branch already names the replacement:
        # reported, and not a use to rewrite.
        parts.append(f"the other branch of '{use.compat_pair}' already uses {new}")
    hints = Hints(queue_arg=use.arg, compat_branch=bool(use.compat_pair))
    return [use_finding(use, ctx, RULE, "; ".join(parts), hints=hints, new=new)]
