"""The one guarded opener (wqlint.safeio): every byte wqlint reads from a tree, a cache or a
build directory goes through it, and what it refuses is one line, never a hang, a traceback or
memory without bound.

test_no_read_bypasses_safeio holds the package to it: a new raw read anywhere else fails here.
The other tests are the reproducers of reads that bypassed it, each run in a process of its
own with a time limit and an address-space limit (tests/bounded.py).
"""
from __future__ import annotations

import ast
import base64
import json
import os
import zlib
from pathlib import Path

import pytest

from bounded import bounded, error_lines
from conftest import REPO
from test_robust import tiny_tree
from wqlint import safeio

PACKAGE = REPO / "linter" / "wqlint"

# Reads that are not input: (file, line text) -> why.
_NOT_INPUT = {
    ("scan/parser.py", 'text = resources.files("wqlint.scan").joinpath("queries").joinpath(f"{name}.scm")'
                       '.read_text(encoding="utf-8")'): "wqlint's own package data",
    ("formatters/review/sarif.py", "doc = json.loads(scan_sarif.format(review.as_report(), catalogue))"):
        "the document wqlint has just written itself",
    ("tools.py", "chunk = os.read(fd, 65536)"): "a program's output, which run() bounds",
    ("tools.py", "data = pipe.read()"): "the answer of a worker wqlint forked from itself (forked())",
    ("scan/treewalk.py", "got = os.read(rfd, _UNIT.size)"): "a directory's number, 4 bytes, from the pipe "
                                                            "wqlint filled itself (split())",
}
# Modules whose .open() opens a file, and calls that turn bytes into more bytes or objects.
_OPENERS = {"os", "io", "gzip", "bz2", "lzma", "tarfile", "zipfile", "codecs", "shelve", "dbm"}
_DECODERS = {("zlib", "decompress"), ("zlib", "decompressobj"), ("gzip", "decompress"), ("bz2", "decompress"),
             ("lzma", "decompress"), ("json", "load"), ("json", "loads"), ("marshal", "load"),
             ("marshal", "loads"), ("yaml", "load"), ("yaml", "safe_load"), ("yaml", "unsafe_load")}


def _mode(call: ast.Call, position: int):
    """The literal mode (or flags expression) of an open call, or None."""
    for kw in call.keywords:
        if kw.arg in ("mode", "flags"):
            return kw.value
    return call.args[position] if len(call.args) > position else None


def _write_only(mode) -> bool:
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return not set(mode.value) & set("r+")
    if mode is not None and not isinstance(mode, ast.Constant):  # os.open flags
        names = {n.attr for n in ast.walk(mode) if isinstance(n, ast.Attribute)}
        return "O_WRONLY" in names and "O_RDWR" not in names
    return False  # open(path): read


def _safe_yaml(call: ast.Call) -> bool:
    """yaml.load(text, Loader=...SafeLoader): a bounded text (read through safeio) parsed
    into plain data, never objects."""
    return any(kw.arg == "Loader" and any(isinstance(n, ast.Attribute) and n.attr == "SafeLoader"
                                          for n in ast.walk(kw.value)) for kw in call.keywords)


def raw_reads(path: Path, text: str) -> list:
    """(line, what) of each read in the module that bypasses safeio."""
    out = []
    lines = text.splitlines()
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        what = None
        if isinstance(f, ast.Name) and f.id == "open" and not _write_only(_mode(node, 1)):
            what = "open() to read"
        elif isinstance(f, ast.Attribute):
            owner = f.value.id if isinstance(f.value, ast.Name) else None
            if f.attr in ("read_bytes", "read_text") and owner != "safeio":
                what = f".{f.attr}()"
            elif f.attr == "open" and owner in _OPENERS and not _write_only(_mode(node, 1)):
                what = f"{owner}.open() to read"
            elif f.attr == "open" and owner not in _OPENERS and node.args \
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                what = "Path.open()"
            elif (owner, f.attr) in _DECODERS and not _safe_yaml(node):
                what = f"{owner}.{f.attr}()"
            elif owner == "os" and f.attr in ("read", "pread", "readv"):
                what = f"os.{f.attr}()"
            elif f.attr in ("read", "readlines") and not node.args and not node.keywords:
                what = f".{f.attr}() without a bound"
            elif f.attr == "fromfile":
                what = ".fromfile()"
        if what is None:
            continue
        rel = path.relative_to(PACKAGE).as_posix()
        line = lines[node.lineno - 1].strip()
        if (rel, line) not in _NOT_INPUT:
            out.append(f"{rel}:{node.lineno}: {what}: {line}")
    return out


