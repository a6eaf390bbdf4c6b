"""An out-of-tree module (fixtures/module: a Kbuild file, two .c files, a header with a flags
macro defined per kernel version, a LINUX_VERSION_CODE compat block, code under a macro
nothing defines) checked against the kernels it builds for: `wqlint scan --kernel-tree`
against linux-source-6.1, -6.12 and -7.3, and `wqlint check` inside Kbuild (make -C O= M=),
which must agree with the scan."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES
from helpers import run as run_cli, scan_json

MODULE = FIXTURES / "module"
WQLINT = Path(sys.executable).with_name("wqlint")
NOWHERE = ("under '#ifdef WQDEMO_TRACE': WQDEMO_TRACE is defined nowhere in the scanned files, the kernel's "
           "headers or the Kbuild file (only a -D on the compiler's command line enables this code)")

# (path, line, rule) per kernel, and why they differ:
# - wqdemo_main.c:17, create_singlethread_workqueue(): compiled only before v6.6 (the compat block).
# - wqdemo_io.c:8: WQDEMO_IO_FLAGS is WQ_MEM_RECLAIM before v6.9 (a per-CPU queue), WQ_UNBOUND after.
# - wqdemo_main.c:24, under #ifdef WQDEMO_TRACE: reported on every kernel, with a word on it.
# - wqdemo_main.c:26, neither WQ_PERCPU nor WQ_UNBOUND: only where the kernel has WQ_PERCPU
#   (Debian's 6.12.117 has it already; 6.1 has not).
# - wqdemo_main.c:27, max_active 1024: over WQ_MAX_ACTIVE (512) before v6.13, not after (2048).
EXPECTED = {
    "6.1": [("wqdemo_io.c", 8, "percpu-max-active-cpu-count"),
            ("wqdemo_main.c", 17, "legacy-create-workqueue"),
            ("wqdemo_main.c", 24, "unbound-max-active-cpu-count"),
            ("wqdemo_main.c", 27, "max-active-over-limit")],
    "6.12": [("wqdemo_io.c", 8, "unbound-max-active-cpu-count"),
             ("wqdemo_main.c", 24, "unbound-max-active-cpu-count"),
             ("wqdemo_main.c", 26, "missing-affinity-flag"),
             ("wqdemo_main.c", 27, "max-active-over-limit")],
    "7.3": [("wqdemo_io.c", 8, "unbound-max-active-cpu-count"),
            ("wqdemo_main.c", 24, "unbound-max-active-cpu-count"),
            ("wqdemo_main.c", 26, "missing-affinity-flag")],
}
VERSIONS = {"6.1": "v6.1.192", "6.12": "v6.12.117", "7.3": "v7.3.4"}


@pytest.fixture(scope="module")
def module(tmp_path_factory) -> Path:
    mod = tmp_path_factory.mktemp("module") / "wqdemo"
    shutil.copytree(MODULE, mod)
    return mod


def scan_against(module, tree):
    doc, result = scan_json("-j", "2", "--kernel-tree", tree, module)
    assert result.stderr == ""
    return doc


@pytest.mark.kernel
@pytest.mark.parametrize("series", ["6.1", "6.12", "7.3"])
def test_module_against_each_kernel(module, series, request):
    tree = request.getfixturevalue("linux_" + series.replace(".", "_"))
    doc = scan_against(module, tree)
    assert (doc["root"], doc["kernel_version"], doc["kernel_version_source"]) == (
        str(module), VERSIONS[series], str(tree / "Makefile"))
    assert [(f["path"], f["line"], f["rule"]) for f in doc["findings"]] == EXPECTED[series]
    by_loc = {(f["path"], f["line"]): f for f in doc["findings"]}
    notes = {loc: [(s["path"], s["line"], s["note"]) for s in f["chain"]] for loc, f in by_loc.items()}
    assert ("wqdemo_main.c", 23, NOWHERE) in notes[("wqdemo_main.c", 24)]
    flags_step = {
        "6.1": ("wqdemo.h", 10, "macro WQDEMO_IO_FLAGS = 'WQ_MEM_RECLAIM' (under the #else of "
                                "'#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)': taken for v6.1.192)"),
    }.get(series, ("wqdemo.h", 8, "macro WQDEMO_IO_FLAGS = '(WQ_UNBOUND | WQ_MEM_RECLAIM)' (under "
                                  f"'#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)': taken for {VERSIONS[series]})"))
    assert notes[("wqdemo_io.c", 8)][:3] == [
        ("wqdemo_io.c", 8, "alloc_workqueue(flags 'WQDEMO_IO_FLAGS', max_active 'num_online_cpus()')"),
        flags_step, ("wqdemo_io.c", 8, "CPU count num_online_cpus()")]
    if series == "6.1":
        assert notes[("wqdemo_main.c", 17)][:2] == [
            ("wqdemo_main.c", 17, "calls create_singlethread_workqueue()"),
            ("wqdemo_main.c", 16, "under '#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 6, 0)': taken for v6.1.192")]


@pytest.mark.kernel
def test_module_through_kbuild_agrees_with_scan(module, linux_6_12, tmp_path):
    """make -C <O= dir of 6.12> M=<module> C=2 CHECK="wqlint check": the same findings as
    scan --kernel-tree, but for the code under #ifdef WQDEMO_TRACE, which the build does not
    compile (nothing passes -DWQDEMO_TRACE)."""
    if not shutil.which("make") or not shutil.which("gcc") or not shutil.which("sparse"):
        pytest.skip("needs make, gcc and sparse")
    from kbuild import prepared_build
    build = prepared_build(linux_6_12)
    mod = tmp_path / "wqdemo"
    shutil.copytree(MODULE, mod)
    got = subprocess.run(["make", "-s", "-C", str(build), f"M={mod}", "C=2", f"CHECK={WQLINT} check",
                          "KBUILD_MODPOST_WARN=1"],  # no vmlinux, so no Module.symvers
                         capture_output=True, text=True, timeout=600)
    assert got.returncode == 0, got.stderr[-4000:]
    checked = sorted((ln.split(":")[0][len(str(mod)) + 1:], int(ln.split(":")[1]), ln.rsplit("[", 1)[1][:-1])
                     for ln in got.stderr.splitlines()
                     if ln.startswith(str(mod)) and (": warning: " in ln or ": note: " in ln))
    scanned = [(f["path"], f["line"], f["rule"]) for f in scan_against(mod, linux_6_12)["findings"]]
    assert checked == [loc for loc in scanned if loc[:2] != ("wqdemo_main.c", 24)]
    assert (mod / "wqdemo.o").is_file()


# -- compat code decided through the module's own macros (fixtures/compat) ---------------------
COMPAT = FIXTURES / "compat"
VER_MIN_TAKEN = "under '#if WQCOMPAT_VER_MIN(6, 6, 0)': taken for v7.3 (WQCOMPAT_VER_MIN() evaluated from its definition)"
VER_MIN_ELSE = ("under the #else of '#if WQCOMPAT_VER_MIN(6, 6, 0)': taken for v6.1 (WQCOMPAT_VER_MIN() "
                "evaluated from its definition)")
UNKNOWN = ("under '#if WQCOMPAT_UNKNOWN_MIN(6, 6, 0)': not decided for {v} (WQCOMPAT_UNKNOWN_MIN() is "
           "defined nowhere in the scanned files or the kernel's headers), so this branch is judged as compiled")
VF = ("under '#ifdef __WQCOMPAT_VF__': __WQCOMPAT_VF__ is defined nowhere in the scanned files, the "
      "kernel's headers or the Kbuild file (only a -D on the compiler's command line enables this code)")

def compat_scan(version):
    doc, result = scan_json("--kernel-version", version, "--no-cache", COMPAT)
    return doc, {(f["path"], f["line"], f["rule"]): [(s["line"], s["note"]) for s in f["chain"]]
                 for f in doc["findings"]}


def test_compat_macros_decided_like_the_version_test():
    """WQCOMPAT_VER_MIN(a, b, c) expands to a LINUX_VERSION_CODE comparison: its #if decides
    like the comparison (create_workqueue() in its #else only on 6.1, the alloc_workqueue()
    only from 6.6), and WQCOMPAT_NEW_QUEUES, defined as WQCOMPAT_VER_MIN(6, 17, 0), picks
    system_percpu_wq on 7.3: the system_wq of its #else is not reported there, nor is the
    one in the #else of the #ifdef configure decides, whose other branch uses system_percpu_wq.
    A version test through a macro defined nowhere is undecided and the chain says so; so is
    the __X__ name nothing defines."""
    _, old = compat_scan("6.1")
    _, new = compat_scan("7.3")
    assert sorted(old) == [("wqcompat.c", 25, "legacy-create-workqueue"),
                           ("wqcompat.c", 28, "legacy-create-workqueue"),
                           ("wqcompat.c", 31, "unbound-max-active-cpu-count")]
    assert sorted(new) == [("wqcompat.c", 23, "unbound-max-active-cpu-count"),
                           ("wqcompat.c", 28, "legacy-create-workqueue"),
                           ("wqcompat.c", 31, "unbound-max-active-cpu-count")]
    assert (22, VER_MIN_ELSE) in old[("wqcompat.c", 25, "legacy-create-workqueue")]
    assert (22, VER_MIN_TAKEN) in new[("wqcompat.c", 23, "unbound-max-active-cpu-count")]
    for v, got in (("v6.1", old), ("v7.3", new)):
        assert (27, UNKNOWN.format(v=v)) in got[("wqcompat.c", 28, "legacy-create-workqueue")]
        assert (30, VF) in got[("wqcompat.c", 31, "unbound-max-active-cpu-count")]


def test_compat_configure_run_decides_nothing_more(tmp_path):
    """Once configure has made its header from the template, the macro is an ordinary one:
    here the header leaves it undefined, which a -D of the module's Kbuild may still change,
    so the #if stays undecided, and the system_wq of its #else, whose other branch uses
    system_percpu_wq, is still the module's code for other kernels: not reported."""
    mod = tmp_path / "wqcompat"
    shutil.copytree(COMPAT, mod)
    (mod / "wqcompat_config.h").write_text("/* HAVE_SYSTEM_PERCPU_WQ not found */\n")
    doc, _ = scan_json("--kernel-version", "7.3", "--no-cache", mod)
    assert [f["line"] for f in doc["findings"] if f["rule"] == "deprecated-system-workqueue"] == []


