"""The tree as a patch series leaves it, in memory: each file's lines after the series, each
added line with the patch and hunk that added it (Origin). Hunks apply with exact context,
offsets allowed, no fuzz; nothing from a patch is executed and the tree is never written.
Without a tree (reduced mode) only what the hunks show is known."""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from wqlint import errors
from wqlint.scan.source import SourceError, read_source


class ReviewError(errors.WqlintError):
    """The series cannot be reviewed (a hunk does not apply, a file cannot be read): exit 3."""


@dataclass(frozen=True)
class Origin:
    """Where an added line comes from: patch number (1-based), file diff, hunk, hunk line."""

    patch: int
    file: int  # index into Patch.files
    hunk: int  # index into FileDiff.hunks
    line: int  # index into Hunk.lines


@dataclass
class _Line:
    text: Optional[str]  # None: a line of the base no hunk has shown (reduced mode)
    base: Optional[int]  # 1-based line in the file before the series; None for added lines
    origin: Optional[Origin] = None
    after_removed: Optional[Origin] = None  # a kept line right after lines a hunk removed


@dataclass
class _File:
    lines: list
    exists: bool
    eol: bool = True  # ends with a newline
    sparse: bool = False  # reduced mode: only what the hunks show is known
    next_base: int = 1
    base_text: dict = field(default_factory=dict)  # base line -> text, learnt from hunks
    base_exists: bool = True
    touched: bool = False

    def ensure(self, upto: int) -> None:
        """Reduced mode: unknown base lines up to index upto (exclusive) exist."""
        while self.sparse and len(self.lines) < upto:
            self.lines.append(_Line(None, self.next_base))
            self.next_base += 1


