"""The channels kernel CI uses: b4's per-patch check command (run by the real b4 on a series
in a git repository) and the checks a bot POSTs to patchwork."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES
from helpers import run
from patchrepo import ENV, Repo
from test_review_cases import CFG_C, SCAN_C

TREE = FIXTURES / "review" / "tree"
WQLINT = Path(sys.executable).with_name("wqlint")
B4 = shutil.which("b4", path=str(Path(sys.executable).parent)) or shutil.which("b4")


def _series(tmp_path):
    """A repository at a base with scan.c and cfg.c, on a b4 prep branch with three commits:
    a comment (clean), WQ_UNBOUND dropped next to a CPU-count max_active (a warning), an
    ordered queue with WQ_SYSFS (an error on v6.12)."""
    repo = Repo(tmp_path / "repo", TREE)
    repo.write("drivers/demo/scan.c", SCAN_C)
    repo.write("drivers/demo/cfg.c", CFG_C)
    repo.commit("demo: scanning and configuration queues")
    return repo


def _b4(repo, *args, env):
    return subprocess.run([B4, *args], cwd=repo.path, capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.skipif(B4 is None, reason="b4 is in the test extra (pip install -e .[test])")
def test_b4_prep_check_runs_review_per_patch(tmp_path):
    repo = _series(tmp_path)
    env = {**os.environ, **ENV, "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    repo.git("config", "user.name", ENV["GIT_AUTHOR_NAME"])
    repo.git("config", "user.email", ENV["GIT_AUTHOR_EMAIL"])
    repo.git("config", "b4.prep-perpatch-check-cmd", f"{WQLINT} review --format b4 --tree . -j 1 -")
    made = _b4(repo, "prep", "-n", "demo-queues", env=env)
    assert made.returncode == 0, made.stderr
    repo.edit("drivers/demo/scan.c", "/* Scanning queues of the demo driver. */",
              "/* Scanning and event queues of the demo driver. */")
    repo.commit("demo: say what scan.c holds")
    repo.edit("drivers/demo/scan.c", "\t\t\t\t  WQ_UNBOUND | WQ_MEM_RECLAIM,", "\t\t\t\t  WQ_MEM_RECLAIM,")
    repo.commit("demo: keep scanning on the submitting CPU")
    repo.edit("drivers/demo/cfg.c", 'alloc_workqueue("demo_cfg", WQ_UNBOUND | WQ_SYSFS, 1);',
              'alloc_ordered_workqueue("demo_cfg", WQ_SYSFS);')
    repo.commit("demo: make the configuration queue ordered")
    checked = _b4(repo, "prep", "--check", env=env)
    assert checked.returncode == 0, checked.stderr
    log = re.sub(r"\x1b\[[0-9;]*m", "", checked.stdout + checked.stderr)
    reports = [ln.strip() for ln in log.splitlines() if "wqlint:" in ln]
    assert reports == [  # (b4 lists a patch that passed by its subject alone)
        "● wqlint: drivers/demo/scan.c:16: WARNING: This patch drops WQ_UNBOUND: max_active = "
        "num_online_cpus() becomes a per-CPU limit. per-CPU workqueue with max_active derived from a "
        "CPU count: the limit applies on every CPU, so in-flight items grow with the square of the "
        "CPU count (per-CPU queue: max_active is per CPU on every kernel; with 96 CPUs max_active = 96, "
        "up to 96 x 96 = 9216 in-flight items) [percpu-max-active-cpu-count]",
        "● wqlint: drivers/demo/cfg.c:10: ERROR: This patch adds __WQ_ORDERED: an ordered queue with "
        "WQ_SYSFS is refused by workqueue_sysfs_register() on v6.12: the allocation fails at boot. "
        "ordered workqueue with WQ_SYSFS: workqueue_sysfs_register() refuses it with a WARN_ON and "
        "the allocation fails (allowed from v7.1, a4aa8d94f243) (on v6.12 through "
        "alloc_ordered_workqueue()) [ordered-workqueue-sysfs]"]
    assert "Success: 1, Warning: 1, Error: 1" in log


def test_b4_format_on_a_tree_that_does_not_have_the_patch(tmp_path):
    """b4 am's per-patch check runs where the patch is to be applied."""
    repo = _series(tmp_path)
    base = tmp_path / "base"
    shutil.copytree(repo.path, base, ignore=shutil.ignore_patterns(".git"))
    repo.edit("drivers/demo/scan.c", "unsigned int flags = WQ_UNBOUND;", "unsigned int flags = 0;")
    repo.commit("demo: keep events on the submitting CPU")
    (patch,) = repo.format_patch(tmp_path / "out", "b4am")
    result = run("review", "--format", "b4", "--tree", base, "-j", "1", "-", input=patch.read_text())
    assert (result.exit_code, result.stderr) == (1, "")
    (line,) = result.stdout.splitlines()
    assert line.startswith("drivers/demo/scan.c:11: WARNING: This patch drops WQ_UNBOUND: ")
    clean = run("review", "--format", "b4", "--tree", TREE, "-j", "1", FIXTURES / "review" / "unrelated.patch")
    assert (clean.exit_code, clean.stdout, clean.stderr) == (0, "", "")


