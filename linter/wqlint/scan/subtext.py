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

import itertools
import json
import os
import re
import stat
from typing import Optional

from wqlint import safeio, tools
from wqlint.scan import heap
from wqlint.scan.packed import Packed
from wqlint.scan.phases import timed
from wqlint.scan.search import IDENT_RE, MAX_SEARCH_OUTPUT, SEARCH_TIMEOUT, SearchOutputError, records, rel_name

# A line that may start a function's definition (its name before the parameters, at column
# 0), and `.member = function,` (a member initialised to a function).
HEADER = r"^(?:[A-Za-z_][\w \t\*]*?[\s\*])?([A-Za-z_]\w*)\s*\("
INIT = r"^\s*\.\s*([A-Za-z_]\w*)\s*=\s*(?:&\s*)?([A-Za-z_]\w*)\s*(?:,\s*)?$"
# HEADER where the words before the name do not start with `static`: the functions other
# files can call (a header whose type is on the line before is kept: its file says more).
EXTERN_HEADER = (r"^(?:(?:[A-Za-rt-z_]|s(?:[^t\W]|t(?:[^a\W]|a(?:[^t\W]|t(?:[^i\W]|i(?:[^c\W]|c\w))))))"
                 r"[\w \t\*]*?[\s\*])?([A-Za-z_]\w*)\s*\(")
_HEADER_RE = re.compile(HEADER.encode())
_INIT_RE = re.compile(INIT.encode())
# The parts of the work model whose questions a kept scan keeps (questions_text()), and how
# many of one part the next scan takes (the rest are asked in their rounds).
PARTS = ("flows", "waits")
MAX_QUESTIONS = 50_000
PREFETCH_DIRS = 200  # directories of a kind searched together when questions are answered at once
_WORD = re.compile(r"[A-Za-z_]\w*")


