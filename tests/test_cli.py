"""The CLI contract: output formats, exit codes, bad input, the catalogue."""
from __future__ import annotations

import json
import os

import pytest
import yaml

from conftest import REPO, SARIF_SCHEMA
from helpers import run, scan_json

DEMO = REPO / "examples" / "demo-tree"
SCHEMA = SARIF_SCHEMA


def test_text_format_first_line_is_compiler_style():
    result = run("scan", DEMO / "fs" / "cryptfs", "--kernel-version", "6.12")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "crypto.c:11:27: warning: WQ_UNBOUND workqueue with max_active derived from a CPU count: "
        "say whether a global or a per-scope limit is meant (on v6.12 max_active of an unbound "
        "queue is system-wide (5797b1c18919) but fixed at the num_online_cpus() seen at "
        "allocation, not updated on CPU hotplug; with 96 CPUs up to 96 in-flight items) "
        "[unbound-max-active-cpu-count]")
    assert lines[1] == "    crypto.c:11: alloc_workqueue(flags 'WQ_UNBOUND | WQ_HIGHPRI', max_active 'num_online_cpus()')"
    assert lines[3] == "    crypto.c:13: CPU count num_online_cpus()"


def test_clean_tree_exits_0(tmp_path):
    """Nothing on stdout for a machine; one line on stderr tells a person what was scanned,
    for which kernel (and the note on the built-in API description, as for any scan)."""
    (tmp_path / "ok.c").write_text('void f(void) { wq = alloc_workqueue("a", WQ_UNBOUND, 0); }\n')
    result = run("scan", tmp_path, "--kernel-version", "6.12")
    assert result.exit_code == 0, result.stdout
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == f"wqlint: no findings in {tmp_path} (1 .c/.h files searched; v6.12 from --kernel-version)"
    quiet = run("scan", tmp_path, "--kernel-version", "6.12", "--format", "json")
    assert json.loads(quiet.stdout)["findings"] == [] and "no findings" not in quiet.stderr


