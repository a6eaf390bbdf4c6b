"""The wqlint command line. No analysis here: parse options, call an engine, format, exit."""
from __future__ import annotations

import os
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import NoReturn

import click

from wqlint import __version__, catalogue as catalogue_mod, kversion
from wqlint.cli_phases import phase, phases_option
from wqlint.formatters import FORMATS
from wqlint.machine import MAX_CPUS, NCPUS


def _load_catalogue(path):
    from wqlint.checks import load_catalogue

    try:
        return load_catalogue(path)
    except catalogue_mod.CatalogueError as exc:
        _fail(exc)


def _version(ctx, param, value):
    if value is None:
        return None
    try:
        return kversion.parse_version(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _kernel_tree_arg(ctx, param, value):
    """(KernelTree, from the environment?) or None."""
    if not value:
        return None
    from wqlint.scan.kerneltree import KernelTreeError, open_tree

    from_env = ctx.get_parameter_source(param.name) == click.core.ParameterSource.ENVIRONMENT
    try:
        tree = open_tree(value)
    except KernelTreeError as exc:
        _path_error(f"{exc} (from KDIR)" if from_env else exc)
    return tree, from_env


def _kernel_tree_option(command):
    return click.option(
        "--kernel-tree", "kernel_tree", envvar="KDIR", metavar="DIR", callback=_kernel_tree_arg,
        help="For a module outside a kernel tree: the kernel it builds for (a source tree, an O= build "
             "directory, /lib/modules/VERSION/build); its headers, API and version are used [$KDIR].",
    )(command)


def _kernel_for(kernel_tree, paths):
    """The KernelTree to scan paths with: none inside a kernel tree when it only comes from
    KDIR (set for Kbuild, not meant for this scan)."""
    if kernel_tree is None:
        return None
    tree, from_env = kernel_tree
    if from_env and paths:
        from wqlint.scan.targets import kernel_tree_of
        if kernel_tree_of(Path(os.path.abspath(paths[0]))) is not None:
            return None
    return tree


def _analysis_options(command):
    """The options every analysing command takes: version semantics, machine size, catalogue."""
    for option in reversed([
        click.option("--kernel-version", callback=_version,
                     help="Semantics of this version (default: the tree's Makefile)."),
        click.option("--cpus", type=click.IntRange(1, 65536), default=NCPUS, show_default=True,
                     help="CPU count of the machine the messages describe."),
        click.option("--max-cpus", type=click.IntRange(1, 65536), default=MAX_CPUS, show_default=True,
                     help="Largest machine max-active-over-limit considers."),
        click.option("--rules", "rules_path", type=click.Path(dir_okay=False), default=None,
                     help="Rule catalogue [rules.yaml]."),
    ]):
        command = option(command)
    return command


def _min_severity_option(command):
    return click.option("--min-severity", type=click.Choice(["note", "warning", "error"]), default=None,
                        help="Report only findings this severe or more [the tree's .wqlint.yaml, else note].")(command)


def _printable(text: str) -> str:
    """A text format's output, each of its lines printable() (a file name or a patch's Subject
    with an escape sequence must not reach the terminal; JSON escapes them itself)."""
    from wqlint.finding import printable
    return "\n".join(printable(line) for line in text.split("\n"))


def _stderr(line: str) -> None:
    """One line on stderr (an Error:, a note), whatever the names in it hold: see
    finding.printable()."""
    from wqlint.finding import printable
    click.echo(printable(line), err=True)


def _fail(exc) -> NoReturn:
    """An error the command stops on (a wqlint.errors.WqlintError): its one line, and the exit
    status it means."""
    _stderr(f"Error: {exc}")
    sys.exit(exc.status)


def _emit(text, output, result, fmt="text", written=None):
    """Write a formatted result (stdout or -o, atomically), its notes and errors; exit.
    written: called once the result is safely written (not when it could not be: exit 3)."""
    if fmt not in ("json", "sarif", "rdjson", "patchwork"):
        text = _printable(text)
    if output:
        _write_atomic(output, text)
    else:
        try:
            click.echo(text, nl=False)
            sys.stdout.flush()
        except OSError as exc:  # a full disk, a closed pipe
            _stderr(f"Error: stdout: {exc.strerror or exc}")
            try:  # what is still buffered is not flushed again at exit
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError):
                pass
            sys.exit(3)
    if written is not None:
        written()
    for note in result.notes:
        _stderr(f"wqlint: {note}")
    for err in result.errors:
        _stderr(str(err))
    sys.exit(result.exit_code())


