"""Writing fixes into the tree: only when asked, only inside it, atomically, and never over
work the user has not committed (in a git tree) unless forced."""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from wqlint import errors, safeio, tools
from wqlint.scan.source import MAX_FILE_BYTES


class ApplyError(errors.WqlintError, status=errors.FINDINGS):
    """Nothing was written; str() is one line naming the file and the problem."""


def inside(root: Path, rel: str) -> Path:
    """root/rel, refused when it (or a symbolic link on the way) leads outside root. The path
    as given, not its real path: the writer follows its links only as safeio.resolve() does."""
    real_root = Path(os.path.realpath(root))
    path = Path(os.path.realpath(root / rel))
    if path != real_root and real_root not in path.parents:
        raise ApplyError(f"{rel}: outside the tree {root}, not written")
    return root / rel


def _git_top(root: Path):
    """The top of the git work tree holding root: (path, None), (None, None) when there is
    none, or (None, problem) when git cannot say (then uncommitted work cannot be told)."""
    real = Path(os.path.realpath(root))
    marker = next((d for d in [real, *real.parents] if (d / ".git").exists()), None)
    if marker is None:
        return None, None
    try:
        top = tools.git(root, "rev-parse", "--show-toplevel", timeout=60)
    except tools.ToolError as exc:
        return None, f"git cannot be run ({exc})"
    if top.returncode != 0:
        return None, tools.last_line(top, first=True)
    return Path(os.fsdecode(top.stdout.rstrip(b"\n"))), None


def uncommitted(root: Path, paths: list) -> list:
    """Those of paths (relative) with uncommitted changes, when root is in a git work tree:
    the file's bytes are not those of its blob at HEAD (changed, staged, or not in HEAD).
    ApplyError when it is a work tree but git cannot tell (it refuses the repository as of
    dubious ownership, for one): the protection must not silently go away.

    git is asked only for HEAD's blob ids (ls-tree), and the files are hashed here: a
    `git status` would run the repository's core.fsmonitor and its filters' clean commands,
    which the tree configures. (So a file a filter converts counts as changed: --force.)"""
    top_dir, problem = _git_top(root)
    if problem is not None:
        raise ApplyError(f"{root}: in a git work tree, but git cannot tell which files have "
                         f"uncommitted changes: {problem}; use --force to write anyway")
    if top_dir is None or not paths:
        return []
    real_top = os.path.realpath(top_dir)
    names = {p: os.path.relpath(os.path.realpath(root / p), real_top).replace(os.sep, "/") for p in paths}
    head = _head_blobs(top_dir, sorted({n for n in names.values() if not n.startswith("../")}))
    dirty = []
    for p, name in names.items():
        blob = head.get(name)
        if blob is None:
            dirty.append(p)
            continue
        try:
            data = safeio.read_bytes(root / p, MAX_FILE_BYTES, root)
        except safeio.InputRefused as exc:
            raise ApplyError(f"{p}: cannot read: {exc}") from None
        digest = hashlib.new("sha1" if len(blob) == 40 else "sha256", b"blob %d\0" % len(data) + data)
        if digest.hexdigest() != blob:
            dirty.append(p)
    return dirty


def _head_blobs(top: Path, names: list) -> dict:
    """{path relative to top: blob id at HEAD} for those of names that are regular files
    there; {} when there is no HEAD yet."""
    def git(*args):
        try:
            got = tools.git(top, "--literal-pathspecs", *args, timeout=300)
        except tools.ToolError as exc:
            raise ApplyError(f"{top}: {exc}; use --force to write anyway") from None
        return got
    if not names or git("rev-parse", "-q", "--verify", "HEAD^{commit}").returncode != 0:
        return {}
    got = git("ls-tree", "-z", "--full-tree", "HEAD", "--", *names)
    if got.returncode != 0:
        raise ApplyError(f"{top}: git ls-tree failed: {tools.last_line(got)}; use --force to write anyway")
    blobs = {}
    for entry in got.stdout.split(b"\0"):
        if not entry:
            continue
        m = re.fullmatch(rb"(\d{6}) (\w+) ([0-9a-f]{40}|[0-9a-f]{64})\t(.+)", entry, re.S)
        if m is None:
            raise ApplyError(f"{top}: git ls-tree printed {entry[:80]!r}, not an entry; use --force to write anyway")
        if m.group(2) == b"blob" and m.group(1) in (b"100644", b"100755"):
            blobs[os.fsdecode(m.group(4))] = m.group(3).decode()
    return blobs


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
    with safeio.signals_deferred():
        _write_all(root, changes)
    return [c.path for c in changes]


def _write_all(root: Path, changes: list) -> None:
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