def test_sarif_is_valid_and_fingerprinted(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    if not SCHEMA.is_file():
        pytest.skip(f"{SCHEMA} absent: the shared schemas folder sits beside the checkout")
    out = tmp_path / "out.sarif"
    result = run("scan", DEMO, "--format", "sarif", "-o", out)
    assert result.exit_code == 1
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    run0 = doc["runs"][0]
    # every rule of the catalogue, in its order, so a result's ruleIndex points at its rule
    catalogue = yaml.safe_load((REPO / "rules.yaml").read_text())["rules"]
    rules = run0["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [r["id"] for r in catalogue]
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in run0["results"])
    res = run0["results"]
    prints = [r["partialFingerprints"]["wqlintFingerprint/v2"] for r in res]
    assert len(set(prints)) == len(prints)
    again = json.loads(run("scan", DEMO, "--format", "sarif").stdout)["runs"][0]["results"]
    assert prints == [r["partialFingerprints"]["wqlintFingerprint/v2"] for r in again]
    first = res[0]["locations"][0]["physicalLocation"]
    assert first["artifactLocation"]["uri"] == "drivers/accel/qm.c"
    assert first["region"]["startLine"] == 23


def test_output_file_is_written_atomically_and_only_there(tmp_path):
    out = tmp_path / "report.json"
    before = set(os.listdir(DEMO))
    result = run("scan", DEMO, "--format", "json", "-o", out)
    assert result.exit_code == 1 and result.stdout == ""
    assert json.loads(out.read_text())["kernel_version"] == "v7.3"
    assert set(os.listdir(DEMO)) == before
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_explain_prints_the_rule_sections():
    result = run("explain", "unbound-max-active-one")
    assert result.exit_code == 0
    for title in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert title in result.stdout
    assert run("explain", "no-such-rule").exit_code == 2


def test_missing_path_is_a_usage_error(tmp_path):
    result = run("scan", tmp_path / "nope")
    assert result.exit_code == 2
    assert "no such file or directory" in result.stderr


@pytest.mark.parametrize("name,content,problem", [
    ("latin1.c", b"/* caf\xe9 */\nvoid f(void) { alloc_workqueue(\"a\", 0, 1); }\n", "line 1: not valid UTF-8 (byte 0xe9)"),
    ("blob.c", b"\x7fELF\x00\x01alloc_workqueue(", "binary file (contains NUL bytes)"),
    ("broken.c", b"void f(void) {\n\twq = alloc_workqueue(\"a\", WQ_UNBOUND,\n", "line 2: cannot parse the call to alloc_workqueue()"),
])
def test_bad_input_is_one_error_line_and_the_rest_is_scanned(tmp_path, name, content, problem):
    (tmp_path / name).write_bytes(content)
    (tmp_path / "good.c").write_text(
        'void g(void) { wq = alloc_workqueue("b", WQ_UNBOUND, num_online_cpus()); }\n')
    result = run("scan", tmp_path)
    assert result.exit_code == 3
    assert result.stderr.strip().splitlines()[-1] == f"Error: {name}: {problem}"
    assert "good.c:1:21:" in result.stdout


def test_symlink_loop_named_on_the_command_line(tmp_path):
    loop = tmp_path / "loop.c"
    loop.symlink_to(loop)
    result = run("scan", loop)
    assert result.exit_code == 3
    assert "Error: " in result.stderr and "symbolic link loop" in result.stderr


@pytest.mark.parametrize("edit,problem", [
    (lambda t: t.replace("severity: warning", "severity: loud", 1), "severity 'loud' is not one of error, warning, note"),
    (lambda t: t.replace("    severity: warning\n", "    severity: warning\n    colour: red\n", 1), "rule: unknown key 'colour'"),
    (lambda t: t.replace("id: percpu-max-active-cpu-count", "id: unbound-max-active-cpu-count"), "duplicate rule id 'unbound-max-active-cpu-count'"),
    (lambda t: t.replace("rules:\n", "rules: [\n", 1), "not valid YAML"),
    (lambda t: t.replace('kernel-versions: ">=2.6.36"', 'kernel-versions: "soon"', 1), "kernel-versions: bad constraint 'soon'"),
    (lambda t: t.replace('    subject: "set a global max_active for unbound workqueues"\n', "", 1), "missing key 'subject'"),
    (lambda t: t.replace("      default: >-\n        If the work items", "      usual: >-\n        If the work items", 1),
     "migration: the cases need a 'default'"),
])
def test_broken_catalogue_names_file_and_line(tmp_path, edit, problem):
    bad = tmp_path / "rules.yaml"
    bad.write_text(edit((REPO / "rules.yaml").read_text()))
    result = run("scan", DEMO, "--rules", bad)
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert line.startswith(f"Error: {bad}:") and problem in line, line
    assert line.split(":")[2].strip().isdigit()


def test_files_the_search_cannot_read_are_reported(tmp_path, monkeypatch):
    # Running as root, nothing is unreadable: feed the search's own error line instead.
    from wqlint.scan import index
    if not index.tools.which("rg"):
        pytest.skip("ripgrep not installed")
    real = index.tools.run

    def search_with_an_unreadable_file(args, **kw):
        proc = real(args, **kw)
        if str(args[0]).endswith("rg"):
            proc.stderr += b"rg: ./secret.c: Permission denied (os error 13)\n"
        return proc
    monkeypatch.setattr(index.tools, "run", search_with_an_unreadable_file)
    (tmp_path / "good.c").write_text(
        'void g(void) { wq = alloc_workqueue("b", WQ_UNBOUND, num_online_cpus()); }\n')
    result = run("scan", tmp_path)
    assert result.exit_code == 3
    assert result.stderr.strip().splitlines()[-1] == "Error: secret.c: permission denied"
    assert "good.c:1:21:" in result.stdout


# -- several paths: one tree ------------------------------------------------------------------
def _kernel_like(root):
    """A directory that find_root takes for a kernel tree."""
    (root / "include" / "linux").mkdir(parents=True)
    (root / "Makefile").write_text("VERSION = 7\nPATCHLEVEL = 3\nSUBLEVEL = 0\n")
    (root / "drivers" / "a").mkdir(parents=True)
    (root / "drivers" / "b").mkdir(parents=True)
    for d in ("a", "b"):
        (root / "drivers" / d / f"{d}.c").write_text(
            f'void {d}_init(void) {{ wq = alloc_workqueue("{d}", WQ_MEM_RECLAIM, 0); }}\n')
    return root


def test_several_paths_of_one_tree(tmp_path):
    tree = _kernel_like(tmp_path / "linux")
    data, result = scan_json(tree / "drivers" / "a", tree / "drivers" / "b" / "b.c", "-j", "1")
    assert data["root"] == str(tree)
    assert [(f["path"], f["line"]) for f in data["findings"]] == [("drivers/a/a.c", 1), ("drivers/b/b.c", 1)]


@pytest.mark.parametrize("engine", ["tree-sitter", "coccinelle"])
@pytest.mark.parametrize("case", ["two-trees", "outside", "no-common-dir", "slash"])
def test_paths_that_are_not_one_tree_are_one_error_line(tmp_path, case, engine):
    one = _kernel_like(tmp_path / "one")
    two = _kernel_like(tmp_path / "two")
    module = tmp_path / "module"
    module.mkdir()
    (module / "m.c").write_text("int x;\n")
    paths, expected = {
        "two-trees": ([one / "drivers" / "a", two / "drivers" / "b"],
                      f"Error: {one / 'drivers' / 'a'} and {two / 'drivers' / 'b'} are in different kernel "
                      f"trees ({one}, {two}): scan each tree separately"),
        "outside": ([one / "include" / "linux", module],
                    f"Error: {module} is outside the kernel tree {one} of {one / 'include' / 'linux'}: "
                    "scan it separately"),
        "no-common-dir": ([module, "/proc/self"],
                          f"Error: {module} and /proc/self share no directory but /: scan each tree separately"),
        "slash": (["/"], "Error: /: the root directory is not a tree: name a directory below it"),
    }[case]
    result = run("scan", "--engine", engine, "-j", "1", *paths)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", expected + "\n")
    fixed = run("fix", "--diff", "--target", "mainline", "-j", "1", *paths)
    assert (fixed.exit_code, fixed.stderr) == (2, expected + "\n")
