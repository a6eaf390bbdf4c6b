"""The Coccinelle rules (semantic-patches/*.cocci) and the Coccinelle engine (wqlint.cocci).

Real spatch runs in every mode on tests/fixtures/cocci/ and its output is compared with the
golden files in tests/fixtures/cocci/expected/ (regenerate them with WQLINT_UPDATE_GOLDEN=1
and review the diff). The fixtures mark every expected report in place: `// ruleid: <id>`
on the lines above a call that must be reported, `// ok: <id>` above one that must not, and
`// scan-only: <id>` above one that only `wqlint scan` reports (a value SmPL cannot follow).
Tests marked ``kernel`` run the kernel's own `make coccicheck` in Debian's linux-source-6.12.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from wqlint import catalogue, cocci
from wqlint.finding import Finding

REPO = Path(__file__).resolve().parents[1]
PATCHES = REPO / "semantic-patches"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "cocci"
GOLDEN = FIXTURES / "expected"
UPDATE = os.environ.get("WQLINT_UPDATE_GOLDEN") == "1"

# Rules with a semantic patch, and the modes each implements.
MODES = {
    "unbound-max-active-cpu-count": ("context", "org", "report"),
    "percpu-max-active-cpu-count": ("context", "org", "report"),
    "unbound-max-active-one": ("context", "org", "report"),
    "missing-affinity-flag": ("patch", "context", "org", "report"),
    "legacy-create-workqueue": ("patch", "context", "org", "report"),
    "conflicting-affinity-flags": ("patch", "context", "org", "report"),
    "internal-workqueue-flag": ("context", "org", "report"),
    "deprecated-system-workqueue": ("patch", "context", "org", "report"),
    "ordered-workqueue-sysfs": ("context", "org", "report"),
}
# Rules Coccinelle cannot express faithfully (semantic-patches/README.md says why).
NOT_COVERED = ("max-active-over-limit", "flag-as-max-active", "flush-queue-mismatch",
               "reclaim-flush-dependency", "self-flush-deadlock", "workqueue-name-too-long")
RULES = sorted(MODES)
CASES = [(rule, mode) for rule in RULES for mode in MODES[rule]]

needs_spatch = pytest.mark.skipif(
    shutil.which(os.environ.get("SPATCH", "spatch")) is None,
    reason="spatch missing: install Debian's package coccinelle (scripts/setup does)")


@pytest.fixture(scope="module")
def cat():
    return catalogue.load(REPO / "rules.yaml")


def cocci_file(rule: str) -> Path:
    return PATCHES / f"{rule}.cocci"


def spatch(rule: str, mode: str, cwd: Path = FIXTURES, jobs: int = 1) -> str:
    """spatch over cwd as make coccicheck runs it, in one mode; stdout."""
    cmd = cocci.spatch_command(cocci_file(rule), mode, jobs) + ["--dir", "."]
    if mode in ("patch", "context"):
        cmd += ["--patch", "."]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr
    return proc.stdout


def sorted_lines(text: str) -> str:
    return "".join(sorted(line + "\n" for line in text.splitlines() if line.strip()))


def sorted_diffs(text: str) -> str:
    """spatch prints one diff per file in any order; sort them by file, drop temp paths."""
    chunks = re.split(r"(?m)^(?=diff -u -p )", text)
    chunks = [re.sub(r"(?m)^(diff -u -p \S+) /tmp/\S+$", r"\1", c) for c in chunks if c.strip()]
    chunks = [re.sub(r"(?m)^\+\+\+ /tmp/nothing/(\S+)$", r"+++ \1", c) for c in chunks]
    return "".join(sorted(chunks))


def read_golden(name: str) -> str:
    path = GOLDEN / name
    assert path.is_file(), f"{path} missing: run with WQLINT_UPDATE_GOLDEN=1 and review it"
    return path.read_text(encoding="utf-8")


def golden(name: str, actual: str) -> str:
    """The golden file's text; with WQLINT_UPDATE_GOLDEN=1 first (re)written from actual."""
    if UPDATE:
        path = GOLDEN / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    return read_golden(name)