# -- sources a module takes from its package through symbolic links ---------------------------
LINKED_C = ('#include <linux/workqueue.h>\n'
            'void {name}(void)\n{{\n\twq = alloc_workqueue("{name}", WQ_UNBOUND, num_online_cpus());\n}}\n')


def linked_package(base: Path, marker: bool = True) -> Path:
    """pkg/{dkms.conf, mod/, mod2/, common/, shared/}: mod/ and mod2/ build common/ through a
    link each, mod/ also shared/extra.c through a file link, and has a link out of the
    package and one that leads nowhere."""
    pkg = base / "pkg"
    for d in ("mod", "mod2", "common", "shared"):
        (pkg / d).mkdir(parents=True)
    if marker:
        (pkg / "dkms.conf").write_text('PACKAGE_NAME="wqpkg"\n')
    (pkg / "mod" / "Kbuild").write_text("obj-m += wqpkg.o\n")
    (pkg / "mod" / "main.c").write_text("int wqpkg_main;\n")
    (pkg / "common" / "wq.c").write_text(LINKED_C.format(name="wqpkg_common"))
    (pkg / "shared" / "extra.c").write_text(LINKED_C.format(name="wqpkg_extra"))
    (base / "elsewhere").mkdir()
    (base / "elsewhere" / "far.c").write_text(LINKED_C.format(name="wqpkg_far"))
    (pkg / "mod" / "common").symlink_to("../common")
    (pkg / "mod2" / "common").symlink_to("../common")
    (pkg / "mod" / "extra.c").symlink_to("../shared/extra.c")
    (pkg / "mod" / "far").symlink_to("../../elsewhere")
    (pkg / "mod" / "gone.c").symlink_to("../nothing.c")
    return pkg


