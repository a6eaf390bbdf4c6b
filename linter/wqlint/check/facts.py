"""Cross-file facts for `wqlint check`, built once per tree and cached in the build directory.

A checker sees one translation unit: the checked file and the headers it includes, as the
configuration makes them. What other .c files contribute is not in it: a struct field assigned
in another file (fs/btrfs/scrub.c reads fs_info->thread_pool_size, fs/btrfs/disk-io.c sets it)
or a wrapper of alloc_workqueue() defined in another file. Those facts come from the same
analysis as `wqlint scan`, through the same per-tree index in the user's cache directory
(wqlint.scan.store: a tree already scanned, or built before, is not searched again): the
engine is run over the whole source tree once, and every allocation site it resolves is
kept, by file, with its flags and max_active as symbolic values.
`wqlint check` then takes, for a call it cannot resolve from the unit alone, what the tree
analysis found at the same place (the original path and line of the call).

One analysis, one index: the tree analysis goes through wqlint.scan.store, the index `wqlint
scan` and `wqlint review` keep (a tree scanned before is not searched again, and the facts
of a tree changed since are resolved again from its answers). What this module keeps beside
it is not a second index but a projection of one scan for the checkers: a checker process
is started for every .c file of a build and must decide in a few milliseconds whether the
facts still hold, where opening the index means walking the whole tree (every .c/.h file's
stat, ~0.2 s on a kernel tree) and loading every answer it holds. The projection holds only
the sites by file and the stamps of the few thousand files they came from.

The projection is cached in the build output directory (Kbuild's working directory when it runs
the checker: the O= directory, or the source tree for an in-tree build; for an external module
built with M=, the module's directory) as `.wqlint-facts.json`. `make -j` starts many checkers
at once, so the file is written under an fcntl lock on `.wqlint-facts.lock` (one process
builds, the others wait for it and read what it wrote) to a temporary file in the same
directory that is renamed over the old one (readers never see half a file).

When are the facts stale? Statting every file of a kernel tree (~80,000) in every checker
process would cost more than the check itself, so the validity test is narrower and cheap:

- every file the analysis read (about 4,000 in a kernel tree: the files that mention an
  allocation, a wrapper, or a name a value was followed through), plus the checked file, with
  its (mtime_ns, size) at build time: any change to them rebuilds. A file modified while the
  facts were being built is recorded as stale at once;
- the directories of those files, with their mtime and the list of their .c/.h names, so a
  file added next to them is noticed (an in-tree build writes .o files into the same
  directories all the time, so a changed mtime alone is not enough: the names are compared);
- the checked file, when the analysis did not read it: if it changed after the facts were
  built and now mentions an allocation or a known wrapper, the facts are rebuilt.

Checking these costs a checker about 0.02 s on a kernel tree (~4,600 stat calls), against
0.16 s just to list the whole tree. What it does not notice: an edit to a file the analysis
did not read, elsewhere than in the file being checked, that makes it assign a field or call
a wrapper (delete the cache file to force a rebuild). The wqlint version and the tree root
are part of the key.
"""
from __future__ import annotations

import errno
import json
import os
import re
import time
import zlib

from wqlint import __version__
from wqlint.code_id import code_id
from wqlint.check import names

# Plain strings for paths, no pathlib, hashlib or typing: this module is imported by every
# checker process, and those imports would cost more than reading the facts.

FORMAT = 6
FACTS_NAME = ".wqlint-facts.json"
LOCK_NAME = ".wqlint-facts.lock"


class FactsError(Exception):
    pass


# -- where ------------------------------------------------------------------------------------
def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def find_root(file: str) -> "str | None":
    """The tree a file belongs to: an external module's directory (M=, Kbuild exports it as
    KBUILD_EXTMOD), else the kernel tree holding it (a directory with Makefile and
    include/linux, as `wqlint scan` finds it), else None: a loose file has no tree to
    analyse (its directory could be anyone's home)."""
    real = os.path.realpath(file)
    ext = os.environ.get("KBUILD_EXTMOD")
    if ext:
        ext = os.path.realpath(ext)
        if _under(real, ext):
            return ext
    cand = os.path.dirname(real)
    while True:
        if os.path.isfile(os.path.join(cand, "Makefile")) and os.path.isdir(os.path.join(cand, "include", "linux")):
            return cand
        parent = os.path.dirname(cand)
        if parent == cand:
            return None
        cand = parent


