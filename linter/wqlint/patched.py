"""The tree as a patch series leaves it, in memory: each file's lines after the series, each
added line with the patch and hunk that added it (Origin). Hunks apply with exact context,
offsets allowed, no fuzz; nothing from a patch is executed and the tree is never written.
Without a tree (reduced mode) only what the hunks show is known.

The work is bounded by the input: a file's lines are kept as their texts and two arrays of
numbers (a few bytes a line, not an object), in a gap buffer, so that a hunk costs its own
lines and the distance from the hunk before it; a hunk that is not where its header says is
looked for at ever wider distances around that place, so finding it costs the distance to
where it matches (at worst the file), once per hunk."""
from __future__ import annotations

import os
import stat
from array import array
from dataclasses import dataclass, field, replace
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


def _column(values=()) -> array:
    return array("i", values)


class _Lines:
    """A file's lines as columns: the text; the hunk that changed the line (an index into
    PatchedTree.hunks; -1: none) and the line of that hunk: for an added line the hunk that
    added it and its line (>= 0), for a kept line the last hunk that removed lines right before
    it and -1 - its line. In reduced mode (numbered) also the line in the file before the
    series (1-based; 0: added), for the lines whose text is None: a line no hunk has shown.

    A gap buffer: the lines before the gap in order (left), those after it in reverse order
    (right), so that replacing lines at the gap costs only them, and moving the gap the
    distance moved."""

    def __init__(self, columns: list):
        self.left: list = columns
        self.right: list = [[]] + [_column() for _ in columns[1:]]

    @classmethod
    def of_base(cls, texts: list, numbered: bool = False) -> _Lines:
        """The lines of a file before the series."""
        n = len(texts)
        return cls([texts, _column([-1]) * n, _column([0]) * n] + ([_column(range(1, n + 1))] if numbered else []))

    def __len__(self) -> int:
        return len(self.left[0]) + len(self.right[0])

    def move(self, to: int) -> None:
        """Put the gap before line to (0-based)."""
        gap = len(self.left[0])
        if to < gap:
            for left, right in zip(self.left, self.right):
                right.extend(left[to:][::-1])
                del left[to:]
        elif to > gap:
            keep = len(self.right[0]) - (to - gap)
            for left, right in zip(self.left, self.right):
                left.extend(right[keep:][::-1])
                del right[keep:]

    def columns(self) -> list:
        """The columns of the whole file, in order (the gap moved to its end)."""
        self.move(len(self))
        return self.left

    def texts(self, pos: int, n: int) -> list:
        """The texts of lines pos..pos+n-1 (all inside the file)."""
        texts, gap = self.left[0], len(self.left[0])
        out = texts[pos:min(pos + n, gap)] if pos < gap else []
        if pos + n > gap:
            after, r = self.right[0], len(self.right[0])
            seg = after[r - (pos + n - gap):r - (max(pos, gap) - gap)]
            seg.reverse()
            out += seg
        return out

    def find(self, text: str, lo: int, hi: int) -> list:
        """The lines in lo..hi-1 whose text is text, in order (searched at C speed)."""
        texts, gap = self.left[0], len(self.left[0])
        out = _indexes(texts, text, lo, min(hi, gap))
        if hi > gap:
            after, r = self.right[0], len(self.right[0])
            found = _indexes(after, text, r - (hi - gap), r - (max(lo, gap) - gap))
            out += [gap + r - 1 - i for i in reversed(found)]
        return out

    def take(self, n: int) -> list:
        """Remove the n lines after the gap; their columns, in order."""
        keep = len(self.right[0]) - n
        out = []
        for right in self.right:
            got = right[keep:]
            got.reverse()
            del right[keep:]
            out.append(got)
        return out

    def put(self, columns: list) -> None:
        """Insert lines at the gap, before it."""
        for left, new in zip(self.left, columns):
            left.extend(new)

    def copy(self) -> _Lines:
        """A copy whose lines keep the hunk that added them, not the one that removed lines
        before them (git copies the file, not what a patch did to it)."""
        texts, who, at, *numbered = self.columns()
        added = [w >= 0 and a >= 0 for w, a in zip(who, at)]
        return _Lines([list(texts), _column([w if a else -1 for w, a in zip(who, added)]),
                       _column([n if a else 0 for n, a in zip(at, added)])] + [array("i", c) for c in numbered])


