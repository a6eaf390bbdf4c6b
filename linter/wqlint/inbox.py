"""The patch series in a mailing list archive: what a list bot reviews.

An mbox as public-inbox, lei (`lei q -o mboxrd:FILE`, `lei up`) or `b4 mbox` write it holds
series, their new versions, replies and discussion. series_of() groups the patch mails by
series: a cover letter ('[PATCH v2 0/3]') and the patches that answer it, or a first patch
and those that answer it; replies ('Re:') and mail without a patch tag are left out. Each
series has its root Message-ID (what `wqlint review --series` and `b4 am` take), version,
base commit (the 'base-commit:' line git format-patch --base and b4 write), and its mails in
patch order. Headers are read with the same limits as any patch mail (wqlint.mail).

A series is its author's: a patch mail joins the series it answers only when it comes from
the same From address and its 'n/N' fits (the series' N, a number not taken yet); anyone
else's patch in the thread is a series of its own. A mail whose tag cannot be a patch's
('[PATCH 2/1]', a number of thousands of digits) is one problem naming it (Archive.problems);
the rest of the archive is listed all the same.
"""
from __future__ import annotations

import email.errors
import email.utils
import re
from dataclasses import dataclass, field
from email.parser import BytesHeaderParser

from wqlint.mail import MAX_PATCHES, POLICY, MailError, bracket_groups, clean, split_mbox

MAX_TAG_DIGITS = 6  # a version or patch number of a tag: v999999, 999999/999999
_PATCH_WORD = re.compile(r"\bPATCH\b", re.I)
_BASE = re.compile(rb"(?m)^base-commit: ([0-9a-f]{7,64})\s*$")


@dataclass
class Series:
    root: str  # Message-ID of the cover letter, else of the first patch, with angle brackets
    version: int
    subject: str  # the root's, without its tag
    expected: int  # N of 'n/N', 1 for a lone patch
    base: str = ""  # the base-commit the series names, '' when none
    sender: str = ""  # the From address of its root, lower case
    mails: list = field(default_factory=list)  # (number, raw bytes): 0 the cover letter

    def mbox(self) -> bytes:
        """The series' mails, in order, as an mbox (mboxrd: a body line 'From ' is escaped)."""
        out = []
        for _, raw in sorted(self.mails, key=lambda m: m[0]):
            body = re.sub(rb"(?m)^(>*From )", rb">\1", raw)
            end = b"" if body.endswith(b"\n\n") else b"\n" if body.endswith(b"\n") else b"\n\n"  # a blank line
            out.append(b"From wqlint-series Thu Jan  1 00:00:00 1970\n" + body + end)
        return b"".join(out)

    @property
    def patches(self) -> int:
        return sum(1 for n, _ in self.mails if n > 0)


@dataclass
class Archive:
    series: list  # of Series, in the order their first mail appears
    problems: list = field(default_factory=list)  # one line each, naming a mail left out


class _BadTag(MailError):
    """A patch tag that no patch mail has; str() says why."""


def _tag(subject: str):
    """(version, n, total, (start, end) of the tag) of a patch subject, or None (a reply, no
    patch tag); _BadTag for a tag that cannot be a patch's."""
    if re.match(r"(?i)\s*(re|aw|fwd?)\s*:", subject):
        return None
    group = next((g for g in bracket_groups(subject) if _PATCH_WORD.search(g[2])), None)
    if group is None:
        return None
    version, n, total = 1, 1, 1
    for w in group[2].split():
        if w[:1] in "vV" and w[1:].isdecimal():
            version = _number(w[1:])
        elif w.count("/") == 1 and all(x.isdecimal() for x in w.split("/")):
            n, total = (_number(x) for x in w.split("/"))
    if n > total:
        raise _BadTag(f"patch {n} of {total}")
    return version, n, total, group[:2]


def _number(digits: str) -> int:
    if len(digits) > MAX_TAG_DIGITS:
        raise _BadTag(f"a number of {len(digits)} digits in its patch tag")
    return int(digits)


def _sender(head) -> str:
    found = email.utils.getaddresses([str(v) for k, v in head.raw_items() if k.lower() == "from"])
    return "".join(clean(found[0][1]).split()).lower() if found else ""


def series_of(data: bytes, source: str = "<mbox>") -> list:
    """The series in an mbox, in the order their first mail appears."""
    return archive(data, source).series


def archive(data: bytes, source: str = "<mbox>") -> Archive:
    """The series in an mbox, and the mails with a patch tag that were left out."""
    messages = split_mbox(data)
    if len(messages) > MAX_PATCHES * 10:
        raise MailError(f"{source}: more than {MAX_PATCHES * 10} messages")
    parsed = []
    problems = []
    for number, raw in enumerate(messages, 1):
        try:
            head = BytesHeaderParser(policy=POLICY).parsebytes(raw)
            subject = " ".join(clean(str(head.get("subject", ""))).split())
            msgid = str(head.get("message-id", "")).strip()
            refs = re.findall(r"<[^<>\s]+>", str(head.get("in-reply-to", "")) + " " + str(head.get("references", "")))
            sender = _sender(head)
        except (ValueError, TypeError, LookupError, email.errors.MessageError):  # a header the parser refuses
            continue
        if not re.fullmatch(r"<[^<>\s]+>", msgid):
            continue
        try:
            tag = _tag(subject)
        except _BadTag as exc:
            shown = msgid if len(msgid) <= 100 else msgid[:96] + "...>"
            problems.append(f"{source}: message {number} {shown}: {exc}, left out")
            continue
        if tag is not None:
            parsed.append((msgid, refs, subject, tag, sender, raw))
    of: dict = {}  # Message-ID of every patch mail -> its Series
    taken: dict = {}  # id(Series) -> the patch numbers it has
    order: list = []
    for msgid, refs, subject, (version, n, total, (start, end)), sender, raw in parsed:
        # a mail belongs to the series of the first patch mail of its version it answers,
        # when it is the same author's and its number fits
        series = next((of[r] for r in refs if r in of and of[r].version == version), None)
        if series is None or sender != series.sender or total != series.expected or n in taken[id(series)]:
            series = Series(msgid, version, (subject[:start] + subject[end:]).strip(), total, sender=sender)
            order.append(series)
            taken[id(series)] = set()
        series.mails.append((n, raw))
        taken[id(series)].add(n)
        of[msgid] = series
        if not series.base:
            m = _BASE.search(raw)
            if m:
                series.base = m.group(1).decode()
    return Archive(order, problems)
