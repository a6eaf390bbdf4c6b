"""From a scan's findings to the changes of each file, for one target (mainline | reference).

rules.yaml decides, per rule, target and kernel version, which edit fixes a finding and how
safe it is (fix.targets). Safe fixes are made; suggestions only when asked; findings without
an edit are listed with the reason, so nothing is silently left out.

A finding handed in (a saved scan, a scan answered from the index) is a request, not a
verdict: each file is read once, under its real path (a file reached through two names is
one file), and judged again from those very bytes, without the index; only what that
judgement finds is fixed, as it finds it, and the bytes are what --apply checks the file
against before it writes. The findings of a scan the same command just made are that
judgement when the scan judged those very bytes (the digests it read them with), and are
not judged twice.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from wqlint import api, catalogue as catalogue_mod, errors, kversion, safeio
from wqlint.finding import Finding, Report
from wqlint.fix import compat, edit_kinds, edits
from wqlint.fix.model import FileChange, Fix, with_line_endings
from wqlint.scan import parser
from wqlint.scan.options import ScanOptions
from wqlint.scan.source import SourceError, SourceFile, call_digest, digest, read_source

NOT_FOUND_AGAIN = "not found again in the file as it is now (judged afresh from its bytes): scan again"

API_HEADER = "include/linux/workqueue.h"


class FixError(errors.WqlintError):
    """Input the fixer cannot use; str() is one line naming the file and the problem."""


@dataclass
class NotFixed:
    finding: Finding
    reason: str
    safety: str = ""  # the safety of the fix that was not made ("" when there is none)


@dataclass
class Plan:
    root: Path
    target: str
    version: tuple
    changes: list = field(default_factory=list)  # of FileChange, by path
    not_fixed: list = field(default_factory=list)  # of NotFixed
    notes: list = field(default_factory=list)

    def diff(self) -> str:
        return "".join(c.diff() for c in self.changes)

    def fixes(self) -> list:
        return [f for c in self.changes for f in c.fixes]


def tree_facts(root: Path, version: tuple) -> edits.TreeFacts:
    header = root / API_HEADER
    try:
        text = safeio.read_text(header, safeio.MAX_SOURCE_BYTES, root, errors="replace")
    except safeio.InputRefused:
        text = api.builtin_header(version).decode()
    return edits.tree_facts(text)


def plan(report: Report, catalogue, target: str, rule_ids: Optional[set] = None,
         suggestions: bool = False, oldest: Optional[tuple] = None,
         options: Optional[ScanOptions] = None, judged: Optional[tuple] = None) -> Plan:
    """oldest: the oldest kernel a module outside the kernel tree builds for (None: what
    the module says, fix.compat). options: those of the scan that judges the files again
    (jobs, ncpus, max_cpus, kernel_tree, store; see rejudge()). judged: every finding of a
    scan of the tree just made (none left out by a configuration), which then stand for the
    files' findings as judged now (see _as_judged()); with {rel: digest of the bytes it judged}."""
    options = options or ScanOptions()
    root = Path(report.root)
    version = tuple(report.kernel_version)
    result = Plan(root, target, version)
    facts = tree_facts(root, version)
    if target == "reference" and not facts.has_reference_api:
        result.notes.append(f"{API_HEADER} has no workqueue_set_global_max_active_cpus(): the reference "
                            "fixes need the patch series in kernel/ applied to build")
    by_file: dict = {}
    for f in _by_real_path(root, report.findings):
        if rule_ids and f.rule_id not in rule_ids:
            continue
        decided = _decide(f, catalogue, target, version, suggestions)
        if isinstance(decided, NotFixed):
            result.not_fixed.append(decided)
            continue
        by_file.setdefault(edits.edit_at(f)[0], []).append((f, *decided))
    # The files edited, and those the findings are judged from again: their own (a fix may edit
    # another file's call) and the ones they name (hints.judged_with).
    needed = set(by_file)
    for items in by_file.values():
        for f, _case, _why in items:
            needed.add(f.path)
            needed.update(f.hints.judged_with)
    contents = {}
    for path in sorted(needed):
        try:
            contents[path] = read_source(root / path, root)
        except SourceError as exc:
            raise FixError(f"{path}: {exc}") from None
    found = _as_judged(root, judged, contents) if judged is not None else None
    if found is None:
        found = rejudge(root, catalogue, version, contents, options) if contents else {}
    planned: dict = {}  # file to edit -> [(finding as judged now, case, why)]
    for path in sorted(by_file):
        for f, case, _why in by_file[path]:
            now = found.get(_key(f))
            # Decided again from the finding as judged now (a saved finding's hints are a request),
            # and edited where it says.
            if now is None or edits.edit_at(now)[0] not in contents:
                result.not_fixed.append(NotFixed(f, NOT_FOUND_AGAIN, case.safety))
                continue
            decided = _decide(now, catalogue, target, version, suggestions)
            if isinstance(decided, NotFixed):
                result.not_fixed.append(dataclasses.replace(decided, finding=f))
            else:
                planned.setdefault(edits.edit_at(now)[0], []).append((now, *decided))
    for path in sorted(planned):
        change = _file_change(path, contents[path], planned[path], target, facts, result)
        if change is not None:
            result.changes.append(change)
    if any(fx.edit == "add-reclaim" for fx in result.fixes()):
        _no_new_reclaim_work(result, catalogue, contents, found, planned, facts, options)
    if result.changes and _is_module(root):
        _guard(result, compat.module_range(root, oldest))
    for change in result.changes:  # the lines the fixes wrote end as the file's lines do
        change.after = with_line_endings(change.before, change.after)
    return result


