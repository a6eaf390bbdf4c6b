"""Configured and prepared O= build directories of the corpus trees: linux-source-6.12 for
the tests that run `wqlint check` inside Kbuild and for scripts/bench; 6.1 and 7.3 too for
the test that builds a fixed module on every kernel it supports (tests/test_module.py).

Made once per series (defconfig, the options the examples need, modules_prepare: 30-70 s on
two cores) in $WQLINT_CACHE/check-build-SERIES and reused while its stamp lists the same
source and options.
Objects compiled there by earlier runs are reused too, so a second run only re-runs the
checker (C=2 checks files that are up to date).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from conftest import CACHE

# What the seed's examples need: fs/crypto, fs/verity, btrfs, erofs (zdata.c), f2fs,
# dm-crypt, the inline encryption fallback; MODULES for the external module.
CONFIGS = ("FS_ENCRYPTION", "FS_VERITY", "BLK_INLINE_ENCRYPTION", "BLK_INLINE_ENCRYPTION_FALLBACK",
           "F2FS_FS", "BTRFS_FS", "EROFS_FS", "EROFS_FS_ZIP", "MD", "BLK_DEV_DM", "DM_CRYPT", "MODULES")


class BuildError(Exception):
    pass


def prepared_build(tree: Path, series: str = "6.12", jobs: int = 2) -> Path:
    """The O= directory for tree, configured and prepared (BuildError if that fails)."""
    out = CACHE / f"check-build-{series}"
    stamp = out / ".wqlint-prepared"
    want = f"source: {tree}\nconfigs: {' '.join(CONFIGS)}\n"
    if stamp.is_file() and stamp.read_text() == want and (out / "scripts" / "mod" / "modpost").is_file():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)

    def make(*args):
        got = subprocess.run(["make", "-s", f"-j{jobs}", f"O={out}", *args], cwd=tree,
                             capture_output=True, text=True, timeout=3600)
        if got.returncode != 0:
            raise BuildError(f"make {' '.join(args)} failed: {got.stderr[-4000:]}")

    make("defconfig")
    enable = []
    for name in CONFIGS:
        enable += ["-e", name]
    subprocess.run([str(tree / "scripts" / "config"), "--file", str(out / ".config"), *enable], check=True)
    make("olddefconfig")
    config = (out / ".config").read_text()
    missing = [n for n in CONFIGS if f"CONFIG_{n}=y\n" not in config]
    if missing:
        raise BuildError(f"olddefconfig dropped {', '.join(missing)}")
    make("modules_prepare")
    stamp.write_text(want)
    return out
