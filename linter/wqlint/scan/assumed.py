"""What the whole path of a work function may take as known where it starts (scan.guards'
facts), beyond what its own statements set:

- no call on the path drops the last reference to an object (api.LAST_REFERENCE): the work
  holds a reference to what it works on while it runs;
- on a queue that is freezable wherever the work is put (api.FREEZABLE_FLAG), the system is
  not suspended while it runs;
- what every call queueing the work sets before it (a bit cleared, a member stored);
- a member a teardown stores a value into only right after it waited for the work itself
  (`cancel_delayed_work_sync(&t->work); atomic_set(&t->state, 0);`), and that every call
  queueing the work (but the work's own) stores anew before it, never holds that value while
  the work runs.

And a path that passes a wait of the work for itself goes no further (unblocked()).
"""
from __future__ import annotations

import re
from typing import Optional

from wqlint import api
from wqlint.finding import Step
from wqlint.scan import guards, parser
from wqlint.scan.scope import Scope, scope_of
from wqlint.scan.search import covering
from wqlint.scan.values import evaluate

_QUEUEING = frozenset(set(api.QUEUEING) | set(api.SCHEDULE_WORK_ARG))
_NOT_QUEUEING = frozenset(set(api.SELF_WAITS) | set(api.WORK_BINDERS) | {
    "cancel_work", "cancel_delayed_work", "disable_work", "disable_delayed_work", "container_of",
    "to_delayed_work", "work_pending", "delayed_work_pending", "work_busy", "INIT_WORK", "INIT_DELAYED_WORK"})
_WAITS_FOR_ITEM = tuple(name for name, (what, _) in api.SELF_WAITS.items() if what == "work")
_VALUE = r"(-?\d+|true|false|NULL|[A-Z_][A-Z0-9_]*)"
MAX_BEFORE = 200  # characters before an item's name looked at for the call it is given to
# A store of a member (as text: `x->m = v;`, atomic_set(&x->m, v), WRITE_ONCE(x->m, v)).
_STORE = (r"(?:->{m}[ \t]*=(?!=)([^;\n]*);"
          r"|\b(?:atomic_set|atomic_long_set|atomic64_set)\([ \t]*&[\w.>-]*->{m}[ \t]*,([^;\n]*)\)[ \t]*;"
          r"|\bWRITE_ONCE\([\w.>-]*->{m}[ \t]*,([^;\n]*)\)[ \t]*;)")
# A wait for a work item, then the statement right after it storing a member.
_WAIT_THEN_STORE = (r"\b(?:{waits})\([ \t]*&{item}[ \t]*\)[ \t]*;\s*"
                    r"(?:[\w.>-]*->(\w+)[ \t]*=(?!=)[ \t]*{value}[ \t]*;"
                    r"|(?:atomic_set|atomic_long_set|atomic64_set)\([ \t]*&[\w.>-]*->(\w+)[ \t]*,[ \t]*{value}[ \t]*\)"
                    r"|WRITE_ONCE\([\w.>-]*->(\w+)[ \t]*,[ \t]*{value}[ \t]*\))")


def assumed(index, model, binding, brel: str, bline: int, fn: str) -> dict:
    """The facts the path of work function fn (bound at brel:bline to binding: (Key, Step),
    or None) starts with."""
    facts: dict = {guards.LAST_REF: 0}
    src = index.source(brel)
    if binding is None or src is None:
        return facts
    facts.update(_stopped(index, model, binding[0], brel, fn))
    target = model.target_of(api.FLUSH_CALLS_BY_NAME["flush_work"], binding[0], Scope(src, src.chunk_at(bline)))
    if target is None or not target.complete:
        return facts
    if target.queued:
        agreed: Optional[dict] = None
        for step in target.queued:
            got = _left_by(index, step, binding[0].name)
            agreed = got if agreed is None else {k: v for k, v in agreed.items() if got.get(k) == v}
        facts.update(agreed or {})
    if (target.sites or target.system) and (_always_has(model, target.sites, api.FREEZABLE_FLAG) if target.sites
                                            else target.system in api.FREEZABLE_SYSTEM_QUEUES):
        facts[guards.SUSPENDED] = 0
    return facts


