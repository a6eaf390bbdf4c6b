"""The subject prefix of a patch ("btrfs: ", "scsi: lpfc: "), as its subsystem writes it.

In a git checkout with history, the prefix is what the subsystem's own commits use: the part
of each subject of the last commits that touched the patch's files before the last ': '
(reverts and merges left out), the most common one if at least two commits agree, the
newest on a tie.

Otherwise it comes from the path (path_prefix):

- ``fs/X/...`` -> ``X``; ``fs/X.c`` -> ``fs``
- ``kernel/X/...`` -> ``X``; ``kernel/X.c`` -> ``X`` (kernel/workqueue.c -> ``workqueue``)
- ``mm/``, ``block/``, ``lib/``, ``crypto/``, ``init/``, ``ipc/`` ... -> that name
- ``net/X/...`` -> ``X`` (net/core and net/*.c -> ``net``)
- ``arch/A/...`` -> ``A`` (``arch/A/kvm/`` -> ``KVM: A``)
- ``sound/soc/codecs/F.c`` -> ``ASoC: F``; ``sound/soc/X/...`` -> ``ASoC: X``; other
  ``sound/X/...`` -> ``ALSA: X``
- ``virt/kvm/`` -> ``KVM``
- ``drivers/gpu/drm/X/...`` -> ``drm/X``
- ``drivers/infiniband/{hw,sw,ulp}/X/...`` -> ``RDMA/X``
- ``drivers/net/ethernet/V/X/...`` -> ``X`` (``V`` for files directly in the vendor directory)
- ``drivers/net/wireless/V/X/...`` -> ``wifi: X``
- ``drivers/md/dm-X.c`` -> ``dm X``; ``drivers/md/X.c`` -> ``md/X``; ``drivers/md/md.c`` -> ``md``;
  ``drivers/md/X/...`` -> ``X`` (bcache)
- ``drivers/nvme/host/`` -> ``nvme``; ``drivers/nvme/target/`` -> ``nvmet``
- ``drivers/A/B/...`` -> ``A: B``; ``drivers/A/F.c`` -> ``A: F`` with a leading ``A-`` or
  ``A_`` taken off F (drivers/bar/bar_core.c -> ``bar: core``), ``A`` when F is A
- anything else: the first directory, or the file name without extension

Files of one patch that get different prefixes share the leading ': '-separated words they
agree on ("scsi: lpfc" and "scsi: qla2xxx" -> "scsi"); when they agree on none, the rule is
applied to the directory they share.
"""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Optional

GIT_LOG_LIMIT = 200  # commits looked at per patch
GIT_TIMEOUT = 60

_TOP_NAMES = {"mm", "block", "lib", "crypto", "init", "ipc", "security", "certs", "io_uring",
              "rust", "samples", "scripts", "tools", "usr"}


def _stem(name: str) -> str:
    return name.split(".", 1)[0] if not name.startswith(".") else name


def path_prefix(path: str) -> str:
    """The prefix a path-only rule gives a file, or a directory written with a final '/'
    (see the module docstring)."""
    parts = [p for p in PurePosixPath(path).parts if p not in ("", ".")]
    if not parts:
        return ""
    top, rest = parts[0], parts[1:]
    is_file = not path.endswith("/") and len(parts) > 1
    dirs = rest[:-1] if is_file else rest
    name = _stem(parts[-1]) if is_file else ""
    if top == "fs":
        return dirs[0] if dirs else "fs"
    if top == "kernel":
        return dirs[0] if dirs else (name or "kernel")
    if top == "net":
        return dirs[0] if dirs and dirs[0] != "core" else "net"
    if top == "arch":
        if not dirs:
            return "arch"
        return f"KVM: {dirs[0]}" if len(dirs) > 1 and dirs[1] == "kvm" else dirs[0]
    if top == "sound":
        if dirs[:1] == ["soc"]:
            if dirs[1:2] == ["codecs"] and name:
                return f"ASoC: {name}"
            return f"ASoC: {dirs[1]}" if len(dirs) > 1 else "ASoC"
        return f"ALSA: {dirs[0]}" if dirs else "ALSA"
    if top == "virt":
        return "KVM" if dirs[:1] == ["kvm"] else "virt"
    if top == "drivers":
        return _drivers_prefix(dirs, name)
    if top in _TOP_NAMES or len(parts) > 1:
        return top
    return _stem(top)


