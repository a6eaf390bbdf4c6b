"""Writing fixes into the tree: only when asked, only inside it, atomically, and never over
work the user has not committed (in a git tree) unless forced."""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from wqlint.fix.model import FileChange


class ApplyError(Exception):
    """Nothing was written; str() is one line naming the file and the problem."""


def inside(root: Path, rel: str) -> Path:
    """root/rel, refused when it (or a symbolic link on the way) leads outside root."""
    real_root = Path(os.path.realpath(root))
    path = Path(os.path.realpath(root / rel))
    if path != real_root and real_root not in path.parents:
        raise ApplyError(f"{rel}: outside the tree {root}, not written")
    return path


def uncommitted(root: Path, paths: list) -> list:
    """Those of paths (relative) with uncommitted changes, when root is in a git work tree."""
    try:
        top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if top.returncode != 0:
        return []
    got = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "-z", "--", *paths],
                         capture_output=True, text=True, timeout=300)
    dirty = set()
    top_dir = Path(top.stdout.strip())
    for entry in got.stdout.split("\0"):
        if len(entry) > 3:
            dirty.add(os.path.relpath(top_dir / entry[3:], os.path.realpath(root)).replace(os.sep, "/"))
    return [p for p in paths if p in dirty]


def apply(root: Path, changes: list, force: bool = False) -> list:
    """Write every change, or none: all files are checked first (inside the tree, unchanged
    since they were read, committed unless force), then each is replaced atomically."""
    targets = []
    for change in changes:
        path = inside(root, change.path)
        try:
            current = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ApplyError(f"{change.path}: cannot read: {exc}") from None
        if current != change.before:
            raise ApplyError(f"{change.path}: changed since it was scanned, not written; scan again")
        targets.append((path, change))
    if not force:
        dirty = uncommitted(root, [c.path for c in changes])
        if dirty:
            raise ApplyError(f"{dirty[0]}: has uncommitted changes ({len(dirty)} file(s) in all); "
                             "commit or stash them, or use --force")
    written = []
    for path, change in targets:
        write_atomic(path, change.after)
        written.append(change.path)
    return written


def write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".wqlint")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