class SubsystemText:
    def __init__(self, index, names: list):
        """names: the calls whose lines calls() indexes (strings that hold none of the others)."""
        self.index = index
        self.names = list(names)
        self.misses = 0
        self.rounds = 0  # fetches that answered something: what is known changes only then
        self._calls: dict = {}  # directory -> {word: [(rel, line)]}
        self._heads: dict = {}  # directory -> Heads
        self._words: dict = {}  # (directory, word) -> [(rel, line)]
        self._want_calls: set = set()
        self._want_heads: set = set()
        self._want_words: dict = {}  # directory -> words asked for
        self._files_heads: dict = {}  # files -> Heads
        self._want_files: set = set()  # of files
        self.lines: dict = {}  # (rel, line) -> bytes, as a search printed them
        # Every question asked, answered or not ((kind, directory[, word]) or ("f", *files)):
        # what a part of the work model asks, for the next scan of the tree (prefetch()).
        self.asked: set = set()

    # -- asking --------------------------------------------------------------------------
    def calls(self, reldir: str) -> Optional[dict]:
        """{word: [(rel, line)]} of the lines of reldir's files that name one of names, by
        the words of the call's text (the line, and the two after it when its parentheses
        stay open there); None until fetched."""
        self.asked.add(("c", reldir))
        got = self._calls.get(reldir)
        if got is None:
            self._want_calls.add(reldir)
            self.misses += 1
            if reldir not in self._heads:
                # asked with them: a work found queued or bound there is followed into the
                # directory's functions next (on linux-source-7.3, 95% of the directories whose
                # calls are asked): one round and one pass over the paths fewer
                self._want_heads.add(reldir)
        return got

    def words(self, reldir: str, word: str) -> Optional[list]:
        """[(rel, line)] of the lines of reldir's files naming word, or None until fetched."""
        self.asked.add(("w", reldir, word))
        got = self._words.get((reldir, word))
        if got is None:
            self._want_words.setdefault(reldir, set()).add(word)
            self.misses += 1
        return got

    def heads(self, reldir: str) -> Optional["Heads"]:
        """The Heads of reldir's files (the lines that may start a function's definition,
        the initialisers of members to functions), or None until fetched."""
        self.asked.add(("h", reldir))
        got = self._heads.get(reldir)
        if got is None:
            self._want_heads.add(reldir)
            self.misses += 1
        return got

    def files_heads(self, files: tuple) -> Optional["Heads"]:
        """The Heads of files anywhere in the tree, taken together, or None until fetched:
        the headers of the functions other files can call (those whose line says static are
        left out where ripgrep searches; Heads.headers() says which lines say it)."""
        self.asked.add(("f",) + files)
        got = self._files_heads.get(files)
        if got is None:
            self._want_files.add(files)
            self.misses += 1
        return got

    def prefetch(self, questions) -> None:
        """Answer at once the questions of questions (asked by the same part of the work
        model in a scan of the tree before: questions_of()) that are not answered yet, a
        search of each kind for PREFETCH_DIRS directories at a time, rather than round
        after round, each path followed again in each (on linux-source-7.3, a scan after an
        edit of one file: 19.3 s instead of 23.7). Only of the tree's directories and files
        as the index walked them (a directory holding a .c or .h file, or one on the way to
        one): a question of another is left to be asked. The answers are those the rounds
        would give: a directory's, whatever is searched with it."""
        store = self.index.store
        if not questions or store is None:
            return
        files = store.stamps
        dirs: set = {""}  # (each directory the walk went through to a file)
        for reldir in {_dir(rel) for rel in files}:
            while reldir not in dirs:
                dirs.add(reldir)
                reldir = _dir(reldir)
        heads, calls = set(), set()
        for q in questions:
            kind = q[0]
            if kind == "f":
                if q[1:] not in self._files_heads and all(rel in files for rel in q[1:]):
                    self._want_files.add(q[1:])
            elif q[1] not in dirs:
                continue
            elif kind == "h" and q[1] not in self._heads:
                heads.add(q[1])
            elif kind == "c" and q[1] not in self._calls:
                calls.add(q[1])
            elif kind == "w" and (q[1], q[2]) not in self._words:
                self._want_words.setdefault(q[1], set()).add(q[2])
        # (so many directories at a time: one search's output, read at once, stays some MB)
        heads_in, calls_in = sorted(heads), sorted(calls)
        for at in range(0, max(len(heads_in), len(calls_in), 1), PREFETCH_DIRS):
            self._want_heads.update(heads_in[at:at + PREFETCH_DIRS])
            self._want_calls.update(calls_in[at:at + PREFETCH_DIRS])
            self.fetch()

    def wanting(self) -> bool:
        """Is a question queued that no fetch() has answered yet?"""
        return bool(self._want_calls or self._want_heads or self._want_words or self._want_files)

    # -- answering -----------------------------------------------------------------------
    @timed("search")
    def fetch(self) -> bool:
        """Answer every question queued; False when none was."""
        want_calls, self._want_calls = self._want_calls, set()
        want_heads, self._want_heads = self._want_heads, set()
        want_words, self._want_words = self._want_words, {}
        want_files, self._want_files = self._want_files, set()
        if not want_calls and not want_heads and not want_words and not want_files:
            return False
        self.rounds += 1
        for files in sorted(want_files):
            got_files = {"": Heads()}
            self._search([], [], fixed=False, only=list(files), heads=got_files)
            self._files_heads[files] = got_files[""].freeze()
        if want_words:
            names = sorted(set().union(*want_words.values()))
            wanted = {n.encode() for n in names}
            found: dict = {}
            for rel, line, content in self._search(sorted(want_words), names, fixed=True):
                for ident in set(IDENT_RE.findall(content)) & wanted:
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
                    src = self.index.look(rel)
                    if src is not None:
                        text = src.slice(line, min(line + 2, src.nlines))
                words = got[_dir(rel)]
                for ident in set(IDENT_RE.findall(text)):
                    words.setdefault(ident.decode(), []).append((rel, line))
            self._calls.update(got)
        if want_heads:
            got = {d: Heads() for d in want_heads}
            self._search(sorted(want_heads), [], fixed=False, heads=got)
            self._heads.update((d, h.freeze()) for d, h in got.items())
        heap.release()  # the searches' output, read
        return True

    def _search(self, dirs: list, patterns: list, fixed: bool, only: Optional[list] = None,
                heads: Optional[dict] = None) -> list:
        """The lines of the files directly in dirs (or of the files only) that hold one of
        patterns: (rel, line, content) for fixed strings. Not fixed: the headers and
        initialisers (HEADER, INIT) of those files are added to heads ({directory: Heads};
        with only, {'': Heads} for all of them) instead."""
        index = self.index
        if only is not None:
            on_disk, memory, paths = _taken_together(index, only)
        else:
            files = {d: [r for r in index.dir_files(d, recursive=False) if not r.startswith("<")] for d in dirs}
            # Files read from memory (a patched file, a preprocessed unit) are searched there.
            memory = [r for d in dirs for r in files[d] if _in_memory(index, r)]
            on_disk = {r for d in dirs for r in files[d]} - set(memory)
            paths = [d or "." for d in dirs if files[d]]
        index.searched.update(on_disk)
        out = []
        rg = tools.which("rg")
        if rg and on_disk:
            if fixed:
                out = [hit for hit in self._ripgrep(rg, paths, patterns, fixed) if hit[0] in on_disk]
            else:
                self._ripgrep(rg, paths, patterns, fixed, heads, on_disk, only is not None)
        elif on_disk:
            memory += sorted(on_disk)
        for rel in memory:
            src = index.look(rel)
            if src is None:
                continue
            offset = 0
            into = heads[_dir(rel) if only is None else ""] if heads is not None else None
            for n, content in enumerate(src.data.split(b"\n"), 1):
                if fixed:
                    if any(p.encode() in content for p in patterns):
                        out.append((rel, n, content))
                else:
                    assert into is not None  # heads are given whenever patterns are not fixed
                    m = _HEADER_RE.match(content)
                    if m and b";" not in content[m.end():]:
                        into.add(rel, m.group(1), b"", b"%d" % n, b"%d" % offset, _static(content))
                    else:
                        m = _INIT_RE.match(content)
                        if m and m.group(2) != b"NULL":
                            into.add(rel, m.group(1), m.group(2), b"%d" % n, b"%d" % offset)
                offset += len(content) + 1
        return out

    def _ripgrep(self, rg: str, paths: list, patterns: list, fixed: bool, heads: Optional[dict] = None,
                 kept: Optional[set] = None, together: bool = False, heading: bool = True) -> list:
        # The headers' search prints each file's name once, before its lines (--heading): a
        # third of the output, where a subsystem has hundreds of thousands of such lines.
        heading = heading and not fixed
        args, text = _ripgrep_args(rg, self.index.jobs, paths, patterns, fixed, together, heading)
        try:
            proc = tools.run(args, cwd=self.index.root, input=text, timeout=SEARCH_TIMEOUT,
                             what="ripgrep", limit=MAX_SEARCH_OUTPUT, search=True)
        except tools.ToolError as exc:
            self.index.search_failed(self.index.root, str(exc))
            return []
        if proc.returncode not in (0, 1, 2):
            self.index.search_failed(self.index.root, f"ripgrep failed: {tools.last_line(proc)}")
            return []
        try:
            if fixed:
                return sorted((rel_name(name), num, content) for name, num, content in _fast_records(proc.stdout))
            assert heads is not None and kept is not None  # given whenever patterns are not fixed
            if not heading:
                _heads(proc.stdout, heads, kept, together)
            elif not _heading_heads(proc.stdout, heads, kept, together):
                # A file name with a newline, a note: again, each line with its file's name.
                return self._ripgrep(rg, paths, patterns, fixed, heads, kept, together, heading=False)
            return []
        except SearchOutputError as exc:
            self.index.search_failed(self.index.root, f"ripgrep: {exc}")
            if heads is not None:
                for reldir in heads:
                    heads[reldir] = Heads()
            return []


