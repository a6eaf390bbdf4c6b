"""Generated damage to the scan index (wqlint.scan.store): crafted, truncated and concurrent
index files. Each run is a process of its own, bounded in time and memory (BOUNDS). For every
generated input:

- an index its header or its types refuse means starting from nothing: the scan prints what
  `--no-cache` prints, byte for byte, on stdout and stderr, with the same exit status;
- an index they accept (the mutation kept every type: data wqlint could have written)
  still gives a run that ends within the bounds, with exit status 0, 1 or 3 and no
  traceback;
- two scans at once, while a third process damages the file, each print what `--no-cache`
  prints, and so does the scan after them;
- the tree is byte for byte what it was.

The budget is test_fuzz's hypothesis profile (`ci`, or `long` with HYPOTHESIS_PROFILE=long).
"""
from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, strategies as st  # noqa: E402

from test_fuzz import GENERATED, JSON  # noqa: E402  (the profile, the counter, JSON values)
from test_robust import DRIVER, tiny_tree, tree_hash  # noqa: E402

from wqlint.scan import codec, store  # noqa: E402
from wqlint.scan.digests import Digests  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
# Each run: at most this much address space and this many seconds.
BOUNDS = {"memory": 2 << 30, "seconds": 60}


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (BOUNDS["memory"], BOUNDS["memory"]))


def bounded_scan(root: Path, xdg: Path, target: str = "", *extra) -> tuple:
    """(exit status, stdout, stderr) of `wqlint scan` in a process of its own, within BOUNDS."""
    env = dict(os.environ, XDG_CACHE_HOME=str(xdg), PYTHONPATH=str(REPO / "linter"))
    proc = subprocess.run([sys.executable, "-m", "wqlint", "scan", "--format", "json", "-j", "1", *extra,
                           str(root / target) if target else str(root)],
                          capture_output=True, env=env, timeout=BOUNDS["seconds"], preexec_fn=_limits)
    GENERATED["inputs"] += 1
    return proc.returncode, proc.stdout, proc.stderr


def header(body: bytes) -> bytes:
    return b"%s %d %s\n" % (store.MAGIC, store.FORMAT, hashlib.blake2b(body, digest_size=32).hexdigest().encode())


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """A small tree, what --no-cache gives for it (whole, and one directory), and the good
    index a scan leaves (its lines, parsed)."""
    base = tmp_path_factory.mktemp("fuzz-index")
    root = tiny_tree(base)
    (root / "drivers" / "demo" / "two.c").write_text(DRIVER.replace("demo", "two").replace("WQ_MEM_RECLAIM",
                                                                                         "WQ_UNBOUND"))
    xdg = base / "xdg"
    plain = {t: bounded_scan(root, xdg, t, "--no-cache") for t in ("", "drivers/demo")}
    assert plain[""][0] == 1 and not xdg.exists()
    time.sleep(store.RACY_NS / 1e9 + 0.1)  # the stamps are kept: the index answers in full
    for t in ("", "drivers/demo"):
        assert bounded_scan(root, xdg, t) == plain[t]
    path = store.Store(root, xdg / "wqlint" / "index").path
    raw = path.read_bytes()
    lines = [json.loads(line) for line in raw.partition(b"\n")[2].split(b"\n")]
    assert len(lines) == 5, "two scans"
    return base, root, xdg, path, plain, lines


def _kinds(n: int) -> list:
    """The codec of each line of an index of n lines."""
    return [None] + [store.Kept if i % 2 else store.Analysis for i in range(1, n)]


def accepted(lines: list) -> bool:
    """Do the types accept every line (the first one as the store reads it)? (The answers
    are checked when a run first asks for one; bad ones are then dropped with the kept scans,
    so that a run given them says what a run without an index says, as it does for the
    other lines.)"""
    first = lines[0]
    try:
        if type(first) is not dict or set(first) != {"wqlint", "code", "root", "gen", "files", "stamps", "unknown",
                                                     "seen", "answers", "age"} or type(first["gen"]) is not int \
                or type(first["age"]) is not dict or any(type(a) is not int for a in first["age"].values()) \
                or type(first["seen"]) is not str:
            return False
        stamps = store.stamps_from(first["files"], first["stamps"], first["unknown"])
        if any(type(d) is not str or stamps.get(rel, 0) is not None for rel, d in Digests(first["seen"]).items()):
            return False
        store._codec(store.Answers).decode(first["answers"])
        for kind, line in zip(_kinds(len(lines))[1:], lines[1:]):
            store._codec(kind).decode(line)
    except (codec.Invalid, TypeError, KeyError):
        return False
    return True


