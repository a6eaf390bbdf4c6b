"""The tree-sitter engine: find every allocation, follow wrappers, resolve, run the checks.

Only the functions that really create a queue (wqlint.api.SINKS) are known by name. Every
other entry point (alloc_ordered_workqueue(), the create_*() macros, a subsystem's own helper,
a variadic `#define f(...) alloc_hooks(g(__VA_ARGS__))`) is found as a *wrapper*: a function
or macro that forwards one of its parameters into flags or max_active. The finding then moves
to each call of the wrapper, where the parameter has a value.
"""
from __future__ import annotations

import dataclasses
import gc
import os
import re
from pathlib import Path
from typing import Optional

from wqlint import api, errors, kversion, safeio
from wqlint.finding import InputError, InternalError, Origin, Report, Step, Via
from wqlint.scan import parser
from wqlint.scan.cpp import Decider, block_text
from wqlint.scan.index import BUILTIN_HEADER_REL, TreeFiles, TreeIndex
from wqlint.scan.kerneltree import KERNEL_PREFIX
from wqlint.scan.ctext import short as _short
from wqlint.scan.nearness import related
from wqlint.scan.resolve import SITE_BUDGET, Resolver
from wqlint.scan.scope import Scope, calls_named, scope_of
from wqlint.scan.site import CheckContext, FlagBits, NameArgs, QueueUse, Site
from wqlint.scan.source import MAX_FILE_BYTES, Chunk, SourceError, call_digest, is_c_source, read_source, relpath
from wqlint.scan.values import Alt, Param, evaluate, params, substitute, walk
from wqlint.scan.work import WorkModel

SINKS = api.SINKS  # name -> (index of flags, index of max_active)
NAME_ARGS = api.NAME_ARGS  # name -> (index of the name's format, of its first argument)
API_HEADER = "include/linux/workqueue.h"
WORKQUEUE_C = "kernel/workqueue.c"  # WQ_NAME_LEN and what __alloc_workqueue() does with a long name
MAX_ROUNDS = 12
MAX_CALLS_PER_FILE = 400  # allocation calls in one file (the kernel's most: a few dozen)
MAX_WRAPPER_DEPTH = 6
# `wqlint: ignore[rule-id, ...] reason`, or `wqlint: ignore rule-id, ... reason` (words shaped as
# rule ids are: lower case, with a hyphen), or `wqlint: ignore reason` (all rules).
_ID = r"[a-z0-9]+(?:-[a-z0-9]+)+"
_SUPPRESS_RE = re.compile(rf"wqlint:\s*ignore(?:\[([\w\s,-]*)\]|\s+({_ID}(?:\s*,\s*{_ID})*)(?![\w-]))?")


class UsageError(errors.WqlintError, status=errors.USAGE):
    pass


def _suppression(src, ln: int, line: int):
    """The suppression comment on line ln for a call on line: on the call's line, or on a
    line of its own above it (not the trailing comment of the statement above)."""
    text = src.line_text(ln)
    if ln != line and not text.lstrip().startswith(("/*", "//", "*")):
        return None
    return _SUPPRESS_RE.search(text)


def _justification(src, line) -> str:
    """The words after a suppression comment's rule list, up to the end of the comment."""
    for ln in (line - 1, line):
        text = src.line_text(ln)
        m = _suppression(src, ln, line)
        if m:
            rest = text[m.end():].split("*/", 1)[0]
            return " ".join(rest.strip().lstrip(":-").split())
    return ""


def kernel_tree_of(path: Path) -> Optional[Path]:
    """The kernel tree holding path (the nearest directory with a Makefile and include/linux),
    or None."""
    start = path if path.is_dir() else path.parent
    for cand in [start, *start.parents]:
        if (cand / "Makefile").is_file() and (cand / "include" / "linux").is_dir():
            return cand
    return None


def find_root(paths: list) -> Path:
    """The one tree the paths are in: the kernel tree holding them, else (no kernel tree
    around them: a module, loose files) the directory given, or holding the file given, or
    the nearest directory holding all of them. UsageError when the paths are in different
    kernel trees, when some are in a kernel tree and others outside it, or when the only
    directory they share is '/'."""
    absolute = [Path(os.path.abspath(p)) for p in paths]
    trees = [kernel_tree_of(p) for p in absolute]
    inside = [(p, t) for p, t in zip(paths, trees) if t is not None]
    if inside:
        first_path, first_tree = inside[0]
        for p, t in zip(paths, trees):
            if t is None:
                raise UsageError(f"{p} is outside the kernel tree {first_tree} of {first_path}: "
                                 "scan it separately")
            if t != first_tree:
                raise UsageError(f"{first_path} and {p} are in different kernel trees "
                                 f"({first_tree}, {t}): scan each tree separately")
        return first_tree
    if len(absolute) == 1:
        root = absolute[0] if absolute[0].is_dir() else absolute[0].parent
    else:
        common = Path(*_common_parts(absolute))
        root = common if common.is_dir() else common.parent
    if root == Path(root.anchor):
        if len(paths) == 1:
            raise UsageError(f"{paths[0]}: the root directory is not a tree: name a directory below it")
        raise UsageError(f"{paths[0]} and {paths[1]} share no directory but {root.anchor}: "
                         "scan each tree separately")
    return root


# What marks a module's package. Not .git: a home directory kept in git would make the
# package, and so the tree searched, the whole home.
PACKAGE_MARKERS = ("dkms.conf",)
MAX_LINKS = 1000  # symbolic links looked at under the given directories


def package_of(path: Path) -> Path:
    """The package a module's directory belongs to: the nearest directory at or above it
    holding dkms.conf (a DKMS source package); else the directory itself."""
    for cand in [path, *path.parents]:
        if any((cand / m).exists() for m in PACKAGE_MARKERS):
            return cand
    return path


def followed_links(paths: list) -> tuple:
    """([real paths to scan as well], ['link -> target' not followed]) for the directories
    among paths outside any kernel tree: a symbolic link under one (to a directory, or to a
    .c or .h file) leading elsewhere in its package adds what it leads to; one leading out
    of the package, or nowhere, is listed. Links within what is scanned need nothing (the
    file is scanned where it lies, once)."""
    added: list[Path] = []
    unfollowed: list[str] = []
    queue = [Path(os.path.abspath(p)) for p in paths if Path(p).is_dir() and kernel_tree_of(Path(p)) is None]
    covered = [Path(os.path.realpath(p)) for p in queue]
    seen = 0
    while queue and seen < MAX_LINKS:
        top = queue.pop(0)
        package = Path(os.path.realpath(package_of(top)))
        for dirpath, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in dirs + sorted(f for f in files if f.endswith((".c", ".h"))):
                link = Path(dirpath, name)
                if not link.is_symlink():
                    continue
                seen += 1
                real = Path(os.path.realpath(link))
                if any(real == c or c in real.parents for c in covered):
                    continue
                shown = f"{link} -> {os.readlink(link)}"
                if not real.exists():
                    unfollowed.append(shown + " (leads nowhere)")
                elif package not in real.parents:
                    unfollowed.append(shown)
                else:
                    covered.append(real)
                    added.append(real)
                    if real.is_dir():
                        queue.append(real)  # its own links, in turn
    return added, unfollowed


