"""reclaim-flush-dependency's advice names a cancel only where the code itself cancels the
item the flush waits for (scan.cancels): the same member of the same struct type, or the same
variable of the flush's file."""
from __future__ import annotations

from annotations import marks
from conftest import FIXTURES
from helpers import scan_json

CANCELS = FIXTURES / "cancels"
RULE = "reclaim-flush-dependency"
# The advice every finding of the fixture starts with: cx-aux is one queue per struct cx_dev.
ADVICE = ("Give cx-aux WQ_MEM_RECLAIM if a rescuer kernel thread per queue is acceptable: the queue is allocated "
          "once per object, and each allocation creates its own rescuer (`wqlint fix --suggestions` adds the "
          "flag). Or move the waiting work off cx: queue it on a queue without WQ_MEM_RECLAIM if it is not needed "
          "to free memory.")


def _cancelled(at: str, call: str = "cancel_work_sync", within: str = "cx_remove") -> str:
    return (f" The code already cancels this work item, with {call}() at {at} (in {within}()): a "
            "cancel instead of the flush may be acceptable here, which check_flush_dependency() does not check, "
            "but only if dropping the pending work is fine on this path (the cancel drops it where the flush "
            "runs it).")


def _findings() -> dict:
    doc, _ = scan_json(CANCELS, "--kernel-version", "7.3")
    expected, forbidden = marks(CANCELS)
    got = {(f["path"], f["line"], f["rule"]) for f in doc["findings"]}
    assert got == expected and not got & forbidden
    return {f["line"]: f for f in doc["findings"] if f["rule"] == RULE}


def test_a_flushed_item_the_code_cancels_elsewhere_gets_the_cancel_as_advice():
    got = _findings()
    # flush_work(&cx->stats_work): cx_remove() cancels the same member of a struct cx_dev.
    assert "flush_work(&cx->stats_work) waits for cx-aux" in got[36]["message"]
    assert got[36]["migration"] == ADVICE + _cancelled("cancels.c:73")
    # flush_work(&cx_trace_work): the same static variable, cancelled in the same file.
    assert "flush_work(&cx_trace_work) waits for cx-aux" in got[44]["message"]
    assert got[44]["migration"] == ADVICE + _cancelled("cancels.c:77")


def test_no_cancel_is_offered_for_another_item_or_a_queue():
    got = _findings()
    assert sorted(got) == [36, 38, 40, 42, 44, 46, 112]
    # A different member of the same struct is cancelled (other_work, not event_work); the
    # same member name of another struct (cy_dev's poll, not cx_dev's); a flush of the queue;
    # a cancel of another variable only (cx_trace_work, not cx_log_work).
    for line, flushed in [(38, "flush_work(&cx->event_work)"), (40, "flush_delayed_work(&cx->poll)"),
                          (42, "flush_workqueue(cx->aux)"), (46, "flush_work(&cx_log_work)")]:
        assert f"{flushed} waits for cx-aux" in got[line]["message"]
        assert got[line]["migration"] == ADVICE
        assert "cancel" not in got[line]["migration"]


def test_an_accessor_macro_gives_its_object_the_struct_it_casts_to():
    """CZ_INFO() and CW_INFO() read the same pointer as two structs: cz_remove()'s cancel
    through CW_INFO() is of a struct cw_info's sync_work, the one through CZ_INFO() of the
    flushed struct cz_info's."""
    got = _findings()
    assert "flush_delayed_work(&CZ_INFO(cz)->sync_work) waits for cz-aux" in got[112]["message"]
    assert got[112]["migration"] == ADVICE.replace("cx", "cz") + _cancelled(
        "cancels.c:131", "cancel_delayed_work_sync", "cz_remove")


def test_the_text_format_prints_the_advice_with_the_cancel():
    from helpers import run

    text = run("scan", CANCELS, "--kernel-version", "7.3", "--no-cache")
    assert "    fix: " + ADVICE + _cancelled("cancels.c:73") in text.stdout.splitlines()
