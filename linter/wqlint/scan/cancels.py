"""Where the code cancels a work item that a work's path flushes: the evidence that a cancel
may stand for that flush, for the advice of the rule judging the flow.

Only a flush of one work item (a Target of what "work") is looked at. A cancel (api.CANCELS)
counts when its argument is the same item as the flush's, decided from the C as the work
model reads it (WorkModel.key_of(): the Key an expression names, with the struct tag its
object is declared with):
- a member of a struct: the same member of the same struct type, that type known at both
  (a member of that name in another struct, or of an object whose type is not declared where
  it is used, is not the same item); an object an accessor macro gives is of the struct its
  value is cast to (`#define HFS_SB(sb) ((struct hfs_sb_info *)(sb)->s_fs_info)`); looked for
  in the flush's file and the files near it;
- a variable: the same name in the flush's own file, not a local nor a parameter of the
  function cancelling, and named at the flush itself (not a wrapper's caller's variable).
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Optional

from wqlint import api
from wqlint.scan import parser
from wqlint.scan.scope import Scope, scope_of
from wqlint.scan.site import Cancel, Flow, Key
from wqlint.scan.source import call_at
from wqlint.scan.structs import struct_type_name

_CANCEL_RE = re.compile(rb"\b(" + "|".join(sorted(api.CANCELS, key=len, reverse=True)).encode() + rb")\s*\(")
_CANCELS = {name: name for name in api.CANCELS}
ARG_SPAN = 200  # bytes after a cancel's '(' looked at for the item's name before it is parsed
MAX_ROUNDS = 4  # searches of the tree for the accessor macros' definitions


class Cancels:
    """The cancels of the flows' flushed items, each looked for once per flush."""

    def __init__(self, model):
        self.model = model
        self._memo: dict = {}  # (flush path, line, column, Key, flush text) -> Optional[Cancel]

    def with_cancels(self, flows: list) -> list:
        """flows, each flush of one item carrying a cancel of that item the code makes
        (the tree searched round by round for the macros read on the way)."""
        index = self.model.index
        out = flows
        for _ in range(MAX_ROUNDS):
            misses = index.misses
            out = [self._with_cancel(f) if isinstance(f, Flow) else f for f in flows]
            if index.misses == misses or not index.fetch_pending():
                break
        return out

    def _with_cancel(self, flow: Flow) -> Flow:
        key = flow.target.key
        if flow.target.what != "work" or key is None:
            return flow
        ident = (flow.path, flow.line, flow.col, key, flow.waited)
        got = self._memo.get(ident, False)
        if got is False:
            misses = self.model.index.misses
            got = self.cancel_of(flow.path, self._flushed_key(flow, key), flow.waited)
            if self.model.index.misses == misses:
                self._memo[ident] = got
        return replace(flow, cancel=got) if got is not None else flow

    def _flushed_key(self, flow: Flow, key: Key) -> Key:
        """key, with the struct an accessor macro at the flush gives its object when the
        work model's key does not name one."""
        src = self.model.index.source(flow.path)
        found = call_at(src, flow.line, flow.col) if src is not None and key.kind == "member" and not key.tag \
            else None
        if found is None:
            return key
        chunk, call = found
        args = parser.args(call)
        tag = self._accessor_tag(args[0], scope_of(chunk, call)) if args else ""
        return Key(key.kind, key.name, tag) if tag else key

    def cancel_of(self, path: str, key: Key, waited: str) -> Optional[Cancel]:
        """The first cancel of the item key, flushed in path as waited, in path and then in
        the files near it (a member), or in path alone (a variable named at the flush)."""
        if key.kind == "member":
            if not key.tag:
                return None  # the struct is not known: any member of that name could be it
            files = [path] + [rel for rel in self.model.calls.files_near(path) if rel != path]
        elif key.kind == "var" and re.search(rf"\b{re.escape(key.name)}\b", waited):
            files = [path]
        else:
            return None
        for rel in files:
            got = self._in_file(rel, key)
            if got is not None:
                return got
        return None

    def _in_file(self, rel: str, key: Key) -> Optional[Cancel]:
        src = self.model.index.source(rel)
        if src is None or key.name.encode() not in src.data:
            return None
        name = re.compile(rb"\b" + re.escape(key.name.encode()) + rb"\b")
        for m in _CANCEL_RE.finditer(src.data):
            if not name.search(src.data, m.end(), m.end() + ARG_SPAN):
                continue
            line = src.line_at(m.start())
            for call, _name, chunk in self.model.calls_around(rel, line, _CANCELS):
                if chunk.line_of(call) != line:
                    continue
                got = self._same(call, chunk, key)
                if got is not None:
                    return got
        return None

    def _same(self, call, chunk, key: Key) -> Optional[Cancel]:
        """The Cancel that call is, when its item is key."""
        args = parser.args(call)
        scope = scope_of(chunk, call)
        if not args or scope.kind != "function":
            return None
        got = self.model.key_of(args[0], scope)
        if got is None or got.kind != key.kind or got.name != key.name:
            return None
        if got.kind == "member" and not got.tag:
            got = Key(got.kind, got.name, self._accessor_tag(args[0], scope))
        if key.kind == "member" and got.tag != key.tag:
            return None  # another struct's member, or one whose struct is not known here
        if key.kind == "var" and key.name in scope.local_decls():
            return None  # a local of that name: another item
        return Cancel(parser.text(call.child_by_field_name("function")), chunk.source.rel,
                      chunk.line_of(call), scope.name)

    def _accessor_tag(self, node, scope: Scope) -> str:
        """The struct of the object whose member an item expression names, when that object
        is what a function-like macro gives and the macro's value is a cast to a struct
        pointer; '' otherwise."""
        node = parser.inner(node)
        if node is not None and node.type == "field_expression":
            obj = parser.inner(node.child_by_field_name("argument"))
            if parser.text(node.child_by_field_name("field")) == "work" and obj is not None \
                    and obj.type == "field_expression":
                node, obj = obj, parser.inner(obj.child_by_field_name("argument"))  # a delayed_work's own work
        else:
            return ""
        fn = obj.child_by_field_name("function") if obj is not None and obj.type == "call_expression" else None
        if fn is None or fn.type != "identifier":
            return ""
        for value, _ in self.model.resolver.macros.accessor_values(parser.text(fn), scope.src):
            value = parser.inner(value)
            if value is not None and value.type == "cast_expression":
                return struct_type_name(parser.text(value.child_by_field_name("type"))) or ""
        return ""
