"""deprecated-system-workqueue: a second kind of site, the queue named at a queueing call."""
from __future__ import annotations

import re

import pytest

from conftest import FIXTURES
from helpers import run, scan_json
from wqlint import api

V7 = ("system_wq and system_unbound_wq are deprecated (__WQ_DEPRECATED, 64d8eae3f895): the first "
      "work item queued on either per boot gets a pr_warn_once; use system_percpu_wq or system_dfl_wq")
V6 = "system_wq and system_unbound_wq are deprecated: use system_percpu_wq or system_dfl_wq"
MISMATCH = "flush of a queue the work it waits for is not queued on: it returns without waiting for that work"


def test_v7_uses_with_their_call():
    doc, _ = scan_json(FIXTURES / "mainline" / "drivers" / "sysq", "--kernel-version", "7.3")
    got = [(f["line"], f["column"], f["severity"], f["message"], [(s["line"], s["note"]) for s in f["chain"]])
           for f in doc["findings"]]
    assert got == [
        (13, 22, "warning", V7 + " (system_unbound_wq -> system_dfl_wq)",
         [(13, "queue_work() on system_unbound_wq (argument 1)")]),
        (21, 2, "warning", V7 + " (system_unbound_wq -> system_dfl_wq)",
         [(21, "queue_work() on system_unbound_wq (argument 1)")]),
        (23, 2, "warning", V7 + " (system_wq -> system_percpu_wq)",
         [(23, "queue_work_on() on system_wq (argument 2)")]),
        (26, 2, "warning", V7 + " (system_unbound_wq -> system_dfl_wq)",
         [(26, "mod_delayed_work() on system_unbound_wq (argument 1)")]),
        (36, 2, "warning", V7 + " (system_wq -> system_percpu_wq; flush_workqueue() queues nothing, "
                                "so it does not warn; it waits only for work queued on system_wq by name, "
                                "not for schedule_work() items, which go to system_percpu_wq)",
         [(36, "flush_workqueue() on system_wq (argument 1)")]),
        (36, 2, "warning", MISMATCH + " (flush_workqueue(system_wq) waits only for work queued on system_wq "
                                      "by name; on v7.3 schedule_work() queues on system_percpu_wq; it "
                                      "does not wait for s->work, which schedule_work() queues there (line 30))",
         [(36, "flush_workqueue() on system_wq (argument 1)"),
          (42, "schedule_work() uses system_percpu_wq"), (30, "schedule_work() queues s->work here")]),
    ]
    assert [f["rule"] for f in doc["findings"]] == ["deprecated-system-workqueue"] * 5 + ["flush-queue-mismatch"]
    assert doc["findings"][-1]["chain"][1]["path"] == "include/linux/workqueue.h"


def test_6_12_with_the_replacements_is_a_note():
    doc, _ = scan_json(FIXTURES / "mainline-6.12" / "drivers" / "sysq")
    assert [(f["line"], f["severity"], f["message"]) for f in doc["findings"]] == [
        (7, "note", V6 + " (system_wq -> system_percpu_wq)")]


def test_no_replacement_no_finding(tmp_path):
    src = tmp_path / "drv.c"
    src.write_text("void f(struct work_struct *w) { queue_work(system_wq, w); }\n")
    old, _ = scan_json(src, "--kernel-version", "6.12")  # upstream 6.12: no system_percpu_wq
    new, _ = scan_json(src, "--kernel-version", "7.3")
    assert old["findings"] == []
    assert [(f["rule"], f["line"], f["column"]) for f in new["findings"]] == [
        ("deprecated-system-workqueue", 1, 33)]


@pytest.mark.kernel
@pytest.mark.parametrize("tree", ["linux_6_12", "linux_7_3"])
def test_queue_calls_take_the_queue_where_the_api_says(tree, request):
    """Each function of api.QUEUE_CALLS is declared in the tree's header with
    `struct workqueue_struct *wq` at the argument the API names (flush_workqueue(wq) is a
    macro of one parameter)."""
    text = (request.getfixturevalue(tree) / "include" / "linux" / "workqueue.h").read_text()
    for call in api.QUEUE_CALLS:
        m = re.search(r"(?:\bbool|\bvoid|#define)\s+" + call.name + r"\(([^)]*)\)",
                      re.sub(r"\\?\n\s*", " ", text))
        assert m, call.name
        params = [p.strip() for p in m.group(1).split(",")]
        want = "wq" if call.name == "flush_workqueue" else "struct workqueue_struct *wq"
        assert params[call.queue_arg] == want, (call.name, params)


FLUSHER = """struct w { struct delayed_work work; };
int add(struct w *w)
{
\tschedule_delayed_work(&w->work, 0);
\t__flush_workqueue(system_wq);
\treturn 0;
}
"""


def test_flush_of_system_wq_waits_for_schedule_work_only_before_the_split(tmp_path):
    """6.1's schedule_work() queues on system_wq: the flush waits for it. From the split the
    helpers queue on system_percpu_wq, read from the header the tree has (here wqlint's
    own description of the version)."""
    src = tmp_path / "drv.c"
    src.write_text(FLUSHER)
    old, _ = scan_json(src, "--kernel-version", "6.1")
    new, _ = scan_json(src, "--kernel-version", "7.3")
    assert old["findings"] == []
    got = [f for f in new["findings"] if f["rule"] == "flush-queue-mismatch"]
    assert [(f["line"], f["column"], f["severity"]) for f in got] == [(5, 2, "warning")]
    assert [(s["path"], s["line"], s["note"]) for s in got[0]["chain"]] == [
        ("drv.c", 5, "__flush_workqueue() on system_wq (argument 1)"),
        ("<wqlint>/include/linux/workqueue.h", 61, "schedule_delayed_work() uses system_percpu_wq"),
        ("drv.c", 4, "schedule_delayed_work() queues w->work here")]
    assert got[0]["migration"] == "Flush system_percpu_wq, the queue the work really goes to, in place of system_wq."


def test_flush_queue_mismatch_fix_flushes_the_helpers_queue(tmp_path):
    src = tmp_path / "drv.c"
    src.write_text(FLUSHER)
    result = run("fix", "--target", "mainline", "--kernel-version", "7.3", "--rule", "flush-queue-mismatch",
                 "--diff", src)
    assert result.exit_code in (0, 1), result.stderr
    assert "-\t__flush_workqueue(system_wq);\n+\t__flush_workqueue(system_percpu_wq);" in result.stdout


@pytest.mark.kernel
@pytest.mark.parametrize("tree,queue", [("linux_6_1", "system_wq"), ("linux_6_12", "system_percpu_wq"),
                                        ("linux_7_3", "system_percpu_wq")])
def test_helper_queues_are_read_from_the_tree(tree, queue, request):
    from wqlint.scan.treeapi import helper_queues
    header = request.getfixturevalue(tree) / "include" / "linux" / "workqueue.h"
    got = helper_queues(header.read_bytes(), "include/linux/workqueue.h")
    assert set(got) == set(api.SCHEDULE_HELPERS) | {api.FLUSH_SCHEDULED}
    assert {q for q, _ in got.values()} == {queue}
    for q, step in got.values():
        assert q in header.read_text().splitlines()[step.line - 1]