def _guarded(*inputs):
    """The one place an unexpected exception becomes `Error: internal error in INPUT: ...`
    and exit 3 (the engines report such a failure per call and go on; this catches what
    escapes them). inputs: the parameters that name the command's input."""
    import functools

    def wrap(command):
        @functools.wraps(command)
        def run(**params):
            try:
                return command(**params)
            except (click.exceptions.ClickException, click.exceptions.Abort, click.exceptions.Exit,
                    SystemExit, KeyboardInterrupt):
                raise
            except Exception as exc:
                from wqlint.finding import InternalError

                named = []
                for name in inputs:
                    value = params.get(name)
                    named.extend(value if isinstance(value, (list, tuple)) else [value] if value else [])
                _stderr(str(InternalError.of(" ".join(map(str, named)) or "the input", exc)))
                sys.exit(3)
        return run
    return wrap


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="wqlint")
def main():
    """Find misuse of alloc_workqueue() max_active and flags in a Linux kernel tree."""


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=False))
@click.option("--format", "fmt", type=click.Choice(sorted(FORMATS)), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here, not stdout.")
@click.option("-j", "--jobs", type=click.IntRange(1, 256), default=None, help="Parallel jobs [all cores].")
@click.option("--engine", type=click.Choice(["tree-sitter", "coccinelle"]), default="tree-sitter", show_default=True)
@_analysis_options
@_kernel_tree_option
@click.option("--progress/--no-progress", default=None, help="Progress on stderr [when it is a terminal].")
@click.option("--cache/--no-cache", default=True, show_default=True,
              help="Keep an index of the tree in $XDG_CACHE_HOME/wqlint (default ~/.cache) between runs.")
@_min_severity_option
@phases_option
@_guarded("paths")
def scan(paths, fmt, output, jobs, engine, kernel_version, cpus, max_cpus, rules_path, kernel_tree, progress,
         cache, min_severity):
    """Scan PATHS (files or directories of a kernel tree) and report findings.

    Exit status: 0 clean, 1 findings, 2 usage or catalogue error, 3 some input could not be
    processed.
    """
    _check_output(output)
    cat = _load_catalogue(rules_path)
    jobs = jobs or os.cpu_count() or 1
    show_progress = sys.stderr.isatty() if progress is None else progress
    started = time.monotonic()

    def report_progress(msg):
        if show_progress:
            click.echo(f"\r\033[Kwqlint: {msg} ({time.monotonic() - started:.1f}s)", err=True, nl=False)

    kernel = _kernel_for(kernel_tree, paths)
    scanned = None
    if engine == "coccinelle":
        report = _coccinelle(list(paths), cat, jobs, kernel_version, kernel)
    else:
        from wqlint.scan.options import ScanOptions
        scanned = _ts_scan(paths, cat, ScanOptions(jobs=jobs, kernel_version=kernel_version, kernel_tree=kernel,
                                                   ncpus=cpus, max_cpus=max_cpus, store=cache,
                                                   keep_suppressed=fmt == "sarif", progress=report_progress))
        report = scanned.report
    if show_progress:
        click.echo("\r\033[K", err=True, nl=False)
    if fmt == "text" and not report.findings and not report.errors:
        # Nothing on stdout (a machine reads that); a person is told what was looked at.
        source = {"default": "wqlint's default", "--kernel-version": "--kernel-version"}.get(
            report.kernel_version_source, report.kernel_version_source)
        from wqlint import cocci
        searched = report.files_scanned if scanned is not None else cocci.c_files(paths)
        report.notes.append(f"no findings in {', '.join(paths)} ({searched} .c/.h files searched; "
                            f"{kversion.show(report.kernel_version)} from {source})")
    selected = _config(report.root, cat, min_severity, scanned=scanned)
    report.findings = selected.select(report.findings)
    report.suppressed = [(f, why) for f, why in report.suppressed if selected.keeps(f)]
    with phase("output"):
        _emit(FORMATS[fmt](report, cat), output, report, fmt)


def _config(root, cat, min_severity=None, max_findings=None, scanned=None):
    """The tree's .wqlint.yaml (none: everything), with the command line's options over it.
    scanned: a scan of the tree (lint.Linted), which has read it already."""
    from wqlint import config
    if not root:
        return config.Config().override(min_severity, max_findings)
    try:
        found = scanned.tree_config() if scanned is not None else config.load(root, cat.ids())
        return found.override(min_severity, max_findings)
    except config.ConfigError as exc:
        _fail(exc)


def _path_error(exc):
    """Paths that cannot be scanned together: one line, exit 2."""
    _stderr(f"Error: {exc}")
    sys.exit(2)


def _root_of(paths):
    from wqlint.scan.targets import UsageError, find_root

    try:
        return find_root(list(paths))
    except UsageError as exc:
        _fail(exc)


def _coccinelle(paths, cat, jobs, kernel_version, kernel=None):
    """Run the semantic patches with spatch; the same Report as the tree-sitter engine."""
    from pathlib import Path

    from wqlint import cocci

    for p in paths:
        if not os.path.lexists(p):
            _path_error(f"{p}: no such file or directory")
    root = _root_of(paths)
    kernel_makefile = kernel.version if kernel is not None else None
    version = kernel_version or kernel_makefile or kversion.from_makefile(root) or kversion.DEFAULT_VERSION
    source = "--kernel-version" if kernel_version else kernel.version_from if kernel_makefile else "Makefile"
    try:
        return cocci.report(root, [Path(os.path.abspath(p)) for p in paths], cat, jobs, version, source,
                            headers=kernel.find("include/linux/workqueue.h").parents[2] if kernel is not None
                            else None)
    except cocci.SpatchNotFound as exc:
        raise click.ClickException(str(exc)) from None


def _write_atomic(path, text):
    from wqlint import safeio
    try:
        safeio.write_atomic(path, text)
    except (safeio.OutputRefused, OSError) as exc:
        _stderr(f"Error: {path}: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}")
        sys.exit(3)


def _check_output(output, option="-o"):
    """An output path that cannot be written is a usage error, said before any work."""
    if output is None:
        return
    from wqlint import safeio
    try:
        safeio.check_output(output)
    except safeio.OutputRefused as exc:
        raise click.UsageError(f"{option} {output}: {exc}") from None


@main.command()
@click.argument("rule_id", required=False)
@click.option("--rules", "rules_path", type=click.Path(dir_okay=False), default=None)
def explain(rule_id, rules_path):
    """Print a rule's documentation (or list the rules)."""
    cat = _load_catalogue(rules_path)
    if rule_id is None:
        for rule in cat.rules:
            click.echo(f"{rule.id:32} {rule.severity:8} {rule.message}")
        return
    try:
        click.echo(cat[rule_id].doc_text(), nl=False)
    except KeyError:
        raise click.UsageError(f"unknown rule '{rule_id}' (known: {', '.join(cat.ids())})") from None


@main.command("rules")
@click.option("--markdown", is_flag=True, help="The rule table of docs/rules.md.")
@click.option("--markdown-docs", is_flag=True, help="The rules' sections of docs/rules.md.")
@click.option("--rules", "rules_path", type=click.Path(dir_okay=False), default=None)
def rules_cmd(markdown, markdown_docs, rules_path):
    """List the rules of the catalogue."""
    cat = _load_catalogue(rules_path)
    if markdown_docs:
        click.echo("\n".join(rule.doc_markdown() for rule in cat.rules), nl=False)
        return
    if not markdown:
        for rule in cat.rules:
            click.echo(f"{rule.id:32} {rule.severity:8} {rule.message}")
        return
    click.echo("| rule | severity | fix | message |")
    click.echo("|---|---|---|---|")
    for rule in cat.rules:
        click.echo(f"| `{rule.id}` | {rule.severity_text()} | {rule.fix_safety} | {rule.message} |")


@main.command()
@click.argument("patches", nargs=-1, required=False)
@click.option("--tree", type=click.Path(exists=True, file_okay=False), default=None,
              help="The tree the series applies to (never modified) [none: the hunks alone].")
@click.option("--git", "git_range", metavar="REVS", default=None,
              help="Review these commits (BASE..HEAD, REV^!, REV for REV..HEAD) of the git checkout holding "
                   "--tree (default: .) instead of PATCHES.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "mail", "github", "rdjson", "sarif", "b4",
                                                   "b4-review", "patchwork"]),
              default="text", show_default=True,
              help="b4: b4 am/prep's per-patch check command; b4-review: b4 review's check commands; "
                   "patchwork: the checks to POST, one per patch.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here, not stdout.")
