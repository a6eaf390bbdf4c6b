"""The tree's MAINTAINERS: which subsystem a file belongs to, and whom a patch is sent to.

The subsystem of a file is the MAINTAINERS section get_maintainer.pl ranks first for it: the
section whose matching F: pattern is deepest (N: regexes count as depth 0, the catch-all
``*`` as -1), X: patterns excluding a section as they do there. The matching below is
get_maintainer.pl's own (file_match_pattern and the depth of get_maintainers), read from
MAINTAINERS once, so that a few hundred files are grouped in milliseconds. Where
get_maintainer.pl leaves the order of equally deep sections to Perl's hash order, the
section that is maintained (S: Maintained/Supported with an M: entry) wins, then the one
first in the file. A section with S: Obsolete is remembered: checkpatch.pl warns about any
change to its files.

The Cc list of a patch comes from the tree's own scripts/get_maintainer.pl, run with perl
in the tree on the patch's files: maintainers and reviewers first, then the lists, in
get_maintainer.pl's order, without duplicates.
"""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from wqlint import errors

MAINTAINERS = "MAINTAINERS"
GET_MAINTAINER = "scripts/get_maintainer.pl"
# What get_maintainer.pl and checkpatch.pl call the top of a kernel tree (top_of_kernel_tree).
KERNEL_TOP = ("COPYING", "CREDITS", "Kbuild", "MAINTAINERS", "Makefile", "README",
              "Documentation", "arch", "include", "drivers", "fs", "init", "ipc", "kernel",
              "lib", "scripts")
GET_MAINTAINER_ARGS = (
    "--no-git", "--no-git-fallback", "--no-git-blame", "--no-git-chief-penguins",
    "--m", "--r", "--l", "--no-s", "--moderated", "--no-fixes", "--no-keywords",
    "--no-keywords-in-file", "--roles", "--no-rolestats", "--multiline",
    "--remove-duplicates", "--mailmap", "--no-scm", "--no-status", "--no-subsystem",
    "--no-web", "--no-bug", "--pattern-depth=0",
)
TIMEOUT = 120  # seconds for one get_maintainer.pl run
WHY_MAINTAINERS = "the series is split by its sections"
WHY_GET_MAINTAINER = "it gives the Cc list of each patch"


class SeriesError(errors.WqlintError):
    """A patch series cannot be written; str() is one line."""


class TreeFileMissing(SeriesError):
    """The tree lacks a file the series needs (MAINTAINERS, scripts/get_maintainer.pl)."""

    def __init__(self, root: Path, rel: str, why: str):
        self.path = Path(root) / rel
        super().__init__(f"{self.path}: not found: {why}")


@dataclass
class Section:
    name: str
    index: int  # order in MAINTAINERS
    supported: bool = False  # S: Maintained or Supported
    obsolete: bool = False  # S: Obsolete: checkpatch.pl asks for no unnecessary changes
    has_maintainer: bool = False  # an M: entry
    excludes: list = field(default_factory=list)  # of _Pattern (X:)

    @property
    def maintained(self) -> bool:
        return self.supported and self.has_maintainer


class _Pattern:
    """One F: or X: value; turned into get_maintainer.pl's regex when first needed."""

    __slots__ = ("section", "pos", "value", "literal", "_prepared", "_regex", "is_dir", "slashes", "depth")

    def __init__(self, section: Section, pos: int, value: str):
        self.section, self.pos, self.value = section, pos, value
        # Every match starts with the part before the first wildcard or regex character.
        self.literal = re.split(r"[*?\[\]()+{}|^$\\]", value, maxsplit=1)[0]
        self._prepared = False  # _regex not compiled yet
        self._regex: Optional[re.Pattern[str]] = None  # None once prepared: not a valid regex

    def _prepare(self, root: Path):
        text = value = self.value.replace(".", "\\.").replace("*", ".*").replace("?", ".")
        if not value.endswith("/") and (root / value).is_dir():
            text = value + "/"
        self.is_dir = text.endswith("/")
        self.slashes = text.count("/")
        self.depth = -1 if text.startswith(".*") else self.slashes + (0 if self.is_dir else 1)
        self._prepared = True
        try:
            self._regex = re.compile(text)
        except re.error:
            self._regex = None

    def matches(self, file: str, root: Path) -> bool:
        """file_match_pattern(): a directory pattern matches below it, a file pattern only
        at its own depth."""
        if not file.startswith(self.literal):
            return False
        if not self._prepared:
            self._prepare(root)
        if self._regex is None or not self._regex.match(file):
            return False
        return self.is_dir or file.count("/") == self.slashes


