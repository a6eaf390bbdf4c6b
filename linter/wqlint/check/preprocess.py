"""The translation unit as the configuration being built makes it.

sparse decides the configuration: its predefined macros for the flags given (`--arch=`, `-m64`,
`-D`, `-U`, `-O2`, `__CHECKER__`...) are taken from `sparse -E -dM` on an empty file (a few
milliseconds). `sparse -E` itself writes no line markers, so the text is expanded by
`cpp -undef` with exactly those macros, which keeps the `# N "file"` markers that lead each line
back to where it was written, and with `-dD`, which leaves every `#define` and `#undef` in place:
that tells which definition of a macro was live and what each CONFIG_ option is in this build.
"""
from __future__ import annotations

import os
import re

from wqlint import safeio, tools
from wqlint.check.errors import CheckError

# A kernel translation unit is a few MiB; cpp can be made to write without end.
MAX_UNIT_BYTES = 256 * 1024 * 1024

# Macros cpp provides itself and refuses to see redefined.
_BUILTIN = re.compile(r"^#define (__STDC__|__STDC_HOSTED__|__STDC_VERSION__|_Pragma|__FILE__|__LINE__|"
                      r"__DATE__|__TIME__|__COUNTER__|__has_\w+|__INCLUDE_LEVEL__|__BASE_FILE__)\b")
_PREDEF = re.compile(r"^#define ([A-Za-z_]\w*(?:\([^)]*\))?) ?(.*)$")
TIMEOUT = 300


def _tool(name: str, package: str) -> str:
    path = tools.which(name)
    if not path:
        raise CheckError(f"{name} not found: install Debian's '{package}' package (apt-get install {package})")
    return path


def _run(cmd: list, what: str):
    """cmd's exit status and output as text (see wqlint.tools)."""
    try:
        return tools.run(cmd, timeout=TIMEOUT, what=what, text=True)
    except tools.ToolError as exc:
        raise CheckError(str(exc)) from None


def _first_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln:
            return ln
    return lines[0] if lines else "unknown error"


def preprocess(inv, directives: bool = True) -> str:
    """The translation unit of inv (an args.Invocation) with cpp's line markers and (with
    directives) the #define/#undef directives in place (-dD). sparse's predefined macros go
    to cpp as -D options. -ftrack-macro-expansion=0: the unit is the same, and cpp is then
    about as fast as `sparse -E` instead of twice as slow."""
    sparse = _tool("sparse", "sparse")
    cpp = _tool("cpp", "cpp")
    got = _run([sparse, "-E", "-dM", *inv.sparse, *inv.defines, os.devnull], "sparse")
    if got.returncode != 0:
        raise CheckError(f"sparse refused the flags: {_first_error(got.stderr)}")
    predefs = []
    for ln in got.stdout.splitlines():
        m = _PREDEF.match(ln)
        if m and not _BUILTIN.match(ln):
            predefs.append(f"-D{m.group(1)}={m.group(2)}")
    # Into a file, read at once: through a pipe, 5 MB are ~500 wake-ups of both processes.
    # (Removed when read, or by the signal that ends wqlint first.)
    out = os.path.join(os.environ.get("TMPDIR") or "/tmp", f"wqlint-check-{os.getpid()}-{os.urandom(4).hex()}.i")
    with tools.temp_path(out):
        got = _run([cpp, "-undef", "-w", *(["-dD"] if directives else []), "-ftrack-macro-expansion=0",
                    *predefs, *inv.defines, *inv.includes, inv.file, "-o", out], "cpp")
        if got.returncode != 0:
            raise CheckError(f"cannot preprocess: {_first_error(got.stderr)}")
        try:
            return safeio.read_bytes(out, MAX_UNIT_BYTES).decode("utf-8", "replace")
        except safeio.InputRefused as exc:
            raise CheckError(f"cannot read what cpp wrote to {out}: {exc}") from None


def run_sparse(inv):
    """sparse's own checks, with the same arguments."""
    return _run([_tool("sparse", "sparse"), *inv.all_args], "sparse")
