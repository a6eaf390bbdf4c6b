"""Noise controls: the tree's committed .wqlint.yaml (rules, min-severity, max-findings,
paths), read by scan, review, fix, bulk and check, and --min-severity / --max-findings for
one run; `review --all` lists only the old findings of the files the series touches."""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import FIXTURES
from helpers import run
from patchrepo import Repo

TREE = FIXTURES / "review" / "tree"
SERIES = FIXTURES / "review" / "series.mbox"


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "tree"
    shutil.copytree(TREE, root)
    return root


def configure(root, text):
    (root / ".wqlint.yaml").write_text(text)


def rules_of(result):
    assert result.exit_code in (0, 1), result.stderr
    return [ln.split("[")[-1].rstrip("]") for ln in result.stdout.splitlines() if ln and not ln.startswith(" ")]


def review(tree, *args):
    return run("review", SERIES, "--tree", tree, "-j", "1", *args)


INTRODUCED = ["max-active-over-limit", "unbound-max-active-cpu-count", "legacy-create-workqueue"]


def test_without_configuration_everything_is_reported(tree):
    assert rules_of(review(tree)) == INTRODUCED


def test_disabled_rule_is_not_reported_by_any_command(tree):
    configure(tree, "# what this tree wants to hear about\nrules:\n  disable: [unbound-max-active-cpu-count]\n")
    assert rules_of(review(tree)) == ["max-active-over-limit", "legacy-create-workqueue"]
    scanned = run("scan", tree, "--no-cache")
    assert (scanned.exit_code, scanned.stdout) == (0, "")  # demo_old's finding is that rule's
    fixed = run("fix", tree, "--target", "mainline", "--diff", "--rule", "unbound-max-active-cpu-count")
    # (without the file: "... 1 not fixed", the finding listed with the reason)
    assert fixed.stderr == "wqlint: 0 finding(s) fixed in 0 file(s) (target mainline, v6.12); 0 not fixed\n"


def test_enabled_rules_only(tree):
    configure(tree, "rules:\n  enable: [legacy-create-workqueue]\n")
    assert rules_of(review(tree)) == ["legacy-create-workqueue"]


def test_min_severity_from_the_file_and_the_command_line(tree):
    assert rules_of(review(tree, "--min-severity", "warning")) == INTRODUCED[:2]
    configure(tree, "min-severity: warning\n")
    assert rules_of(review(tree)) == INTRODUCED[:2]
    assert rules_of(review(tree, "--min-severity", "note")) == INTRODUCED  # the command line wins
    assert rules_of(review(tree, "--min-severity", "error")) == []
    assert review(tree, "--min-severity", "error").exit_code == 0


def test_max_findings_per_patch_most_severe_first(tree):
    result = review(tree, "--max-findings", "1")
    assert rules_of(result) == ["max-active-over-limit", "legacy-create-workqueue"]
    assert result.stderr.splitlines()[-1] == ("wqlint: patch 3: 1 more introduced finding not printed (at most "
                                              "1 a patch, the most severe first)")
    checks = [json.loads(ln) for ln in review(tree, "--max-findings", "1", "--format", "patchwork").stdout.splitlines()]
    assert [len(c["fingerprints"]) for c in checks] == [0, 1, 1]
    configure(tree, "max-findings: 1\n")
    assert rules_of(review(tree)) == ["max-active-over-limit", "legacy-create-workqueue"]


def test_paths_opt_in(tree):
    configure(tree, "paths: []\n")  # muted by default
    assert rules_of(review(tree)) == []
    assert review(tree).exit_code == 0
    configure(tree, "paths: [fs/]\n")
    assert rules_of(review(tree)) == []
    configure(tree, "paths: [drivers/demo/extra.c]\n")
    assert rules_of(review(tree)) == INTRODUCED


@pytest.mark.parametrize("text, problem", [
    ("rules:\n  disable: [no-such-rule]\n", "rules.disable: unknown rule 'no-such-rule'"),
    ("min-severity: loud\n", "min-severity: want one of note, warning, error"),
    ("max-findings: 0\n", "max-findings: want a positive number"),
    ("colour: red\n", "unknown key 'colour' (known: rules, min-severity, max-findings, paths)"),
    ("a: &x [1]\nb: *x\n", "YAML anchors and aliases are not read here"),
    ("rules: [\n", "not valid YAML"),
])
def test_a_bad_configuration_is_one_line_and_exit_2(tree, text, problem):
    configure(tree, text)
    for args in (("review", SERIES, "--tree", tree), ("scan", tree, "--no-cache")):
        result = run(*args)
        assert result.exit_code == 2, result.stderr
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"Error: {tree / '.wqlint.yaml'}") and problem in line, line


def test_all_lists_old_findings_of_the_touched_files_only(tmp_path):
    repo = Repo(tmp_path / "repo", TREE)
    other = (TREE / "drivers/demo/demo.c").read_text().replace("demo_", "other_")
    repo.write("drivers/demo/other.c", other)
    repo.commit("demo: a second driver")
    base = tmp_path / "base"
    shutil.copytree(repo.path, base, ignore=shutil.ignore_patterns(".git"))
    repo.edit("drivers/demo/demo.c", "/* one work item per CPU */", "/* one work item per possible CPU */")
    repo.commit("demo: say which CPUs")
    (patch,) = repo.format_patch(tmp_path / "out", "all")
    lines = run("review", patch, "--tree", base, "-j", "1", "--all").stdout.splitlines()
    heads = [ln.split(":")[0] for ln in lines if ln and not ln.startswith(" ")]
    assert heads == ["drivers/demo/demo.c"]
    assert lines[-1] == "    pre-existing"


@pytest.mark.skipif(not (shutil.which("sparse") and shutil.which("cpp")), reason="needs Debian's sparse and cpp")
def test_check_reads_the_configuration_of_the_tree(tmp_path, monkeypatch):
    from test_check import CHECKFLAGS
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "check", src)
    build = tmp_path / "build"
    build.mkdir()
    monkeypatch.chdir(build)
    for var in ("KBUILD_EXTMOD", "KBUILD_EXTMOD_OUTPUT", "srctree", "WQLINT_DEBUG"):
        monkeypatch.delenv(var, raising=False)

    def check():
        return run("check", *CHECKFLAGS, "-nostdinc", "-I", src / "include", "-D__KERNEL__",
                   "-DCONFIG_WQLINT_DEMO_UNBOUND=1", src / "demo.c")
    before = check()
    assert before.exit_code == 0 and "[unbound-max-active-cpu-count]" in before.stderr
    configure(src, "rules:\n  disable: [unbound-max-active-cpu-count]\n")
    after = check()
    assert (after.exit_code, after.stderr) == (0, "")
    configure(src, "paths: [pool/]\n")
    assert check().stderr == ""
    configure(src, "paths: [demo.c]\n")
    assert check().stderr == before.stderr
    configure(src, "min-severity: loud\n")
    bad = check()
    assert (bad.exit_code, bad.stderr) == (2, f"wqlint check: {src / '.wqlint.yaml'}: min-severity: want one of "
                                              "note, warning, error\n")
