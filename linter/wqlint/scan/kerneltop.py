"""Which kernel tree a path is in: the nearest directory at or above it with a Makefile and
include/linux. In plain strings, without pathlib: `wqlint check` asks it for every file
Kbuild compiles, most of which end before the rest of the scanner is imported."""
from __future__ import annotations

import os
from typing import Optional


def kernel_top(path: str) -> Optional[str]:
    """The kernel tree holding path (a file or a directory), or None."""
    cand = path if os.path.isdir(path) else os.path.dirname(path)
    while True:
        here = cand or "."  # (the parent of a relative name: the working directory)
        if os.path.isfile(os.path.join(here, "Makefile")) and os.path.isdir(os.path.join(here, "include", "linux")):
            return here
        parent = os.path.dirname(cand)
        if parent == cand:
            return None
        cand = parent