def cache_dir(file: str, root: str) -> str:
    """Where the cache lives: the module's output directory for an external module, else the
    build output directory, which is where Kbuild runs the checker."""
    ext = os.environ.get("KBUILD_EXTMOD")
    if ext and os.path.realpath(ext) == root:
        out = os.environ.get("KBUILD_EXTMOD_OUTPUT")  # MO= (v6.13+)
        return os.path.realpath(out if out else ext)
    return os.getcwd()


# -- values to and from JSON ------------------------------------------------------------------
def _enc_step(step):
    if step is None:
        return None
    out = [step.path, step.line, step.text, step.note]
    if step.binds or step.origin is not None:
        out.append(list(step.binds))
    if step.origin is not None:
        out.append([step.origin.via.value, step.origin.name])
    return out


def _dec_step(s, path_of):
    from wqlint.finding import Origin, Step, Via
    if s is None:
        return None
    origin = Origin(Via(s[5][0]), s[5][1]) if len(s) > 5 else None
    return Step(path_of(s[0]), s[1], s[2], s[3], tuple(s[4]) if len(s) > 4 else (), origin)


# A Value is an array: its kind (the class's name), then the fields that make it what it is
# (those its equality compares) in the order its dataclass declares them, each as its declared
# type says. The table is derived from the dataclasses of scan.values and the values are
# walked by values.fold(), so a new kind of Value is kept here with no line of this module.
_KINDS: dict = {}  # kind -> (class, [(name, encode, decode)] of its fields), as met


def _kind(name: str):
    """(class, fields) of the kind of Value name; KeyError when there is none."""
    if name not in _KINDS:
        from wqlint.scan.values import Value
        todo = list(Value.__subclasses__())
        while todo:
            cls = todo.pop()
            todo.extend(cls.__subclasses__())
            if cls.__name__ == name:
                _KINDS[name] = (cls, _fields(cls))
    return _KINDS[name]


def _fields(cls) -> list:
    """[(name, encode, decode)] of the fields of a dataclass that its equality compares."""
    import dataclasses
    import typing
    hints = typing.get_type_hints(cls)
    return [(f.name, *_field(hints[f.name])) for f in dataclasses.fields(cls) if f.compare]


def _field(hint):
    """(encode(x, kids), decode(data, value, path_of)) of a field of the declared type hint:
    kids yields the encodings of the Values it holds, in order (values.children()); value
    decodes one."""
    import dataclasses
    import enum
    import types
    import typing

    from wqlint.finding import Step
    from wqlint.scan.values import Value
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    optional = typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1
    if optional and isinstance(args[0], type) and issubclass(args[0], Value):
        hint = args[0]  # a None among the Values is walked as one (its encoding: None)
    elif optional:  # None is None
        enc, dec = _field(args[0])
        return (lambda x, kids: None if x is None else enc(x, kids),
                lambda d, value, path_of: None if d is None else dec(d, value, path_of))
    if isinstance(hint, type) and issubclass(hint, Value):
        return lambda x, kids: next(kids), lambda d, value, path_of: value(d)
    if typing.get_origin(hint) is tuple:
        enc, dec = _field(args[0])
        return (lambda x, kids: [enc(e, kids) for e in x],
                lambda d, value, path_of: tuple(dec(e, value, path_of) for e in d))
    if hint is Step:
        return lambda x, kids: _enc_step(x), lambda d, value, path_of: _dec_step(d, path_of)
    if hint is bytes:
        return lambda x, kids: x.decode("latin-1"), lambda d, value, path_of: d.encode("latin-1")
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return lambda x, kids: x.value, lambda d, value, path_of, t=hint: t(d)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):  # a Cond: its fields in order
        parts = _fields(hint)
        return (lambda x, kids: _encode_fields(x, parts, kids),
                lambda d, value, path_of, t=hint: _decode_fields(t, parts, d, value, path_of))
    # a number, a text, or a decision's key (tuples in JSON are lists: back to tuples)
    return lambda x, kids: x, lambda d, value, path_of: _tuple(d)


