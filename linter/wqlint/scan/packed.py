"""A map of names to records (bytes to bytes), packed into one string once it is filled.

The work model's tables of a tree hold hundreds of thousands of names, few of them ever
asked about: as a dict of strings each costs a key, a value and a slot (some 100 bytes
beyond its text). Packed, the names are in the order of their hashes, each followed by a
NUL and its records, in one string, found by bisection behind a filter of those hashes.
The hashes are Python's own: the same in a process and in the workers it forks, never
written anywhere.
"""
from __future__ import annotations

import itertools
from array import array
from bisect import bisect_left
from typing import Optional


class Packed:
    """{name: records} (bytes), packed; read only."""

    __slots__ = ("_hashes", "_ends", "_blob", "_seen")

    def __init__(self, named: dict):
        names = sorted(named, key=hash)
        self._hashes = array("q", map(hash, names))
        entries = [name + b"\0" + named[name] for name in names]
        self._blob = b"".join(entries)
        self._ends = array("I" if len(self._blob) < 1 << 32 else "Q", itertools.accumulate(map(len, entries)))
        size = max(64, 8 * len(names))  # one name in eight passes the filter by chance
        seen = bytearray(size)
        for at in {h % size for h in self._hashes}:
            seen[at] = 1
        self._seen = bytes(seen)

    def get(self, name: bytes) -> Optional[bytes]:
        """The records of name, or None."""
        h = hash(name)
        if not self._seen[h % len(self._seen)]:
            return None
        hashes, key = self._hashes, name + b"\0"
        i = bisect_left(hashes, h)
        while i < len(hashes) and hashes[i] == h:
            start = self._ends[i - 1] if i else 0
            if self._blob.startswith(key, start):
                return self._blob[start + len(key):self._ends[i]]
            i += 1
        return None

    def __contains__(self, name: bytes) -> bool:
        seen = self._seen
        return bool(seen[hash(name) % len(seen)]) and self.get(name) is not None

    def __len__(self) -> int:
        return len(self._hashes)
