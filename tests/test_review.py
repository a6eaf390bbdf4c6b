"""`wqlint review`: only what a patch series introduces, on the lines it adds.

The fixtures under fixtures/review/ were made with `git format-patch` from small repositories
whose base is fixtures/review/tree/; the malformed mbox and the '../' patch were cut and edited
from that real output. Golden outputs are in fixtures/review/expected/.
"""
from __future__ import annotations

import hashlib
import json
import os

import pytest

from conftest import FIXTURES
from helpers import run

from wqlint import catalogue, mail
from wqlint.review import ReviewError, review

HERE = FIXTURES / "review"
TREE = HERE / "tree"
EXPECTED = HERE / "expected"


def review_cli(*args, tree=True):
    return run("review", *(["--tree", TREE] if tree else []), *args, "-j", "1")


def golden(name: str) -> str:
    return (EXPECTED / name).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def cat():
    return catalogue.load()


def tree_digest() -> str:
    h = hashlib.sha256()
    for dirpath, dirs, names in sorted(os.walk(TREE)):
        dirs.sort()
        for n in sorted(names):
            p = os.path.join(dirpath, n)
            h.update(p.encode() + b"\0" + open(p, "rb").read())
    return h.hexdigest()


# -- mail intake --------------------------------------------------------------------------------
def test_format_patch_intake():
    (patch,) = mail.load([str(HERE / "add-queue.patch")])
    assert patch.subject == "[PATCH] demo: flush the device from its own queue"
    assert patch.message_id == "<9be6c60dc298d3d94bd6284e2568614d77c9db12.1795318917.git.jane@example.org>"
    assert (patch.author, patch.author_address) == ("Jane Developer", "jane@example.org")
    assert patch.recipients == ("linux-demo@vger.example.org", "Maintainer <maint@example.org>")
    (fdiff,) = patch.files
    assert (fdiff.old_path, fdiff.new_path) == ("drivers/demo/demo.c", "drivers/demo/demo.c")
    assert [(h.old_start, h.old_count, h.new_start, h.new_count) for h in fdiff.hunks] == [
        (6, 6, 6, 7), (18, 11, 19, 17)]
    assert fdiff.hunks[0].lines[3] == ("+", "\tstruct workqueue_struct *flush_wq;")


def test_series_mbox_skips_the_cover_letter():
    series = mail.load([str(HERE / "series.mbox")])
    assert [(p.number, p.subject) for p in series] == [
        (1, "[PATCH 1/3] demo: add extra queues"),
        (2, "[PATCH 2/3] demo: add an event queue"),
        (3, "[PATCH 3/3] demo: let the extra queue run two items per CPU")]
    assert series[0].files[0].old_path is None  # a new file
    assert series[2].references == ("<cover.1795318918.git.jane@example.org>",)


def test_input_size_is_bounded(tmp_path, monkeypatch):
    big = tmp_path / "big.patch"
    big.write_bytes(b"x" * 2048)
    monkeypatch.setattr(mail, "MAX_INPUT_BYTES", 1024)
    with pytest.raises(mail.MailError, match="big.patch: larger than"):
        mail.read_input(str(big))


@pytest.mark.parametrize("path,problem", [
    ("/etc/passwd.c", "absolute or not a plain path"),
    ("drivers/../../etc/x.c", "contains '..'"),
    (".git/hooks/x.c", "inside .git"),
])
def test_untrusted_paths_are_refused(tmp_path, path, problem):
    bad = tmp_path / "bad.patch"
    bad.write_text((HERE / "add-queue.patch").read_text().replace("drivers/demo/demo.c", path))
    result = review_cli(bad)
    assert (result.exit_code, result.stdout) == (3, "")
    assert problem in result.stderr


# -- the cases ----------------------------------------------------------------------------------
def test_new_unbound_queue_gets_one_comment_mail_golden():
    before = tree_digest()
    result = review_cli(HERE / "add-queue.patch", "--format", "mail")
    assert result.exit_code == 1, result.stderr
    assert result.stdout == golden("add-queue.mail")
    assert tree_digest() == before  # the user's tree is never written


