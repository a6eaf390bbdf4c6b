"""flag-as-max-active: a WQ_* flag passed where alloc_workqueue() takes max_active.

The flags are an enum of include/linux/workqueue.h, so the compiler takes one for a number:
the queue gets the flag's bit value as its limit of work items in flight (WQ_MEM_RECLAIM:
8), and does not get the flag. Decided by where the value comes from: a step of its chain
that names one of the API's flags (api.FLAG_BITS), written at the call, in a macro, a local
or a wrapper's argument.
"""
from __future__ import annotations

from wqlint import api
from wqlint.checks.common import applies, finding, via_text
from wqlint.checks.context import CheckContext
from wqlint.finding import Via
from wqlint.scan.site import Site
from wqlint.scan.values import evaluate, steps_in

RULE = "flag-as-max-active"
READS = frozenset({"max_active"})

def check(site: Site, ctx: CheckContext) -> list:
    if not applies(site, ctx, RULE) or site.path == ctx.api_header or site.path in ctx.api_files:
        return []
    steps = steps_in(site.max_active)
    named = [s for s in steps if s.origin is not None and s.origin.via in (Via.ENUMERATOR, Via.MACRO)
             and s.origin.name in api.FLAG_NAMES]
    if not named:
        return []
    flags = sorted({s.origin.name for s in named})
    values, complete = evaluate(site.max_active, ctx.ncpus)
    limit = f"max_active {next(iter(values))}" if complete and len(values) == 1 else "its flag bits as max_active"
    missing = [f for f in flags if not _always_set(site, ctx, f)]
    lacks = f", and lacks {' | '.join(missing)}" if missing else ""
    detail = f"{' | '.join(flags)} passed as max_active: the queue gets {limit}{lacks}{via_text(site)}"
    chain = list(site.prefix) + [s for s in steps if s not in site.prefix]
    case = "reclaim" if api.RESCUER_FLAG in missing else "default"
    return [finding(site, ctx, RULE, detail, chain, case=case)]


def _always_set(site: Site, ctx: CheckContext, flag: str) -> bool:
    """Is flag set in every value the flags can have?"""
    bit = ctx.bits.bit(flag)
    values, complete = evaluate(site.flags, ctx.ncpus)
    return bool(bit and complete and values and all(v & bit for v in values))
