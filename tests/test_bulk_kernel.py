"""wqlint bulk on Debian's linux-source-6.12: the mainline series for every rule passes
checkpatch --strict, applies with git am in order and gives the same files as `wqlint fix`;
spatch with fix.cocci writes the same bytes; --verify compiles the touched objects of a
slice of the tree and finds no fixed finding left.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from helpers import run

pytestmark = pytest.mark.kernel
DATE = "Sun, 22 Nov 2026 12:00:00 +0000"


@pytest.fixture(scope="module")
def bulk_612(linux_6_12, tmp_path_factory):
    """bulk's series of the whole tree, its run, and `wqlint fix --diff` of the tree (one
    index for both: the second run reads the tree from the index the first one built)."""
    out = tmp_path_factory.mktemp("bulk") / "out"
    env = {"XDG_CACHE_HOME": str(tmp_path_factory.mktemp("xdg-bulk"))}
    got = run("bulk", linux_6_12, "--target", "mainline", "--out", out, "--date", DATE, env=env)
    assert got.exit_code == 0, got.stderr[-2000:]
    diff = run("fix", linux_6_12, "--target", "mainline", "--diff", env=env)
    assert diff.exit_code == 0, diff.stderr[-2000:]
    return out, got, diff.stdout


def _touched(patches) -> list:
    files = set()
    for p in patches:
        files.update(re.findall(r"^\+\+\+ b/(\S+)$", p.read_text(), re.M))
    return sorted(files)


def _mini(tree: Path, files: list, dest: Path) -> Path:
    for rel in files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tree / rel, dest / rel)
    return dest


def test_series_passes_checkpatch_and_applies_like_fix(bulk_612, linux_6_12, tmp_path):
    out, got, diff = bulk_612
    patches = sorted(out.glob("[0-9][0-9][0-9][0-9]-*.patch"))
    assert patches[0].name == "0000-cover-letter.patch"
    series = patches[1:]
    assert len(series) > 100  # one per subsystem of 522 files
    cover = patches[0].read_text()
    assert f"Subject: [PATCH 0/{len(series)}] " in cover
    # 232 of the fixes move work off system_wq / system_unbound_wq (6.12.117 declares their
    # replacements); of the not fixed, 3 are __WQ_LEGACY written by callers and 1 is a use in
    # a macro body (i915 CT_DEAD()), which the fixer does not edit; 7 are waits from reclaim
    # work (reclaim-flush-dependency). For 3 of them WQ_MEM_RECLAIM on the flushed queue is
    # only a suggestion, the queue being allocated per object (one rescuer thread each):
    # nvmet-fc's work_q, per target queue of each association (the flush of the association's
    # deletion; the destroy on the error exit of the queue's own allocation waits for nothing),
    # and the FC transport's two queues per host (fc_wq_%d, fc_dl_%d), each flushed from the
    # rport works of qla2xxx, bfad, libfc and zfcp (a finding per flush, naming the four works);
    # upstream (7.3) has not given them the flag. The other four wait for system queues: the
    # deferred probe work on system_unbound_wq (nvme's dead controller removed from nvme-wq,
    # dm-verity's restart), blk-iolatency's enable work on system_percpu_wq (a disk deleted
    # from nbd's and nvme's reclaim works: rq_qos_exit() calls each policy's exit), and, behind
    # file_operations.fsync from nvmet's file flush, hfs's MDB work on system_long_wq and the
    # deferred I/O work of a framebuffer on system_percpu_wq. Two
    # are works that wait for themselves (self-flush-deadlock: iwcm, hci_sync), which only the
    # author can move.
    # gfs2_control_wq, flushed from the glock work on a withdraw, and ib_wq, flushed from
    # mthca's catastrophic-error reset, are allocated once and get WQ_MEM_RECLAIM (each in a
    # file another fix touches too).
    assert got.stderr.splitlines()[-1] == ("wqlint: 717 finding(s) fixed in 522 file(s) "
                                           "(target mainline, v6.12.117); 49 not fixed")
    assert "not fixed [reclaim-flush-dependency] (3): suggestion, made only with --suggestions: " in got.stderr
    assert "not fixed [self-flush-deadlock] (2): " in got.stderr

    def checkpatch(p):
        r = subprocess.run(["perl", "scripts/checkpatch.pl", "--strict", "--no-signoff", "--no-tree",
                            str(p)], cwd=linux_6_12, capture_output=True, text=True)
        return p.name, [ln for ln in r.stdout.splitlines() if ln.startswith("total:")]

    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        results = list(pool.map(checkpatch, series))
    bad = [(name, total) for name, total in results
           if not total or not total[0].startswith("total: 0 errors, 0 warnings, 0 checks")]
    assert bad == []

    files = _touched(series)
    # fs/reiserfs is marked obsolete in MAINTAINERS: the series leaves it out (cover letter).
    assert len(files) == 521 and "fs/reiserfs/super.c" in cover
    repo = _mini(linux_6_12, files, tmp_path / "am")
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A", "-f"], cwd=repo, check=True)
    subprocess.run(["git", *ident, "commit", "-qm", "base"], cwd=repo, check=True)
    am = subprocess.run(["git", *ident, "am", "-q", *map(str, series)], cwd=repo, capture_output=True, text=True)
    assert am.returncode == 0, am.stderr[-2000:]

    other = _mini(linux_6_12, sorted(set(re.findall(r"^\+\+\+ b/(\S+)$", diff, re.M))), tmp_path / "fix")
    subprocess.run(["patch", "-p1", "-s"], input=diff, text=True, cwd=other, check=True)
    for rel in files:
        assert (repo / rel).read_bytes() == (other / rel).read_bytes(), rel


def _differ_from_spatch(tree: Path, out: Path, diff: str, tmp_path: Path) -> tuple:
    """(files diff, of `wqlint fix --diff`, changes; those spatch with out/fix.cocci writes
    otherwise)."""
    files = sorted(set(re.findall(r"^\+\+\+ b/(\S+)$", diff, re.M)))
    by_spatch = _mini(tree, files, tmp_path / "spatch")
    by_wqlint = _mini(tree, files, tmp_path / "wqlint")
    got = subprocess.run(["spatch", "--sp-file", str(out / "fix.cocci"), "--dir", ".", "--in-place",
                          "-j", str(os.cpu_count() or 2), "--very-quiet"], cwd=by_spatch,
                         capture_output=True, text=True)
    assert got.returncode == 0, got.stderr[-2000:]
    subprocess.run(["patch", "-p1", "-s"], input=diff, text=True, cwd=by_wqlint, check=True)
    return files, [rel for rel in files if (by_spatch / rel).read_bytes() != (by_wqlint / rel).read_bytes()]


# Where spatch with fix.cocci and `wqlint fix` write different bytes, and why:
# - i915's CT_DEAD() in intel_guc_ct.c: fix.cocci also replaces system_unbound_wq inside the
#   macro's body, which `wqlint fix` leaves to the author (it does not rewrite macros);
# - kernel/rcu/tasks.h: the same edit, but `wqlint fix` wraps the two queue_work_on() lines the
#   longer name takes past 80 columns, where spatch keeps them on one line.
PARITY_GAP = ["drivers/gpu/drm/i915/gt/uc/intel_guc_ct.c", "kernel/rcu/tasks.h"]


def test_fix_cocci_makes_the_same_change(bulk_612, linux_6_12, tmp_path):
    """spatch with fix.cocci writes the same bytes as `wqlint fix` in every touched file
    but the known ones."""
    out, _got, diff = bulk_612
    files, differ = _differ_from_spatch(linux_6_12, out, diff, tmp_path)
    assert len(files) == 522 and differ == PARITY_GAP


def test_verify_compiles_a_slice(linux_6_12, tmp_path):
    from conftest import CACHE
    out = tmp_path / "out"
    paths = [linux_6_12 / d for d in ("block", "fs/crypto", "fs/ext4")]
    got = run("bulk", *paths, "--target", "mainline", "--out", out, "--date", DATE, "--verify",
              "--build-dir", CACHE / "verify-build", "-j", str(os.cpu_count() or 2))
    lines = [ln for ln in got.stderr.splitlines() if ln.startswith("verify:")]
    assert got.exit_code == 0, "\n".join(lines)
    assert lines[1].endswith(" 0 failed, 0 not built by this configuration")
    assert lines[2] == "verify: 0 finding(s) of the fixed rules left in the touched files"
    built = int(lines[1].split()[1])
    assert built >= 5


@pytest.fixture(scope="module")
def reference_tree(linux_6_12, tmp_path_factory):
    """linux-source-6.12 with the kernel/stable-6.12/ backport applied: a hard-linked copy, patched."""
    from conftest import REPO
    tree = tmp_path_factory.mktemp("reference") / "linux"
    subprocess.run(["cp", "-al", str(linux_6_12), str(tree)], check=True)
    for patch in sorted((REPO / "kernel" / "stable-6.12").glob("[0-9][0-9][0-9][0-9]-*.patch"))[1:]:
        subprocess.run(["patch", "-p1", "-s", "-i", str(patch)], cwd=tree, check=True)
    return tree


def test_reference_series_compiles_on_the_patched_tree(reference_tree, tmp_path):
    """The global-limit fixes call the APIs kernel/stable-6.12/ adds: the objects compile against it."""
    from conftest import CACHE
    out = tmp_path / "out"
    paths = [reference_tree / p for p in ("block", "drivers/md/dm-crypt.c", "fs/erofs", "fs/f2fs")]
    got = run("bulk", *paths, "--target", "reference", "--out", out, "--date", DATE, "--verify",
              "--build-dir", CACHE / "verify-build-reference", "-j", str(os.cpu_count() or 2))
    lines = [ln for ln in got.stderr.splitlines() if ln.startswith("verify:")]
    assert got.exit_code == 0, "\n".join(lines) + got.stderr[-2000:]
    assert lines[1].endswith(" 0 failed, 0 not built by this configuration")
    assert lines[2] == "verify: 0 finding(s) of the fixed rules left in the touched files"
    series = "".join(p.read_text() for p in sorted(out.glob("[0-9][0-9][0-9][0-9]-*.patch"))[1:])
    setters = sorted(set(re.findall(r"^\+\s*(workqueue_set_global_max_active(?:_cpus)?)\((\S+?),", series, re.M)))
    assert setters == [("workqueue_set_global_max_active_cpus", "blk_crypto_wq"),
                       ("workqueue_set_global_max_active_cpus", "cc->crypt_queue"),
                       ("workqueue_set_global_max_active_cpus", "sbi->post_read_wq"),
                       ("workqueue_set_global_max_active_cpus", "z_erofs_workqueue")]
    assert int(lines[1].split()[1]) >= 4


def test_reference_fix_cocci_makes_the_same_change(reference_tree, tmp_path):
    out = tmp_path / "out"
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}  # one index for bulk and fix
    got = run("bulk", reference_tree, "--target", "reference", "--out", out, "--date", DATE, env=env)
    assert got.exit_code == 0, got.stderr[-2000:]
    # as on mainline, the flushes from reclaim work of nvmet-fc's and the FC transport's queues
    # are suggestions (a queue per object), the waits for system queues have no fix,
    # gfs2_control_wq and ib_wq get WQ_MEM_RECLAIM
    assert got.stderr.splitlines()[-1] == ("wqlint: 724 finding(s) fixed in 527 file(s) "
                                           "(target reference, v6.12.117); 43 not fixed")
    assert "not fixed [reclaim-flush-dependency] (3): suggestion, made only with --suggestions: " in got.stderr
    diff = run("fix", reference_tree, "--target", "reference", "--diff", env=env)
    assert diff.exit_code == 0, diff.stderr[-2000:]
    files, differ = _differ_from_spatch(reference_tree, out, diff.stdout, tmp_path)
    assert len(files) == 527 and differ == PARITY_GAP


@pytest.fixture(scope="module")
def reference_api_7_3(linux_7_3, tmp_path_factory):
    """linux-source-7.3 with the API patches of kernel/ applied (those that change
    include/linux/workqueue.h and kernel/, not the conversions of the callers, which the
    fixes are to make): a hard-linked copy, patched."""
    from conftest import REPO
    tree = tmp_path_factory.mktemp("reference-7.3") / "linux"
    subprocess.run(["cp", "-al", str(linux_7_3), str(tree)], check=True)
    for patch in sorted((REPO / "kernel").glob("[0-9][0-9][0-9][0-9]-*.patch"))[1:]:
        touched = _touched([patch])
        if all(t.startswith(("include/linux/workqueue.h", "kernel/", "Documentation/")) for t in touched):
            subprocess.run(["patch", "-p1", "-s", "-i", str(patch)], cwd=tree, check=True)
    return tree


def _declared(header: Path) -> dict:
    """{function: number of parameters} of the workqueue_set_*() / alloc_*() prototypes and
    macros of a header, as it declares them."""
    text = re.sub(r"/\*.*?\*/", "", header.read_text(), flags=re.S)
    out = {}
    for m in re.finditer(r"^(?:extern\s+)?(?:int|void|struct workqueue_struct \*)\s*\n?\s*"
                         r"(\w+)\(([^;{)]*)\)\s*;", text, re.M):
        params = [p for p in m.group(2).split(",") if p.strip() and p.strip() != "void"]
        out[m.group(1)] = len(params)
    return out


def test_reference_fixes_on_7_3_call_the_series_api_and_compile(reference_api_7_3, tmp_path):
    """On 7.3 with the series' API, `--target reference` converts the CPU-count callers the
    series converts by hand: each fix calls a function the patched workqueue.h declares, with
    its number of arguments, and every touched object compiles against it."""
    from conftest import CACHE
    out = tmp_path / "out"
    rules = ["--rule", "unbound-max-active-cpu-count", "--rule", "percpu-max-active-cpu-count"]
    got = run("bulk", reference_api_7_3, "--target", "reference", *rules, "--out", out, "--date", DATE,
              "--verify", "--build-dir", CACHE / "verify-build-reference-7.3", "-j", str(os.cpu_count() or 2))
    lines = [ln for ln in got.stderr.splitlines() if ln.startswith("verify:")]
    assert got.exit_code == 0, "\n".join(lines) + got.stderr[-3000:]
    summary = [ln for ln in got.stderr.splitlines() if ln.startswith("wqlint: ")]
    assert summary[-1] == "wqlint: 6 finding(s) fixed in 5 file(s) (target reference, v7.3.4); 13 not fixed"
    assert lines == ["verify: 5 patch(es) applied to a scratch copy",
                     "verify: 5 object(s) compiled, 0 failed, 0 not built by this configuration",
                     "verify: 0 finding(s) of the fixed rules left in the touched files"]
    series = sorted(out.glob("[0-9][0-9][0-9][0-9]-*.patch"))[1:]
    assert _touched(series) == ["block/blk-crypto-fallback.c", "drivers/crypto/hisilicon/qm.c",
                                "drivers/md/dm-crypt.c", "fs/erofs/zdata.c", "fs/f2fs/data.c"]
    text = "".join(p.read_text() for p in series)
    # each added call, its lines joined: name and argument count against the declarations
    added = re.sub(r"\n\+\s*", " ", "\n".join(ln for ln in text.splitlines() if ln.startswith("+")))
    calls = re.findall(r"\b(workqueue_set_\w+|alloc_workqueue_\w+)\(([^;]*)\);", added)
    declared = _declared(reference_api_7_3 / "include" / "linux" / "workqueue.h")
    assert sorted({name for name, _ in calls}) == ["workqueue_set_global_max_active_cpus"]
    for name, args in calls:
        assert declared.get(name) == len(args.split(",")), (name, args, declared.get(name))
    assert sorted(args.split(",")[0].strip() for _, args in calls) == [
        "blk_crypto_wq", "cc->crypt_queue", "qm->wq", "sbi->evict_wq", "sbi->wq", "z_erofs_workqueue"]
