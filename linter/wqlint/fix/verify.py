"""`wqlint bulk --verify`: apply the series to a scratch copy of the tree, compile every
touched object in a configured build, and scan the copy again.

The copy is made of hard links (`cp -al`), so it costs little; `patch` writes changed files
anew, which leaves the originals untouched. Each touched file's object is enabled by the
CONFIG_ options its Kbuild files build it under (`obj-$(CONFIG_X) += file.o`, a composite
object's parts, and each directory above it: `obj-$(CONFIG_Y) += dir/`), set to y with the
tree's scripts/config; an object the configuration still cannot build (an option that
depends on others that are off, another architecture) is reported as not built, and so is
one that fails to compile from the original file as well as from the patched one.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from wqlint import errors, safeio
from wqlint.mail import MAX_INPUT_BYTES

TIMEOUT = 3 * 3600
MAX_KBUILD_BYTES = 4 * 1024 * 1024  # the largest Kconfig or Makefile of a kernel is ~250 KiB


class VerifyError(errors.WqlintError):
    """str() is one line: what failed, where."""


@dataclass
class Verified:
    applied: int = 0
    built: list = field(default_factory=list)  # objects compiled
    failed: list = field(default_factory=list)  # (object, first error line)
    not_built: list = field(default_factory=list)  # (object, why)
    remaining: list = field(default_factory=list)  # findings of the fixed rules left in touched files

    def lines(self) -> list:
        out = [f"verify: {self.applied} patch(es) applied to a scratch copy",
               f"verify: {len(self.built)} object(s) compiled, {len(self.failed)} failed, "
               f"{len(self.not_built)} not built by this configuration",
               f"verify: {len(self.remaining)} finding(s) of the fixed rules left in the touched files"]
        out += [f"verify: compile failed: {o}: {why}" for o, why in self.failed]
        out += [f"verify: not built: {o}: {why}" for o, why in self.not_built]
        out += [f"verify: left: {f.path}:{f.line}:{f.col} [{f.rule_id}]" for f in self.remaining]
        return out

    def ok(self) -> bool:
        return not self.failed and not self.remaining


def _read(path: Path, limit: int) -> str:
    """A file the verification made (a patch, a .config), else VerifyError."""
    try:
        return safeio.read_text(path, limit, errors="replace")
    except safeio.InputRefused as exc:
        raise VerifyError(f"{path}: cannot read: {exc}") from None


def _run(cmd, cwd=None, what="", timeout=TIMEOUT):
    """cmd's exit status and output as text (see wqlint.tools)."""
    from wqlint import tools

    try:
        return tools.run(cmd, cwd=cwd, timeout=timeout, what=what or None, text=True)
    except tools.ToolError as exc:
        raise VerifyError(str(exc)) from None


def scratch_copy(root: Path, dest: Path, base: Optional[Path] = None) -> Path:
    """A hard-linked copy of root at dest, replacing an earlier one. dest lies in base (the
    output directory; default its parent): no directory from base to dest may be a symbolic
    link (what is at dest is removed, and the copy made there), nor may dest overlap root."""
    base = Path(base) if base is not None else dest.parent
    rel = os.path.relpath(os.path.abspath(dest), os.path.abspath(base)).replace(os.sep, "/")
    if safeio.overlap(dest, root) or dest.is_symlink():
        raise VerifyError(f"{dest}: overlaps the tree {root} or is a symbolic link; not removed")
    try:
        base.mkdir(parents=True, exist_ok=True)
        safeio.remove_tree(base, rel)
        if "/" in rel:
            safeio.make_dirs(base, rel.rsplit("/", 1)[0])
    except safeio.OutputRefused as exc:
        raise VerifyError(f"{dest}: {exc}; nothing removed") from None
    except OSError as exc:
        raise VerifyError(f"{dest}: cannot replace: {exc.strerror or exc}") from None
    got = _run(["cp", "-al", str(root), str(dest)], what="cp -al")
    if got.returncode != 0:  # another file system: a real copy
        safeio.remove_tree(base, rel)
        _copy_tree(root, dest)
    return dest


