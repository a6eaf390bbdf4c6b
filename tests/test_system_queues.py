"""deprecated-system-workqueue: a second kind of site, the queue named at a queueing call."""
from __future__ import annotations

import re

import pytest

from conftest import FIXTURES
from helpers import scan_json
from wqlint import api

V7 = ("system_wq and system_unbound_wq are deprecated (__WQ_DEPRECATED, 64d8eae3f895): the first "
      "work item queued on either per boot gets a pr_warn_once; use system_percpu_wq or system_dfl_wq")
V6 = "system_wq and system_unbound_wq are deprecated: use system_percpu_wq or system_dfl_wq"


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
                                "so it does not warn, but system_wq is to be removed)",
         [(36, "flush_workqueue() on system_wq (argument 1)")]),
    ]
    assert {f["rule"] for f in doc["findings"]} == {"deprecated-system-workqueue"}


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
