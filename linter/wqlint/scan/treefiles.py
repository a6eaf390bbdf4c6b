"""How the index reads a tree (scan.index): a file's bytes, the C files of a directory, and,
for a review or a fix, the tree with some files changed in memory (Overlay)."""
from __future__ import annotations

import os
from pathlib import Path

from wqlint import safeio
from wqlint.scan.source import MAX_FILE_BYTES, SourceError, read_source, relpath


class TreeFiles:
    """How the index reads the tree: a file's bytes, the C files of a directory, which tree
    files a search of the disk must not answer for, and which files to search in memory."""

    def __init__(self, root: Path):
        self.root = root
        self._real_dirs: dict = {}  # for this run: see safeio.inside()

    def read(self, rel: str) -> bytes:
        """The file's bytes, or SourceError."""
        return read_source(self.root / rel, self.root, self._real_dirs)

    def listdir(self, reldir: str, recursive: bool) -> list:
        """rel paths of the .c/.h files in reldir (and below, when recursive)."""
        base = self.root / reldir if reldir else self.root
        if recursive:
            got: list[str] = []
            for dirpath, dirs, names in safeio.walk(base):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                got.extend(_joined(relpath(Path(dirpath), self.root), n) for n in sorted(names)
                           if n.endswith((".c", ".h")))
            return got
        try:
            # One relative path for the directory, not one for each file (os.path.relpath is slow).
            prefix = relpath(base, self.root)
            return sorted(_joined(prefix, e.name) for e in os.scandir(base)
                          if e.name.endswith((".c", ".h")) and e.is_file())
        except OSError:
            return []

    def replaced(self, rel: str) -> bool:
        """Is the disk's copy of rel not the file (a search hit in it does not count)?"""
        return False

    def deleted(self, rel: str) -> bool:
        """Is rel gone, though the disk may still have it?"""
        return False

    def in_memory(self) -> dict:
        """rel -> bytes of files that are searched in memory, not on disk."""
        return {}


class Overlay(TreeFiles):
    """The tree with some files replaced (or deleted: None) by their bytes in memory: what a
    patch series makes of it (wqlint review), without writing anything."""

    def __init__(self, root: Path, changes: dict):
        super().__init__(root)
        self.changes = dict(changes)

    def read(self, rel: str) -> bytes:
        if rel not in self.changes:
            return super().read(rel)
        data = self.changes[rel]
        if data is None:
            raise SourceError("no such file")
        if len(data) > MAX_FILE_BYTES:
            raise SourceError(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
        if b"\0" in data:
            raise SourceError("binary file (contains NUL bytes)")
        return data

    def listdir(self, reldir: str, recursive: bool) -> list:
        got = [rel for rel in super().listdir(reldir, recursive) if rel not in self.changes]
        for rel, data in self.changes.items():
            parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
            if data is not None and rel.endswith((".c", ".h")) and (
                    parent == reldir or (recursive and (reldir == "" or rel.startswith(reldir + "/")))):
                got.append(rel)
        return sorted(got)

    def replaced(self, rel: str) -> bool:
        return rel in self.changes

    def deleted(self, rel: str) -> bool:
        return rel in self.changes and self.changes[rel] is None

    def in_memory(self) -> dict:
        return {rel: data for rel, data in self.changes.items() if data is not None}


def _joined(reldir: str, name: str) -> str:
    """relpath() of a file name in the directory whose relpath() is reldir."""
    return name if reldir == "." else reldir + "/" + name
