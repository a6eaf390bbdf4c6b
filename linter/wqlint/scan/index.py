"""Tree-wide lookups: which lines of which files mention a name.

Resolution is demand-driven: it asks for the occurrences of a name (a field, a macro, a
wrapper's callers) only when a chain leads there. The first time a name is asked for, the
answer is not known yet: the name is queued, the caller gets None and records the gap, and
the engine runs one `grep -F -w` over the tree for every queued name at once (split over
-j processes), then resolves again. A chain that crosses k files costs k such rounds, not
one grep per name.
"""
from __future__ import annotations

import os
import re
from collections import OrderedDict
from pathlib import Path
from typing import Iterator, Optional

from wqlint import safeio, tools
from wqlint.finding import InputError
from wqlint.scan import heap, parser
from wqlint.scan.kerneltree import KERNEL_PREFIX
from wqlint.scan.phases import timed
from wqlint.scan.search import (IDENT_RE, LINE_START, MAX_SEARCH_OUTPUT, SEARCH_TIMEOUT, SearchOutputError,
                                defines, definition_regex, literals, records, rel_name)
from wqlint.scan.source import MAX_FILE_BYTES, SourceError, SourceFile, digest, read_source, relpath
from wqlint.scan.treefiles import TreeFiles

# The tree search is for plain strings, at most SEARCH_CHUNK per pass; which lines name a
# token as a word, or may define it, is decided in Python. ripgrep 13's word (-w) and regex
# matching cost about ten times its literal search on a kernel tree (3.6 s of CPU against
# 0.3 s for three names). A literal search slows down with names that hold one another (a
# string that holds another searched string is left out: the shorter one finds its lines;
# alloc_workqueue with alloc_workqueue_noprof and ten other such names took 2 s against
# 0.5 s for the six that cover them) and a little with many names (58 unrelated names in one
# pass 1 s on 6.12, in four passes of 16 2.3 s). The answer is the same whatever was
# searched with it, which lets the index kept between runs (store.py) update it file by file.
SEARCH_CHUNK = 64
# Directories large enough that one grep over them is worth splitting further.
_SPLIT_DEPTH = 2
BUILTIN_HEADER_REL = "<wqlint>/include/linux/workqueue.h"
# Files only looked at (TreeIndex.look(), text()) that are kept in memory, the last ones
# looked at: the work model looks at the functions of a subsystem's files one after the
# other. Each RECENT_TEXTS files let go, the heap's free pages are given back (scan.heap):
# the C library kept the text of the files read and let go (a waits worker's resident size
# grew by some 250 MB in a whole 7.3 tree, while it held a few hundred files at a time).
RECENT_TEXTS = 128
# The files read whole kept in memory while the work model runs (bound_sources()): the
# least recently used are let go, and read again when asked for again. On a whole
# linux-source-7.3 the flows read 2,800 files whole, 200 of them again with this bound.
MOST_SOURCES = 700


