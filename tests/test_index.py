"""The tree search behind every lookup: names that hold other searched names are found through
the shorter ones, with the same answers from ripgrep, grep and the Python fallback."""
from __future__ import annotations

import pytest

from wqlint.scan import index
from wqlint.scan.index import TreeIndex
from wqlint.scan.search import LITERAL_BYTES, MIN_PREFIX, covering, literals
from wqlint.scan.store import Store


def test_covering_keeps_the_names_that_hold_no_other():
    assert covering(["alloc_workqueue_noprof", "alloc_workqueue", "__alloc_workqueue", "system_wq",
                     "system_unbound_wq", "devm_alloc_workqueue", "create_workqueue"]) == \
        ["alloc_workqueue", "create_workqueue", "system_unbound_wq", "system_wq"]
    assert covering(["b", "a", "b"]) == ["a", "b"]


# Seventeen names of 22-24 characters (the API's entry points are as long): 391 bytes.
LONG = [f"wq_{kind}_{n:02d}_workqueue" for kind in ("alloc", "flush", "drain") for n in range(6)][:17]


def test_literals_cut_long_names_to_prefixes_that_fit_one_search():
    got = literals(LONG)
    assert sum(map(len, LONG)) > LITERAL_BYTES >= sum(map(len, got))
    assert all(len(lit) >= MIN_PREFIX for lit in got)
    # every name starts with one of them: a line holding a name is found
    assert all(any(name.startswith(lit) for lit in got) for name in LONG)
    assert got == covering(got)
    # names that fit are searched whole; names too many to cut that short stay whole
    assert literals(["system_wq", "alloc_workqueue"]) == ["alloc_workqueue", "system_wq"]
    many = [f"name_{n:03d}_of_a_queue" for n in range(40)]
    assert literals(many) == covering(many)


@pytest.mark.parametrize("how", ["rg", "grep", "python"])
def test_names_searched_by_their_prefixes_get_exactly_their_word_lines(tmp_path, monkeypatch, how):
    """The lines a cut literal finds of other names (wq_alloc_00_workqueue_x, a name that
    starts the same) are not taken for the names searched."""
    real = index.tools.which
    hidden = {"rg": set(), "grep": {"rg"}, "python": {"rg", "grep"}}[how]
    if how != "python" and real(how) is None:
        pytest.skip(f"{how} is not installed")
    monkeypatch.setattr(index.tools, "which", lambda name: None if name in hidden else real(name))
    (tmp_path / "a.c").write_text("".join(f"{name}(q);\n" for name in LONG)
                                  + "wq_alloc_00_workqueue_x(q);\nwq_alloc_0(q);\n")
    idx = TreeIndex(tmp_path, jobs=2)
    idx.fetch(LONG)
    assert idx.fetched == {name: [("a.c", line)] for line, name in enumerate(LONG, 1)}


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.c").write_text(
        "q = alloc_workqueue_noprof(x);\n"      # 1: only the longer name
        "q = alloc_workqueue(x);\n"             # 2: only the shorter one
        "my_alloc_workqueue(x);\n"              # 3: neither, as a word
        "__alloc_workqueue(x); system_wq;\n")   # 4
    (tmp_path / "b.h").write_text("#define alloc_workqueue(...) alloc_workqueue_noprof(__VA_ARGS__)\n")
    return tmp_path


@pytest.mark.parametrize("how", ["rg", "grep", "python"])
def test_every_name_gets_exactly_its_word_lines(tree, monkeypatch, how):
    real = index.tools.which
    hidden = {"rg": set(), "grep": {"rg"}, "python": {"rg", "grep"}}[how]
    if how != "python" and real(how) is None:
        pytest.skip(f"{how} is not installed")
    monkeypatch.setattr(index.tools, "which", lambda name: None if name in hidden else real(name))
    idx = TreeIndex(tree, jobs=2)
    names = ["alloc_workqueue_noprof", "alloc_workqueue", "__alloc_workqueue", "system_wq"]
    idx.fetch(names)
    assert idx.fetched == {
        "alloc_workqueue_noprof": [("b.h", 1), ("d/a.c", 1)],
        "alloc_workqueue": [("b.h", 1), ("d/a.c", 2)],
        "__alloc_workqueue": [("d/a.c", 4)],
        "system_wq": [("d/a.c", 4)],
    }


