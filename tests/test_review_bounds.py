"""`wqlint review` does work and keeps memory in proportion to its input: a hunk that is not
where its header says is found at the cost of the distance to where it is, not of sorting
the file's every line, and the series' lines are kept in a few bytes each, not an object each
(docs/trust.md)."""
from __future__ import annotations

import json
import subprocess
import sys
import time

from conftest import FIXTURES, REPO
from wqlint import mail
from wqlint.patched import PatchedTree

TREE = FIXTURES / "review" / "tree"


def misplaced_series(nlines: int, hunks: int, far: int = 5) -> tuple:
    """(the base's lines of drivers/demo/big.c, a patch of it): hunks one-line changes spread
    over the file, each a few lines away from where its header says (as a patch made against
    another version of the file is), and far more hunks whose header says line 1."""
    lines = [f"int v{i} = {i};" for i in range(nlines)]
    step = nlines // (hunks + 1)
    body = []
    for h in range(1, hunks + 1):
        at = h * step
        said = 1 if h % (hunks // far) == 0 else at + (7 if h % 2 else -5)
        body.append(f"@@ -{said},3 +{said},3 @@\n {lines[at - 1]}\n-{lines[at]}\n+int w{at} = {at};\n"
                    f" {lines[at + 1]}\n")
    text = ("From: Dev <dev@example.org>\nSubject: [PATCH] demo: many hunks\n\n---\n"
            "diff --git a/drivers/demo/big.c b/drivers/demo/big.c\n"
            "--- a/drivers/demo/big.c\n+++ b/drivers/demo/big.c\n" + "".join(body))
    return lines, mail.parse_series(text.encode(), "big.patch")


def test_misplaced_hunks_cost_their_distance_not_the_file():
    """300 hunks a few lines off in a 200,000-line file took minutes (each sorted the file's
    every position by its distance): the time grows with the file, not with hunks x file."""
    took = {}
    for nlines in (20_000, 80_000, 200_000):
        lines, patches = misplaced_series(nlines, hunks=nlines // 100)
        data = ("\n".join(lines) + "\n").encode()
        state = PatchedTree(TREE, lambda path, patch, data=data: data)
        start = time.process_time()
        for patch in patches:
            state.apply(patch)
        after, changed = state.after()
        took[nlines] = time.process_time() - start
        # CPU seconds, with room for a loaded machine: about 40 ms for 200,000 lines and
        # 2,000 hunks here; sorting every line by distance, hunk by hunk, took a minute for
        # 80,000 lines
        assert took[nlines] < 0.5 + nlines * 10e-6, took
        text = after["drivers/demo/big.c"].decode().splitlines()
        assert len(text) == nlines
        step = nlines // (nlines // 100 + 1)
        assert text[step] == f"int w{step} = {step};" and text[step + 1] == lines[step + 1]
        assert changed["drivers/demo/big.c"].get(step + 1).line == 2
        assert changed["drivers/demo/big.c"].get(step + 2) is None


def test_a_hunk_found_far_from_its_header_is_the_nearest_match():
    """Of the places a hunk's lines match, the nearest to its header's, the earlier of two as
    near: as sorting every position by its distance chose."""
    base = ["a", "x", "b", "a", "x", "b", "q", "a", "x", "b", "a", "x", "b"]
    for said, want in ((4, 3), (5, 3), (6, 3), (7, 7), (1, 0), (200, 10)):
        text = ("--- a/f.c\n+++ b/f.c\n"
                f"@@ -{said},3 +{said},3 @@\n a\n-x\n+y\n b\n")
        state = PatchedTree(TREE, lambda path, patch: ("\n".join(base) + "\n").encode())
        for patch in mail.parse_series(text.encode(), "p.patch"):
            state.apply(patch)
        got = state.after()[0]["f.c"].decode().splitlines()
        assert got == base[:want + 1] + ["y"] + base[want + 2:], said


MEMORY = r"""
import json, sys, tracemalloc
from pathlib import Path
from wqlint import catalogue, mail
from wqlint.review import review

tree, *paths = sys.argv[1:]
cat = catalogue.load()
review(mail.parse_series(Path(paths[0]).read_bytes(), "warm"), cat, tree)  # the modules, the caches
got = []
for path in paths:
    data = Path(path).read_bytes()
    tracemalloc.start()
    patches = mail.parse_series(data, path)
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    reviewed = review(patches, cat, tree)
    got.append({"bytes": len(data), "review": tracemalloc.get_traced_memory()[1] - base,
                "errors": len(reviewed.errors)})
    tracemalloc.stop()
    del patches, reviewed
print(json.dumps(got))
"""


def short_lines_patch(nlines: int) -> bytes:
    """A series of the shortest lines there are ('+' and a newline), in a new C file and in
    an existing one: what costs the most per input byte."""
    half = nlines // 2
    demo = (TREE / "drivers" / "demo" / "demo.c").read_text().splitlines()
    return ("From: Dev <dev@example.org>\nSubject: [PATCH] demo: empty lines\n\n---\n"
            "diff --git a/drivers/demo/empty.c b/drivers/demo/empty.c\nnew file mode 100644\n"
            f"--- /dev/null\n+++ b/drivers/demo/empty.c\n@@ -0,0 +1,{half} @@\n" + "+\n" * half
            + "diff --git a/drivers/demo/demo.c b/drivers/demo/demo.c\n"
            f"--- a/drivers/demo/demo.c\n+++ b/drivers/demo/demo.c\n@@ -1,1 +1,{half + 1} @@\n"
            f" {demo[0]}\n" + "+\n" * half).encode()


def test_review_keeps_a_few_bytes_per_input_byte(tmp_path):
    """An object per line with its origin was 170 bytes of Python heap per input byte on top
    of the parsed series (about 210 of memory in all), so the 32 MiB a patch may have
    admitted some 7 GB. What review() adds to the parsed series is held to 20 bytes per byte
    of input (16 with these lines, '+' and a newline each, the most lines a byte can give; 6
    with lines of code)."""
    small, big = tmp_path / "small.patch", tmp_path / "big.patch"
    small.write_bytes(short_lines_patch(2_000))
    big.write_bytes(short_lines_patch(100_000))
    proc = subprocess.run([sys.executable, "-c", MEMORY, str(TREE), str(small), str(big)], capture_output=True,
                          text=True, timeout=600, env={"PYTHONPATH": str(REPO / "linter"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    one, other = json.loads(proc.stdout)
    assert one["errors"] == other["errors"] == 0
    per_byte = (other["review"] - one["review"]) / (other["bytes"] - one["bytes"])
    assert per_byte <= 20, (one, other)