def annotations() -> dict:
    """rule id -> {(path, line)} that the fixtures mark `// ruleid:`; and the `// ok:` and
    `// scan-only:` ones."""
    marked = {"ruleid": {}, "ok": {}, "scan-only": {}}
    for path in sorted(FIXTURES.rglob("*.c")):
        rel = path.relative_to(FIXTURES).as_posix()
        pending = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = re.match(r"\s*//\s*(ruleid|ok|scan-only):\s*(.+?)\s*$", line)
            if m:
                pending += [(m.group(1), r.strip()) for r in m.group(2).split(",")]
                continue
            for kind, rule in pending:
                marked[kind].setdefault(rule, set()).add((rel, n))
            pending = []
    return marked


# -- the files themselves -------------------------------------------------------------------

def test_one_cocci_per_expressible_rule(cat):
    present = sorted(p.stem for p in PATCHES.glob("*.cocci"))
    assert present == RULES
    assert set(present) <= set(cat.ids())
    assert cocci.semantic_patches(cat, PATCHES) == {r: cocci_file(r) for r in RULES}
    assert sorted(cocci.not_covered(cat, PATCHES)) == sorted(NOT_COVERED)
    readme = (PATCHES / "README.md").read_text(encoding="utf-8")
    for rule in NOT_COVERED:
        assert f"`{rule}` has no semantic patch" in readme


@needs_spatch
def test_engine_says_which_rules_it_does_not_cover(tmp_path):
    """`scan --engine coccinelle` names the rules it cannot report instead of staying silent."""
    proc = subprocess.run([sys.executable, "-m", "wqlint", "scan", "--engine", "coccinelle",
                           "--format", "json", "drivers/flags.c"], cwd=FIXTURES, capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, PYTHONPATH=str(REPO / "linter")))
    assert proc.returncode == 1, proc.stderr
    notes = [l for l in proc.stderr.splitlines() if "not covered by --engine coccinelle" in l]
    assert len(notes) == 1 and notes[0].split(": ")[-1] == (
        f"{', '.join(NOT_COVERED)}; the tree-sitter engine checks them")
    assert {f["rule"] for f in json.loads(proc.stdout)["findings"]} == {
        "conflicting-affinity-flags", "internal-workqueue-flag", "legacy-create-workqueue",
        "ordered-workqueue-sysfs"}


@pytest.mark.parametrize("rule", RULES)
def test_kernel_style_header(rule):
    text = cocci_file(rule).read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 150, "a rule the kernel would take is small"
    assert lines[0] == "// SPDX-License-Identifier: GPL-2.0-only"
    subject = [l for l in lines if l.startswith("///") and l[3:].strip()]
    assert subject and len(subject[0]) <= 80
    assert any(l.startswith("//#") for l in lines), "known limits (//#) missing"
    for key in ("Confidence", "Copyright", "Options", "Requires", "Keywords"):
        assert re.search(rf"(?m)^// {key}:", text), key
    assert all(len(l) <= 80 for l in lines if l.startswith("//")), "header lines over 80 columns"
    assert re.search(r"(?m)^// Requires: 1\.1\.1$", text)
    declared = re.findall(r"(?m)^virtual (\w+)$", text)
    assert sorted(declared) == sorted(MODES[rule]), "virtual only for the modes implemented"
    for mode in ("patch", "context", "org", "report"):
        used = re.search(rf"depends on [^@]*\b{mode}\b", text) is not None
        assert used == (mode in declared), mode


def script_bodies(text: str) -> list:
    """(header, body) of every script rule (@script:python ...@ up to the next rule)."""
    return re.findall(r"(?ms)^@(script:python[^@]*)@\n(.*?)(?=^@(?!@)|\Z)", text)


