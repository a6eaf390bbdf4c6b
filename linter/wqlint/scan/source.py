"""Reading source files safely, and cutting them into parseable chunks.

Kernel files are large and full of macros tree-sitter cannot parse; parsing a whole file to
look at one call is both slow and needlessly exposed to ERROR nodes elsewhere. A *chunk* is
the top-level region around a line: from after the previous line that closes a top-level
block (a '}' in column 0) to the next one, or the lines of a multi-line #define. Chunks are
parsed on demand and cached.
"""
from __future__ import annotations

import bisect
import hashlib
import itertools
import os
import re
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from wqlint import errors, safeio
from wqlint.scan import parser

MAX_FILE_BYTES = safeio.MAX_SOURCE_BYTES
MAX_CHUNK_LINES = 4000
_DEFINE_RE = re.compile(rb"^\s*#\s*define\b")
_CLOSER_RE = re.compile(rb"\n\}")
_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


class SourceError(errors.WqlintError):
    """A file that cannot be used as C source; str() is the one-line problem."""


def read_source(path: Path, root: Optional[Path] = None, real_dirs: Optional[dict] = None) -> bytes:
    """The bytes of a C file, or SourceError saying why it cannot be read as one (not a
    regular file, a link out of root, too large, binary, not UTF-8)."""
    try:
        data = safeio.read_bytes(path, MAX_FILE_BYTES, root, real_dirs)
    except safeio.InputRefused as exc:
        raise SourceError(str(exc)) from None
    if b"\0" in data:
        raise SourceError("binary file (contains NUL bytes)")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SourceError(f"line {line}: not valid UTF-8 (byte 0x{data[exc.start]:02x})") from None
    return data


@dataclass(eq=False)
class Chunk:
    source: "SourceFile"
    first_line: int  # 1-based line of the chunk's first line in the file
    last_line: int
    tree: object = None
    # A macro's body parsed as a function (macros.Macros.chunk):
    macro_kind: str = ""  # "macro"; "" for code as written
    macro_params: list = field(default_factory=list)  # the macro's parameter names
    macro_is_function: bool = False  # a function-like macro
    macro_variadic: bool = False  # its last parameter is '...'

    @property
    def root(self):
        if self.tree is None:
            self.tree = parser.parse(self.source.slice(self.first_line, self.last_line))
        return self.tree.root_node

    def line_of(self, node) -> int:
        return self.first_line + node.start_point[0]

    def col_of(self, node) -> int:
        """1-based character column of node's start."""
        row = node.start_point[0]
        line = self.source.line_bytes(self.first_line + row)
        return len(line[: node.start_point[1]].decode("utf-8", "replace")) + 1

    def end_col_of(self, node) -> int:
        row = node.end_point[0]
        line = self.source.line_bytes(self.first_line + row)
        return len(line[: node.end_point[1]].decode("utf-8", "replace"))


