"""Run the wqlint command as another user: `python as_user.py USER wqlint-args...` (as root).

The interpreter and the virtualenv may live where that user cannot read (root's home), so the
modules are imported first, as root, and only then does the process become the user: what
wqlint then reads and writes is checked against that user's rights, as when they run it.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import pwd
import sys

for name in ("base64", "concurrent.futures", "difflib", "email.policy", "email.parser", "email.utils",
             "email.header", "fcntl", "hashlib", "json", "shutil", "subprocess", "tempfile", "zlib",
             "urllib.parse", "unicodedata", "encodings.idna", "yaml", "importlib.readers",
             "importlib.resources.readers", "importlib.resources._adapters"):
    importlib.import_module(name)
import wqlint  # noqa: E402

for info in pkgutil.walk_packages(wqlint.__path__, "wqlint."):
    if not info.name.endswith("__main__"):
        importlib.import_module(info.name)
from wqlint.scan import parser  # noqa: E402

parser.parse(b"int x;")  # loads the grammar
user = pwd.getpwnam(sys.argv[1])
os.setgroups([])
os.setgid(user.pw_gid)
os.setuid(user.pw_uid)
sys.argv = ["wqlint"] + sys.argv[2:]
from wqlint.entry import main  # noqa: E402

sys.exit(main())
