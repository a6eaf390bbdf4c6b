"""The Coccinelle engine: run spatch with wqlint's semantic patches, read back Findings.

Each rule that Coccinelle can express has one file ``<rule-id>.cocci`` (see
semantic-patches/README.md); the same files run in a kernel tree through
``make coccicheck``. Here they run in report mode and every report line
``path:line:col-col: message`` becomes a :class:`wqlint.finding.Finding` with
``engine="coccinelle"``; severity and message come from the catalogue.

Entry point for the CLI::

    findings, errors = wqlint.cocci.run(root, targets, wqlint.checks.load_catalogue(), jobs)

A missing spatch raises :class:`SpatchNotFound` (a ``RuntimeError``) whose text says to
install Debian's package ``coccinelle``.

The semantic patches read only the C they are given: they know no kernel version. Given the
tree's version, ``run`` runs only the files of rules that apply to it (``kernel-versions`` and
``requires-symbol`` in rules.yaml, the symbol looked up in the tree's
include/linux/workqueue.h, or in wqlint's own header of that version when there is none).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from wqlint import api, errors, safeio, tools
from wqlint.finding import Finding, InputError, Report, Step, numbered
from wqlint.project_files import locate

ENGINE = "coccinelle"
# Names whose presence makes a file worth parsing (spatch would otherwise parse every file):
# what callers write (the allocations, and the deprecated system queues that
# deprecated-system-workqueue looks for), less the names that contain another one.
_WRITTEN = (api.PUBLIC_FUNCTIONS + api.ORDERED_MACROS + api.LEGACY_MACROS
            + tuple(api.DEPRECATED_SYSTEM_QUEUES))
TRIGGERS = tuple(n.encode() for n in _WRITTEN if not any(o != n and o in n for o in _WRITTEN))
SOURCE_SUFFIXES = (".c", ".h")
SKIP_DIRS = {".git", ".hg", ".svn", ".pc"}
MAX_COCCI_BYTES = 1024 * 1024
PER_FILE_TIMEOUT = 200  # seconds, as the kernel's own .cocciconfig asks
SPATCH_TIMEOUT = 6 * 3600  # one rule over a whole tree
_REPORT_RE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+)-(?P<end>\d+): (?P<msg>.*)$")
_PLAIN_NAME = re.compile(r"[\w./+-]+")  # what spatch reads as one file name
_OPTIONS_RE = re.compile(r"^//\s*Options:(.*)$", re.M)
HEADER_LIMIT = 4 << 20  # bytes of include/linux/workqueue.h read for requires-symbol


class SpatchNotFound(errors.WqlintError, RuntimeError, status=errors.USAGE):
    """spatch (Coccinelle) is not installed or not on PATH."""

    def __init__(self, name: str = "spatch"):
        super().__init__(
            f"{name}: not found. The Coccinelle engine needs spatch: install Debian's package "
            "'coccinelle' (sudo apt-get install coccinelle), or set $SPATCH to its path.")


def semantic_patches_dir() -> Path:
    """The .cocci files: $WQLINT_SEMANTIC_PATCHES, a packaged copy, or the checkout's."""
    return locate("semantic-patches", "WQLINT_SEMANTIC_PATCHES")


def semantic_patches(catalogue, directory: Path | None = None) -> dict:
    """rule id -> .cocci path, for the catalogue's rules that have a semantic patch."""
    directory = Path(directory) if directory else semantic_patches_dir()
    ids = set(catalogue.ids())
    found = {}
    if directory.is_dir():
        for path in sorted(directory.glob("*.cocci")):
            if path.stem in ids:
                found[path.stem] = path
    return found


def report(root: Path, paths: list, cat, jobs: int, version, source: str, headers=None) -> Report:
    """run() as a Report, the same as the tree-sitter engine's, with a note of the rules no
    semantic patch covers (source: where the kernel version came from)."""
    findings, errs = run(root, paths, cat, jobs, headers=headers, version=version)
    missing = not_covered(cat)
    notes = [f"not covered by --engine coccinelle (no semantic patch, see semantic-patches/README.md): "
             f"{', '.join(missing)}; the tree-sitter engine checks them"] if missing else []
    return Report(root=str(root), findings=findings, errors=errs, notes=notes, kernel_version=version,
                  kernel_version_source=source)


def not_covered(catalogue, directory: Path | None = None) -> list:
    """The catalogue's rule ids that have no semantic patch: the Coccinelle engine cannot
    report them (semantic-patches/README.md says why), and says so."""
    have = semantic_patches(catalogue, directory)
    return [rule_id for rule_id in catalogue.ids() if rule_id not in have]


def applicable(catalogue, version: tuple, header: bytes) -> set:
    """The ids of the rules that apply to a tree of this version whose workqueue.h is header."""
    return {rule.id for rule in catalogue.rules
            if rule.kernel_versions.contains(version)
            and (not rule.requires_symbol
                 or re.search(rb"\b" + re.escape(rule.requires_symbol.encode()) + rb"\b", header))}