def test_mail_is_wrapped_and_threaded():
    text = golden("add-queue.mail")
    head, _, body = text.partition("\n\n")
    assert "Subject: Re: [PATCH] demo: flush the device from its own queue" in head.splitlines()
    msgid = "<9be6c60dc298d3d94bd6284e2568614d77c9db12.1795318917.git.jane@example.org>"
    assert f"In-Reply-To: {msgid}" in head.splitlines()
    assert f"References: {msgid}" in head.splitlines()
    for line in body.splitlines():
        assert line.startswith(">") or len(line) <= 72, line
    # the comment sits right under the quoted statement it is about
    quoted = body.splitlines()
    at = quoted.index("> +\t\t\t\t\tnum_online_cpus());")
    assert quoted[at - 1].startswith("> +\tdev->flush_wq = alloc_workqueue(")
    assert quoted[at + 2].startswith("warning: WQ_UNBOUND workqueue")
    assert "Details: wqlint explain unbound-max-active-cpu-count" in quoted


def test_text_format_of_the_new_queue():
    result = review_cli(HERE / "add-queue.patch")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("drivers/demo/demo.c:23:18: warning: WQ_UNBOUND workqueue with max_active "
                               "derived from a CPU count")
    assert lines[0].endswith("[unbound-max-active-cpu-count]")
    assert [ln for ln in lines if not ln.startswith(" ")] == [lines[0]]


def test_unrelated_lines_next_to_an_existing_problem_get_no_comment():
    result = review_cli(HERE / "unrelated.patch")
    assert (result.exit_code, result.stdout) == (0, "")
    for fmt in ("mail", "github", "rdjson"):
        out = review_cli(HERE / "unrelated.patch", "--format", fmt).stdout
        assert out == {"mail": "", "github": golden("none.github.json"),
                       "rdjson": golden("none.rdjson")}[fmt]


def test_all_shows_the_existing_problem_as_pre_existing():
    result = review_cli(HERE / "unrelated.patch", "--all")
    assert result.exit_code == 0  # nothing introduced
    lines = result.stdout.splitlines()
    assert lines[0].startswith("drivers/demo/demo.c:18:16: warning: WQ_UNBOUND")
    assert lines[-1] == "    pre-existing"


def test_field_assignment_is_blamed_for_the_queue_in_another_file():
    result = review_cli(HERE / "field.patch", "--format", "github")
    assert result.exit_code == 1
    assert result.stdout == golden("field.github.json")
    doc = json.loads(result.stdout)
    assert [(c["path"], c["line"], c["side"]) for c in doc["comments"]] == [("fs/pool/super.c", 8, "RIGHT")]
    assert review_cli(HERE / "field.patch", "--format", "mail").stdout == golden("field.mail")
    assert review_cli(HERE / "field.patch", "--format", "rdjson").stdout == golden("field.rdjson")
    text = review_cli(HERE / "field.patch").stdout.splitlines()
    assert text[0].startswith("fs/pool/queue.c:8:13: warning: WQ_UNBOUND")
    assert text[-2:] == ["    introduced at fs/pool/super.c:8",
                         "    this patch changes max_active to num_online_cpus(): it now follows the CPU count"]


def test_field_patch_without_tree_says_resolution_is_reduced():
    result = review_cli(HERE / "field.patch", tree=False)
    assert (result.exit_code, result.stdout) == (0, "")
    assert "reduced resolution" in result.stderr


def test_new_queue_without_tree_is_still_found():
    result = review_cli(HERE / "add-queue.patch", "--kernel-version", "6.12", tree=False)
    assert result.exit_code == 1
    assert result.stdout.startswith("drivers/demo/demo.c:23:18: warning: WQ_UNBOUND")


def test_fix_is_acknowledged():
    result = review_cli(HERE / "fix.patch")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "drivers/demo/demo.c:18:16: fixed: WQ_UNBOUND workqueue with max_active derived from a CPU "
        "count: say whether a global or a per-scope limit is meant (on v6.12 max_active of an "
        "unbound queue is system-wide (5797b1c18919) but fixed at the num_possible_cpus() seen at "
        "allocation, not updated on CPU hotplug; with 96 CPUs up to 96 in-flight items) "
        "[unbound-max-active-cpu-count]"]
    assert review_cli(HERE / "fix.patch", "--format", "mail").stdout == ""


