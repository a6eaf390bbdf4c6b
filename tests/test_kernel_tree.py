"""--kernel-tree DIR (and KDIR): a module outside any kernel tree is scanned against the
kernel it builds for. Small made-up kernels here; the real trees in test_module.py."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from helpers import run, scan_json

from wqlint.scan.kerneltree import KernelTreeError, open_tree

# A kernel without WQ_PERCPU (like v6.1) whose WQ_UNBOUND has another value than the
# built-in description's, so that a finding shows which header was read.
OLD_API = """\
#ifndef _LINUX_WORKQUEUE_H
#define _LINUX_WORKQUEUE_H
enum {
\tWQ_UNBOUND\t\t= 1 << 1,
\tWQ_MEM_RECLAIM\t\t= 1 << 3,
\tWQ_HIGHPRI\t\t= 1 << 4,
\t__WQ_ORDERED\t\t= 1 << 17,
\t__WQ_LEGACY\t\t= 1 << 18,
};
#define WQ_MAX_ACTIVE\t\t512
#define WQDEMO_KERNEL_FLAGS\t(WQ_UNBOUND | WQ_HIGHPRI)
#endif
"""
MAKEFILE = "# SPDX-License-Identifier: GPL-2.0\nVERSION = {0}\nPATCHLEVEL = {1}\nSUBLEVEL = {2}\nEXTRAVERSION =\n"
MODULE_C = """\
#include <linux/workqueue.h>

static struct workqueue_struct *a, *b;

