"""`wqlint check`: a checker for the kernel build (`make C=1 CHECK="wqlint check"`).

Kbuild runs `$(CHECK) $(CHECKFLAGS) $(c_flags) file.c`. The file is preprocessed under those
flags, so every macro, enumerator and `#if` is what the configuration being built makes it, and
the scanner runs on that translation unit. Findings are mapped back to the original file and
line and printed on stderr in sparse's format.

sparse decides the configuration: its predefined macros for the flags given (`--arch=`, `-m64`,
`-D`, `-U`, `-O2`, `__CHECKER__`...) are taken from `sparse -E -dM`. `sparse -E` itself writes no
line markers, so the text is expanded by `cpp -undef` with exactly those macros, which keeps the
`# N "file"` markers that lead each line back to where it was written.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

# Options that take a value, either joined (-DX, -Idir) or as the next argument (-D X, -I dir).
_VALUED = ("-D", "-U", "-I", "-include", "-imacros", "-isystem", "-iquote", "-idirafter")
# Options given to `sparse -E -dM` to learn the predefined macros of the configuration.
_SPARSE_ONLY = re.compile(r"^(--arch=.*|-m(32|64|x32|big-endian|little-endian|cmodel=.*)|-O.*|-std=.*|"
                          r"-f(un)?signed-char|-fshort-wchar)$")
# Macros cpp provides itself and refuses to see redefined.
_BUILTIN = re.compile(r"^#define (__STDC__|__STDC_HOSTED__|__STDC_VERSION__|_Pragma|__FILE__|__LINE__|"
                      r"__DATE__|__TIME__|__COUNTER__|__has_\w+|__INCLUDE_LEVEL__|__BASE_FILE__)\b")
_MARKER = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"')
_IDENT = re.compile(r"[A-Za-z_]\w*")
TIMEOUT = 300


class CheckError(Exception):
    """Printed as one line, and the checker exits non-zero."""


@dataclass
class Invocation:
    file: str
    defines: list = field(default_factory=list)  # -D/-U, in order, as cpp options
    includes: list = field(default_factory=list)  # -I/-include/-isystem/... and -nostdinc
    sparse: list = field(default_factory=list)  # options that shape sparse's predefined macros
    all_args: list = field(default_factory=list)  # everything, for --also-sparse


def parse_args(args: list) -> Invocation:
    """What Kbuild passes a checker. Unknown options are accepted and ignored."""
    files, defines, includes, sparse = [], [], [], []
    i = 0
    while i < len(args):
        a = args[i]
        opt = next((o for o in _VALUED if a == o or (a.startswith(o) and o in ("-D", "-U", "-I"))), None)
        if opt:
            if a == opt:
                if i + 1 >= len(args):
                    raise CheckError(f"option {opt} needs a value")
                value = args[i + 1]
                i += 1
            else:
                value = a[len(opt):]
            (defines if opt in ("-D", "-U") else includes).extend([opt, value])
        elif a == "-nostdinc":
            includes.append(a)
        elif _SPARSE_ONLY.match(a):
            sparse.append(a)
        elif a.startswith("-"):
            pass  # -Wp,-MMD,..., -g, -pipe, --param=...: not the checker's concern
        else:
            files.append(a)
        i += 1
    if not files:
        raise CheckError("no source file given")
    if len(files) > 1:
        raise CheckError(f"one source file at a time, got {len(files)}: {' '.join(files)}")
    return Invocation(file=files[0], defines=defines, includes=includes, sparse=sparse, all_args=list(args))


def _tool(name: str, package: str) -> str:
    path = shutil.which(name)
    if not path:
        raise CheckError(f"{name} not found: install Debian's '{package}' package (apt-get install {package})")
    return path


def _run(cmd: list, what: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise CheckError(f"{what} timed out after {TIMEOUT}s") from None
    except OSError as exc:
        raise CheckError(f"{what} could not be run: {exc}") from None


def _first_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln:
            return ln
    return lines[0] if lines else "unknown error"


def preprocess(inv: Invocation, workdir: str) -> str:
    """The translation unit as the configuration makes it, with cpp's line markers."""
    sparse = _tool("sparse", "sparse")
    cpp = _tool("cpp", "cpp")
    empty = os.path.join(workdir, "predefined.c")
    Path(empty).write_text("")
    got = _run([sparse, "-E", "-dM", *inv.sparse, *inv.defines, empty], "sparse")
    if got.returncode != 0:
        raise CheckError(f"sparse refused the flags: {_first_error(got.stderr)}")
    predefs = os.path.join(workdir, "predefined.h")
    Path(predefs).write_text("".join(ln + "\n" for ln in got.stdout.splitlines()
                                     if ln.startswith("#define ") and not _BUILTIN.match(ln)))
    got = _run([cpp, "-undef", "-w", "-imacros", predefs, *inv.defines, *inv.includes, inv.file], "cpp")
    if got.returncode != 0:
        raise CheckError(f"cannot preprocess: {_first_error(got.stderr)}")
    return got.stdout


