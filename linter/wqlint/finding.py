"""The one Finding type shared by every engine and every output format."""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, fields, replace
from typing import Optional, Union

# What may not reach a line of a text format as it is: control characters but tab (a newline
# in a file name would start a forged diagnostic line of its own; an escape sequence drives
# the terminal), the Unicode line separators, and the bytes of a name that is not UTF-8.
_UNPRINTABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\udc80-\udcff]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(m) -> str:
    c = m.group()
    code = ord(c)
    if c in _NAMED:
        return _NAMED[c]
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, as surrogateescape kept it
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """text as it goes into one line of a text format (a diagnostic, an Error: line, a note):
    every control character but tab as an escape (\\n, \\x1b), and so every byte of a name
    that is not UTF-8. The one helper for it: JSON formats escape for themselves."""
    return _UNPRINTABLE.sub(_escape, text) if _UNPRINTABLE.search(text) else text


_SURROGATE = re.compile("[\ud800-\udfff]")
_BYTE_ESCAPE = re.compile(r"\\x([89a-f][0-9a-f])")


def unicode_text(text: str) -> str:
    """text as a JSON document holds it: every lone surrogate, which no UTF-8 can encode
    (a byte of a name that is not UTF-8, as surrogateescape kept it), written as printable()
    writes it (\\xff). The JSON formats escape the rest for themselves."""
    return _SURROGATE.sub(_escape, text) if _SURROGATE.search(text) else text


def name_bytes(text: str) -> str:
    """The name unicode_text() wrote as text: its \\x80-\\xff escapes the bytes again (as
    surrogateescape keeps them), for a saved scan to find the file it names."""
    return _BYTE_ESCAPE.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), text)


class Via(enum.Enum):
    """The kinds of place a step's value can be found in, that code asks about."""

    ARGUMENT = "argument"  # a caller's argument, bound to a parameter of the function it calls
    ENUMERATOR = "enumerator"
    MACRO = "macro"  # a #define's replacement text (object-like, or a call of a function-like one)
    GLOBAL = "global"  # an assignment to a variable at file level
    FIELD = "field"  # a struct field, whose assignments were looked up in the tree


@dataclass(frozen=True)
class Origin:
    """Where a step's value was found: what code asks, where Step.note says it to a reader."""

    via: Via
    name: str = ""  # the enumerator, macro, variable or field


@dataclass(frozen=True)
class Step:
    """One link of a resolution chain: where a value came from, and what it is there."""

    path: str  # relative to the scanned root
    line: int  # 1-based
    text: str  # the source line, stripped
    note: str  # what this step contributes, e.g. "max_active <- local 'max_active'"
    # A step that binds a wrapper's parameter at one of its calls: (the wrapper's name, the
    # 0-based index of the argument). `wqlint check` resolves that argument again as the
    # configuration being built makes it.
    binds: tuple[Union[str, int], ...] = ()
    # Where the value was found, when code asks (not part of the step's identity: its note
    # says the same to a reader).
    origin: Optional[Origin] = field(default=None, compare=False)

    def to_dict(self) -> dict:
        return {"path": self.path, "line": self.line, "text": self.text, "note": self.note}

    def shown(self) -> "Step":
        """The step with its texts printable()."""
        return replace(self, path=printable(self.path), text=printable(self.text), note=printable(self.note))


@dataclass(frozen=True)
class Work:
    """One of the works a finding stands for, when a rule reports one cause once for all the
    works that reach it (reclaim-flush-dependency: every work reaching one flush): what the
    work is, and its own chain."""

    name: str  # e.g. "fc_rport_work() on fc_rport_eq"
    chain: tuple = ()  # of Step

    def to_dict(self) -> dict:
        return {"work": self.name, "chain": [s.to_dict() for s in self.chain]}

    def shown(self) -> "Work":
        """The work with its texts printable()."""
        return replace(self, name=printable(self.name), chain=tuple(s.shown() for s in self.chain))


