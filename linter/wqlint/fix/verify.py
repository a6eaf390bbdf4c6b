"""`wqlint bulk --verify`: apply the series to a scratch copy of the tree, compile every
touched object in a configured build, and scan the copy again.

The copy is made of hard links (`cp -al`), so it costs little; `patch` writes changed files
anew, which leaves the originals untouched. Each touched file's object is enabled by the
CONFIG_ option its directory's Makefile builds it under (`obj-$(CONFIG_X) += file.o`), set
to y with the tree's scripts/config; an object the configuration still cannot build (its
option depends on others that are off, or an architecture) is reported as not built.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

TIMEOUT = 3 * 3600


class VerifyError(Exception):
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


def _run(cmd, cwd=None, what="", timeout=TIMEOUT):
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise VerifyError(f"{what or cmd[0]}: {exc}") from None


def scratch_copy(root: Path, dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    got = _run(["cp", "-al", str(root), str(dest)], what="cp -al")
    if got.returncode != 0:  # another file system: a real copy
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(root, dest, symlinks=True)
    return dest


def apply_series(tree: Path, patches: list) -> int:
    for patch in patches:
        got = _run(["patch", "-p1", "-s", "-N", "--no-backup-if-mismatch", "-i", str(patch)], cwd=tree,
                   what="patch")
        if got.returncode != 0:
            first = (got.stdout + got.stderr).strip().splitlines()
            raise VerifyError(f"{patch.name}: does not apply: {first[0] if first else 'patch failed'}")
    return len(patches)


def config_option(tree: Path, rel: str):
    """The CONFIG_ option the Makefile beside rel builds its object under, or None/'y'."""
    obj = Path(rel).with_suffix(".o").name
    make = tree / Path(rel).parent / "Makefile"
    if not make.is_file():
        make = tree / Path(rel).parent / "Kbuild"
    try:
        text = make.read_text(errors="replace").replace("\\\n", " ")
    except OSError:
        return None
    for m in re.finditer(r"^\s*([\w-]+)-(\$\(CONFIG_(\w+)\)|y)\s*[+:]?=\s*(.*)$", text, re.M):
        if re.search(r"(^|\s)" + re.escape(obj) + r"(\s|$)", m.group(4)):
            if m.group(3):
                return m.group(3)
            # part of a composite object (foo-y += file.o): that object's option
            if m.group(1) not in ("obj", "lib"):
                return config_option(tree, str(Path(rel).parent / (m.group(1) + ".c"))) or "y"
            return "y"
    return None


def build(tree: Path, build_dir: Path, touched: list, jobs: int, result: Verified) -> None:
    build_dir.mkdir(parents=True, exist_ok=True)
    make = ["make", "-C", str(tree), f"O={build_dir}", "-s"]
    if not (build_dir / ".config").is_file():
        got = _run(make + ["defconfig"], what="make defconfig")
        if got.returncode != 0:
            raise VerifyError(f"make defconfig failed: {got.stderr.strip().splitlines()[-1:]}")
    options = sorted({o for rel in touched for o in [config_option(tree, rel)] if o and o != "y"})
    if options:
        cmd = [str(tree / "scripts" / "config"), "--file", str(build_dir / ".config")]
        for o in options:
            cmd += ["--enable", o]
        _run(cmd, what="scripts/config")
    got = _run(make + ["olddefconfig"], what="make olddefconfig")
    if got.returncode != 0:
        raise VerifyError("make olddefconfig failed")
    config = (build_dir / ".config").read_text(errors="replace")
    objects = []
    for rel in touched:
        if not rel.endswith(".c"):
            continue
        obj = rel[:-2] + ".o"
        opt = config_option(tree, rel)
        if opt is None:
            result.not_built.append((obj, "no Makefile line builds it"))
        elif opt != "y" and f"CONFIG_{opt}=y" not in config:
            result.not_built.append((obj, f"CONFIG_{opt} cannot be enabled in this configuration"))
        else:
            objects.append(obj)
    if not objects:
        return
    for obj in objects:  # a stale object from an earlier run must not count as built
        try:
            os.unlink(build_dir / obj)
        except OSError:
            pass
    got = _run(make + [f"-j{jobs}", "-k", *objects], what="make")
    errors = [ln for ln in got.stderr.splitlines() if "error:" in ln]
    for obj in objects:
        if (build_dir / obj).is_file():
            result.built.append(obj)
        else:
            why = next((ln for ln in errors if obj[:-2] + ".c:" in ln),
                       errors[0] if errors else "no object produced")
            result.failed.append((obj, why.strip()))


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
