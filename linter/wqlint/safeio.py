"""The one way wqlint reads input and the one way it writes output.

Input comes from other people (trees, patches, saved scans, caches): a name may be a FIFO that
never ends, a device that never stops (/dev/zero), a socket, or a symbolic link out of the
tree. read_bytes() opens without blocking, accepts only a regular file, refuses a link that
leads outside the tree it was given, and reads at most a bounded number of bytes (read_head():
the first bytes of a file of any size); inflate() and parse_json() bound what a compressed or
nested document becomes; searchable() says which paths an external tool may be handed to
read; walk() lists a tree of any depth. Every problem is an InputRefused whose str() is one
line (the caller names the input).
Nothing else in wqlint opens a file to read it (tests/test_safeio.py holds the package to that).

write_atomic() replaces a regular file (or creates one) through a temporary file in the same
directory and a rename, so a reader never sees half a file and a failure leaves the old one.
What it replaces keeps its mode and, where the process may, its owner; a new file gets the
mode the umask gives (0644 usually). A device, FIFO, socket or directory is never replaced.
Every output path is resolved through resolve(), which follows a symbolic link in a sticky
world-writable directory (/tmp) only as the kernel's fs.protected_symlinks does for open():
so a link another user planted there cannot make wqlint replace the file it points to.
"""
from __future__ import annotations

import errno
import os
import stat

from wqlint import errors

# No pathlib, tempfile or typing at import: `wqlint check` reads its facts cache through this
# module in every compiler process.


# The largest source file (.c, .h, Kbuild) read: kernel files are at most a few MiB (the largest
# generated headers about 6).
MAX_SOURCE_BYTES = 8 * 1024 * 1024


class InputRefused(errors.WqlintError):
    """Input that is not read; str() is the one-line problem (without the path)."""


class OutputRefused(errors.WqlintError):
    """Output that is not written; str() is the one-line problem (without the path)."""


class Interrupted(KeyboardInterrupt):
    """SIGTERM, SIGINT, SIGHUP or SIGQUIT came while files were being written (see signals_deferred);
    raised only where the signal, delivered again, did not end the process."""


# -- signals --------------------------------------------------------------------------------
# While wqlint writes files, SIGTERM, SIGINT, SIGHUP and SIGQUIT only take note (a default SIGTERM
# would kill the process between a temporary file and its rename, or halfway through the
# renames of a set of files). Where it is safe, the writer asks interrupted(): before the
# renames, it removes its temporary files and stops; once the renames have begun, it
# finishes them. When the outermost signals_deferred() ends, the signal is delivered again
# with the handler that was there before, so the process ends as the sender meant (the
# `wqlint` command's handler: wqlint.tools.end_on_signals, whose signals these are).
_DEFERRED = (2, 15, 1, 3)  # SIGINT, SIGTERM, SIGHUP, SIGQUIT (signal is imported only when needed)
_deferral: dict = {"depth": 0, "caught": None, "old": {}}


class signals_deferred:
    def __enter__(self) -> "signals_deferred":
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return self  # only the main thread may set handlers; it also runs them
        if _deferral["depth"] == 0:
            _deferral["caught"] = None

            def note(signum, frame):
                if _deferral["caught"] is None:
                    _deferral["caught"] = signum
            _deferral["old"] = {s: signal.signal(s, note) for s in _DEFERRED
                                if signal.getsignal(s) is not signal.SIG_IGN}
        _deferral["depth"] += 1
        return self

    def __exit__(self, *exc) -> None:
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return
        _deferral["depth"] -= 1
        if _deferral["depth"] == 0:
            for s, old in _deferral["old"].items():
                signal.signal(s, old)
            caught, _deferral["caught"] = _deferral["caught"], None
            if caught is not None:
                os.kill(os.getpid(), caught)


def interrupted() -> None:
    """Raise Interrupted when a deferred signal came (see signals_deferred)."""
    if _deferral["caught"] is not None:
        raise Interrupted()


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a FIFO, not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    return "not a regular file"


