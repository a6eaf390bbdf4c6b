"""The walk of a tree for the index (wqlint.scan.treewalk): shared with a forked process, it
finds what one process finds."""
from __future__ import annotations

import os
import threading

import pytest

from wqlint.scan import store, treewalk


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "linux"
    for rel in ("top.c", "Makefile", "include/linux/workqueue.h", "include/linux/a.h", "fs/inode.c",
                "fs/btrfs/disk-io.c", "fs/btrfs/tests/x.c", "fs/btrfs/.hidden/y.c", "fs/ext4/super.c",
                "fs/ext4/.git/z.c", "drivers/net/ethernet/intel/e1000/e1000_main.c", "drivers/net/loop.c",
                "drivers/.tmp_versions/m.c", "drivers/base/core.c", "drivers/base/x.S", ".vendor/v.c",
                "kernel/workqueue.c", "kernel/sched/core.c", "kernel/sched/deep/er/est.h"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"/* {rel} */\n")
    (root / "fs/linked").symlink_to("btrfs")  # a link to a directory: not walked
    (root / "fs/btrfs/link.c").symlink_to("disk-io.c")  # a link to a file: not a regular file
    (root / "kernel/sched/.cache").symlink_to("deep")  # a hidden link to a directory: named
    return root


def walked(root) -> tuple:
    hidden: list = []
    files, whole = treewalk.walk(root, hidden)
    return files, whole, sorted(hidden)


def test_a_shared_walk_finds_what_one_process_finds(tree):
    ended = treewalk.split(tree, 2)
    assert ended is not None
    files, whole, hidden = ended()
    assert (files, whole, sorted(hidden)) == walked(tree)
    assert sorted(files) == ["drivers/base/core.c", "drivers/net/ethernet/intel/e1000/e1000_main.c",
                             "drivers/net/loop.c", "fs/btrfs/disk-io.c", "fs/btrfs/tests/x.c", "fs/ext4/super.c",
                             "fs/inode.c", "include/linux/a.h", "include/linux/workqueue.h", "kernel/sched/core.c",
                             "kernel/sched/deep/er/est.h", "kernel/workqueue.c", "top.c"]
    assert sorted(hidden) == [".vendor", "drivers/.tmp_versions", "fs/btrfs/.hidden", "kernel/sched/.cache"]


@pytest.mark.parametrize("where", ["child", "here"])
def test_a_half_that_fails_leaves_the_whole_walk_to_this_process(tree, monkeypatch, where):
    """Which directories each process took is not known when either fails: this one walks
    the tree again, whole."""
    parent = os.getpid()
    take = treewalk._take

    def failing(*args):
        if (os.getpid() == parent) == (where == "here"):
            raise OSError(f"the walk {where} fails")
        return take(*args)
    monkeypatch.setattr(treewalk, "_take", failing)
    ended = treewalk.split(tree, 2)
    assert ended is not None
    files, whole, hidden = ended()
    assert (files, whole, sorted(hidden)) == walked(tree)


def test_no_fork_while_another_thread_runs(tree):
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert treewalk.split(tree, 2) is None
    finally:
        stop.set()
        other.join()
    assert treewalk.split(tree, 1) is None


def test_the_index_takes_the_same_stamps_from_a_shared_walk(tree, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(store, "RACY_NS", 0)  # (the files were written just now: their stamps taken all the same)
    split = treewalk.split
    shared = []
    monkeypatch.setattr(treewalk, "split", lambda root, jobs: shared.append(split(root, jobs)) or shared[-1])
    first = store.Store(tree).open(1)
    first.wait()
    assert first.save()
    one = store.Store(tree).open(1)
    two = store.Store(tree).open(2)
    one.wait()
    two.wait()
    assert one.loaded and two.loaded and [s is not None for s in shared] == [False, False, True]
    assert two.stamps == one.stamps and None not in two.stamps.values() and len(two.stamps) == 13
    assert two.whole and two.changed == one.changed == set()
    assert sorted(two.hidden_dirs()) == sorted(one.hidden_dirs())