def _indexes(seq, value, lo: int, hi: int) -> list:
    """The indexes in lo..hi-1 of seq's items equal to value, found by seq.index."""
    out = []
    while lo < hi:
        try:
            lo = seq.index(value, lo, hi)
        except ValueError:
            break
        out.append(lo)
        lo += 1
    return out


def _place(lines: _Lines, old: list, want: int) -> Optional[int]:
    """Where a hunk whose old side is old applies in a file whose every line is known: of the
    places where it matches, the nearest to want, the earlier of two as near (the order of
    the file's own positions sorted by distance, not every distance up to a line number the
    patch may have made up: @@ -100000000 @@). Looked for at ever wider distances around want,
    each line found by its text first: the cost is the distance to the match."""
    n = len(old)
    span = len(lines) - n  # the last position where it fits
    if span < 0:
        return None
    if n == 0:
        return min(max(want, 0), span)
    near, far = 0, 64  # the distances looked at: near..far-1
    while True:
        below = lines.find(old[0], max(want - far + 1, 0), min(want - max(near, 1), span) + 1)
        above = lines.find(old[0], max(want + near, 0), min(want + far - 1, span) + 1)
        for pos in sorted(below + above, key=lambda p: (abs(p - want), p > want)):
            if lines.texts(pos, n) == old:
                return pos
        if want - far + 1 <= 0 and want + far - 1 >= span:
            return None
        near, far = far, far * 2


@dataclass
class _File:
    lines: _Lines
    exists: bool
    eol: bool = True  # ends with a newline
    sparse: bool = False  # reduced mode: only what the hunks show is known
    next_base: int = 1
    base_text: dict = field(default_factory=dict)  # base line -> text, learnt from hunks
    base_exists: bool = True
    touched: bool = False

    def ensure(self, upto: int) -> None:
        """Reduced mode: unknown base lines up to index upto (exclusive) exist."""
        if self.sparse and len(self.lines) < upto:
            n = upto - len(self.lines)
            self.lines.move(len(self.lines))
            self.lines.put([[None] * n, _column([-1]) * n, _column([0]) * n,
                            _column(range(self.next_base, self.next_base + n))])
            self.next_base += n

    def copy(self, **changes) -> _File:
        return replace(self, lines=self.lines.copy(), base_text=dict(self.base_text), **changes)


class Changed:
    """The lines of a file the series changed (added, or kept right after lines it removed):
    line (1-based) -> Origin, made when asked for from the file's columns."""

    def __init__(self, who: array, at: array, hunks: list):
        self._who, self._at, self._hunks = who, at, hunks

    def get(self, line: int, default: Optional[Origin] = None) -> Optional[Origin]:
        if not 1 <= line <= len(self._who) or self._who[line - 1] < 0:
            return default
        patch, fdiff, hunk = self._hunks[self._who[line - 1]]
        at = self._at[line - 1]
        return Origin(patch, fdiff, hunk, at if at >= 0 else -1 - at)


