"""`--phases FILE` of wqlint scan and review: where the command's time and memory went, phase
by phase (wqlint.scan.phases), written as JSON when the command ends, whatever its exit status.

Like -o, the path is checked before any work (a missing directory, a device, a FIFO: a usage
error, exit 2) and the file is written atomically (wqlint.safeio.write_atomic); a file that
cannot be written at the end is one `Error:` line and exit 3."""
from __future__ import annotations

import functools
import json
import sys

import click

from wqlint.scan.phases import PHASES, phase

__all__ = ["phase", "phases_option"]  # phase: the command's own (output)

HELP = (f"Write where the run's time and memory went, phase by phase ({', '.join(PHASES)}: wall and "
        "CPU seconds, peak resident size), as JSON to FILE.")


def phases_option(command):
    """The --phases FILE option on a command, which it records the phases of."""
    @functools.wraps(command)
    def run(phases_path=None, **params):
        if phases_path is None:
            return command(**params)
        from wqlint import safeio
        from wqlint.scan import phases

        try:
            safeio.check_output(phases_path)
        except safeio.OutputRefused as exc:
            raise click.UsageError(f"--phases {phases_path}: {exc}") from None
        phases.record()
        try:
            return command(**params)
        finally:
            rec = phases.stop()
            if rec is not None:
                _write(phases_path, dict(rec.figures(), command=click.get_current_context().info_name))

    return click.option("--phases", "phases_path", metavar="FILE", type=click.Path(dir_okay=False),
                        default=None, help=HELP)(run)


def _write(path: str, figures: dict) -> None:
    from wqlint import safeio
    from wqlint.finding import printable

    try:
        safeio.write_atomic(path, json.dumps(figures, indent=2) + "\n")
    except (safeio.OutputRefused, OSError) as exc:
        problem = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        click.echo(printable(f"Error: {path}: {problem}"), err=True)
        sys.exit(3)
