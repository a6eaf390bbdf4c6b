"""unbound-max-active-cpu-count: max_active is a CPU count the caller chose, on a queue that may be unbound."""
from __future__ import annotations

from wqlint.checks._cpu_count import judge
from wqlint.checks.context import CheckContext
from wqlint.scan.site import Site

RULE = "unbound-max-active-cpu-count"
READS = frozenset({"flags", "max_active"})


def check(site: Site, ctx: CheckContext) -> list:
    return judge(site, ctx, RULE)
