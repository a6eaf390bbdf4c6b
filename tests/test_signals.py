"""`fix --apply` interrupted by a real signal: the tree is left as it was, or (once the renames
have begun) as the fix makes it, and no temporary file is left behind.

Every wqlint these tests start has the signals they send at their default action
(at_default()), whatever the test run inherited: under `nohup`, or as a background job of a
shell without job control, SIGHUP or SIGINT come ignored, and wqlint rightly keeps an ignored
signal ignored, which would test nothing."""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_robust import DRIVER, tiny_tree

FILES = 120
FIXED = "WQ_MEM_RECLAIM | WQ_PERCPU, 0);"

# Runs `wqlint fix --apply` (the command, as entry.main starts it) in a process of its own that
# sends itself SIG at the K-th call of WHERE: after a file is staged (its temporary file
# written), or after a rename.
CHILD = """
import os, sys
from wqlint import entry, safeio
sig, where, k, root = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
calls = [0]

def hit():
    calls[0] += 1
    if calls[0] == k:
        os.kill(os.getpid(), sig)

if where == "stage":
    add = safeio.Staged.add
    def staged(self, *args, **kw):
        add(self, *args, **kw)
        hit()
    safeio.Staged.add = staged
else:
    replace = os.replace
    def renamed(src, dst):
        replace(src, dst)
        if str(src).endswith(".wqlint") and os.path.dirname(str(dst)).startswith(root):
            hit()  # (a rename of the tree's files, not of the index saved in the cache)
    os.replace = renamed
sys.argv = ["wqlint", "fix", root, "--target", "mainline", "--apply", "-j", "1"]
entry.main()
"""
ENDING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def at_default() -> None:
    """preexec_fn of every wqlint started here: the signals the tests send at their default
    action, as a shell started in a terminal gives them (and no core file from SIGQUIT's)."""
    for sig in ENDING:
        signal.signal(sig, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))


def many_files(tmp_path: Path) -> Path:
    root = tiny_tree(tmp_path)
    for n in range(FILES):
        d = root / "drivers" / f"d{n:03}"
        d.mkdir()
        (d / "demo.c").write_text(DRIVER.replace("demo", f"demo{n:03}"))
    return root


def state(root: Path) -> tuple:
    """(files fixed, files not fixed, temporary files left)."""
    fixed = unfixed = 0
    litter = []
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            if name.endswith(".wqlint"):
                litter.append(name)
            elif name.endswith(".c"):
                if FIXED in Path(dirpath, name).read_text():
                    fixed += 1
                else:
                    unfixed += 1
    return fixed, unfixed, litter


def child_env(tmp_path: Path) -> dict:
    return dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))


def interrupted_apply(tmp_path: Path, sig: int, where: str, k: int, preexec=at_default) -> tuple:
    """(the child's exit status, stderr, files fixed, files not fixed, temporary files left)."""
    root = many_files(tmp_path)
    got = subprocess.run([sys.executable, "-c", CHILD, str(int(sig)), where, str(k), str(root)],
                         capture_output=True, text=True, env=child_env(tmp_path), timeout=300,
                         preexec_fn=preexec)
    return (got.returncode, got.stderr, *state(root))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT])
@pytest.mark.parametrize("where,k", [("stage", 1), ("stage", FILES // 2), ("stage", FILES + 1),
                                     ("rename", 1), ("rename", FILES // 2), ("rename", FILES + 1)])
def test_a_signal_leaves_all_or_nothing_and_no_litter(tmp_path, sig, where, k):
    code, err, fixed, unfixed, litter = interrupted_apply(tmp_path, sig, where, k)
    assert "Traceback" not in err, err
    assert litter == []
    total = FILES + 1
    if where == "stage":  # before the first rename: nothing changed
        assert (fixed, unfixed) == (0, total)
    else:  # the renames had begun: they finish, then the signal ends the process
        assert (fixed, unfixed) == (total, 0)
    assert code == -sig, err  # ended by the signal, as its sender asked (status 128+N)


def test_the_signal_test_sends_its_signals_whatever_its_parent_ignores(tmp_path):
    """The test above, run as `nohup scripts/test &` runs it: SIGHUP and SIGINT ignored by
    the process that starts wqlint. It still stops the apply (at_default() gives the child
    the signals back); without at_default() the child would ignore them and finish, which
    is what wqlint must do with a signal its parent ignored."""
    old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGHUP, signal.SIGINT)}
    try:
        for sig in old:
            code, err, fixed, unfixed, litter = interrupted_apply(tmp_path / f"{sig.name}-test", sig, "stage", 1)
            assert (code, fixed, unfixed, litter) == (-sig, 0, FILES + 1, []), err
            code, err, fixed, unfixed, litter = interrupted_apply(tmp_path / f"{sig.name}-inherited", sig, "stage",
                                                                  1, preexec=None)
            assert (code, fixed, unfixed, litter) == (0, FILES + 1, 0, []), err
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def test_sigterm_from_outside_while_the_fixes_are_written(tmp_path):
    """The CLI as a user runs it, a SIGTERM sent as soon as its first temporary file shows."""
    root = many_files(tmp_path)
    first = root / "drivers" / "d000"
    proc = subprocess.Popen([sys.executable, "-m", "wqlint", "fix", str(root), "--target", "mainline",
                             "--apply", "-j", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=child_env(tmp_path), preexec_fn=at_default)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if any(name.endswith(".wqlint") for name in os.listdir(first)):
            proc.send_signal(signal.SIGTERM)
            break
    _out, err = proc.communicate(timeout=120)
    fixed, unfixed, litter = state(root)
    assert litter == []
    assert (fixed, unfixed) in ((0, FILES + 1), (FILES + 1, 0))
    assert proc.returncode in (-signal.SIGTERM, 0), err
