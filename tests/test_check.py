"""`wqlint check`, the checker for `make C=1 CHECK="wqlint check"`: the findings follow the
configuration the file is preprocessed under, values from other files come from the cached
tree analysis, and a finding says which CONFIG_ option it hangs on."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES
from helpers import run, scan_json

pytestmark = pytest.mark.skipif(not (shutil.which("sparse") and shutil.which("cpp")),
                                reason="needs Debian's sparse and cpp")

CHECK = FIXTURES / "check"
DEMO = CHECK / "demo.c"
WQLINT = Path(sys.executable).with_name("wqlint")
# What Kbuild passes a checker: $(CHECKFLAGS), then the c_flags that matter, then the file.
CHECKFLAGS = ["-D__linux__", "-Dlinux", "-D__STDC__", "-Dunix", "-D__unix__", "-Wbitwise",
              "-Wno-return-void", "-Wno-unknown-attribute", "--arch=x86_64", "-mlittle-endian", "-m64"]
C_FLAGS = ["-Wp,-MMD,demo/.demo.o.d", "-nostdinc", "-I", str(CHECK / "include"), "-D__KERNEL__",
           "-fno-strict-aliasing", "-O2", "-DKBUILD_MODNAME=\"demo\""]
UNBOUND_DETAIL = ("say whether a global or a per-scope limit is meant (on v7.3 max_active of an unbound "
                  "queue is system-wide (5797b1c18919) but fixed at the {cpus} seen at allocation, not "
                  "updated on CPU hotplug; with 96 CPUs up to {n} in-flight items{via})")
UNBOUND = "WQ_UNBOUND workqueue with max_active derived from a CPU count: " + UNBOUND_DETAIL
PERCPU = ("per-CPU workqueue with max_active derived from a CPU count: the limit applies on every CPU, "
          "so in-flight items grow with the square of the CPU count (per-CPU queue: max_active is per "
          "CPU on every kernel; with 96 CPUs max_active = 96, up to 96 x 96 = 9216 in-flight items{via})")


@pytest.fixture(autouse=True)
def build_dir(tmp_path, monkeypatch):
    """Every check runs where Kbuild would run it: in a build directory of its own, which is
    where the facts cache goes; and not inside a Kbuild environment."""
    for var in ("KBUILD_EXTMOD", "KBUILD_EXTMOD_OUTPUT", "srctree", "WQLINT_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    out = tmp_path / "build"
    out.mkdir()
    monkeypatch.chdir(out)
    return out


def check(*args):
    return run("check", *CHECKFLAGS, *C_FLAGS, *args)


def warnings(result):
    return [ln for ln in result.stderr.splitlines() if not ln.startswith(" ")]


def without_fix(result):
    """The checker's lines without the migration advice and the WQLINT_DEBUG notes."""
    return [ln for ln in result.stderr.splitlines() if not ln.startswith(("    fix: ", "wqlint check: "))]


# -- the configuration decides, and the finding says so -----------------------------------------
def test_unbound_when_the_option_is_set():
    result = check("-DCONFIG_WQLINT_DEMO_UNBOUND=1", DEMO)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert without_fix(result) == [
        f"{DEMO}:20:12: warning: "
        + UNBOUND.format(cpus="num_online_cpus()", n=96, via="")
        + " (with CONFIG_WQLINT_DEMO_UNBOUND=y) [unbound-max-active-cpu-count]",
        f"    {DEMO}:20: alloc_workqueue(flags '(WQ_UNBOUND | WQ_MEM_RECLAIM)', max_active 'max_active')",
        f"    {DEMO}:18: local 'max_active' = 'num_online_cpus()'",
        f"    {DEMO}:18: CPU count num_online_cpus()",
        f"    {DEMO}:8: '#ifdef CONFIG_WQLINT_DEMO_UNBOUND': CONFIG_WQLINT_DEMO_UNBOUND=y in this build"]


def test_percpu_when_the_option_is_not_set():
    result = check(DEMO)
    assert result.exit_code == 0, result.stderr
    assert without_fix(result) == [
        f"{DEMO}:20:12: warning: " + PERCPU.format(via="")
        + " (with CONFIG_WQLINT_DEMO_UNBOUND not set) [percpu-max-active-cpu-count]",
        f"    {DEMO}:20: alloc_workqueue(flags '(WQ_PERCPU | WQ_MEM_RECLAIM)', max_active 'max_active')",
        f"    {DEMO}:18: local 'max_active' = 'num_online_cpus()'",
        f"    {DEMO}:18: CPU count num_online_cpus()",
        f"    {DEMO}:8: '#ifdef CONFIG_WQLINT_DEMO_UNBOUND' ('#else' branch): "
        "CONFIG_WQLINT_DEMO_UNBOUND not set in this build"]


