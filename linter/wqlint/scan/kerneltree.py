"""The kernel an out-of-tree module builds for (--kernel-tree DIR, or KDIR as Kbuild users
set it): where its headers are and which version it is.

DIR may be a kernel source tree, an O= build directory or a `/lib/modules/*/build`-style
headers directory. Such a directory may hold only part of the kernel: an O= build directory
and Debian's `linux-headers-VERSION-FLAVOUR` hold the generated headers and a Makefile that
includes the real one, and the rest (include/, arch/*/include/) is in the source tree
(the `source` link of an O= directory, the Makefile's `include`, or Debian's sibling
`linux-headers-VERSION-common`). Every such root is searched, DIR's own first.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from wqlint import errors, safeio

# Files of the kernel are shown and looked up under this prefix: they are no part of the
# scanned tree (never a target, never fixed), like wqlint's own <wqlint>/ description.
KERNEL_PREFIX = "<kernel>/"
_NOT_KERNEL = frozenset({"Documentation", "samples", "scripts", "tools", "usr"})


class KernelTreeError(errors.WqlintError, status=errors.USAGE):
    """DIR is not a kernel tree; str() is the one-line problem."""


@dataclass
class KernelTree:
    given: str  # as the user named it
    roots: list  # absolute Paths, DIR first
    version: Optional[tuple] = None
    version_from: str = ""  # the file the version was read from
    _include_dirs: Optional[list] = field(default=None, repr=False)

    def find(self, rel: str) -> Optional[Path]:
        """The file rel (relative to the kernel's top) in the first root that has it."""
        for root in self.roots:
            path = root / rel
            if path.exists():
                return path
        return None

    def include_dirs(self) -> list:
        """rel paths of the shared header directories: include/ and arch/*/include/."""
        if self._include_dirs is None:
            found = set()
            for root in self.roots:
                if (root / "include").is_dir():
                    found.add("include")
                arch = root / "arch"
                if arch.is_dir():
                    found.update(f"arch/{p.parent.name}/include" for p in arch.glob("*/include") if p.is_dir())
            self._include_dirs = sorted(found)
        return self._include_dirs

    def source_dirs(self) -> list:
        """The top-level directories of its roots (arch, block, fs...): the whole kernel but
        its tools, scripts and samples (programs of their own, not the kernel's code)."""
        found: set[str] = set()
        for root in self.roots:
            if root.is_dir():
                found.update(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
                             and p.name not in _NOT_KERNEL)
        return sorted(found)

    def describe(self) -> str:
        return self.given if len(self.roots) == 1 else \
            f"{self.given} (with {', '.join(str(r) for r in self.roots[1:])})"


def open_tree(directory: str) -> KernelTree:
    """The kernel at directory; KernelTreeError when it is none."""
    path = Path(os.path.abspath(directory))
    if not path.is_dir():
        raise KernelTreeError(f"--kernel-tree {directory}: no such directory")
    roots = [path]
    for extra in _other_roots(path):
        if extra not in roots:
            roots.append(extra)
    tree = KernelTree(directory, roots)
    if tree.find("include/linux/workqueue.h") is None:
        raise KernelTreeError(f"--kernel-tree {directory}: not a kernel tree or headers directory "
                              "(no include/linux/workqueue.h there or in its source)")
    tree.version, tree.version_from = _version(roots)
    return tree


def _other_roots(path: Path) -> list:
    out = []
    source = path / "source"  # an O= build directory links its source tree
    if source.is_dir() and (source / "Makefile").is_file():
        out.append(source.resolve())
    try:
        makefile = safeio.read_head(path / "Makefile", 8192).decode("utf-8", "replace")
    except safeio.InputRefused:
        makefile = ""
    # The Makefile of an O= directory or of Debian's flavour headers includes the real one.
    for m in re.finditer(r"^[^\S\n]*-?include\s+(\S+)/Makefile\s*$", makefile, re.M):
        candidate = Path(m.group(1)) if os.path.isabs(m.group(1)) else path / m.group(1)
        if (candidate / "Makefile").is_file():
            out.append(candidate.resolve())
    # Debian: linux-headers-6.12.57+deb13-amd64 beside linux-headers-6.12.57+deb13-common.
    name = path.resolve().name
    parts = name.split("-")
    for n in range(len(parts) - 1, 1, -1):
        common = path.resolve().parent / ("-".join(parts[:n]) + "-common")
        if common.is_dir() and common != path.resolve():
            out.append(common)
            break
    return out


def _version(roots: list):
    """(version, file it is read from): the top Makefile of a source tree, else the release
    string of a configured one (include/generated/utsrelease.h, include/config/kernel.release)."""
    from wqlint import kversion

    for root in roots:
        found = kversion.from_makefile(root)
        if found:
            return found, str(root / "Makefile")
    for root in roots:
        for rel, pattern in (("include/generated/utsrelease.h", r'UTS_RELEASE\s+"(\d+)\.(\d+)(?:\.(\d+))?'),
                             ("include/config/kernel.release", r"^(\d+)\.(\d+)(?:\.(\d+))?")):
            try:
                text = safeio.read_head(root / rel, 4096).decode("utf-8", "replace")
            except safeio.InputRefused:
                continue
            m = re.search(pattern, text, re.M)
            if m:
                return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)), str(root / rel)
    return None, ""
