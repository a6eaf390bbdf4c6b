"""wqlint bulk's patch series: grouping by MAINTAINERS, the mail format, checkpatch, git am.

The fixture tree (tests/fixtures/bulk/tree) has its own small MAINTAINERS; the tree's
scripts/get_maintainer.pl and scripts/checkpatch.pl are not part of it: the tests marked
``kernel`` copy them from linux-source-6.12 into a copy of the tree. The golden series is
tests/fixtures/bulk/expected/; WQLINT_REGEN=1 rewrites it from the current output.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from wqlint import catalogue as catalogue_mod
from wqlint.finding import Finding, Step
from wqlint.fix import diffstat as diffstat_mod
from wqlint.fix.maintainers import Maintainers, parse_get_maintainer
from wqlint.fix.model import FileChange, Fix
from wqlint.fix.prefix import common_prefix, history_prefix, patch_prefix, path_prefix
from wqlint.fix.series import (SeriesError, TreeFileMissing, build_series, left_out, mail_date,
                               wrap, write_series)

from conftest import FIXTURES

BULK = FIXTURES / "bulk"
TREE = BULK / "tree"
EXPECTED = BULK / "expected"
VERSION = (6, 12, 0)
DATE = "Thu, 01 Jan 2026 12:00:00 +0000"
KERNEL_SCRIPTS = ("scripts/get_maintainer.pl", "scripts/checkpatch.pl", "scripts/spelling.txt",
                  "scripts/const_structs.checkpatch")

PERCPU_WHY = ("alloc_workqueue() without WQ_UNBOUND gives a per-CPU queue on v6.12; upstream "
              "is making unbound the default (930c2ea566af), so WQ_PERCPU is added to keep "
              "today's behaviour explicitly.")
AFFINITY = ("alloc_workqueue() without WQ_PERCPU or WQ_UNBOUND: say which one, unbound is "
            "becoming the default")


def _finding(rule, path, line, col, message, chain, severity="warning"):
    return Finding(rule, severity, path, line, col, message,
                   tuple(Step(p, n, text, note) for p, n, text, note in chain))


# Per file: (text replaced, replacement) and the fixes with their findings, as `wqlint scan`
# reports them on the fixture tree and the fixes a planner makes of them.
CHANGES = {
    "drivers/bar/bar-dma.c": {
        "edits": [("\t\t\t\t       WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);\n",
                   "\t\t\t\t       WQ_HIGHPRI | WQ_MEM_RECLAIM | WQ_PERCPU, 0);\n")],
        "fixes": [(_finding("missing-affinity-flag", "drivers/bar/bar-dma.c", 14, 17, AFFINITY, [
            ("drivers/bar/bar-dma.c", 14, 'dma->done_wq = alloc_workqueue("bar-dma-done",',
             "alloc_workqueue(flags 'WQ_HIGHPRI | WQ_MEM_RECLAIM', max_active '0')")],
            severity="note"), "safe", PERCPU_WHY)],
    },
    "drivers/baz/baz.c": {  # S: Obsolete: left out of the series
        "edits": [('alloc_workqueue("baz", 0, 0);', 'alloc_workqueue("baz", WQ_PERCPU, 0);')],
        "fixes": [(_finding("missing-affinity-flag", "drivers/baz/baz.c", 12, 11, AFFINITY, [
            ("drivers/baz/baz.c", 12, 'baz_wq = alloc_workqueue("baz", 0, 0);',
             "alloc_workqueue(flags '0', max_active '0')")], severity="note"),
            "safe", PERCPU_WHY)],
    },
    "drivers/bar/bar_core.c": {
        "edits": [('\tbar->events_wq = alloc_workqueue("bar-events", WQ_HIGHPRI,\n'
                   "\t\t\t\t\t bar->nr_workers);\n",
                   '\tbar->events_wq = alloc_workqueue("bar-events", WQ_HIGHPRI | WQ_PERCPU,\n'
                   "\t\t\t\t\t 0);\n")],
        "fixes": [
            (_finding("percpu-max-active-cpu-count", "drivers/bar/bar_core.c", 22, 19,
                      "per-CPU workqueue with max_active derived from a CPU count: the limit "
                      "applies on every CPU, so in-flight items grow with the square of the CPU "
                      "count (per-CPU queue: max_active is per CPU on every kernel; with 96 CPUs "
                      "max_active = 96, up to 96 x 96 = 9216 in-flight items)", [
                          ("drivers/bar/bar_core.c", 22,
                           'bar->events_wq = alloc_workqueue("bar-events", WQ_HIGHPRI,',
                           "alloc_workqueue(flags 'WQ_HIGHPRI', max_active 'bar->nr_workers')"),
                          ("drivers/bar/bar_core.c", 23, "bar->nr_workers);",
                           "'bar' field 'nr_workers'"),
                          ("drivers/bar/bar_core.c", 16, "bar->nr_workers = num_online_cpus();",
                           "field 'nr_workers' = 'num_online_cpus()'"),
                          ("drivers/bar/bar_core.c", 16, "bar->nr_workers = num_online_cpus();",
                           "CPU count num_online_cpus()")]),
             "suggestion",
             "max_active of a per-CPU queue limits each CPU, on every version, so a CPU count "
             "allows CPU count squared work items. Passing 0 gives the default per-CPU limit "
             "(WQ_DFL_ACTIVE); whether that concurrency is right is the author's call."),
            (_finding("missing-affinity-flag", "drivers/bar/bar_core.c", 22, 19, AFFINITY, [
                ("drivers/bar/bar_core.c", 22,
                 'bar->events_wq = alloc_workqueue("bar-events", WQ_HIGHPRI,',
                 "alloc_workqueue(flags 'WQ_HIGHPRI', max_active 'bar->nr_workers')")],
                severity="note"), "safe", PERCPU_WHY),
        ],
    },
    "fs/foo/inode.c": {
        "edits": [('alloc_workqueue("foo-evict", WQ_UNBOUND | WQ_FREEZABLE, 1);',
                   'alloc_ordered_workqueue("foo-evict", WQ_FREEZABLE);')],
        "fixes": [(_finding("unbound-max-active-one", "fs/foo/inode.c", 14, 17,
                            "WQ_UNBOUND workqueue with max_active 1 is not ordered since v6.9: use "
                            "alloc_ordered_workqueue() if ordering is needed (on v6.12 items can "
                            "run concurrently on different NUMA nodes (3bc1e711c26b))", [
                                ("fs/foo/inode.c", 14,
                                 'foo_evict_wq = alloc_workqueue("foo-evict", WQ_UNBOUND | '
                                 'WQ_FREEZABLE, 1);',
                                 "alloc_workqueue(flags 'WQ_UNBOUND | WQ_FREEZABLE', "
                                 "max_active '1')")]),
                   "suggestion",
                   "An unbound queue with max_active 1 was ordered implicitly before v6.9 and is "
                   "not since (3bc1e711c26b). alloc_ordered_workqueue() with the same flags minus "
                   "WQ_UNBOUND keeps the ordering on every version, if the work items rely on it.")],
    },
    "fs/foo/super.c": {
        "edits": [('alloc_workqueue("foo-io", WQ_MEM_RECLAIM, 0);',
                   'alloc_workqueue("foo-io", WQ_MEM_RECLAIM | WQ_PERCPU, 0);'),
                  ('create_singlethread_workqueue("foo-sync");',
                   'alloc_ordered_workqueue("foo-sync", WQ_MEM_RECLAIM);')],
        "fixes": [
            (_finding("missing-affinity-flag", "fs/foo/super.c", 15, 15, AFFINITY, [
                ("fs/foo/super.c", 15, 'fsi->io_wq = alloc_workqueue("foo-io", WQ_MEM_RECLAIM, 0);',
                 "alloc_workqueue(flags 'WQ_MEM_RECLAIM', max_active '0')")], severity="note"),
             "safe", PERCPU_WHY),
            (_finding("legacy-create-workqueue", "fs/foo/super.c", 19, 17,
                      "create_*workqueue() is deprecated: call alloc_workqueue() or "
                      "alloc_ordered_workqueue() with explicit flags "
                      "(create_singlethread_workqueue())", [
                          ("fs/foo/super.c", 19,
                           'fsi->sync_wq = create_singlethread_workqueue("foo-sync");',
                           "calls create_singlethread_workqueue()"),
                          ("include/linux/workqueue.h", 34,
                           'alloc_ordered_workqueue("%s", __WQ_LEGACY | WQ_MEM_RECLAIM, name)',
                           "calls alloc_ordered_workqueue()"),
                          ("include/linux/workqueue.h", 28,
                           "alloc_workqueue(fmt, WQ_UNBOUND | __WQ_ORDERED | (flags), 1, ##args)",
                           "alloc_workqueue(flags 'WQ_UNBOUND | __WQ_ORDERED | (flags)', "
                           "max_active '1')")], severity="note"),
             "safe",
             "create_*workqueue() are deprecated wrappers; they are replaced by the call their "
             "definition on v6.12 makes, without __WQ_LEGACY, so flags and max_active are "
             "written out and behaviour stays the same."),
        ],
    },
    "lib/qux.c": {
        "edits": [('alloc_workqueue("qux", WQ_SYSFS, 0);',
                   'alloc_workqueue("qux", WQ_SYSFS | WQ_PERCPU, 0);')],
        "fixes": [(_finding("missing-affinity-flag", "lib/qux.c", 13, 11, AFFINITY, [
            ("lib/qux.c", 13, 'qux_wq = alloc_workqueue("qux", WQ_SYSFS, 0);',
             "alloc_workqueue(flags 'WQ_SYSFS', max_active '0')")], severity="note"),
            "safe", PERCPU_WHY)],
    },
}


def make_changes(root: Path = TREE, target: str = "mainline") -> list:
    changes = []
    for path, spec in CHANGES.items():
        before = (root / path).read_text(encoding="utf-8")
        after = before
        for old, new in spec["edits"]:
            assert after.count(old) == 1, (path, old)
            after = after.replace(old, new)
        fixes = [Fix(finding, target, safety, why) for finding, safety, why in spec["fixes"]]
        changes.append(FileChange(path, before, after, fixes))
    return changes


@pytest.fixture(scope="session")
def catalogue():
    return catalogue_mod.load()


@pytest.fixture
def kernel_tree(tmp_path, linux_6_12) -> Path:
    """A copy of the fixture tree with the kernel's own get_maintainer.pl and checkpatch.pl."""
    root = tmp_path / "tree"
    shutil.copytree(TREE, root)
    for rel in KERNEL_SCRIPTS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(linux_6_12 / rel, root / rel)
    return root


