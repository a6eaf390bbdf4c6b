"""Patch and mbox intake, and nothing else.

Every patch enters here: a path or '-' for stdin, read as bytes (at most MAX_INPUT_BYTES),
parsed with one explicit email.policy. What leaves is plain data (Patch, FileDiff, Hunk):
the analysis never sees raw mail, and nothing in a patch is ever executed.

Patches come from mailing lists, so their paths are untrusted: absolute paths, '..'
components, '.git' components, symbolic links and submodules are refused here, before any
path reaches code that reads or writes files.
"""
from __future__ import annotations

import dataclasses
import email.errors
import email.policy
import email.utils
import re
import sys
from dataclasses import dataclass
from email.parser import BytesParser
from typing import Optional

from wqlint import errors

POLICY = email.policy.default
MAX_INPUT_BYTES = 32 * 1024 * 1024
MAX_PATCHES = 1000
MAX_LINE = 1_000_000  # a hunk's line numbers: past any file the scanner reads (8 MiB)
MAX_ADDRESSES = 1000  # To and Cc of one message: a reply goes to them all
MAX_MIME_PARTS = 64  # multipart containers in one message
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """text without control characters (an escape sequence in a Subject must not reach a
    terminal, a CR or LF in a name must not reach a header of a reply)."""
    # 8-bit header bytes come from the parser as surrogates: as UTF-8 where they are
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return _CONTROL.sub(" ", text)

# The separator line of an mbox: 'From <sender> <asctime date>', as git format-patch
# ('From <sha1> Mon Sep 17 00:00:00 2001') and b4 ('From git@z Thu Jan  1 00:00:00 1970')
# write it. Requiring the date keeps a commit message line starting with 'From ' apart.
_FROM_LINE = re.compile(rb"^From \S+ +[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]?\d \d\d:\d\d:\d\d(?: [+-]?\w+)? \d{4}\s*$")
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
_REFUSED_MODES = {"120000": "a symbolic link", "160000": "a submodule"}


class MailError(errors.WqlintError):
    """Input that cannot be used; str() names the input (and message, file, hunk)."""


@dataclass(frozen=True)
class Hunk:
    number: int  # 1-based within its file diff
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    header: str  # the '@@ ... @@ section' line
    lines: tuple  # of (op, text): op is ' ', '-' or '+'; text without the newline
    old_no_eol: bool = False  # '\ No newline at end of file' after the old side's last line
    new_no_eol: bool = False


@dataclass(frozen=True)
class FileDiff:
    old_path: Optional[str]  # None: the file is created
    new_path: Optional[str]  # None: the file is deleted
    hunks: tuple
    header: tuple = ()  # the 'diff --git' line and the extended header lines, as quoted in replies
    binary: bool = False
    copy: bool = False  # new_path is a copy of old_path, which stays

    @property
    def path(self) -> str:
        path = self.new_path or self.old_path
        assert path is not None, "a diff from /dev/null to /dev/null is refused when parsed"
        return path


@dataclass(frozen=True)
class Patch:
    source: str  # the input it came from, for messages
    number: int  # 1-based position in the series
    subject: str
    message_id: str  # with the angle brackets, '' when the input had none
    references: tuple  # the References of the patch mail itself
    author: str  # display name, or the address when there is none
    author_address: str
    files: tuple  # of FileDiff
    recipients: tuple = ()  # the To and Cc of the patch mail, for a reply to all

    @property
    def name(self) -> str:
        return f"{self.source} (patch {self.number} '{self.subject}')" if self.subject else self.source


