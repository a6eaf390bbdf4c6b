"""What a scan covers: the one tree its paths are in (find_root), the paths relative to it
(Targets), the sources a module's directory takes from elsewhere in its package through
symbolic links (followed_links), the files named on the command line (read whole, so that
bad input is always reported), and, for a review, the files whose changes are of interest
(Focus)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from wqlint import errors, safeio
from wqlint.finding import InputError
from wqlint.scan.kerneltop import kernel_top
from wqlint.scan.nearness import related
from wqlint.scan.source import SourceError, is_c_source, read_source, relpath

# What marks a module's package. Not .git: a home directory kept in git would make the
# package, and so the tree searched, the whole home.
PACKAGE_MARKERS = ("dkms.conf",)
MAX_LINKS = 1000  # symbolic links looked at under the given directories


class UsageError(errors.WqlintError, status=errors.USAGE):
    pass


def kernel_tree_of(path: Path) -> Optional[Path]:
    """The kernel tree holding path (the nearest directory with a Makefile and include/linux),
    or None."""
    top = kernel_top(os.fspath(path))
    return Path(top) if top is not None else None


def find_root(paths: list) -> Path:
    """The one tree the paths are in: the kernel tree holding them, else (no kernel tree
    around them: a module, loose files) the directory given, or holding the file given, or
    the nearest directory holding all of them. UsageError when the paths are in different
    kernel trees, when some are in a kernel tree and others outside it, or when the only
    directory they share is '/'."""
    absolute = [Path(os.path.abspath(p)) for p in paths]
    trees = [kernel_tree_of(p) for p in absolute]
    inside = [(p, t) for p, t in zip(paths, trees) if t is not None]
    if inside:
        first_path, first_tree = inside[0]
        for p, t in zip(paths, trees):
            if t is None:
                raise UsageError(f"{p} is outside the kernel tree {first_tree} of {first_path}: "
                                 "scan it separately")
            if t != first_tree:
                raise UsageError(f"{first_path} and {p} are in different kernel trees "
                                 f"({first_tree}, {t}): scan each tree separately")
        return first_tree
    if len(absolute) == 1:
        root = absolute[0] if absolute[0].is_dir() else absolute[0].parent
    else:
        common = Path(*_common_parts(absolute))
        root = common if common.is_dir() else common.parent
    if root == Path(root.anchor):
        if len(paths) == 1:
            raise UsageError(f"{paths[0]}: the root directory is not a tree: name a directory below it")
        raise UsageError(f"{paths[0]} and {paths[1]} share no directory but {root.anchor}: "
                         "scan each tree separately")
    return root


def _common_parts(paths):
    parts = list(paths[0].parts)
    for p in paths[1:]:
        q = p.parts
        i = 0
        while i < min(len(parts), len(q)) and parts[i] == q[i]:
            i += 1
        parts = parts[:i]
    return parts


def package_of(path: Path) -> Path:
    """The package a module's directory belongs to: the nearest directory at or above it
    holding dkms.conf (a DKMS source package); else the directory itself."""
    for cand in [path, *path.parents]:
        if any((cand / m).exists() for m in PACKAGE_MARKERS):
            return cand
    return path


def followed_links(paths: list) -> tuple:
    """([real paths to scan as well], ['link -> target' not followed]) for the directories
    among paths outside any kernel tree: a symbolic link under one (to a directory, or to a
    .c or .h file) leading elsewhere in its package adds what it leads to; one leading out
    of the package, or nowhere, is listed. Links within what is scanned need nothing (the
    file is scanned where it lies, once)."""
    added: list[Path] = []
    unfollowed: list[str] = []
    queue = [Path(os.path.abspath(p)) for p in paths if Path(p).is_dir() and kernel_tree_of(Path(p)) is None]
    covered = [Path(os.path.realpath(p)) for p in queue]
    seen = 0
    while queue and seen < MAX_LINKS:
        top = queue.pop(0)
        package = Path(os.path.realpath(package_of(top)))
        for dirpath, dirs, files in safeio.walk(top):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in dirs + sorted(f for f in files if f.endswith((".c", ".h"))):
                link = Path(dirpath, name)
                if not link.is_symlink():
                    continue
                seen += 1
                real = Path(os.path.realpath(link))
                if any(real == c or c in real.parents for c in covered):
                    continue
                shown = f"{link} -> {os.readlink(link)}"
                if not real.exists():
                    unfollowed.append(shown + " (leads nowhere)")
                elif package not in real.parents:
                    unfollowed.append(shown)
                else:
                    covered.append(real)
                    added.append(real)
                    if real.is_dir():
                        queue.append(real)  # its own links, in turn
    return added, unfollowed


def _more(items: list) -> str:
    return f" and {len(items) - 3} more" if len(items) > 3 else ""


class Targets:
    """The paths of one scan in their tree: root, the paths relative to it (rels), what is
    said of them (notes) and the input errors met, in the order met (errors: the scan adds
    its own to the same list)."""

    def __init__(self, paths: list, root: Optional[Path] = None, review: bool = False):
        """root: the tree the paths are judged in, when not the one they make alone
        (find_root): fix judges a tree's files again. review: the tree is read through a
        review's overlay of the paths given, which the sources their links lead to are not in.
        UsageError when the paths cannot be scanned together."""
        self.errors: list = []
        self.notes: list = []
        self._named_bad: dict = {}  # name given -> rel, of files named on the command line that were refused
        self.paths = [Path(p) for p in paths]
        for p in self.paths:
            if not p.exists() and not p.is_symlink():
                raise UsageError(f"{p}: no such file or directory")
        # A module's directory may take sources from elsewhere in its package through links
        # (Kbuild builds what they lead to): those are scanned, each file once, where they lie.
        self.given = list(self.paths)
        linked, unfollowed = followed_links(self.paths) if root is None else ([], [])
        if review and linked:
            self.notes.append(f"a review reads only {self.paths[0]}: the sources its symbolic links lead "
                              f"to are not reviewed ({', '.join(str(p) for p in linked[:3])}"
                              + _more(linked) + "); scan the package for them")
            linked = []
        self.paths += linked
        self.root = Path(root) if root is not None else find_root(self.paths)
        if unfollowed:
            self.notes.append("symbolic links not followed (they lead outside the package: the directory "
                              "holding dkms.conf, else the one scanned): " + ", ".join(unfollowed[:3])
                              + _more(unfollowed))
        self.rels: list[str] = []
        for p in self.paths:
            try:
                p.resolve(strict=True)
            except (RuntimeError, OSError) as exc:  # a symlink loop or a dangling link
                self.errors.append(InputError(str(p), "symbolic link loop" if "loop" in str(exc).lower()
                                              or isinstance(exc, RuntimeError) else "cannot resolve path"))
                continue
            rel = relpath(Path(os.path.abspath(p)), self.root)
            self.rels.append("" if rel == "." else rel)

    def build_dirs(self) -> list:
        """The directories given, relative to the root (a module's Kbuild is read there)."""
        return [rel for rel in (relpath(Path(os.path.abspath(p)), self.root) for p in self.given
                                if p.is_dir()) if rel not in ("", ".")]

    def holds(self, rel: str) -> bool:
        """Is the file rel of the tree one of the targets?"""
        if rel.startswith("<"):
            return False  # wqlint's own description of the API
        return any(t == "" or rel == t or rel.startswith(t + "/") for t in self.rels)

    def check_named_files(self, preloaded) -> None:
        """Files named on the command line are read whole, so bad input is always reported
        (those of preloaded, given in memory, aside)."""
        for p in self.paths:
            if not p.is_dir() and is_c_source(p.name) and relpath(Path(os.path.abspath(p)), self.root) \
                    not in preloaded:
                try:
                    read_source(p, self.root)
                except SourceError as exc:
                    self.errors.append(InputError(str(p), str(exc)))
                    self._named_bad[str(p)] = relpath(Path(os.path.abspath(p)), self.root)

    def one_per_file(self, errors: list) -> list:
        """The first error of each file (a file named on the command line and refused is said
        once, under the name given: not again by the search, as binary or crowded)."""
        out, seen = [], set()
        for e in errors:
            key = self._named_bad.get(e.path, e.path) if type(e) is InputError else (type(e), e.path, e.problem)
            if key not in seen:
                seen.add(key)
                out.append(e)
        return out

    def searched(self, store=None) -> tuple:
        """(the hidden directories under the targets, how many .c/.h files the search of the
        targets covers). The search skips hidden directories (.tmp_versions, a vendor's
        .foo/) and symbolic links; .git holds no source and is not named. store: the tree's
        index, whose walk has seen them all (scan.treewalk.walk)."""
        from wqlint.scan.treewalk import walk

        files = {t for t in self.rels if t.endswith((".c", ".h")) and not (self.root / t).is_dir()}
        dirs = sorted({t for t in self.rels if t not in files and (t == "" or (self.root / t).is_dir())})
        hidden: list = []
        if store is not None and not any(part.startswith(".") for t in self.rels for part in t.split("/")):
            hidden = [h for h in store.hidden_dirs() if any(t == "" or h.startswith(t + "/") for t in self.rels)]
            files.update(rel for rel in store.source_files()
                         if any(t == "" or rel.startswith(t + "/") for t in dirs))
            return hidden, len(files)
        for t in dirs:
            found: list = []
            walked, _whole = walk(self.root / t if t else self.root, found, stamps=False)
            prefix = t + "/" if t else ""
            hidden += [prefix + h for h in found]
            files.update(prefix + rel for rel in walked)
        return hidden, len(files)


class Focus:
    """The files whose changes are of interest (a review's): only allocations in their
    subsystems are resolved, as chains are only followed within related subsystems
    (nearness.related); words: the names those files use (the wrappers they may call).
    files None: no focus, everything is of interest."""

    def __init__(self, files: Optional[tuple] = None, words: frozenset = frozenset()):
        self.files = files
        self.words = words

    def outside(self, rel: str) -> bool:
        """Can a change to the focus files not reach an allocation in rel?"""
        return (self.files is not None and not rel.startswith(("include/", "<"))
                and not any(related(rel, f) for f in self.files))