def _git(cwd: Path, *args, **kw):
    env = dict(os.environ, GIT_AUTHOR_NAME="Test", GIT_AUTHOR_EMAIL="test@example.org",
               GIT_COMMITTER_NAME="Test", GIT_COMMITTER_EMAIL="test@example.org",
               GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True, **kw)


def _git_repo(root: Path) -> None:
    _git(root, "init", "-q")
    _git(root, "config", "user.name", "Test")
    _git(root, "config", "user.email", "test@example.org")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "Import the tree")


# ---------------------------------------------------------------------------------------
# The series on the fixture tree, with the kernel's own scripts


@pytest.fixture
def series(kernel_tree, tmp_path, catalogue) -> list:
    return write_series(kernel_tree, make_changes(kernel_tree), catalogue, VERSION, "mainline",
                        tmp_path / "out", date=DATE)


@pytest.mark.kernel
def test_series_matches_golden(series):
    names = [p.name for p in series]
    if os.environ.get("WQLINT_REGEN"):
        shutil.rmtree(EXPECTED, ignore_errors=True)
        EXPECTED.mkdir(parents=True)
        for path in series:
            shutil.copyfile(path, EXPECTED / path.name)
    assert names == sorted(p.name for p in EXPECTED.glob("*.patch")), \
        "the series changed: WQLINT_REGEN=1 rewrites tests/fixtures/bulk/expected"
    for path in series:
        assert path.read_bytes() == (EXPECTED / path.name).read_bytes(), \
            f"{path.name} differs: WQLINT_REGEN=1 rewrites tests/fixtures/bulk/expected"


