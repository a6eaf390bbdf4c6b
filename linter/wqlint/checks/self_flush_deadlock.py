"""self-flush-deadlock: a work that waits for itself (scan.selfwait), directly or through the
calls it makes: a flush, drain or destroy of the queue it runs on, or a flush,
cancel_*_sync() or disable_*_sync() of its own work item.

In kernel/workqueue.c (6.1, 6.12, 7.2 and 7.3 alike) nothing checks for it:
__flush_workqueue() waits for a flush color the running work holds, start_flush_work()
finds the item running on the very worker that asks (find_worker_executing_work()) and puts
a barrier behind it, and neither looks at current_work(). lockdep sees it: process_one_work()
holds the queue's and the work's lockdep maps while the function runs, and the flush takes
them again (touch_wq_lockdep_map(), touch_work_lockdep_map(); 6.1 calls lock_map_acquire()
on the same maps)."""
from __future__ import annotations

from wqlint.checks.common import applies
from wqlint.checks.queue_name import shown
from wqlint.finding import Finding
from wqlint.checks.context import CheckContext
from wqlint.scan.site import SelfWait

RULE = "self-flush-deadlock"
READS = frozenset({"wait"})

# What the wait does with the running work, by the call (kernel/workqueue.c).
_HOW = {
    "flush_workqueue": "__flush_workqueue() waits for every work queued on {q} before it, this one too",
    "__flush_workqueue": "__flush_workqueue() waits for every work queued on {q} before it, this one too",
    "drain_workqueue": "drain_workqueue() flushes {q} until it is empty, this work too",
    "destroy_workqueue": "destroy_workqueue() first drains {q}, this work too",
}
_ITEM = ("start_flush_work() finds the item running on this very worker and puts a barrier behind it, "
         "which runs only when this function returns")
_LOCKDEP_QUEUE = ("with lockdep, __flush_workqueue() takes the queue's lockdep map, which process_one_work() "
                  "holds while the work runs, and lockdep reports possible recursive locking when this path runs")
_LOCKDEP_WORK = ("with lockdep, the flush takes the work's lockdep map, which process_one_work() holds while the "
                 "work runs, and lockdep reports possible recursive locking when this path runs")


def check(wait: SelfWait, ctx: CheckContext) -> list:
    if not isinstance(wait, SelfWait) or not applies(wait, ctx, RULE):
        return []
    queues = shown(wait.sites, wait.queues, ctx) or "its queue"
    via = f" through {len(wait.calls)} call{'s' if len(wait.calls) > 1 else ''}" if wait.calls else ""
    if wait.what == "queue":
        how = _HOW[wait.call].format(q=queues)
        lockdep = _LOCKDEP_QUEUE
        waits = "the queue it runs on"
    else:
        how = ("__cancel_work_sync() then flushes it: " if "_sync" in wait.call and "flush" not in wait.call
               else "") + _ITEM
        lockdep = _LOCKDEP_WORK
        waits = "its own work item"
    detail = (f"{wait.function}() runs{' on ' + queues if wait.queues else ''} and{via} {wait.call}({wait.waited}) "
              f"waits for {waits}: {how}; no WARN catches it; {lockdep}; without lockdep the worker hangs, and the "
              "hung-task detector reports it after hung_task_timeout_secs (120 s by default)")
    chain = list(wait.queued) + [wait.bound, *wait.calls, wait.wait]
    seen: list = []
    for step in chain:
        if not any(s.path == step.path and s.line == step.line and s.note == step.note for s in seen):
            seen.append(step)
    rule = ctx.catalogue[RULE]
    return [Finding(
        rule_id=RULE, severity=rule.severity_on(ctx.version), path=wait.path, line=wait.line, col=wait.col,
        end_col=wait.end_col, message=f"{rule.message_on(ctx.version)} ({detail})", chain=tuple(seen),
        migration=rule.migration_text(wait.what, queue=queues, target=wait.waited),
        function=wait.function, queue=f"{wait.call}({wait.waited})", role="flow")]