def _always_has(model, sites, flag: str) -> bool:
    """Is flag set in every value the flags of each of sites may take?"""
    bit = model.engine.bits().bit(flag)
    for site in sites:
        values, complete = evaluate(site.flags, 1)
        if not bit or not complete or not values or any(not v & bit for v in values):
            return False
    return True


def _left_by(index, step: Step, item: str) -> dict:
    """The members and bits the function of a queueing call at step sets before it."""
    call, scope = _queueing_call(index, step, item)
    if call is None or scope is None:
        return {}
    return {k: v for k, v in guards.facts_before(call, scope.node, {}).items() if k.startswith(("->", "bit:"))}


def _queueing_call(index, step: Step, item: str):
    """(call node, its function's Scope) of the call at step queueing the work item named
    item (a call of the API, or of a wrapper given the item); (None, None) if none."""
    src = index.source(step.path)
    if src is None:
        return None, None
    chunk = src.chunk_at(step.line)
    calls = [caps["call"] for _, caps in parser.matches("calls", chunk.root)
             if chunk.line_of(caps["call"]) == step.line]
    for call in sorted(calls, key=lambda c: (parser.text(c.child_by_field_name("function")) not in _QUEUEING,
                                             c.start_byte)):
        args = call.child_by_field_name("arguments")
        if args is not None and re.search(r"\b" + re.escape(item) + r"\b", parser.text(args)):
            scope = scope_of(chunk, call)
            return (call, scope) if scope.kind == "function" else (None, None)
    return None, None


def _stopped(index, model, key, brel: str, fn: str) -> dict:
    """{"->member": (NOT, value)} of the members that hold value only once the work stopped
    for good: each store of value is the statement right after a wait for the work item,
    and each call given the item (that may queue it: the API's or a wrapper) outside the
    work function stores the member first."""
    item = key.name
    files = [brel] + [r for r in model.calls.files_near(brel) if r != brel]
    found: dict = {}  # member -> value
    for rel in files:
        for waited, member, value in _waits_then_stores(index, model.after_waits, rel):
            if waited == item:
                found.setdefault(member, set()).add(value)
    if not found:
        return {}
    texts = [(rel, index.text(rel) or b"") for rel in files]
    after = re.compile(wait_then_store(item))
    out = {}
    for member, values in found.items():
        if len(values) != 1:
            continue
        value = next(iter(values))
        store = re.compile(store_of(member))
        stores = sum(1 for _, data in texts for x in store.finditer(data) if x.group(0) and
                     (x.group(1) or x.group(2) or x.group(3) or b"").strip().decode() == value)
        after_waits = sum(1 for _, data in texts for x in after.finditer(data)
                          if (x.group(1) or x.group(3) or x.group(5) or b"").decode() == member)
        if stores != after_waits or not all(_stores_first(index, step, key, member, fn)
                                            for step in _given(texts, item)):
            continue
        out["->" + member] = (guards.NOT, _number(value))
    return out


def _waits_then_stores(index, memo: dict, rel: str) -> tuple:
    """((item, member, value)) of each wait for a work item in rel followed by a store of a
    member (_WAIT_THEN_STORE), read once per file (memo: rel -> them): every work of its
    subsystem asks."""
    got = memo.get(rel)
    if got is None:
        data = index.text(rel) or b""
        got = memo[rel] = tuple(
            (m.group(1).decode(), (m.group(2) or m.group(4) or m.group(6)).decode(),
             (m.group(3) or m.group(5) or m.group(7)).decode())
            for m in _ANY_WAIT_THEN_STORE.finditer(data)) if any(w in data for w in _WAIT_WORDS) else ()
    return got


