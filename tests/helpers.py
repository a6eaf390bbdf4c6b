"""Running the CLI the way a user does, in-process."""
from __future__ import annotations

import json

from click.testing import CliRunner

from wqlint.cli import main


def run(*args, **kw):
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 keeps stderr apart already
        runner = CliRunner()
    return runner.invoke(main, [str(a) for a in args], catch_exceptions=False, **kw)


def scan_json(*args, **kw):
    result = run("scan", "--format", "json", *args, **kw)
    assert result.exit_code in (0, 1), result.stderr + result.stdout
    return json.loads(result.stdout), result