def _copy_tree(root: Path, dest: Path) -> None:
    """shutil.copytree(root, dest, symlinks=True) without its recursion (a tree may be
    thousands of directories deep): links copied as links, files with copy2, directories'
    modes and times set once their contents are in."""
    made = []
    for top, dirs, files in safeio.walk(root):
        here = Path(dest, os.path.relpath(top, root))
        here.mkdir(exist_ok=False)
        made.append((top, here))
        for name in dirs + files:
            src = os.path.join(top, name)
            if os.path.islink(src):
                os.symlink(os.readlink(src), here / name)
            elif name in files:
                shutil.copy2(src, here / name)
    for top, here in reversed(made):
        shutil.copystat(top, here)


def apply_series(tree: Path, patches: list) -> int:
    for patch in patches:
        got = _run(["patch", "-p1", "-s", "-N", "--no-backup-if-mismatch", "-i", str(patch)], cwd=tree,
                   what="patch")
        if got.returncode != 0:
            first = (got.stdout + got.stderr).strip().splitlines()
            raise VerifyError(f"{patch.name}: does not apply: {first[0] if first else 'patch failed'}")
    return len(patches)


def touched_files(patches: list) -> list:
    """The files a series of patches changes (its +++ b/ lines), sorted."""
    files = set()
    for patch in patches:
        for rel in re.findall(r"^\+\+\+ b/(\S+)$", _read(Path(patch), MAX_INPUT_BYTES), re.M):
            if rel.startswith("/") or ".." in rel.split("/"):
                raise VerifyError(f"{Path(patch).name}: names a file outside the tree: {rel}")
            files.add(rel)
    return sorted(files)


@functools.lru_cache(maxsize=4096)
def _kbuild_text(directory: Path) -> str:
    """The Kbuild (or Makefile) of directory with the files it includes, continuation lines
    joined and $(VAR) references to variables it sets expanded (read once per directory:
    every touched file below it asks)."""
    for name in ("Kbuild", "Makefile"):
        if (directory / name).is_file():
            break
    else:
        return ""
    try:
        text = safeio.read_text(directory / name, MAX_KBUILD_BYTES, errors="replace")
    except safeio.InputRefused:
        return ""
    for inc in re.findall(r"^include \$\(src\)/(\S+)", text, re.M):
        try:
            text += "\n" + safeio.read_text(directory / inc, MAX_KBUILD_BYTES, errors="replace")
        except safeio.InputRefused:
            pass
    text = text.replace("\\\n", " ")
    values: dict = {}
    for m in re.finditer(r"^[^\S\n]*([A-Za-z_][\w-]*)\s*(?:[+:?]?=)\s*(.*)$", text, re.M):
        values.setdefault(m.group(1), []).append(m.group(2))
    for _ in range(3):  # variables made of variables
        text = re.sub(r"\$\(([A-Za-z_][\w-]*)\)", lambda m: " ".join(values.get(m.group(1), [m.group(0)])), text)
    return text


_RULE = re.compile(r"^[^\S\n]*([\w-]+?)-(\$\(CONFIG_(\w+)\)|y|m|objs)\s*[+:]?=\s*(.*)$", re.M)


def _options_of(directory: Path, target: str, depth: int = 0):
    """The CONFIG_ options the Kbuild file of directory builds target (a path relative to it:
    file.o or sub/) under, [] when always, or None when no line builds it."""
    text = _kbuild_text(directory)
    composites = []
    for m in _RULE.finditer(text):
        if target not in m.group(4).split():
            continue
        own = [m.group(3)] if m.group(3) else []
        if m.group(1) in ("obj", "lib", "core", "drivers", "libs"):
            return own
        composites.append((m.group(1), own))
    for name, own in composites:  # part of a composite object: that object's options too
        if depth < 3:
            outer = _options_of(directory, name + ".o", depth + 1)
            if outer is not None:
                return own + outer
    return None