@click.option("--all", "show_all", is_flag=True, help="Report the findings that were there before, too.")
@click.option("--series", "series_id", metavar="MESSAGE-ID", default=None,
              help="Review only this series of the mbox given (`wqlint series` lists them).")
@click.option("--reported", "reported_path", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Fingerprints already reported, one a line: those findings are not reported again.")
@click.option("--update-reported", is_flag=True,
              help="Add the fingerprints of the findings reported now to the --reported FILE.")
@_min_severity_option
@click.option("--max-findings", type=click.IntRange(1, None), default=None, metavar="N",
              help="At most N introduced findings a patch, the most severe first [.wqlint.yaml, else all].")
@click.option("--target-url", default="", metavar="URL",
              help="--format patchwork: the URL of the full report (the check's target_url).")
@click.option("-j", "--jobs", type=click.IntRange(1, 256), default=None, help="Parallel jobs [all cores].")
@_analysis_options
@phases_option
@_guarded("patches", "git_range")
@_kernel_tree_option
@click.option("--cache/--no-cache", default=True, show_default=True,
              help="Keep an index of the tree in $XDG_CACHE_HOME/wqlint (default ~/.cache) between runs.")
def review(patches, tree, git_range, fmt, output, show_all, series_id, reported_path, update_reported, min_severity,
           max_findings, target_url, jobs, kernel_version, cpus, max_cpus, rules_path, kernel_tree, cache):
    """Review PATCHES (patch files or an mbox of a series; '-' for stdin): report what the
    series introduces, on the lines it adds.

    Exit status: 0 nothing introduced, 1 findings introduced, 2 usage or catalogue error,
    3 a patch does not apply or the input cannot be read.
    """
    from wqlint import b4review, config, intake, mail, review as review_mod
    from wqlint.formatters.review import QUIET_FORMATS, REVIEW_FORMATS, b4_review
    from wqlint.scan.engine import UsageError

    _check_output(output)
    if target_url and (fmt != "patchwork" or not re.match(r"https?://[^\s/]+(?:/\S*)?$", target_url)):
        raise click.BadParameter("an http(s) URL, with --format patchwork", param_hint="--target-url")
    cat = _load_catalogue(rules_path)
    if bool(patches) == bool(git_range):
        raise click.UsageError("give PATCHES or --git REVS, not both and not neither")
    if update_reported and not reported_path:
        raise click.UsageError("--update-reported needs --reported FILE")
    _check_output(reported_path if update_reported else None, "--reported")
    try:
        reported = intake.reported(reported_path)
    except intake.ReportedError as exc:
        _fail(exc)
    if series_id and not git_range and len(patches) != 1:
        raise click.UsageError("--series takes one mbox")
    try:
        got = intake.patches(list(patches), tree, git_range, series_id, b4_review=fmt == "b4-review",
                             tracking=os.environ.get("B4_TRACKING_FILE"))
        if not got.patches:
            _stderr(f"wqlint: no commits in {git_range}")
            sys.exit(0)
        result = review_mod.review(got.patches, cat, tree=got.tree, jobs=jobs or os.cpu_count() or 1,
                                   kernel_version=kernel_version, ncpus=cpus, max_cpus=max_cpus,
                                   show_all=show_all, base_reader=got.base_reader,
                                   kernel_tree=_kernel_for(kernel_tree, [got.tree] if got.tree else []), cache=cache,
                                   reported=reported, config_reader=got.config_reader)
    except b4review.NotTracked as exc:  # b4's series check of a series it does not track
        click.echo(b4_review.result("warn", f"not reviewed: {exc}"), nl=False)
        sys.exit(exc.status)
    except (mail.MailError, review_mod.ReviewError, config.ConfigError) as exc:
        if fmt == "b4-review":  # b4 shows stdout, whatever the exit status
            click.echo(b4_review.result("fail", _printable(str(exc))), nl=False)
        _fail(exc)
    except UsageError as exc:
        _fail(exc)
    # the tree's .wqlint.yaml as it was before the series (Review.config), the options over it
    result.select(result.config.override(min_severity, max_findings))
    if fmt in QUIET_FORMATS:
        result.notes = []
    kw = {"target_url": target_url} if fmt == "patchwork" else {}

    record = None if not update_reported else lambda: _write_atomic(  # once the reply is written, not before
        reported_path, intake.reported_text(reported_path, [result.fingerprint(c.finding) for c in result.comments]))
    with phase("output"):
        _emit(REVIEW_FORMATS[fmt](result, cat, **kw), output, result, fmt, written=record)


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": True,
                                "help_option_names": ["--help"]})
