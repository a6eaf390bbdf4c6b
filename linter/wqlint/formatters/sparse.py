"""sparse's format, for `wqlint check` in the build log beside the compiler's warnings:
`file:line:col: warning: message [rule-id]`, then the chain and the migration, indented."""
from __future__ import annotations


def format(report, catalogue) -> str:
    out = []
    for f in report.findings:
        out.append(f"{f.path}:{f.line}:{f.col}: {f.severity}: {f.message} [{f.rule_id}]")
        for step in f.chain:
            out.append(f"    {step.path}:{step.line}: {step.note}")
        if f.migration:
            out.append(f"    fix: {f.migration}")
    return "\n".join(out) + ("\n" if out else "")
