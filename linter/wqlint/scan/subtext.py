"""What the work model (scan.work) reads of a subsystem's files: the lines of the API's calls
(queueing, scheduling, binding), indexed by the words of each call's text; the lines naming a
word asked for; and the lines that may start a function's definition or initialise a member
to a function.

Asked for by directory (its files, not those below it) and answered in rounds, as the tree
index answers names: the first question about a directory is queued and gets None; fetch()
then runs one ripgrep over every directory asked about in the round for each kind of
question (literal strings, or the two header patterns; on its standard input, so that
thousands of names never make a command line too long). Only the files with a hit are read
afterwards. Files held in memory (a review's patched files, a preprocessed unit, the index's
extra files) are searched there instead of on disk. Without ripgrep the files are read and
searched in Python.
"""
from __future__ import annotations

import re
from typing import Optional

from wqlint import tools
from wqlint.scan.index import MAX_SEARCH_OUTPUT, SEARCH_TIMEOUT, SearchOutputError, _clean, _records

_IDENT_RE = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
# A line that may start a function's definition (its name before the parameters, at column
# 0), and `.member = function,` (a member initialised to a function).
HEADER = r"^(?:[A-Za-z_][\w \t\*]*?[\s\*])?([A-Za-z_]\w*)\s*\("
INIT = r"^\s*\.\s*([A-Za-z_]\w*)\s*=\s*&?\s*([A-Za-z_]\w*)\s*,?\s*$"
_HEADER_RE = re.compile(HEADER.encode())
_INIT_RE = re.compile(INIT.encode())


