"""scan.description: the tree's tables of functions and struct members, read the same whether
a file is searched on disk by ripgrep or held in memory (a review's patched file)."""
from __future__ import annotations

from wqlint.scan.description import Description
from wqlint.scan.index import TreeIndex

HEADER = b"""\
struct ops { int (*open)(void); int (*close)(void); };
struct holder {
\tconst struct ops *ops;
};

static const struct ops first_ops = {
\t.open = first_open,
};

struct later {
\tint x;
};

#define LATER_OPS(n) n ## _ops
static const struct ops LATER_OPS(second) __maybe_unused =
{
\t.close = second_close,
};
"""


def _tables(index) -> tuple:
    d = Description(index)
    return d.initialisers("open"), d.initialisers("close"), d.member_types("ops"), d.pointee("ops")


def test_a_header_in_memory_reads_as_on_disk(tmp_path):
    """An initialiser after a struct's `};` with no variable of its own that the search
    tells (a macro names it) is read the same way from the file on disk and from the same
    bytes in memory: as the last variable's, with the members of struct holder."""
    (tmp_path / "include").mkdir()
    (tmp_path / "include/ops.h").write_bytes(HEADER)
    (tmp_path / "a.c").write_bytes(b"int first_open(void) { return 0; }\n")
    on_disk = _tables(TreeIndex(tmp_path, jobs=1))
    in_memory = _tables(TreeIndex(tmp_path, jobs=1, preloaded={"include/ops.h": HEADER}))
    assert on_disk == in_memory
    assert on_disk == ({"ops": [("first_open", "include/ops.h", 7)]},
                       {"ops": [("second_close", "include/ops.h", 17)]},
                       {"ops": ("holder",)}, "ops")
