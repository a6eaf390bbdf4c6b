"""Fixes for a module that builds for many kernels: they must still build on the oldest.

A fix written against a new kernel may use names an older one lacks (api.STAND_INS:
WQ_PERCPU, system_percpu_wq, system_dfl_wq, all v6.17). A module outside the kernel tree
that also builds for older kernels gets, in each file the fix touches, the version guard
docs/modules.md recommends: the name defined to what it meant before, under
`#if LINUX_VERSION_CODE < KERNEL_VERSION(...)`.

The oldest kernel the module builds for is taken from, in order: --oldest-kernel; dkms.conf
(BUILD_EXCLUSIVE_KERNEL_MIN, or the lowest kernel the BUILD_EXCLUSIVE_KERNEL regex accepts);
the module's own LINUX_VERSION_CODE tests (a test of version X means it builds for kernels
before X). With none of them the module may build for any older kernel: guarded too.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from wqlint import api, kversion, safeio
from wqlint.fix import ere

_TEST_RE = re.compile(r"KERNEL_VERSION\s*\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)")
# one line at a time: a pattern under re.M that may start on any line is tried from each
_DKMS_KEY = re.compile(r"[ \t]*(BUILD_EXCLUSIVE_KERNEL(?:_MIN)?|PACKAGE_NAME)[ \t]*=")
MAX_FILES = 2000  # module files read for their version tests
MAX_BYTES = 4 << 20  # of one file
MAX_TOTAL = 64 << 20  # of all of them
MAX_PATTERN = 256  # characters of a BUILD_EXCLUSIVE_KERNEL pattern tried


class Range:
    """What is known of the oldest kernel a module builds for."""

    def __init__(self, oldest: Optional[tuple], below: Optional[tuple], source: str):
        self.oldest = oldest  # builds for this kernel and later
        self.below = below  # builds for some kernel before this one
        self.source = source  # where that was read, for the note

    def lacks(self, since: tuple) -> bool:
        """May the module build for a kernel before since?"""
        if self.oldest is not None:
            return self.oldest[:3] < since
        return True  # (a test of a version below it, or nothing known)

    def describe(self) -> str:
        if self.oldest is not None:
            return f"from {kversion.show(self.oldest)} ({self.source})"
        if self.below is not None:
            return f"before {kversion.show(self.below)} too ({self.source})"
        return f"on kernels not known ({self.source}), so older ones are assumed"


def module_range(root: Path, given: Optional[tuple] = None) -> Range:
    if given is not None:
        return Range(given, None, "--oldest-kernel")
    from wqlint.scan.targets import package_of

    for where in dict.fromkeys([root, package_of(root)]):
        got = _from_dkms(where / "dkms.conf", root)
        if got is not None:
            return got
    lowest = _lowest_test(root)
    if lowest is not None:
        return Range(None, lowest, f"its own LINUX_VERSION_CODE tests go down to {kversion.show(lowest)}")
    return Range(None, None, "no dkms.conf BUILD_EXCLUSIVE_KERNEL, no LINUX_VERSION_CODE test; "
                             "--oldest-kernel says")


def _dkms_fields(path: Path) -> Optional[dict]:
    """The fields of the dkms.conf at path that wqlint reads, or None (no such file)."""
    try:
        text = safeio.read_text(path, 1 << 20, errors="replace")
    except safeio.InputRefused:
        return None
    fields = {}
    for line in text.split("\n"):
        m = _DKMS_KEY.match(line)
        if m:
            value = _dkms_value(line[m.end():])
            if value is not None:
                fields[m.group(1)] = value
    return fields


def _dkms_value(rest: str) -> Optional[str]:
    """What follows KEY= on a line of dkms.conf: the value, "quoted" or bare, or None when
    more than blanks follow its closing quote."""
    rest = rest.strip()
    if rest.startswith('"'):
        rest = rest[1:]
    value, _, after = rest.partition('"')
    return None if after.strip() else value.strip()


def module_name(root: Path) -> str:
    """The name of the module whose directory is root: PACKAGE_NAME of its package's
    dkms.conf, else the directory's name."""
    from wqlint.scan.targets import package_of

    for where in dict.fromkeys([root, package_of(root)]):
        name = (_dkms_fields(where / "dkms.conf") or {}).get("PACKAGE_NAME", "")
        if re.fullmatch(r"[A-Za-z0-9][\w.+-]{0,63}", name):
            return name
    return Path(root).resolve().name


def _from_dkms(path: Path, root: Path) -> Optional[Range]:
    fields = _dkms_fields(path)
    if fields is None:
        return None
    shown = path.relative_to(root).as_posix() if root in path.parents else str(path)
    if fields.get("BUILD_EXCLUSIVE_KERNEL_MIN"):
        try:
            return Range(kversion.parse_version(fields["BUILD_EXCLUSIVE_KERNEL_MIN"]), None,
                         f"{shown} BUILD_EXCLUSIVE_KERNEL_MIN")
        except ValueError:
            pass
    pattern = fields.get("BUILD_EXCLUSIVE_KERNEL")
    if pattern and len(pattern) <= MAX_PATTERN:
        try:  # (not re: it backtracks, and a pattern of nested repeats would never end)
            regex = ere.Pattern(pattern)
        except ere.PatternError:
            return None
        # The lowest release the pattern accepts (bash's =~: a search), as a distribution
        # names it (6.1.0-37-amd64) or as it is released (6.1.150).
        for major in range(2, api.NEWEST_VERSION[0] + 2):
            for minor in range(0, 41):
                if major == 2 and minor < 6:
                    continue
                names = (f"{major}.{minor}.0", f"{major}.{minor}.0-1-amd64", f"{major}.{minor}.1")
                if any(regex.search(n) for n in names):
                    return Range((major, minor, 0), None, f"{shown} BUILD_EXCLUSIVE_KERNEL")
    return None


