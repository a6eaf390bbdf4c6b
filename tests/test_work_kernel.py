"""reclaim-flush-dependency, flush-queue-mismatch and self-flush-deadlock on whole corpus trees: exactly the sites
labelled by reading the C, each with the WARN_ONCE check_flush_dependency() prints there. A
finding of reclaim-flush-dependency is one flush and the queue it waits for, naming every work
that reaches it: each label is one of those works, with the warning the kernel prints when it
is the one flushing.

Labels (path, line of the flush, the kernel's warning):
- nvmet-fc: nvmet_wq (WQ_MEM_RECLAIM | WQ_UNBOUND | WQ_SYSFS, drivers/nvme/target/core.c)
  runs nvmet_fc_delete_assoc_work(), which flushes each queue's work_q
  (alloc_workqueue("ntfc%d.%d.%d", 0, 0): no rescuer). Not reported: the error exit of
  nvmet_fc_alloc_target_queue() that nvmet_fc_handle_ls_rqst_work() reaches through the LS
  create-association path destroys a work_q allocated a few lines before and not queued on
  yet: __flush_workqueue() returns at "nothing to flush" before check_flush_dependency().
- qla2xxx: qla2xxx_wq (WQ_MEM_RECLAIM) runs qla2x00_iocb_work_fn(), whose relogin path adds
  the remote port (qla2x00_do_work() -> qla2x00_relogin() -> qla2x00_update_fcport() ->
  qla2x00_reg_remote_port() -> fc_remote_port_add()). fc_remote_port_add() first calls
  fc_flush_work(), which flushes the FC host's work_q unconditionally, and, for a port whose
  devloss timer could not be cancelled, fc_flush_devloss(), which flushes the devloss queue.
  Neither queue has a rescuer: in 7.3 work_q is alloc_workqueue("fc_wq_%d", WQ_PERCPU, 0) and
  the devloss queue is the rport's devloss_work_q (alloc_workqueue("fc_dl_%d_%d", WQ_PERCPU,
  0)); in 6.12 both are the FC host's, "fc_wq_%d" and "fc_dl_%d" with flags 0, reached through
  the accessor macros fc_host_work_q() and fc_host_devloss_work_q() of
  include/scsi/scsi_transport_fc.h; in 6.1 the same, allocated as alloc_workqueue("%s", 0, 0,
  fc_host->work_q_name) (the warning prints the formatted name, fc_wq_<host>, fc_dl_<host>).
- the other FC drivers reaching fc_remote_port_add() from a work on a WQ_MEM_RECLAIM queue of
  their own, each its own warning (the kernel names the running work), named in the one
  finding at each of the transport's flushes: bfad's
  bfad_im_itnim_work_handler() (im->drv_workq, alloc_ordered_workqueue("bfad_wq_%d",
  WQ_MEM_RECLAIM, ...)) -> bfad_im_fc_rport_add() for an itnim coming online; libfc's
  fc_rport_work() (rport_event_queue, alloc_ordered_workqueue("%s", WQ_MEM_RECLAIM,
  "fc_rport_eq")) on RPORT_EV_READY for an rport not yet added; in 7.3 also fnic's
  fnic_tport_event_handler() (fnic_event_queue, "%s" of "fnic_event_wq") ->
  fnic_fdls_add_tport() on TGT_EV_RPORT_ADD. 6.12 and 7.3; in 6.1 these queues come from
  create_singlethread_workqueue() (__WQ_LEGACY: exempt as flushers), and 6.12's fnic reaches
  the FC transport only through libfc's own queue.
- gfs2 (6.1, 6.12): the glock queue (6.1: the global glock_workqueue; 6.12: each
  filesystem's sd_glock_wq, "gfs2-glock/%s"; both WQ_MEM_RECLAIM | WQ_HIGHPRI | WQ_FREEZABLE)
  runs glock_work_func(); finish_xmote() -> do_xmote() -> ->go_sync, inode_go_sync() ->
  gfs2_log_flush(); a log flush failing there withdraws the filesystem, and gfs2_withdraw()
  calls ->lm_unmount, gdlm_unmount(), which flushes sd_control_work (flush_delayed_work()),
  queued on gfs2_control_wq (WQ_UNBOUND | WQ_FREEZABLE). 7.3 withdraws differently and keeps
  no such path.
6.1's nvmet-fc allocates the per-queue work_q with alloc_workqueue("ntfc%d.%d.%d", 0, 0) as well.
No tree flushes system_wq while its schedule_work() queues elsewhere: flush-queue-mismatch
reports nothing in them (its sites are out-of-tree modules).
"""
from __future__ import annotations

import json

import pytest

from helpers import run

pytestmark = pytest.mark.kernel

