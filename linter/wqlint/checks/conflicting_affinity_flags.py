"""conflicting-affinity-flags: WQ_PERCPU and WQ_UNBOUND in the same flags.

The flags are the combined value the tree's macros give, so WQ_PERCPU handed to
alloc_ordered_workqueue() (which adds WQ_UNBOUND) is found like one written beside WQ_UNBOUND.
"""
from __future__ import annotations

from wqlint.api import ORDERED_MACROS
from wqlint.checks._flags import flag_info
from wqlint.checks.common import applies, finding, via_text
from wqlint.checks.context import CheckContext
from wqlint.finding import Hints
from wqlint.scan.site import Site

RULE = "conflicting-affinity-flags"
READS = frozenset({"flags"})


def check(site: Site, ctx: CheckContext) -> list:
    if not applies(site, ctx, RULE):
        return []
    info = flag_info(site, ctx)
    if not info.affinity_conflict or info.legacy:
        return []
    parts = []
    if len(info.values) > 1:
        parts.append("flags are conditional; some values have both")
    ordered = [v for v in site.via if v in ORDERED_MACROS]
    if ordered:
        parts.append(f"{ordered[0]}() adds WQ_UNBOUND")
    if site.via[1:] or not ordered:  # more than the ordered macro the caller wrote
        parts.append(via_text(site).strip())
    both = ctx.bits.bit("WQ_PERCPU") | ctx.bits.bit("WQ_UNBOUND")
    # Dropping WQ_PERCPU from a value that lacks WQ_UNBOUND would leave it without either.
    hints = Hints(flags_conditional=any(v & both != both for v in info.values))
    return [finding(site, ctx, RULE, "; ".join(p for p in parts if p), list(site.prefix), hints=hints,
                    role="flags")]