def _given(texts: list, item: str) -> list:
    """Steps of the calls given &x->item other than the API's waits, cancels and bindings:
    the calls that may queue it (the last call opened before it on its line)."""
    member = b"->" + item.encode()
    out = []
    for rel, data in texts:
        at = data.find(member)
        while at >= 0:
            end = at + len(member)
            if end >= len(data) or not (data[end:end + 1].isalnum() or data[end:end + 1] == b"_"):
                start = max(data.rfind(b"\n", 0, at) + 1, at - MAX_BEFORE)
                callee = _last_call(data[start:at].decode("utf-8", "replace"))
                if callee and callee not in _NOT_QUEUEING:
                    out.append(Step(rel, data.count(b"\n", 0, at) + 1, "", ""))
            at = data.find(member, end)
    return out


def _last_call(text: str) -> str:
    """The name of the last call opened in text and not closed."""
    depth, i = 0, len(text) - 1
    while i >= 0:
        c = text[i]
        if c == ")":
            depth += 1
        elif c == "(":
            if depth == 0:
                head = text[:i].rstrip(" \t")
                j = len(head)
                while j > 0 and (head[j - 1].isalnum() or head[j - 1] == "_"):
                    j -= 1
                return head[j:]
            depth -= 1
        i -= 1
    return ""


def _stores_first(index, step: Step, key, member: str, fn: str) -> bool:
    """Does the function of the queueing call at step store member before it (or is it the
    work function itself, which runs past its own tests before queueing itself again, or a
    function of another struct's member of that name)?"""
    call, scope = _queueing_call(index, step, key.name)
    if call is None or scope is None:
        return False
    if scope.name == fn or (key.tag and re.search(rb"\bstruct\s+" + re.escape(key.tag.encode()) + rb"\b",
                                                  scope.node.text) is None):
        return True
    text = scope.node.text[:call.start_byte - scope.node.start_byte]
    return re.search(store_of(member), text) is not None


def store_of(member: str) -> bytes:
    """The pattern of a store of member (_STORE)."""
    return _STORE.format(m=re.escape(member)).encode()


def wait_then_store(item: Optional[str]) -> bytes:
    """The pattern of a wait for item, then a store of a member (_WAIT_THEN_STORE); with
    item None, of a wait for any item, its name the first group (before those of the store)."""
    return _WAIT_THEN_STORE.format(waits="|".join(_WAITS_FOR_ITEM), value=_VALUE,
                                   item=r"(?:[\w.>-]*[.>-])?(\w+)" if item is None
                                   else r"[\w.>-]*\b" + re.escape(item)).encode()


# A text without one of these has no wait for an item (a quick look first).
_WAIT_WORDS = tuple(n.encode() for n in covering(list(_WAITS_FOR_ITEM)))
_ANY_WAIT_THEN_STORE = re.compile(wait_then_store(None))


def _number(value: str):
    """The constant a value's text is, as scan.guards compares them."""
    if value in ("true", "false", "NULL"):
        return 1 if value == "true" else 0
    try:
        return int(value, 0)
    except ValueError:
        return value


def unblocked(flows: list, waits: list) -> list:
    """The flows whose path is not cut earlier by a wait of the same work for itself: where
    a SelfWait and a Flow of one work binding leave their common path at calls of one
    function, and the wait's call comes first, the work hangs there and never reaches the
    flush (the SelfWait is the finding)."""
    by_work: dict = {}
    for w in waits:
        by_work.setdefault((w.function, w.bound.path, w.bound.line), []).append(tuple(w.calls) + (w.wait,))
    out = []
    for f in flows:
        steps = tuple(f.calls) + (f.flush,)
        if not any(_cut(steps, ws) for ws in by_work.get((f.function, f.bound.path, f.bound.line), ())):
            out.append(f)
    return out


def _cut(flow: tuple, wait: tuple) -> bool:
    """Does the path wait leave the path flow, in the same function, at an earlier call?"""
    for a, b in zip(flow, wait):
        if (a.path, a.line) != (b.path, b.line):
            return a.path == b.path and b.line < a.line
    return False
