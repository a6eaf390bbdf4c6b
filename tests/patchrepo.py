"""Patches made as a contributor makes them: a small git repository, a commit per change,
`git format-patch` (renames detected). Dates and identities are fixed, so the patches, and the
golden outputs made from them, are the same on every run."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ENV = {"GIT_AUTHOR_NAME": "Jane Developer", "GIT_AUTHOR_EMAIL": "jane@example.org",
       "GIT_COMMITTER_NAME": "Jane Developer", "GIT_COMMITTER_EMAIL": "jane@example.org",
       "GIT_AUTHOR_DATE": "2026-11-20T10:00:00+00:00",
       "GIT_COMMITTER_DATE": "2026-11-20T10:00:00+00:00",
       "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


class Repo:
    def __init__(self, path: Path, base: Path = None):
        self.path = path
        if base is not None:
            shutil.copytree(base, path)
        else:
            path.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", "base")

    def git(self, *args, stdin: bytes = None) -> bytes:
        proc = subprocess.run(["git", "-C", str(self.path), *args], input=stdin, capture_output=True,
                              env={**os.environ, **ENV}, check=True)
        return proc.stdout

    def write(self, rel: str, text: str) -> None:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    def edit(self, rel: str, old: str, new: str) -> None:
        p = self.path / rel
        text = p.read_text()
        assert text.count(old) == 1, (rel, old)
        p.write_text(text.replace(old, new))

    def commit(self, subject: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", subject)

    def format_patch(self, out: Path, msgid: str, rng: str = "-1") -> list:
        """The patch files of rng, written to out, with Message-ID <msgid@example.org>."""
        out.mkdir(parents=True, exist_ok=True)
        names = self.git("format-patch", "-M", "-C", "--find-copies-harder", "--no-signature", "--to=linux-demo@example.org",
                         f"--add-header=Message-ID: <{msgid}@example.org>", "-o", str(out), rng)
        return [Path(n) for n in names.decode().split()]