def inside(path: str | os.PathLike, root: str | os.PathLike, real_dirs: dict | None = None) -> bool:
    """Does path, symbolic links followed, lie in root (or is it root)? real_dirs: the real
    paths of directories already resolved, kept by a caller that reads many files of one
    tree in one run (a whole-tree scan resolved 7000 paths of ten components each)."""
    if real_dirs is None:
        real_root, real = os.path.realpath(root), os.path.realpath(path)
    else:
        real_root = _real_dir(os.fspath(root), real_dirs)
        head, tail = os.path.split(os.fspath(path))
        real = os.path.join(_real_dir(head, real_dirs), tail)
        if tail in ("", ".", "..") or os.path.islink(real):
            real = os.path.realpath(real)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _real_dir(path: str, real_dirs: dict) -> str:
    got = real_dirs.get(path)
    if got is None:
        got = real_dirs[path] = os.path.realpath(path)
    return got


def overlap(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Is one of two directories, links followed, the other or inside it?"""
    return inside(a, b) or inside(b, a)


def _problem(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "no such file"
    if exc.errno == errno.EACCES:
        return "permission denied"
    if exc.errno == errno.EISDIR:
        return "is a directory"
    if exc.errno == errno.ENXIO:  # a socket, or a FIFO without a writer on some systems
        return "not a regular file"
    if exc.errno == errno.ELOOP:
        return "symbolic link loop"
    return exc.strerror or str(exc)


def _open_regular(path, root, real_dirs=None) -> "tuple[int, os.stat_result]":
    """(fd, stat) of the regular file path opened to read, else InputRefused."""
    if root is not None and not inside(path, root, real_dirs):
        raise InputRefused(f"a symbolic link out of the tree {root}, not read")
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        raise InputRefused(_problem(exc)) from None
    except ValueError:  # a NUL in the name
        raise InputRefused("no such file") from None
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise InputRefused(_problem(exc)) from None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise InputRefused(_kind(st.st_mode))
    return fd, st


def _read_fd(fd: int, size: int) -> "tuple[bytes, int]":
    """At most size bytes from fd, and how many."""
    chunks, got = [], 0
    while got < size:
        chunk = os.read(fd, min(1 << 20, size - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks), got


def read_bytes(path: str | os.PathLike, limit: int, root: str | os.PathLike | None = None,
               real_dirs: dict | None = None) -> bytes:
    """The bytes of the regular file path (at most limit), else InputRefused saying why.
    With root, a path whose symbolic links lead outside root is refused (real_dirs: see
    inside())."""
    fd, st = _open_regular(path, root, real_dirs)
    try:
        if st.st_size > limit:
            raise InputRefused(f"larger than {_size(limit)}, not read")
        data, got = _read_fd(fd, limit + 1)  # a file that grows while read stops here too
    except OSError as exc:
        raise InputRefused(_problem(exc)) from None
    finally:
        os.close(fd)
    if got > limit:
        raise InputRefused(f"larger than {_size(limit)}, not read")
    return data


def read_head(path: str | os.PathLike, size: int, root: str | os.PathLike | None = None) -> bytes:
    """The first size bytes (or fewer) of the regular file path, whatever its length, else
    InputRefused: for a file only its start says something about (a Makefile's version)."""
    fd, _st = _open_regular(path, root)
    try:
        return _read_fd(fd, size)[0]
    except OSError as exc:
        raise InputRefused(_problem(exc)) from None
    finally:
        os.close(fd)


def searchable(path: str | os.PathLike) -> bool:
    """May path be handed to an external tool to read (ripgrep, grep, spatch)? Only a regular
    file or a directory, links followed: a tool told to read a FIFO waits for a writer forever,
    and one told to read a device never reaches its end."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def walk(top: str | os.PathLike, onerror=None, followlinks: bool = False):
    """os.walk(top) from the top down, in its order, and the caller may prune dirs as there;
    without recursion: Python 3.11's os.walk and Path.rglob recurse once a directory, and a
    tree a thousand directories deep stops them with RecursionError (here it costs a list)."""
    stack = [os.fspath(top)]
    while stack:
        here = stack.pop()
        dirs: list = []
        nondirs: list = []
        try:
            with os.scandir(here) as it:
                for entry in it:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    (dirs if is_dir else nondirs).append(entry.name)
        except OSError as exc:
            if onerror is not None:
                onerror(exc)
            continue
        yield here, dirs, nondirs
        for name in reversed(dirs):
            path = os.path.join(here, name)
            if followlinks or not os.path.islink(path):
                stack.append(path)


def inflate(data: bytes, limit: int) -> bytes:
    """data decompressed (zlib), else InputRefused: damaged, truncated, or more than limit
    bytes once decompressed (a few MiB of zeros compress a thousandfold)."""
    import zlib

    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise InputRefused(f"damaged compressed data ({exc})") from None
    if len(out) > limit:
        raise InputRefused(f"more than {_size(limit)} once decompressed, not read")
    if not inflater.eof:
        raise InputRefused("truncated compressed data")
    return out


def parse_json(data: bytes | str):
    """The JSON document data, else InputRefused saying why it is not one (not UTF-8, not
    JSON, nested too deeply)."""
    import json

    try:
        return json.loads(data)
    except UnicodeDecodeError as exc:
        raise InputRefused(f"not valid UTF-8 (byte 0x{exc.object[exc.start]:02x})") from None
    except ValueError as exc:
        raise InputRefused(str(exc)) from None
    except RecursionError:
        raise InputRefused("nested too deeply") from None


def read_text(path: str | os.PathLike, limit: int, root: str | os.PathLike | None = None,
              errors: str = "strict") -> str:
    """read_bytes() decoded as UTF-8; with errors='strict' a bad byte is InputRefused."""
    data = read_bytes(path, limit, root)
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputRefused(f"line {line}: not valid UTF-8 (byte 0x{data[exc.start]:02x})") from None


def _size(limit: int) -> str:
    if limit >= 1024 * 1024 and limit % (1024 * 1024) == 0:
        return f"{limit // (1024 * 1024)} MiB"
    if limit >= 1024 and limit % 1024 == 0:
        return f"{limit // 1024} KiB"
    return f"{limit} bytes"


def open_lock(path: str | os.PathLike):
    """The lock file path (created when missing) opened for fcntl.flock(), as a binary file
    object; OSError when it cannot be, or is not a regular file (a FIFO, or a link that could
    lead anywhere: never followed)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY,
                 0o666)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, _kind(mode), os.fspath(path))
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "r+b")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def resolve(path: str | os.PathLike) -> str:
    """The real path of path (as os.path.realpath), else OutputRefused naming a symbolic link
    on the way that fs.protected_symlinks would not let open() follow: one in a sticky
    world-writable directory (/tmp) that belongs neither to this user nor to the directory's
    owner. realpath() follows any link, and a rename onto its answer would replace whatever
    a link planted by another user points to, around the kernel's protection."""
    name = os.fspath(path)
    pending = name.split(os.sep)[::-1]  # components still to walk, the next one last
    resolved = os.sep if os.path.isabs(name) else os.getcwd()
    hops = 0
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            resolved = os.path.dirname(resolved)
            continue
        here = os.path.join(resolved, part)
        try:
            st = os.lstat(here)
        except (OSError, ValueError):
            # missing (the file to create) or unreadable: no link to follow from here on
            return os.path.join(here, *pending[::-1]) if pending else here
        if not stat.S_ISLNK(st.st_mode):
            resolved = here
            continue
        hops += 1
        if hops > 40:  # the kernel's limit; realpath() gives the path as it stands
            return os.path.realpath(name)
        try:
            parent = os.stat(resolved)
        except OSError as exc:
            raise OutputRefused(_problem(exc)) from None
        sticky = stat.S_ISVTX | stat.S_IWOTH
        if parent.st_mode & sticky == sticky and st.st_uid not in (os.geteuid(), parent.st_uid):
            raise OutputRefused(f"{here} is a symbolic link of another user (uid {st.st_uid}) in the sticky "
                                f"world-writable directory {resolved}, not followed")
        target = os.readlink(here)
        if os.path.isabs(target):
            resolved = os.sep
        pending.extend(target.split(os.sep)[::-1])
    return resolved


