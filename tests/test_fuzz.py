"""Generated hostile input (issue 16): C around allocation calls, patches and mboxes, saved
scans. Properties, for every generated input:

- no exception escapes the command, and none is turned into 'internal error' either;
- the exit status is 0, 1, 2 or 3;
- the tree is byte for byte what it was (scan, review, fix --diff), and nothing is written
  outside it but the -o file.

The budget is a hypothesis profile: `ci` (the default, a couple of minutes for the whole file
on two cores) or `long` (HYPOTHESIS_PROFILE=long, see docs/testing.md).
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from conftest import FIXTURES  # noqa: E402
from helpers import run  # noqa: E402
from test_robust import DRIVER, tiny_tree, tree_hash  # noqa: E402

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.function_scoped_fixture])
settings.register_profile("long", max_examples=int(os.environ.get("WQLINT_FUZZ_EXAMPLES", "1000")), deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.function_scoped_fixture])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

GENERATED = {"inputs": 0}


def _check(result, allowed=(0, 1, 2, 3)):
    GENERATED["inputs"] += 1
    assert result.exit_code in allowed, (result.exit_code, result.stderr)
    assert "internal error" not in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr


def _listing(base: Path) -> set:
    return {os.fsencode(p.relative_to(base)) for p in base.rglob("*")}


# -- C around allocation calls ------------------------------------------------------------

IDENT = st.sampled_from(["n", "ncpus", "fs_info->thread_pool_size", "dev->nr", "WQ_UNBOUND",
                         "WQ_MEM_RECLAIM", "WQ_PERCPU", "WQ_HIGHPRI", "NR_CPUS", "nr_cpu_ids",
                         "MAX", "flags", "x", "__WQ_LEGACY", "WQ_MAX_ACTIVE"])
LEAF = st.one_of(st.integers(-3, 1 << 40).map(str), IDENT,
                 st.sampled_from(["num_online_cpus()", "num_possible_cpus()", "cpumask_weight(m)",
                                  "sizeof(int)", '"s"', "'c'", "0x10UL", "1U << 3"]))


def _combine(children):
    two = st.tuples(children, children)
    return st.one_of(
        children.map(lambda e: f"({e})"),
        children.map(lambda e: f"(unsigned int){e}"),
        children.map(lambda e: f"-{e}"), children.map(lambda e: f"!{e}"),
        st.tuples(children, st.sampled_from(["+", "-", "*", "/", "%", "|", "&", "^", "<<", ">>",
                                             "&&", "||", "==", "<"]), children)
        .map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.tuples(children, children, children).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
        two.map(lambda t: f"min({t[0]}, {t[1]})"), two.map(lambda t: f"max_t(int, {t[0]}, {t[1]})"),
        st.tuples(children, children, children).map(lambda t: f"clamp({t[0]}, {t[1]}, {t[2]})"),
        two.map(lambda t: f"helper({t[0]}, {t[1]})"),
    )


EXPR = st.recursive(LEAF, _combine, max_leaves=12)
DEEP = st.tuples(st.integers(0, 700), st.sampled_from(["(", "-(", "1 + (", "a ? 1 : ("]), EXPR).map(
    lambda t: t[1] * t[0] + t[2] + ")" * t[0])
ENTRY = st.sampled_from(["alloc_workqueue", "alloc_ordered_workqueue", "create_workqueue", "my_alloc",
                         "WRAP", "__alloc_workqueue"])


@st.composite
def c_files(draw) -> bytes:
    lines = ["#include <linux/workqueue.h>", "#define MAX 8",
             "#define WRAP(fl, n) alloc_workqueue(\"w\", (fl), (n))",
             "static int helper(int a, int b) { return a > b ? a : b + num_online_cpus(); }",
             "static struct workqueue_struct *my_alloc(unsigned int f, int m)",
             "{", "\treturn alloc_workqueue(\"m\", f | WQ_UNBOUND, m);", "}"]
    for n in range(draw(st.integers(1, 4))):
        flags, max_active = draw(EXPR), draw(st.one_of(EXPR, DEEP))
        entry = draw(ENTRY)
        args = {"create_workqueue": f'"q{n}"', "alloc_ordered_workqueue": f'"q{n}", {flags}',
                "WRAP": f"{flags}, {max_active}", "my_alloc": f"{flags}, {max_active}"}.get(
                    entry, f'"q{n}", {flags}, {max_active}')
        body = [f"\tint n = {draw(EXPR)};", f"\tunsigned int flags = {draw(EXPR)};",
                f"\tstruct workqueue_struct *wq = {entry}({args});"]
        if draw(st.booleans()):
            body.insert(0, "#ifdef CONFIG_X")
            body.insert(2, "#else")
            body.insert(3, f"\tint n = {draw(EXPR)};")
            body.insert(4, "#endif")
        lines += [f"int f{n}(struct dev *dev, int x, int a)", "{", *body, "\treturn wq ? 0 : -1;", "}"]
    data = "\n".join(lines).encode() + b"\n"
    if draw(st.booleans()):  # odd bytes somewhere: invalid UTF-8, NUL, stray braces, a cut
        junk = draw(st.binary(min_size=1, max_size=8) | st.sampled_from([b"}", b"{", b"(", b"\\\n", b"/*"]))
        at = draw(st.integers(0, len(data)))
        data = data[:at] + junk + data[at:] if draw(st.booleans()) else data[:at]
    return data


@pytest.fixture(scope="module")
def c_tree(tmp_path_factory):
    base = tmp_path_factory.mktemp("fuzz-c")
    root = tiny_tree(base)
    (root / "drivers" / "fuzz").mkdir()
    return base, root


@given(data=c_files())
def test_generated_c_scan_and_fix_diff(c_tree, data):
    base, root = c_tree
    (root / "drivers" / "fuzz" / "f.c").write_bytes(data)
    out = base / "out.json"
    before, listing = tree_hash(root), _listing(base) | {b"out.json"}
    got = run("scan", root, "--format", "json", "-o", out, "-j", "1")
    _check(got, (1, 3))  # demo.c always has a finding
    doc = json.loads(out.read_text())
    assert any(f["path"] == "drivers/demo/demo.c" for f in doc["findings"])
    diff = run("fix", root, "--target", "mainline", "--diff", "-j", "1")
    _check(diff, (0, 3))
    assert tree_hash(root) == before
    assert _listing(base) == listing


# -- patches and mboxes -------------------------------------------------------------------

REVIEW_TREE = FIXTURES / "review" / "tree"
ADD_QUEUE = (FIXTURES / "review" / "add-queue.patch").read_text()
HEADER_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["=?utf-8?q?A=0D=0AB?= <a@b.c>", "=?utf-8?b?////?= <x@y>", "=?x-unknown?q?z?= <z@z>",
                     "\x1b[2J <e@e>", '"quoted, name" <q@q>', "a@b, c@d, <>", "undisclosed:;",
                     "=?utf-8?q?=1B]0;t=07?="]))
PATH = st.one_of(st.sampled_from(["drivers/demo/demo.c", '"a/x\\09.c"', '"a/t\\303\\251.c"', "../x.c",
                                  "/etc/passwd", "a/.git/config", "drivers/demo/new.c", "a b.c"]),
                 st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20))


@st.composite
def hunks(draw) -> str:
    old_start, new_start = draw(st.integers(0, 2_000_000)), draw(st.integers(0, 2_000_000))
    body = draw(st.lists(st.tuples(st.sampled_from([" ", "-", "+", "\\", "x", ""]),
                                   st.text(max_size=30).map(lambda t: t.replace("\n", " "))),
                         max_size=8))
    olds = sum(1 for op, _ in body if op in (" ", "-"))
    news = sum(1 for op, _ in body if op in (" ", "+"))
    if draw(st.booleans()):
        olds, news = draw(st.integers(0, 1 << 31)), draw(st.integers(0, 50))
    return f"@@ -{old_start},{olds} +{new_start},{news} @@\n" + "".join(op + t + "\n" for op, t in body)


@st.composite
def patches(draw) -> bytes:
    kind = draw(st.sampled_from(["mutated", "mail", "bare", "mbox", "mime"]))
    if kind == "mutated":  # a real patch with one line replaced or dropped
        lines = ADD_QUEUE.split("\n")
        i = draw(st.integers(0, len(lines) - 1))
        lines[i] = draw(st.one_of(st.just(""), st.text(max_size=60),
                                  hunks().map(lambda h: h.split("\n")[0])))
        return "\n".join(lines).encode("utf-8", "surrogatepass")
    a, b = draw(PATH), draw(PATH)
    diff = (f"diff --git a/{a} b/{b}\n" if draw(st.booleans()) else "") + \
        f"--- {a}\n+++ {b}\n" + "".join(draw(st.lists(hunks(), min_size=1, max_size=3)))
    if kind == "bare":
        return diff.encode("utf-8", "surrogatepass")
    head = (f"From: {draw(HEADER_TEXT)}\nTo: {draw(HEADER_TEXT)}\nCc: {draw(HEADER_TEXT)}\n"
            f"Subject: [PATCH] {draw(HEADER_TEXT)}\nMessage-ID: {draw(st.sampled_from(['<a@b>', 'x', '']))}\n")
    if kind == "mime":
        depth = draw(st.integers(1, 80))
        nest = "".join(f'Content-Type: multipart/mixed; boundary="b{i}"\n\n--b{i}\n' for i in range(depth))
        msg = head + "MIME-Version: 1.0\n" + nest + "Content-Type: text/plain\n\n" + diff + \
            "".join(f"\n--b{i}--\n" for i in reversed(range(depth)))
    else:
        msg = head + "\n" + diff
    if kind == "mbox":
        msg = "From 1 Mon Sep 17 00:00:00 2001\n" + msg + "\nFrom 2 Mon Sep 17 00:00:00 2001\n" + msg
    return msg.encode("utf-8", "surrogatepass")


@pytest.fixture(scope="module")
def review_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("fuzz-review")
    shutil.copytree(REVIEW_TREE, base / "tree")
    return base


@given(data=patches(), with_tree=st.booleans(), fmt=st.sampled_from(["text", "mail", "sarif", "rdjson"]))
def test_generated_patches_review(review_dir, data, with_tree, fmt):
    tree = review_dir / "tree"
    (review_dir / "in.patch").write_bytes(data)
    before, listing = tree_hash(tree), _listing(review_dir)
    got = run("review", review_dir / "in.patch", *(["--tree", tree] if with_tree else []), "--format", fmt,
              "-j", "1")
    _check(got)
    assert "\x1b" not in got.stdout
    assert tree_hash(tree) == before
    assert _listing(review_dir) == listing


# -- saved scans --------------------------------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70) | st.floats() | st.text(max_size=20),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                    max_leaves=20)
FIELDS = ["rule", "severity", "path", "line", "column", "message", "chain", "arguments", "hints",
          "call_sha256", "engine", "migration", "identity", "fingerprint"]


@pytest.fixture(scope="module")
def saved_scan(tmp_path_factory):
    base = tmp_path_factory.mktemp("fuzz-json")
    root = tiny_tree(base)
    (root / "drivers" / "demo" / "two.c").write_text(DRIVER.replace("demo", "two"))
    got = run("scan", root, "--format", "json")
    return base, root, json.loads(got.stdout)


@st.composite
def saved_docs(draw, doc):
    kind = draw(st.sampled_from(["field", "finding", "whole", "deep"]))
    doc = json.loads(json.dumps(doc))
    if kind == "whole":
        return json.dumps(draw(JSON))
    if kind == "deep":
        n = draw(st.integers(1, 50_000))
        return '{"findings": ' + "[" * n + "]" * n + "}"
    findings = doc["findings"]
    i = draw(st.integers(0, len(findings) - 1))
    if kind == "finding":
        findings[i] = draw(JSON)
    else:
        findings[i][draw(st.sampled_from(FIELDS))] = draw(JSON | st.sampled_from(
            ["../../etc/passwd", "/etc/passwd", "drivers/demo/demo.c", "", 0, -1, 1 << 62]))
    return json.dumps(doc)


@given(data=st.data())
def test_generated_saved_scans_fix_diff(saved_scan, data):
    base, root, doc = saved_scan
    text = data.draw(saved_docs(doc))
    (base / "scan.json").write_text(text)
    before, listing = tree_hash(root), _listing(base)
    got = run("fix", root, "--target", "mainline", "--findings", base / "scan.json", "--diff", "-j", "1")
    _check(got, (0, 2, 3))
    assert tree_hash(root) == before
    assert _listing(base) == listing


# -- what the tree holds besides C files ---------------------------------------------------
# A FIFO, a socket, a device, a link to a device, a link loop, a file of gigabytes of holes or
# one just over the size bound, at the top of the tree, in a directory the scan walks, or named
# on the command line, for every command that reads the tree. Each run is a process of its own
# with a time limit and an address-space limit (tests/bounded.py): a hang or memory without
# bound fails the property instead of the suite or the machine.

SPECIAL_KINDS = ["fifo", "socket", "device", "devzero-link", "self-loop", "dir-loop", "sparse-3g", "over-bound"]
SPECIAL_WHERE = ["top", "walked", "named"]
SPECIAL_COMMANDS = ["scan", "scan-no-cache", "fix-diff", "review", "check"]
DEMO_PATCH = """\
From: A U Thor <a@example.org>
Subject: [PATCH] demo: unbound queue

