"""What the work model reads of the whole tree at once, for the calls that leave a subsystem:
- the tables of functions, for the calls made through them (`file->f_op->fsync(...)`): every
  initialiser `.member = function` of a struct variable anywhere in the tree, with the
  variable's struct type, and the members that the structs of the tree's headers declare as
  pointers to a struct (`const struct file_operations *f_op;`), with that struct's type;
- the functions other files can call: the lines of the .c files that may start the
  definition of a function not declared static.

Built once per scan by three ripgrep runs over the whole tree started together: when first
asked, or earlier, by start() (a scan of a whole tree starts them before it resolves its
allocation sites, which takes one core). One finds the initialisers and the variables'
types in the .c files; one those and the structs' members in the .h files (read there only,
where the structs that files share are declared); the third the headers of the .c files'
functions. The first two are kept and read as one output. A file's lines are
read in order: an initialiser belongs to the struct variable opened last before it, a member
to the struct defined last, until the `};` that ends it. Files held in memory (a review's
patched files) are read there; without ripgrep the tree is read file by file.
"""
from __future__ import annotations

import os
import re
from typing import Optional

from wqlint import safeio, tools
from wqlint.scan import described
from wqlint.scan.packed import Packed
from wqlint.scan.phases import timed
from wqlint.scan.search import MAX_SEARCH_OUTPUT, SEARCH_TIMEOUT, rel_name
from wqlint.scan.source import MAX_FILE_BYTES, is_c_source
from wqlint.scan.subtext import EXTERN_HEADER

# `.member = function,` alone on its line
INIT = r"^\s*\.\s*[A-Za-z_]\w*\s*=\s*(?:&\s*)?[A-Za-z_]\w*\s*(?:,\s*)?$"
# `static const struct file_operations x_fops = {`: a struct variable with an initialiser
# (each character taken one way: [^=;(]* holds \w*, and one run of blanks around the '{', so
# that Python's matching of a file held in memory stays linear in its line)
VAR = r"^(?:static\s+)?(?:const\s+)?struct\s+[A-Za-z_]\w*\s+(?:const\s+)?[A-Za-z_][^=;(]*=\s*(?:\{\s*)?$"
# `struct file {`, `const struct file_operations *f_op;`, and the `};` that ends either
DEF = r"^(?:typedef\s+)?(?:struct|union)\s+[A-Za-z_]\w*\s*\{"
MEMBER = r"^\s+(?:const\s+)?struct\s+[A-Za-z_]\w*\s*\*\s*(?:const\s+)?[A-Za-z_]\w*\s*;"
END = r"^\};"

# One record of their output (--heading: a file's lines after its name), by its kind.
_LINE_RE = re.compile(
    rb"(?<=[\0\n])([0-9]+):(?:"
    rb"[ \t]*\.[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*(?:&[ \t]*)?([A-Za-z_]\w*)"  # 2, 3: member, function
    rb"|[ \t]+(?:const[ \t]+)?struct[ \t]+([A-Za-z_]\w*)[ \t]*\*[ \t]*(?:const[ \t]+)?([A-Za-z_]\w*)"  # 4, 5
    rb"|(?:typedef[ \t]+)?(?:struct|union)[ \t]+([A-Za-z_]\w*)[ \t]*\{"  # 6: a struct defined
    rb"|(\};)"  # 7: its end, or a variable's
    rb"|(?:static[ \t]+)?(?:const[ \t]+)?struct[ \t]+([A-Za-z_]\w*)[ \t]"  # 8: a variable's type
    rb")")
_NOT_FUNCTION = frozenset({b"NULL"})
# A record of the headers' output: line, byte offset, the function's name.
_HEADER_RE = re.compile(rb"(?<=[\0\n])([0-9]+):([0-9]+):(?:[^\n(]*[\t\x0b\x0c\r *])?([A-Za-z_]\w*)[^\S\n]*\(")