_RECORD_RE = re.compile(rb"(?m)^([^\0\n]*)\0([0-9]+):([^\n]*)\n")


def _heads(out: bytes, heads: dict, kept: set, together: bool = False) -> None:
    """Add ripgrep's `--byte-offset` output for [HEADER, INIT] to heads ({directory: Heads};
    together: {'': Heads} for all), the records of files in kept only."""
    if out.count(b"\n") == out.count(b"\0") and (not out or out.endswith(b"\n")):
        try:
            _add_heads(_fast_heads(out), heads, kept, together)
            return
        except _NotOneLine:
            for reldir in heads:
                heads[reldir] = Heads()
    # a file name with a newline, a note: the careful way
    rows = []
    for name, num, rest in records(out):
        offset, colon, content = rest.partition(b":")
        if not (offset.isdigit() and colon):
            raise SearchOutputError(f"output not in the form asked for: {rest[:80]!r}")
        m = _HEAD_CONTENT_RE.match(content + b"\n")
        if m is None:
            raise SearchOutputError(f"output not in the form asked for: {rest[:80]!r}")
        rows.append((name, b"%d" % num, offset) + m.groups())
    _add_heads(rows, heads, kept, together)


# A record of ripgrep's output for [HEADER, INIT]: name, line, offset, and the member an
# initialiser sets and its value, or what comes before the function a header names and the
# function (the word before the line's first '('). The initialiser first: a line that starts
# with a '.' is told at its first characters, where the header's words would be tried to the
# end of the line and back.
_HEAD_CONTENT = (rb"(?:[^\S\n]*\.[^\S\n]*([A-Za-z_]\w*)[^\S\n]*=[^\S\n]*(?:&[^\S\n]*)?([A-Za-z_]\w*)"
                 rb"|((?:[^\n(]*[\t\x0b\x0c\r *])?)([A-Za-z_]\w*)[^\S\n]*\()[^\n]*\n")