@pytest.mark.kernel
def test_series_layout(series):
    assert [p.name for p in series] == [
        "0000-cover-letter.patch",
        "0001-bar-dma-add-WQ_PERCPU-to-alloc_workqueue-users.patch",
        "0002-bar-core-fix-workqueue-allocation-flags-and-limits.patch",
        "0003-foo-fix-workqueue-allocation-flags-and-limits.patch",
        "0004-lib-add-WQ_PERCPU-to-alloc_workqueue-users.patch",
    ]
    texts = [p.read_text(encoding="utf-8") for p in series]
    for n, text in enumerate(texts):
        head, _, body = text.partition("\n\n")
        assert head.splitlines()[:3] == [
            "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001",
            "From: wqlint <wqlint@localhost>", f"Date: {DATE}"]
        assert f"Subject: [PATCH {n}/4] " in head
        assert text.endswith("\n-- \nwqlint\n\n")
        message = body.split("\n---\n")[0] if n else body
        for line in message.splitlines():
            assert len(line) <= 72, line
        for line in text.splitlines():
            if line != "-- " and not line.startswith((" ", "+", "-")):
                assert line == line.rstrip(), repr(line)
    cover = texts[0]
    assert "Target: mainline" in cover and "v6.12" in cover
    assert "  missing-affinity-flag        4\n" in cover
    assert "  3/4 FOO FILESYSTEM: 2 files, 3 findings\n" in cover
    assert " 5 files changed, 7 insertions(+), 7 deletions(-)\n" in cover
    assert "\n  drivers/baz/baz.c (BAZ DRIVER)\n" in cover  # S: Obsolete
    assert all("drivers/baz" not in text for text in texts[1:])
    # The most specific section wins: bar-dma.c has its own, and is Cc'd to the parent too.
    bar_dma = texts[1]
    assert "Cc: Ana Example <ana@example.org>\nCc: Ben Example <ben@example.org>\n" in bar_dma
    assert "Cc: dmaengine@lists.example.org\n" in bar_dma
    assert "drivers/bar/bar_core.c" not in bar_dma
    foo = texts[3]
    assert "Content-Type: text/plain; charset=UTF-8" in foo  # Jörg in the Cc list
    assert "  fs/foo/super.c:19: create_singlethread_workqueue()\n" in foo
    assert "    include/linux/workqueue.h:34: calls alloc_ordered_workqueue()\n" in foo
    assert "Notes:\n    Suggestions" in foo.split("\n---\n", 1)[1]  # below the ---