@pytest.mark.parametrize("rule", RULES)
def test_python_only_prints_the_catalogue_message(rule, cat):
    """SmPL matches and follows values; Python only prints: no initialize/finalize block, no
    constraint in Python, no import, and each script is one print of the rule's message."""
    text = cocci_file(rule).read_text(encoding="utf-8")
    assert not re.search(r"@(initialize|finalize)", text)
    assert "script:python(" not in text and "script:ocaml" not in text
    scripts = script_bodies(text)
    assert sorted(h.split()[-1] for h, _ in scripts) == sorted(
        m for m in ("org", "report") if m in MODES[rule])
    for header, body in scripts:
        assert re.fullmatch(r"p << r\.\w+;\n", body.split("@@\n", 1)[0]), body
        code = body.split("@@\n", 1)[1]
        call = ("coccilib.org.print_todo" if header.endswith("org") else "coccilib.report.print_report")
        m = re.fullmatch(rf'{re.escape(call)}\(p\[0\],\s*"([^"]*)"\)', code.strip())
        assert m, code
        assert m.group(1) == cat[rule].message


def test_no_python_helpers_and_nothing_read_but_the_c():
    for path in PATCHES.glob("*.cocci"):
        text = path.read_text(encoding="utf-8")
        for word in ("import ", "open(", "os.", "re.compile", "/proc/", "Makefile", "workqueue.h"):
            assert word not in text.split("//\n\nvirtual", 1)[1], (path.name, word)