def _common_parts(paths):
    parts = list(paths[0].parts)
    for p in paths[1:]:
        q = p.parts
        i = 0
        while i < min(len(parts), len(q)) and parts[i] == q[i]:
            i += 1
        parts = parts[:i]
    return parts


class Engine:
    def __init__(self, paths: list, catalogue, jobs: int = 1, kernel_version: Optional[tuple] = None,
                 ncpus: int = 96, max_cpus: int = 512, progress=None, focus: Optional[list] = None,
                 focus_words: frozenset = frozenset(), preloaded: Optional[dict] = None,
                 kernel_tree=None, files=None, store=None, root: Optional[Path] = None):
        """files: how the tree's files are read (scan.index.TreeFiles; an Overlay for a
        review: the tree as a patch series makes it). root: the tree the paths are judged
        in, when not the one they make alone (find_root): fix judges a tree's files again.

        store: True for the index kept between runs in the user's cache directory
        (wqlint.scan.store), a Store already opened for this tree, or None. Not used with a
        separate kernel tree (kernel_tree), whose files it does not follow."""
        self.catalogue = catalogue
        self.jobs = jobs
        self.keep_suppressed = False  # run() lists what suppression comments hide, too
        # Parts of sites that no rule that is on reads (wqlint.checks.unread): not built.
        self.unread: frozenset = frozenset()
        # Files whose changes are of interest (review): only allocations in their subsystems
        # are resolved, as chains are only followed within related subsystems (nearness.related).
        self.focus = focus
        self.focus_words = focus_words  # names the focus files use: wrappers they may call
        self.progress = progress
        self.errors: list = []
        self._named_bad: dict = {}  # name given -> rel, of files named on the command line that were refused
        self.api_files: set = set()  # files that define an entry point of the API
        self.notes: list = []
        self.paths = [Path(p) for p in paths]
        for p in self.paths:
            if not p.exists() and not p.is_symlink():
                raise UsageError(f"{p}: no such file or directory")
        # A module's directory may take sources from elsewhere in its package through links
        # (Kbuild builds what they lead to): those are scanned, each file once, where they lie.
        self.given = list(self.paths)
        linked, unfollowed = followed_links(self.paths) if root is None else ([], [])
        if files is not None and linked:
            # A review reads the tree through the series' overlay of the directory given.
            self.notes.append(f"a review reads only {self.paths[0]}: the sources its symbolic links lead "
                              f"to are not reviewed ({', '.join(str(p) for p in linked[:3])}"
                              + (f" and {len(linked) - 3} more" if len(linked) > 3 else "")
                              + "); scan the package for them")
            linked = []
        self.paths += linked
        self.root = Path(root) if root is not None else find_root(self.paths)
        if unfollowed:
            more = f" and {len(unfollowed) - 3} more" if len(unfollowed) > 3 else ""
            self.notes.append("symbolic links not followed (they lead outside the package: the directory "
                              "holding dkms.conf, else the one scanned): " + ", ".join(unfollowed[:3]) + more)
        self.targets = []
        for p in self.paths:
            try:
                p.resolve(strict=True)
            except (RuntimeError, OSError) as exc:  # a symlink loop or a dangling link
                self.errors.append(InputError(str(p), "symbolic link loop" if "loop" in str(exc).lower()
                                              or isinstance(exc, RuntimeError) else "cannot resolve path"))
                continue
            rel = relpath(Path(os.path.abspath(p)), self.root)
            self.targets.append("" if rel == "." else rel)
        # kernel_tree (scan.kerneltree.KernelTree): the kernel a module outside any kernel
        # tree builds for. Its headers are searched as the module's shared headers; inside a
        # kernel tree the tree's own are.
        self.kernel = kernel_tree
        around = kernel_tree_of(self.root)
        if self.kernel is not None and around is not None:
            if around.resolve() not in [r.resolve() for r in self.kernel.roots]:
                raise UsageError(f"{self.paths[0]} is in the kernel tree {around}: --kernel-tree "
                                 f"{self.kernel.given} is for modules outside a kernel tree")
            self.kernel = None  # the same tree
        if kernel_version:
            self.version, self.version_source = kernel_version, "--kernel-version"
        elif self.kernel is not None and self.kernel.version:
            self.version, self.version_source = self.kernel.version, self.kernel.version_from
        else:
            found = kversion.from_makefile(self.root)
            if found:
                self.version, self.version_source = found, "Makefile"
            else:
                self.version, self.version_source = kversion.DEFAULT_VERSION, "default"
        extra = {}
        if self.kernel is not None:
            self.api_header = KERNEL_PREFIX + API_HEADER
        elif not (self.root / API_HEADER).is_file():
            extra[BUILTIN_HEADER_REL] = api.builtin_header(self.version)
            self.api_header = BUILTIN_HEADER_REL
            if self.version_source != "Makefile":  # (a slice of a tree, with its version: no module)
                # A stable or distribution kernel may differ from mainline: say which is
                # described, and how to have the kernel's own headers read instead.
                known = api.backports(self.version)
                self.notes.append("no kernel tree given (--kernel-tree DIR or KDIR): using wqlint's built-in "
                                  f"description of the mainline {kversion.show(self.version[:2] + (0,))} workqueue API "
                                  "and its semantics" + ("" if kernel_version else " (--kernel-version)")
                                  + "; a stable or distribution kernel may have later changes"
                                  + (f" ({known})" if known else "") + ": to read the API of the kernel "
                                  "the module builds for, give its headers, --kernel-tree "
                                  "/lib/modules/$(uname -r)/build (package linux-headers-$(uname -r))")
        else:
            self.api_header = API_HEADER
        if self.version_source == "default" and self.api_header != BUILTIN_HEADER_REL:
            where = self.kernel.describe() if self.kernel is not None else self.root / "Makefile"
            self.notes.append(f"no kernel version in {where}: assuming "
                              f"{kversion.show(self.version)} semantics (use --kernel-version)")
        if self.kernel is not None:
            store = None
        elif store is True:
            store = open_store(self.root)
        self.store = store
        self.save_store = True  # write the store when the analysis is done
        self.index = TreeIndex(self.root, jobs, extra, preloaded=preloaded, kernel=self.kernel,
                               files=files, store=store)
        self.cpp = Decider(self.index, self.version)
        self.resolver = Resolver(self.index, self.cpp)
        self.cpp.build_dirs = [rel for rel in (relpath(Path(os.path.abspath(p)), self.root) for p in self.given
                                               if p.is_dir()) if rel not in ("", ".")]
        self.ncpus, self.max_cpus = ncpus, max_cpus
        self._parse_errors: dict = {}
        self._site_memo: dict = {}

    # -- targets ---------------------------------------------------------------------------
    def in_targets(self, rel: str) -> bool:
        if rel.startswith("<"):
            return False  # wqlint's own description of the API
        return any(t == "" or rel == t or rel.startswith(t + "/") for t in self.targets)

    def _check_named_files(self) -> None:
        """Files named on the command line are read whole, so bad input is always reported."""
        for p in self.paths:
            if not p.is_dir() and is_c_source(p.name) and relpath(Path(os.path.abspath(p)), self.root) \
                    not in self.index.preloaded:
                try:
                    read_source(p, self.root)
                except SourceError as exc:
                    self.errors.append(InputError(str(p), str(exc)))
                    self._named_bad[str(p)] = relpath(Path(os.path.abspath(p)), self.root)

    def _one_per_file(self, errors: list) -> list:
        """The first error of each file (a file named on the command line and refused is said
        once, under the name given: not again by the search, as binary or crowded)."""
        out, seen = [], set()
        for e in errors:
            key = self._named_bad.get(e.path, e.path) if type(e) is InputError else (type(e), e.path, e.problem)
            if key not in seen:
                seen.add(key)
                out.append(e)
        return out

    # -- sites -------------------------------------------------------------------------------
    def _crowded(self, sink: str, occ) -> set:
        """Files with more lines naming sink than MAX_CALLS_PER_FILE: each call's resolution
        looks through its function, so thousands in one function cost minutes and gigabytes.
        Reported once as not analysed (exit 3), never silently cut short."""
        from collections import Counter

        crowded = {rel for rel, n in Counter(rel for rel, _ in occ).items() if n > MAX_CALLS_PER_FILE}
        for rel in sorted(crowded):
            if self.in_targets(rel):
                self.errors.append(InputError(rel, f"more than {MAX_CALLS_PER_FILE} lines name {sink}(), "
                                                   "the most wqlint analyses in one file; not analysed"))
        return crowded

    def _sink_sites(self) -> list:
        out = []
        for sink, (fi, mi) in SINKS.items():
            occ = self.index.occurrences(sink)
            if occ is None:
                continue
            pat = re.compile(rb"\b" + sink.encode() + rb"\s*(\(|\\?$)")
            define = re.compile(rb"\s*#\s*define\s+" + sink.encode() + rb"\b")
            crowded = self._crowded(sink, occ)
            for rel, line in occ:
                if rel in crowded:
                    continue
                outside = self._outside_focus(rel)
                if outside and not self._reachable(rel, self.index.peek(rel, line)):
                    continue
                src = self.index.source(rel)
                if src is None:
                    continue
                text = src.line_bytes(line)
                if not pat.search(text) or re.match(rb"\s*(\*|//)", text) or define.match(text):
                    continue  # a comment, or the API's own macro (v6.17's alloc_hooks() form)
                span = src.define_span(line)
                chunk = self.resolver.macros.chunk(src, *span) if span else src.chunk_at(line)
                if chunk is None:
                    continue
                calls = calls_named(chunk, sink, line)
                if not calls:
                    if self._is_declaration(chunk, sink, line) or _only_in_comments(chunk, sink, line):
                        continue
                    self._parse_errors.setdefault(rel, f"line {line}: cannot parse the call to {sink}()")
                    continue
                for call in calls:
                    memo_key = (rel, chunk.first_line, call.start_byte)
                    if memo_key in self._site_memo:
                        out.extend(self._site_memo[memo_key])
                        continue
                    misses = self.index.misses
                    dead, conds = self.cpp.state(src, line)
                    if dead:  # not compiled for this kernel
                        if self.index.misses == misses:
                            self._site_memo[memo_key] = []
                        continue
                    args = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
                    scope = scope_of(chunk, call)
                    if scope.name in SINKS:
                        self.api_files.add(rel)  # an entry point calling another: the API's own code
                        continue
                    if outside and scope.name not in self.focus_words:
                        continue  # neither near the focus nor a wrapper it calls
                    spread = _variadic_forward(args, scope, chunk)
                    if len(args) <= mi and spread is None:
                        self._parse_errors.setdefault(rel, f"line {line}: {sink}() with {len(args)} arguments")
                        continue
                    self.resolver.budget = SITE_BUDGET
                    self.resolver.home = rel
                    try:
                        flags = self._argument(args, fi, scope, spread, line, src)
                        max_active = self._argument(args, mi, scope, spread, line, src)
                        self.resolver.naming = True
                        try:
                            name = self._name(sink, args, scope, spread, line, src)
                        finally:
                            self.resolver.naming = False
                        step = Step(rel, line, src.line_text(line).strip(),
                                    f"{sink}(flags '{_arg_text(args, fi, spread)}', "
                                    f"max_active '{_arg_text(args, mi, spread)}')")
                        # The #if branches that chose the flags' definitions, named for every rule.
                        chosen = [v.step for v in walk(flags) if v.step in self.resolver.conditional_steps]
                        found = self._expand(sink, call, chunk, scope, flags, max_active,
                                             [step] + self._condition_steps(src, conds) + list(dict.fromkeys(chosen)),
                                             [], 0, (fi, mi), name)
                    except Exception as exc:  # a bug must cost this call, not the run
                        self.errors.append(InternalError.of(f"{rel}:{line}", exc))
                        continue
                    if self.index.misses == misses:
                        self._site_memo[memo_key] = found
                    out.extend(found)
        return out

    # -- the second kind of site: a queue named at a call that takes one ----------------------
    def uses(self) -> list:
        """The QueueUse sites of the targets, without resolving allocations."""
        return self._queue_uses()

    def _queue_uses(self) -> list:
        """Calls whose queue argument (api.QUEUE_CALLS) is one of the names the API lists in
        DEPRECATED_SYSTEM_QUEUES: found from the index's occurrences of the names, in the
        targets only (such a use has no chain to follow)."""
        if [n for n in api.DEPRECATED_SYSTEM_QUEUES if self.index.occurrences(n) is None]:
            self.index.fetch_pending()  # (every name asked for first: one search for all)
        for _ in range(MAX_ROUNDS):
            misses = self.index.misses
            out = self._queue_uses_once()
            # The #if conditions around a use may name macros still to look up.
            if self.index.misses == misses or not self.index.fetch_pending():
                break
        return out

    def _queue_uses_once(self) -> list:
        out, seen = [], set()
        for name in api.DEPRECATED_SYSTEM_QUEUES:
            for rel, line in self.index.occurrences(name) or ():
                if not self.in_targets(rel) or self._outside_focus(rel):
                    continue
                src = self.index.source(rel)
                if src is None:
                    continue
                text = src.line_bytes(line)
                if re.match(rb"\s*(\*|//)", text):
                    continue  # a comment
                span = src.define_span(line)  # a use inside a macro's body counts too
                chunk = self.resolver.macros.chunk(src, *span) if span else src.chunk_at(line)
                if chunk is None:
                    continue
                for ident in _identifiers(chunk.root, name):
                    if chunk.line_of(ident) != line:
                        continue
                    use = self._use_at(ident, name, chunk)
                    if use is not None and (use.path, use.line, use.col, use.queue) not in seen:
                        seen.add((use.path, use.line, use.col, use.queue))
                        out.append(use)
        return out

    def _use_at(self, node, name: str, chunk) -> Optional[QueueUse]:
        """The call node is the queue argument of, through parentheses and the branches of
        a conditional; None when it is anything else."""
        if node is None or node.type != "identifier" or parser.text(node) != name:
            return None
        arg = node
        while arg.parent is not None and (arg.parent.type == "parenthesized_expression" or (
                arg.parent.type == "conditional_expression"
                and arg.parent.child_by_field_name("condition") != arg)):
            arg = arg.parent
        args = arg.parent
        if args is None or args.type != "argument_list" or args.parent is None \
                or args.parent.type != "call_expression":
            return None
        call = args.parent
        fn = call.child_by_field_name("function")
        spec = api.QUEUE_CALLS_BY_NAME.get(parser.text(fn)) if fn is not None else None
        listed = [a for a in args.named_children if a.type != "comment"]
        if spec is None or spec.queue_arg >= len(listed) or listed[spec.queue_arg] != arg:
            return None
        src = chunk.source
        line = chunk.line_of(fn)
        dead, conds = self.cpp.state(src, line)
        if dead:  # in a branch not compiled for this kernel (a compat block)
            return None
        scope = scope_of(chunk, call)
        col, end_col = chunk.col_of(fn), chunk.end_col_of(fn)
        if getattr(chunk, "macro_kind", None) == "macro":
            # A macro's head is rewritten for parsing: take the column from the file's line.
            at = re.search(r"\b" + spec.name + r"\s*\(", src.line_text(line))
            if at is not None:
                col, end_col = at.start() + 1, at.start() + len(spec.name)
        return QueueUse(
            call=spec.name, queue=name, arg=spec.queue_arg, path=src.rel, line=line,
            col=col, end_col=end_col,
            step=Step(src.rel, line, src.line_text(line).strip(),
                      f"{spec.name}() on {name} (argument {spec.queue_arg + 1})"),
            function=scope.name if scope.kind == "function" else "",
            suppressed=self._suppressed(src, line), conditions=tuple(self._condition_steps(src, conds)),
            **self._compat_pair(src, conds, api.DEPRECATED_SYSTEM_QUEUES.get(name, "")),
            within=scope.name if scope.kind != "file" else "",
            scheduled=() if spec.queues else self._helper_calls(src))

    def _helper_calls(self, src) -> tuple:
        """(helper, Step) of the calls of api.SCHEDULE_HELPERS in src (not comments, not
        definitions), in line order."""
        out = []
        for helper in api.SCHEDULE_HELPERS:
            pat = re.compile(r"\b" + helper + r"\s*\(")
            for ln in src.word_lines(helper):
                text = src.line_text(ln)
                if not pat.search(text) or re.match(r"\s*(\*|//|#\s*define)", text) \
                        or re.search(r"\bbool\s+" + helper, text):
                    continue
                chunk = src.chunk_at(ln)
                if chunk is not None and not _only_in_comments(chunk, helper, ln):
                    out.append((helper, Step(src.rel, ln, text.strip(), f"{helper}() queues work here")))
        return tuple(sorted(out, key=lambda hs: hs[1].line))

    def _argument(self, args, i, scope: Scope, spread, line, src):
        """The value of argument i of a call; inside a variadic macro whose __VA_ARGS__ covers
        it, the macro's own parameter at the matching position."""
        if spread is not None and i >= spread:
            index = len(scope.params) - 1 + (i - spread)
            name = _arg_text(args, i, spread)
            return Param(Step(src.rel, line, src.line_text(line).strip(),
                              f"argument {i + 1} is argument {index + 1} of {scope.name}() "
                              f"through {name.split('[')[0]}"), scope.name, index, name)
        return self.resolver.resolve(args[i], scope)

    def _name(self, sink, args, scope: Scope, spread, line, src) -> Optional[NameArgs]:
        """The queue's name at a call of sink: its format and the arguments after it
        (api.NAME_ARGS), those a variadic macro spreads still to come from its callers."""
        ni, ai = NAME_ARGS[sink]
        if spread is None and ni >= len(args):
            return None
        fmt = self._argument(args, ni, scope, spread, line, src)
        values, rest = [], None
        if ai >= 0:
            if spread is None:
                values = [self.resolver.resolve(a, scope) for a in args[ai:]]
            else:
                values = [self._argument(args, i, scope, spread, line, src) for i in range(ai, spread)]
                first = len(scope.params) - 1 + max(ai - spread, 0)
                rest = Param(Step(src.rel, line, src.line_text(line).strip(),
                                  f"the name's arguments are those of {scope.name}() from argument {first + 1}"),
                             scope.name, first, scope.params[-1])
        step = Step(src.rel, line, src.line_text(line).strip(), f"{sink}() name '{_arg_text(args, ni, spread)}'")
        return NameArgs(fmt, tuple(values), rest, step)

    def _bind_name(self, name, bind, scope: Scope, cargs, cscope: Scope) -> Optional[NameArgs]:
        """The name at a caller of the wrapper scope: its parameters bound to the caller's
        arguments, and the variable arguments it spreads taken from the call."""
        if name is None:
            return None
        values = [substitute(v, bind) for v in name.args]
        rest = name.rest
        if rest is not None and rest.function == scope.name:
            cspread = _variadic_forward(cargs, cscope, cscope.chunk)
            first, rest = rest, None
            for k in range(first.index, len(cargs)):
                if cspread is not None and k >= cspread:
                    rest = Param(first.step, cscope.name, len(cscope.params) - 1 + (k - cspread),
                                 cscope.params[-1])
                    break
                values.append(bind(Param(first.step, scope.name, k, f"{first.name}[{k - first.index}]")))
        return NameArgs(substitute(name.fmt, bind), tuple(values), rest, name.step)

    def _is_declaration(self, chunk, sink, line) -> bool:
        text = chunk.source.line_text(line)
        # A prototype or a definition: its first parameter starts with a type.
        return bool(re.search(r"^\s*(extern\s+)?(struct\s+workqueue_struct\s*\*\s*)?" + sink
                              + r"\s*\(\s*(const|struct|unsigned|int|char|void)\b", text)
                    or re.search(r"\*\s*\n?\s*" + sink + r"\s*\(", text) and "const char" in text)

    def _expand(self, entry, call, chunk, scope: Scope, flags, max_active, prefix, via, depth, args_at,
                name=None) -> list:
        """Sites for one call: here, or at each caller when it forwards parameters.

        args_at: the indices of the arguments of this call that carry flags and max_active."""
        mine = [p for p in params(flags) + params(max_active) if p.function == scope.name]
        named = [p for p in _name_params(name) if p.function == scope.name]
        # A function that forwards only the name: flags and max_active are known here, the
        # name at each caller.
        name_only = not mine and bool(named) and scope.kind == "function"
        # A macro expands where it is used, so its call sites are the allocations even when
        # it forwards nothing into flags or max_active (create_freezable_workqueue()).
        if (not mine and not name_only and scope.kind != "macro") or not scope.name or scope.kind == "file" \
                or depth >= MAX_WRAPPER_DEPTH:
            return [self._site(entry, call, chunk, flags, max_active, prefix, via, args_at, scope, name)]
        callers = self.resolver.functions.call_sites(scope.name, scope.src, scope.static and scope.kind == "function",
                                           keep=self._reachable if self.focus is not None else None)
        out = []
        flags_here = scope.kind == "function" and not any(p.function == scope.name for p in params(flags))
        # The parts decided in this function: a site here has them (rules reading only those
        # are judged once, here, not per caller), the callers' sites have the rest.
        here_parts = frozenset(("flags",) if flags_here else ()) | \
            frozenset(("name",) if scope.kind == "function" and not named else ())
        if name_only:
            here_parts = frozenset({"flags", "max_active"})
        if here_parts and callers:
            here = self._site(entry, call, chunk, flags, max_active, prefix, via, args_at, scope, name)
            here.parts = here_parts
            out.append(here)
        outer_at = (_forwarded_index(flags, scope.name), _direct_param_index(max_active, scope.name))
        for ccall, cscope in callers:
            rel = cscope.src.rel
            cargs = [a for a in ccall.child_by_field_name("arguments").named_children if a.type != "comment"]
            if not self.in_targets(rel) and cscope.kind != "macro" and not self._forwards(cargs, cscope, mine + named):
                continue
            if self._outside_focus(rel) and cscope.name not in self.focus_words:
                continue
            if any(p.index >= len(cargs) for p in mine):
                continue
            cline = cscope.chunk.line_of(ccall)
            dead, conds = self.cpp.state(cscope.src, cline)
            if dead:  # a call of the wrapper that is not compiled for this kernel
                continue
            bound: dict[int, Alt] = {}

            def bind(p: Param, cargs=cargs, cscope=cscope, cline=cline, bound=bound, rel=rel):
                if p.function != scope.name or p.index >= len(cargs):
                    return p
                key = p.index
                if key not in bound:
                    arg = cargs[key]
                    bound[key] = Alt(Step(rel, cline, cscope.src.line_text(cline).strip(),
                                          f"'{p.name}' <- argument {key + 1} '{_short(parser.text(arg), 50)}' "
                                          f"of {scope.name}()", binds=(scope.name, key),
                                          origin=Origin(Via.ARGUMENT, p.name)),
                                     (self.resolver.resolve(arg, cscope),), "")
                return Alt(p.step, (bound[key],), "")
            # The caller is where the queue is allocated: its subsystem is the one whose
            # helpers its arguments may go through (a macro of the API's header has none).
            home, self.resolver.home = self.resolver.home, rel
            try:
                nflags = substitute(flags, bind)
                nmax = substitute(max_active, bind)
                self.resolver.naming = True
                nname = self._bind_name(name, bind, scope, cargs, cscope)
            finally:
                self.resolver.naming = False
                self.resolver.home = home
            step = Step(rel, cline, cscope.src.line_text(cline).strip(), f"calls {scope.name}()")
            for site in self._expand(scope.name, ccall, cscope.chunk, cscope, nflags, nmax,
                                     [step] + self._condition_steps(cscope.src, conds) + prefix,
                                     [scope.name] + via, depth + 1, outer_at, nname):
                if name_only:
                    site.parts = frozenset({"name"}) if site.parts is None else site.parts & {"name"}
                else:
                    site.parts_elsewhere = site.parts_elsewhere | here_parts
                out.append(site)
        if not callers:
            if scope.src.rel == self.api_header:
                return []  # the API header's own macro (create_workqueue()) that nothing uses: no queue
            return [self._site(entry, call, chunk, flags, max_active, prefix, via, args_at, scope, name)]
        return out

    def _compat_pair(self, src, conds, new: str) -> dict:
        """QueueUse's compat_pair and compat_undecided: the text of the innermost #if whose
        other branch already uses new (the replacement of what this line uses), which makes
        this line the module's code for kernels without it, and whether that #if is left
        undecided (a configure-generated HAVE_*) rather than taken for a kernel that has the
        replacement before the version the module tests (a backport). {} when none."""
        if not new:
            return {}
        word = re.compile(rb"\b" + new.encode() + rb"\b")
        for cond, truth, _nowhere, _why in reversed(conds):
            if word.search(block_text(src, cond.line)):
                return {"compat_pair": cond.text, "compat_undecided": truth is None}
        return {}

    def _flows(self, sites, bits) -> list:
        """The work items put on queues allocated with api.RESCUER_FLAG whose functions reach a
        flush (scan.work), looked up round by round like the sites' values."""
        rescuer = bits.bit(api.RESCUER_FLAG)
        if not rescuer or "flow" in self.unread:
            return []
        header = self.index.source(self.api_header)
        model = WorkModel(self, sites, helper_queues(header.data if header is not None else b"",
                                                     self.api_header))

        answers: dict = {}  # id(site) -> wanted(site): asked again in every round

        def wanted(site) -> bool:
            got = answers.get(id(site))
            if got is None:
                got = answers[id(site)] = self.in_targets(site.path) and not self._outside_focus(site.path) \
                    and any(v & rescuer for v in evaluate(site.flags, 1)[0])
            return got
        flows: list = []
        # The model makes hundreds of thousands of small objects (the subsystems' headers, the
        # callees of each body) while the scan's own are alive: the collector's passes over
        # those cost about 0.2-0.4 s of CPU on linux-source-6.12 (of some 3 s for the model).
        # They are set aside while it runs; nor are the model's own collected while it runs
        # (they are its answers, kept to its end, with few cycles among them: the peak of a
        # cold whole-6.12 scan is the same, and its passes over them took 0.1-0.2 s more).
        enabled = gc.isenabled()
        gc.freeze()
        gc.disable()
        try:
            for _ in range(MAX_ROUNDS):
                misses = self.index.misses
                flows = model.flows(wanted)
                if self.index.misses == misses or not self.index.fetch_pending():
                    break
        finally:
            if enabled:
                gc.enable()
            gc.unfreeze()
        return flows

    def _condition_steps(self, src, conds) -> list:
        """Chain steps naming the #if conditions a call is compiled under (scan.cpp)."""
        return [Step(src.rel, cond.line, src.line_text(cond.line).strip(), note)
                for cond, note in self.cpp.notes(conds)]

    def _reachable(self, rel: str, line_text: bytes) -> bool:
        """A cheap first look: is this line near the focus, or in a function it calls?"""
        if not self._outside_focus(rel):
            return True
        if self.store is not None and not self.index._shadowed(rel):
            # Kept in the index for the file as it is on disk: a review reads none of them again.
            name = self.store.enclosing_name(rel, line_text,
                                             lambda r, t: _enclosing_name(self.index.root / r, t))
        else:
            name = _enclosing_name(self.index.root / rel, line_text)
        return name in self.focus_words

    def _outside_focus(self, rel: str) -> bool:
        """Can a change to the focus files not reach an allocation in rel?"""
        return (self.focus is not None and not rel.startswith(("include/", "<"))
                and not any(related(rel, f) for f in self.focus))

    def _forwards(self, cargs, cscope: Scope, mine) -> bool:
        """Does a call outside the targets pass its own parameters on (a wrapper of a wrapper)?"""
        names = set(cscope.params)
        for p in mine:
            if p.index < len(cargs):
                idents = set(re.findall(r"[A-Za-z_]\w*", parser.text(cargs[p.index])))
                if idents & names:
                    return True
        return False

    def _site(self, entry, call, chunk, flags, max_active, prefix, via, args_at, scope, name_args=None) -> Site:
        name = call.child_by_field_name("function")
        src = chunk.source
        line = chunk.line_of(name)
        args = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
        named = next((a for a in args if a.type in ("string_literal", "concatenated_string")),
                     args[0] if args else None)
        return Site(entry=entry, path=src.rel, line=line, col=chunk.col_of(name),
                    end_col=chunk.end_col_of(name), flags=flags, max_active=max_active,
                    prefix=prefix, via=via, suppressed=self._suppressed(src, line),
                    flags_arg=args_at[0], max_active_arg=args_at[1],
                    function=scope.name if scope.kind == "function" else "",
                    queue=" ".join(parser.text(named).split()) if named is not None else "",
                    end_line=line + call.end_point[0] - name.start_point[0],
                    arg_texts=tuple(" ".join(parser.text(a).split()) for a in args), name=name_args)

    def suppressions(self, sites, judge) -> list:
        """(finding, justification) of what suppression comments hide at these judged sites:
        `/* wqlint: ignore[rule] reason */` gives 'reason' (SARIF's suppressions)."""
        from dataclasses import replace

        out = []
        for site in sites:
            if not site.suppressed:
                continue
            src = self.index.source(site.path)
            why = _justification(src, site.line) if src is not None else ""
            for f in judge([replace(site, suppressed=frozenset())], self.check_context):
                if "*" in site.suppressed or f.rule_id in site.suppressed:
                    out.append((f, why))
        return out

    @staticmethod
    def _suppressed(src, line) -> frozenset:
        ids: set[str] = set()
        for ln in (line - 1, line):
            m = _suppression(src, ln, line)
            if m:
                listed = m.group(1) or m.group(2)
                if listed is None:
                    return frozenset({"*"})
                ids.update(x.strip() for x in listed.split(",") if x.strip())
        return frozenset(ids)

    # -- run ---------------------------------------------------------------------------------
    def _bits(self, near: Optional[str] = None) -> FlagBits:
        """The WQ_* values as the API header defines them (or as the file near sees them)."""
        src = self.index.source(near or self.api_header) or next(iter(self.index.files.values()))
        scope = Scope(src, Chunk(src, 1, src.nlines))  # the file's own level (parsed only if used)
        def val(name):
            v = self.resolver.symbols.symbol(name, scope, 0, frozenset())
            got, _ = evaluate(v, 1)
            return next(iter(got)) if len(got) == 1 else 0
        names = [name for name, _bit, _since in api.FLAG_BITS] + list(api.FLAG_MASKS)
        return FlagBits({name: val(name) for name in names})

    def _prefetch_api(self) -> None:
        """Queue, with the first search, what every tree needs from the API header: the
        macros that wrap alloc_workqueue() (their call sites) and the WQ_* names."""
        api = self.index.source(self.api_header)
        if api is None:
            return
        text = api.data.decode("utf-8", "replace").replace("\\\n", " ")
        for m in re.finditer(r"^\s*#\s*define\s+(\w+)\(.*$", text, re.M):
            if any(re.search(r"\b" + sink + r"\s*\(", m.group(0)) for sink in SINKS):
                self.index.occurrences(m.group(1))
        for m in re.finditer(r"^\s*(_*WQ_\w+)\s*=", text, re.M):
            self.index.occurrences(m.group(1), defs=True, near=self.api_header)

    def sites(self) -> list:
        """Every allocation site reachable from the paths, resolved but not yet judged."""
        self._check_named_files()
        self._prefetch_api()
        sites = []
        for rnd in range(MAX_ROUNDS):
            self._parse_errors = {}
            self.resolver.new_round()
            sites = self._sink_sites()
            if self.progress:
                self.progress(f"round {rnd + 1}: {len(sites)} allocation sites, "
                              f"{len(self.index.pending)} names to look up")
            if not self.index.fetch_pending():
                break
        self._warm_bits()
        return sites

    def context(self, bits: Optional[FlagBits] = None, api_header: Optional[str] = None,
                header_text: Optional[bytes] = None) -> CheckContext:
        """header_text: the API header's text when it is not a file of the scanned tree (the
        header a checked unit was preprocessed with)."""
        bits = bits or self._bits()
        if header_text is None:
            header = self.index.source(api_header or self.api_header)
            header_text = header.data if header is not None else b""
        text = header_text
        declared = frozenset(n for n in api.DEPRECATED_SYSTEM_QUEUES.values()
                             if re.search(rb"\b" + n.encode() + rb"\b", text))
        name_len, warns, where = self._name_len()
        helpers = helper_queues(text, api_header or self.api_header)
        return CheckContext(self.catalogue, self.version, self.version_source, bits,
                            has_percpu=bool(bits.bit("WQ_PERCPU")), api_header=api_header or self.api_header,
                            ncpus=self.ncpus, max_cpus=self.max_cpus, declared=declared,
                            api_files=frozenset(self.api_files), name_len=name_len, name_warns=warns,
                            name_len_step=where, helper_queues=helpers)

    def _name_len(self) -> tuple:
        """(WQ_NAME_LEN, whether __alloc_workqueue() warns about a longer name, the Step where
        the tree says so) from the tree's own kernel/workqueue.c; without one, what the API
        description says of the version (and no Step)."""
        rel = WORKQUEUE_C
        if self.kernel is not None:
            rel = KERNEL_PREFIX + WORKQUEUE_C
            known = self.kernel.find(WORKQUEUE_C) is not None
        else:
            known = rel in self.index.files or rel in self.index.preloaded or (self.root / rel).is_file()
        src = self.index.source(rel) if known else None
        m = re.search(rb"^\s*WQ_NAME_LEN\s*=\s*(\d+)\s*,", src.data, re.M) if src is not None else None
        if src is None or m is None:
            return api.wq_name_len(self.version), api.name_truncation_warns(self.version), None
        line = src.data.count(b"\n", 0, m.start(1)) + 1
        warns = re.search(rb"if\s*\(\s*\w+\s*>=\s*WQ_NAME_LEN\s*\)\s*pr_warn", src.data) is not None
        size = int(m.group(1))
        note = (f"WQ_NAME_LEN = {size}: wq->name keeps {size - 1} bytes"
                + ("; __alloc_workqueue() warns once (pr_warn_once) when the name is cut" if warns
                   else "; a longer name is cut silently"))
        return size, warns, Step(src.rel, line, src.line_text(line).strip(), note)

    def _hidden_note(self) -> None:
        """The search skips hidden directories (.tmp_versions, a vendor's .foo/): say so, once,
        naming them, rather than scan less than was asked without a word. .git holds no
        source and is not named."""
        hidden = []
        if self.store is not None and not any(part.startswith(".") for t in self.targets for part in t.split("/")):
            # The walk that validated the index saw them (wqlint.scan.store.walk).
            hidden = [h for h in self.store.hidden_dirs()
                      if any(t == "" or h.startswith(t + "/") for t in self.targets)]
            self._name_hidden(hidden)
            return
        for t in sorted(set(self.targets)):
            base = self.root / t if t else self.root
            for dirpath, dirs, _files in os.walk(base):
                for d in dirs:
                    if d.startswith(".") and d != ".git":
                        hidden.append(relpath(Path(dirpath, d), self.root))
                dirs[:] = [d for d in dirs if not d.startswith(".")]
        self._name_hidden(hidden)

    def _name_hidden(self, hidden: list) -> None:
        if hidden:
            more = f" and {len(hidden) - 3} more" if len(hidden) > 3 else ""
            self.notes.append(f"hidden directories are not searched: {', '.join(sorted(hidden)[:3])}{more}")

    def analysis(self) -> dict:
        """The sites of the paths, resolved but not judged, and what they came from: sites,
        uses (QueueUse), bits (FlagBits), bad and parse_errors ({rel: problem}), errors
        (InputError of the tree search), files_scanned, read ({rel: digest of the bytes, or
        None without a store}), call_sha. Taken from the store when nothing they depend on
        changed since they were kept."""
        key = self._scan_key()
        kept = self.store.scan(key) if key is not None else None
        if kept is not None:
            self._check_named_files()
            if self.save_store and self.store.unsaved:  # new stamps (a touched file), the scan's use
                self.store.save()
            return kept
        # Searched with the first round of sites(): the uses of the system queues, and the
        # callers of the API's macros (each a wrapper whose callers are the allocations),
        # which would otherwise cost a second pass over the tree once their #define is read.
        # With the rules of work items on, the flushes too (the files where scan.work looks
        # for a callee its caller's subsystem does not define).
        for name in list(api.DEPRECATED_SYSTEM_QUEUES) + [e.name for e in api.ENTRIES] + (
                [] if "flow" in self.unread else [c.name for c in api.FLUSH_CALLS]):
            self.index.occurrences(name)
        sites = self.sites()
        bits = self._bits()
        uses = self._queue_uses()
        flows = self._flows(sites, bits)
        read: dict[str, Optional[str]] = {rel: None for rel in self.index.files if not rel.startswith("<")}
        read.update((rel, None) for rel in self.index.bad)
        read.update((rel, None) for rel in self.index.looked if not rel.startswith("<"))
        if self.store is not None:
            from wqlint import safeio
            from wqlint.scan.source import MAX_FILE_BYTES
            from wqlint.scan.store import digest
            for rel in read:
                src = self.index.files.get(rel)
                if src is not None:
                    read[rel] = digest(src.data)
                elif rel in self.index.looked:
                    read[rel] = self.index.looked[rel]
                else:  # a file the scan could not use (binary, too large, not a regular file)
                    try:
                        read[rel] = digest(safeio.read_bytes(self.root / rel, MAX_FILE_BYTES, self.root))
                    except safeio.InputRefused:
                        read[rel] = ""
        # The digest of each reported call's text (Finding.call_sha), from the files in memory
        # now: a scan taken from the store then reads none of them again.
        call_sha = {}
        for s in list(sites) + list(uses):
            src = self.index.files.get(s.path)
            if src is not None and self.in_targets(s.path) and (s.path, s.line, s.col) not in call_sha:
                call_sha[(s.path, s.line, s.col)] = call_digest(src, s.line, s.col)
        result = {"sites": sites, "uses": uses, "flows": flows, "bits": bits, "bad": dict(self.index.bad),
                  "errors": list(self.index.errors), "parse_errors": dict(self._parse_errors),
                  "files_scanned": len(self.index.files.keys() | self.index.looked.keys()), "read": read,
                  "call_sha": call_sha, "api_files": frozenset(self.api_files)}
        if self.store is not None and not self.index.errors:
            if key is not None:
                self.store.keep_scan(key, result)
            if self.save_store:
                self.store.save()
        return result

    def run(self, judge) -> Report:
        """The report of the paths: their sites as resolved, judged by judge(sites, context)
        -> findings (wqlint.checks.judge: the scanner resolves, the rules judge)."""
        got = self.analysis()
        self._hidden_note()  # after the search: the directories are in the page cache
        # Kept for review, which compares each queue's flags before and after a series.
        self.judged_sites = [s for s in got["sites"] if self.in_targets(s.path)]
        self.api_files = set(got["api_files"])  # kept with the sites: a stored scan walks none
        self.check_context = self.context(got["bits"])
        shas = got.get("call_sha", {})
        # A flow is the work's as much as the flush's: reported when the flush is scanned, or
        # where the work is bound to its function or queued (a driver's scan shows its work
        # reaching a transport's flush; a scan of the file allocating a shared reclaim queue
        # does not show every work other files put on it).
        flows = [f if self.in_targets(f.path) else dataclasses.replace(f, elsewhere=True)
                 for f in got.get("flows", ()) if self.in_targets(f.path) or self.in_targets(f.bound.path)
                 or self.in_targets(f.queued.path)]
        findings = [self._with_call_sha(f, shas)
                    for f in judge(self.judged_sites + got["uses"] + flows, self.check_context)]
        errors = list(self.errors) + list(got["errors"])
        for rel, problem in sorted(got["bad"].items()):
            if self.in_targets(rel):
                errors.append(InputError(rel, problem))
        for rel, problem in sorted(got["parse_errors"].items()):
            if self.in_targets(rel):
                errors.append(InputError(rel, problem))
        report = Report(root=str(self.root), findings=findings, errors=self._one_per_file(errors), notes=self.notes,
                        kernel_version=self.version, kernel_version_source=self.version_source,
                        files_scanned=got["files_scanned"])
        report.grep_rounds = self.index.grep_rounds
        if self.keep_suppressed:
            report.suppressed = self.suppressions(self.judged_sites + got["uses"], judge)
        return report

    def _scan_key(self):
        """Under which key a scan's sites are kept in the store; None when they are not (no
        store, or files in memory: a review's patched files, a checker's unit). wqlint's own
        description of the API follows the kernel version: its digest is part of the key."""
        if self.store is None or self.focus is not None or self.index.preloaded \
                or any(not rel.startswith("<") for rel in self.index.extra) \
                or type(self.index.tree_files) is not TreeFiles:
            return None
        from wqlint.scan.store import digest
        own = tuple(sorted((rel, digest(data)) for rel, data in self.index.extra.items()))
        # The version too: paths through #if branches follow the target kernel (scan.cpp).
        return ("scan", tuple(sorted(self.targets)), self.api_header, own, tuple(self.version),
                tuple(sorted(self.unread)))

    def _with_call_sha(self, f, known: Optional[dict] = None):
        digest = (known or {}).get((f.path, f.line, f.col))
        if digest is None:
            src = self.index.source(f.path)
            digest = call_digest(src, f.line, f.col) if src is not None else ""
        return dataclasses.replace(f, call_sha=digest) if digest else f

    def _warm_bits(self) -> None:
        for _ in range(3):
            self._bits()
            if not self.index.fetch_pending():
                return