class PatchedTree:
    """The files the series touches, before and after, each line with its origin."""

    def __init__(self, tree: Optional[Path], reader=None):
        self.tree = tree
        self.reader = reader  # path, patch -> bytes or None; default: the tree's file
        self.files: dict = {}  # path -> _File
        self.renames: dict = {}  # path before the series -> path after it

    def get(self, path: str, patch) -> _File:
        got = self.files.get(path)
        if got is not None:
            return got
        if self.tree is None:
            got = _File([], exists=True, sparse=True)
        else:
            data = self.reader(path, patch) if self.reader else _read_tree_file(self.tree, path, patch)
            if data is None:
                got = _File([], exists=False, base_exists=False)
            else:
                text = data.decode("utf-8")
                eol = text.endswith("\n") or text == ""
                rows = text.split("\n")
                if eol:
                    rows.pop()
                got = _File([_Line(t, n) for n, t in enumerate(rows, 1)], exists=True, eol=eol,
                            next_base=len(rows) + 1, base_text={})
        self.files[path] = got
        return got

    def apply(self, patch) -> None:
        # git copies a file as it was before the patch, although the patch may also edit it
        # (a function moved out of a file into a new one: the edit, then the copy).
        before = {}
        for fdiff in patch.files:
            if fdiff.copy and fdiff.old_path not in before:
                src = self.get(fdiff.old_path, patch)
                before[fdiff.old_path] = _File([_Line(ln.text, ln.base, ln.origin) for ln in src.lines], src.exists,
                                               src.eol, src.sparse, src.next_base, dict(src.base_text))
        for fi, fdiff in enumerate(patch.files):
            if fdiff.binary:
                raise ReviewError(f"{patch.name}: {fdiff.path}: binary patches are not supported")
            if fdiff.old_path is None:  # created
                state = self.get(fdiff.new_path, patch)
                if state.exists and not state.sparse:
                    raise ReviewError(f"{patch.name}: {fdiff.new_path}: already exists in the tree")
                if state.sparse and not state.touched:
                    state.base_exists = False
                state.lines, state.exists, state.sparse, state.eol = [], True, False, True
            else:
                state = (before.get(fdiff.old_path) if fdiff.copy else None) or self.get(fdiff.old_path, patch)
                if not state.exists:
                    raise ReviewError(f"{patch.name}: {fdiff.old_path}: no such file in the tree")
                if fdiff.copy:  # the copy starts as the source's lines; the source stays
                    target = self.get(fdiff.new_path, patch)
                    if target.exists and not target.sparse:
                        raise ReviewError(f"{patch.name}: {fdiff.new_path}: the copy's target exists")
                    state = _File([_Line(ln.text, ln.base, ln.origin) for ln in state.lines], True,
                                  state.eol, state.sparse, state.next_base, dict(state.base_text),
                                  base_exists=False)
                    self.files[fdiff.new_path] = state
            state.touched = True
            delta = 0
            for hi, hunk in enumerate(fdiff.hunks):
                delta = self._apply_hunk(patch, fi, fdiff, hi, hunk, state, delta)
            if fdiff.new_path is None:  # deleted
                if state.lines and not state.sparse:
                    raise ReviewError(f"{patch.name}: {fdiff.old_path}: deleted, but lines remain "
                                      f"after its hunks")
                state.lines, state.exists = [], False
            elif fdiff.old_path is not None and fdiff.old_path != fdiff.new_path and not fdiff.copy:
                target = self.get(fdiff.new_path, patch)
                if target.exists and not target.sparse:
                    raise ReviewError(f"{patch.name}: {fdiff.new_path}: the rename's target exists")
                # The lines keep their base numbers, which belong to the old path's base.
                self.files[fdiff.new_path] = _File(state.lines, True, state.eol, state.sparse,
                                                   state.next_base, state.base_text,
                                                   base_exists=False, touched=True)
                state.lines, state.exists = [], False
                earlier = [old for old, new in self.renames.items() if new == fdiff.old_path]
                for old in earlier:  # renamed again
                    self.renames[old] = fdiff.new_path
                if not earlier:
                    self.renames[fdiff.old_path] = fdiff.new_path

    def _apply_hunk(self, patch, fi, fdiff, hi, hunk, state: _File, delta: int) -> int:
        old = [text for op, text in hunk.lines if op != "+"]
        want = (hunk.old_start if hunk.old_count == 0 else hunk.old_start - 1) + delta
        where = f"{patch.name}: {fdiff.path}: hunk #{hunk.number} ({hunk.header.split(' @@')[0]} @@)"
        if state.sparse:
            state.ensure(want + len(old))
            candidates = [want]
        else:
            span = len(state.lines) - len(old)
            # the file's own positions, nearest first (not every distance up to a line number
            # the patch may have made up: @@ -100000000 @@)
            candidates = [want] + sorted((p for p in range(0, span + 1) if p != want),
                                         key=lambda p: (abs(p - want), p > want))
        pos = next((p for p in candidates if self._matches(state, p, old)), None)
        if pos is None:
            raise ReviewError(f"{where} does not apply: {_mismatch(state, want, old, fdiff.path)}")
        new_lines = []
        k = pos
        removed = False
        for li, (op, text) in enumerate(hunk.lines):
            if op == "+":
                new_lines.append(_Line(text, None, Origin(patch.number, fi, hi, li)))
                removed = False
                continue
            cur = state.lines[k]
            k += 1
            if cur.text is None:
                cur.text = text
                state.base_text[cur.base] = text
            if op == " ":
                if removed:  # what a removal changed shows on the line that follows it
                    cur.after_removed = Origin(patch.number, fi, hi, li)
                removed = False
                new_lines.append(cur)
            else:
                removed = True
        tail = pos + len(old) == len(state.lines)
        state.lines[pos:pos + len(old)] = new_lines
        if tail and not state.sparse:
            state.eol = not hunk.new_no_eol
        return delta + hunk.new_count - hunk.old_count + (pos - want)

    @staticmethod
    def _matches(state: _File, pos: int, old: list) -> bool:
        if pos < 0 or pos + len(old) > len(state.lines):
            return False
        return all(state.lines[pos + k].text in (None, text) for k, text in enumerate(old))

    # -- the result ---------------------------------------------------------------------------
    def after(self) -> tuple[dict[str, bytes | None], dict[str, dict[int, Origin]]]:
        """path -> bytes after the series (None: deleted), and path -> {line: Origin} of the
        lines the series changed (added, or kept right after removed lines)."""
        data: dict[str, bytes | None] = {}
        added: dict[str, dict[int, Origin]] = {}
        for path, state in self.files.items():
            if not state.touched:
                continue
            if not state.exists:
                data[path] = None
                continue
            rows = [ln.text or "" for ln in state.lines]
            data[path] = ("\n".join(rows) + ("\n" if rows and state.eol else "")).encode("utf-8")
            added[path] = {n: ln.origin or ln.after_removed for n, ln in enumerate(state.lines, 1)
                           if ln.origin or ln.after_removed}
        return data, added

    def base(self) -> dict:
        """Reduced mode: path -> bytes of what the hunks show of each file before the series."""
        out = {}
        for path, state in self.files.items():
            if not state.base_exists or not state.base_text:
                continue
            last = max(state.base_text)
            out[path] = ("\n".join(state.base_text.get(n, "") for n in range(1, last + 1))
                         + "\n").encode("utf-8")
        return out


