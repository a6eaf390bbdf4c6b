"""Path-sensitive flags and typed struct fields on real trees (7.3 and 6.12)."""
from __future__ import annotations

import pytest

from helpers import scan_json


def findings_at(doc, path, line):
    return [f for f in doc["findings"] if f["path"] == path and f["line"] == line]


@pytest.mark.kernel
def test_nvme_tcp_7_3_has_an_affinity_flag_on_every_path(linux_7_3):
    # if (wq_unbound) wq_flags |= WQ_UNBOUND; else wq_flags |= WQ_PERCPU;
    doc, _ = scan_json(linux_7_3 / "drivers" / "nvme" / "host" / "tcp.c", "--jobs", "2")
    src = (linux_7_3 / "drivers" / "nvme" / "host" / "tcp.c").read_text().splitlines()
    assert src[3161].strip() == 'nvme_tcp_wq = alloc_workqueue("nvme_tcp_wq", wq_flags, 0);'
    assert findings_at(doc, "drivers/nvme/host/tcp.c", 3162) == []


@pytest.mark.kernel
def test_nvme_tcp_6_12_lacks_the_flag_only_when_not_unbound(linux_6_12):
    # if (wq_unbound) wq_flags |= WQ_UNBOUND; and nothing else: the other path lacks both.
    doc, _ = scan_json(linux_6_12 / "drivers" / "nvme" / "host" / "tcp.c", "--jobs", "2")
    (f,) = findings_at(doc, "drivers/nvme/host/tcp.c", 3118)
    assert (f["rule"], f["column"]) == ("missing-affinity-flag", 16)
    assert [(s["path"], s["line"], s["note"]) for s in f["chain"]] == [
        ("drivers/nvme/host/tcp.c", 3118, "alloc_workqueue(flags 'wq_flags', max_active '0')"),
        ("drivers/nvme/host/tcp.c", 3115, "'wq_unbound' is false"),
        ("drivers/nvme/host/tcp.c", 3103, "local 'wq_flags' = 'WQ_MEM_RECLAIM | WQ_HIGHPRI | WQ_SYSFS'"),
    ]


@pytest.mark.kernel
def test_zloop_7_3_takes_nr_queues_from_its_own_options(linux_7_3):
    # rnbd-clt.c assigns set->map[...].nr_queues of a struct blk_mq_queue_map: another type.
    doc, _ = scan_json(linux_7_3 / "drivers" / "block" / "zloop.c", "--jobs", "2")
    # (the same call is also over WQ_MAX_ACTIVE from 17 CPUs on: test_kernel's labels)
    assert sorted(g["rule"] for g in findings_at(doc, "drivers/block/zloop.c", 1274)) == [
        "max-active-over-limit", "unbound-max-active-cpu-count"]
    (f,) = [g for g in findings_at(doc, "drivers/block/zloop.c", 1274)
            if g["rule"] == "unbound-max-active-cpu-count"]
    assert f["column"] == 19
    assert [(s["path"], s["line"], s["note"]) for s in f["chain"]] == [
        ("drivers/block/zloop.c", 1274, "alloc_workqueue(flags 'WQ_UNBOUND | WQ_FREEZABLE', "
                                        "max_active 'opts->nr_queues * opts->queue_depth')"),
        ("drivers/block/zloop.c", 1275, "'opts' field 'nr_queues'"),
        ("drivers/block/zloop.c", 1604, "field 'nr_queues' = 'min(token, num_online_cpus())'"),
        ("drivers/block/zloop.c", 1604, "CPU count num_online_cpus()"),
    ]