class Description:
    """The initialisers of members to functions and the pointer members of the tree (see the
    module's docstring), read once, when first asked."""

    def __init__(self, index):
        self.index = index
        self._inits: Optional[dict] = None  # member -> {type: bytearray 'fn num line;...'} (type b'' unknown)
        self._members: dict = {}  # member -> {struct type it points to: {struct declaring it}}
        self._files: list = []  # rel by number
        self._numbers: dict = {}  # rel -> its number, as bytes with a blank after it
        self._by_member: dict = {}  # member -> {type: [(fn, rel, line)]}, made when asked
        self._exported: dict = {}  # name -> b'num line offset;...', while the tree is read
        self._exports: Optional[Packed] = None  # the same, packed once it is read
        self._types: dict = {}  # rel -> the struct types of the variables it initialises
        self._types_in: dict = {}  # files -> types_in()
        self._started: Optional[list] = None  # start(): the searches' futures, until read
        self._kept: Optional[tuple] = None  # start(): scan.described.load(), until read
        self._types_at: dict = {}  # member -> {(rel, line) of an initialiser of it: its table's type}
        self._file_types: dict = {}  # rel -> _initialiser_types() of it, before the tree is read

    # -- asking ------------------------------------------------------------------------------
    def member_types(self, member: str) -> dict:
        """{struct type: (structs declaring member as a pointer to it)} of the tree's headers."""
        self.load()
        return {t.decode(): tuple(sorted(h.decode() for h in held))
                for t, held in self._members.get(member.encode(), {}).items()}

    def pointee(self, member: str) -> str:
        """The one struct type the tree's headers declare a member of that name to point to;
        '' when they declare none or several."""
        self.load()
        got = self._members.get(member.encode(), {})
        return next(iter(got)).decode() if len(got) == 1 else ""

    def field_type(self, struct: str, member: str) -> Optional[str]:
        """The struct type that member of struct points to, as the tree's headers declare it."""
        self.load()
        for t, holders in self._members.get(member.encode(), {}).items():
            if struct.encode() in holders:
                return t.decode()
        return None

    def initialisers(self, member: str) -> dict:
        """{struct type: [(function, rel, line)]} of the initialisers `.member = function` of
        the tree's struct variables, by path and line ('' for a type not read)."""
        got = self._by_member.get(member)
        if got is None:
            self.load()
            assert self._inits is not None
            got = {}
            for ttype, recs in self._inits.get(member.encode(), {}).items():
                rows = []
                for rec in recs.split(b";"):
                    fn, num, line = rec.split(b" ")
                    rows.append((self._files[int(num)], int(line), fn.decode()))
                got[ttype.decode()] = [(fn, rel, line) for rel, line, fn in sorted(rows)]
            self._by_member[member] = got
        return got

    def types_in(self, files: set) -> frozenset:
        """The struct types of the variables that files initialise."""
        key = frozenset(files)
        got = self._types_in.get(key)
        if got is None:
            self.load()
            if len(self._types_in) > 4096:
                self._types_in.clear()
            got = self._types_in[key] = frozenset(t for rel in files for t in self._types.get(rel, ()))
        return got

    def initialiser_type(self, member: str, rel: str, line: int) -> str:
        """The struct type of the variable whose initialiser sets member at line of rel ('' when
        not known, or when no initialiser of member is there), as initialisers() has it: from
        the tree's description once it is read, else from rel alone, read as the description
        reads a file (a review asks of a few files: not worth a search of the whole tree)."""
        if self._inits is not None:
            where = self._types_at.get(member)
            if where is None:
                where = self._types_at[member] = {(r, n): t for t, rows in self.initialisers(member).items()
                                                  for _fn, r, n in rows}
            return where.get((rel, line), "")
        got = self._file_types.get(rel)
        if got is None:
            data = self.index.text(rel)
            got = self._file_types[rel] = _initialiser_types(data) if data is not None else {}
        return got.get((member, line), "")

    def exported(self, name: str) -> list:
        """[(rel, line, offset)] of the lines of the tree's .c files that may start the
        definition of function name not declared static there, by path and line."""
        self.load()
        assert self._exports is not None
        got = self._exports.get(name.encode())
        if got is None:
            return []
        out = []
        for rec in got.split(b";"):
            num, line, offset = rec.split(b" ")
            out.append((self._files[int(num)], int(line), int(offset)))
        return sorted(out)

    # -- reading -----------------------------------------------------------------------------
    def load(self) -> None:
        """Read the tree (once): what a worker forked after it shares."""
        if self._inits is None:
            self._read_tree()

    def start(self) -> None:
        """Start the tree's searches (when ripgrep is there), to be read when first asked;
        or take what a run before kept of them (scan.described), when it can be used. Each
        search is a thread waiting for its ripgrep: nothing of the scan's own is touched
        until load() reads their output. A process must settle() them before it forks."""
        rg = tools.which("rg")
        if rg is None or self._started is not None or self._inits is not None or self._kept is not None:
            return
        self._kept = described.load(self.index.store)
        if self._kept is not None:
            return
        from concurrent.futures import ThreadPoolExecutor  # (imports logging: only when asked)
        pool = ThreadPoolExecutor(3)  # the searches run together
        index = self.index
        # The structs' members only where they are read, in the .h files (_add_lines()): the
        # same CPU as one search of both, and a quarter less output to read (on
        # linux-source-7.3, 34 MB instead of 45).
        self._started = [pool.submit(_search, rg, index, [INIT, VAR], ["*.c"], "initialisers"),
                         pool.submit(_search, rg, index, [INIT, VAR, DEF, MEMBER, END], ["*.h"],
                                     "initialisers and struct members"),
                         pool.submit(_search, rg, index, [EXTERN_HEADER + r"[^;]*$"], ["*.c"], "functions",
                                     ("--byte-offset",))]
        pool.shutdown(wait=False)

    def begun(self) -> bool:
        """Has the tree been read, or its searches started (the scan of a whole tree reads it)?"""
        return self._started is not None or self._inits is not None or self._kept is not None

    def settle(self) -> None:
        """Wait for the searches start() began: a process forked while a thread runs would
        wait for it forever, or for a lock it held."""
        for got in self._started or ():
            got.exception()

    @timed("description")
    def _read_tree(self) -> None:
        self.start()
        self._inits = {}
        index = self.index
        memory = {**index.extra, **index.tree_files.in_memory(), **index.preloaded}
        kept, self._kept = self._kept, None
        if kept is not None:
            # What a run before searched, but for the files changed since: read from the tree,
            # their lines then kept in place of the old ones (for the stamps the index keeps now).
            inits, headers, changed = kept
            now = index.store.stamps
            fresh = {rel: index.text(rel) for rel in sorted(changed)
                     if rel in now and rel not in memory and is_c_source(rel)}
            fresh = {rel: data for rel, data in fresh.items() if data is not None}
            keeping = None
            if changed and not changed & memory.keys() and not index.errors:
                keeping = described.keep(index.store, *_spliced(inits, headers, changed, fresh))
            skip = {**dict.fromkeys(changed), **memory}
            self._read(inits, skip=skip)
            self._read(headers, skip=skip, headers=True)
            for rel, data in fresh.items():
                self._read_file(rel, data)
            if keeping is not None:
                keeping.join()
        elif self._started is not None:
            asked, self._started = self._started, None
            inits = b"\n".join(out for out in (asked[0].result(), asked[1].result()) if out)
            headers = asked[2].result()
            # kept for the runs after this one, written while the outputs are read
            keeping = described.keep(index.store, inits, headers) if not index.errors else None
            self._read(inits, skip=memory)
            self._read(headers, skip=memory, headers=True)
            if keeping is not None:
                keeping.join()
        else:
            memory = {rel: index.text(rel) for rel in index.dir_files("", recursive=True)
                      if is_c_source(rel) and not rel.startswith("<")}
        for rel in sorted(memory):
            data = memory[rel] if rel in index.extra else index.text(rel)
            if data is not None and is_c_source(rel):
                self._read_file(rel, data)
        # (on linux-source-7.3, 204,000 names: 32 MB as a dict of strings, 12 MB packed)
        self._exports, self._exported = Packed(self._exported), {}

    def _read(self, out: bytes, skip: dict, headers: bool = False) -> None:
        """Add ripgrep's --heading output (each file's name and a NUL, its lines, a blank line)."""
        start, size = 0, len(out)
        while start < size:
            end = out.find(b"\n\n", start)
            end = size if end < 0 else end + 1
            at = out.find(b"\0", start, end)
            if at < 0:
                break
            rel = rel_name(out[start:at])
            if rel not in skip:
                if headers:
                    self._add_headers(rel, _HEADER_RE.findall(out, at + 1, end))
                else:
                    self._add_lines(rel, _LINE_RE.findall(out, at + 1, end))
            start = end + 1

    def _read_file(self, rel: str, data: bytes) -> None:
        """Add a file held in memory, its lines matched as the searches print them."""
        self._read(_inits_block(rel, data), skip={})
        self._read(_headers_block(rel, data), skip={}, headers=True)

    def _add_lines(self, rel: str, records: list) -> None:
        """_LINE_RE's records of a file: the initialisers and the variables they are of, then
        (in a header) the members of the structs it defines, read apart."""
        self._add(rel, [r for r in records if not (r[3] or r[5] or r[6])])
        if rel.endswith(".h"):
            self._add(rel, [r for r in records if r[3] or r[5] or r[6]])

    def _add_headers(self, rel: str, records) -> None:
        num = self._number(rel)
        exported = self._exported
        for line, offset, name in records:
            rec = num + line + b" " + offset
            old = exported.get(name)
            exported[name] = rec if old is None else old + b";" + rec

    def _number(self, rel: str) -> bytes:
        """rel's number in the records, as bytes with a blank after it."""
        num = self._numbers.get(rel)
        if num is None:
            num = self._numbers[rel] = b"%d " % len(self._files)
            self._files.append(rel)
        return num

    def _add(self, rel: str, records) -> None:
        assert self._inits is not None
        inits, members = self._inits, self._members
        num = b" " + self._number(rel)
        var = defined = b""
        for line, member, fn, ptype, pname, sdef, end, vtype in records:
            if fn:
                if fn not in _NOT_FUNCTION:
                    by_type = inits.get(member)
                    if by_type is None:
                        by_type = inits[member] = {}
                    old = by_type.get(var)
                    if old is None:
                        by_type[var] = bytearray(fn + num + line)
                    else:  # (in place: a type's member can have thousands, clk_branch.ops 13,000)
                        old += b";" + fn + num + line
            elif ptype:
                if defined:
                    members.setdefault(pname, {}).setdefault(ptype, set()).add(defined)
            elif sdef:
                defined = sdef
            elif end:
                var = defined = b""
            elif vtype:
                var = vtype
                self._types.setdefault(rel, set()).add(vtype.decode())