def _bucket(literal: str) -> str:
    """The directories every file a pattern can match lies in: up to the last '/'."""
    return literal[:literal.rfind("/") + 1]


class Maintainers:
    """MAINTAINERS of one tree, parsed the way get_maintainer.pl reads it."""

    def __init__(self, root: Path, text: str):
        self.root = Path(root)
        self.sections: list = []
        self._files: dict = {}  # bucket -> F: patterns whose literal part ends in that directory
        self._names: list = []  # (section, position, regex) of N: entries
        current: Optional[Section] = None
        pending_name = ""
        for pos, raw in enumerate(text.splitlines()):
            m = re.match(r"^([A-Z]):\s*(.*)", raw)
            if not m:
                if raw.strip() and not raw.lstrip().startswith("#"):
                    pending_name = raw.rstrip()
                    current = None
                continue
            kind, value = m.group(1), m.group(2).rstrip()
            if current is None:
                current = Section(pending_name, len(self.sections))
                self.sections.append(current)
            if kind == "F":
                pattern = _Pattern(current, pos, value)
                self._files.setdefault(_bucket(pattern.literal), []).append(pattern)
            elif kind == "X":
                current.excludes.append(_Pattern(current, pos, value))
            elif kind == "N":
                try:
                    self._names.append((current, pos, re.compile(value, re.VERBOSE)))
                except re.error:
                    pass
            elif kind == "S":
                current.supported |= bool(re.search(r"maintain|support", value, re.I))
                current.obsolete |= bool(re.search(r"obsolete", value, re.I))
            elif kind == "M":
                current.has_maintainer = True

    @classmethod
    def load(cls, root: Path) -> "Maintainers":
        path = Path(root) / MAINTAINERS
        from wqlint import safeio

        try:
            text = safeio.read_text(path, 64 * 1024 * 1024, errors="replace")
        except safeio.InputRefused as exc:
            if str(exc) == "no such file":
                raise TreeFileMissing(root, MAINTAINERS, WHY_MAINTAINERS) from None
            raise SeriesError(f"{path}: cannot read: {exc}") from None
        return cls(root, text)

    def sections_of(self, file: str) -> list:
        """(depth, section) of every section that claims the file, deepest first.

        As in get_maintainer.pl, the depth of a section is that of its last entry (in
        MAINTAINERS order) that matches: an F: pattern's directory depth, 0 for N:.
        """
        last: dict = {}  # section index -> (position, depth)
        dirs = [""] + [file[:i + 1] for i, c in enumerate(file) if c == "/"]
        for bucket in dirs:
            for pattern in self._files.get(bucket, ()):
                if pattern.matches(file, self.root):
                    seen = last.get(pattern.section.index)
                    if seen is None or seen[0] < pattern.pos:
                        last[pattern.section.index] = (pattern.pos, pattern.depth)
        for section, pos, regex in self._names:
            if regex.search(file):
                seen = last.get(section.index)
                if seen is None or seen[0] < pos:
                    last[section.index] = (pos, 0)
        found = []
        for index, (_, depth) in last.items():
            section = self.sections[index]
            if not any(x.matches(file, self.root) for x in section.excludes):
                found.append((depth, section))
        found.sort(key=lambda item: (-item[0], not item[1].maintained, item[1].index))
        return found

    def subsystem(self, file: str) -> Optional[Section]:
        """The most specific section for a file, or None when no section claims it."""
        found = self.sections_of(file)
        return found[0][1] if found else None


def looks_like_kernel_top(root: Path) -> bool:
    return all((Path(root) / name).exists() for name in KERNEL_TOP)


def require_tools(root: Path) -> None:
    """Raise TreeFileMissing unless the tree has MAINTAINERS and scripts/get_maintainer.pl."""
    root = Path(root)
    if not (root / MAINTAINERS).is_file():
        raise TreeFileMissing(root, MAINTAINERS, WHY_MAINTAINERS)
    if not (root / GET_MAINTAINER).is_file():
        raise TreeFileMissing(root, GET_MAINTAINER, WHY_GET_MAINTAINER)
    from wqlint import tools

    if tools.which("perl") is None:
        raise SeriesError("perl: not found: scripts/get_maintainer.pl needs it")


