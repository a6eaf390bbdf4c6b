"""The per-tree index kept between runs, in the user's cache directory.

A scan spends most of its time asking the tree where names occur (one ripgrep round per step
of the chains being followed) and then resolving. Both are functions of the tree's .c/.h
files, so they are kept, per tree, in ``$XDG_CACHE_HOME/wqlint/index/`` (``~/.cache`` when
unset):

- the answers of every search the engine made (for each name, the lines of the files that
  mention it; for definitions, the lines that may define it and the directories searched),
  which are most of what resolution needs: field assignments, #defines, wrapper headers;
- the allocation sites of a scan of the whole tree or of a directory, with the files each
  scan read (and a digest of their bytes);
- for a review, which function or macro each allocation line outside the patched files sits
  in (dropped with its file when the file changes): a warm review reads no file of the tree
  but the patched ones and those the chains go through.

An index that nothing changed since it was read is not written again.

Validity, checked at every run: the tree is walked as the search walks it (regular .c/.h
files, no hidden directories, no symbolic links) and each file's (inode, size, mtime_ns,
ctime_ns) compared with what was recorded before its bytes were read. The ctime moves with
every change of the file's bytes or mode, even when the mtime is put back. A file added,
deleted or renamed, or whose stamp changed, is read again and searched, in Python, for every
name the index holds, and its lines replace the old ones; if any answer changed, or a file a
scan read has other bytes now, the sites are resolved again (from the index: no search of
the tree, unless a chain now needs a name never asked for), else they are reused as they
are. A file touched without a change, or a git branch switched back and forth, thus costs
one read of that file. Beside the files a scan read, it keeps those the work model's
searches of a subsystem's text went through (Analysis.searched: their digests taken at the
end of the scan, '' for one whose stamp moved since the walk), checked as those read; a
changed file that no kept scan read nor searched is left to the engine,
which compares it with the tree's description kept beside the index
(scan.description.kept_same()) and calls stale() when it says something else. A kept
scan that a change makes stale is put aside when it read every file changed: it is taken
again, as it is, once those files have the bytes it read and every other file the stamp it
had (an edit undone, a branch checked out again). A stamp recorded less than two seconds
before the walk began is kept as "unknown", so a file rewritten in the same clock tick is
still looked at next time: read and compared with the digest of the bytes the index's answers
are of (seen), it costs that read alone when they are the same.

The index answers only for a tree it can read whole: for a directory it cannot list, or a
changed file it cannot read (its mode, a size past MAX_FILE_BYTES), the run starts from
nothing (its searches report what they meet, as with --no-cache), and no index is written
while a directory cannot be listed or a search meets a file it cannot read.

The file is data only: one header line (a format number and the BLAKE2b digest of the
rest), then lines of JSON (the stamps and the answers; then, per scan, its Kept and its
Analysis, read only when that scan is used), read back through the types the stored classes
declare (scan.codec).
Anything else (another format, a digest or a type that does not match, another tree's index,
a truncated file, a directory in its place, more than MAX_INDEX_BYTES) means starting from
nothing. The answers are decoded (and their types checked) when a run first asks for one: a
run whose scan is kept and whose files are as they were asks none, and writes them back as
they were read; one that finds them bad goes on as if there were no index (no answer, no
kept scan). It is read through the guarded opener and only from a directory and a file owned
by the user and writable by nobody else (the directories above: owned by the user or root,
and writable by others only when sticky, as /tmp), as ssh and git's safe.directory require;
it is written through the one atomic writer (a reader sees a whole file; of two runs at once
the last complete one wins), and any failure to write (no space, a file size limit, a name
too long, a read-only or missing or refused directory) only means carrying on without
saving.

Bounds: at most MAX_SCANS scans, of them MAX_ASIDE put aside (the least recently used go
first), MAX_NAMES names (the least recently used go, and the scans resolved from them),
MAX_INDEX_BYTES in all.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import stat
import struct
import threading
import time
from pathlib import Path
from typing import Optional

from wqlint import __version__, safeio
from wqlint.code_id import code_id
from wqlint.finding import InputError, Step
from wqlint.scan import codec, treewalk
from wqlint.scan.digests import Digests
from wqlint.scan.site import FlagBits, Flow, QueueUse, SelfWait, Site
from wqlint.scan.search import IDENT_RE, definition_regex
from wqlint.scan.source import MAX_FILE_BYTES, digest
from wqlint.scan.treewalk import stamps_from, stamps_to

FORMAT = 11
MAGIC = b"wqlint-index"
RACY_NS = 2_000_000_000
MAX_INDEX_BYTES = 64 * 1024 * 1024
MAX_SCANS = 8
# Of them put aside (_shelve()): one, the tree before the last change (on a kernel tree each
# costs a run some 10 ms to read, and 4 MB of memory while it runs).
MAX_ASIDE = 1
MAX_NAMES = 8192


@dataclasses.dataclass
class Analysis:
    """The sites of a scan's paths, resolved but not judged, and what they came from
    (Engine.analysis()): sites, uses (QueueUse), flows, bits (FlagBits), bad and
    parse_errors ({rel: problem}), errors (InputError of the tree search), call_sha
    ({(path, line, col): digest of the call's text}), api_files (files defining the API),
    read ({rel: digest of the bytes, or None without an index}), searched (below). The
    index keeps read and searched in the scan's Kept, which is looked at without reading
    the rest."""

    sites: list[Site]
    uses: list[QueueUse]
    flows: list[Flow]
    waits: list[SelfWait]
    bits: FlagBits
    bad: dict[str, str]
    errors: list[InputError]
    parse_errors: dict[str, str]
    call_sha: dict[tuple[str, int, int], str]
    api_files: frozenset[str]
    read: dict[str, Optional[str]]
    # the files the work model's searches of a subsystem's text went through without reading
    # them ({rel: digest}): what they define may be a step of a path (kept in Kept, as read)
    searched: dict[str, str] = dataclasses.field(default_factory=dict)


# A scan's key (Engine._scan_key): "scan", the paths, the API header, wqlint's own files
# (rel, digest), the kernel version, the parts of sites no rule left on reads (not built).
ScanKey = tuple[str, tuple[str, ...], str, tuple[tuple[str, str], ...], tuple[int, ...], tuple[str, ...]]


@dataclasses.dataclass
class Kept:
    """A scan kept in the index: when it was last used, the names it was resolved from, the
    files it read (the digest of their bytes). Its Analysis follows it in the file, read
    only when the scan is used."""

    key: ScanKey
    used: int
    names: frozenset[str]
    read: Digests  # (Analysis.read; a dict only once asked)
    searched: Digests  # (Analysis.searched)
    # Set while the scan is put aside (files it read changed: _shelve()): the digests those
    # files had, and the digest of every other file's stamp then (_rest()). It is of the tree
    # again when both are so again (an edit undone, a branch checked out again).
    since: dict[str, str] = dataclasses.field(default_factory=dict)
    rest: str = ""
    # and the functions around lines of those files then (Answers.enclosing), of those bytes
    enclosing: dict[tuple[str, bytes], str] = dataclasses.field(default_factory=dict)
    # what the parts of its work model asked of the subsystems' text (scan.subtext's
    # questions_text()): the next scan of the same paths after a change answers them at once
    questions: str = ""


@dataclasses.dataclass
class Answers:
    """The searches answered: uses and definitions of each name (with the scopes searched
    for them), the lines they are on, the files the search could not use, the function
    around an allocation line. (When each name was last used is in the file's first line
    beside them: it changes with every run that uses one.)"""

    uses: dict[str, list[tuple[str, int]]]
    defs: dict[str, list[tuple[str, int]]]
    cover: dict[str, set[str]]
    lines: dict[tuple[str, int], bytes]
    bad: dict[str, str]
    enclosing: dict[tuple[str, bytes], str]


_CODECS: dict = {}


def _codec(kind) -> codec.Codec:
    """The codec of a stored class; Unstorable when a class it holds declares a field the
    codec cannot read back (a bare tuple: tests/test_codec.py says which), so that the run
    goes on without the index rather than fail."""
    got = _CODECS.get(kind)
    if got is None:
        try:
            got = codec.Codec(kind, shared=(Step, Site))
        except TypeError as exc:
            got = codec.Unstorable(str(exc))
        _CODECS[kind] = got
    if isinstance(got, codec.Unstorable):
        raise got
    return got


def cache_home() -> Path:
    base = os.environ.get("XDG_CACHE_HOME")
    return Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"


def index_dir() -> Path:
    return cache_home() / "wqlint" / "index"


def private_dir(path: Path, own: int = 2) -> bool:
    """May the index be kept in the directory path? Its last `own` components (wqlint/index)
    must be directories of the user's, writable by nobody else; the directories above, the
    user's or root's, writable by others only when sticky (/tmp). No symbolic link in the
    path. (ssh's rule for its files; git's safe.directory.)"""
    path = Path(os.path.abspath(path))
    uid = os.geteuid()
    chain = [path] + list(path.parents)
    for n, d in enumerate(chain):
        try:
            st = os.lstat(d)
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode):
            return False
        if n < own:
            if st.st_uid != uid or st.st_mode & 0o022:
                return False
        elif st.st_uid not in (uid, 0) or (st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX):
            return False
    return True


def in_scope(rel: str, scopes) -> bool:
    """Is rel inside one of the definition search scopes (see TreeIndex.definition_scope)?"""
    for s in scopes:
        if s == "":
            return True
        if s.endswith("/*"):
            base = s[:-2]
            parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
            if parent == base:
                return True
        elif rel == s or rel.startswith(s + "/"):
            return True
    return False


class Store:
    """The index of one tree: searches answered, and resolved scans."""

    def __init__(self, root: Path, directory: Optional[Path] = None):
        self.root = Path(root)
        self.dir = Path(directory) if directory else index_dir()
        self.name = hashlib.sha1(os.fsencode(str(self.root))).hexdigest()[:20]
        self.path = self.dir / f"{self.name}.json"
        self.stamps: dict = {}  # rel -> (inode, size, mtime_ns, ctime_ns) or None (look again next time)
        # rel -> the digest of the bytes the answers are of, for a file whose stamp is None: the
        # next run that finds those bytes there has nothing to bring up to date (_settled())
        self.seen: dict = {}
        self._settled_now: dict = {}  # (_update(): the files _settled() found as seen)
        self._seen_now: dict = {}  # (_update(): the digests of the files it read, and those)
        # The answers (found, cover, lines, bad, enclosing: read through their properties),
        # decoded from the file when first asked for: a run whose files and scan are as they
        # were never asks. _answers_json: their JSON data as read, while they are as read.
        self._found: dict = {}  # token or ("def", token) -> [(rel, line)] on disk
        self._cover: dict = {}  # token -> definition scopes searched
        self._lines: dict = {}  # (rel, line) -> bytes of that line
        self._bad: dict = {}  # rel -> problem, files the search could not use
        self._enclosing: dict = {}  # (rel, line bytes) -> the function or macro it sits in
        self._undecoded = False  # _answers_json not decoded yet
        self._decoding = threading.Lock()
        self._answers_json = None
        self.scans: dict = {}  # key -> Analysis, or its line of the file, not read yet
        self.kept: dict = {}  # key -> Kept
        self._read_from: dict = {}  # key -> (a scan read from the file, its line there)
        self._meta_from: dict = {}  # key -> (its Kept as read from the file, its used then, its line there)
        self.age: dict = {}  # token -> when last used
        self.gen = 0  # how many times the index was written
        self.touched: set = set()  # tokens used in this run
        self.hidden: list = []  # hidden directories the walk skipped
        self.unsaved = True  # something to write (answers, stamps, scans, names)
        self._walker: Optional[threading.Thread] = None  # the thread walking the tree (see open)
        self._now: dict = {}
        self.whole = True  # the walk listed every directory and took every stamp
        self.loaded = False
        self.changed: set = set()  # rels added, deleted or changed since the index was written
        self.dirty = False  # some answer or some file a scan read changed
        self.unread: list = []  # files changed since that no kept scan read nor searched (scan.described)
        self.walk_started = 0
        self.beside: list = []  # files written beside the index in this run (scan.described)
        self._dropped: dict = {}  # key -> Kept.questions of a scan dropped by this run's changes (questions())

    # -- reading and validating ------------------------------------------------------------
    def open(self, jobs: int = 1) -> "Store":
        """Load the index of the tree (if any), walk the tree, bring the index up to date;
        when it cannot be (a tree the walk cannot read whole, a changed file that cannot be
        read), start from nothing, as if there were no index.

        The walk runs in a thread, beside the reading of the index; without an index to
        validate, it only records the stamps to save, beside the first search of the tree (a
        file changed after the walk began gets a stamp within RACY_NS of it, and is looked at
        again next time). jobs: with two or more, the walk is shared with a forked process
        (scan.treewalk.split())."""
        self.walk_started = time.time_ns()
        shared = treewalk.split(self.root, jobs)  # (forked here: before this process has a thread of its own)
        # The walk's system calls run while the index is read and decoded.
        self._walker = threading.Thread(target=self._walk, args=(shared,), name="wqlint-store-walk", daemon=True)
        self._walker.start()
        data = self._read()
        if data is None:
            return self
        self._walker.join()
        self._walker = None
        now = self._now
        stamps = {rel: self._stamp(st) for rel, st in now.items()}
        if self.whole:
            self._answers_json, self.stamps, self.scans, self.kept, self.gen, self.age, self.seen = data
            self._undecoded = True
            self.loaded = True
            # Something to write: a scan put aside or taken back (_update()), answers changed,
            # or stamps. (A file written just before is "unknown" in both walks: undoing an
            # edit then changes no stamp, though the scan it takes back must be written down.)
            self.unsaved = False
            if self._update(now):
                # (a file now stamped whose bytes are those the index last saw is written down
                # with the next change: until then each run reads it again, and only it)
                self.unsaved = self.unsaved or self.dirty or not _same_but(stamps, self.stamps, self._settled_now)
                self.stamps = stamps
                self.seen = {rel: d for rel, d in self._seen_now.items() if stamps.get(rel, 0) is None}
                self._let_go_aside()
                return self
        # Starting from nothing: the searches of this run answer, and report what they meet
        # (no index is written while a directory or a file cannot be read: see save()).
        self._set_answers(Answers({}, {}, {}, {}, {}, {}))
        self.age, self.seen = {}, {}
        self.scans, self.kept = {}, {}
        self.loaded, self.dirty, self.changed = False, False, set()
        self.stamps, self.unsaved = stamps, True
        return self

    def _walk(self, shared=None) -> None:
        if shared is not None:
            self._now, self.whole, self.hidden = shared()
        else:
            hidden: list = []
            self._now, self.whole = treewalk.walk(self.root, hidden)
            self.hidden = hidden

    def wait(self) -> None:
        """The walk done (see open). (Both sides of a review may wait at once: the stamps
        are the same whoever takes them.)"""
        walker = self._walker
        if walker is not None:
            walker.join()
            self.stamps = {rel: self._stamp(st) for rel, st in self._now.items()}
            self.unsaved = True
            self._walker = None

    def hidden_dirs(self) -> list:
        """The hidden directories the walk skipped."""
        self.wait()
        return self.hidden

    def source_files(self) -> list:
        """The .c/.h files the walk found (those the search of the tree reads)."""
        self.wait()
        return list(self._now)

    def digest_now(self, rel: str, real_dirs: Optional[dict] = None) -> str:
        """The digest of rel's bytes as this run's walk found them: '' when they may be
        other bytes (a stamp too recent to trust, changed since the walk, or not readable)."""
        self.wait()
        then = self.stamps.get(rel)
        if then is None:
            return ""
        path = self.root / rel
        try:
            data = safeio.read_bytes(path, MAX_FILE_BYTES, self.root, real_dirs)
            st = os.lstat(path)
        except (OSError, safeio.InputRefused):
            return ""
        same = treewalk.stamp_of(st) == tuple(then)
        return digest(data) if same else ""

    def _stamp(self, st):
        """A stamp to record: None when it is too close to now to tell a later rewrite."""
        return st if max(st[2], st[3]) < self.walk_started - RACY_NS else None

    def _read(self):
        """(answers, stamps, scans, kept, generation) of the index file, or None
        when there is none that this tree and this code may use."""
        try:
            if not private_dir(self.dir) or not self._own_file(missing=False):
                return None
            raw = safeio.read_bytes(self.path, MAX_INDEX_BYTES)
        except (OSError, safeio.InputRefused):
            return None
        return self._decode(raw)

    def _own_file(self, missing: bool) -> bool:
        """Is the index file a regular file of the user's that nobody else may write (or,
        when missing is true, not there at all)?"""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return missing
        return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022

    def _decode(self, raw: bytes):
        """The header line checked, the lines of the index: its stamps and answers, then two
        lines per scan (its Kept, its Analysis: read when used, see scan())."""
        head, nl, body = raw.partition(b"\n")
        parts = head.split(b" ")
        if not nl or len(parts) != 3 or parts[0] != MAGIC or parts[1] != str(FORMAT).encode() \
                or parts[2] != hashlib.blake2b(body, digest_size=32).hexdigest().encode():
            return None
        lines = body.split(b"\n")
        if len(lines) % 2 != 1:
            return None
        try:
            doc = safeio.parse_json(lines[0])
            if type(doc) is not dict or set(doc) != {"wqlint", "code", "root", "gen", "files", "stamps", "unknown",
                                                    "seen", "answers", "age"} \
                    or doc["wqlint"] != __version__ or doc["root"] != str(self.root) or type(doc["gen"]) is not int:
                return None
            stamps = stamps_from(doc["files"], doc["stamps"], doc["unknown"])
            if type(doc["seen"]) is not str:
                return None
            seen = dict(Digests(doc["seen"]))
            if any(type(d) is not str or stamps.get(rel, 0) is not None for rel, d in seen.items()):
                return None
            age = doc["age"]
            if type(age) is not dict or any(type(a) is not int or not codec.text_ok(t) for t, a in age.items()):
                return None
            scans, kept = {}, {}
            if doc["code"] == code_id():  # the searches stay good; sites resolved by other code do not
                for n in range(1, len(lines), 2):
                    k = _codec(Kept).decode(safeio.parse_json(lines[n]))
                    scans[_place(k)] = lines[n + 1]
                    kept[_place(k)] = k
                    self._meta_from[_place(k)] = (k, k.used, lines[n])  # written back as it was read
        except (codec.Invalid, codec.Unstorable, safeio.InputRefused, ValueError, RecursionError):
            return None
        return doc["answers"], stamps, scans, kept, doc["gen"], age, seen

    # -- the answers, decoded when first asked for -------------------------------------------
    def _answers_ready(self) -> None:
        """The answers read from the file decoded; when they are not what their types say,
        none (every name is searched again) and no kept scan (they were resolved from them)."""
        if not self._undecoded:
            return
        with self._decoding:  # (the two scans of a review share the index)
            if not self._undecoded:
                return
            try:
                answers = _codec(Answers).decode(self._answers_json)
            except (codec.Invalid, codec.Unstorable, RecursionError):
                answers = Answers({}, {}, {}, {}, {}, {})
                self.scans, self.kept, self.age = {}, {}, {}
                self._answers_json = None
                self.unsaved = True
            self._set_answers(answers, keep_json=True)

    def _set_answers(self, answers: "Answers", keep_json: bool = False) -> None:
        self._found = {**answers.uses, **{("def", t): occ for t, occ in answers.defs.items()}}
        self._cover, self._lines, self._bad, self._enclosing = (answers.cover, answers.lines, answers.bad,
                                                                answers.enclosing)
        self._undecoded = False
        if not keep_json:
            self._answers_json = None

    def _changing(self) -> None:
        """The answers are about to change: the JSON read no longer says them."""
        self._answers_ready()
        self._answers_json = None

    found = property(lambda self: self._answer("_found"))
    cover = property(lambda self: self._answer("_cover"))
    lines = property(lambda self: self._answer("_lines"))
    bad = property(lambda self: self._answer("_bad"))
    enclosing = property(lambda self: self._answer("_enclosing"))

    def _answer(self, name: str) -> dict:
        """One part of the answers (see __init__), decoded first if need be."""
        self._answers_ready()
        return getattr(self, name)

    def _update(self, now: dict) -> bool:
        """Bring the answers up to date with the files changed since; False when a changed
        file cannot be read."""
        old = self.stamps
        changed = {rel for rel, st in now.items() if old.get(rel) != st or st is None}
        changed |= {rel for rel in old if rel not in now}
        self._settled_now = self._settled(changed, now)
        changed -= self._settled_now.keys()
        self._seen_now = dict(self._settled_now)
        self.changed = changed
        if not changed:
            return True
        self._answers_ready()
        enclosing = len(self._enclosing)
        if any(rel not in old for rel in now) or any(rel not in now for rel in old):
            self.dirty = True  # directory listings (a subsystem's files) changed
        read_by_scans: dict = {}
        for k in self.kept.values():
            if k.rest:
                continue  # (put aside: _unshelve())
            for files in (k.read, k.searched):
                for rel, dg in files.items():
                    read_by_scans.setdefault(rel, set()).add(dg)
        uses = {k.encode(): k for k in self.found if isinstance(k, str)}
        defs = {k[1].encode(): k[1] for k in self.found if not isinstance(k, str)}
        regexes: dict = {}
        new_found: dict = {}
        new_lines: dict = {}
        real_dirs: dict = {}
        same: set = set()  # changed files whose bytes are those every kept scan read (only a stamp moved)
        digests: dict = {}  # changed file -> the digest of its bytes now
        for rel in sorted(changed):
            data = None
            if rel in now:
                try:
                    data = safeio.read_bytes(self.root / rel, MAX_FILE_BYTES, self.root, real_dirs)
                except safeio.InputRefused:
                    return False
            if data is not None:
                digests[rel] = self._seen_now[rel] = digest(data)
            if rel in read_by_scans:
                if data is None or {digests[rel]} != read_by_scans[rel]:
                    self.dirty = True
                else:
                    same.add(rel)
            else:
                self.unread.append(rel)
            problem = None
            if data is not None:
                hit = self._search(rel, data, uses, defs, regexes, new_found, new_lines)
                if b"\0" in data and hit:
                    problem = "binary file (contains NUL bytes)"
            if self.bad.get(rel) != problem:
                self.dirty = True
                if problem:
                    self.bad[rel] = problem
                else:
                    self.bad.pop(rel, None)
        for key, occ in self.found.items():
            mine = [o for o in occ if o[0] in changed]
            want = sorted(new_found.get(key, ()))
            if mine != want:
                self.dirty = True
                self.found[key] = sorted([o for o in occ if o[0] not in changed] + want)
        kept_lines = {k: v for k, v in self.lines.items() if k[0] not in changed}
        if len(kept_lines) + len(new_lines) != len(self.lines) \
                or any(self.lines.get(k) != v for k, v in new_lines.items()):
            self.dirty = True  # a line found where it was may say something else now
        kept_lines.update(new_lines)
        self._lines = kept_lines
        # A line's function, found in a run whose kept scans read these very bytes, is still
        # it (a file rewritten as it was, or a stamp too recent to trust, is not parsed again).
        gone = {k: v for k, v in self._enclosing.items() if k[0] in changed and k[0] not in same}
        self._enclosing = {k: v for k, v in self._enclosing.items() if k not in gone}
        if self.dirty or len(self._enclosing) != enclosing:
            self._answers_json = None
        # (a file settled by its digest is one a scan put aside waits for, with those bytes:
        # the stamp the index had for it was none)
        settled = self._settled_now
        if self.dirty:
            self._shelve(old, changed | settled.keys(), gone)
        self._unshelve(now, {**settled, **digests})
        aside = sorted((place for place, k in self.kept.items() if k.rest), key=lambda p: -self.kept[p].used)
        for place in aside[MAX_ASIDE:]:  # (the least recently used go)
            del self.scans[place], self.kept[place]
        return True

    def _settled(self, changed: set, now: dict) -> dict:
        """{rel: digest} of the files of changed whose stamp the index did not know, and whose
        bytes are those its answers are of (seen) and those that every kept scan that read
        or searched them judged (one at least): there is nothing to bring up to date (the
        run after one that met a file written within RACY_NS, as after an edit scanned at
        once, would otherwise decode every answer and write the index again: on
        linux-source-7.3 some 0.2 s). A file no kept scan read, or one rewritten while a
        scan ran, is looked at as any changed file."""
        got: dict = {}
        real_dirs: dict = {}
        live = [k for k in self.kept.values() if not k.rest]
        for rel in sorted(changed):
            then = self.seen.get(rel)
            if then is None or rel not in now or self.stamps.get(rel, 0) is not None:
                continue
            judged = {files[rel] for k in live for files in (k.read, k.searched) if rel in files}
            if judged != {then}:
                continue
            try:
                data = safeio.read_bytes(self.root / rel, MAX_FILE_BYTES, self.root, real_dirs)
            except safeio.InputRefused:
                continue  # (left to _update(), which tells)
            if digest(data) == then:
                got[rel] = then
        return got

    def _let_go_aside(self) -> None:
        """The files of the scans put aside let go: nothing asks for them before the next run
        (on linux-source-7.3 each holds some 40,000 names and digests: about 3 MB as read, 9 MB
        once asked, as for a scan put aside in this run).
        The line of one read from the file is written back as it was read; that of one put
        aside in this run is made now, while its files are still held."""
        for place, k in self.kept.items():
            if not k.rest:
                continue
            was = self._meta_from.get(place)
            if was is None or was[0] is not k or was[1] != k.used:
                try:
                    line = json.dumps(_codec(Kept).encode(k), separators=(",", ":")).encode()
                except (codec.Unstorable, RecursionError):
                    continue  # (kept whole: save() tells)
                self._meta_from[place] = (k, k.used, line)
            k.read = k.searched = Digests("")

    def _shelve(self, old: dict, changed: set, enclosing: dict) -> None:
        """The kept scans no longer of the tree put aside, each that read every file changed
        (with its digest, and enclosing: the functions found around lines of those bytes): it
        is of the tree again once those files have those bytes again and every other file the
        stamp it had (old). The others are dropped."""
        rest = None
        for place, k in list(self.kept.items()):
            if k.rest:
                continue
            got = self.scans.pop(place)
            del self.kept[place]
            self._meta_from.pop(place, None)  # (its line says it is of the tree)
            if not all(k.read.get(rel) or k.searched.get(rel) for rel in changed):
                self._dropped[k.key] = k.questions
                continue
            rest = rest if rest is not None else _rest(old, changed)
            since = {rel: k.read.get(rel) or k.searched[rel] for rel in sorted(changed)}
            aside = dataclasses.replace(k, since=since, rest=rest, enclosing=enclosing)
            self.scans[_place(aside)], self.kept[_place(aside)] = got, aside
        self.dirty = False  # (what is kept now is of the tree as it is)
        self.unsaved = True

    def _unshelve(self, now: dict, digests: dict) -> None:
        """A scan put aside whose files are again as they were (see _shelve()) kept again.
        digests: {rel: the digest of its bytes now} of the files changed since the index was
        written (the others' are taken as asked: their stamps are still those recorded)."""
        rests: dict = {}
        for place, k in list(self.kept.items()):
            if not k.rest or k.key in self.kept:
                continue
            if any((digests[rel] if rel in digests else self.digest_now(rel)) != d for rel, d in k.since.items()):
                continue
            frozen = frozenset(k.since)
            if frozen not in rests:
                rests[frozen] = _rest({rel: self._stamp(st) for rel, st in now.items()}, k.since)
            if rests[frozen] != k.rest:
                continue
            got = self.scans.pop(place)
            del self.kept[place]
            back = dataclasses.replace(k, since={}, rest="", used=self.gen + 1, enclosing={})
            self.scans[k.key], self.kept[k.key] = got, back
            self.unsaved = True
            if k.enclosing:  # (the files have the bytes they were found in again)
                self._enclosing.update(k.enclosing)
                self._answers_json = None
            self.unread = [rel for rel in self.unread if rel not in back.read and rel not in back.searched]

    def _search(self, rel, data, uses, defs, regexes, new_found, new_lines) -> bool:
        """Search one file's bytes for every name the index holds, as the tree search would."""
        hit = False
        for lineno, content in enumerate(data.split(b"\n"), 1):
            idents = set(IDENT_RE.findall(content))
            here = False
            for ident in idents & uses.keys():
                new_found.setdefault(uses[ident], []).append((rel, lineno))
                here = True
            for ident in idents & defs.keys():
                token = defs[ident]
                if not in_scope(rel, self.cover.get(token, ())):
                    continue
                rx = regexes.get(token)
                if rx is None:
                    rx = regexes[token] = re.compile(definition_regex([token], python=True).encode())
                if rx.search(content):
                    new_found.setdefault(("def", token), []).append((rel, lineno))
                    here = True
            if here:
                new_lines[(rel, lineno)] = content
                hit = True
        return hit

    # -- answers ---------------------------------------------------------------------------
    def answer(self, key, scopes=None) -> Optional[list]:
        """The stored occurrences of key, or None when not searched (for definitions: not in
        every scope asked for)."""
        got = self.found.get(key)
        if got is None:
            return None
        if scopes is not None and not set(scopes) <= self.cover.get(key[1], set()) \
                and "" not in self.cover.get(key[1], set()):
            return None
        self.touched.add(_token(key))
        return got

    def record(self, key, occ: list, lines: dict, scopes=None) -> None:
        """Keep a search's answer (disk files only)."""
        self._changing()
        self.unsaved = True
        self.touched.add(_token(key))
        if scopes is not None:
            token = key[1]
            old = self.found.get(key, [])
            self.found[key] = sorted(set(old) | set(occ))
            self.cover.setdefault(token, set()).update(scopes)
        else:
            self.found[key] = sorted(occ)
        self.lines.update(lines)

    # -- scans ------------------------------------------------------------------------------
    def stale(self) -> None:
        """The kept scans may not be what a scan of the tree finds now (scan.described: a
        file no scan read describes the tree otherwise): none is used, and the next kept
        replaces them (those put aside stay)."""
        if any(not k.rest for k in self.kept.values()):
            self.dirty = True

    def live(self) -> list:
        """The keys of the scans kept of the tree as it is (not put aside: _shelve())."""
        return [] if self.dirty else [k.key for k in self.kept.values() if not k.rest]

    def _drop_live(self) -> None:
        """Drop the kept scans of the tree (resolved from answers or files that have changed
        since); those put aside stay (_shelve())."""
        for place in [place for place, k in self.kept.items() if not k.rest]:
            del self.scans[place], self.kept[place]

    def scan(self, key) -> Optional[Analysis]:
        """The scan kept under key, if nothing it depends on changed (read from its line of
        the file now; one that is not what its types say is dropped). A scan used that is
        not among the most recent half is marked used now (written with the index: a scan
        used run after run is not written each time)."""
        got = self.scans.get(key) if not self.dirty else None
        if got is None:
            return None
        k = self.kept[key]
        if isinstance(got, bytes):
            try:
                analysis = _codec(Analysis).decode(safeio.parse_json(got))
            except (codec.Invalid, codec.Unstorable, safeio.InputRefused, ValueError, RecursionError):
                del self.scans[key], self.kept[key]
                self.unsaved = True
                return None
            line, got = got, dataclasses.replace(analysis, read=k.read, searched=k.searched)
            self.scans[key] = got
            self._read_from[key] = (got, line)  # written back as it was read
        self.touched |= k.names
        if sum(1 for other in self.kept.values() if other.used > k.used) >= MAX_SCANS // 2:
            k.used = self.gen + 1
            self.unsaved = True
        return got

    def questions(self, key) -> str:
        """Kept.questions of the scan kept under key, of the tree as it is or as it was (the
        latest put aside, or one the changes found by this run dropped: a file added, a
        branch checked out); '' when there is none."""
        k = self.kept.get(key)
        if k is None and key in self._dropped:
            return self._dropped[key]
        if k is None:
            aside = [k for k in self.kept.values() if k.key == key]
            k = max(aside, key=lambda k: k.used) if aside else None
        return k.questions if k is not None else ""

    def keep_scan(self, key, result: Analysis, questions: str = "") -> None:
        """Keep a scan's result under key (resolved from the answers as they are now), with
        what its work model asked (Kept.questions)."""
        if self.dirty:
            self._drop_live()
            self.dirty = False
        try:
            read, searched = Digests.of(result.read), Digests.of(result.searched)
        except codec.Unstorable:
            return  # (a name the index cannot write: not kept)
        self.scans[key] = result
        self.kept[key] = Kept(key, self.gen + 1, frozenset(self.touched), read, searched, questions=questions)
        self.unsaved = True

    # -- writing -----------------------------------------------------------------------------
    def enclosing_name(self, rel: str, line: bytes, find) -> str:
        """The function or macro the line of rel sits in, as find(rel, line) tells it, kept
        for the file as it is on disk now."""
        key = (rel, line)
        got = self.enclosing.get(key)
        if got is None:
            self._changing()
            got = self._enclosing[key] = find(rel, line)
            self.unsaved = True
        return got

    def save(self) -> bool:
        """Write the index atomically; False when it is not written (a tree not read whole,
        a directory that cannot or may not hold it, too large). An index read whole and
        unchanged since is not written again."""
        self.wait()
        if not self.whole:
            return False
        if self.dirty:
            self._drop_live()
            self.unsaved = True
        if self.loaded and not self.unsaved:
            return True
        try:
            blob = self._encode()
            written = blob is not None and self._write(blob)
        except (OSError, safeio.OutputRefused, codec.Unstorable, RecursionError, struct.error):
            written = False
        if not written:
            for path in self.beside:  # of no use without the index they were kept for
                with contextlib.suppress(OSError):
                    os.unlink(path)
            return False
        self.unsaved = False
        safeio.remove_stale_temps(self.path)  # of a run that was killed while saving
        for old in (f"{self.name}.pickle", f"{self.name}.lock"):  # the index of wqlint 0.x before this format
            with contextlib.suppress(OSError):
                os.unlink(self.dir / old)
        return True

    def _write(self, blob: bytes) -> bool:
        self.make_dir()
        if not private_dir(self.dir) or not self._own_file(missing=True):
            return False
        safeio.write_atomic(self.path, blob)
        return True

    def make_dir(self) -> None:
        """The cache directories, made private to the user (the ones above as they come)."""
        wqlint = self.dir.parent
        if not self.dir.is_dir():
            wqlint.parent.mkdir(parents=True, exist_ok=True)
            for d in (wqlint, self.dir):
                try:
                    d.mkdir(mode=0o700)
                except FileExistsError:
                    pass

    def _encode(self) -> Optional[bytes]:
        """The index file's bytes within the bounds; None when even its stamps and answers
        alone exceed them."""
        gen = self.gen + 1
        for token in self.touched:
            self.age[token] = gen
        if self._answers_json is None:  # (else as they were written, within the bounds then)
            tokens = {_token(k) for k in self.found}
            if len(tokens) > MAX_NAMES:
                self._forget(len(tokens) - MAX_NAMES * 3 // 4)
        files, stamps, unknown = stamps_to(self.stamps)
        seen = Digests.of({rel: d for rel, d in self.seen.items() if self.stamps.get(rel, 0) is None}).packed
        while True:
            answers = self._answers_json
            if answers is None:
                answers = _codec(Answers).encode(self._answers())
                tokens = {_token(k) for k in self._found}
                self.age = {t: a for t, a in self.age.items() if t in tokens}
            first = json.dumps({"wqlint": __version__, "code": code_id(), "root": str(self.root), "gen": gen,
                                "files": files, "stamps": stamps, "unknown": unknown, "seen": seen,
                                "answers": answers, "age": self.age}, separators=(",", ":")).encode()
            total = len(MAGIC) + len(str(FORMAT)) + 67 + len(first)  # the header line, the first line
            if total <= MAX_INDEX_BYTES:
                break
            tokens = {_token(k) for k in self.found}
            if not tokens:
                return None
            self._forget(max(1, len(tokens) // 4))
        lines = [first]
        order = sorted(self.scans, key=lambda k: -self.kept[k].used)
        for key in order[:MAX_SCANS]:
            k, got = self.kept[key], self.scans[key]
            was_meta = self._meta_from.get(key)
            if was_meta is not None and was_meta[0] is k and was_meta[1] == k.used:
                meta = was_meta[2]
            else:
                meta = json.dumps(_codec(Kept).encode(k), separators=(",", ":")).encode()
            was = self._read_from.get(key)
            if was is not None and was[0] is got:
                got = was[1]
            if not isinstance(got, bytes):
                got = json.dumps(_codec(Analysis).encode(dataclasses.replace(got, read={}, searched={})),  # (in Kept)
                                 separators=(",", ":")).encode()
            if total + len(meta) + len(got) + 2 > MAX_INDEX_BYTES:
                break
            total += len(meta) + len(got) + 2
            lines += [meta, got]
        for key in order[(len(lines) - 1) // 2:]:
            del self.scans[key], self.kept[key]
        # (the body's digest taken line by line, and the file joined once: the lines of a
        # kernel tree's index, and each copy of them, are some 15 MB)
        h = hashlib.blake2b(digest_size=32)
        for n, line in enumerate(lines):
            if n:
                h.update(b"\n")
            h.update(line)
        self.gen = gen
        head = b"%s %d %s" % (MAGIC, FORMAT, h.hexdigest().encode())
        return b"\n".join([head] + lines)

    def _answers(self) -> Answers:
        return Answers(uses={k: v for k, v in self.found.items() if isinstance(k, str)},
                       defs={k[1]: v for k, v in self.found.items() if not isinstance(k, str)},
                       cover=self.cover, lines=self.lines, bad=self.bad, enclosing=self.enclosing)

    def _forget(self, n: int) -> None:
        """Drop the n least recently used names, their lines, the functions found around
        lines of files none of the names left is in, and the scans resolved from them."""
        self._changing()
        tokens = sorted({_token(k) for k in self._found}, key=lambda t: (self.age.get(t, 0), t))
        gone = set(tokens[:n])
        self._found = {k: v for k, v in self._found.items() if _token(k) not in gone}
        self._cover = {t: v for t, v in self._cover.items() if t not in gone}
        self.age = {t: a for t, a in self.age.items() if t not in gone}
        wanted = {o for occ in self._found.values() for o in occ}
        self._lines = {k: v for k, v in self._lines.items() if k in wanted}
        files = {rel for rel, _line in wanted}
        self._enclosing = {k: v for k, v in self._enclosing.items() if k[0] in files}
        for key in [key for key, k in self.kept.items() if k.names & gone]:
            del self.scans[key], self.kept[key]


def _same_but(stamps: dict, old: dict, files: dict) -> bool:
    """Are stamps those of old, but for those of files? (Compared whole, at C speed: the
    stamps of files are set as old has them, and back.)"""
    mine = {rel: stamps[rel] for rel in files if rel in stamps}
    stamps.update((rel, old.get(rel)) for rel in mine)
    try:
        return stamps == old
    finally:
        stamps.update(mine)


def _place(k: Kept):
    """Where a Kept is in Store.kept (and its Analysis in Store.scans): a scan of the tree
    under its key, one put aside under its key and the tree it is of (an edit and the file
    as it was before it differ only in that file)."""
    return (k.key, k.rest, tuple(sorted(k.since.items()))) if k.rest else k.key


def _rest(stamps: dict, but) -> str:
    """The digest of the stamps of every file but those of but."""
    h = hashlib.blake2b(digest_size=16)
    for rel in sorted(stamps):
        if rel not in but:
            h.update(b"%s\0%r\n" % (rel.encode("utf-8", "surrogateescape"), stamps[rel]))
    return h.hexdigest()


def _token(key) -> str:
    return key if isinstance(key, str) else key[1]
