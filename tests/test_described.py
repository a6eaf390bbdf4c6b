"""The tree's description kept beside the index (scan.described): a scan after an edit, or of
one directory, takes it instead of searching the whole tree, reads the files changed since
from the tree, and reports what a scan without the index reports; a kept description that
is damaged, or that others may write, is not used."""
from __future__ import annotations

import json
import os
import time

from helpers import run
from test_work import _reclaim_chains, _tables_tree

BFS = """// SPDX-License-Identifier: GPL-2.0
/* A filesystem whose fsync now waits for a queue without a rescuer. */
#include <linux/fs.h>
#include <linux/workqueue.h>

static struct workqueue_struct *bfs_wq;

static int bfs_fsync(struct file *file, int datasync)
{
	return 0;
}

static int bfs_fsync_wait(struct file *file, int datasync)
{
	flush_workqueue(bfs_wq);
	return 0;
}

static const struct file_operations bfs_file_ops = {
	.open		= bfs_open,
	.fsync		= bfs_fsync_wait,
};

int bfs_init(void)
{
	bfs_wq = alloc_workqueue("bfs_commit", WQ_UNBOUND, 0);
	return bfs_wq ? 0 : -ENOMEM;
}
"""


def _searches(monkeypatch) -> list:
    """What the description's searches of the whole tree were asked for, from now on."""
    from wqlint.scan import description

    asked: list = []
    search = description._search
    monkeypatch.setattr(description, "_search", lambda rg, index, patterns, globs, what, more=():
                        asked.append(what) or search(rg, index, patterns, globs, what, more))
    return asked


def _scan(path, cache, *more) -> str:
    result = run("scan", "--format", "json", *more, path, env={"XDG_CACHE_HOME": str(cache)})
    assert result.exit_code in (0, 1), result.stderr
    return result.stdout


def _kept(cache):
    [path] = (cache / "wqlint" / "index").glob("*.description")
    return path


def test_a_scan_after_an_edit_and_of_a_directory_take_the_kept_description(tmp_path, monkeypatch):
    tree, cache = _tables_tree(tmp_path), tmp_path / "cache"
    asked = _searches(monkeypatch)
    first = _scan(tree, cache)
    assert sorted(asked) == ["functions", "initialisers", "initialisers and struct members"]
    assert _kept(cache).stat().st_mode & 0o022 == 0
    # a file touched: the scan after it is taken whole from the index, which keeps the new stamp
    time.sleep(2.1)  # (a stamp taken within two seconds of a change is not trusted)
    os.utime(tree / "fs/afs/file.c")
    assert _scan(tree, cache) == first
    # bfs's table now sets .fsync to a function that waits: only its file, read again, says so
    # (and the touched one: its stamp is not the one the description was kept with)
    time.sleep(2.1)
    (tree / "fs/bfs/file.c").write_text(BFS)
    del asked[:]
    edited = _scan(tree, cache)
    assert asked == []
    assert edited == _scan(tree, cache, "--no-cache") != first
    assert ("fs/bfs/file.c", 15, "WQ_MEM_RECLAIM tgt-wq:tgt_flush_fn is flushing !WQ_MEM_RECLAIM bfs_commit:0x0",
            [("drivers/tgt/io.c", 22, "tgt_flush_fn() calls vfs_fsync()"),
             ("fs/sync.c", 9, "vfs_fsync() calls bfs_fsync_wait() through file_operations.fsync = bfs_fsync_wait "
                              "(fs/bfs/file.c:21) (only if file->f_op->fsync)"),
             ("fs/bfs/file.c", 15, "bfs_fsync_wait() calls flush_workqueue()")]) \
        in _reclaim_chains(json.loads(edited))
    # kept again for the index's stamps of now: the scan of a directory searches nothing either
    del asked[:]
    got = _scan(tree / "drivers/tgt", cache)
    assert asked == []
    assert got == _scan(tree / "drivers/tgt", cache, "--no-cache")


def test_a_kept_description_that_is_damaged_or_writable_by_others_is_not_used(tmp_path, monkeypatch):
    tree, cache = _tables_tree(tmp_path), tmp_path / "cache"
    asked = _searches(monkeypatch)
    _scan(tree, cache)
    kept = _kept(cache)
    data = bytearray(kept.read_bytes())
    want = _scan(tree / "drivers/tgt", cache, "--no-cache")
    for n, (damage, mode) in enumerate([(lambda d: d[:len(d) // 2], 0o600),  # cut short
                                        (lambda d: d[:-5] + bytes([d[-5] ^ 1]) + d[-4:], 0o600),  # a byte flipped
                                        (lambda d: d, 0o666)]):  # others may write it
        kept.write_bytes(bytes(damage(data)))
        kept.chmod(mode)
        del asked[:]
        # (each time a directory not scanned before: its scan is not in the index yet)
        target = tree / ["drivers/tgt", "drivers/tgt/io.c", "drivers"][n]
        got = _scan(target, cache)
        assert sorted(asked) == ["functions", "initialisers", "initialisers and struct members"], n
        assert got == _scan(target, cache, "--no-cache")
    assert want == _scan(tree / "drivers/tgt", cache)


def test_with_only_the_waits_rule_on_the_description_is_searched_beside_the_resolution(tmp_path, monkeypatch):
    """The waits read the tree's description too: with the flush rules off, the scan of a
    whole tree still starts its searches while it resolves the sites, not once the works
    first need it (then the scan waits for them: 4 s of linux-source-6.12's)."""
    from wqlint.scan import description, engine

    tree = _tables_tree(tmp_path)
    (tree / ".wqlint.yaml").write_text("rules:\n  disable: [reclaim-flush-dependency, flush-queue-mismatch]\n")
    order: list = []
    start, works = description.Description.start, engine.Engine._works
    monkeypatch.setattr(description.Description, "start", lambda self: order.append("start") or start(self))
    monkeypatch.setattr(engine.Engine, "_works", lambda self, *a: order.append("works") or works(self, *a))
    _scan(tree, tmp_path / "cache", "--no-cache", "-j", "1")
    assert order[:1] == ["start"] and "works" in order
