"""ordered-workqueue-sysfs: an ordered queue with WQ_SYSFS, on versions whose
workqueue_sysfs_register() refuses it (the allocation fails); allowed from v7.1
(a4aa8d94f243), with max_active read-only."""
from __future__ import annotations

from wqlint import kversion
from wqlint.checks._flags import flag_info
from wqlint.checks.common import applies, finding, via_text
from wqlint.checks.context import CheckContext
from wqlint.scan.site import Site
from wqlint.scan.values import children, evaluate, steps_along

RULE = "ordered-workqueue-sysfs"
READS = frozenset({"flags"})


def check(site: Site, ctx: CheckContext) -> list:
    sysfs = ctx.bits.bit("WQ_SYSFS")
    if not applies(site, ctx, RULE) or not sysfs:
        return []
    info = flag_info(site, ctx)
    if not (info.ordered and info.sysfs):
        return []
    chain = list(site.prefix) + steps_along(_path_to_bit(site.flags, sysfs))
    detail = f"on {kversion.show(ctx.version)}" + via_text(site)
    return [finding(site, ctx, RULE, detail, chain, role="flags")]


def _path_to_bit(value, bit: int) -> list:
    """From the flags down to where the bit is written (the call, a local, a wrapper's
    caller, the enumerator): each step the child that has the bit in all its values."""
    path = [value]
    while True:
        nxt = next((c for c in children(path[-1]) if _all_have(c, bit)), None)
        if nxt is None:
            return path
        path.append(nxt)


def _all_have(value, bit: int) -> bool:
    values, _ = evaluate(value, 1)
    return bool(values) and all(v & bit for v in values)
