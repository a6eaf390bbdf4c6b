"""A scan of paths: the sites wqlint.scan resolves, judged by the rules of wqlint.checks."""
from __future__ import annotations

from wqlint import config
from wqlint.checks import judge, unread
from wqlint.finding import Report
from wqlint.scan.engine import Engine


def scan(paths, catalogue, jobs=1, kernel_version=None, ncpus=96, max_cpus=512, progress=None,
         kernel_tree=None, cache=False, suppressed=False) -> Report:
    """suppressed: also list what suppression comments hide (Report.suppressed)."""
    engine = Engine(paths, catalogue, jobs, kernel_version, ncpus, max_cpus, progress,
                    kernel_tree=kernel_tree, store=True if cache else None)
    engine.keep_suppressed = suppressed
    try:  # what the tree's .wqlint.yaml leaves on decides what is worth resolving
        engine.unread = unread(config.load(engine.root, catalogue.ids()).rule_on)
    except config.ConfigError:
        pass  # the command reports it
    return engine.run(judge)
