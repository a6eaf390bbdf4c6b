"""Work items between calls (scan.work): reclaim-flush-dependency's chains, from the queue's
allocation to the flush and the flushed queue's allocation."""
from __future__ import annotations

from conftest import FIXTURES, rule_fixture
from helpers import scan_json

RECLAIM = rule_fixture("reclaim-flush-dependency.c")


def _reclaim(doc) -> dict:
    return {f["line"]: f for f in doc["findings"] if f["rule"] == "reclaim-flush-dependency"}


def test_chain_goes_from_the_reclaim_queue_through_the_calls_to_the_flushed_queue():
    doc, _ = scan_json(RECLAIM, "--kernel-version", "7.3")
    f = _reclaim(doc)[37]
    assert (f["severity"], f["column"]) == ("warning", 2)
    assert [(s["line"], s["note"]) for s in f["chain"]] == [
        (108, "alloc_workqueue() allocates rc (flags 'WQ_MEM_RECLAIM | WQ_UNBOUND') with WQ_MEM_RECLAIM, "
              "without __WQ_LEGACY"),
        (119, "queue_work() puts &rc->reset on rc->wq"),
        (112, "INIT_WORK() binds &rc->reset to rc_reset_fn()"),
        (49, "rc_reset_fn() calls rc_stop()"),
        (42, "rc_stop() calls rc_quiesce()"),
        (37, "rc_quiesce() calls flush_workqueue()"),
        (109, "alloc_workqueue() allocates rc-aux (flags 'WQ_UNBOUND') without WQ_MEM_RECLAIM, "
              "kept in struct rc_dev.aux: one queue per struct rc_dev"),
    ]
    assert ('the kernel warns "workqueue: WQ_MEM_RECLAIM rc:rc_reset_fn is flushing !WQ_MEM_RECLAIM '
            'rc-aux:0x0"') in f["message"]


def test_a_call_through_an_initialised_member_and_a_flushed_work_item():
    doc, _ = scan_json(RECLAIM, "--kernel-version", "7.3")
    f = _reclaim(doc)[56]
    assert [(s["line"], s["note"]) for s in f["chain"]][3:] == [
        (68, "rc_sync_fn() calls rc_do_sync() through .sync (reclaim-flush-dependency.c:61)"),
        (56, "rc_do_sync() calls flush_work()"),
        (123, "queue_work() puts &rc->aux_work on rc->aux"),
        (109, "alloc_workqueue() allocates rc-aux (flags 'WQ_UNBOUND') without WQ_MEM_RECLAIM, "
              "kept in struct rc_dev.aux: one queue per struct rc_dev"),
    ]
    assert "!WQ_MEM_RECLAIM rc-aux:rc_aux_fn" in f["message"]


def test_work_scheduled_on_a_system_queue_and_a_draining_destroy():
    doc, _ = scan_json(RECLAIM, "--kernel-version", "7.3")
    got = _reclaim(doc)
    assert sorted(got) == [37, 56, 77, 81, 195, 291]  # and fr->busy, not fr->q (nothing queued on it) nor bl->aux (after a hang)
    assert "flush_work(&rc->event) waits for system_percpu_wq" in got[77]["message"]
    assert [(s["line"], s["note"]) for s in got[77]["chain"]][-1] == (
        127, "schedule_work() puts &rc->event on system_percpu_wq")
    assert "destroy_workqueue(rc->aux) waits for rc-aux" in got[81]["message"]
    # The advice says what can be done: a system queue cannot get a rescuer; rc-aux, one per
    # struct rc_dev, can, at a rescuer thread per device.
    # The waiting work can also move off the reclaim queue; a cancel is offered only for the
    # item the code cancels itself (rc->aux_work, in rc_teardown_fn()): elsewhere it would
    # drop the work the wait is for.
    assert got[77]["migration"] == (
        "system_percpu_wq is a system queue, which cannot be given WQ_MEM_RECLAIM: move the waiting work off rc "
        "(queue it on a queue without WQ_MEM_RECLAIM if it is not needed to free memory), or wait for "
        "system_percpu_wq where no work of rc runs.")
    assert got[81]["migration"].startswith(
        "Give rc-aux WQ_MEM_RECLAIM if a rescuer kernel thread per queue is acceptable: the queue is allocated once "
        "per object, and each allocation creates its own rescuer (`wqlint fix --suggestions` adds the flag)")
    assert [line for line, f in sorted(got.items()) if "cancel" in f["migration"]] == [56]
    assert got[56]["migration"].endswith(
        " The code already cancels this work item, with cancel_work_sync() at reclaim-flush-dependency.c:79 (in "
        "rc_teardown_fn()): a cancel instead of the flush may be acceptable here, which check_flush_dependency() "
        "does not check, but only if dropping the pending work is fine on this path (the cancel drops it where the "
        "flush runs it).")
    assert "no-fix=system:system_percpu_wq" in got[77]["hints"] and "per-object" in got[81]["hints"]


def test_without_the_rescuer_flag_in_the_tree_nothing_is_followed(tmp_path):
    """The legacy constructor exempts the flusher; a queue whose flags are unknown is never
    judged."""
    src = tmp_path / "drv.c"
    src.write_text(RECLAIM.read_text().replace("WQ_MEM_RECLAIM | WQ_UNBOUND", "rc_flags"))
    doc, _ = scan_json(src, "--kernel-version", "7.3")
    assert _reclaim(doc) == {}


WRAPPERS = FIXTURES / "rules" / "reclaim_wrappers.c"


def test_a_wrapper_given_the_queue_flushes_the_callers_argument():
    """The flushed queue is what the work function hands a wrapper (two deep here), and only
    that: the same wrapper given a queue with a rescuer is not reported."""
    doc, _ = scan_json(WRAPPERS, "--kernel-version", "7.3")
    got = _reclaim(doc)
    assert sorted(got) == [34, 56, 75, 98, 153, 196]
    assert [(s["line"], s["note"]) for s in got[56]["chain"]][3:] == [
        (68, "wp_drain_fn() calls wp_quiesce()"),
        (61, "wp_quiesce() calls wp_drain()"),
        (56, "wp_drain() calls drain_workqueue()"),
        (113, "alloc_workqueue() allocates wp-aux (flags 'WQ_UNBOUND') without WQ_MEM_RECLAIM, kept in "
              "struct wp_dev.aux: one queue per struct wp_dev"),
    ]
    assert "!WQ_MEM_RECLAIM wp-aux:wp_aux_fn" in got[75]["message"]


