"""Real out-of-tree modules, as Debian's *-dkms packages carry them, scanned against the kernels
they build for: exactly the sites labelled by reading their C.

Labels (a line is named by its text, so that a later upload of the package that moves it
still finds it; a label whose text is gone must be read again):
- dahdi (include/dahdi/kernel.h): for kernels after 6.5.12 it defines its own
  flush_scheduled_work() as __flush_workqueue(system_wq). Since the system queue split
  (Debian's 6.12.117, 7.x) schedule_work() queues on system_percpu_wq, so this waits for none
  of the work it is meant to wait for (flush-queue-mismatch), and names a deprecated queue
  (deprecated-system-workqueue). On 6.1 the #if leaves it out. Its eight
  create_singlethread_workqueue() calls are legacy-create-workqueue on every version.
  Not reported: vpmoct_load_complete_fn() destroys work->wq, the queue vpmoct_load_flash() runs
  on, but it runs on system_wq: vpmoct_load_complete() binds the item anew and schedules it
  there (self-flush-deadlock reads the binding before each queueing call).
- zfs (module/os/linux/zfs/zvol_os.c, zvol_os_add_disk()): on 6.9+ kernels it queues the
  add_disk work with schedule_delayed_work() and then __flush_workqueue(system_wq), to wait
  for the fput work of the system queue: the same mismatch since the split. The work it
  misses is the kernel's delayed_fput_work: add_disk() in the work scans the partitions and
  fput()s the file in a kernel thread, which defers the release to schedule_delayed_work()
  (the add_disk work itself is flushed on the line before). Its
  workqueue_compat.h picks __flush_workqueue(system_percpu_wq) or (system_wq) by a
  configure-generated HAVE_*: the system_wq branches are the module's code for kernels without
  the replacement, and are not reported. Nothing on 6.1.
"""
from __future__ import annotations

import json

import pytest

from conftest import debian_module, unpacked_kernel
from helpers import run

pytestmark = pytest.mark.kernel

DAHDI_FLUSH = ("include/dahdi/kernel.h", "\t__flush_workqueue(system_wq);\t\t\t\\")
ZFS_FLUSH = ("module/os/linux/zfs/zvol_os.c", "\t__flush_workqueue(system_wq);")
DAHDI_LEGACY = [  # create_singlethread_workqueue(): legacy-create-workqueue on every version
    ("drivers/dahdi/voicebus/GpakCust.c", '\tvpm->wq = create_singlethread_workqueue("vpmadt032");'),
    ("drivers/dahdi/voicebus/vpmoct.c", '\twork->wq = create_singlethread_workqueue("vpmoct");'),
    ("drivers/dahdi/wctdm24xxp/base.c", '\tbg->wq = create_singlethread_workqueue("wctdm_bg");'),
    ("drivers/dahdi/wctdm24xxp/xhfc.c", "\tb4->xhfc_ws = create_singlethread_workqueue(b4->name);"),
    ("drivers/dahdi/wcte12xp/base.c", "\twc->wq = create_singlethread_workqueue(wc->name);"),
    ("drivers/dahdi/wcte13xp-base.c", "\twc->wq = create_singlethread_workqueue(wc->name);"),
    ("drivers/dahdi/wcte43x-base.c", "\twc->wq = create_singlethread_workqueue(KBUILD_MODNAME);"),
    ("drivers/dahdi/xpp/xbus-core.c", "\tworker->wq = create_singlethread_workqueue(xbus->busname);"),
]
SPLIT = ["deprecated-system-workqueue", "flush-queue-mismatch"]


def line_of(root, path, text) -> int:
    (line,) = [n for n, ln in enumerate((root / path).read_text(errors="replace").splitlines(), 1) if ln == text]
    return line


def scan(module, series):
    got = run("scan", "--format", "json", "--no-cache", "--kernel-tree", unpacked_kernel(series), module)
    assert got.exit_code in (0, 1), got.stderr
    return json.loads(got.stdout)["findings"]


@pytest.mark.parametrize("series", ["6.1", "6.12", "7.3"])
def test_dahdi(series):
    module = debian_module("dahdi-dkms")
    findings = scan(module, series)
    want = [("legacy-create-workqueue", path, line_of(module, path, text)) for path, text in DAHDI_LEGACY]
    if series != "6.1":
        want += [(rule, DAHDI_FLUSH[0], line_of(module, *DAHDI_FLUSH)) for rule in SPLIT]
    assert sorted((f["rule"], f["path"], f["line"]) for f in findings) == sorted(want)
    if series == "7.3":
        (mismatch,) = [f for f in findings if f["rule"] == "flush-queue-mismatch"]
        assert mismatch["message"].endswith(
            "(__flush_workqueue(system_wq) waits only for work queued on system_wq by name; on v7.3.4 "
            "flush_scheduled_work() flushes system_percpu_wq; this is a definition of flush_scheduled_work(), "
            "which is to wait for schedule_work() items)")