def check_output(path: str | os.PathLike) -> None:
    """Refuse, before any work, an output path that write_atomic() could not replace: its
    directory missing, an existing target that is not a regular file, or a link resolve()
    does not follow, or a name that reads as an option ('--format': a value forgotten after
    the option before it; ./--format names such a file)."""
    if os.fspath(path).startswith("--"):
        raise OutputRefused("reads as an option, not a file name (write ./NAME for such a file)")
    real = resolve(path)
    if real == os.devnull:
        return  # output thrown away: written with nothing to replace
    directory = os.path.dirname(real)
    if not os.path.isdir(directory):
        raise OutputRefused(f"directory {os.path.dirname(os.path.abspath(path)) or '.'} does not exist")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputRefused(_problem(exc)) from None
    if not stat.S_ISREG(st.st_mode):
        raise OutputRefused(f"{_kind(st.st_mode)}, not replaced")


def write_atomic(path: str | os.PathLike, data: bytes | str, root: str | os.PathLike | None = None) -> None:
    """Replace (or create) the regular file path with data, atomically. A symbolic link is
    followed (its target is replaced) where resolve() follows it; with root, a target outside
    root is refused. Raises OutputRefused (not a regular file, outside root, a link of another
    user in a sticky directory) or OSError (cannot write)."""
    if isinstance(data, str):
        # surrogateescape: bytes of a source file that are not UTF-8 are written back as read
        data = data.encode("utf-8", "surrogateescape")
    if root is not None and not inside(path, root):
        raise OutputRefused(f"outside the tree {root}, not written")
    from pathlib import Path

    real = resolve(path)
    if real == os.devnull:
        return  # (check_output() accepts it: the caller wants no copy of the output)
    target = Path(real)
    try:
        old: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        old = None
    if old is not None and not stat.S_ISREG(old.st_mode):
        raise OutputRefused(f"{_kind(old.st_mode)}, not replaced")
    with signals_deferred():
        _replace(target, data, old)