def test_an_accessor_macro_names_the_member_that_holds_the_queue():
    doc, _ = scan_json(WRAPPERS, "--kernel-version", "7.3")
    f = _reclaim(doc)[98]
    # The flush as written, and the member the accessor reads, which its text does not name.
    assert "flush_workqueue(wp_host_wq(wp)) (struct wp_host.host_wq) waits for wp-host" in f["message"]
    assert [(s["line"], s["note"]) for s in f["chain"]][-1] == (
        105, "alloc_workqueue() allocates wp-host (flags 'WQ_UNBOUND') without WQ_MEM_RECLAIM, kept in "
             "struct wp_host.host_wq: one queue per struct wp_host")


def test_a_wrapper_given_the_work_item_queues_what_its_callers_name():
    doc, _ = scan_json(WRAPPERS, "--kernel-version", "7.3")
    got = _reclaim(doc)
    assert 162 not in got  # put only on the queue without a rescuer
    assert [(s["line"], s["note"]) for s in got[153]["chain"]][1:4] == [
        (171, "wk_kick() puts &wk->kick_work on wk->wq through queue_work() (reclaim_wrappers.c:140)"),
        (169, "INIT_WORK() binds &wk->kick_work to wk_kick_fn()"),
        (153, "wk_kick_fn() calls flush_workqueue()"),
    ]


def test_without_ripgrep_the_subsystem_is_read_in_python(monkeypatch):
    """The same findings and chains when the files are searched in Python (no ripgrep)."""
    want, _ = scan_json(WRAPPERS, "--kernel-version", "7.3", "--no-cache")
    from wqlint import tools
    which = tools.which
    monkeypatch.setattr(tools, "which", lambda name: None if name == "rg" else which(name))
    got, _ = scan_json(WRAPPERS, "--kernel-version", "7.3", "--no-cache")
    assert _reclaim(got) == _reclaim(want) != {}


def test_an_element_of_an_array_member_is_kept_in_the_array():
    doc, _ = scan_json(WRAPPERS, "--kernel-version", "7.3")
    f = _reclaim(doc)[196]
    assert "flush_work(&ar->works[i]) waits for ar-aux" in f["message"]
    assert "!WQ_MEM_RECLAIM ar-aux:ar_elem_fn" in f["message"]
    assert 198 not in _reclaim(doc)  # an array of queues with a rescuer


MAINLINE = FIXTURES / "mainline"


def test_a_callee_of_another_subsystem_is_found_where_the_tree_flushes():
    """xport_add_port() is defined in net/xport, far from both drivers: found among the
    functions of the files that flush. The two drivers' works reaching the transport's flush
    are one finding there (one flush, one queue waited for), naming both, each work's chain
    in it."""
    doc, _ = scan_json(MAINLINE, "--kernel-version", "7.3")
    found = [f for f in doc["findings"] if f["rule"] == "reclaim-flush-dependency"
             and (f["path"], f["line"]) == ("net/xport/xport.c", 20)]
    assert len(found) == 1
    f = found[0]
    got = sorted((w["work"], w["chain"]) for w in f["works"])
    assert [w for w, _ in got] == ["xpa_add_fn() on xpa", "xpb_event_fn() on xpb_events"]
    assert "2 works on WQ_MEM_RECLAIM queues reach flush_workqueue(xport_wq), which waits for xport" in f["message"]
    assert "xpa_add_fn() on xpa through 2 calls" in f["message"] and "xpb_event_fn() on xpb_events" in f["message"]
    assert f["chain"] == f["works"][0]["chain"]  # the first work's (the shortest chain)
    assert f["identity"]["function"] == "xport_flush"  # the function that flushes: one per cause
    assert [(s["path"], s["line"], s["note"]) for s in got[0][1]] == [
        ("drivers/xpa/xpa.c", 32, "alloc_ordered_workqueue() allocates xpa (flags 'WQ_MEM_RECLAIM') with "
                                  "WQ_MEM_RECLAIM, without __WQ_LEGACY"),
        ("drivers/xpa/xpa.c", 38, "queue_work() puts &xd->add_work on xd->wq"),
        ("drivers/xpa/xpa.c", 35, "INIT_WORK() binds &xd->add_work to xpa_add_fn()"),  # (over two lines)
        ("drivers/xpa/xpa.c", 20, "xpa_add_fn() calls xport_add_port()"),
        ("net/xport/xport.c", 26, "xport_add_port() calls xport_flush()"),
        ("net/xport/xport.c", 20, "xport_flush() calls flush_workqueue()"),
        ("net/xport/xport.c", 49, "alloc_workqueue() allocates xport (flags 'WQ_PERCPU') without WQ_MEM_RECLAIM"),
    ]


def test_a_path_marked_unlikely_is_not_followed(tmp_path):
    """xport_free() resets (and drains the queue) only under unlikely(): the path hangs on the
    port's flags, which its callers do not show. Without the mark it is followed."""
    import shutil
    tree = tmp_path / "tree"
    shutil.copytree(MAINLINE, tree)
    src = tree / "net" / "xport" / "xport.c"
    src.write_text(src.read_text().replace("if (unlikely(port->flags & XPORT_RESET_PERMS))",
                                           "if (port->flags & XPORT_RESET_PERMS)"))
    doc, _ = scan_json(tree, "--kernel-version", "7.3")
    lines = sorted((f["line"], w["work"].split("(")[0]) for f in doc["findings"]
                   if f["rule"] == "reclaim-flush-dependency" and f["path"] == "net/xport/xport.c"
                   for w in f["works"])
    assert lines == [(20, "xpa_add_fn"), (20, "xpb_event_fn"), (33, "xpa_free_fn"), (69, "xpc_reset_fn")]


