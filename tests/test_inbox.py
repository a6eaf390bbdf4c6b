"""The intake of a list archive (wqlint.inbox, wqlint.mail): a Subject is anyone's text, so
reading it takes time in proportion to its length; one bad mail is one Error: line naming it
and the rest of the archive is listed; a series is its author's patches."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from bounded import bounded, error_lines
from conftest import REPO

SIZES = (1024, 4096, 16384, 65536)
BOUND = 1.0  # seconds for one Subject of any of SIZES: linear parsing takes well under 1 ms
# Subjects that make a pattern with overlapping quantifiers over '[...]' groups backtrack:
# opened groups never closed, groups of nothing but the words it looks for.
SUBJECTS = {
    "tag": ["[PATCH" * (n // 6) for n in SIZES] + ["[" * n for n in SIZES] + ["[PATCH]" * (n // 7) for n in SIZES],
    "cover": ["[" * n for n in SIZES] + ["[0/1 " * (n // 5) for n in SIZES] + ["[00000" * (n // 6) for n in SIZES]
             + ["0/" * (n // 2) + "]" for n in SIZES],
}
TIMED = '''
import json, sys, time
from wqlint import inbox, mail
def mbox(subject):
    return b"From: a@b\\nMessage-ID: <m@b>\\nSubject: " + subject.encode() + b"\\n\\nno diff\\n"
def cover(subject):  # a mail without a diff: a cover letter (no patches), else an error
    try:
        mail.parse_series(mbox(subject), "x", allow_cover=True)
    except mail.MailError:
        pass
read = {"tag": lambda s: inbox.series_of(mbox(s)), "cover": cover}[sys.argv[1]]
for subject in json.load(sys.stdin):
    start = time.perf_counter()
    read(subject)
    print(len(subject), time.perf_counter() - start, flush=True)
'''


def _timed(kind: str) -> list:
    """(length, seconds) of reading each Subject of SUBJECTS[kind], in a process of its own: a
    pattern that backtracks over 64 KiB would not end within the test's lifetime."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "linter"))
    try:
        proc = subprocess.run([sys.executable, "-c", TIMED, kind], input=json.dumps(SUBJECTS[kind]),
                              capture_output=True, text=True, timeout=60, env=env)
    except subprocess.TimeoutExpired as exc:
        done = (exc.stdout or b"").decode().split()
        raise AssertionError(f"{kind}: reading the Subjects did not end in 60 s (done: {done})") from None
    assert proc.returncode == 0, proc.stderr
    return [(int(n), float(t)) for n, t in (line.split() for line in proc.stdout.splitlines())]


def test_a_subject_is_read_in_time_in_proportion_to_its_length():
    for kind in SUBJECTS:
        got = _timed(kind)
        assert len(got) == len(SUBJECTS[kind])
        slow = [(n, round(t, 3)) for n, t in got if t > BOUND]
        assert not slow, f"{kind}: {slow}"


def test_bracket_groups_and_cover_letters():
    from wqlint.mail import bracket_groups, is_cover
    assert list(bracket_groups("[a] x [b [c] ]d[")) == [(0, 3, "a"), (6, 12, "b [c")]
    for subject in ("[PATCH 0/3] x", "[PATCH v2 00/12] x", "[RFC net-next 000/3]", "x [PATCH 0/1]"):
        assert is_cover(subject), subject
    for subject in ("[PATCH 1/3] x", "[PATCH 10/3] x", "[PATCH x0/3]", "[PATCH 0/]", "[PATCH_0/3]", "0/3]",
                    "[PATCH 0/3 x]", "[PATCH 0/3"):
        assert not is_cover(subject), subject


def _mail(msgid, subject, refs=(), sender="Jane Developer <jane@example.org>", body="text\n") -> bytes:
    head = f"From: {sender}\nSubject: {subject}\nMessage-ID: <{msgid}>\n"
    if refs:
        head += f"In-Reply-To: <{refs[-1]}>\nReferences: " + " ".join(f"<{r}>" for r in refs) + "\n"
    return (head + "\n" + body).encode()


def _mbox(*mails: bytes) -> bytes:
    return b"".join(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + m + b"\n" for m in mails)


def _listed(series: list) -> list:
    return [(s.root, s.version, s.patches, s.expected, [n for n, _ in s.mails]) for s in series]


def _listing(data: bytes):
    from wqlint.inbox import archive
    got = archive(data, "new.mbox")
    return _listed(got.series), got.problems


def test_a_tag_that_cannot_be_a_patch_is_one_problem_the_rest_is_listed():
    digits = "9" * 5000
    series, problems = _listing(_mbox(
        _mail("c1", "[PATCH 0/1] demo: queues"),
        _mail("p1", "[PATCH 1/1] demo: one", ["c1"]),
        _mail("huge", f"[PATCH v{digits}] demo: huge"),
        _mail("n", f"[PATCH 1/{digits}] demo: huge"),
        _mail("over", "[PATCH 2/1] demo: two of one"),
        _mail("lone", "[PATCH v1234567] demo: lone"),
        _mail("ok", "[PATCH v123456] demo: fine"),
    ))
    assert series == [("<c1>", 1, 1, 1, [0, 1]), ("<ok>", 123456, 1, 1, [1])]
    assert problems == ["new.mbox: message 3 <huge>: a number of 5000 digits in its patch tag, left out",
                        "new.mbox: message 4 <n>: a number of 5000 digits in its patch tag, left out",
                        "new.mbox: message 5 <over>: patch 2 of 1, left out",
                        "new.mbox: message 6 <lone>: a number of 7 digits in its patch tag, left out"]


def test_a_series_is_its_authors_patches():
    from wqlint.inbox import series_of
    series = _listed(series_of(_mbox(
        _mail("c1", "[PATCH 0/2] demo: queues"),
        _mail("p1", "[PATCH 1/2] demo: one", ["c1"]),
        _mail("x2", "[PATCH 2/2] demo: mine instead", ["c1", "p1"], sender="Mal <mal@example.org>"),
        _mail("p2", "[PATCH 2/2] demo: two", ["c1"], sender="jane developer <JANE@example.org>"),
        _mail("again", "[PATCH 2/2] demo: two, again", ["c1"]),
        _mail("more", "[PATCH 3/3] demo: three", ["c1"]),
        _mail("x3", "[PATCH 1/1] demo: on top", ["c1", "x2"], sender="Mal <mal@example.org>"),
    )))
    assert series == [("<c1>", 1, 2, 2, [0, 1, 2]), ("<x2>", 1, 1, 2, [2]), ("<again>", 1, 1, 2, [2]),
                      ("<more>", 1, 1, 3, [3]), ("<x3>", 1, 1, 1, [1])]


def test_series_lists_the_archive_and_names_the_bad_mail(tmp_path):
    mbox = tmp_path / "new.mbox"
    mbox.write_bytes(_mbox(_mail("huge", f"[PATCH v{'1' * 5000}] demo: huge"),
                           _mail("lone", "[PATCH] demo: fix a typo")))
    got = bounded(["series", mbox])
    assert got.returncode == 3
    assert got.stdout == "<lone>\tv1\t-\t1/1\tdemo: fix a typo\n"
    assert error_lines(got.stderr) == [f"Error: {mbox}: message 1 <huge>: a number of 5000 digits in its "
                                       "patch tag, left out"]