class TreeIndex:
    def __init__(self, root: Path, jobs: int = 1, extra_files: Optional[dict] = None,
                 exclude: tuple = (), preloaded: Optional[dict] = None, kernel=None,
                 files: Optional[TreeFiles] = None, store=None):
        self.root = root
        self.tree_files = files or TreeFiles(root)  # how files of the tree are read
        # The kernel a module builds for (scan.kerneltree.KernelTree), or None: its shared
        # headers are searched and read as files under KERNEL_PREFIX.
        self.kernel = kernel
        self.jobs = max(1, jobs)
        self.files: dict = {}  # rel -> SourceFile
        # rel -> digest of the files only looked at (text()), not kept ('' without a store)
        self.looked: dict = {}
        self._recent: OrderedDict = OrderedDict()  # rel -> SourceFile: the last RECENT_TEXTS of them
        self._gone = 0  # files let go: the heap is trimmed every RECENT_TEXTS of them
        self._most: Optional[int] = None  # bound_sources()
        self._newer: OrderedDict = OrderedDict()  # rel -> None: the files it bounds, the last used last
        self.released: dict = {}  # rel -> digest of a file let go by release_sources()
        self.changed: set = set()  # files read twice in the scan with other bytes the second time
        # rels of the files a search of a subsystem's text (scan.subtext) went through, read
        # or not: a definition added to one changes what the search finds, so the index kept
        # between runs keeps their digests with a scan's (Engine.analysis())
        self.searched: set = set()
        # set when the scan is kept (Engine.analysis()): a worker process then takes those
        # digests itself, for the files it searched (rel -> digest, in searched_digests)
        self.keep_searched = False
        self.searched_digests: dict = {}
        self.bad: dict = {}  # rel -> problem
        self.fetched: dict = {}  # token -> list of (rel, line)
        self.pending: set = set()
        self.grep_rounds = 0
        self.misses = 0  # lookups answered 'not yet': results built on them are provisional
        # {part: questions} the work model's parts asked of the subsystems' text (scan.work's
        # record(), a worker's told back by scan.shares), kept with the scan for the next
        self.asked: dict = {}
        self.errors: list = []  # InputError from walking the tree
        self.extra = dict(extra_files or {})  # rel -> bytes, searched like tree files
        # The index kept between runs (wqlint.scan.store.Store): answers searched before.
        self.store = store
        # rel -> bytes of files that are on disk (and searched there) but already in memory,
        # read without the size limit: a preprocessed translation unit (wqlint check).
        self.preloaded = dict(preloaded or {})
        self.exclude = exclude
        self._units: Optional[list[str]] = None
        self._dir_cache: dict = {}
        self._lines: dict = {}  # (rel, line) -> bytes, as the search printed them
        self._def_cover: dict = {}  # token -> scopes its definitions were searched in
        self._def_want: dict = {}  # token -> scopes still to search
        self._bases: Optional[list[str]] = None

    # -- files -------------------------------------------------------------------------
    def source(self, rel: str) -> Optional[SourceFile]:
        src = self.files.get(rel)
        if src is not None:
            if rel in self._newer:
                self._newer.move_to_end(rel)
            return src
        if rel in self.bad or self.tree_files.deleted(rel):
            return None
        src = self._recent.pop(rel, None)  # looked at last: kept from now on
        if src is None:
            data = self._read(rel)
            if data is None:
                return None
            src = SourceFile(rel, data)
            if rel in self.released:
                src.known = self.digest_of(data)
                self.seen_again(rel, src.known)
        self.files[rel] = src
        if self._most is not None and self._on_disk(rel):
            self._newer[rel] = None
            if len(self._newer) > self._most:
                self._let_go(self._newer.popitem(last=False)[0])
        return src

    def bound_sources(self, most: int = 0) -> None:
        """From now on keep at most `most` (MOST_SOURCES when 0) of the files read whole
        after this call, letting go of the least recently used as release_sources() does: a
        file let go and asked for again is read again (the same answers from the same bytes)."""
        self._most = most or MOST_SOURCES
        self._newer.clear()

    def _let_go(self, rel: str) -> None:
        """Let go of a file read whole; its digest stays (release_sources())."""
        src = self.files.pop(rel)
        d = src.known or self.digest_of(src.data)
        self.released.setdefault(rel, d)
        self.looked[rel] = d
        self._freed(src)

    def _freed(self, src: SourceFile) -> None:
        src.let_go()
        self._gone += 1
        if self._gone % RECENT_TEXTS == 0:
            heap.release()

    def release_sources(self) -> None:
        """Let go of the files read whole and their parsed chunks, those on disk: the part
        of the scan after this one reads again the few it needs (the work model, after the
        allocation sites). Their digests stay, so that a file read again with other bytes
        is told (self.changed): the index keeps no judgement of bytes the scan did not
        judge whole."""
        for rel in list(self.files):
            if self._on_disk(rel):
                self._let_go(rel)
        self._newer.clear()  # (every file it bounds was let go)
        parser.forget()
        # (no pass of the collector: a file let go drops its chunks, which referred to it;
        # a whole tree's pass cost 0.4 s, and the peak was no lower for it)
        heap.release()

    def digest_of(self, data: bytes) -> str:
        """digest(data), for the store to know which bytes were judged; '' when there is
        no store (on a whole tree some 28,000 digests, a second of CPU, that nothing reads)."""
        return digest(data) if self.store is not None else ""

    def seen_again(self, rel: str, d: str) -> None:
        """The digest of a file let go and read again (here or in a worker)."""
        if d != self.released.get(rel, d):
            self.changed.add(rel)

    def text(self, rel: str) -> Optional[bytes]:
        """The bytes of rel, for a look at its text only (look())."""
        src = self.look(rel)
        return src.data if src is not None else None

    def look(self, rel: str) -> Optional[SourceFile]:
        """rel for a look at its text only: the file in memory, else read and not kept but
        for the last RECENT_TEXTS files looked at (its digest is, in self.looked, for the
        index kept between runs); None when it cannot be used, as source()."""
        src = self.files.get(rel)
        if src is not None:
            return src
        src = self._recent.get(rel)
        if src is not None:
            self._recent.move_to_end(rel)
            return src
        if rel in self.bad or self.tree_files.deleted(rel):
            return None
        data = self._read(rel)
        if data is None:
            return None
        src = self._recent[rel] = SourceFile(rel, data)
        if rel in self.released or rel not in self.looked:
            # (a file looked at before keeps the digest of its first reading: bytes changed
            # since make the next run judge it again; one let go is told as changed now)
            src.known = self.looked[rel] = self.digest_of(data)
            if rel in self.released:
                self.seen_again(rel, src.known)
        if len(self._recent) > RECENT_TEXTS:
            self._freed(self._recent.popitem(last=False)[1])
        return src

    def _read(self, rel: str) -> Optional[bytes]:
        """The bytes of a file of the tree (or in memory), or None (the problem in self.bad)."""
        try:
            if rel in self.extra:
                data = self.extra[rel]
            elif rel in self.preloaded:
                data = self.preloaded[rel]
            elif rel.startswith(KERNEL_PREFIX) and self.kernel is not None:
                found = self.kernel.find(rel[len(KERNEL_PREFIX):])
                if found is None:
                    raise SourceError("no such file")
                data = read_source(found)
            else:
                data = self.tree_files.read(rel)
        except SourceError as exc:
            self.bad[rel] = str(exc)
            return None
        return data

    # -- files of a subsystem ------------------------------------------------------------
    def dir_files(self, reldir: str, recursive: bool) -> list:
        """rel paths of the .c/.h files in reldir (and below, when recursive)."""
        key = (reldir, recursive)
        got = self._dir_cache.get(key)
        if got is None:
            got = self._dir_cache[key] = self.tree_files.listdir(reldir, recursive)
        return got

    def related_files(self, rel: str) -> list:
        """The files of rel's subsystem: its directory and everything below it (when the
        directory is at least two levels deep), and the files directly in its ancestors that
        are at least two levels deep."""
        parts = rel.split("/")[:-1]
        if rel.startswith("<"):
            return []
        out = list(self.dir_files("/".join(parts), recursive=len(parts) >= 2))
        for n in range(len(parts) - 1, 1, -1):
            out.extend(self.dir_files("/".join(parts[:n]), recursive=False))
        return out

    def word_occurrences_in(self, files, token: str) -> list:
        """[(rel, line)] of token as a word in the given files (read on demand)."""
        out: list[tuple[str, int]] = []
        for rel in files:
            src = self.source(rel)
            if src is not None:
                out.extend((rel, ln) for ln in src.word_lines(token))
        return out

    def peek(self, rel: str, line: int) -> bytes:
        """The text of a line, from the search output when it came from there (so that
        deciding whether a line matters does not read its file)."""
        got = self._lines.get((rel, line))
        if got is None:
            src = self.look(rel)
            got = src.line_bytes(line) if src is not None else b""
        return got

    # -- occurrences ---------------------------------------------------------------------
    def occurrences(self, token: str, defs: bool = False, near: Optional[str] = None,
                    where: Optional[set] = None) -> Optional[list]:
        """[(rel, line)] where token occurs as a word, or None until it has been fetched.

        With defs, only lines that may define it: a #define, a function header in column 0,
        an enumerator, an assignment, a module_param(). Definitions of common names (BIT,
        GFP_KERNEL) are then a few lines to read instead of a hundred thousand uses. where:
        the scopes searched for them, when not definition_scope(near).
        """
        key = ("def", token) if defs else token
        found = self.fetched.get(key)
        if defs:
            where = self.definition_scope(near) if where is None else where
            covered = self._def_cover.get(token, set())
            if (found is None or not where <= covered) and self._from_store(key, where):
                found = self.fetched.get(key)
                covered = self._def_cover.get(token, set())
            if found is None or not (where <= covered or "" in covered):
                self._def_want.setdefault(token, set()).update(where)
                self.pending.add(key)
                self.misses += 1
                return None
        elif found is None and self._from_store(key, None):
            found = self.fetched[key]
        elif found is None:
            self.pending.add(key)
            self.misses += 1
        return found

    def _from_store(self, key, where) -> bool:
        """Take the answer for key from the index kept between runs, if it has one."""
        if self.store is None:
            return False
        got = self.store.answer(key, where)
        if got is None:
            return False
        self._take(key, got, self.store.cover.get(key[1], {""}) if where is not None else None)
        lines = self.store.lines
        for rel, line in got:
            if not self.shadowed(rel):
                content = lines.get((rel, line))
                if content is not None:
                    self._lines[(rel, line)] = content
                problem = self.store.bad.get(rel)
                if problem:
                    self.bad.setdefault(rel, problem)
        return True

    def _take(self, key, disk: list, scopes) -> None:
        """Make the answer to key what the tree's files say (disk, [(rel, line)]), with the
        files in memory (`extra`) in place of theirs on disk."""
        token = key[1] if scopes is not None else key
        occ = [o for o in disk if not self.shadowed(o[0])]
        occ.extend(self._extra_occurrences(token, scopes is not None))
        if scopes is not None:
            old = self.fetched.get(key, [])
            self.fetched[key] = sorted(set(old) | set(occ))
            self._def_cover.setdefault(token, set()).update(scopes)
        else:
            self.fetched[key] = sorted(occ)

    def _on_disk(self, rel: str) -> bool:
        """Is rel a file the index may let go of and read again from the tree (not one of
        the API's own, held in memory or replaced by an overlay)?"""
        return not (rel.startswith("<") or rel in self.preloaded or self.shadowed(rel))

    def shadowed(self, rel: str) -> bool:
        """Do the lines of rel on disk not count (the file is held in memory, replaced or
        deleted by an overlay)? The store keeps the disk's answers; the index leaves these out."""
        return rel in self.extra or self.tree_files.replaced(rel)

    def _extra_occurrences(self, token: str, defs: bool) -> list:
        """Occurrences in the files searched in memory, not on disk."""
        out = []
        wanted = token.encode()
        for rel, data in {**self.extra, **self.tree_files.in_memory()}.items():
            if wanted not in data:
                continue
            for lineno, content in enumerate(data.split(b"\n"), 1):
                if wanted in set(IDENT_RE.findall(content)) and (not defs or defines(token, content)):
                    out.append((rel, lineno))
        return out

    def definition_scope(self, near: Optional[str]) -> set:
        """Where a name used in file near can be defined so that resolution accepts it (see
        resolve._nearest): the kernel's shared headers and libraries, and near's parent
        directory with everything below it. '' stands for the whole tree."""
        scope = set(self._def_bases())
        if near is None:
            return {""}
        scope.add(definition_root(near))
        return scope

    def wide_scope(self, near: str) -> set:
        """definition_scope(near) and, for a module scanned with a kernel tree, the whole of
        that tree: where a function the module calls may be defined (the kernel's own .c
        files are otherwise not searched)."""
        if self.kernel is None:
            return {""}
        return self.definition_scope(near) | {KERNEL_PREFIX + d for d in self.kernel.source_dirs()}

    def _def_bases(self) -> list:
        if self._bases is None:
            bases = [d for d in ("include", "lib", "kernel") if (self.root / d).is_dir()]
            arch = self.root / "arch"
            if arch.is_dir():
                bases += sorted(relpath(p, self.root) for p in arch.glob("*/include") if p.is_dir())
            if self.kernel is not None:
                bases += [KERNEL_PREFIX + d for d in self.kernel.include_dirs()]
            self._bases = bases
        return self._bases

    @timed("search")
    def fetch_pending(self) -> bool:
        """Fetch every queued token; False when nothing was queued."""
        keys = sorted((k for k in self.pending if not isinstance(k, str) or k not in self.fetched), key=str)
        self.pending.clear()
        if not keys:
            return False
        uses = [k for k in keys if isinstance(k, str)]
        defs = sorted({k[1] for k in self.pending_defs(keys)})
        from concurrent.futures import ThreadPoolExecutor  # (imports logging: only when searching)
        with ThreadPoolExecutor(2) as pool:  # the two searches overlap their I/O
            jobs = [pool.submit(self.fetch, uses)] if uses else []
            if defs:
                jobs.append(pool.submit(self.fetch, defs, True))
            for job in jobs:
                job.result()
        heap.release()  # the searches' output, read
        return True

    @staticmethod
    def pending_defs(keys):
        return [k for k in keys if not isinstance(k, str)]

    def fetch(self, tokens: list, defs: bool = False) -> None:
        self.grep_rounds += 1
        results: dict[str, list] = {t: [] for t in tokens}
        wanted = {t.encode() for t in tokens}
        paths = None
        want = {""}
        if defs:
            want = set()
            for t in tokens:
                want |= self._def_want.pop(t, set())
            paths = self._search_paths(want)
            if paths is None or "" in want:
                want = {""}
        hits = {}
        search = literals(tokens)
        # A definition search keeps only the lines that may define a token (the same test
        # as below, for every token): the rest of the lines of GFP_KERNEL or EIO, tens of
        # thousands, never reach Python.
        keep = definition_regex(tokens, LINE_START) if defs else None
        for i in range(0, len(search), SEARCH_CHUNK):
            chunk = search[i:i + SEARCH_CHUNK]
            found = self._grep(chunk, keep, None if paths is None else
                               [p for p in paths if not p.startswith(KERNEL_PREFIX)])
            if self.kernel is not None:
                found = list(found) + self._grep_kernel(chunk, keep, paths)
            for rel, line, content in found:
                hits[(rel, line)] = content
        lines = {}
        for (rel, line), content in hits.items():
            for ident in set(IDENT_RE.findall(content)) & wanted:
                # A line can name a token without defining it: keep it for a definition only
                # when it may define that name (the same answer whatever was searched with it).
                if defs and not defines(ident.decode(), content):
                    continue
                results[ident.decode()].append((rel, line))
                lines[(rel, line)] = content
        for at, content in lines.items():
            if not self.shadowed(at[0]):
                self._lines[at] = content
        for token, occ in results.items():
            key = ("def", token) if defs else token
            if self.store is not None:
                self.store.record(key, occ, {o: lines[o] for o in occ}, want if defs else None)
            self._take(key, occ, want if defs else None)

    def _grep_kernel(self, tokens: list, keep: Optional[str], paths: Optional[list]) -> list:
        """Hits in the kernel's shared headers (all of them for a search of the whole tree),
        named under KERNEL_PREFIX; a file in several roots counts in the first."""
        if paths is None:
            wanted = self.kernel.include_dirs()
        else:
            wanted = [p[len(KERNEL_PREFIX):] for p in paths if p.startswith(KERNEL_PREFIX)]
        if not wanted:
            return []
        out, seen = [], set()
        for root in self.kernel.roots:
            here = [w for w in wanted if (root / w).exists()]
            if not here:
                continue
            files = set()
            for rel, line, content in self._grep_in(root, tokens, keep, here, follow=True):
                if rel in seen:
                    continue
                files.add(rel)
                out.append((KERNEL_PREFIX + rel, line, content))
            seen |= files
        return out

    def _search_paths(self, want: set):
        """Paths (relative to root) that cover every wanted scope; None for the whole tree."""
        if "" in want:
            return None
        out = []
        for w in sorted(want):
            if w.endswith("/*"):  # the files directly in a top-level directory (or the root)
                base = w[:-2]
                if base:
                    out.extend(self.dir_files(base, recursive=False))
                else:
                    out.extend(relpath(p, self.root) for p in sorted(self.root.glob("*.[ch]")))
            elif w.startswith(KERNEL_PREFIX):
                if self.kernel is not None and self.kernel.find(w[len(KERNEL_PREFIX):]) is not None:
                    out.append(w)
            elif (self.root / w).exists():
                out.append(w)
        kept: list[str] = []
        for p in sorted(set(out)):
            if not any(p.startswith(k + "/") for k in kept):
                kept.append(p)
        return kept

    def _work_units(self) -> list:
        """Paths to hand to grep, small enough to spread over -j processes."""
        if self._units is None:
            units = []

            def expand(path: Path, depth: int):
                try:
                    entries = sorted(os.scandir(path), key=lambda e: e.name)
                except OSError as exc:
                    self.errors.append(InputError(relpath(path, self.root), exc.strerror or str(exc)))
                    return
                for entry in entries:
                    rel = relpath(Path(entry.path), self.root)
                    if entry.name.startswith(".") or rel in self.exclude:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        if depth < _SPLIT_DEPTH:
                            expand(Path(entry.path), depth + 1)
                        else:
                            units.append(entry.path)
                    elif entry.is_file(follow_symlinks=False) and entry.name.endswith((".c", ".h")):
                        units.append(entry.path)

            if self.root.is_dir():
                expand(self.root, 1)
            self._units = units
        return self._units

    def _grep(self, tokens: list, keep: Optional[str] = None, paths: Optional[list] = None):
        return self._grep_in(self.root, tokens, keep, paths)

    def _grep_in(self, root: Path, tokens: list, keep: Optional[str] = None, paths: Optional[list] = None,
                 follow: bool = False):
        """(rel to root, line, content) of the lines of paths (None: all of root) that hold a
        token; follow: through symbolic links (a kernel's headers). keep, a regex of
        search-output records (see LINE_START), may leave out lines that do not match it."""
        if not root.is_dir():
            return []
        if paths is not None:
            # A path handed to a tool is read whatever it is: a FIFO named x.c would never
            # end (a walk of a directory passes such files by, as the tools do).
            paths = [p for p in paths if safeio.searchable(root / p)]
            if not paths:
                return []
        rg = tools.which("rg")
        if rg:
            return self._ripgrep(rg, tokens, keep, paths, root, follow)
        units = self._work_units() if paths is None else [str(root / p) for p in paths]
        if not units:
            return []
        if tools.which("grep") is None:
            return self._pyscan(units, tokens, root)
        recurse = "-R" if follow else "-r"
        args = ["grep", recurse + "nFHZ", "--include=*.c", "--include=*.h"]
        for t in tokens:
            args += ["-e", t]
        n = min(self.jobs * 3, len(units))
        groups = [units[i::n] for i in range(n)]

        def run(group):
            try:
                return tools.run(args + ["--"] + group, timeout=SEARCH_TIMEOUT, limit=MAX_SEARCH_OUTPUT, search=True)
            except tools.ToolError as exc:
                return exc

        out = []
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(self.jobs) as pool:
            for proc in pool.map(run, groups):
                if isinstance(proc, tools.ToolError):
                    self.search_failed(root, str(proc))
                    continue
                for errline in proc.stderr.splitlines():
                    if errline.startswith(b"grep: ") and errline.endswith(b": binary file matches"):
                        rel = relpath(Path(os.fsdecode(errline[6:-21])), root)
                        if root == self.root:
                            self.bad.setdefault(rel, "binary file (contains NUL bytes)")
                    elif proc.returncode > 1 and root == self.root:
                        self._grep_error(errline.decode("utf-8", "replace"))
                try:
                    for name, num, content in records(proc.stdout):
                        out.append((relpath(Path(os.fsdecode(name)), root), num, content))
                except SearchOutputError as exc:
                    self.search_failed(root, f"grep: {exc}")
        return out

    def search_failed(self, root: Path, problem: str) -> None:
        """A search whose answer cannot be used: an error, never 'nothing found'."""
        err = InputError(str(root), problem)
        if err not in self.errors:
            self.errors.append(err)

    def _ripgrep(self, rg: str, tokens: list, keep: Optional[str] = None, paths: Optional[list] = None,
                 root: Optional[Path] = None, follow: bool = False):
        """ripgrep walks and searches in parallel: several times less CPU than grep -r. With
        keep, a second ripgrep filters the records: a regex over every line of the tree
        costs twice the literal search, over the lines that hold a token next to nothing."""
        root = root or self.root
        args = [rg, "-n", "--with-filename", "--no-heading", "--null", "--no-ignore", "--binary",
                "--threads", str(self.jobs), "-g", "*.c", "-g", "*.h"] + (["--follow"] if follow else [])
        args += ["-F"]
        for t in tokens:
            args += ["-e", t]
        args += ["--"] + (paths if paths is not None else ["."])
        try:
            proc = tools.run(args, cwd=root, timeout=SEARCH_TIMEOUT, what="ripgrep", limit=MAX_SEARCH_OUTPUT,
                              search=True)
            if keep and proc.returncode in (0, 2):
                proc.stdout = _kept(rg, proc.stdout, keep)
        except tools.ToolError as exc:
            self.search_failed(root, str(exc))
            return []
        if proc.returncode not in (0, 1, 2):
            self.search_failed(root, f"ripgrep failed: {tools.last_line(proc)}")
            return []
        for errline in proc.stderr.decode("utf-8", "replace").splitlines():
            # "rg: ./x.c: Permission denied (os error 13)": a file or directory that could not
            # be read (ripgrep 13 prints no "rg: " before it)
            m = re.match(r"(?:rg: )?(.+?): ([^:]+?) \(os error \d+\)$", errline)
            if m and root == self.root:
                rel = m.group(1)[2:] if m.group(1).startswith("./") else m.group(1)
                problem = m.group(2)
                err = InputError(rel, problem[:1].lower() + problem[1:])
                if all(e.path != err.path for e in self.errors):
                    self.errors.append(err)
            elif not m and errline.strip():
                self.search_failed(root, f"ripgrep: {errline.strip()}")
        out = []
        note = self._binary_note if root == self.root else (lambda line: None)
        try:
            for name, num, content in records(proc.stdout, note):
                out.append((rel_name(name), num, content))
        except SearchOutputError as exc:
            self.search_failed(root, f"ripgrep: {exc}")
            return []
        return out

    def _binary_note(self, line: bytes) -> None:
        m = re.match(rb"(.*): binary file matches", line)
        if m:
            self.bad.setdefault(rel_name(m.group(1)), "binary file (contains NUL bytes)")

    def _grep_error(self, line: str) -> None:
        m = re.match(r"grep: (.*): ([^:]+)$", line)
        if not m:
            return
        rel = relpath(Path(m.group(1)), self.root)
        problem = m.group(2).strip()
        if "warning" in line and "recursive directory loop" in line:
            problem = "symbolic link loop"
        err = InputError(rel, problem.lower() if problem[0].isupper() and problem[1:2].islower() else problem)
        if all(e.path != err.path for e in self.errors):
            self.errors.append(err)

    def _pyscan(self, units: list, tokens: list, root: Optional[Path] = None):
        root = root or self.root
        pattern = re.compile(b"|".join(re.escape(t.encode()) for t in tokens))  # plain strings, as grep -F
        out = []
        for unit in units:
            paths: Iterator[Path]
            if os.path.isdir(unit):
                paths = (Path(d, n) for d, dirs, names in safeio.walk(unit)
                         if not dirs.sort() for n in sorted(names))
            else:  # a file unit: a walk of a file yields nothing
                paths = iter([Path(unit)])
            for path in paths:
                if not path.name.endswith((".c", ".h")):
                    continue
                try:
                    data = safeio.read_bytes(path, MAX_FILE_BYTES)
                except safeio.InputRefused:
                    continue
                if not pattern.search(data):
                    continue
                if b"\0" in data:  # as ripgrep and grep: a note, no lines
                    if root == self.root:
                        self.bad.setdefault(relpath(path, root), "binary file (contains NUL bytes)")
                    continue
                for lineno, content in enumerate(data.split(b"\n"), 1):
                    if pattern.search(content):
                        out.append((relpath(path, root), lineno, content))
        return out


