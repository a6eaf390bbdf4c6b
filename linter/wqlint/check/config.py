"""Which CONFIG_ options a finding hangs on, as this build has them.

A finding whose flags or max_active depend on an `#if` on a CONFIG_ option (around the call, a
step of its chain, or the live definition of a macro they use, in the file or a header) says
so: "(with CONFIG_X=y)", "(with CONFIG_X not set)", and a chain step for each such `#if`.
"""
from __future__ import annotations

import os
import re

from wqlint.check import names

_IDENT = re.compile(r"[A-Za-z_]\w*")
_CONFIG = re.compile(r"\bCONFIG_\w+")
LEVELS = 4


def configuration(site, unit, orig, mapping, api_header):
    """(["CONFIG_X=y", ...], [(path, line of the #if, note)]) for a site in original terms."""
    from wqlint.scan.values import walk
    places = set()
    # (A QueueUse has no values nor prefix: its call's line alone.)
    for v in (getattr(site, "flags", None), getattr(site, "max_active", None)):
        for node in walk(v) if v is not None else ():
            if node.step is not None:
                places.add((node.step.path, node.step.line))
    for st in getattr(site, "prefix", ()):
        places.add((st.path, st.line))
    places.add((site.path, site.line))
    # Macros used on those lines, where the unit defines them, and the macros they use
    # (LEVELS levels down), looked up together, one pass over the unit per level. The API's
    # own macros (alloc_workqueue() over alloc_hooks() on v6.17+) are not followed into: how
    # the workqueue API is configured is not the caller's choice.
    level = []
    for path, line in places:
        if mapping.is_main(path):
            units = unit.lines_of(mapping.is_main, line)
            if units:
                level.append((orig.line(path, line), units[0]))
    seen = set()
    for _ in range(LEVELS):
        wanted = {}
        for text, before in level:
            for name in _IDENT.findall(text):
                if name not in seen and name not in names.CPU_COUNTS and not name.startswith("CONFIG_"):
                    seen.add(name)
                    wanted[name] = before
        level = []
        for _name, (uline, body) in unit.definitions(wanted).items():
            at = unit.where(uline)
            if at is None or at[0].startswith("<"):
                continue
            path = os.path.normpath(at[0])
            places.add((path, at[1]))
            if path != api_header:
                level.append((body, uline))
    configs, steps = [], []
    for path, line in sorted(places):
        if path.startswith("<") or path == api_header:
            continue
        for if_line, texts in orig.conditionals(path, line):
            shown = []
            for t in texts:
                for name in _CONFIG.findall(t):
                    got = unit.config(name)
                    if got not in shown:
                        shown.append(got)
            if not shown:
                continue
            note = f"'{texts[0]}'" + (f" ('{texts[-1]}' branch)" if len(texts) > 1 else "") + \
                f": {', '.join(shown)} in this build"
            if (path, if_line, note) not in steps:
                steps.append((path, if_line, note))
            for n in shown:
                if n not in configs:
                    configs.append(n)
    return configs, steps
