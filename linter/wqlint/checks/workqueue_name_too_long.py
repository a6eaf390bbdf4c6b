"""workqueue-name-too-long: a queue's name that does not fit wq->name.

__alloc_workqueue() formats the name with vsnprintf() into wq->name, WQ_NAME_LEN bytes with
the NUL: a longer name is cut to WQ_NAME_LEN - 1 bytes, with a pr_warn_once since v6.9
(31c89007285d), silently before. The format and its arguments are the Site's name
(scan.site.NameArgs), resolved like flags and max_active. Decided only where they resolve:
string literals (joined, from macros, locals and const arrays), %s of such a string, %d and
friends of a known integer. A part that does not resolve counts for the least it can print
(a string nothing, a number one digit), so a finding is one the name cannot escape; a name
that only some values make too long is reported only when every part has a known bound.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Optional

from wqlint.checks.common import applies, finding, via_text
from wqlint.checks.context import CheckContext
from wqlint.finding import Via
from wqlint.scan.site import Site
from wqlint.scan.values import Alt, CpuCount, Tunable, evaluate, steps_in, strings_of, walk

RULE = "workqueue-name-too-long"
READS = frozenset({"name"})

_SPEC = re.compile(rb"%([-+ #0]*)(\d+|\*)?(?:\.(\d*|\*))?(hh|h|ll|l|z|Z|t|j|L|q)?([a-zA-Z%])")
_INTS = b"diuxXoc"


@dataclass
class Part:
    """What one piece of the format prints: at least lo bytes, at most hi (None: unbounded),
    exactly text when known."""

    lo: int
    hi: Optional[int]
    text: Optional[bytes]
    why: str = ""  # for a part that does not resolve: what it is


def check(site: Site, ctx: CheckContext) -> list:
    if not isinstance(site, Site) or site.name is None or not applies(site, ctx, RULE):
        return []
    limit = ctx.name_len
    formats, complete = strings_of(site.name.fmt, _distrusted)
    if not formats or not complete:
        return []  # the format itself does not resolve: undecided
    measured = []
    for fmt in sorted(formats):
        parts = _measure(fmt, site.name)
        if parts is None:
            return []  # a conversion wqlint does not read
        measured.append(parts)
    los = [sum(p.lo for p in parts) for parts in measured]
    his = [_total_hi(parts) for parts in measured]
    chain = list(site.prefix) + [site.name.step] + _name_steps(site.name)
    if ctx.name_len_step is not None:
        chain.append(ctx.name_len_step)
    if min(los) >= limit:
        parts = measured[los.index(min(los))]
        detail = _detail(parts, min(los), None, limit, site)
        return [finding(site, ctx, RULE, detail, chain, role="name")]
    bounded = [h for h in his if h is not None]
    if len(bounded) == len(his) and max(bounded) >= limit:
        # Only some values of the arguments make it too long: every part is bounded, so this
        # is a real possibility, not a guess; said as a note.
        i = bounded.index(max(bounded))
        detail = _detail(measured[i], los[i], bounded[i], limit, site)
        f = finding(site, ctx, RULE, detail, chain, case="possible", role="name")
        return [replace(f, severity="note")]
    return []


def _total_hi(parts) -> Optional[int]:
    his = [p.hi for p in parts]
    return None if None in his else sum(h for h in his if h is not None)


def _distrusted(value) -> bool:
    """Values that may miss what the name really is: a struct field's assignments found in
    the tree (a field filled by snprintf() or strscpy() shows none), a module parameter, a
    global array that is not const (its initialiser may be overwritten at run time)."""
    if isinstance(value, Tunable):
        return True
    if not isinstance(value, Alt):
        return False
    step = value.step
    via = step.origin.via if step is not None and step.origin is not None else None
    if via is Via.FIELD:
        return True
    return step is not None and via is Via.GLOBAL and "[" in step.text.split("=")[0] \
        and not re.search(r"\bconst\b", step.text.split("=")[0])


def _ints(value) -> tuple:
    """(set of ints, complete) of a value formatted as a number."""
    if any(isinstance(v, (CpuCount, Tunable)) or _distrusted(v) for v in walk(value)):
        return set(), False
    return evaluate(value, 1)


def _measure(fmt: bytes, name) -> Optional[list]:
    """The Parts of the name a format makes with the name's arguments; None for a
    conversion wqlint does not read."""
    fmt = fmt.split(b"\0", 1)[0]  # vsnprintf() stops at the first NUL
    args = list(name.args)
    more = name.rest is not None  # arguments still to come from a variadic macro's callers

    def take():
        if args:
            return args.pop(0)
        return None

    parts, at = [], 0
    for m in _SPEC.finditer(fmt):
        if m.start() > at:
            lit = fmt[at:m.start()]
            parts.append(Part(len(lit), len(lit), lit))
        at = m.end()
        flags, width, prec, _length, conv = m.groups()
        if conv == b"%":
            parts.append(Part(1, 1, b"%"))
            continue
        w = 0
        if width == b"*":
            got, ok = _ints(take()) if args or not more else (set(), False)
            w = min(got) if ok and got and min(got) > 0 else 0
        elif width:
            w = int(width)
        p = None
        if prec == b"*":
            got, ok = _ints(take()) if args or not more else (set(), False)
            p = (min(got), max(got)) if ok and got and min(got) >= 0 else (0, None)
        elif prec is not None:
            p = (int(prec or b"0"),) * 2
        arg = take()
        if conv == b"s":
            part = _string(arg, p)
        elif conv in _INTS:
            part = _number(arg, conv, p, flags)
        elif conv == b"p":
            ext = re.findall(rb"^[a-zA-Z0-9]*", fmt[at:])[0]
            at += len(ext)  # the kernel's %p extensions (%pOF, %pM...): their letters are no text
            part = Part(0, None, None, f"%p{ext.decode()}")
        else:
            return None
        if w > part.lo:
            part = Part(w, max(w, part.hi) if part.hi is not None else None,
                        part.text if part.text is not None and len(part.text) >= w else None, part.why)
        parts.append(part)
    if at < len(fmt):
        parts.append(Part(len(fmt) - at, len(fmt) - at, fmt[at:]))
    return parts


def _string(arg, prec) -> Part:
    texts, ok = strings_of(arg, _distrusted) if arg is not None else (set(), False)
    if not texts or not ok:
        return Part(0, None if prec is None else prec[1], None, "a string wqlint cannot resolve")
    texts = {t.split(b"\0", 1)[0] for t in texts}
    if prec is not None:
        texts = {t[:prec[1]] for t in texts} if prec[1] is not None else texts
        lo = min(min(len(t) for t in texts), prec[0])
        hi = max(len(t) for t in texts)
        text = next(iter(texts)) if len(texts) == 1 and prec[0] == prec[1] else None
        return Part(lo, hi, text)
    lens = [len(t) for t in texts]
    return Part(min(lens), max(lens), next(iter(texts)) if len(texts) == 1 else None)


def _number(arg, conv, prec, flags) -> Part:
    got, ok = _ints(arg) if arg is not None else (set(), False)
    if not got or not ok or (conv in b"uxXo" and min(got) < 0) or flags.strip(b"-0"):
        # Unknown, or a form whose text wqlint does not spell (an unsigned negative, +, #):
        # at least one character, no bound.
        return Part(0 if prec == (0, 0) else 1, None, None, "a number wqlint cannot bound")
    if conv == b"c":
        return Part(1, 1, bytes([min(got) & 0xFF]) if len(got) == 1 else None)
    base = {b"x": "x", b"X": "X", b"o": "o"}.get(conv, "d")
    texts = {format(v, base).encode() for v in got}
    if prec is not None and prec[0] == prec[1]:
        texts = {(b"-" if t.startswith(b"-") else b"") + t.lstrip(b"-").rjust(prec[0], b"0")
                 if not (prec[0] == 0 and t == b"0") else b"" for t in texts}
    elif prec is not None:
        return Part(0, None, None, "a number with a variable precision")
    lens = [len(t) for t in texts]
    return Part(min(lens), max(lens), next(iter(texts)) if len(texts) == 1 else None)


def _name_steps(name) -> list:
    out = steps_in(name.fmt)
    for a in name.args:
        out += [s for s in steps_in(a) if s not in out]
    return out


def _detail(parts, lo, hi, limit, site: Site) -> str:
    known = b""
    for p in parts:
        if p.text is None:
            break
        known += p.text
    shown = "".join(_show(p) for p in parts)
    if hi is None:
        size = f"{lo} bytes" if all(p.text is not None for p in parts) else f"at least {lo} bytes"
    else:
        size = f"{lo} to {hi} bytes"
    text = f"'{shown}' is {size}, WQ_NAME_LEN {limit} keeps {limit - 1}"
    if hi is not None:
        text = "only for some values: " + text
    if hi is None and len(known) >= limit - 1:
        text += f": named '{_printable(known[:limit - 1])}'"
    unknown = sorted({p.why for p in parts if p.text is None and p.why})
    if unknown:
        text += f" (counting the least for {', '.join(unknown)})"
    return text + via_text(site)


def _show(part: Part) -> str:
    if part.text is not None:
        return _printable(part.text)
    return "<" + (f"{part.lo}" if part.hi == part.lo else f"{part.lo}-{part.hi if part.hi is not None else '?'}") + ">"


def _printable(text: bytes) -> str:
    return text.decode("utf-8", "backslashreplace").replace("\n", "\\n")
