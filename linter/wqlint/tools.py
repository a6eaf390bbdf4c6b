"""The one way wqlint runs another program: ripgrep, grep, git, spatch, cpp, sparse, perl (the
tree's scripts/get_maintainer.pl), and for `bulk --verify` cp, patch and make.

What a tree, its git configuration, the user's configuration of a tool or the environment
says must not run anything, nor change what a tool prints. So every program runs:

- with an argument list, never through a shell, stdin closed unless wqlint feeds it;
- in an environment made here, not inherited: PATH (which finds the programs) and TMPDIR,
  a C locale, HOME=/dev/null (no ~/.gitconfig, ~/.cocciconfig, ~/.get_maintainer.conf...),
  and nothing else: no GIT_*, RIPGREP_CONFIG_PATH, GREP_OPTIONS, PERL5OPT/PERL5LIB,
  PYTHONPATH, COMPILER_PATH/GCC_EXEC_PREFIX, LD_PRELOAD, MAKEFLAGS... of the caller;
- with git's configuration files other than the repository's own turned off
  (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null, GIT_ATTR_NOSYSTEM) and, at command
  scope, which beats the repository's .git/config, every setting that would run a
  command for what wqlint asks git (a hook, core.fsmonitor, a pager, gpg for a signature
  shown by log, a transport of a lazy fetch, an automatic gc) turned off. This holds for
  git run by another tool too (spatch's --use-gitgrep, get_maintainer.pl). wqlint itself
  never asks git to hash or show a work tree file, which is what runs filter and textconv
  drivers (see wqlint.fix.apply);
- ripgrep with --no-config;
- in its own process group, killed whole when it outlives its time limit.

Every program running and every temporary file or directory wqlint made (temp_dir(),
temp_path()) is in one registry here. When SIGTERM, SIGINT, SIGHUP or SIGQUIT ends wqlint
(end_on_signals()), the process group of every program still running gets SIGTERM, then
SIGKILL after ENDING_GRACE seconds, the temporary files are removed, and the signal is
delivered again with its default action: wqlint ends as the sender asked (status 128+N).
A signal its parent had ignored (nohup) stays ignored.

A caller checks that the output has the shape it asked for and treats anything else as an
error, never as "nothing found".
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from typing import Iterator

from wqlint import errors

# Settings given to every git at command scope (GIT_CONFIG_COUNT/KEY/VALUE: the same as
# `git -c`, passed on to the git processes other programs start).
GIT_SETTINGS = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.attributesFile", "/dev/null"),
    ("core.untrackedCache", "false"),
    ("core.sshCommand", "false"),
    ("protocol.allow", "never"),
    ("log.showSignature", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("color.ui", "false"),
    ("i18n.logOutputEncoding", "UTF-8"),
)
_KEPT = ("PATH", "TMPDIR")


class ToolError(errors.WqlintError):
    """A program that could not be run or gave no answer in time; str() is one line."""


def _search_path() -> list:
    """The directories of PATH that name themselves: an empty or relative entry ('', '.',
    'bin') would find a program in whatever directory is current, the tree's own `rg` or
    `git` when wqlint runs a program there (or make runs one in the kernel's tree)."""
    return [d for d in os.environ.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(d)]


def which(name: str) -> str | None:
    """The absolute path of the program name (a path when it holds a '/'), or None."""
    found = [os.path.abspath(name)] if "/" in name else [os.path.join(d, name) for d in _search_path()]
    for cand in found:
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def environment(extra: dict | None = None) -> dict:
    """The environment every program runs in (see the module's text); extra: the caller's
    own fixed settings (never values read from the input)."""
    env = {k: os.environ[k] for k in _KEPT if k in os.environ}
    env["PATH"] = os.pathsep.join(_search_path())
    env.update(LC_ALL="C", LANG="C", HOME=os.devnull,
               GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_ATTR_NOSYSTEM="1",
               GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", GIT_NO_LAZY_FETCH="1",
               GIT_NO_REPLACE_OBJECTS="1", GIT_PAGER="cat", PAGER="cat",
               GIT_CONFIG_COUNT=str(len(GIT_SETTINGS)))
    for n, (key, value) in enumerate(GIT_SETTINGS):
        env[f"GIT_CONFIG_KEY_{n}"] = key
        env[f"GIT_CONFIG_VALUE_{n}"] = value
    env.update(extra or {})
    return env


def _argv(argv: list) -> list:
    argv = [os.fspath(a) for a in argv]
    if os.path.basename(argv[0]) == "rg" and "--no-config" not in argv:
        argv.insert(1, "--no-config")  # RIPGREP_CONFIG_PATH is gone too; this says it twice
    return argv


def run(argv: list, *, timeout: float, what: str | None = None, cwd=None, input: bytes | None = None,
        env: dict | None = None, text: bool = False, limit: int | None = None,
        search: bool = False) -> subprocess.CompletedProcess:
    """Run argv (argv[0] a program name or path) and return its exit status and output, as
    bytes (text: str, decoded as UTF-8, a bad byte replaced). ToolError when it cannot be
    started, gives no answer in timeout seconds, or (limit) writes more than limit bytes on
    stdout (then it and every process it started are killed: its output is never held whole).
    env: extra variables (see environment()). search: a search of the tree, which changes
    nothing: inside shared_searches(), made once for the scans that ask it."""
    shared = _shared
    if search and shared is not None and shared.pid == os.getpid():
        return shared.run(_key(argv, cwd, input, env, text, limit),
                          lambda: run(argv, timeout=timeout, what=what, cwd=cwd, input=input, env=env,
                                      text=text, limit=limit))
    argv = _argv(argv)
    what = what or os.path.basename(argv[0])
    # The program found here, where it names itself (which()); argv[0] stays as given, as
    # programs name themselves after it in their messages. One not found: "cannot run".
    program = which(argv[0]) or os.path.join(os.sep, "nonexistent", os.path.basename(argv[0]))
    try:
        with _registry():  # started and registered at once: a signal's ending sees it
            proc = subprocess.Popen(argv, executable=program, cwd=cwd, env=environment(env), start_new_session=True,
                                    stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            _running.add(proc.pid)
    except OSError as exc:
        raise ToolError(f"{what}: cannot run: {exc.strerror or exc}") from None
    try:
        return _finish(proc, argv, what, input, timeout, limit, text)
    finally:
        with _registry():
            _running.discard(proc.pid)


def prefetch(argv: list, *, timeout: float, what: str | None = None, cwd=None, input: bytes | None = None,
             limit: int | None = None) -> bool:
    """Inside shared_searches(): start the search run(argv, ..., search=True) would make, in a
    thread of its own, for the scans that will ask it (its answer is theirs, as if one of
    them had made it); False, and nothing started, outside or when it is made or under way."""
    shared = _shared
    if shared is None or shared.pid != os.getpid():
        return False
    return shared.start(_key(argv, cwd, input, None, False, limit),
                        lambda: run(argv, timeout=timeout, what=what, cwd=cwd, input=input, limit=limit))


def _key(argv: list, cwd, input: bytes | None, env: dict | None, text: bool, limit: int | None) -> tuple:
    """What makes two searches one (shared_searches())."""
    return (tuple(os.fspath(a) for a in argv), os.fspath(cwd) if cwd is not None else None, input,
            tuple(sorted((env or {}).items())), text, limit)


class _Answer:
    """A shared search: set once made (its result or ToolError), and how often taken."""

    def __init__(self) -> None:
        self.made = threading.Event()
        self.result: "subprocess.CompletedProcess | ToolError | None" = None
        self.taken = 0


class _Shared:
    """The searches made inside shared_searches(): each result (or error) until every one of
    the scans took it."""

    def __init__(self, takers: int) -> None:
        self.pid = os.getpid()  # (a forked worker makes its own: nobody there sets these)
        self.takers = takers
        self.lock = threading.Lock()
        self.answers: dict = {}  # key -> _Answer

    def start(self, key: tuple, make) -> bool:
        """The answer to key made in a thread of its own, unless it is made or under way."""
        with self.lock:
            if key in self.answers:
                return False
            got = self.answers[key] = _Answer()
        threading.Thread(target=self._make, args=(got, make, True), name="wqlint-prefetch", daemon=True).start()
        return True

    @staticmethod
    def _make(got: _Answer, make, apart: bool = False) -> None:
        """got's answer, make(). apart: in a thread of its own, with no caller to raise to:
        whatever goes wrong is the answer."""
        try:
            got.result = make()
        except ToolError as exc:
            got.result = exc
        except Exception as exc:
            if not apart:
                raise
            got.result = ToolError(f"search: {exc}")
        finally:
            got.made.set()

    def run(self, key: tuple, make) -> subprocess.CompletedProcess:
        with self.lock:
            got = self.answers.get(key)
            mine = got is None
            if got is None:
                got = self.answers[key] = _Answer()
        if mine:
            self._make(got, make)
        else:
            got.made.wait()
        with self.lock:
            got.taken += 1
            if got.taken >= self.takers:
                self.answers.pop(key, None)
        result = got.result
        if result is None:  # (the run that made it ended otherwise: an interrupt)
            raise ToolError("search: ended before its answer")
        if isinstance(result, ToolError):
            raise result
        # each its own: a caller may set its output (scan.index's filter of the records)
        return subprocess.CompletedProcess(result.args, result.returncode, result.stdout, result.stderr)


_shared: "_Shared | None" = None


@contextlib.contextmanager
def shared_searches(takers: int = 2) -> Iterator[None]:
    """Inside: a search (run(search=True)) with the same program, arguments, directory and
    input as one made or under way in this process is not run again, its answer is taken;
    each is let go once takers have taken it. For the two scans of a review, which ask the
    same searches of one tree at about the same time."""
    global _shared
    before, _shared = _shared, _Shared(takers)
    try:
        yield
    finally:
        _shared = before


def _finish(proc: subprocess.Popen, argv: list, what: str, input: bytes | None, timeout: float,
            limit: int | None, text: bool) -> subprocess.CompletedProcess:
    try:
        if limit is None:
            out, err = proc.communicate(input, timeout=timeout)
        else:
            out, err = _bounded(proc, input, timeout, limit)
    except subprocess.TimeoutExpired:
        _kill(proc)
        raise ToolError(f"{what}: no answer in {timeout:g} s") from None
    except _TooMuch:
        _kill(proc)
        raise ToolError(f"{what}: more than {_size(limit or 0)} of output, not read") from None
    except BaseException:
        _kill(proc)
        raise
    if text:
        return subprocess.CompletedProcess(argv, proc.returncode, out.decode("utf-8", "replace"),
                                           err.decode("utf-8", "replace"))
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


class _TooMuch(Exception):
    pass


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n} bytes"


def _bounded(proc: subprocess.Popen, input: bytes | None, timeout: float, limit: int) -> tuple:
    """communicate(), stopping (_TooMuch) once stdout passes limit bytes; stderr is kept to
    its first MiB (a tool's complaint is read for one line)."""
    import selectors
    import time

    assert proc.stdout is not None and proc.stderr is not None
    deadline = time.monotonic() + timeout
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    got: dict = {out_fd: [], err_fd: []}
    sizes = {out_fd: 0, err_fd: 0}
    pending = memoryview(input or b"")
    in_fd = -1
    with selectors.DefaultSelector() as sel:
        if proc.stdin is not None:
            if pending:
                in_fd = proc.stdin.fileno()
                os.set_blocking(in_fd, False)
                sel.register(in_fd, selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
                proc.stdin = None  # (closed: communicate() in _kill() must not flush it)
        sel.register(out_fd, selectors.EVENT_READ)
        sel.register(err_fd, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, timeout)
            for key, _events in sel.select(left):
                fd = key.fd
                if fd == in_fd:
                    try:
                        done = os.write(fd, pending[:65536])
                    except BrokenPipeError:
                        done = len(pending)
                    pending = pending[done:]
                    if not pending and proc.stdin is not None:
                        sel.unregister(fd)
                        proc.stdin.close()
                        proc.stdin = None
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    sel.unregister(fd)
                    continue
                sizes[fd] += len(chunk)
                if fd == out_fd and sizes[fd] > limit:
                    raise _TooMuch()
                if fd == out_fd or sizes[fd] <= 1024 * 1024:
                    got[fd].append(chunk)
    proc.wait(max(0.0, deadline - time.monotonic()))
    return b"".join(got[out_fd]), b"".join(got[err_fd])


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:  # a process that left the group still holds a pipe
        pass


def last_line(proc: subprocess.CompletedProcess, first: bool = False) -> str:
    """The last (first) line of what the program said on stderr (else stdout), or its exit
    status."""
    for stream in (proc.stderr, proc.stdout):
        if isinstance(stream, bytes):
            stream = stream.decode("utf-8", "replace")
        lines = [ln.strip() for ln in (stream or "").splitlines() if ln.strip()]
        if lines:
            return lines[0] if first else lines[-1]
    return f"exit status {proc.returncode}"


def git(tree, *args, timeout: float = 300, what: str | None = None,
        limit: int | None = None) -> subprocess.CompletedProcess:
    """git -C tree ARGS (see run())."""
    return run(["git", "-C", os.fspath(tree), *args], timeout=timeout, what=what or f"git {args[0]}",
               limit=limit)


# -- what wqlint leaves when a signal ends it: nothing ------------------------------------
# The registry: the process (and group) id of every program started and not yet reaped, and
# every temporary file or directory made and not yet removed. Changed only under _lock, which
# the signal path takes too (it runs in the main thread, between two of its bytecodes): while
# the main thread holds the lock, a signal only takes note (_state["pending"]) and the ending
# starts as the lock is released; another thread holding it is waited for. So a program is
# never started unseen (between fork and its registration), nor a directory made unseen.
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
ENDING_GRACE = 2.0  # seconds between SIGTERM and SIGKILL (make removes the half-built object)
_lock = threading.Lock()
_running: set = set()
_temps: dict = {}  # path -> None, in the order made (removed newest first)
_state: dict = {"held": 0, "pending": None, "ending": False}


@contextlib.contextmanager
def _registry() -> Iterator[None]:
    main = threading.current_thread() is threading.main_thread()
    if main:
        _state["held"] += 1  # (before the lock is taken: a signal from here on waits for it)
    _lock.acquire()
    try:
        yield
    finally:
        _lock.release()
        if main:
            _state["held"] -= 1
            if _state["held"] == 0 and _state["pending"] is not None:
                _end(_state["pending"])


def end_on_signals() -> None:
    """From now on, SIGTERM, SIGINT, SIGHUP or SIGQUIT ends every program started and removes
    every temporary file made, then ends wqlint as the signal asked (see the module's text).
    A signal ignored when wqlint started (nohup, a background job's SIGINT) stays ignored.
    Main thread only. At a normal exit too, a program still running is ended and a
    temporary file still there removed."""
    import atexit

    for signum in ENDING_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _on_signal)
    atexit.unregister(_at_exit)  # (once, however often asked)
    atexit.register(_at_exit)


def _at_exit() -> None:
    with _registry():
        groups, temps = sorted(_running), list(_temps)
    _end_programs(groups)
    for path in reversed(temps):
        _remove(path)


def _on_signal(signum: int, frame) -> None:
    if _state["ending"]:
        return  # a second signal while the first ends everything
    if _state["held"]:
        _state["pending"] = signum
        return
    _end(signum)


def _end(signum: int) -> None:
    _state["ending"] = True
    _lock.acquire()  # never released: no other thread starts a program or makes a file now
    _end_programs(sorted(_running))
    for path in reversed(list(_temps)):
        _remove(path)
    signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # (not reached: the default action of every ENDING_SIGNALS ends the process)


def _end_programs(groups: list) -> None:
    """SIGTERM to every process group, SIGKILL to those not gone ENDING_GRACE seconds later."""
    for pid in groups:
        try:
            os.killpg(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + ENDING_GRACE
    while groups and time.monotonic() < deadline:
        groups = [pid for pid in groups if _alive(pid)]
        if groups:
            time.sleep(0.02)
    for pid in groups:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass


def _alive(pid: int) -> bool:
    """Is any process of the group pid left? (Its leader, our child, reaped when it has ended:
    a zombie still counts as a member.)"""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # reaped by the thread that waits for it
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass
    return True


def _remove(path: str) -> None:
    import shutil

    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass


@contextlib.contextmanager
def temp_dir(prefix: str) -> Iterator[str]:
    """A new private directory in TMPDIR, removed with all it holds when the block ends, or
    when a signal ends wqlint first."""
    import tempfile

    with _registry():
        path = tempfile.mkdtemp(prefix=prefix)
        _temps[path] = None
    with _held(path):
        yield path


@contextlib.contextmanager
def temp_path(path: str) -> Iterator[str]:
    """path, a temporary file about to be made (by the caller, or by a program told its name),
    removed when the block ends if it is there, or when a signal ends wqlint first."""
    with _registry():
        _temps[path] = None
    with _held(path):
        yield path


@contextlib.contextmanager
def _held(path: str) -> Iterator[None]:
    """The block path is registered for: removed, and forgotten, when it ends."""
    try:
        yield
    finally:
        _remove(path)
        with _registry():
            _temps.pop(path, None)


# -- wqlint's own workers -------------------------------------------------------------------
def forked(task, shares: list, meanwhile=None) -> list | None:
    """[task(share)] of each share, bytes, each worked out in a child process forked from
    this one (which sees what this one built, copy-on-write), while this one runs
    meanwhile() (its own share: no process of its own, nor a copy of what it holds). The
    children are in the registry as the programs are, each the leader of its own process
    group: a signal that ends wqlint ends them, and the programs they started (each child
    ends its own, as wqlint does). None when a child fails (the caller works it out
    itself): an answer is never half of one."""
    started: list = []
    try:
        for share in shares:
            started.append(fork(task, share))
        if meanwhile is not None:
            meanwhile()
        got = [child.answer() for child in started]
        return None if any(g is None for g in got) else got
    finally:
        for child in started:
            child.reap()


class Child:
    """A child process forked by fork(), its answer taken once (answer()), then reaped."""

    def __init__(self, pid: int, rfd: int) -> None:
        self.pid, self.rfd = pid, rfd

    def answer(self) -> bytes | None:
        """What the child wrote, once it ended well; None when it did not."""
        return _answer(self.pid, self.rfd)

    def reap(self) -> None:
        """Its pipe closed, and the child ended if it has not."""
        _reap(self.pid, self.rfd)


def fork(task, share) -> Child:
    """task(share), bytes, worked out in a child process forked from this one now (see
    forked()); its answer is taken later, from the Child. OSError when it cannot be forked."""
    rfd, wfd = os.pipe()
    try:
        with _registry():  # forked and registered at once: a signal's ending sees it
            pid = os.fork()
            if pid == 0:  # pragma: no cover (the child: its coverage is not gathered)
                os.close(rfd)
                _child(task, share, wfd)
            with contextlib.suppress(OSError):
                os.setpgid(pid, pid)  # (the child makes itself one too: whichever comes first)
            _running.add(pid)
    except BaseException:
        os.close(rfd)
        raise
    finally:
        os.close(wfd)
    return Child(pid, rfd)


def _child(task, share, wfd: int) -> None:  # pragma: no cover
    """A forked worker, task(share): its own process group, a registry of its own (what the
    parent had running or made is the parent's to end), its answer written, then gone
    without running anything the parent set up to run at its exit."""
    global _lock
    status = 1
    try:
        os.setpgid(0, 0)
        _lock = threading.Lock()
        _running.clear()
        _temps.clear()
        pending = _state["pending"]
        _state.update(held=0, pending=None, ending=False)
        if pending is not None:
            _end(pending)
        data = task(share)
        with os.fdopen(wfd, "wb") as out:
            out.write(data)
        status = 0
    except BaseException:  # the parent works the share out itself
        pass
    finally:
        _at_exit()
        os._exit(status)


def _answer(pid: int, rfd: int) -> bytes | None:
    """What the child pid wrote, when it ended well; None when it did not."""
    with os.fdopen(rfd, "rb", closefd=False) as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    with _registry():
        _running.discard(pid)
    return data if os.waitstatus_to_exitcode(status) == 0 else None


def _reap(pid: int, rfd: int) -> None:
    """The child's pipe closed, and the child ended if it has not (an exception here)."""
    try:
        os.close(rfd)
    except OSError:
        pass
    with _registry():
        running = pid in _running
    if running:
        _end_programs([pid])
        with _registry():
            _running.discard(pid)
