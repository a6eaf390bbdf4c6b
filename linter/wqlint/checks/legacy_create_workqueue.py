"""legacy-create-workqueue: the create_*workqueue() macros, known by their __WQ_LEGACY flag."""
from __future__ import annotations

from wqlint.checks.common import applies, finding
from wqlint.scan.site import CheckContext, Site, internal_flags

RULE = "legacy-create-workqueue"
READS = frozenset({"flags"})


def check(site: Site, ctx: CheckContext) -> list:
    if not applies(site, ctx, RULE):
        return []
    info = ctx.flag_info(site)
    if not info.legacy or not site.via or any(n == "__WQ_LEGACY" for n, _ in internal_flags(site)):
        return []  # __WQ_LEGACY written by the caller is internal-workqueue-flag's
    return [finding(site, ctx, RULE, f"{site.entry}()", list(site.prefix), role="flags")]
