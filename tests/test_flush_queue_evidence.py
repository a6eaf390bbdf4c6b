"""flush-queue-mismatch names, as its evidence, the work the flush of system_wq cannot wait
for: an item queued with a schedule helper, in the flushing function, through the calls made
before the flush (the function of an item waited for before it included), or elsewhere in the
file; never one the function already waits for before the flush, and when there is none, the
message says so (tests/fixtures/flush-queue-mismatch)."""
from __future__ import annotations

import pytest

from annotations import marks
from conftest import FIXTURES
from helpers import scan_json

TREE = FIXTURES / "flush-queue-mismatch"
RULE = "flush-queue-mismatch"


@pytest.fixture(scope="module")
def findings():
    doc, _ = scan_json(TREE, "--kernel-version", "7.3", "--no-cache")
    return doc["findings"]


def evidence(findings, path, line) -> str:
    (f,) = [f for f in findings if f["rule"] == RULE and (f["path"], f["line"]) == (path, line)]
    return f["message"].split("system_percpu_wq; ", 1)[1]


def test_findings_match_marks(findings):
    expected, forbidden = marks(TREE)
    got = {(f["path"], f["line"], f["rule"]) for f in findings}
    assert got == expected
    assert not got & forbidden


def test_the_item_the_helper_queues_is_named(findings):
    assert evidence(findings, "queued.c", 19) == "it does not wait for q->refresh, which schedule_work() queues there (line 17))"


def test_an_item_waited_for_before_the_flush_is_not_named(findings):
    # reset and stats are waited for (flush_work, cancel_delayed_work_sync): the file's event is not
    assert evidence(findings, "waited.c", 23) == "it does not wait for w->event, which schedule_work() queues there (line 13))"
    # nor is one queued after the flush
    assert evidence(findings, "waited.c", 29) == "it does not wait for w->event, which schedule_work() queues there (line 13))"


def test_without_a_missed_item_the_message_says_so(findings):
    assert evidence(findings, "alone.c", 14) == (
        "this file queues work with schedule_work() (line 11), but no work this flush misses was found: each "
        "item the file queues with the helpers is waited for before it, and no call made before it was found to "
        "queue one)")


def test_the_item_is_found_through_a_call(findings):
    # handle_sync() waits for the work it queues itself: what handle_put() leaves queued is named
    assert evidence(findings, "through.c", 38) == (
        "it does not wait for handle_release_work, which schedule_delayed_work() queues there (handle.c:19, "
        "reached through handle_sync() -> handle_put() -> handle_defer() before the flush))")
    (f,) = [f for f in findings if f["rule"] == RULE and f["line"] == 38]
    assert [(s["path"], s["line"]) for s in f["chain"][-4:]] == [
        ("through.c", 36), ("handle.c", 38), ("handle.c", 25), ("handle.c", 19)]


def test_the_function_of_a_waited_item_runs_before_the_flush(findings):
    # the item the function queues and waits for is not the evidence; what its function queues is
    assert evidence(findings, "through.c", 30) == (
        "it does not wait for handle_drop_work, which schedule_work() queues there (handle.c:31, reached "
        "through fqt_attach_fn() -> handle_drop() before the flush))")