def config_options(tree: Path, rel: str):
    """The CONFIG_ options an x86 build needs to compile rel's object: the ones of the Kbuild
    line that builds it and of each directory above, as Kbuild descends into them. None
    when no line builds it here (another architecture, tools, a file included elsewhere)."""
    parts = Path(rel).with_suffix(".o").parts
    if parts[0] in ("tools", "scripts", "samples", "Documentation", "usr") or \
            (parts[0] == "arch" and parts[1:2] != ("x86",)):
        return None
    # the object: in its own directory's Kbuild file, or an ancestor's (sub/file.o)
    for up in range(1, min(4, len(parts))):
        directory = tree.joinpath(*parts[:-up])
        options = _options_of(directory, "/".join(parts[-up:]))
        if options is not None:
            break
    else:
        return None
    # the directories above it, each built from its parent's Kbuild file (obj-y += dir/)
    where = list(parts[:-up])
    while where and where != ["arch", "x86"]:
        for k in range(1, min(4, len(where) + 1)):  # obj-y += dir/ or dir/sub/
            above = _options_of(tree.joinpath(*where[:-k]), "/".join(where[-k:]) + "/")
            if above is not None:
                break
        else:
            return None
        options = above + options
        del where[-k:]
    return sorted(set(options))


class Kconfig:
    """What the tree's Kconfig files say of each option: the options its `depends on` lines
    name (not negated), whether it has a prompt, and which options select it."""

    def __init__(self, tree: Path):
        self.depends: dict = {}
        self.prompt: set = set()
        self.selected_by: dict = {}
        found = (Path(top, n) for top, dirs, files in safeio.walk(tree) for n in dirs + files)
        for path in (p for p in found if p.name.startswith("Kconfig")):  # (rglob recurses)
            rel = path.relative_to(tree).parts
            if rel[0] == "arch" and rel[1:2] not in (("x86",), ("Kconfig",)):
                continue
            try:
                text = safeio.read_text(path, MAX_KBUILD_BYTES, errors="replace")
            except safeio.InputRefused:
                continue
            for m in re.finditer(r"^(?:menu)?config\s+(\w+)[ \t]*\n((?:(?:[ \t].*)?\n)*)", text, re.M):
                name, body = m.group(1), m.group(2)
                for dep in re.findall(r"^[^\S\n]+depends on\s+(.*)$", body, re.M):
                    dep = re.sub(r"!\s*(?:\(\s*)?\w+", " ", dep)
                    self.depends.setdefault(name, set()).update(re.findall(r"\b([A-Z][A-Z0-9_]+)\b", dep))
                if re.search(r'^[^\S\n]+(?:bool|tristate|prompt)\s+"', body, re.M):
                    self.prompt.add(name)
                for sel in re.findall(r"^[^\S\n]+select\s+(\w+)", body, re.M):
                    self.selected_by.setdefault(sel, []).append(name)

    def enablers(self, option: str) -> set:
        """Options to enable so that option can be: its dependencies, or for an option without
        a prompt, one that selects it."""
        if option in self.prompt:
            return set(self.depends.get(option, ()))
        for other in sorted(self.selected_by.get(option, ())):
            if other in self.prompt:
                return {other}
        return set()


