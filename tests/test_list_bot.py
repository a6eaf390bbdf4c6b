"""The list bot recipe of docs/list-bot.md (examples/list-bot/wqlint-list-bot), run offline
on a public-inbox style mbox (mboxrd, as lei writes it): each series is reviewed once against
the tree its base-commit names, and a finding is replied about once, across versions."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO
from patchrepo import ENV, Repo

TREE = FIXTURES / "review" / "tree"
BOT = REPO / "examples" / "list-bot" / "wqlint-list-bot"
WQLINT = Path(sys.executable).with_name("wqlint")
DEMO = "drivers/demo/demo.c"
POLL = '''
static struct workqueue_struct *demo_poll_wq;

static int demo_init_poll(void)
{
	demo_poll_wq = alloc_workqueue("demo_poll", WQ_UNBOUND, num_online_cpus());
	return demo_poll_wq ? 0 : -ENOMEM;
}
'''
SCRUB = '''
static struct workqueue_struct *demo_scrub_wq;

static int demo_init_scrub(void)
{
	demo_scrub_wq = alloc_workqueue("demo_scrub", 0, num_possible_cpus());
	return demo_scrub_wq ? 0 : -ENOMEM;
}
'''


def mboxrd(*mails: bytes) -> bytes:
    """Messages as public-inbox and lei write them: 'From mboxrd@z' separators, body lines
    starting with 'From ' (after any '>') escaped with one more '>', a blank line after each."""
    return b"".join(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + re.sub(rb"(?m)^(>*From )", rb">\1", m)
                    + (b"" if m.endswith(b"\n") else b"\n") + b"\n" for m in mails)


def split(text: bytes) -> list:
    return [m for m in re.split(rb"(?m)^From [0-9a-f]{40} Mon Sep 17 00:00:00 2001\n", text) if m.strip()]


@pytest.fixture
def world(tmp_path):
    """A kernel repository at a base commit, and a contributor's clone of it."""
    linux = Repo(tmp_path / "linux", TREE)
    base = linux.git("rev-parse", "HEAD").decode().strip()
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(linux.path), str(work)], check=True, env={**os.environ, **ENV})
    contributor = Repo.__new__(Repo)
    contributor.path = work
    return linux, contributor, base


def series(repo, base, count, version=1) -> list:
    args = ["format-patch", "--stdout", "--cover-letter", f"--base={base}", "--thread=shallow",
            "--to=linux-demo@vger.example.org", *([f"-v{version}"] if version > 1 else []), f"-{count}"]
    return split(repo.git(*args))


def bot(linux, mbox, state, status=0):
    """One run of the bot, with a clock that says the same second every time: runs that close
    together, and series whose roots repeat, must still give a reply file each."""
    clock = state.parent / "clock"
    clock.mkdir(exist_ok=True)
    (clock / "date").write_text("#!/bin/sh\necho 20261126000000\n")
    (clock / "date").chmod(0o755)
    env = {**os.environ, "WQLINT": str(WQLINT), "PATH": f"{clock}:{os.environ['PATH']}"}
    proc = subprocess.run(["sh", str(BOT), str(linux.path), str(mbox), str(state)], capture_output=True,
                          text=True, env=env, timeout=600)
    assert proc.returncode == status, proc.stderr
    return proc.stderr, sorted((state / "outbox").iterdir())