# -- b4 review (0.16) ---------------------------------------------------------------------------
B4CHECKS = Path(__file__).with_name("b4checks.py")
SCAN_WARNING = ("drivers/demo/scan.c:16: WARNING: This patch drops WQ_UNBOUND: max_active = num_online_cpus() "
                "becomes a per-CPU limit. per-CPU workqueue with max_active derived from a CPU count: the limit "
                "applies on every CPU, so in-flight items grow with the square of the CPU count (per-CPU queue: "
                "max_active is per CPU on every kernel; with 96 CPUs max_active = 96, up to 96 x 96 = 9216 "
                "in-flight items) [percpu-max-active-cpu-count]")
CFG_ERROR = ("drivers/demo/cfg.c:10: ERROR: This patch adds __WQ_ORDERED: an ordered queue with WQ_SYSFS is "
             "refused by workqueue_sysfs_register() on v6.12: the allocation fails at boot. ordered workqueue "
             "with WQ_SYSFS: workqueue_sysfs_register() refuses it with a WARN_ON and the allocation fails "
             "(allowed from v7.1, a4aa8d94f243) (on v6.12 through alloc_ordered_workqueue()) "
             "[ordered-workqueue-sysfs]")


SERIES = [("drivers/demo/scan.c", "/* Scanning queues of the demo driver. */",
           "/* Scanning and event queues of the demo driver. */", "demo: say what scan.c holds"),
          ("drivers/demo/scan.c", "\t\t\t\t  WQ_UNBOUND | WQ_MEM_RECLAIM,", "\t\t\t\t  WQ_MEM_RECLAIM,",
           "demo: keep scanning on the submitting CPU"),
          ("drivers/demo/cfg.c", 'alloc_workqueue("demo_cfg", WQ_UNBOUND | WQ_SYSFS, 1);',
           'alloc_ordered_workqueue("demo_cfg", WQ_SYSFS);', "demo: make the configuration queue ordered")]