def test_the_subsystem_headers_read_the_same_from_any_shape_of_search_output():
    """ripgrep's lines for the headers and initialisers, read at C speed when each record is
    one line, and record by record when a file name holds a newline: the same answers."""
    from wqlint.scan.subtext import Heads, _heads
    out = (b"d/a.c\x0012:300:static int *a_probe(struct dev *d,\n"
           b"d/a.c\x0040:900:\t.probe = &a_probe,\n"
           b"d/a.c\x0041:930:\t.remove = NULL,\n"
           b"d/b.h\x003:20:void a_probe (void)\n"
           b"d/b.h\x009:99:  . flush\t= b_flush\n")
    fast = {"d": Heads()}
    _heads(out, fast, {"d/a.c", "d/b.h"})
    odd = {"d": Heads()}
    _heads(out.replace(b"d/b.h", b"d/b\n.h"), odd, {"d/a.c", "d/b\n.h"})
    assert fast["d"].headers("a_probe") == [("d/a.c", 12, 300, True), ("d/b.h", 3, 20, False)]
    assert fast["d"].definitions("a_probe") == [("d/a.c", 12, 300), ("d/b.h", 3, 20)]
    assert fast["d"].initialisers("probe") == [("a_probe", "d/a.c", 40)]
    assert fast["d"].initialisers("flush") == [("b_flush", "d/b.h", 9)]
    assert fast["d"].initialisers("remove") == [] and b"a_probe" in fast["d"] and b"probe" not in fast["d"]
    assert odd["d"].headers("a_probe") == [("d/a.c", 12, 300, True), ("d/b\n.h", 3, 20, False)]
    assert odd["d"].initialisers("flush") == [("b_flush", "d/b\n.h", 9)]
    # Each file's name once, before its lines (--heading): the same answers, and nothing
    # but a refusal when a file's lines are not in that form.
    from wqlint.scan.subtext import _heading_heads
    heading = (b"d/a.c\x0012:300:static int *a_probe(struct dev *d,\n40:900:\t.probe = &a_probe,\n"
               b"41:930:\t.remove = NULL,\n\nd/b.h\x003:20:void a_probe (void)\n9:99:  . flush\t= b_flush\n")
    read = {"d": Heads()}
    assert _heading_heads(heading, read, {"d/a.c", "d/b.h"})
    assert read["d"].headers("a_probe") == fast["d"].headers("a_probe")
    assert read["d"].initialisers("probe") == [("a_probe", "d/a.c", 40)]
    assert read["d"].initialisers("flush") == [("b_flush", "d/b.h", 9)]
    assert read["d"].initialisers("remove") == [] and b"probe" not in read["d"]
    for bad in (heading.replace(b"d/b.h", b"d/b\n\n.h"), heading.replace(b"9:99:", b"binary file 9:99:")):
        refused = {"d": Heads()}
        assert not _heading_heads(bad, refused, {"d/a.c", "d/b.h"})
        assert refused["d"].headers("a_probe") == []


def test_subsystem_headers_packed_answer_as_they_did_before():
    """A directory's headers are packed once searched (Heads.freeze()): every name, its
    initialisers, a name that begins another's and names never seen answer as before."""
    from wqlint.scan.subtext import Heads
    heads = Heads()
    for i in range(3000):
        heads.add(f"d/f{i % 7}.c", b"fn_%d" % i, b"", b"%d" % (i + 1), b"%d" % (i * 40), static=i % 3 == 0)
    heads.add("d/a.c", b"fn_1", b"", b"9", b"90")
    heads.add("d/a.c", b"fn_1_more", b"", b"20", b"200")
    heads.add("d/a.c", b"probe", b"fn_2", b"30", b"300")
    heads.add("d/b.c", b"probe", b"fn_1", b"4", b"40")
    names = [f"fn_{i}" for i in range(3100)] + ["fn_1_more", "fn_", "fn_1_mor", "probe", ""]
    asked = lambda h: ([h.headers(n) for n in names], [h.initialisers(n) for n in names],
                       [n.encode() in h for n in names], [("." + n).encode() in h for n in names])
    before = asked(heads)
    assert heads.freeze() is heads and heads.freeze() is heads
    assert asked(heads) == before
    assert heads.headers("fn_1") == [("d/a.c", 9, 90, False), ("d/f1.c", 2, 40, False)]
    assert heads.initialisers("probe") == [("fn_2", "d/a.c", 30), ("fn_1", "d/b.c", 4)]
    assert b"fn_3099" not in heads and b"fn_2999" in heads and b"probe" not in heads
    assert Heads().freeze().headers("x") == [] and b"x" not in Heads().freeze()


def test_a_scan_of_the_driver_alone_shows_its_work_reaching_the_other_subsystems_flush():
    """The maintainer of drivers/xpa scans it alone: the flush in net/xport is reported for the
    driver's work, with the advice for a queue of another subsystem (no edit of it)."""
    doc, _ = scan_json(MAINLINE / "drivers" / "xpa", "--kernel-version", "7.3")
    got = [f for f in doc["findings"] if f["rule"] == "reclaim-flush-dependency"]
    assert [(f["path"], f["line"]) for f in got] == [("net/xport/xport.c", 20)]
    assert "WQ_MEM_RECLAIM xpa:xpa_add_fn is flushing !WQ_MEM_RECLAIM xport:0x0" in got[0]["message"]
    assert got[0]["migration"].startswith("xport is allocated in another subsystem")
    assert "no-fix=foreign" in got[0]["hints"]