class PatchedTree:
    """The files the series touches, before and after, each line with its origin."""

    def __init__(self, tree: Optional[Path], reader=None):
        self.tree = tree
        self.reader = reader  # path, patch -> bytes or None; default: the tree's file
        self.files: dict = {}  # path -> _File
        self.renames: dict = {}  # path before the series -> path after it
        self._renamed: dict = {}  # path after the renames so far -> the paths before them
        self.hunks: list = []  # (patch number, file diff, hunk) of the hunks applied

    def get(self, path: str, patch) -> _File:
        got = self.files.get(path)
        if got is not None:
            return got
        if self.tree is None:
            got = _File(_Lines.of_base([], numbered=True), exists=True, sparse=True)
        else:
            data = self.reader(path, patch) if self.reader else _read_tree_file(self.tree, path, patch)
            if data is None:
                got = _File(_Lines.of_base([]), exists=False, base_exists=False)
            else:
                text = data.decode("utf-8")
                eol = text.endswith("\n") or text == ""
                rows = text.split("\n")
                if eol:
                    rows.pop()
                got = _File(_Lines.of_base(rows), exists=True, eol=eol, next_base=len(rows) + 1, base_text={})
        self.files[path] = got
        return got

    def apply(self, patch, undo: bool = False) -> None:
        """Apply patch; undo: the patch _reversed made, whose hunks are applied new side to old."""
        # git copies a file as it was before the patch, although the patch may also edit it
        # (a function moved out of a file into a new one: the edit, then the copy).
        before = {}
        for fdiff in patch.files:
            if fdiff.copy and fdiff.old_path not in before:
                before[fdiff.old_path] = self.get(fdiff.old_path, patch).copy()
        for fi, fdiff in enumerate(patch.files):
            if fdiff.binary:
                raise ReviewError(f"{patch.name}: {fdiff.path}: binary patches are not supported")
            if fdiff.old_path is None:  # created
                state = self.get(fdiff.new_path, patch)
                if state.exists and not state.sparse:
                    raise ReviewError(f"{patch.name}: {fdiff.new_path}: already exists in the tree")
                if state.sparse and not state.touched:
                    state.base_exists = False
                state.lines, state.exists, state.sparse, state.eol = _Lines.of_base([]), True, False, True
            else:
                state = (before.get(fdiff.old_path) if fdiff.copy else None) or self.get(fdiff.old_path, patch)
                if not state.exists:
                    raise ReviewError(f"{patch.name}: {fdiff.old_path}: no such file in the tree")
                if fdiff.copy:  # the copy starts as the source's lines; the source stays
                    target = self.get(fdiff.new_path, patch)
                    if target.exists and not target.sparse:
                        raise ReviewError(f"{patch.name}: {fdiff.new_path}: the copy's target exists")
                    state = state.copy(exists=True, base_exists=False, touched=False)
                    self.files[fdiff.new_path] = state
            state.touched = True
            delta = 0
            for hi, hunk in enumerate(fdiff.hunks):
                self.hunks.append((patch.number, fi, hi))
                delta = self._apply_hunk(patch, fdiff, hunk, state, delta, len(self.hunks) - 1, undo)
            if fdiff.new_path is None:  # deleted
                if len(state.lines) and not state.sparse:
                    raise ReviewError(f"{patch.name}: {fdiff.old_path}: deleted, but lines remain "
                                      f"after its hunks")
                state.lines, state.exists = _Lines.of_base([], state.sparse), False
            elif fdiff.old_path is not None and fdiff.old_path != fdiff.new_path and not fdiff.copy:
                target = self.get(fdiff.new_path, patch)
                if target.exists and not target.sparse:
                    raise ReviewError(f"{patch.name}: {fdiff.new_path}: the rename's target exists")
                # The lines keep their base numbers, which belong to the old path's base.
                self.files[fdiff.new_path] = _File(state.lines, True, state.eol, state.sparse,
                                                   state.next_base, state.base_text,
                                                   base_exists=False, touched=True)
                state.lines, state.exists = _Lines.of_base([], state.sparse), False
                earlier = self._renamed.pop(fdiff.old_path, None)
                for old in earlier or ():  # renamed again
                    self.renames[old] = fdiff.new_path
                if not earlier:
                    self.renames[fdiff.old_path] = fdiff.new_path
                self._renamed.setdefault(fdiff.new_path, []).extend(earlier or [fdiff.old_path])

    def _apply_hunk(self, patch, fdiff, hunk, state: _File, delta: int, hid: int, undo: bool) -> int:
        add = "-" if undo else "+"
        old_start, old_count, new_count, new_no_eol = (
            (hunk.new_start, hunk.new_count, hunk.old_count, hunk.old_no_eol) if undo else
            (hunk.old_start, hunk.old_count, hunk.new_count, hunk.new_no_eol))
        old = [text for op, text in hunk.lines if op != add]
        want = (old_start if old_count == 0 else old_start - 1) + delta
        where = f"{patch.name}: {fdiff.path}: hunk #{hunk.number} ({hunk.header.split(' @@')[0]} @@)"
        lines = state.lines
        if state.sparse:
            state.ensure(want + len(old))
            fits = 0 <= want and want + len(old) <= len(lines)
            pos = want if fits and all(t in (None, o) for t, o in zip(lines.texts(want, len(old)), old)) else None
        else:
            pos = _place(lines, old, want)
        if pos is None:
            raise ReviewError(f"{where} does not apply: {_mismatch(lines, want, old, fdiff.path)}")
        tail = pos + len(old) == len(lines)
        lines.move(pos)
        texts, who, at, *numbered = lines.take(len(old))
        new_texts, new_who, new_at, *new_numbered = lines.left  # (the hunk's new side goes before the gap)
        k = 0
        removed = False
        for li, (op, text) in enumerate(hunk.lines):
            if op == add:
                new_texts.append(text)
                new_who.append(hid)
                new_at.append(li)
                for column in new_numbered:
                    column.append(0)
                removed = False
                continue
            if texts[k] is None:
                texts[k] = text
                state.base_text[numbered[0][k]] = text
            if op == " ":
                new_texts.append(texts[k])
                for column, base in zip(new_numbered, numbered):
                    column.append(base[k])
                if removed and (who[k] < 0 or at[k] < 0):  # (an added line keeps the hunk that added it)
                    new_who.append(hid)
                    new_at.append(-1 - li)
                else:
                    new_who.append(who[k])
                    new_at.append(at[k])
                removed = False
            else:
                removed = True
            k += 1
        if tail and not state.sparse:
            state.eol = not new_no_eol
        return delta + new_count - old_count + (pos - want)

    # -- the result ---------------------------------------------------------------------------
    def after(self) -> tuple[dict[str, bytes | None], dict[str, Changed]]:
        """path -> bytes after the series (None: deleted), and path -> the lines the series
        changed (added, or kept right after removed lines) with their Origin. The last use of
        the tree: what it returns shares its columns."""
        data: dict[str, bytes | None] = {}
        added: dict[str, Changed] = {}
        for path, state in self.files.items():
            if not state.touched:
                continue
            if not state.exists:
                data[path] = None
                continue
            texts, who, at, *_ = state.lines.columns()
            text = "\n".join([t or "" for t in texts] if state.sparse else texts)
            if texts and state.eol:
                text += "\n"
            data[path] = text.encode("utf-8")
            added[path] = Changed(who, at, self.hunks)
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


