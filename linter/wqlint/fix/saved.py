"""A saved scan (`wqlint scan --format json`) as the input of fix and bulk, checked against
the files as they are now: a finding whose call line changed since is refused, not guessed."""
from __future__ import annotations

import json
import os
from pathlib import Path

from wqlint import kversion
from wqlint.finding import Finding, Report
from wqlint.scan.source import SourceError, SourceFile, read_source


class SavedError(Exception):
    """str() is one line naming the file and the problem."""


def load(path: str, root: Path, paths: list, kernel_version=None) -> Report:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        findings = [Finding.from_dict(d) for d in doc["findings"]]
        version = kernel_version or kversion.parse_version(doc["kernel_version"])
    except OSError as exc:
        raise SavedError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise SavedError(f"{path}: not a `wqlint scan --format json` document ({exc})") from None
    targets = [os.path.relpath(os.path.abspath(p), root).replace(os.sep, "/") for p in paths]
    wanted = [f for f in findings
              if any(t == "." or f.path == t or f.path.startswith(t + "/") for t in targets)]
    real_root = os.path.realpath(root)
    for f in findings:
        real = os.path.realpath(root / f.path)
        if os.path.isabs(f.path) or (real != real_root and not real.startswith(real_root + os.sep)):
            raise SavedError(f"{path}: finding in {f.path}, outside the tree {root}")
    sources = {}
    for f in wanted:
        if f.path not in sources:
            try:
                sources[f.path] = SourceFile(f.path, read_source(root / f.path))
            except SourceError as exc:
                raise SavedError(f"{f.path}: {exc}") from None
        first = f.chain[0] if f.chain else None
        if first is not None and first.line == f.line and first.path == f.path:
            now = sources[f.path].line_text(f.line).strip()
            if now != first.text:
                raise SavedError(f"{f.path}:{f.line}: changed since the scan ({path}); scan again")
    return Report(root=str(root), findings=wanted, kernel_version=version,
                  kernel_version_source="--kernel-version" if kernel_version else path)