NVMET = [
    ("drivers/nvme/target/fc.c", 1220, "WQ_MEM_RECLAIM nvmet-wq:nvmet_fc_delete_assoc_work is flushing "
                                       "!WQ_MEM_RECLAIM ntfc%d.%d.%d:0x0"),
]
LABELS = {
    "6.1": [
        ("drivers/nvme/target/fc.c", 1231, "WQ_MEM_RECLAIM nvmet-wq:nvmet_fc_delete_assoc_work is flushing "
                                           "!WQ_MEM_RECLAIM ntfc%d.%d.%d:0x0"),
        ("fs/gfs2/lock_dlm.c", 1392, "WQ_MEM_RECLAIM glock_workqueue:glock_work_func is flushing "
                                     "!WQ_MEM_RECLAIM gfs2_control:gfs2_control_func"),
        ("drivers/scsi/scsi_transport_fc.c", 2819, "WQ_MEM_RECLAIM qla2xxx_wq:qla2x00_iocb_work_fn is "
                                                   "flushing !WQ_MEM_RECLAIM %s:0x0"),
        ("drivers/scsi/scsi_transport_fc.c", 2862, "WQ_MEM_RECLAIM qla2xxx_wq:qla2x00_iocb_work_fn is "
                                                   "flushing !WQ_MEM_RECLAIM %s:0x0"),
    ],
    "6.12": [
        ("drivers/nvme/target/fc.c", 1236, "WQ_MEM_RECLAIM nvmet-wq:nvmet_fc_delete_assoc_work is flushing "
                                           "!WQ_MEM_RECLAIM ntfc%d.%d.%d:0x0"),
        ("drivers/scsi/scsi_transport_fc.c", 2816, "WQ_MEM_RECLAIM qla2xxx_wq:qla2x00_iocb_work_fn is "
                                                   "flushing !WQ_MEM_RECLAIM fc_wq_%d:0x0"),
        ("drivers/scsi/scsi_transport_fc.c", 2859, "WQ_MEM_RECLAIM qla2xxx_wq:qla2x00_iocb_work_fn is "
                                                   "flushing !WQ_MEM_RECLAIM fc_dl_%d:0x0"),
        ("fs/gfs2/lock_dlm.c", 1406, "WQ_MEM_RECLAIM gfs2-glock/%s:glock_work_func is flushing "
                                     "!WQ_MEM_RECLAIM gfs2_control:gfs2_control_func"),
    ] + [
        ("drivers/scsi/scsi_transport_fc.c", line, f"WQ_MEM_RECLAIM {work} is flushing !WQ_MEM_RECLAIM {q}:0x0")
        for work in ("bfad_wq_%d:bfad_im_itnim_work_handler", "fc_rport_eq:fc_rport_work")
        for line, q in ((2816, "fc_wq_%d"), (2859, "fc_dl_%d"))
    ],
    "7.3": NVMET + [
        ("drivers/scsi/scsi_transport_fc.c", 2852, "WQ_MEM_RECLAIM qla2xxx_wq:qla2x00_iocb_work_fn is "
                                                   "flushing !WQ_MEM_RECLAIM fc_wq_%d:0x0"),
        ("drivers/scsi/scsi_transport_fc.c", 2897, "WQ_MEM_RECLAIM qla2xxx_wq:qla2x00_iocb_work_fn is "
                                                   "flushing !WQ_MEM_RECLAIM fc_dl_%d_%d:0x0"),
    ] + [
        ("drivers/scsi/scsi_transport_fc.c", line, f"WQ_MEM_RECLAIM {work} is flushing !WQ_MEM_RECLAIM {q}:0x0")
        for work in ("bfad_wq_%d:bfad_im_itnim_work_handler", "fnic_event_wq:fnic_tport_event_handler",
                     "fc_rport_eq:fc_rport_work")
        for line, q in ((2852, "fc_wq_%d"), (2897, "fc_dl_%d_%d"))
    ],
}
LABELS["7.2"] = LABELS["7.3"]  # the same lines: fc.c and scsi_transport_fc.c read the same there


