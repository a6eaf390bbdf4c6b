"""Strict loading of rules.yaml into frozen records.

rules.yaml is the only place rule prose lives. Loading is strict: an unknown key, a missing
key, a duplicate id or a bad value is a CatalogueError that names ``rules.yaml:LINE``.
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import yaml

from wqlint import errors
from wqlint.finding import NO_HINTS, Hints
from wqlint.fix_kinds import NAMES as EDIT_KINDS
from wqlint.project_files import locate

SEVERITIES = ("error", "warning", "note")
FIX_SAFETY = ("safe", "unsafe", "manual")
DOC_SECTIONS = ("what-it-does", "why-is-this-bad", "example", "use-instead", "fix-safety")
RULE_KEYS = {"id", "severity", "message", "kernel-versions", "requires-symbol", "by-version", "fix",
             "docs", "introduced-by", "migration", "subject"}
REQUIRED_RULE_KEYS = RULE_KEYS - {"requires-symbol", "by-version", "introduced-by"}
# introduced-by: what `wqlint review` says a patch did to make a finding true, by the change
# it made to the queue: "drops FLAG", "adds FLAG" or "changes max_active"; for a rule about a
# work's path to a wait (PATH_CHANGES), by the step of the path the patch's line is.
PATH_CHANGES = ("adds the wait", "adds a step", "adds a path")
_CHANGE_RE = re.compile(r"^(?:(?:drops|adds) _*WQ_[A-Z_]+|changes max_active|"
                        + "|".join(PATH_CHANGES) + r")$")
# A case of by-version: the severity and/or message the rule has on the versions given.
BY_VERSION_KEYS = {"versions", "severity", "message"}
FIX_KEYS = {"strategy", "safety", "targets"}
FIX_TARGETS = ("mainline", "reference")
FIX_CASE_KEYS = {"versions", "edit", "safety", "why"}
FIX_CASE_OPTIONAL = {"when"}  # a hint the finding must carry for the case to apply
# The edits wqlint knows how to make (the kinds of wqlint.fix.edit_kinds); "none" explains without editing.
FIX_EDITS = EDIT_KINDS + ("none",)
FIX_CASE_SAFETY = ("safe", "suggestion")
_ID_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_CONSTRAINT_RE = re.compile(r"^(>=|<=|<|>|==)\s*(\d+)\.(\d+)(?:\.(\d+))?$")


class CatalogueError(errors.WqlintError, status=errors.USAGE):
    """A problem in rules.yaml; str() is 'path:line: problem'."""


# The fields a text of each kind may name, as {field}: what the code fills in. A text naming
# any other field is refused when the catalogue is loaded, so filling one in never fails.
PLACEHOLDERS = {
    # the call's name; a queue's replacement and old name; the queue a work runs on and the one
    # it waits for; a cancel of the item waited for elsewhere: its call, FILE:LINE and function
    "migration": ("cancel", "cancel_at", "cancel_in", "entry", "new", "old", "queue", "target"),
    # the call's new max_active; the scanned version; the work whose path it is
    "introduced-by": ("max_active", "version", "work"),
    "why": ("version",),  # the scanned version
}


class _Unfilled(dict):
    def __missing__(self, key):  # a field this finding has no value for stays as written
        return "{" + key + "}"


def fill(text: str, **fields) -> str:
    """text with its {field}s filled in (the catalogue's texts are checked at load: every
    field one names is a known one, and braces are balanced)."""
    return text.format_map(_Unfilled(fields))


def _template(path, node, text: str, kind: str, what: str) -> str:
    """text, checked to name only the fields of kind (PLACEHOLDERS) as plain {field}s."""
    allowed = PLACEHOLDERS[kind]
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise _err(path, node, f"{what}: {exc} (write {{{{ or }}}} for a brace)") from None
    for _literal, field, spec, conversion in parts:
        if field is not None and (field not in allowed or spec or conversion):
            known = ", ".join("{" + f + "}" for f in allowed)
            shown = "{" + field + ("!" + conversion if conversion else "") + (":" + spec if spec else "") + "}"
            raise _err(path, node, f"{what}: unknown placeholder {shown} (known: {known})")
    return text


@dataclass(frozen=True)
class VersionRange:
    constraints: tuple  # of (op, (major, minor, sub))
    text: str

    def contains(self, version: tuple) -> bool:
        ops = {
            ">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b, "<": lambda a, b: a < b,
            ">": lambda a, b: a > b, "==": lambda a, b: a == b,
        }
        return all(ops[op](tuple(version[:3]), bound) for op, bound in self.constraints)


@dataclass(frozen=True)
class FixCase:
    """How a rule's finding is fixed for one target on the kernel versions given."""

    versions: VersionRange
    edit: str  # one of FIX_EDITS
    safety: str  # safe | suggestion
    why: str  # the reasoning; {version} is replaced by the scanned version
    when: str = ""  # the case applies only to findings with this hint (Hints.has()); "": all