_HEADER_RE = re.compile(rb"(?m)^(?:#\s*define\s+([A-Za-z_]\w*)|[A-Za-z_][^;{}=#]*?\b([A-Za-z_]\w*)\s*\()")


def helper_queues(header: bytes, rel: str) -> dict:
    """{helper: (queue, Step)}: the system queue each of api.SCHEDULE_HELPERS and
    api.FLUSH_SCHEDULED names in its definition in the API header (an inline function or a
    macro), with the line that names it."""
    text = header.decode("utf-8", "replace")
    out = {}
    for helper in api.SCHEDULE_HELPERS + (api.FLUSH_SCHEDULED,):
        head = re.search(r"(?m)^(?:static\s+inline\s+\w+\s+|#\s*define\s+)" + helper + r"\s*\(", text)
        if head is None:
            continue
        end = re.search(r"(?m)^\}", text[head.end():head.end() + 600])
        body_end = head.end() + (end.start() if end is not None else 0)
        m = re.search(r"\b(system_\w+)\b", text[head.end():body_end])
        if m is None:
            continue
        at = head.end() + m.start(1)
        line = text.count("\n", 0, at) + 1
        line_text = text.split("\n")[line - 1].strip()
        out[helper] = (m.group(1), Step(rel, line, line_text, f"{helper}() uses {m.group(1)}"))
    return out