# Reached through a callee defined in another subsystem, in a file that flushes (scan.work's
# search of the tree's flushing files), each checked by reading the C:
# - zfcp (drivers/s390/scsi): zfcp_scsi_rport_work() on the adapter's work_queue
#   (alloc_ordered_workqueue(name / "zfcp_q_%s", WQ_MEM_RECLAIM)) -> zfcp_scsi_rport_register()
#   -> fc_remote_port_add(): the FC transport's two flushes, as for the FC drivers above. In 6.1
#   and 6.12 the queue's name is a local buffer snprintf() fills from "zfcp_q_%s" (the kernel
#   prints zfcp_q_<bus id>).
# - mthca: catas_reset() on catas_wq (alloc_ordered_workqueue("mthca_catas", WQ_MEM_RECLAIM))
#   restarts the device: __mthca_restart_one() -> __mthca_remove_one() ->
#   mthca_unregister_device() -> ib_unregister_device() -> __ib_unregister_device() ->
#   ib_cache_cleanup_one(), which flushes ib_wq ("infiniband", no rescuer) twice.
# - nvme: the remove work of a dead controller on nvme_wq ("nvme-wq", WQ_MEM_RECLAIM) calls
#   device_release_driver() (apple in 6.1, 6.12, 7.3; pci in 6.1) -> __device_release_driver()
#   -> device_links_unbind_consumers(), which, for a consumer still probing, calls
#   wait_for_device_probe(): flush_work(&deferred_probe_work), queued on system_dfl_wq /
#   system_unbound_wq ("events_unbound").
# - 7.2 and 7.3: idpf_init_task() (init_wq, "%s-%s-init", WQ_UNBOUND | WQ_MEM_RECLAIM) ->
#   register_netdev() and iavf_finish_config() (adapter->wq, "%s" of "iavf", WQ_MEM_RECLAIM) ->
#   register_netdevice(): when a NETDEV_REGISTER notifier refuses the device,
#   register_netdevice() unregisters it, unregister_netdevice_many_notify() ->
#   flush_all_backlogs(), which queues flush_backlog() on system_highpri_wq ("events_highpri")
#   and flushes it.
# - 7.3 only, not reported: nxpwifi's nxpwifi_sdio_work() (adapter->workqueue,
#   "NXPWIFI_WORK_QUEUE", WQ_MEM_RECLAIM) resets the card: nxpwifi_sdio_card_reset_work() ->
#   nxpwifi_shutdown_sw() -> nxpwifi_uninit_sw() -> wiphy_unregister(), which flushes three work
#   items on system_percpu_wq; but nxpwifi_uninit_sw() first calls
#   nxpwifi_terminate_workqueue(), which destroys the very queue the work runs on: the work
#   hangs there (self-flush-deadlock's finding) and never reaches wiphy_unregister().
# Left out on purpose: vfree()'s vm_reset_perms() -> __purge_vmap_area_lazy() flush (a driver's
# buffer never has VM_FLUSH_RESET_PERMS: the call is under unlikely()), and lru_add_drain_all()
# (its per-CPU works go on mm_percpu_wq, which has WQ_MEM_RECLAIM).
FAR = {
    "6.1": [
        ("drivers/base/dd.c", 755, "WQ_MEM_RECLAIM nvme-wq:apple_nvme_remove_dead_ctrl_work is flushing "
                                   "!WQ_MEM_RECLAIM events_unbound:deferred_probe_work_func"),
        ("drivers/base/dd.c", 755, "WQ_MEM_RECLAIM nvme-wq:nvme_remove_dead_ctrl_work is flushing "
                                   "!WQ_MEM_RECLAIM events_unbound:deferred_probe_work_func"),
        ("drivers/infiniband/core/cache.c", 1679, "WQ_MEM_RECLAIM mthca_catas:catas_reset is flushing "
                                                  "!WQ_MEM_RECLAIM infiniband:0x0"),
        ("drivers/infiniband/core/cache.c", 1685, "WQ_MEM_RECLAIM mthca_catas:catas_reset is flushing "
                                                  "!WQ_MEM_RECLAIM infiniband:0x0"),
        ("drivers/scsi/scsi_transport_fc.c", 2819, "WQ_MEM_RECLAIM zfcp_q_%s:zfcp_scsi_rport_work is flushing "
                                                   "!WQ_MEM_RECLAIM %s:0x0"),
        ("drivers/scsi/scsi_transport_fc.c", 2862, "WQ_MEM_RECLAIM zfcp_q_%s:zfcp_scsi_rport_work is flushing "
                                                   "!WQ_MEM_RECLAIM %s:0x0"),
    ],
    "6.12": [
        ("drivers/base/dd.c", 830, "WQ_MEM_RECLAIM nvme-wq:apple_nvme_remove_dead_ctrl_work is flushing "
                                   "!WQ_MEM_RECLAIM events_unbound:deferred_probe_work_func"),
        ("drivers/infiniband/core/cache.c", 1690, "WQ_MEM_RECLAIM mthca_catas:catas_reset is flushing "
                                                  "!WQ_MEM_RECLAIM infiniband:0x0"),
        ("drivers/infiniband/core/cache.c", 1696, "WQ_MEM_RECLAIM mthca_catas:catas_reset is flushing "
                                                  "!WQ_MEM_RECLAIM infiniband:0x0"),
        ("drivers/scsi/scsi_transport_fc.c", 2816, "WQ_MEM_RECLAIM zfcp_q_%s:zfcp_scsi_rport_work is flushing "
                                                   "!WQ_MEM_RECLAIM fc_wq_%d:0x0"),
        ("drivers/scsi/scsi_transport_fc.c", 2859, "WQ_MEM_RECLAIM zfcp_q_%s:zfcp_scsi_rport_work is flushing "
                                                   "!WQ_MEM_RECLAIM fc_dl_%d:0x0"),
    ],
    "7.3": [
        ("drivers/base/dd.c", 820, "WQ_MEM_RECLAIM nvme-wq:apple_nvme_remove_dead_ctrl_work is flushing "
                                   "!WQ_MEM_RECLAIM events_unbound:deferred_probe_work_func"),
        ("drivers/infiniband/core/cache.c", 1650, "WQ_MEM_RECLAIM mthca_catas:catas_reset is flushing "
                                                  "!WQ_MEM_RECLAIM infiniband:0x0"),
        ("drivers/infiniband/core/cache.c", 1656, "WQ_MEM_RECLAIM mthca_catas:catas_reset is flushing "
                                                  "!WQ_MEM_RECLAIM infiniband:0x0"),
        ("drivers/scsi/scsi_transport_fc.c", 2852, "WQ_MEM_RECLAIM zfcp_q_%s:zfcp_scsi_rport_work is flushing "
                                                   "!WQ_MEM_RECLAIM fc_wq_%d:0x0"),
        ("drivers/scsi/scsi_transport_fc.c", 2897, "WQ_MEM_RECLAIM zfcp_q_%s:zfcp_scsi_rport_work is flushing "
                                                   "!WQ_MEM_RECLAIM fc_dl_%d_%d:0x0"),
        ("net/core/dev.c", 6697, "WQ_MEM_RECLAIM %s-%s-init:idpf_init_task is flushing "
                                 "!WQ_MEM_RECLAIM events_highpri:flush_backlog"),
        ("net/core/dev.c", 6697, "WQ_MEM_RECLAIM iavf:iavf_finish_config is flushing "
                                 "!WQ_MEM_RECLAIM events_highpri:flush_backlog"),
    ],
}
# 7.2: the same flushes, the same code a few lines up.
FAR["7.2"] = [({"drivers/base/dd.c": ("drivers/base/dd.c", 819), "net/core/dev.c": ("net/core/dev.c", 6680)}
               .get(path, (path, line)) + (warn,)) for path, line, warn in FAR["7.3"]]