@click.option("--also-sparse", is_flag=True, help="Run sparse's own checks too, with the same arguments.")
@_analysis_options
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def check(also_sparse, kernel_version, cpus, max_cpus, rules_path, args):
    """A checker for the kernel build: make C=1 CHECK="wqlint check".

    ARGS are what Kbuild passes a checker, $(CHECKFLAGS) $(c_flags) file.c. The file is
    preprocessed as configured (-D, -U, -I, -include, -isystem, -nostdinc, --arch=, -m64...;
    other options are ignored) and the findings are printed on stderr in sparse's format.

    Exit status: 0 when the file was checked, findings or not (warnings do not fail the
    build); 1 when it could not be (no such file, cannot be preprocessed, sparse missing);
    2 usage or catalogue error.
    """
    from wqlint import check as check_mod

    cat = _load_catalogue(rules_path)
    try:
        inv = check_mod.parse_args(list(args))
    except check_mod.CheckError as exc:
        raise click.UsageError(str(exc)) from None
    # The same as the fast path the `wqlint` command takes (wqlint.entry, check.main).
    sys.exit(check_mod.run_command(inv, cat, also_sparse, kernel_version, cpus, max_cpus))


@main.command("series")
@click.argument("mbox")
def series_cmd(mbox):
    """List the patch series of an mbox (a list archive: lei, public-inbox, b4 mbox), one a
    line, tab-separated: root Message-ID, version, base commit ('-': none named), patches
    found/expected, subject. Replies and mail without a patch tag are left out; a patch in
    the thread from someone other than the series' author is a series of its own.

    Exit status: 0; 3 when the mbox cannot be read, or a mail with a patch tag could not be
    (an `Error:` line names each; the other series are listed all the same).
    """
    from wqlint import errors, inbox, mail
    name = "<stdin>" if mbox == "-" else mbox
    try:
        found = inbox.archive(mail.read_input(mbox), name)
    except mail.MailError as exc:
        _fail(exc)
    for s in found.series:
        click.echo(_printable("\t".join([s.root, f"v{s.version}", s.base or "-", f"{s.patches}/{s.expected}",
                                        " ".join(s.subject.split())])))
    for problem in found.problems:
        _stderr(f"Error: {problem}")
    sys.exit(errors.INPUT if found.problems else 0)