def test_undef_after_define_follows_the_command_line_order():
    result = check("-DCONFIG_WQLINT_DEMO_UNBOUND=1", "-UCONFIG_WQLINT_DEMO_UNBOUND", DEMO)
    assert result.exit_code == 0, result.stderr
    assert [w.rsplit(" ", 1)[-1] for w in warnings(result)] == ["[percpu-max-active-cpu-count]"]
    assert "(with CONFIG_WQLINT_DEMO_UNBOUND not set)" in warnings(result)[0]


def test_also_sparse_passes_sparse_output_through():
    result = check("--also-sparse", DEMO)
    assert result.exit_code == 0, result.stderr
    assert warnings(result) == [
        f"{DEMO}:21:24: warning: Using plain integer as NULL pointer",
        warnings(check(DEMO))[0]]


def test_a_file_without_allocations_is_not_scanned(tmp_path):
    plain = tmp_path / "plain.c"
    plain.write_text("#include <linux/workqueue.h>\nint plain(void) { return num_online_cpus(); }\n")
    result = check(plain)
    assert (result.exit_code, result.stderr) == (0, "")


# -- facts from other files ------------------------------------------------------------------------
@pytest.fixture()
def tree(tmp_path):
    """A copy of the fixture tree (pool/setup.c sets a field and defines a wrapper that
    pool/start.c uses), so that a test can change its sources."""
    dest = tmp_path / "tree"
    shutil.copytree(CHECK, dest, ignore=shutil.ignore_patterns(".wqlint-*"))
    return dest


def check_tree(tree, *args, env=None):
    return run("check", *CHECKFLAGS, "-nostdinc", "-I", str(tree / "include"), "-D__KERNEL__", *args,
               str(tree / "pool" / "start.c"), env=env)


def pool_lines(tree, n=48, io_unbound=False):
    start, setup = tree / "pool" / "start.c", tree / "pool" / "setup.c"
    io = (UNBOUND.format(cpus="num_possible_cpus()", n=96, via=" through pool_alloc_wq()")
          + " (with CONFIG_WQLINT_POOL_UNBOUND=y) [unbound-max-active-cpu-count]") if io_unbound else \
        (PERCPU.format(via=" through pool_alloc_wq()")
         + " (with CONFIG_WQLINT_POOL_UNBOUND not set) [percpu-max-active-cpu-count]")
    return [
        f"{start}:17:13: warning: " + UNBOUND.format(cpus="num_online_cpus()", n=n, via="")
        + " [unbound-max-active-cpu-count]",
        f"    {start}:17: alloc_workqueue(flags 'WQ_UNBOUND', max_active 'info->nr_workers')",
        f"    {start}:17: 'info' field 'nr_workers'",
        f"    {setup}:7: field 'nr_workers' = 'num_online_cpus() / {96 // n}'",
        f"    {setup}:7: CPU count num_online_cpus()",
        f"{start}:18:16: warning: " + io,
        f"    {start}:18: calls pool_alloc_wq()",
        f"    {setup}:12: alloc_workqueue(flags 'flags | WQ_MEM_RECLAIM', max_active 'max_active')",
        f"    {setup}:12: 'max_active' is parameter 3 of pool_alloc_wq()",
        f"    {start}:18: 'max_active' <- argument 3 'num_possible_cpus()' of pool_alloc_wq()",
        f"    {start}:18: CPU count num_possible_cpus()",
        f"    {start}:9: '#ifdef CONFIG_WQLINT_POOL_UNBOUND'"
        + (": CONFIG_WQLINT_POOL_UNBOUND=y in this build" if io_unbound
           else " ('#else' branch): CONFIG_WQLINT_POOL_UNBOUND not set in this build")]


def test_field_and_wrapper_from_another_file_need_the_facts(tree, build_dir):
    from wqlint import catalogue, check as check_mod
    inv = check_mod.parse_args([*CHECKFLAGS, "-nostdinc", "-I", str(tree / "include"), "-D__KERNEL__",
                                str(tree / "pool" / "start.c")])
    alone, _ = check_mod.check(inv, catalogue.load(None), use_facts=False)
    assert alone == []  # the unit alone: nr_workers is never assigned, pool_alloc_wq() unknown
    assert not (build_dir / ".wqlint-facts.json").exists()

    result = check_tree(tree)
    assert result.exit_code == 0, result.stderr
    assert without_fix(result) == pool_lines(tree)
    assert (build_dir / ".wqlint-facts.json").is_file()