@dataclass(frozen=True)
class NoFix:
    """Why a finding has no call for the fixer to edit: the reason (the case of the rule's
    migration in rules.yaml that says it) and what it names (a queue, a count, a wrapper)."""

    reason: str
    detail: Optional[str] = None

    def __str__(self) -> str:
        return self.reason if self.detail is None else f"{self.reason}:{self.detail}"

    @classmethod
    def read(cls, text: str) -> "NoFix":
        reason, colon, detail = text.partition(":")
        return cls(reason, detail if colon else None)


@dataclass(frozen=True)
class At:
    """A call other than the reported one: its line, column and file."""

    line: int
    col: int
    path: str

    def __str__(self) -> str:
        return f"{self.line}:{self.col}:{self.path}"

    @classmethod
    def read(cls, text: str) -> Optional["At"]:
        line, col, path = (text.split(":", 2) + ["", ""])[:3]
        ok = line.isascii() and line.isdigit() and col.isascii() and col.isdigit() and path
        return cls(int(line), int(col), path) if ok else None


def _index(text: str) -> Optional[int]:
    return int(text) if re.fullmatch(r"-?[0-9]+", text) else None


@dataclass(frozen=True)
class Hints:
    """What the fixer needs to know of a finding besides its call's arguments. JSON has each
    as a string: a flag by its name, a value as name=value, the name being the field's with
    '-' for '_' (strings(); parse() reads them back)."""

    flags_conditional: bool = False  # some values of the flags differ in affinity: decide per value
    sysfs: bool = False  # WQ_SYSFS is set, which ordered queues refuse before v7.1
    compat_branch: bool = False  # in an #if branch whose other branch already makes the change
    queue_arg: Optional[int] = None  # the argument that names the queue (0-based)
    # reclaim-flush-dependency: the flushed queue is the module's own, and kept per object
    # (in a struct member); the files the finding is judged from; and either why no allocation
    # is edited or the allocation to give WQ_MEM_RECLAIM and its flags argument.
    target_own: bool = False
    per_object: bool = False
    judged_with: frozenset[str] = frozenset()
    no_fix: Optional[NoFix] = field(default=None, metadata={"read": NoFix.read})
    edit_at: Optional[At] = field(default=None, metadata={"read": At.read})
    edit_arg: Optional[int] = None

    def has(self, name: str) -> bool:
        """Is the flag of this name (as strings() writes it) set? (rules.yaml's fix `when`)"""
        return getattr(self, name.replace("-", "_"), None) is True

    def strings(self) -> list:
        """The hints as JSON has them, sorted."""
        out = []
        for f in fields(self):
            name, value = f.name.replace("_", "-"), getattr(self, f.name)
            if value is True:
                out.append(name)
            elif isinstance(value, frozenset):
                out.extend(f"{name}={v}" for v in value)
            elif value is not None and value is not False:
                out.append(f"{name}={value}")
        return sorted(out)

    @classmethod
    def parse(cls, texts) -> "Hints":
        """strings() read back (a saved scan). A hint not known here, or a value that cannot
        be read, is left out; of a value given twice, the first in sorted order counts."""
        known = {f.name.replace("_", "-"): f for f in fields(cls)}
        got: dict = {}
        for text in sorted(texts):
            name, eq, value = text.partition("=")
            f = known.get(name)
            if f is None or isinstance(f.default, bool) == bool(eq):  # a flag is its name alone
                continue
            if isinstance(f.default, bool):
                got[f.name] = True
            elif isinstance(f.default, frozenset):
                got[f.name] = got.get(f.name, frozenset()) | {value}
            elif f.name not in got:
                got[f.name] = f.metadata.get("read", _index)(value)
        return cls(**{name: value for name, value in got.items() if value is not None})


NO_HINTS = Hints()