def _as_judged(root: Path, judged: tuple, contents: dict) -> Optional[dict]:
    """{_key(finding): finding} of the files contents names, from (findings, {rel: digest of
    the bytes judged}) of a scan just made of them: what rejudge() would give, without judging
    the files a second time. None (judge them again) where the scan did not judge the bytes
    to edit: a file's digest differs (an index that took an edited file for the one it had
    read, a file changed since), or, for a file the scan read itself (no index: no digest), a
    finding's call does not read as it did (a use in a macro's body names no call)."""
    findings, read = judged
    for rel, data in contents.items():
        if read.get(rel) is not None and read[rel] != digest(data):
            return None
    found = {}
    sources: dict = {}
    for f in _by_real_path(root, findings):
        if f.path not in contents:
            continue
        if f.path not in read:
            return None
        src = sources.get(f.path)
        if src is None:
            src = sources[f.path] = SourceFile(f.path, contents[f.path])
        if read[f.path] is None and f.call_sha and call_digest(src, f.line, f.col) != f.call_sha:
            return None
        found[_key(f)] = f
    return found


def _decide(f: Finding, catalogue, target: str, version: tuple, suggestions: bool):
    """(the fix case of rules.yaml, its why filled in) for finding f, or the NotFixed saying
    why it is not fixed."""
    case = catalogue[f.rule_id].fix_case(target, version, f.hints)
    if case is None:
        return NotFixed(f, f"no {target} fix for {kversion.show(version)}")
    why = catalogue_mod.fill(case.why, version=kversion.show(version))
    if case.edit == "none":
        return NotFixed(f, why, case.safety)
    if f.hints.compat_branch:
        return NotFixed(f, "the call is in a branch of an #if whose other branch already makes the change (see "
                           "the chain): the module's code for kernels without the replacement, left as it is",
                        case.safety)
    refused = edit_kinds.EDITS[case.edit].refusal(f)
    if refused is not None:
        return NotFixed(f, refused, case.safety)
    if case.safety == "suggestion" and not suggestions:
        return NotFixed(f, f"suggestion, made only with --suggestions: {why}", case.safety)
    return case, why


