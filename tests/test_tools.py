"""External programs run only through wqlint.tools: nothing the tree, its git configuration,
the user's tool configuration or the environment configures runs or changes an answer."""
from __future__ import annotations

import ast
import contextlib
import os
import subprocess

import pytest

from conftest import REPO
from test_robust import DRIVER, WQLINT, tiny_tree, tree_hash

PACKAGE = REPO / "linter" / "wqlint"
# What starts another program; only wqlint/tools.py may use it.
_SPAWNING_MODULES = {"subprocess", "pty", "multiprocessing", "pexpect"}
_SPAWNING_OS = {"system", "popen", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve",
                "spawnvp", "spawnvpe", "execl", "execle", "execlp", "execlpe", "execv", "execve",
                "execvp", "execvpe", "posix_spawn", "posix_spawnp", "fork", "forkpty"}


def test_only_the_tools_module_starts_programs():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "tools.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module.split(".")[0]]
                if node.module == "os":
                    names += [a.name for a in node.names if a.name in _SPAWNING_OS]
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id == "os" and node.attr in _SPAWNING_OS:
                names = [f"os.{node.attr}"]
            bad = [n for n in names if n in _SPAWNING_MODULES or n.startswith("os.") or n in _SPAWNING_OS]
            offenders += [f"{path.relative_to(REPO)}:{node.lineno}: {n}" for n in bad]
    assert offenders == []


def _cli(*args, env=None, cwd=None):
    return subprocess.run(WQLINT + [str(a) for a in args], capture_output=True, text=True,
                          env=env or os.environ.copy(), cwd=cwd, timeout=300)


def _git(root, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)


def _committed_tree(tmp_path):
    """A tiny tree committed in a git repository whose .gitattributes names an 'evil' filter
    and diff driver for every .c file, and an empty directory for the marks commands leave."""
    root = tiny_tree(tmp_path)
    marks = tmp_path / "ran"
    marks.mkdir()
    (root / ".gitattributes").write_text("*.c filter=evil diff=evil\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "base")
    return root, marks



def test_fix_apply_runs_nothing_the_repository_configures(tmp_path):
    """core.fsmonitor, a filter's clean and process commands and a textconv driver in the
    tree's .git/config, with a .gitattributes naming them: `fix --apply` runs none of them,
    and still tells committed files from changed ones."""
    root, marks = _committed_tree(tmp_path)
    for key, name in (("core.fsmonitor", "fsmonitor"), ("filter.evil.clean", "clean"),
                      ("filter.evil.process", "process"), ("diff.evil.textconv", "textconv"),
                      ("core.pager", "pager")):
        _git(root, "config", key, f"touch {marks}/{name}; cat")
    _git(root, "config", "filter.evil.required", "false")
    os.utime(root / "drivers/demo/demo.c", (0, 0))  # racily clean: git status would hash it
    got = _cli("fix", root, "--target", "mainline", "--apply")
    assert sorted(os.listdir(marks)) == []
    assert got.returncode == 0, got.stderr
    assert "WQ_PERCPU" in (root / "drivers/demo/demo.c").read_text()
    # the protection still works: an uncommitted file is refused
    (root / "drivers/demo/demo.c").write_text(DRIVER + "/* work in progress */\n")
    before = tree_hash(root)
    got = _cli("fix", root, "--target", "mainline", "--apply")
    assert got.returncode == 1
    assert got.stderr.splitlines()[0] == ("Error: drivers/demo/demo.c: has uncommitted changes "
                                          "(1 file(s) in all); commit or stash them, or use --force")
    assert tree_hash(root) == before
    assert sorted(os.listdir(marks)) == []


def test_git_from_the_environment_is_not_obeyed(tmp_path):
    """GIT_DIR, GIT_WORK_TREE and GIT_CONFIG_PARAMETERS of the caller do not reach git."""
    root = tiny_tree(tmp_path)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "base")
    (root / "drivers/demo/demo.c").write_text(DRIVER + "/* work in progress */\n")
    marks = tmp_path / "ran"
    marks.mkdir()
    env = dict(os.environ, GIT_DIR=str(tmp_path / "nowhere"),
               GIT_CONFIG_PARAMETERS=f"'core.fsmonitor'='touch {marks}/fsmonitor'",
               GIT_EXTERNAL_DIFF=f"touch {marks}/extdiff")
    got = _cli("fix", root, "--target", "mainline", "--apply", env=env)
    assert got.returncode == 1 and "has uncommitted changes" in got.stderr
    assert os.listdir(marks) == []