_HEAD_CONTENT_RE = re.compile(_HEAD_CONTENT)
_HEAD_PARTS_RE = re.compile(rb"(?m)^([^\0\n]*)\0([0-9]+):([0-9]+):" + _HEAD_CONTENT)


class _NotOneLine(Exception):
    """A record of the output is not one line."""


def _fast_heads(out: bytes):
    """_HEAD_PARTS_RE's records of out a slice at a time (those of all of it at once would take
    more memory than the output), at C speed; _NotOneLine when a line is not one."""
    start = 0
    while start < len(out):
        end = out.find(b"\n", start + _SLICE) + 1 or len(out)
        got = _HEAD_PARTS_RE.findall(out, start, end)
        if len(got) != out.count(b"\0", start, end):
            raise _NotOneLine()
        yield from got
        start = end


# A record of ripgrep's --heading output for [HEADER, INIT]: a line of a file's (after its
# name and a NUL, or after the line before).
_HEADING_RE = re.compile(rb"(?<=[\0\n])([0-9]+):([0-9]+):" + _HEAD_CONTENT)


def _heading_heads(out: bytes, heads: dict, kept: set, together: bool = False) -> bool:
    """Add ripgrep's `--heading --byte-offset` output for [HEADER, INIT] (each file's name and
    a NUL, its lines, a blank line) to heads as _heads() does, at C speed a file at a time;
    False, and heads emptied, when a file's lines are not in that form (a file name with two
    newlines, a note)."""
    start, size = 0, len(out)
    while start < size:
        end = out.find(b"\n\n", start)
        end = size if end < 0 else end + 1  # past the file's last line
        at = out.find(b"\0", start, end)
        records = _HEADING_RE.findall(out, at + 1, end) if at >= 0 and out[end - 1:end] == b"\n" else None
        if records is None or len(records) != out.count(b"\n", at + 1, end):
            for reldir in heads:
                heads[reldir] = Heads()
            return False
        rel = rel_name(out[start:at])
        if rel in kept:
            into = heads["" if together else _dir(rel)]
            _add_file(into._named, into.number(rel), records)
        start = end + 1
    return True


def _add_heads(records, heads: dict, kept: set, together: bool) -> None:
    """Add records (the file's name first) to heads, a file's run of them at a time."""
    for name, group in itertools.groupby(records, key=lambda r: r[0]):
        rel = rel_name(name)
        if rel in kept:
            into = heads["" if together else _dir(rel)]
            _add_file(into._named, into.number(rel), (r[1:] for r in group))


