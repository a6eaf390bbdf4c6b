"""What unbound-max-active-cpu-count and percpu-max-active-cpu-count share: the path from
max_active to a CPU count the caller chose, and the consequence on the scanned version."""
from __future__ import annotations

from wqlint import api, kversion
from wqlint.checks._flags import flag_info
from wqlint.checks.common import applies, finding, via_text
from wqlint.checks.context import CheckContext
from wqlint.scan.site import Site
from wqlint.scan.values import CpuCount, evaluate, find_path, project, steps_along, tunables

UNBOUND = "unbound-max-active-cpu-count"
PERCPU = "percpu-max-active-cpu-count"


def cpu_origin_path(site: Site, ctx: CheckContext):
    """Path to a CPU count chosen by the caller (not the workqueue API's own limits)."""
    return find_path(site.max_active, lambda v: isinstance(v, CpuCount)
                     and not (v.step and v.step.path == ctx.api_header))


def judge(site: Site, ctx: CheckContext, rule_id: str) -> list:
    """The finding of rule_id (UNBOUND or PERCPU) when the site's max_active is a CPU count
    and its flags say the queue is per-CPU (PERCPU) or may be unbound (UNBOUND)."""
    path = cpu_origin_path(site, ctx)
    if path is None:
        return []
    info = flag_info(site, ctx)
    if rule_id != (PERCPU if info.unbound == "no" else UNBOUND) or not applies(site, ctx, rule_id):
        return []
    origin = path[-1]
    n = ctx.ncpus
    values, _complete = evaluate(project(site.max_active, path), n)
    at_n = max(values) if values else None
    all_values, _ = evaluate(site.max_active, n)
    ver = kversion.show(ctx.version)
    parts = []
    unbound = rule_id == UNBOUND
    # What the kernel keeps of max_active: it clamps to WQ_MAX_ACTIVE (2048 since v6.13; an
    # unbound queue's WQ_UNBOUND_MAX_ACTIVE before v6.6) with a pr_warn at allocation.
    cap = api.max_active_limit(ctx.version, unbound, n)
    kept = min(at_n, cap) if at_n is not None else None
    clamped = (f" (max_active {at_n} is clamped to WQ_MAX_ACTIVE, {cap} on {ver}, with a pr_warn "
               f"at allocation)") if at_n is not None and at_n > cap else ""
    if rule_id == PERCPU:
        if kept is not None:
            parts.append(f"per-CPU queue: max_active is per CPU on every kernel; with {n} CPUs "
                         f"max_active = {at_n}, up to {n} x {kept} = {n * kept} in-flight items{clamped}")
    else:
        scope = api.unbound_scope(ctx.version)
        if scope == "node":
            parts.append(f"on {ver} max_active of an unbound queue is per NUMA node")
            if kept is not None:
                parts.append(f"with {n} CPUs max_active = {at_n} on each node, "
                             f"{2 * kept} in flight on a 2-node machine{clamped}")
        elif scope == "cpu":
            parts.append(f"on {ver} max_active of an unbound queue is per CPU (636b927eba5b)")
            if kept is not None:
                parts.append(f"with {n} CPUs max_active = {at_n}, up to {n} x {kept} = {n * kept} "
                             f"in-flight items{clamped}")
        else:
            if origin.static_max is not None:
                parts.append(f"on {ver} max_active of an unbound queue is system-wide (5797b1c18919); "
                             f"{origin.kind} is a build-time maximum, not the machine's CPU count")
            else:
                parts.append(f"on {ver} max_active of an unbound queue is system-wide (5797b1c18919) "
                             f"but fixed at the {origin.kind} seen at allocation, not updated on CPU hotplug")
            if kept is not None:
                parts.append(f"with {n} CPUs up to {kept} in-flight items{clamped}")
        if info.unbound == "some":
            parts.append("flags are conditional: WQ_UNBOUND in some configurations")
        elif info.unbound == "unknown":
            parts.append("flags could not be resolved")
    tun = tunables(site.max_active)
    if tun:
        parts.append(f"a default, tunable through {tun[0].how}")
    if len(values) > 1:
        parts.append("conditional: max_active is one of " + ", ".join(str(v) for v in sorted(values)[:6])
                     + f" with {n} CPUs")
    elif all_values != values or not _complete:
        parts.append("other assignments reach it too")
    detail = "; ".join(parts) + via_text(site)
    chain = list(site.prefix) + steps_along(path)
    # On v7.1+ the pods of the per-pod limit are cache_shard's (4cdc8a7389d5).
    case = "cache-shard" if api.default_affinity_scope(ctx.version) == "cache_shard" else "default"
    return [finding(site, ctx, rule_id, detail, chain, case)]