def _ts_scan(paths, cat, options):
    """The tree-sitter engine over PATHS (lint.Linted); a path that does not exist is a usage error."""
    from wqlint import lint
    from wqlint.scan.targets import UsageError

    try:
        return lint.run(list(paths), cat, options)
    except UsageError as exc:
        _fail(exc)


def _tree_report(paths, cat, options, findings_json=None) -> tuple:
    """The findings fix and bulk work from: (a fresh scan of PATHS, lint.Linted), or (a saved
    JSON scan checked against the files as they are now, None)."""
    if findings_json is None:
        scanned = _ts_scan(paths, cat, options)
        return scanned.report, scanned
    from wqlint.fix import saved
    from wqlint.scan.targets import followed_links

    # The tree the scan saw: a module directory's links into its package included.
    paths = list(paths) + [str(p) for p in followed_links([Path(p) for p in paths])[0]]
    try:
        return saved.load(findings_json, _root_of(paths), paths, cat.ids(), options.kernel_version), None
    except saved.SavedError as exc:
        _fail(exc)


def _fix_options(command):
    for option in reversed([
        click.option("--target", type=click.Choice(["mainline", "reference"]), required=True,
                      help="mainline: APIs the scanned kernel has; reference: the series in kernel/."),
        click.option("--rule", "rule_ids", multiple=True, metavar="ID",
                     help="Only fix findings of this rule (repeatable)."),
        click.option("--suggestions", is_flag=True,
                     help="Also make the fixes rules.yaml marks as suggestions (intent unknown)."),
        click.option("--findings", "findings_json", type=click.Path(dir_okay=False),
                     help="Use this saved `wqlint scan --format json` instead of scanning."),
        click.option("-j", "--jobs", type=click.IntRange(1, 256), default=None, help="Parallel jobs [all cores]."),
        _kernel_tree_option,
        click.option("--cache/--no-cache", default=True, show_default=True,
                     help="Keep an index of the tree in $XDG_CACHE_HOME/wqlint (default ~/.cache) between runs."),
    ]):
        command = option(command)
    return _analysis_options(command)


