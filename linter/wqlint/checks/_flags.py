"""What the rules of an allocation's flags read from them: which flags every value has, on
which paths an affinity flag is missing, which internal flags the caller wrote itself. The
flags come resolved from the scanner (Site.flags), their bits as the tree defines them
(FlagBits)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from wqlint import api
from wqlint.checks.context import CheckContext
from wqlint.finding import Step, Via
from wqlint.scan.site import FlagBits, Site
from wqlint.scan.values import Value, cases, decision_arms, evaluate, find_path, steps_along, walk


@dataclass
class FlagInfo:
    values: set
    complete: bool
    unbound: str  # yes | no | some | unknown
    ordered: bool
    legacy: bool
    affinity_missing: bool  # some value has no affinity flag (FlagBits.affinity)
    sysfs: bool
    affinity_conflict: bool = False  # some value has both WQ_PERCPU and WQ_UNBOUND
    # The flags on each path that lacks both (values.narrow: the decisions leading there are
    # steps of it); empty when the flags do not depend on decisions of the C.
    missing_paths: tuple = ()


# The flags the rules of an allocation read: those a review says a patch adds or drops.
JUDGED = ("WQ_UNBOUND", "WQ_PERCPU", "WQ_BH", "WQ_SYSFS", "__WQ_ORDERED", "__WQ_LEGACY")


# The flags the rules about a work's path to a wait read of the allocations on the path.
PATH_JUDGED = ("WQ_MEM_RECLAIM", "__WQ_LEGACY")


def always_set(flags: Value, bits: FlagBits, names: tuple = JUDGED) -> frozenset:
    """The flags of names (JUDGED) set in every value the flags can have (empty when unknown)."""
    values, _complete = evaluate(flags, 1)
    return frozenset(name for name in names
                     if values and bits.bit(name) and all(v & bits.bit(name) for v in values))


def flag_info(site: Site, ctx: CheckContext) -> FlagInfo:
    """info_of() the site's flags, worked out once for every rule that asks."""
    return ctx.once(_info, site.flags)


def _info(flags: Value, ctx: CheckContext) -> FlagInfo:
    return info_of(flags, ctx.bits)


def info_of(flags: Value, bits: FlagBits) -> FlagInfo:
    """What the flags say, judged path by path: a value is possible only when the decisions
    leading to its parts agree (flags |= WQ_UNBOUND on one arm, |= WQ_PERCPU on the other
    is never neither)."""
    values, complete = set(), True
    for _, (narrowed,) in cases((flags,), mark=False):
        vals, ok = evaluate(narrowed, 1)
        values |= vals
        complete = complete and ok and bool(vals)
    if not values:
        return FlagInfo(values, False, "unknown", False, False, False, False)
    unbound_bit, percpu = bits.bit("WQ_UNBOUND"), bits.bit("WQ_PERCPU")
    ordered, legacy = bits.bit("__WQ_ORDERED"), bits.bit("__WQ_LEGACY")
    with_unbound = [bool(v & unbound_bit) for v in values]
    if all(with_unbound):
        unbound = "yes"
    elif any(with_unbound):
        unbound = "some"
    else:
        unbound = "no" if complete else "unknown"
    missing = bool(percpu) and complete and any(not (v & bits.affinity) for v in values)
    return FlagInfo(
        values=values, complete=complete, unbound=unbound,
        ordered=bool(ordered) and all(v & ordered for v in values),
        legacy=bool(legacy) and any(v & legacy for v in values),
        affinity_missing=missing, sysfs=any(v & bits.bit("WQ_SYSFS") for v in values),
        affinity_conflict=bool(percpu) and any(v & percpu and v & unbound_bit for v in values),
        missing_paths=_missing_paths(flags, bits) if missing else (),
    )


def _missing_paths(flags: Value, bits: FlagBits) -> tuple:
    """The flags on each path without an affinity flag, by the decisions that decide it:
    those where taking the other arm, all else equal, gives or takes the flag away."""
    arms = decision_arms(flags)
    if not arms:
        return ()
    affinity = bits.affinity
    names = list(arms)
    outcome = {}
    for choice, (narrowed,) in cases((flags,), keys=set(names), mark=False, dedupe=False):
        vals, ok = evaluate(narrowed, 1)
        if ok and vals:
            outcome[tuple(choice.get(k) for k in names)] = any(not (v & affinity) for v in vals)
    relevant = set()
    for combo, lacking in outcome.items():
        for i, k in enumerate(names):
            for arm in arms[k]:
                other = combo[:i] + (arm,) + combo[i + 1:]
                if other in outcome and outcome[other] != lacking:
                    relevant.add(k)
    if not relevant:
        return ()  # with or without the flag whatever the decisions: nothing to tell apart
    out = []
    for _, (narrowed,) in cases((flags,), keys=relevant):
        vals, ok = evaluate(narrowed, 1)
        if ok and any(not (v & affinity) for v in vals):
            out.append(narrowed)
    return tuple(out)


def caller_flags(site: Site) -> list:
    """The parts of the flags the caller wrote at the reported call: all of them for a call of
    alloc_workqueue() itself, else what the call passes for the wrapper's flags parameter (not
    what the wrapper or the API's macro adds)."""
    if not site.via:
        return [site.flags]
    last = max(site.line, site.end_line)
    return [node for node in walk(site.flags) if node.step is not None and node.step.path == site.path
            and site.line <= node.step.line <= last and _via(node.step) is Via.ARGUMENT]


def _via(step: Optional[Step]) -> Optional[Via]:
    return step.origin.via if step is not None and step.origin is not None else None


def internal_flags(site: Site) -> list:
    """(name, steps) of the internal __WQ_* flags (api.FLAG_BITS) the caller wrote itself,
    with the steps from the flags to where the flag is named (through a local...)."""
    internal = {name for name, _bit, _since in api.FLAG_BITS if name.startswith("__")}

    def named(node) -> str:
        if _via(node.step) not in (Via.ENUMERATOR, Via.MACRO):
            return ""
        return node.step.origin.name if node.step.origin.name in internal else ""
    out: list[tuple[str, list]] = []
    for part in caller_flags(site):
        for node in walk(part):
            name = named(node)
            if name and all(name != n for n, _ in out):
                path = find_path(site.flags, lambda v, node=node: v is node)
                assert path is not None, "walk(part) yields nodes of site.flags"
                out.append((name, steps_along(path)))
    return out
