"""The workqueue API as the scanned tree has it: which header describes it (the tree's
include/linux/workqueue.h, a --kernel-tree's, or, for loose files, wqlint's own description
of the version) and for which kernel version (kernel_api), and what the rules take from it
(TreeApi): the WQ_* flag bits, WQ_NAME_LEN and what __alloc_workqueue() does with a longer
name (from kernel/workqueue.c), the system queues the schedule helpers use."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from wqlint import api, kversion
from wqlint.finding import Step
from wqlint.scan.index import BUILTIN_HEADER_REL
from wqlint.scan.kerneltree import KERNEL_PREFIX, KernelTree
from wqlint.scan.scope import Scope
from wqlint.scan.site import FlagBits
from wqlint.scan.source import Chunk
from wqlint.scan.targets import UsageError, kernel_tree_of
from wqlint.scan.values import evaluate

API_HEADER = "include/linux/workqueue.h"
WORKQUEUE_C = "kernel/workqueue.c"  # WQ_NAME_LEN and what __alloc_workqueue() does with a long name


@dataclass(frozen=True)
class KernelApi:
    """Where a scan takes the API from, and for which kernel."""

    kernel: Optional[KernelTree]  # the kernel a module outside any kernel tree builds for
    version: tuple
    version_source: str  # "--kernel-version", "Makefile", "default", or what the kernel tree says
    header: str  # the API header's rel
    extra: dict  # files of wqlint's own the scan adds to the tree: {rel: bytes}
    notes: tuple  # what is said of the choice


def kernel_api(root: Path, first: Path, kernel_tree: Optional[KernelTree] = None,
               kernel_version: Optional[tuple] = None) -> KernelApi:
    """The API and version a scan of root uses. kernel_tree (scan.kerneltree.KernelTree):
    the kernel a module outside any kernel tree builds for; its headers are searched as the
    module's shared headers; inside a kernel tree the tree's own are (UsageError when it is
    another tree; first: the first path given, for the message)."""
    kernel = kernel_tree
    around = kernel_tree_of(root)
    if kernel is not None and around is not None:
        if around.resolve() not in [r.resolve() for r in kernel.roots]:
            raise UsageError(f"{first} is in the kernel tree {around}: --kernel-tree "
                             f"{kernel.given} is for modules outside a kernel tree")
        kernel = None  # the same tree
    if kernel_version:
        version, source = kernel_version, "--kernel-version"
    elif kernel is not None and kernel.version:
        version, source = kernel.version, kernel.version_from
    else:
        found = kversion.from_makefile(root)
        if found:
            version, source = found, "Makefile"
        else:
            version, source = kversion.DEFAULT_VERSION, "default"
    extra = {}
    notes = []
    if kernel is not None:
        header = KERNEL_PREFIX + API_HEADER
    elif not (root / API_HEADER).is_file():
        extra[BUILTIN_HEADER_REL] = api.builtin_header(version)
        header = BUILTIN_HEADER_REL
        if source != "Makefile":  # (a slice of a tree, with its version: no module)
            # A stable or distribution kernel may differ from mainline: say which is
            # described, and how to have the kernel's own headers read instead.
            known = api.backports(version)
            notes.append("no kernel tree given (--kernel-tree DIR or KDIR): using wqlint's built-in "
                         f"description of the mainline {kversion.show(version[:2] + (0,))} workqueue API "
                         "and its semantics" + ("" if kernel_version else " (--kernel-version)")
                         + "; a stable or distribution kernel may have later changes"
                         + (f" ({known})" if known else "") + ": to read the API of the kernel "
                         "the module builds for, give its headers, --kernel-tree "
                         "/lib/modules/$(uname -r)/build (package linux-headers-$(uname -r))")
    else:
        header = API_HEADER
    if source == "default" and header != BUILTIN_HEADER_REL:
        where = kernel.describe() if kernel is not None else root / "Makefile"
        notes.append(f"no kernel version in {where}: assuming "
                     f"{kversion.show(version)} semantics (use --kernel-version)")
    return KernelApi(kernel, version, source, header, extra, tuple(notes))


class TreeApi:
    """What the rules take from the API's own files, read through the scan's index and
    resolver (scan.index.TreeIndex, scan.resolve.Resolver)."""

    def __init__(self, index, resolver, chosen: KernelApi):
        self.index = index
        self.resolver = resolver
        self.header = chosen.header
        self.version = chosen.version
        self.kernel = chosen.kernel

    def prefetch(self) -> None:
        """Queue, with the first search, what every tree needs from the API header: the
        macros that wrap alloc_workqueue() (their call sites) and the WQ_* names."""
        header = self.index.source(self.header)
        if header is None:
            return
        text = header.data.decode("utf-8", "replace").replace("\\\n", " ")
        for m in re.finditer(r"^[^\S\n]*#\s*define\s+(\w+)\(.*$", text, re.M):
            if any(re.search(r"\b" + sink + r"\s*\(", m.group(0)) for sink in api.SINKS):
                self.index.occurrences(m.group(1))
        for m in re.finditer(r"^[^\S\n]*(_*WQ_\w+)\s*=", text, re.M):
            self.index.occurrences(m.group(1), defs=True, near=self.header)

    def bits(self, near: Optional[str] = None) -> FlagBits:
        """The WQ_* values as the API header defines them (or as the file near sees them)."""
        src = self.index.source(near or self.header) or next(iter(self.index.files.values()))
        scope = Scope(src, Chunk(src, 1, src.nlines))  # the file's own level (parsed only if used)

        def val(name):
            v = self.resolver.symbols.symbol(name, scope, 0, frozenset())
            got, _ = evaluate(v, 1)
            return next(iter(got)) if len(got) == 1 else 0
        names = [name for name, _bit, _since in api.FLAG_BITS] + list(api.FLAG_MASKS)
        return FlagBits({name: val(name) for name in names})

    def warm_bits(self) -> None:
        """The names the flag bits depend on looked up (a few rounds of searches)."""
        for _ in range(3):
            self.bits()
            if not self.index.fetch_pending():
                return

    def name_len(self) -> tuple:
        """(WQ_NAME_LEN, whether __alloc_workqueue() warns about a longer name, the Step where
        the tree says so) from the tree's own kernel/workqueue.c; without one, what the API
        description says of the version (and no Step)."""
        rel = WORKQUEUE_C
        if self.kernel is not None:
            rel = KERNEL_PREFIX + WORKQUEUE_C
            known = self.kernel.find(WORKQUEUE_C) is not None
        else:
            known = rel in self.index.files or rel in self.index.preloaded or (self.index.root / rel).is_file()
        src = self.index.source(rel) if known else None
        m = re.search(rb"^[^\S\n]*WQ_NAME_LEN\s*=\s*(\d+)\s*,", src.data, re.M) if src is not None else None
        if src is None or m is None:
            return api.wq_name_len(self.version), api.name_truncation_warns(self.version), None
        line = src.data.count(b"\n", 0, m.start(1)) + 1
        warns = re.search(rb"if\s*\(\s*\w+\s*>=\s*WQ_NAME_LEN\s*\)\s*pr_warn", src.data) is not None
        size = int(m.group(1))
        note = (f"WQ_NAME_LEN = {size}: wq->name keeps {size - 1} bytes"
                + ("; __alloc_workqueue() warns once (pr_warn_once) when the name is cut" if warns
                   else "; a longer name is cut silently"))
        return size, warns, Step(src.rel, line, src.line_text(line).strip(), note)


def declared_queues(header: bytes) -> frozenset:
    """The replacements of the deprecated system queues (api.DEPRECATED_SYSTEM_QUEUES) the
    API header declares."""
    return frozenset(n for n in api.DEPRECATED_SYSTEM_QUEUES.values()
                     if re.search(rb"\b" + n.encode() + rb"\b", header))


def helper_queues(header: bytes, rel: str) -> dict:
    """{helper: (queue, Step)}: the system queue each of api.SCHEDULE_HELPERS and
    api.FLUSH_SCHEDULED names in its definition in the API header (an inline function or a
    macro), with the line that names it."""
    text = header.decode("utf-8", "replace")
    out = {}
    for helper in api.SCHEDULE_HELPERS + (api.FLUSH_SCHEDULED,):
        head = re.search(r"(?m)^(?:static\s+inline\s+\w+\s+|#\s*define\s+)" + helper + r"\s*\(", text)
        if head is None:
            continue
        end = re.search(r"(?m)^\}", text[head.end():head.end() + 600])
        body_end = head.end() + (end.start() if end is not None else 0)
        m = re.search(r"\b(system_\w+)\b", text[head.end():body_end])
        if m is None:
            continue
        at = head.end() + m.start(1)
        line = text.count("\n", 0, at) + 1
        line_text = text.split("\n")[line - 1].strip()
        out[helper] = (m.group(1), Step(rel, line, line_text, f"{helper}() uses {m.group(1)}"))
    return out