def test_a_deeply_nested_file_elsewhere_in_the_tree_does_not_stop_the_check(tree, build_dir):
    """The tree analysis behind the facts walks every allocation, this one's 600 parentheses too."""
    deep = "(" * 600 + "num_online_cpus()" + ")" * 600
    (tree / "pool" / "deep.c").write_text(
        "#include <linux/workqueue.h>\n\nstatic struct workqueue_struct *deep_wq;\n\nint deep_init(void)\n{\n"
        f"\tint m = {deep};\n\n\tdeep_wq = alloc_workqueue(\"deep\", WQ_UNBOUND, m);\n"
        "\treturn deep_wq ? 0 : -1;\n}\n")
    result = check_tree(tree)
    assert result.exit_code == 0, result.stderr
    assert without_fix(result) == pool_lines(tree)
    assert (build_dir / ".wqlint-facts.json").is_file()


def test_wrapper_arguments_follow_the_configuration(tree):
    result = check_tree(tree, "-DCONFIG_WQLINT_POOL_UNBOUND")
    assert result.exit_code == 0, result.stderr
    assert without_fix(result) == pool_lines(tree, io_unbound=True)


def test_facts_are_reused_then_rebuilt_when_a_source_changes(tree, build_dir):
    facts = build_dir / ".wqlint-facts.json"
    debug = {"WQLINT_DEBUG": "1"}
    first = check_tree(tree, env=debug)
    assert f"wqlint check: facts: built {facts} for {tree} in " in first.stderr
    before = facts.stat()

    second = check_tree(tree, env=debug)
    assert f"wqlint check: facts: reused {facts}" in second.stderr.splitlines()
    after = facts.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert without_fix(second) == without_fix(first)

    setup = tree / "pool" / "setup.c"
    setup.write_text(setup.read_text().replace("num_online_cpus() / 2", "num_online_cpus() / 4"))
    third = check_tree(tree, env=debug)
    assert f"wqlint check: facts: built {facts} for {tree} in " in third.stderr
    assert facts.stat().st_ino != before.st_ino  # a new file, renamed over the old one
    assert without_fix(third) == pool_lines(tree, n=24)


def test_facts_are_taken_from_the_index_a_scan_kept(tree, build_dir, monkeypatch):
    """One analysis of the tree for scan, review and check: after `wqlint scan` of the tree,
    the facts are built from its index (wqlint.scan.store) without searching the tree."""
    from wqlint.scan import index
    scanned = run("scan", "--format", "json", tree)
    assert scanned.exit_code == 1, scanned.stderr

    searched = index.TreeIndex.fetch

    def no_search(self, tokens, defs=False):
        # (the checked unit itself, preprocessed into a directory of its own, is searched)
        assert Path(self.root).resolve() != tree.resolve(), f"searched the tree for {tokens}"
        return searched(self, tokens, defs)
    monkeypatch.setattr(index.TreeIndex, "fetch", no_search)
    result = check_tree(tree)
    assert result.exit_code == 0, result.stderr
    assert without_fix(result) == pool_lines(tree)
    assert (build_dir / ".wqlint-facts.json").is_file()


def test_a_new_file_next_to_the_sources_rebuilds_the_facts(tree, build_dir):
    debug = {"WQLINT_DEBUG": "1"}
    check_tree(tree, env=debug)
    (tree / "pool" / "more.c").write_text('#include "pool.h"\nvoid more(struct pool_info *i) { i->nr_workers = 1; }\n')
    again = check_tree(tree, env=debug)
    assert "wqlint check: facts: built " in again.stderr
    assert "other assignments reach it too" in again.stderr


