"""Nearness of files: which definition of a name is the one a file means (its own, its
directory's, the shared headers', its tree root's), and which files are one subsystem, so that
a value is followed only where it can concern the allocation being judged."""
from __future__ import annotations

import re

from wqlint.scan.index import TreeIndex, definition_root
from wqlint.scan.kerneltree import KERNEL_PREFIX


def ranked(defs, rel: str) -> list:
    """Definitions by rank (see nearest), all ranks but 'elsewhere'."""
    order = sorted(((rank(d[0].rel, rel), d) for d in defs), key=lambda x: x[0])
    return [d for r, d in order if r < 5]


def rank(r: str, rel: str) -> int:
    directory = rel.rsplit("/", 1)[0] if "/" in rel else ""
    if r == rel:
        return 0
    if directory and r.startswith(directory + "/") and "/" not in r[len(directory) + 1:]:
        return 1
    if not directory and "/" not in r:
        return 1  # both at the top: a module's own directory
    shared = r[len(KERNEL_PREFIX):] if r.startswith(KERNEL_PREFIX) else r
    if shared.startswith("include/") or re.match(r"arch/[^/]+/include/", shared):
        return 2  # the tree's shared headers, or those of the kernel a module builds for
    if r.startswith("<wqlint>/"):
        return 4
    root = definition_root(rel)
    if root != "/*" and r.startswith(root + "/"):
        return 3
    return 5


def nearest(defs, rel: str) -> list:
    """The best-ranked definitions (see rank); none when the only ones are elsewhere."""
    order = sorted(defs, key=lambda d: rank(d[0].rel, rel))
    if not order or rank(order[0][0].rel, rel) == 5:
        return []  # only unrelated definitions elsewhere in the tree: do not guess
    best = rank(order[0][0].rel, rel)
    return [d for d in order if rank(d[0].rel, rel) == best]


def related(a: str, b: str) -> bool:
    """Are two files part of the same subsystem?

    Same directory, one directory inside the other, or siblings one level apart
    (fs/btrfs and fs/btrfs/tests; not drivers/net/ethernet/x and drivers/net/ethernet/y).
    Values found through a shared layer (a PCI helper, a core header) in an unrelated
    driver say nothing about this driver's call, so such paths are not followed.
    """
    da, db = a.split("/")[:-1], b.split("/")[:-1]
    if da == db:
        return True
    n = 0
    while n < min(len(da), len(db)) and da[n] == db[n]:
        n += 1
    if n < 2:
        return False
    return n == len(da) or n == len(db)


def subsystem_occurrences(index: TreeIndex, home: str, name: str, near: str) -> list:
    """(rel, line) of the word name in the files of home's and near's subsystems."""
    files = dict.fromkeys(index.related_files(home) + index.related_files(near))
    return index.word_occurrences_in(files, name)