@pytest.mark.kernel
def test_series_is_deterministic(kernel_tree, tmp_path, catalogue, series):
    again = write_series(kernel_tree, list(reversed(make_changes(kernel_tree))), catalogue,
                         VERSION, "mainline", tmp_path / "again", date=DATE)
    assert [p.name for p in again] == [p.name for p in series]
    for a, b in zip(series, again):
        assert a.read_bytes() == b.read_bytes()


@pytest.mark.kernel
def test_checkpatch_strict_is_clean(kernel_tree, series):
    for patch in series[1:]:
        proc = subprocess.run(
            ["perl", "scripts/checkpatch.pl", "--strict", "--no-signoff", "--no-tree",
             "--no-color", str(patch)], cwd=kernel_tree, capture_output=True, text=True)
        assert "total: 0 errors, 0 warnings, 0 checks" in proc.stdout, proc.stdout
        assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.kernel
def test_git_am_applies_the_series_in_order(kernel_tree, series):
    _git_repo(kernel_tree)
    _git(kernel_tree, "am", *[str(p) for p in series[1:]])
    log = _git(kernel_tree, "log", "--format=%s", "-n4").stdout.splitlines()
    assert log == [
        "lib: add WQ_PERCPU to alloc_workqueue() users",
        "foo: fix workqueue allocation flags and limits",
        "bar: core: fix workqueue allocation flags and limits",
        "bar: dma: add WQ_PERCPU to alloc_workqueue() users",
    ]
    for change in make_changes(TREE):
        expected = change.before if change.path.startswith("drivers/baz/") else change.after
        assert (kernel_tree / change.path).read_text(encoding="utf-8") == expected
    body = _git(kernel_tree, "log", "-1", "--format=%B", "HEAD~1").stdout
    assert "Cc: \"Jörg Fooman\" <joerg@example.org>" in body
    assert "Notes:" not in body and "Suggestions" not in body
    assert _git(kernel_tree, "status", "--porcelain", "--untracked-files=no").stdout == ""


@pytest.mark.kernel
def test_reference_target_says_what_it_needs(kernel_tree, tmp_path, catalogue):
    paths = write_series(kernel_tree, make_changes(kernel_tree, "reference"), catalogue,
                         VERSION, "reference", tmp_path / "ref", date=DATE)
    cover = paths[0].read_text(encoding="utf-8")
    assert "Target: reference: the API of the reference workqueue series" in cover
    for path in paths[1:]:
        notes = path.read_text(encoding="utf-8").split("\n---\n", 1)[1]
        assert "Needs the reference workqueue series" in notes


