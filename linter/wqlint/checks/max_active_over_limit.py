"""max-active-over-limit: a value the kernel will clamp, with a warning, at run time."""
from __future__ import annotations

from wqlint import api, kversion
from wqlint.checks._flags import flag_info
from wqlint.checks.common import applies, finding, via_text
from wqlint.checks.context import CheckContext
from wqlint.scan.site import Site
from wqlint.scan.values import CpuCount, evaluate, find_path, known_bound, project, steps_along, steps_in

RULE = "max-active-over-limit"
READS = frozenset({"flags", "max_active"})


def _limit(ctx: CheckContext, unbound: bool, ncpus: int) -> int:
    return api.max_active_limit(ctx.version, unbound, ncpus)


def check(site: Site, ctx: CheckContext) -> list:
    if not applies(site, ctx, RULE):
        return []
    api = lambda v: isinstance(v, CpuCount) and v.step and v.step.path == ctx.api_header
    if find_path(site.max_active, api):
        return []  # the API's own WQ_UNBOUND_MAX_ACTIVE is sized to its limit
    unbound = flag_info(site, ctx).unbound in ("yes", "some")
    cpu = find_path(site.max_active, lambda v: isinstance(v, CpuCount))
    value = project(site.max_active, cpu) if cpu else site.max_active
    _, complete = evaluate(value, ctx.ncpus)
    bounded = False
    if not complete and cpu:
        # A CPU count that caps run-time input (min(token, num_online_cpus())) bounds it; the
        # other factors are taken as the C writes them (a default, not a mount option).
        value, bounded = known_bound(value), True
        _, complete = evaluate(value, ctx.ncpus)
    if not complete:
        return []  # only what is known for certain: no guesses about run-time input
    first = None
    for n in (1, ctx.max_cpus):
        values, _ = evaluate(value, n)
        if values and max(values) > _limit(ctx, unbound, n):
            first = n
            break
    if first is None:
        return []
    lo, hi = 1, first
    while lo < hi:  # the smallest CPU count at which the value goes over
        mid = (lo + hi) // 2
        values, _ = evaluate(value, mid)
        if values and max(values) > _limit(ctx, unbound, mid):
            hi = mid
        else:
            lo = mid + 1
    values, _ = evaluate(value, lo)
    limit = _limit(ctx, unbound, lo)
    if cpu and lo > 1:
        detail = (f"from {lo} CPUs on it {'can reach' if bounded else 'is'} {max(values)}, over "
                  f"WQ_MAX_ACTIVE ({limit}) on {kversion.show(ctx.version)}: the queue gets {limit}")
        chain = list(site.prefix) + steps_along(cpu)
        if bounded:  # and where the values it was bounded with come from
            chain += [s for s in steps_in(value) if s not in chain]
    else:
        detail = (f"{max(values)} is over WQ_MAX_ACTIVE ({limit}) on {kversion.show(ctx.version)}: "
                  f"the queue gets {limit}")
        chain = list(site.prefix)
    return [finding(site, ctx, RULE, detail + via_text(site), chain)]