# ripgrep's note on a binary file, in its output: kept through a filter (see search.records).
_BINARY_NOTE = "binary file matches"


def _kept(rg: str, out: bytes, keep: str) -> bytes:
    """The records of ripgrep's output that match keep, and its notes. Only when every
    record is one line (a file name may hold a newline: then all of them, for Python)."""
    notes = out.count(b": " + _BINARY_NOTE.encode())
    if out.count(b"\n") != out.count(b"\0") + notes:
        return out
    # ASCII \b and \s: several times faster
    got = tools.run([rg, "-a", "--no-line-number", "--no-filename", "-e", "(?-u)" + keep,
                     "-e", _BINARY_NOTE], input=out, timeout=SEARCH_TIMEOUT, what="ripgrep", search=True)
    return got.stdout if got.returncode in (0, 1) else out


def definition_root(rel: str) -> str:
    """The directory whose files may define what rel uses, besides the shared headers:
    rel's parent directory from three levels down (drivers/net/ethernet/x/y.c: .../ethernet/x's
    parent), its own directory above that (fs/btrfs, block), and only the top-level files for
    a file at the root ('/*')."""
    parts = rel.split("/")[:-1]
    if len(parts) >= 3:
        return "/".join(parts[:-1])
    if parts:
        return "/".join(parts)
    return "/*"