@pytest.mark.kernel
def test_history_gives_the_prefix(kernel_tree, tmp_path, catalogue):
    """In a checkout with history, the subsystem's own prefix wins over the path rule."""
    _git_repo(kernel_tree)
    for n in range(3):
        with open(kernel_tree / "fs/foo/inode.c", "a", encoding="utf-8") as out:
            out.write(f"/* {n} */\n")
        _git(kernel_tree, "commit", "-q", "-a", "-m", f"fs/foo: tidy up number {n}")
    paths = write_series(kernel_tree, make_changes(kernel_tree), catalogue, VERSION, "mainline",
                         tmp_path / "hist", date=DATE)
    assert paths[3].name == "0003-fs-foo-fix-workqueue-allocation-flags-and-limits.patch"
    assert "Subject: [PATCH 3/4] fs/foo: fix workqueue allocation flags and limits" in \
        paths[3].read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------
# Errors and edge cases (no kernel scripts needed)


def test_tree_without_maintainers_is_a_one_line_error(tmp_path, catalogue):
    root = tmp_path / "tree"
    shutil.copytree(TREE, root)
    (root / "MAINTAINERS").unlink()
    with pytest.raises(TreeFileMissing) as err:
        write_series(root, make_changes(root), catalogue, VERSION, "mainline", tmp_path / "out")
    assert str(err.value) == (f"{root}/MAINTAINERS: not found: the series is split by its "
                              "sections")
    assert isinstance(err.value, SeriesError)
    assert not (tmp_path / "out").exists()


def test_tree_without_get_maintainer_is_a_one_line_error(tmp_path, catalogue):
    root = tmp_path / "tree"
    shutil.copytree(TREE, root)
    with pytest.raises(TreeFileMissing) as err:
        write_series(root, make_changes(root), catalogue, VERSION, "mainline", tmp_path / "out")
    assert str(err.value) == (f"{root}/scripts/get_maintainer.pl: not found: it gives the Cc "
                              "list of each patch")
    assert "\n" not in str(err.value)


def test_nothing_to_change_writes_nothing(tmp_path, catalogue):
    root = tmp_path / "tree"
    shutil.copytree(TREE, root)
    (root / "scripts").mkdir()
    (root / "scripts/get_maintainer.pl").write_text("die;\n")
    same = FileChange("lib/qux.c", "x\n", "x\n", [])
    assert write_series(root, [same], catalogue, VERSION, "mainline", tmp_path / "out") == []
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("path", ["../etc/passwd", "/abs/file.c", "fs/./a.c", ".git/config"])
def test_paths_outside_the_tree_are_refused(tmp_path, catalogue, path):
    root = tmp_path / "tree"
    shutil.copytree(TREE, root)
    (root / "scripts").mkdir()
    (root / "scripts/get_maintainer.pl").write_text("die;\n")
    with pytest.raises(SeriesError, match="not a path relative to the tree"):
        build_series(root, [FileChange(path, "a\n", "b\n", [])], catalogue, VERSION, "mainline")


def test_maintainers_sections_of_the_fixture():
    m = Maintainers.load(TREE)
    names = lambda f: [(d, s.name) for d, s in m.sections_of(f)]  # noqa: E731
    assert names("drivers/bar/bar-dma.c") == [(3, "BAR DMA ENGINE"), (2, "BAR DRIVER"),
                                              (-1, "THE REST")]
    assert names("drivers/bar/Kconfig") == [(-1, "THE REST")]  # X: in BAR DRIVER
    assert names("lib/qux.c") == [(0, "QUX LIBRARY"), (-1, "THE REST")]  # N: qux
    assert names("fs/foo/super.c") == [(2, "FOO FILESYSTEM"), (-1, "THE REST")]
    assert m.subsystem("drivers/baz/baz.c").obsolete
    assert left_out(TREE, make_changes()) == [("drivers/baz/baz.c", "BAZ DRIVER")]
    assert m.subsystem("include/linux/workqueue.h").name == "WORKQUEUE"
    assert Maintainers(TREE, "").subsystem("fs/foo/super.c") is None


