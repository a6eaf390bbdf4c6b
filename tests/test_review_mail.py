"""`review --format mail`: the reply a maintainer would send: greeting the patch's author by
first name, a '>>' summary line per finding with its message, prose wrapped at 72."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from helpers import run

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
