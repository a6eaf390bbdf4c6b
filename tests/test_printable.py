"""A name from the input (a file in the tree, a path C-quoted in a patch) cannot forge a line
of a text format, nor drive the terminal: finding.printable() escapes its control characters
wherever a text format or an Error:/note line prints it."""
from __future__ import annotations

import json

import pytest

from bounded import bounded, error_lines
from test_robust import DRIVER, tiny_tree
from wqlint.finding import printable

FORGED = "x\nfake.c:1:1: error: forged\x1b[2J.c"
SHOWN = "x\\nfake.c:1:1: error: forged\\x1b[2J.c"


def test_printable():
    assert printable("drivers/a.c") == "drivers/a.c"
    assert printable("a\tb") == "a\tb"  # a source line's indentation stays
    assert printable("a\nb\r\x00\x7f\x9b\u2028") == "a\\nb\\r\\x00\\x7f\\x9b\\u2028"
    assert printable(b"\xffname.c".decode("utf-8", "surrogateescape")) == "\\xffname.c"


def _no_forged_line(text: str):
    assert not [ln for ln in text.splitlines() if ln.startswith(("fake.c", "\x1b"))], text
    assert "\x1b" not in text


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_a_file_name_with_a_newline_in_the_tree(tmp_path, fmt):
    root = tiny_tree(tmp_path)
    (root / "drivers" / "demo" / FORGED).write_text(DRIVER)
    (root / "drivers" / "demo" / f"{FORGED}.h").symlink_to("/dev/null")
    got = bounded(["scan", root / "drivers" / "demo" / f"{FORGED}.h", root, "--format", fmt])
    assert got.returncode == 3, got.stderr
    _no_forged_line(got.stdout)
    _no_forged_line(got.stderr)
    assert error_lines(got.stderr) == [f"Error: {root}/drivers/demo/{SHOWN}.h: a symbolic link out of the tree "
                                       f"{root}, not read"]
    if fmt == "text":
        assert f"drivers/demo/{SHOWN}:8:7: note: " in got.stdout
    elif fmt == "json":  # JSON escapes for itself: the name as it is
        assert f"drivers/demo/{FORGED}" in {f["path"] for f in json.loads(got.stdout)["findings"]}


PATCH = """\
From: A U Thor <a@example.org>
Subject: [PATCH] demo: a queue

---
diff --git "a/drivers/demo/x\\nfake.c:1: ERROR: forged.c" "b/drivers/demo/x\\nfake.c:1: ERROR: forged.c"
new file mode 100644
--- /dev/null
+++ "b/drivers/demo/x\\nfake.c:1: ERROR: forged.c"
@@ -0,0 +1,8 @@
+#include <linux/workqueue.h>
+static struct workqueue_struct *wq;
+int demo_init(void)
+{
+\twq = alloc_workqueue("demo", WQ_MEM_RECLAIM, 0);
+\treturn wq ? 0 : -1;
+}
+
"""


@pytest.mark.parametrize("fmt", ["text", "b4", "mail", "b4-review"])
def test_a_c_quoted_name_with_a_newline_in_a_patch(tmp_path, fmt):
    root = tiny_tree(tmp_path)
    patch = tmp_path / "p.patch"
    patch.write_text(PATCH)
    got = bounded(["review", patch, "--tree", root, "--format", fmt])
    assert got.returncode in (0, 1), got.stderr
    assert "fake.c" in got.stdout + got.stderr or fmt == "b4-review"
    for text in (got.stdout, got.stderr):
        assert not [ln for ln in text.splitlines() if ln.startswith("fake.c")], text
    if fmt == "b4":  # b4 counts every line holding ERROR: as a failure of its own
        assert len(got.stdout.splitlines()) == 1, got.stdout


def test_check_prints_the_name_kbuild_gave_on_one_line(tmp_path):
    root = tiny_tree(tmp_path)
    odd = root / "drivers" / "demo" / FORGED
    odd.write_text(DRIVER)
    got = bounded(["check", "-I", root / "include", "-D__KERNEL__", odd], cwd=root)
    assert got.returncode == 0, got.stderr
    _no_forged_line(got.stderr)
    assert f"{SHOWN}:8:7: note: " in got.stderr
