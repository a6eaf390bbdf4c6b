"""The conditions guarding each call of a between-call chain (scan.conditions), shown in its
step's note: an if and its else, the loops, a loop macro's block, a switch's cases, an error
path after a label only gotos reach; a call with none shows nothing more
(tests/fixtures/guards)."""
from __future__ import annotations

import pytest

from annotations import marks
from conftest import FIXTURES
from helpers import scan_json
from wqlint.scan import parser
from wqlint.scan.conditions import MAX_GUARDS, guards_of, with_guards

TREE = FIXTURES / "guards"
GD_FN = "gd_fn() calls "


@pytest.fixture(scope="module")
def findings():
    doc, _ = scan_json(TREE, "--kernel-version", "7.3", "--no-cache")
    return doc["findings"]


def calls(findings, path: str, line: int, rule: str, first: int = 3, last: int = -1) -> list:
    """(line, note) of the chain's steps from the work function's call to the flush."""
    (f,) = [f for f in findings if (f["path"], f["line"], f["rule"]) == (path, line, rule)]
    return [(s["line"], s["note"]) for s in f["chain"][first:last or None]]


def test_findings_match_marks(findings):
    expected, forbidden = marks(TREE)
    got = {(f["path"], f["line"], f["rule"]) for f in findings}
    assert got == expected
    assert not got & forbidden


@pytest.mark.parametrize("line,call,flush", [
    (28, "gd_plain()", "gd_plain() calls flush_workqueue()"),  # no guard: nothing added
    (36, "gd_if() (only if gd->state == GD_RESET)", "gd_if() calls flush_workqueue() (only if !(gd->flags & GD_DEAD))"),
    (39, "gd_if() (only if gd->state == GD_RESET)", "gd_if() calls drain_workqueue() (only if gd->flags & GD_DEAD)"),
    (50, "gd_loop()", "gd_loop() calls flush_workqueue() (inside while (gd->n--))"),
    (54, "gd_loop()", "gd_loop() calls drain_workqueue() (inside for (i = 0; i < gd->n; i++))"),
    (57, "gd_loop()", "gd_loop() calls flush_workqueue() (inside do ... while (gd->state))"),
    (68, "gd_switch()", "gd_switch() calls flush_workqueue() (in case GD_IDLE, GD_BUSY)"),
    (72, "gd_switch()", "gd_switch() calls drain_workqueue() (in default)"),
    (83, "gd_items()", "gd_items() calls flush_workqueue() (inside list_for_each_entry(it, &gd->items, node))"),
    (95, "gd_setup()", "gd_setup() calls flush_workqueue() (on the error path after label err_stop)"),
    (107, "gd_finish()", "gd_finish() calls drain_workqueue()"),  # the straight path falls into out:
])
def test_each_call_and_flush_shows_its_guards(findings, line, call, flush):
    got = calls(findings, "gd.c", line, "reclaim-flush-dependency")
    assert [note for _, note in got] == [GD_FN + call, flush]
    assert got[1][0] == line


def test_the_wait_of_a_work_for_itself_shows_its_guards(findings):
    assert calls(findings, "gd.c", 130, "self-flush-deadlock", first=2, last=0) == [
        (138, "gd_self_fn() calls gd_halt() (inside while (gd->n))"),
        (130, "gd_halt() calls flush_workqueue() (only if gd->n > 1)"),
    ]


def test_the_missed_items_path_shows_its_guards(findings):
    assert calls(findings, "fq.c", 24, "flush-queue-mismatch", first=-2, last=0) == [
        (20, "calls fqg_defer() (in case 1)"),
        (13, "schedule_work() queues q->refresh here (only if q->busy)"),
    ]


def _shown(code: str) -> dict:
    """{callee: with_guards(callee, its call)} of the calls of code."""
    tree = parser.parse(code.encode())
    out = {}
    for node in parser.descendants(tree.root_node):
        if node.type == "call_expression":
            name = parser.text(node.child_by_field_name("function"))
            out[name] = with_guards(name, node)
    return out


def test_expressions_guard_as_ifs_do():
    got = _shown("void f(void) { x = y ? a() : b(); ok && c(); ok || d(); if (e()) g(); while (h()) ; }")
    assert got["a"] == "a (only if y)" and got["b"] == "b (only if not (y))"
    assert got["c"] == "c (only if ok)" and got["d"] == "d (only if not (ok))"
    assert got["e"] == "e" and got["h"] == "h"  # a condition's own call runs whatever it gives
    assert got["g"] == "g (only if e())"


def test_only_the_nearest_guards_are_shown_and_long_conditions_are_cut():
    long = " && ".join(f"c{i}" for i in range(40))
    got = _shown("void f(void) { while (a) { if (b) { switch (s) { case 1: if (" + long + ") /* why */ x(); } } } }")
    assert got["x"].startswith("x (only if c0 && c1 && ") and got["x"].endswith("...; in case 1; only if b)")
    assert len(guards_of(_call("void f(void) { while (a) if (b) if (c) if (d) x(); }"))) == MAX_GUARDS


def test_a_condition_is_printed_on_one_line_without_its_comments():
    got = _shown("void f(void) {\n if (a /* not b */ &&\n\t\tc) // d\n   x();\n}")
    assert got["x"] == "x (only if a && c)"


def test_gotos_back_to_a_label_make_a_loop_not_an_error_path():
    got = _shown("int f(void) { return 0; again: x(); if (y) goto again; return 1; }")
    assert got["x"] == "x"


def test_an_unwinding_ladder_is_an_error_path_from_its_first_label_on():
    got = _shown("int f(void) { if (a) goto err_b; if (b) goto err_a; return 0;\n"
                 "err_b: x();\nerr_a: if (q) y();\n return -1; }")
    assert got["x"] == "x (on the error path after label err_b)"
    assert got["y"] == "y (only if q; on the error path after label err_a)"


@pytest.mark.parametrize("code", [
    "void f(void) { if (a) { x(); ",  # unbalanced
    "void f(void) { FOO(bar) if ( x(); } }",
    "#define M(a) do { if (a) x(); } while (0)\n",
    "void f(void) { switch (s) { case: x(); } }",
    "void f(void) { goto; lab: x(); }",
    "x();",
    "void f(void) { if (\xff\x00\n) x(); }",
])
def test_odd_text_never_breaks_the_reading(code):
    assert _shown(code).get("x", "x").startswith("x")


def _call(code: str):
    tree = parser.parse(code.encode())
    return next(n for n in parser.descendants(tree.root_node) if n.type == "call_expression")
