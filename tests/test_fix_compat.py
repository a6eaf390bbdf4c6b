"""fix/compat.py: a fix for a module that builds for many kernels keeps building on the
oldest: the range read from the module, the version guard and where it goes."""
from __future__ import annotations

import shutil

import pytest

from conftest import FIXTURES
from helpers import run
from wqlint.fix import compat

MULTI = FIXTURES / "multikernel"
COMPAT = FIXTURES / "compat"


@pytest.mark.parametrize("dkms,oldest,source", [
    ('BUILD_EXCLUSIVE_KERNEL_MIN="4.18"\n', (4, 18, 0), "dkms.conf BUILD_EXCLUSIVE_KERNEL_MIN"),
    ('BUILD_EXCLUSIVE_KERNEL="^(6\\.([2-9][0-9]|1[2-9])|[7-9]\\.)"\n', (6, 12, 0), "dkms.conf BUILD_EXCLUSIVE_KERNEL"),
    ('BUILD_EXCLUSIVE_KERNEL="^(5\\.1[0-9]|6\\.)"\n', (5, 10, 0), "dkms.conf BUILD_EXCLUSIVE_KERNEL"),
])
def test_range_from_dkms_conf(tmp_path, dkms, oldest, source):
    (tmp_path / "dkms.conf").write_text('PACKAGE_NAME="m"\n' + dkms)
    span = compat.module_range(tmp_path)
    assert (span.oldest, span.source) == (oldest, source)
    assert span.lacks((6, 17)) is (oldest < (6, 17))


def test_range_from_the_modules_own_version_tests(tmp_path):
    (tmp_path / "a.c").write_text("#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 8, 0)\n#endif\n"
                                  "/* KERNEL_VERSION(2, 6, 0) in a comment does not count */\n")
    (tmp_path / "b.h").write_text("#elif LINUX_VERSION_CODE < KERNEL_VERSION(5, 15, 0)\n")
    span = compat.module_range(tmp_path)
    assert (span.oldest, span.below) == (None, (5, 15, 0))
    assert span.describe() == "before v5.15 too (its own LINUX_VERSION_CODE tests go down to v5.15)"
    assert span.lacks((6, 17))
    assert compat.module_range(tmp_path, (6, 17, 0)).lacks((6, 17)) is False  # --oldest-kernel wins


def test_nothing_known_assumes_older_kernels(tmp_path):
    (tmp_path / "a.c").write_text("int x;\n")
    assert compat.module_range(tmp_path).lacks((6, 17))


@pytest.mark.parametrize("text,expected", [
    # after the last #include of the top, before the code
    ("// SPDX\n#include <linux/module.h>\n#include <linux/workqueue.h>\n\nint x;\n",
     "// SPDX\n#include <linux/module.h>\n#include <linux/workqueue.h>\n#include <linux/version.h>\n\n{g}\nint x;\n"),
    # a header with an include guard, an #include in an #ifdef block, a continued #define
    ("/* c */\n#ifndef H\n#define H\n#include <linux/version.h>\n#ifdef X\n#include <x.h>\n#endif\n"
     "#define F(a) \\\n\tfoo(a)\nint x;\n#endif\n",
     "/* c */\n#ifndef H\n#define H\n#include <linux/version.h>\n#ifdef X\n#include <x.h>\n#endif\n"
     "#include <linux/workqueue.h>\n\n{g}\n#define F(a) \\\n\tfoo(a)\nint x;\n#endif\n"),
    # no #include: after the leading comment
    ("/*\n * c\n */\nint x;\n",
     "/*\n * c\n */\n#include <linux/version.h>\n#include <linux/workqueue.h>\n\n{g}\nint x;\n"),
])
def test_guard_goes_after_the_includes(text, expected):
    guard = ("/* WQ_PERCPU came with v6.17: before, these mean the same. */\n"
             "#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 17, 0)\n#define WQ_PERCPU 0\n#endif\n")
    assert compat.guarded(text, ["WQ_PERCPU"]) == expected.format(g=guard)


def test_needed_only_for_names_the_fix_brings_and_the_module_lacks():
    span = compat.Range((6, 1, 0), None, "x")
    before = "f(system_wq, WQ_PERCPU);\n"
    after = "f(system_percpu_wq, WQ_PERCPU);\n"
    assert compat.needed(before, after, span) == ["system_percpu_wq"]
    own = "#define system_percpu_wq system_wq\n"
    assert compat.needed(own + before, own + after, span) == []
    assert compat.needed(before, after, compat.Range((6, 17, 0), None, "x")) == []


