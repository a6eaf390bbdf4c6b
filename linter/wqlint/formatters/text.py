"""path:line:col: warning: message [rule-id], then the chain and the migration, indented."""
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
        if f.migration:
            out.append(f"    fix: {f.migration}")
    return "\n".join(out) + ("\n" if out else "")
