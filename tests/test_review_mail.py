"""`review --format mail`: the reply a maintainer would send: greeting the patch's author by
first name, a '>>' summary line per finding with its message, prose wrapped at 72."""
from __future__ import annotations

import shutil

import pytest

from conftest import FIXTURES
from helpers import run
from patchrepo import Repo

from wqlint.formatters.review.mail import first_name

HERE = FIXTURES / "review"
PATCH = (HERE / "add-queue.patch").read_text()


@pytest.mark.parametrize("display, first", [
    ("Jane Developer", "Jane"),
    ("Sterba, David", "David"),
    ("'Jane Developer' via linux-demo", "Jane"),
    ("Dr. Jane Developer", "Jane"),
    ("Jean-Luc Picard", "Jean-Luc"),
    ("Åsa Öberg", "Åsa"),
    ("linux", ""),  # one word: a handle or a team
    ("Linux", ""),
    ("kernel test robot", ""),  # not a capitalised name
    ("LKFT Bot", ""),
    ("jane@example.org", ""),
    ("", ""),
])
def test_first_name(display, first):
    assert first_name(display) == first


def reply(tmp_path, text):
    patch = tmp_path / "p.patch"
    patch.write_text(text)
    result = run("review", patch, "--tree", HERE / "tree", "-j", "1", "--format", "mail")
    assert result.exit_code == 1, result.stderr
    return result.stdout


def test_a_patch_sent_for_its_author_greets_the_author(tmp_path):
    text = PATCH.replace("\nWriteback must not", '\nFrom: "Doe, John" <john@example.org>\n\nWriteback must not', 1)
    got = reply(tmp_path, text)
    head, _, body = got.partition("\n\n")
    assert head.splitlines()[1:3] == ['To: "Doe, John" <john@example.org>',
                                      "Cc: Jane Developer <jane@example.org>,"]
    assert body.splitlines()[0] == "Hi John,"


def test_a_sender_that_is_no_person_gets_no_name(tmp_path):
    got = reply(tmp_path, PATCH.replace("From: Jane Developer <jane@example.org>", "From: Linux <linux@example.org>"))
    assert got.partition("\n\n")[2].splitlines()[0] == "Hi,"


def test_summary_lines_carry_the_message_and_everything_is_wrapped(tmp_path):
    got = reply(tmp_path, PATCH)
    body = got.partition("\n\n")[2].splitlines()
    at = body.index(next(ln for ln in body if ln.startswith(">> ")))
    assert body[at:at + 3] == [
        ">> drivers/demo/demo.c:23:18: warning: WQ_UNBOUND workqueue with",
        "   max_active derived from a CPU count: say whether a global or a",
        "   per-scope limit is meant [unbound-max-active-cpu-count]"]
    assert [ln for ln in body if not ln.startswith("> ") and len(ln) > 72] == []


def test_one_comment_for_the_queues_a_changed_line_reaches(tmp_path):
    """A field several queues read: the line that sets it gets one comment naming them all,
    with the chain of the first (the summary still lists each finding)."""
    repo = Repo(tmp_path / "repo", HERE / "tree")
    repo.edit("fs/pool/queue.c", "\treturn info->wq ? 0 : -ENOMEM;\n}\n",
              "\treturn info->wq ? 0 : -ENOMEM;\n}\n\nint pool_start_more(struct pool_info *info)\n{\n"
              "\tinfo->wq = alloc_workqueue(\"pool_more\", WQ_UNBOUND, info->nr_workers);\n"
              "\treturn info->wq ? 0 : -ENOMEM;\n}\n")
    repo.commit("pool: a second queue")
    base = tmp_path / "base"
    shutil.copytree(repo.path, base, ignore=shutil.ignore_patterns(".git"))
    repo.edit("fs/pool/super.c", "info->nr_workers = 4;", "info->nr_workers = num_online_cpus();")
    repo.commit("pool: one worker per CPU")
    (patch,) = repo.format_patch(tmp_path / "out", "two")
    result = run("review", patch, "--tree", base, "-j", "1", "--format", "mail")
    assert result.exit_code == 1, result.stderr
    body = result.stdout.partition("\n\n")[2].splitlines()
    assert [ln for ln in body if ln.startswith(">> ")] == [
        ">> fs/pool/queue.c:8:13: warning: WQ_UNBOUND workqueue with max_active",
        ">> fs/pool/queue.c:14:13: warning: WQ_UNBOUND workqueue with max_active"]
    at = body.index("This line reaches 2 workqueues, allocated at fs/pool/queue.c:8, 14:")
    assert body[at - 3:at] == ["This patch changes max_active to num_online_cpus(): it now follows the",
                               "CPU count.", ""]
    assert "Resolution chain (of fs/pool/queue.c:8):" in body
    assert sum(ln.startswith("Details: ") for ln in body) == 1


def test_what_the_change_did_names_the_value_a_field_now_holds(tmp_path):
    repo = Repo(tmp_path / "repo", HERE / "tree")
    repo.edit("fs/pool/super.c", "info->nr_workers = 4;", "info->nr_workers = min(num_online_cpus() * 2, 64);")
    repo.commit("pool: two workers per CPU")
    (patch,) = repo.format_patch(tmp_path / "out", "twice")
    lines = run("review", patch, "--tree", HERE / "tree", "-j", "1").stdout.splitlines()
    assert lines[-1] == ("    this patch changes max_active to min(num_online_cpus() * 2, 64): it now follows the "
                         "CPU count")
