"""A plain-text reply to each patch mail that introduces findings, ready for git send-email.

Laid out like the kernel test robot's reports: a greeting, the list of new warnings prefixed
by '>>', then the patch quoted with '> ' and each comment right under the line it is about,
with the chain that leads there, the proposed migration and the `wqlint explain` pointer.
Prose is wrapped at 72 columns; quoted patch lines are kept as they are. Several replies
(one per patch of a series) are written as one mbox.
"""
from __future__ import annotations

import re
import textwrap
from itertools import groupby

from wqlint import kversion, review_paths as paths
from wqlint.finding import printable
from wqlint.mail import format_address

WIDTH = 72
QUOTE_BEFORE = 8  # lines of the hunk quoted above a commented line; '[...]' for the rest
MBOX_FROM = "From wqlint Mon Sep 17 00:00:00 2001"
SIGNATURE = "-- \nwqlint: checks of the kernel's workqueue API"


def _wrap(text: str, indent: str = "", hanging: str = "") -> list:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=hanging or indent,
                         break_long_words=True, break_on_hyphens=False) or [indent.rstrip()]


def _headers(patch) -> list:
    # formataddr quotes a name with specials (a ':' would make the rest a group)
    to = patch.author_address and (format_address(patch.author, patch.author_address)
                                   if patch.author and patch.author != patch.author_address
                                   else patch.author_address)
    cc = [r for r in patch.recipients if patch.author_address not in r] if patch.author_address \
        else list(patch.recipients)
    out = [MBOX_FROM]
    if to:
        out.append(f"To: {to}")
    if cc:
        out.append("Cc: " + ",\n    ".join(cc))
    out.append(f"Subject: Re: {patch.subject}" if patch.subject else "Subject: wqlint review")
    if patch.message_id:
        refs = list(dict.fromkeys(list(patch.references) + [patch.message_id]))
        out.append(f"In-Reply-To: {patch.message_id}")
        out.append("References: " + "\n ".join(refs))
    out += ["MIME-Version: 1.0", "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: 8bit", ""]
    return out


def _alike(c):
    """What makes comments on one line one comment: the same rule, message and change, each
    about another queue than the line's own call (a call's own comment stays apart)."""
    return (c.finding.rule_id, c.finding.message, c.what, id(c) if c.in_call else None)


def _places(findings) -> str:
    """'a.c:10, 12 and b.c:7': the calls, each file named once."""
    by_file: dict = {}
    for f in findings:
        by_file.setdefault(f.path, []).append(str(f.line))
    parts = [f"{path}:{', '.join(lines)}" for path, lines in by_file.items()]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _comment(c, others=()) -> list:
    f = paths.shown(c.finding, c.chain).shown()
    out = [""]
    if c.what:
        out += _wrap(sentence(printable(c.what))) + [""]
    if others:
        out += _wrap(f"This line reaches {len(others) + 1} workqueues, allocated at "
                     f"{_places([f] + [o.finding.shown() for o in others])}:")
    elif not c.in_call and c.chain:
        out += _wrap(f"This line is a step of the path to the wait at {f.path}:{f.line}:")
    elif not c.in_call:
        out += _wrap(f"This line reaches the workqueue allocated at {f.path}:{f.line}:")
    out += _wrap(f"{f.severity}: {f.message} [{f.rule_id}]")
    if f.chain:
        heading = "The path, step by step" if c.chain else "Resolution chain"
        out += ["", f"{heading}{f' (of {f.path}:{f.line})' if others else ''}:"]
        for step in f.chain:
            out += _wrap(f"{step.path}:{step.line}: {step.note}", "  ", "      ")
    flags = flag_steps(c)
    if flags:
        out += ["", "The flags:"]
        for step in (s.shown() for s in flags):
            out += _wrap(f"{step.path}:{step.line}: {step.note}", "  ", "      ")
    if f.migration:
        out.append("")
        out += _wrap(f"Suggested migration: {f.migration}")
    out += ["", f"Details: wqlint explain {f.rule_id}", ""]
    return out


def flag_steps(c) -> list:
    """The resolution of the flags, when the comment is about a change there: the chain
    shown is max_active's."""
    f = c.finding
    steps = [s for s in f.flags_chain if s not in f.chain]
    return steps if any((s.path, s.line) == (c.path, c.line) for s in steps) else []


def sentence(text: str) -> str:
    """'this patch drops ...' as a sentence of prose."""
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _quote(op: str, text: str) -> str:
    return ("> " + op + text).rstrip()