@dataclass(frozen=True)
class VersionCase:
    """What a rule says on some kernel versions, in place of its own severity and message."""

    versions: VersionRange
    severity: Optional[str]  # None: the rule's own
    message: Optional[str]  # None: the rule's own


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    message: str
    kernel_versions: VersionRange
    requires_symbol: Optional[str]
    fix_strategy: str
    fix_safety: str
    docs: dict  # section name -> text, in DOC_SECTIONS order
    fix_targets: tuple = ()  # of (target, tuple of FixCase), in FIX_TARGETS order
    introduced_by: tuple = ()  # of (change, text): {max_active}, {version} are filled in
    migration: tuple = (("default", ""),)  # of (case, text): what a finding tells to do
    subject: str = ""  # what a patch fixing only this rule does, for its subject line

    def migration_text(self, case: str = "default", **fields) -> str:
        """The finding's advice for case (the default when the rule has no such case);
        {entry} and the other fields are filled in."""
        texts: dict[str, str] = dict(self.migration)
        text = texts.get(case, texts["default"])
        return fill(text, **fields)

    def change_text(self, change: str):
        """What review says when a patch makes this rule's finding true by change, or None."""
        return next((text for key, text in self.introduced_by if key == change), None)

    by_version: tuple = ()  # of VersionCase: the first whose versions hold decides

    def _case(self, version):
        return next((c for c in self.by_version if c.versions.contains(version)), None)

    def severity_on(self, version: tuple) -> str:
        case = self._case(version)
        return case.severity if case is not None and case.severity else self.severity

    def message_on(self, version: tuple) -> str:
        case = self._case(version)
        return case.message if case is not None and case.message else self.message

    def severity_text(self) -> str:
        """The severity and its exceptions by version: 'warning on >=7.2, else note'."""
        cases = [f"{c.severity} on {c.versions.text}" for c in self.by_version if c.severity]
        return ", ".join(cases + [f"else {self.severity}"]) if cases else self.severity

    def fix_case(self, target: str, version: tuple, hints: Hints = NO_HINTS):
        """The first case of target whose versions hold for version (and whose hint, when it
        names one, is among the finding's hints), or None."""
        for name, cases in self.fix_targets:
            if name == target:
                return next((c for c in cases if c.versions.contains(version) and (not c.when or hints.has(c.when))),
                            None)
        return None

    def doc_markdown(self) -> str:
        """The rule's section of docs/rules.md: doc_text() under a heading that is its id (the
        anchor SARIF's helpUri points at)."""
        lines = self.doc_text().splitlines()
        out = [f"## {self.id}", "", f"Severity: {self.severity_text()}."]
        for line in lines[1:]:
            out.append("### " + line[3:] if line.startswith("## ") else line)
        return "\n".join(out).rstrip("\n") + "\n"

    def doc_text(self) -> str:
        """The rule's help page, as printed by `wqlint explain`."""
        titles = {
            "what-it-does": "What it does", "why-is-this-bad": "Why is this bad?",
            "example": "Example", "use-instead": "Use instead", "fix-safety": "Fix safety",
        }
        out = [f"{self.id} ({self.severity})", "", self.message, ""]
        for key in DOC_SECTIONS:
            out.append(f"## {titles[key]}")
            body = self.docs[key].rstrip("\n")
            if key in ("example", "use-instead"):
                out.extend("    " + line if line else "" for line in body.splitlines())
            else:
                out.append(body)
            out.append("")
        out.append(f"Fix: {self.fix_strategy} ({self.fix_safety})")
        for case in self.by_version:
            if case.severity:
                out.append(f"Severity on {case.versions.text}: {case.severity}")
            if case.message:
                out.append(f"Message on {case.versions.text}: {case.message}")
        out.append(f"Kernel versions: {self.kernel_versions.text}")
        if self.requires_symbol:
            out.append(f"Only in trees that define {self.requires_symbol}.")
        return "\n".join(out) + "\n"


@dataclass(frozen=True)
class Catalogue:
    path: str
    rules: tuple

    def __getitem__(self, rule_id: str) -> Rule:
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        raise KeyError(rule_id)

    def ids(self) -> list:
        return [r.id for r in self.rules]


def default_path() -> Path:
    """rules.yaml: $WQLINT_RULES, a packaged copy, or the checkout's top level."""
    return locate("rules.yaml", "WQLINT_RULES")


def _err(path: str, node, problem: str) -> CatalogueError:
    line = node.start_mark.line + 1 if node is not None else 1
    return CatalogueError(f"{path}:{line}: {problem}")


