"""missing-affinity-flag: neither WQ_PERCPU nor WQ_UNBOUND, where the tree has WQ_PERCPU.

What counts as an affinity flag is the tree's (FlagBits.affinity: WQ_BH only where a BH
queue may not carry WQ_PERCPU); what the kernel does about a queue without one is the
version's (rules.yaml by-version: a WARN_ONCE from v7.2, 21c05ca88a54)."""
from __future__ import annotations

from wqlint.checks._flags import flag_info
from wqlint.checks.common import applies, finding, via_text
from wqlint.checks.context import CheckContext
from wqlint.checks.legacy_create_workqueue import through_create_macro
from wqlint.finding import Hints
from wqlint.scan.site import Site
from wqlint.scan.values import condition_steps, decisions_taken

RULE = "missing-affinity-flag"
READS = frozenset({"flags"})


def check(site: Site, ctx: CheckContext) -> list:
    if not applies(site, ctx, RULE):
        return []
    info = flag_info(site, ctx)
    if not info.affinity_missing or through_create_macro(site, ctx):
        return []  # legacy-create-workqueue covers create_*workqueue()
    detail = "flags are conditional; some values have neither" if len(info.values) > 1 else ""
    # Adding WQ_PERCPU where another value already has an affinity flag would give both.
    hints = Hints(flags_conditional=any(v & ctx.bits.affinity for v in info.values))
    detail = "; ".join(x for x in (detail, via_text(site).strip()) if x)
    # The paths that lack both, each by the decisions leading there and its assignments.
    chain = list(site.prefix)
    for flags in info.missing_paths or (site.flags,):
        if decisions_taken(flags):
            chain += condition_steps(flags)
    return [finding(site, ctx, RULE, detail, chain, hints=hints, role="flags")]