def test_get_maintainer_is_given_only_the_options_it_has():
    """An older get_maintainer.pl (6.1's) refuses --no-keywords-in-file and --no-bug, which it
    has no option for: they are left out; a script whose options cannot be read gets them all."""
    from wqlint.fix.maintainers import GET_MAINTAINER_ARGS, supported_args
    old = ("if (!GetOptions(\n" + "".join(f"\t\t'{o}' => \\$x,\n" for o in (
        "email!", "git!", "git-blame!", "git-fallback!", "git-chief-penguins!", "remove-duplicates!", "mailmap!",
        "m!", "r!", "n!", "l!", "fixes!", "moderated!", "s!", "multiline!", "roles!", "rolestats!", "subsystem!",
        "status!", "scm!", "tree!", "web!", "pattern-depth=i", "k|keywords!", "f|file")) + "\t\t)) {\n")
    assert supported_args(old) == tuple(a for a in GET_MAINTAINER_ARGS
                                        if a not in ("--no-keywords-in-file", "--no-bug"))
    assert supported_args(old.replace("'k|keywords!'", "'k|keywords!' => 1,\n\t\t'kf|keywords-in-file!'")
                          .replace("'web!'", "'web!' => 1,\n\t\t'bug!'")) == GET_MAINTAINER_ARGS
    assert supported_args("#!/usr/bin/perl\nprint 1;\n") == GET_MAINTAINER_ARGS


def test_parse_get_maintainer_orders_people_then_lists():
    out = ("Alasdair Kergon <agk@example.org> (maintainer:DEVICE-MAPPER  (LVM))\n"
           "Lai Reviewer <lai@example.org> (reviewer:WORKQUEUE)\n"
           "dm-devel@lists.example.org (open list:DEVICE-MAPPER  (LVM))\n"
           "\"Foo (Bar) Baz\" <foo@example.org> (odd fixer:FOO)\n"
           "ALASDAIR KERGON <AGK@example.org> (maintainer:OTHER)\n"
           "linux-kernel@lists.example.org (open list)\n"
           " (open list:NITRO)\n")  # L: with a name before the address
    assert parse_get_maintainer(out) == [
        "Alasdair Kergon <agk@example.org>", "\"Foo (Bar) Baz\" <foo@example.org>",
        "Lai Reviewer <lai@example.org>", "dm-devel@lists.example.org",
        "linux-kernel@lists.example.org"]


@pytest.mark.parametrize("path, prefix", [
    ("fs/btrfs/scrub.c", "btrfs"), ("fs/aio.c", "fs"), ("kernel/workqueue.c", "workqueue"),
    ("kernel/sched/core.c", "sched"), ("block/blk-core.c", "block"), ("mm/vmstat.c", "mm"),
    ("drivers/md/dm-crypt.c", "dm crypt"), ("drivers/md/raid5.c", "md/raid5"),
    ("drivers/md/md.c", "md"), ("drivers/md/bcache/super.c", "bcache"),
    ("drivers/scsi/lpfc/lpfc_init.c", "scsi: lpfc"), ("drivers/gpu/drm/i915/i915_drv.c", "drm/i915"),
    ("drivers/net/ethernet/intel/ice/ice_main.c", "ice"),
    ("drivers/net/wireless/ath/ath11k/core.c", "wifi: ath11k"),
    ("drivers/infiniband/hw/mlx5/mr.c", "RDMA/mlx5"), ("drivers/nvme/host/tcp.c", "nvme"),
    ("drivers/bar/bar_core.c", "bar: core"), ("drivers/bar/bar-dma.c", "bar: dma"),
    ("drivers/block/nbd.c", "block: nbd"), ("net/sunrpc/sched.c", "sunrpc"),
    ("net/core/dev.c", "net"), ("arch/x86/kvm/x86.c", "KVM: x86"),
    ("sound/soc/codecs/da7219.c", "ASoC: da7219"), ("virt/kvm/eventfd.c", "KVM"),
    ("lib/qux.c", "lib"), ("drivers/md/", "md"),
])
def test_path_prefix(path, prefix):
    assert path_prefix(path) == prefix


def test_common_prefix():
    assert common_prefix(["scsi: lpfc", "scsi: qla2xxx"], ["a/b", "a/c"]) == "scsi"
    assert common_prefix(["dm crypt", "dm verity"],
                         ["drivers/md/dm-crypt.c", "drivers/md/dm-verity.c"]) == "md"
    assert common_prefix(["foo", "foo"], ["fs/foo/a.c", "fs/foo/b.c"]) == "foo"