def _mapping(path, node, what):
    if not isinstance(node, yaml.MappingNode):
        raise _err(path, node, f"{what} must be a mapping")
    seen = {}
    for key, value in node.value:
        if not isinstance(key, yaml.ScalarNode):
            raise _err(path, key, f"{what}: keys must be strings")
        if key.value in seen:
            raise _err(path, key, f"{what}: duplicate key '{key.value}'")
        seen[key.value] = (key, value)
    return seen


def _string(path, node, what) -> str:
    if not isinstance(node, yaml.ScalarNode) or node.tag != "tag:yaml.org,2002:str":
        raise _err(path, node, f"{what} must be a string")
    if not node.value.strip():
        raise _err(path, node, f"{what} must not be empty")
    return node.value


def _keys(path, node, entries, allowed, required, what):
    for key, (knode, _) in entries.items():
        if key not in allowed:
            raise _err(path, knode, f"{what}: unknown key '{key}' (allowed: {', '.join(sorted(allowed))})")
    for key in sorted(required):
        if key not in entries:
            raise _err(path, node, f"{what}: missing key '{key}'")


def _fix_targets(path, node) -> tuple:
    targets = _mapping(path, node, "fix.targets")
    _keys(path, node, targets, set(FIX_TARGETS), set(FIX_TARGETS), "fix.targets")
    out = []
    for name in FIX_TARGETS:
        seq = targets[name][1]
        if not isinstance(seq, yaml.SequenceNode) or not seq.value:
            raise _err(path, seq, f"fix.targets.{name} must be a non-empty list of cases")
        cases = []
        for case in seq.value:
            entries = _mapping(path, case, f"fix.targets.{name} case")
            _keys(path, case, entries, FIX_CASE_KEYS | FIX_CASE_OPTIONAL, FIX_CASE_KEYS, f"fix.targets.{name} case")
            edit = _string(path, entries["edit"][1], "edit")
            if edit not in FIX_EDITS:
                raise _err(path, entries["edit"][1], f"edit '{edit}' is not one of {', '.join(FIX_EDITS)}")
            safety = _string(path, entries["safety"][1], "safety")
            if safety not in FIX_CASE_SAFETY:
                raise _err(path, entries["safety"][1],
                           f"safety '{safety}' is not one of {', '.join(FIX_CASE_SAFETY)}")
            why = " ".join(_string(path, entries["why"][1], "why").split())
            when = _string(path, entries["when"][1], "when") if "when" in entries else ""
            cases.append(FixCase(_versions(path, entries["versions"][1], "versions"), edit, safety,
                                 _template(path, entries["why"][1], why, "why", f"fix.targets.{name} why"), when))
        out.append((name, tuple(cases)))
    return tuple(out)


def _severity(path, node, what="severity") -> str:
    severity = _string(path, node, what)
    if severity not in SEVERITIES:
        raise _err(path, node, f"{what} '{severity}' is not one of {', '.join(SEVERITIES)}")
    return severity


def _message(path, node, what="message") -> str:
    message = _string(path, node, what)
    if "\n" in message.strip():
        raise _err(path, node, f"{what} must be one line")
    if "{" in message or "}" in message:  # nothing is filled in: a {field} would be printed as is
        raise _err(path, node, f"{what}: no placeholders here ({{ or }}): a message is printed as written")
    return message.strip()


def _by_version(path, node) -> tuple:
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise _err(path, node, "by-version must be a non-empty list of cases")
    out = []
    for case in node.value:
        entries = _mapping(path, case, "by-version case")
        _keys(path, case, entries, BY_VERSION_KEYS, {"versions"}, "by-version case")
        if len(entries) == 1:
            raise _err(path, case, "by-version case: give a severity, a message or both")
        out.append(VersionCase(
            _versions(path, entries["versions"][1], "versions"),
            _severity(path, entries["severity"][1]) if "severity" in entries else None,
            _message(path, entries["message"][1]) if "message" in entries else None))
    return tuple(out)


def _versions(path, node, what="kernel-versions") -> VersionRange:
    text = _string(path, node, what)
    constraints = []
    for part in text.split(","):
        m = _CONSTRAINT_RE.match(part.strip())
        if not m:
            raise _err(path, node, f"{what}: bad constraint '{part.strip()}' (want e.g. '>=6.6')")
        constraints.append((m.group(1), (int(m.group(2)), int(m.group(3)), int(m.group(4) or 0))))
    return VersionRange(tuple(constraints), text)


