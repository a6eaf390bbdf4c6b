"""`git diff --stat` of unified diffs, as `git format-patch` prints it (72 columns)."""
from __future__ import annotations

MAIL_WIDTH = 72  # git format-patch's --stat width (MAIL_DEFAULT_WRAP)


def count(diff: str) -> tuple:
    """(insertions, deletions) of the hunks of a one-file unified diff."""
    added = deleted = 0
    in_hunk = False
    for line in diff.splitlines():
        if line.startswith("@@"):
            in_hunk = True
        elif not in_hunk:
            continue
        elif line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            deleted += 1
        elif line.startswith("diff --git "):
            in_hunk = False
    return added, deleted


def _scale(value: int, width: int, max_change: int) -> int:
    # git's scale_linear(): at least one column for any change.
    if not value:
        return 0
    return 1 + (value * (width - 1) // max_change)


def summary(files: int, insertions: int, deletions: int) -> str:
    """' N files changed, X insertions(+), Y deletions(-)' as git words it."""
    text = f" {files} file{'' if files == 1 else 's'} changed"
    if insertions or not deletions:
        text += f", {insertions} insertion{'' if insertions == 1 else 's'}(+)"
    if deletions or not insertions:
        text += f", {deletions} deletion{'' if deletions == 1 else 's'}(-)"
    return text


def diffstat(entries: list, width: int = MAIL_WIDTH) -> str:
    """The stat lines and summary of entries (path, insertions, deletions), in their order,
    laid out as git's show_stats() does for the given total width."""
    if not entries:
        return ""
    max_len = max(len(path) for path, _, _ in entries)
    max_change = max(a + d for _, a, d in entries)
    number_width = len(str(max_change))
    width = max(width, 16 + 6 + number_width)
    graph_width = max_change
    name_width = max_len
    if name_width + number_width + 6 + graph_width > width:
        if graph_width > width * 3 // 8 - number_width - 6:
            graph_width = max(width * 3 // 8 - number_width - 6, 6)
        if name_width > width - number_width - 6 - graph_width:
            name_width = width - number_width - 6 - graph_width
        else:
            graph_width = width - number_width - 6 - name_width
    lines = []
    for path, added, deleted in entries:
        prefix, name, room = "", path, name_width
        if name_width < len(path):
            prefix, room = "...", name_width - 3
            name = path[len(path) - room:]
            slash = name.find("/")
            if slash >= 0:
                name = name[slash:]
        add, dele = added, deleted
        if graph_width <= max_change:
            total = _scale(added + deleted, graph_width, max_change)
            if total < 2 and added and deleted:
                total = 2
            if added < deleted:
                add = _scale(added, graph_width, max_change)
                dele = total - add
            else:
                dele = _scale(deleted, graph_width, max_change)
                add = total - dele
        changed = added + deleted
        lines.append(f" {prefix}{name:<{room}} | {changed:>{number_width}}"
                     f"{' ' if changed else ''}{'+' * add}{'-' * dele}")
    total_added = sum(a for _, a, _ in entries)
    total_deleted = sum(d for _, _, d in entries)
    lines.append(summary(len(entries), total_added, total_deleted))
    return "\n".join(lines) + "\n"