def test_a_wait_for_a_system_queue_found_at_its_allocation_has_no_fix():
    """xpc's reclaim work waits, through the transport, for a work on system_unbound_wq: the
    queue is named as the kernel prints it (its allocation in kernel/workqueue.c), and the
    advice is a system queue's, which no edit of an allocation can give WQ_MEM_RECLAIM."""
    doc, _ = scan_json(MAINLINE, "--kernel-version", "7.3")
    got = [f for f in doc["findings"] if f["rule"] == "reclaim-flush-dependency" and f["path"] == "net/xport/xport.c"
           and f["line"] == 69]
    assert len(got) == 1
    assert ('"workqueue: WQ_MEM_RECLAIM xpc:xpc_reset_fn is flushing !WQ_MEM_RECLAIM events_unbound:xport_work_fn"'
            in got[0]["message"])
    assert [(s["path"], s["line"]) for s in got[0]["chain"]][-2:] == [("net/xport/xport.c", 62),
                                                                     ("kernel/workqueue.c", 28)]
    assert got[0]["migration"].startswith("system_unbound_wq is a system queue, which cannot be given WQ_MEM_RECLAIM")
    assert "no-fix=system:system_unbound_wq" in got[0]["hints"]


def test_each_work_reaching_one_flush_is_fixed_and_counted():
    """xpa's and xpb's works both reach the transport's flush of xport: one finding, fixed by
    one edit at its allocation; xpc's wait for a system queue is the one left."""
    from helpers import run

    got = run("fix", MAINLINE, "--kernel-version", "7.3", "--target", "mainline", "--rule",
              "reclaim-flush-dependency", "--diff", "--no-cache")
    assert got.exit_code == 0, got.stderr
    assert [ln for ln in got.stdout.splitlines() if ln.startswith("+\t")] == [
        '+\txport_wq = alloc_workqueue("xport", WQ_PERCPU | WQ_MEM_RECLAIM, 0);']
    assert got.stderr.splitlines()[-1] == ("wqlint: 1 finding(s) fixed in 1 file(s) (target mainline, v7.3); "
                                           "1 not fixed")


def test_a_queue_named_from_a_buffer_snprintf_fills_is_shown_by_its_format(tmp_path):
    """zfcp's shape on 6.1 and 6.12: the queue's name is a local array snprintf() fills; the
    warning shows its format, as for any other formatted name, not the variable, and the
    chain where the arguments it prints come from."""
    (tmp_path / "zq.c").write_text(
        "#include <linux/workqueue.h>\n"
        "struct zq { struct workqueue_struct *wq, *aux; struct work_struct w; };\n"
        "static void zq_fn(struct work_struct *w)\n"
        "{\n"
        "\tstruct zq *z = container_of(w, struct zq, w);\n"
        "\n"
        "\tflush_workqueue(z->aux);\n"
        "}\n"
        "int zq_init(struct zq *z, const char *bus)\n"
        "{\n"
        "\tchar name[16];\n"
        "\n"
        "\tsnprintf(name, sizeof(name), \"zq_q_%s\", bus);\n"
        "\tz->wq = alloc_ordered_workqueue(name, WQ_MEM_RECLAIM);\n"
        "\tz->aux = alloc_workqueue(\"zq_aux\", WQ_PERCPU, 0);\n"
        "\tINIT_WORK(&z->w, zq_fn);\n"
        "\tqueue_work(z->wq, &z->w);\n"
        "\treturn 0;\n"
        "}\n")
    doc, _ = scan_json(tmp_path, "--kernel-version", "7.3", "--no-cache")
    (f,) = _reclaim(doc).values()
    assert f["line"] == 7
    assert 'the kernel warns "workqueue: WQ_MEM_RECLAIM zq_q_%s:zq_fn is flushing !WQ_MEM_RECLAIM zq_aux:0x0"' \
        in f["message"]
    assert f["chain"][0]["note"].startswith("alloc_ordered_workqueue() allocates zq_q_%s (flags 'WQ_MEM_RECLAIM'; "
                                            "name's %s from parameter 'bus' of zq_init()) ")
    assert not [f for f in doc["findings"] if f["rule"] == "workqueue-name-too-long"]


SELF = rule_fixture("self-flush-deadlock.c")


def _self_waits(doc) -> dict:
    return {f["line"]: f for f in doc["findings"] if f["rule"] == "self-flush-deadlock"}


def test_a_work_waiting_for_itself_is_reported_at_the_wait_with_its_chain():
    """The queue the work runs on destroyed and flushed through a call, its own item
    cancelled through its parameter, disabled by name, and a DECLARE_WORK() item flushed;
    the near misses of the fixture (a mode parameter, current_work(), a member set before
    the call, BUG() before the wait, another item, another queue, the cancels that do not
    wait, a last-reference test, a suspended state on a freezable queue, a bit every
    queueing call cleared, a state stored only after waiting for the work) are silent."""
    doc, _ = scan_json(SELF, "--kernel-version", "7.3")
    got = _self_waits(doc)
    assert sorted(got) == [16, 30, 72, 80, 90, 106, 335, 378, 445, 523]
    # A queue named by a format: as the kernel prints it, with where its argument comes from.
    assert "nm_scan_fn() runs on %s (named with %s from 'd' field 'name') and cancel_work_sync(&d->scan)" \
        in got[523]["message"]
    assert (got[16]["severity"], got[16]["column"]) == ("error", 2)
    assert [(s["line"], s["note"]) for s in got[16]["chain"]] == [
        (118, "queue_work() puts &d->reset on d->wq"),
        (113, "INIT_WORK() binds &d->reset to sf_reset_fn()"),
        (59, "sf_reset_fn() calls sf_teardown() (only if d->broken)"),
        (16, "sf_teardown() calls destroy_workqueue()"),
    ]
    assert "sf_reset_fn() runs on sf and through 1 call destroy_workqueue(d->wq) waits for the queue it runs on" \
        in got[16]["message"]
    assert "no WARN catches it" in got[16]["message"] and "recursive locking" in got[16]["message"]
    assert "hung-task detector" in got[16]["message"]
    assert [(s["line"], s["note"]) for s in got[90]["chain"]] == [
        (120, "queue_work() puts &d->stop on d->wq"),
        (116, "INIT_WORK() binds &d->stop to sf_stop_fn()"),
        (97, "sf_stop_fn() calls sf_release()"),
        (90, "sf_release() calls destroy_workqueue()"),  # the local wq holds d->wq there
    ]
    assert [(s["line"], s["note"]) for s in got[72]["chain"]] == [
        (122, "schedule_delayed_work() puts &d->poll on system_percpu_wq"),
        (117, "INIT_DELAYED_WORK() binds &d->poll to sf_poll_fn()"),
        (72, "sf_poll_fn() calls cancel_delayed_work_sync() (only if d->broken)"),
    ]
    assert "waits for its own work item" in got[72]["message"]
    assert got[72]["migration"].startswith("The work cannot wait for itself: where it only stops itself, use "
                                           "cancel_work() or cancel_delayed_work()")
    assert got[16]["migration"].startswith("Flush, drain or destroy d->wq where none of its work runs")
    assert [(s["line"], s["note"]) for s in got[106]["chain"]][:2] == [
        (123, "schedule_work() puts &sf_global_work on system_percpu_wq"),
        (101, "DECLARE_WORK() binds sf_global_work to sf_global_fn()"),
    ]


