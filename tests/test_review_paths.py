"""`wqlint review` of patches that open a work's path to a wait (reclaim-flush-dependency,
self-flush-deadlock): a patch that adds a step anywhere on the path, the wait, or a flag of
an allocation on it introduces the finding, shown with the whole path of the work blamed and
what the line did (rules.yaml `introduced-by`); a patch that touches no step is not blamed.

The tree is fixtures/review/paths/ (drivers/pa/pa.c: works on WQ_MEM_RECLAIM queues and
flushes none of them reaches, but for pb_event_fn(), which reaches the flush of pb-aux;
drivers/pa/fq.c: a flush of system_wq in a file that schedules no work yet).
"""
from __future__ import annotations

import json
import re

import pytest

from conftest import FIXTURES
from helpers import run
from patchrepo import Repo

TREE = FIXTURES / "review" / "paths"
PA = "drivers/pa/pa.c"
RECLAIM = ("warning: work on a WQ_MEM_RECLAIM queue waits for a queue without WQ_MEM_RECLAIM: "
           "check_flush_dependency() warns, and under memory pressure the rescuer can wait forever")


@pytest.fixture
def repo(tmp_path):
    return Repo(tmp_path / "repo", TREE)


def review(repo, tmp_path, subject, *args):
    repo.commit(subject)
    (patch,) = repo.format_patch(tmp_path / "out", "paths")
    return run("review", patch, "--tree", TREE, "-j", "1", *args)


def comment(result) -> tuple:
    """(the finding's first line, the steps of the path shown, the lines after it)."""
    assert result.exit_code == 1, result.stderr
    lines = result.stdout.splitlines()
    said = [ln[4:] for ln in lines[1:] if ln.startswith("    ") and not ln.startswith("     ")]  # (not the source)
    steps = [s for s in said if re.match(r"\S+:\d+: ", s)]
    return lines[0], steps, [s for s in said if s not in steps and not s.startswith("fix: ")]


def reset_path(*middle) -> list:
    """pa_reset_fn()'s path on pa, with the calls given between the work and the wait, in
    the tree after a patch that adds one line to pa_stop()."""
    return ["drivers/pa/pa.c:61: alloc_workqueue() allocates pa (flags 'WQ_MEM_RECLAIM | WQ_UNBOUND') "
            "with WQ_MEM_RECLAIM, without __WQ_LEGACY",
            "drivers/pa/pa.c:69: queue_work() puts &pa->reset on pa->wq",
            "drivers/pa/pa.c:66: INIT_WORK() binds &pa->reset to pa_reset_fn()",
            "drivers/pa/pa.c:42: pa_reset_fn() calls pa_stop()", *middle]


AUX = ("drivers/pa/pa.c:{}: alloc_workqueue() allocates pa-aux (flags 'WQ_UNBOUND') without WQ_MEM_RECLAIM, "
       "kept in struct pa_dev.aux: one queue per struct pa_dev")


def test_a_call_added_in_the_middle_of_a_path(repo, tmp_path):
    repo.edit(PA, "\tpa->state = 0;\n", "\tpa->state = 0;\n\tpa_quiesce(pa);\n")
    head, steps, tail = comment(review(repo, tmp_path, "pa: quiesce on stop"))
    assert head.startswith(f"drivers/pa/pa.c:24:2: {RECLAIM} (pa_reset_fn() runs on pa (WQ_MEM_RECLAIM) and "
                           "through 2 calls flush_workqueue(pa->aux) waits for pa-aux")
    assert steps == reset_path("drivers/pa/pa.c:35: pa_stop() calls pa_quiesce()",
                               "drivers/pa/pa.c:24: pa_quiesce() calls flush_workqueue()", AUX.format(63))
    assert tail == ["introduced at drivers/pa/pa.c:35",
                    "this patch adds a step to the path (pa_stop() calls pa_quiesce()): pa_reset_fn() on pa now "
                    "reaches the wait, for a queue without WQ_MEM_RECLAIM"]


def test_a_wait_added_in_a_function_the_work_reaches(repo, tmp_path):
    repo.edit(PA, "\tpa->state = 0;\n", "\tpa->state = 0;\n\tflush_workqueue(pa->aux);\n")
    head, steps, tail = comment(review(repo, tmp_path, "pa: flush the aux queue on stop"))
    assert head.startswith(f"drivers/pa/pa.c:35:2: {RECLAIM} (pa_reset_fn() runs on pa (WQ_MEM_RECLAIM) and "
                           "through 1 call flush_workqueue(pa->aux)")
    assert steps == reset_path("drivers/pa/pa.c:35: pa_stop() calls flush_workqueue()", AUX.format(63))
    assert tail == ["introduced at drivers/pa/pa.c:35",
                    "this patch adds the wait: pa_reset_fn() on pa, a work on a WQ_MEM_RECLAIM queue, now waits "
                    "for a queue without WQ_MEM_RECLAIM"]