def _lowest_test(root: Path) -> Optional[tuple]:
    """The lowest version the module's files compare LINUX_VERSION_CODE with."""
    lowest = None
    count = total = 0
    # (not rglob: in Python 3.11 it recurses once a directory, and a deep tree stops it)
    found = (Path(top, n) for top, dirs, files in safeio.walk(root) for n in dirs + files)
    for path in sorted(p for p in found if p.name.endswith((".c", ".h"))):
        count += 1
        if count > MAX_FILES or total > MAX_TOTAL:
            break
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        try:
            text = safeio.read_text(path, MAX_BYTES, root, errors="replace")
        except safeio.InputRefused:
            continue
        total += len(text)
        if "LINUX_VERSION_CODE" not in text:
            continue
        for line in text.splitlines():
            if "LINUX_VERSION_CODE" in line and re.match(r"\s*#\s*(el)?if", line):
                for m in _TEST_RE.finditer(line):
                    v = tuple(int(x) for x in m.groups())
                    if lowest is None or v < lowest:
                        lowest = v
    return lowest


def needed(before: str, after: str, span: Range) -> list:
    """The names of api.STAND_INS the fix brings into a file (more uses after than before)
    that some kernel the module builds for lacks, and the file does not define itself."""
    out = []
    for name, (since, _) in api.STAND_INS.items():
        word = re.compile(r"\b" + re.escape(name) + r"\b")
        if len(word.findall(after)) <= len(word.findall(before)):
            continue
        if re.search(r"^[ \t]*#[ \t]*define[ \t]+" + re.escape(name) + r"\b", before, re.M):
            continue  # the module's own compat definition
        if span.lacks(since):
            out.append(name)
    return out


def guarded(text: str, names: list) -> str:
    """text with the version guard for names after its leading #include lines."""
    lines = text.splitlines(True)
    at = _insertion_line(lines)
    block = []
    for header in ("linux/version.h", "linux/workqueue.h"):
        if not re.search(r"^[ \t]*#[ \t]*include[ \t]*<" + re.escape(header) + ">", text, re.M):
            block.append(f"#include <{header}>\n")
    by_version: dict = {}
    for name in names:
        since, stand_in = api.STAND_INS[name]
        by_version.setdefault(since, []).append((name, stand_in))
    for since, pairs in sorted(by_version.items()):
        shown = kversion.show(since + (0,))
        listed = " and ".join(n for n, _ in pairs) if len(pairs) < 3 else \
            ", ".join(n for n, _ in pairs[:-1]) + " and " + pairs[-1][0]
        if block:
            block.append("\n")
        block.append(f"/* {listed} came with {shown}: before, these mean the same. */\n")
        block.append(f"#if LINUX_VERSION_CODE < KERNEL_VERSION({since[0]}, {since[1]}, 0)\n")
        block.extend(f"#define {name} {stand_in}\n" for name, stand_in in pairs)
        block.append("#endif\n")
    before, rest = lines[:at], lines[at:]
    if before and before[-1].strip() and not block[0].startswith("#include"):
        block.insert(0, "\n")
    if rest and rest[0].strip():
        block.append("\n")
    return "".join(before + block + rest)


def _insertion_line(lines: list) -> int:
    """The index of the line after the file's leading #include lines (at the top level, or
    the #endif that closes a block holding one); after its leading comment when it has none."""
    depth, base, comment = 0, 0, False
    after_include = after_comment = None
    pending = False  # an #include inside a block not yet closed
    directives = 0
    continued = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if continued:  # the rest of a directive continued with a backslash
            continued = stripped.endswith("\\")
            continue
        if comment:
            if "*/" in stripped:
                comment = False
                if after_include is None and depth == base:
                    after_comment = i + 1
            continue
        if not stripped or stripped.startswith("//"):
            continue
        if stripped.startswith("/*"):
            if "*/" not in stripped:
                comment = True
            elif after_include is None and depth == base:
                after_comment = i + 1
            continue
        m = re.match(r"#\s*(\w+)\s*(\w*)", stripped)
        if not m:
            break  # the first line of code
        kind = m.group(1)
        directives += 1
        continued = stripped.endswith("\\")
        if kind in ("if", "ifdef", "ifndef"):
            depth += 1
            if directives == 1 and kind == "ifndef" and i + 1 < len(lines) and re.match(
                    r"\s*#\s*define\s+" + re.escape(m.group(2)) + r"\b", lines[i + 1]):
                base = 1  # an include guard: its inside is the file's top level
        elif kind == "endif":
            depth -= 1
            if depth == base and pending:
                after_include, pending = i + 1, False
        elif kind == "include":
            if depth == base:
                after_include = i + 1
            else:
                pending = True
    if after_include is not None:
        return after_include
    return after_comment or 0