def _rule(path, node) -> Rule:
    entries = _mapping(path, node, "rule")
    _keys(path, node, entries, RULE_KEYS, REQUIRED_RULE_KEYS, "rule")
    get = lambda k: entries[k][1]
    rid = _string(path, get("id"), "id")
    if not _ID_RE.match(rid):
        raise _err(path, get("id"), f"id '{rid}' must be lower-case words joined by '-'")
    severity = _severity(path, get("severity"))
    message = _message(path, get("message"))
    fix = _mapping(path, get("fix"), "fix")
    _keys(path, get("fix"), fix, FIX_KEYS, FIX_KEYS, "fix")
    safety = _string(path, fix["safety"][1], "fix.safety")
    if safety not in FIX_SAFETY:
        raise _err(path, fix["safety"][1], f"fix.safety '{safety}' is not one of {', '.join(FIX_SAFETY)}")
    docs = _mapping(path, get("docs"), "docs")
    _keys(path, get("docs"), docs, set(DOC_SECTIONS), set(DOC_SECTIONS), "docs")
    introduced = []
    if "introduced-by" in entries:
        for key, (knode, vnode) in _mapping(path, get("introduced-by"), "introduced-by").items():
            if not _CHANGE_RE.match(key):
                raise _err(path, knode, f"introduced-by: '{key}' is not 'drops FLAG', 'adds FLAG', "
                                        f"'changes max_active' or one of {', '.join(map(repr, PATH_CHANGES))}")
            text = " ".join(_string(path, vnode, f"introduced-by.{key}").split())
            introduced.append((key, _template(path, vnode, text, "introduced-by", f"introduced-by.{key}")))
    migration = _migration(path, get("migration"))
    subject = _string(path, get("subject"), "subject").strip()
    if "\n" in subject or len(subject) > 60:
        raise _err(path, get("subject"), "subject must be one line of at most 60 characters")
    requires = None
    if "requires-symbol" in entries:
        requires = _string(path, get("requires-symbol"), "requires-symbol")
    return Rule(
        id=rid, severity=severity, message=message,
        kernel_versions=_versions(path, get("kernel-versions")),
        requires_symbol=requires,
        fix_strategy=_string(path, fix["strategy"][1], "fix.strategy").strip(),
        fix_safety=safety,
        docs={k: _string(path, docs[k][1], f"docs.{k}") for k in DOC_SECTIONS},
        fix_targets=_fix_targets(path, fix["targets"][1]),
        introduced_by=tuple(introduced),
        by_version=_by_version(path, get("by-version")) if "by-version" in entries else (),
        migration=migration, subject=subject,
    )


def _migration(path, node) -> tuple:
    """`migration: text`, or a mapping of cases to texts with a `default` case."""
    if not isinstance(node, yaml.MappingNode):
        text = " ".join(_string(path, node, "migration").split())
        return (("default", _template(path, node, text, "migration", "migration")),)
    cases = [(key, _template(path, vnode, " ".join(_string(path, vnode, f"migration.{key}").split()),
                             "migration", f"migration.{key}"))
             for key, (_, vnode) in _mapping(path, node, "migration").items()]
    if "default" not in dict(cases):
        raise _err(path, node, "migration: the cases need a 'default'")
    return tuple(cases)


MAX_CATALOGUE_BYTES = 4 * 1024 * 1024


def load(path=None, reported: frozenset = frozenset()) -> Catalogue:
    """Load and validate the catalogue; raise CatalogueError naming file and line.
    reported: the rule ids that must be described (the ids the checks report, given by
    wqlint.checks.load_catalogue: the catalogue knows no rule's code)."""
    path = Path(path) if path else default_path()
    name = str(path)
    from wqlint import safeio

    try:
        text = safeio.read_text(path, MAX_CATALOGUE_BYTES)
    except safeio.InputRefused as exc:
        if str(exc) == "no such file":
            raise CatalogueError(f"{name}:1: file not found") from None
        raise CatalogueError(f"{name}:1: cannot read: {exc}") from None
    try:
        # libyaml when there: a tenth of the time, which every `wqlint check` with a finding
        # pays. Errors come from the pure-Python parser, whose messages the tests know.
        try:
            root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:  # (the composer recurses once per level of nesting)
        raise CatalogueError(f"{name}:1: not valid YAML: nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        raise CatalogueError(f"{name}:{line}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if root is None:
        raise CatalogueError(f"{name}:1: empty catalogue")
    top = _mapping(name, root, "catalogue")
    _keys(name, root, top, {"rules"}, {"rules"}, "catalogue")
    seq = top["rules"][1]
    if not isinstance(seq, yaml.SequenceNode) or not seq.value:
        raise _err(name, seq, "rules must be a non-empty list")
    rules: list[Rule] = []
    seen: dict[str, int] = {}
    for node in seq.value:
        rule = _rule(name, node)
        if rule.id in seen:
            raise _err(name, node, f"duplicate rule id '{rule.id}' (first at line {seen[rule.id]})")
        seen[rule.id] = node.start_mark.line + 1
        rules.append(rule)
    missing = sorted(reported - set(seen))
    if missing:
        raise _err(name, top["rules"][0], f"no rule '{missing[0]}', which wqlint's checks report"
                   + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    return Catalogue(name, tuple(rules))