def test_fix_diff_of_a_module_is_guarded_without_a_kernel_tree(tmp_path):
    mod = tmp_path / "wqmulti"
    shutil.copytree(MULTI, mod)
    got = run("fix", "--diff", "--target", "mainline", "--kernel-version", "7.3", mod)
    assert got.exit_code == 0, got.stderr
    assert "+#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 17, 0)\n+#define WQ_PERCPU 0\n" \
           "+#define system_percpu_wq system_wq\n+#endif\n" in got.stdout
    # Inside a kernel tree there is one kernel: no guard (tests/test_fix.py).


def test_a_slice_of_a_kernel_tree_is_not_a_module(tmp_path):
    """A directory whose top Makefile names the kernel's version is a slice of that kernel
    (the scan reads its version there): its fix needs no guard for older kernels."""
    mod = tmp_path / "slice"
    shutil.copytree(MULTI, mod)
    (mod / "Makefile").write_text("VERSION = 7\nPATCHLEVEL = 3\nSUBLEVEL = 0\n")
    got = run("fix", "--diff", "--target", "mainline", mod)
    assert got.exit_code == 0, got.stderr
    assert "+\t" in got.stdout and "LINUX_VERSION_CODE" not in got.stdout


def test_a_compat_branch_the_module_chooses_by_configure_is_left_alone(tmp_path):
    """wqcompat.c's flush_workqueue(system_wq) is in the #else of an #ifdef that configure
    decides, whose other branch already uses system_percpu_wq: on a kernel with the
    replacement the module builds that other branch, so the line is neither reported nor
    rewritten (a hand edit there would break the kernels it is for). The same call with no
    such #if around it is both."""
    import json
    got = run("scan", "--format", "json", "--kernel-version", "7.3", "--no-cache", COMPAT)
    assert [f["line"] for f in json.loads(got.stdout)["findings"]
            if f["rule"] == "deprecated-system-workqueue"] == []
    fixed = run("fix", "--diff", "--target", "mainline", "--kernel-version", "7.3", "--rule",
                "deprecated-system-workqueue", COMPAT)
    assert fixed.exit_code == 0 and fixed.stdout == "" and "; 0 not fixed\n" in fixed.stderr
    plain = tmp_path / "plain"
    shutil.copytree(COMPAT, plain)
    c = plain / "wqcompat.c"
    c.write_text(c.read_text().replace("#ifdef HAVE_SYSTEM_PERCPU_WQ\n\tflush_workqueue(system_percpu_wq);\n#else\n",
                                       "").replace("\tflush_workqueue(system_wq);\n#endif\n",
                                                   "\tflush_workqueue(system_wq);\n"))
    got = run("scan", "--format", "json", "--kernel-version", "7.3", "--no-cache", plain)
    assert [f["line"] for f in json.loads(got.stdout)["findings"]
            if f["rule"] == "deprecated-system-workqueue"] == [39]

HOSTILE_DKMS = {
    # nested repeats: Python's re would take time exponential in each of ~1000 release names
    "nested repeats": 'BUILD_EXCLUSIVE_KERNEL="(.*.*.*.*.*.*.*.*.*.*)*Z"\n',
    # a pattern read under re.M from each line start: quadratic in blank lines
    "blank lines": "\n" * 150_000 + "# the end\n",
    "a long value": 'PACKAGE_NAME="' + " " * 200_000 + '"x\n',
}


@pytest.mark.parametrize("case", sorted(HOSTILE_DKMS))
def test_hostile_dkms_conf_costs_no_more_than_its_length(tmp_path, case):
    from bounded import bounded

    mod = tmp_path / "wqmulti"
    shutil.copytree(MULTI, mod)
    (mod / "dkms.conf").write_text(HOSTILE_DKMS[case] + 'PACKAGE_NAME="wqmulti"\n')
    got = bounded(["fix", "--diff", "--target", "mainline", "--kernel-version", "7.3", mod], timeout=60)
    assert got.returncode == 0, got.stderr
    # nothing the pattern accepts: older kernels are assumed, the guard is written
    assert "+#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 17, 0)\n" in got.stdout


@pytest.mark.parametrize("text,expected", [
    ('PACKAGE_NAME="m"\n  BUILD_EXCLUSIVE_KERNEL_MIN = "5.4" \r\n',
     {"PACKAGE_NAME": "m", "BUILD_EXCLUSIVE_KERNEL_MIN": "5.4"}),
    ("PACKAGE_NAME=bare name\t\n", {"PACKAGE_NAME": "bare name"}),
    ('PACKAGE_NAME="a" # comment\nPACKAGE_NAME="a""b"\n', {}),
    ('PACKAGE_NAME="first"\nPACKAGE_NAME="last"\nOTHER_PACKAGE_NAME="x"\n', {"PACKAGE_NAME": "last"}),
])
def test_dkms_fields_read_line_by_line(tmp_path, text, expected):
    (tmp_path / "dkms.conf").write_text(text)
    assert compat._dkms_fields(tmp_path / "dkms.conf") == expected
