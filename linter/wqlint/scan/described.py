"""The tree's description (scan.description) kept between runs, beside the tree's index
(scan.store), so that a scan after an edit, or of one directory, does not search the whole
tree again for it.

What is kept is the output of the description's two searches, as ripgrep printed it, with
the stamps of the tree's files when they ran (as the index records them: Store.stamps). A
later run compares them with the stamps its walk of the tree took: the files whose stamp
differs (or is unknown), added or gone, at most MAX_CHANGED of them, are read from the
tree as a file held in memory is, in place of what the searches printed for them, and the
result is kept again for the stamps of now; past MAX_CHANGED the searches run again.

The file is data only: one header line (a magic word, the format, the BLAKE2b digest of the
rest), then three parts (the stamps, and the two outputs), each compressed (zlib) and
preceded by its length; read through the guarded opener from the index's own private
directory, at most MAX_FILE_BYTES, each part decompressed to at most MAX_SEARCH_OUTPUT, the
stamps through the index's own reader of them, and written through the atomic writer.
Anything else means searching the tree.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
import threading
import zlib
from typing import Optional

from wqlint import safeio
from wqlint.scan import codec
from wqlint.scan.search import MAX_SEARCH_OUTPUT
from wqlint.scan.store import private_dir
from wqlint.scan.treewalk import stamps_from, stamps_to

MAGIC = b"wqlint-description"
FORMAT = 2
MAX_FILE_BYTES = 128 * 1024 * 1024
MAX_CHANGED = 2000  # files read again in Python, at most, in place of a search of the tree
_LENGTH = struct.Struct(">Q")


def load(store) -> Optional[tuple]:
    """(the initialisers' output, the headers' output, the files changed since) of the kept
    description, when it can be used (see the module's docstring); None when it cannot."""
    if store is None or not _own(store):
        return None
    store.wait()
    if not store.whole:
        return None
    try:
        raw = safeio.read_bytes(_path(store), MAX_FILE_BYTES)
    except (OSError, safeio.InputRefused):
        return None
    head, nl, body = raw.partition(b"\n")
    parts = head.split(b" ")
    if not nl or len(parts) != 3 or parts[0] != MAGIC or parts[1] != str(FORMAT).encode() \
            or parts[2] != hashlib.blake2b(body, digest_size=32).hexdigest().encode():
        return None
    outs: list = []
    at = 0
    while at < len(body) and len(outs) < 3:
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
    if at != len(body) or len(outs) != 3:
        return None
    try:
        doc = safeio.parse_json(outs[0])
        if type(doc) is not list or len(doc) != 3:
            return None
        then = stamps_from(*doc)
    except (codec.Invalid, safeio.InputRefused, ValueError, RecursionError):
        return None
    now = store.stamps
    changed = {rel for rel, st in now.items() if st is None or then.get(rel) != st}
    changed |= then.keys() - now.keys()
    if len(changed) > MAX_CHANGED:
        return None
    return outs[1], outs[2], changed


def keep(store, inits: bytes, headers: bytes) -> Optional[threading.Thread]:
    """Write the description's two outputs beside the index, with the stamps its walk took,
    in a thread (compressing releases the interpreter: it runs while the outputs are read),
    which the caller joins; None when nothing is written (no index, or a tree the walk did
    not read whole)."""
    if store is None:
        return None
    store.wait()
    if not store.whole:
        return None
    outs = [json.dumps(list(stamps_to(store.stamps)), separators=(",", ":")).encode(), inits, headers]

    def write() -> None:  # (each part let go once compressed)
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
            safeio.write_atomic(_path(store), b"%s %d %s\n" % (
                MAGIC, FORMAT, hashlib.blake2b(body, digest_size=32).hexdigest().encode()) + body)
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
