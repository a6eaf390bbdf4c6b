"""The conditions guarding each call of a between-call chain (scan.conditions), shown in its
step's note: an if and its else, the loops, a loop macro's block, a switch's cases, an error
path after a label only gotos reach, an early exit before it, a preprocessor conditional; a
call with none shows nothing more (tests/fixtures/guards)."""
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


EX_FN = "ex_fn() calls "


@pytest.mark.parametrize("line,call,flush", [
    (29, "ex_exit()", "ex_exit() calls flush_workqueue() (only if not (ex->n > 4); only if ex_ready(ex))"),
    (43, "ex_skip()", "ex_skip() calls drain_workqueue() (only if not (i == ex->state); "
                      "inside for (i = 0; i < ex->n; i++); only if not (ex->state == EX_DEAD))"),
    (67, "ex_stay()", "ex_stay() calls flush_workqueue()"),  # no exit leaves the way to it
    (72, "ex_stay()", "ex_stay() calls drain_workqueue()"),  # the return before again: guards nothing
    (83, "ex_config()", "ex_config() calls flush_workqueue() (only with CONFIG_EX_DEBUG)"),
    (89, "ex_config()", "ex_config() calls drain_workqueue() (only without IS_ENABLED(CONFIG_EX_STATS))"),
    (92, "ex_config()", "ex_config() calls flush_workqueue()"),  # after the #endif
])
def test_each_call_and_flush_shows_the_exits_before_it_and_its_preprocessor_branch(findings, line, call, flush):
    got = calls(findings, "ex.c", line, "reclaim-flush-dependency")
    assert [note for _, note in got] == [EX_FN + call, flush]
    assert got[1][0] == line


def test_the_wait_of_a_work_for_itself_shows_the_exit_before_it(findings):
    assert calls(findings, "ex.c", 113, "self-flush-deadlock", first=2, last=0) == [
        (113, "ex_self_fn() calls flush_workqueue() (only if ex->n)"),
    ]


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


def test_an_exit_guards_what_comes_after_it_in_its_block_and_the_blocks_inside():
    got = _shown("int f(void) { if (!a) return 0; g(); if (b) { h(); return 1; } while (c) {\n"
                 " if (d) break; switch (s) { case 1: if (e) break; k(); } if (q) { continue; } m(); } }")
    assert got["g"] == "g (only if a)" and got["h"] == "h (only if b; only if a)"
    assert got["k"] == "k (only if not (e); in case 1; only if not (d))"
    assert got["m"] == "m (only if not (q); only if not (d); inside while (c))"  # the nearest three


@pytest.mark.parametrize("code", [
    "int f(void) { if (a) return 0; else y(); x(); }",  # an else: not read
    "int f(void) { if (a) { return 0; y(); } x(); }",  # the block does not end with the exit
    "int f(void) { if (b) goto back; if (a) return 0; back: x(); }",  # a label before the call
    "int f(void) { if (b) goto back; if (a) return 0; while (c) { back: x(); } }",
    "int f(void) { again: if (a) goto again; x(); }",  # a goto back
    "int f(void) { if (a) goto out; x(); out: return 0; }".replace("goto out", "goto nowhere"),
    "int f(void) { if (a) goto in; while (c) { x(); in: y(); } }",  # into a loop
    "void f(void) { while (b) { list_for_each_entry(p, h, n) if (a) break; x(); } }",
    "void f(void) { while (b) { if (a) { list_for_each_entry(p, h, n) { break; } } x(); } }",
    "void f(void) { if (a) break; x(); }",  # no loop to leave
    "void f(void) { list_for_each_entry(p, h, n) if (a) return; x(); }",  # the exit of a loop
])
def test_near_misses_of_an_exit_guard_nothing(code):
    assert _shown(code)["x"].startswith("x") and "only if" not in _shown(code)["x"]


def test_the_same_exit_again_is_said_once():
    got = _shown("int f(void) { if (ret) goto err; g(); if (ret) goto err; if (q) return 1; x(); err: return 0; }")
    assert got["x"] == "x (only if not (q); only if not (ret))"


def test_a_goto_forward_past_the_call_guards_it():
    assert _shown("int f(void) { if (a) goto out; x(); out: return 0; }")["x"] == "x (only if not (a))"
    assert _shown("int f(void) { while (b) { if (a) goto next; x(); next: ; } }")["x"] == \
        "x (only if not (a); inside while (b))"


def test_a_preprocessor_branch_says_its_condition_and_those_of_the_branches_before():
    got = _shown("void f(void) {\n#ifndef A\n a();\n#elif defined(B) && C\n if (q) return;\n b();\n"
                 "#elif !defined(D)\n d();\n#else\n e();\n#endif\n#if !IS_ENABLED(CONFIG_X)\n g();\n"
                 "#else\n h();\n#endif\n k();\n}\n")
    assert got["a"] == "a (only without A)"
    assert got["b"] == "b (only if not (q); only with defined(B) && C, with A)"
    assert got["d"] == "d (only without D, without (defined(B) && C), with A)"
    assert got["e"] == "e (only with D, without (defined(B) && C), with A)"
    assert got["g"] == "g (only without IS_ENABLED(CONFIG_X))" and got["h"] == "h (only with IS_ENABLED(CONFIG_X))"
    assert got["k"] == "k" and got["IS_ENABLED"] == "IS_ENABLED"  # after #endif; a condition's own text


@pytest.mark.parametrize("code", [
    "void f(void) { if (a) { x(); ",  # unbalanced
    "void f(void) { FOO(bar) if ( x(); } }",
    "#define M(a) do { if (a) x(); } while (0)\n",
    "void f(void) { switch (s) { case: x(); } }",
    "void f(void) { goto; lab: x(); }",
    "x();",
    "void f(void) { if (\xff\x00\n) x(); }",
    "void f(void) {\n#if\n x();\n#else\n#endif\n}",
    "void f(void) { if (a) goto; x(); }",
    "void f(void) {\n#ifdef A\n if (a) {\n#else\n if (b) {\n#endif\n return; } x(); }",
])
def test_odd_text_never_breaks_the_reading(code):
    assert _shown(code).get("x", "x").startswith("x")


def _call(code: str):
    tree = parser.parse(code.encode())
    return next(n for n in parser.descendants(tree.root_node) if n.type == "call_expression")


def test_an_exit_whose_test_is_set_again_before_the_call_is_not_its_guard(findings):
    # `if (ret) goto out;` then `ret = ex_ready(ex); if (ret) flush...`: only the last test holds.
    assert calls(findings, "ex.c", 138, "reclaim-flush-dependency", first=3) == [
        (147, "ex_reset_fn() calls ex_reset()"),
        (138, "ex_reset() calls flush_workqueue() (only if ret)"),
    ]