def remove_stale_temps(path: str | os.PathLike, age: float = 3600.0) -> int:
    """Remove what write_atomic(path) left behind when killed (SIGKILL cannot be deferred):
    its temporary files beside path, regular files of this user untouched for age seconds (a
    younger one may be another run's, being written). The number removed. Only for a path in
    a directory of wqlint's own (the cache), where every such name is wqlint's: never in a
    tree or an output directory, where a file of that name may be someone's."""
    import time

    directory, name = os.path.split(os.path.realpath(path))
    prefix, removed = f".{name}.", 0
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    for entry in entries:
        if not (entry.name.startswith(prefix) and entry.name.endswith(_TEMP_SUFFIX)):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and time.time() - st.st_mtime > age:
                os.unlink(entry.path)
                removed += 1
        except OSError:
            pass
    return removed


_TEMP_SUFFIX = ".wqlint"


def _replace(target, data: bytes, old) -> None:
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=_TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if old is not None:
                os.fchmod(handle.fileno(), stat.S_IMODE(old.st_mode))
                if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                    try:
                        os.fchown(handle.fileno(), old.st_uid, old.st_gid)
                    except PermissionError:
                        pass  # not ours to give away: the file is the writer's now, as with any editor
            else:
                os.fchmod(handle.fileno(), 0o666 & ~_umask())
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class Staged:
    """Files written to temporary names beside their targets, then renamed all together
    (commit) or removed (discard): all or nothing for a set of files. Use it inside
    signals_deferred(): a signal while files are added (Interrupted) leaves no temporary
    file once discard() has run; one during commit() lets the renames finish."""

    def __init__(self) -> None:
        self._items: list = []  # (target, tmp, old bytes)

    def add(self, path: str | os.PathLike, data: bytes, before: bytes, root: str | os.PathLike | None = None) -> None:
        interrupted()
        if root is not None and not inside(path, root):
            raise OutputRefused(f"outside the tree {root}, not written")
        import tempfile
        from pathlib import Path

        target = Path(resolve(path))
        old = os.stat(target)
        if not stat.S_ISREG(old.st_mode):
            raise OutputRefused(f"{_kind(old.st_mode)}, not replaced")
        if not os.access(target, os.W_OK):
            raise OutputRefused("not writable")
        # What a killed run (SIGKILL) left beside the file is not removed: a name alike in a
        # tree may be anyone's file. Only this run's own temporary files are (discard()).
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=_TEMP_SUFFIX)
        self._items.append((target, tmp, before))
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), stat.S_IMODE(old.st_mode))
            if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                try:
                    os.fchown(handle.fileno(), old.st_uid, old.st_gid)
                except PermissionError:
                    pass
            os.fsync(handle.fileno())

    def commit(self, check=None) -> None:
        """Rename every file into place. check(target, before) is called for each just before
        the renames and may raise to stop (nothing changed then). A rename that fails puts
        the files already renamed back as they were, then raises."""
        try:
            if check is not None:
                for target, _tmp, before in self._items:
                    interrupted()
                    check(target, before)
            interrupted()  # the last moment at which stopping changes nothing
            done = []
            try:
                for target, tmp, before in self._items:
                    os.replace(tmp, target)
                    done.append((target, before))
            except BaseException:
                for target, before in reversed(done):
                    try:
                        write_atomic(target, before)
                    except OSError:
                        pass
                raise
        finally:
            self.discard()

    def discard(self) -> None:
        for _target, tmp, _before in self._items:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        self._items = []


