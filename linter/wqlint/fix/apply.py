"""Writing fixes into the tree: only when asked, only inside it, atomically, and never over
work the user has not committed (in a git tree) unless forced."""
from __future__ import annotations

import os
import hashlib
import subprocess
from pathlib import Path

from wqlint import safeio
from wqlint.scan.source import MAX_FILE_BYTES


class ApplyError(Exception):
    """Nothing was written; str() is one line naming the file and the problem."""


def inside(root: Path, rel: str) -> Path:
    """root/rel, refused when it (or a symbolic link on the way) leads outside root."""
    real_root = Path(os.path.realpath(root))
    path = Path(os.path.realpath(root / rel))
    if path != real_root and real_root not in path.parents:
        raise ApplyError(f"{rel}: outside the tree {root}, not written")
    return path


def _git_top(root: Path):
    """The top of the git work tree holding root: (path, None), (None, None) when there is
    none, or (None, problem) when git cannot say (then uncommitted work cannot be told)."""
    real = Path(os.path.realpath(root))
    marker = next((d for d in [real, *real.parents] if (d / ".git").exists()), None)
    if marker is None:
        return None, None
    try:
        top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, errors="replace", timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"git cannot be run ({exc})"
    if top.returncode != 0:
        lines = top.stderr.strip().splitlines()
        return None, lines[0] if lines else f"git rev-parse failed ({top.returncode})"
    return Path(top.stdout.strip()), None


def uncommitted(root: Path, paths: list) -> list:
    """Those of paths (relative) with uncommitted changes, when root is in a git work tree.
    ApplyError when it is one but git cannot tell (it refuses the repository as of dubious
    ownership, for one): the protection must not silently go away."""
    top_dir, problem = _git_top(root)
    if problem is not None:
        raise ApplyError(f"{root}: in a git work tree, but git cannot tell which files have "
                         f"uncommitted changes: {problem}; use --force to write anyway")
    if top_dir is None:
        return []
    try:
        got = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "-z", "--", *paths],
                             capture_output=True, text=True, errors="surrogateescape", timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ApplyError(f"{root}: git status failed: {exc}; use --force to write anyway") from None
    if got.returncode != 0:
        first = (got.stderr.strip().splitlines() or [f"exit {got.returncode}"])[0]
        raise ApplyError(f"{root}: git status failed: {first}; use --force to write anyway")
    dirty = set()
    for entry in got.stdout.split("\0"):
        if len(entry) > 3:
            dirty.add(os.path.relpath(top_dir / entry[3:], os.path.realpath(root)).replace(os.sep, "/"))
    return [p for p in paths if p in dirty]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def apply(root: Path, changes: list, force: bool = False) -> list:
    """Write every change, or none. Every file is checked first (inside the tree, a regular
    writable file, committed unless force), the new contents are written beside the files,
    then each file is compared again with what the fix was made from (its content hash)
    immediately before all are renamed into place; a file that changed in between, or a
    rename that fails, leaves every file as it was."""
    if not force:
        dirty = uncommitted(root, [c.path for c in changes])
        if dirty:
            raise ApplyError(f"{dirty[0]}: has uncommitted changes ({len(dirty)} file(s) in all); "
                             "commit or stash them, or use --force")
    staged = safeio.Staged()
    try:
        for change in changes:
            path = inside(root, change.path)
            before = change.before.encode("utf-8", "surrogateescape")
            try:
                current = safeio.read_bytes(path, MAX_FILE_BYTES, root)
            except safeio.InputRefused as exc:
                raise ApplyError(f"{change.path}: cannot read: {exc}") from None
            if _digest(current) != _digest(before):
                raise ApplyError(f"{change.path}: changed since it was scanned, not written; scan again")
            try:
                staged.add(path, change.after.encode("utf-8", "surrogateescape"), before, root)
            except safeio.OutputRefused as exc:
                raise ApplyError(f"{change.path}: {exc}; nothing written") from None
            except OSError as exc:
                raise ApplyError(f"{change.path}: cannot write: {exc.strerror or exc}; nothing written") from None
        names = {os.path.realpath(inside(root, c.path)): c.path for c in changes}

        def unchanged(target, before):
            rel = names.get(str(target), str(target))
            try:
                now = safeio.read_bytes(target, MAX_FILE_BYTES, root)
            except safeio.InputRefused as exc:
                raise ApplyError(f"{rel}: cannot read: {exc}; nothing written") from None
            if _digest(now) != _digest(before):
                raise ApplyError(f"{rel}: changed while the fixes were written; nothing written, scan again")

        try:
            staged.commit(unchanged)
        except OSError as exc:
            name = names.get(os.path.realpath(exc.filename2 or exc.filename or ""), exc.filename2 or "")
            raise ApplyError(f"{name or 'a file'}: cannot replace: {exc.strerror or exc}; nothing written") from None
    finally:
        staged.discard()
    return [c.path for c in changes]