---
--- a/drivers/demo/demo.c
+++ b/drivers/demo/demo.c
@@ -8,2 +8,2 @@ int demo_init(void)
 \twq = alloc_workqueue("demo",
-\t\t\t     WQ_MEM_RECLAIM, 0);
+\t\t\t     WQ_UNBOUND, num_online_cpus());
"""


def _special_file(path: Path, kind: str) -> None:
    import socket
    import stat as stat_mod

    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.close()
    elif kind == "device":
        os.mknod(path, stat_mod.S_IFCHR | 0o644, os.makedev(1, 5))  # what /dev/zero is
    elif kind == "devzero-link":
        path.symlink_to("/dev/zero")
    elif kind == "self-loop":
        path.symlink_to(path.name)
    elif kind == "dir-loop":
        path.symlink_to(".", target_is_directory=True)
    elif kind == "sparse-3g":
        with open(path, "wb") as handle:
            handle.write(b"int x = alloc_workqueue(\"x\", 0, 0);\n")
            handle.truncate(3 << 30)
    else:  # just over the bound a source file may have, every line mentioning an allocation
        line = b"static int v = sizeof(alloc_workqueue);\n"
        with open(path, "wb") as handle:
            handle.write(line * ((8 * 1024 * 1024) // len(line) + 1))


@settings(max_examples=10 if os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci" else settings.default.max_examples)
@given(kind=st.sampled_from(SPECIAL_KINDS), where=st.sampled_from(SPECIAL_WHERE),
       command=st.sampled_from(SPECIAL_COMMANDS))
def test_files_that_are_not_c_sources_in_the_tree(kind, where, command):
    import tempfile

    from bounded import bounded, error_lines

    with tempfile.TemporaryDirectory(prefix="wqlint-fuzz-") as tmp:
        base = Path(tmp)
        root = tiny_tree(base)
        name = "loop" if kind == "dir-loop" else "x.c"
        special = (root if where == "top" else root / "drivers" / "demo") / name
        try:
            _special_file(special, kind)
        except PermissionError:
            hypothesis.assume(False)  # (mknod needs CAP_MKNOD)
        before = tree_hash(root)
        env = {"XDG_CACHE_HOME": str(base / "cache")}
        named = [special] if where == "named" else [root]
        if command.startswith("scan"):
            args = ["scan", *named, "--format", "json", "-j", "1"] + (["--no-cache"] if command == "scan-no-cache" else [])
        elif command == "fix-diff":
            args = ["fix", *named, "--target", "mainline", "--diff", "-j", "1"]
        elif command == "review":
            (base / "p.patch").write_text(DEMO_PATCH)
            args = ["review", base / "p.patch", "--tree", root]
        else:
            args = ["check", "-I", root / "include", "-D__KERNEL__",
                    special if where == "named" else root / "drivers" / "demo" / "demo.c"]
        got = bounded(args, env=env, cwd=root, timeout=120)
        GENERATED["inputs"] += 1
        note = (kind, where, command, got.returncode, got.stderr)
        # every line on stderr is one Error: or note line (check: or a finding), nothing else
        assert all(ln.startswith(("Error: ", "wqlint: ", "wqlint check: ", "not fixed ", "  ", str(root)))
                   for ln in got.stderr.splitlines()), note
        assert "internal error" not in got.stderr, note
        if command == "check":
            assert got.returncode in ((0, 1) if where == "named" else (0,)), note
        elif where == "named" and kind != "dir-loop" and command != "review":
            assert got.returncode == 3, note
            assert [ln.split(": ")[1] for ln in error_lines(got.stderr)] == [str(special)], note
        else:
            assert got.returncode in (0, 1, 3), note
            assert (got.returncode == 3) == bool(error_lines(got.stderr)), note
        if command.startswith("scan") and where != "named":  # the tree's real finding is still there
            assert any(f["path"] == "drivers/demo/demo.c" for f in json.loads(got.stdout)["findings"]), note
        if command == "check":  # the checker keeps its facts in the build directory: here the tree
            for name in (".wqlint-facts.json", ".wqlint-facts.lock"):
                if (root / name).exists():
                    os.unlink(root / name)
        assert tree_hash(root) == before, note


def test_report_generated_inputs(capsys):
    """Says how many generated inputs the properties above ran (shown with -s or -rA)."""
    with capsys.disabled():
        print(f"\nfuzz: {GENERATED['inputs']} generated command runs")