def line_map(text: str):
    """Lines of the unit with the markers blanked (so line numbers do not move), and for each
    1-based line the (file, line) it came from."""
    lines, where = [], [None]
    cur_file, cur_line = "", 0
    for ln in text.split("\n"):
        m = _MARKER.match(ln)
        if m:
            cur_line, cur_file = int(m.group(1)), m.group(2).replace('\\"', '"').replace("\\\\", "\\")
            lines.append("")
            where.append(None)
            continue
        lines.append(ln)
        where.append((cur_file, cur_line))
        cur_line += 1
    return "\n".join(lines), where


class _Original:
    """The original sources, read on demand, to print their lines and find columns."""

    def __init__(self):
        self._lines = {}

    def line(self, path: str, n: int) -> str:
        if path not in self._lines:
            try:
                self._lines[path] = Path(path).read_text(errors="replace").split("\n")
            except OSError:
                self._lines[path] = []
        lines = self._lines[path]
        return lines[n - 1] if 0 < n <= len(lines) else ""


def _column(unit_line: str, col: int, original: str) -> int:
    """The column in the original line of the name the unit's line has at col."""
    m = _IDENT.match(unit_line, max(col - 1, 0))
    if m:
        found = re.search(r"\b" + re.escape(m.group(0)) + r"\b", original)
        if found:
            return found.start() + 1
    stripped = len(original) - len(original.lstrip())
    return stripped + 1


def check(inv: Invocation, catalogue, kernel_version=None, ncpus=96, max_cpus=512) -> list:
    """The findings for inv.file, as sparse-style lines (the warning, then its chain)."""
    from wqlint import kversion
    from wqlint.scan.engine import find_root, scan

    if not os.path.isfile(inv.file):
        raise CheckError("no such file")
    if kernel_version is None:
        kernel_version = kversion.from_makefile(find_root([inv.file])) or kversion.DEFAULT_VERSION
    with tempfile.TemporaryDirectory(prefix="wqlint-check-") as workdir:
        text = preprocess(inv, workdir)
        unit, where = line_map(text)
        unit_dir = os.path.join(workdir, "unit")
        os.mkdir(unit_dir)
        unit_path = os.path.join(unit_dir, os.path.basename(inv.file))
        Path(unit_path).write_text(unit)
        report = scan([unit_path], catalogue, jobs=1, kernel_version=kernel_version,
                      ncpus=ncpus, max_cpus=max_cpus)
    unit_lines = unit.split("\n")
    unit_rel = os.path.basename(inv.file)
    main = os.path.realpath(inv.file)
    orig = _Original()

    def back(rel, n):
        if rel != unit_rel or not 0 < n < len(where) or where[n] is None:
            return None
        return where[n]

    out = []
    for f in report.findings:
        at = back(f.path, f.line)
        if at is None or os.path.realpath(at[0]) != main:
            continue  # a header's allocation: reported where the header is checked, not here
        path, line = at
        col = _column(unit_lines[f.line - 1], f.col, orig.line(path, line))
        out.append(f"{path}:{line}:{col}: {f.severity}: {f.message} [{f.rule_id}]")
        for step in f.chain:
            sat = back(step.path, step.line)
            spath, sline = sat if sat else (step.path, step.line)
            out.append(f"    {spath}:{sline}: {step.note}")
        if f.migration:
            out.append(f"    fix: {f.migration}")
    errors = [str(e) for e in report.errors if e.path != unit_rel and not e.path.endswith("/" + unit_rel)]
    return out, errors


def run_sparse(inv: Invocation) -> subprocess.CompletedProcess:
    """sparse's own checks, with the same arguments."""
    return _run([_tool("sparse", "sparse"), *inv.all_args], "sparse")