def encode_value(value, memo: dict) -> list:
    """value as JSON data; memo: nodes already encoded (shared by several parents or values)."""
    from wqlint.scan.values import fold

    def node(v, kids=()):
        if v is None:  # (a bound met before any assignment, among Op.args)
            return None
        name = type(v).__name__
        it = iter(kids)
        out = [name] + _encode_fields(v, _kind(name)[1], it)
        assert next(it, None) is None, f"{name}: values.children() is not the Values of its fields"
        return out
    return fold(value, node, node, memo)


def _encode_fields(x, fields, kids) -> list:
    return [enc(getattr(x, name), kids) for name, enc, _dec in fields]


def _decode_fields(cls, fields, data, value, path_of):
    """An instance of cls from data, its fields' encodings in order."""
    if type(data) is not list or len(data) != len(fields):
        raise ValueError(f"{cls.__name__} without its {len(fields)} fields")
    return cls(**{name: dec(d, value, path_of) for (name, _enc, dec), d in zip(fields, data)})


def decode_value(data, path_of):
    """The value encoded as data, with every step's path passed through path_of."""
    def dec(d):
        if d is None:
            return None
        cls, fields = _kind(d[0])
        return _decode_fields(cls, fields, d[1:], dec, path_of)
    return dec(data)


def _tuple(data):
    """A decision key back from JSON, where its tuples became lists."""
    return tuple(_tuple(x) for x in data) if isinstance(data, list) else data


def encode_site(site) -> dict:
    memo: dict = {}
    return {"entry": site.entry, "line": site.line, "col": site.col, "end_col": site.end_col,
            "flags": encode_value(site.flags, memo), "max_active": encode_value(site.max_active, memo),
            "prefix": [_enc_step(s) for s in site.prefix], "via": list(site.via),
            "suppressed": sorted(site.suppressed),
            "parts": sorted(site.parts) if site.parts is not None else None,
            "parts_elsewhere": sorted(site.parts_elsewhere), "function": site.function, "queue": site.queue,
            "args": [site.flags_arg, site.max_active_arg], "name": _enc_name(site.name, memo)}


def _enc_name(name, memo):
    if name is None:
        return None
    return {"fmt": encode_value(name.fmt, memo), "args": [encode_value(a, memo) for a in name.args],
            "rest": encode_value(name.rest, memo) if name.rest is not None else None,
            "step": _enc_step(name.step)}


def _dec_name(d, path_of):
    from wqlint.scan.site import NameArgs
    if not d:
        return None
    return NameArgs(decode_value(d["fmt"], path_of), tuple(decode_value(a, path_of) for a in d["args"]),
                    decode_value(d["rest"], path_of) if d["rest"] is not None else None,
                    _dec_step(d["step"], path_of))


def decode_site(d: dict, path: str, path_of):
    from wqlint.scan.site import Site
    return Site(entry=d["entry"], path=path, line=d["line"], col=d["col"], end_col=d["end_col"],
                flags=decode_value(d["flags"], path_of), max_active=decode_value(d["max_active"], path_of),
                prefix=[_dec_step(s, path_of) for s in d["prefix"]], via=list(d["via"]),
                suppressed=frozenset(d["suppressed"]),
                parts=frozenset(d["parts"]) if d["parts"] is not None else None,
                parts_elsewhere=frozenset(d["parts_elsewhere"]),
                function=d.get("function", ""), queue=d.get("queue", ""),
                flags_arg=d.get("args", (-1, -1))[0], max_active_arg=d.get("args", (-1, -1))[1],
                name=_dec_name(d.get("name"), path_of))


# -- the facts --------------------------------------------------------------------------------
class Facts:
    """What the tree analysis found, as read from the cache."""

    def __init__(self, data: dict, built: bool = False, directory: str = "."):
        self.data = data
        self.directory = directory  # where the cache is
        self.root = data["root"]
        self.built = built  # this process built them
        self.wrappers = frozenset(data.get("wrappers", ()))
        self._sites = data.get("sites", {})

    def has_sites(self, rel: str) -> bool:
        return rel in self._sites

    def sites(self, rel: str, path_of) -> list:
        """The sites of file rel, steps' paths mapped by path_of (rel -> displayed path);
        FactsError when the cache holds something else there (damaged or crafted: the cache
        is data, read through safeio's bounds like any input)."""
        raw = self._sites.get(rel)
        if not raw:
            return []
        import base64
        import binascii

        from wqlint import safeio
        try:
            packed = safeio.parse_json(safeio.inflate(base64.b64decode(raw, validate=True), MAX_SITES_BYTES))
            if not isinstance(packed, list):
                raise FactsError("not a list of sites")
            return [decode_site(d, path_of(rel), path_of) for d in packed]
        except (safeio.InputRefused, binascii.Error, FactsError, KeyError, IndexError, TypeError, ValueError,
                AttributeError, RecursionError) as exc:
            problem = str(exc) if isinstance(exc, (safeio.InputRefused, FactsError)) else type(exc).__name__
            raise FactsError(f"{os.path.join(self.directory, FACTS_NAME)}: the sites of {rel} are damaged "
                             f"({problem})") from None

    def mention_re(self):
        """Matches a call of an allocation function or of a known wrapper."""
        return mention_re(self.wrappers)