def _plan(paths, target, rule_ids, suggestions, findings_json, jobs, kernel_version, cpus, max_cpus,
          rules_path, kernel_tree=None, oldest=None, cache=True):
    from wqlint.fix import plan as plan_mod
    cat = _load_catalogue(rules_path)
    unknown = [r for r in rule_ids if r not in cat.ids()]
    if unknown:
        raise click.UsageError(f"unknown rule '{unknown[0]}' (known: {', '.join(cat.ids())})")
    from wqlint.scan.options import ScanOptions

    options = ScanOptions(jobs=jobs or os.cpu_count() or 1, kernel_version=kernel_version,
                          kernel_tree=_kernel_for(kernel_tree, paths), ncpus=cpus, max_cpus=max_cpus, store=cache)
    report, scanned = _tree_report(paths, cat, options, findings_json)
    judged = (list(report.findings), scanned.read) if scanned is not None else None
    report.findings = _config(report.root, cat, scanned=scanned).select(report.findings)
    for err in report.errors:
        _stderr(str(err))
    try:
        result = plan_mod.plan(report, cat, target, set(rule_ids) or None, suggestions, oldest,
                               options=options, judged=judged)
    except plan_mod.FixError as exc:
        _fail(exc)
    for note in report.notes + result.notes:
        _stderr(f"wqlint: {note}")
    return cat, report, result


