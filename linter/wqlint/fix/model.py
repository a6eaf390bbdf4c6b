"""What a fix is: edits to one file's text, for one finding, with the fix's safety."""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from wqlint.finding import Finding

TARGETS = ("mainline", "reference")
# safe: applied by `wqlint fix --apply`; suggestion: shown and applied only when asked
# (--suggestions), because the intent cannot be known from the code.
SAFETIES = ("safe", "suggestion")


@dataclass(frozen=True)
class Edit:
    """Replace bytes [start, end) of the original file with text."""

    start: int
    end: int
    text: str


@dataclass
class Fix:
    finding: Finding
    target: str
    safety: str  # safe | suggestion
    why: str  # one paragraph: what the edit does and why it is right on this version
    ops: tuple = ()  # of fix.edit_kinds.EditKind: what the edit did to the call, for fix.cocci_gen
    # Which call it is, as a semantic patch can tell: the enclosing function, the name called,
    # the text of each argument without spaces or comments, what each edit of the call
    # (this fix's and the others') wrote: ((op, ((index, text or None), ...)), ...), and
    # whether another call of that function reads the same (then its line tells them apart).
    function: str = ""
    callee: str = ""
    args: tuple = ()
    steps: tuple = ()
    twin: bool = False
    # The call's whole new text, where Coccinelle's own layout of the edit would not pass
    # checkpatch: the semantic patch then writes this text as is ("" otherwise).
    raw: str = ""
    # The file and line of the call edited: the finding's own, or the allocation of the queue a
    # reported flush waits for (reclaim-flush-dependency).
    at: tuple = ()
    edit: str = ""  # the edit kind (rules.yaml fix.targets ... edit)


@dataclass
class FileChange:
    """The fixes of one file applied together: the text before and after."""

    path: str  # relative to the tree, '/' separators
    before: str
    after: str
    fixes: list = field(default_factory=list)  # of Fix

    def diff(self) -> str:
        """A `git apply`-ready unified diff of this file (its name quoted as git quotes it)."""
        old, new = quoted("a/" + self.path), quoted("b/" + self.path)
        tab = "\t" if " " in self.path else ""  # as git writes a name with a space
        lines = list(difflib.unified_diff(text_lines(self.before), text_lines(self.after), n=3))[2:]
        # A last line without a newline (on either side) is marked the way diff and git mark it.
        body = "".join(ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines)
        if not body:
            return ""
        return f"diff --git {old} {new}\n--- {old}{tab}\n+++ {new}{tab}\n" + body


def text_lines(text: str) -> list:
    """text's lines, each with its \\n: split at \\n alone (str.splitlines() also splits at
    \\r, a form feed and more, which a diff or a file's line endings do not)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def quoted(name: str) -> str:
    """A file name as git writes it in a diff (quote_c_style, core.quotePath on): as it is,
    or in double quotes with C escapes when it holds a control character, '"', '\\', or a
    byte that is not ASCII (a name that is not UTF-8 is as surrogateescape keeps it), so that
    no name can write lines of its own into a patch."""
    raw = name.encode("utf-8", "surrogateescape")
    if not any(b < 0x20 or b >= 0x7F or b in b'"\\' for b in raw):
        return name
    out = []
    for b in raw:
        if b in _C_ESCAPES:
            out.append(_C_ESCAPES[b])
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    return '"' + "".join(out) + '"'


_C_ESCAPES = {0x07: "\\a", 0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0B: "\\v", 0x0C: "\\f", 0x0D: "\\r",
              0x22: '\\"', 0x5C: "\\\\"}


def with_line_endings(before: str, after: str) -> str:
    """after (before edited) with each line that differs from before ended as most lines of
    before end, \\r\\n or \\n: the edits write \\n, and a file with CRLF stays CRLF."""
    if "\r" not in before and "\r" not in after:
        return after
    crlf = before.count("\r\n")
    ending = "\r\n" if crlf > before.count("\n") - crlf else "\n"
    old, new = text_lines(before), text_lines(after)
    out = []
    for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        for line in new[j1:j2]:
            if tag != "equal" and line.endswith("\n"):
                line = line[:-2 if line.endswith("\r\n") else -1] + ending
            out.append(line)
    return "".join(out)
