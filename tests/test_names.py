"""workqueue-name-too-long: names formatted as __alloc_workqueue() does, judged against the
WQ_NAME_LEN of the version (or of the tree's own kernel/workqueue.c)."""
from __future__ import annotations

import pytest

from conftest import rule_fixture
from helpers import scan_json
from wqlint import api

RULE = "workqueue-name-too-long"
NAMES = rule_fixture("workqueue-name-too-long.c")


def findings(*args):
    doc, _ = scan_json(*args)
    return {f["line"]: f for f in doc["findings"] if f["rule"] == RULE}


@pytest.fixture(scope="module")
def on_7_3():
    return findings(NAMES, "--kernel-version", "7.3")


def test_the_kernel_facts_by_version():
    assert [api.wq_name_len(v) for v in ((3, 10, 0), (6, 1, 0), (6, 8, 12), (6, 9, 0), (6, 12, 117), (7, 3, 4))] \
        == [24, 24, 24, 32, 32, 32]
    # 31c89007285d was backported to 6.6.23 and 6.8.2 and reverted in 6.6.25 and 6.8.4.
    assert [api.name_truncation_warns(v) for v in ((6, 6, 22), (6, 6, 23), (6, 6, 24), (6, 6, 25),
                                                   (6, 8, 1), (6, 8, 2), (6, 8, 4))] \
        == [False, True, True, False, False, True, False]
    assert api.NAME_ARGS["alloc_workqueue"] == (0, 3)
    assert api.NAME_ARGS["alloc_workqueue_lockdep_map"] == (0, 4)
    assert api.NAME_ARGS["devm_alloc_workqueue_noprof"] == (1, 4)
    assert api.NAME_ARGS["__alloc_workqueue"] == (0, -1)  # a va_list: its callers format


def test_names_on_7_3_exactly(on_7_3):
    got = on_7_3
    assert {line: f["severity"] for line, f in got.items()} == {
        25: "warning", 29: "warning", 31: "warning", 33: "warning", 39: "warning", 41: "note",
        45: "warning", 47: "warning"}
    assert got[25]["message"].endswith(
        "('nm_controller_completion_events_' is 32 bytes, WQ_NAME_LEN 32 keeps 31: "
        "named 'nm_controller_completion_events')")
    assert "warns (pr_warn_once" in got[25]["message"]
    # A part that does not resolve counts for the least it prints: dev_name() for nothing.
    assert got[39]["message"].endswith(
        "('nm_controller_completion_events_<0-?>' is at least 32 bytes, WQ_NAME_LEN 32 keeps 31: "
        "named 'nm_controller_completion_events' (counting the least for a string wqlint cannot resolve))")
    # A bounded number that only sometimes makes it too long: a note, with its range.
    assert got[41]["message"].endswith(
        "(only for some values: 'nm_controller_polling_queue_<1-6>' is 29 to 34 bytes, "
        "WQ_NAME_LEN 32 keeps 31)")
    assert got[41]["migration"].startswith("Bound what the format prints")


def test_chain_through_macro_local_and_const_array(on_7_3):
    got = on_7_3
    assert [(s["line"], s["note"]) for s in got[31]["chain"]] == [
        (31, "alloc_workqueue(flags 'WQ_PERCPU', max_active '0')"),
        (31, "alloc_workqueue() name '\"%s_%s\"'"),
        (8, "macro NM_DRV = '\"nm_controller\"'"),
        (21, "local 'local' = '\"interrupt_coalescing\"'"),
    ]
    assert [(s["line"], s["note"]) for s in got[33]["chain"]][2:] == [
        (8, "macro NM_DRV = '\"nm_controller\"'"),
        (11, "'nm_fabric' = '\"fabric_management\"'"),
    ]
    assert [(s["line"], s["note"]) for s in got[29]["chain"]][2:] == [
        (8, "macro NM_DRV = '\"nm_controller\"'")]


