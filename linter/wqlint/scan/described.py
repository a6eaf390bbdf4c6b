"""The tree's description (scan.description) kept between runs, beside the tree's index
(scan.store), so that a scan after an edit, or of one directory, does not search the whole
tree again for it.

What is kept is the output of the description's two searches, as ripgrep printed it, with
the digest of the index's stamps of the tree's files when they ran (Store.stamps). It is
used only by a run whose index was read with those very stamps: the files changed since are
then the index's own (Store.changed), and the description reads them from the tree, as it
reads a file held in memory, in place of what the searches printed for them (at most
MAX_CHANGED of them; past that the searches run again).

The file is data only: one header line (a magic word, the format, the digest of the stamps,
the BLAKE2b digest of the rest), then the two outputs, each compressed (zlib) and preceded
by its length; read through the guarded opener from the index's own private directory, at
most MAX_FILE_BYTES, each output decompressed to at most MAX_SEARCH_OUTPUT, and written
through the atomic writer. Anything else means searching the tree.
"""
from __future__ import annotations

import hashlib
import os
import struct
import stat
import threading
import zlib
from typing import Optional

from wqlint import safeio
from wqlint.scan.search import MAX_SEARCH_OUTPUT
from wqlint.scan.store import private_dir

MAGIC = b"wqlint-description"
FORMAT = 1
MAX_FILE_BYTES = 128 * 1024 * 1024
MAX_CHANGED = 2000  # files read again in Python, at most, in place of a search of the tree
_LENGTH = struct.Struct(">Q")


def stamps_digest(stamps: dict) -> str:
    """The digest of the index's stamps of the tree's files ({rel: stamp or None})."""
    h = hashlib.blake2b(digest_size=16)
    for rel in sorted(stamps):
        st = stamps[rel]
        h.update(b"%s\0%s\n" % (rel.encode("utf-8", "surrogateescape"),
                                 b"-" if st is None else b",".join(b"%d" % int(v) for v in st)))
    return h.hexdigest()


def load(store) -> Optional[tuple]:
    """(the initialisers' output, the headers' output, the files changed since) of the kept
    description, when it can be used (see the module's docstring); None when it cannot."""
    if store is None or not store.loaded or not store.whole or len(store.changed) > MAX_CHANGED \
            or not _own(store):
        return None
    try:
        raw = safeio.read_bytes(_path(store), MAX_FILE_BYTES)
    except (OSError, safeio.InputRefused):
        return None
    head, nl, body = raw.partition(b"\n")
    parts = head.split(b" ")
    if not nl or len(parts) != 4 or parts[0] != MAGIC or parts[1] != str(FORMAT).encode() \
            or parts[2] != stamps_digest(store.read_stamps).encode() \
            or parts[3] != hashlib.blake2b(body, digest_size=32).hexdigest().encode():
        return None
    outs, at = [], 0
    for _ in range(2):
        if at + _LENGTH.size > len(body):
            return None
        (size,) = _LENGTH.unpack_from(body, at)
        at += _LENGTH.size
        if size > len(body) - at:
            return None
        try:
            outs.append(safeio.inflate(body[at:at + size], MAX_SEARCH_OUTPUT))
        except safeio.InputRefused:
            return None
        at += size
    if at != len(body):
        return None
    return outs[0], outs[1], set(store.changed)


def keep(store, inits: bytes, headers: bytes) -> Optional[threading.Thread]:
    """Write the description's two outputs beside the index, for the stamps the index holds
    now, in a thread (compressing releases the interpreter: it runs while the outputs are
    read), which the caller joins before it forks; None when nothing is written (no index,
    or a tree the walk did not read whole)."""
    if store is None:
        return None
    store.wait()
    if not store.whole:
        return None
    basis = stamps_digest(store.stamps)

    outs = [inits, headers]  # (each let go once compressed)

    def write() -> None:
        try:
            parts = []
            while outs:
                packed = zlib.compress(outs.pop(0), 1)
                parts += [_LENGTH.pack(len(packed)), packed]
            body = b"".join(parts)
            store.make_dir()
            if not private_dir(store.dir) or (os.path.lexists(_path(store)) and not _own(store)):
                return
            store.beside.append(_path(store))
            safeio.write_atomic(_path(store), b"%s %d %s %s\n" % (
                MAGIC, FORMAT, basis.encode(), hashlib.blake2b(body, digest_size=32).hexdigest().encode()) + body)
            safeio.remove_stale_temps(_path(store))  # of a run that was killed while writing it
        except (OSError, safeio.OutputRefused, MemoryError):
            pass  # carried on without it, as for the index
    thread = threading.Thread(target=write, name="wqlint-description-keep", daemon=True)
    thread.start()
    return thread


def _path(store):
    return store.dir / f"{store.name}.description"


def _own(store) -> bool:
    """Is the kept description a regular file of the user's that nobody else may write, in
    the index's private directory (as scan.store requires of the index)?"""
    try:
        if not private_dir(store.dir):
            return False
        st = os.lstat(_path(store))
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022