def test_dropping_reclaim_from_the_queue_waited_for(repo, tmp_path):
    """Blamed on the allocation of the queue waited for, on the line of its call that changes
    (the flags, below the called name)."""
    repo.edit(PA, "\t\t\t\t    WQ_MEM_RECLAIM | WQ_UNBOUND, 0);", "\t\t\t\t    WQ_UNBOUND, 0);")
    head, steps, tail = comment(review(repo, tmp_path, "pa: the spare queue needs no rescuer"))
    assert head.startswith(f"drivers/pa/pa.c:29:2: {RECLAIM} (pa_scrub_fn() runs on pa (WQ_MEM_RECLAIM)")
    assert steps == [
        "drivers/pa/pa.c:60: alloc_workqueue() allocates pa (flags 'WQ_MEM_RECLAIM | WQ_UNBOUND') with "
        "WQ_MEM_RECLAIM, without __WQ_LEGACY",
        "drivers/pa/pa.c:70: queue_work() puts &pa->scrub on pa->wq",
        "drivers/pa/pa.c:67: INIT_WORK() binds &pa->scrub to pa_scrub_fn()",
        "drivers/pa/pa.c:55: pa_scrub_fn() calls pa_drain()",
        "drivers/pa/pa.c:29: pa_drain() calls flush_workqueue()",
        "drivers/pa/pa.c:63: alloc_workqueue() allocates pa-spare (flags 'WQ_UNBOUND') without WQ_MEM_RECLAIM, "
        "kept in struct pa_dev.spare: one queue per struct pa_dev"]
    assert tail == ["introduced at drivers/pa/pa.c:64",
                    "this patch drops WQ_MEM_RECLAIM: the queue waited for has no rescuer any more, and "
                    "pa_scrub_fn() on pa, a work on a WQ_MEM_RECLAIM queue, waits for it"]


def test_adding_reclaim_to_the_queue_the_work_runs_on(repo, tmp_path):
    repo.edit(PA, '"pa-ev", WQ_UNBOUND', '"pa-ev", WQ_MEM_RECLAIM | WQ_UNBOUND')
    head, steps, tail = comment(review(repo, tmp_path, "pa: events run in reclaim"))
    assert head.startswith(f"drivers/pa/pa.c:24:2: {RECLAIM} (pa_event_fn() runs on pa-ev (WQ_MEM_RECLAIM)")
    assert steps == [
        "drivers/pa/pa.c:61: alloc_workqueue() allocates pa-ev (flags 'WQ_MEM_RECLAIM | WQ_UNBOUND') with "
        "WQ_MEM_RECLAIM, without __WQ_LEGACY",
        "drivers/pa/pa.c:69: queue_work() puts &pa->event on pa->evq",
        "drivers/pa/pa.c:66: INIT_WORK() binds &pa->event to pa_event_fn()",
        "drivers/pa/pa.c:48: pa_event_fn() calls pa_quiesce()",
        "drivers/pa/pa.c:24: pa_quiesce() calls flush_workqueue()", AUX.format(62)]
    assert tail == ["introduced at drivers/pa/pa.c:61",
                    "this patch adds WQ_MEM_RECLAIM: pa_event_fn() on pa-ev now runs on a WQ_MEM_RECLAIM queue, "
                    "and its path waits for a queue without WQ_MEM_RECLAIM"]


def test_queueing_a_work_on_a_reclaim_queue(repo, tmp_path):
    repo.edit(PA, "\tqueue_work(pa->evq, &pa->event);\n",
              "\tqueue_work(pa->evq, &pa->event);\n\tqueue_work(pa->wq, &pa->event);\n")
    head, steps, tail = comment(review(repo, tmp_path, "pa: run events on the reclaim queue too"))
    assert head.startswith(f"drivers/pa/pa.c:24:2: {RECLAIM} (pa_event_fn() runs on pa (WQ_MEM_RECLAIM)")
    assert steps[1:3] == ["drivers/pa/pa.c:70: queue_work() puts &pa->event on pa->wq",
                          "drivers/pa/pa.c:66: INIT_WORK() binds &pa->event to pa_event_fn()"]
    assert len(steps) == 6
    assert tail == ["introduced at drivers/pa/pa.c:70",
                    "this patch adds a step to the path (queue_work() puts &pa->event on pa->wq): pa_event_fn() "
                    "on pa now reaches the wait, for a queue without WQ_MEM_RECLAIM"]


