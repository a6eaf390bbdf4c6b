"""The tree's own wqlint configuration: `.wqlint.yaml` at the top of the tree, committed with
it, read by every command (scan, review, fix, bulk, check). It selects what is reported:

    rules:
      disable: [legacy-create-workqueue]      # or enable: [...]: only these
    min-severity: warning                     # note | warning | error
    max-findings: 5                           # review: per patch, the most severe first
    paths: [drivers/net/, net/]               # only findings in these ([]: none, muted)

Command-line options say the same for one run and win. The file is data from the tree:
bounded, safe YAML without anchors or aliases, every key and value checked; a problem is a
ConfigError naming the file (and line), which the commands report in one line, exit 2.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from wqlint import errors

NAME = ".wqlint.yaml"
MAX_BYTES = 64 * 1024
SEVERITIES = ("note", "warning", "error")  # in increasing order


class ConfigError(errors.WqlintError, status=errors.USAGE):
    """The configuration cannot be used; str() is one line naming the file."""


@dataclass(frozen=True)
class Config:
    source: str = ""  # the file it came from; '' when there is none
    enable: frozenset | None = None  # None: every rule
    disable: frozenset = frozenset()
    min_severity: str = "note"
    max_findings: int | None = None
    paths: tuple | None = None  # path prefixes relative to the tree; None: all, (): none

    def rule_on(self, rule_id: str) -> bool:
        return (self.enable is None or rule_id in self.enable) and rule_id not in self.disable

    def keeps(self, finding, path: str | None = None) -> bool:
        """path: the finding's path relative to the tree, when finding.path is not."""
        if not self.rule_on(finding.rule_id):
            return False
        if SEVERITIES.index(finding.severity) < SEVERITIES.index(self.min_severity):
            return False
        path = finding.path if path is None else path
        return self.paths is None or any(path == p.rstrip("/") or path.startswith(p) for p in self.paths)

    def select(self, findings: list, base: str | None = None) -> list:
        """base: the directory the findings' paths are relative to, when it is not the tree's
        (`wqlint check` reports them as Kbuild names the file)."""
        if base is None or not self.source:
            return [f for f in findings if self.keeps(f)]
        top = os.path.dirname(self.source)
        return [f for f in findings
                if self.keeps(f, os.path.relpath(os.path.join(base, f.path), top).replace(os.sep, "/"))]

    def override(self, min_severity: str | None = None, max_findings: int | None = None) -> "Config":
        """The command line's options over the file's."""
        return replace(self, min_severity=min_severity or self.min_severity,
                       max_findings=max_findings if max_findings is not None else self.max_findings)


def load(root, rule_ids) -> Config:
    """The configuration of the tree at root (Config() when it has none)."""
    path = os.path.join(os.fspath(root), NAME)
    if not os.path.lexists(path):
        return Config()
    from wqlint import safeio

    try:
        text = safeio.read_text(path, MAX_BYTES, root=root)
    except safeio.InputRefused as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return parse(text, path, rule_ids)


def from_bytes(data: bytes | None, path: str, rule_ids) -> Config:
    """The configuration a .wqlint.yaml of data holds, read elsewhere than from the tree (as
    git has it at a commit); None: no such file. path names it in errors."""
    if data is None:
        return Config()
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_BYTES // 1024} KiB, not read")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{path}: line {line}: not valid UTF-8") from None
    return parse(text, path, rule_ids)


def parse(text: str, path: str, rule_ids) -> Config:
    """The configuration of the text of a .wqlint.yaml; path names it in errors."""
    import yaml

    if re.search(r"(?m)(^|[\s\[{,:-])[&*][^\s\]},]", text):
        raise ConfigError(f"{path}: YAML anchors and aliases are not read here")
    try:
        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{where}: not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply") from None
    if doc is None:
        return Config(source=path)
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: want a mapping of rules, min-severity, max-findings, paths")
    unknown = sorted(str(k) for k in doc if k not in ("rules", "min-severity", "max-findings", "paths"))
    if unknown:
        raise ConfigError(f"{path}: unknown key '{unknown[0]}' (known: rules, min-severity, max-findings, paths)")
    cfg = Config(source=path)
    rules = doc.get("rules")
    if rules is not None:
        if not isinstance(rules, dict) or set(rules) - {"enable", "disable"}:
            raise ConfigError(f"{path}: rules: want 'enable: [ids]' or 'disable: [ids]'")
        for key in ("enable", "disable"):
            if key not in rules:
                continue
            ids = rules[key]
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise ConfigError(f"{path}: rules.{key}: want a list of rule ids")
            bad = [i for i in ids if i not in rule_ids]
            if bad:
                raise ConfigError(f"{path}: rules.{key}: unknown rule '{bad[0]}'")
            if key == "enable":
                cfg = replace(cfg, enable=frozenset(ids))
            else:
                cfg = replace(cfg, disable=frozenset(ids))
    sev = doc.get("min-severity")
    if sev is not None:
        if sev not in SEVERITIES:
            raise ConfigError(f"{path}: min-severity: want one of {', '.join(SEVERITIES)}")
        cfg = replace(cfg, min_severity=sev)
    cap = doc.get("max-findings")
    if cap is not None:
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise ConfigError(f"{path}: max-findings: want a positive number")
        cfg = replace(cfg, max_findings=cap)
    paths = doc.get("paths")
    if paths is not None:
        if not isinstance(paths, list) or not all(isinstance(p, str) and p.strip() for p in paths):
            raise ConfigError(f"{path}: paths: want a list of directories or files of the tree")
        cfg = replace(cfg, paths=tuple(re.sub(r"^(\./)+", "", p.strip()).lstrip("/") if p.strip() not in (".", "./")
                                       else "" for p in paths))
    return cfg


def for_file(path, rule_ids) -> Config:
    """The configuration for a file `wqlint check` is given: the first .wqlint.yaml in its
    directory or above, while those hold a Makefile or Kbuild (the kernel tree or module the
    file belongs to)."""
    here = os.path.dirname(os.path.abspath(os.fspath(path)))
    while True:
        if os.path.lexists(os.path.join(here, NAME)):
            return load(here, rule_ids)
        up = os.path.dirname(here)
        if up == here or not any(os.path.isfile(os.path.join(up, n)) for n in ("Makefile", "Kbuild")):
            return Config()
        here = up


def cap(comments: list, per_patch: int) -> tuple:
    """(kept, left out): at most per_patch comments per patch, the most severe first, then in
    the series' order."""
    kept, left = [], []
    by_patch: dict = {}
    for c in comments:
        by_patch.setdefault(c.origin.patch, []).append(c)
    for _, cs in sorted(by_patch.items()):
        ranked = sorted(cs, key=lambda c: -SEVERITIES.index(c.finding.severity))
        kept += ranked[:per_patch]
        left += ranked[per_patch:]
    keep_ids = {id(c) for c in kept}
    return [c for c in comments if id(c) in keep_ids], [c for c in comments if id(c) not in keep_ids]