int demo_init(void)
{
\ta = alloc_workqueue("demo_a", WQ_MEM_RECLAIM, 0);
\tb = alloc_workqueue("demo_b", WQDEMO_KERNEL_FLAGS, num_online_cpus());
\treturn 0;
}
"""


def source_tree(root, version=(6, 1, 90)):
    (root / "include" / "linux").mkdir(parents=True)
    (root / "include" / "linux" / "workqueue.h").write_text(OLD_API)
    (root / "Makefile").write_text(MAKEFILE.format(*version))
    return root


@pytest.fixture()
def module(tmp_path):
    mod = tmp_path / "module"
    mod.mkdir()
    (mod / "Kbuild").write_text("obj-m += demo.o\n")
    (mod / "demo.c").write_text(MODULE_C)
    return mod


def test_module_against_a_kernel_tree(tmp_path, module):
    kdir = source_tree(tmp_path / "linux")
    data, result = scan_json("-j", "1", "--kernel-tree", kdir, module)
    assert data["root"] == str(module)
    assert (data["kernel_version"], data["kernel_version_source"]) == ("v6.1.90", str(kdir / "Makefile"))
    # No WQ_PERCPU in this kernel: no missing-affinity-flag; the flags macro is the kernel's.
    assert [(f["rule"], f["path"], f["line"]) for f in data["findings"]] == [
        ("unbound-max-active-cpu-count", "demo.c", 8)]
    assert result.stderr == ""  # no note: the kernel was given
    # Without it, for v7.3: the built-in description has WQ_PERCPU.
    data, _ = scan_json("-j", "1", "--kernel-version", "7.3", module, env={"KDIR": ""})
    assert [(f["rule"], f["line"]) for f in data["findings"]] == [
        ("missing-affinity-flag", 7), ("unbound-max-active-cpu-count", 8)]


def test_kdir_from_the_environment(tmp_path, module):
    kdir = source_tree(tmp_path / "linux")
    data, _ = scan_json("-j", "1", module, env={"KDIR": str(kdir)})
    assert data["kernel_version"] == "v6.1.90"
    assert [f["rule"] for f in data["findings"]] == ["unbound-max-active-cpu-count"]


def test_without_a_kernel_tree_one_note_names_the_builtin_description(module):
    """The note says the description is mainline's, what a kernel of the series is known
    to have beyond it (Debian's 6.12.117: WQ_PERCPU and the split system queues), and how to
    have the real headers read."""
    how = ("a stable or distribution kernel may have later changes{known}: to read the API of the kernel "
           "the module builds for, give its headers, --kernel-tree /lib/modules/$(uname -r)/build (package "
           "linux-headers-$(uname -r))\n")
    result = run("scan", "-j", "1", "--format", "json", module, env={"KDIR": ""})
    assert result.stderr == (
        "wqlint: no kernel tree given (--kernel-tree DIR or KDIR): using wqlint's built-in description of "
        "the mainline v7.3 workqueue API and its semantics (--kernel-version); " + how.format(known=""))
    result = run("scan", "-j", "1", "--kernel-version", "6.12.117", "--format", "json", module, env={"KDIR": ""})
    assert result.stderr == (
        "wqlint: no kernel tree given (--kernel-tree DIR or KDIR): using wqlint's built-in description of "
        "the mainline v6.12 workqueue API and its semantics; " + how.format(
            known=" (Debian's 6.12.117 has WQ_PERCPU, system_percpu_wq and system_dfl_wq from v6.17)"))
    result = run("scan", "-j", "1", "--kernel-version", "6.1", "--format", "json", module, env={"KDIR": ""})
    assert result.stderr == ("wqlint: no kernel tree given (--kernel-tree DIR or KDIR): using wqlint's built-in "
                             "description of the mainline v6.1 workqueue API and its semantics; "
                             + how.format(known=""))
    # v6.1 has no WQ_PERCPU: no missing-affinity-flag.
    assert [(f["rule"], f["line"]) for f in json.loads(result.stdout)["findings"]] == [
        ("unbound-max-active-cpu-count", 8)]


@pytest.mark.parametrize("given,problem", [
    ("nowhere", "--kernel-tree {tmp}/nowhere: no such directory"),
    ("empty", "--kernel-tree {tmp}/empty: not a kernel tree or headers directory "
              "(no include/linux/workqueue.h there or in its source)"),
])
@pytest.mark.parametrize("how", ["option", "KDIR"])
@pytest.mark.parametrize("command", ["scan", "fix", "review"])
def test_a_bad_kernel_tree_is_one_error_line(tmp_path, module, given, problem, how, command):
    (tmp_path / "empty").mkdir()
    kdir = str(tmp_path / given)
    args = {"scan": ["scan", module], "fix": ["fix", "--diff", "--target", "mainline", module],
            "review": ["review", "--tree", module, os.devnull]}[command]
    if how == "option":
        result = run(*args[:1], "--kernel-tree", kdir, *args[1:])
    else:
        result = run(*args, env={"KDIR": kdir})
    suffix = " (from KDIR)" if how == "KDIR" else ""
    assert (result.exit_code, result.stdout, result.stderr) == (
        2, "", "Error: " + problem.format(tmp=tmp_path) + suffix + "\n")


def test_a_kernel_tree_for_paths_inside_another_kernel_tree(tmp_path):
    mine = source_tree(tmp_path / "mine", (6, 12, 1))
    (mine / "drivers").mkdir()
    (mine / "drivers" / "x.c").write_text(MODULE_C)
    other = source_tree(tmp_path / "other")
    result = run("scan", "-j", "1", "--kernel-tree", other, mine / "drivers")
    assert (result.exit_code, result.stderr) == (
        2, f"Error: {mine / 'drivers'} is in the kernel tree {mine}: --kernel-tree {other} is for modules "
           "outside a kernel tree\n")
    # KDIR is set for Kbuild; a scan inside a kernel tree uses that tree.
    data, _ = scan_json("-j", "1", mine / "drivers", env={"KDIR": str(other)})
    assert data["kernel_version"] == "v6.12.1"
    # The same tree given as --kernel-tree is no conflict.
    data, _ = scan_json("-j", "1", "--kernel-tree", mine, mine / "drivers")
    assert data["kernel_version"] == "v6.12.1"


# -- layouts ----------------------------------------------------------------------------------
def test_build_directory_with_a_source_link(tmp_path):
    src = source_tree(tmp_path / "linux")
    out = tmp_path / "build"
    (out / "include" / "generated").mkdir(parents=True)
    (out / "include" / "generated" / "utsrelease.h").write_text('#define UTS_RELEASE "6.1.90"\n')
    (out / "Makefile").write_text(f"# Automatically generated by {src}/Makefile: don't edit\n"
                                  f"include {src}/Makefile\n")
    (out / "source").symlink_to(src)
    tree = open_tree(str(out))
    assert tree.roots == [out, src]
    assert (tree.version, tree.version_from) == ((6, 1, 90), str(src / "Makefile"))
    assert tree.find("include/linux/workqueue.h") == src / "include" / "linux" / "workqueue.h"
    assert tree.find("include/generated/utsrelease.h") == out / "include" / "generated" / "utsrelease.h"


def test_debian_linux_headers_layout(tmp_path, module):
    """/lib/modules/V/build -> /usr/src/linux-headers-V (the flavour's generated headers),
    whose sources are in the sibling linux-headers-...-common."""
    usr = tmp_path / "usr" / "src"
    common = source_tree(usr / "linux-headers-6.1.0-31-common", (6, 1, 128))
    (common / "arch" / "x86" / "include" / "asm").mkdir(parents=True)
    flavour = usr / "linux-headers-6.1.0-31-amd64"
    (flavour / "include" / "config").mkdir(parents=True)
    (flavour / "include" / "config" / "kernel.release").write_text("6.1.0-31-amd64\n")
    (flavour / "Makefile").write_text("# generated\n")
    build = tmp_path / "lib" / "modules" / "6.1.0-31-amd64" / "build"
    build.parent.mkdir(parents=True)
    build.symlink_to(flavour)
    tree = open_tree(str(build))
    assert tree.roots == [build, common]
    assert tree.include_dirs() == ["arch/x86/include", "include"]
    assert (tree.version, tree.version_from) == ((6, 1, 128), str(common / "Makefile"))
    data, _ = scan_json("-j", "1", "--kernel-tree", build, module)
    assert [(f["rule"], f["line"]) for f in data["findings"]] == [("unbound-max-active-cpu-count", 8)]


@pytest.mark.parametrize("rel,text,version", [
    ("include/generated/utsrelease.h", '#define UTS_RELEASE "6.6.30-rt1"\n', (6, 6, 30)),
    ("include/config/kernel.release", "6.9.0-rc2+\n", (6, 9, 0)),
])
def test_version_of_a_headers_directory_without_a_source_makefile(tmp_path, rel, text, version):
    kdir = tmp_path / "headers"
    (kdir / "include" / "linux").mkdir(parents=True)
    (kdir / "include" / "linux" / "workqueue.h").write_text(OLD_API)
    (kdir / rel).parent.mkdir(parents=True, exist_ok=True)
    (kdir / rel).write_text(text)
    tree = open_tree(str(kdir))
    assert (tree.version, tree.version_from) == (version, str(kdir / rel))


def test_no_version_anywhere_is_a_note(tmp_path, module):
    kdir = tmp_path / "headers"
    (kdir / "include" / "linux").mkdir(parents=True)
    (kdir / "include" / "linux" / "workqueue.h").write_text(OLD_API)
    result = run("scan", "-j", "1", "--kernel-tree", kdir, module)
    assert result.stderr == (f"wqlint: no kernel version in {kdir}: assuming v7.3 semantics "
                             "(use --kernel-version)\n")


def test_open_tree_errors(tmp_path):
    with pytest.raises(KernelTreeError):
        open_tree(str(tmp_path / "nothing"))


# -- #if decided for the target kernel --------------------------------------------------------
COMPAT_H = """\
#ifndef COMPAT_H
#define COMPAT_H
#include <linux/version.h>
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)
#define DEMO_FLAGS\tWQ_UNBOUND
#elif defined(WQDEMO_KERNEL_FLAGS)
#define DEMO_FLAGS\t0
#else
#define DEMO_FLAGS\tWQ_HIGHPRI
#endif
#endif
"""
COMPAT_C = """\
#include "compat.h"

int demo_init(void)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 6, 0) && defined(WQDEMO_KERNEL_FLAGS)
\ta = alloc_workqueue("old", WQ_UNBOUND, num_online_cpus());
#else
\ta = alloc_workqueue("new", WQ_UNBOUND, num_possible_cpus());
#endif
#ifndef WQDEMO_KERNEL_FLAGS
\tb = alloc_workqueue("not_compiled", WQ_UNBOUND, nr_cpu_ids);
#endif
\tc = alloc_workqueue("c", DEMO_FLAGS, num_online_cpus());
\treturn 0;
}
"""


@pytest.fixture()
def compat_module(tmp_path):
    mod = tmp_path / "compat"
    mod.mkdir()
    (mod / "Kbuild").write_text("obj-m += demo.o\n")
    (mod / "compat.h").write_text(COMPAT_H)
    (mod / "demo.c").write_text(COMPAT_C)
    return mod


@pytest.mark.parametrize("version,expected", [
    ((6, 1, 90), [("demo.c", 6, "unbound-max-active-cpu-count"), ("demo.c", 13, "percpu-max-active-cpu-count")]),
    ((6, 12, 3), [("demo.c", 8, "unbound-max-active-cpu-count"), ("demo.c", 13, "unbound-max-active-cpu-count")]),
])
def test_branches_not_compiled_for_the_kernel_are_not_reported(tmp_path, compat_module, version, expected):
    kdir = source_tree(tmp_path / "linux", version)
    data, _ = scan_json("-j", "1", "--kernel-tree", kdir, compat_module)
    assert [(f["path"], f["line"], f["rule"]) for f in data["findings"]] == expected
    chains = {f["line"]: [(s["path"], s["line"], s["note"]) for s in f["chain"]] for f in data["findings"]}
    show = "v" + ".".join(map(str, version))
    if version < (6, 6, 0):
        assert chains[6][1] == ("demo.c", 5, "under '#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 6, 0) && "
                                             f"defined(WQDEMO_KERNEL_FLAGS)': taken for {show}")
        # WQDEMO_KERNEL_FLAGS is defined in the kernel's header: the #elif branch, 0.
        assert chains[13][1] == ("compat.h", 7, "macro DEMO_FLAGS = '0' (under the #else of '#if LINUX_VERSION_CODE "
                                                f">= KERNEL_VERSION(6, 9, 0)': taken for {show}; under '#elif defined(WQDEMO_KERNEL_FLAGS)': "
                                                f"taken for {show})")
    else:
        assert chains[8][1] == ("demo.c", 5, "under the #else of '#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 6, 0) "
                                             f"&& defined(WQDEMO_KERNEL_FLAGS)': taken for {show}")
        assert chains[13][1] == ("compat.h", 5, "macro DEMO_FLAGS = 'WQ_UNBOUND' (under '#if LINUX_VERSION_CODE >= "
                                                f"KERNEL_VERSION(6, 9, 0)': taken for {show})")


def test_review_reads_the_branch_of_the_target_kernel(tmp_path, compat_module):
    kdir = source_tree(tmp_path / "linux")
    (compat_module / "demo.c").write_text(COMPAT_C.replace("\tc = alloc_workqueue(\"c\", DEMO_FLAGS, num_online_cpus());\n", ""))
    patch = tmp_path / "add.patch"
    patch.write_text(
        "From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n"
        "From: A <a@example.org>\nDate: Mon, 2 Nov 2026 10:00:00 +0000\nSubject: [PATCH] demo: c\n\n---\n"
        "diff --git a/demo.c b/demo.c\n--- a/demo.c\n+++ b/demo.c\n@@ -12,3 +12,4 @@ int demo_init(void)\n"
        " #endif\n+\tc = alloc_workqueue(\"c\", DEMO_FLAGS, num_online_cpus());\n \treturn 0;\n }\n")
    result = run("review", "--tree", compat_module, "--kernel-tree", kdir, "-j", "1", "--format", "rdjson", patch)
    assert result.exit_code == 1, result.stderr
    diags = json.loads(result.stdout)["diagnostics"]
    assert [(d["code"]["value"], d["location"]["range"]["start"]["line"]) for d in diags] == [
        ("percpu-max-active-cpu-count", 13)]


@pytest.mark.skipif(shutil.which(os.environ.get("SPATCH", "spatch")) is None, reason="spatch missing")
def test_coccinelle_engine_reads_the_kernel_tree(tmp_path, module):
    """spatch runs at the kernel's top, as make coccicheck M= does: WQ_PERCPU is looked up in
    the kernel's include/linux/workqueue.h, and the findings are named relative to the module."""
    old = source_tree(tmp_path / "old")
    new = source_tree(tmp_path / "new", (7, 3, 0))
    header = new / "include" / "linux" / "workqueue.h"
    header.write_text(header.read_text().replace("enum {\n", "enum {\n\tWQ_PERCPU\t\t= 1 << 8,\n"))
    args = ["scan", "--engine", "coccinelle", "-j", "1", "--format", "json"]
    got = {}
    for name, kdir in (("old", old), ("new", new)):
        result = run(*args, "--kernel-tree", kdir, module)
        doc = json.loads(result.stdout)
        assert doc["kernel_version_source"] == str(kdir / "Makefile"), result.stderr
        got[name] = [(f["rule"], f["path"], f["line"]) for f in doc["findings"]]
    assert got == {"old": [], "new": [("missing-affinity-flag", "demo.c", 7)]}