class SubsystemText:
    def __init__(self, index, names: list):
        """names: the calls whose lines calls() indexes (strings that hold none of the others)."""
        self.index = index
        self.names = list(names)
        self.misses = 0
        self._calls: dict = {}  # directory -> {word: [(rel, line)]}
        self._heads: dict = {}  # directory -> ({function: [(rel, line, offset)]}, {member: [(function, rel, line)]})
        self._words: dict = {}  # (directory, word) -> [(rel, line)]
        self._want_calls: set = set()
        self._want_heads: set = set()
        self._want_words: dict = {}  # directory -> words asked for
        self._file_heads: dict = {}  # rel -> {function: [(rel, line, offset, static)]}
        self._want_files: set = set()
        self.lines: dict = {}  # (rel, line) -> bytes, as a search printed them

    # -- asking --------------------------------------------------------------------------
    def calls(self, reldir: str) -> Optional[dict]:
        """{word: [(rel, line)]} of the lines of reldir's files that name one of names, by
        the words of the call's text (the line, and the two after it when its parentheses
        stay open there); None until fetched."""
        got = self._calls.get(reldir)
        if got is None:
            self._want_calls.add(reldir)
            self.misses += 1
        return got

    def words(self, reldir: str, word: str) -> Optional[list]:
        """[(rel, line)] of the lines of reldir's files naming word, or None until fetched."""
        got = self._words.get((reldir, word))
        if got is None:
            self._want_words.setdefault(reldir, set()).add(word)
            self.misses += 1
        return got

    def heads(self, reldir: str) -> Optional[tuple]:
        """({function: [(rel, line, offset)]} of the lines that may start its definition,
        {member: [(function, rel, line)]} of the initialisers) of reldir's files, or None
        until fetched."""
        got = self._heads.get(reldir)
        if got is None:
            self._want_heads.add(reldir)
            self.misses += 1
        return got

    def file_heads(self, rel: str) -> Optional[dict]:
        """{function: [(rel, line, offset, static)]} of the lines of one file, anywhere in the
        tree, that may start a function's definition (static: the line says so; False also
        when the line starts with the name), or None until fetched."""
        got = self._file_heads.get(rel)
        if got is None:
            self._want_files.add(rel)
            self.misses += 1
        return got

    # -- answering -----------------------------------------------------------------------
    def fetch(self) -> bool:
        """Answer every question queued; False when none was."""
        want_calls, self._want_calls = self._want_calls, set()
        want_heads, self._want_heads = self._want_heads, set()
        want_words, self._want_words = self._want_words, {}
        want_files, self._want_files = self._want_files, set()
        if not want_calls and not want_heads and not want_words and not want_files:
            return False
        if want_files:
            got_files: dict = {rel: {} for rel in want_files}
            for rel, line, offset, fn, _member, _value, static in self._search([], [HEADER, INIT], fixed=False,
                                                                             only=sorted(want_files)):
                if fn and rel in got_files:
                    got_files[rel].setdefault(fn, []).append((rel, line, offset, static))
            self._file_heads.update(got_files)
        if want_words:
            names = sorted(set().union(*want_words.values()))
            wanted = {n.encode() for n in names}
            found: dict = {}
            for rel, line, content in self._search(sorted(want_words), names, fixed=True):
                for ident in set(_IDENT_RE.findall(content)) & wanted:
                    found.setdefault((_dir(rel), ident.decode()), []).append((rel, line))
            for reldir, asked in want_words.items():
                for word in asked:
                    self._words[(reldir, word)] = found.get((reldir, word), [])
        if want_calls:
            got: dict = {d: {} for d in want_calls}
            for rel, line, content in self._search(sorted(want_calls), self.names, fixed=True):
                self.lines[(rel, line)] = content
                text = content
                if content.count(b"(") > content.count(b")"):
                    src = self.index.source(rel)
                    if src is not None:
                        text = src.slice(line, min(line + 2, src.nlines))
                words = got[_dir(rel)]
                for ident in set(_IDENT_RE.findall(text)):
                    words.setdefault(ident.decode(), []).append((rel, line))
            self._calls.update(got)
        if want_heads:
            got = {d: ({}, {}) for d in want_heads}
            last: Optional[str] = None
            defs: dict = {}
            inits: dict = {}
            for rel, line, offset, fn, member, value, _static in self._search(sorted(want_heads),
                                                                              [HEADER, INIT], fixed=False):
                if rel is not last:
                    last = rel
                    defs, inits = got[_dir(rel)]
                if fn:
                    defs.setdefault(fn, []).append((rel, line, offset))
                elif value:
                    inits.setdefault(member, []).append((value, rel, line))
            self._heads.update(got)
        return True

    def _search(self, dirs: list, patterns: list, fixed: bool, only: Optional[list] = None) -> list:
        """The lines of the files directly in dirs (or of the files only) that hold one of
        patterns: (rel, line, content) for fixed strings; for [HEADER, INIT], (rel, line,
        offset of the line, the function a header names or '', the member an initialiser
        sets or '', its value, whether the header says static)."""
        index = self.index
        if only is not None:
            dirs = [""]
            files = {"": [r for r in only if not r.startswith("<")]}
        else:
            files = {d: [r for r in index.dir_files(d, recursive=False) if not r.startswith("<")] for d in dirs}
        # Files read from memory (a patched file, a preprocessed unit) are searched there.
        memory = [r for d in dirs for r in files[d] if index._shadowed(r) or r in index.preloaded]
        on_disk = {r for d in dirs for r in files[d]} - set(memory)
        out = []
        rg = tools.which("rg")
        if rg and on_disk:
            paths = sorted(on_disk) if only is not None else [d or "." for d in dirs if files[d]]
            out = [hit for hit in self._ripgrep(rg, paths, patterns, fixed) if hit[0] in on_disk]
        elif on_disk:
            memory += sorted(on_disk)
        for rel in memory:
            src = index.source(rel)
            if src is None:
                continue
            offset = 0
            for n, content in enumerate(src.data.split(b"\n"), 1):
                if fixed:
                    if any(p.encode() in content for p in patterns):
                        out.append((rel, n, content))
                else:
                    m = _HEADER_RE.match(content)
                    if m and b";" not in content[m.end():]:
                        out.append((rel, n, offset, m.group(1).decode(), "", "", _static(content)))
                    else:
                        m = _INIT_RE.match(content)
                        if m and m.group(2) != b"NULL":
                            out.append((rel, n, offset, "", m.group(1).decode(), m.group(2).decode(), False))
                offset += len(content) + 1
        return out

    def _ripgrep(self, rg: str, paths: list, patterns: list, fixed: bool) -> list:
        args = [rg, "-n", "--with-filename", "--no-heading", "--null", "--no-ignore", "--binary", "--max-depth", "1",
                "--threads", str(self.index.jobs), "-g", "*.c", "-g", "*.h"]
        if fixed:
            args += ["-F"]
            text = "\n".join(patterns)
        else:
            args += ["--byte-offset"]
            text = "\n".join(["(?-u)" + HEADER + r"[^;]*$", "(?-u)" + INIT])
        args += ["-f", "-", "--"] + paths
        try:
            proc = tools.run(args, cwd=self.index.root, input=(text + "\n").encode(), timeout=SEARCH_TIMEOUT,
                             what="ripgrep", limit=MAX_SEARCH_OUTPUT)
        except tools.ToolError as exc:
            self.index._search_failed(self.index.root, str(exc))
            return []
        if proc.returncode not in (0, 1, 2):
            self.index._search_failed(self.index.root, f"ripgrep failed: {tools.last_line(proc)}")
            return []
        try:
            if fixed:
                return sorted((_clean(name), num, content) for name, num, content in _fast_records(proc.stdout))
            return _heads(proc.stdout)
        except SearchOutputError as exc:
            self.index._search_failed(self.index.root, f"ripgrep: {exc}")
            return []


