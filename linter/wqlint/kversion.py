"""Kernel-version facts: what max_active means on the version being scanned.

v6.6 (636b927eba5b) made unbound max_active per CPU; v6.9 (5797b1c18919) made it
system-wide, split across NUMA nodes by online CPUs. The 6.6.y LTS line got the v6.9 fix in
6.6.23 and lost it again in 6.6.25, so 6.6.y is per CPU. v6.9 (3bc1e711c26b) stopped
treating unbound queues with max_active 1 as ordered. v6.13 raised WQ_MAX_ACTIVE to 2048.
"""
from __future__ import annotations

import re
from pathlib import Path

DEFAULT_VERSION = (6, 12, 0)


def parse_version(text: str) -> tuple:
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?", text.strip())
    if not m:
        raise ValueError(f"'{text}' is not a kernel version like 6.12 or 6.6.30")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def from_makefile(root: Path):
    """(version, 'Makefile') from the tree's top Makefile, or None."""
    from wqlint import safeio

    try:
        # A kernel's top Makefile is some 70 KiB; a FIFO or /dev/zero in its place is refused.
        head = safeio.read_text(root / "Makefile", 4 * 1024 * 1024, errors="replace")[:4096]
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


def wq_max_active(version: tuple) -> int:
    return 2048 if version[:2] >= (6, 13) else 512


def unbound_scope(version: tuple) -> str:
    """'node', 'cpu' or 'system': what an unbound queue's max_active limits."""
    v = version[:2]
    if v < (6, 6):
        return "node"
    if v < (6, 9) or v == (6, 6):
        return "cpu"  # 6.6.y LTS included: the system-wide series was reverted there
    return "system"


def unbound_one_is_ordered(version: tuple) -> bool:
    return unbound_scope(version) != "system"