def _statement_end(lines, li: int) -> int:
    """The last line of the statement starting at li, so that a comment does not cut a call
    in two (at most a few lines further)."""
    end = li
    while (end + 1 < len(lines) and end - li < 5 and lines[end + 1][0] != "-"
           and not lines[end][1].rstrip().endswith((";", "{", "}", "\\")) and lines[end][1].strip()):
        end += 1
    return end


_TITLES = frozenset({"dr", "dr.", "mr", "mr.", "mrs", "mrs.", "ms", "ms.", "prof", "prof.", "sir"})


def first_name(display: str) -> str:
    """The first name to greet in a display name, '' when it names no person: "'Jane Doe'
    via linux-demo" and "Doe, Jane" are Jane; a single word (a handle, a team), an address, a
    word that is not capitalised letters (a bot) give ''."""
    name = re.sub(r"(?<!\s)\s+via\s+\S.*$", "", display.strip(), flags=re.I).strip().strip("'\"").strip()
    if name.count(",") == 1:
        last, first = name.split(",")
        name = f"{first.strip()} {last.strip()}"
    words = [w for w in name.split() if w.lower() not in _TITLES]
    if len(words) < 2 or "@" in name:
        return ""
    first = words[0]
    if not re.fullmatch(r"[^\W\d_][^\W\d_'-]*(?:[-'][^\W\d_]+)*", first) or not first[0].isupper() \
            or (len(first) > 1 and first.isupper()):
        return ""
    return first


def _summary(c, catalogue, version) -> list:
    """'>> path:line:col: severity: message [rule]', the rule's message (its detail is in the
    comment below), wrapped at WIDTH."""
    f = c.finding.shown()
    text = catalogue[f.rule_id].message_on(version) if f.rule_id in catalogue.ids() else f.message
    return _wrap(f">> {f.path}:{f.line}:{f.col}: {f.severity}: {text} [{f.rule_id}]", "", "   ")


def _reply(review, patch, comments, catalogue) -> list:
    name = first_name(patch.author)
    n = len(comments)
    version = kversion.show(review.kernel_version)
    if review.kernel_version_source == "Makefile":
        version += " (from the tree's Makefile)"
    body = [f"Hi {name}," if name else "Hi,", ""]
    body += _wrap(f"wqlint noticed the following workqueue {'problem' if n == 1 else 'problems'} "
                  f"in this patch, with the semantics of {version}:")
    if not review.tree:
        body += [""] + _wrap("The patch was reviewed without its tree: values defined outside "
                             "the lines it shows were not followed.")
    body += [""]
    for c in comments:
        body += _summary(c, catalogue, review.kernel_version)
    body.append("")
    by_file = groupby(comments, key=lambda c: c.origin.file)
    for fi, in_file in by_file:
        fdiff = patch.files[fi]
        heads = [h for h in fdiff.header if h.startswith("diff --git ")]
        body.append(_quote("", heads[0]) if heads else _quote("", f"+++ b/{printable(fdiff.path)}"))
        for hi, in_hunk in groupby(in_file, key=lambda c: c.origin.hunk):
            hunk = fdiff.hunks[hi]
            body.append(_quote("", hunk.header))
            done = 0
            for li, at_line in groupby(in_hunk, key=lambda c: c.origin.line):
                first = max(done, li - QUOTE_BEFORE + 1)
                if first > done:
                    body.append("> [...]")
                last = max(li, done - 1, _statement_end(hunk.lines, li))
                body += [_quote(op, text) for op, text in hunk.lines[first:last + 1]]
                # Comments alike on one line (a field that several queues read) are one comment.
                groups: dict = {}
                for c in at_line:
                    groups.setdefault(_alike(c), []).append(c)
                for first, *others in groups.values():
                    body += _comment(first, others)
                done = last + 1
            if done < len(hunk.lines):
                body.append("> [...]")
                body.append("")
    while body and body[-1] == "":
        body.pop()
    return _headers(patch) + body + ["", SIGNATURE, ""]


def format(review, catalogue) -> str:
    out = []
    ordered = sorted(review.comments, key=lambda c: (c.origin.patch, c.origin.file, c.origin.hunk,
                                                     c.origin.line, c.finding.sort_key()))
    for number, comments in groupby(ordered, key=lambda c: c.origin.patch):
        out += _reply(review, review.patches[number - 1], list(comments), catalogue)
    return "\n".join(out)