def mention_re(wrappers):
    """Matches a call of an allocation function, by any of its names before and after cpp, or
    of one of wrappers."""
    called = sorted(names.ENTRY_POINTS | frozenset(wrappers), key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(map(re.escape, called)) + r")\s*\(")


def _stamp(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _names_digest(directory: str) -> str:
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith((".c", ".h")))
    except OSError:
        return ""
    return f"{len(names)}:{zlib.crc32(chr(0).join(names).encode()):08x}"


def mentions(path: str, pattern, unreadable: bool = False) -> bool:
    """Does the file's text match pattern? unreadable: the answer when it cannot be read."""
    from wqlint import safeio
    try:
        text = safeio.read_bytes(path, safeio.MAX_SOURCE_BYTES).decode("utf-8", "replace")
    except safeio.InputRefused:
        return unreadable
    return bool(pattern.search(text))


def is_valid(data: dict, root: str, checked: "str | None") -> bool:
    """Are cached facts still those of the tree? (see the module's docstring)"""
    # "code": derived by other wqlint code (a checkout that keeps __version__)
    if data.get("format") != FORMAT or data.get("wqlint") != __version__ or data.get("root") != root \
            or data.get("code") != code_id():
        return False
    base = root.rstrip("/") + "/"
    stat = os.stat
    for rel, stamp in data.get("deps", {}).items():
        try:
            st = stat(base + rel)
        except OSError:
            if stamp is None:
                continue  # missing then, missing now
            return False
        if stamp is None or st.st_mtime_ns != stamp[0] or st.st_size != stamp[1]:
            return False
    for rel, (mtime, digest) in data.get("dirs", {}).items():
        d = base + rel if rel else root
        try:
            now = os.stat(d).st_mtime_ns
        except OSError:
            return False
        if now != mtime and _names_digest(d) != digest:
            return False
    if checked:
        rel = os.path.relpath(os.path.realpath(checked), base)
        if rel not in data.get("deps", {}):
            st = _stamp(checked)
            if st is not None and st[0] >= data.get("built_ns", 0) \
                    and mentions(checked, Facts(data).mention_re()):
                return False
    return True


def build(root: str, checked: "str | None" = None, jobs: "int | None" = None) -> dict:
    """Run the tree analysis over root and keep every site, by file."""
    from pathlib import Path

    from wqlint.scan.engine import SINKS as ENGINE_SINKS, Engine

    started = time.time_ns()
    delay = os.environ.get("WQLINT_TEST_FACTS_DELAY")  # tests: make concurrent checkers wait
    if delay:
        time.sleep(float(delay))
    # The same analysis as `wqlint scan` of the whole tree, through the same per-tree index
    # (wqlint.scan.store): after a scan of the tree, or a build for another O= directory, the
    # sites are taken from it, and a tree changed since is resolved again from its answers.
    # root given: the facts are keyed by paths in root, as Kbuild names the files it compiles
    # (a module directory's symbolic links are not followed out of it, as a scan would).
    engine = Engine([root], None, jobs=jobs or os.cpu_count() or 1, store=True, root=Path(root))
    analysis = engine.analysis()
    sites = analysis["sites"]
    by_file: dict = {}
    wrappers = set()
    for site in sites:
        if site.path.startswith("<"):
            continue  # wqlint's own description of the API
        by_file.setdefault(site.path, []).append(encode_site(site))
        wrappers.update(site.via)
        if site.entry not in ENGINE_SINKS:
            wrappers.add(site.entry)
    base = root
    read = {rel for rel in analysis["read"] if not rel.startswith("<")}
    if checked:
        rel = os.path.relpath(os.path.realpath(checked), base)
        if not rel.startswith(".."):
            read.add(rel)
    deps = {}
    for rel in sorted(read):
        st = _stamp(os.path.join(base, rel))
        if st is not None and st[0] >= started:
            st = [-1, -1]  # changed while being read: stale at once
        deps[rel] = st
    dirs = {}
    for reldir in sorted({os.path.dirname(rel) for rel in read}):
        d = os.path.join(base, reldir) if reldir else base
        try:
            dirs[reldir] = [os.stat(d).st_mtime_ns, _names_digest(d)]
        except OSError:
            continue
    return {"format": FORMAT, "wqlint": __version__, "code": code_id(), "root": base,
            "built_ns": started,
            "build_seconds": round((time.time_ns() - started) / 1e9, 2),
            "deps": deps, "dirs": dirs, "wrappers": sorted(wrappers),
            # Each file's sites as compressed JSON in a string: the cache is read by every
            # checker, and a string without escapes parses at memcpy speed.
            "sites": {rel: _pack(v) for rel, v in sorted(by_file.items())}}