_RECORD_RE = re.compile(rb"([^\0\n]*)\0([0-9]+):([^\n]*)\n")


def _heads(out: bytes) -> list:
    """(rel, line, offset, function, member, value) of ripgrep's `--byte-offset` output for
    [HEADER, INIT] (each line matched one of them: its parts are found without a regex)."""
    got: list = []
    if out.count(b"\n") == out.count(b"\0") and (not out or out.endswith(b"\n")):
        got = _OFFSET_RECORD_RE.findall(out)
    if len(got) != out.count(b"\0"):  # a file name with a newline, a note: the careful way
        got = []
        for name, num, rest in _records(out):
            offset, colon, content = rest.partition(b":")
            if not (offset.isdigit() and colon):
                raise SearchOutputError(f"output not in the form asked for: {rest[:80]!r}")
            got.append((name, str(num).encode(), offset, content))
    out_: list = []
    names: dict = {}
    for name, num, offset, content in got:
        rel = names.get(name)
        if rel is None:
            rel = names[name] = _clean(name)
        if content[:1] in b" \t.":  # `.member = function,`
            member, _eq, value = content.strip()[1:].partition(b"=")
            value = value.strip().rstrip(b",").strip().lstrip(b"&").strip()
            if value != b"NULL":
                out_.append((rel, int(num), int(offset), "", member.strip().decode(), value.decode(), False))
        else:  # the name before the first '(' (the header's parameters)
            head = content[:content.find(b"(")].split()
            if head:
                out_.append((rel, int(num), int(offset), head[-1].lstrip(b"*").decode(), "", "",
                             b"static" in head[:-1]))
    # by path and line, never in the order ripgrep's threads happened to print the files: which
    # of several definitions or initialisers of a name is taken must not vary between runs
    out_.sort()
    return out_


_OFFSET_RECORD_RE = re.compile(rb"([^\0\n]*)\0([0-9]+):([0-9]+):([^\n]*)\n")


def _fast_records(out: bytes):
    """index._records(), at C speed when every record is one line (no file name holds a
    newline, no note between them)."""
    if out.count(b"\n") == out.count(b"\0") and (not out or out.endswith(b"\n")):
        got = _RECORD_RE.findall(out)
        if len(got) == out.count(b"\0"):
            return [(name, int(num), content) for name, num, content in got]
    return list(_records(out))


def _static(content: bytes) -> bool:
    """Does a header line say its function is static (a word before the name)?"""
    head = content[:content.find(b"(")].split()
    return b"static" in head[:-1]


def _dir(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""