def test_concurrent_checkers_build_the_facts_once(tree, build_dir):
    """make -j starts many checkers at once on a fresh build directory: one builds the facts
    (slowed down here so that the others really wait for its lock), the others read them."""
    args = [str(WQLINT), "check", *CHECKFLAGS, "-nostdinc", "-I", str(tree / "include"), "-D__KERNEL__",
            str(tree / "pool" / "start.c")]
    env = dict(os.environ, WQLINT_DEBUG="1", WQLINT_TEST_FACTS_DELAY="3")
    procs = [subprocess.Popen(args, cwd=build_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(6)]
    outs = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    assert [rc for _, _, rc in outs] == [0] * 6, [err for _, err, _ in outs]
    debug = [ln for _, err, _ in outs for ln in err.splitlines() if ln.startswith("wqlint check: facts:")]
    assert len([ln for ln in debug if ": facts: built " in ln]) == 1, debug
    assert len([ln for ln in debug if ": facts: reused " in ln]) == 5, debug
    assert any("(built by another checker)" in ln for ln in debug), debug
    findings = {tuple(ln for ln in err.splitlines() if not ln.startswith("wqlint check:")) for _, err, _ in outs}
    assert len(findings) == 1
    assert [ln for ln in next(iter(findings)) if not ln.startswith("    fix: ")] == pool_lines(tree)
    assert sorted(p.name for p in build_dir.iterdir()) == [".wqlint-facts.json", ".wqlint-facts.lock"]


def test_a_build_directory_that_cannot_hold_the_cache_is_one_note(tree, build_dir):
    """(A directory where the lock file should be: as root, chmod would not stop the write.)"""
    (build_dir / ".wqlint-facts.lock").mkdir()
    result = check_tree(tree)
    assert result.exit_code == 0
    assert without_fix(result) == []  # the unit alone knows neither value
    notes = [ln for ln in result.stderr.splitlines() if ln.startswith("wqlint check: ")]
    assert notes == [f"wqlint check: {tree / 'pool' / 'start.c'}: cannot create "
                     f"{build_dir / '.wqlint-facts.lock'}: Is a directory: values from other files "
                     "are not used"]


def test_the_command_takes_a_fast_path_with_the_same_output(build_dir):
    """`wqlint check` is dispatched before click is imported (wqlint.entry); what it prints
    is what the click command prints, and what it does not handle goes to click."""
    args = [*CHECKFLAGS, *C_FLAGS, "--cpus", "8", "-DCONFIG_WQLINT_DEMO_UNBOUND=1", str(DEMO)]
    fast = subprocess.run([str(WQLINT), "check", *args], cwd=build_dir, capture_output=True, text=True)
    slow = check("--cpus", "8", "-DCONFIG_WQLINT_DEMO_UNBOUND=1", DEMO)
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.exit_code, slow.stdout, slow.stderr)
    assert "with 8 CPUs up to 8 in-flight items" in fast.stderr
    bad = subprocess.run([str(WQLINT), "check", "--cpus", "0", str(DEMO)], capture_output=True, text=True)
    assert bad.returncode == 2 and "Invalid value for '--cpus'" in bad.stderr
    helped = subprocess.run([str(WQLINT), "check", "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "A checker for the kernel build" in helped.stdout


def test_a_failing_tree_analysis_does_not_break_the_build(tree, monkeypatch):
    from wqlint.check import facts

    def boom(*args, **kw):
        raise RuntimeError("boom")
    monkeypatch.setattr(facts, "build", boom)
    result = check_tree(tree)
    assert result.exit_code == 0
    assert result.stderr == (f"wqlint check: {tree / 'pool' / 'start.c'}: the tree analysis failed "
                             "(RuntimeError: boom): values from other files are not used\n")


# -- calls the unit shows expanded: create_*() macros, v7.x's alloc_hooks() and _noprof functions ----
CHECK7 = FIXTURES / "check7"
WQ7 = CHECK7 / "drv" / "wq7.c"


def scan_lines(root, *files):
    """What `wqlint scan` reports for files of root, as the checker prints it (sparse's format,
    paths as the checker is given them), without the migration advice."""
    from wqlint.finding import Finding, Report
    from wqlint.formatters import sparse
    doc, _ = scan_json(*files)
    findings = []
    for d in doc["findings"]:
        d = dict(d, path=str(root / d["path"]), chain=[dict(st, path=str(root / st["path"])) for st in d["chain"]])
        findings.append(Finding.from_dict(d))
    text = sparse.format(Report(root=str(root), findings=findings), None)
    return [ln for ln in text.splitlines() if not ln.startswith("    fix: ")]


def check7(*args, env=None):
    return run("check", *CHECKFLAGS, "-nostdinc", "-I", str(CHECK7 / "include"), "-D__KERNEL__", *args, WQ7,
               env=env)


def by_finding(lines):
    """The lines of each finding: its warning, then its chain."""
    out = []
    for ln in lines:
        if ln.startswith("    "):
            out[-1].append(ln)
        else:
            out.append([ln])
    return out


@pytest.mark.parametrize("profiling", [False, True], ids=["profiling-off", "profiling-on"])
def test_v7_allocations_are_seen_after_preprocessing(profiling):
    """v6.17+ (fda6add92438): alloc_workqueue(...) is alloc_hooks(alloc_workqueue_noprof(...)),
    which the unit holds three times per call; devm_alloc_workqueue() likewise (v7.1). Each
    call is reported once, at the name the source writes, as `wqlint scan` reports it, and
    how the API configures alloc_hooks() (CONFIG_MEM_ALLOC_PROFILING) is not the caller's."""
    result = check7(*(["-DCONFIG_MEM_ALLOC_PROFILING=1"] if profiling else []))
    assert result.exit_code == 0, result.stderr
    got = by_finding(without_fix(result))
    assert [f[0].split(": ")[0] + " " + f[0].rsplit(" ", 1)[-1] for f in got] == [
        f"{WQ7}:12:12 [unbound-max-active-cpu-count]", f"{WQ7}:13:14 [legacy-create-workqueue]",
        f"{WQ7}:14:14 [legacy-create-workqueue]", f"{WQ7}:14:14 [unbound-max-active-one]",
        f"{WQ7}:15:14 [legacy-create-workqueue]", f"{WQ7}:16:11 [percpu-max-active-cpu-count]"]
    assert "(with CONFIG_" not in result.stderr
    # The source's words, as scan has them: alloc_workqueue(), not alloc_workqueue_noprof().
    assert got[0][1:] == [f"    {WQ7}:12: alloc_workqueue(flags 'WQ_UNBOUND', max_active 'num_online_cpus()')",
                          f"    {WQ7}:12: CPU count num_online_cpus()"]
    assert got[-1][1:] == [f"    {WQ7}:16: devm_alloc_workqueue(flags 'WQ_PERCPU', max_active "
                           "'num_possible_cpus()')",
                           f"    {WQ7}:16: CPU count num_possible_cpus()"]
    # What scan reports for the file, the checker reports the same, chain and message.
    assert [ln for f in got for ln in f] == scan_lines(CHECK7, WQ7)


SYSQ = CHECK7 / "drv" / "sysq.c"


@pytest.mark.parametrize("extra", [False, True], ids=["option-off", "option-on"])
def test_deprecated_system_queues_are_reported_where_compiled(extra):
    """Work queued on system_wq / system_unbound_wq: what scan reports for the file, on the
    lines the configuration compiles, with the option a use hangs on; flush_workqueue(),
    a macro over __flush_workqueue() after cpp, is found at the call the source writes."""
    result = run("check", *CHECKFLAGS, "-nostdinc", "-I", str(CHECK7 / "include"), "-D__KERNEL__",
                 *(["-DCONFIG_SYSQ_EXTRA"] if extra else []), SYSQ)
    assert result.exit_code == 0, result.stderr
    got = by_finding(without_fix(result))
    scanned = by_finding(scan_lines(CHECK7, SYSQ))
    assert [f[0].split(": ")[0] for f in scanned] == [f"{SYSQ}:{n}:2" for n in (12, 13, 15)]
    if not extra:
        assert got == scanned[:2]
    else:
        assert got[:2] == scanned[:2]
        assert got[2][0] == scanned[2][0].replace(" [deprecated-system-workqueue]",
                                                  " (with CONFIG_SYSQ_EXTRA=y) [deprecated-system-workqueue]")
        assert got[2][1:] == scanned[2][1:] + [
            f"    {SYSQ}:14: '#ifdef CONFIG_SYSQ_EXTRA': CONFIG_SYSQ_EXTRA=y in this build"]


def test_legacy_calls_are_recovered_from_the_original_line_without_facts(build_dir):
    """Without the tree analysis, the create_*() macros are read from the unit's #defines:
    each macro where it is used and where its #define calls the next one."""
    from wqlint import catalogue, check as check_mod
    from wqlint.finding import Report
    from wqlint.formatters import sparse
    inv = check_mod.parse_args([*CHECKFLAGS, "-nostdinc", "-I", str(CHECK7 / "include"), "-D__KERNEL__",
                                str(WQ7)])
    findings, notes = check_mod.check(inv, catalogue.load(None), use_facts=False)
    assert notes == []
    wq_h = CHECK7 / "include" / "linux" / "workqueue.h"
    lines = sparse.format(Report(root="", findings=findings), None).splitlines()
    legacy = [f for f in by_finding(ln for ln in lines if not ln.startswith("    fix: "))
              if f[0].endswith("[legacy-create-workqueue]")]
    assert [f[1:] for f in legacy] == [
        [f"    {WQ7}:13: calls create_workqueue()",
         f"    {wq_h}:47: alloc_workqueue(flags '__WQ_LEGACY | WQ_MEM_RECLAIM | WQ_PERCPU', max_active '1')"],
        [f"    {WQ7}:14: calls create_freezable_workqueue()",
         f"    {wq_h}:49: alloc_workqueue(flags '__WQ_LEGACY | WQ_FREEZABLE | WQ_UNBOUND | WQ_ME...', "
         "max_active '1')"],
        [f"    {WQ7}:15: calls create_singlethread_workqueue()",
         f"    {wq_h}:52: calls alloc_ordered_workqueue()",
         # the flags as this unit expands them (scan shows the macro's own '(flags)')
         f"    {wq_h}:44: alloc_workqueue(flags 'WQ_UNBOUND | __WQ_ORDERED | (__WQ_LEGACY | WQ_M...', "
         "max_active '1')"]]
    assert [(f.line, f.col, f.message.split(" (")[-1]) for f in findings
            if f.rule_id == "legacy-create-workqueue"] == [
        (13, 14, "create_workqueue())"), (14, 14, "create_freezable_workqueue())"),
        (15, 14, "create_singlethread_workqueue())")]
    assert not (build_dir / ".wqlint-facts.json").exists()


def test_legacy_call_before_v6_17():
    """Up to v6.16 create_workqueue() expands to a call of the alloc_workqueue() function."""
    legacy = CHECK / "legacy.c"
    result = check(legacy)
    assert result.exit_code == 0, result.stderr
    assert without_fix(result) == scan_lines(CHECK, legacy)
    assert [w.split(": ")[0] for w in warnings(result) if not w.startswith("    ")] == [f"{legacy}:9:14"]


# -- bad input -------------------------------------------------------------------------------------
def test_missing_file(tmp_path):
    missing = tmp_path / "none.c"
    result = check(missing)
    assert result.exit_code == 1
    assert result.stderr == f"wqlint check: {missing}: no such file\n"


def test_file_that_cannot_be_preprocessed(tmp_path):
    bad = tmp_path / "bad.c"
    bad.write_text("#include <linux/nothere.h>\nint x;\n")
    result = check(bad)
    assert result.exit_code == 1
    assert result.stderr == (f"wqlint check: {bad}: cannot preprocess: {bad}:1:10: fatal error: "
                             "linux/nothere.h: No such file or directory\n")


def test_missing_sparse(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    result = check(DEMO)
    assert result.exit_code == 1
    assert result.stderr == (f"wqlint check: {DEMO}: sparse not found: install Debian's 'sparse' "
                             "package (apt-get install sparse)\n")


def test_bad_flag_is_one_line():
    result = check("-std=gnu99x", DEMO)
    assert result.exit_code == 1
    assert result.stderr == f"wqlint check: {DEMO}: sparse refused the flags: Unsupported C dialect\n"


def test_option_without_its_value_is_a_usage_error():
    result = check(DEMO, "-D")
    assert result.exit_code == 2
    assert "option -D needs a value" in result.stderr


def test_no_file_is_a_usage_error():
    result = run("check", *CHECKFLAGS)
    assert result.exit_code == 2
    assert "no source file given" in result.stderr


# -- inside Kbuild ---------------------------------------------------------------------------------
# What `wqlint scan` reports for these files of linux-source-6.12 (v6.12.117), and so what the
# checker must report for them built with kbuild.CONFIGS: the configuration changes nothing
# here (no #if decides their flags or max_active), but only the facts give fs/btrfs/scrub.c
# its warning (fs_info->thread_pool_size is set in disk-io.c) and disk-io.c the ones through
# btrfs_alloc_workqueue() (defined in async-thread.c); min_t() expands past what the unit
# alone can resolve.
KERNEL_TARGETS = ["fs/crypto/", "fs/verity/", "fs/btrfs/scrub.o", "fs/btrfs/disk-io.o", "fs/erofs/zdata.o",
                  "fs/f2fs/data.o", "drivers/md/dm-crypt.o", "block/blk-crypto-fallback.o", "kernel/workqueue.o"]
UB, PC, AF = "warning [unbound-max-active-cpu-count]", "warning [percpu-max-active-cpu-count]", \
    "note [missing-affinity-flag]"
KERNEL_EXPECTED = sorted(
    [("block/blk-crypto-fallback.c:579:18", UB), ("drivers/md/dm-crypt.c:3469:17", AF),
     ("drivers/md/dm-crypt.c:3476:21", AF), ("drivers/md/dm-crypt.c:3484:21", UB),
     ("fs/btrfs/scrub.c:2915:18", UB), ("fs/crypto/crypto.c:406:27", UB), ("fs/erofs/zdata.c:434:22", UB),
     ("fs/f2fs/data.c:4262:22", UB), ("fs/verity/verify.c:359:28", AF), ("fs/verity/verify.c:359:28", PC)]
    + [(f"fs/btrfs/disk-io.c:{loc}", UB) for loc in ("1944:3", "1947:3", "1951:3", "1955:3", "1958:3", "1960:3",
                                                      "1961:25", "1963:3", "1966:3", "1968:3", "1971:3")]
    + [(f"kernel/workqueue.c:{loc}", AF) for loc in ("7873:14", "7874:21", "7875:22", "7876:19", "7879:24",
                                                      "7881:30", "7883:40")]
    # the idle-cull work queued on system_unbound_wq (v7.3 queues it on system_dfl_wq)
    + [("kernel/workqueue.c:2963:3", "note [deprecated-system-workqueue]")])


@pytest.fixture(scope="module")
def kbuild(linux_6_12):
    if not shutil.which("make") or not shutil.which("gcc"):
        pytest.skip("needs make and gcc")
    from kbuild import prepared_build
    return prepared_build(linux_6_12)


def headline(line, src):
    """('path:line:col', 'severity [rule]') of a checker warning."""
    where, severity, rest = line[len(str(src)) + 1:].split(": ", 2)
    return where, f"{severity} {rest.rsplit(' ', 1)[-1]}"


@pytest.mark.kernel
def test_kernel_build_of_the_examples(linux_6_12, kbuild):
    """make O=... C=2 CHECK="wqlint check" on the directories and files of the examples."""
    facts = kbuild / ".wqlint-facts.json"
    if facts.exists():
        facts.unlink()  # built once by the first checker, while the others wait
    env = dict(os.environ, WQLINT_DEBUG="1")
    got = subprocess.run(["make", "-s", "-j2", f"O={kbuild}", "C=2", f"CHECK={WQLINT} check", *KERNEL_TARGETS],
                         cwd=linux_6_12, capture_output=True, text=True, timeout=3600, env=env)
    assert got.returncode == 0, got.stderr[-4000:]
    lines = got.stderr.splitlines()
    found = sorted(headline(ln, linux_6_12) for ln in lines if ": warning: " in ln or ": note: " in ln)
    assert found == KERNEL_EXPECTED
    assert len([ln for ln in lines if ln.startswith("wqlint check: facts: built ")]) == 1
    assert not [ln for ln in lines if ln.startswith(f"wqlint check: {linux_6_12}")]  # no file failed
    crypto, scrub, disk_io = (linux_6_12 / p for p in ("fs/crypto/crypto.c", "fs/btrfs/scrub.c",
                                                         "fs/btrfs/disk-io.c"))
    detail = UNBOUND_DETAIL.replace("v7.3 ", "v6.12.117 ")
    assert f"{crypto}:406:27: warning: WQ_UNBOUND workqueue with max_active derived from a CPU count: " \
        + detail.format(cpus="num_online_cpus()", n=96, via="") + " [unbound-max-active-cpu-count]" in lines
    assert f"    {crypto}:408: CPU count num_online_cpus()" in lines
    at = lines.index(f"{scrub}:2915:18: warning: WQ_UNBOUND workqueue with max_active derived from a CPU "
                     "count: " + detail.format(cpus="num_online_cpus()", n=8, via="")
                     + " [unbound-max-active-cpu-count]")
    assert lines[at + 1:at + 6] == [
        f"    {scrub}:2915: alloc_workqueue(flags 'flags', max_active 'max_active')",
        f"    {scrub}:2909: local 'max_active' = 'fs_info->thread_pool_size'",
        f"    {scrub}:2909: 'fs_info' field 'thread_pool_size'",
        f"    {disk_io}:2747: field 'thread_pool_size' = 'min_t(unsigned long, num_online_cpus() + 2, 8)'",
        f"    {disk_io}:2748: CPU count num_online_cpus()"]


@pytest.mark.kernel
@pytest.mark.parametrize("unbound", [True, False], ids=["option-on", "option-off"])
def test_external_module_follows_the_configuration(kbuild, tmp_path, unbound):
    """make -C <O= dir> M=<module> C=2 CHECK="wqlint check", the option on and off."""
    mod = tmp_path / "demo"
    shutil.copytree(CHECK, mod, ignore=shutil.ignore_patterns(".wqlint-*"))
    option = ["WQLINT_DEMO_UNBOUND=y"] if unbound else []
    got = subprocess.run(["make", "-s", "-C", str(kbuild), f"M={mod}", "C=2", f"CHECK={WQLINT} check",
                          "KBUILD_MODPOST_WARN=1", *option],  # no vmlinux, so no Module.symvers
                         capture_output=True, text=True, timeout=600)
    assert got.returncode == 0, got.stderr[-4000:]
    demo = mod / "demo.c"
    detail = UNBOUND_DETAIL.replace("v7.3 ", "v6.12.117 ")
    if unbound:
        expected = (f"{demo}:20:12: warning: WQ_UNBOUND workqueue with max_active derived from a CPU count: "
                    + detail.format(cpus="num_online_cpus()", n=96, via="")
                    + " (with CONFIG_WQLINT_DEMO_UNBOUND=y) [unbound-max-active-cpu-count]")
    else:
        expected = (f"{demo}:20:12: warning: " + PERCPU.format(via="")
                    + " (with CONFIG_WQLINT_DEMO_UNBOUND not set) [percpu-max-active-cpu-count]")
    assert [ln for ln in got.stderr.splitlines() if ln.startswith(str(demo))] == [expected]
    assert (mod / "demo.o").is_file() and (mod / ".wqlint-facts.json").is_file()


# linux-source-7.3 (v7.3.4): alloc_workqueue() is alloc_hooks(alloc_workqueue_noprof(...)) there
# (v6.17, fda6add92438), so the unit shows every call only under its _noprof name, and
# net/ipv4/inet_fragment.c's create_workqueue() only as the allocation it expands to. The sites,
# read from the C: the CPU-count max_active of blk-crypto-fallback, dm-crypt's unbound crypt
# queue, btrfs' thread_pool_size (scrub.c, and disk-io.c's queues through
# btrfs_alloc_workqueue() and alloc_workqueue()), erofs, f2fs' two queues, fs-verity's per-CPU
# read queue; kernel/workqueue.c's system queues all say WQ_PERCPU or WQ_UNBOUND on 7.3. These
# are asserted exactly for their rules; every finding, of every rule, is what scan gives.
KERNEL_TARGETS_7_3 = ["fs/btrfs/scrub.o", "fs/btrfs/disk-io.o", "fs/erofs/zdata.o", "fs/f2fs/data.o",
                      "drivers/md/dm-crypt.o", "block/blk-crypto-fallback.o", "fs/verity/", "kernel/workqueue.o",
                      "net/ipv4/inet_fragment.o"]
KERNEL_EXPECTED_7_3 = sorted(
    [("block/blk-crypto-fallback.c:573:18", UB), ("drivers/md/dm-crypt.c:3386:21", UB),
     ("fs/btrfs/scrub.c:3027:18", UB), ("fs/erofs/zdata.c:470:22", UB), ("fs/f2fs/data.c:4485:12", UB),
     ("fs/f2fs/data.c:4490:18", UB), ("fs/verity/verify.c:494:28", PC),
     ("net/ipv4/inet_fragment.c:212:17", "note [legacy-create-workqueue]")]
    + [(f"fs/btrfs/disk-io.c:{loc}", UB) for loc in ("1959:3", "1962:3", "1966:3", "1970:3", "1976:3", "1978:3",
                                                      "1979:25", "1981:3", "1984:3", "1987:3")])


@pytest.fixture(scope="module")
def kbuild_7_3(linux_7_3):
    if not shutil.which("make") or not shutil.which("gcc"):
        pytest.skip("needs make and gcc")
    from kbuild import prepared_build
    return prepared_build(linux_7_3, series="7.3")


@pytest.mark.kernel
def test_kernel_build_7_3_gives_what_scan_gives(linux_7_3, kbuild_7_3):
    """make O=... C=2 CHECK="wqlint check" on v7.3: every finding of `wqlint scan` for the
    checked files, with the same message and chain, and nothing else."""
    got = subprocess.run(["make", "-s", "-j2", f"O={kbuild_7_3}", "C=2", f"CHECK={WQLINT} check",
                          *KERNEL_TARGETS_7_3], cwd=linux_7_3, capture_output=True, text=True, timeout=3600)
    assert got.returncode == 0, got.stderr[-4000:]
    lines = [ln for ln in got.stderr.splitlines() if not ln.startswith("    fix: ")]
    assert not [ln for ln in lines if ln.startswith("wqlint check: ")]  # no file failed, no note
    found = by_finding(lines)
    labelled = {rule for _, rule in KERNEL_EXPECTED_7_3}
    assert sorted(h for h in (headline(f[0], linux_7_3) for f in found) if h[1] in labelled) \
        == KERNEL_EXPECTED_7_3
    sources = [linux_7_3 / (t[:-2] + ".c" if t.endswith(".o") else t) for t in KERNEL_TARGETS_7_3]
    assert sorted(found) == sorted(by_finding(scan_lines(linux_7_3, *sources)))