def _pack(value) -> str:
    import base64
    return base64.b64encode(zlib.compress(json.dumps(value, separators=(",", ":")).encode(), 6)).decode()


MAX_FACTS_BYTES = 1024 * 1024 * 1024
# What one file's sites may inflate to (a kernel file's are a few KiB): a few MiB of a crafted
# cache could otherwise inflate to gigabytes.
MAX_SITES_BYTES = 64 * 1024 * 1024


def _read(path: str) -> "dict | None":
    """The cache as written, or None: missing, not a regular file (a FIFO would block),
    too large, or not JSON."""
    from wqlint import safeio

    try:
        data = safeio.parse_json(safeio.read_bytes(path, MAX_FACTS_BYTES))
    except safeio.InputRefused:
        return None
    return data if isinstance(data, dict) else None


def _usable(data, root: str, checked) -> bool:
    """is_valid() for a cache that may have been damaged or crafted: wrong types are invalid."""
    if data is None or not isinstance(data.get("root"), str) \
            or not isinstance(data.get("sites", {}), dict) \
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.get("sites", {}).items()) \
            or not isinstance(data.get("wrappers", []), list) \
            or not all(isinstance(w, str) for w in data.get("wrappers", [])) \
            or not isinstance(data.get("deps", {}), dict) or not isinstance(data.get("dirs", {}), dict):
        return False
    try:
        return is_valid(data, root, checked)
    except (TypeError, ValueError, AttributeError, KeyError, OSError):
        return False


def _write_atomic(directory: str, data: dict) -> None:
    # Not mkstemp: its 0600 would hide the cache from the other users of a shared build tree.
    tmp = os.path.join(directory, f"{FACTS_NAME}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, separators=(",", ":"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, os.path.join(directory, FACTS_NAME))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def obtain(root: str, directory: str, checked: "str | None" = None, debug=None) -> Facts:
    """The facts of root, from the cache in directory when valid, else built (by one process
    at a time) and cached there. Raises FactsError when the directory cannot hold the cache."""
    import fcntl

    from wqlint import safeio
    say = debug or (lambda msg: None)
    path = os.path.join(directory, FACTS_NAME)
    data = _read(path)
    if data is not None and _usable(data, root, checked):
        say(f"facts: reused {path}")
        return Facts(data, directory=directory)
    try:
        lock = safeio.open_lock(os.path.join(directory, LOCK_NAME))
    except OSError as exc:
        raise FactsError(f"cannot create {os.path.join(directory, LOCK_NAME)}: {exc.strerror or exc}") from None
    with lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # released when the file is closed
        data = _read(path)  # built by another checker while this one waited?
        if data is not None and _usable(data, root, checked):
            say(f"facts: reused {path} (built by another checker)")
            return Facts(data, directory=directory)
        data = build(root, checked)
        try:
            _write_atomic(directory, data)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EROFS, errno.EPERM, errno.ENOSPC):
                raise FactsError(f"cannot write {path}: {exc.strerror}") from None
            raise
        say(f"facts: built {path} for {root} in {data['build_seconds']} s")
        return Facts(data, built=True, directory=directory)
