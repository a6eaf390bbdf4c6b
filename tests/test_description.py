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


def test_the_functions_other_files_can_call_are_found_on_disk_and_in_memory(tmp_path):
    """exported(): the headers of the .c files' functions not declared static, every file's
    (by path and line, with the header's offset), from the search on disk as from a file held
    in memory; a static function, a declaration and a name defined nowhere are not."""
    a = b"int shared(void)\n{\n\treturn 0;\n}\n\nstatic int own(void)\n{\n\treturn 1;\n}\n"
    b = b"/* b */\nint shared(void);\nvoid\nshared (void)\n{\n}\nlong many_(int x)\n{\n}\n"
    (tmp_path / "a.c").write_bytes(a)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/b.c").write_bytes(b)
    for index in (TreeIndex(tmp_path, jobs=1), TreeIndex(tmp_path, jobs=1, preloaded={"sub/b.c": b})):
        d = Description(index)
        assert d.exported("shared") == [("a.c", 1, 0), ("sub/b.c", 4, b.index(b"shared ("))]
        assert d.exported("own") == [] and d.exported("many") == [] and d.exported("") == []
        assert d.exported("many_") == [("sub/b.c", 7, b.index(b"long"))]


def _events(monkeypatch) -> list:
    """'searched' when the description's searches start, 'sites' and 'resolved' when a scan
    starts and ends resolving its sites, 'round' when a round of the index's searches ends."""
    from wqlint.scan import engine
    from wqlint.scan.index import TreeIndex

    events: list = []
    start, sites, fetch = Description.start, engine.Engine.sites, TreeIndex.fetch_pending

    def resolving(self):
        events.append("sites")
        got = sites(self)
        events.append("resolved")
        return got

    def fetching(self):
        got = fetch(self)
        events.append("round")
        return got
    monkeypatch.setattr(Description, "start", lambda self: events.append("searched") or start(self))
    monkeypatch.setattr(engine.Engine, "sites", resolving)
    monkeypatch.setattr(TreeIndex, "fetch_pending", fetching)
    return events


def test_a_whole_trees_scan_searches_the_description_beside_its_sites_a_review_never(monkeypatch):
    """The searches of the whole tree's description start while a scan of the whole tree
    resolves its sites, once the first round of the sites' searches is answered (the
    resolution waits for that round: the description's searches beside it slowed it down);
    a review, whose scans look at the patched files' subsystems, starts them only if its work
    model asks (here it does not): a whole-tree search for every patch would cost it several
    times its own work."""
    from conftest import FIXTURES
    from helpers import run

    tree = FIXTURES / "review" / "tree"
    events = _events(monkeypatch)
    assert run("scan", "--no-cache", tree).exit_code in (0, 1)
    assert events[:4] == ["sites", "round", "searched", "round"] and "resolved" in events[4:], events
    events.clear()
    got = run("review", "--tree", tree, FIXTURES / "review" / "add-queue.patch", "--no-cache", "-j", "1")
    assert got.exit_code == 1, got.stderr
    assert "sites" in events and "searched" not in events


def test_a_scan_after_an_edit_searches_the_description_beside_its_sites(tmp_path, monkeypatch):
    """After an edit the index answers the sites' first round: no search of the tree runs
    beside it, and its resolution takes seconds on a whole tree. The description's searches
    start before it (on linux-source-6.12, started after it they were still running when the
    work model asked, 4 s later; never started, the model waited for them as long)."""
    import shutil
    import time

    from conftest import FIXTURES
    from helpers import run

    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "review" / "tree", tree)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    time.sleep(2.1)  # (a stamp taken within two seconds of a change is not trusted)
    assert run("scan", tree, env=env).exit_code in (0, 1)
    edited = sorted(tree.rglob("*.c"))[0]
    edited.write_text(edited.read_text() + "\n")
    events = _events(monkeypatch)
    assert run("scan", tree, env=env).exit_code in (0, 1)
    assert events[:2] == ["sites", "searched"] and "round" in events[2:], events


def test_an_initialisers_type_is_read_from_its_file_alone_until_the_tree_is_read(tmp_path, monkeypatch):
    """initialiser_type() answers from the one file asked about while the tree's description is
    not read (no search of the whole tree: a review asks of a few files), and the same as the
    whole tree's description once it is."""
    from wqlint.scan import description

    (tmp_path / "include").mkdir()
    (tmp_path / "include/ops.h").write_bytes(HEADER)
    asked = [("open", "include/ops.h", 7), ("close", "include/ops.h", 17), ("open", "include/ops.h", 17),
             ("close", "include/ops.h", 3)]
    d = Description(TreeIndex(tmp_path, jobs=1))
    searched: list = []
    search = description._search
    monkeypatch.setattr(description, "_search", lambda *a, **kw: searched.append(a[4]) or search(*a, **kw))
    alone = [d.initialiser_type(*q) for q in asked]
    assert searched == []
    assert alone == ["ops", "ops", "", ""]
    d.load()
    assert searched and [d.initialiser_type(*q) for q in asked] == alone