def kept_same(store, rels: list) -> bool:
    """Does the description kept between runs (scan.described) say of each file of rels
    (changed since the index was written, read by no scan it keeps) what the file says now:
    the same initialisers, struct variables, members and function headers, on the same
    lines? A scan kept is of the tree as it was: a table set in such a file changes where
    a call through it goes. False when that cannot be told (no description kept, a file
    that cannot be read)."""
    kept = described.load(store)
    if kept is None:
        return False
    inits, headers, _changed = kept
    real_dirs: dict = {}
    for rel in rels:
        if not is_c_source(rel):
            continue
        data = b""
        if rel in store.stamps:
            try:
                data = safeio.read_bytes(store.root / rel, MAX_FILE_BYTES, store.root, real_dirs)
            except safeio.InputRefused:
                return False
        if _records(inits, rel, _LINE_RE) != _records(_inits_block(rel, data), rel, _LINE_RE) \
                or _records(headers, rel, _HEADER_RE) != _records(_headers_block(rel, data), rel, _HEADER_RE):
            return False
    return True


def _records(out: bytes, rel: str, record) -> list:
    """record's matches in rel's lines of a search's --heading output (none without them)."""
    for name in (os.fsencode("./" + rel) + b"\0", os.fsencode(rel) + b"\0"):
        at = out.find(name)
        while at > 0 and out[at - 1:at] != b"\n":  # (the end of a longer name)
            at = out.find(name, at + 1)
        if at >= 0:
            end = out.find(b"\n\n", at)
            return record.findall(out, at + len(name) - 1, len(out) if end < 0 else end + 1)
    return []


