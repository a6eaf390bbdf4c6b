"""The identity of wqlint's own code as it is installed, for the caches that keep results.

The scan index (wqlint.scan.store) and the checker's facts (wqlint.check.facts) keep what one
version of the code resolved. A checkout, an edit or an upgrade that keeps ``__version__``
must not read what other code resolved, so each cache records this identity and drops its
results when it differs. It is a checksum of the package's .py files' names, sizes and
modification times: one stat per file, cheap enough for every checker `make C=1` starts.
"""
from __future__ import annotations

import os
import zlib

from wqlint import safeio

_ID: "str | None" = None


def code_id() -> str:
    global _ID
    if _ID is None:
        package = os.path.dirname(os.path.abspath(__file__))
        entries = []
        for top, dirs, files in safeio.walk(package):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(top, name)
                    st = os.stat(path)
                    rel = os.path.relpath(path, package)
                    entries.append(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}")
        blob = "\n".join(entries).encode()
        _ID = f"{len(entries)}-{zlib.crc32(blob):08x}-{zlib.adler32(blob):08x}"
    return _ID