def build(tree: Path, build_dir: Path, touched: list, jobs: int, result: Verified,
          original: Optional[Path] = None) -> None:
    """Compile the objects of touched files in build_dir; an object that fails is compiled
    again from original's copy of its file: if that fails too, the series is not the cause
    and the object counts as not built here."""
    if original is not None and safeio.overlap(build_dir, original):
        raise VerifyError(f"{build_dir}: the build directory overlaps the tree {original}")
    build_dir.mkdir(parents=True, exist_ok=True)
    make = ["make", "-C", str(tree), f"O={build_dir}", "-s"]
    if not (build_dir / ".config").is_file():
        got = _run(make + ["defconfig"], what="make defconfig")
        if got.returncode != 0:
            raise VerifyError(f"make defconfig failed: {got.stderr.strip().splitlines()[-1:]}")
    needs = {rel: config_options(tree, rel) for rel in touched if rel.endswith(".c")}
    # COMPILE_TEST lets drivers of other platforms build on x86, as build bots do; a
    # warning must not stop the build that checks the series (WERROR follows COMPILE_TEST).
    wanted = ["COMPILE_TEST"] + sorted({o for opts in needs.values() if opts for o in opts})
    kconfig = None
    for _ in range(3):  # then what the options still off depend on, or are selected by
        cmd = [str(tree / "scripts" / "config"), "--file", str(build_dir / ".config"), "--disable", "WERROR"]
        for o in wanted:
            cmd += ["--enable", o]
        _run(cmd, what="scripts/config")
        got = _run(make + ["olddefconfig"], what="make olddefconfig")
        if got.returncode != 0:
            raise VerifyError("make olddefconfig failed")
        config = _read(build_dir / ".config", MAX_KBUILD_BYTES)
        off = [o for o in wanted if f"CONFIG_{o}=y" not in config]
        if not off:
            break
        kconfig = kconfig or Kconfig(tree)
        more = sorted({d for o in off for d in kconfig.enablers(o)} - set(wanted))
        if not more:
            break
        wanted += more
    objects = []
    for rel, opts in needs.items():
        obj = rel[:-2] + ".o"
        off = [o for o in opts or [] if f"CONFIG_{o}=y" not in config]
        if opts is None:
            result.not_built.append((obj, "not built for x86 from its Kbuild files"))
        elif off:
            result.not_built.append((obj, f"CONFIG_{off[0]} cannot be enabled in this configuration"))
        else:
            objects.append(obj)
    failed = _compile(make, build_dir, objects, jobs)
    for obj in objects:
        if obj not in failed:
            result.built.append(obj)
    if failed and original is not None:
        rels = [obj[:-2] + ".c" for obj in failed]
        try:
            patched = {rel: safeio.read_bytes(tree / rel, safeio.MAX_SOURCE_BYTES, tree) for rel in rels}
        except safeio.InputRefused as exc:
            raise VerifyError(f"cannot read a patched file again: {exc}") from None
        try:
            for rel in rels:
                (tree / rel).unlink()
                shutil.copy2(original / rel, tree / rel)
            before = _compile(make, build_dir, list(failed), jobs)
        finally:
            for rel, data in patched.items():
                (tree / rel).unlink()
                (tree / rel).write_bytes(data)
        for obj in list(failed):
            if obj in before:
                result.not_built.append((obj, "does not compile here without the series either"))
                del failed[obj]
    result.failed.extend(failed.items())


def _compile(make: list, build_dir: Path, objects: list, jobs: int) -> dict:
    """{object: first error line} of those that did not compile."""
    if not objects:
        return {}
    for obj in objects:  # a stale object from an earlier run must not count as built
        try:
            os.unlink(build_dir / obj)
        except OSError:
            pass
    got = _run(make + [f"-j{jobs}", "-k", *objects], what="make")
    errors = [ln for ln in got.stderr.splitlines() if "error:" in ln]
    return {obj: next((ln for ln in errors if obj[:-2] + ".c:" in ln),
                      errors[0] if errors else "no object produced").strip()
            for obj in objects if not (build_dir / obj).is_file()}


def judged_from(fixes: list, touched: list) -> list:
    """The files to scan again: those the series touches, and those a fixed finding is judged
    from besides (its own, where the fix edits another file's call, and those its hints
    name (judged_with)), each a relative path inside the tree."""
    files = set(touched)
    for fix in fixes:
        named = [fix.finding.path, *fix.finding.hints.judged_with]
        files.update(rel for rel in named if rel and not rel.startswith("/") and ".." not in rel.split("/"))
    return sorted(files)


def left_over(findings: list, fixes: list, not_fixed: list) -> list:
    """Findings of a fixed rule in a fixed file beyond those the plan left unfixed there."""
    from collections import Counter

    fixed = {(f.finding.rule_id, f.finding.path) for f in fixes}
    allowed = Counter((n.finding.rule_id, n.finding.path) for n in not_fixed)
    out = []
    for f in findings:
        key = (f.rule_id, f.path)
        if key not in fixed:
            continue
        if allowed[key] > 0:
            allowed[key] -= 1
        else:
            out.append(f)
    return out