def tree_header(top: Path, version: tuple) -> bytes:
    """The tree's include/linux/workqueue.h, or wqlint's own header of that version."""
    path = Path(top) / "include" / "linux" / "workqueue.h"
    try:
        return safeio.read_bytes(path, HEADER_LIMIT, root=top)
    except safeio.InputRefused:
        return api.builtin_header(version)


def spatch_binary() -> str:
    """Path of spatch ($SPATCH overrides); SpatchNotFound when it is missing."""
    name = os.environ.get("SPATCH", "spatch")
    found = tools.which(name)
    if not found:
        raise SpatchNotFound(name)
    return found


def cocci_options(cocci: Path) -> list:
    """The '// Options:' of a .cocci file, which make coccicheck also passes to spatch."""
    options: list[str] = []
    for match in _OPTIONS_RE.finditer(safeio.read_text(cocci, MAX_COCCI_BYTES)):
        options.extend(match.group(1).split())
    return options


def spatch_command(cocci: Path, mode: str = "report", jobs: int = 1,
                   files_given: bool = False) -> list:
    """spatch's command line for one semantic patch, as scripts/coccicheck builds it; add
    --dir or --file-groups (files_given=True) to it."""
    cmd = [spatch_binary(), "-D", mode, "--very-quiet", "--cocci-file", str(cocci)]
    if mode in ("report", "org"):
        cmd.append("--no-show-diff")
    cmd += cocci_options(cocci)
    cmd += ["--timeout", str(PER_FILE_TIMEOUT)]
    if files_given:
        # wqlint picks the files itself; a tree's .cocciconfig may ask for --use-gitgrep,
        # which spatch would then run over the whole tree once per listed file.
        cmd.append("--no-scanner")
    if jobs > 1:
        cmd += ["--jobs", str(jobs), "--chunksize", "1"]
    return cmd


def candidate_files(root: Path, targets: list) -> tuple:
    """(files relative to root that mention an allocation name, InputErrors)."""
    files, errors, seen = [], [], set()

    def consider(path: Path):
        try:
            real = path.resolve()
            if real in seen:
                return
            seen.add(real)
            data = safeio.read_bytes(path, safeio.MAX_SOURCE_BYTES, root)
        except OSError as exc:
            errors.append(InputError(_rel(root, path), f"cannot read: {exc.strerror or exc}"))
            return
        except safeio.InputRefused as exc:
            errors.append(InputError(_rel(root, path), str(exc)))
            return
        if any(t in data for t in TRIGGERS):
            files.append(_rel(root, path))

    for target in targets:
        target = Path(target)
        if not target.is_absolute():
            target = root / target
        if target.is_file():
            consider(target)
        elif target.is_dir():
            for dirpath, dirnames, filenames in safeio.walk(target):
                dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
                for name in sorted(filenames):
                    if name.endswith(SOURCE_SUFFIXES):
                        p = Path(dirpath) / name
                        if p.is_file():
                            consider(p)
        else:
            errors.append(InputError(_rel(root, target), "no such file or directory"))
    return files, errors


def _rel(root: Path, path: Path) -> str:
    try:
        return Path(os.path.relpath(Path(path).absolute(), Path(root).absolute())).as_posix()
    except ValueError:
        return Path(path).as_posix()


def parse_report(text: str) -> list:
    """Report lines -> [(path, line, col0, end0, message)]; any other line than an empty one
    is ValueError (what was printed): spatch's answer is not the one asked for."""
    out = []
    for raw in text.splitlines():
        m = _REPORT_RE.match(raw)
        if m:
            out.append((m["path"], int(m["line"]), int(m["col"]), int(m["end"]), m["msg"]))
        elif raw.strip():
            raise ValueError(f"a line that is not a report: {raw[:80]!r}")
    return out


def _source_line(root: Path, path: str, line: int) -> str:
    try:
        lines = safeio.read_text(root / path, safeio.MAX_SOURCE_BYTES, root, errors="replace").splitlines()
        return lines[line - 1]
    except (safeio.InputRefused, IndexError):
        return ""


def _finding(root: Path, rule, path: str, line: int, col0: int, end0: int) -> Finding:
    path = Path(os.path.normpath(path)).as_posix()
    text = _source_line(root, path, line)
    name = text[col0:end0] if end0 <= len(text) else ""
    note = f"call of {name}()" if name else "call"
    return Finding(
        rule_id=rule.id, severity=rule.severity, path=path, line=line, col=col0 + 1,
        message=rule.message, chain=(Step(path, line, text.strip(), note),),
        migration=rule.fix_strategy, engine=ENGINE, end_col=end0,
    )