def _summary(result) -> None:
    """Findings left unfixed, grouped by rule and reason, then the totals."""
    groups: dict = {}
    for nf in result.not_fixed:
        groups.setdefault((nf.finding.rule_id, nf.reason), []).append(nf.finding)
    for (rule_id, reason), found in groups.items():
        _stderr(f"not fixed [{rule_id}] ({len(found)}): {reason}")
        places = Counter((f.path, f.line, f.col) for f in found)
        for f in found:  # several findings at one place: by function (a self-wait's: the work's)
            how = "from" if f.role == "flow" and not f.works else "in"
            named = f" {how} {f.function}()" if places[f.path, f.line, f.col] > 1 and f.function else ""
            _stderr(f"  {f.path}:{f.line}:{f.col}{named}")
    fixes = result.fixes()
    _stderr(f"wqlint: {len(fixes)} finding(s) fixed in {len(result.changes)} file(s) "
            f"(target {result.target}, {kversion.show(result.version)}); "
            f"{len(result.not_fixed)} not fixed")


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=False))
@_fix_options
@click.option("--diff", "mode", flag_value="diff", help="Print a unified diff (git apply ready).")
@click.option("--apply", "mode", flag_value="apply", help="Write the fixes into the tree.")
@click.option("--force", is_flag=True, help="With --apply: also files with uncommitted changes.")
@click.option("--oldest-kernel", "oldest", metavar="VERSION", callback=_version,
              help="A module's oldest kernel: names it lacks get a version guard [dkms.conf, the module's "
                   "LINUX_VERSION_CODE tests].")
@_guarded("paths")
def fix(paths, target, rule_ids, suggestions, findings_json, jobs, kernel_tree, cache, kernel_version, cpus,
        max_cpus, rules_path, mode, force, oldest):
    """Fix the findings in PATHS: --diff prints the change, --apply makes it.

    Safe fixes are made; those rules.yaml marks as suggestions only with --suggestions; every
    finding left unfixed is listed on stderr with the reason. --apply writes atomically, only
    inside the tree, and refuses files with uncommitted changes in a git tree unless --force.

    Exit status: 0 done, 1 --apply refused (nothing written), 2 usage or catalogue error,
    3 some input could not be processed.
    """
    from wqlint.fix import apply as apply_mod

    if mode is None:
        raise click.UsageError("say --diff or --apply")
    cat, report, result = _plan(paths, target, rule_ids, suggestions, findings_json, jobs,
                                kernel_version, cpus, max_cpus, rules_path, kernel_tree, oldest, cache)
    if mode == "diff":
        click.echo(result.diff(), nl=False)
    else:
        try:
            written = apply_mod.apply(result.root, result.changes, force=force)
        except apply_mod.ApplyError as exc:
            _fail(exc)
        for rel in written:
            _stderr(f"wqlint: fixed {rel}")
    _summary(result)
    sys.exit(3 if report.errors else 0)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=False))
@_fix_options
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True,
              help="Directory for fix.cocci and the patch series.")
@click.option("--author", default="wqlint <wqlint@localhost>", show_default=True,
              help="From: of the patches.")
@click.option("--date", default=None, help="Date: of the patches (RFC 2822) [now].")
@click.option("--verify", is_flag=True,
              help="Apply the series to a scratch copy, compile the touched objects, scan again.")
@click.option("--build-dir", type=click.Path(file_okay=False), default=None,
              help="With --verify: the O= build directory to use [OUT/verify/build].")