def _spliced(inits: bytes, headers: bytes, changed: set, fresh: dict) -> tuple:
    """The two searches' output (--heading) with the records of the files changed left out and
    those of fresh ({rel: its bytes now}) added, as the searches print them."""
    out = []
    for old, block in ((inits, _inits_block), (headers, _headers_block)):
        parts, start, size = [], 0, len(old)
        while start < size:
            end = old.find(b"\n\n", start)
            end = size if end < 0 else end + 1
            at = old.find(b"\0", start, end)
            if at >= 0 and rel_name(old[start:at]) not in changed:
                parts.append(old[start:end])
            start = end + 1
        parts += [b for b in (block(rel, data) for rel, data in sorted(fresh.items())) if b]
        out.append(b"\n".join(parts))
    return tuple(out)


def _inits_block(rel: str, data: bytes) -> bytes:
    """A file's lines as the search of the initialisers and members prints them (of a .c
    file, those Description._add_lines() reads)."""
    pats = [INIT, VAR] + ([DEF, MEMBER, END] if rel.endswith(".h") else [])
    rx = re.compile("|".join(f"(?:{p})" for p in pats).encode())
    lines = [b"%d:%s\n" % (n, line) for n, line in enumerate(data.split(b"\n"), 1) if rx.match(line)]
    return os.fsencode("./" + rel) + b"\0" + b"".join(lines) if lines else b""


