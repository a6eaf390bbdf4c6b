"""legacy-create-workqueue: the create_*workqueue() macros, known by their __WQ_LEGACY flag."""
from __future__ import annotations

from wqlint.checks._flags import flag_info, internal_flags
from wqlint.checks.common import applies, finding
from wqlint.checks.context import CheckContext
from wqlint.scan.site import Site

RULE = "legacy-create-workqueue"
READS = frozenset({"flags"})


def through_create_macro(site: Site, ctx: CheckContext) -> bool:
    """Is site a create_*workqueue() call: __WQ_LEGACY from a macro of the API, not written
    by the caller (that is internal-workqueue-flag's)?"""
    return (flag_info(site, ctx).legacy and bool(site.via)
            and not any(n == "__WQ_LEGACY" for n, _ in internal_flags(site)))


def check(site: Site, ctx: CheckContext) -> list:
    if not applies(site, ctx, RULE) or not through_create_macro(site, ctx):
        return []
    return [finding(site, ctx, RULE, f"{site.entry}()", list(site.prefix), role="flags")]