@pytest.mark.parametrize("how", ["rg", "grep", "python"])
def test_definition_search_keeps_exactly_the_lines_that_may_define(tree, monkeypatch, how):
    real = index.tools.which
    hidden = {"rg": set(), "grep": {"rg"}, "python": {"rg", "grep"}}[how]
    if how != "python" and real(how) is None:
        pytest.skip(f"{how} is not installed")
    monkeypatch.setattr(index.tools, "which", lambda name: None if name in hidden else real(name))
    (tree / "d" / "defs.c").write_text(
        "#define NR_Q 4\n"                       # 1: a macro
        "x = f(NR_Q, NR_Q_MAX);\n"               # 2: uses only
        "static int nr_q_of(int n)\n"            # 3: a function header
        "{\n\treturn n + NR_Q;\n}\n"
        "\tq->nr = NR_Q;\n"                      # 7: an assignment of another name
        "\tnr_q_of = 3;\n"                       # 8: an assignment of the function's name
        "#define NR_Q_MAX (2 * NR_Q)\n")         # 9
    (tree / "d" / "blob.c").write_bytes(b"#define NR_Q 5\n\0\0binary\n")
    idx = TreeIndex(tree, jobs=2)
    for name in ("NR_Q", "nr_q_of", "NR_Q_MAX"):
        assert idx.occurrences(name, defs=True) is None  # not searched yet
    assert idx.fetch_pending()
    assert [idx.occurrences(name, defs=True) for name in ("NR_Q", "nr_q_of", "NR_Q_MAX")] == [
        [("d/defs.c", 1)], [("d/defs.c", 3), ("d/defs.c", 8)], [("d/defs.c", 9)]]
    assert idx.bad == {"d/blob.c": "binary file (contains NUL bytes)"}


@pytest.mark.parametrize("odd", [False, True])
def test_definition_search_with_a_newline_in_a_file_name(tree, odd):
    """ripgrep's records are one line each unless a file name holds a newline: then the
    filter is left out, not the file."""
    (tree / "d" / "defs.c").write_text("#define NR_Q 4\nx = NR_Q;\n")
    if odd:
        (tree / "d" / "new\nline.c").write_text("y = NR_Q;\n#define NR_Q 5\n")
    idx = TreeIndex(tree, jobs=2)
    assert idx.occurrences("NR_Q", defs=True) is None
    idx.fetch_pending()
    assert idx.occurrences("NR_Q", defs=True) == [("d/defs.c", 1)] + ([("d/new\nline.c", 2)] if odd else [])


def test_links_out_of_the_tree_are_refused_with_the_directory_cache(tmp_path):
    from wqlint import safeio
    root = tmp_path / "tree"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "x.c").write_text("int x;\n")
    (tmp_path / "outside.c").write_text("int y;\n")
    (root / "a" / "b" / "out.c").symlink_to(tmp_path / "outside.c")
    (root / "a" / "up").symlink_to(tmp_path)
    (root / "a" / "lnk").symlink_to("b")
    (root / "a" / "b" / "in.c").symlink_to("x.c")
    cache: dict = {}
    for rel, ok in [("a/b/x.c", True), ("a/b/out.c", False), ("a/up/outside.c", False),
                    ("a/lnk/x.c", True), ("a/b/in.c", True), ("a/b/../b/x.c", True), ("a/b/../../../outside.c", False)]:
        assert safeio.inside(root / rel, root) is ok, rel
        assert safeio.inside(root / rel, root, cache) is ok, rel
    files = index.TreeFiles(root)
    assert files.read("a/lnk/x.c") == b"int x;\n"
    with pytest.raises(index.SourceError, match="symbolic link out of the tree"):
        files.read("a/up/outside.c")


def test_a_file_looked_at_is_let_go_after_the_last_few_even_with_the_collector_off(tmp_path, monkeypatch):
    """A file only looked at (its lines, its functions' spans) is kept for the last
    RECENT_TEXTS looked at, then let go: freed at once, though its chunks refer to it and the
    collector is off (as while the work model runs); its digest stays; source() of a file
    looked at keeps that very file."""
    import gc
    import weakref

    from wqlint.scan.source import digest

    monkeypatch.setattr(index, "RECENT_TEXTS", 2)
    for n in range(4):
        (tmp_path / f"f{n}.c").write_text(f"static void f{n}(void)\n{{\n\tg();\n}}\n")
    idx = TreeIndex(tmp_path, store=Store(tmp_path))  # (the digests are the store's)
    enabled = gc.isenabled()
    gc.disable()
    try:
        first = idx.look("f0.c")
        assert first is not None and first.chunk_at(3).first_line == 1  # a chunk: a cycle
        ref = weakref.ref(first)
        del first
        for n in (1, 2):
            assert idx.look(f"f{n}.c") is not None
        assert ref() is None
    finally:
        if enabled:
            gc.enable()
    assert "f0.c" not in idx.files and idx.looked["f0.c"] == digest((tmp_path / "f0.c").read_bytes())
    looked = idx.look("f2.c")
    assert idx.source("f2.c") is looked and idx.files["f2.c"] is looked
    assert idx.look("f2.c") is looked and idx.text("f0.c") == (tmp_path / "f0.c").read_bytes()


