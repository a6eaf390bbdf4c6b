"""WQLINT_DEBUG=1: what each checker did, on stderr; WQLINT_DEBUG=time stamps it."""
from __future__ import annotations

import os
import sys
import time

_STARTED = time.monotonic()


def say(msg: str) -> None:
    if os.environ.get("WQLINT_DEBUG"):
        print(f"wqlint check: {msg}" + (f" ({time.monotonic() - _STARTED:.3f} s)"
                                         if os.environ["WQLINT_DEBUG"] == "time" else ""), file=sys.stderr)