def test_history_prefix_only_from_the_tree_own_repository(tmp_path):
    outer = tmp_path / "outer"
    (outer / "tree/fs/foo").mkdir(parents=True)
    _git(outer, "init", "-q")
    for n, subject in enumerate(["foo: a: one", "foo: a: two", "foo: three", "Revert \"x: y\""]):
        (outer / "tree/fs/foo/a.c").write_text(f"{n}\n")
        _git(outer, "add", "-A")
        _git(outer, "commit", "-q", "-m", subject)
    assert history_prefix(outer, ["tree/fs/foo/a.c"]) == "foo: a"
    # A tree inside some other repository does not take that repository's history.
    assert history_prefix(outer / "tree", ["fs/foo/a.c"]) is None
    assert patch_prefix(outer / "tree", ["fs/foo/a.c"]) == "foo"
    # One commit is not a convention.
    assert history_prefix(outer, ["tree/fs/foo/b.c"]) is None


def test_diffstat_is_git_format_patch_s(tmp_path):
    """The same stat lines as git format-patch, also for long names and big changes."""
    root = tmp_path / "repo"
    names = ["a.c", "drivers/some/rather/deeply/nested/directory/with/a/long/name/file_name.c",
             "fs/big.c", "fs/small.c", "fs/del.c"]
    before = {"a.c": "x\n" * 3, names[1]: "y\n" * 5, "fs/big.c": "".join(f"{i}\n" for i in range(300)),
              "fs/small.c": "s\n", "fs/del.c": "".join(f"{i}\n" for i in range(40))}
    after = {"a.c": "x\nX\nx\n", names[1]: "y\n" * 4 + "z\nq\n",
             "fs/big.c": "".join(f"{i}{'!' if i % 2 else ''}\n" for i in range(280)),
             "fs/small.c": "s\nt\n", "fs/del.c": "0\n"}
    for name, text in before.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _git(root.parent, "init", "-q", str(root))
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "before")
    for name, text in after.items():
        (root / name).write_text(text)
    _git(root, "commit", "-q", "-a", "-m", "after")
    patch = _git(root, "format-patch", "-1", "--stdout").stdout
    expected = patch.split("\n---\n", 1)[1].split("\n\n", 1)[0] + "\n"
    entries = [(n, *diffstat_mod.count(FileChange(n, before[n], after[n]).diff()))
               for n in sorted(before)]
    assert diffstat_mod.diffstat(entries) == expected


def test_diffstat_summary_words():
    assert diffstat_mod.summary(1, 1, 0) == " 1 file changed, 1 insertion(+)"
    assert diffstat_mod.summary(2, 0, 3) == " 2 files changed, 3 deletions(-)"
    assert diffstat_mod.summary(1, 0, 0) == " 1 file changed, 0 insertions(+), 0 deletions(-)"


def test_count_ignores_headers_and_no_newline_marker():
    change = FileChange("a.c", "++x\n--y\nz", "++x\n+-y\nz")
    assert "\n---y\n++-y\n" in change.diff()  # content lines that look like headers
    assert diffstat_mod.count(change.diff()) == (1, 1)


def test_mail_date_forms(monkeypatch):
    assert mail_date(DATE) == DATE
    assert mail_date("2026-01-01T12:00:00+00:00") == DATE
    assert mail_date("2026-01-01 12:00:00") == DATE
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767268800")
    assert mail_date(None) == DATE
    with pytest.raises(SeriesError):
        mail_date("yesterday")


def test_wrap_keeps_lines_git_and_checkpatch_read_as_text():
    lines = wrap("word " * 30 + "--- diff -u #define", "", "")
    assert all(len(line) <= 72 for line in lines)
    assert wrap("--- not the end of the message") == [" --- not the end of the message"]
    assert wrap("#define X 1") == [" #define X 1"]


def test_where_names_the_directories():
    from wqlint.fix.series import _where
    assert _where(["fs/foo/a.c"]) == "fs/foo/a.c"
    assert _where(["fs/foo/a.c", "fs/foo/b/c.c"]) == "fs/foo/"
    assert _where(["block/bio.c", "drivers/block/x/y.c", "drivers/block/z.c"]) == \
        "block/ and drivers/block/"
    assert _where([f"d{n}/a.c" for n in range(4)]) == "several directories"


