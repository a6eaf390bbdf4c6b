"""The files a kept scan read, each with the digest of the bytes it read (scan.store.Kept), as
one string: `rel//digest//rel//digest...`, made into a dict when first asked. No name of a
tree's file holds `//` (the walk joins its parts with one `/`), nor does a digest; JSON
writes it as it is, where a NUL would take six characters.

A run whose tree has not changed asks nothing of them, and a scan put aside is asked only
when it may be taken back. On linux-source-7.3 a scan keeps some 40,000 files: its line of the
index took 27-30 ms to read with them as JSON objects; as strings, 8 ms, and 8-11 ms more
to make the dicts when they are asked for.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Optional

from wqlint.scan import codec

SEP = "//"
NONE = "-"  # the digest of a file read without an index (no digest is a '-')


@dataclasses.dataclass(eq=False)
class Digests(Mapping):
    """{rel: digest, '' for bytes not judged whole, None without an index}, read only."""

    packed: str

    def __post_init__(self):
        """codec.Invalid unless packed is pairs of a name and a digest: the checks run at C
        speed, so that reading the index costs no walk of its names."""
        self._map: Optional[dict] = None
        if self.packed and self.packed.count(SEP) % 2 != 1:
            raise codec.Invalid("not pairs of a file and a digest")
        if not self.packed.isascii() and not all(codec.text_ok(rel) for rel in self.packed.split(SEP)[::2]):
            raise codec.Invalid("a file name that is not one")

    @classmethod
    def of(cls, files: Mapping) -> "Digests":
        """codec.Unstorable for a name that holds SEP (none of a tree's files does)."""
        packed = SEP.join(f"{rel}{SEP}{NONE if d is None else d}" for rel, d in files.items())
        if packed.count(SEP) != max(0, 2 * len(files) - 1):
            raise codec.Unstorable("a file name with '//'")
        got = cls(packed)
        got._map = dict(files)
        return got

    def _files(self) -> dict:
        got = self._map
        if got is None:
            parts = self.packed.split(SEP) if self.packed else []
            got = self._map = {rel: None if d == NONE else d for rel, d in zip(parts[::2], parts[1::2])}
        return got

    def __getitem__(self, rel: str) -> Optional[str]:
        return self._files()[rel]

    def get(self, rel, default=None):
        return self._files().get(rel, default)

    def __contains__(self, rel) -> bool:
        return rel in self._files()

    def __iter__(self) -> Iterator[str]:
        return iter(self._files())

    def __len__(self) -> int:
        return len(self._files())