RG_OPTIONS = ["--color=always", "--max-columns=10", "--glob=!*.c", "--max-count=1",
              "--encoding=utf-16", "--replace=X", "--files-with-matches", "--count", "--json",
              "--pre=/bin/false"]


@pytest.mark.parametrize("option", RG_OPTIONS)
def test_a_ripgrep_configuration_changes_no_finding(tmp_path, option):
    """RIPGREP_CONFIG_PATH names the user's default options: none of them reach wqlint's
    searches (each once gave 0 findings and exit 0)."""
    root = tiny_tree(tmp_path)
    # the queue's max_active comes from a field another file sets: a search finds it
    (root / "drivers/demo/demo.c").write_text(DRIVER.replace("WQ_MEM_RECLAIM, 0", "WQ_UNBOUND, demo_limit"))
    (root / "drivers/demo/limit.c").write_text("#include <linux/cpumask.h>\n"
                                               "int demo_limit = num_online_cpus();\n")
    plain = _cli("scan", "--no-cache", "--format", "json", root)
    config = tmp_path / "ripgreprc"
    config.write_text(option + "\n")
    got = _cli("scan", "--no-cache", "--format", "json", root,
               env=dict(os.environ, RIPGREP_CONFIG_PATH=str(config)))
    assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout)
    assert "unbound-max-active-cpu-count" in plain.stdout


def test_environment_keeps_nothing_of_the_callers_but_path_and_tmpdir(monkeypatch):
    from wqlint import tools
    for name in ("RIPGREP_CONFIG_PATH", "GIT_DIR", "PERL5OPT", "PYTHONPATH", "LD_PRELOAD",
                 "COMPILER_PATH", "GCC_EXEC_PREFIX", "MAKEFLAGS", "GREP_OPTIONS", "CPATH"):
        monkeypatch.setenv(name, "/tmp/x")
    monkeypatch.setenv("TMPDIR", "/tmp")
    env = tools.environment()
    assert {k for k in env if not k.startswith("GIT_")} == {"PATH", "TMPDIR", "LC_ALL", "LANG", "HOME", "PAGER"}
    assert env["HOME"] == os.devnull and env["GIT_CONFIG_GLOBAL"] == os.devnull
    assert "GIT_DIR" not in env


def test_a_program_that_does_not_answer_is_killed_with_its_children(tmp_path):
    from wqlint import tools
    pidfile = tmp_path / "pid"
    with pytest.raises(tools.ToolError) as err:
        tools.run(["sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"], timeout=1, what="sh")
    assert str(err.value) == "sh: no answer in 1 s"
    child = int(pidfile.read_text())
    import time
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the child outlived its time limit")


def test_search_output_not_in_the_asked_for_shape_is_an_error():
    from wqlint.scan import search
    good = b"./a.c\x003:x = 1;\n"
    assert list(search.records(good)) == [(b"./a.c", 3, b"x = 1;")]
    for bad in (b"\x1b[35m./a.c\x1b[0m\x00\x1b[32m3\x1b[0m:x\n", b"./a.c\x00x = 1;\n", b"junk line\n"):
        with pytest.raises(search.SearchOutputError):
            list(search.records(bad))


def test_spatch_reads_no_cocciconfig_of_the_tree(tmp_path):
    """spatch reads .cocciconfig from its working directory, and an option there (--python
    names a program) would reach every run: it runs in a directory of wqlint's own."""
    root = tiny_tree(tmp_path)
    plain = _cli("scan", "--engine", "coccinelle", "--format", "json", root)
    assert "missing-affinity-flag" in plain.stdout, plain.stderr
    (root / ".cocciconfig").write_text("[spatch]\n\toptions = --no-such-option-at-all\n")
    got = _cli("scan", "--engine", "coccinelle", "--format", "json", root)
    assert (got.returncode, got.stdout, got.stderr) == (plain.returncode, plain.stdout, plain.stderr)