PB_RESET = [
    "drivers/pa/pa.c:108: alloc_workqueue() allocates pb (flags 'WQ_MEM_RECLAIM | WQ_UNBOUND') with WQ_MEM_RECLAIM, "
    "without __WQ_LEGACY",
    "drivers/pa/pa.c:113: queue_work() puts &pb->reset on pb->wq",
    "drivers/pa/pa.c:111: INIT_WORK() binds &pb->reset to pb_reset_fn()",
    "drivers/pa/pa.c:96: pb_reset_fn() calls pb_stop()",
    "drivers/pa/pa.c:89: pb_stop() calls pb_quiesce()",
    "drivers/pa/pa.c:83: pb_quiesce() calls flush_workqueue()",
    "drivers/pa/pa.c:110: alloc_workqueue() allocates pb-aux (flags 'WQ_UNBOUND') without WQ_MEM_RECLAIM, kept in "
    "struct pb_dev.aux: one queue per struct pb_dev"]
PB_WHAT = ("this patch adds a path to the wait (pb_stop() calls pb_quiesce()): pb_reset_fn() on pb now reaches the "
           "wait as well: one more work on a WQ_MEM_RECLAIM queue waits there for a queue without WQ_MEM_RECLAIM")


def second_work(repo):
    """pb_reset_fn() joins pb_event_fn() at the flush of pb-aux, with the longer path: the
    finding, there before, shows pb_event_fn()'s path first."""
    repo.edit(PA, "\tpb->state = 0;\n", "\tpb->state = 0;\n\tpb_quiesce(pb);\n")
    return "pb: quiesce on stop"


def test_a_second_work_brought_to_a_reported_wait(repo, tmp_path):
    head, steps, tail = comment(review(repo, tmp_path, second_work(repo)))
    assert head.startswith(f"drivers/pa/pa.c:83:2: {RECLAIM} (2 works on WQ_MEM_RECLAIM queues reach "
                           "flush_workqueue(pb->aux), which waits for pb-aux, lacking WQ_MEM_RECLAIM: pb_event_fn() "
                           "on pb-ev through 1 call; pb_reset_fn() on pb through 2 calls;")
    assert steps == PB_RESET  # the path of the work blamed, not the first work's
    assert tail == ["and 1 other work: pb_event_fn() on pb-ev", "introduced at drivers/pa/pa.c:89", PB_WHAT]


def test_a_second_work_in_json_and_github(repo, tmp_path):
    name = second_work(repo)
    doc = json.loads(review(repo, tmp_path, name, "--format", "json").stdout)
    (f,) = doc["findings"]
    assert [w["work"] for w in f["works"]] == ["pb_event_fn() on pb-ev", "pb_reset_fn() on pb"]
    introduced = f["introduced"]
    assert (introduced["path"], introduced["line"], introduced["what"]) == (PA, 89, PB_WHAT)
    assert [f"{s['path']}:{s['line']}: {s['note']}" for s in introduced["chain"]] == PB_RESET
    (body,) = [c["body"] for c in json.loads(run("review", *sorted((tmp_path / "out").iterdir()), "--tree", TREE,
                                                 "-j", "1", "--format", "github").stdout)["comments"]]
    assert body.startswith("This patch adds a path to the wait (pb_stop() calls pb_quiesce()): ")
    assert "This line is a step of the path to the wait at `drivers/pa/pa.c:83`." in body
    assert "```\n" + "\n".join(PB_RESET) + "\n```" in body
    mail = run("review", *sorted((tmp_path / "out").iterdir()), "--tree", TREE, "-j", "1", "--format", "mail").stdout
    shown = mail.split("The path, step by step:\n", 1)[1].split("\n\n", 1)[0]  # (wrapped, continued by 6 spaces)
    assert shown.replace("\n      ", " ").splitlines() == ["  " + s for s in PB_RESET]


