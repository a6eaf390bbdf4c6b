"""reclaim-flush-dependency: the static form of check_flush_dependency() (kernel/workqueue.c).

A work function running on a queue with WQ_MEM_RECLAIM (without __WQ_LEGACY: a queue made by
create_*workqueue() is exempt as the flusher) that, itself or through the functions it
calls, flushes, drains or destroys a queue without WQ_MEM_RECLAIM, or flushes a work item
whose queues all lack it. The kernel WARN_ONCEs "workqueue: WQ_MEM_RECLAIM %s:%ps is flushing
!WQ_MEM_RECLAIM %s:%ps" there: under memory pressure the reclaim queue's rescuer waits on a
queue that has none. cancel_*_sync() and disable_work_sync() pass from_cancel and are never
checked (scan.work never follows them). The engine builds the Flows (scan.work); this rule
judges the flags at both ends."""
from __future__ import annotations

from dataclasses import replace

from wqlint import api
from wqlint.checks.common import applies, flow_finding
from wqlint.checks.context import CheckContext
from wqlint.finding import At, Hints, NoFix, Step
from wqlint.scan.site import Flow
from wqlint.scan.values import Unknown, evaluate, strings_of, walk

RULE = "reclaim-flush-dependency"
READS = frozenset({"flow"})
MAX_TARGETS = 2  # allocations of the flushed queue shown in the chain


def check(flow: Flow, ctx: CheckContext) -> list:
    if not isinstance(flow, Flow) or not applies(flow, ctx, RULE):
        return []
    rescuer, legacy = ctx.bits.bit(api.RESCUER_FLAG), ctx.bits.bit(api.LEGACY_FLAG)
    values, complete = evaluate(flow.site.flags, 1)
    if not rescuer or not values or not complete:
        return []
    if not all(v & rescuer for v in values) or any(legacy and v & legacy for v in values):
        return []
    target = flow.target
    if not target.complete:
        return []
    tsites = list(target.sites)
    for site in tsites:
        tvalues, tcomplete = evaluate(site.flags, 1)
        if not tvalues or not tcomplete or any(v & rescuer for v in tvalues):
            return []
    if not tsites and target.system not in api.SYSTEM_QUEUES:
        return []
    qname = _queue_name(flow.site)
    tnames = sorted({_queue_name(s) for s in tsites}) or [target.system]
    what = f"{flow.call}({target.key.show() if target.key else ''})"
    warn = (f"\"workqueue: WQ_MEM_RECLAIM {qname}:{flow.function} is flushing !WQ_MEM_RECLAIM "
            f"{'/'.join(tnames)}:{(target.func or '%ps') if target.what == 'work' else '0x0'}\"")
    via = f" through {len(flow.calls)} call{'s' if len(flow.calls) > 1 else ''}" if flow.calls else ""
    when = ("while the work waited for is pending or running (start_flush_work())" if target.what == "work"
            else "while the queue has work in flight (__flush_workqueue() returns before its check when "
                 "there is nothing to flush)")
    detail = (f"{flow.function}() runs on {qname} (WQ_MEM_RECLAIM) and{via} {what} waits for "
              f"{'/'.join(tnames)}, which lacks WQ_MEM_RECLAIM; {when}, the kernel warns {warn}")
    chain = [_alloc_step(flow.site, qname, "with WQ_MEM_RECLAIM, without __WQ_LEGACY"), flow.queued, flow.bound,
             *flow.calls, flow.flush, *target.queued[:MAX_TARGETS]]
    holders = dict(zip(map(id, tsites), target.holders))
    chain += [_alloc_step(s, _queue_name(s), "without WQ_MEM_RECLAIM" + _kept(holders.get(id(s))))
              for s in tsites[:MAX_TARGETS]]
    own = bool(tsites) and all(_module_own(s, flow) for s in tsites)
    hints = _fix_hints(flow, ctx, tsites, holders, own)
    no_fix = hints.no_fix.reason if hints.no_fix is not None else ""
    case = no_fix or ("per-object" if hints.per_object else "default")
    shown = _system(target) if case == "system" else "/".join(tnames)  # what the advice names
    return [flow_finding(flow, ctx, RULE, detail, chain, hints=hints, case=case, queue=qname,
                         target=shown, entry=tsites[0].entry if len(tsites) == 1 else "")]


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


def _queue_name(site) -> str:
    """The queue's name as the kernel prints it: its format, or the one string a bare "%s"
    formats (alloc_ordered_workqueue("%s", WQ_MEM_RECLAIM, "fc_rport_eq")), or the one format
    a name held in a variable comes from (a local buffer snprintf() fills: "zfcp_q_%s")."""
    name = site.queue.strip('"') if site.queue.startswith('"') else site.queue
    if name == "%s" and site.name is not None and site.name.args:
        text = _one_string(site.name.args[0])
        if text and "%" not in text:
            return text
    elif not site.queue.startswith('"') and site.name is not None:
        printed = [v.printed for v in walk(site.name.fmt) if isinstance(v, Unknown) and v.printed is not None]
        return _one_string(site.name.fmt) or (_one_string(printed[0]) if len(printed) == 1 else "") or name
    return name


def _one_string(value) -> str:
    """The one string value can be, '' when it is not known to be one."""
    texts, complete = strings_of(value)
    return next(iter(texts)).decode("utf-8", "replace") if complete and len(texts) == 1 else ""


def _alloc_step(site, name: str, note: str) -> Step:
    first = site.prefix[0] if site.prefix else None
    text = first.text if first is not None else ""
    flags = site.arg_texts[site.flags_arg] if 0 <= site.flags_arg < len(site.arg_texts) else ""
    return Step(site.path, site.line, text, f"{site.entry}() allocates {name} "
                f"(flags '{flags}') {note}" if flags else f"{site.entry}() allocates {name} {note}")


def _module_own(site, flow) -> bool:
    """Is the flushed queue allocated in the subsystem of the flush (not the kernel's)?"""
    from wqlint.scan.nearness import related
    return site.path == flow.path or related(site.path, flow.path)
