"""The rules: one module per rule, named after its id, found through REGISTRY.

A rule module defines RULE (its id in rules.yaml), READS (the parts of a site it judges:
"flags", "max_active") and check(site, ctx) -> list of Finding. The scanner only resolves
sites; nothing outside this package names a rule.
"""
from __future__ import annotations

import importlib
import pkgutil

from wqlint.scan.site import paths

REGISTRY: dict = {}
for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name.startswith("_") or _info.name == "common":
        continue
    _module = importlib.import_module(f"{__name__}.{_info.name}")
    REGISTRY[_module.RULE] = _module

# Rules that read only the flags: judged where the flags are known, even when max_active of
# the same call still comes from a wrapper's caller.
FLAGS_ONLY = frozenset(rule for rule, m in REGISTRY.items() if m.READS == frozenset({"flags"}))


def judge(sites, ctx) -> list:
    """The findings of every rule for the sites, once each, in report order."""
    findings, seen = [], set()
    for site in sites:
        if "*" in site.suppressed:
            continue
        # Once per combination of the decisions flags and max_active both depend on.
        for path, module in ((p, m) for p in paths(site) for m in REGISTRY.values()):
            for f in module.check(path, ctx):
                key = (f.rule_id, f.path, f.line, f.col)
                if key not in seen:
                    seen.add(key)
                    findings.append(f)
    findings.sort(key=lambda f: f.sort_key())
    return findings