def test_the_bot_replies_once_per_finding_across_versions(world, tmp_path):
    linux, dev, base = world
    text = (dev.path / DEMO).read_text()
    dev.write(DEMO, text.replace("\nstatic void demo_exit_queues", POLL + "\nstatic void demo_exit_queues"))
    dev.commit("demo: poll the device from its own queue\n\nFrom the datasheet: polling needs its own context.")
    dev.edit(DEMO, "/* one work item per CPU */", "/* one work item per possible CPU */")
    dev.commit("demo: say which CPUs")
    v1 = series(dev, base, 2)
    reply = (b"From: Rev Iewer <rev@example.org>\nSubject: Re: [PATCH 1/2] demo: poll the device from its own"
             b" queue\nMessage-ID: <reply1@example.org>\nIn-Reply-To: " + re.search(rb"(?mi)^Message-ID: (.*)$", v1[1])
             .group(1) + b"\n\n> +\tdemo_poll_wq = alloc_workqueue(\"demo_poll\", WQ_UNBOUND, num_online_cpus());\n"
             b"\nWhy one per CPU?\n")
    inbox = tmp_path / "new.mbox"
    inbox.write_bytes(mboxrd(*v1, reply))
    listed = subprocess.run([str(WQLINT), "series", str(inbox)], capture_output=True, text=True, check=True).stdout
    (line,) = listed.splitlines()
    root, version, named, count, subject = line.split("\t")
    assert (version, named, count, subject) == ("v1", base, "2/2", "*** SUBJECT HERE ***")
    state = tmp_path / "state"

    said, outbox = bot(linux, inbox, state)
    assert said == ""
    (first,) = outbox
    mail = first.read_text()
    assert "Subject: Re: [PATCH 1/2] demo: poll the device from its own queue" in mail
    assert "\nHi Jane,\n" in mail
    summary = [ln for ln in mail.splitlines() if ln.startswith(">> ")]
    assert summary == [">> drivers/demo/demo.c:28:17: warning: WQ_UNBOUND workqueue with"]
    assert (state / "reviewed").read_text() == f"{root} v1\n"
    (fingerprint,) = (state / "reported").read_text().splitlines()

    # The same mail again (lei up found nothing new): nothing reviewed, nothing written.
    assert bot(linux, inbox, state) == ("", outbox)

    # v2: rebased comment edit, the same new queue, and a second problem in a third patch.
    text = (dev.path / DEMO).read_text()
    dev.write(DEMO, text.replace("\nstatic void demo_exit_queues", SCRUB + "\nstatic void demo_exit_queues"))
    dev.commit("demo: scrub from a queue of its own")
    # git format-patch names a cover letter by the second it ran in: v1 and v2 made within one
    # second share their root Message-ID, as they do here
    v2 = series(dev, base, 3, version=2)
    v2_root = re.search(rb"(?mi)^Message-ID: <(.*)>$", v2[0]).group(1)
    inbox.write_bytes(mboxrd(*(m.replace(v2_root, root.strip("<>").encode()) for m in v2)))
    said, outbox = bot(linux, inbox, state)
    assert said == ("wqlint: 1 introduced finding already reported (their fingerprints are in the --reported "
                    "file): not printed again\n")
    (second,) = [p for p in outbox if p != first]
    mail = second.read_text()
    assert "Subject: Re: [PATCH v2 3/3] demo: scrub from a queue of its own" in mail
    summary = [ln for ln in mail.splitlines() if ln.startswith(">> ")]
    assert summary == [">> drivers/demo/demo.c:36:18: warning: per-CPU workqueue with max_active"]
    assert "[unbound-max-active-cpu-count]" not in mail  # demo_poll: already reported for v1
    reported = (state / "reported").read_text().splitlines()
    assert reported[0] == fingerprint and len(reported) == 2
    assert (state / "reviewed").read_text().splitlines()[1].endswith(" v2")


def test_a_series_on_a_base_the_repository_lacks_waits(world, tmp_path):
    linux, dev, base = world
    dev.edit(DEMO, "/* one work item per CPU */", "/* one work item per possible CPU */")
    dev.commit("demo: say which CPUs")
    mails = [m.replace(base.encode(), b"0" * 40) for m in series(dev, base, 1)]
    inbox = tmp_path / "new.mbox"
    inbox.write_bytes(mboxrd(*mails))
    state = tmp_path / "state"
    said, outbox = bot(linux, inbox, state)
    assert outbox == [] and (state / "reviewed").read_text() == ""
    assert said.endswith(f"base commit {'0' * 40} is not in {linux.path}, left for a later run\n")


def _poll_series(dev, base) -> list:
    text = (dev.path / DEMO).read_text()
    dev.write(DEMO, text.replace("\nstatic void demo_exit_queues", POLL + "\nstatic void demo_exit_queues"))
    dev.commit("demo: poll the device from its own queue")
    dev.edit(DEMO, "/* one work item per CPU */", "/* one work item per possible CPU */")
    dev.commit("demo: say which CPUs")
    return series(dev, base, 2)


def _header(mail: bytes, name: str) -> bytes:
    return re.search(rb"(?mi)^" + name.encode() + rb": (.*)$", mail).group(1)


def test_a_mail_series_cannot_read_keeps_no_other_series_from_review(world, tmp_path):
    linux, dev, base = world
    v1 = _poll_series(dev, base)
    bad = (b"From: Someone <someone@example.org>\nSubject: [PATCH v" + b"9" * 5000 + b"] demo: huge\n"
           b"Message-ID: <huge@example.org>\n\ntext\n")
    inbox = tmp_path / "new.mbox"
    inbox.write_bytes(mboxrd(bad, *v1))
    state = tmp_path / "state"
    said, outbox = bot(linux, inbox, state, status=3)
    assert said.splitlines() == [
        f"Error: {inbox}: message 1 <huge@example.org>: a number of 5000 digits in its patch tag, left out",
        f"wqlint-list-bot: wqlint series {inbox} failed (exit status 3): only the series it listed were reviewed"]
    (reply,) = outbox
    assert "Subject: Re: [PATCH 1/2] demo: poll the device from its own queue" in reply.read_text()


