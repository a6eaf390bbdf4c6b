"""path:line:col: warning: message [rule-id], then the chain (of a finding that stands for several
works, the first work's, and the others named), and the migration, indented."""
from __future__ import annotations


def format(report, catalogue) -> str:
    return lines(report, source=True)


def lines(report, source: bool) -> str:
    """The findings compiler-style; source: each chain step's source line under it."""
    out = []
    for f in report.findings:
        f = f.shown()
        out.append(f"{f.path}:{f.line}:{f.col}: {f.severity}: {f.message} [{f.rule_id}]")
        for step in f.chain:
            out.append(f"    {step.path}:{step.line}: {step.note}")
            if source:
                out.append(f"        {step.text}")
        if len(f.works) > 1:  # the chain is the first work's; the others are named
            others = [w.name for w in f.works[1:]]
            out.append(f"    and {len(others)} other work{'s' if len(others) > 1 else ''}: {'; '.join(others)}")
        if f.migration:
            out.append(f"    fix: {f.migration}")
    return "\n".join(out) + ("\n" if out else "")
