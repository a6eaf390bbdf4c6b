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

from wqlint import __version__, errors
from wqlint.code_id import code_id
from wqlint.check import names

# Plain strings for paths, no pathlib, hashlib or typing: this module is imported by every
# checker process, and those imports would cost more than reading the facts.

FORMAT = 7
FACTS_NAME = ".wqlint-facts.json"
LOCK_NAME = ".wqlint-facts.lock"


class FactsError(errors.WqlintError):
    pass


# -- where ------------------------------------------------------------------------------------
def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def external_module(real: str) -> "str | None":
    """The external module's directory (M=, Kbuild exports it as KBUILD_EXTMOD) holding the
    file real (a real path), or None."""
    ext = os.environ.get("KBUILD_EXTMOD")
    if ext:
        ext = os.path.realpath(ext)
        if _under(real, ext):
            return ext
    return None


def cache_dir(file: str, root: str) -> str:
    """Where the cache lives: the module's output directory for an external module, else the
    build output directory, which is where Kbuild runs the checker."""
    ext = os.environ.get("KBUILD_EXTMOD")
    if ext and os.path.realpath(ext) == root:
        out = os.environ.get("KBUILD_EXTMOD_OUTPUT")  # MO= (v6.13+)
        return os.path.realpath(out if out else ext)
    return os.getcwd()


# -- sites to and from JSON -------------------------------------------------------------------
# One file's sites are kept as the index keeps them (wqlint.scan.store): through scan.codec,
# directed by the types Site declares, each Step once in a table. Only the Steps' paths change
# on the way back: the facts hold them relative to the root, a checker shows them as it names
# the file.
_CODEC: list = []  # the codec of list[Site], built the first time a process needs it


def _codec():
    if not _CODEC:
        from wqlint.finding import Step
        from wqlint.scan import codec
        from wqlint.scan.site import Site
        _CODEC.append(codec.Codec(list[Site], shared=(Step,)))
    return _CODEC[0]


def encode_sites(sites: list) -> dict:
    """The sites of one file as JSON data."""
    return _codec().encode(sites)


def decode_sites(data, path: str, path_of) -> list:
    """The sites encoded as data, of the file shown as path, every Step's path passed through
    path_of; scan.codec.Invalid when data is not what encode_sites() gives."""
    from dataclasses import replace

    from wqlint.finding import Step
    sites = _codec().decode(data, adjust={Step: lambda step: replace(step, path=path_of(step.path))})
    for site in sites:
        site.path = path
    return sites


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

        from wqlint import safeio
        from wqlint.scan import codec
        try:
            packed = safeio.parse_json(safeio.inflate(base64.b64decode(raw, validate=True), MAX_SITES_BYTES))
            return decode_sites(packed, path_of(rel), path_of)
        except (safeio.InputRefused, codec.Invalid, ValueError, RecursionError) as exc:
            problem = str(exc) if isinstance(exc, (safeio.InputRefused, codec.Invalid)) else type(exc).__name__
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

    from wqlint import api
    from wqlint.scan.engine import Engine, ScanOptions
    from wqlint.scan.targets import Targets

    started = time.time_ns()
    delay = os.environ.get("WQLINT_TEST_FACTS_DELAY")  # tests: make concurrent checkers wait
    if delay:
        time.sleep(float(delay))
    # The same analysis as `wqlint scan` of the whole tree, through the same per-tree index
    # (wqlint.scan.store): after a scan of the tree, or a build for another O= directory, the
    # sites are taken from it, and a tree changed since is resolved again from its answers.
    # root given: the facts are keyed by paths in root, as Kbuild names the files it compiles
    # (a module directory's symbolic links are not followed out of it, as a scan would).
    engine = Engine(Targets([root], root=Path(root)), None, ScanOptions(jobs=jobs or os.cpu_count() or 1, store=True))
    analysis = engine.analysis()
    sites = analysis.sites
    by_file: dict = {}
    wrappers = set()
    for site in sites:
        if site.path.startswith("<"):
            continue  # wqlint's own description of the API
        by_file.setdefault(site.path, []).append(site)
        wrappers.update(site.via)
        if site.entry not in api.SINKS:
            wrappers.add(site.entry)
    base = root
    read = {rel for rel in analysis.read if not rel.startswith("<")}
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
            "sites": {rel: _pack(encode_sites(v)) for rel, v in sorted(by_file.items())}}


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
    from wqlint import tools

    tmp = os.path.join(directory, f"{FACTS_NAME}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    with tools.temp_path(tmp):  # (gone once renamed; removed if anything, a signal too, stops it first)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, separators=(",", ":"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, os.path.join(directory, FACTS_NAME))


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