def run(root: Path, targets: list, catalogue, jobs: int = 1,
        patches_dir: Path | None = None, headers: Path | None = None,
        version: tuple | None = None) -> tuple:
    """Run every semantic patch in report mode over targets (files or directories, absolute
    or relative to root). Returns (findings sorted by place, input errors).

    The rules read only the C files they are given. For a module outside a kernel tree,
    headers is the top of the kernel it builds for, which `make coccicheck M=` runs spatch in.
    spatch runs in a directory of wqlint's own that shows only include/ and Makefile of that
    top (or of root): a tree's .cocciconfig (spatch reads the one of its working directory)
    could give spatch any option, --python among them. The files are named by absolute paths.
    With version, only the rules that apply to that tree run (see applicable()).
    """
    root = Path(root).absolute()
    jobs = max(1, int(jobs)) if jobs else (os.cpu_count() or 1)  # 0 or None: every core
    patches = semantic_patches(catalogue, patches_dir)
    if not patches:
        where = patches_dir or semantic_patches_dir()
        return [], [InputError(str(where), "no semantic patches found (*.cocci named after rule ids)")]
    if version is not None:
        wanted = applicable(catalogue, version, tree_header(headers or root, version))
        patches = {rule_id: cocci for rule_id, cocci in patches.items() if rule_id in wanted}
    spatch_binary()  # fail early and clearly
    files, errors = candidate_files(root, targets or [root])
    if not files:
        return [], errors
    findings: dict[tuple, Finding] = {}
    with tools.temp_dir("wqlint-cocci-") as tmp:
        # spatch cannot take every name: 'a:5:b.c' is read as a file and a line (and fails
        # the whole run: every rule would be lost), a newline ends a name in the group file.
        # Such a file goes in under a plain name, a link in tmp, mapped back in the report;
        # a tree whose own path is not plain (a module in 'mod:5:x/') is named through a link
        # in tmp, so that its files keep their directories (and local headers).
        base = root
        if not _PLAIN_NAME.fullmatch(str(root)):
            base = Path(tmp) / "tree"
            os.symlink(root, base)
        aliases, given = {}, []
        for n, rel in enumerate(files):
            if _PLAIN_NAME.fullmatch(rel):
                given.append(rel)
                continue
            (Path(tmp) / "alias").mkdir(exist_ok=True)
            link = Path(tmp) / "alias" / f"{n}{os.path.splitext(rel)[1] if rel.endswith(SOURCE_SUFFIXES) else '.c'}"
            os.symlink(root / rel, link)
            aliases[str(link)] = rel
            given.append(str(link))
        groups = Path(tmp) / "files"
        named = [g if g in aliases else str(base / g) for g in given]
        groups.write_text("\n\n".join(named) + "\n", encoding="utf-8")
        top = Path(tmp) / "top"
        top.mkdir()
        for name in ("include", "Makefile"):
            if os.path.lexists(Path(headers or root) / name):
                os.symlink(Path(headers or root).absolute() / name, top / name)
        for rule_id, cocci in patches.items():
            rule = catalogue[rule_id]
            cmd = spatch_command(cocci, "report", jobs, files_given=True)
            cmd += ["--tmp-dir", str(Path(tmp) / "par"), "--file-groups", str(groups)]
            try:
                proc = tools.run(cmd, cwd=top, text=True, env={"LC_ALL": "C.UTF-8"},
                                 timeout=SPATCH_TIMEOUT, what="spatch")
            except tools.ToolError as exc:
                errors.append(InputError(cocci.name, str(exc)))
                continue
            if proc.returncode != 0:
                tail = " ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
                errors.append(InputError(cocci.name, f"spatch failed (exit {proc.returncode}): {tail}"))
                continue
            try:
                report = parse_report(proc.stdout)
            except ValueError as exc:
                errors.append(InputError(cocci.name, f"spatch printed {exc}"))
                continue
            for path, line, col0, end0, msg in report:
                if msg != rule.message:
                    errors.append(InputError(cocci.name, f"unexpected report text: {msg!r}"))
                    continue
                path = aliases[path] if path in aliases else _rel(base, Path(path))
                if path.startswith("../") or os.path.isabs(path):
                    continue  # a header outside the tree spatch went into: not the tree's to report
                f = _finding(root, rule, path, line, col0, end0)
                findings.setdefault((f.rule_id, f.path, f.line, f.col), f)
    return numbered(list(findings.values())), errors


def c_files(paths) -> int:
    """How many .c and .h files the search of paths covers (hidden directories left out, as
    the search does), for the coccinelle engine: the tree-sitter engine counts them in the
    walk it makes anyway (Report.files_scanned)."""
    count = 0
    for p in paths:
        if not os.path.isdir(p):
            count += p.endswith((".c", ".h"))
            continue
        for _top, dirs, files in safeio.walk(p):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            count += sum(f.endswith((".c", ".h")) for f in files)
    return count