@dataclass(eq=False)
class SourceFile:
    rel: str  # path relative to the tree root, '/' separators
    data: bytes
    _chunks: dict = field(default_factory=dict)
    _closers: Optional[list] = None
    _line_starts: Optional[array] = None

    def __post_init__(self) -> None:
        self._words: dict = {}
        self.known = ""  # digest() of data, once the index worked it out

    def let_go(self) -> None:
        """Drop its chunks, when the index lets go of the file: they refer to it, a cycle
        that only the collector frees, and it is off while the work model runs
        (scan.engine): a chunk still held elsewhere keeps the file, and nothing more."""
        self._chunks = {}

    @property
    def _starts(self) -> array:
        """Offsets of the lines' first bytes, computed when first needed: most files are read
        only to learn that a name does not occur in them. An array of unsigned ints, not a
        list: 4 bytes a line instead of 36 (a file is far below 4 GiB), and nothing for the
        cycle collector to walk through."""
        starts = self._line_starts
        if starts is None:
            ints = [0]  # a list first: filling it, then the array from it, takes a third less time
            ints.extend(itertools.accumulate(map((1).__add__, map(len, self.data.split(b"\n")))))
            ints.pop()
            starts = self._line_starts = array("I", ints)
        return starts

    def word_lines(self, name: str) -> list:
        """Lines where name occurs as a whole word (cached)."""
        got = self._words.get(name)
        if got is None:
            got = self._words[name] = _word_lines(self.data, name.encode(), self.line_at)
        return got

    @property
    def nlines(self) -> int:
        return len(self._starts) - (1 if self.data.endswith(b"\n") else 0)

    def line_bytes(self, line: int) -> bytes:
        if line < 1 or line > len(self._starts):
            return b""
        start = self._starts[line - 1]
        end = self._starts[line] - 1 if line < len(self._starts) else len(self.data)
        return self.data[start:end]

    def line_text(self, line: int) -> str:
        return self.line_bytes(line).decode("utf-8", "replace")

    def slice(self, first: int, last: int) -> bytes:
        start = self._starts[first - 1]
        end = self._starts[last] if last < len(self._starts) else len(self.data)
        return self.data[start:end]

    def line_at(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset)

    def _closer_lines(self) -> list:
        if self._closers is None:
            # '\n}' has a literal prefix, so the search runs at C speed (a '^' anchor does not).
            data = self.data
            self._closers = ([1] if data.startswith(b"}") else []) + \
                [self.line_at(m.start() + 1) for m in _CLOSER_RE.finditer(data)]
        return self._closers

    def chunk_at(self, line: int) -> Chunk:
        """The chunk holding line: its #define, or its top-level block."""
        first, last = self.define_span(line) or self._block_span(line)
        key = (first, last)
        chunk = self._chunks.get(key)
        if chunk is None:
            chunk = self._chunks[key] = Chunk(self, first, last)
        return chunk

    def whole(self) -> Chunk:
        return self.chunk_at_span(1, max(1, self.nlines))

    def chunk_at_span(self, first: int, last: int) -> Chunk:
        key = (first, last)
        chunk = self._chunks.get(key)
        if chunk is None:
            chunk = self._chunks[key] = Chunk(self, first, last)
        return chunk

    def define_span(self, line: int):
        start = line
        while start > 1 and self.line_bytes(start - 1).rstrip().endswith(b"\\"):
            start -= 1
        if not _DEFINE_RE.match(self.line_bytes(start)):
            return None
        end = line
        while self.line_bytes(end).rstrip().endswith(b"\\") and end < self.nlines:
            end += 1
        return start, end

    def _block_span(self, line: int):
        closers = self._closer_lines()
        i = bisect.bisect_left(closers, line)
        first = closers[i - 1] + 1 if i > 0 else 1
        last = closers[i] if i < len(closers) else max(line, self.nlines)
        if last - first > MAX_CHUNK_LINES:  # not kernel style: fall back to a window
            first = max(first, line - MAX_CHUNK_LINES // 2)
            last = min(last, line + MAX_CHUNK_LINES // 2)
        return first, last


def _word_lines(data: bytes, word: bytes, line_at) -> list:
    """Sorted lines where word occurs as a whole word. bytes.find runs at C speed; a regex
    that starts with a lookbehind is tried at every offset, which in a preprocessed
    translation unit of several MiB costs a tenth of a second per name."""
    out: list[int] = []
    n = len(word)
    if not n:
        return out
    at = data.find(word)
    while at >= 0:
        end = at + n
        if (at == 0 or data[at - 1] not in _WORD_BYTES) and (end >= len(data) or data[end] not in _WORD_BYTES):
            line = line_at(at)
            if not out or out[-1] != line:
                out.append(line)
        at = data.find(word, end)
    return out


def call_at(src: "SourceFile", line: int, col: int):
    """(chunk, call_expression node) whose called name starts at line:col (1-based character
    column), or None when there is no such call there."""
    if line < 1 or line > src.nlines or col < 1:
        return None
    chunk = src.chunk_at(line)
    text = src.line_text(line)
    byte_col = len(text[: col - 1].encode("utf-8"))
    row = line - chunk.first_line
    node = chunk.root.descendant_for_point_range((row, byte_col), (row, byte_col))
    while node is not None and node.type != "call_expression":
        node = node.parent
    if node is None:
        return None
    fn = node.child_by_field_name("function")
    if fn is None or fn.start_point != (row, byte_col):
        return None
    return chunk, node


def digest(data: bytes) -> str:
    """The hash by which a file's bytes are known (the index kept between runs, a file only
    looked at)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def call_digest(src: "SourceFile", line: int, col: int) -> str:
    """A hash of the whole text of the call named at line:col ('' when there is none): a
    saved finding is used only while its call reads exactly as it did."""
    found = call_at(src, line, col)
    if found is None:
        return ""
    chunk, node = found
    base = src._starts[chunk.first_line - 1]
    return hashlib.sha256(src.data[base + node.start_byte:base + node.end_byte]).hexdigest()[:32]


def is_c_source(name: str) -> bool:
    return name.endswith((".c", ".h"))


def relpath(path: Path, root: Path) -> str:
    return os.path.relpath(path, root).replace(os.sep, "/")