@st.composite
def mutated(draw, lines):
    """One line of a good index with one value replaced, dropped, doubled or retyped."""
    lines = json.loads(json.dumps(lines))
    n = draw(st.integers(0, len(lines) - 1))
    node, parent, key = lines[n], lines, n
    for _ in range(draw(st.integers(0, 12))):
        if isinstance(node, dict) and node:
            k = draw(st.sampled_from(sorted(node)))
        elif isinstance(node, list) and node:
            k = draw(st.integers(0, len(node) - 1))
        else:
            break
        node, parent, key = node[k], node, k
    action = draw(st.sampled_from(["replace", "drop", "double", "retype"]))
    if action == "replace":
        parent[key] = draw(JSON | st.sampled_from([None, True, -1, 1 << 70, "", "\ud800", "Site", "os.system",
                                                   ["Const", None, 1], [0, 0]]))
    elif action == "drop":
        if isinstance(parent, dict):
            del parent[key]
        else:
            parent.pop(key)
    elif action == "double" and isinstance(parent, list):
        parent.insert(key, parent[key])
    else:
        parent[key] = str(node) if not isinstance(node, str) else (len(node) or [node])
    return lines


def _same_tree(root: Path, before: str) -> None:
    assert tree_hash(root) == before


def _check_run(got: tuple, plain: tuple, strict: bool) -> None:
    rc, out, err = got
    assert b"Traceback" not in err and b"internal error" not in err, err
    if strict:
        assert got == plain, err
    else:
        assert rc in (0, 1, 3), err


@given(data=st.data())
def test_crafted_index_files(indexed, data):
    """A good index with one value changed and its digest made to match."""
    base, root, xdg, path, plain, lines = indexed
    before = tree_hash(root)
    lines2 = data.draw(mutated(lines))
    body = b"\n".join(json.dumps(x, separators=(",", ":")).encode() for x in lines2)
    path.write_bytes(header(body) + body)
    strict = not accepted(lines2) or lines2 == lines
    target = data.draw(st.sampled_from(["", "drivers/demo"]))
    _check_run(bounded_scan(root, xdg, target), plain[target], strict)
    _same_tree(root, before)
    assert bounded_scan(root, xdg, target, "--no-cache") == plain[target]


@st.composite
def damaged(draw, raw: bytes) -> bytes:
    kind = draw(st.sampled_from(["truncate", "flip", "insert", "junk", "junk with a header", "deep"]))
    if kind == "truncate":
        return raw[:draw(st.integers(0, len(raw) - 1))]
    if kind == "flip":
        at = draw(st.integers(0, len(raw) - 1))
        return raw[:at] + bytes([raw[at] ^ draw(st.integers(1, 255))]) + raw[at + 1:]
    if kind == "insert":
        at = draw(st.integers(0, len(raw)))
        return raw[:at] + draw(st.binary(min_size=1, max_size=64)) + raw[at:]
    if kind == "junk":
        return draw(st.binary(max_size=4096))
    if kind == "junk with a header":
        body = draw(st.binary(max_size=4096) | JSON.map(lambda v: json.dumps(v).encode()))
        return header(body) + body
    depth = draw(st.integers(1, 200_000))
    body = b"[" * depth + b"]" * depth
    return header(body) + body


@given(data=st.data())
def test_truncated_and_damaged_index_files(indexed, data):
    """Bytes that are not an index this tree's wqlint wrote: starting from nothing, exactly."""
    base, root, xdg, path, plain, lines = indexed
    before = tree_hash(root)
    body = b"\n".join(json.dumps(x, separators=(",", ":")).encode() for x in lines)
    raw = data.draw(damaged(header(body) + body))
    path.write_bytes(raw)
    target = data.draw(st.sampled_from(["", "drivers/demo"]))
    assert bounded_scan(root, xdg, target) == plain[target]
    _same_tree(root, before)


@given(data=st.data())
def test_concurrent_scans_and_a_damaging_writer(indexed, data):
    """Two scans at once (of the tree or a directory, started a moment apart) while the
    index file is rewritten with damaged bytes, renamed into place or written over: each
    prints what --no-cache prints, and so does the scan after them."""
    base, root, xdg, path, plain, lines = indexed
    before = tree_hash(root)
    body = b"\n".join(json.dumps(x, separators=(",", ":")).encode() for x in lines)
    good = header(body) + body
    targets = [data.draw(st.sampled_from(["", "drivers/demo"])) for _ in range(2)]
    delay = data.draw(st.floats(0, 0.5))
    damages = data.draw(st.lists(damaged(good), max_size=6))
    in_place = data.draw(st.booleans())
    results: dict = {}

    def scan(i):
        if i:
            time.sleep(delay)
        results[i] = bounded_scan(root, xdg, targets[i])
    threads = [threading.Thread(target=scan, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for raw in damages:
        time.sleep(0.05)
        if in_place:
            with open(path, "r+b" if path.exists() else "wb") as handle:
                handle.write(raw)
                handle.truncate()
        else:
            tmp = path.with_name("fuzz.tmp")
            tmp.write_bytes(raw)
            os.replace(tmp, path)
    for t in threads:
        t.join()
    for i in range(2):
        assert results[i] == plain[targets[i]], results[i][2]
    assert bounded_scan(root, xdg, targets[0]) == plain[targets[0]]
    _same_tree(root, before)