# Reached through a table of functions (scan.description: the tree's initialisers typed by
# their struct) or one step into a function of another subsystem whose file waits for nothing,
# each checked by reading the C (the call made on the path, its guard, the queue the work is
# on, whether the waited-on thing can be busy):
# - block/blk-iolatency.c: a disk torn down from a reclaim work: nbd's recv_work()
#   (recv_workq, "nbd%d-recv", WQ_MEM_RECLAIM) -> nbd_config_put() -> nbd_put() (last
#   reference, not NBD_DESTROY_ON_DISCONNECT) -> nbd_dev_remove(); nvme's scan, namespace
#   removal and controller deletion works (nvme_wq, nvme_delete_wq: WQ_MEM_RECLAIM) ->
#   nvme_ns_remove() (NVME_NS_REMOVING not yet set); 6.1's nvmet passthru work ->
#   nvme_passthru_end() -> nvme_remove_invalid_namespaces(). Each -> del_gendisk() ->
#   rq_qos_exit(), which calls rqos->ops->exit() of every policy on the queue:
#   rq_qos_ops.exit = blkcg_iolatency_exit(), flush_work(&blkiolat->enable_work), scheduled on
#   system_percpu_wq / system_wq (busy while io.latency is being enabled or disabled).
# - fs/hfs/inode.c and drivers/video/fbdev/core/fb_defio.c: nvmet's file-backed namespace
#   flush, nvmet_file_flush_work() on nvmet_wq (WQ_MEM_RECLAIM) -> nvmet_file_flush() ->
#   vfs_fsync() (fs/sync.c) -> vfs_fsync_range() -> file->f_op->fsync(): for a file on hfs,
#   hfs_file_fsync() flushes the superblock's mdb_work (queue_delayed_work() on
#   system_long_wq / system_dfl_long_wq: pending while the MDB is dirty); for a deferred-I/O
#   framebuffer device given as the namespace's path (nvmet_file_ns_enable() opens any path),
#   fb_deferred_io_fsync() flushes info->deferred_work (schedule_delayed_work()): feasible,
#   an unusual configuration.
# - drivers/base/dd.c: wait_for_device_probe() (flush_work(&deferred_probe_work) on the
#   unbound system queue, busy while deferred probes run), from dm-verity's restart on a
#   corrupted block (verity_work() -> verity_verify_io() -> verity_handle_err() ->
#   kernel_restart(), or 7.x's restart_io_error() on kverityd) -> kernel_restart_prepare() ->
#   device_shutdown(), which calls it first. Also reported, and wrong by that reading: snic's
#   target deletion (snic_tgt_del() on snic_event_wq) -> device_del() -> bus_remove_device()
#   -> device_release_driver() -> ... -> device_links_unbind_consumers(): snic's target device
#   is never put on a bus (snic_tgt_create() sets only its parent and release), so
#   bus_remove_device() returns at `if (!sp)` first. A guard on the object's own state, which
#   the path does not carry (a false alarm kept here as the tool reports it).
# Not reported, by the rules of scan.calls: a protocol's bind or shutdown reached through
# kernel_bind()/kernel_sock_shutdown() (sock->ops: a kernel socket's family is the code's
# choice), a table function that waits only a call below (ext4's quota_write ->
# ext4_should_retry_alloc(), a possible miss), a table the work's own file calls.
_IOLAT = "is flushing !WQ_MEM_RECLAIM events:blkiolatency_enable_work_fn"
_PROBE = "is flushing !WQ_MEM_RECLAIM events_unbound:deferred_probe_work_func"
_NVMET_FILE = "WQ_MEM_RECLAIM nvmet-wq:nvmet_file_flush_work is flushing !WQ_MEM_RECLAIM "
TABLES = {
    "6.1": [("block/blk-iolatency.c", 649, f"WQ_MEM_RECLAIM {w} {_IOLAT}")
            for w in ("nbd%d-recv:recv_work", "nvme-wq:nvme_scan_work", "nvme-delete-wq:nvme_delete_ctrl_work",
                      "nvmet-wq:nvmet_passthru_execute_cmd_work")] + [
        ("drivers/base/dd.c", 755, f"WQ_MEM_RECLAIM kverityd:verity_work {_PROBE}"),
        ("drivers/video/fbdev/core/fb_defio.c", 225, _NVMET_FILE + "events:fb_deferred_io_work"),
        ("fs/hfs/inode.c", 683, _NVMET_FILE + "events_long:flush_mdb"),
    ],
    "6.12": [("block/blk-iolatency.c", 648, f"WQ_MEM_RECLAIM {w} {_IOLAT}")
             for w in ("nbd%d-recv:recv_work", "nvme-wq:nvme_scan_work", "nvme-delete-wq:nvme_delete_ctrl_work")] + [
        ("drivers/base/dd.c", 830, f"WQ_MEM_RECLAIM {w} {_PROBE}")
        for w in ("kverityd:restart_io_error", "kverityd:verity_work", "snic_event_wq:snic_tgt_del")] + [
        ("drivers/video/fbdev/core/fb_defio.c", 258, _NVMET_FILE + "events:fb_deferred_io_work"),
        ("fs/hfs/inode.c", 677, _NVMET_FILE + "events_long:flush_mdb"),
    ],
    "7.2": [("block/blk-iolatency.c", 640, f"WQ_MEM_RECLAIM {w} {_IOLAT}")
            for w in ("nbd%d-recv:recv_work", "nvme-wq:nvme_scan_work", "nvme-wq:nvme_remove_head_work",
                      "nvme-delete-wq:nvme_delete_ctrl_work")] + [
        ("drivers/base/dd.c", 819, f"WQ_MEM_RECLAIM {w} {_PROBE}")
        for w in ("kverityd:restart_io_error", "snic_event_wq:snic_tgt_del")] + [
        ("drivers/video/fbdev/core/fb_defio.c", 279, _NVMET_FILE + "events:fb_deferred_io_work"),
        ("fs/hfs/inode.c", 695, _NVMET_FILE + "events_long:flush_mdb"),
    ],
}
TABLES["7.3"] = [({"drivers/base/dd.c": ("drivers/base/dd.c", 820), "fs/hfs/inode.c": ("fs/hfs/inode.c", 714)}
                  .get(path, (path, line)) + (warn.replace("events_long:", "events_dfl_long:"),))
                 for path, line, warn in TABLES["7.2"]]


