"""`wqlint check`: a checker for the kernel build (`make C=1 CHECK="wqlint check"`).

Kbuild runs `$(CHECK) $(CHECKFLAGS) $(c_flags) file.c`. The file is preprocessed under those
flags, so every macro, enumerator and `#if` is what the configuration being built makes it, and
the scanner runs on that translation unit. Findings are mapped back to the original file and
line and printed on stderr in sparse's format. One job per module:

- args: the command line (Kbuild's arguments and wqlint's own options);
- preprocess: sparse's predefined macros and cpp, the unit with line markers and #defines;
- unit, original, mapping: the unit's lines back to the original files, lines and names
  (a create_workqueue() or, on v6.17+, an alloc_workqueue() the unit shows expanded);
- facts: the tree analysis, cached in the build directory, for what other files contribute;
- config: which CONFIG_ options a finding hangs on;
- checker: one run, from the unit's scan and the facts to the findings;
- names: the API's names as a preprocessed unit shows them (from wqlint.api);
- errors, debug: the one error (a line, exit 1) and what WQLINT_DEBUG shows;
- wqlint.formatters.sparse: the output.
"""
from __future__ import annotations

import os
import sys

# Imports are few and cheap here: Kbuild starts the checker once per file, and most files
# end before any scan (the scanner, dataclasses, pathlib, tempfile come in only then).
from wqlint.check.args import Invocation, parse_args, split_own
from wqlint.check.errors import CheckError
from wqlint.machine import MAX_CPUS, NCPUS

__all__ = ["CheckError", "Invocation", "check", "main", "parse_args", "run_command"]


def _say(line: str) -> None:
    """One line on stderr, printable() (a file name may hold a newline)."""
    from wqlint.finding import printable
    print(printable(line), file=sys.stderr)


def check(inv, catalogue, kernel_version=None, ncpus=NCPUS, max_cpus=MAX_CPUS, use_facts=True):
    """(the findings for inv.file, the problems worth a line of their own)."""
    from wqlint.check.checker import check as run_check
    return run_check(inv, catalogue, kernel_version, ncpus, max_cpus, use_facts)


def run_command(inv: Invocation, catalogue, also_sparse=False, kernel_version=None, ncpus=NCPUS,
                max_cpus=MAX_CPUS) -> int:
    """`wqlint check`: print sparse's output (--also-sparse), then the findings, on stderr as
    sparse does; the exit status Kbuild expects of a checker (0: checked, findings or not)."""
    try:
        if also_sparse:
            from wqlint.check.preprocess import run_sparse
            got = run_sparse(inv)
            sys.stdout.write(got.stdout)
            sys.stdout.flush()
            sys.stderr.write(got.stderr)
        findings, errors = check(inv, catalogue, kernel_version=kernel_version, ncpus=ncpus,
                                 max_cpus=max_cpus)
    except CheckError as exc:
        _say(f"wqlint check: {inv.file}: {exc}")
        return 1
    if findings:
        from wqlint import config
        from wqlint.checks import RULE_IDS
        try:
            findings = config.for_file(inv.file, RULE_IDS).select(findings, base=os.getcwd())
        except config.ConfigError as exc:
            _say(f"wqlint check: {exc}")
            return 2
    if findings:
        from wqlint.finding import Report
        from wqlint.formatters import sparse
        sys.stderr.write(sparse.format(Report(root="", findings=findings), catalogue))
    for err in errors:
        _say(f"wqlint check: {inv.file}: {err}")
    return 0


def main(argv: list):
    """`wqlint check ARGS` without click (see wqlint.entry): the exit status, or None when
    ARGS need the click command (--help, a malformed option or value, a usage error), which
    then says what is wrong, exactly as it always does."""
    got = split_own(argv)
    if got is None:
        return None
    opts, rest = got
    try:
        version = None
        if "--kernel-version" in opts:
            from wqlint import kversion
            version = kversion.parse_version(opts["--kernel-version"])
        cpus, max_cpus = int(opts.get("--cpus", NCPUS)), int(opts.get("--max-cpus", MAX_CPUS))
        inv = parse_args(rest)
    except (ValueError, CheckError):
        return None
    if not (1 <= cpus <= 65536 and 1 <= max_cpus <= 65536):
        return None
    return run_command(inv, _LazyCatalogue(opts.get("--rules")), bool(opts.get("--also-sparse")), version,
                       cpus, max_cpus)


class _LazyCatalogue:
    """The rule catalogue, read (YAML: a few hundredths of a second) the first time a rule is
    looked up, which is when a site has something to report."""

    def __init__(self, path):
        self.path = path
        self._cat = None

    def __getitem__(self, rule_id):
        if self._cat is None:
            from wqlint import catalogue as catalogue_mod
            from wqlint.checks import load_catalogue
            try:
                self._cat = load_catalogue(self.path)
            except catalogue_mod.CatalogueError as exc:
                _say(f"Error: {exc}")
                sys.exit(2)
        return self._cat[rule_id]