def test_without_the_mode_parameter_the_cancel_of_its_own_item_is_reported(tmp_path):
    """The near miss of a mode parameter made real: the work passes false."""
    src = tmp_path / "sf.c"
    src.write_text(SELF.read_text().replace("sf_stop(d, true);", "sf_stop(d, false);"))
    doc, _ = scan_json(src, "--kernel-version", "7.3", "--no-cache")
    assert 37 in _self_waits(doc) and 40 not in _self_waits(doc) and 43 not in _self_waits(doc)


TABLES = FIXTURES / "tables"


def _tables_tree(tmp_path):
    """The tables fixture in a kernel tree: mainline's workqueue API and version beside it."""
    import shutil
    tree = tmp_path / "tree"
    shutil.copytree(TABLES, tree)
    for rel in ("Makefile", "include/linux/workqueue.h", "kernel/workqueue.c"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(MAINLINE / rel, tree / rel)
    return tree


def _reclaim_chains(doc) -> list:
    """(path, line, the kernel's warning, the chain's calls) of each work a finding names: the
    message quotes the warning of the first; the others differ in the queue and function."""
    out = []
    for f in doc["findings"]:
        if f["rule"] != "reclaim-flush-dependency":
            continue
        flushing = f["message"].split('"workqueue: ')[1].rstrip('")').split(" is flushing ")[1]
        for w in f["works"]:
            function, queue = w["work"].split("() on ", 1)
            out.append((f["path"], f["line"], f"WQ_MEM_RECLAIM {queue}:{function} is flushing {flushing}",
                        [(s["path"], s["line"], s["note"]) for s in w["chain"][3:-1]]))
    return sorted(out)


def test_a_call_through_a_table_of_functions_is_followed_by_the_tables_type(tmp_path):
    """file->f_op->fsync() runs the fsync of whichever filesystem the file is on: every
    file_operations of the tree that sets .fsync is followed (afs's waits), not a table of
    another type setting a member of that name (cfs's dir_operations), not a function that
    waits a call below the table (dfs), not another driver's table of a type the work's own
    driver sets itself (drivers/other's engine_ops), not a table the work's own file calls
    (tgt_own_fn()); vfs_fsync() of fs/sync.c, a file that waits for nothing, is followed from
    the driver as a function of another subsystem."""
    doc, _ = scan_json(_tables_tree(tmp_path))
    assert _reclaim_chains(doc) == [
        ("fs/afs/file.c", 16, "WQ_MEM_RECLAIM tgt-wq:tgt_flush_fn is flushing !WQ_MEM_RECLAIM afs_commit:0x0", [
            ("drivers/tgt/io.c", 22, "tgt_flush_fn() calls vfs_fsync()"),
            ("fs/sync.c", 9, "vfs_fsync() calls afs_fsync() through file_operations.fsync = afs_fsync "
                             "(fs/afs/file.c:21) (only if file->f_op->fsync)"),
            ("fs/afs/file.c", 16, "afs_fsync() calls flush_workqueue()")]),
        ("fs/afs/file.c", 16, "WQ_MEM_RECLAIM tgt-wq:tgt_sync_fn is flushing !WQ_MEM_RECLAIM afs_commit:0x0", [
            ("drivers/tgt/io.c", 29, "tgt_sync_fn() calls tgt_file_sync()"),
            ("drivers/tgt/sync.c", 7, "tgt_file_sync() calls afs_fsync() through file_operations.fsync = "
                                      "afs_fsync (fs/afs/file.c:21)"),
            ("fs/afs/file.c", 16, "afs_fsync() calls flush_workqueue()")]),
    ]
    assert doc["errors"] == []


def test_a_table_the_works_driver_does_not_set_is_any_drivers(tmp_path):
    """The near misses of the test above, each undone: drivers/own no longer sets an engine_ops
    of its own (then drivers/other's may be the one its engine has), and dfs's fsync waits
    itself."""
    tree = _tables_tree(tmp_path)
    own = tree / "drivers" / "own" / "own.c"
    own.write_text(own.read_text().replace("struct engine_ops own_engine_ops", "struct engine_opz own_engine_ops"))
    dfs = tree / "fs" / "dfs" / "file.c"
    dfs.write_text(dfs.read_text().replace("\tdfs_wait();\n\treturn 0;", "\tflush_workqueue(dfs_wq);\n\treturn 0;"))
    doc, _ = scan_json(tree)
    got = {(p, line, w.split(":")[1].split(" ")[0]) for p, line, w, _chain in _reclaim_chains(doc)}
    assert got == {("fs/afs/file.c", 16, "tgt_flush_fn"), ("fs/afs/file.c", 16, "tgt_sync_fn"),
                   ("fs/dfs/file.c", 15, "tgt_flush_fn"), ("fs/dfs/file.c", 15, "tgt_sync_fn"),
                   ("drivers/other/other.c", 10, "own_stop_fn")}

def test_works_reaching_one_flush_are_one_finding_in_every_format():
    """gr_add_fn() and gr_event_fn(), each on a reclaim queue of its own, reach gr_quiesce()'s
    flush: one finding there (the flush and the queue it waits for), its chain the shortest
    work's, its message naming both; JSON and SARIF carry each work's chain, the text format
    names the other work."""
    import json

    from helpers import run

    doc, _ = scan_json(RECLAIM, "--kernel-version", "7.3")
    f = _reclaim(doc)[291]
    assert [w["work"] for w in f["works"]] == ["gr_add_fn() on gr", "gr_event_fn() on gr_events"]
    assert f["chain"] == f["works"][0]["chain"] and len(f["works"][1]["chain"]) == len(f["chain"]) + 1
    assert ("2 works on WQ_MEM_RECLAIM queues reach flush_workqueue(gr->aux), which waits for gr-aux7, lacking "
            "WQ_MEM_RECLAIM: gr_add_fn() on gr through 1 call; gr_event_fn() on gr_events through 2 calls;"
            ) in f["message"]
    assert '"workqueue: WQ_MEM_RECLAIM gr:gr_add_fn is flushing !WQ_MEM_RECLAIM gr-aux7:0x0"' in f["message"]
    assert f["identity"]["function"] == "gr_quiesce"  # the cause, not one of its works
    from wqlint.finding import Finding
    assert Finding.from_dict(f).to_dict()["works"] == f["works"]  # a saved scan reads them back
    assert [s["note"] for s in f["works"][1]["chain"]][3:5] == ["gr_event_fn() calls gr_stop()",
                                                                 "gr_stop() calls gr_quiesce()"]
    sarif = json.loads(run("scan", RECLAIM, "--kernel-version", "7.3", "--format", "sarif").stdout)
    import pytest
    from conftest import SARIF_SCHEMA

    jsonschema = pytest.importorskip("jsonschema")
    if SARIF_SCHEMA.is_file():  # (the shared schemas folder sits beside the checkout, when it is there)
        jsonschema.validate(sarif, json.loads(SARIF_SCHEMA.read_text()))
    result = next(r for r in sarif["runs"][0]["results"] if r["ruleId"] == "reclaim-flush-dependency"
                  and r["locations"][0]["physicalLocation"]["region"]["startLine"] == 291)
    assert [(c["message"]["text"], len(c["threadFlows"])) for c in result["codeFlows"]] == [
        ("gr_add_fn() on gr", 1), ("gr_event_fn() on gr_events", 1)]
    assert [loc["location"]["message"]["text"] for loc in result["codeFlows"][1]["threadFlows"][0]["locations"]] \
        == [s["note"] for s in f["works"][1]["chain"]]
    text = run("scan", RECLAIM, "--kernel-version", "7.3").stdout
    assert "    and 1 other work: gr_event_fn() on gr_events\n" in text


def test_a_queue_is_named_with_its_known_arguments_filled_in():
    """The kernel prints a queue's formatted name: constant arguments are filled in; where one
    is not known, the format stays and the chain says where the argument comes from."""
    from wqlint.checks.reclaim_flush_dependency import kernel_name
    from wqlint.scan.site import NameArgs, Site
    from wqlint.scan.values import Alt, Const, Param, Str, Unknown
    from wqlint.finding import Step

    def site(fmt, *args):
        return Site("alloc_workqueue", "a.c", 1, 1, 1, Const(None, 0), Const(None, 0), [], queue=f'"{fmt}"',
                    name=NameArgs(Str(None, fmt.encode()), tuple(args)))

    assert kernel_name(site("%s", Str(None, b"fc_rport_eq"))) == ("fc_rport_eq", "")
    assert kernel_name(site("q%02d-%s", Const(None, 7), Str(None, b"x"))) == ("q07-x", "")
    note = Step("a.c", 3, "assoc->a_id, qid);", "'assoc' field 'a_id'")
    assert kernel_name(site("ntfc%d.%d.%d", Const(None, 1), Unknown(note, "field"), Param(None, "f", 1, "qid"))) == (
        "ntfc1.%d.%d", "%d from 'assoc' field 'a_id', %d from parameter 'qid' of f()")
    assert kernel_name(site("w%*d", Const(None, 3), Const(None, 1))) == ("w%*d", "")  # a width from an argument
    # An argument of alloc_ordered_workqueue()'s variable ones: bound at its caller, the
    # caller's argument is where it comes from (not the macro's parameter).
    spread = Step("wq.h", 9, "alloc_workqueue(fmt, ..., ##args)",
                  "the name's arguments are those of alloc_ordered_workqueue() from argument 3")
    bound = Step("b.c", 770, "alloc_ordered_workqueue(\"bfad_wq_%d\", WQ_MEM_RECLAIM, bfad->inst_no);",
                 "'args[0]' <- argument 3 'bfad->inst_no' of alloc_ordered_workqueue()")
    field = Unknown(Step("b.c", 770, "bfad->inst_no);", "'bfad' field 'inst_no'"), "field")
    assert kernel_name(site("bfad_wq_%d", Alt(spread, (Alt(bound, (field,), ""),), ""))) == (
        "bfad_wq_%d", "%d from 'bfad' field 'inst_no'")


def test_a_path_needing_more_text_searches_than_a_round_allows_is_still_followed(monkeypatch):
    """Each step into another directory waits for a search of its text: a round of the tree
    index that ran out of those searches (here one per round) goes on to the next even when
    it asked for no new name, so a scan of the driver alone still reaches the transport's
    flush."""
    from wqlint.scan import selfwait, work
    monkeypatch.setattr(work, "MAX_TEXT_ROUNDS", 1)
    monkeypatch.setattr(selfwait, "MAX_TEXT_ROUNDS", 1)
    doc, _ = scan_json(MAINLINE / "drivers" / "xpa", "--kernel-version", "7.3", "-j", "1")
    got = [f for f in doc["findings"] if f["rule"] == "reclaim-flush-dependency"]
    assert [(f["path"], f["line"]) for f in got] == [("net/xport/xport.c", 20)]
    assert [(s["path"], s["line"]) for s in got[0]["chain"]][3:6] == [
        ("drivers/xpa/xpa.c", 20), ("net/xport/xport.c", 26), ("net/xport/xport.c", 20)]


_HUB = {
    "drivers/wa/wa.c": """#include <linux/workqueue.h>
struct wa_dev { struct workqueue_struct *wq; struct work_struct reset; struct hub_port *port;
		struct hub_info *info; };
static void wa_reset_fn(struct work_struct *w)
{
	struct wa_dev *d = container_of(w, struct wa_dev, reset);

	hub_port_close(d->port);
	hub_info_close(d->info);
}
int wa_probe(struct wa_dev *d)
{
	d->wq = alloc_workqueue("wa", WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	INIT_WORK(&d->reset, wa_reset_fn);
	queue_work(d->wq, &d->reset);
	return 0;
}
""",
    "include/net/hub.h": """struct hub_port { struct workqueue_struct *wq; };
struct hub_info {
	int id;
	struct hub_port *port;
};
""",
    "net/hub/port.c": """#include <linux/workqueue.h>
#include <net/hub.h>
void hub_port_close(struct hub_port *port)
{
	flush_workqueue(port->wq);
}
void hub_info_close(struct hub_info *info)
{
	flush_workqueue(info->port->wq);
}
""",
    "net/hub/events.c": """#include <linux/workqueue.h>
static struct hub_events {
	int count;
	struct workqueue_struct *wq;
} events;
static struct hub_port main_port;
int hub_events_init(void)
{
	events.wq = alloc_workqueue("hub_events", WQ_PERCPU, 1);
	main_port.wq = alloc_workqueue("hub_main", WQ_PERCPU, 1);
	return 0;
}
""",
}


def test_a_member_of_a_file_scope_struct_variable_is_of_that_struct(tmp_path):
    """port->wq (struct hub_port) is flushed, and info->port->wq, whose port the header
    declares a struct hub_port pointer; the subsystem allocates a member wq of two
    file-scope variables: events (declared with its struct's definition, struct hub_events)
    and main_port (struct hub_port). Only main_port's queue is the one flushed."""
    for rel, text in _HUB.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    doc, _ = scan_json(tmp_path, "--kernel-version", "7.3")
    got = [f for f in doc["findings"] if f["rule"] == "reclaim-flush-dependency"]
    assert [(f["path"], f["line"]) for f in got] == [("net/hub/port.c", 5), ("net/hub/port.c", 9)]
    assert "flush_workqueue(port->wq) waits for hub_main, which lacks WQ_MEM_RECLAIM" in got[0]["message"]
    assert "flush_workqueue(info->port->wq) waits for hub_main, which lacks WQ_MEM_RECLAIM" in got[1]["message"]
    for f in got:
        assert [s["note"] for s in f["chain"]][-1].startswith("alloc_workqueue() allocates hub_main")


def test_the_files_of_the_tree_that_flush_are_each_looked_up_once():
    """far_heads() is asked for every body looked at: while one flush's calls are not searched
    yet, those already answered are not gone through again (with the flush rules off, the
    waits of linux-source-6.12 asked 49,723 times: 15 million records, 8 s)."""
    from wqlint import api
    from wqlint.scan.calls import Calls

    names = [c.name for c in api.FLUSH_CALLS]
    looked: list = []

    class Index:
        answered = set(names[1:])

        def occurrences(self, name):
            looked.append(name)
            return [(f"d/{name}.c", 1), ("d/x.h", 2)] if name in self.answered else None

    class Text:
        def files_heads(self, files):
            return ("heads of", files)

    calls = Calls(Index(), Text(), frozenset())
    for _ in range(100):
        assert calls.far_heads() is None
    assert sorted(set(looked) - {names[0]}) == sorted(names[1:]) and len(looked) == 100 + len(names) - 1
    Index.answered.add(names[0])
    assert calls.far_heads() == ("heads of", tuple(sorted(f"d/{n}.c" for n in names)))


def test_the_files_taken_together_are_searched_as_the_tree_has_them_whatever_is_in_memory(tmp_path, monkeypatch):
    """files_heads() of files one of which is held in memory (a review's patched file) runs
    the search the tree's own files ask for, so that both sides of a review make it once
    (tools.shared_searches()); the file in memory is read there, not on disk, and a file
    the tree does not hold as a regular file (a link) is not searched on disk."""
    from wqlint import tools
    from wqlint.scan.index import TreeIndex
    from wqlint.scan.subtext import SubsystemText
    from wqlint.scan.treefiles import Overlay

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.c").write_text("int x_disk(void)\n{\n\treturn 0;\n}\n")
    (tmp_path / "a" / "y.c").write_text("void y_flush(void)\n{\n}\nstatic void y_own(void)\n{\n}\n")
    (tmp_path / "a" / "z.c").symlink_to(tmp_path / "a" / "y.c")
    searched: list = []
    run = tools.run

    def recorded(argv, **kw):
        searched.append(argv[argv.index("--") + 1:])
        return run(argv, **kw)
    monkeypatch.setattr(tools, "run", recorded)
    files = ("a/x.c", "a/y.c")

    def heads(index):
        text = SubsystemText(index, [])
        assert text.files_heads(files) is None
        text.fetch()
        got = text.files_heads(files)
        return {name: [h[:2] for h in got.headers(name)] for name in ("x_disk", "x_memory", "y_flush", "y_own")}
    assert heads(TreeIndex(tmp_path, jobs=1)) == \
        {"x_disk": [("a/x.c", 1)], "x_memory": [], "y_flush": [("a/y.c", 1)], "y_own": []}
    patched = Overlay(tmp_path, {"a/x.c": b"#include <a.h>\nint x_memory(void)\n{\n}\n",
                                 "a/z.c": b"int z_memory(void)\n{\n}\n"})
    assert heads(TreeIndex(tmp_path, jobs=1, files=patched)) == \
        {"x_disk": [], "x_memory": [("a/x.c", 2)], "y_flush": [("a/y.c", 1)], "y_own": []}
    assert searched == [["a/x.c", "a/y.c"], ["a/x.c", "a/y.c"]]
    searched.clear()
    files = ("a/y.c", "a/z.c")
    assert heads(TreeIndex(tmp_path, jobs=1, files=patched))["y_flush"] == [("a/y.c", 1)]
    assert searched == [["a/y.c"]]


def test_a_directorys_calls_and_its_heads_are_answered_in_one_round(tmp_path):
    """The work model asks for a directory's calls (where a work is queued or bound), then
    for its functions' headers (to follow the work function): both are searched in the
    round that answers the first question, not in two rounds with a pass between them."""
    from wqlint.scan.index import TreeIndex
    from wqlint.scan.subtext import SubsystemText

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.c").write_text(
        "static void x_work(struct work_struct *w)\n{\n}\n"
        "void x_start(void)\n{\n\tqueue_work(x_wq, &x_item);\n}\n")
    text = SubsystemText(TreeIndex(tmp_path, jobs=1), ["queue_work"])
    assert text.calls("a") is None
    assert text.fetch() and text.rounds == 1
    assert text.calls("a") == {"queue_work": [("a/x.c", 6)], "x_wq": [("a/x.c", 6)], "x_item": [("a/x.c", 6)]}
    assert [h[:2] for h in text.heads("a").headers("x_work")] == [("a/x.c", 1)]
    assert not text.wanting() and not text.fetch()
    assert text.asked == {("c", "a"), ("h", "a")}