def test_chain_through_the_ordered_macro_and_a_wrapper_of_the_name(on_7_3):
    got = on_7_3
    assert [(s["path"], s["line"], s["note"]) for s in got[45]["chain"]] == [
        ("workqueue-name-too-long.c", 45, "calls alloc_ordered_workqueue()"),
        ("<wqlint>/include/linux/workqueue.h", 41,
         "alloc_workqueue(flags 'WQ_UNBOUND | __WQ_ORDERED | (flags)', max_active '1')"),
        ("<wqlint>/include/linux/workqueue.h", 41, "alloc_workqueue() name 'fmt'"),
        ("<wqlint>/include/linux/workqueue.h", 41, "'fmt' is parameter 1 of alloc_ordered_workqueue()"),
        ("workqueue-name-too-long.c", 45,
         "'fmt' <- argument 1 '\"%s_reset_handler_queue\"' of alloc_ordered_workqueue()"),
        ("<wqlint>/include/linux/workqueue.h", 41,
         "the name's arguments are those of alloc_ordered_workqueue() from argument 3"),
        ("workqueue-name-too-long.c", 45, "'args[0]' <- argument 3 'NM_DRV' of alloc_ordered_workqueue()"),
        ("workqueue-name-too-long.c", 8, "macro NM_DRV = '\"nm_controller\"'"),
    ]
    assert "named 'nm_controller_reset_handler_que' through alloc_ordered_workqueue()" in got[45]["message"]
    # nm_make() forwards only the name: the finding is at its caller, the other rules stay inside.
    assert [(s["line"], s["note"]) for s in got[47]["chain"]] == [
        (47, "calls nm_make()"),
        (15, "alloc_workqueue(flags 'WQ_UNBOUND', max_active '0')"),
        (15, "alloc_workqueue() name '\"nm_%s\"'"),
        (15, "'what' is parameter 1 of nm_make()"),
        (47, "'what' <- argument 1 '\"very_long_management_event_queue\"' of nm_make()"),
    ]


def test_on_6_1_the_name_keeps_23_bytes_and_is_cut_silently():
    got = findings(NAMES, "--kernel-version", "6.1")
    f = got[27]  # 31 bytes: fits on 7.3, not on 6.1
    assert f["severity"] == "note"
    assert "cuts it silently" in f["message"]
    assert f["message"].endswith("('nm_controller_completion_events' is 31 bytes, WQ_NAME_LEN 24 keeps 23: "
                                 "named 'nm_controller_completio')")
    assert 49 not in got  # nm_make("short"): 8 bytes


def test_the_trees_own_workqueue_c_decides(tmp_path):
    (tmp_path / "include" / "linux").mkdir(parents=True)
    (tmp_path / "kernel").mkdir()
    (tmp_path / "drivers").mkdir()
    (tmp_path / "Makefile").write_text("VERSION = 7\nPATCHLEVEL = 3\nSUBLEVEL = 0\n")
    (tmp_path / "include" / "linux" / "workqueue.h").write_bytes(api.builtin_header((7, 3, 0)))
    (tmp_path / "kernel" / "workqueue.c").write_text(
        "enum {\n\tWQ_NAME_LEN\t\t= 16,\n};\n\nstatic void f(void)\n{\n"
        "\tvsnprintf(wq->name, sizeof(wq->name), fmt, args);\n}\n")
    (tmp_path / "drivers" / "a.c").write_text(
        '#include <linux/workqueue.h>\nvoid a(void)\n{\n'
        '\talloc_workqueue("sixteen_bytes_nm", WQ_PERCPU, 0);\n'
        '\talloc_workqueue("fifteen_bytes_n", WQ_PERCPU, 0);\n}\n')
    got = findings(tmp_path / "drivers")
    assert sorted(got) == [4]
    assert got[4]["severity"] == "warning"  # the catalogue's severity for 7.3
    assert got[4]["message"].endswith("('sixteen_bytes_nm' is 16 bytes, WQ_NAME_LEN 16 keeps 15: "
                                      "named 'sixteen_bytes_n')")
    assert got[4]["chain"][-1] == {
        "path": "kernel/workqueue.c", "line": 2, "text": "WQ_NAME_LEN\t\t= 16,",
        "note": "WQ_NAME_LEN = 16: wq->name keeps 15 bytes; a longer name is cut silently"}