def _findings(doc, rule):
    return sorted((f["path"], f["line"], f["message"].split('the kernel warns "workqueue: ')[-1].rstrip('")'))
                  for f in doc["findings"] if f["rule"] == rule)


def _works(doc):
    """(path, line, the kernel's warning) of each work a finding of reclaim-flush-dependency
    names: its message quotes the warning for the first work; for each other the kernel prints
    the same but for the queue and function running. Each work is named in the message, and
    there is one finding per flush and queue waited for."""
    out = []
    found = [f for f in doc["findings"] if f["rule"] == "reclaim-flush-dependency"]
    for f in found:
        flushing = f["message"].split('"workqueue: ')[-1].rstrip('")').split(" is flushing ")[1]
        for w in f["works"]:
            function, queue = w["work"].split("() on ", 1)
            assert w["work"] in f["message"] or f"{function}() runs on {queue} " in f["message"]
            out.append((f["path"], f["line"], f"WQ_MEM_RECLAIM {queue}:{function} is flushing {flushing}"))
    flushing_of = {(p, line, warn.split(" is flushing ")[1]) for p, line, warn in out}
    assert len(found) == len(flushing_of)
    return sorted(out)


def _scan(tree, tmp_path):
    result = run("scan", "--format", "json", "--jobs", "2", tree, env={"XDG_CACHE_HOME": str(tmp_path)})
    assert result.exit_code == 1, result.stderr[-2000:]
    return json.loads(result.stdout)


def test_reclaim_flush_dependency_on_6_1(whole_scan):
    doc = json.loads(whole_scan("6.1")[0])
    assert _works(doc) == sorted(LABELS["6.1"] + FAR["6.1"] + TABLES["6.1"])
    assert _findings(doc, "flush-queue-mismatch") == []
    assert _self_waits(doc) == _reported("6.1")


def test_reclaim_flush_dependency_on_6_12(linux_6_12_scan):
    doc = json.loads(linux_6_12_scan[0])
    assert _works(doc) == sorted(LABELS["6.12"] + FAR["6.12"] + TABLES["6.12"])
    assert _findings(doc, "flush-queue-mismatch") == []


def test_reclaim_flush_dependency_on_7_2(whole_scan):
    """7.2: the paths of 7.3, a few lines up."""
    doc = json.loads(whole_scan("7.2")[0])
    assert _works(doc) == sorted(LABELS["7.2"] + FAR["7.2"] + TABLES["7.2"])
    assert _findings(doc, "flush-queue-mismatch") == []
    assert _self_waits(doc) == _reported("7.2")


@pytest.fixture(scope="module")
def linux_7_3_doc(whole_scan):
    """One whole-7.3 scan for the tests of both rules."""
    return json.loads(whole_scan("7.3")[0])


def test_reclaim_flush_dependency_on_7_3(linux_7_3_doc):
    doc = linux_7_3_doc
    assert _works(doc) == sorted(LABELS["7.3"] + FAR["7.3"] + TABLES["7.3"])
    assert _findings(doc, "flush-queue-mismatch") == []


MODULE = """#include <linux/module.h>
#include <linux/workqueue.h>

struct add_work { struct delayed_work work; int error; };

static void add_fn(struct work_struct *w) { }

int mod_add(void)
{
\tstruct add_work aw;

\tINIT_DELAYED_WORK(&aw.work, add_fn);
\tschedule_delayed_work(&aw.work, 0);
\t__flush_workqueue(system_wq);
\treturn aw.error;
}
"""


@pytest.mark.parametrize("tree,expected", [("linux_6_1", []), ("linux_6_12", [("mod.c", 14)]),
                                           ("linux_7_3", [("mod.c", 14)])])
def test_flush_queue_mismatch_follows_the_helpers_of_each_kernel(tree, expected, request, tmp_path):
    """A module built against each corpus tree: its schedule_delayed_work() queues on
    system_wq in 6.1, on system_percpu_wq in Debian's 6.12.117 and in 7.3 (their headers)."""
    mod = tmp_path / "mod"
    mod.mkdir()
    (mod / "mod.c").write_text(MODULE)
    result = run("scan", "--format", "json", "--no-cache", mod, "--kernel-tree", request.getfixturevalue(tree))
    got = [(f["path"], f["line"]) for f in json.loads(result.stdout)["findings"]
           if f["rule"] == "flush-queue-mismatch"]
    assert got == expected


