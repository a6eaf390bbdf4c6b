"""The patch series in a mailing list archive: what a list bot reviews.

An mbox as public-inbox, lei (`lei q -o mboxrd:FILE`, `lei up`) or `b4 mbox` write it holds
series, their new versions, replies and discussion. series_of() groups the patch mails by
series: a cover letter ('[PATCH v2 0/3]') and the patches that answer it, or a first patch
and those that answer it; replies ('Re:') and mail without a patch tag are left out. Each
series has its root Message-ID (what `wqlint review --series` and `b4 am` take), version,
base commit (the 'base-commit:' line git format-patch --base and b4 write), and its mails in
patch order. Headers are read with the same limits as any patch mail (wqlint.mail).
"""
from __future__ import annotations

import email.errors
import re
from dataclasses import dataclass, field
from email.parser import BytesHeaderParser

from wqlint.mail import MAX_PATCHES, POLICY, MailError, clean, split_mbox

_TAG = re.compile(r"\[([^\]]*\bPATCH\b[^\]]*)\]", re.I)
_BASE = re.compile(rb"(?m)^base-commit: ([0-9a-f]{7,64})\s*$")


@dataclass
class Series:
    root: str  # Message-ID of the cover letter, else of the first patch, with angle brackets
    version: int
    subject: str  # the root's, without its tag
    expected: int  # N of 'n/N', 1 for a lone patch
    base: str = ""  # the base-commit the series names, '' when none
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


def _tag(subject: str):
    """(version, n, total) of a patch subject, or None (a reply, no patch tag)."""
    if re.match(r"(?i)\s*(re|aw|fwd?)\s*:", subject):
        return None
    m = _TAG.search(subject)
    if not m:
        return None
    words = m.group(1).split()
    version, n, total = 1, 1, 1
    for w in words:
        if re.fullmatch(r"[vV](\d+)", w):
            version = int(w[1:])
        elif re.fullmatch(r"\d+/\d+", w):
            n, total = (int(x) for x in w.split("/"))
    return version, n, total


def series_of(data: bytes, source: str = "<mbox>") -> list:
    """The series in an mbox, in the order their first mail appears."""
    messages = split_mbox(data)
    if len(messages) > MAX_PATCHES * 10:
        raise MailError(f"{source}: more than {MAX_PATCHES * 10} messages")
    parsed = []
    for raw in messages:
        try:
            head = BytesHeaderParser(policy=POLICY).parsebytes(raw)
            subject = " ".join(clean(str(head.get("subject", ""))).split())
            msgid = str(head.get("message-id", "")).strip()
            refs = re.findall(r"<[^<>\s]+>", str(head.get("in-reply-to", "")) + " " + str(head.get("references", "")))
        except (ValueError, TypeError, LookupError, email.errors.MessageError):  # a header the parser refuses
            continue
        tag = _tag(subject)
        if tag is None or not re.fullmatch(r"<[^<>\s]+>", msgid):
            continue
        parsed.append((msgid, refs, subject, tag, raw))
    of: dict = {}  # Message-ID of every patch mail -> its Series
    order: list = []
    for msgid, refs, subject, (version, n, total), raw in parsed:
        # a mail belongs to the series of the first patch mail of its version it answers
        series = next((of[r] for r in refs if r in of and of[r].version == version), None)
        if series is None:
            series = Series(msgid, version, _TAG.sub("", subject, 1).strip(), total)
            order.append(series)
        series.mails.append((n, raw))
        of[msgid] = series
        if not series.base:
            m = _BASE.search(raw)
            if m:
                series.base = m.group(1).decode()
    return order