@needs_spatch
@pytest.mark.parametrize("rule", RULES)
def test_rules_read_only_the_c_they_are_given(rule, tmp_path):
    """The same reports with the tree's Makefile and include/ gone: nothing but the C files
    decides (the tree's version and headers are `wqlint scan`'s, and the engine's choice of
    which rules to run)."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES, tree, ignore=shutil.ignore_patterns("expected", "include", "Makefile"))
    assert sorted_lines(spatch(rule, "report", cwd=tree)) == sorted_lines(spatch(rule, "report"))


# -- spatch on the fixtures, in every mode --------------------------------------------------

@needs_spatch
@pytest.mark.parametrize("rule", RULES)
def test_report_matches_fixture_annotations(rule, cat):
    reported = set()
    for line in spatch(rule, "report").splitlines():
        path, n, _, msg = line.split(":", 3)
        assert msg == " " + cat[rule].message
        reported.add((os.path.normpath(path), int(n)))
    marked = annotations()
    assert reported == marked["ruleid"].get(rule, set())
    assert not reported & (marked["ok"].get(rule, set()) | marked["scan-only"].get(rule, set()))


@needs_spatch
@pytest.mark.parametrize("rule,mode", CASES)
def test_mode_output_is_golden(rule, mode):
    out = spatch(rule, mode)
    actual = sorted_diffs(out) if mode in ("patch", "context") else sorted_lines(out)
    assert actual.strip(), f"{rule} printed nothing in {mode} mode"
    assert actual == golden(f"{rule}.{mode}", actual)


@needs_spatch
@pytest.mark.parametrize("rule,mode", [c for c in CASES if c[1] in ("report", "org")])
def test_report_and_org_print_the_catalogue_message(rule, mode, cat):
    for line in spatch(rule, mode).splitlines():
        if mode == "report":
            assert line.endswith(": " + cat[rule].message)
        else:
            assert line.startswith("* TODO [[view:") and line.endswith("][" + cat[rule].message + "]]")


@needs_spatch
@pytest.mark.parametrize("rule", [r for r in RULES if "patch" in MODES[r]])
def test_patch_applies_with_git_apply(rule, tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES, tree, ignore=shutil.ignore_patterns("expected"))
    patch = tmp_path / f"{rule}.patch"
    patch.write_text(spatch(rule, "patch", cwd=tree), encoding="utf-8")
    assert patch.read_text().strip()
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    check = subprocess.run(["git", "apply", "--check", str(patch)], cwd=tree,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    subprocess.run(["git", "apply", str(patch)], cwd=tree, check=True)
    # Once applied, the rule has nothing left to convert.
    assert spatch(rule, "patch", cwd=tree).strip() == ""


@needs_spatch
def test_legacy_patch_writes_out_what_the_macros_expand_to():
    out = spatch("legacy-create-workqueue", "patch")
    legacy = out[out.index("a/drivers/legacy.c"):].split("\ndiff -u -p", 1)[0]
    added = " ".join(l[1:].strip() for l in legacy.splitlines() if l.startswith("+\t"))
    assert added.split(";") == [
        'qd->wq = alloc_workqueue("%s", WQ_MEM_RECLAIM | WQ_PERCPU, 1, "qux_wq")',
        ' qd->wq = alloc_workqueue("%s", WQ_MEM_RECLAIM | WQ_PERCPU, 1, qd->name)',
        ' qd->event_wq = alloc_ordered_workqueue("%s", WQ_MEM_RECLAIM, "qux_events")',
        ' qd->event_wq = alloc_ordered_workqueue("%s", WQ_MEM_RECLAIM, qd->name)',
        ' qd->freeze_wq = alloc_workqueue("%s", WQ_FREEZABLE | WQ_UNBOUND | WQ_MEM_RECLAIM, 1, '
        '"qux_freeze")', ""]


@needs_spatch
@pytest.mark.parametrize("root, version, rules", [
    # 6.1's header has no WQ_PERCPU: the rules that need it do not run.
    ("old-tree", (6, 1, 0), {"legacy-create-workqueue"}),
    ("old-tree", (7, 3, 0), {"legacy-create-workqueue"}),
    # A tree that declares WQ_PERCPU and system_percpu_wq: all run, ordered-workqueue-sysfs
    # only before v7.1 (a4aa8d94f243).
    (".", (7, 0, 9), set(RULES)),
    (".", (7, 1, 0), set(RULES) - {"ordered-workqueue-sysfs"}),
])
def test_engine_runs_only_the_rules_of_the_tree(cat, root, version, rules):
    findings, errors = cocci.run(FIXTURES / root, [Path("drivers")], cat, 1, version=version)
    assert errors == []
    reported = {f.rule_id for f in findings}
    assert reported <= rules
    everything = {f.rule_id for f in cocci.run(FIXTURES / root, [Path("drivers")], cat, 1)[0]}
    assert reported == everything & rules


def test_rules_for_a_tree_without_a_header_follow_wqlint_s_header_of_its_version(cat, tmp_path):
    assert "missing-affinity-flag" not in cocci.applicable(
        cat, (6, 12, 0), cocci.tree_header(tmp_path, (6, 12, 0)))
    assert "missing-affinity-flag" in cocci.applicable(
        cat, (7, 3, 0), cocci.tree_header(tmp_path, (7, 3, 0)))


# -- the engine -----------------------------------------------------------------------------

def expected_findings(cat) -> list:
    """What the report goldens say, as (rule, path, line, column 1-based, end column)."""
    out = []
    for rule in RULES:
        for line in read_golden(f"{rule}.report").splitlines():
            path, n, cols, _ = line.split(":", 3)
            start, end = cols.split("-")
            out.append((rule, os.path.normpath(path), int(n), int(start) + 1, int(end)))
    return sorted(out, key=lambda t: (t[1], t[2], t[3], t[0]))


@needs_spatch
@pytest.mark.parametrize("jobs", [1, 2])
def test_engine_run_gives_findings(cat, jobs):
    findings, errors = cocci.run(FIXTURES, [Path(".")], cat, jobs)
    assert errors == []
    got = [(f.rule_id, f.path, f.line, f.col, f.end_col) for f in findings]
    assert got == expected_findings(cat)
    for f in findings:
        assert isinstance(f, Finding)
        assert f.engine == "coccinelle"
        assert (f.severity, f.message) == (cat[f.rule_id].severity, cat[f.rule_id].message)
        call = f.chain[0]
        assert (call.path, call.line) == (f.path, f.line)
        source = (FIXTURES / f.path).read_text().splitlines()[f.line - 1]
        assert call.text == source.strip()
        assert call.note == f"call of {source[f.col - 1:f.end_col]}()"


@needs_spatch
def test_engine_targets_and_paths_relative_to_root(cat):
    findings, errors = cocci.run(FIXTURES / "drivers", [FIXTURES / "drivers" / "legacy.c"], cat, 1)
    assert errors == []
    assert {(f.rule_id, f.path, f.line) for f in findings} == {
        ("legacy-create-workqueue", "legacy.c", n) for n in (13, 15, 17, 19, 22)
    } | {("unbound-max-active-one", "legacy.c", 22)}
    findings, errors = cocci.run(FIXTURES, [Path("no/such/dir")], cat, 1)
    assert findings == [] and [str(e) for e in errors] == ["Error: no/such/dir: no such file or directory"]


@needs_spatch
def test_engine_leaves_the_tree_alone(cat, tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES, tree)
    (tree / ".cocciconfig").write_text("[spatch]\n\toptions = --use-gitgrep\n")
    before = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*"))
    findings, errors = cocci.run(tree, [Path(".")], cat, 2)
    assert errors == [] and findings
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*")) == before


@needs_spatch
def test_listed_files_disable_the_scanner_of_cocciconfig():
    cmd = cocci.spatch_command(cocci_file("legacy-create-workqueue"), "report", 2, files_given=True)
    assert "--no-scanner" in cmd and "--jobs" in cmd and "--no-show-diff" in cmd
    assert cmd[cmd.index("--cocci-file") + 1] == str(cocci_file("legacy-create-workqueue"))


def test_missing_spatch_says_how_to_install(cat, monkeypatch):
    monkeypatch.setenv("SPATCH", "spatch-that-is-not-installed")
    with pytest.raises(cocci.SpatchNotFound) as exc:
        cocci.run(FIXTURES, [Path(".")], cat, 1)
    assert "apt-get install coccinelle" in str(exc.value)
    assert "coccinelle" in str(exc.value)


def test_semantic_patches_dir_lookup(monkeypatch, tmp_path):
    monkeypatch.delenv("WQLINT_SEMANTIC_PATCHES", raising=False)
    assert cocci.semantic_patches_dir().resolve() in (
        PATCHES.resolve(), (Path(cocci.__file__).parent / "semantic-patches").resolve())
    monkeypatch.setenv("WQLINT_SEMANTIC_PATCHES", str(tmp_path))
    assert cocci.semantic_patches_dir() == tmp_path


# -- parity with the tree-sitter engine (issue item 5) --------------------------------------

def scanner_available() -> str:
    try:
        import wqlint.scan.engine  # noqa: F401
    except Exception as exc:  # not written yet, or broken
        return f"`wqlint scan` is not available yet (import wqlint.scan.engine: {exc})"
    return ""


def scan_json(root: Path, targets: list) -> set:
    """(rule, path relative to root, line) of every `wqlint scan --format json` finding."""
    env = dict(os.environ)
    package_parent = str(Path(cocci.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-m", "wqlint", "scan", "--format", "json",
                           *[str(t) for t in targets]], cwd=root, capture_output=True, text=True,
                          timeout=1800, env=env)
    assert proc.returncode in (0, 1, 3), proc.stderr
    assert proc.stdout.lstrip().startswith(("{", "[")), proc.stdout[:500] + proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    items = data.get("findings", data.get("results", [])) if isinstance(data, dict) else data
    out = set()
    for item in items:
        path = Path(item["path"])
        if path.is_absolute():
            path = Path(os.path.relpath(path, root))
        out.add((item.get("rule") or item.get("rule_id"), path.as_posix(), int(item["line"])))
    return out


def assert_parity(cocci_findings: list, scanned: set):
    missing = sorted({(f.rule_id, f.path, f.line) for f in cocci_findings} - scanned)
    assert not missing, "Coccinelle reports sites `wqlint scan` does not:\n" + "\n".join(
        f"  {p}:{n}: [{r}]" for r, p, n in missing)


@needs_spatch
@pytest.mark.skipif(bool(scanner_available()), reason=scanner_available() or "-")
def test_parity_on_fixtures(cat):
    findings, errors = cocci.run(FIXTURES, [Path(".")], cat, 2)
    assert errors == []
    assert_parity(findings, scan_json(FIXTURES, ["."]))


# -- the kernel's own make coccicheck on Debian's linux-source-6.12 -------------------------

# The rules whose make coccicheck output on KERNEL_DIRS is kept in golden files; the newer
# rules find little there and are held to the scanner on the top of drivers/scsi instead.
KERNEL_GOLDEN_RULES = ("legacy-create-workqueue", "missing-affinity-flag", "percpu-max-active-cpu-count",
                       "unbound-max-active-cpu-count", "unbound-max-active-one")
NEW_RULES = tuple(r for r in RULES if r not in KERNEL_GOLDEN_RULES)

# The seed's directories, fs/erofs (the one other CPU-count site in 6.12), and directories
# with unbound max_active 1 (ext4, hfi1 with WQ_SYSFS) and create_*workqueue() sites.
KERNEL_DIRS = ("fs/crypto", "fs/f2fs", "fs/verity", "block", "drivers/md",
               "drivers/crypto/hisilicon", "fs/btrfs", "fs/erofs", "fs/ext4",
               "drivers/infiniband/hw/hfi1", "drivers/hv", "drivers/power/supply",
               "net/nfc/nci")


def coccicheck(tree: Path, rule: str, mode: str, subdir: str) -> str:
    """The kernel's make coccicheck. With J>1 spatch keeps its work directory in the current
    directory (the tree) while it runs, so SPFLAGS moves it out: the tree stays untouched."""
    with tempfile.TemporaryDirectory(prefix="wqlint-coccicheck-") as tmp:
        proc = subprocess.run(
            ["make", "-s", "coccicheck", f"MODE={mode}", f"COCCI={cocci_file(rule)}",
             f"M={subdir}", "J=2", f"SPFLAGS=--tmp-dir {tmp}/par"],
            cwd=tree, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


def report_lines(out: str) -> list:
    return [l for l in out.splitlines() if re.match(r"^\S+:\d+:\d+-\d+: ", l)]


def tree_listing(tree: Path) -> list:
    return sorted(os.listdir(tree))


@pytest.mark.kernel
@needs_spatch
@pytest.mark.parametrize("rule", KERNEL_GOLDEN_RULES)
def test_make_coccicheck_report_on_linux_6_12(linux_6_12, rule):
    before = tree_listing(linux_6_12)
    lines, started = [], time.monotonic()
    for subdir in KERNEL_DIRS:
        lines += report_lines(coccicheck(linux_6_12, rule, "report", subdir))
    actual = sorted_lines("\n".join(lines))
    assert actual == golden(f"linux-6.12/{rule}.report", actual)
    assert tree_listing(linux_6_12) == before, "make coccicheck wrote into the tree"
    print(f"{rule}: {len(lines)} reports in {time.monotonic() - started:.1f}s")


@pytest.mark.kernel
@needs_spatch
@pytest.mark.parametrize("rule", [r for r in RULES if "patch" in MODES[r]])
def test_make_coccicheck_patch_applies_on_linux_6_12(linux_6_12, rule, tmp_path):
    patch = tmp_path / f"{rule}.patch"
    text = "".join(coccicheck(linux_6_12, rule, "patch", d) for d in KERNEL_DIRS)
    diffs = "".join(re.findall(r"(?ms)^diff -u -p .*?(?=^diff -u -p |\Z)", text))
    patch.write_text(diffs, encoding="utf-8")
    if not diffs.strip():
        pytest.skip(f"{rule} converts nothing in {', '.join(KERNEL_DIRS)}")
    check = subprocess.run(["git", "apply", "--check", str(patch)], cwd=linux_6_12,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


@pytest.mark.kernel
@needs_spatch
@pytest.mark.parametrize("mode", ["context", "org"])
def test_make_coccicheck_other_modes_on_linux_6_12(linux_6_12, mode):
    out = coccicheck(linux_6_12, "unbound-max-active-cpu-count", mode, "block")
    if mode == "org":
        assert [l.split("::")[1] for l in out.splitlines() if l.startswith("* TODO [[view:")] == [
            "face=ovl-face1"] and "view:block/blk-crypto-fallback.c::" in out
    else:
        assert len(re.findall(r"(?m)^-.*alloc_workqueue\(", out)) == 1


@pytest.mark.kernel
@needs_spatch
def test_engine_on_linux_6_12_matches_make_coccicheck(linux_6_12, cat):
    findings, errors = cocci.run(linux_6_12, list(KERNEL_DIRS), cat, 2)
    assert errors == []
    got = sorted_lines("\n".join(
        f"{f.path}:{f.line}:{f.col - 1}-{f.end_col}: {f.message}" for f in findings
        if f.rule_id in KERNEL_GOLDEN_RULES))
    want = "".join(read_golden(f"linux-6.12/{rule}.report") for rule in KERNEL_GOLDEN_RULES)
    assert got == sorted_lines(want)


@pytest.mark.kernel
@needs_spatch
@pytest.mark.skipif(bool(scanner_available()), reason=scanner_available() or "-")
def test_parity_on_linux_6_12_slice(linux_6_12, cat):
    findings, errors = cocci.run(linux_6_12, list(KERNEL_DIRS), cat, 2)
    assert errors == []
    assert_parity(findings, scan_json(linux_6_12, list(KERNEL_DIRS)))


@pytest.mark.kernel
@needs_spatch
@pytest.mark.skipif(bool(scanner_available()), reason=scanner_available() or "-")
def test_new_rules_on_linux_6_12_scsi(linux_6_12, cat, tmp_path):
    """The newer rules on the files at the top of drivers/scsi (not its subdirectories):
    callers that write __WQ_LEGACY themselves and a flush of system_unbound_wq, exactly, and
    nothing the scanner does not report."""
    for rule in NEW_RULES:
        (tmp_path / f"{rule}.cocci").symlink_to(cocci_file(rule))
    targets = sorted(p.relative_to(linux_6_12).as_posix() for p in (linux_6_12 / "drivers/scsi").glob("*.c"))
    findings, errors = cocci.run(linux_6_12, targets, cat, 2, patches_dir=tmp_path)
    assert errors == []
    assert [(f.rule_id, f.path, f.line, f.col) for f in findings] == [
        ("internal-workqueue-flag", "drivers/scsi/hosts.c", 295, 19),
        ("internal-workqueue-flag", "drivers/scsi/libiscsi.c", 2912, 18),
        ("deprecated-system-workqueue", "drivers/scsi/scsi_transport_iscsi.c", 3991, 4),
    ]
    assert_parity(findings, scan_json(linux_6_12, targets))


@pytest.mark.kernel
@needs_spatch
def test_make_coccicheck_on_linux_6_1_without_wq_percpu(linux_6_1, cat):
    """6.1 has no WQ_PERCPU: spatch, which knows no tree, reports fs/afs's queues as
    missing-affinity-flag; the engine, given the tree's version, does not run that rule."""
    everything, errors = cocci.run(linux_6_1, ["fs/afs"], cat, 2)
    assert errors == [] and "missing-affinity-flag" in {f.rule_id for f in everything}
    findings, errors = cocci.run(linux_6_1, ["fs/afs"], cat, 2, version=(6, 1, 0))
    assert errors == []
    assert findings == [f for f in everything if f.rule_id not in (
        "missing-affinity-flag", "conflicting-affinity-flags", "deprecated-system-workqueue")]


