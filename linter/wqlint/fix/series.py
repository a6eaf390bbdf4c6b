"""`wqlint bulk`'s patch series: one patch per subsystem, in `git format-patch` format.

The changed files are grouped by the most specific MAINTAINERS section of each (see
maintainers.py); each group becomes one patch, Cc'd to what the tree's own
scripts/get_maintainer.pl names for its files, with a subject prefix in the subsystem's
style (prefix.py). The commit message states, per rule, the problem on the scanned kernel
version, each site with the chain of definitions that leads to it, and what the change
does and why (Fix.why). Lines are wrapped at 72 columns, so checkpatch.pl --strict has
nothing to say about the message. 0000-cover-letter.patch sums the series up.

The output depends only on the input (given a date): the same changes give the same bytes.
"""
from __future__ import annotations

import email.utils
import os
import re
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.header import Header
from pathlib import Path
from typing import Optional

from wqlint import kversion, safeio
from wqlint.fix.diffstat import count, diffstat
from wqlint.fix.maintainers import (MAINTAINERS, Maintainers, SeriesError, TreeFileMissing, cc_lists,
                                    require_tools)
from wqlint.fix.compat import module_name
from wqlint.fix.prefix import history_prefix, patch_prefix
from wqlint.scan.targets import kernel_tree_of

__all__ = ["write_series", "build_series", "left_out", "module_of", "SeriesError", "TreeFileMissing"]

WIDTH = 72  # commit message columns (checkpatch.pl warns over 75)
SUBJECT_WIDTH = 78  # header lines are folded past this, as git format-patch does
FROM_LINE = "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"
SIGNATURE = "wqlint"
DEFAULT_AUTHOR = "wqlint <wqlint@localhost>"
NO_SECTION = "(no MAINTAINERS section)"

# A patch fixing one rule says what the rule's `subject` in rules.yaml says; several say MIXED.
MIXED = "fix workqueue allocation flags and limits"
TARGETS = {
    "mainline": "mainline: only the workqueue API {version} already has",
    "reference": ("reference: the API of the reference workqueue series (kernel/ in wqlint: "
                  "workqueue_set_global_max_active_cpus() and the others); apply that "
                  "series first"),
}
# Lines a mail reader or git-am would take for something else when they start a line of the
# message: an in-body header, the end of the message, a diff, an mbox separator, a comment.
_RISKY_START = re.compile(r"^(?:---|diff -|Index: |From |#|Subject:|Date:|From:)")


@dataclass
class Patch:
    number: int
    section: str  # MAINTAINERS section name, or NO_SECTION
    prefix: str
    changes: list  # of FileChange, by path
    diffs: list  # FileChange.diff() of each
    cc_paths: list = field(default_factory=list)  # the files get_maintainer.pl is run on
    cc_keys: set = field(default_factory=set)  # the section lists of those files
    cc: list = field(default_factory=list)
    subject: str = ""

    @property
    def paths(self) -> list:
        return [c.path for c in self.changes]

    @property
    def fixes(self) -> list:
        return [f for c in self.changes for f in sorted(c.fixes, key=_fix_key)]


def _fix_key(fix):
    return fix.finding.sort_key()


def _check_path(path: str) -> None:
    parts = path.split("/")
    if (not path or path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts)
            or parts[0] == ".git" or "\n" in path):
        raise SeriesError(f"{path!r}: not a path relative to the tree")


# ---------------------------------------------------------------------------------------
# Text


def _safe(line: str) -> str:
    return " " + line if _RISKY_START.match(line) else line


def wrap(text: str, indent: str = "", subsequent: Optional[str] = None,
         width: int = WIDTH) -> list:
    """Lines of one paragraph, wrapped at width without breaking words or hyphens."""
    text = " ".join(text.split())
    if not text:
        return []
    lines = textwrap.wrap(text, width=width, initial_indent=indent,
                          subsequent_indent=indent if subsequent is None else subsequent,
                          break_long_words=False, break_on_hyphens=False)
    return [_safe(line.rstrip()) for line in lines]


