"""The one base of wqlint's errors, with the exit status each means.

Every command exits 0 clean, 1 findings, 2 usage or configuration error, 3 some input could
not be processed; an error says which of these it is, so the command line need not list
error types by status. This module imports nothing of wqlint: any module can derive from it.
"""
from __future__ import annotations

from typing import Optional

CLEAN = 0  # nothing to report (b4's check of a series it does not track: a warning, no failure)
FINDINGS = 1  # findings reported (`fix --apply` refused: nothing written, the findings stay)
USAGE = 2  # usage or configuration error: the command line, rules.yaml, .wqlint.yaml, the paths
INPUT = 3  # some input could not be processed


class WqlintError(Exception):
    """An error wqlint reports in one line, its str(). status: the exit status it means when
    a command stops on it, INPUT unless the class says otherwise
    (`class ConfigError(WqlintError, status=USAGE)`)."""

    status = INPUT

    def __init_subclass__(cls, status: Optional[int] = None, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if status is not None:
            cls.status = status