def _enclosing_name(path: Path, line_text: bytes) -> str:
    """The function or macro a line sits in, by a cheap look at the text before it (the last
    column-0 header after the last column-0 '}'); '' when unsure. Only used to skip work."""
    try:
        data = safeio.read_bytes(path, MAX_FILE_BYTES)
    except safeio.InputRefused:
        return ""
    at = data.find(line_text) if line_text else -1
    if at < 0:
        return ""
    start = data.rfind(b"\n}", 0, at) + 1
    name = ""
    for m in _HEADER_RE.finditer(data, start, at):
        name = (m.group(1) or m.group(2)).decode("ascii", "replace")
    return name


def _identifiers(node, name: str) -> list:
    """The identifiers spelled name under node."""
    out, stack = [], [node]
    while stack:
        cur = stack.pop()
        if cur.type == "identifier" and parser.text(cur) == name:
            out.append(cur)
        stack.extend(cur.named_children)
    return out


def _only_in_comments(chunk, name: str, line: int) -> bool:
    """Is every mention of name on line inside a comment or a string?"""
    src = chunk.source
    text = src.line_bytes(line)
    row = line - chunk.first_line
    for m in re.finditer(rb"\b" + re.escape(name.encode()) + rb"\b", text):
        node = chunk.root.descendant_for_point_range((row, m.start()), (row, m.end()))
        while node is not None and node.type not in ("comment", "string_literal", "system_lib_string",
                                                      "char_literal"):
            node = node.parent
        if node is None:
            return False
    return True