def paragraphs(text: str, indent: str = "") -> list:
    """Lines of a text whose paragraphs are separated by blank lines, blank between them."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text.strip()):
        lines = wrap(para, indent)
        if lines:
            if out:
                out.append("")
            out.extend(lines)
    return out


def _plural(n: int, word: str, plural: Optional[str] = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _fold_header(name: str, value: str) -> str:
    """A header line folded at SUBJECT_WIDTH columns with one-space continuations, and
    RFC 2047 encoded when it is not ASCII."""
    if not value.isascii():
        return f"{name}: " + Header(value, "utf-8", header_name=name).encode(maxlinelen=76)
    lines = textwrap.wrap(f"{name}: {value}", width=SUBJECT_WIDTH, subsequent_indent=" ",
                          break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines)


def _author_header(author: str) -> tuple:
    """(display name, From: header value)."""
    name, address = email.utils.parseaddr(author)
    if not address or "@" not in address:
        raise SeriesError(f"author {author!r}: want 'Name <address>'")
    if name.isascii():
        return name or address, email.utils.formataddr((name, address))
    return name, email.utils.formataddr((name, address), charset="utf-8")


def mail_date(date: Optional[str]) -> str:
    """An RFC 2822 date: date as given (RFC 2822 or ISO 8601), else $SOURCE_DATE_EPOCH,
    else now."""
    if date is None:
        epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
        if epoch.isdigit():
            return email.utils.format_datetime(datetime.fromtimestamp(int(epoch), timezone.utc))
        return email.utils.formatdate(localtime=True)
    try:
        when = email.utils.parsedate_to_datetime(date)
    except (TypeError, ValueError, IndexError):
        when = None
    if when is None:
        try:
            when = datetime.fromisoformat(date.strip().replace("Z", "+00:00"))
        except ValueError:
            raise SeriesError(f"date {date!r}: want RFC 2822 or ISO 8601") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return email.utils.format_datetime(when)


# ---------------------------------------------------------------------------------------
# Grouping


def group_changes(root: Path, changes: list, module: Optional[str] = None) -> tuple:
    """(patches, left out): patches (unnumbered, without Cc) of the changes that change
    something, by the most specific MAINTAINERS section of each file, in path order; and
    (path, section) of the files left out because a section of theirs is S: Obsolete
    (checkpatch.pl: "No unnecessary modifications please"). For a module outside a kernel
    tree (module: its name), one patch of every change.

    get_maintainer.pl is run on one file of each distinct list of sections in a patch: the
    others would name the same people, and each file costs it a pass over MAINTAINERS.
    """
    seen = set()
    live = []
    for change in sorted(changes, key=lambda c: c.path):
        _check_path(change.path)
        if change.path in seen:
            raise SeriesError(f"{change.path}: more than one change for the file")
        seen.add(change.path)
        diff = change.diff()
        if diff:
            live.append((change, diff))
    if module is not None:
        return ([Patch(0, module, "", [c for c, _ in live], [d for _, d in live])] if live else []), []
    maintainers = Maintainers.load(root)
    groups: dict = {}
    left_out = []
    for change, diff in live:
        found = maintainers.sections_of(change.path)
        obsolete = [section.name for _, section in found if section.obsolete]
        if obsolete:
            left_out.append((change.path, obsolete[0]))
            continue
        name = found[0][1].name if found else NO_SECTION
        patch = groups.get(name)
        if patch is None:
            patch = groups[name] = Patch(0, name, "", [], [])
        patch.changes.append(change)
        patch.diffs.append(diff)
        key = tuple(section.index for _, section in found)
        if key not in patch.cc_keys:
            patch.cc_keys.add(key)
            patch.cc_paths.append(change.path)
    return sorted(groups.values(), key=lambda p: p.changes[0].path), left_out


def left_out(root: Path, changes: list) -> list:
    """(path, section) of the changed files write_series() leaves out of the series because a
    MAINTAINERS section of theirs is S: Obsolete; they are listed in the cover letter."""
    return group_changes(root, changes)[1]


# ---------------------------------------------------------------------------------------
# One patch


def _rule(catalogue, rule_id: str):
    try:
        return catalogue[rule_id]
    except (KeyError, TypeError):
        return None


def _detail(finding, rule) -> str:
    """What the finding's message says beyond its rule's message."""
    message = " ".join(finding.message.split())
    base = " ".join(rule.message.split()) if rule else ""
    if base and message.startswith(base):
        rest = message[len(base):].strip()
        if rest.startswith("(") and rest.endswith(")"):
            rest = rest[1:-1].strip()
        return rest
    return "" if message == base else message


def _site_lines(fix, rule) -> list:
    finding = fix.finding
    steps = list(finding.chain)
    head = _detail(finding, rule)
    where = f"{finding.path}:{finding.line}:"
    if not head:
        if steps:
            first = steps.pop(0)
            where, head = f"{first.path}:{first.line}:", first.note
        else:
            head = finding.rule_id
    lines = wrap(f"{where} {head}", "  ", "      ")
    for step in steps:
        lines += wrap(f"{step.path}:{step.line}: {step.note}", "    ", "        ")
    return lines


def _summary(fixes: list, catalogue) -> str:
    rules = sorted({f.finding.rule_id for f in fixes})
    if len(rules) == 1:
        return catalogue[rules[0]].subject
    return MIXED


def _where(paths: list) -> str:
    """The file, the directory they share, or up to three directories."""
    if len(paths) == 1:
        return paths[0]
    common = os.path.commonpath(paths)
    if common:
        return common + "/"
    dirs = sorted({os.path.dirname(p) + "/" for p in paths})
    dirs = [d for d in dirs if not any(d != o and d.startswith(o) for o in dirs)]
    if len(dirs) > 3:
        return "several directories"
    return dirs[0] if len(dirs) == 1 else ", ".join(dirs[:-1]) + " and " + dirs[-1]


def commit_message(patch: Patch, catalogue, version: tuple) -> list:
    """The lines of the commit message body (without subject) of a patch."""
    fixes = patch.fixes
    ver = kversion.show(version)
    each = "Each is" if len(fixes) > 1 else "It is"
    out = wrap(
        f"wqlint reports {_plural(len(fixes), 'problem')} with workqueue allocations in "
        f"{_where(patch.paths)} on {ver}. {each} listed under the rule it breaks, with the "
        f"lines that lead to it, followed by what this patch changes and why.")
    by_rule: dict = {}
    for fix in fixes:
        by_rule.setdefault(fix.finding.rule_id, []).append(fix)
    for rule_id in sorted(by_rule, key=lambda r: (_rule_order(catalogue, r), r)):
        rule = _rule(catalogue, rule_id)
        message = rule.message if rule else rule_id
        out += [""] + wrap(f"{message} [{rule_id}]:")
        by_why: dict = {}
        for fix in by_rule[rule_id]:
            by_why.setdefault(" ".join(fix.why.split()), []).append(fix)
        for why, group in by_why.items():
            for fix in group:
                out += [""] + _site_lines(fix, rule)
            if why:
                out += [""] + paragraphs(group[0].why)
    if patch.cc:
        out += [""] + [_safe(f"Cc: {who}") for who in patch.cc]
    return out


def _rule_order(catalogue, rule_id: str) -> int:
    ids = catalogue.ids()
    return ids.index(rule_id) if rule_id in ids else len(ids)


def _notes(patch: Patch, target: str) -> list:
    """Lines after '---', which git am leaves out of the commit."""
    notes = []
    suggestions = [f for f in patch.fixes if f.safety != "safe"]
    if suggestions:
        notes += wrap("Suggestions, the intent cannot be known from the code; check them "
                      "before sending:", "    ")
        notes += [f"      {f.finding.path}:{f.finding.line} [{f.finding.rule_id}]"
                  for f in suggestions]
    if target == "reference":
        if notes:
            notes.append("")
        notes += wrap("Needs the reference workqueue series (kernel/ in wqlint) applied "
                      "first.", "    ")
    return ["Notes:"] + notes + [""] if notes else []


def _stat_entries(changes: list, diffs: list) -> list:
    return [(c.path, *count(d)) for c, d in zip(changes, diffs)]


def _headers(author_header: str, date: str, subject: str, body: str) -> list:
    lines = [FROM_LINE, f"From: {author_header}", f"Date: {date}",
             _fold_header("Subject", subject)]
    if not body.isascii():
        lines += ["MIME-Version: 1.0", "Content-Type: text/plain; charset=UTF-8",
                  "Content-Transfer-Encoding: 8bit"]
    return lines


def render_patch(patch: Patch, total: int, catalogue, version: tuple, target: str,
                 author_header: str, date: str) -> str:
    message = "\n".join(commit_message(patch, catalogue, version)) + "\n"
    tail = "\n".join(_notes(patch, target))
    tail = (tail + "\n") if tail else ""
    tail += diffstat(_stat_entries(patch.changes, patch.diffs)) + "\n"
    tail += "".join(patch.diffs)
    body = message + "---\n" + tail + f"-- \n{SIGNATURE}\n\n"
    subject = f"[PATCH {patch.number}/{total}] {patch.subject}"
    return "\n".join(_headers(author_header, date, subject, body)) + "\n\n" + body


# ---------------------------------------------------------------------------------------
# The cover letter


def render_cover(patches: list, catalogue, version: tuple, target: str, author_name: str,
                 author_header: str, date: str, left_out: tuple = (), module: Optional[str] = None) -> str:
    ver = kversion.show(version)
    fixes = [f for p in patches for f in p.fixes]
    pairs = sorted(((c, d) for p in patches for c, d in zip(p.changes, p.diffs)),
                   key=lambda pair: pair[0].path)
    files = len(pairs)
    split = f"for the module {module}" if module else "one patch per MAINTAINERS section"
    lines = wrap(
        f"wqlint found {_plural(len(fixes), 'problem')} with workqueue allocations on {ver}; "
        f"this series fixes them in {_plural(files, 'file')}, {split} "
        f"({_plural(len(patches), 'patch', 'patches')}).")
    target_text = TARGETS.get(target, target).format(version=ver)
    lines += [""] + wrap(f"Target: {target_text}.", "", "  ")
    suggestions = sum(1 for f in fixes if f.safety != "safe")
    if suggestions:
        lines += [""] + wrap(
            f"{_plural(suggestions, 'change is a suggestion', 'changes are suggestions')}: "
            f"the intent cannot be known from the code, so check the sites listed in the "
            f"notes of each patch before sending.")
    per_rule = Counter(f.finding.rule_id for f in fixes)
    rules = sorted(per_rule, key=lambda r: (_rule_order(catalogue, r), r))
    lines += ["", "Fixed, by rule:", ""]
    width = max(len(r) for r in rules)
    lines += [f"  {r:<{width}}  {per_rule[r]}" for r in rules]
    lines += ["", "Patches:" if module else "Patches, by MAINTAINERS section:", ""]
    for patch in patches:
        head = (f"{patch.number}/{len(patches)} {patch.section}: "
                f"{_plural(len(patch.changes), 'file')}, {_plural(len(patch.fixes), 'finding')}")
        lines += wrap(head, "  ", "      ")
    if left_out:
        lines += [""] + wrap(
            "Left out, because MAINTAINERS marks their subsystem obsolete and asks for no "
            "unnecessary changes:") + [""]
        for path, section in left_out:
            lines += wrap(f"{path} ({section})", "  ", "      ")
    lines += ["", f"{author_name} ({len(patches)}):"]
    for patch in patches:
        lines += wrap(patch.subject, "  ", "    ")
    lines = [_safe(line) if line else line for line in lines]
    stat = diffstat(_stat_entries([c for c, _ in pairs], [d for _, d in pairs]))
    body = "\n".join(lines) + "\n\n" + stat + "\n"
    body += f"-- \n{SIGNATURE}\n\n"
    total = len(patches)
    noun = "problem" if len(fixes) == 1 else "problems"
    subject = f"[PATCH 0/{total}] Fix {len(fixes)} workqueue allocation {noun} on {ver}"
    return "\n".join(_headers(author_header, date, subject, body)) + "\n\n" + body


# ---------------------------------------------------------------------------------------
# The series


def _slug(subject: str) -> str:
    """git format-patch's file name for a subject: [A-Za-z0-9._] kept, other runs become
    one '-', none at either end."""
    slug = re.sub(r"[^A-Za-z0-9._]+", "-", subject)
    slug = re.sub(r"\.+", ".", slug).strip("-.")
    return slug


def _file_name(number: int, subject: str) -> str:
    # git: at most 64 characters with the suffix and the separating '-'.
    name = f"{number:04d}-{_slug(subject)}"[:64 - len(".patch") - 1]
    return name + ".patch"


def module_of(root: Path) -> Optional[str]:
    """The name of the module root is, when it is a module outside a kernel tree (no
    MAINTAINERS to split a series by); None for a kernel tree."""
    root = Path(root)
    return module_name(root) if kernel_tree_of(root) is None and not (root / MAINTAINERS).exists() else None


def build_series(root: Path, changes: list, catalogue, version: tuple, target: str,
                 author: str = DEFAULT_AUTHOR, date: Optional[str] = None) -> list:
    """The series as [(file name, text)], cover letter first; [] when nothing changes.

    Raises TreeFileMissing when the tree has no MAINTAINERS or scripts/get_maintainer.pl,
    SeriesError for other input it cannot use.
    """
    root = Path(root)
    module = module_of(root)
    if module is None:
        require_tools(root)
    author_name, author_header = _author_header(author)
    when = mail_date(date)
    patches, left_out = group_changes(root, changes, module)
    if not patches:
        return []
    # a module has no MAINTAINERS: whom to send it to is its maintainer's to add
    ccs = cc_lists(root, [p.cc_paths for p in patches]) if module is None else [[] for _ in patches]
    for number, (patch, cc) in enumerate(zip(patches, ccs), start=1):
        patch.number, patch.cc = number, cc
        patch.prefix = (history_prefix(root, patch.paths) or module) if module else patch_prefix(root, patch.paths)
        summary = _summary(patch.fixes, catalogue)
        patch.subject = f"{patch.prefix}: {summary}" if patch.prefix else summary
    files = [("0000-cover-letter.patch",
              render_cover(patches, catalogue, version, target, author_name, author_header, when,
                           left_out, module))]
    for patch in patches:
        files.append((_file_name(patch.number, patch.subject),
                      render_patch(patch, len(patches), catalogue, version, target,
                                   author_header, when)))
    return files


def _write(path: Path, text: str) -> None:
    try:
        safeio.write_atomic(path, text)
    except safeio.OutputRefused as exc:
        raise SeriesError(f"{path}: {exc}") from None


def write_series(root: Path, changes: list, catalogue, version: tuple, target: str,
                 out_dir: Path, author: str = DEFAULT_AUTHOR,
                 date: Optional[str] = None) -> list:
    """Write out_dir/0000-cover-letter.patch and out_dir/NNNN-<slug>.patch, one patch per
    subsystem, in `git format-patch` format; return the paths in order.

    Files in a subsystem MAINTAINERS marks S: Obsolete are left out (left_out() names them)
    and listed in the cover letter: checkpatch.pl warns about any change there. Nothing is
    written when no change is left to send ([] is returned). Raises
    TreeFileMissing (a SeriesError) when the tree lacks MAINTAINERS or
    scripts/get_maintainer.pl; str() of a SeriesError is one line.
    """
    series = build_series(root, changes, catalogue, version, target, author, date)
    out_dir = Path(out_dir)
    if not series:
        return []
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SeriesError(f"{out_dir}: cannot create: {exc.strerror or exc}") from None
    paths = []
    for name, text in series:
        path = out_dir / name
        try:
            _write(path, text)
        except OSError as exc:
            raise SeriesError(f"{path}: cannot write: {exc.strerror or exc}") from None
        paths.append(path)
    return paths