def test_linked_sources_inside_the_package_are_scanned_once(tmp_path):
    pkg = linked_package(tmp_path)
    doc, result = scan_json("--kernel-version", "7.3", "--no-cache", pkg / "mod")
    assert doc["root"] == str(pkg)  # the findings are where the files lie
    assert [(f["path"], f["line"]) for f in doc["findings"]] == [("common/wq.c", 4), ("shared/extra.c", 4)]
    assert "symbolic links not followed (they lead outside the package: the directory holding dkms.conf, "\
           f"else the one scanned): {pkg}/mod/far -> ../../elsewhere, " \
           f"{pkg}/mod/gone.c -> ../nothing.c (leads nowhere)" in result.stderr
    # The whole package: each file once, though two module directories link to common/.
    doc, _ = scan_json("--kernel-version", "7.3", "--no-cache", pkg)
    assert [(f["path"], f["line"]) for f in doc["findings"]] == [("common/wq.c", 4), ("shared/extra.c", 4)]


def test_without_a_package_links_out_of_the_directory_are_said(tmp_path):
    pkg = linked_package(tmp_path, marker=False)
    doc, result = scan_json("--kernel-version", "7.3", "--no-cache", pkg / "mod")
    assert doc["findings"] == []
    assert "symbolic links not followed (they lead outside the package: the directory holding dkms.conf, else the one scanned): " \
           f"{pkg}/mod/common -> ../common, {pkg}/mod/far -> ../../elsewhere, {pkg}/mod/extra.c -> " \
           "../shared/extra.c and 1 more" in result.stderr


