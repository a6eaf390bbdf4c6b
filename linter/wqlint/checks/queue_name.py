"""A queue's name as the kernel prints it (the format of its allocation with the arguments
that are known filled in), for the rules' messages about a queue."""
from __future__ import annotations

import re

from wqlint.scan.values import Alt, CpuCount, Param, Tunable, Unknown, evaluate, strings_of, walk


# A conversion of the kernel's vsnprintf(): flags, width, precision, length, conversion.
_SPEC = re.compile(r"%([-+ #0]*)(\d+|\*)?(?:\.(\d*|\*))?(hh|h|ll|l|z|Z|t|j|L|q)?([a-zA-Z%])")


def kernel_name(site, ctx=None) -> tuple:
    """(the queue's name as the kernel prints it, where the arguments it could not fill in come
    from). The format with each argument that is one known string or number filled in
    (alloc_ordered_workqueue("%s", WQ_MEM_RECLAIM, "fc_rport_eq") is fc_rport_eq), else kept
    as written ("ntfc%d.%d.%d", its arguments named); a name held in a variable is the one
    format it comes from, filled in the same way from the arguments printed with it (a local
    buffer snprintf() fills: "zfcp_q_%s"). With the rules' context, worked out once for every
    finding naming the site (a millisecond each: its values are folded)."""
    return ctx.once(_kernel_name, site) if ctx is not None else _kernel_name(site)


def _kernel_name(site, _ctx=None) -> tuple:
    written = site.queue.strip('"') if site.queue.startswith('"') else site.queue
    if site.name is None:
        return written, ""
    fmt = _one_string(site.name.fmt)
    if not fmt:
        printed = [v for v in walk(site.name.fmt) if isinstance(v, Unknown) and v.printed is not None]
        text = _one_string(printed[0].printed) if len(printed) == 1 else ""
        return _filled(text, list(printed[0].printed_args)) if text else (written, "")
    if site.queue.startswith('"') or site.name.args:
        return _filled(fmt, list(site.name.args))
    return fmt, ""


def _filled(fmt: str, args: list) -> tuple:
    """(fmt with the arguments that are known filled in, where the others come from); fmt as
    it is when a width or precision is an argument, or an argument is missing (still to come
    from a variadic macro's callers)."""
    out, origins, at = [], [], 0
    for m in _SPEC.finditer(fmt):
        out.append(fmt[at:m.start()])
        at = m.end()
        flags, width, prec, _length, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        if "*" in (width or "") + (prec or "") or not args:
            return fmt, ""
        arg = args.pop(0)
        text = _printed(arg, flags, width, prec, conv)
        if text is None:
            out.append(m.group())
            origins.append(f"{m.group()} from {_origin(arg)}")
        else:
            out.append(text)
    out.append(fmt[at:])
    return "".join(out), ", ".join(origins)


def _printed(value, flags: str, width, prec, conv: str):
    """What the conversion prints of value, when value is one string or one number (None:
    not known, or a conversion read here as the kernel would not print it)."""
    spec = "%" + flags + (width or "") + ("." + prec if prec is not None else "")
    if conv == "s":
        text = _one_string(value)
        return (spec + "s") % text if text else None
    if conv not in "diuxXc" or "#" in flags or any(isinstance(v, (CpuCount, Tunable)) for v in walk(value)):
        return None
    got, complete = evaluate(value, 1)
    if not complete or len(got) != 1:
        return None
    number = next(iter(got))
    if number < 0 and conv in "uxX" or conv == "c" and not 0 < number < 128:
        return None
    return (spec + ("d" if conv in "iu" else conv)) % number


def _origin(value) -> str:
    """Where an argument of a name comes from, as its resolution says: through a macro's
    variable arguments (an Alt of one option for each step), where the caller's argument
    comes from."""
    seen = ""
    while isinstance(value, Alt) and len(value.options) == 1:
        seen = value.step.note if value.step is not None else seen
        value = value.options[0]
    if isinstance(value, Param):
        return f"parameter '{value.name}' of {value.function}()"
    if value.step is not None:
        return value.step.note
    return getattr(value, "why", "") or seen or "a value not known"


def _one_string(value) -> str:
    """The one string value can be, '' when it is not known to be one."""
    texts, complete = strings_of(value)
    return next(iter(texts)).decode("utf-8", "replace") if complete and len(texts) == 1 else ""


def names(sites, fallback: tuple = (), ctx=None) -> tuple:
    """(names, origins): the names of the queues of sites, each once, in order (those of
    fallback when no site is known), and where the arguments not filled in come from."""
    named = {kernel_name(s, ctx) for s in sites}
    return tuple(sorted({n for n, _ in named})) or tuple(fallback), sorted({o for _, o in named if o})


def shown(sites, fallback: tuple = (), ctx=None) -> str:
    """The names() of sites as a message gives them."""
    found, origins = names(sites, fallback, ctx)
    return "/".join(found) + (f" (named with {'; '.join(origins)})" if origins else "")