def test_no_read_bypasses_safeio():
    """One opener: every read of a file, every inflation and every JSON document goes
    through wqlint.safeio, which bounds it and refuses what is not a regular file."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "safeio.py" and path.parent == PACKAGE:
            continue
        found += raw_reads(path, path.read_text())
    assert found == []


@pytest.mark.parametrize("snippet,what", [
    ("open(p)", "open() to read"),
    ("open(p, 'a+b')", "open() to read"),
    ("Path(p).read_bytes()", ".read_bytes()"),
    ("p.read_text(errors='replace')", ".read_text()"),
    ("os.open(p, os.O_RDONLY)", "os.open() to read"),
    ("p.open('rb')", "Path.open()"),
    ("zlib.decompress(b)", "zlib.decompress()"),
    ("json.loads(b)", "json.loads()"),
    ("yaml.load(t)", "yaml.load()"),
    ("handle.read()", ".read() without a bound"),
])
def test_the_scan_sees_each_kind_of_raw_read(snippet, what):
    assert [r.split(": ")[1] for r in raw_reads(PACKAGE / "x.py", snippet + "\n")] == [what]
    assert raw_reads(PACKAGE / "x.py", "open(p, 'wb')\nos.open(p, os.O_WRONLY | os.O_CREAT)\n"
                                       "safeio.read_bytes(p, 1)\nStore(r).open()\n") == []


# -- safeio itself --------------------------------------------------------------------------

def test_inflate_is_bounded(tmp_path):
    bomb = zlib.compress(b"\0" * (8 * 1024 * 1024), 9)
    assert len(bomb) < 16 * 1024
    with pytest.raises(safeio.InputRefused, match="more than 1 MiB once decompressed"):
        safeio.inflate(bomb, 1024 * 1024)
    assert safeio.inflate(zlib.compress(b"abc"), 3) == b"abc"
    with pytest.raises(safeio.InputRefused, match="damaged compressed data"):
        safeio.inflate(b"not zlib", 100)
    with pytest.raises(safeio.InputRefused, match="truncated"):
        safeio.inflate(zlib.compress(b"abc" * 100)[:-6], 1000)


def test_parse_json_is_one_line():
    assert safeio.parse_json(b'{"a": [1]}') == {"a": [1]}
    for doc, problem in [(b"[" * 100000, "nested too deeply"), (b"\xff", "not valid UTF-8 (byte 0xff)"),
                         (b"{", "Expecting property name")]:
        with pytest.raises(safeio.InputRefused, match=problem.replace("(", r"\(").replace(")", r"\)")):
            safeio.parse_json(doc)


def test_read_head_and_searchable(tmp_path):
    big = tmp_path / "big"
    with open(big, "wb") as handle:
        handle.truncate(3 << 30)  # sparse: 3 GiB of holes
    assert safeio.read_head(big, 10) == b"\0" * 10
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(safeio.InputRefused, match="is a FIFO"):
        safeio.read_head(tmp_path / "fifo", 10)
    with pytest.raises(safeio.InputRefused, match="is a device"):
        safeio.read_head("/dev/zero", 10)
    assert [safeio.searchable(p) for p in (big, tmp_path, tmp_path / "fifo", Path("/dev/zero"),
                                           tmp_path / "missing")] == [True, True, False, False, False]


def test_lock_file_is_never_a_fifo_or_a_link(tmp_path):
    os.mkfifo(tmp_path / "fifo.lock")
    with pytest.raises(OSError, match="is a FIFO"):
        safeio.open_lock(tmp_path / "fifo.lock")
    (tmp_path / "elsewhere").write_text("")
    (tmp_path / "link.lock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        safeio.open_lock(tmp_path / "link.lock")
    with safeio.open_lock(tmp_path / "new.lock") as lock:
        assert lock.fileno() >= 0
    assert (tmp_path / "new.lock").is_file()


# -- the reproducers: reads that bypassed the opener -----------------------------------------

def test_fifo_named_like_a_c_file_at_the_top_of_a_tree(tmp_path):
    """The files directly in the tree's top directory are handed to the search one by one:
    a FIFO among them hung every scan, with or without the index."""
    root = tiny_tree(tmp_path)
    os.mkfifo(root / "x.c")
    (root / "top.c").write_text(
        "#include <linux/workqueue.h>\n#define NR num_online_cpus()\nstatic struct workqueue_struct *wq;\n"
        "int f(void) { wq = alloc_workqueue(\"d\", WQ_UNBOUND, NR); return 0; }\n")
    cache = tmp_path / "cache"
    for args in (["--no-cache"], [], []):
        got = bounded(["scan", *args, root], env={"XDG_CACHE_HOME": str(cache)})
        assert got.returncode == 1, got.stderr
        assert "unbound-max-active-cpu-count" in got.stdout


def test_changed_huge_file_is_not_read_whole_by_the_index(tmp_path):
    """A file the index finds changed was read whole to search it again (a 1.5 GB .c: a
    MemoryError); the run stays within a few hundred MiB."""
    root = tiny_tree(tmp_path)
    big = root / "drivers" / "demo" / "big.c"
    big.write_text("int x;\n")
    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert bounded(["scan", root], env=cache).returncode == 1
    with open(big, "wb") as handle:
        handle.write(b"alloc_workqueue(\"x\", 0, 0);\n")
        handle.truncate(1536 * 1024 * 1024)
    # (Whether the index then says what --no-cache says of the file is the index's own test.)
    for args in ([], ["--no-cache"]):
        got = bounded(["scan", *args, root], env=cache, memory=600)
        assert got.returncode in (1, 3), got.stderr
        assert all(ln.startswith("Error: drivers/demo/big.c: ") for ln in error_lines(got.stderr)), got.stderr


@pytest.mark.parametrize("rel", ["Makefile", "include/generated/utsrelease.h"])
@pytest.mark.parametrize("kind", ["fifo", "devzero"])
def test_kernel_tree_files_that_never_end(tmp_path, rel, kind):
    """--kernel-tree's Makefile (and the release header of a configured tree) were read with
    no opener: a FIFO hung, /dev/zero ran out of memory."""
    kdir = tiny_tree(tmp_path, "kdir")
    module = tmp_path / "module"
    module.mkdir()
    (module / "m.c").write_text("#include <linux/workqueue.h>\nstatic struct workqueue_struct *wq;\n"
                                "int f(void) { wq = alloc_workqueue(\"m\", WQ_UNBOUND, num_online_cpus());"
                                " return 0; }\n")
    target = kdir / rel
    if rel == "Makefile":
        target.unlink()
    else:  # a configured tree without a version in its Makefile: the release header says it
        (kdir / "Makefile").write_text("# no version here\n")
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    for env in ({"KDIR": str(kdir)}, {}):
        args = ["scan", module] + ([] if env else ["--kernel-tree", kdir])
        got = bounded(args, env=env)
        assert got.returncode == 1, got.stderr
        assert "unbound-max-active-cpu-count" in got.stdout


def _facts_tree(tmp_path):
    """A tree whose facts cache is built, with a site in drivers/demo/demo.c."""
    from wqlint.check import facts

    root = tiny_tree(tmp_path)
    (root / "drivers" / "demo" / "demo.c").write_text(
        "#include <linux/workqueue.h>\nstatic struct workqueue_struct *wq;\n"
        "int f(void) { wq = alloc_workqueue(\"d\", WQ_UNBOUND, num_online_cpus()); return 0; }\n")
    build = tmp_path / "build"
    build.mkdir()
    facts.obtain(str(root), str(build))
    path = build / facts.FACTS_NAME
    return root, build, path, json.loads(path.read_text())


def _check_cmd(root, build):
    return ["check", "-I", root / "include", "-D__KERNEL__", root / "drivers" / "demo" / "demo.c"]


@pytest.mark.parametrize("damage", ["not base64", "not zlib", "not JSON", "wrong shape", "bomb"])
def test_damaged_facts_cache_is_one_line_in_the_checker(tmp_path, damage):
    """A damaged site string of .wqlint-facts.json was a traceback in every checker (the
    build stops), and a small zlib bomb in it was inflated whole."""
    root, build, path, data = _facts_tree(tmp_path)
    if damage == "not base64":
        raw = "!!!"
    elif damage == "not zlib":
        raw = base64.b64encode(b"not zlib").decode()
    elif damage == "not JSON":
        raw = base64.b64encode(zlib.compress(b"[{")).decode()
    elif damage == "wrong shape":
        raw = base64.b64encode(zlib.compress(b'[{"entry": 1}]')).decode()
    else:
        raw = base64.b64encode(zlib.compress(b" " * (1 << 30), 9)).decode()
    data["sites"] = {"drivers/demo/demo.c": raw}
    path.write_text(json.dumps(data))
    got = bounded(_check_cmd(root, build), cwd=build, memory=700)
    assert got.returncode == 0, got.stderr
    assert "Traceback" not in got.stderr
    notes = [ln for ln in got.stderr.splitlines() if "wqlint-facts.json" in ln]
    assert len(notes) == 1 and "the sites of drivers/demo/demo.c are damaged" in notes[0], got.stderr
    assert "values from other files are not used" in notes[0]