def test_the_questions_a_kept_scan_asked_are_data(monkeypatch):
    """What a kept scan's work model asked of the subsystems' text (read back from the
    index) is taken only in the shapes SubsystemText asks, at most MAX_QUESTIONS of a part;
    anything else is no question at all. Answered at once, a question is searched only
    for a directory holding a file the walk of the tree listed or on the way to one, and
    files taken together only when the walk listed each: a directory outside the tree or
    gone is not searched."""
    import json
    from types import SimpleNamespace
    from wqlint.scan import subtext

    good = {"flows": [["h", "fs/afs"], ["c", "fs/afs"], ["w", "fs/afs", "afs_wq"], ["f", "fs/afs/file.c"]],
            "waits": [["h", "fs/bfs"]]}
    assert subtext.questions_of(json.dumps(good)) == {
        "flows": [("h", "fs/afs"), ("c", "fs/afs"), ("w", "fs/afs", "afs_wq"), ("f", "fs/afs/file.c")],
        "waits": [("h", "fs/bfs")]}
    assert json.loads(subtext.questions_text({"flows": {("h", "b"), ("h", "a")}, "other": {("h", "c")}})) == \
        {"flows": [["h", "a"], ["h", "b"]]}
    for bad in ("", "nothing", "[]", '{"cancels": []}', '{"flows": {}}', '{"flows": [["h"]]}',
                '{"flows": [["h", "a", "b"]]}', '{"flows": [["w", "a", "x y"]]}', '{"flows": [["x", "a"]]}',
                '{"flows": [["h", 1]]}', '{"flows": [["f"]]}', '{"flows": ["h"]}'):
        assert subtext.questions_of(bad) == {}, bad
    many = json.dumps({"flows": [["h", f"d{n}"] for n in range(subtext.MAX_QUESTIONS + 5)]})
    assert len(subtext.questions_of(many)["flows"]) == subtext.MAX_QUESTIONS

    asked: list = []
    monkeypatch.setattr(subtext.SubsystemText, "fetch", lambda self: asked.append(
        (set(self._want_heads), set(self._want_calls), self._want_words, set(self._want_files))))
    index = SimpleNamespace(store=SimpleNamespace(stamps={"fs/afs/file.c": 1, "fs/bfs/super.c": 1}))
    text = subtext.SubsystemText(index, [])
    text.prefetch([("h", "fs/afs"), ("h", "../outside"), ("h", "fs/gone"), ("h", "fs"), ("c", "fs/bfs"),
                   ("w", "fs/afs", "afs_wq"), ("w", "/etc", "x"), ("f", "fs/afs/file.c"),
                   ("f", "fs/afs/file.c", "fs/gone/file.c")])
    assert asked == [({"fs/afs", "fs"}, {"fs/bfs"}, {"fs/afs": {"afs_wq"}}, {("fs/afs/file.c",)})]
    asked.clear()
    subtext.SubsystemText(SimpleNamespace(store=None), []).prefetch([("h", "fs/afs")])
    assert asked == []


