"""The walk of a tree for its .c/.h files and their stamps (what scan.store compares from run
to run), and the packed form of the stamps.

A walk lists every directory but hidden ones and takes the stamp (an lstat) of every regular
.c/.h file: on linux-source-7.3 some 6,300 directories and 64,500 files, 0.3-0.45 s, most of it
in the system calls, and every warm scan and review waits for it. With two jobs or more it is
shared with one forked process (split()): this one lists the tree's first two levels, then
both take the directories below those from one pipe, one at a time until none is left, and
the child writes back what it found, packed as the index packs stamps. The files, their
stamps and the hidden directories are those one process finds, in another order.
"""
from __future__ import annotations

import base64
import json
import os
import struct
import threading
from pathlib import Path
from typing import Callable, Optional

from wqlint import safeio, tools
from wqlint.scan import codec

_STAMP = struct.Struct("<QQqq")  # inode, size, mtime_ns, ctime_ns
_UNIT = struct.Struct("<I")  # a directory's number in split()'s pipe
MAX_UNITS = 8192  # directories split() puts in its pipe at once (a pipe holds 64 KiB)


def walk(root: Path, hidden: Optional[list] = None, stamps: bool = True) -> tuple:
    """(rel -> (inode, size, mtime_ns, ctime_ns) of every regular .c/.h file as the tree
    search sees them, whether every directory could be listed and every file's stamp
    taken); hidden, when given, gets the rel paths of the hidden directories it skipped
    (.git aside), as the engine names them in its note (a symbolic link to a directory
    counts, as for os.walk). stamps False: the files without their stamps (None)."""
    out: dict = {}
    whole = _walk(str(root), "", out, hidden, stamps)
    return out, whole


def split(root: Path, jobs: int) -> Optional[Callable[[], tuple]]:
    """The walk of root shared with a forked process (see the module's text), started: a
    function that ends it and gives (files, whole, hidden) as walk() with stamps does;
    None when the walk is not shared (one job, no fork, another thread running that a fork
    would copy stopped, too many directories) and nothing was started."""
    if jobs < 2 or not hasattr(os, "fork") or threading.active_count() > 1:
        return None
    out: dict = {}
    hidden: list = []
    units: list = []
    whole = _walk(str(root), "", out, hidden, True, units)
    if len(units) > MAX_UNITS:
        return None
    rfd, wfd = os.pipe()
    try:
        left = memoryview(b"".join(_UNIT.pack(n) for n in range(len(units))))
        while left:
            left = left[os.write(wfd, left):]
    except OSError:
        os.close(rfd)
        return None
    finally:
        os.close(wfd)

    def theirs(_share) -> bytes:
        got: dict = {}
        gone: list = []
        ok = _take(rfd, units, got, gone)
        return json.dumps([ok, gone, *stamps_to(got)]).encode()
    try:
        child = tools.fork(theirs, None)
    except OSError:
        os.close(rfd)
        return None

    def ended() -> tuple:
        mine: Optional[bool] = None
        try:
            mine = _take(rfd, units, out, hidden)
        except OSError:
            pass
        finally:
            os.close(rfd)
        try:
            got = child.answer() if mine is not None else None
        finally:
            child.reap()
        answer = _unpacked(got) if got is not None else None
        if answer is None or mine is None:  # (which directories each took is not known: the walk again, here)
            again: list = []
            files, complete = walk(root, again)
            return files, complete, again
        ok, gone, files = answer
        out.update(files)
        return out, whole and mine and ok, hidden + gone
    return ended


def _take(rfd: int, units: list, out: dict, hidden: list) -> bool:
    """Walk the directories of units whose numbers this process reads from the pipe rfd,
    until it is empty; False when one could not be walked whole."""
    whole = True
    while True:
        got = os.read(rfd, _UNIT.size)
        if len(got) < _UNIT.size:
            return whole
        path, rel = units[_UNIT.unpack(got)[0]]
        whole = _walk(path, rel, out, hidden, True) and whole


def _unpacked(data: bytes) -> Optional[tuple]:
    """(whole, hidden, files) of what split()'s child wrote; None when it is not that."""
    try:
        doc = safeio.parse_json(data)
        if type(doc) is not list or len(doc) != 5 or type(doc[0]) is not bool or type(doc[1]) is not list \
                or any(type(h) is not str for h in doc[1]):
            return None
        return doc[0], doc[1], stamps_from(*doc[2:])
    except (safeio.InputRefused, codec.Invalid):
        return None


def _walk(path: str, prefix: str, out: dict, hidden: Optional[list], stamps: bool,
          units: Optional[list] = None) -> bool:
    """Add the files below the directory path (rel prefix) to out, as walk() does; with
    units, the directories two levels below path are added to units, (path, rel prefix),
    rather than walked. False when a directory could not be listed or a stamp taken."""
    whole = True

    def listing(at: str) -> list:
        nonlocal whole
        try:
            with os.scandir(at) as it:
                return list(it)
        except OSError:
            whole = False
            return []

    # A directory's entries in order, a subdirectory's before the rest of its parent's: a
    # stack of the directories being listed, not of calls (a tree may be thousands deep).
    stack = [(iter(listing(path)), prefix, 0)]
    while stack:
        entry = next(stack[-1][0], None)
        if entry is None:
            stack.pop()
            continue
        rel, depth = stack[-1][1], stack[-1][2]
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
                if units is not None and depth == 1:
                    units.append((entry.path, rel + name + "/"))
                else:
                    stack.append((iter(listing(entry.path)), rel + name + "/", depth + 1))
            elif name.endswith((".c", ".h")) and entry.is_file(follow_symlinks=False):
                if not stamps:
                    out[rel + name] = None
                    continue
                out[rel + name] = stamp_of(entry.stat(follow_symlinks=False))
        except OSError:
            whole = False
    return whole


def stamp_of(st) -> tuple:
    """A file's stamp, as the walk records it and the index compares it: (inode, size,
    mtime, ctime), the last two in nanoseconds. A rewrite that restores the mtime still moves
    the ctime."""
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def stamps_to(stamps: dict) -> tuple:
    """The stamps as the names of the files with one (NUL-separated), their stamps packed
    (_STAMP, base64), and the names of the files without."""
    known = [(rel, st) for rel, st in stamps.items() if st is not None]
    packed = b"".join(_STAMP.pack(*st) for _, st in known)
    return ("\0".join(rel for rel, _ in known), base64.b64encode(packed).decode(),
            "\0".join(rel for rel, st in stamps.items() if st is None))


def stamps_from(files, packed, unknown) -> dict:
    """The stamps stamps_to() packed; codec.Invalid when they are not that."""
    if type(files) is not str or type(packed) is not str or type(unknown) is not str \
            or not codec.text_ok(files) or not codec.text_ok(unknown):
        raise codec.Invalid("stamps")
    try:
        raw = base64.b64decode(packed, validate=True)
    except ValueError:
        raise codec.Invalid("stamps") from None
    names = files.split("\0") if files else []
    if len(raw) != _STAMP.size * len(names):
        raise codec.Invalid("stamps")
    out: dict = dict(zip(names, _STAMP.iter_unpack(raw)))
    out.update(dict.fromkeys(unknown.split("\0") if unknown else []))
    return out