def read_input(path: str) -> bytes:
    """The bytes of a patch file or of stdin ('-'), refusing inputs over MAX_INPUT_BYTES."""
    name = "<stdin>" if path == "-" else path
    if path != "-":
        from wqlint import safeio
        try:
            return safeio.read_bytes(path, MAX_INPUT_BYTES)
        except safeio.InputRefused as exc:
            raise MailError(f"{name}: {exc}") from None
    try:
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise MailError(f"{name}: {exc.strerror or exc}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise MailError(f"{name}: larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB, not read")
    return data


def load(paths: list, allow_cover: bool = False) -> list:
    """The series given as patch files and mboxes ('-': stdin), numbered in order.
    allow_cover: mail without a patch (a cover letter) gives no patches rather than an error."""
    if list(paths).count("-") > 1:
        raise MailError("stdin ('-') can be read only once")
    series: list[Patch] = []
    for path in paths:
        for patch in parse_series(read_input(path), "<stdin>" if path == "-" else path, allow_cover):
            series.append(dataclasses.replace(patch, number=len(series) + 1))
    if len(series) > MAX_PATCHES:
        raise MailError(f"more than {MAX_PATCHES} patches")
    return series


def split_mbox(data: bytes) -> list:
    """The messages of an mbox (a single message or bare diff is one 'message')."""
    lines = data.splitlines(keepends=True)
    starts = [i for i, ln in enumerate(lines)
              if _FROM_LINE.match(ln) and (i == 0 or not lines[i - 1].strip())]
    if not starts or starts[0] != 0:
        if starts and any(ln.strip() for ln in lines[:starts[0]]):
            raise MailError("text before the first message of the mbox")
        if not starts:
            return [data]
    out = []
    for n, i in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        # mboxrd escapes body lines starting with 'From ' as '>From '; undo one level.
        body = [re.sub(rb"^>(>*From )", rb"\1", ln) for ln in lines[i + 1:end]]
        out.append(b"".join(body))
    return out


def parse_series(data: bytes, source: str, allow_cover: bool = False) -> list:
    """The patches of one input (one patch, an mbox of a series, or a bare diff)."""
    if b"\0" in data:
        raise MailError(f"{source}: binary input (contains NUL bytes)")
    messages = split_mbox(data)
    if len(messages) > MAX_PATCHES:
        raise MailError(f"{source}: more than {MAX_PATCHES} messages")
    patches: list[Patch] = []
    for n, raw in enumerate(messages, 1):
        what = source if len(messages) == 1 else f"{source}: message {n}"
        patch = _parse_message(raw, what, len(patches) + 1)
        if patch is not None:
            patches.append(patch)
    if not patches and not allow_cover:
        raise MailError(f"{source}: no patch found")
    return patches


def _parse_message(raw: bytes, what: str, number: int) -> Optional[Patch]:
    stripped = raw.lstrip(b"\r\n")
    if re.match(rb"(diff --git |--- |Index: )", stripped):  # a bare diff, no mail headers
        return Patch(what, number, "", "", (), "", "", _parse_diff(_text(stripped, what), what))
    if len(re.findall(rb"(?im)^content-type:\s*multipart/", raw)) > MAX_MIME_PARTS:
        raise MailError(f"{what}: more than {MAX_MIME_PARTS} multipart containers, not read")
    try:
        msg = BytesParser(policy=POLICY).parsebytes(raw)
    except RecursionError:
        raise MailError(f"{what}: MIME parts nested too deeply, not read") from None
    if msg.defects or not msg.keys():
        problem = msg.defects[0].__class__.__name__ if msg.defects else "no mail headers"
        raise MailError(f"{what}: not a mail message ({problem})")
    for key, value in msg.raw_items():
        if key.lower() in ("to", "cc") and str(value).count("@") > MAX_ADDRESSES:
            raise MailError(f"{what}: more than {MAX_ADDRESSES} addresses in {key}, not read")
    subject = " ".join(clean(str(msg.get("subject", ""))).split())
    message_id = str(msg.get("message-id", "")).strip()
    if message_id and not re.fullmatch(r"<[^<>\s]+>", message_id):
        raise MailError(f"{what}: malformed Message-ID {message_id!r}")
    references = tuple(re.findall(r"<[^<>\s]+>", str(msg.get("references", ""))))
    # Address headers are decoded here, not by the policy's header registry, which raises on
    # an encoded CR or LF (=?utf-8?q?A=0D=0AB?=); every control character becomes a space.
    name, address = (_addresses(msg, "from") or [("", "")])[0]
    recipients = tuple(format_address(n, a) for n, a in _addresses(msg, "to", "cc"))
    body: list[str] = []
    for part in msg.walk():
        if part.is_multipart():
            continue
        if part.get_content_maintype() != "text":
            continue
        payload = part.get_payload(decode=True)  # bytes (None when empty) for a part that is not multipart
        body.append(_text(payload if isinstance(payload, bytes) else b"", what))
    text = "\n".join(body)
    files = _parse_diff(text, what)
    if not files:
        if is_cover(subject) or not text.strip():
            return None  # a cover letter, or a reply in the thread
        raise MailError(f"{what}: no diff in message '{subject}'")
    author = _in_body_from(text)
    if author is not None and author[1] != address:
        # git am takes the author from a 'From:' opening the body (a patch sent by someone
        # else): the reply goes to the author, and to the sender too.
        if address:
            recipients = (format_address(name, address),) + recipients
        name, address = author
    return Patch(what, number, subject, message_id, references, name or address, address, files,
                 recipients)


def bracket_groups(subject: str):
    """The '[...]' groups of a Subject, left to right, as (start, end, the text inside): each
    ']' closes the group the first '[' after the ']' before it opens. One pass over the
    Subject with str.find, whatever its length (a Subject is anyone's text: a pattern that
    backtracks over it would let one mail stop the intake of a whole archive)."""
    start = 0
    while True:
        close = subject.find("]", start)
        if close < 0:
            return
        opened = subject.find("[", start, close)
        if opened >= 0:
            yield opened, close + 1, subject[opened + 1:close]
        start = close + 1


def is_cover(subject: str) -> bool:
    """A cover letter's Subject: a '[...]' group ending in patch number zero ('[PATCH v2 0/3]',
    '[RFC 00/12]')."""
    for _, _, text in bracket_groups(subject):
        end = len(text)
        while end and text[end - 1].isdecimal():
            end -= 1
        if end == len(text) or not text[:end].endswith("/"):
            continue
        number = text[:end - 1]
        before = number.rstrip("0")
        if before != number and not (before[-1:].isalnum() or before.endswith("_")):
            return True
    return False


def _in_body_from(text: str):
    """(name, address) of a 'From:' line opening the body, as git am reads it, or None."""
    for line in text.split("\n", 20)[:20]:
        if not line.strip():
            continue
        if not line.startswith("From:"):
            return None
        found = [(" ".join(clean(n).split()), "".join(clean(a).split()))
                 for n, a in email.utils.getaddresses([line[5:]]) if "@" in a]
        return found[0] if len(found) == 1 else None
    return None


def format_address(name: str, address: str) -> str:
    """'name <address>' with the name quoted as needed; formataddr refuses a non-ASCII
    address (SMTPUTF8 ones are real), so its quoting of the name is used around it."""
    try:
        return email.utils.formataddr((name, address))
    except UnicodeError:
        return email.utils.formataddr((name, "a@b")).replace("<a@b>", f"<{address}>") if name else address


def _addresses(msg, *names) -> list:
    """(display name, address) of headers names, in order. Parsed from the raw header, so an
    encoded word stays one name, then decoded here, not by the policy's header registry,
    which raises on an encoded CR or LF (=?utf-8?q?A=0D=0AB?=); control characters become
    spaces."""
    from email.header import decode_header, make_header

    raw = [str(value) for key, value in msg.raw_items() if key.lower() in names]
    out = []
    for name, address in email.utils.getaddresses(raw):
        try:
            name = str(make_header(decode_header(name)))
        except (ValueError, LookupError, UnicodeError, email.errors.HeaderParseError):
            pass  # kept as written
        name, address = " ".join(clean(name).split()), "".join(clean(address).split())
        if address:
            out.append((name, address))
    return out


def _text(payload: bytes, what: str) -> str:
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = payload.count(b"\n", 0, exc.start) + 1
        raise MailError(f"{what}: line {line}: not valid UTF-8") from None
    if "\r\n" in text and text.count("\r\n") == text.count("\n"):
        text = text.replace("\r\n", "\n")
    return text


# -- the diff ---------------------------------------------------------------------------------
def _unquote(name: str) -> str:
    """git's C-style quoting of unusual file names ("a/f\\303\\251.c")."""
    if not (len(name) >= 2 and name[0] == '"' and name[-1] == '"'):
        return name
    body = name[1:-1].encode("latin-1", "backslashreplace")
    out = bytearray()
    i = 0
    simple = {ord("n"): 10, ord("t"): 9, ord('"'): 34, ord("\\"): 92, ord("a"): 7, ord("b"): 8,
              ord("f"): 12, ord("r"): 13, ord("v"): 11}
    while i < len(body):
        c = body[i]
        if c == 92 and i + 1 < len(body):
            nxt = body[i + 1]
            if 48 <= nxt <= 55:
                digits = body[i + 1:i + 4]
                if len(digits) != 3 or not all(48 <= d <= 55 for d in digits):
                    raise ValueError(f"malformed octal escape \\{digits.decode('latin-1')}")
                out.append(int(digits, 8))
                i += 4
                continue
            out.append(simple.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return out.decode("utf-8", "replace")


def _check_path(raw: str, what: str, strip: bool = True) -> str:
    """A path of the patched tree: relative, normalised, no '..', no '.git'."""
    try:
        name = _unquote(raw.split("\t")[0].strip()) if raw.startswith('"') else raw.split("\t")[0].rstrip()
    except ValueError as exc:
        raise MailError(f"{what}: refusing path {clean(raw)!r}: {exc}") from None
    if strip and name[:2] in ("a/", "b/"):
        name = name[2:]
    if not name or name.startswith("/") or "\\" in name or "\0" in name:
        raise MailError(f"{what}: refusing path {raw!r}: absolute or not a plain path")
    parts = name.split("/")
    for part in parts:
        if part == "..":
            raise MailError(f"{what}: refusing path {raw!r}: contains '..'")
        if part == ".git":
            raise MailError(f"{what}: refusing path {raw!r}: inside .git")
    return "/".join(p for p in parts if p not in ("", "."))


def _parse_diff(text: str, what: str) -> tuple:
    lines = text.split("\n")
    files: list[FileDiff] = []
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if line.startswith("diff --git "):
            i = _parse_git_file(lines, i, what, files)
        elif line.startswith("--- ") and i + 1 < n and lines[i + 1].startswith("+++ "):
            i = _parse_plain_file(lines, i, what, files, ())
        else:
            i += 1
    return tuple(files)


def _parse_git_file(lines, i, what, files) -> int:
    head = lines[i]
    header = [head]
    m = re.match(r'^diff --git ("(?:[^"\\]|\\.)*"|\S+) ("(?:[^"\\]|\\.)*"|\S+)$', head)
    if not m:
        raise MailError(f"{what}: cannot read {head!r}")
    old_path = _check_path(m.group(1), what)
    new_path = _check_path(m.group(2), what)
    created = deleted = binary = copy = False
    i += 1
    while i < len(lines):
        line = lines[i]
        mode = re.match(r"^(?:new file mode|deleted file mode|new mode|old mode) (\d+)$", line)
        if mode:
            if mode.group(1) in _REFUSED_MODES:
                raise MailError(f"{what}: refusing {new_path}: the patch makes it "
                                f"{_REFUSED_MODES[mode.group(1)]}")
            created = created or line.startswith("new file mode")
            deleted = deleted or line.startswith("deleted file mode")
        elif line.startswith(("rename from ", "copy from ")):
            old_path = _check_path(line.split(" ", 2)[2], what, strip=False)
        elif line.startswith(("rename to ", "copy to ")):
            new_path = _check_path(line.split(" ", 2)[2], what, strip=False)
            copy = line.startswith("copy")
        elif line.startswith("index "):
            if re.search(r" (120000|160000)$", line):
                raise MailError(f"{what}: refusing {new_path}: the patch makes it "
                                f"{_REFUSED_MODES[line[-6:]]}")
        elif line.startswith(("similarity index", "dissimilarity index")):
            pass
        elif line.startswith("Binary files ") or line == "GIT binary patch":
            binary = True
        elif line.startswith("--- "):
            if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
                raise MailError(f"{what}: {new_path}: '---' line without '+++' line")
            return _parse_plain_file(lines, i, what, files, tuple(header),
                                     None if created else old_path, None if deleted else new_path, copy)
        else:
            break
        header.append(line)
        i += 1
    files.append(FileDiff(None if created else old_path, None if deleted else new_path, (),
                          tuple(header), binary, copy))
    return i


def _parse_plain_file(lines, i, what, files, header, old_default=None, new_default=None,
                      copy=False) -> int:
    old_raw, new_raw = lines[i][4:], lines[i + 1][4:]
    old_path = None if old_raw.split("\t")[0] == "/dev/null" else _check_path(old_raw, what)
    new_path = None if new_raw.split("\t")[0] == "/dev/null" else _check_path(new_raw, what)
    if header:
        old_path = old_default if old_path is not None else None
        new_path = new_default if new_path is not None else None
    if old_path is None and new_path is None:
        raise MailError(f"{what}: a diff from /dev/null to /dev/null")
    name = new_path or old_path
    hunks: list[Hunk] = []
    i += 2
    while i < len(lines) and lines[i].startswith("@@"):
        i = _parse_hunk(lines, i, what, name, len(hunks) + 1, hunks)
    if not hunks:
        raise MailError(f"{what}: {name}: no hunk after the '+++' line")
    files.append(FileDiff(old_path, new_path, tuple(hunks), tuple(header), copy=copy))
    return i


def _parse_hunk(lines, i, what, name, number, hunks) -> int:
    m = _HUNK_HEADER.match(lines[i])
    where = f"{what}: {name}: hunk #{number}"
    if not m:
        raise MailError(f"{where}: malformed hunk header {lines[i]!r}")
    if any(len(n) > 20 for n in m.groups()[:4] if n):  # (int() refuses 4300 digits; the header is too long to quote)
        raise MailError(f"{where}: line numbers past {MAX_LINE:,} in its header, not read")
    old_start, new_start = int(m.group(1)), int(m.group(3))
    old_count = 1 if m.group(2) is None else int(m.group(2))
    new_count = 1 if m.group(4) is None else int(m.group(4))
    if max(old_start, new_start, old_count, new_count, old_start + old_count, new_start + new_count) > MAX_LINE:
        raise MailError(f"{where}: line numbers past {MAX_LINE:,} in {lines[i]!r}, not read")
    if (old_start == 0 and old_count) or (new_start == 0 and new_count):
        raise MailError(f"{where}: malformed hunk header {lines[i]!r}: line 0 with lines in it")
    header = lines[i]
    i += 1
    body: list[tuple[str, str]] = []
    olds = news = 0
    old_eol = new_eol = False
    while olds < old_count or news < new_count:
        if i >= len(lines):
            raise MailError(f"{where}: truncated ({olds} of {old_count} old and {news} of "
                            f"{new_count} new lines)")
        line = lines[i]
        op, text = (line[:1], line[1:]) if line else (" ", "")  # mailers drop a lone space
        if op == " ":
            olds += 1
            news += 1
        elif op == "-":
            olds += 1
        elif op == "+":
            news += 1
        elif op == "\\":  # '\ No newline at end of file' for the line before
            old_eol, new_eol = _no_eol(body, old_eol, new_eol)
            i += 1
            continue
        else:
            raise MailError(f"{where}: truncated or corrupt at {line!r}")
        if olds > old_count or news > new_count:
            raise MailError(f"{where}: truncated or corrupt: its lines do not add up to the "
                            f"header's {old_count} old and {new_count} new lines")
        body.append((op, text))
        i += 1
    if i < len(lines) and lines[i].startswith("\\"):
        old_eol, new_eol = _no_eol(body, old_eol, new_eol)
        i += 1
    hunks.append(Hunk(number, old_start, old_count, new_start, new_count, header, tuple(body),
                      old_eol, new_eol))
    return i


def _no_eol(body, old_eol, new_eol):
    last = body[-1][0] if body else " "
    return old_eol or last in (" ", "-"), new_eol or last in (" ", "+")