def _add_file(named: dict, num: bytes, records) -> None:
    """Heads.add() of each of a file's records (line, offset, member, value, before, fn),
    written out here: a subsystem has hundreds of thousands."""
    for line, offset, member, value, before, fn in records:
        if fn:
            key = fn
            rec = num + line + b" " + offset + (b" s" if b"static" in before and b"static" in before.split()
                                                else b" -")
        elif value != b"NULL":
            key = b"." + member
            rec = num + line + b" " + offset + b" " + value
        else:
            continue
        old = named.get(key)
        if old is None:
            named[key] = bytearray(rec)
        else:  # (in place: a directory's `.owner = THIS_MODULE` can be thousands)
            old += b";" + rec


# What _heads() reads of the output at a time.
_SLICE = 1 << 20



def questions_text(asked: dict) -> str:
    """The questions each part of the work model asked ({part: set of questions, as
    SubsystemText.asked holds them}), as a kept scan holds them: JSON, read back only by a
    scan made after a change (questions_of())."""
    return json.dumps({part: sorted(list(q) for q in asked[part]) for part in PARTS if part in asked},
                      separators=(",", ":"))


def questions_of(text: str) -> dict:
    """{part: [question]} of questions_text()'s text; {} for anything else (an index is data:
    a question is checked again against the tree when asked, SubsystemText.prefetch())."""
    try:
        doc = safeio.parse_json(text)
    except safeio.InputRefused:
        return {}
    if not isinstance(doc, dict) or not set(doc) <= set(PARTS):
        return {}
    out = {}
    for part, got in doc.items():
        if not isinstance(got, list):
            return {}
        questions = []
        for q in got[:MAX_QUESTIONS]:
            if not isinstance(q, list) or not all(type(x) is str for x in q) \
                    or not (q[:1] == ["f"] and len(q) > 1 or q[:1] in (["h"], ["c"]) and len(q) == 2
                            or q[:1] == ["w"] and len(q) == 3 and _WORD.fullmatch(q[2])):
                return {}
            questions.append(tuple(q))
        out[part] = questions
    return out


def prefetch_files_heads(index, files: tuple) -> None:
    """Start the search of SubsystemText.files_heads(files), for the scans of a review that
    will ask it (tools.prefetch()): it runs while they resolve their allocation sites."""
    rg = tools.which("rg")
    on_disk, _memory, paths = _taken_together(index, list(files))
    if rg and on_disk:
        args, text = _ripgrep_args(rg, index.jobs, paths, [], fixed=False, together=True, heading=True)
        tools.prefetch(args, cwd=index.root, input=text, timeout=SEARCH_TIMEOUT, what="ripgrep",
                       limit=MAX_SEARCH_OUTPUT)


def _taken_together(index, only: list) -> tuple:
    """(the files of only searched on disk, those read from memory, the paths ripgrep is given)
    of files taken together (files_heads()). A file held in memory is searched on disk too,
    its lines there left out, where the tree holds it as a regular file: the search is then
    the one the tree's own files ask for, made once for both sides of a review
    (tools.shared_searches(); on linux-source-7.3 some 1,000 files, 1.4 MB of output)."""
    files = [r for r in only if not r.startswith("<")]
    memory = [r for r in files if _in_memory(index, r)]
    on_disk = set(files) - set(memory)
    also = set()
    for rel in memory:
        try:
            if stat.S_ISREG(os.lstat(index.root / rel).st_mode):
                also.add(rel)
        except OSError:
            continue
    return on_disk, memory, sorted(on_disk | also)


def _in_memory(index, rel: str) -> bool:
    """Is rel searched in memory (a patched file, a preprocessed unit), not on disk?"""
    return index.shadowed(rel) or rel in index.preloaded


def _ripgrep_args(rg: str, jobs: int, paths: list, patterns: list, fixed: bool, together: bool,
                  heading: bool) -> tuple:
    """(argv, stdin) of a search of SubsystemText (see _ripgrep)."""
    args = [rg, "-n", "--with-filename", "--heading" if heading else "--no-heading", "--null", "--no-ignore",
            "--binary", "--max-depth", "1", "--threads", str(jobs), "-g", "*.c", "-g", "*.h"]
    if fixed:
        args += ["-F"]
        text = "\n".join(patterns)
    else:
        args += ["--byte-offset"]
        # files taken together (files_heads()): only what other files can call
        text = "\n".join(["(?-u)" + EXTERN_HEADER + r"[^;]*$"] if together
                         else ["(?-u)" + HEADER + r"[^;]*$", "(?-u)" + INIT])
    return args + ["-f", "-", "--"] + paths, (text + "\n").encode()


