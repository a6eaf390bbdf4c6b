"""A scan of paths: the sites wqlint.scan resolves, judged by the rules of wqlint.checks, as
the tree's own configuration (.wqlint.yaml, read once) leaves them on."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from wqlint import config
from wqlint.config import Config, ConfigError
from wqlint.checks import judge, unread
from wqlint.checks.context import make_context
from wqlint.finding import Report
from wqlint.scan.engine import Engine
from wqlint.scan.options import ScanOptions
from wqlint.scan.targets import Targets


@dataclass(frozen=True)
class Linted:
    """A scan's report and the tree configuration it was made with."""

    report: Report
    config: Optional[Config]  # None: the tree's .wqlint.yaml cannot be used (config_error)
    config_error: Optional[ConfigError] = None
    # rel -> digest of the bytes the scan judged (a value None: read from disk by it, no index);
    # empty: not known, and fix judges its files again (fix.plan._as_judged())
    read: dict = field(default_factory=dict)

    def tree_config(self) -> Config:
        """The tree's configuration; its ConfigError when it cannot be used."""
        if self.config is None:
            assert self.config_error is not None
            raise self.config_error
        return self.config


def run(paths, catalogue, options: ScanOptions) -> Linted:
    """The scan of paths (UsageError when they cannot be scanned together). What the tree's
    .wqlint.yaml leaves on decides what is worth resolving; one the tree cannot use leaves
    everything on (the command reports it: Linted.tree_config())."""
    targets = Targets(paths)
    try:
        found: Optional[Config] = config.load(targets.root, catalogue.ids())
        error = None
    except ConfigError as exc:
        found, error = None, exc
    options = replace(options, unread=unread(found.rule_on) if found is not None else frozenset())
    result = Engine(targets, catalogue, options).run(judge, make_context)
    return Linted(result.report, found, error, result.read)


def scan(paths, catalogue, options: Optional[ScanOptions] = None) -> Report:
    """The report alone of the scan of paths (run())."""
    return run(paths, catalogue, options or ScanOptions()).report