def _headers_block(rel: str, data: bytes) -> bytes:
    """A .c file's lines as the search of the functions' headers prints them."""
    if not rel.endswith(".c"):
        return b""
    extern = re.compile((EXTERN_HEADER + r"[^;]*$").encode())
    lines, offset = [], 0
    for n, line in enumerate(data.split(b"\n"), 1):
        if extern.match(line):
            lines.append(b"%d:%d:%s\n" % (n, offset, line))
        offset += len(line) + 1
    return os.fsencode("./" + rel) + b"\0" + b"".join(lines) if lines else b""


_INIT_OR_VAR = re.compile(f"(?:{INIT})|(?:{VAR})".encode())


def _initialiser_types(data: bytes) -> dict:
    """{(member, line): struct type} of the initialisers `.member = function` of a file's text,
    each of the struct variable opened last before it, as Description._add() reads them."""
    lines = [b"%d:%s\n" % (n, line) for n, line in enumerate(data.split(b"\n"), 1) if _INIT_OR_VAR.match(line)]
    out: dict = {}
    var = b""
    for line, member, fn, _ptype, _pname, _sdef, _end, vtype in _LINE_RE.findall(b"\n" + b"".join(lines)):
        if fn:
            if fn not in _NOT_FUNCTION:
                out[(member.decode(), int(line))] = var.decode()
        elif vtype:
            var = vtype
    return out


def _search(rg: str, index, patterns: list, globs: list, what: str, more: tuple = ()) -> bytes:
    """ripgrep's --heading output for patterns over the tree's files of globs; b'' and the
    index's error when it fails."""
    args = [rg, "-n", "--with-filename", "--heading", "--null", "--no-ignore", "--binary",
            "--threads", str(index.jobs), *more]
    for g in globs:
        args += ["-g", g]
    args += ["-f", "-", "--", "."]
    text = "".join("(?-u)" + p + "\n" for p in patterns).encode()
    try:
        proc = tools.run(args, cwd=index.root, input=text, timeout=SEARCH_TIMEOUT, what="ripgrep",
                         limit=MAX_SEARCH_OUTPUT, search=True)
    except tools.ToolError as exc:
        index.search_failed(index.root, f"{exc} (the tree's {what})")
        return b""
    if proc.returncode not in (0, 1, 2):
        index.search_failed(index.root, f"ripgrep failed: {tools.last_line(proc)} (the tree's {what})")
        return b""
    return proc.stdout