def _arg_text(args, i, spread) -> str:
    if spread is not None and i >= spread:
        name = parser.text(args[spread])
        return f"{'__VA_ARGS__' if name == '__va' else name}[{i - spread}]"
    return _short(parser.text(args[i]), 50)


def _variadic_forward(args, scope: Scope, chunk):
    """Where a variadic macro spreads its variable arguments into this call (the position of
    `__VA_ARGS__` or `args` of `args...` when it is the call's last argument), else None."""
    if scope.kind != "macro" or not getattr(chunk, "macro_variadic", False) or not scope.params:
        return None
    if args and args[-1].type == "identifier" and parser.text(args[-1]) == scope.params[-1]:
        return len(args) - 1
    return None


def _name_params(name) -> list:
    """The parameters of wrappers a queue's name still depends on."""
    if name is None:
        return []
    out = params(name.fmt) + [p for v in name.args for p in params(v)]
    return out + ([name.rest] if name.rest is not None else [])


def _forwarded_index(flags, function: str) -> int:
    """The parameter of function that flows into flags (OR-ed in or passed as is), or -1."""
    found = {p.index for p in params(flags) if p.function == function}
    return found.pop() if len(found) == 1 else -1


def _direct_param_index(value, function: str) -> int:
    """The parameter of function that value is, unchanged, or -1."""
    while isinstance(value, Alt) and len(value.options) == 1:
        value = value.options[0]
    return value.index if isinstance(value, Param) and value.function == function else -1


def open_store(root: Path):
    """The index of root kept between runs, brought up to date with the tree."""
    from wqlint.scan.store import Store
    return Store(root).open()