def test_a_bound_lets_go_of_the_least_recently_used_of_the_files_read_after_it(tmp_path):
    """After bound_sources(n), at most n of the files read from then on are held, the least
    recently used let go (their digests kept); those held before stay. A file let go is read
    again when asked for: with other bytes, it is told as changed."""
    for name in "abcde":
        (tmp_path / f"{name}.c").write_text(f"int {name};\n")
    idx = TreeIndex(tmp_path, store=Store(tmp_path))  # (the digests are the store's)
    assert idx.source("a.c") is not None
    idx.bound_sources(2)
    for name in "bcbd":  # b used again after c: c is the least recently used
        assert idx.source(f"{name}.c") is not None
    assert sorted(idx.files) == ["a.c", "b.c", "d.c"]
    assert "c.c" in idx.looked and not idx.changed
    again = idx.source("c.c")  # (b goes)
    assert again is not None and again.data == b"int c;\n" and sorted(idx.files) == ["a.c", "c.c", "d.c"]
    (tmp_path / "b.c").write_text("int b2;\n")
    assert idx.source("b.c").data == b"int b2;\n" and idx.changed == {"b.c"}
    assert "a.c" in idx.files


def test_a_file_looked_at_again_keeps_the_digest_of_its_first_reading(tmp_path, monkeypatch):
    """A file looked at, let go of and looked at again with other bytes keeps the digest of
    what was first read of it (the next run judges it again, whatever it read second); one
    the scan let go of whole and reads again with other bytes is told as changed."""
    from wqlint.scan.source import digest
    monkeypatch.setattr(index, "RECENT_TEXTS", 1)
    for name in "ab":
        (tmp_path / f"{name}.c").write_text(f"int {name};\n")
    idx = TreeIndex(tmp_path, store=Store(tmp_path))  # (the digests are the store's)
    assert idx.text("a.c") == b"int a;\n" and idx.text("b.c") == b"int b;\n"  # (a goes)
    (tmp_path / "a.c").write_text("int a2;\n")
    assert idx.text("a.c") == b"int a2;\n"
    assert idx.looked["a.c"] == digest(b"int a;\n") and not idx.changed
    assert idx.source("b.c") is not None
    idx.release_sources()
    (tmp_path / "b.c").write_text("int b2;\n")
    assert idx.text("b.c") == b"int b2;\n" and idx.changed == {"b.c"}


def test_the_work_rules_say_the_same_with_one_file_held_at_a_time(monkeypatch):
    """The work model's findings (flows through tables of functions, cancels, guards, works
    that wait for themselves) do not depend on how many files the index holds: with one held
    at a time, and one looked at, each file is let go and read again, and the report is the
    one of the default bounds."""
    from conftest import FIXTURES
    from helpers import scan_json

    paths = [str(FIXTURES / d) for d in ("tables", "cancels", "guards")] + [str(FIXTURES.parent / "rules")]
    default, _ = scan_json(*paths, "--no-cache", "-j", "1")
    let_go = []
    real = TreeIndex._let_go
    monkeypatch.setattr(TreeIndex, "_let_go", lambda self, rel: let_go.append(rel) or real(self, rel))
    monkeypatch.setattr(index, "MOST_SOURCES", 1)
    monkeypatch.setattr(index, "RECENT_TEXTS", 1)
    tight, _ = scan_json(*paths, "--no-cache", "-j", "1")
    assert len(let_go) > len(set(let_go))  # files let go, read again and let go again
    assert {f["rule"] for f in default["findings"]} >= {"reclaim-flush-dependency", "self-flush-deadlock",
                                                        "flush-queue-mismatch"}
    assert tight == default


def test_without_a_store_no_digest_is_worked_out(tmp_path, monkeypatch):
    """The digests of the files read are for the index kept between runs: a scan without it
    (--no-cache, a module's scan against a kernel tree) works none out."""
    def never(data):
        raise AssertionError("a digest worked out")
    monkeypatch.setattr(index, "digest", never)
    monkeypatch.setattr(index, "RECENT_TEXTS", 1)
    for n in range(3):
        (tmp_path / f"f{n}.c").write_text(f"static void f{n}(void)\n{{\n}}\n")
    idx = TreeIndex(tmp_path)
    idx.bound_sources(1)
    for n in range(3):
        assert idx.look(f"f{n}.c") is not None and idx.source(f"f{n}.c") is not None
    idx.release_sources()
    assert idx.looked == {"f0.c": "", "f1.c": "", "f2.c": ""} and idx.source("f0.c") is not None
