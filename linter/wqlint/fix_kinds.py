"""The edit kinds rules.yaml can name (fix.targets ... edit; "none" explains without an edit),
in the order they are made when the fixes of several findings edit one call: the ones that
rewrite the whole call first, a clamp last (a global limit makes it moot).

Each is a class of fix.edit_kinds by the same name (what it does to the call, what the
semantic patch writes for it), whose registry follows this list and checks it. The names
are kept here, apart from the classes, for the catalogue: it checks rules.yaml against them
without loading the fixer."""
from __future__ import annotations

NAMES = ("expand-legacy", "ordered", "global-limit", "percpu-default", "add-percpu", "drop-percpu",
         "move-flag", "clamp", "replace-system-queue", "add-reclaim")