def _fix(paths, tmp_path, *more):
    got = run("fix", *paths, "--target", "mainline", "--rule", "reclaim-flush-dependency", "--diff", *more,
              env={"XDG_CACHE_HOME": str(tmp_path)})
    assert got.exit_code == 0, got.stderr[-2000:]
    changed = [ln for ln in got.stdout.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
    return changed, got.stderr.splitlines()


PER_OBJECT = ("suggestion, made only with --suggestions: On {} check_flush_dependency() returns at once for a "
              "flushed queue with WQ_MEM_RECLAIM, so the work no longer waits on a queue without a rescuer. The "
              "queue is kept in a struct member and allocated once per object")


def test_reclaim_fixes_on_6_1_and_6_12(linux_6_1, linux_6_12, tmp_path):
    """gfs2_control_wq (6.1) is allocated once, at one call of the module's init: given
    WQ_MEM_RECLAIM. nvmet-fc's work_q is allocated per target queue of each association (up to
    NVMET_NR_QUEUES + 1 per association): one rescuer thread each, so only a suggestion."""
    changed, err = _fix([linux_6_1 / "fs/gfs2", linux_6_1 / "drivers/nvme/target"], tmp_path)
    assert changed == ["-\t\t\t\t\t  WQ_UNBOUND | WQ_FREEZABLE, 0);",
                       "+\t\t\t\t\t  WQ_UNBOUND | WQ_FREEZABLE | WQ_MEM_RECLAIM,",
                       "+\t\t\t\t\t  0);"]
    # (and nvmet's passthru work reaching blk-iolatency's flush of a work on system_wq, through
    # del_gendisk()'s rq_qos_exit(): a system queue, no fix)
    # (and nvmet's file-backed flush reaching fb_defio's and hfs's flushes of works on system
    # queues, through vfs_fsync() and file_operations.fsync: no fix either)
    assert err[0].startswith("not fixed [reclaim-flush-dependency] (1): system_wq is a system queue")
    assert err[1] == "  block/blk-iolatency.c:649:2"
    assert err[2].startswith("not fixed [reclaim-flush-dependency] (1): " + PER_OBJECT.format("v6.1.192"))
    assert err[3] == "  drivers/nvme/target/fc.c:1231:4"
    assert err[4].startswith("not fixed [reclaim-flush-dependency] (1): system_wq is a system queue")
    assert err[6].startswith("not fixed [reclaim-flush-dependency] (1): system_long_wq is a system queue")
    assert [err[i] for i in (5, 7, 8)] == [
        "  drivers/video/fbdev/core/fb_defio.c:225:2", "  fs/hfs/inode.c:683:2",
        "wqlint: 1 finding(s) fixed in 1 file(s) (target mainline, v6.1.192); 4 not fixed"]
    changed, err = _fix([linux_6_12 / "drivers/nvme/target"], tmp_path)
    assert changed == []
    assert err[0].startswith("not fixed [reclaim-flush-dependency] (1): " + PER_OBJECT.format("v6.12.117"))
    assert err[2].startswith("not fixed [reclaim-flush-dependency] (1): system_percpu_wq is a system queue")
    assert err[4].startswith("not fixed [reclaim-flush-dependency] (1): system_long_wq is a system queue")
    assert [err[i] for i in (1, 3, 5, 6)] == [
        "  drivers/nvme/target/fc.c:1236:4", "  drivers/video/fbdev/core/fb_defio.c:258:2", "  fs/hfs/inode.c:677:2",
        "wqlint: 0 finding(s) fixed in 0 file(s) (target mainline, v6.12.117); 3 not fixed"]


def test_works_reaching_one_flush_are_one_finding(linux_7_3, tmp_path):
    """qla2xxx's and bfad's works both reach the FC transport's two flushes: one finding at each
    flush (its queue waited for), not one per work."""
    paths = [linux_7_3 / p for p in ("drivers/scsi/qla2xxx", "drivers/scsi/bfa", "drivers/scsi/scsi_transport_fc.c")]
    changed, err = _fix(paths, tmp_path)
    assert changed == []
    assert err[0].startswith("not fixed [reclaim-flush-dependency] (2): " + PER_OBJECT.format("v7.3.4"))
    assert err[1:] == ["  drivers/scsi/scsi_transport_fc.c:2852:2",
                       "  drivers/scsi/scsi_transport_fc.c:2897:2",
                       "wqlint: 0 finding(s) fixed in 0 file(s) (target mainline, v7.3.4); 2 not fixed"]


def test_reclaim_suggestions_on_7_3(linux_7_3, tmp_path):
    """The queues of 7.3's findings are made per object (a target queue of nvmet-fc, an FC host
    and a remote port of the FC transport): with --suggestions, WQ_MEM_RECLAIM after their
    WQ_PERCPU."""
    paths = [linux_7_3 / p for p in ("drivers/scsi/qla2xxx", "drivers/scsi/scsi_transport_fc.c",
                                     "drivers/nvme/target")]
    changed, err = _fix(paths, tmp_path, "--suggestions")
    assert changed == ['-\tqueue->work_q = alloc_workqueue("ntfc%d.%d.%d", WQ_PERCPU, 0,',
                       '+\tqueue->work_q = alloc_workqueue("ntfc%d.%d.%d",',
                       "+\t\t\t\t\tWQ_PERCPU | WQ_MEM_RECLAIM, 0,",
                       '-\tfc_host->work_q = alloc_workqueue("fc_wq_%d", WQ_PERCPU, 0,',
                       '+\tfc_host->work_q = alloc_workqueue("fc_wq_%d",',
                       "+\t\t\t\t\t  WQ_PERCPU | WQ_MEM_RECLAIM, 0,",
                       '-\trport->devloss_work_q = alloc_workqueue("fc_dl_%d_%d", WQ_PERCPU, 0,',
                       '+\trport->devloss_work_q = alloc_workqueue("fc_dl_%d_%d",',
                       "+\t\t\t\t\t\tWQ_PERCPU | WQ_MEM_RECLAIM, 0,"]
    # nvmet's file-backed flush reaches two flushes of works on system queues (through
    # vfs_fsync() and file_operations.fsync): no queue to give the flag, the advice only.
    assert [ln for ln in err if not ln.startswith("not fixed")] == [
        "  drivers/video/fbdev/core/fb_defio.c:279:2", "  fs/hfs/inode.c:714:2",
        "wqlint: 3 finding(s) fixed in 2 file(s) (target mainline, v7.3.4); 2 not fixed"]
    assert [ln.split(" is a system queue")[0] for ln in err if ln.startswith("not fixed")] == [
        "not fixed [reclaim-flush-dependency] (1): system_percpu_wq",
        "not fixed [reclaim-flush-dependency] (1): system_dfl_long_wq"]


# self-flush-deadlock, each finding checked by reading the C: the path's calls are made, their
# guards can hold there, nothing before them on the path ends it, and the waited queue or item
# is the one the work runs on or is. Labels: (path, line of the wait, work function, verdict).
# - nbd: recv_work() (nbd->recv_workq) -> nbd_config_put() -> nbd_put() -> nbd_dev_remove() ->
#   destroy_workqueue(nbd->recv_workq) would be FALSE: the device keeps a base reference in
#   nbd->refs unless NBD_DESTROY_ON_DISCONNECT is set (nbd_genl_connect() and the reconfigure
#   path drop and restore it together with the flag), so the config's put reaches zero only
#   with the flag set, and nbd_put() then queues nbd_dev_remove() on nbd_del_wq instead of
#   calling it. Not reported: both steps are guarded by a last-reference test
#   (refcount_dec_and_mutex_lock(), refcount_dec_and_test()), which a path is not taken through.
# - qat (6.12, 7.2, 7.3): tl_work_handler() calls cancel_delayed_work_sync(&telemetry->work_ctx),
#   its own item, when atomic_read(&telemetry->state) is 0. It would be FALSE: the only store
#   of 0 is adf_tl_halt()'s, right after its own cancel_delayed_work_sync() of the work, and the
#   only call queueing the work from outside (adf_tl_run()) stores the state first; the work
#   never runs with state 0. Not reported: that store is read as the work's stopped state.
# - iwcm (6.1, 6.12, 7.2, 7.3): cm_work_handler() (iwcm_wq, ordered) -> process_event() ->
#   cm_conn_req_handler() -> iw_destroy_cm_id() -> flush_workqueue(iwcm_wq) when the new cm_id
#   has more than one reference: real, after the client's handler accepted (the provider then
#   queues events on the new id, each holding a reference) and still returned an error (the
#   third call of iw_destroy_cm_id(); the chain shows the first, where the new id most likely
#   holds its one reference only).
# - hci_sync: interleave_scan_work() -> hci_passive_scan_sync() ->
#   hci_update_interleaved_scan_sync() -> cancel_interleave_scan() ->
#   cancel_delayed_work_sync(&hdev->interleave_scan), its own item, when the last advertisement
#   monitor or pending LE connection went away while interleaving (both guards are the device's
#   state): real.
# - nxpwifi (7.3): nxpwifi_sdio_work() (adapter->workqueue through nxpwifi_queue_work()) ->
#   nxpwifi_sdio_card_reset_work() -> nxpwifi_shutdown_sw() -> nxpwifi_uninit_sw() ->
#   nxpwifi_terminate_workqueue() -> destroy_workqueue(adapter->workqueue): real (the way
#   through nxpwifi_reinit_sw() destroys a queue it has just allocated: not that one).
# - mac80211: ieee80211_restart_work() -> ieee80211_reconfig() -> cancel_work_sync(
#   &local->restart_work) under `suspended && local->in_reconfig` would be FALSE by the freezer:
#   restart_work is queued only on system_freezable_wq, which does not run while
#   local->suspended is set (the kernel's comment there says so). Not reported: on a queue
#   that is freezable wherever the work is put, a suspended state is taken as false.
# - qlge (6.1): qlge_asic_reset_work() -> qlge_adapter_down() -> qlge_cancel_all_work_sync()
#   cancels asic_reset_work under test_bit(QL_ADAPTER_UP): would be FALSE but for a race, the
#   only call queueing the work (qlge_queue_asic_error()) clears the bit before it. Not
#   reported: what every queueing call sets before it is known where the work starts.
# - rtl8192u (6.1): dm_fsync_work_callback() calls cancel_delayed_work_sync(&priv->fsync_work),
#   its own item, in both branches of `if (bDoubleTimeInterval)` under the link's state (linked,
#   fsync enabled, the CDD_FSYNC interoperability action): real, two findings.
# Not checked: the waits the rule does not report (recall), and the ways longer than four
# calls.
SELF_TP, SELF_FP = "real", "false positive"
SELF = {
    "6.1": [
        ("drivers/infiniband/core/iwcm.c", 455, "cm_work_handler", SELF_TP),
        ("drivers/staging/qlge/qlge_main.c", 3786, "qlge_asic_reset_work", SELF_FP),
        ("drivers/staging/rtl8192u/r8192U_dm.c", 2661, "dm_fsync_work_callback", SELF_TP),
        ("drivers/staging/rtl8192u/r8192U_dm.c", 2667, "dm_fsync_work_callback", SELF_TP),
    ],
    "6.12": [
        ("drivers/block/nbd.c", 275, "recv_work", SELF_FP),
        ("drivers/crypto/intel/qat/qat_common/adf_telemetry.c", 171, "tl_work_handler", SELF_FP),
        ("drivers/infiniband/core/iwcm.c", 450, "cm_work_handler", SELF_TP),
        ("net/bluetooth/hci_sync.c", 2420, "interleave_scan_work", SELF_TP),
        ("net/mac80211/util.c", 1816, "ieee80211_restart_work", SELF_FP),
    ],
    "7.2": [
        ("drivers/crypto/intel/qat/qat_common/adf_telemetry.c", 170, "tl_work_handler", SELF_FP),
        ("drivers/infiniband/core/iwcm.c", 452, "cm_work_handler", SELF_TP),
        ("net/bluetooth/hci_sync.c", 2371, "interleave_scan_work", SELF_TP),
    ],
    "7.3": [
        ("drivers/block/nbd.c", 279, "recv_work", SELF_FP),
        ("drivers/crypto/intel/qat/qat_common/adf_telemetry.c", 170, "tl_work_handler", SELF_FP),
        ("drivers/infiniband/core/iwcm.c", 452, "cm_work_handler", SELF_TP),
        ("drivers/net/wireless/nxp/nxpwifi/main.c", 541, "nxpwifi_sdio_work", SELF_TP),
        ("net/bluetooth/hci_sync.c", 2375, "interleave_scan_work", SELF_TP),
        ("net/mac80211/util.c", 1944, "ieee80211_restart_work", SELF_FP),
    ],
}


def _reported(tree):
    """The labels a scan must report: the real ones (the false ones are kept to say why the
    rule stays silent there)."""
    return sorted(label[:3] for label in SELF[tree] if label[3] == SELF_TP)


def _self_waits(doc):
    return sorted((f["path"], f["line"], f["message"].split("(", 1)[1].split("()", 1)[0])
                  for f in doc["findings"] if f["rule"] == "self-flush-deadlock")


def test_self_flush_deadlock_on_6_12(linux_6_12_scan):
    doc = json.loads(linux_6_12_scan[0])
    assert _self_waits(doc) == _reported("6.12")


def test_self_flush_deadlock_on_7_3(linux_7_3_doc):
    doc = linux_7_3_doc
    assert _self_waits(doc) == _reported("7.3")


def _by_binding(doc) -> set:
    """(directory binding the work, rule, path, line, work) of each work the three rules report."""
    out = set()
    for f in doc["findings"]:
        if f["rule"] not in ("reclaim-flush-dependency", "flush-queue-mismatch", "self-flush-deadlock"):
            continue
        for w in f.get("works") or [{"work": "", "chain": f["chain"]}]:
            bound = [s["path"] for s in w["chain"] if "() binds " in s["note"]]
            out.add(((bound[0] if bound else f["path"]).rsplit("/", 1)[0], f["rule"], f["path"], f["line"], w["work"]))
    return out


def test_a_scan_of_a_works_directory_alone_reports_what_the_whole_tree_does(linux_7_3, linux_7_3_doc, tmp_path):
    """A maintainer scanning the directory of a driver whose work is reported in the
    whole-tree scan gets the same findings for that work (its path reaches other
    subsystems, found round by round: a scan of drivers/nvme/target once stopped before
    reaching hfs's fsync)."""
    whole = _by_binding(linux_7_3_doc)
    for directory in sorted({w[0] for w in whole}):
        doc = _scan(linux_7_3 / directory, tmp_path / directory.replace("/", "-"))
        got = {w for w in _by_binding(doc) if w[0] == directory}
        assert got == {w for w in whole if w[0] == directory}, directory


def test_a_scan_of_mthca_alone_names_only_the_queues_its_reset_waits_for_on_6_1(linux_6_1, tmp_path):
    """catas_reset()'s path also reaches unregister_mad_agent()'s flush of the port's own
    queue (port_priv->wq, allocated with WQ_MEM_RECLAIM in mad.c, a file this scan does not
    resolve): not taken for ib_cm's queue, the member wq of cm.c's file-scope
    `static struct ib_cm { ... } cm;`, nor through agent->qp_info->port_priv (the headers
    declare port_priv a struct ib_mad_port_private pointer). Only ib_wq's two flushes, as in
    the whole tree's scan (FAR)."""
    doc = _scan(linux_6_1 / "drivers" / "infiniband" / "hw" / "mthca", tmp_path)
    assert _works(doc) == sorted(w for w in FAR["6.1"] if "catas_reset" in w[2])
