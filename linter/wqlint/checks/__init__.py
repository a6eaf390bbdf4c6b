"""The rules: one module per rule, named after its id, found through REGISTRY.

A rule module defines RULE (its id in rules.yaml), READS (the parts of a site it judges:
"flags", "max_active", "name" of an allocation Site, "queue" of a QueueUse: a queue named at
a call that takes one, or "flow" of a Flow: a work item's function reaching a flush, scan.work)
and check(site, ctx) -> list of Finding. A rule of flows that reports one cause once for all
the works reaching it also defines check_many(flows, ctx) -> list of Finding, given every
Flow of the scan at once (check(flow, ctx) is then check_many([flow], ctx)). The scanner only
resolves sites; nothing outside this package names a rule.
"""
from __future__ import annotations

import importlib
from collections.abc import Iterable
import pkgutil

from wqlint import catalogue
from wqlint.finding import numbered
from wqlint.scan.phases import timed
from wqlint.scan.site import PARTS, Flow, QueueUse, SelfWait, Site, paths

_SHARED = ("common", "context", "queue_name")  # helpers, the context (CheckContext), queue names
REGISTRY: dict = {}
for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name.startswith("_") or _info.name in _SHARED:
        continue
    _module = importlib.import_module(f"{__name__}.{_info.name}")
    REGISTRY[_module.RULE] = _module

_ON_USES = tuple(m for m in REGISTRY.values() if "queue" in m.READS)
_ON_FLOWS = tuple(m for m in REGISTRY.values() if "flow" in m.READS)
_ON_WAITS = tuple(m for m in REGISTRY.values() if "wait" in m.READS)
_ON_SITES = tuple(m for m in REGISTRY.values() if m.READS <= PARTS)


@timed("judging")
def judge(sites, ctx) -> list:
    """The findings of every rule for the sites (allocations and queue uses), once each, in
    report order."""
    findings, seen = [], set()
    many: dict = {}  # the rules that judge the flows together (check_many): their flows, in order
    for site in sites:
        if "*" in site.suppressed:
            continue
        judged: Iterable
        if isinstance(site, QueueUse):
            judged = ((site, m) for m in _ON_USES)
        elif isinstance(site, Flow):
            judged = ((site, m) for m in _ON_FLOWS if not hasattr(m, "check_many"))
            for m in _ON_FLOWS:
                if hasattr(m, "check_many"):
                    many.setdefault(m, []).append(site)
        elif isinstance(site, SelfWait):
            judged = ((site, m) for m in _ON_WAITS)
        else:
            # Once per combination of the decisions flags and max_active both depend on.
            judged = ((p, m) for p in paths(site) for m in _ON_SITES if _judges_here(m, site))
        for path, module in judged:
            for f in module.check(path, ctx):
                key: tuple = (f.rule_id, f.path, f.line, f.col)
                if isinstance(site, Flow):
                    # Each work (its function, the queue it runs on) that reaches a flush has its
                    # own warning and its own fix: several drivers reaching one flush of a shared
                    # layer are each named, not folded into the first.
                    key += (f.function, site.site.queue)  # (a queue allocated at two places: one name, one warning)
                elif isinstance(site, SelfWait):
                    key += (f.function,)
                if key not in seen:
                    seen.add(key)
                    findings.append(f)
    for module, flows in many.items():
        findings.extend(module.check_many(flows, ctx))
    return numbered(findings)

def _judges_here(module, site: Site) -> bool:
    """Does the rule judge this site of an allocation? Where a wrapper decides some parts of
    the call and its callers the rest, the scanner makes a site for each (Site.parts): a rule
    judges where all it READS is known (a rule of the flags alone at the wrapper that decides
    them, even when max_active still comes from its callers), and once (not again at the
    callers' sites, Site.parts_elsewhere)."""
    if site.parts is not None and not module.READS <= site.parts:
        return False
    return not module.READS <= site.parts_elsewhere


def unread(rule_on) -> frozenset:
    """The parts of sites that no rule for which rule_on(rule id) holds reads: the scanner
    need not build them (no rule on that reads "flow": no work model)."""
    every = frozenset().union(*(m.READS for m in REGISTRY.values()))
    return every - frozenset().union(*(m.READS for rule, m in REGISTRY.items() if rule_on(rule)))


# Every rule id a check reports: the catalogue must describe each (load_catalogue).
RULE_IDS = frozenset(REGISTRY)


def load_catalogue(path=None) -> catalogue.Catalogue:
    """The catalogue at path (default: catalogue.default_path()), which must describe every
    rule a check reports; CatalogueError names the file and line where it does not."""
    return catalogue.load(path, reported=RULE_IDS)