def _mismatch(state: _File, pos: int, old: list, path: str) -> str:
    """Why the hunk does not fit at its own position, in words."""
    for k, text in enumerate(old):
        if pos + k >= len(state.lines):
            return f"{path} has {len(state.lines)} lines, the hunk needs {pos + len(old)}"
        have = state.lines[pos + k].text
        if have != text:
            return (f"{path}:{pos + k + 1} is {_short(have)}, the hunk expects {_short(text)} "
                    f"(and no other place matches)")
    return "its context matches nowhere"


def _short(text: str, width: int = 60) -> str:
    text = text.strip()
    return repr(text if len(text) <= width else text[:width - 3] + "...")


def _read_tree_file(tree: Path, path: str, patch) -> Optional[bytes]:
    """A file of the user's tree, or None when absent; never through a symbolic link."""
    cur = tree
    parts = path.split("/")
    for n, part in enumerate(parts):
        cur = cur / part
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ReviewError(f"{patch.name}: {path}: {exc.strerror or exc}") from None
        if stat.S_ISLNK(st.st_mode):
            raise ReviewError(f"{patch.name}: {path}: refusing to patch through the symbolic "
                              f"link {'/'.join(parts[:n + 1])} in the tree")
        if n < len(parts) - 1 and not stat.S_ISDIR(st.st_mode):
            return None
    if not stat.S_ISREG(st.st_mode):
        raise ReviewError(f"{patch.name}: {path}: not a regular file in the tree")
    try:
        return read_source(cur)  # bounded, NUL-free UTF-8, as the scanner reads every file
    except SourceError as exc:
        raise ReviewError(f"{patch.name}: {path}: {exc} in the tree") from None


def patch_root(treepath: Path, patches) -> Path:
    """The directory the patches' paths are relative to: --tree, or, when it names a directory
    inside a kernel tree and the files the patches change are not there but at the kernel
    tree's top (as git writes paths), that top."""
    from wqlint.scan.targets import kernel_tree_of

    top = kernel_tree_of(treepath)
    if top is None or top == treepath:
        return treepath
    old = [f.old_path for p in patches for f in p.files if f.old_path]
    if any(os.path.lexists(treepath / rel) for rel in old):
        return treepath
    if not old or any(os.path.lexists(top / rel) for rel in old):
        return top
    return treepath


def _reversed(patch):
    """The patch that undoes patch: files in reverse order, each hunk's sides swapped."""
    import dataclasses

    def hunk(h):
        return dataclasses.replace(
            h, old_start=h.new_start, old_count=h.new_count, new_start=h.old_start,
            new_count=h.old_count, old_no_eol=h.new_no_eol, new_no_eol=h.old_no_eol,
            lines=tuple(({"+": "-", "-": "+"}.get(op, op), text) for op, text in h.lines))
    files = []
    for f in reversed(patch.files):
        files.append(dataclasses.replace(f, old_path=f.new_path, new_path=f.old_path,
                                         hunks=tuple(hunk(h) for h in f.hunks)))
    return dataclasses.replace(patch, files=tuple(files))


def base_without(patches, tree: Path, base_reader):
    """A base reader giving the files of tree as they were before the series, when tree
    already has the series (each patch undone cleanly, last first); else None."""
    if any(f.copy for p in patches for f in p.files):
        return None  # (a copy's source may have changed since: not undone)
    undo = PatchedTree(tree, base_reader)
    try:
        for patch in reversed(patches):
            undo.apply(_reversed(patch))
    except ReviewError:
        return None
    before, _ = undo.after()

    def reader(path, patch):
        if path in before:
            return before[path]
        return base_reader(path, patch) if base_reader else _read_tree_file(tree, path, patch)
    return reader


# -- the review -----------------------------------------------------------------------------
