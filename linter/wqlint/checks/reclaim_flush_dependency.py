"""reclaim-flush-dependency: the static form of check_flush_dependency() (kernel/workqueue.c).

A work function running on a queue with WQ_MEM_RECLAIM (without __WQ_LEGACY: a queue made by
create_*workqueue() is exempt as the flusher) that, itself or through the functions it
calls, flushes, drains or destroys a queue without WQ_MEM_RECLAIM, or flushes a work item
whose queues all lack it. The kernel WARN_ONCEs "workqueue: WQ_MEM_RECLAIM %s:%ps is flushing
!WQ_MEM_RECLAIM %s:%ps" there: under memory pressure the reclaim queue's rescuer waits on a
queue that has none. cancel_*_sync() and disable_work_sync() pass from_cancel and are never
checked (scan.work never follows them). The engine builds the Flows (scan.work); this rule
judges the flags at both ends, and reports each flush and the queue it waits for once, for
every work that reaches it (check_many): the kernel warns for whichever comes first, and one
change at the flushed queue or the flush answers for all of them."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Optional

from wqlint import api
from wqlint.checks.common import applies, flow_finding
from wqlint.checks.context import CheckContext
from wqlint.finding import At, Finding, Hints, NoFix, Step, Work
from wqlint.scan.site import Flow
from wqlint.checks.queue_name import kernel_name, names, shown
from wqlint.scan.values import evaluate

RULE = "reclaim-flush-dependency"
READS = frozenset({"flow"})
MAX_TARGETS = 2  # allocations of the flushed queue shown in the chain


@dataclass(frozen=True)
class Judged:
    """One work reaching a flush, judged: its finding alone, and what the finding of all the
    works reaching the same flush says of it."""

    flow: Flow
    finding: Finding  # of this work alone (its message is the group's when it is alone)
    queue: str  # the queue the work runs on, as the kernel names it
    targets: tuple  # the queues waited for, as the kernel names them
    what: str  # the flush as written: flush_workqueue(assoc->queues[i]->work_q)
    about: str  # the queues waited for, and where their names' arguments come from
    case: str  # which of the rule's migration texts applies
    target: str  # the queue the advice names
    entry: str  # the allocating call, when the queue waited for has one

    def name(self) -> str:
        return f"{self.flow.function}() on {self.queue}"


def check(flow: Flow, ctx: CheckContext) -> list:
    return check_many([flow], ctx)


def check_many(flows: list, ctx: CheckContext) -> list:
    """One finding per flush and what it waits for (a cause), for all the works that reach it:
    the chain is the shortest work's, every work's chain is in Finding.works. Each work (its
    function, the queue it runs on) counts once: a queue allocated at two places is one."""
    groups: dict = {}
    for flow in flows:
        got = _judge(flow, ctx)
        if got is not None:
            cause = (flow.path, flow.line, flow.col, flow.call, flow.target.what, flow.target.key, got.targets)
            groups.setdefault(cause, {}).setdefault((flow.function, flow.site.queue), got)
    return [_grouped(sorted(works.values(), key=lambda j: len(j.finding.chain)), ctx) for works in groups.values()]


def _grouped(works: list, ctx: CheckContext) -> Finding:
    """The finding of the works that reach one flush (shortest chain first)."""
    first = works[0]
    flow, target = first.flow, first.flow.target
    when = ("while the work waited for is pending or running (start_flush_work())" if target.what == "work"
            else "while the queue has work in flight (__flush_workqueue() returns before its check when "
                 "there is nothing to flush)")
    waited = f"{target.func or '%ps'}" if target.what == "work" else "0x0"
    warn = (f"\"workqueue: WQ_MEM_RECLAIM {first.queue}:{flow.function} is flushing !WQ_MEM_RECLAIM "
            f"{'/'.join(first.targets)}:{waited}\"")
    if len(works) == 1:
        detail = (f"{flow.function}() runs on {first.queue} (WQ_MEM_RECLAIM) and{_via(flow)} {first.what} "
                  f"waits for {first.about}, which lacks WQ_MEM_RECLAIM; {when}, the kernel warns {warn}")
    else:
        named = "; ".join(j.name() + _via(j.flow) for j in works)
        detail = (f"{len(works)} works on WQ_MEM_RECLAIM queues reach {first.what}, which waits for "
                  f"{first.about}, lacking WQ_MEM_RECLAIM: {named}; {when}, the kernel warns once, for "
                  f"whichever flushes first, for {flow.function}(): {warn}")
    rule = ctx.catalogue[RULE]
    queues = list(dict.fromkeys(j.queue for j in works))
    # the same for every work of a flush but the files each is judged from
    hints = replace(first.finding.hints, judged_with=frozenset().union(*(j.finding.hints.judged_with for j in works)))
    migration = rule.migration_text(first.case, queue=_listed(queues), target=first.target, entry=first.entry)
    cancel = flow.cancel  # of the flush's item: the same for every work reaching it
    if cancel is not None:  # the code drops that item's pending work itself elsewhere
        migration += " " + rule.migration_text("cancelled", cancel=cancel.call, cancel_in=cancel.function,
                                               cancel_at=f"{cancel.path}:{cancel.line}")
    return replace(first.finding, message=f"{rule.message_on(ctx.version)} ({detail})", hints=hints,
                   migration=migration, function=flow.within or flow.function,
                   works=tuple(Work(j.name(), j.finding.chain) for j in works))


def _judge(flow: Flow, ctx: CheckContext) -> Optional[Judged]:
    """The work of flow judged (None: the kernel does not warn, or what it waits for is not
    known well enough to say)."""
    if not isinstance(flow, Flow) or not applies(flow, ctx, RULE):
        return None
    rescuer, legacy = ctx.bits.bit(api.RESCUER_FLAG), ctx.bits.bit(api.LEGACY_FLAG)
    values, complete = evaluate(flow.site.flags, 1)
    if not rescuer or not values or not complete:
        return None
    if not all(v & rescuer for v in values) or any(legacy and v & legacy for v in values):
        return None
    target = flow.target
    if not target.complete:
        return None
    tsites = list(target.sites)
    for site in tsites:
        tvalues, tcomplete = evaluate(site.flags, 1)
        if not tvalues or not tcomplete or any(v & rescuer for v in tvalues):
            return None
    if not tsites and target.system not in api.SYSTEM_QUEUES:
        return None
    qname = kernel_name(flow.site, ctx)[0]
    tnames = names(tsites, (target.system,), ctx)[0]
    about = shown(tsites, (target.system,), ctx)
    what = _flushed(flow)
    chain = [_alloc_step(flow.site, "with WQ_MEM_RECLAIM, without __WQ_LEGACY", ctx), flow.queued, flow.bound,
             *flow.calls, flow.flush, *target.queued[:MAX_TARGETS]]
    holders = dict(zip(map(id, tsites), target.holders))
    chain += [_alloc_step(s, "without WQ_MEM_RECLAIM" + _kept(holders.get(id(s))), ctx) for s in tsites[:MAX_TARGETS]]
    own = bool(tsites) and all(_module_own(s, flow) for s in tsites)
    hints = _fix_hints(flow, ctx, tsites, holders, own)
    no_fix = hints.no_fix.reason if hints.no_fix is not None else ""
    case = no_fix or ("per-object" if hints.per_object else "default")
    advised = _system(target) if case == "system" else "/".join(tnames)  # what the advice names
    entry = tsites[0].entry if len(tsites) == 1 else ""
    finding = flow_finding(flow, ctx, RULE, "", chain, hints=hints, case=case, queue=qname, target=advised,
                           entry=entry)
    return Judged(flow, finding, qname, tnames, what, about, case, advised, entry)


def _flushed(flow: Flow) -> str:
    """The flush as written ('flush_workqueue(assoc->queues[i]->work_q)'), with where the
    queue or work item is kept when the text does not name it (an accessor macro, a wrapper's
    parameter): 'flush_workqueue(fc_host_work_q(shost)) (struct fc_host_attrs.work_q)'."""
    key = flow.target.key
    kept = key.show() if key is not None and (key.kind == "var" or key.tag) else ""
    if not flow.waited:
        return f"{flow.call}({kept})"
    named = key is not None and re.search(rf"\b{re.escape(key.name)}\b", flow.waited)
    return f"{flow.call}({flow.waited})" + (f" ({kept})" if kept and not named else "")


def _via(flow: Flow) -> str:
    n = len(flow.calls)
    return f" through {n} call{'s' if n > 1 else ''}" if n else ""


def _listed(names: list) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _fix_hints(flow: Flow, ctx: CheckContext, tsites: list, holders: dict, own: bool) -> Hints:
    """What the fixer needs (fix.edit_kinds.AddReclaim): the files the finding is judged from,
    and either the flushed queue's allocation to give WQ_MEM_RECLAIM (edit_at, edit_arg;
    per_object when the queue is kept in a struct member, one queue per instance) or why
    there is none (no_fix)."""
    out = Hints(target_own=own, judged_with=frozenset({flow.site.path}))
    target = flow.target
    if _system(target):
        return replace(out, no_fix=NoFix("system", _system(target)))
    if len(tsites) != 1:
        return replace(out, no_fix=NoFix("sites", str(len(tsites))))
    if flow.elsewhere:  # a flush in a subsystem the scan does not cover: its queue is not edited
        return replace(out, no_fix=NoFix("foreign"))
    site = tsites[0]
    out = replace(out, judged_with=out.judged_with | {site.path})
    if not own:
        return replace(out, no_fix=NoFix("foreign"))
    values, _ = evaluate(site.flags, 1)
    bh = ctx.bits.bit("WQ_BH")
    if bh and any(v & bh for v in values):
        return replace(out, no_fix=NoFix("bh"))
    if site.flags_arg < 0:
        return replace(out, no_fix=NoFix("inside", site.entry))
    holder = holders.get(id(site))
    return replace(out, edit_at=At(site.line, site.col, site.path), edit_arg=site.flags_arg,
                   per_object=holder is None or holder.kind != "var")


def _system(target) -> str:
    """The system queue waited for: named as such, or found at its allocation in the
    kernel's own code (kept in a variable of api.SYSTEM_QUEUES). Empty for any other queue."""
    if target.system:
        return target.system
    return next((h.name for h in target.holders if h is not None and h.kind == "var"
                 and h.name in api.SYSTEM_QUEUES), "")


def _kept(holder) -> str:
    """Where the queue is kept, when that makes one queue per object (a struct member)."""
    if holder is None or holder.kind == "var":
        return ""
    struct = f"struct {holder.tag}" if holder.tag else "the struct holding it"
    return f", kept in {holder.show()}: one queue per {struct}"


def _alloc_step(site, note: str, ctx: CheckContext) -> Step:
    name, origin = kernel_name(site, ctx)
    first = site.prefix[0] if site.prefix else None
    text = first.text if first is not None else ""
    flags = site.arg_texts[site.flags_arg] if 0 <= site.flags_arg < len(site.arg_texts) else ""
    about = "; ".join(([f"flags '{flags}'"] if flags else []) + ([f"name's {origin}"] if origin else []))
    return Step(site.path, site.line, text, f"{site.entry}() allocates {name} " + (f"({about}) " if about else "")
                + note)


def _module_own(site, flow) -> bool:
    """Is the flushed queue allocated in the subsystem of the flush (not the kernel's)?"""
    from wqlint.scan.nearness import related
    return site.path == flow.path or related(site.path, flow.path)