def _sent(tmp_path, edits):
    """A series of one commit per edit, sent by `b4 send -o` (cover letter with base-commit
    and change-id, b4's Message-IDs) as one mbox, and the repository at its base with wqlint
    as b4 review's per-patch and series check commands."""
    if B4 is None:
        pytest.skip("b4 is in the test extra (pip install -e .[test])")
    repo = _series(tmp_path)
    env = {**os.environ, **ENV, "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    repo.git("config", "user.name", ENV["GIT_AUTHOR_NAME"])
    repo.git("config", "user.email", ENV["GIT_AUTHOR_EMAIL"])
    assert _b4(repo, "prep", "-n", "demo-queues", env=env).returncode == 0
    for rel, old, new, subject in edits:
        if old is None:
            repo.write(rel, new)
        else:
            repo.edit(rel, old, new)
        repo.commit(subject)
    sent = _b4(repo, "send", "-o", str(tmp_path / "sent"), "--no-sign", env=env)
    assert sent.returncode == 0, sent.stderr
    mbox = tmp_path / "series.mbox"
    mbox.write_bytes(b"".join(b"From git@z Thu Jan  1 00:00:00 1970\n" + p.read_bytes() + b"\n"
                              for p in sorted((tmp_path / "sent").glob("*.eml"))))
    repo.git("checkout", "-q", "main")
    command = f"{WQLINT} review --format b4-review --tree . -j 1 -"
    repo.git("config", "b4.review-perpatch-check-cmd", command)
    repo.git("config", "b4.review-series-check-cmd", command)
    return repo, mbox, env


@pytest.fixture
def b4_series(tmp_path):
    """The three-patch series of test_b4_prep_check_runs_review_per_patch."""
    return _sent(tmp_path, SERIES)


def _b4_checks(repo, mbox, env, *args):
    proc = subprocess.run([sys.executable, str(B4CHECKS), str(mbox), *args], cwd=repo.path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _shown(results):
    """What b4's check results screen shows of each result: status, summary, detail lines."""
    return [(r["tool"], r["status"], r["summary"], [d["description"] for d in json.loads(r["details"] or "[]")])
            for r in results]


def test_b4_review_checks_on_a_checked_out_series(b4_series):
    """b4 applies the series at its base-commit on b4/review/<change-id>; the per-patch command
    gets each patch, the series command the cover letter and B4_TRACKING_FILE."""
    repo, mbox, env = b4_series
    got = _b4_checks(repo, mbox, env, "--checkout")
    assert [_shown(r) for r in got["perpatch"].values()] == [
        [("wqlint", "pass", "no workqueue problem introduced", [])],
        [("wqlint", "warn", "1 warning introduced: percpu-max-active-cpu-count", [SCAN_WARNING])],
        [("wqlint", "fail", "1 error introduced: ordered-workqueue-sysfs", [CFG_ERROR])]]
    assert [m.split("-v1-")[1].split("-")[0] for m in got["perpatch"]] == ["1", "2", "3"]
    assert _shown(got["series"]) == [
        ("wqlint", "fail", "1 error, 1 warning introduced: ordered-workqueue-sysfs, percpu-max-active-cpu-count",
         ["patch 2: " + SCAN_WARNING, "patch 3: " + CFG_ERROR])]
    # each detail carries the finding's fingerprint, the same per patch and for the series
    per_patch = [d["fingerprint"] for r in got["perpatch"].values() for d in json.loads(r[0]["details"] or "[]")]
    assert per_patch == [d["fingerprint"] for d in json.loads(got["series"][0]["details"])]


def test_b4_review_checks_with_the_series_not_checked_out(b4_series):
    """At the base, without a review branch: each patch is reviewed against the checkout; the
    cover letter alone names no patches, and the series result says it was not reviewed."""
    repo, mbox, env = b4_series
    got = _b4_checks(repo, mbox, env)
    assert [[r["status"] for r in rs] for rs in got["perpatch"].values()] == [["pass"], ["warn"], ["fail"]]
    assert _shown(got["series"]) == [
        ("wqlint", "warn", "not reviewed: the cover letter alone: b4 names the series' commits "
                           "(B4_TRACKING_FILE) only for a series checked out for review", [])]


def test_b4_review_per_patch_check_reviews_the_patch_where_the_series_puts_it(tmp_path):
    """Patch 2 edits the line patch 1 wrote: alone, at the base, it does not apply. With the
    series checked out for review (and the maintainer back on main), each patch is reviewed
    as its commit on b4's review branch."""
    repo, mbox, env = _sent(tmp_path, [
        ("drivers/demo/cfg.c", 'alloc_workqueue("demo_cfg", WQ_UNBOUND | WQ_SYSFS, 1);',
         'alloc_workqueue("demo_cfg", WQ_UNBOUND | WQ_SYSFS, 2);', "demo: two configuration items at once"),
        ("drivers/demo/cfg.c", 'alloc_workqueue("demo_cfg", WQ_UNBOUND | WQ_SYSFS, 2);',
         'alloc_ordered_workqueue("demo_cfg", WQ_SYSFS);', "demo: make the configuration queue ordered")])
    tracked = _b4_checks(repo, mbox, env, "--checkout", "--back")
    assert repo.git("rev-parse", "--abbrev-ref", "HEAD").decode().strip() == "main"
    assert [_shown(r) for r in tracked["perpatch"].values()] == [
        [("wqlint", "pass", "no workqueue problem introduced", [])],
        [("wqlint", "fail", "1 error introduced: ordered-workqueue-sysfs", [CFG_ERROR.replace(
            "This patch adds __WQ_ORDERED:",
            "This patch adds __WQ_ORDERED and changes max_active to another value:")])]]
    alone = _b4_checks(repo, mbox, env)  # no review branch: the patch alone against main
    (result,) = list(alone["perpatch"].values())[1]
    assert result["status"] == "fail" and ": drivers/demo/cfg.c: hunk #1 (@@ -7,7 +7,7 @@) does not apply: " \
        in result["summary"]


def test_b4_review_checks_read_the_configuration_the_series_found(tmp_path):
    """A series whose first patch mutes wqlint in .wqlint.yaml is reviewed, patch by patch and
    whole, with the configuration the tree had before it."""
    repo, mbox, env = _sent(tmp_path, [(".wqlint.yaml", None, "paths: []\n", "wqlint: not here")] + SERIES)
    got = _b4_checks(repo, mbox, env, "--checkout")
    assert [[r["status"] for r in rs] for rs in got["perpatch"].values()] == [["pass"], ["pass"], ["warn"], ["fail"]]
    assert _shown(got["series"])[0][1:3] == ("fail", "1 error, 1 warning introduced: ordered-workqueue-sysfs, "
                                                     "percpu-max-active-cpu-count")


# -- patchwork ----------------------------------------------------------------------------------
# What patchwork's CheckSerializer writes (patchwork/api/check.py; the rest is read-only) and
# what its Check model accepts (state choices, context a SlugField of 255).
# Each line also names its patch; Django REST framework's serializers ignore fields they do
# not declare, so the line is still the body to POST.
PATCHWORK_WRITABLE = {"state", "target_url", "context", "description"}
PATCH_IDENTITY = {"msgid", "subject", "patch", "fingerprints"}
PATCHWORK_STATES = {"pending", "success", "warning", "fail"}


def _valid_check(check: dict) -> None:
    assert set(check) - PATCH_IDENTITY <= PATCHWORK_WRITABLE and "state" in check
    assert check["state"] in PATCHWORK_STATES
    assert re.fullmatch(r"[-a-zA-Z0-9_]+", check["context"]) and len(check["context"]) <= 255
    if "target_url" in check:
        assert re.fullmatch(r"https?://[^\s/]+\S*", check["target_url"])
    assert isinstance(check["description"], str)


def test_patchwork_checks_one_per_patch_of_a_series():
    result = run("review", "--tree", TREE, "-j", "1", "--format", "patchwork",
                 "--target-url", "https://ci.example.org/wqlint/1", FIXTURES / "review" / "series.mbox")
    assert result.exit_code == 1, result.stderr
    checks = [json.loads(ln) for ln in result.stdout.splitlines()]
    for check in checks:
        _valid_check(check)
    assert [(c["state"], c["description"]) for c in checks] == [
        ("success", "no workqueue problem introduced"),
        ("warning", "1 workqueue problem introduced: drivers/demo/extra.c:16: legacy-create-workqueue"),
        ("warning", "2 workqueue problems introduced: drivers/demo/extra.c:13: max-active-over-limit; "
                    "drivers/demo/extra.c:13: unbound-max-active-cpu-count")]
    assert {c["target_url"] for c in checks} == {"https://ci.example.org/wqlint/1"}
    assert {c["context"] for c in checks} == {"wqlint"}
    # which patch each line is about, without relying on the order
    assert [(c["patch"], c["msgid"], c["subject"]) for c in checks] == [
        (1, "b7eab19cd7572bfa8ae7e7662fc017e643647f8f.1795318918.git.jane@example.org",
         "[PATCH 1/3] demo: add extra queues"),
        (2, "8f5ab2f551791b8eefef32dbb3a67e63fbdb249c.1795318918.git.jane@example.org",
         "[PATCH 2/3] demo: add an event queue"),
        (3, "8079069e70b84fb78d1acf97c98fcd321afba18f.1795318918.git.jane@example.org",
         "[PATCH 3/3] demo: let the extra queue run two items per CPU")]
    assert [len(c["fingerprints"]) for c in checks] == [0, 1, 2]
    assert all(re.fullmatch(r"[0-9a-f]{32}", fp) for c in checks for fp in c["fingerprints"])


def test_patchwork_target_url_must_be_a_url():
    result = run("review", "--tree", TREE, "--format", "patchwork", "--target-url", "not a url",
                 FIXTURES / "review" / "fix.patch")
    assert result.exit_code == 2


@pytest.mark.parametrize("content, problem", [
    (b"[1, 2", "not b4's tracking data (Expecting ',' delimiter: line 1 column 6"),
    (b'{"series": {"change-id": "a"}}', "not b4's tracking data (no 'first-patch-commit')"),
    (b'{"series": [1]}', "not b4's tracking data (not a JSON object with a \"series\" object)"),
    (b'{"series": {"first-patch-commit": "--output=/tmp/x", "change-id": "a"}}', "is not a commit id"),
    (b'{"series": {"first-patch-commit": "abcdef0", "change-id": "../../x"}}', "cannot name a branch"),
    (b"[" * 100000, "not b4's tracking data"),
])
def test_b4_tracking_file_is_data(tmp_path, monkeypatch, content, problem):
    tracking = tmp_path / "tracking.json"
    tracking.write_bytes(content)
    monkeypatch.setenv("B4_TRACKING_FILE", str(tracking))
    cover = "From: Jane <jane@example.org>\nSubject: [PATCH 0/2] demo: queues\nMessage-ID: <c@example.org>\n\nHi\n"
    result = run("review", "--format", "b4-review", "--tree", TREE, "-j", "1", "-", input=cover)
    assert result.exit_code == 3
    (entry,) = json.loads(result.stdout)
    assert entry["status"] == "fail" and problem in entry["summary"], entry
    assert result.stderr.startswith(f"Error: B4_TRACKING_FILE {tracking}: ")