def test_a_program_of_the_tree_is_never_found_through_a_relative_path_entry(tmp_path):
    """PATH with '.' (or an empty entry) and wqlint run in the tree: the tree's own rg, grep
    and git are not what runs, for wqlint or for the programs it starts."""
    root = tiny_tree(tmp_path)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "base")
    marks = tmp_path / "ran"
    marks.mkdir()
    for name in ("rg", "grep", "git", "perl"):
        fake = root / name
        fake.write_text(f"#!/bin/sh\ntouch {marks}/{name}\n")
        fake.chmod(0o755)
    env = dict(os.environ, PATH=f".:{os.environ['PATH']}:")
    got = _cli("scan", "--no-cache", "--format", "json", ".", env=env, cwd=root)
    assert got.returncode == 1 and '"missing-affinity-flag"' in got.stdout, got.stderr
    got = _cli("fix", ".", "--target", "mainline", "--apply", env=env, cwd=root)
    assert got.returncode == 0, got.stderr
    assert os.listdir(marks) == []


def test_which_takes_no_relative_path_entry(monkeypatch, tmp_path):
    from wqlint import tools
    (tmp_path / "rg").write_text("#!/bin/sh\n")
    (tmp_path / "rg").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f".::bin:{os.defpath}")
    assert tools.which("rg") != "./rg" and tools.which("rg") != str(tmp_path / "rg")
    assert all(os.path.isabs(d) for d in tools.environment()["PATH"].split(os.pathsep))


def test_review_git_runs_nothing_the_repository_configures(tmp_path):
    """review --git reads the series and the base blobs: the repository's hooks, diff and
    textconv drivers, external diff, filters, pager, fsmonitor and signature checks stay
    unrun, and its diff.noprefix and colours do not change what wqlint reads."""
    root, marks = _committed_tree(tmp_path)
    (root / "drivers/demo/demo.c").write_text(DRIVER.replace("WQ_MEM_RECLAIM, 0", "WQ_UNBOUND, num_online_cpus()"))
    _git(root, "commit", "-qam", "demo: use every CPU")
    for key, name in (("core.fsmonitor", "fsmonitor"), ("filter.evil.clean", "clean"),
                      ("filter.evil.smudge", "smudge"), ("diff.evil.textconv", "textconv"),
                      ("diff.evil.command", "diffcommand"), ("diff.external", "external"),
                      ("core.pager", "pager"), ("gpg.program", "gpg")):
        _git(root, "config", key, f"touch {marks}/{name}; cat")
    for key, value in (("log.showSignature", "true"), ("diff.noprefix", "true"), ("color.ui", "always"),
                       ("diff.mnemonicPrefix", "true"), ("core.hooksPath", str(marks))):
        _git(root, "config", key, value)
    got = _cli("review", "--git", "HEAD~1..HEAD", "--tree", root, "-j", "1")
    assert os.listdir(marks) == []
    assert got.returncode == 1, got.stderr
    assert "unbound-max-active-cpu-count" in got.stdout


def _counting(monkeypatch) -> list:
    """The programs tools.run() starts from now on: (argv, input) of each."""
    from wqlint import tools

    made: list = []
    finish = tools._finish

    def counted(proc, argv, what, input, *more):
        made.append((tuple(argv), input))
        return finish(proc, argv, what, input, *more)
    monkeypatch.setattr(tools, "_finish", counted)
    return made