def _walk_dirs(base: str | os.PathLike, parts: tuple, create: bool) -> int:
    """An fd of base/parts[0]/parts[1]/..., each component opened without following a
    symbolic link (base itself, the directory the user gave, may be one that resolve()
    follows); create: make the missing ones. OutputRefused names a component that is a link
    or not a directory, or a link to base that resolve() refuses."""
    fd = os.open(resolve(base), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for n, part in enumerate(parts):
            if part in ("", ".", "..") or os.sep in part:
                raise OutputRefused(f"{part!r}: not a plain name")
            if create:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                where = os.path.join(*parts[:n + 1])
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    st = os.stat(part, dir_fd=fd, follow_symlinks=False)
                    raise OutputRefused(f"{where} is a symbolic link, not followed" if stat.S_ISLNK(st.st_mode)
                                        else f"{where} is not a directory") from None
                raise
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def make_dirs(base: str | os.PathLike, rel: str) -> None:
    """mkdir -p base/rel, where no component under base may be a symbolic link (OutputRefused):
    what wqlint makes in an output directory stays in it."""
    os.close(_walk_dirs(base, tuple(rel.split("/")), create=True))


def remove_tree(base: str | os.PathLike, rel: str) -> None:
    """Remove base/rel and all it holds: a directory wqlint made in the output directory base.
    No symbolic link is followed, on the way to it (OutputRefused names one) or inside it
    (each directory is opened and emptied through file descriptors, so a link swapped in
    while it is removed leads nowhere either). Nothing there: nothing to do."""
    parts = tuple(rel.split("/"))
    try:
        parent = _walk_dirs(base, parts[:-1], create=False)
    except FileNotFoundError:
        return
    try:
        try:
            st = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(st.st_mode):
            raise OutputRefused(f"{rel} is a symbolic link, not followed")
        if not stat.S_ISDIR(st.st_mode):
            raise OutputRefused(f"{rel} is not a directory, not removed")
        _remove_at(parent, parts[-1])
    finally:
        os.close(parent)


def _remove_at(parent: int, name: str) -> None:
    """shutil.rmtree(name, dir_fd=parent) without recursion (3.11's recurses once a directory)
    and with two descriptors open at most, whatever the depth: a directory is emptied down to
    its first subdirectory, which is entered and emptied in turn; an empty one is left through
    `..`, checked to be the directory it entered from (else OutputRefused: it was moved)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, dir_fd=parent)
    path = [(os.fstat(fd), name)]  # the directories from name down to fd's, and their names
    try:
        while True:
            sub = None
            with os.scandir(fd) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        sub = entry.name
                        break
                    os.unlink(entry.name, dir_fd=fd)
            if sub is not None:
                inner = os.open(sub, flags, dir_fd=fd)
                os.close(fd)
                fd = inner
                path.append((os.fstat(fd), sub))
                continue
            gone = path.pop()[1]
            if not path:
                os.close(fd)
                fd = -1
                os.rmdir(name, dir_fd=parent)
                return
            up = os.open("..", flags, dir_fd=fd)
            os.close(fd)
            fd = up
            st, expected = os.fstat(fd), path[-1][0]
            if (st.st_dev, st.st_ino) != (expected.st_dev, expected.st_ino):
                raise OutputRefused(f"{gone}: moved while it was removed; not removed")
            os.rmdir(gone, dir_fd=fd)
    finally:
        if fd >= 0:
            os.close(fd)
