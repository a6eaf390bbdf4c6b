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
  in (dropped with its file when the file changes), and the hidden directories the walk
  below skipped (named in a note): a warm review reads no file of the tree but the patched
  ones and those the chains go through.

An index that nothing changed since it was read is not written again.

Validity, checked at every run: the tree is walked as the search walks it (.c/.h files, no
hidden directories, no symbolic links) and each file's (mtime_ns, size) compared with what
was recorded before its bytes were read. A file added, deleted or renamed, or whose stamp
changed, is searched again, in Python, for every name the index holds, and its lines
replace the old ones; if any answer changed, or a file a scan read has other bytes now, the
sites are resolved again (from the index: no search of the tree, unless a chain now needs a
name never asked for), else they are reused as they are. A file touched without a change,
or a git branch switched back and forth, thus costs one read of that file. A stamp recorded
less than two seconds before the walk began is kept as "unknown", so a file rewritten in the
same clock tick with the same size is still looked at next time.

Runs at the same time are safe: the index is written to a temporary file and renamed over
the old one under an fcntl lock (the last complete run wins; a reader sees a whole file).
A missing or read-only cache directory, or a broken index file, only means starting from
nothing and not writing.
"""
from __future__ import annotations

import errno
import hashlib
import os
import pickle
import re
import threading
import time
from pathlib import Path
from typing import Optional

from wqlint import __version__, safeio
from wqlint.code_id import code_id
from wqlint.scan.source import MAX_FILE_BYTES

FORMAT = 5
_IDENT_RE = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
RACY_NS = 2_000_000_000
MAX_INDEX_BYTES = 1024 * 1024 * 1024


def cache_home() -> Path:
    base = os.environ.get("XDG_CACHE_HOME")
    return Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"


def index_dir() -> Path:
    return cache_home() / "wqlint" / "index"


def digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def walk(root: Path, hidden: Optional[list] = None) -> dict:
    """rel -> (mtime_ns, size) of every .c/.h file as the tree search sees them; hidden, when
    given, gets the rel paths of the hidden directories it skipped (.git aside), as the
    engine names them in its note (a symbolic link to a directory counts, as for os.walk)."""
    out: dict = {}

    def visit(path: str, rel: str) -> None:
        try:
            it = os.scandir(path)
        except OSError:
            return
        with it:
            for entry in it:
                name = entry.name
                if name.startswith("."):
                    if hidden is not None and name != ".git":
                        try:
                            if entry.is_dir():
                                hidden.append(rel + name)
                        except OSError:
                            pass
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        visit(entry.path, rel + name + "/")
                    elif name.endswith((".c", ".h")) and not entry.is_symlink():
                        st = entry.stat(follow_symlinks=False)
                        out[rel + name] = (st.st_mtime_ns, st.st_size)
                except OSError:
                    continue
    visit(str(root), "")
    return out


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
        name = hashlib.sha1(os.fsencode(str(self.root))).hexdigest()[:20]
        self.path = self.dir / f"{name}.pickle"
        self.stamps: dict = {}  # rel -> (mtime_ns, size) or None (look again next time)
        self.found: dict = {}  # token or ("def", token) -> [(rel, line)] on disk
        self.cover: dict = {}  # token -> definition scopes searched
        self.lines: dict = {}  # (rel, line) -> bytes of that line
        self.bad: dict = {}  # rel -> problem, files the search could not use
        self.scans: dict = {}  # key -> scan payload (see Engine)
        self.enclosing: dict = {}  # (rel, line bytes) -> the function or macro it sits in
        self.hidden: list = []  # hidden directories the walk skipped
        self.unsaved = True  # something to write (answers, stamps, scans, names)
        self._walker: Optional[threading.Thread] = None  # the thread walking the tree (see open)
        self._now: dict = {}
        self.loaded = False
        self.changed: set = set()  # rels added, deleted or changed since the index was written
        self.dirty = False  # some answer or some file a scan read changed
        self.walk_started = 0

    # -- reading and validating ------------------------------------------------------------
    def open(self) -> "Store":
        """Load the index of the tree (if any), walk the tree, bring the index up to date.

        Without an index to validate, the walk only records the stamps to save: it runs in a
        thread, beside the first search of the tree (a file changed after the walk began
        gets a stamp within RACY_NS of it, and is looked at again next time)."""
        self.walk_started = time.time_ns()
        data = self._read()
        if data is None:
            self._walker = threading.Thread(target=self._walk, name="wqlint-store-walk", daemon=True)
            self._walker.start()
            return self
        now = self._walk()
        self.stamps = data["stamps"]
        self.found = data["found"]
        self.cover = data["cover"]
        self.lines = data["lines"]
        self.bad = data["bad"]
        # The searches and names stay good; sites resolved by other code do not.
        self.scans = data["scans"] if data.get("code") == code_id() else {}
        self.enclosing = data["enclosing"]
        self.loaded = True
        self._update(now)
        stamps = {rel: self._stamp(st) for rel, st in now.items()}
        self.unsaved = bool(self.changed) or stamps != self.stamps
        self.stamps = stamps
        return self

    def _walk(self) -> dict:
        hidden: list = []
        now = self._now = walk(self.root, hidden)
        self.hidden = hidden
        return now

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

    def _stamp(self, st):
        """A stamp to record: None when it is too close to now to tell a later rewrite."""
        return st if st[0] < self.walk_started - RACY_NS else None

    def _read(self) -> Optional[dict]:
        try:
            data = pickle.loads(safeio.read_bytes(self.path, MAX_INDEX_BYTES))
        except (safeio.InputRefused, OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, ValueError,
                IndexError, TypeError):
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("wqlint") != __version__ \
                or data.get("root") != str(self.root):
            return None
        return data

    def _update(self, now: dict) -> None:
        old = self.stamps
        changed = {rel for rel, st in now.items() if old.get(rel) != st or st is None}
        changed |= {rel for rel in old if rel not in now}
        self.changed = changed
        if not changed:
            return
        if any(rel not in old for rel in now) or any(rel not in now for rel in old):
            self.dirty = True  # directory listings (a subsystem's files) changed
        read_by_scans: dict = {}
        for scan in self.scans.values():
            for rel, dg in scan["read"].items():
                read_by_scans.setdefault(rel, set()).add(dg)
        uses = {k.encode(): k for k in self.found if isinstance(k, str)}
        defs = {k[1].encode(): k[1] for k in self.found if not isinstance(k, str)}
        regexes: dict = {}
        new_found: dict = {}
        new_lines: dict = {}
        for rel in sorted(changed):
            data = None
            if rel in now:
                try:
                    data = safeio.read_bytes(self.root / rel, MAX_FILE_BYTES, self.root)
                except safeio.InputRefused:
                    data = None
            if rel in read_by_scans and (data is None or {digest(data)} != read_by_scans[rel]):
                self.dirty = True
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
        self.lines = {k: v for k, v in self.lines.items() if k[0] not in changed}
        self.lines.update(new_lines)
        self.enclosing = {k: v for k, v in self.enclosing.items() if k[0] not in changed}

    def _search(self, rel, data, uses, defs, regexes, new_found, new_lines) -> bool:
        """Search one file's bytes for every name the index holds, as the tree search would."""
        from wqlint.scan.index import definition_regex
        hit = False
        for lineno, content in enumerate(data.split(b"\n"), 1):
            idents = set(_IDENT_RE.findall(content))
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
                    rx = regexes[token] = re.compile(definition_regex([token]).encode())
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
        return got

    def record(self, key, occ: list, lines: dict, scopes=None) -> None:
        """Keep a search's answer (disk files only)."""
        self.unsaved = True
        if scopes is not None:
            token = key[1]
            old = self.found.get(key, [])
            self.found[key] = sorted(set(old) | set(occ))
            self.cover.setdefault(token, set()).update(scopes)
        else:
            self.found[key] = sorted(occ)
        self.lines.update(lines)

    # -- writing -----------------------------------------------------------------------------
    def enclosing_name(self, rel: str, line: bytes, find) -> str:
        """The function or macro the line of rel sits in, as find(rel, line) tells it, kept
        for the file as it is on disk now."""
        key = (rel, line)
        got = self.enclosing.get(key)
        if got is None:
            got = self.enclosing[key] = find(rel, line)
            self.unsaved = True
        return got

    def keep_scan(self, key, result) -> None:
        """Keep a scan's result under key (resolved from the answers as they are now)."""
        if self.dirty:
            self.scans.clear()  # resolved from answers that have changed since
            self.dirty = False
        self.scans[key] = result
        self.unsaved = True

    def save(self) -> bool:
        """Write the index atomically under the lock; False when the directory cannot hold it.
        An index read whole and unchanged since is not written again."""
        self.wait()
        if self.dirty:
            self.scans = {}  # resolved from answers or files that have changed since
            self.unsaved = True
        if self.loaded and not self.unsaved:
            return True
        data = {"format": FORMAT, "wqlint": __version__, "code": code_id(), "root": str(self.root),
                "stamps": self.stamps, "found": self.found, "cover": self.cover, "lines": self.lines, "bad": self.bad,
                "scans": self.scans, "enclosing": self.enclosing}
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            import fcntl
            with safeio.open_lock(self.path.with_suffix(".lock")) as lock:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
                tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
                try:
                    with open(tmp, "xb") as handle:
                        pickle.dump(data, handle, protocol=pickle.HIGHEST_PROTOCOL)
                    os.replace(tmp, self.path)
                    self.unsaved = False
                except BaseException:
                    try:
                        os.unlink(tmp)
                    except OSError:
                        pass
                    raise
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EROFS, errno.EPERM, errno.ENOSPC, errno.ENOTDIR, errno.EEXIST,
                             errno.ELOOP, errno.EINVAL):
                return False
            raise
        return True
