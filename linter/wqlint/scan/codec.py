"""Typed values as JSON data, and back, checked against their declared types.

The index kept between runs (scan.store) holds resolved scans: Sites, Values, Steps. They
are stored as data only, directed by the types the dataclasses declare (their annotations):

- a dataclass instance is a JSON array: its class name, then its fields in order;
- a tuple, a list, a set or a frozenset is an array; a dict with str keys an object, any
  other dict an array of [key, value] pairs; bytes a str of latin-1 characters; an Enum
  member its value;
- the instances of the classes given as `shared` (Steps: one line of a chain is part of
  many values; Sites: an allocation is named by each flow on its queue) are kept once per
  value, in a table per class, and named by their position in it; a table's rows may name
  those of the tables before it.

Reading them back follows the same types: anything that is not what its place declares (an
unknown or unexpected class name, a missing or extra field, a wrong type, a number where a
string goes, a bool where a number goes, a position outside the table) makes the whole
value Invalid. A class is only ever built when the declared type of its place allows it:
nothing read can name code to run. A type the codec cannot describe (bare tuple, object)
is a programming error, found when the codec is built; a value it cannot store is
Unstorable.
"""
from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from typing import Callable, Optional

from wqlint import errors


class Invalid(errors.WqlintError):
    """Stored data that is not what its type declares."""


class Unstorable(errors.WqlintError):
    """A value that does not have the type declared for it."""


_NONE = type(None)


def _subclasses(cls) -> list:
    out, todo = [], [cls]
    while todo:
        c = todo.pop()
        if dataclasses.is_dataclass(c):
            out.append(c)
        todo.extend(c.__subclasses__())
    return out


def text_ok(s: str) -> bool:
    """Can s be written back as bytes (os.fsencode, surrogateescape)?"""
    if s.isascii():
        return True
    try:
        s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


