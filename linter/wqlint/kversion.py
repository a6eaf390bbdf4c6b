"""The kernel version being scanned: read from a tree's Makefile or given, and shown.

What a version does with a queue is in wqlint.api, with the commits.
"""
from __future__ import annotations

import re
from pathlib import Path

from wqlint.api import NEWEST_VERSION as DEFAULT_VERSION  # noqa: F401 (re-exported)


def parse_version(text: str) -> tuple:
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?", text.strip())
    if not m:
        raise ValueError(f"'{text}' is not a kernel version like 6.12 or 6.6.30")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def from_makefile(root: Path):
    """(version, 'Makefile') from the tree's top Makefile, or None."""
    from wqlint import safeio

    try:
        # The version is in the first lines; a FIFO or /dev/zero in its place is refused.
        head = safeio.read_head(root / "Makefile", 4096).decode("utf-8", "replace")
    except safeio.InputRefused:
        return None
    fields = {}
    for key in ("VERSION", "PATCHLEVEL", "SUBLEVEL"):
        m = re.search(rf"^{key}\s*=\s*(\d+)\s*$", head, re.M)
        if not m:
            return None
        fields[key] = int(m.group(1))
    return fields["VERSION"], fields["PATCHLEVEL"], fields["SUBLEVEL"]


def show(version: tuple) -> str:
    return "v" + ".".join(str(x) for x in version[:2]) + (f".{version[2]}" if version[2] else "")
