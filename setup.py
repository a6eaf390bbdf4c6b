"""Puts the project's data into the package at build time.

rules.yaml and semantic-patches/ stay at the top of the repository, the one copy that kernel
developers, coccicheck and wqlint read in a checkout; a wheel has no such top, so the build
copies them into the package beside project_files.py (which looks there first). The sdist
carries them through MANIFEST.in, so a wheel built from it gets them the same way.
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# (source at the top of the repository, glob, destination inside the wqlint package)
PROJECT_DATA = [("rules.yaml", None, "rules.yaml"),
                ("semantic-patches", "*.cocci", "semantic-patches"),
                ("semantic-patches", "README.md", "semantic-patches"),
                ("docs", "rules.md", "docs")]  # what SARIF's helpUri points at


class BuildWithProjectData(build_py):
    def run(self):
        # The build directory outlives a build: a module deleted from the sources since the
        # last one would still be copied into the wheel. Start the package afresh.
        if not getattr(self, "editable_mode", False):
            shutil.rmtree(Path(self.build_lib, "wqlint"), ignore_errors=True)
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's own copies
        package = Path(self.build_lib, "wqlint")
        for src, pattern, dest in PROJECT_DATA:
            source = HERE / src
            files = [source] if pattern is None else sorted(source.glob(pattern))
            if not files or not all(f.is_file() for f in files):
                raise SystemExit(f"error: {src}{'/' + pattern if pattern else ''}: missing, cannot build")
            for f in files:
                target = package / dest if pattern is None else package / dest / f.name
                target.parent.mkdir(parents=True, exist_ok=True)
                self.copy_file(str(f), str(target))

    def get_outputs(self, include_bytecode=1):
        outputs = super().get_outputs(include_bytecode)
        package = Path(self.build_lib, "wqlint")
        for src, pattern, dest in PROJECT_DATA:
            files = [HERE / src] if pattern is None else sorted((HERE / src).glob(pattern))
            outputs += [str(package / dest if pattern is None else package / dest / f.name) for f in files]
        return outputs


setup(cmdclass={"build_py": BuildWithProjectData})
