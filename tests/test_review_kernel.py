"""wqlint review against the real linux-source-6.12 tree, with a patch made from it."""
from __future__ import annotations

import difflib
import hashlib
import json

import pytest

from helpers import run

REL = "fs/ext4/super.c"
OLD = 'alloc_workqueue("ext4-rsv-conversion", WQ_MEM_RECLAIM | WQ_UNBOUND, 1);'
NEW = 'alloc_workqueue("ext4-rsv-conversion", WQ_MEM_RECLAIM | WQ_UNBOUND,\n\t\t\t\tnum_online_cpus());'


@pytest.mark.kernel
def test_review_of_a_patch_against_linux_6_12(linux_6_12, tmp_path):
    path = linux_6_12 / REL
    before = path.read_bytes()
    text = before.decode()
    assert text.count(OLD) == 1
    line = text[: text.index(OLD)].count("\n") + 1
    diff = "".join(difflib.unified_diff(text.splitlines(True), text.replace(OLD, NEW).splitlines(True),
                                        f"a/{REL}", f"b/{REL}"))
    patch = tmp_path / "0001-ext4-rsv.patch"
    patch.write_text("From: Dev <dev@example.org>\nSubject: [PATCH] ext4: scale the reserved conversion queue\n"
                     "Message-ID: <rsv@example.org>\n\nScale it.\n---\n"
                     f"diff --git a/{REL} b/{REL}\n" + diff)
    result = run("review", patch, "--tree", linux_6_12, "-j", "2")
    assert result.exit_code == 1, result.stderr
    heads = [ln for ln in result.stdout.splitlines() if ln and not ln.startswith(" ")]
    assert heads[0].startswith(f"{REL}:{line}:")
    assert heads[0].endswith("[unbound-max-active-cpu-count]")
    assert "with 96 CPUs up to 96 in-flight items" in heads[0]
    comments = [h for h in heads if h.endswith("]") and ": fixed: " not in h]
    assert comments == [heads[0]]  # one comment, nothing else blamed
    # unbound-max-active-one is gone, but the same argument of the same queue now has a worse
    # finding: review says what the patch introduced, not that it fixed the old one.
    assert [h for h in heads if ": fixed: " in h] == []
    github = json.loads(run("review", patch, "--tree", linux_6_12, "--format", "github").stdout)
    assert [(c["path"], c["line"], c["side"]) for c in github["comments"]] == [(REL, line, "RIGHT")]
    assert "`unbound-max-active-cpu-count`" in github["comments"][0]["body"]
    reply = run("review", patch, "--tree", linux_6_12, "--format", "mail").stdout
    assert "Subject: Re: [PATCH] ext4: scale the reserved conversion queue" in reply
    assert "In-Reply-To: <rsv@example.org>" in reply
    assert f">> {REL}:{line}:" in reply and "> +\t\t\t\tnum_online_cpus());" in reply
    sarif = json.loads(run("review", patch, "--tree", linux_6_12, "--format", "sarif").stdout)
    results = sarif["runs"][0]["results"]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results] \
        == [("unbound-max-active-cpu-count", line)]
    assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(before).digest()


# A patch that drops WQ_UNBOUND on the line below the call, from a queue whose max_active is
# num_online_cpus(): fscrypt's read queue in 6.12 (gone in 7.3), f2fs_evict_wq in 7.3.
FLAGS_CASES = {
    "linux_6_12": ("fs/crypto/crypto.c", "\t\t\t\t\t\t WQ_UNBOUND | WQ_HIGHPRI,\n\t\t\t\t\t\t num_online_cpus());",
                   "\t\t\t\t\t\t WQ_HIGHPRI,\n\t\t\t\t\t\t num_online_cpus());"),
    "linux_7_3": ("fs/f2fs/data.c", "\t\t\tWQ_UNBOUND | WQ_HIGHPRI, num_online_cpus());",
                  "\t\t\tWQ_HIGHPRI, num_online_cpus());"),
}


@pytest.mark.kernel
@pytest.mark.parametrize("tree_fixture", sorted(FLAGS_CASES))
def test_review_of_dropping_wq_unbound_on_another_line(tree_fixture, request, tmp_path):
    tree = request.getfixturevalue(tree_fixture)
    rel, old, new = FLAGS_CASES[tree_fixture]
    text = (tree / rel).read_text()
    assert text.count(old) == 1
    flags_line = text[: text.index(old)].count("\n") + 1
    diff = "".join(difflib.unified_diff(text.splitlines(True), text.replace(old, new).splitlines(True),
                                        f"a/{rel}", f"b/{rel}"))
    patch = tmp_path / "0001-flags.patch"
    patch.write_text("From: Dev <dev@example.org>\nSubject: [PATCH] keep the queue on the submitting CPU\n"
                     "Message-ID: <flags@example.org>\n\nKeep it local.\n---\n"
                     f"diff --git a/{rel} b/{rel}\n" + diff)
    result = run("review", patch, "--tree", tree, "-j", "2")
    assert result.exit_code == 1, result.stderr
    lines = result.stdout.splitlines()
    heads = [ln for ln in lines if not ln.startswith(" ")]
    call = flags_line - 1
    assert [h.split(": ", 2)[0] for h in heads] == [f"{rel}:{call}:{heads[0].split(':')[2]}"] * len(heads)
    assert [h.rsplit(" ", 1)[1] for h in heads] == ["[missing-affinity-flag]", "[percpu-max-active-cpu-count]"]
    assert lines.count(f"    introduced at {rel}:{flags_line}") == 2
    assert "    this patch drops WQ_UNBOUND: max_active = num_online_cpus() becomes a per-CPU limit" in lines
    assert not any(": fixed: " in h for h in heads)  # the unbound finding is replaced, not fixed
    reply = run("review", patch, "--tree", tree, "-j", "2", "--format", "mail").stdout
    assert "In-Reply-To: <flags@example.org>" in reply
    assert "This patch drops WQ_UNBOUND: max_active = num_online_cpus() becomes a\nper-CPU limit." in reply