def test_three_patch_series_blames_each_patch(cat):
    result = review_cli(HERE / "series.mbox")
    assert result.exit_code == 1
    assert result.stdout == golden("series.txt")
    got = review(mail.load([str(HERE / "series.mbox")]), cat, tree=str(TREE))
    assert [(c.origin.patch, c.path, c.line, c.finding.rule_id) for c in got.comments] == [
        (2, "drivers/demo/extra.c", 16, "legacy-create-workqueue"),
        (3, "drivers/demo/extra.c", 13, "max-active-over-limit"),
        (3, "drivers/demo/extra.c", 13, "unbound-max-active-cpu-count")]
    replies = review_cli(HERE / "series.mbox", "--format", "mail").stdout
    subjects = [ln for ln in replies.splitlines() if ln.startswith("Subject: ")]
    assert subjects == ["Subject: Re: [PATCH 2/3] demo: add an event queue",
                        "Subject: Re: [PATCH 3/3] demo: let the extra queue run two items per CPU"]
    assert replies.count("\nFrom wqlint Mon Sep 17 00:00:00 2001\n") == 1
    assert "References: <cover.1795318918.git.jane@example.org>\n <" in replies


def test_series_as_separate_files_and_stdin(tmp_path):
    text = (HERE / "series.mbox").read_text()
    result = run("review", "--tree", TREE, "-j", "1", "-", input=text)
    assert result.exit_code == 1
    assert result.stdout == golden("series.txt")


