"""A saved scan (`wqlint scan --format json`) as the input of fix and bulk, checked against
the files as they are now: a finding whose call line changed since is refused, not guessed."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from wqlint import errors, kversion, safeio
from wqlint.finding import Finding, Report, name_bytes
from wqlint.scan.source import SourceError, SourceFile, call_digest, read_source


class SavedError(errors.WqlintError):
    """str() is one line naming the file and the problem."""


MAX_SAVED_BYTES = 256 * 1024 * 1024
MAX_SAVED_FINDINGS = 200_000


def _document(path: str):
    try:
        text = safeio.read_text(path, MAX_SAVED_BYTES)
    except safeio.InputRefused as exc:
        raise SavedError(f"{path}: cannot read: {exc}") from None
    try:
        doc = safeio.parse_json(text)
    except safeio.InputRefused as exc:
        raise SavedError(f"{path}: not a `wqlint scan --format json` document ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("findings"), list):
        raise SavedError(f"{path}: not a `wqlint scan --format json` document (no list of findings)")
    if len(doc["findings"]) > MAX_SAVED_FINDINGS:
        raise SavedError(f"{path}: more than {MAX_SAVED_FINDINGS} findings, not read")
    return doc


def _finding(path: str, n: int, d, known: frozenset) -> Finding:
    """One saved finding, every field of the type a scan writes and a rule of the catalogue
    (known: its ids), else SavedError."""
    problem = None
    if not isinstance(d, dict):
        problem = "not an object"
    else:
        for key, kind in (("rule", str), ("severity", str), ("path", str), ("line", int),
                          ("column", int), ("message", str)):
            if not isinstance(d.get(key), kind) or isinstance(d.get(key), bool):
                problem = f"'{key}' missing or not a {kind.__name__}"
                break
        else:
            chain = d.get("chain", [])
            args = d.get("arguments", {})
            if not isinstance(chain, list) or not all(
                    isinstance(s, dict) and isinstance(s.get("path"), str) and isinstance(s.get("line"), int)
                    and isinstance(s.get("text"), str) and isinstance(s.get("note"), str) for s in chain):
                problem = "'chain' is not a list of steps"
            elif not isinstance(args, dict) or \
                    not all(isinstance(args.get(k, -1), int) for k in ("flags", "max_active")):
                problem = "'arguments' is not an object of argument indices"
            elif not isinstance(d.get("hints", []), list) or not all(isinstance(h, str) for h in d.get("hints", [])):
                problem = "'hints' is not a list of strings"
            elif not isinstance(d.get("identity") or {}, dict):
                problem = "'identity' is not an object"
            elif not isinstance(d.get("call_sha256", ""), str):
                problem = "'call_sha256' is not a string"
            elif not (0 < d["line"] < 1 << 31 and 0 < d["column"] < 1 << 31):
                problem = "line or column out of range"
            elif d["rule"] not in known:
                problem = f"rule '{d['rule'][:80]}' is not in the catalogue"
    if problem is None:
        try:
            return Finding.from_dict(d)
        except (KeyError, TypeError, ValueError) as exc:
            problem = str(exc)
    raise SavedError(f"{path}: not a `wqlint scan --format json` document (finding {n}: {problem})")


def _named(root: Path, f: Finding) -> Finding:
    """f under its file's name: a byte of a name that is not UTF-8 stands in the JSON as
    the text \\xff (finding.unicode_text), the file itself under the byte."""
    raw = name_bytes(f.path)
    if raw == f.path or os.path.lexists(root / f.path):
        return f
    return dataclasses.replace(f, path=raw)


def load(path: str, root: Path, paths: list, known, kernel_version=None) -> Report:
    """known: the rule ids of the catalogue in use."""
    doc = _document(path)
    known = frozenset(known)
    findings = [_named(root, _finding(path, n, d, known)) for n, d in enumerate(doc["findings"], 1)]
    try:
        version = kernel_version or kversion.parse_version(str(doc.get("kernel_version", "")))
    except ValueError as exc:
        raise SavedError(f"{path}: not a `wqlint scan --format json` document ({exc})") from None
    targets = [os.path.relpath(os.path.abspath(p), root).replace(os.sep, "/") for p in paths]
    wanted = [f for f in findings
              if any(t == "." or f.path == t or f.path.startswith(t + "/") for t in targets)]
    real_root = os.path.realpath(root)
    for f in findings:
        if "\0" in f.path:
            raise SavedError(f"{path}: finding in a path with a NUL byte")
        real = os.path.realpath(root / f.path)
        if os.path.isabs(f.path) or (real != real_root and not real.startswith(real_root + os.sep)):
            raise SavedError(f"{path}: finding in {f.path}, outside the tree {root}")
    sources = {}
    for f in wanted:
        if f.path not in sources:
            try:
                sources[f.path] = SourceFile(f.path, read_source(root / f.path, root))
            except SourceError as exc:
                raise SavedError(f"{f.path}: {exc}") from None
        # The whole call, not its first line: after a fix the first line often reads the same
        # (the flags are on the next one) and the finding would be fixed a second time.
        # ('' on both sides: no call the fixer could edit there, then or now.)
        if call_digest(sources[f.path], f.line, f.col) != f.call_sha:
            raise SavedError(f"{f.path}:{f.line}: changed since the scan ({path}); scan again")
    return Report(root=str(root), findings=wanted, kernel_version=version,
                  kernel_version_source="--kernel-version" if kernel_version else path)
