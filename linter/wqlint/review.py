"""Review a patch series: report only the findings the series introduces.

The series is applied in memory, hunk by hunk (exact context, offsets allowed, no fuzz), to
the files it touches; nothing from a patch is executed and the user's tree is never written.
The patched files form an *overlay* on the tree: the scanner reads them from memory and
everything else from the tree itself, so cross-file resolution works without copying the
tree. Every line of the overlay remembers which patch and hunk added it.

A finding is *introduced* when it is new after the series (its identity, which ignores lines,
was not there before) and the series changes a line of the call or of a step of the
resolution of its flags or its max_active (a line it adds, or the line after lines it
removes): a patch that changes a field assignment is blamed, on that line, for the allocation
in another file that the field reaches, and a patch that drops WQ_UNBOUND from the line below
the call, or from the local the flags come from, is blamed for what that does to max_active.
The comment says what the change did to the queue (rules.yaml, `introduced-by`). A
finding about a work's path to a wait is blamed on a line of any step of any work's path,
and shows that work's whole path (review_paths).

Without a tree only what the patches show is known: new files whole, and the lines of each
hunk at their place in an otherwise empty file. Resolution is then reduced, and the review
says so.
"""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from wqlint import config as config_mod, kversion
from wqlint.catalogue import fill
from wqlint.checks import judge
from wqlint.checks.common import judged_flags, path_flags
from wqlint.checks.context import make_context
from wqlint.config import Config
from wqlint.finding import Finding, InputError, InternalError, Report, stable_fingerprints
from wqlint.machine import MAX_CPUS, NCPUS
from wqlint.scan.engine import Engine, ScanResult
from wqlint.scan.treefiles import Overlay
from wqlint.scan.options import ScanOptions
from wqlint.scan.targets import Targets, find_root
from wqlint.scan.values import Op, cpu_path, evaluate, show
from wqlint.patched import Origin, PatchedTree, ReviewError, base_without, patch_root
from wqlint import review_paths
from wqlint.scan.source import MAX_FILE_BYTES, is_c_source


@dataclass(frozen=True)
class Comment:
    """An introduced finding and the changed line it is blamed on."""

    finding: Finding
    path: str  # of the changed line
    line: int
    origin: Origin
    what: str = ""  # what the change did to the queue, a sentence; '' for a new queue
    # The path shown, of a finding about a work's path to a wait: the whole path of the work
    # the comment is blamed on (review_paths); () for the finding's own chain.
    chain: tuple = ()

    @property
    def at_call(self) -> bool:
        return (self.path, self.line) == (self.finding.path, self.finding.line)

    @property
    def in_call(self) -> bool:
        """On a line of the call itself (an argument on a line of its own)."""
        f = self.finding
        return self.path == f.path and f.line <= self.line <= max(f.line, f.end_line)


@dataclass
class Review:
    patches: list
    tree: Optional[str]  # None: the hunks were reviewed alone
    comments: list = field(default_factory=list)  # of Comment, introduced findings
    preexisting: list = field(default_factory=list)  # of Finding, only with --all
    unanchored: list = field(default_factory=list)  # new, but on no added line (with --all)
    fixed: list = field(default_factory=list)  # of Finding, in the coordinates before the series
    notes: list = field(default_factory=list)
    errors: list = field(default_factory=list)  # of InputError
    kernel_version: tuple = (0, 0, 0)
    kernel_version_source: str = ""
    root: str = ""
    fingerprints: dict = field(default_factory=dict)  # id(Finding) -> stable_fingerprints()
    already_reported: list = field(default_factory=list)  # of Comment, left out (--reported)
    config: Config = field(default_factory=Config)  # the tree's .wqlint.yaml before the series

    def exit_code(self) -> int:
        if self.errors:
            return 3
        return 1 if self.comments else 0

    def findings(self) -> list:
        """What is reported, as scan would list it: introduced, then (--all) the rest."""
        got = [c.finding for c in self.comments] + self.unanchored + self.preexisting
        return sorted(got, key=lambda f: f.sort_key())

    def as_report(self) -> Report:
        return Report(root=self.root, findings=self.findings(), errors=list(self.errors),
                      notes=list(self.notes), kernel_version=self.kernel_version,
                      kernel_version_source=self.kernel_version_source)

    def select(self, config) -> None:
        """Keep what the configuration (the tree's .wqlint.yaml and the command line) asks for:
        rules, severity, paths, and at most max_findings comments per patch."""
        self.comments = [c for c in self.comments if config.keeps(c.finding)]
        self.unanchored = config.select(self.unanchored)
        self.preexisting = config.select(self.preexisting)
        self.fixed = config.select(self.fixed)
        if config.max_findings is not None:
            from collections import Counter

            from wqlint.config import cap
            self.comments, left = cap(self.comments, config.max_findings)
            for number, n in sorted(Counter(c.origin.patch for c in left).items()):
                self.notes.append(f"patch {number}: {n} more introduced finding{'s' if n != 1 else ''} not "
                                  f"printed (at most {config.max_findings} a patch, the most severe first)")

    def fingerprint(self, finding) -> str:
        return self.fingerprints[id(finding)]

    def patch_of(self, finding):
        """The patch that introduces finding, or None."""
        for c in self.comments:
            if c.finding is finding:
                return self.patches[c.origin.patch - 1]
        return None

    def hunk_of(self, origin: Origin):
        patch = self.patches[origin.patch - 1]
        fdiff = patch.files[origin.file]
        return patch, fdiff, fdiff.hunks[origin.hunk]