_ROLE = re.compile(r"^(?P<who>.+?) \((?P<role>[a-z][a-z ]*)(?::.*)?\)$")


def _cc_order(role: str) -> int:
    if role.endswith("list"):
        return 2
    if role == "reviewer":
        return 1
    return 0


def parse_get_maintainer(output: str) -> list:
    """The addresses get_maintainer.pl printed with --roles: people, then lists. A line of
    another form (a .get_maintainer.conf in the tree may ask for other output) is ValueError
    naming it: a Cc list must not lose people silently."""
    entries: list[tuple] = []  # (order of the role, position, who)
    seen: set[str] = set()
    for line in output.splitlines():
        line = line.strip()
        if not line:
            continue
        m = _ROLE.match(line)
        if m is None and _ROLE.match("- " + line):
            continue  # '(open list:X)': an L: entry with a name first gives no address
        if m is None:
            raise ValueError(f"a line not in the form asked for (NAME <ADDRESS> (ROLE)): {line[:80]!r}")
        who, role = m.group("who"), m.group("role")
        address = re.search(r"<([^<>]+)>\s*$", who)
        key = (address.group(1) if address else who).strip().lower()
        if "@" not in key or key in seen:  # an L: entry with a name first gives no address
            continue
        seen.add(key)
        entries.append((_cc_order(role), len(entries), who))
    return [who for _, _, who in sorted(entries)]


# A key of get_maintainer.pl's GetOptions(): 'name!', 'k|keywords!', 'pattern-depth=i'.
_OPTION_KEY = re.compile(r"""^[^\S\n]*'([\w|-]+)(?:[^\w|'-][^']*)?'\s*=>""", re.M)


def supported_args(script: str) -> tuple:
    """GET_MAINTAINER_ARGS less those the tree's get_maintainer.pl (its text) has no option
    for: an older script (6.1 has neither --keywords-in-file nor --bug) refuses an unknown
    one, and lacks what it would turn off. All of them when its options cannot be read."""
    names = {n for m in _OPTION_KEY.finditer(script) for n in m.group(1).split("|")}
    if not names:
        return GET_MAINTAINER_ARGS

    def name(arg: str) -> str:
        bare = arg[2:].split("=", 1)[0]
        return bare[3:] if bare.startswith("no-") and bare[3:] in names else bare
    return tuple(a for a in GET_MAINTAINER_ARGS if name(a) in names)


def _args_for(root: Path) -> tuple:
    from wqlint import safeio

    try:
        text = safeio.read_text(root / GET_MAINTAINER, safeio.MAX_SOURCE_BYTES, root, errors="replace")
    except safeio.InputRefused:
        return GET_MAINTAINER_ARGS
    return supported_args(text)


def cc_list(root: Path, files: list) -> list:
    """Run the tree's get_maintainer.pl on files (relative to root) and return the Cc list."""
    root = Path(root)
    cmd = ["perl", GET_MAINTAINER, *_args_for(root)]
    if not looks_like_kernel_top(root):
        cmd.append("--no-tree")
    cmd += ["-f", *files]
    from wqlint import tools

    try:
        proc = tools.run(cmd, cwd=root, env=dict(PERL_HASH_SEED="0", PERL_PERTURB_KEYS="0"),
                         timeout=TIMEOUT, what=str(root / GET_MAINTAINER))
    except tools.ToolError as exc:
        raise SeriesError(str(exc)) from None
    out = proc.stdout.decode("utf-8", errors="replace")
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", errors="replace").strip().splitlines()
        detail = err[-1] if err else f"exit status {proc.returncode}"
        raise SeriesError(f"{root / GET_MAINTAINER}: failed on {files[0]}: {detail}")
    try:
        return parse_get_maintainer(out)
    except ValueError as exc:
        raise SeriesError(f"{root / GET_MAINTAINER}: printed {exc}") from None


def cc_lists(root: Path, groups: list, jobs: Optional[int] = None) -> list:
    """cc_list() of each group of files, several get_maintainer.pl runs at a time."""
    if not groups:
        return []
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(groups)))
    if jobs == 1:
        return [cc_list(root, files) for files in groups]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda files: cc_list(root, files), groups))