def _no_new_reclaim_work(result: Plan, catalogue, contents: dict, found: dict, planned: dict, facts,
                         options: ScanOptions) -> None:
    """The files are judged again as the fixes leave them. A fix that adds WQ_MEM_RECLAIM is
    not made (nor another that adds it at the same call; the file is changed without them) where the
    finding it fixes is still there (the flag does not reach the queue: a wrapper masks it),
    or where the queue's own work, reclaim work now, waits for a queue without the flag: the
    fix would only move the warning."""
    rescuing = [fx for fx in result.fixes() if fx.edit == "add-reclaim"]
    # Only the files these fixes edit and are judged from: the rest of a whole-tree fix is not
    # read twice.
    wanted = {fx.at[0] for fx in rescuing} | {fx.finding.path for fx in rescuing}
    wanted |= {rel for fx in rescuing for rel in fx.finding.hints.judged_with}
    after = {rel: data for rel, data in contents.items() if rel in wanted}
    after.update((c.path, c.after.encode("utf-8")) for c in result.changes if c.path in wanted)
    rules = {fx.finding.rule_id for fx in rescuing}
    before = {_seen(f) for f in found.values()}
    now = [f for key, f in sorted(rejudge(result.root, catalogue, result.version, after, options).items())
           if key[0] in rules]
    changed = {c.path: c for c in result.changes}
    dropped: dict = {}  # (path, line before the edits) of a call -> why its fixes are not made
    left = {_seen(f) for f in now}
    for fx in rescuing:
        if _seen(fx.finding) in left:
            dropped.setdefault(fx.at, "with WQ_MEM_RECLAIM written at this call the flushed queue still lacks it "
                                      "(see the chain: the flags are changed on the way): add it where they are")
    for f in now:
        if _seen(f) in before:
            continue
        at = _line_before(changed[f.path], f.line) if f.path in changed else f.line
        for chain in [w.chain for w in f.works] or [f.chain]:  # each work reaching the flush
            if not chain:
                continue
            step = chain[0]  # the allocation of the queue the work runs on
            line = _line_before(changed[step.path], step.line) if step.path in changed else step.line
            dropped.setdefault((step.path, line), f"with WQ_MEM_RECLAIM the queue's own work would be reclaim work "
                                                  f"that waits for a queue without it ({f.path}:{at}, "
                                                  f"{f.function}()): fix that wait first")
    for at in sorted({fx.at for fx in rescuing if fx.at in dropped}):
        path, _line = at
        change = changed[path]
        result.not_fixed.extend(NotFixed(fx.finding, dropped[at], fx.safety) for fx in change.fixes
                                if fx.at == at and fx.edit == "add-reclaim")
        keep = [(f, case, why) for f, case, why in planned[path]
                if (path, edits.edit_at(f)[1]) != at or case.edit != "add-reclaim"]
        planned[path] = keep
        scratch = Plan(result.root, result.target, result.version)  # its not-fixed were counted before
        redone = _file_change(path, contents[path], keep, result.target, facts, scratch) if keep else None
        result.changes = [c for c in result.changes if c.path != path] + ([redone] if redone else [])
        changed = {c.path: c for c in result.changes}
    result.changes.sort(key=lambda c: c.path)


def _line_before(change: FileChange, line: int) -> int:
    """The line of change.before that line of change.after was (an edit that lays a call out
    on more lines moves the lines after it)."""
    import difflib

    matcher = difflib.SequenceMatcher(None, change.before.splitlines(), change.after.splitlines(), autojunk=False)
    for _tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if j1 < line <= j2:
            return i1 + min(line - j1, max(i2 - i1, 1))
    return line


def _key(f: Finding) -> tuple:
    """A finding as the plan knows it: its rule and place, and the function it names."""
    return f.rule_id, f.path, f.line, f.col, f.function or ""


def _seen(f: Finding) -> tuple:
    """A finding as the check for new ones compares it: without lines, which an edit can move."""
    return f.rule_id, f.path, f.function, f.message


def _is_module(root: Path) -> bool:
    """Is root code outside a kernel tree (built for kernels other than the one scanned)?
    A slice of a tree whose top Makefile names its kernel version is that one kernel, as the
    scan takes it (engine: version from the Makefile, no module)."""
    from wqlint.scan.targets import kernel_tree_of

    return (not (root / API_HEADER).is_file() and kernel_tree_of(root) is None
            and kversion.from_makefile(root) is None)


def _guard(result: Plan, span) -> None:
    """Each changed file of a module that now uses a name some kernel it builds for lacks
    gets the version guard that defines it there (fix.compat)."""
    guarded = {}
    for change in result.changes:
        names = compat.needed(change.before, change.after, span)
        if names:
            change.after = compat.guarded(change.after, names)
            guarded[change.path] = names
    shown = sorted({n for names in guarded.values() for n in names})
    if guarded:
        result.notes.append(f"the module builds {span.describe()}: {', '.join(shown)} "
                            f"{'is' if len(shown) == 1 else 'are'} given a version guard in "
                            f"{', '.join(sorted(guarded))}")


def _by_real_path(root: Path, findings: list) -> list:
    """The findings, each under its file's path with no symbolic link in it (relative to the
    tree's real path), once per _key()."""
    real_root = os.path.realpath(root)
    out, seen = [], set()
    for f in findings:
        real = os.path.relpath(os.path.realpath(root / f.path), real_root).replace(os.sep, "/")
        if real != f.path and not real.startswith("../"):
            f = dataclasses.replace(f, path=real)
        key = _key(f)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def rejudge(root: Path, catalogue, version: tuple, contents: dict, options: ScanOptions) -> dict:
    """{_key(finding): finding} of a scan of the files contents names (rel ->
    the bytes to edit), read from those bytes, for version; the rest of the tree as it is
    (options.store: as the index, which answers as the tree does, gives it)."""
    from wqlint.checks import judge
    from wqlint.checks.context import make_context
    from wqlint.scan.engine import Engine
    from wqlint.scan.treefiles import Overlay
    from wqlint.scan.targets import Targets

    targets = Targets([str(root / rel) for rel in sorted(contents)], root=root)
    engine = Engine(targets, catalogue, dataclasses.replace(options, kernel_version=version,
                                                            files=Overlay(root, contents)))
    return {_key(f): f for f in engine.run(judge, make_context).report.findings}