# -- applying the series ----------------------------------------------------------------------
def git_series(tree: str, revs: str) -> tuple:
    """(patches, base reader, root) for the commits REVS of the git checkout that holds tree.

    REVS is what git format-patch takes: BASE..HEAD, A^!, or one revision R for R..HEAD. The
    patches' paths are relative to root, the kernel tree holding tree (else the checkout's
    top), wherever in the checkout tree is: review the series against root. The files the
    series touches are read as they were before its first commit (git show), so the
    checkout may be at HEAD; the rest of the tree is read from the checkout.
    """
    from wqlint import mail
    from wqlint.scan.targets import kernel_tree_of

    rng = revs if (".." in revs or revs.endswith(("^!", "^@"))) else f"{revs}..HEAD"
    if not revs or revs.startswith("-") or any(c.isspace() or c == "\0" for c in revs):
        raise ReviewError(f"--git {revs}: want a revision range (BASE..HEAD, REV^!, REV)")

    from wqlint import tools

    def git(*args, limit=None):
        try:
            return tools.git(root, *args, limit=limit)
        except tools.ToolError as exc:
            raise ReviewError(f"--git {revs}: {exc}") from None

    def failed(proc, what) -> ReviewError:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        said = next((ln for ln in lines if ln.startswith(("fatal:", "error:"))), lines[-1] if lines else "")
        return ReviewError(f"--git {revs}: {said or what + ' failed'}")

    root = Path(os.path.abspath(tree))
    top = git("rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise failed(top, "git rev-parse")
    root = kernel_tree_of(root) or Path(top.stdout.decode("utf-8", "surrogateescape").strip())
    commits = git("rev-list", "--reverse", rng, "--")
    if commits.returncode != 0:
        raise failed(commits, "git rev-list")
    first = commits.stdout.decode().split()[:1]
    if not first:
        return [], None, str(root)
    parent = git("rev-parse", "--verify", "-q", f"{first[0]}^")
    base = parent.stdout.decode().strip() if parent.returncode == 0 else None  # (none: a root commit)
    # The diff as wqlint reads it, whatever the repository's configuration says of prefixes,
    # colours, external diff or textconv drivers; --relative: paths relative to root, whichever
    # directory of the checkout it is.
    # At most what a patch file may hold: the series is read whole, whichever way it comes.
    proc = git("format-patch", "--stdout", "-M", "--no-binary", "--no-color", "--no-ext-diff",
               "--no-textconv", "--relative", "--src-prefix=a/", "--dst-prefix=b/", "--no-signature",
               rng, "--", limit=mail.MAX_INPUT_BYTES)
    if proc.returncode != 0:
        raise failed(proc, "git format-patch")
    patches = mail.parse_series(proc.stdout, f"git {rng}") if proc.stdout.strip() else []
    return patches, _blob_reader(root, base, f"--git {revs}"), str(root)


def files_at(root: str, rev: str):
    """A base reader giving the files of the git checkout root (as git_series returned it)
    as they are at the commit rev."""
    from wqlint import tools

    try:
        got = tools.git(root, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}")
    except tools.ToolError as exc:
        raise ReviewError(f"{rev}: {exc}") from None
    if got.returncode != 0:
        raise ReviewError(f"{rev}: not a commit of {root}")
    return _blob_reader(Path(root), got.stdout.decode().strip(), rev)


def _blob_reader(root: Path, base: Optional[str], what: str):
    """A base reader giving the files of the checkout root as they are at the commit base
    (None: a root commit's parent, where there are none)."""
    from wqlint import tools

    def reader(path, patch):
        if base is None:
            return None
        # the blob as stored (no textconv, no filter), bounded as a file of the tree is
        try:
            shown = tools.git(root, "cat-file", "blob", f"{base}:./{path}", limit=MAX_FILE_BYTES)
        except tools.ToolError as exc:
            raise ReviewError(f"{what}: {exc}") from None
        if shown.returncode != 0:
            return None  # not in BASE: the series creates it
        try:
            shown.stdout.decode("utf-8")
        except UnicodeDecodeError:
            raise ReviewError(f"{patch.name}: {path}: not UTF-8 text at {base[:12]}") from None
        return shown.stdout
    return reader


def review(patches: list, catalogue, tree: Optional[str] = None, jobs: int = 1,
           kernel_version: Optional[tuple] = None, ncpus: int = NCPUS, max_cpus: int = MAX_CPUS,
           show_all: bool = False, base_reader=None, kernel_tree=None, cache: bool = False,
           reported: frozenset = frozenset(), config_reader=None) -> Review:
    """cache: use (and update) the index of the tree kept between runs (wqlint.scan.store).
    reported: fingerprints a bot has already commented on; such findings are not comments.
    config_reader: a base reader of the tree before the whole series, when base_reader is
    one of the tree before the patches (the last of a series): the review's configuration,
    Review.config, is the tree's .wqlint.yaml as it was before the series."""
    options = ScanOptions(jobs=jobs, kernel_version=kernel_version, kernel_tree=kernel_tree, ncpus=ncpus,
                          max_cpus=max_cpus)
    treepath = Path(os.path.abspath(tree)) if tree else None
    if treepath is not None and base_reader is None:
        treepath = patch_root(treepath, patches)
    applied_note = None
    try:
        state = PatchedTree(treepath, base_reader)
        for patch in patches:
            state.apply(patch)
    except ReviewError:
        # A tree that already has the series (b4 prep --check runs its per-patch check in the
        # checkout of the series' tip): review it against the tree with the series taken out.
        base = base_without(patches, treepath, base_reader) if treepath is not None else None
        if base is None:
            raise
        state = PatchedTree(treepath, base)
        for patch in patches:
            state.apply(patch)
        base_reader = base
        applied_note = ("the tree already has the series: reviewed against the tree with it "
                        "taken out")
    after_files, added = state.after()
    result = Review(patches=list(patches), tree=str(treepath) if treepath else None)
    if applied_note:
        result.notes.append(applied_note)

    prefix = ""
    if treepath is not None:
        root = find_root([treepath])
        result.config = _base_config(root, treepath, config_reader or base_reader, patches, catalogue.ids())
        store = None
        if cache and kernel_tree is None:  # one index for both sides, written once at the end
            from wqlint.scan.store import Store
            store = Store(root).open(jobs)
        # The two sides run at once: they share the cores.
        options = replace(options, jobs=max(1, jobs // 2), store=store if store is not None else False,
                          save_store=False)
        prefix = "" if root == treepath else treepath.relative_to(root).as_posix() + "/"
        overlay = {prefix + p: d for p, d in after_files.items() if is_c_source(p.rsplit("/", 1)[-1])}
        added = {prefix + p: lines for p, lines in added.items()}
        # Only allocations whose chains can reach the changed files are resolved: those in
        # the changed files' subsystems, and wrappers the changed files call. A change to a
        # shared header can reach anywhere, so then the whole tree is resolved.
        changed = sorted(overlay)
        if not any(c.startswith("include/") or re.match(r"arch/[^/]+/include/", c) for c in changed):
            words: set = set()
            for data in filter(None, overlay.values()):  # (None: deleted)
                # (one word at a time: a list of every word of the series would be the input many times over)
                words.update(m.group() for m in re.finditer(r"[A-Za-z_]\w*", data.decode("utf-8", "replace")))
            options = replace(options, focus=tuple(changed), focus_words=frozenset(words))
        if base_reader is None:
            before_engine = _engine(root, catalogue, options)
        else:  # the checkout is not at BASE: show the touched files as they were there
            base_files = {prefix + p: base_reader(p, patches[0]) for p in after_files
                          if is_c_source(p.rsplit("/", 1)[-1])}
            before_engine = _engine(root, catalogue, options, base_files)
        after_engine = _engine(root, catalogue, options, overlay)
        # Most of a review is waiting for searches of the tree: run both sides at once, each
        # search made once for both (they ask much the same of the same tree).
        from wqlint import tools

        with tools.shared_searches(), ThreadPoolExecutor(2) as pool:
            before_job = pool.submit(before_engine.run, judge, make_context)
            after_scan = after_engine.run(judge, make_context)
            before_scan = before_job.result()
        if store is not None and before_scan.searched_all and after_scan.searched_all:
            store.save()
        result.root = str(root)
    else:
        overlay = {p: d for p, d in after_files.items() if is_c_source(p.rsplit("/", 1)[-1])}
        base = {p: d for p, d in state.base().items() if is_c_source(p.rsplit("/", 1)[-1])}
        from wqlint import tools

        with tools.temp_dir("wqlint-review-") as empty:
            before_scan = _engine(Path(empty), catalogue, options, base).run(judge, make_context)
            after_scan = _engine(Path(empty), catalogue, options, overlay).run(judge, make_context)
        result.notes.append("no --tree: only the lines the patches show were reviewed; values "
                            "defined elsewhere are not resolved (reduced resolution)")
    before, after = before_scan.report, after_scan.report
    result.kernel_version = after.kernel_version
    result.kernel_version_source = after.kernel_version_source
    result.notes.extend(n for n in after.notes if treepath is not None or kernel_tree is not None
                        or not n.startswith(("no kernel version", "no kernel tree given")))
    if treepath is None and not kernel_version and kernel_tree is None:
        result.notes.append(f"no tree: assuming {kversion.show(after.kernel_version)} semantics "
                            f"(use --kernel-version)")
    # Only problems in what the series touches stop the review; the rest of the tree was
    # there before and is the business of `wqlint scan`.
    touched = [e for e in after.errors if e.path in overlay]
    if treepath is None:
        # Without the tree a file is only what its hunks show: a call that starts or ends
        # beyond them cannot be parsed. That is a limit of the review, not bad input: say
        # what was not judged, and judge the rest (an internal error is still one).
        result.notes.extend(f"{e.path}: {e.problem}: not judged (without --tree only the lines the hunks "
                            f"show are known)" for e in touched if not isinstance(e, InternalError))
        touched = [e for e in touched if isinstance(e, InternalError)]
    result.errors = [InputError(e.path, e.problem) for e in touched]

    # A finding of a renamed file is the same finding under its new path.
    moved = {prefix + old: prefix + new for old, new in state.renames.items()} if treepath else dict(state.renames)

    def before_key(f):
        return f.identity(moved.get(f.path, f.path))
    queues_before = _queues(before_scan, moved)
    queues_after = _queues(after_scan, {})
    same = _pair(before.findings, after.findings, before_key)
    lines_of, changes = _path_facts(after_scan, queues_before, queues_after)
    named = {(prefix if treepath else "") + p for patch in patches for fd in patch.files
             for p in (fd.old_path, fd.new_path) if p}
    for f in after.findings:
        path_rule = review_paths.is_path(f, catalogue)
        if id(f) in same:
            old = same[id(f)]
            # one more work reaching a wait already reported: a path the series opens
            opened = (review_paths.blame(f, added, catalogue, lines_of, changes, old)
                      if path_rule and len(f.works) > len(old.works) else None)
            if opened is not None:
                result.comments.append(Comment(f, opened.path, opened.line, opened.origin, what=opened.what,
                                               chain=opened.chain))
            elif show_all and f.path in named:  # (not the old findings of files it does not name)
                result.preexisting.append(f)
            continue
        if path_rule:
            blamed = review_paths.blame(f, added, catalogue, lines_of, changes)
            if blamed is not None:
                result.comments.append(Comment(f, blamed.path, blamed.line, blamed.origin, what=blamed.what,
                                               chain=blamed.chain))
            elif show_all:
                result.unanchored.append(f)
            continue
        anchor = _anchor(f, added)
        if anchor is not None:
            what = _what_changed(f, queues_before, queues_after, catalogue, after.kernel_version)
            result.comments.append(Comment(f, *anchor, what=what))
        elif show_all:
            result.unanchored.append(f)
    kept = {id(b) for b in same.values()}
    # A finding replaced by another about the same argument of the same queue (the patch
    # dropped WQ_UNBOUND: the unbound CPU-count finding becomes the per-CPU one) is not fixed.
    replaced = {(c.finding.path, c.finding.function, c.finding.queue, c.finding.role)
                for c in result.comments}
    for f in before.findings:
        if id(f) not in kept and before_key(f)[1:] not in replaced:
            result.fixed.append(f)
    result.fingerprints = stable_fingerprints(after.findings)
    result.fingerprints.update(stable_fingerprints(result.fixed, moved))
    if reported:
        said = [result.fingerprints[id(c.finding)] in reported for c in result.comments]
        result.already_reported = [c for c, old in zip(result.comments, said) if old]
        result.comments = [c for c, old in zip(result.comments, said) if not old]
        if result.already_reported:
            n = len(result.already_reported)
            result.notes.append(f"{n} introduced finding{'s' if n != 1 else ''} already reported "
                                f"(their fingerprints are in the --reported file): not printed again")
    result.comments.sort(key=lambda c: (c.origin.patch, c.path, c.line, c.finding.sort_key()))
    return result


def _base_config(root: Path, treepath: Path, base_reader, patches, rule_ids) -> Config:
    """The tree's .wqlint.yaml as it was before the series: what a series changes in it (a
    'paths: []' that mutes the series' own review) takes effect once the series is in the tree,
    not in the review of the series."""
    if base_reader is None or root != treepath:
        # the tree is the base; or the patches' paths are relative to a directory below root,
        # where they cannot reach root's .wqlint.yaml
        return config_mod.load(root, rule_ids)
    name = config_mod.NAME
    return config_mod.from_bytes(base_reader(name, patches[0]), f"{root / name} before the series", rule_ids)


def _engine(root: Path, catalogue, options: ScanOptions, files: Optional[dict] = None) -> Engine:
    """An engine over the tree root, reading the files of files (rel -> bytes; None: deleted)
    from there, the rest from the tree (whose symbolic links it then does not follow)."""
    return Engine(Targets([root], review=files is not None), catalogue,
                  replace(options, files=Overlay(root, files) if files is not None else None))


def _pair(before: list, after: list, before_key) -> dict:
    """id(after finding) -> the finding before the series it is the same as.

    Same identity first (rule, path, function, queue name, argument). Then, among what is
    left, the same call under a new queue name (same rule, path, function and argument, one
    on each side), and the same call moved into another function or file (same rule,
    argument, queue name and message, one on each side): a renamed queue or a moved function
    is neither fixed nor introduced.
    """
    out: dict = {}
    waiting: dict = {}
    for b in before:
        waiting.setdefault(before_key(b), []).append(b)
    for bs in waiting.values():
        bs.reverse()  # (taken from the end, the first first)
    left = []
    for f in after:
        got = waiting.get(f.identity())
        if got:
            out[id(f)] = got.pop()
        else:
            left.append(f)
    gone = [b for bs in waiting.values() for b in reversed(bs)]
    for key in (lambda f, path: (f.rule_id, f.role, path, f.function),
                lambda f, path: (f.rule_id, f.role, f.queue, f.message) if f.queue else None):
        olds: dict = {}
        for b in gone:
            olds.setdefault(key(b, before_key(b)[1]), []).append(b)
        news: dict = {}
        for f in left:
            news.setdefault(key(f, f.path), []).append(f)
        paired: set = set()
        for k, fs in news.items():
            if k is not None and len(fs) == 1 and len(olds.get(k, ())) == 1:
                out[id(fs[0])] = olds[k][0]
                paired.update((id(fs[0]), id(olds[k][0])))
        gone = [b for b in gone if id(b) not in paired]
        left = [f for f in left if id(f) not in paired]
    return out


@dataclass(frozen=True)
class _Queue:
    """What a review compares of one queue before and after the series."""

    flags: frozenset  # of FLAG_NAMES set in every value of the flags
    max_active: tuple  # its values with the CPU count the messages use
    max_active_text: str  # as written, or the CPU count it comes from
    path_flags: frozenset = frozenset()  # of checks.common.path_flags(): for review_paths


def _queues(scanned: ScanResult, moved: dict) -> dict:
    """(path, function, queue name) -> _Queue for the allocations a scan judged."""
    out = {}
    ctx = scanned.context
    for site in scanned.sites:
        key = (moved.get(site.path, site.path), site.function, site.queue)
        if key in out:
            continue
        values, _ = evaluate(site.max_active, ctx.ncpus)
        text = site.arg_texts[site.max_active_arg] if 0 <= site.max_active_arg < len(site.arg_texts) else ""
        cpu = cpu_path(site.max_active)
        if cpu is not None and (not text or re.fullmatch(r"[A-Za-z_][\w.>-]*", text)):
            # a local or a field: say what it holds ('num_online_cpus() + 2'), else its CPU count
            ops = [v for v in cpu if isinstance(v, Op)]
            text = (show(ops[0]) if ops else None) or cpu[-1].kind
        out[key] = _Queue(judged_flags(site.flags, ctx.bits), tuple(sorted(values)), text,
                          path_flags(site.flags, ctx.bits))
    return out


def _path_facts(after_scan: ScanResult, before: dict, after: dict) -> tuple:
    """(lines_of, changes) for review_paths.blame(): the lines of the allocation call whose
    first line is (path, line), and what the series did to its flags."""
    at = {(s.path, s.line): s for s in after_scan.sites}

    def lines_of(path: str, line: int) -> range:
        site = at.get((path, line))
        return range(line, max(line, site.end_line if site is not None else line) + 1)

    def changes(path: str, line: int) -> list:
        site = at.get((path, line))
        key = (site.path, site.function, site.queue) if site is not None else None
        old, new = before.get(key), after.get(key)
        if old is None or new is None:
            return []
        return _flag_changes(old.path_flags, new.path_flags)
    return lines_of, changes


def _flag_changes(old: frozenset, new: frozenset) -> list:
    """'drops WQ_UNBOUND', 'adds WQ_PERCPU': what the series did to a queue's flags."""
    return [f"drops {name}" for name in sorted(old - new)] + [f"adds {name}" for name in sorted(new - old)]


def _what_changed(finding, before: dict, after: dict, catalogue, version) -> str:
    """'this patch drops WQ_UNBOUND: max_active = num_online_cpus() becomes a per-CPU limit':
    what the series did to an existing queue that makes the finding true; '' for a queue the
    series creates. The consequences are the rule's `introduced-by` texts in rules.yaml."""
    key = (finding.path, finding.function, finding.queue)
    old, new = before.get(key), after.get(key)
    if old is None or new is None:
        return ""
    changes = _flag_changes(old.flags, new.flags)
    if old.max_active != new.max_active or (not changes and old.max_active_text != new.max_active_text):
        changes.append("changes max_active")
    if not changes:
        return ""
    rule = catalogue[finding.rule_id]
    texts = [rule.change_text(c) for c in changes]
    consequence = next((t for t in texts if t), None)
    said = " and ".join(c if c != "changes max_active" else
                        f"changes max_active to {new.max_active_text or 'another value'}" for c in changes)
    if consequence is None:
        return f"this patch {said}"
    return f"this patch {said}: " + fill(consequence, max_active=new.max_active_text,
                                         version=kversion.show(version))


def _anchor(finding: Finding, added: dict) -> tuple[str, int, Origin] | None:
    """The changed line a new finding is blamed on: a line of the call (the called name
    first), else the first changed step of the chain shown, of max_active's resolution, of
    the flags' (the flags' first for a rule about the flags)."""
    call = range(finding.line, max(finding.line, finding.end_line) + 1)
    chains = [finding.chain, finding.max_active_chain, finding.flags_chain]
    if finding.role == "flags":
        chains = [finding.flags_chain, finding.chain, finding.max_active_chain]
    places = [(finding.path, n) for n in call] + [(s.path, s.line) for chain in chains for s in chain]
    for path, line in places:
        origin = added.get(path, {}).get(line)
        if origin is not None:
            return path, line, origin
    return None