def test_anothers_patch_in_the_thread_is_not_part_of_the_series(world, tmp_path):
    linux, dev, base = world
    v1 = _poll_series(dev, base)
    root = _header(v1[0], "Message-ID")
    # someone else's patch 2/2 in reply to the cover letter, and one numbered past the end:
    # hunks that do not apply to anything
    other = re.sub(rb"(?m)^From: .*$", b"From: Mal Lory <mal@example.org>", v1[2])
    other = other.replace(_header(v1[2], "Message-ID"), b"<other@example.org>")
    other = other.replace(b"one work item per", b"no work item per")
    past = other.replace(b"[PATCH 2/2]", b"[PATCH 3/2]").replace(b"<other@", b"<past@")
    inbox = tmp_path / "new.mbox"
    inbox.write_bytes(mboxrd(*v1[:2], other, past, v1[2]))
    listed = subprocess.run([str(WQLINT), "series", str(inbox)], capture_output=True, text=True)
    assert listed.returncode == 3
    assert [ln.split("\t")[0::3] for ln in listed.stdout.splitlines()] == [[root.decode(), "2/2"],
                                                                          ["<other@example.org>", "1/2"]]
    assert listed.stderr == f"Error: {inbox}: message 4 <past@example.org>: patch 3 of 2, left out\n"
    state = tmp_path / "state"
    said, outbox = bot(linux, inbox, state, status=3)
    (reply,) = outbox
    assert "Subject: Re: [PATCH 1/2] demo: poll the device from its own queue" in reply.read_text()
    assert "<other@example.org> v1: 1/2 patches so far, left for a later run" in said
    assert (state / "reviewed").read_text() == f"{root.decode()} v1\n"


def test_the_recipe_in_the_docs_is_the_script():
    doc = (REPO / "docs" / "list-bot.md").read_text()
    block = doc.split("<!-- list-bot-script -->\n```sh\n")[1].split("```")[0]
    assert block == BOT.read_text()


def test_series_listing_and_selection(tmp_path):
    inbox = FIXTURES / "review" / "series.mbox"
    listed = subprocess.run([str(WQLINT), "series", str(inbox)], capture_output=True, text=True)
    assert (listed.returncode, listed.stdout) == (0, "<cover.1795318918.git.jane@example.org>\tv1\t-\t3/3\t"
                                                     "*** SUBJECT HERE ***\n")
    missing = subprocess.run([str(WQLINT), "review", str(inbox), "--series", "nope@example.org"],
                             capture_output=True, text=True)
    assert (missing.returncode, missing.stderr) == (3, f"Error: {inbox}: no series <nope@example.org> "
                                                       f"(`wqlint series {inbox}` lists them)\n")
    picked = subprocess.run([str(WQLINT), "review", str(inbox), "--series", "cover.1795318918.git.jane@example.org",
                             "--tree", str(TREE), "-j", "1", "--format", "json"], capture_output=True, text=True)
    assert picked.returncode == 1, picked.stderr
    assert [p["number"] for p in json.loads(picked.stdout)["patches"]] == [1, 2, 3]


def _mail(msgid, subject, refs=(), body="text\n"):
    head = f"From: Jane Developer <jane@example.org>\nSubject: {subject}\nMessage-ID: <{msgid}>\n"
    if refs:
        head += f"In-Reply-To: <{refs[-1]}>\nReferences: " + " ".join(f"<{r}>" for r in refs) + "\n"
    return (head + "\n" + body).encode()


def test_series_of_a_list_archive():
    from wqlint.inbox import series_of
    mbox = mboxrd(
        _mail("c1", "[PATCH net-next 0/2] demo: queues", body="x\n\nbase-commit: " + "a" * 40 + "\n"),
        _mail("p1", "[PATCH net-next 1/2] demo: one", ["c1"]),
        _mail("r1", "Re: [PATCH net-next 1/2] demo: one", ["c1", "p1"]),
        _mail("p2", "[PATCH net-next 2/2] demo: two", ["c1"]),
        _mail("lone", "[PATCH] demo: fix a typo", ["bug-report"]),
        _mail("talk", "demo: what about queues?"),
        _mail("c2", "[RFC PATCH net-next v2 0/3] demo: queues", ["c1"]),
        _mail("q1", "[RFC PATCH net-next v2 1/3] demo: one", ["c1", "c2"]),
        _mail("q3", "[RFC PATCH net-next v2 3/3] demo: three", ["c1", "c2"], body="From the list.\n"),
    )
    got = [(s.root, s.version, s.base, s.patches, s.expected, s.subject, [n for n, _ in s.mails])
           for s in series_of(mbox)]
    assert got == [("<c1>", 1, "a" * 40, 2, 2, "demo: queues", [0, 1, 2]),
                   ("<lone>", 1, "", 1, 1, "demo: fix a typo", [1]),
                   ("<c2>", 2, "", 2, 3, "demo: queues", [0, 1, 3])]
    # a body line 'From ' survives the round trip through the series' own mbox
    (v2,) = [s for s in series_of(mbox) if s.version == 2]
    assert b"\n>From the list.\n" in v2.mbox() and b"\n\nFrom the list.\n" in series_of(v2.mbox())[0].mails[-1][1]