def _mismatch(lines: _Lines, pos: int, old: list, path: str) -> str:
    """Why the hunk does not fit at its own position, in words."""
    if pos < 0:  # (the hunks before it removed more lines than there are before it)
        return f"it would start before the first line of {path} (and no other place matches)"
    for k, text in enumerate(old):
        if pos + k >= len(lines):
            return f"{path} has {len(lines)} lines, the hunk needs {pos + len(old)}"
        have = lines.texts(pos + k, 1)[0]
        if have is not None and have != text:  # (None: a line no hunk has shown, reduced mode)
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
    """The patch that undoes patch: files in reverse order, each one's paths swapped; its hunks
    are the patch's own, applied new side to old (PatchedTree.apply(undo=True))."""
    files = tuple(replace(f, old_path=f.new_path, new_path=f.old_path) for f in reversed(patch.files))
    return replace(patch, files=files)


def base_without(patches, tree: Path, base_reader):
    """A base reader giving the files of tree as they were before the series, when tree
    already has the series (each patch undone cleanly, last first); else None."""
    if any(f.copy for p in patches for f in p.files):
        return None  # (a copy's source may have changed since: not undone)
    undo = PatchedTree(tree, base_reader)
    try:
        for patch in reversed(patches):
            undo.apply(_reversed(patch), undo=True)
    except ReviewError:
        return None
    before, _ = undo.after()

    def reader(path, patch):
        if path in before:
            return before[path]
        return base_reader(path, patch) if base_reader else _read_tree_file(tree, path, patch)
    return reader


# -- the review -----------------------------------------------------------------------------
