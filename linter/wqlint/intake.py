"""What `wqlint review` reviews: patch files or an mbox of a series (wqlint.mail), one series
of a list archive (wqlint.inbox), commits of a git checkout, or the series b4 review tracks
(wqlint.b4review); with the tree it applies to and how that tree's files read before it. The
command line only hands its options over (wqlint.cli)."""
from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import Callable, NamedTuple, Optional

from wqlint import b4review, errors, inbox, mail, safeio
from wqlint.review import git_series


class Input(NamedTuple):
    """What is reviewed: the patches, a reader of the files before them (None: the tree is as
    it was before them), the tree; and, when the patches are the last of a series (b4
    review's per-patch check), a reader of the tree before the whole series."""

    patches: list
    base_reader: Optional[Callable]
    tree: Optional[str]
    config_reader: Optional[Callable] = None


def patches(paths: list, tree: Optional[str], git_range: Optional[str] = None, series_id: Optional[str] = None,
            b4_review: bool = False, tracking: Optional[str] = None) -> Input:
    """The Input of the paths (files or an mbox, '-': stdin), the series series_id of the one
    mbox paths names, or the commits git_range of the checkout holding tree. b4_review: for b4
    review's check commands, where b4's tracking data (tracking: B4_TRACKING_FILE) says where
    a patch sits in the series, and which patches the cover letter alone stands for
    (b4review.NotTracked without it). mail.MailError, review.ReviewError for input that
    cannot be read or used."""
    if git_range:
        return Input(*git_series(tree or ".", git_range))
    if series_id:
        return Input(one_series(paths, series_id), None, tree)
    series = mail.load(list(paths), allow_cover=b4_review)
    if b4_review and len(series) == 1 and tracking:
        # b4 review's per-patch check of a series it tracks: the patch where the series puts it
        found = b4review.tracked_patch(tree or ".", tracking, series[0])
        got = Input(*found) if found is not None else None
        if got is not None and len(got.patches) == 1:
            sent = series[0]
            return got._replace(patches=[replace(got.patches[0], subject=sent.subject, message_id=sent.message_id,
                                                 references=sent.references, author=sent.author,
                                                 author_address=sent.author_address, recipients=sent.recipients)])
    if b4_review and not series:  # b4's series check gives the cover letter
        return Input(*b4review.tracked_series(tree or ".", tracking))
    return Input(series, None, tree)


def one_series(paths: list, series_id: str) -> list:
    """The patches of the series series_id of the one mbox paths names."""
    want = series_id if series_id.startswith("<") else f"<{series_id}>"
    name = "<stdin>" if paths[0] == "-" else paths[0]
    found = [s for s in inbox.series_of(mail.read_input(paths[0]), name) if s.root == want]
    if not found:
        raise mail.MailError(f"{name}: no series {want} (`wqlint series {name}` lists them)")
    return mail.parse_series(found[0].mbox(), f"{name}: series {want}")


class ReportedError(errors.WqlintError, status=errors.USAGE):
    """A --reported FILE that cannot be read, or holds a line that is no fingerprint."""


def reported(path) -> frozenset:
    """The fingerprints of a --reported FILE (one a line, '#' comments); a file that does not
    exist yet is empty (--update-reported creates it)."""
    if not path or not os.path.lexists(path):
        return frozenset()
    try:
        data = safeio.read_bytes(path, 64 * 1024 * 1024)
    except (safeio.InputRefused, OSError) as exc:
        raise ReportedError(f"{path}: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}") from None
    found = set()
    for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if not re.fullmatch(r"[0-9a-f]{32}", line):
            raise ReportedError(f"{path}:{n}: not a wqlint fingerprint (32 hex digits)")
        found.add(line)
    return frozenset(found)


def reported_text(path, new) -> str:
    """The --reported FILE with the fingerprints new added (kept as it was, new ones appended)."""
    old = safeio.read_bytes(path, 64 * 1024 * 1024).decode("utf-8", "replace") if os.path.lexists(path) else ""
    have = set(re.findall(r"^([0-9a-f]{32})\b", old, re.M))
    add = [fp for fp in dict.fromkeys(new) if fp not in have]
    if old and not old.endswith("\n"):
        old += "\n"
    return old + "".join(fp + "\n" for fp in add)