@pytest.mark.parametrize("series", ["6.1", "6.12", "7.3"])
def test_zfs(series):
    module = debian_module("zfs-dkms")
    findings = scan(module, series)
    want = [] if series == "6.1" else [(rule, ZFS_FLUSH[0], line_of(module, *ZFS_FLUSH)) for rule in SPLIT]
    assert sorted((f["rule"], f["path"], f["line"]) for f in findings) == want
    if series == "6.12":
        (mismatch,) = [f for f in findings if f["rule"] == "flush-queue-mismatch"]
        # the branch is zfs's for 6.9+ kernels, chosen by its configure step
        assert mismatch["chain"][1]["note"] == (
            "under '#if defined(HAVE_BDEV_FILE_OPEN_BY_PATH)': HAVE_BDEV_FILE_OPEN_BY_PATH is set by the "
            "package's configure step (zfs_config.h.in lists it; configure has not been run): this branch is "
            "judged as compiled for v6.12.117, but the build compiles it only where configure defines it")
    if series != "6.1":
        # Not the add_disk work, which flush_delayed_work() waits for on the line before: the
        # fput() of the partition scan that add_disk() makes in that work, in a kernel thread,
        # defers the file's release to delayed_fput_work on the helpers' queue.
        (mismatch,) = [f for f in findings if f["rule"] == "flush-queue-mismatch"]
        kernel = unpacked_kernel(series)
        (queued,) = [n for n, ln in enumerate((kernel / "fs/file_table.c").read_text().splitlines(), 1)
                     if ln.strip() == "schedule_delayed_work(&delayed_fput_work, 1);"]
        version = {"6.12": "v6.12.117", "7.3": "v7.3.4"}[series]
        through = {"6.12": "disk_scan_partitions() -> fput()", "7.3": "fput() -> __fput_deferred()"}[series]
        assert mismatch["message"].endswith(
            f"(__flush_workqueue(system_wq) waits only for work queued on system_wq by name; on {version} "
            "schedule_delayed_work() queues on system_percpu_wq; it does not wait for delayed_fput_work, which "
            f"schedule_delayed_work() queues there (<kernel>/fs/file_table.c:{queued}, reached through "
            f"zvol_os_add_disk_work() -> __zvol_os_add_disk() -> ... -> {through} before the flush))")
        assert mismatch["chain"][3]["note"] == (
            "INIT_DELAYED_WORK() binds zvol_os_add_disk_work() to an item waited for before the flush: it runs, "
            "and queues what it queues, first (only with HAVE_BDEV_FILE_OPEN_BY_PATH)")  # (zvol_os.c: 6.9+ kernels)


def test_bulk_of_dahdi_is_one_patch_that_applies(tmp_path):
    """bulk on a real module: one patch for dahdi (its eight legacy calls), its own
    flush_scheduled_work() left to the maintainer (a #define's body), and the patch applies."""
    import shutil
    import subprocess
    mod = tmp_path / "dahdi"
    shutil.copytree(debian_module("dahdi-dkms"), mod, symlinks=True)
    out = tmp_path / "out"
    got = run("bulk", "--target", "mainline", "--kernel-tree", unpacked_kernel("7.3"), "--out", out,
              "--date", "Thu, 26 Nov 2026 10:00:00 +0000", mod)
    assert got.exit_code == 0, got.stderr
    assert got.stderr.splitlines()[-1] == ("wqlint: 8 finding(s) fixed in 8 file(s) (target mainline, v7.3.4); "
                                           "2 not fixed")
    assert "not fixed [flush-queue-mismatch] (1): the call at include/dahdi/kernel.h:" in got.stderr
    (patch,) = sorted(out.glob("0001-*.patch"))
    assert patch.name == "0001-dahdi-replace-deprecated-create_-workqueue-calls.patch"
    applied = subprocess.run(["patch", "-p1", "-s", "-i", str(patch)], cwd=mod, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert [f["rule"] for f in scan(mod, "7.3")] == SPLIT