class Heads:
    """The lines of some files that may start a function's definition, and the initialisers
    of members to functions, by name. Kept small (a kernel subsystem has tens of thousands of
    such lines, few of them ever asked about): each name's lines as one string of numbers,
    made into tuples when asked for. Once filled, freeze() packs them (scan.packed): a whole
    tree's searches (linux-source-7.3) held 600,000 names of 1,300 directories, 93 MiB as a
    dict of strings and 48 MiB packed."""

    __slots__ = ("files", "_file", "_named", "_packed")

    def __init__(self):
        self.files: list = []  # rel of the files, by number
        self._file: dict = {}  # rel -> its number, as bytes
        # name (b'.member' for an initialiser) -> b'file line offset static|value;...', until freeze()
        self._named: Optional[dict] = {}
        self._packed: Optional[Packed] = None  # the same, once frozen

    def add(self, rel: str, name: bytes, value: bytes, line: bytes, offset: bytes, static: bool = False) -> None:
        """A header of function name (value b''; static: the line says so), or an
        initialiser of member name to function value; line and offset in decimal digits.
        Only before freeze()."""
        assert self._named is not None, "a frozen Heads is not added to"
        num = self.number(rel)
        if value:
            name = b"." + name
            rec = num + line + b" " + offset + b" " + value
        else:
            rec = num + line + b" " + offset + (b" s" if static else b" -")
        old = self._named.get(name)
        if old is None:
            self._named[name] = bytearray(rec)
        else:
            old += b";" + rec

    def freeze(self) -> "Heads":
        """Pack the names and their lines; nothing is added afterwards."""
        if self._named is not None:
            self._packed, self._named = Packed(self._named), None
        return self

    def _records(self, name: bytes) -> Optional[bytes]:
        """b'file line offset static|value;...' of name, or None."""
        named = self._named
        if named is not None:
            return named.get(name)
        assert self._packed is not None
        return self._packed.get(name)

    def number(self, rel: str) -> bytes:
        """rel's number in the records, as bytes with a blank after it."""
        num = self._file.get(rel)
        if num is None:
            num = self._file[rel] = b"%d " % len(self.files)
            self.files.append(rel)
        return num

    def __contains__(self, name: bytes) -> bool:
        """Does a line name function name (bytes) as a header's?"""
        named = self._named
        if named is not None:
            return name in named
        assert self._packed is not None
        return name in self._packed

    def headers(self, name: str) -> list:
        """[(rel, line, offset, static)] of the lines that may start name's definition, by
        path and line (never in the order ripgrep's threads printed the files: which of
        several is taken must not vary between runs); static: the line says so (False also
        when the line starts with the name)."""
        got = self._records(name.encode())
        if got is None:
            return []
        out = []
        for rec in got.split(b";"):
            num, line, offset, static = rec.split(b" ")
            out.append((self.files[int(num)], int(line), int(offset), static == b"s"))
        return sorted(out)

    def definitions(self, name: str) -> list:
        """[(rel, line, offset)] of headers()."""
        return [at[:3] for at in self.headers(name)]

    def initialisers(self, member: str) -> list:
        """[(function, rel, line)] of the initialisers `.member = function`, by path and line."""
        got = self._records(b"." + member.encode())
        if got is None:
            return []
        out = []
        for rec in got.split(b";"):
            num, line, _offset, value = rec.split(b" ")
            out.append((self.files[int(num)], int(line), value.decode()))
        return [(fn, rel, line) for rel, line, fn in sorted(out)]


def _fast_records(out: bytes):
    """search.records(), at C speed when every record is one line (no file name holds a
    newline, no note between them)."""
    if out.count(b"\n") == out.count(b"\0") and (not out or out.endswith(b"\n")):
        got = _RECORD_RE.findall(out)
        if len(got) == out.count(b"\0"):
            return [(name, int(num), content) for name, num, content in got]
    return list(records(out))


def _static(content: bytes) -> bool:
    """Does a header line say its function is static (a word before the name)?"""
    head = content[:content.find(b"(")].split()
    return b"static" in head[:-1]


def _dir(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""
