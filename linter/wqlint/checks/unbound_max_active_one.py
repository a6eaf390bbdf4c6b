"""unbound-max-active-one: unbound, max_active 1, not created as an ordered queue."""
from __future__ import annotations

from wqlint import api, kversion
from wqlint.checks._flags import flag_info
from wqlint.checks.common import applies, finding, via_text
from wqlint.checks.context import CheckContext
from wqlint.finding import Hints
from wqlint.scan.site import Site
from wqlint.scan.values import evaluate, find_path, Const

RULE = "unbound-max-active-one"
READS = frozenset({"flags", "max_active"})


def check(site: Site, ctx: CheckContext) -> list:
    if not applies(site, ctx, RULE):
        return []
    info = flag_info(site, ctx)
    if info.unbound != "yes" or info.ordered:
        return []
    values, complete = evaluate(site.max_active, ctx.ncpus)
    if values != {1} or not complete:
        return []
    ver = kversion.show(ctx.version)
    if api.unbound_one_is_ordered(ctx.version):
        detail = f"on {ver} it is still ordered implicitly; from v6.9 on it is not (3bc1e711c26b): it breaks on upgrade"
    else:
        detail = f"on {ver} items can run concurrently on different NUMA nodes (3bc1e711c26b)"
    refused = info.sysfs and not api.ordered_sysfs_allowed(ctx.version)
    if refused:
        detail += f"; WQ_SYSFS is set, which ordered queues refuse on {ver}: no automatic conversion"
    elif info.sysfs:
        detail += f"; WQ_SYSFS is set: an ordered queue keeps it on {ver}, with max_active read-only"
    path = find_path(site.max_active, lambda v: isinstance(v, Const))
    chain = list(site.prefix)
    if path:
        chain += [n.step for n in path if n.step is not None]
    return [finding(site, ctx, RULE, detail + via_text(site), chain, "sysfs" if refused else "default",
                    Hints(sysfs=refused))]