# -- a fix that builds on every kernel the module supports (fixtures/multikernel) -------------
MULTI = FIXTURES / "multikernel"
GUARD = """#include <linux/workqueue.h>
#include <linux/version.h>

/* WQ_PERCPU and system_percpu_wq came with v6.17: before, these mean the same. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 17, 0)
#define WQ_PERCPU 0
#define system_percpu_wq system_wq
#endif

static struct workqueue_struct *wqmulti_wq;
"""


def build_module(src: Path, build: Path, work: Path) -> subprocess.CompletedProcess:
    """make M= of a copy of src against the prepared O= directory build."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work)
    return subprocess.run(["make", "-s", "-C", str(build), f"M={work}", "KBUILD_MODPOST_WARN=1", "modules"],
                          capture_output=True, text=True, timeout=600, env=dict(os.environ, LANG="C", LC_MESSAGES="C", LC_CTYPE="C"))


@pytest.mark.kernel
def test_fix_of_a_module_builds_on_every_kernel_it_supports(linux_6_1, linux_7_3, tmp_path):
    """wqmulti builds for 6.1 and later (dkms.conf). Fixed against 7.3 it gets WQ_PERCPU and
    system_percpu_wq, which 6.1 lacks, so the fix adds the version guard: the module builds
    on 6.1 and 7.3 before the fix and after it, and 7.3 has nothing more to report. Without
    the guard (--oldest-kernel 6.17 says none is needed) 6.1 no longer builds."""
    if not shutil.which("make") or not shutil.which("gcc"):
        pytest.skip("needs make and gcc")
    from kbuild import prepared_build
    from helpers import run
    builds = {"6.1": prepared_build(linux_6_1, "6.1"), "7.3": prepared_build(linux_7_3, "7.3")}
    mod = tmp_path / "wqmulti"
    shutil.copytree(MULTI, mod)
    for series, build in builds.items():
        got = build_module(mod, build, tmp_path / f"before-{series}")
        assert got.returncode == 0, got.stderr[-3000:]
        assert (tmp_path / f"before-{series}" / "wqmulti.ko").is_file()
    fixed = run("fix", "--apply", "--target", "mainline", "--kernel-tree", linux_7_3, mod)
    assert fixed.exit_code == 0, fixed.stderr
    assert ("wqlint: the module builds from v6.1 (dkms.conf BUILD_EXCLUSIVE_KERNEL_MIN): WQ_PERCPU, "
            "system_percpu_wq are given a version guard in wqmulti.c") in fixed.stderr.splitlines()
    text = (mod / "wqmulti.c").read_text()
    assert GUARD in text
    assert '\twqmulti_wq = alloc_workqueue("wqmulti", WQ_MEM_RECLAIM | WQ_PERCPU, 0);\n' in text
    assert "\tqueue_work(system_percpu_wq, &wqmulti_work);\n" in text
    for series, build in builds.items():
        got = build_module(mod, build, tmp_path / f"after-{series}")
        assert got.returncode == 0, got.stderr[-3000:]
        assert (tmp_path / f"after-{series}" / "wqmulti.ko").is_file()
    assert scan_against(mod, linux_7_3)["findings"] == []
    # The same fix without the guard: 6.1 has no WQ_PERCPU.
    bare = tmp_path / "bare"
    shutil.copytree(MULTI, bare)
    assert run("fix", "--apply", "--target", "mainline", "--oldest-kernel", "6.17", "--kernel-tree", linux_7_3,
               bare).exit_code == 0
    assert "LINUX_VERSION_CODE" not in (bare / "wqmulti.c").read_text()
    got = build_module(bare, builds["6.1"], tmp_path / "bare-6.1")
    assert got.returncode != 0 and "'WQ_PERCPU' undeclared" in got.stderr


def test_a_plain_name_defined_nowhere_is_said(tmp_path):
    """`#if NAME` with NAME defined nowhere is 0 for the compiler, unless a -D sets it: the
    code is still judged, and the chain says which way a -D would change it."""
    (tmp_path / "p.c").write_text(
        '#include <linux/workqueue.h>\nvoid f(void)\n{\n#if WQPLAIN_LEVEL >= 2\n'
        '\twq = alloc_workqueue("a", WQ_UNBOUND, num_online_cpus());\n#endif\n#if !WQPLAIN_LEVEL\n'
        '\twq = alloc_workqueue("b", WQ_UNBOUND, num_online_cpus());\n#endif\n}\n')
    doc, _ = scan_json("--kernel-version", "7.3", "--no-cache", tmp_path)
    said = "WQPLAIN_LEVEL is defined nowhere in the scanned files, the kernel's headers or the Kbuild file"
    assert [[(s["line"], s["note"]) for s in f["chain"] if s["note"].startswith("under")]
            for f in doc["findings"]] == [
        [(4, f"under '#if WQPLAIN_LEVEL >= 2': {said} (only a -D on the compiler's command line enables this code)")],
        [(7, f"under '#if !WQPLAIN_LEVEL': {said} (a -D on the compiler's command line disables this code)")]]


@pytest.mark.kernel
def test_compat_pair_on_a_kernel_with_the_replacement_backported(linux_6_12):
    """Debian's 6.12.117 has system_percpu_wq, but the module's WQCOMPAT_NEW_QUEUES (a
    version test of 6.17) takes the system_wq branch there: reported, saying that the other
    branch uses the replacement, and left alone by fix."""
    from helpers import run
    doc, _ = scan_json("--kernel-tree", linux_6_12, "--no-cache", COMPAT)
    got = {(f["line"], f["rule"]): f for f in doc["findings"] if f["rule"] == "deprecated-system-workqueue"}
    # (42: the #else of an #ifdef configure decides, whose other branch uses the replacement:
    # the module builds that one here, so it is not reported)
    assert sorted(got) == [(37, "deprecated-system-workqueue")]
    assert got[(37, "deprecated-system-workqueue")]["message"].endswith(
        "(system_wq -> system_percpu_wq; the other branch of '#if WQCOMPAT_NEW_QUEUES' already uses "
        "system_percpu_wq)")
    assert [(s["line"], s["note"]) for s in got[(37, "deprecated-system-workqueue")]["chain"]][1] == (
        34, "under the #else of '#if WQCOMPAT_NEW_QUEUES': taken for v6.12.117 (WQCOMPAT_NEW_QUEUES, "
            "WQCOMPAT_VER_MIN() evaluated from its definition)")
    fixed = run("fix", "--diff", "--target", "mainline", "--rule", "deprecated-system-workqueue",
                "--kernel-tree", linux_6_12, COMPAT)
    assert fixed.exit_code == 0 and fixed.stdout == ""
    assert "  wqcompat.c:37:2\n" in fixed.stderr and "wqcompat.c:42" not in fixed.stderr


def test_fix_from_a_saved_scan_of_a_linked_module_directory(tmp_path):
    """fix --findings takes the scan of mod/ as it was made: with the files its links lead to."""
    pkg = linked_package(tmp_path)
    (pkg / "common" / "percpu.c").write_text(
        '#include <linux/workqueue.h>\nvoid g(void)\n{\n\twq = alloc_workqueue("g", WQ_MEM_RECLAIM, 0);\n}\n')
    saved = tmp_path / "scan.json"
    assert run_cli("scan", "--kernel-version", "7.3", "--no-cache", "--format", "json", "-o", saved,
                   pkg / "mod").exit_code == 1
    got = run_cli("fix", "--diff", "--target", "mainline", "--kernel-version", "7.3", "--findings", saved,
                  pkg / "mod")
    assert got.exit_code == 0, got.stderr
    fresh = run_cli("fix", "--diff", "--target", "mainline", "--kernel-version", "7.3", pkg / "mod")
    assert got.stdout == fresh.stdout
    assert '+\twq = alloc_workqueue("g", WQ_MEM_RECLAIM | WQ_PERCPU, 0);\n' in got.stdout
    assert got.stdout.startswith("diff --git a/common/percpu.c b/common/percpu.c\n")
    assert "not fixed [unbound-max-active-cpu-count] (2)" in got.stderr


def test_review_of_a_linked_module_directory_says_what_it_does_not_read(tmp_path):
    pkg = linked_package(tmp_path)
    patch = tmp_path / "0001.patch"
    patch.write_text("--- a/main.c\n+++ b/main.c\n@@ -1 +1,2 @@\n int wqpkg_main;\n+int wqpkg_other;\n")
    got = run_cli("review", "--kernel-version", "7.3", "--no-cache", "--tree", pkg / "mod", patch)
    assert got.exit_code == 0, got.stderr
    assert (f"wqlint: a review reads only {pkg / 'mod'}: the sources its symbolic links lead to are not "
            f"reviewed ({pkg / 'common'}, {pkg / 'shared' / 'extra.c'}); scan the package for them") in got.stderr


def test_bulk_of_a_module_is_one_patch_named_after_it(tmp_path):
    """A module has no MAINTAINERS: bulk makes one patch of every fix, prefixed with the
    module's name from dkms.conf, with no Cc, and it applies to the module as `fix` would
    change it."""
    import subprocess
    from helpers import run
    mod = tmp_path / "wqmulti"
    shutil.copytree(MULTI, mod)
    out = tmp_path / "out"
    got = run("bulk", "--target", "mainline", "--kernel-version", "7.3", "--out", out,
              "--date", "Thu, 26 Nov 2026 10:00:00 +0000", mod)
    assert got.exit_code == 0, got.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names[0] == "0000-cover-letter.patch" and names[-1] == "fix.cocci" and len(names) == 3, names
    patch = (out / names[1]).read_text()
    assert re.search(r"(?m)^Subject: \[PATCH 1/1\] wqmulti: ", patch) and "\nCc:" not in patch
    cover = (out / names[0]).read_text()
    assert ", for the module wqmulti (1 patch)." in " ".join(cover.split())
    assert "\nPatches:\n\n  1/1 wqmulti: 1 file," in cover
    diff = run("fix", "--diff", "--target", "mainline", "--kernel-version", "7.3", mod).stdout
    assert diff and patch[patch.index("\ndiff --git ") + 1:] == diff + "-- \nwqlint\n\n"
    applied = subprocess.run(["patch", "-p1", "-s", "-i", str(out / names[1])], cwd=mod, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert run("fix", "--diff", "--target", "mainline", "--kernel-version", "7.3", mod).stdout == ""
    refused = run("bulk", "--target", "mainline", "--kernel-version", "7.3", "--out", tmp_path / "again",
                  "--verify", mod)
    assert refused.exit_code == 2 and f"--verify builds the objects of a kernel tree; {mod} is a module" \
        in refused.stderr