def test_a_step_out_waiting_for_a_search_asks_again_only_what_it_waits_for():
    """_stepsstep_out() of a function whose tables' functions are not all looked up yet is
    asked again in every round: its steps into other subsystems (the wide ones) are worked
    out once, and only the tables' definitions asked again, in the same order, until each is
    known; the answer is then as if worked out at once."""
    from wqlint.scan.calls import _PENDING, Calls

    calls = Calls(None, None, frozenset())
    at = ("d/a.c", 10, 100)
    asked: list = []
    wide_asked: list = []
    known = {"f": ("d/f.c", 3, 30)}
    calls._callees_of = lambda a: ((("d/g.c", 1, 10),), False)
    calls._body = lambda a: b"{ far(); ops->op(x); }"
    calls._calls_of = lambda a, body: ({b"far"}, {b"op"}, {(b"op", b"ops", b"")})
    calls._near_defs = lambda rel: []
    calls.far_heads = lambda: ()
    calls._declarations = lambda a: b""
    calls.table_types = lambda member, holder, base, decls: frozenset({"struct t_ops"})
    calls.table_targets = lambda member, types: [("f", "e/f.c", 5, "struct t_ops"), ("h", "e/h.c", 6, "struct t_ops")]

    def wide_definition(name):
        wide_asked.append(name)
        return ("w/far.c", 7, 70)

    def definition(name, near):
        asked.append(name)
        return known.get(name, _PENDING)
    calls.wide_definition = wide_definition
    calls._definition = definition
    for _ in range(50):
        assert calls._stepsstep_out(at) is _PENDING
    assert wide_asked == ["far"] and asked == ["f", "h"] * 50
    known["h"] = None  # (not defined anywhere: no step)
    assert calls._stepsstep_out(at) == ((("w/far.c", 7, 70),), (("d/f.c", 3, 30),))
    assert calls._stepsstep_out(at) == ((("w/far.c", 7, 70),), (("d/f.c", 3, 30),))
    assert wide_asked == ["far"] and asked == ["f", "h"] * 51
