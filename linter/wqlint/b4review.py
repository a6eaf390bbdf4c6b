"""The series behind b4 review's series check.

b4 0.16 gives a series check command the cover letter on stdin, and, when the series is
checked out for review (branch b4/review/<change-id>, its last commit b4's tracking commit),
the path of a JSON dump of that tracking data in B4_TRACKING_FILE (b4/review_tui/_common.py):
series.first-patch-commit is the series' first commit on that branch, series.change-id names
the branch. The series is then the commits first-patch-commit..b4/review/<change-id>~1 of the
checkout, reviewed as `review --git` reviews a range. The per-patch command gets the same
file: its patch is then reviewed as the commit of that branch it is, after the patches
before it, whatever the checkout holds. The file is data from b4: bounded, parsed as JSON,
its values checked before they reach git.
"""
from __future__ import annotations

import re

from wqlint import errors
from wqlint.review import ReviewError, files_at, git_series

MAX_TRACKING_BYTES = 16 * 1024 * 1024
BRANCH_PREFIX = "b4/review/"  # b4.review._review.REVIEW_BRANCH_PREFIX


class NotTracked(errors.WqlintError, status=errors.CLEAN):
    """No tracking data: the cover letter alone does not say which patches to review."""


def _tracking(tracking_path) -> tuple:
    """(first-patch-commit, change-id) of b4's tracking data, checked."""
    from wqlint import safeio

    try:
        data = safeio.parse_json(safeio.read_bytes(tracking_path, MAX_TRACKING_BYTES))
        series = data["series"]
        first, change_id = series["first-patch-commit"], series["change-id"]
    except (safeio.InputRefused, ValueError) as exc:
        raise ReviewError(f"B4_TRACKING_FILE {tracking_path}: not b4's tracking data ({exc})") from None
    except KeyError as exc:
        raise ReviewError(f"B4_TRACKING_FILE {tracking_path}: not b4's tracking data (no {exc})") from None
    except TypeError:
        raise ReviewError(f"B4_TRACKING_FILE {tracking_path}: not b4's tracking data (not a JSON object "
                          "with a \"series\" object)") from None
    if not isinstance(first, str) or not re.fullmatch(r"[0-9a-f]{7,64}", first):
        raise ReviewError(f"B4_TRACKING_FILE {tracking_path}: first-patch-commit {first!r} is not a commit id")
    if not isinstance(change_id, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", change_id) \
            or ".." in change_id:
        raise ReviewError(f"B4_TRACKING_FILE {tracking_path}: change-id {change_id!r} cannot name a branch")
    return first, change_id


def tracked_patch(tree: str, tracking_path, patch):
    """(patches, base reader, root, config reader: an intake.Input) of the commit of b4's
    review branch that is patch (same subject, its '[PATCH ...]' tag aside), reviewed where
    the series puts it: after the patches before it, with the configuration of the tree
    before the series (what an earlier patch changes in .wqlint.yaml is not the configuration
    of the review of a later one). None when the branch has no such commit."""
    from wqlint import tools

    first, change_id = _tracking(tracking_path)
    subject = re.sub(r"^\s*\[[^\]]*\]\s*", "", patch.subject)
    try:
        log = tools.git(tree, "log", "--format=%H %s", f"{first}~1..{BRANCH_PREFIX}{change_id}~1", "--")
    except tools.ToolError:
        return None
    if log.returncode != 0:
        return None
    found = [line.split(" ", 1)[0] for line in log.stdout.decode("utf-8", "replace").splitlines()
             if line.split(" ", 1)[1:] == [subject]]
    if len(found) != 1:
        return None
    patches, reader, root = git_series(tree, f"{found[0]}^!")
    return patches, reader, root, files_at(root, f"{first}~1")


def tracked_series(tree: str, tracking_path) -> tuple:
    """(patches, base reader, root) of the series b4 tracks, from the B4_TRACKING_FILE given."""
    if not tracking_path:
        raise NotTracked("the cover letter alone: b4 names the series' commits (B4_TRACKING_FILE) "
                         "only for a series checked out for review")
    first, change_id = _tracking(tracking_path)
    return git_series(tree, f"{first}~1..{BRANCH_PREFIX}{change_id}~1")
