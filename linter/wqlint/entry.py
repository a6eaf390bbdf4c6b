"""The `wqlint` command. `wqlint check` runs once per compiled file inside Kbuild, so it is
dispatched before the click command line (and the modules every other command needs) is
imported: that saves a tenth of a second per file. Anything it does not handle itself
(--help, a malformed option) goes to the click command, which says what is wrong.

Every command ends what it started and removes what it made when a signal ends it
(wqlint.tools.end_on_signals)."""
from __future__ import annotations

import os
import sys


def main():
    from wqlint import tools

    tools.end_on_signals()
    argv = sys.argv[1:]
    if argv and argv[0] == "check":
        from wqlint import check

        code = check.main(argv[1:])
        if code is not None:
            # Done: skip tearing down the interpreter (the unit, its trees: some hundredths
            # of a second per file). Nothing is pending but the output, flushed here.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    from wqlint.cli import main as cli_main

    return cli_main()