def test_long_subjects_are_folded_and_read_back_whole(tmp_path):
    """A subject past 78 columns is folded as git format-patch folds it; git mailinfo (what
    git am runs) gives it back on one line."""
    from wqlint.fix.series import Patch, _author_header, render_patch
    change = make_changes()[-1]  # lib/qux.c
    patch = Patch(1, "QUX LIBRARY", "lib: qux: a rather long prefix for a subject line",
                  [change], [change.diff()], cc=["Quinn Example <quinn@example.org>"])
    patch.subject = patch.prefix + ": add WQ_PERCPU to alloc_workqueue() users"
    _, author = _author_header("Jörg Fooman <joerg@example.org>")
    assert author.isascii()  # RFC 2047
    text = render_patch(patch, 1, catalogue_mod.load(), VERSION, "mainline", author, DATE)
    head = text.split("\n\n", 1)[0].splitlines()
    subject = next(n for n, line in enumerate(head) if line.startswith("Subject: "))
    assert head[subject + 1].startswith(" ")  # folded
    assert all(len(line) <= 78 for line in head[1:])
    (tmp_path / "p").write_text(text, encoding="utf-8")
    info = _git(tmp_path, "mailinfo", "msg", "patch", input=text).stdout
    assert f"Subject: {patch.subject}\n" in info
    assert "Author: Jörg Fooman\n" in info


# ---------------------------------------------------------------------------------------
# MAINTAINERS of linux-source-6.12: the same sections as get_maintainer.pl, much faster

REAL_SAMPLE = [
    "drivers/block/drbd/drbd_receiver.c", "drivers/crypto/intel/qat/qat_common/adf_aer.c",
    "drivers/gpu/drm/amd/display/amdgpu_dm/amdgpu_dm_hdcp.c", "drivers/infiniband/core/cm.c",
    "drivers/md/bcache/super.c", "drivers/md/dm-crypt.c", "drivers/message/fusion/mptfc.c",
    "drivers/net/ethernet/mellanox/mlx5/core/en_main.c", "drivers/net/wireless/ath/ath10k/qmi.c",
    "drivers/nvme/target/fc.c", "drivers/scsi/hisi_sas/hisi_sas_main.c",
    "drivers/soc/qcom/qmi_interface.c", "drivers/usb/core/hub.c", "drivers/virt/nitro_enclaves/ne_pci_dev.c",
    "drivers/xen/pvcalls-back.c", "fs/btrfs/scrub.c", "fs/ocfs2/dlmfs/dlmfs.c", "fs/reiserfs/super.c",
    "kernel/locking/test-ww_mutex.c", "kernel/workqueue.c", "net/ipv6/mcast.c",
    "net/sunrpc/xprtrdma/svc_rdma.c", "net/tls/tls_strp.c", "sound/soc/codecs/da7219-aad.c",
]


@pytest.mark.kernel
def test_sections_agree_with_get_maintainer(linux_6_12):
    m = Maintainers.load(linux_6_12)
    env = dict(os.environ, PERL_HASH_SEED="0")
    for path in REAL_SAMPLE:
        out = subprocess.run(
            ["perl", "scripts/get_maintainer.pl", "--no-git", "--no-git-fallback", "--subsystem",
             "--no-email", "--no-l", "--no-status", "-f", path],
            cwd=linux_6_12, env=env, capture_output=True, text=True, check=True).stdout
        theirs = [line for line in out.splitlines() if line]
        ours = m.sections_of(path)
        assert sorted(theirs) == sorted(s.name for _, s in ours), path
        # Equally deep sections come in Perl's hash order there: ours is one of them.
        top = {s.name for depth, s in ours if depth == ours[0][0]}
        assert theirs[0] in top, path
    assert m.subsystem("fs/reiserfs/super.c").obsolete
    assert m.subsystem("drivers/md/dm-crypt.c").name == "DEVICE-MAPPER  (LVM)"
    assert m.subsystem("kernel/workqueue.c").name == "WORKQUEUE"


def test_get_maintainer_output_of_another_form_is_an_error():
    with pytest.raises(ValueError, match="not in the form asked for"):
        parse_get_maintainer("Lai Reviewer <lai@example.org> (reviewer:WORKQUEUE)\n"
                             "WORKQUEUE\nM:\tTejun Heo <tj@example.org>\n")
