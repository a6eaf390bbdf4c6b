"""sparse's format, for `wqlint check` in the build log beside the compiler's warnings:
`file:line:col: warning: message [rule-id]`, then the chain and the migration, indented
(the text format without the source lines, which a build log does not need)."""
from __future__ import annotations

from wqlint.formatters import text


def format(report, catalogue) -> str:
    return text.lines(report, source=False)