# -- the kernel patch: the same files, in scripts/coccinelle/api/workqueue/ of 7.3 ------------

KERNEL_PATCH = REPO / "kernel" / "coccinelle" / "0001-coccinelle-api-add-workqueue-checks.patch"


def kernel_patch_files() -> dict:
    """path -> text of every file the kernel patch adds."""
    added, path, lines = {}, None, []
    for line in KERNEL_PATCH.read_text(encoding="utf-8").splitlines():
        if line.startswith("diff --git "):
            if path:
                added[path] = "".join(lines)
            path, lines = None, []
        elif line.startswith("+++ b/") and line[6:].startswith("scripts/"):
            path = line[6:]
        elif path and line.startswith("+") and not line.startswith("+++"):
            lines.append(line[1:] + "\n")
    if path:
        added[path] = "".join(lines)
    return added


def test_kernel_patch_adds_the_semantic_patches_that_apply_to_7_3(cat):
    """Every rule that applies to v7.3 (rules.yaml), byte for byte the file wqlint runs; not
    ordered-workqueue-sysfs, which v7.1 made moot."""
    added = kernel_patch_files()
    want = cocci.applicable(cat, (7, 3, 0), api_header_7_3())
    assert "ordered-workqueue-sysfs" not in want
    assert added == {f"scripts/coccinelle/api/workqueue/{r.replace('-', '_')}.cocci":
                     cocci_file(r).read_text(encoding="utf-8") for r in RULES if r in want}
    text = KERNEL_PATCH.read_text(encoding="utf-8")
    assert "Subject: [PATCH] coccinelle: api: add workqueue checks\n" in text
    assert "\nSigned-off-by: Wqlint Developer <wqlint@example.org>\n" in text
    assert "+F:\tscripts/coccinelle/api/workqueue/\n" in text