@_guarded("paths")
def bulk(paths, target, rule_ids, suggestions, findings_json, jobs, kernel_tree, cache, kernel_version, cpus,
         max_cpus, rules_path, out_dir, author, date, verify, build_dir):
    """Bulk fixes for PATHS: OUT/fix.cocci (a semantic patch that makes the same change on any
    copy of the tree) and OUT/NNNN-*.patch (a series, one patch per subsystem, Cc from the
    tree's MAINTAINERS; one patch for a module outside a kernel tree), plus a check with --verify.

    Exit status: 0 done (and verified), 1 verification failed, 2 usage or catalogue error,
    3 some input could not be processed (a kernel tree without MAINTAINERS, a file changed since a
    saved scan, a patch that does not apply).
    """
    from pathlib import Path

    from wqlint import safeio
    from wqlint.fix import cocci_gen, series as series_mod, verify as verify_mod
    from wqlint.scan.targets import find_root

    # The tree is never written: --out (and the scratch copy and build under it) must not
    # be the tree, lie inside it, or hold it (OUT/verify/tree is removed and copied anew).
    for p in paths:
        if not os.path.lexists(p):
            raise click.UsageError(f"{p}: no such file or directory")
    tree_root = find_root(list(paths))
    for option, where in (("--out", out_dir), ("--build-dir", build_dir)):
        if where is not None and safeio.overlap(where, tree_root):
            raise click.UsageError(f"{option} {where} overlaps the tree {tree_root}: "
                                   "give a directory outside it")
    cat, report, result = _plan(paths, target, rule_ids, suggestions, findings_json, jobs,
                                kernel_version, cpus, max_cpus, rules_path, kernel_tree, cache=cache)
    out = Path(out_dir)
    root = Path(result.root)
    if safeio.overlap(out, root):
        raise click.UsageError(f"--out {out_dir} overlaps the tree {root}: give a directory outside it")
    if verify and series_mod.module_of(root) is not None:
        raise click.UsageError(f"--verify builds the objects of a kernel tree; {root} is a module: apply "
                               "the patch and build it with its own Kbuild against each kernel it supports")
    try:  # (a link another user planted in /tmp is not followed: safeio.resolve)
        Path(safeio.resolve(out)).mkdir(parents=True, exist_ok=True)
    except (OSError, safeio.OutputRefused) as exc:
        _stderr(f"Error: {out}: cannot create: {getattr(exc, 'strerror', None) or exc}")
        sys.exit(3)
    try:
        patches = series_mod.write_series(root, result.changes, cat, result.version, target, out,
                                          author=author, date=date)
    except series_mod.SeriesError as exc:
        _fail(exc)
    fixes = result.fixes()
    subject = "workqueue: " + ("the fixes of wqlint bulk" if not fixes else
                               f"{len(fixes)} fix(es) for {target}")
    _write_atomic(str(out / "fix.cocci"), cocci_gen.generate(fixes, target, result.version, subject))
    for p in patches:
        click.echo(str(p))
    click.echo(str(out / "fix.cocci"))
    _summary(result)
    status = 3 if report.errors else 0
    if verify and patches:
        jobs = jobs or os.cpu_count() or 1
        outcome = verify_mod.Verified()
        try:
            scratch = verify_mod.scratch_copy(root, out / "verify" / "tree", base=out)
            outcome.applied = verify_mod.apply_series(scratch, patches[1:])
            touched = verify_mod.touched_files(patches[1:])
            verify_mod.build(scratch, Path(build_dir) if build_dir else out / "verify" / "build",
                             touched, jobs, outcome, original=root)
            # (the scratch copy is remade by every run: no index of it is kept)
            from wqlint.scan.options import ScanOptions
            again, _ = _tree_report([str(scratch / t) for t in verify_mod.judged_from(fixes, touched)], cat,
                                    ScanOptions(jobs=jobs, kernel_version=result.version, ncpus=cpus,
                                                max_cpus=max_cpus))
            outcome.remaining = verify_mod.left_over(again.findings, fixes, result.not_fixed)
        except verify_mod.VerifyError as exc:
            _fail(exc)
        for line in outcome.lines():
            _stderr(line)
        if not outcome.ok():
            status = max(status, 1)
    sys.exit(status)
