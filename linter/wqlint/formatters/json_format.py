"""A JSON document: the kernel version used and every finding with its chain."""
from __future__ import annotations

from wqlint import kversion
from wqlint.finding import stable_fingerprints
from wqlint.formatters import jsondoc


def format(report, catalogue) -> str:
    stable = stable_fingerprints(report.findings)
    doc = {
        "root": report.root,
        "kernel_version": kversion.show(report.kernel_version),
        "kernel_version_source": report.kernel_version_source,
        "findings": [{**f.to_dict(), "stable_fingerprint": stable[id(f)]} for f in report.findings],
        "errors": [{"path": e.path, "problem": e.problem} for e in report.errors],
    }
    return jsondoc.dumps(doc, indent=2) + "\n"
