"""Where the project's data files are: rules.yaml and semantic-patches/.

They live at the top of the checkout, where kernel developers and both engines read them;
an environment variable points elsewhere, and a wheel may ship a copy inside the package.
"""
from __future__ import annotations

import os
from pathlib import Path


def locate(name: str, env_var: str) -> Path:
    """$env_var, else the copy packaged beside this module, else the checkout's top level."""
    env = os.environ.get(env_var)
    if env:
        return Path(env)
    packaged = Path(__file__).with_name(name)
    if packaged.exists():
        return packaged
    return Path(__file__).resolve().parents[2] / name