def test_sarif_review_is_fingerprinted_and_points_at_the_added_line():
    first = json.loads(review_cli(HERE / "field.patch", "--format", "sarif").stdout)
    again = json.loads(review_cli(HERE / "field.patch", "--format", "sarif").stdout)
    run0 = first["runs"][0]
    assert run0["automationDetails"] == {"id": "wqlint/review/"}
    (res,) = run0["results"]
    assert res["ruleId"] == "unbound-max-active-cpu-count"
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "fs/pool/queue.c"
    assert res["relatedLocations"][0]["physicalLocation"]["region"] == {"startLine": 8}
    assert res["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "fs/pool/super.c"
    assert res["partialFingerprints"] == again["runs"][0]["results"][0]["partialFingerprints"]


# -- bad input ---------------------------------------------------------------------------------
def test_malformed_mbox_exits_3():
    result = review_cli(HERE / "malformed.mbox")
    assert (result.exit_code, result.stdout) == (3, "")
    assert result.stderr == (
        f"Error: {HERE / 'malformed.mbox'}: message 3: drivers/demo/extra.c: hunk #1: truncated or "
        "corrupt: its lines do not add up to the header's 9 old and 13 new lines\n")


def test_patch_that_does_not_apply_names_patch_and_hunk():
    result = review_cli(HERE / "stale.patch")
    assert (result.exit_code, result.stdout) == (3, "")
    assert result.stderr == (
        f"Error: {HERE / 'stale.patch'} (patch 1 '[PATCH] demo: make the receive queue high "
        "priority'): drivers/demo/demo.c: hunk #1 (@@ -10,7 +10,7 @@) does not apply: "
        "drivers/demo/demo.c:13 is 'dev->io_wq = alloc_workqueue(\"demo_io\", WQ_UNBOUND | WQ_M...', "
        "the hunk expects 'dev->io_wq = alloc_workqueue(\"demo_rx\", WQ_UNBOUND | WQ_M...' "
        "(and no other place matches)\n")


def test_dotdot_paths_are_refused():
    result = review_cli(HERE / "dotdot.patch")
    assert (result.exit_code, result.stdout) == (3, "")
    assert result.stderr == (f"Error: {HERE / 'dotdot.patch'}: refusing path "
                             "'a/../../drivers/demo/demo.c': contains '..'\n")


def test_symlink_patch_is_refused():
    result = review_cli(HERE / "symlink.patch")
    assert result.exit_code == 3
    assert result.stderr == (f"Error: {HERE / 'symlink.patch'}: refusing drivers/demo/cpumask.h: "
                             "the patch makes it a symbolic link\n")


def test_patching_through_a_symlink_in_the_tree_is_refused(tmp_path, cat):
    tree = tmp_path / "tree"
    (tree / "drivers").mkdir(parents=True)
    (tree / "elsewhere").mkdir()
    (tree / "drivers" / "demo").symlink_to(tree / "elsewhere")
    with pytest.raises(ReviewError, match="symbolic link drivers/demo in the tree"):
        review(mail.load([str(HERE / "add-queue.patch")]), cat, tree=str(tree))


def test_text_with_no_diff_is_unreadable_input(tmp_path):
    note = tmp_path / "note.eml"
    note.write_text("From: a@example.org\nSubject: hello\nMessage-ID: <x@y>\n\nJust words.\n")
    result = review_cli(note)
    assert result.exit_code == 3
    assert result.stderr == f"Error: {note}: no diff in message 'hello'\n"


def test_usage_errors_exit_2():
    assert run("review").exit_code == 2
    assert run("review", "--format", "nope", HERE / "fix.patch").exit_code == 2
    assert run("review", "-", "-").exit_code == 3  # stdin only once: unreadable input


# -- --git BASE..HEAD ----------------------------------------------------------------------------
def _git(repo, *args):
    import subprocess
    env = dict(os.environ, GIT_AUTHOR_NAME="T", GIT_AUTHOR_EMAIL="t@example.org",
               GIT_COMMITTER_NAME="T", GIT_COMMITTER_EMAIL="t@example.org")
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def test_git_range_reviews_commits_of_a_checkout_at_head(tmp_path):
    import shutil
    repo = tmp_path / "repo"
    shutil.copytree(TREE, repo)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    _git(repo, "am", "-q", str(HERE / "add-queue.patch"))
    by_git = run("review", "--git", "HEAD~1..HEAD", "--tree", repo, "-j", "1")
    by_file = review_cli(HERE / "add-queue.patch")
    assert by_git.exit_code == 1
    assert by_git.stdout == by_file.stdout
    assert run("review", "--git", "HEAD..HEAD", "--tree", repo).exit_code == 0
    assert run("review", HERE / "add-queue.patch", "--git", "HEAD~1..HEAD", "--tree", repo).exit_code == 2


def test_the_configuration_of_a_review_is_the_trees_before_the_series(tmp_path):
    """A series that mutes wqlint in the tree's .wqlint.yaml does not mute its own review: the
    configuration is read as of the series' base, like the files it changes."""
    import shutil
    repo = tmp_path / "repo"
    shutil.copytree(TREE, repo)
    (repo / ".wqlint.yaml").write_text("min-severity: note\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    (repo / ".wqlint.yaml").write_text("paths: []\n")
    _git(repo, "commit", "-q", "-a", "-m", "wqlint: mute")
    _git(repo, "am", "-q", str(HERE / "add-queue.patch"))
    by_git = run("review", "--git", "HEAD~2..HEAD", "--tree", repo, "-j", "1")
    assert by_git.exit_code == 1, by_git.stderr
    assert by_git.stdout.startswith(review_cli(HERE / "add-queue.patch").stdout.rstrip("\n"))
    # what the series wrote is the configuration of the review of what comes after it
    assert run("review", "--git", "HEAD~1..HEAD", "--tree", repo, "-j", "1").exit_code == 0
    # a base whose .wqlint.yaml cannot be used is named as it was there
    (repo / ".wqlint.yaml").write_text("nope: 1\n")
    _git(repo, "commit", "-q", "-a", "-m", "wqlint: a key it does not know")
    (repo / ".wqlint.yaml").write_text("paths: []\n")
    _git(repo, "commit", "-q", "-a", "-m", "wqlint: mute")
    bad = run("review", "--git", "HEAD~1..HEAD", "--tree", repo, "-j", "1")
    assert (bad.exit_code, bad.stderr) == (2, f"Error: {repo.resolve()}/.wqlint.yaml before the series: unknown key "
                                              "'nope' (known: rules, min-severity, max-findings, paths)\n")
