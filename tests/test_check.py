"""`wqlint check`, the checker for `make C=1 CHECK="wqlint check"`: the findings follow the
configuration the file is preprocessed under."""
from __future__ import annotations

import shutil

import pytest

from conftest import FIXTURES
from helpers import run

pytestmark = pytest.mark.skipif(not (shutil.which("sparse") and shutil.which("cpp")),
                                reason="needs Debian's sparse and cpp")

CHECK = FIXTURES / "check"
DEMO = CHECK / "demo.c"
# What Kbuild passes a checker: $(CHECKFLAGS), then the c_flags that matter, then the file.
CHECKFLAGS = ["-D__linux__", "-Dlinux", "-D__STDC__", "-Dunix", "-D__unix__", "-Wbitwise",
              "-Wno-return-void", "-Wno-unknown-attribute", "--arch=x86_64", "-mlittle-endian", "-m64"]
C_FLAGS = ["-Wp,-MMD,demo/.demo.o.d", "-nostdinc", "-I", str(CHECK / "include"), "-D__KERNEL__",
           "-fno-strict-aliasing", "-O2", "-DKBUILD_MODNAME=\"demo\""]


def check(*args):
    return run("check", *CHECKFLAGS, *C_FLAGS, *args)


def warnings(result):
    return [ln for ln in result.stderr.splitlines() if not ln.startswith(" ")]


def test_unbound_when_the_option_is_set():
    result = check("-DCONFIG_WQLINT_DEMO_UNBOUND=1", DEMO)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert warnings(result) == [
        f"{DEMO}:19:12: warning: WQ_UNBOUND workqueue with max_active derived from a CPU count: "
        "say whether a global or a per-scope limit is meant (on v6.12 max_active of an unbound "
        "queue is system-wide (5797b1c18919) but fixed at the num_online_cpus() seen at "
        "allocation, not updated on CPU hotplug; with 96 CPUs up to 96 in-flight items) "
        "[unbound-max-active-cpu-count]"]
    lines = result.stderr.splitlines()
    assert lines[1] == (f"    {DEMO}:19: alloc_workqueue(flags '(WQ_UNBOUND | WQ_MEM_RECLAIM)', "
                        "max_active 'max_active')")
    assert lines[2] == f"    {DEMO}:17: local 'max_active' = 'num_online_cpus()'"


def test_percpu_when_the_option_is_not_set():
    result = check(DEMO)
    assert result.exit_code == 0, result.stderr
    assert warnings(result) == [
        f"{DEMO}:19:12: warning: per-CPU workqueue with max_active derived from a CPU count: the "
        "limit applies on every CPU, so in-flight items grow with the square of the CPU count "
        "(per-CPU queue: max_active is per CPU on every kernel; with 96 CPUs max_active = 96, up "
        "to 96 x 96 = 9216 in-flight items) [percpu-max-active-cpu-count]"]
    assert f"    {DEMO}:19: alloc_workqueue(flags '(WQ_PERCPU | WQ_MEM_RECLAIM)', max_active " \
           "'max_active')" in result.stderr.splitlines()


def test_undef_after_define_follows_the_command_line_order():
    result = check("-DCONFIG_WQLINT_DEMO_UNBOUND=1", "-UCONFIG_WQLINT_DEMO_UNBOUND", DEMO)
    assert result.exit_code == 0, result.stderr
    assert [w.rsplit(" ", 1)[-1] for w in warnings(result)] == ["[percpu-max-active-cpu-count]"]


def test_also_sparse_passes_sparse_output_through():
    result = check("--also-sparse", DEMO)
    assert result.exit_code == 0, result.stderr
    assert warnings(result) == [
        f"{DEMO}:15:5: warning: symbol 'demo_init' was not declared. Should it be static?",
        warnings(check(DEMO))[0]]


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


def test_no_file_is_a_usage_error():
    result = run("check", *CHECKFLAGS)
    assert result.exit_code == 2
    assert "no source file given" in result.stderr


@pytest.mark.kernel
def test_kernel_build_fs_crypto(linux_6_12, tmp_path):
    """make C=2 CHECK="wqlint check" in an O= build of linux-source-6.12 with FS_ENCRYPTION."""
    import subprocess
    import sys
    from pathlib import Path

    if not shutil.which("make") or not shutil.which("gcc"):
        pytest.skip("needs make and gcc")
    out = tmp_path / "build"
    wqlint = Path(sys.executable).with_name("wqlint")

    def make(*args):
        got = subprocess.run(["make", "-s", "-j2", f"O={out}", *args], cwd=linux_6_12,
                             capture_output=True, text=True, timeout=1800)
        assert got.returncode == 0, got.stderr[-4000:]
        return got

    make("defconfig")
    subprocess.run([str(linux_6_12 / "scripts" / "config"), "--file", str(out / ".config"),
                    "-e", "FS_ENCRYPTION"], check=True)
    make("olddefconfig")
    make("prepare")
    got = make("C=2", f"CHECK={wqlint} check", "fs/crypto/")
    crypto = linux_6_12 / "fs" / "crypto" / "crypto.c"
    assert [ln for ln in got.stderr.splitlines() if ": warning: " in ln] == [
        f"{crypto}:406:27: warning: WQ_UNBOUND workqueue with max_active derived from a CPU count: "
        "say whether a global or a per-scope limit is meant (on v6.12.117 max_active of an unbound "
        "queue is system-wide (5797b1c18919) but fixed at the num_online_cpus() seen at "
        "allocation, not updated on CPU hotplug; with 96 CPUs up to 96 in-flight items) "
        "[unbound-max-active-cpu-count]"]
    assert f"    {crypto}:408: CPU count num_online_cpus()" in got.stderr.splitlines()
