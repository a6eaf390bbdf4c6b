"""internal-workqueue-flag: a caller writes one of the workqueue code's own __WQ_* flags
(__WQ_LEGACY, __WQ_ORDERED, ...), which only the API's macros and kernel/workqueue.c set."""
from __future__ import annotations

from wqlint.checks._flags import internal_flags
from wqlint.checks.common import applies, finding
from wqlint.checks.context import CheckContext
from wqlint.scan.site import Site

RULE = "internal-workqueue-flag"
READS = frozenset({"flags"})


def check(site: Site, ctx: CheckContext) -> list:
    if not applies(site, ctx, RULE) or site.path == ctx.api_header or site.path in ctx.api_files:
        return []  # the API's own macros (an unused create_workqueue()) and code set them
    written = internal_flags(site)
    if not written:
        return []
    chain = list(site.prefix) + [step for _name, steps in written for step in steps]
    detail = ", ".join(name for name, _step in written) + " written by the caller"
    return [finding(site, ctx, RULE, detail, chain, role="flags")]