def _file_change(rel: str, data: bytes, items: list, target: str, facts, result: Plan):
    src = SourceFile(rel, data)
    calls: dict = {}
    for f, case, why in items:
        calls.setdefault(edits.edit_at(f)[1:], []).append((f, case, why))
    rewrites: list[edits.Rewrite] = []
    placed: list[tuple[int, Fix]] = []  # (start of the call, fix)
    sites: list[tuple[dict, int]] = []
    for key in sorted(calls):
        group = calls[key]
        try:
            path, line, col = edits.edit_at(group[0][0])
            call = edits.find_call(src, dataclasses.replace(group[0][0], path=path, line=line, col=col))
        except edits.NoEdit as exc:
            result.not_fixed.extend(NotFixed(f, str(exc), case.safety) for f, case, _ in group)
            continue
        made: list[tuple] = []
        steps: list[tuple] = []
        original_args = list(call.args)
        order = list(edit_kinds.EDITS)
        for f, case, why in sorted(group, key=lambda item: order.index(item[1].edit)):
            saved = call.snapshot()
            try:
                edit_kinds.EDITS[case.edit].apply(call, f, facts)
            except edits.NoEdit as exc:
                call.restore(saved)
                result.not_fixed.append(NotFixed(f, str(exc), case.safety))
                continue
            made.append((f, case, why, tuple(call.ops[len(saved["ops"]):])))
            # What the edit wrote, per argument, as a later rule of a semantic patch sees it.
            # (An argument another edit changed before may be changed again: add-reclaim adds
            # its flag after the one add-percpu added.)
            written = (call.changed - saved["changed"]) | {i for i in saved["changed"]
                                                           if call.args[i] != saved["args"][i]}
            changes = tuple((i, None if call.args[i] is None else edits.site_text(call.args[i]))
                            for i in sorted(written))
            steps.extend((op, changes) for op in made[-1][3])
        if not made:
            continue
        rewrites.append(edits.rewrite(call))
        callee = parser.text(call.node.child_by_field_name("function"))
        args = tuple(edits.site_text(a) for a in original_args)
        function, call_steps = edits.enclosing_function(call.node), tuple(steps)
        where = dict(function=function, callee=callee, args=args, steps=call_steps)
        sites.append((where, edits.count_alike(call, callee, args)))
        placed.extend((call.start, Fix(f, target, case.safety, why, ops, function=function, callee=callee, args=args,
                                      steps=call_steps, at=(rel, key[0]), edit=case.edit))
                      for f, case, why, ops in made)
    if not rewrites:
        return None
    text_edits, raw = edits.render(data, rewrites)
    for call_start, fx in placed:
        fx.raw = raw.get(call_start, "")
    fixes = [fx for _, fx in placed]
    _mark_twins(fixes, sites)
    text_edits.sort(key=lambda e: (e.start, e.end))
    for a, b in zip(text_edits, text_edits[1:]):
        if b.start < a.end:
            raise FixError(f"{rel}: two fixes overlap at byte {b.start}; fix one rule at a time (--rule)")
    after = edits.apply_edits(data, text_edits)
    if _errors(after) > _errors(data):
        result.not_fixed.extend(NotFixed(fx.finding, "the edited file would not parse", fx.safety) for fx in fixes)
        return None
    return FileChange(rel, data.decode("utf-8"), after.decode("utf-8"), fixes)


def _mark_twins(fixes: list, sites: list) -> None:
    """A semantic patch finds a call by function, callee and argument texts. Where another
    call of the function reads the same but is not fixed, or is fixed differently, those
    calls are twins: the semantic patch needs their lines as well."""
    groups: dict = {}
    for where, alike in sites:
        key = (where["function"], where["callee"], where["args"])
        calls, step_sets, most = groups.get(key, (0, set(), 0))
        groups[key] = (calls + 1, step_sets | {where["steps"]}, max(most, alike))
    for fx in fixes:
        calls, step_sets, alike = groups[(fx.function, fx.callee, fx.args)]
        fx.twin = alike > calls or len(step_sets) > 1


def _errors(data: bytes) -> int:
    count, stack = 0, [parser.parse(data).root_node]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            count += 1
        elif node.has_error:
            stack.extend(node.children)
    return count