class Codec:
    """Encoder and decoder of one type (and of what it holds)."""

    def __init__(self, hint, shared: tuple = ()):
        self.shared = tuple(shared)
        self._tables: Optional[dict] = None  # class -> {instance: position}, while encoding
        self._dtables: Optional[dict] = None  # class -> [instance], while decoding
        self._enc: dict = {}
        self._dec: dict = {}
        self._tags: dict = {}  # tag -> class, for every class met
        self._fields: dict = {}  # class -> [(name, hint)]
        self._encode = self._encoder(hint)
        self._decode = self._decoder(hint)
        self._shared_enc = {c: self._fields_encoder(c) for c in self.shared}
        self._shared_dec = {c: self._fields_decoder(c) for c in self.shared}

    # -- the public side -------------------------------------------------------------------
    def encode(self, value) -> dict:
        """{"shared": {tag: [...]}, "value": ...}: JSON data."""
        tables: dict = {c: {} for c in self.shared}
        self._tables = tables
        try:
            value_json = self._encode(value)
            shared = {}
            for c, table in tables.items():
                shared[c.__name__] = [row for _at, row in table.values()]
        except RecursionError:
            raise Unstorable("nested too deep") from None
        finally:
            self._tables = None
        return {"shared": shared, "value": value_json}

    def decode(self, data, adjust: Optional[dict] = None):
        """The value of encode()'s data, or Invalid. adjust: {shared class: f}, each instance
        of the table read back as f(instance) (a Step's path as the reader names the file)."""
        try:
            if type(data) is not dict or set(data) != {"shared", "value"} or type(data["shared"]) is not dict \
                    or set(data["shared"]) != {c.__name__ for c in self.shared}:
                raise Invalid("not an encoded value")
            tables: dict = {}
            self._dtables = tables  # a table's rows may name the rows of the tables before it
            for c in self.shared:
                rows = data["shared"][c.__name__]
                if type(rows) is not list:
                    raise Invalid(f"{c.__name__}: not a table")
                dec = self._shared_dec[c]
                tables[c] = [dec(r) for r in rows]
                if adjust and c in adjust:
                    tables[c] = [adjust[c](v) for v in tables[c]]
            return self._decode(data["value"])
        except RecursionError:
            raise Invalid("nested too deep") from None
        except (TypeError, ValueError) as exc:  # a dataclass that refuses its fields
            raise Invalid(str(exc)) from None
        finally:
            self._dtables = None

    # -- building ----------------------------------------------------------------------------
    def _hints(self, cls) -> list:
        got = self._fields.get(cls)
        if got is None:
            hints = typing.get_type_hints(cls)
            got = self._fields[cls] = [(f.name, hints[f.name]) for f in dataclasses.fields(cls)]
        return got

    def _encoder(self, hint) -> Callable:
        key = hint
        got = self._enc.get(key)
        if got is not None:
            return got
        slot: list = []
        self._enc[key] = lambda v: slot[0](v)  # recursive types (Value holds Values)
        fn = self._make_encoder(hint)
        slot.append(fn)
        self._enc[key] = fn
        return fn

    def _decoder(self, hint) -> Callable:
        key = hint
        got = self._dec.get(key)
        if got is not None:
            return got
        slot: list = []
        self._dec[key] = lambda j: slot[0](j)
        fn = self._make_decoder(hint)
        slot.append(fn)
        self._dec[key] = fn
        return fn

    def _make_encoder(self, hint) -> Callable:
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if hint in (int, str, bool):
            def scalar(v, t=hint):
                if type(v) is not t:
                    raise Unstorable(f"{type(v).__name__} where {t.__name__} goes")
                return v
            return scalar
        if hint is bytes:
            def raw(v):
                if type(v) is not bytes:
                    raise Unstorable(f"{type(v).__name__} where bytes go")
                return v.decode("latin-1")
            return raw
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            def member(v, t=hint):
                if type(v) is not t:
                    raise Unstorable(f"{type(v).__name__} where {t.__name__} goes")
                return v.value
            return member
        if hint is _NONE:
            def none(v):
                if v is not None:
                    raise Unstorable(f"{type(v).__name__} where None goes")
                return None
            return none
        if origin in (typing.Union, types.UnionType):
            members = [(self._kind(a), self._encoder(a)) for a in args]

            def union(v):
                for kind, enc in members:
                    if kind(v):
                        return enc(v)
                raise Unstorable(f"{type(v).__name__} where {hint} goes")
            self._check_union(args)
            return union
        if origin in (tuple, list, set, frozenset):
            if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
                if not args:
                    raise TypeError(f"cannot store {hint}: say what it holds")
                parts = [self._encoder(a) for a in args]

                def fixed(v):
                    if type(v) is not tuple or len(v) != len(parts):
                        raise Unstorable(f"{type(v).__name__} where {hint} goes")
                    return [e(x) for e, x in zip(parts, v)]
                return fixed
            item = self._encoder(args[0])

            def seq(v, t=origin):
                if type(v) is not t:
                    raise Unstorable(f"{type(v).__name__} where {hint} goes")
                return [item(x) for x in v]
            return seq
        if origin is dict:
            kenc, venc = self._encoder(args[0]), self._encoder(args[1])
            if args[0] is str:
                def sdict(v):
                    if type(v) is not dict:
                        raise Unstorable(f"{type(v).__name__} where {hint} goes")
                    return {kenc(k): venc(x) for k, x in v.items()}
                return sdict

            def pairs(v):
                if type(v) is not dict:
                    raise Unstorable(f"{type(v).__name__} where {hint} goes")
                return [[kenc(k), venc(x)] for k, x in v.items()]
            return pairs
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            allowed = {c: None for c in _subclasses(hint)}
            for c in allowed:
                other = self._tags.setdefault(c.__name__, c)
                if other is not c:
                    raise TypeError(f"two stored classes named {c.__name__}")
            if hint in self.shared:
                names = [f.name for f in dataclasses.fields(hint)]
                # Kept once per value of every field (a field left out of == counts too): the
                # fields themselves when they are all hashable (a Step), else their encoding.

                def shared(v):
                    if type(v) is not hint:
                        raise Unstorable(f"{type(v).__name__} where {hint.__name__} goes")
                    table = self._tables[hint]
                    key = tuple([getattr(v, name) for name in names])
                    try:
                        got = table.get(key)
                    except TypeError:  # a field that is a list
                        pass
                    else:
                        if got is None:
                            got = table[key] = (len(table), self._shared_enc[hint](v))
                        return got[0]
                    row = self._shared_enc[hint](v)
                    key = json.dumps(row, separators=(",", ":"))
                    got = table.get(key)
                    if got is None:
                        got = table[key] = (len(table), row)
                    return got[0]
                return shared
            encs: dict = {}

            def obj(v):
                enc = encs.get(type(v))
                if enc is None:
                    raise Unstorable(f"{type(v).__name__} where {hint.__name__} goes")
                return enc(v)
            for c in allowed:  # built now: a field the codec cannot store is found at once
                encs[c] = self._fields_encoder(c)
            return obj
        raise TypeError(f"cannot store {hint!r}")

    def _fields_encoder(self, cls) -> Callable:
        names = [(name, self._encoder(h)) for name, h in self._hints(cls)]
        tag = cls.__name__

        def enc(v):
            return [tag] + [e(getattr(v, name)) for name, e in names]
        return enc

    def _kind(self, hint) -> Callable:
        """Does a Python value belong to this member of a union?"""
        origin = typing.get_origin(hint)
        if hint is _NONE:
            return lambda v: v is None
        if hint in (int, str, bool, bytes):
            return lambda v, t=hint: type(v) is t
        if origin in (tuple, list, set, frozenset, dict):
            return lambda v, t=origin: type(v) is t
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return lambda v, t=hint: type(v) is t
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            allowed = frozenset(_subclasses(hint))
            return lambda v: type(v) in allowed
        raise TypeError(f"cannot store {hint!r} in a union")

    def _json_kind(self, hint) -> tuple:
        """What JSON a member of a union is stored as."""
        origin = typing.get_origin(hint)
        if hint is _NONE:
            return ("null",)
        if hint is int or hint in self.shared:
            return ("int",)
        if hint is bool:
            return ("bool",)
        if hint in (str, bytes):
            return ("str",)
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            kinds = {type(m.value) for m in hint}
            if kinds not in ({int}, {str}):
                raise TypeError(f"cannot store {hint!r} in a union: its values are not all int or all str")
            return ("int",) if kinds == {int} else ("str",)
        if origin is dict and typing.get_args(hint)[0] is str:
            return ("object",)
        return ("array",)

    def _check_union(self, args) -> None:
        kinds = [self._json_kind(a) for a in args]
        if len(set(kinds)) != len(kinds):
            raise TypeError(f"a union whose members are stored alike: {args}")

    def _make_decoder(self, hint) -> Callable:
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if hint is int:
            def dint(j):
                if type(j) is not int:
                    raise Invalid(f"{type(j).__name__} where int goes")
                return j
            return dint
        if hint is bool:
            def dbool(j):
                if type(j) is not bool:
                    raise Invalid(f"{type(j).__name__} where bool goes")
                return j
            return dbool
        if hint is str:
            def dstr(j):
                if type(j) is not str or not text_ok(j):
                    raise Invalid(f"{type(j).__name__} where str goes")
                return j
            return dstr
        if hint is bytes:
            def dbytes(j):
                if type(j) is not str:
                    raise Invalid(f"{type(j).__name__} where bytes go")
                try:
                    return j.encode("latin-1")
                except UnicodeEncodeError:
                    raise Invalid("not bytes") from None
            return dbytes
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            values = {m.value: m for m in hint}

            def dmember(j):
                if type(j) not in (int, str) or j not in values:
                    raise Invalid(f"no {hint.__name__} {str(j)[:40]!r}")
                return values[j]
            return dmember
        if hint is _NONE:
            def dnone(j):
                if j is not None:
                    raise Invalid(f"{type(j).__name__} where null goes")
            return dnone
        if origin in (typing.Union, types.UnionType):
            by_json: dict = {}
            for a in args:
                kind = self._json_kind(a)[0]
                by_json[{"null": _NONE, "int": int, "bool": bool, "str": str, "object": dict,
                         "array": list}[kind]] = self._decoder(a)

            def dunion(j):
                dec = by_json.get(type(j))
                if dec is None:
                    raise Invalid(f"{type(j).__name__} where {hint} goes")
                return dec(j)
            return dunion
        if origin in (tuple, list, set, frozenset):
            if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
                parts = [self._decoder(a) for a in args]

                def dfixed(j):
                    if type(j) is not list or len(j) != len(parts):
                        raise Invalid(f"not a {hint}")
                    return tuple([d(x) for d, x in zip(parts, j)])
                return dfixed
            item = self._decoder(args[0])
            make = origin

            def dseq(j):
                if type(j) is not list:
                    raise Invalid(f"{type(j).__name__} where {hint} goes")
                got = [item(x) for x in j]
                return got if make is list else make(got)
            return dseq
        if origin is dict:
            kdec, vdec = self._decoder(args[0]), self._decoder(args[1])
            if args[0] is str:
                def dsdict(j):
                    if type(j) is not dict:
                        raise Invalid(f"{type(j).__name__} where {hint} goes")
                    return {kdec(k): vdec(x) for k, x in j.items()}
                return dsdict

            def dpairs(j):
                if type(j) is not list:
                    raise Invalid(f"{type(j).__name__} where {hint} goes")
                out = {}
                for p in j:
                    if type(p) is not list or len(p) != 2:
                        raise Invalid("not a pair")
                    out[kdec(p[0])] = vdec(p[1])
                return out
            return dpairs
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            if hint in self.shared:
                def dshared(j):
                    table = self._dtables.get(hint)
                    if table is None:
                        raise Invalid(f"a {hint.__name__} before its table")
                    if type(j) is not int or not 0 <= j < len(table):
                        raise Invalid(f"no {hint.__name__} {j!r}")
                    return table[j]
                return dshared
            decs: dict = {}

            def dobj(j):
                if type(j) is not list or not j or type(j[0]) is not str:
                    raise Invalid(f"not a {hint.__name__}")
                dec = decs.get(j[0])
                if dec is None:
                    raise Invalid(f"{j[0][:40]!r} where {hint.__name__} goes")
                return dec(j)
            for c in _subclasses(hint):
                decs[c.__name__] = self._fields_decoder(c)
            return dobj
        raise TypeError(f"cannot store {hint!r}")

    def _fields_decoder(self, cls) -> Callable:
        decs = [self._decoder(h) for _name, h in self._hints(cls)]
        n = len(decs) + 1
        tag = cls.__name__

        def dec(j):
            if type(j) is not list or len(j) != n or j[0] != tag:
                raise Invalid(f"not a {tag}")
            return cls(*[d(x) for d, x in zip(decs, j[1:])])
        return dec