def test_a_call_added_in_the_middle_of_a_path_to_a_wait_for_itself(repo, tmp_path):
    repo.edit(PA, "\tpa->state = 0;\n", "\tpa->state = 0;\n\tpa_sync(pa);\n")
    head, steps, tail = comment(review(repo, tmp_path, "pa: sync on stop"))
    assert head.startswith("drivers/pa/pa.c:19:2: error: work waits for itself: ")
    assert steps == reset_path()[1:] + [
        "drivers/pa/pa.c:35: pa_stop() calls pa_sync()", "drivers/pa/pa.c:19: pa_sync() calls flush_workqueue()"]
    assert tail == ["introduced at drivers/pa/pa.c:35",
                    "this patch adds a step to the path (pa_stop() calls pa_sync()): pa_reset_fn() now reaches a "
                    "wait for itself, which never returns"]


def test_a_patch_beside_a_path_is_not_blamed(repo, tmp_path):
    """A line next to a step of a reported path (in its work function), the wait of that path
    rewritten (a finding that was there, reached by no work more), and a call that brings no
    work to a wait: nothing introduced."""
    repo.edit(PA, "\tpb_quiesce(pb);\n", "\tpb->state = 1;\n\tpb_quiesce(pb);\n")
    repo.edit(PA, "\tflush_workqueue(pb->aux);\n", "\tflush_workqueue(pb->aux);\t/* all of it */\n")
    repo.edit(PA, "\tpa->state = 0;\n", "\tpa->state = 0;\n\tpa_drain(pa);\n")
    result = review(repo, tmp_path, "pa, pb: keep the state")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


def test_work_scheduled_before_a_flush_of_system_wq(repo, tmp_path):
    """flush-queue-mismatch: the flush was there, the work it misses is new."""
    repo.edit("drivers/pa/fq.c", "\tfq->state = 1;\n", "\tfq->state = 1;\n\tschedule_work(&fq->work);\n")
    head, steps, tail = comment(review(repo, tmp_path, "fq: start the work at once", "--kernel-version", "7.3"))
    assert head.startswith("drivers/pa/fq.c:23:2: warning: flush of a queue the work it waits for is not queued on")
    assert steps == ["drivers/pa/fq.c:23: flush_workqueue() on system_wq (argument 1)",
                     "<wqlint>/include/linux/workqueue.h:57: schedule_work() uses system_percpu_wq",
                     "drivers/pa/fq.c:18: schedule_work() queues fq->work here"]
    assert tail == ["introduced at drivers/pa/fq.c:18",
                    "this patch adds a step to the path (schedule_work() queues fq->work here): the flush of "
                    "system_wq now comes after work the schedule helpers queue, which it does not wait for"]


def test_a_review_on_an_index_starts_the_search_of_the_files_that_flush_at_once(repo, tmp_path, monkeypatch):
    """With the tree's index, the files that flush are known before the sites are resolved:
    their search, the first the work model asks, is started then, in a thread of its own,
    and made once for both sides of the review, which says what it says without it."""
    import threading

    from wqlint import tools
    from wqlint.scan import engine

    made: list = []  # (the thread that ran it, argv)
    finish = tools._finish

    def counted(proc, argv, *more):
        made.append((threading.current_thread().name, tuple(argv)))
        return finish(proc, argv, *more)
    monkeypatch.setattr(tools, "_finish", counted)
    repo.edit(PA, "\tpa->state = 0;\n", "\tpa->state = 0;\n\tpa_quiesce(pa);\n")
    repo.commit("pa: quiesce on stop")
    (patch,) = repo.format_patch(tmp_path / "out", "paths")
    first = run("review", patch, "--tree", TREE, "-j", "1")
    del made[:]
    warm = run("review", patch, "--tree", TREE, "-j", "1")
    ahead = [argv for name, argv in made if name == "wqlint-prefetch"]
    assert len(ahead) == 1 and "--byte-offset" in ahead[0] and PA in ahead[0]
    assert [argv for _name, argv in made].count(ahead[0]) == 1
    searches = sorted(argv for _name, argv in made)
    monkeypatch.setattr(engine.Engine, "_prefetch_far", lambda self: None)
    del made[:]
    without = run("review", patch, "--tree", TREE, "-j", "1")
    assert [name for name, _argv in made if name == "wqlint-prefetch"] == []
    assert sorted(argv for _name, argv in made) == searches
    assert (warm.exit_code, warm.stdout) == (without.exit_code, without.stdout) == (first.exit_code, first.stdout)
    assert warm.stdout.startswith(f"drivers/pa/pa.c:24:2: {RECLAIM}")