def test_shared_searches_run_a_search_once_for_its_takers(monkeypatch):
    """Inside shared_searches(), a search asked again (by the other scan of a review: another
    thread) is taken from the first, each taker gets its own result, and once both took it
    the next ask runs it again; a run that is no search, or one outside, runs every time."""
    import threading

    from wqlint import tools

    made = _counting(monkeypatch)
    ask = ["sh", "-c", "sleep 0.2; echo found"]
    with tools.shared_searches():
        got: list = []
        threads = [threading.Thread(target=lambda: got.append(tools.run(ask, timeout=10, search=True)))
                   for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(made) == 1 and [g.stdout for g in got] == [b"found\n"] * 2 and got[0] is not got[1]
        tools.run(ask, timeout=10, search=True)
        assert len(made) == 2  # (both took the first: let go)
        tools.run(ask, timeout=10)
        tools.run(ask, timeout=10)
        assert len(made) == 4
    tools.run(ask, timeout=10, search=True)
    tools.run(ask, timeout=10, search=True)
    assert len(made) == 6


def test_a_shared_search_that_fails_fails_for_both(monkeypatch):
    from wqlint import tools

    made = _counting(monkeypatch)
    with tools.shared_searches():
        for _ in range(2):
            with pytest.raises(tools.ToolError, match="no answer in"):
                tools.run(["sh", "-c", "sleep 5"], timeout=0.3, search=True)
    assert len(made) == 1


def test_a_search_prefetched_is_the_answer_of_its_takers(monkeypatch):
    """prefetch() starts a search inside shared_searches() for the scans that ask it after:
    it is made once, while the caller goes on, and is theirs as if one had made it; once
    under way it is not started again; outside, nothing is started."""
    import time

    from wqlint import tools

    made = _counting(monkeypatch)
    ask = ["sh", "-c", "sleep 0.3; echo found"]
    assert tools.prefetch(ask, timeout=10) is False and made == []
    with tools.shared_searches():
        began = time.monotonic()
        assert tools.prefetch(ask, timeout=10) is True
        assert time.monotonic() - began < 0.2  # (not waited for)
        assert tools.prefetch(ask, timeout=10) is False
        got = [tools.run(ask, timeout=10, search=True) for _ in range(2)]
        assert [g.stdout for g in got] == [b"found\n"] * 2 and len(made) == 1
        tools.run(ask, timeout=10, search=True)
        assert len(made) == 2  # (both took the one prefetched: let go)


def test_a_prefetched_search_that_fails_fails_for_its_takers(monkeypatch, capfd):
    """A prefetched search's error is its takers' (a ToolError), whatever went wrong in the
    thread that made it: nothing is printed from there."""
    from wqlint import tools

    with tools.shared_searches():
        assert tools.prefetch(["sh", "-c", "sleep 5"], timeout=0.3)
        with pytest.raises(tools.ToolError, match="no answer in"):
            tools.run(["sh", "-c", "sleep 5"], timeout=0.3, search=True)

        def broken(*args, **kwargs):
            raise ValueError("a bug")
        monkeypatch.setattr(tools, "_finish", broken)
        assert tools.prefetch(["sh", "-c", "true"], timeout=10)
        with pytest.raises(tools.ToolError, match="search: a bug"):
            tools.run(["sh", "-c", "true"], timeout=10, search=True)
    assert capfd.readouterr().err == ""


def test_a_worker_forked_inside_shared_searches_runs_its_own(monkeypatch):
    """A forked worker never waits for a search of its parent's (no thread there answers)."""
    from wqlint import tools

    with tools.shared_searches():
        tools._shared.pid = -1  # as seen from a process forked after it began
        made = _counting(monkeypatch)
        for _ in range(2):
            tools.run(["sh", "-c", "echo x"], timeout=10, search=True)
        assert len(made) == 2


def test_a_review_makes_each_search_of_the_tree_once(monkeypatch):
    """The scans of the tree before and after the series ask much the same searches: each
    is made once, and the review says what it said when each side made its own."""
    from conftest import FIXTURES
    from helpers import run

    here = FIXTURES / "review"
    args = ("review", "--tree", here / "tree", here / "field.patch", "--format", "json", "--no-cache")
    made = _counting(monkeypatch)
    shared = run(*args, "-j", "2")
    searches = [m for m in made if os.path.basename(m[0][0]) in ("rg", "grep")]
    assert searches and len(set(searches)) == len(searches)
    from wqlint import tools

    monkeypatch.setattr(tools, "shared_searches", lambda: contextlib.nullcontext())
    del made[:]
    alone = run(*args, "-j", "2")
    assert len([m for m in made if os.path.basename(m[0][0]) in ("rg", "grep")]) > len(searches)
    assert (alone.exit_code, alone.stdout) == (shared.exit_code, shared.stdout)