def api_header_7_3() -> bytes:
    from wqlint import api
    return api.builtin_header((7, 3, 0))


@pytest.mark.kernel
def test_kernel_patch_is_checkpatch_strict_clean(linux_7_3):
    proc = subprocess.run(["perl", "scripts/checkpatch.pl", "--strict", str(KERNEL_PATCH)],
                          cwd=linux_7_3, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "total: 0 errors, 0 warnings, 0 checks" in proc.stdout


@pytest.mark.kernel
@needs_spatch
def test_kernel_patch_applies_with_git_am_and_plain_coccicheck_runs_it(linux_7_3, cat):
    """git am on a copy of 7.3, then `make coccicheck MODE=report M=drivers/char/ipmi` with no
    COCCI=: the kernel's own scripts and the added ones run, and the added ones report the
    subsystem's known sites, each also one of `wqlint scan`'s."""
    from conftest import CACHE
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kernel-patch-", dir=CACHE) as tmp:
        tree = Path(tmp) / "linux"
        # Hard links for the tree; real copies of what git am writes to.
        subprocess.run(["cp", "-al", str(linux_7_3), str(tree)], check=True)
        for rel in ("MAINTAINERS", "scripts/coccinelle"):
            (tree / rel).unlink() if (tree / rel).is_file() else shutil.rmtree(tree / rel)
            copy = shutil.copy2 if (linux_7_3 / rel).is_file() else shutil.copytree
            copy(linux_7_3 / rel, tree / rel)
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"]
        subprocess.run(git + ["init", "-q"], cwd=tree, check=True)
        subprocess.run(git + ["add", "-f", "MAINTAINERS", "scripts/coccinelle"], cwd=tree, check=True)
        subprocess.run(git + ["commit", "-q", "-m", "base"], cwd=tree, check=True)
        am = subprocess.run(git + ["am", "-q", str(KERNEL_PATCH)], cwd=tree, capture_output=True, text=True)
        assert am.returncode == 0, am.stderr
        proc = subprocess.run(["make", "-s", "coccicheck", "MODE=report", "M=drivers/char/ipmi", "J=2",
                               f"SPFLAGS=--tmp-dir {tmp}/par"], cwd=tree, capture_output=True,
                              text=True, timeout=3000)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    by_message = {cat[r].message: r for r in RULES}
    # With M=, spatch runs in the subsystem's directory: paths are relative to it.
    found = sorted((by_message[msg.strip()], os.path.normpath(f"drivers/char/ipmi/{path}"), int(line))
                   for path, line, _, msg in (l.split(":", 3) for l in report_lines(proc.stdout))
                   if msg.strip() in by_message)
    assert found == [
        ("deprecated-system-workqueue", "drivers/char/ipmi/ipmi_msghandler.c", 1909),
        ("deprecated-system-workqueue", "drivers/char/ipmi/ipmi_si_intf.c", 2247),
        ("deprecated-system-workqueue", "drivers/char/ipmi/ipmi_si_intf.c", 2285),
        ("legacy-create-workqueue", "drivers/char/ipmi/ipmi_msghandler.c", 5628),
    ]
    # The kernel's own scripts ran too: spatch was called with one of them.
    assert "scripts/coccinelle/api/kfree_mismatch.cocci" in proc.stdout + proc.stderr