@dataclass(frozen=True)
class Finding:
    rule_id: str
    severity: str  # from the catalogue
    path: str  # relative to the scanned root, '/' separators
    line: int  # 1-based, line of the called name
    col: int  # 1-based, column of the called name
    message: str  # the concrete message for this site
    chain: tuple = ()  # of Step, from the call back to the origin
    migration: str = ""  # the proposed migration in words
    engine: str = "tree-sitter"
    end_col: int = 0  # 1-based, last column of the called name (0: unknown)
    # For fixes: which arguments of the reported call carry flags and max_active (0-based;
    # -1 when the value is fixed inside a wrapper or macro), and facts the fixer needs.
    flags_arg: int = -1
    max_active_arg: int = -1
    hints: Hints = NO_HINTS
    # A hash of the reported call's whole text as scanned (source.call_digest; '' when not
    # known): `fix --findings` uses a saved finding only while its call still reads the same.
    call_sha: str = field(default="", compare=False)
    # The finding's identity across edits: the function the call is in, the queue's name
    # argument as written (its format string), and the argument the rule judges.
    function: str = ""
    queue: str = ""
    role: str = "max_active"  # flags | max_active
    # Both values are part of a finding: every step their resolution went through (review
    # blames a patch that changes any of them), and the call's last line.
    flags_chain: tuple = ()  # of Step
    max_active_chain: tuple = ()  # of Step
    end_line: int = 0
    # Two calls can share an identity (the same queue allocated in an #ifdef and its #else):
    # the second is occurrence 1, and so on, in report order (numbered()).
    occurrence: int = field(default=0, compare=False)
    # The works the finding stands for, when it groups several (Work), the one whose chain is
    # `chain` first; empty for a finding of one cause.
    works: tuple = ()

    def shown(self) -> "Finding":
        """The finding with the texts a text format prints printable() (its identity, and so
        its fingerprint, unchanged)."""
        return replace(self, path=printable(self.path), message=printable(self.message),
                       migration=printable(self.migration), chain=tuple(s.shown() for s in self.chain),
                       flags_chain=tuple(s.shown() for s in self.flags_chain),
                       max_active_chain=tuple(s.shown() for s in self.max_active_chain),
                       works=tuple(w.shown() for w in self.works))

    def identity(self, path: str = "") -> tuple:
        """What stays the same while a patch edits, moves or reflows the call: rule, path (or
        the path given: where a renamed file is now), function, queue name, argument role.
        Not the line nor its text."""
        return (self.rule_id, path or self.path, self.function, self.queue, self.role)

    def fingerprint(self, path: str = "") -> str:
        """identity() as a short stable hash (SARIF partialFingerprints, JSON)."""
        import hashlib  # (loads OpenSSL: not for every `wqlint check` process)
        # surrogateescape: a file name that is not UTF-8 is kept as its bytes
        key = self.identity(path) + ((str(self.occurrence),) if self.occurrence else ())
        return hashlib.sha256("\0".join(key).encode("utf-8", "surrogateescape")).hexdigest()[:32]

    def sort_key(self):
        return (self.path, self.line, self.col, self.rule_id)

    def to_dict(self) -> dict:
        return {
            "rule": self.rule_id, "severity": self.severity, "path": self.path,
            "line": self.line, "column": self.col, "message": self.message,
            "chain": [s.to_dict() for s in self.chain], "migration": self.migration,
            "engine": self.engine, "fingerprint": self.fingerprint(),
            "arguments": {"flags": self.flags_arg, "max_active": self.max_active_arg},
            "hints": self.hints.strings(),
            **({"call_sha256": self.call_sha} if self.call_sha else {}),
            "identity": {"function": self.function, "queue": self.queue, "role": self.role,
                         **({"occurrence": self.occurrence} if self.occurrence else {})},
            "flags_chain": [s.to_dict() for s in self.flags_chain],
            "max_active_chain": [s.to_dict() for s in self.max_active_chain],
            "end_line": self.end_line or self.line,
            **({"works": [w.to_dict() for w in self.works]} if self.works else {}),
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Finding":
        """The inverse of to_dict (a saved `wqlint scan --format json`); KeyError/TypeError/
        ValueError on a malformed entry."""
        args = d.get("arguments") or {}
        identity = d.get("identity") or {}
        return cls(
            rule_id=str(d["rule"]), severity=str(d["severity"]), path=str(d["path"]),
            line=int(d["line"]), col=int(d["column"]), message=str(d["message"]),
            chain=_steps(d.get("chain", [])),
            migration=str(d.get("migration", "")), engine=str(d.get("engine", "tree-sitter")),
            flags_arg=int(args.get("flags", -1)), max_active_arg=int(args.get("max_active", -1)),
            hints=Hints.parse(str(h) for h in d.get("hints", [])),
            call_sha=str(d.get("call_sha256", "")),
            function=str(identity.get("function", "")), queue=str(identity.get("queue", "")),
            role=str(identity.get("role", "max_active")),
            flags_chain=_steps(d.get("flags_chain", [])),
            max_active_chain=_steps(d.get("max_active_chain", [])),
            end_line=int(d.get("end_line", 0)),
            occurrence=int(identity.get("occurrence", 0)),
            works=tuple(Work(str(w["work"]), _steps(w.get("chain", []))) for w in d.get("works", [])),
        )


def _steps(rows) -> tuple:
    return tuple(Step(str(s["path"]), int(s["line"]), str(s["text"]), str(s["note"])) for s in rows)


@dataclass
class InputError:
    """Input that could not be processed; printed as 'Error: path: problem'."""

    path: str
    problem: str

    def __str__(self) -> str:
        return printable(f"Error: {self.path}: {self.problem}")


class InternalError(InputError):
    """An unexpected exception (a bug, or input that defeats a limit) while processing one
    input: reported for that input, exit 3, the rest of the run goes on."""

    @classmethod
    def of(cls, path: str, exc: BaseException) -> "InternalError":
        text = " ".join(str(exc).split())[:200]
        return cls(path, f"{type(exc).__name__}{': ' + text if text else ''}")

    def __str__(self) -> str:
        return printable(f"Error: internal error in {self.path}: {self.problem}")


def numbered(findings: list) -> list:
    """The findings, sorted, each repeat of an identity() numbered so fingerprints differ."""
    from dataclasses import replace
    seen: dict = {}
    out = []
    for f in sorted(findings, key=Finding.sort_key):
        n = seen[f.identity()] = seen.get(f.identity(), -1) + 1
        out.append(replace(f, occurrence=n) if n != f.occurrence else f)
    return out


def stable_fingerprints(findings: list, moved: dict | None = None) -> dict:
    """id(finding) -> a fingerprint that stays while a finding stays: across a rebase, a v2 of
    the series that edits other hunks, a file renamed, and a function moved within its
    directory or renamed. It hashes the rule, the argument judged, the file's directory and
    the queue's name; the function too when the name says little (not a string literal, or
    one like '"%s"'); a number
    tells repeats of that apart in file and line order. Lines, texts and file names are not
    in it."""
    import hashlib
    import re
    from collections import Counter

    moved = moved or {}
    keys = {}
    for f in findings:
        path = moved.get(f.path, f.path)
        queue = f.queue
        plain = re.sub(r"[^A-Za-z0-9_]", "", re.sub(r"%[-+ #0-9.*]*[a-zA-Z]+", "", queue))
        key: tuple = (f.rule_id, f.role, path.rsplit("/", 1)[0] if "/" in path else "", queue)
        if not queue.startswith('"') or len(plain) < 3:
            key += (f.function,)
        keys[id(f)] = key
    seen: Counter = Counter()
    out = {}
    for f in sorted(findings, key=lambda f: (moved.get(f.path, f.path), f.line, f.col, f.rule_id)):
        numbered_key = keys[id(f)] + (str(seen[keys[id(f)]]),)
        seen[keys[id(f)]] += 1
        digest = hashlib.sha256("\0".join(("wqlint-stable/1",) + numbered_key).encode("utf-8", "surrogateescape"))
        out[id(f)] = digest.hexdigest()[:32]
    return out


@dataclass
class Report:
    """Everything a run produced; one place decides the exit code for every command."""

    root: str
    findings: list = field(default_factory=list)
    errors: list = field(default_factory=list)  # of InputError
    notes: list = field(default_factory=list)  # informational lines for stderr
    kernel_version: tuple = (0, 0, 0)
    kernel_version_source: str = ""
    files_scanned: int = 0  # the .c/.h files the search of the paths covers
    grep_rounds: int = 0  # searches of the tree the scan made (none when the index answered)
    suppressed: list = field(default_factory=list)  # (Finding, justification) a comment hides

    def exit_code(self) -> int:
        if self.errors:
            return 3
        return 1 if self.findings else 0