def _drivers_prefix(dirs: list, name: str) -> str:
    if not dirs:
        return name or "drivers"
    a, below = dirs[0], dirs[1:]
    if a == "gpu" and below[:1] == ["drm"]:
        return f"drm/{below[1]}" if len(below) > 1 else "drm"
    if a == "infiniband" and len(below) > 1 and below[0] in ("hw", "sw", "ulp"):
        return f"RDMA/{below[1]}"
    if a == "infiniband":
        return "RDMA"
    if a == "net" and below[:1] == ["ethernet"] and len(below) > 1:
        return below[2] if len(below) > 2 else below[1]
    if a == "net" and below[:1] == ["wireless"] and len(below) > 1:
        return f"wifi: {below[2] if len(below) > 2 else below[1]}"
    if a == "nvme" and below[:1] in (["host"], ["target"]):
        return "nvme" if below[0] == "host" else "nvmet"
    if a == "md" and below:
        return below[0]
    if a == "md" and name:
        if name.startswith("dm-"):
            return "dm " + name[3:]
        return "md" if name in ("md", "dm") else f"md/{name}"
    if below:
        return f"{a}: {below[0]}"
    if name:
        for sep in ("-", "_"):
            if name.startswith(a + sep) and len(name) > len(a) + 1:
                return f"{a}: {name[len(a) + 1:]}"
        return a if name == a else f"{a}: {name}"
    return a


def common_prefix(prefixes: list, paths: list) -> str:
    """One prefix for a patch whose files got the given prefixes."""
    prefixes = [p for p in prefixes if p]
    if not prefixes:
        return ""
    if all(p == prefixes[0] for p in prefixes):
        return prefixes[0]
    split = [p.split(": ") for p in prefixes]
    shared = []
    for words in zip(*split):
        if any(w != words[0] for w in words):
            break
        shared.append(words[0])
    if shared:
        return ": ".join(shared)
    common = os.path.commonpath(paths) if paths else ""
    return path_prefix(common + "/") if common else prefixes[0]


def _git_toplevel(root: Path) -> Optional[Path]:
    from wqlint import tools

    try:
        proc = tools.git(root, "rev-parse", "--show-toplevel", timeout=GIT_TIMEOUT)
    except tools.ToolError:
        return None
    if proc.returncode != 0:
        return None
    return Path(proc.stdout.decode("utf-8", "replace").strip())


def history_prefix(root: Path, paths: list) -> Optional[str]:
    """The prefix the tree's own git history uses for these paths, or None.

    Only when root is the top of its git work tree: a tree unpacked inside some other
    repository does not take that repository's history.
    """
    root = Path(root)
    top = _git_toplevel(root)
    if top is None or top.resolve() != root.resolve():
        return None
    from wqlint import tools

    try:
        proc = tools.git(root, "--literal-pathspecs", "log", "--no-merges", f"-n{GIT_LOG_LIMIT}",
                         "--format=%s", "--", *paths, timeout=GIT_TIMEOUT)
    except tools.ToolError:
        return None
    if proc.returncode != 0:
        return None
    counts: Counter = Counter()
    first_seen: dict = {}
    for subject in proc.stdout.decode("utf-8", "replace").splitlines():
        subject = subject.strip()
        if subject.lower().startswith(("revert", "merge")) or ": " not in subject:
            continue
        prefix = subject.rsplit(": ", 1)[0].strip()
        if not prefix or len(prefix) > 40 or prefix.count(" ") > 3 + prefix.count(": "):
            continue
        counts[prefix] += 1
        first_seen.setdefault(prefix, len(first_seen))
    if not counts:
        return None
    best = min(counts, key=lambda p: (-counts[p], first_seen[p]))
    return best if counts[best] >= 2 else None


def patch_prefix(root: Path, paths: list) -> str:
    """The subject prefix of a patch touching paths (relative to root)."""
    found = history_prefix(root, paths)
    if found:
        return found
    return common_prefix([path_prefix(p) for p in paths], paths)
